//! Looking at the live page: walking it into a snapshot, and finding the
//! element behind a ref again.
//!
//! This is where the pure data of [`snapshot`](crate::snapshot) meets the
//! page. A look walks the main frame in our isolated world (the walker is
//! `src/js/agent/`) and each out-of-process frame beside it, and joins
//! their trees (`PageWalk`); the tab's registry
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
use walk::NewRefs;
pub(crate) use walk::{Settling, Walking};

use crate::error::Result;
use crate::host::FrameInfo;
use crate::page::{Budget, Page};
use crate::snapshot::tree::{PageWalk, Walk};
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

/// Walks the page and each out-of-process frame, and attaches every
/// frame's tree under its iframe (parents first). A look right now walks
/// them all at once, in their own renderers; after an action the frames
/// are walked once the main frame has settled. Refs of all frames share
/// one namespace: the main frame hands out new ones while the frames
/// beside it may not; a frame that needs one is walked again after the
/// others, in turn. Where each frame sits is remembered across looks (by
/// our world in its parent), so a warm look makes one round trip per frame.
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
    let started = std::time::Instant::now();
    let issue = (state.next_ref(), NewRefs::Issue);
    let main = walk::walk_unrecorded(page, None, scope, when, limits, issue, budget);
    let (main, frames, beside) = match when {
        Walking::Now => {
            let frames = page.host().frames(page.view()).await.unwrap_or_default();
            let (main, beside) = tokio::join!(main, walk_beside(page, &frames, limits, budget));
            (main, frames, beside)
        }
        // Frames may come and go while the page settles: find them after.
        Walking::WhenSettled(_) => {
            let main = main.await;
            let frames = page.host().frames(page.view()).await.unwrap_or_default();
            let beside = walk_beside(page, &frames, limits, budget).await;
            (main, frames, beside)
        }
    };
    let main = main.and_then(walk::issued)?;
    state.absorb(&main, None);
    let main_doc = main.doc.clone();
    let mut combined = PageWalk::of_main(main);

    let mut walked_again = 0;
    let mut walked: Vec<(FrameInfo, Walk)> = Vec::new();
    for (frame, beside) in frames.iter().zip(beside) {
        let walk = match beside {
            Ok(Some(walk)) => {
                state.absorb(&walk, Some(&frame.id));
                Ok(walk)
            }
            Ok(None) => {
                walked_again += 1;
                let when = Walking::Now;
                walk::walk(
                    page,
                    Some(&frame.id),
                    state,
                    &Scope::Page,
                    when,
                    limits,
                    budget,
                )
                .await
            }
            Err(error) => Err(error),
        };
        match walk {
            Ok(walk) => walked.push((frame.clone(), walk)),
            Err(error) => {
                tracing::debug!(frame = %frame.id, %error, "cannot walk an out-of-process frame");
            }
        }
    }

    frames::forget_gone(page, &frames);
    let keys = futures_util::future::join_all(walked.iter().map(|(frame, _)| {
        let parent_doc = match frame.parent.as_deref() {
            None => Some(main_doc.as_str()),
            Some(parent) => walked
                .iter()
                .find(|(other, _)| other.id == parent)
                .map(|(_, walk)| walk.doc.as_str()),
        };
        async move {
            match parent_doc {
                Some(doc) => frames::slot_key(page, frame, doc, budget).await,
                // Its parent could not be walked: nowhere to put it.
                None => Ok(None),
            }
        }
    }))
    .await;
    for ((frame, walk), key) in walked.into_iter().zip(keys) {
        match key {
            Ok(Some(key)) => {
                if !combined.attach_frame(&frame.id, &key, walk) {
                    tracing::debug!(frame = %frame.id, %key, "no iframe in the tree has the frame's slot");
                }
            }
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(frame = %frame.id, %error, "cannot place an out-of-process frame");
            }
        }
    }
    if *scope == Scope::Page {
        state.prune(&combined.docs);
    }
    tracing::debug!(
        frames = frames.len(),
        walked_again,
        took = ?started.elapsed(),
        "walked the page"
    );
    Ok(combined)
}

/// Walks each out-of-process frame's whole document at once, handing out
/// no refs (`None` for a frame that needs one).
async fn walk_beside(
    page: &Page,
    frames: &[FrameInfo],
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Vec<Result<Option<Walk>>> {
    futures_util::future::join_all(frames.iter().map(|frame| {
        let refuse = (0, NewRefs::Refuse);
        walk::walk_unrecorded(
            page,
            Some(&frame.id),
            &Scope::Page,
            Walking::Now,
            limits,
            refuse,
            budget,
        )
    }))
    .await
}
