//! Actions on elements by ref: one pipeline for all of them.
//!
//! resolve the ref → check its document and fingerprint → scroll into view →
//! wait for a stable box → hit-test the action point → dispatch trusted
//! `Input.*` events → settle (navigation or DOM quiet, bounded) → observe
//! (a diff against the last snapshot, or a reset). A stale ref fails with
//! `STALE_REF` and is never redirected to another element or to old
//! coordinates; an element that cannot take the action fails with
//! `NOT_ACTIONABLE` and the reason.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::hand::{Gesture, Point};
use super::keys::{self, Chord};
use super::navigate::wait_for_navigation;
use super::{Budget, Page};
use crate::cdp::protocol::{
    InputDispatchKeyEvent, InputDispatchMouseEvent, InputInsertText, RuntimeCallFunctionOn,
};
use crate::cdp::{CdpEvent, EventStream};
use crate::error::{BrowserError, Result, StaleReason};
use crate::snapshot::tree::Fingerprint;
use crate::snapshot::{self, Look, Observation, Scope, Settling, SnapshotLimits, Walking};

/// Longest wait for the DOM to settle after an action that did not navigate.
const SETTLE_BOUND_MS: u32 = 300;

/// What to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A ref from a snapshot of this tab.
    Ref(String),
    /// The page itself (for `scroll` and `press` without an element).
    Page,
    /// Exactly one element with this role and accessible name.
    Role {
        /// The role, such as `button`.
        role: String,
        /// The exact accessible name.
        name: String,
    },
}

/// Mouse buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MouseButton {
    /// The primary button.
    #[default]
    Left,
    /// The secondary button (context menu).
    Right,
    /// The wheel button.
    Middle,
}

impl MouseButton {
    fn cdp_name(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Middle => "middle",
        }
    }
}

/// The actions.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Click (or double-click with `count: 2`) with optional held modifiers.
    Click {
        /// Which button.
        button: MouseButton,
        /// Clicks in a row.
        count: u32,
        /// Held modifiers, such as `Shift`.
        modifiers: Vec<String>,
    },
    /// Move the mouse over the element.
    Hover,
    /// Give the element keyboard focus.
    Focus,
    /// Append text to an editable element; `submit` presses Enter after.
    Type {
        /// The text.
        text: String,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// Replace an editable element's content; `submit` presses Enter after.
    Fill {
        /// The new content.
        text: String,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// Press keys or chords in order, such as `["Control+A", "Delete"]`.
    Press {
        /// The keys.
        keys: Vec<String>,
    },
    /// Choose options of a select by value or label.
    Select {
        /// Values or labels.
        values: Vec<String>,
    },
    /// Make a checkbox or radio checked.
    Check,
    /// Make a checkbox unchecked.
    Uncheck,
    /// Scroll the element into view.
    ScrollIntoView,
    /// Scroll by a distance in CSS pixels (mouse wheel over the element, or
    /// over the middle of the page for [`Target::Page`]).
    Scroll {
        /// Rightwards distance.
        dx: f64,
        /// Downwards distance.
        dy: f64,
    },
    /// Drag the element onto another.
    Drag {
        /// Where to drop it.
        to: Target,
    },
}

impl Action {
    fn name(&self) -> &'static str {
        match self {
            Self::Click { .. } => "click",
            Self::Hover => "hover",
            Self::Focus => "focus",
            Self::Type { .. } => "type",
            Self::Fill { .. } => "fill",
            Self::Press { .. } => "press",
            Self::Select { .. } => "select",
            Self::Check => "check",
            Self::Uncheck => "uncheck",
            Self::ScrollIntoView | Self::Scroll { .. } => "scroll",
            Self::Drag { .. } => "drag",
        }
    }

    /// Whether the page answers this action in its next frame (scroll
    /// events are fired there, and keys and drags may scroll): the look
    /// after it then waits for that frame even on a page that asked for none.
    fn comes_with_a_frame(&self) -> bool {
        matches!(
            self,
            Self::Scroll { .. } | Self::ScrollIntoView | Self::Press { .. } | Self::Drag { .. }
        )
    }
}

