//! From a target to a live element and its action point.
//!
//! A ref is checked against its document and fingerprint before anything
//! is sent to the page: a stale one fails with `STALE_REF` (with a likely
//! successor when exactly one element now matches its fingerprint), one
//! that cannot take the action fails with `NOT_ACTIONABLE`. What passes is
//! a [`Ready`] element, scrolled into view, with its point in the page's
//! viewport (out-of-process frames included); a point of the viewport
//! ([`point_at`]) is what a person would hit there. [`locate`] runs the same
//! checks for screenshots of one element. What the tab knows of a ref,
//! and the `STALE_REF` error, are [`observe`](crate::page::observe)'s.

use serde::Deserialize;
use serde_json::json;

use super::kinds::{Action, EditorFocus, Ready, Target, world_call};
use super::report::Named;
use crate::error::{BrowserError, Result, StaleReason};
use crate::page::hand::ElementBox;
use crate::page::observe::{self, frame_offset, live_record, stale};
use crate::page::{Budget, Page};
use crate::snapshot::tree::Fingerprint;
use crate::snapshot::{Ref, Scope, SnapshotLimits};

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
        #[serde(default)]
        editor: Option<String>,
        #[serde(default, rename = "wasFocused")]
        was_focused: bool,
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

/// The middle of the viewport, for actions on the page itself.
pub(super) async fn page_point(page: &Page, action: &Action, budget: &Budget) -> Result<Ready> {
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
        reference: None,
        frame: None,
        x: size["width"].as_f64().unwrap_or(0.0) / 2.0,
        y: size["height"].as_f64().unwrap_or(0.0) / 2.0,
        width: 0.0,
        height: 0.0,
        editor: None,
    })
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

/// A point of the viewport to act at, and what a person would hit there
/// (handed a ref, recorded, so the result can name it).
///
/// # Errors
/// `INVALID_ARGUMENT` for a point outside the viewport or an action that
/// needs an element (typing, selecting, checking).
pub(super) async fn point_at(
    page: &Page,
    x: f64,
    y: f64,
    action: &Action,
    budget: &Budget,
) -> Result<(Ready, Option<Named>)> {
    if !matches!(
        action,
        Action::Click { .. } | Action::Hover | Action::Scroll { .. } | Action::Drag { .. }
    ) {
        return Err(BrowserError::invalid(
            "x",
            format!(
                "{} needs an element: at a point only click, hover, scroll and drag",
                action.name()
            ),
        ));
    }
    let found = element_at(page, x, y, budget).await?;
    let ready = Ready {
        reference: found.as_ref().map(|(reference, _)| reference.clone()),
        frame: None,
        x,
        y,
        width: 0.0,
        height: 0.0,
        editor: None,
    };
    Ok((ready, found.map(|(_, named)| named)))
}

/// What a person would hit at (`x`, `y`): its ref (recorded) and how the
/// snapshot shows it.
///
/// # Errors
/// `INVALID_ARGUMENT` for a point outside the viewport (or not a number).
pub(super) async fn element_at(
    page: &Page,
    x: f64,
    y: f64,
    budget: &Budget,
) -> Result<Option<(Ref, Named)>> {
    if !x.is_finite() || !y.is_finite() {
        return Err(BrowserError::invalid("x", "x and y must be finite numbers"));
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct AtPoint {
        status: String,
        #[serde(default)]
        handed_out: Option<HandedOut>,
        #[serde(default)]
        role: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        width: f64,
        #[serde(default)]
        height: f64,
    }
    let next_ref = page.agent.lock().await.next_ref();
    let expression = format!("__browserShell.elementAt({x}, {y}, {next_ref})");
    let value = world_call(page, None, budget, &expression).await?;
    let at: AtPoint = serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
        message: format!("the page-side lookup at a point returned an unexpected shape: {e}"),
    })?;
    match (at.status.as_str(), at.handed_out) {
        ("outside", _) => Err(BrowserError::invalid(
            "x",
            format!(
                "({x}, {y}) is outside the viewport ({} × {} CSS pixels); take a screenshot to see what is where",
                at.width, at.height
            ),
        )),
        ("ok", Some(handed_out)) => {
            let reference = handed_out.record(page).await.into_iter().next();
            Ok(reference.map(|reference| {
                (
                    reference,
                    Named {
                        role: at.role,
                        name: at.name,
                    },
                )
            }))
        }
        _ => Ok(None),
    }
}

