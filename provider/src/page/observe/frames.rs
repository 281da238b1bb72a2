//! Where out-of-process frames sit: the slot of their iframe in the
//! parent's tree, and the corner of their viewport in the page's.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::cdp::protocol::{DomGetFrameOwner, DomResolveNode, RuntimeCallFunctionOn};
use crate::error::{BrowserError, Result};
use crate::host::FrameInfo;
use crate::page::{Budget, Page};

/// Called on an iframe: its content box's corner in the page's viewport
/// (see the file).
const FRAME_CORNER_JS: &str = include_str!("../../js/scripts/frame_corner.js");

/// Where each out-of-process frame's iframe sits, remembered across looks:
/// frame id → the slot our world in the parent document gave its iframe.
///
/// A frame id belongs to one iframe element for the frame's whole life
/// (removing the iframe detaches the frame; a new iframe is a new frame),
/// and a slot to one element for the life of our world in that document.
/// So an entry holds while the parent's walk comes back from the same
/// world (its `doc`); a warm look then finds every frame's place without
/// asking the page. Bounded: entries of frames no longer on the page go.
#[derive(Debug, Default)]
pub(crate) struct FrameSlots(Mutex<HashMap<String, Placed>>);

/// The slot of one frame's iframe, and the world that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placed {
    /// The `doc` of our world in the parent document.
    doc: String,
    /// The slot (`f1`, …) that world gave the iframe.
    slot: String,
}

impl FrameSlots {
    fn get(&self, frame: &str) -> Option<Placed> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(frame)
            .cloned()
    }

    fn put(&self, frame: &str, placed: Placed) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(frame.to_owned(), placed);
    }

    /// Forgets frames that are no longer on the page.
    pub(super) fn keep_only(&self, frames: &[FrameInfo]) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|frame, _| frames.iter().any(|f| &f.id == frame));
    }
}

/// The key (`parent:slot`) of the iframe slot out-of-process `frame`
/// belongs under, given the `doc` the walk of its parent document came back
/// from; `None` when its iframe has no slot there (or that document has
/// been replaced since the walk). Remembered slots answer without a round
/// trip; others are asked of the parent (three).
pub(super) async fn slot_key(
    page: &Page,
    frame: &FrameInfo,
    parent_doc: &str,
    budget: &Budget,
) -> Result<Option<String>> {
    let parent = frame.parent.as_deref();
    let slot = match page.frame_slots.get(&frame.id) {
        Some(known) if known.doc == parent_doc => known.slot,
        _ => {
            let Some(found) = owner_slot(page, parent, &frame.id, budget).await? else {
                return Ok(None);
            };
            page.frame_slots.put(&frame.id, found.clone());
            if found.doc != parent_doc {
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
) -> Result<Option<Placed>> {
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
        (Some(doc), Some(slot)) => Some(Placed {
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