/// What an action did and what the page looks like after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActOutcome {
    /// The ref acted on.
    pub reference: String,
    /// Whether the action made the page navigate.
    pub navigated: bool,
    /// The navigation it started ended without a document: most likely a
    /// download (or an empty `204` answer).
    pub navigation_abandoned: bool,
    /// How many windows the page asked to open during the action
    /// (`Page.windowOpen`: popups and `target=_blank` links the browser let
    /// through). Their tabs may be announced a moment after the action settles.
    pub windows_opened: usize,
    /// The page after the action: a diff, or a full snapshot marked as a reset.
    pub observation: Observation,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
enum Prepared {
    Ok {
        x: f64,
        y: f64,
        #[serde(default)]
        width: f64,
        #[serde(default)]
        height: f64,
    },
    Gone {
        doc: String,
    },
    Changed,
    NotActionable {
        reason: String,
        by: Option<Described>,
    },
}

#[derive(Deserialize)]
struct Described {
    role: String,
    name: String,
}

/// Runs `action` on `target` in `page` and observes the result.
///
/// # Errors
/// `STALE_REF`, `NOT_ACTIONABLE`, `TARGET_AMBIGUOUS`, `INVALID_ARGUMENT`,
/// `TIMEOUT`, `ABORTED`.
pub async fn act(
    page: &Page,
    target: &Target,
    action: &Action,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<ActOutcome> {
    let started = std::time::Instant::now();
    let ready = match target {
        Target::Page => page_point(page, action, budget).await?,
        _ => {
            let reference = resolve_target(page, target, limits, budget).await?;
            prepare(page, &reference, action.name(), budget).await?
        }
    };
    let prepared = started.elapsed();
    let reference = ready.reference.clone();
    // A drag says where it goes once it knows (in `dispatch`).
    if !matches!(action, Action::Drag { .. }) {
        page.show_gesture(Gesture::of(
            page.view(),
            action,
            ready.x,
            ready.y,
            (ready.width, ready.height),
        ));
    }
    let mut events = page.events().await?;
    dispatch(page, &ready, action, limits, budget).await?;
    let dispatched = started.elapsed();
    let settling = Settling {
        bound_ms: SETTLE_BOUND_MS,
        frame_always: action.comes_with_a_frame(),
    };
    let (settled, look, windows_opened) =
        settle_and_look(page, &mut events, &ready, settling, limits, budget).await?;
    let (navigated, navigation_abandoned) = match settled {
        Settled::InPlace => (false, false),
        Settled::Navigated => (true, false),
        Settled::Abandoned => (true, true),
    };
    let looked = started.elapsed();
    let observation = snapshot::observe(page, look, &reference).await;
    tracing::debug!(
        action = action.name(),
        ?prepared,
        ?dispatched,
        settled_and_looked = ?looked,
        observed = ?started.elapsed(),
        "action timings"
    );
    Ok(ActOutcome {
        reference,
        navigated,
        navigation_abandoned,
        windows_opened,
        observation,
    })
}

/// An element that passed every check: where it lives and where to act.
#[derive(Debug)]
struct Ready {
    /// Its ref.
    reference: String,
    /// Its out-of-process frame, if any.
    frame: Option<String>,
    /// The action point in the page's viewport (CSS pixels).
    x: f64,
    /// The action point in the page's viewport (CSS pixels).
    y: f64,
    /// The element's box size (CSS pixels); zero for the page itself.
    width: f64,
    /// The element's box size (CSS pixels); zero for the page itself.
    height: f64,
}

/// The middle of the viewport, for actions on the page itself.
async fn page_point(page: &Page, action: &Action, budget: &Budget) -> Result<Ready> {
    if !matches!(action, Action::Scroll { .. } | Action::Press { .. }) {
        return Err(BrowserError::invalid(
            "ref",
            format!(
                "{} needs an element: give a ref or a role and name",
                action.name()
            ),
        ));
    }
    let size = page
        .evaluate_value(
            budget,
            "({ width: innerWidth, height: innerHeight })".to_owned(),
        )
        .await?;
    Ok(Ready {
        reference: "page".to_owned(),
        frame: None,
        x: size["width"].as_f64().unwrap_or(0.0) / 2.0,
        y: size["height"].as_f64().unwrap_or(0.0) / 2.0,
        width: 0.0,
        height: 0.0,
    })
}

/// An element's box in the page's viewport (CSS pixels), after scrolling
/// it into view: where a screenshot of that element is taken.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ElementBox {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// Finds `target` with the same checks as an action (a stale ref fails
/// with `STALE_REF`, a hidden one with `NOT_ACTIONABLE`), scrolls it into
/// view and returns its box.
///
/// # Errors
/// `STALE_REF`, `NOT_ACTIONABLE`, `TARGET_AMBIGUOUS`, `ELEMENT_NOT_FOUND`,
/// `INVALID_ARGUMENT`, `TIMEOUT`.
pub async fn locate(
    page: &Page,
    target: &Target,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<ElementBox> {
    let reference = resolve_target(page, target, limits, budget).await?;
    let ready = prepare(page, &reference, "scroll", budget).await?;
    Ok(ElementBox {
        x: ready.x - ready.width / 2.0,
        y: ready.y - ready.height / 2.0,
        width: ready.width,
        height: ready.height,
    })
}

/// What the tab knows of `reference`, if its document is still there.
///
/// # Errors
/// `STALE_REF` (with a likely successor) when its document was replaced;
/// `INVALID_ARGUMENT` for a ref never issued in this tab.
pub(crate) async fn live_record(
    page: &Page,
    reference: &str,
    budget: &Budget,
) -> Result<crate::snapshot::RefRecord> {
    let (record, retired) = {
        let state = page.agent.lock().await;
        (
            state.record(reference).cloned(),
            state.retired(reference).cloned(),
        )
    };
    match (record, retired) {
        (Some(record), _) => Ok(record),
        // Its document is gone (the page navigated or reloaded).
        (None, Some(old)) => Err(stale(
            page,
            reference,
            old.frame.as_deref(),
            &old.fingerprint,
            StaleReason::DocumentReplaced,
            budget,
        )
        .await),
        (None, None) => Err(BrowserError::invalid(
            "ref",
            format!(
                "{reference} was not issued in this tab; take a snapshot and use a ref from it"
            ),
        )),
    }
}

/// The ref for a target: as given, or the one element with the role and name.
async fn resolve_target(
    page: &Page,
    target: &Target,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<String> {
    match target {
        Target::Ref(reference) => Ok(reference.clone()),
        Target::Page => Err(BrowserError::invalid("ref", "this action needs an element")),
        Target::Role { role, name } => {
            let mut state = page.agent.lock().await;
            let walk = snapshot::walk_page(page, &mut state, &Scope::Page, limits, budget).await?;
            let found = state.find(&walk.docs, role, name);
            match found.as_slice() {
                [one] => Ok(one.clone()),
                [] => Err(BrowserError::ElementNotFound {
                    selector: format!("{role} {name:?}"),
                }),
                many => Err(BrowserError::TargetAmbiguous {
                    role: role.clone(),
                    name: name.clone(),
                    count: many.len(),
                    refs: many.iter().take(10).cloned().collect(),
                }),
            }
        }
    }
}

/// Checks the ref and finds the action point in the page's viewport.
async fn prepare(page: &Page, reference: &str, action: &str, budget: &Budget) -> Result<Ready> {
    let record = live_record(page, reference, budget).await?;
    let frame = record.frame.as_deref();
    let expression = format!(
        "__browserShell.prepare({}, {}, {})",
        json!(reference),
        json!(record.fingerprint),
        json!(action)
    );
    let value = page
        .world(frame)
        .evaluate(page, budget, &expression)
        .await?;
    let prepared: Prepared =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("unexpected answer while preparing the action: {e}"),
        })?;
    let fingerprint = &record.fingerprint;
    match prepared {
        Prepared::Ok {
            x,
            y,
            width,
            height,
        } => {
            let (dx, dy) = frame_offset(page, frame, budget).await?;
            Ok(Ready {
                reference: reference.to_owned(),
                frame: record.frame.clone(),
                x: x + dx,
                y: y + dy,
                width,
                height,
            })
        }
        Prepared::Gone { doc } => {
            let reason = if doc == record.doc {
                StaleReason::Detached
            } else {
                StaleReason::DocumentReplaced
            };
            Err(stale(page, reference, frame, fingerprint, reason, budget).await)
        }
        Prepared::Changed => Err(stale(
            page,
            reference,
            frame,
            fingerprint,
            StaleReason::Changed,
            budget,
        )
        .await),
        Prepared::NotActionable { reason, by } => Err(BrowserError::NotActionable {
            reference: reference.to_owned(),
            role: fingerprint.role.clone(),
            name: fingerprint.name.clone(),
            reason: match by {
                Some(by) if by.name.is_empty() => format!("{reason} by {}", by.role),
                Some(by) => format!("{reason} by {} {:?}", by.role, by.name),
                None => reason,
            },
        }),
    }
}

/// Where an out-of-process frame's viewport sits in the page's viewport:
/// the content-box corner of its iframe, added up through nested frames.
/// Scrolls each iframe into view on the way.
pub(crate) async fn frame_offset(
    page: &Page,
    frame: Option<&str>,
    budget: &Budget,
) -> Result<(f64, f64)> {
    let Some(frame) = frame else {
        return Ok((0.0, 0.0));
    };
    let frames = page.host().frames(page.view()).await?;
    let (mut dx, mut dy) = (0.0, 0.0);
    let mut current = frames.iter().find(|f| f.id == frame);
    while let Some(info) = current {
        let parent = info.parent.as_deref();
        let owner = snapshot::frame_owner(page, parent, &info.id, budget)
            .await?
            .ok_or_else(|| BrowserError::TabNotFound {
                tab: "(the frame's iframe is gone)".into(),
            })?;
        let corner = page
            .call_in(
                parent,
                budget,
                &RuntimeCallFunctionOn {
                    object_id: owner,
                    function_declaration: FRAME_CORNER_JS.into(),
                    return_by_value: true,
                    await_promise: false,
                },
            )
            .await?;
        let corner = corner.result.value.unwrap_or_default();
        dx += corner["x"].as_f64().unwrap_or(0.0);
        dy += corner["y"].as_f64().unwrap_or(0.0);
        current = parent.and_then(|p| frames.iter().find(|f| f.id == p));
    }
    Ok((dx, dy))
}

/// `this` is an iframe: its content box's corner in its document's viewport
/// (plus that document's own same-origin frame offsets).
const FRAME_CORNER_JS: &str = "function() {
    const rect = this.getBoundingClientRect();
    if (rect.top < 0 || rect.bottom > innerHeight) this.scrollIntoView({ block: 'nearest' });
    const box = this.getBoundingClientRect();
    const style = getComputedStyle(this);
    let x = box.left + this.clientLeft + parseFloat(style.paddingLeft);
    let y = box.top + this.clientTop + parseFloat(style.paddingTop);
    for (let win = this.ownerDocument.defaultView; win && win.frameElement; win = win.parent) {
        const outer = win.frameElement.getBoundingClientRect();
        x += outer.left + win.frameElement.clientLeft;
        y += outer.top + win.frameElement.clientTop;
    }
    return { x, y };
}";

