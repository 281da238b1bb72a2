//! Where out-of-process frames sit: the slot of their iframe in the
//! parent's tree, and the corner of their viewport in the page's.

use crate::cdp::protocol::{DomGetFrameOwner, DomResolveNode, RuntimeCallFunctionOn};
use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};

/// Called on an iframe: its content box's corner in the page's viewport
/// (see the file).
const FRAME_CORNER_JS: &str = include_str!("../../js/scripts/frame_corner.js");

/// The page's out-of-process frames (parents first), each with the key of
/// the iframe slot it belongs under (`parent:slot`). Frames that cannot be
/// placed are left out.
pub(super) async fn place_frames(page: &Page, budget: &Budget) -> Vec<(String, String)> {
    let frames = page.host().frames(page.view()).await.unwrap_or_default();
    let slots = futures_util::future::join_all(
        frames
            .iter()
            .map(|frame| owner_slot(page, frame.parent.as_deref(), &frame.id, budget)),
    )
    .await;
    let mut placed = Vec::new();
    for (frame, slot) in frames.into_iter().zip(slots) {
        match slot {
            Ok(Some(slot)) => {
                let key = format!("{}:{slot}", frame.parent.as_deref().unwrap_or(""));
                placed.push((frame.id, key));
            }
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(frame = %frame.id, %error, "cannot place an out-of-process frame");
            }
        }
    }
    placed
}

/// The slot our walker gave the iframe element that owns `frame`, found
/// through the DOM of the frame's parent document.
async fn owner_slot(
    page: &Page,
    parent: Option<&str>,
    frame: &str,
    budget: &Budget,
) -> Result<Option<String>> {
    let Some(owner) = frame_owner(page, parent, frame, budget).await? else {
        return Ok(None);
    };
    let value = page
        .call_in(
            parent,
            budget,
            &RuntimeCallFunctionOn {
                object_id: owner,
                function_declaration: "function() { return globalThis.__browserShell ? __browserShell.slotOf(this) : null; }".into(),
                return_by_value: true,
                await_promise: false,
            },
        )
        .await?;
    Ok(value
        .result
        .value
        .and_then(|v| v.as_str().map(str::to_owned)))
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
