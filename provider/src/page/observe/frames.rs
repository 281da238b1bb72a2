//! Where out-of-process frames sit: the slot of their iframe in the
//! parent's tree, and the corner of their viewport in the page's.

use std::collections::HashSet;

use crate::cdp::protocol::{DomGetFrameOwner, DomResolveNode, RuntimeCallFunctionOn};
use crate::error::{BrowserError, Result};
use crate::host::FrameInfo;
use crate::page::world::FrameSlot;
use crate::page::{Budget, Page};

/// Called on an iframe: its content box's corner in the page's viewport
/// (see the file).
const FRAME_CORNER_JS: &str = include_str!("../../js/scripts/frame_corner.js");

/// Forgets where frames no longer on the page sat.
pub(super) fn forget_gone(page: &Page, frames: &[FrameInfo]) {
    let parents: HashSet<Option<&str>> = std::iter::once(None)
        .chain(frames.iter().map(|f| Some(f.id.as_str())))
        .collect();
    for parent in parents {
        page.world(parent)
            .forget_slots_except(frames.iter().map(|f| f.id.as_str()));
    }
}

/// The key (`parent:slot`) of the iframe slot out-of-process `frame`
/// belongs under, given the `doc` the walk of its parent document came back
/// from; `None` when its iframe has no slot there (or that document has
/// been replaced since the walk). Slots our world in the parent remembers
/// answer without a round trip; others are asked of the parent (three).
pub(super) async fn slot_key(
    page: &Page,
    frame: &FrameInfo,
    parent_doc: &str,
    budget: &Budget,
) -> Result<Option<String>> {
    let parent = frame.parent.as_deref();
    let world = page.world(parent);
    let slot = match world.slot_of(&frame.id) {
        Some(known) if known.doc == parent_doc => known.slot,
        _ => {
            let Some(found) = owner_slot(page, parent, &frame.id, budget).await? else {
                tracing::debug!(frame = %frame.id, "no slot for the frame's iframe");
                return Ok(None);
            };
            world.remember_slot(&frame.id, found.clone());
            if found.doc != parent_doc {
                tracing::debug!(frame = %frame.id, slot_doc = %found.doc, %parent_doc, "the iframe's slot is of another document");
                return Ok(None);
            }
            found.slot
        }
    };
    Ok(Some(format!("{}:{slot}", parent.unwrap_or(""))))
}

/// The slot our walker gave the iframe element that owns `frame`, found
/// through the DOM of the frame's parent document.
async fn owner_slot(
    page: &Page,
    parent: Option<&str>,
    frame: &str,
    budget: &Budget,
) -> Result<Option<FrameSlot>> {
    let Some(owner) = frame_owner(page, parent, frame, budget).await? else {
        return Ok(None);
    };
    let value = page
        .call_in(
            parent,
            budget,
            &RuntimeCallFunctionOn {
                object_id: owner,
                function_declaration: "function() { return globalThis.__browserShell ? [__browserShell.doc, __browserShell.slotOf(this)] : null; }".into(),
                return_by_value: true,
                await_promise: false,
            },
        )
        .await?;
    let found = value.result.value.unwrap_or_default();
    Ok(match (found[0].as_str(), found[1].as_str()) {
        (Some(doc), Some(slot)) => Some(FrameSlot {
            doc: doc.to_owned(),
            slot: slot.to_owned(),
        }),
        _ => None,
    })
}

/// The iframe element owning `frame`, as an object in our world of `parent`.
async fn frame_owner(
    page: &Page,
    parent: Option<&str>,
    frame: &str,
    budget: &Budget,
) -> Result<Option<String>> {
    let owner = page
        .call_in(
            parent,
            budget,
            &DomGetFrameOwner {
                frame_id: frame.to_owned(),
            },
        )
        .await?;
    let context = page.world(parent).context_id(page, budget).await?;
    let resolved = page
        .call_in(
            parent,
            budget,
            &DomResolveNode {
                backend_node_id: owner.backend_node_id,
                execution_context_id: context,
            },
        )
        .await?;
    Ok(resolved.object.object_id)
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
        let owner = frame_owner(page, parent, &info.id, budget)
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