/// Builds a `STALE_REF` error, with a suggestion when exactly one live
/// element now has the old fingerprint.
async fn stale(
    page: &Page,
    reference: &str,
    frame: Option<&str>,
    fingerprint: &Fingerprint,
    reason: StaleReason,
    budget: &Budget,
) -> BrowserError {
    let suggestion = suggest(page, frame, fingerprint, budget)
        .await
        .unwrap_or_else(|error| {
            tracing::debug!(%error, "could not look for a replacement ref");
            None
        });
    BrowserError::StaleRef {
        reference: reference.to_owned(),
        role: fingerprint.role.clone(),
        name: fingerprint.name.clone(),
        reason,
        suggestion,
    }
}

async fn suggest(
    page: &Page,
    frame: Option<&str>,
    fingerprint: &Fingerprint,
    budget: &Budget,
) -> Result<Option<String>> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Suggestion {
        next_ref: u64,
        #[serde(rename = "ref")]
        reference: Option<String>,
        doc: Option<String>,
    }
    let mut state = page.agent.lock().await;
    let expression = format!(
        "Object.assign(__browserShell.suggest({}, {}), {{ doc: __browserShell.doc }})",
        json!(fingerprint),
        state.next_ref()
    );
    let value = page
        .world(frame)
        .evaluate(page, budget, &expression)
        .await?;
    let found: Suggestion =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("unexpected suggestion shape: {e}"),
        })?;
    state.advance(found.next_ref);
    if let (Some(reference), Some(doc)) = (&found.reference, found.doc) {
        state.remember(
            reference,
            frame.map(str::to_owned),
            doc,
            fingerprint.clone(),
        );
    }
    Ok(found.reference)
}