/// The ref for a target: as given, or the one element with the role and name.
pub(super) async fn resolve_target(
    page: &Page,
    target: &Target,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Ref> {
    match target {
        Target::Ref(reference) => Ok(reference.clone()),
        Target::Page => Err(BrowserError::invalid("ref", "this action needs an element")),
        Target::Point { .. } => Err(BrowserError::invalid(
            "x",
            "this needs an element, not a point: give a ref or a role and name",
        )),
        Target::Role { role, name } => {
            let mut found = {
                let mut state = page.agent.lock().await;
                let walk =
                    observe::walk_page(page, &mut state, &Scope::Page, limits, budget).await?;
                state.find(&walk.docs, role, name)
            };
            // What the snapshot shows without a ref (a list item, a cell),
            // then what a virtualized collection holds further on.
            if found.is_empty() {
                found = by_role_in_page(page, role, name, Seek::Rendered, budget).await?;
            }
            if found.is_empty() {
                found = by_role_in_page(page, role, name, Seek::ScrollCollections, budget).await?;
            }
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

/// Where [`by_role_in_page`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seek {
    /// Among the elements rendered now.
    Rendered,
    /// Also in virtualized collections, scrolled through a viewport at a time.
    ScrollCollections,
}

/// The longest a search scrolls through virtualized collections.
const SEEK_BOUND_MS: u64 = 10_000;

/// Refs the page handed out outside a snapshot (a search by role and name,
/// the options of a custom select), with what they were handed out for.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HandedOut {
    doc: String,
    refs: Vec<Ref>,
    fingerprints: std::collections::HashMap<Ref, Fingerprint>,
    next_ref: u64,
}

impl HandedOut {
    /// Records the refs in the tab's state (main frame) and returns them.
    pub(super) async fn record(self, page: &Page) -> Vec<Ref> {
        let mut state = page.agent.lock().await;
        state.advance(self.next_ref);
        for reference in &self.refs {
            if let Some(fingerprint) = self.fingerprints.get(reference) {
                state.remember(reference, None, self.doc.clone(), fingerprint.clone());
            }
        }
        self.refs
    }
}

/// Refs for the main frame's visible elements with this role and name (as
/// the snapshot shows them, named or by their text), handed out and
/// recorded now.
async fn by_role_in_page(
    page: &Page,
    role: &str,
    name: &str,
    seek: Seek,
    budget: &Budget,
) -> Result<Vec<Ref>> {
    let next_ref = page.agent.lock().await.next_ref();
    let call = match seek {
        Seek::Rendered => "refsByRole",
        Seek::ScrollCollections => "seekByRole",
    };
    let bound = budget
        .remaining()
        .saturating_sub(std::time::Duration::from_millis(500))
        .min(std::time::Duration::from_millis(SEEK_BOUND_MS));
    let expression = format!(
        "__browserShell.{call}({}, {}, {}, {})",
        json!(role),
        json!(name),
        next_ref,
        bound.as_millis()
    );
    let value = page.world(None).evaluate(page, budget, &expression).await?;
    let found: HandedOut =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("unexpected answer while finding {role} {name:?}: {e}"),
        })?;
    Ok(found.record(page).await)
}

/// Checks the ref and finds the action point in the page's viewport.
pub(super) async fn prepare(
    page: &Page,
    reference: &Ref,
    action: &str,
    budget: &Budget,
) -> Result<Ready> {
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
            editor,
            was_focused,
        } => {
            let (dx, dy) = frame_offset(page, frame, budget).await?;
            Ok(Ready {
                reference: Some(reference.clone()),
                frame: record.frame.clone(),
                x: x + dx,
                y: y + dy,
                width,
                height,
                editor: editor.map(|kind| EditorFocus { kind, was_focused }),
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
            reference: reference.clone(),
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
