//! After the input: waiting for the page to settle, then looking at it.
//!
//! An action may start a navigation (followed to its end, or to its
//! abandonment by a download) or only change the DOM (waited for until it
//! is quiet, bounded). Events buffered during the action tell which, and
//! how many windows the page asked to open.

use std::time::Duration;

use super::kinds::Ready;
use crate::cdp::{CdpEvent, EventStream};
use crate::error::Result;
use crate::page::navigate::wait_for_navigation;
use crate::page::observe::{self, Look, Settling, Walking};
use crate::page::{Budget, Page};
use crate::snapshot::SnapshotLimits;

/// How the page settled after an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settled {
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
pub(super) async fn settle_and_look(
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
        let look = observe::look(page, when, limits, budget).await;
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
    let look = observe::look(page, Walking::Now, limits, budget).await?;
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
    let main = page.main_frame();
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