async fn dispatch(
    page: &Page,
    ready: &Ready,
    action: &Action,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<()> {
    let Ready {
        reference,
        frame,
        x,
        y,
        ..
    } = ready;
    let (reference, x, y) = (reference.as_str(), *x, *y);
    let frame = frame.as_deref();
    match action {
        Action::Click {
            button,
            count,
            modifiers,
        } => {
            let modifiers = modifier_bits(modifiers)?;
            let count = (*count).clamp(1, 3);
            if frame.is_none() {
                return click(page, ready, *button, count, modifiers, budget).await;
            }
            // In an out-of-process frame, make sure the press reached the element:
            // a frame that has just loaded can miss input. If it did not arrive,
            // the element never saw it, so pressing again is safe.
            let arm = format!("__browserShell.armInput({})", json!(reference));
            let arrived = format!("__browserShell.inputArrived({})", json!(reference));
            world_call(page, frame, budget, &arm).await?;
            click(page, ready, *button, count, modifiers, budget).await?;
            if world_call(page, frame, budget, &arrived).await?.as_bool() == Some(true) {
                return Ok(());
            }
            world_call(page, frame, budget, "__browserShell.frames(2)").await?;
            world_call(page, frame, budget, &arm).await?;
            click(page, ready, *button, count, modifiers, budget).await?;
            if world_call(page, frame, budget, &arrived).await?.as_bool() == Some(true) {
                return Ok(());
            }
            Err(BrowserError::NotActionable {
                reference: reference.to_owned(),
                role: String::new(),
                name: String::new(),
                reason: "its frame did not receive the click".into(),
            })
        }
        Action::Hover => mouse(page, "mouseMoved", x, y, "none", 0, 0, budget).await,
        Action::ScrollIntoView => Ok(()),
        Action::Scroll { dx, dy } => {
            if !dx.is_finite() || !dy.is_finite() {
                return Err(BrowserError::invalid(
                    "scroll",
                    "distances must be finite numbers",
                ));
            }
            page.call(
                budget,
                &InputDispatchMouseEvent {
                    kind: "mouseWheel",
                    x,
                    y,
                    button: "none",
                    delta_x: Some(*dx),
                    delta_y: Some(*dy),
                    ..InputDispatchMouseEvent::default()
                },
            )
            .await?;
            Ok(())
        }
        Action::Focus => {
            world_call(
                page,
                frame,
                budget,
                &format!("__browserShell.focus({})", json!(reference)),
            )
            .await?;
            Ok(())
        }
        Action::Type { text, submit } | Action::Fill { text, submit } => {
            // `prepare` focused the field (and selected its text for a fill).
            let replace = matches!(action, Action::Fill { .. });
            if text.is_empty() {
                if replace {
                    press(page, &keys::parse_chord("Delete")?, budget).await?;
                }
            } else {
                page.call(budget, &InputInsertText { text: text.clone() })
                    .await?;
            }
            if *submit {
                press(page, &keys::parse_chord("Enter")?, budget).await?;
            }
            Ok(())
        }
        Action::Press { keys: names } => {
            if names.is_empty() {
                return Err(BrowserError::invalid(
                    "key",
                    "name at least one key, such as Enter",
                ));
            }
            let chords = names
                .iter()
                .map(|k| keys::parse_chord(k))
                .collect::<Result<Vec<_>>>()?;
            // On the page itself, keys go to whatever has focus.
            if reference != "page" {
                world_call(
                    page,
                    frame,
                    budget,
                    &format!("__browserShell.focus({})", json!(reference)),
                )
                .await?;
            }
            for chord in &chords {
                press(page, chord, budget).await?;
            }
            Ok(())
        }
        Action::Select { values } => {
            if values.is_empty() {
                return Err(BrowserError::invalid(
                    "values",
                    "name at least one option value or label",
                ));
            }
            let selected = world_call(
                page,
                frame,
                budget,
                &format!(
                    "__browserShell.selectOptions({}, {})",
                    json!(reference),
                    json!(values)
                ),
            )
            .await?;
            match selected.get("status").and_then(|s| s.as_str()) {
                Some("ok") => Ok(()),
                Some("missing") => Err(BrowserError::invalid(
                    "values",
                    format!(
                        "no option matches {}; the options are {}",
                        selected["missing"], selected["available"]
                    ),
                )),
                Some("single") => Err(BrowserError::invalid(
                    "values",
                    "this select takes only one option",
                )),
                _ => Err(BrowserError::invalid(
                    "ref",
                    format!("{reference} is not a select element"),
                )),
            }
        }
        Action::Check | Action::Uncheck => {
            let want = matches!(action, Action::Check);
            let state_of = format!("__browserShell.checkedState({})", json!(reference));
            let now = world_call(page, frame, budget, &state_of).await?;
            if now.is_null() {
                return Err(BrowserError::invalid(
                    "ref",
                    format!("{reference} is not a checkbox or radio"),
                ));
            }
            if now.as_bool() != Some(want) {
                click(page, ready, MouseButton::Left, 1, 0, budget).await?;
                // The goal is a state, so one more click is safe when the first
                // changed nothing (an out-of-process frame can miss input right
                // after it loads). Nothing else is ever retried.
                if world_call(page, frame, budget, &state_of).await?.as_bool() != Some(want) {
                    click(page, ready, MouseButton::Left, 1, 0, budget).await?;
                }
                if world_call(page, frame, budget, &state_of).await?.as_bool() != Some(want) {
                    return Err(BrowserError::NotActionable {
                        reference: reference.to_owned(),
                        role: String::new(),
                        name: String::new(),
                        reason: format!(
                            "clicking it did not make it {}",
                            if want { "checked" } else { "unchecked" }
                        ),
                    });
                }
            }
            Ok(())
        }
        Action::Drag { to } => {
            let destination = resolve_target(page, to, limits, budget).await?;
            mouse(page, "mouseMoved", x, y, "none", 0, 0, budget).await?;
            mouse(page, "mousePressed", x, y, "left", 1, 0, budget).await?;
            let drop_at = prepare(page, &destination, "drag", budget).await?;
            let (to_x, to_y) = (drop_at.x, drop_at.y);
            page.show_gesture(Gesture {
                to: Some(Point { x: to_x, y: to_y }),
                ..Gesture::of(page.view(), action, x, y, (ready.width, ready.height))
            });
            for step in 1..=5 {
                let t = f64::from(step) / 5.0;
                mouse(
                    page,
                    "mouseMoved",
                    x + (to_x - x) * t,
                    y + (to_y - y) * t,
                    "left",
                    0,
                    0,
                    budget,
                )
                .await?;
            }
            mouse(page, "mouseReleased", to_x, to_y, "left", 1, 0, budget).await
        }
    }
}

async fn world_call(
    page: &Page,
    frame: Option<&str>,
    budget: &Budget,
    expression: &str,
) -> Result<serde_json::Value> {
    page.world(frame).evaluate(page, budget, expression).await
}

fn modifier_bits(names: &[String]) -> Result<u8> {
    let mut bits = 0;
    for name in names {
        bits |= match name.to_ascii_lowercase().as_str() {
            "alt" => keys::ALT,
            "control" | "ctrl" => keys::CONTROL,
            "meta" | "cmd" => keys::META,
            "shift" => keys::SHIFT,
            other => {
                return Err(BrowserError::invalid(
                    "modifiers",
                    format!("{other:?} is not Alt, Control, Meta or Shift"),
                ));
            }
        };
    }
    Ok(bits)
}

#[allow(clippy::too_many_arguments)]
async fn mouse(
    page: &Page,
    kind: &'static str,
    x: f64,
    y: f64,
    button: &'static str,
    click_count: u32,
    modifiers: u8,
    budget: &Budget,
) -> Result<()> {
    page.call(
        budget,
        &InputDispatchMouseEvent {
            kind,
            x,
            y,
            button,
            click_count,
            modifiers,
            ..InputDispatchMouseEvent::default()
        },
    )
    .await?;
    Ok(())
}

/// Moves to the element's action point and presses and releases `count`
/// times. In the main frame's process the events are sent back to back and
/// their acknowledgements awaited together (as Puppeteer does): the browser
/// keeps their order, and the click does not pay one renderer round trip per
/// event. An out-of-process frame gets them one by one: a frame that has just
/// loaded can lose input that arrives before it is ready for it.
async fn click(
    page: &Page,
    ready: &Ready,
    button: MouseButton,
    count: u32,
    modifiers: u8,
    budget: &Budget,
) -> Result<()> {
    let (x, y, name) = (ready.x, ready.y, button.cdp_name());
    let mut events = vec![mouse(
        page,
        "mouseMoved",
        x,
        y,
        "none",
        0,
        modifiers,
        budget,
    )];
    for click_count in 1..=count {
        for kind in ["mousePressed", "mouseReleased"] {
            events.push(mouse(
                page,
                kind,
                x,
                y,
                name,
                click_count,
                modifiers,
                budget,
            ));
        }
    }
    if ready.frame.is_some() {
        for event in events {
            event.await?;
        }
    } else {
        futures_util::future::try_join_all(events).await?;
    }
    Ok(())
}

/// Presses one chord: modifiers down, the key down and up, modifiers up.
async fn press(page: &Page, chord: &Chord, budget: &Budget) -> Result<()> {
    let modifier_keys: Vec<(u8, Chord)> = [
        (keys::CONTROL, "Control", "ControlLeft", 17),
        (keys::SHIFT, "Shift", "ShiftLeft", 16),
        (keys::ALT, "Alt", "AltLeft", 18),
        (keys::META, "Meta", "MetaLeft", 91),
    ]
    .into_iter()
    .filter(|(bit, ..)| chord.modifiers & bit != 0)
    .map(|(bit, key, code, key_code)| {
        (
            bit,
            Chord {
                modifiers: 0,
                key: keys::Key {
                    key: key.into(),
                    code: code.into(),
                    key_code,
                    text: None,
                },
            },
        )
    })
    .collect();
    let mut held = 0;
    for (bit, modifier) in &modifier_keys {
        held |= bit;
        key_event(page, "rawKeyDown", &modifier.key, held, None, budget).await?;
    }
    // Text is typed only without Control/Alt/Meta (a chord like Control+A is a command).
    let text = chord
        .key
        .text
        .clone()
        .filter(|_| chord.modifiers & !keys::SHIFT == 0);
    let kind = if text.is_some() {
        "keyDown"
    } else {
        "rawKeyDown"
    };
    key_event(page, kind, &chord.key, chord.modifiers, text, budget).await?;
    key_event(page, "keyUp", &chord.key, chord.modifiers, None, budget).await?;
    for (bit, modifier) in modifier_keys.iter().rev() {
        held &= !bit;
        key_event(page, "keyUp", &modifier.key, held, None, budget).await?;
    }
    Ok(())
}

async fn key_event(
    page: &Page,
    kind: &'static str,
    key: &keys::Key,
    modifiers: u8,
    text: Option<String>,
    budget: &Budget,
) -> Result<()> {
    page.call(
        budget,
        &InputDispatchKeyEvent {
            kind,
            modifiers,
            key: key.key.clone(),
            code: key.code.clone(),
            windows_virtual_key_code: key.key_code,
            text,
            commands: Vec::new(),
        },
    )
    .await?;
    Ok(())
}

/// How the page settled after an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// No navigation: the DOM stopped changing.
    InPlace,
    /// A navigation committed (a new document, or within the document).
    Navigated,
    /// A navigation started and ended without a document (a download, a 204).
    Abandoned,
}

