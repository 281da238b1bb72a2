//! Actions on elements by ref: one pipeline for all of them.
//!
//! resolve the ref → check its document and fingerprint → scroll into view →
//! wait for a stable box → hit-test the action point → dispatch trusted
//! `Input.*` events → settle (navigation or DOM quiet, bounded) → observe
//! (a diff against the last snapshot, or a reset). A stale ref fails with
//! `STALE_REF` and is never redirected to another element or to old
//! coordinates; an element that cannot take the action fails with
//! `NOT_ACTIONABLE` and the reason.
//!
//! The pipeline and the action types live here; each step and each family
//! of actions has its own module:
//! - `resolve`: a target to a live element and its action point (the
//!   checks behind `STALE_REF` and `NOT_ACTIONABLE`);
//! - `pointer`: click and hover (mouse events, held modifiers);
//! - `keyboard`: focus, type, fill and press (text and key events);
//! - `selection`: select options, check and uncheck;
//! - `scroll`: the mouse wheel;
//! - `drag`: drag and drop, by pointer events or HTML5 drag and drop;
//! - `settle`: waiting for the page after the input, and the look at it.

mod drag;
mod keyboard;
mod pointer;
mod resolve;
mod scroll;
mod selection;
mod settle;

use super::hand::Gesture;
use super::{Budget, Page};
use crate::error::{BrowserError, Result};
use crate::snapshot::{self, Observation, Settling, SnapshotLimits};

pub use resolve::locate;
pub(crate) use resolve::{frame_offset, live_record};
use resolve::{page_point, prepare, resolve_target};
use settle::{Settled, settle_and_look};

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
        Target::Ref(reference) => prepare(page, reference, action.name(), budget).await?,
        Target::Role { .. } => {
            // Found by role and name just now; a page that renders the
            // element anew meanwhile (a virtualized list after the scroll
            // that brought it into view) is asked once more. Nothing has
            // been sent to the page yet, so this is a second look, not a retry.
            let reference = resolve_target(page, target, limits, budget).await?;
            match prepare(page, &reference, action.name(), budget).await {
                Err(BrowserError::StaleRef { .. }) => {
                    let reference = resolve_target(page, target, limits, budget).await?;
                    prepare(page, &reference, action.name(), budget).await?
                }
                other => other?,
            }
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
    /// For `type` and `fill` on a code editor: which kind (`monaco`,
    /// `codemirror5`, …) and whether it had the focus before (then typing
    /// goes to its caret; otherwise at the end of its text).
    editor: Option<EditorFocus>,
}

/// A code editor whose hidden input took the focus for typing.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EditorFocus {
    /// The editor library, as the page-side script recognised it.
    kind: String,
    /// Whether the editor already had the focus (its caret is where the
    /// agent or a person left it).
    was_focused: bool,
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

/// Sends the input for `action` to a prepared element: the action's
/// family does the work.
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
        } => pointer::click_action(page, ready, *button, *count, modifiers, budget).await,
        Action::Hover => pointer::hover(page, x, y, budget).await,
        Action::ScrollIntoView => Ok(()),
        Action::Scroll { dx, dy } => scroll::wheel(page, x, y, *dx, *dy, budget).await,
        Action::Focus => keyboard::focus(page, frame, reference, budget).await,
        // `prepare` focused the field (and selected its text for a fill).
        Action::Type { text, submit } => {
            keyboard::type_text(page, ready, text, *submit, budget).await
        }
        Action::Fill { text, submit } => keyboard::fill(page, ready, text, *submit, budget).await,
        Action::Press { keys: names } => {
            keyboard::press_keys(page, frame, reference, names, budget).await
        }
        Action::Select { values } => selection::select(page, ready, values, budget).await,
        Action::Check | Action::Uncheck => {
            let want = matches!(action, Action::Check);
            selection::set_checked(page, ready, want, budget).await
        }
        Action::Drag { to } => drag::drag(page, ready, action, to, limits, budget).await,
    }
}

/// Evaluates `expression` in our isolated world in `frame` (the main
/// frame with `None`), where the element's ref is known.
async fn world_call(
    page: &Page,
    frame: Option<&str>,
    budget: &Budget,
    expression: &str,
) -> Result<serde_json::Value> {
    page.world(frame).evaluate(page, budget, expression).await
}
