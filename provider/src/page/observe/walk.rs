//! One frame's walk: the page-side walker run in our world, and what only
//! CDP can reach for it: closed shadow roots, and the listeners that make a
//! list's plain items things a person presses and drags.

use serde_json::json;

use crate::cdp::protocol::{
    DomDebuggerGetEventListeners, DomDescribeNode, DomResolveNode, DomResolveNodeInPageWorld,
    RuntimeCallFunctionOn, RuntimeEvaluate,
};
use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};
use crate::snapshot::tree::Walk;
use crate::snapshot::{Scope, SnapshotLimits, TabState};

/// The walk of one frame, called with its arguments (see the file).
const WALK_JS: &str = include_str!("../../js/scripts/walk.js");

/// When the main frame's walk starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walking {
    /// At once.
    Now,
    /// Once the DOM has settled after an action, in the same call (that
    /// saves a round trip).
    WhenSettled(Settling),
}

/// How long the page may take to settle after an action, and whether it
/// always gets a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settling {
    /// The longest wait for the DOM to stop changing.
    pub bound_ms: u32,
    /// Wait for a frame even when the page asked for none: the action's
    /// effect comes with one (scroll events fire in the frame).
    pub frame_always: bool,
}

/// Whether a walk may hand out new refs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NewRefs {
    /// It may, from the tab's next ref number on.
    Issue,
    /// It may not: it runs beside another walk that does (refs of all
    /// frames share one namespace), and gives up at the first element
    /// without a ref, to be walked again after the others.
    Refuse,
}