/// Waits for the page to settle after the input, then looks at it.
///
/// For an action in the main frame, the wait for a quiet DOM and the walk
/// are one call (a round trip less on every action). If the page started
/// navigating meanwhile, that look is dropped and the page is looked at
/// once the navigation is over. Also counts the windows the page asked to
/// open meanwhile.
async fn settle_and_look(
    page: &Page,
    events: &mut EventStream,
    ready: &Ready,
    settling: Settling,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<(Settled, Look, usize)> {
    let mut seen = Vec::new();
    let windows_opened = |seen: &[std::sync::Arc<CdpEvent>]| {
        seen.iter()
            .filter(|event| event.method == "Page.windowOpen")
            .count()
    };
    if ready.frame.is_none() && !navigation_started(page, events, &mut seen) {
        let when = Walking::WhenSettled(settling);
        let look = snapshot::look(page, when, limits, budget).await;
        if !navigation_started(page, events, &mut seen) {
            return Ok((Settled::InPlace, look?, windows_opened(&seen)));
        }
    }
    let settled = settle(page, events, &mut seen, settling, budget).await?;
    // An out-of-process frame runs its handlers in its own process: let its
    // DOM settle too before looking.
    if let (Settled::InPlace, Some(frame)) = (settled, ready.frame.as_deref()) {
        wait_for_quiet(page, Some(frame), settling, budget).await;
    }
    let look = snapshot::look(page, Walking::Now, limits, budget).await?;
    drain(events, &mut seen);
    Ok((settled, look, windows_opened(&seen)))
}

/// Waits for the page to settle after an action: for a navigation the
/// action started to load, otherwise for the DOM to stop changing.
async fn settle(
    page: &Page,
    events: &mut EventStream,
    seen: &mut Vec<std::sync::Arc<CdpEvent>>,
    settling: Settling,
    budget: &Budget,
) -> Result<Settled> {
    if !navigation_started(page, events, seen) {
        wait_for_quiet(page, None, settling, budget).await;
        if !navigation_started(page, events, seen) {
            return Ok(Settled::InPlace);
        }
    }
    Ok(if wait_for_navigation(page, events, seen, budget).await? {
        Settled::Navigated
    } else {
        Settled::Abandoned
    })
}

/// Waits until `frame`'s DOM (the main frame's with `None`) has settled (see
/// [`Settling`]). The document may be replaced meanwhile: that is a
/// navigation for the caller to find, not an error.
async fn wait_for_quiet(page: &Page, frame: Option<&str>, settling: Settling, budget: &Budget) {
    let Settling {
        bound_ms,
        frame_always,
    } = settling;
    let quiet = format!("__browserShell.settle({bound_ms}, {frame_always})");
    let bound = Duration::from_millis(u64::from(bound_ms) + 500);
    if let Err(error) = page
        .world(frame)
        .evaluate(page, &budget.grace(bound), &quiet)
        .await
    {
        tracing::debug!(?frame, %error, "the wait for a quiet DOM was interrupted");
    }
}

/// Drains buffered events into `seen` and reports whether the main frame
/// started navigating.
fn navigation_started(
    page: &Page,
    events: &mut EventStream,
    seen: &mut Vec<std::sync::Arc<CdpEvent>>,
) -> bool {
    let main = page.view().as_str();
    drain(events, seen);
    seen.iter()
        .any(|event| is_main_frame_navigation(event, main))
}

/// Moves the events buffered so far into `seen`.
fn drain(events: &mut EventStream, seen: &mut Vec<std::sync::Arc<CdpEvent>>) {
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
}

fn is_main_frame_navigation(event: &CdpEvent, main: &str) -> bool {
    let frame = event.params.get("frameId").and_then(|f| f.as_str());
    match event.method.as_str() {
        "Page.frameRequestedNavigation" | "Page.frameStartedNavigating" => frame == Some(main),
        "Page.frameNavigated" => event.params["frame"].get("parentId").is_none(),
        _ => false,
    }
}
