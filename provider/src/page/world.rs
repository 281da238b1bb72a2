//! Our isolated JavaScript world in a page's main frame, with the agent
//! library (`src/js/agent/*.js`, `find.js`, `inspect.js`) installed in it.
//!
//! The world shares the DOM with the page but not its globals, so page
//! scripts can neither see our element refs nor break our helpers by
//! patching prototypes. A world lives as long as its document: after a
//! navigation the old context is gone and the next call creates a new one
//! (with an empty ref map — refs of the old document are stale by design).
//! Each world also remembers the slots it gave the iframes that hold
//! out-of-process frames ([`FrameSlot`]), so looks find where each
//! frame's tree goes without asking the page.

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::Mutex;

use super::{Budget, Page};
use crate::cdp::protocol::{PageCreateIsolatedWorld, RuntimeEvaluate};
use crate::error::{BrowserError, Result};

/// The agent library, joined at build time: `agent/*.js` are the parts of
/// one function scope (DOM helpers, roles and names, refs, the walk,
/// actionability, waits, then what it exports), installed once per
/// document; `find.js` and `inspect.js` build on what it exports.
const AGENT_JS: &str = concat!(
    "(() => {\nif (globalThis.__browserShell) return 'present';\n",
    include_str!("../js/agent/dom.js"),
    include_str!("../js/agent/names.js"),
    include_str!("../js/agent/refs.js"),
    include_str!("../js/agent/walk.js"),
    include_str!("../js/agent/act.js"),
    include_str!("../js/agent/wait.js"),
    include_str!("../js/agent/exports.js"),
    "return 'installed';\n})();\n",
    include_str!("../js/find.js"),
    ";\n",
    include_str!("../js/inspect.js")
);
const WORLD_NAME: &str = "browser-shell";

/// The cached execution context of our world in one frame of a page.
#[derive(Debug, Default)]
pub struct World {
    /// The out-of-process frame this world lives in; `None` for the page's main frame.
    frame: Option<String>,
    /// The context id while it is known to be alive.
    context: Mutex<Option<i64>>,
    /// The slots our world gave the iframes of out-of-process frames in
    /// this frame's document, by frame id (see [`FrameSlot`]).
    slots: std::sync::Mutex<HashMap<String, FrameSlot>>,
}

/// The slot (`f1`, …) our world gave the iframe an out-of-process frame
/// lives in, so that a look puts the frame's tree there.
///
/// A frame id belongs to one iframe element for the frame's whole life
/// (taking the iframe out detaches the frame; a new iframe is a new frame),
/// and a slot to one element for the life of our world in its document. So
/// a slot holds while a walk of the parent comes back from the same world
/// (`doc`): warm looks find every frame's place without asking the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameSlot {
    /// The identity of our world in the parent document that gave the slot
    /// (a walk's `doc`).
    pub(crate) doc: String,
    /// The slot.
    pub(crate) slot: String,
}

impl World {
    /// A world (not yet created) for the main frame or an out-of-process frame.
    pub fn new(frame: Option<String>) -> Self {
        Self {
            frame,
            context: Mutex::new(None),
            slots: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The slot remembered for the iframe of out-of-process `frame`.
    pub(crate) fn slot_of(&self, frame: &str) -> Option<FrameSlot> {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(frame)
            .cloned()
    }

    /// Remembers the slot of the iframe of out-of-process `frame`.
    pub(crate) fn remember_slot(&self, frame: &str, slot: FrameSlot) {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(frame.to_owned(), slot);
    }

    /// Forgets the slots of frames other than `frames` (gone from the page),
    /// so the memory stays as large as the page's frames.
    pub(crate) fn forget_slots_except<'a>(&self, frames: impl Iterator<Item = &'a str> + Clone) {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|frame, _| frames.clone().any(|f| f == frame));
    }

    /// The context id, creating the world if needed (for commands that
    /// address objects in it, such as `DOM.resolveNode`).
    pub async fn context_id(&self, page: &Page, budget: &Budget) -> Result<i64> {
        let mut context = self.context.lock().await;
        if let Some(id) = *context {
            return Ok(id);
        }
        let id = self.create(page, budget).await?;
        *context = Some(id);
        Ok(id)
    }

    /// Creates the world in the frame's new document, which has just
    /// committed, so that the first look at it does not wait for that.
    /// A failure is left for the next call to meet (and retry).
    pub async fn renew(&self, page: &Page, budget: &Budget) {
        let mut context = self.context.lock().await;
        match self.create(page, budget).await {
            Ok(id) => *context = Some(id),
            Err(error) => {
                tracing::debug!(view = %page.view(), %error, "could not create our world in the new document yet");
                *context = None;
            }
        }
    }

    /// Evaluates `expression` (which may use `__browserShell`) in our world,
    /// awaiting promises, and returns its JSON value.
    ///
    /// If the world's document was replaced, the world is created anew and
    /// the call made once more; callers only pass expressions that are safe
    /// to repeat (reads, scrolling into view).
    pub async fn evaluate(&self, page: &Page, budget: &Budget, expression: &str) -> Result<Value> {
        let mut context = self.context.lock().await;
        for attempt in 0..2 {
            let id = match *context {
                Some(id) => id,
                None => {
                    let id = self.create(page, budget).await?;
                    *context = Some(id);
                    id
                }
            };
            match run(page, self.frame.as_deref(), budget, id, expression).await {
                Err(error) if attempt == 0 && is_lost_context(&error) => {
                    tracing::debug!(view = %page.view(), "our world's document is gone; creating a new world");
                    *context = None;
                }
                other => return other,
            }
        }
        Err(BrowserError::ExecuteFailed {
            message: "our helper world could not be created in this page".into(),
        })
    }

    async fn create(&self, page: &Page, budget: &Budget) -> Result<i64> {
        let frame = self.frame.as_deref();
        let world = page
            .call_in(
                frame,
                budget,
                &PageCreateIsolatedWorld {
                    frame_id: frame.unwrap_or(page.main_frame()).to_owned(),
                    world_name: WORLD_NAME.to_owned(),
                },
            )
            .await?;
        run(page, frame, budget, world.execution_context_id, AGENT_JS).await?;
        Ok(world.execution_context_id)
    }
}

async fn run(
    page: &Page,
    frame: Option<&str>,
    budget: &Budget,
    context: i64,
    expression: &str,
) -> Result<Value> {
    let evaluated = page
        .call_in(
            frame,
            budget,
            &RuntimeEvaluate {
                expression: expression.to_owned(),
                context_id: Some(context),
                return_by_value: true,
                await_promise: true,
                ..RuntimeEvaluate::default()
            },
        )
        .await?;
    if let Some(details) = evaluated.exception_details {
        let message = details
            .exception
            .and_then(|e| e.description)
            .unwrap_or(details.text);
        return Err(BrowserError::ExecuteFailed { message });
    }
    Ok(evaluated.result.value.unwrap_or(Value::Null))
}

/// The context died with its document, or our library is missing from it.
fn is_lost_context(error: &BrowserError) -> bool {
    match error {
        BrowserError::Protocol { message, .. } => {
            message.contains("Cannot find context") || message.contains("context with specified id")
        }
        BrowserError::ExecuteFailed { message } => {
            message.contains("__browserShell is not defined")
        }
        _ => false,
    }
}