/// Walks one frame's document (or a part of it) and records the refs it hands out.
pub(super) async fn walk(
    page: &Page,
    frame: Option<&str>,
    state: &mut TabState,
    scope: &Scope,
    when: Walking,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Walk> {
    let walk = walk_unrecorded(
        page,
        frame,
        scope,
        when,
        limits,
        (state.next_ref(), NewRefs::Issue),
        budget,
    )
    .await
    .and_then(issued)?;
    state.absorb(&walk, frame);
    Ok(walk)
}

/// The walk of a frame that was allowed to hand out refs ([`NewRefs::Issue`]):
/// such a walk always comes back.
pub(super) fn issued(walk: Option<Walk>) -> Result<Walk> {
    walk.ok_or_else(|| BrowserError::ExecuteFailed {
        message: "the snapshot walker would not hand out refs".into(),
    })
}

/// Walks one frame's document (or a part of it) without recording its
/// refs (the caller absorbs the walk into the tab's registry), handing out
/// refs from `next_ref` on or, with [`NewRefs::Refuse`], none: then `None`
/// when the frame has an element that needs one.
pub(super) async fn walk_unrecorded(
    page: &Page,
    frame: Option<&str>,
    scope: &Scope,
    when: Walking,
    limits: &SnapshotLimits,
    (next_ref, new_refs): (u64, NewRefs),
    budget: &Budget,
) -> Result<Option<Walk>> {
    let settle = match when {
        Walking::Now => None,
        Walking::WhenSettled(settling) => Some(settling),
    };
    let expression = walk_expression(scope, limits, next_ref, new_refs, settle);
    let Some(mut walk) = run_walk(page, frame, scope, &expression, budget).await? else {
        return Ok(None);
    };
    // Closed shadow roots and listeners are invisible to scripts; CDP
    // sees them. Hand what it found to our world and walk again with it.
    let mut adopted = 0;
    if walk.pending_hosts > 0 {
        adopted += adopt_closed_roots(page, frame, walk.pending_hosts, budget).await?;
    }
    if walk.pending_lists > 0 {
        adopted += adopt_listened_lists(page, frame, walk.pending_lists, budget).await?;
    }
    if adopted > 0 {
        let again = walk_expression(scope, limits, walk.next_ref, new_refs, None);
        let Some(again) = run_walk(page, frame, scope, &again, budget).await? else {
            return Ok(None);
        };
        walk = again;
    }
    Ok(Some(walk))
}

/// The page-side call that walks `scope`, handing out refs from `next_ref`
/// on (or none, per `new_refs`; once the DOM has settled, with `settle`).
fn walk_expression(
    scope: &Scope,
    limits: &SnapshotLimits,
    next_ref: u64,
    new_refs: NewRefs,
    settle: Option<Settling>,
) -> String {
    let mut arguments = json!({
        "options": {
            "nextRef": next_ref,
            "maxNodes": limits.max_nodes,
            "maxText": limits.max_text,
            "maxDepth": limits.max_depth,
            "maxChildren": limits.render.max_children,
        },
    });
    if new_refs == NewRefs::Refuse {
        arguments["options"]["newRefs"] = json!(false);
    }
    match scope {
        Scope::Page => {}
        Scope::Ref(reference) => arguments["ref"] = json!(reference),
        Scope::Selector(selector) => arguments["selector"] = json!(selector),
    }
    if let Some(Settling {
        bound_ms,
        frame_always,
    }) = settle
    {
        arguments["settle"] = json!({ "boundMs": bound_ms, "frameAlways": frame_always });
    }
    // The newline ends any comment the script closes with.
    format!("({WALK_JS}\n)({arguments})")
}

/// Runs one walk expression in `frame`'s world and reads its result
/// (`None`: the walk needed a ref it may not hand out).
async fn run_walk(
    page: &Page,
    frame: Option<&str>,
    scope: &Scope,
    expression: &str,
    budget: &Budget,
) -> Result<Option<Walk>> {
    let t0 = std::time::Instant::now();
    let value = match page.world(frame).evaluate(page, budget, expression).await {
        Err(BrowserError::ExecuteFailed { message }) if message.contains("bad selector") => {
            return Err(BrowserError::invalid("selector", message));
        }
        other => other?,
    };
    if value.get("newRefNeeded").is_some() {
        tracing::debug!(frame, total = ?t0.elapsed(), "walk needs new refs");
        return Ok(None);
    }
    if value.get("missing").is_some() {
        return Err(match scope {
            Scope::Ref(reference) => BrowserError::invalid(
                "ref",
                format!("{reference} is not on the page now; take a new snapshot"),
            ),
            Scope::Selector(selector) => BrowserError::ElementNotFound {
                selector: selector.clone(),
            },
            Scope::Page => BrowserError::ExecuteFailed {
                message: "the page has no document".into(),
            },
        });
    }
    let bytes = value.as_str().map_or(0, str::len);
    let parsed = match value.as_str() {
        Some(text) => serde_json::from_str::<Walk>(text),
        None => serde_json::from_value::<Walk>(value),
    };
    let walk = parsed.map_err(|e| BrowserError::ExecuteFailed {
        message: format!("the snapshot walker returned an unexpected shape: {e}"),
    })?;
    tracing::debug!(frame, page_ms = walk.took_ms, total = ?t0.elapsed(), bytes, "walk");
    Ok(Some(walk))
}

/// Events that start a press or a drag: a list listening for one of them
/// (on itself or on its items) lets a person press and drag its items.
const PRESS_EVENTS: [&str; 5] = [
    "pointerdown",
    "mousedown",
    "touchstart",
    "dragstart",
    "click",
];

/// Asks CDP for the listeners of the lists the walker flagged (on the
/// list and its items) and hands those listened to to our world. Returns
/// how many were.
async fn adopt_listened_lists(
    page: &Page,
    frame: Option<&str>,
    lists: u32,
    budget: &Budget,
) -> Result<usize> {
    let context = page.world(frame).context_id(page, budget).await?;
    let mut adopted = 0;
    for index in 0..lists {
        let pending = format!("__browserShell.pendingList({index})");
        let Some(list) = flagged(page, frame, context, pending, budget).await? else {
            continue;
        };
        // Listeners are reported for the world the object lives in: ask
        // about the page's own object for the same node.
        let node = page
            .call_in(
                frame,
                budget,
                &DomDescribeNode {
                    object_id: list.clone(),
                    depth: 0,
                    pierce: false,
                },
            )
            .await?;
        let in_page = page
            .call_in(
                frame,
                budget,
                &DomResolveNodeInPageWorld {
                    backend_node_id: node.node.backend_node_id,
                },
            )
            .await?;
        let Some(in_page) = in_page.object.object_id else {
            continue;
        };
        let found = page
            .call_in(
                frame,
                budget,
                &DomDebuggerGetEventListeners {
                    object_id: in_page,
                    depth: 1,
                    pierce: false,
                },
            )
            .await?;
        if !found
            .listeners
            .iter()
            .any(|listener| PRESS_EVENTS.contains(&listener.kind.as_str()))
        {
            continue;
        }
        if hand_over(page, frame, list, "adoptListening", budget).await? {
            adopted += 1;
        }
    }
    Ok(adopted)
}

/// The element the walker flagged that `pending` (a call into our world)
/// names, as an object of our world; `None` when it is gone.
async fn flagged(
    page: &Page,
    frame: Option<&str>,
    context: i64,
    pending: String,
    budget: &Budget,
) -> Result<Option<String>> {
    let found = page
        .call_in(
            frame,
            budget,
            &RuntimeEvaluate {
                expression: pending,
                context_id: Some(context),
                ..RuntimeEvaluate::default()
            },
        )
        .await?;
    Ok(found.result.object_id)
}

/// Hands `object` (of our world) to the agent library's `adopt` function
/// (`adoptClosedRoot`, `adoptListening`); true if it took it.
async fn hand_over(
    page: &Page,
    frame: Option<&str>,
    object: String,
    adopt: &str,
    budget: &Budget,
) -> Result<bool> {
    let taken = page
        .call_in(
            frame,
            budget,
            &RuntimeCallFunctionOn {
                object_id: object,
                function_declaration: format!(
                    "function() {{ return __browserShell.{adopt}(this); }}"
                ),
                return_by_value: true,
                await_promise: false,
            },
        )
        .await?;
    Ok(taken.result.value == Some(serde_json::Value::Bool(true)))
}

/// Finds closed shadow roots of the hosts the walker flagged and hands
/// them to our world. Returns how many were adopted.
async fn adopt_closed_roots(
    page: &Page,
    frame: Option<&str>,
    hosts: u32,
    budget: &Budget,
) -> Result<usize> {
    let context = page.world(frame).context_id(page, budget).await?;
    let mut adopted = 0;
    for index in 0..hosts {
        let pending = format!("__browserShell.pendingHost({index})");
        let Some(host) = flagged(page, frame, context, pending, budget).await? else {
            continue;
        };
        let described = page
            .call_in(
                frame,
                budget,
                &DomDescribeNode {
                    object_id: host,
                    depth: 0,
                    pierce: true,
                },
            )
            .await?;
        for root in described.node.shadow_roots {
            let resolved = page
                .call_in(
                    frame,
                    budget,
                    &DomResolveNode {
                        backend_node_id: root.backend_node_id,
                        execution_context_id: context,
                    },
                )
                .await?;
            let Some(root) = resolved.object.object_id else {
                continue;
            };
            if hand_over(page, frame, root, "adoptClosedRoot", budget).await? {
                adopted += 1;
            }
        }
    }
    Ok(adopted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_gets_its_scope_and_limits_as_data() {
        let limits = SnapshotLimits::default();
        let page = walk_expression(&Scope::Page, &limits, 7, NewRefs::Issue, None);
        assert!(page.starts_with("(// "), "{page}");
        assert!(page.contains("(function walkFrame("), "{page}");
        let arguments = r#"{"options":{"maxChildren":50,"maxDepth":64,"maxNodes":20000,"maxText":100,"nextRef":7}}"#;
        assert!(page.ends_with(&format!("\n)({arguments})")), "{page}");
        let scoped = walk_expression(
            &Scope::Selector("a[href='x']".into()),
            &limits,
            1,
            NewRefs::Issue,
            Some(Settling {
                bound_ms: 300,
                frame_always: true,
            }),
        );
        assert!(scoped.contains(r#""selector":"a[href='x']""#), "{scoped}");
        assert!(
            scoped.contains(r#""settle":{"boundMs":300,"frameAlways":true}"#),
            "{scoped}"
        );
        let by_ref = walk_expression(
            &Scope::Ref("e3".parse().unwrap()),
            &limits,
            1,
            NewRefs::Issue,
            None,
        );
        assert!(by_ref.contains(r#""ref":"e3""#), "{by_ref}");
        assert!(!by_ref.contains(r#""newRefs""#), "{by_ref}");
        let beside = walk_expression(&Scope::Page, &limits, 7, NewRefs::Refuse, None);
        assert!(beside.contains(r#""newRefs":false"#), "{beside}");
    }
}
