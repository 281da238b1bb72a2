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
//! The pipeline lives here; the action types in `kinds`, which every step
//! shares; each step and each family of actions has its own module:
//! - `resolve`: a target to a live element and its action point (the
//!   checks behind `STALE_REF` and `NOT_ACTIONABLE`; the refs themselves
//!   are checked in [`observe`]);
//! - `pointer`: click and hover (mouse events, held modifiers);
//! - `keyboard`: focus, type, fill and press (text and key events);
//! - `selection`: select options, check and uncheck;
//! - `scroll`: the mouse wheel;
//! - `drag`: drag and drop, by pointer events or HTML5 drag and drop;
//! - `report`: what an action learned beyond the diff (where a drag
//!   dropped, what a scroll shows);
//! - `settle`: waiting for the page after the input, and the look at it.

mod drag;
mod keyboard;
mod kinds;
mod pointer;
mod report;
mod resolve;
mod scroll;
mod selection;
mod settle;

use crate::error::{BrowserError, Result};
use crate::page::hand::Gesture;
use crate::page::observe::{self, Settling};
use crate::page::{Budget, Page};
use crate::snapshot::{Observation, Ref, SnapshotLimits};

pub use crate::page::hand::ElementBox;
use kinds::Ready;
pub use kinds::{Action, MouseButton, Target};
pub use report::{Aftermath, Named, Placement, ScrollView};
pub use resolve::locate;
use resolve::{page_point, point_at, prepare, resolve_target};
use settle::{Settled, settle_and_look};

/// Longest wait for the DOM to settle after an action that did not navigate.
const SETTLE_BOUND_MS: u32 = 300;

/// What an action did and what the page looks like after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActOutcome {
    /// The ref acted on; `None` for the page itself (a scroll or a key
    /// press without an element).
    pub reference: Option<Ref>,
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
    /// What the action learned beyond the diff: where a dragged element
    /// ended up, what a scroll brought into view.
    pub aftermath: Option<Aftermath>,
    /// For an action at a point: what a person would hit there.
    pub at_point: Option<Named>,
}

/// The ref of the one element `target` names (a ref as given; a role and
/// name found as actions find them, virtualized collections included).
///
/// # Errors
/// `TARGET_AMBIGUOUS` (with the candidates' refs), `ELEMENT_NOT_FOUND`,
/// `INVALID_ARGUMENT` for the page or a point, `TIMEOUT`.
pub async fn find(
    page: &Page,
    target: &Target,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Ref> {
    resolve_target(page, target, limits, budget).await
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
    let mut at_point = None;
    let ready = match target {
        Target::Page => page_point(page, action, budget).await?,
        Target::Point { x, y } => {
            let (ready, found) = point_at(page, *x, *y, action, budget).await?;
            at_point = found;
            ready
        }
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
            action.gesture(),
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
    let observation = observe::observation(page, look, reference.as_ref()).await;
    let aftermath = match action {
        _ if navigated => None,
        Action::Drag { .. } => match &reference {
            Some(reference) => Some(report::placement(page, reference, budget).await),
            None => None,
        },
        Action::Scroll { .. } => report::scroll_view(page, reference.as_ref(), budget).await,
        _ => None,
    };
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
        aftermath,
        at_point,
    })
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
    let (reference, x, y) = (reference.as_ref(), *x, *y);
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
        Action::Focus => keyboard::focus(page, frame, ready.element()?, budget).await,
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
