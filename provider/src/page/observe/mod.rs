//! Looking at the live page: walking it into a snapshot, and finding the
//! element behind a ref again.
//!
//! This is where the pure data of [`snapshot`](crate::snapshot) meets the
//! page. A look walks the main frame in our isolated world (the walker is
//! `src/js/agent/`), then each out-of-process frame, parents first, and
//! joins their trees (`PageWalk`); the tab's registry
//! ([`TabState`]) records the refs handed out
//! and renders the result.
//!
//! - `walk`: one frame's walk (scoped or whole, at once or once the DOM has
//!   settled after an action), closed shadow roots included;
//! - `frames`: where each out-of-process frame sits (its iframe's slot in
//!   the tree, its corner in the page's viewport);
//! - `refs`: a ref back to what the tab knows of it, and the `STALE_REF`
//!   error (with a likely successor) when its element is gone.

mod frames;
mod refs;
mod walk;

pub(crate) use frames::frame_offset;
pub(crate) use refs::{live_record, stale};
pub(crate) use walk::{Settling, Walking};

use crate::error::Result;
use crate::page::{Budget, Page};
use crate::snapshot::tree::PageWalk;
use crate::snapshot::{Observation, Ref, Scope, Seen, Snapshot, SnapshotLimits, TabState};

/// Takes a snapshot of the page. A whole-page snapshot becomes the base
/// for the next diff.
///
/// # Errors
/// `INVALID_ARGUMENT` for a ref or selector scope that is not on the page
/// (`ELEMENT_NOT_FOUND` for a selector that matches nothing), `TIMEOUT`,
/// `ABORTED`, and whatever the page's connection reports.
pub async fn snapshot(
    page: &Page,
    scope: &Scope,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Snapshot> {
    let mut state = page.agent.lock().await;
    let walk = walk_page_when(page, &mut state, scope, Walking::Now, limits, budget).await?;
    let (snapshot, seen) = state.render(walk, limits.render);
    if *scope == Scope::Page {
        state.set_base(seen);
    }
    Ok(snapshot)
}

/// A look at the whole page after an action. Its refs are handed out, but
/// it is not yet the base for the next diff: the action may still turn out
/// to have navigated, and then the look is dropped.
pub(crate) struct Look {
    /// The look as the model would get it whole.
    snapshot: Snapshot,
    /// The look as the next diff compares against it.
    seen: Seen,
}

/// Looks at the whole page, `when` it is time.
pub(crate) async fn look(
    page: &Page,
    when: Walking,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Look> {
    let mut state = page.agent.lock().await;
    let walk = walk_page_when(page, &mut state, &Scope::Page, when, limits, budget).await?;
    let (snapshot, seen) = state.render(walk, limits.render);
    Ok(Look { snapshot, seen })
}

/// The observation after an action on `acted_on` (`None`: the page itself):
/// a diff of `look` against the last snapshot the session saw, or a full
/// snapshot marked as a reset. `look` becomes the base for the next diff.
pub(crate) async fn observation(page: &Page, look: Look, acted_on: Option<&Ref>) -> Observation {
    let Look { snapshot, seen } = look;
    page.agent.lock().await.observe(seen, snapshot, acted_on)
}

/// Walks the page, then each out-of-process frame (parents first), and
/// attaches every frame's tree under its iframe. Finding where each frame
/// sits runs while the main frame is walked. Scoped walks stay in the main
/// frame's process.
pub(crate) async fn walk_page(
    page: &Page,
    state: &mut TabState,
    scope: &Scope,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<PageWalk> {
    walk_page_when(page, state, scope, Walking::Now, limits, budget).await
}

async fn walk_page_when(
    page: &Page,
    state: &mut TabState,
    scope: &Scope,
    when: Walking,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<PageWalk> {
    let (main, placed) = match when {
        Walking::Now => tokio::join!(
            walk::walk(page, None, state, scope, when, limits, budget),
            frames::place_frames(page, budget)
        ),
        // Frames may come and go while the page settles: find them after.
        Walking::WhenSettled(_) => {
            let main = walk::walk(page, None, state, scope, when, limits, budget).await;
            (main, frames::place_frames(page, budget).await)
        }
    };
    let mut combined = PageWalk::of_main(main?);
    for (frame, key) in placed {
        let walked = walk::walk(
            page,
            Some(&frame),
            state,
            &Scope::Page,
            Walking::Now,
            limits,
            budget,
        );
        match walked.await {
            Ok(child) => {
                combined.attach_frame(&frame, &key, child);
            }
            Err(error) => {
                tracing::debug!(%frame, %error, "cannot walk an out-of-process frame");
            }
        }
    }
    if *scope == Scope::Page {
        state.prune(&combined.docs);
    }
    Ok(combined)
}
