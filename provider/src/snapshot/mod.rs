//! What the model sees: the page as a compact tree with element refs.
//!
//! Three pure steps and a little state:
//! * the page-side walker (`src/js/agent/`, in our isolated world; `find.js`
//!   beside it finds by role and name and in virtualized collections) builds
//!   the visible tree and hands out refs ([`tree`]);
//! * [`render`] turns it into text within limits, counting what it leaves out;
//! * [`diff`] compares two renderings line by line.
//!
//! [`TabState`] remembers, per tab, every ref issued (with the document it
//! was seen in and its fingerprint) and the last full snapshot the owning
//! session saw, which is the base for the next diff.

pub mod diff;
pub mod render;
pub mod tree;

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::json;

use crate::cdp::protocol::{
    DomDescribeNode, DomGetFrameOwner, DomResolveNode, RuntimeCallFunctionOn, RuntimeEvaluate,
};
use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};
use render::{RenderLimits, Rendered};
use tree::{Fingerprint, Node, Walk};

/// Limits on what a snapshot walks and shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimits {
    /// Elements the walker visits at most (bounds the time on huge pages).
    pub max_nodes: u32,
    /// Characters of text per node.
    pub max_text: u32,
    /// Nesting depth walked.
    pub max_depth: u32,
    /// Rendering limits: total bytes, children per list or table.
    pub render: RenderLimits,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        Self {
            max_nodes: 20_000,
            max_text: 100,
            max_depth: 64,
            render: RenderLimits::default(),
        }
    }
}

/// Which part of the page to snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// The whole page.
    #[default]
    Page,
    /// The subtree of the element behind this ref.
    Ref(String),
    /// The subtree of the first element matching this CSS selector.
    Selector(String),
}

/// A snapshot as the model receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Increases with every snapshot of the tab.
    pub generation: u64,
    /// The page URL.
    pub url: String,
    /// The page title.
    pub title: String,
    /// The tree as text.
    pub text: String,
    /// Nodes left out (counted, never silently dropped).
    pub omitted: u64,
    /// Whether anything was left out.
    pub truncated: bool,
}

impl Snapshot {
    /// What to do when the snapshot was truncated.
    pub fn hint(&self) -> Option<&'static str> {
        self.truncated
            .then_some("the page is larger than the snapshot limit; scope it with a CSS selector or a ref to see the rest")
    }
}

/// What an action returns about the page after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// Changes since the last snapshot the session saw.
    Diff {
        /// The generation the diff is against.
        base: u64,
        /// The generation it leads to.
        generation: u64,
        /// The diff text (`+`, `~`, `-` lines with context).
        text: String,
        /// Elements the page replaced with identical look-alikes (new refs
        /// for the same things); left out of `text`.
        rerendered: diff::Rerendered,
    },
    /// A whole snapshot, because continuity was lost or a diff would not be smaller.
    Reset {
        /// Why a full snapshot was sent.
        reason: ResetReason,
        /// The snapshot.
        snapshot: Snapshot,
    },
}

impl Observation {
    /// The bytes a reader gets: the diff and its re-rendering summary, or
    /// the whole snapshot.
    pub fn shown_bytes(&self) -> usize {
        match self {
            Self::Diff {
                text, rerendered, ..
            } => text.len() + rerendered.bytes(),
            Self::Reset { snapshot, .. } => snapshot.text.len(),
        }
    }

    /// Whether the page after the action is the browser's own error page
    /// (a navigation that could not load).
    pub fn is_error_page(&self) -> bool {
        matches!(self, Self::Reset { snapshot, .. } if snapshot.url.starts_with("chrome-error:"))
    }
}

/// Why an observation is a full snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    /// No earlier snapshot of this tab to compare with.
    FirstSnapshot,
    /// The page navigated: it is a different document.
    Navigated,
    /// The diff would have been nearly as large as the snapshot.
    LargeChange,
}

/// A ref as issued: where it was seen and what it looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefRecord {
    /// The out-of-process frame it lives in (`None`: the main frame's process).
    pub frame: Option<String>,
    /// The document it was seen in.
    pub doc: String,
    /// Its fingerprint when last seen.
    pub fingerprint: Fingerprint,
}

/// How many refs of departed documents a tab remembers.
const RETIRED_REFS_KEPT: usize = 10_000;

/// The last full snapshot the session saw.
#[derive(Debug, Clone)]
struct Seen {
    generation: u64,
    doc: String,
    rendered: Rendered,
}

/// Per-tab snapshot state: issued refs and the diff base.
#[derive(Debug)]
pub struct TabState {
    /// The next ref number; never decreases, so refs are never reused in a tab.
    next_ref: u64,
    /// Every ref issued in this tab that may still resolve.
    refs: HashMap<String, RefRecord>,
    /// Refs of documents that are gone (newest last, at most
    /// [`RETIRED_REFS_KEPT`]): using one is `STALE_REF`, naming what it was.
    retired: HashMap<String, RefRecord>,
    /// Retirement order, to forget the oldest first.
    retired_order: VecDeque<String>,
    /// Snapshots taken so far.
    generation: u64,
    /// Base for the next diff.
    last: Option<Seen>,
}

impl Default for TabState {
    fn default() -> Self {
        Self {
            next_ref: 1,
            refs: HashMap::new(),
            retired: HashMap::new(),
            retired_order: VecDeque::new(),
            generation: 0,
            last: None,
        }
    }
}

impl TabState {
    /// The record of a ref, if it was ever issued in this tab.
    pub(crate) fn record(&self, reference: &str) -> Option<&RefRecord> {
        self.refs.get(reference)
    }

    /// The record of a ref whose document is gone, if it is still remembered.
    pub(crate) fn retired(&self, reference: &str) -> Option<&RefRecord> {
        self.retired.get(reference)
    }

    /// The next ref number (passed to the page when it may hand out refs).
    pub(crate) fn next_ref(&self) -> u64 {
        self.next_ref
    }

    /// Records refs handed out by the page outside a snapshot.
    pub(crate) fn advance(&mut self, next_ref: u64) {
        self.next_ref = self.next_ref.max(next_ref);
    }

    /// Records a ref handed out outside a snapshot (a suggestion).
    pub(crate) fn remember(
        &mut self,
        reference: &str,
        frame: Option<String>,
        doc: String,
        fingerprint: Fingerprint,
    ) {
        self.refs.insert(
            reference.to_owned(),
            RefRecord {
                frame,
                doc,
                fingerprint,
            },
        );
    }

    /// Refs of the current document whose fingerprint has this role and name.
    pub(crate) fn find(&self, docs: &HashSet<String>, role: &str, name: &str) -> Vec<String> {
        let mut found: Vec<String> = self
            .refs
            .iter()
            .filter(|(_, r)| {
                docs.contains(&r.doc) && r.fingerprint.role == role && r.fingerprint.name == name
            })
            .map(|(reference, _)| reference.clone())
            .collect();
        found.sort_by_key(|r| r.trim_start_matches('e').parse::<u64>().unwrap_or(u64::MAX));
        found
    }

    fn absorb(&mut self, walk: &Walk, frame: Option<&str>) {
        self.next_ref = self.next_ref.max(walk.next_ref);
        for (reference, fingerprint) in &walk.fingerprints {
            self.refs.insert(
                reference.clone(),
                RefRecord {
                    frame: frame.map(str::to_owned),
                    doc: walk.doc.clone(),
                    fingerprint: fingerprint.clone(),
                },
            );
        }
    }

    /// Retires refs of documents no longer on the page: they can never
    /// resolve again. The most recent are remembered (bounded, so the
    /// table does not grow with every navigation) to say what they were.
    fn prune(&mut self, live_docs: &HashSet<String>) {
        let gone: Vec<String> = self
            .refs
            .iter()
            .filter(|(_, record)| !live_docs.contains(&record.doc))
            .map(|(reference, _)| reference.clone())
            .collect();
        for reference in gone {
            if let Some(record) = self.refs.remove(&reference) {
                self.retired.insert(reference.clone(), record);
                self.retired_order.push_back(reference);
            }
        }
        while self.retired_order.len() > RETIRED_REFS_KEPT {
            if let Some(oldest) = self.retired_order.pop_front() {
                self.retired.remove(&oldest);
            }
        }
    }
}

/// A walk of the whole page: the main document with the trees of its
/// out-of-process frames attached where their iframes sit.
#[derive(Debug, Clone)]
pub(crate) struct PageWalk {
    /// The combined tree.
    pub tree: Vec<Node>,
    /// The main document's identity (changes on navigation).
    pub main_doc: String,
    /// Every document walked.
    pub docs: HashSet<String>,
    /// The page URL.
    pub url: String,
    /// The page title.
    pub title: String,
    /// Nodes the walkers left out.
    pub omitted: u64,
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
            walk(page, None, state, scope, when, limits, budget),
            place_frames(page, budget)
        ),
        // Frames may come and go while the page settles: find them after.
        Walking::WhenSettled(_) => {
            let main = walk(page, None, state, scope, when, limits, budget).await;
            (main, place_frames(page, budget).await)
        }
    };
    let main = main?;
    let mut tree = main.tree;
    tag_frame_slots(&mut tree, "");
    let mut combined = PageWalk {
        tree,
        main_doc: main.doc.clone(),
        docs: HashSet::from([main.doc]),
        url: main.url,
        title: main.title,
        omitted: main.omitted,
    };
    for (frame, key) in placed {
        let walked = walk(
            page,
            Some(&frame),
            state,
            &Scope::Page,
            Walking::Now,
            limits,
            budget,
        );
        let child = match walked.await {
            Ok(child) => child,
            Err(error) => {
                tracing::debug!(%frame, %error, "cannot walk an out-of-process frame");
                continue;
            }
        };
        let mut subtree = child.tree;
        tag_frame_slots(&mut subtree, &frame);
        if attach(&mut combined.tree, &key, &mut Some(subtree)) {
            combined.docs.insert(child.doc);
            combined.omitted += child.omitted;
        }
    }
    if *scope == Scope::Page {
        state.prune(&combined.docs);
    }
    Ok(combined)
}

/// The page's out-of-process frames (parents first), each with the key of
/// the iframe slot it belongs under (`parent:slot`). Frames that cannot be
/// placed are left out.
async fn place_frames(page: &Page, budget: &Budget) -> Vec<(String, String)> {
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

/// Prefixes the frame slots found in a frame's tree with that frame's id,
/// making them unique across frames.
fn tag_frame_slots(nodes: &mut [Node], frame: &str) {
    for node in nodes {
        if let Some(slot) = &node.frame {
            node.frame = Some(format!("{frame}:{slot}"));
        }
        tag_frame_slots(&mut node.children, frame);
    }
}

/// Puts `subtree` under the node whose slot is `key`; false if none is.
fn attach(nodes: &mut [Node], key: &str, subtree: &mut Option<Vec<Node>>) -> bool {
    for node in nodes {
        if node.frame.as_deref() == Some(key) {
            if let Some(children) = subtree.take() {
                node.children = children;
            }
            return true;
        }
        if attach(&mut node.children, key, subtree) {
            return true;
        }
    }
    false
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
pub(crate) async fn frame_owner(
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

/// Walks one frame's document (or a part of it) and records the refs it hands out.
pub(crate) async fn walk(
    page: &Page,
    frame: Option<&str>,
    state: &mut TabState,
    scope: &Scope,
    when: Walking,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Walk> {
    let mut expression = walk_expression(scope, limits, state.next_ref);
    if let Walking::WhenSettled(Settling {
        bound_ms,
        frame_always,
    }) = when
    {
        expression = format!(
            "(async () => {{ await __browserShell.settle({bound_ms}, {frame_always}); return {expression}; }})()"
        );
    }
    let mut walk = run_walk(page, frame, scope, &expression, budget).await?;
    // Closed shadow roots are invisible to scripts; CDP can pierce them.
    // Hand the ones found to our world and walk again to include them.
    if walk.pending_hosts > 0
        && adopt_closed_roots(page, frame, walk.pending_hosts, budget).await? > 0
    {
        let again = walk_expression(scope, limits, walk.next_ref);
        walk = run_walk(page, frame, scope, &again, budget).await?;
    }
    state.absorb(&walk, frame);
    Ok(walk)
}

/// The origin of a URL (`scheme://host:port`), for compact same-origin links.
fn origin_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    match parsed.origin() {
        origin @ url::Origin::Tuple(..) => Some(origin.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// Takes a snapshot of the page. A whole-page snapshot becomes the base
/// for the next diff.
pub async fn snapshot(
    page: &Page,
    scope: &Scope,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Snapshot> {
    let mut state = page.agent.lock().await;
    let (snapshot, seen) = capture(page, &mut state, scope, Walking::Now, limits, budget).await?;
    if *scope == Scope::Page {
        state.last = Some(seen);
    }
    Ok(snapshot)
}

/// A look at the whole page after an action. Its refs are handed out, but
/// it is not yet the base for the next diff: the action may still turn out
/// to have navigated, and then the look is dropped.
pub(crate) struct Look {
    snapshot: Snapshot,
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
    let (snapshot, seen) = capture(page, &mut state, &Scope::Page, when, limits, budget).await?;
    Ok(Look { snapshot, seen })
}

/// The observation after an action on `acted_on` (a ref): a diff of `look`
/// against the last snapshot the session saw, or a full snapshot marked as
/// a reset. `look` becomes the base for the next diff.
pub(crate) async fn observe(page: &Page, look: Look, acted_on: &str) -> Observation {
    let Look { snapshot, seen } = look;
    let mut state = page.agent.lock().await;
    let observation = compare(state.last.as_ref(), &seen, snapshot, acted_on);
    state.last = Some(seen);
    observation
}

/// What changed from `previous` to `seen` (whose snapshot is `snapshot`).
fn compare(
    previous: Option<&Seen>,
    seen: &Seen,
    snapshot: Snapshot,
    acted_on: &str,
) -> Observation {
    let reason = match previous {
        None => ResetReason::FirstSnapshot,
        Some(previous) if previous.doc != seen.doc => ResetReason::Navigated,
        Some(previous) => {
            let changes = diff::diff_after_action(&previous.rendered, &seen.rendered, acted_on);
            if changes.bytes() * 10 <= snapshot.text.len() * 7 {
                return Observation::Diff {
                    base: previous.generation,
                    generation: seen.generation,
                    text: changes.text,
                    rerendered: changes.rerendered,
                };
            }
            ResetReason::LargeChange
        }
    };
    Observation::Reset { reason, snapshot }
}

/// Walks and renders the page as a new generation: the snapshot for the
/// model, and what a later diff compares against.
async fn capture(
    page: &Page,
    state: &mut TabState,
    scope: &Scope,
    when: Walking,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<(Snapshot, Seen)> {
    let walk = walk_page_when(page, state, scope, when, limits, budget).await?;
    let rendered = render::render(
        &walk.tree,
        limits.render,
        walk.omitted,
        origin_of(&walk.url).as_deref(),
    );
    state.generation += 1;
    let snapshot = Snapshot {
        generation: state.generation,
        url: walk.url,
        title: walk.title,
        text: rendered.text(),
        omitted: rendered.omitted,
        truncated: rendered.truncated,
    };
    let seen = Seen {
        generation: state.generation,
        doc: walk.main_doc,
        rendered,
    };
    Ok((snapshot, seen))
}

/// The page-side call that walks `scope`, handing out refs from `next_ref` on.
fn walk_expression(scope: &Scope, limits: &SnapshotLimits, next_ref: u64) -> String {
    let options = json!({
        "nextRef": next_ref,
        "maxNodes": limits.max_nodes,
        "maxText": limits.max_text,
        "maxDepth": limits.max_depth,
        "maxChildren": limits.render.max_children,
    });
    let root = match scope {
        Scope::Page => "null".to_owned(),
        Scope::Ref(reference) => format!("__browserShell.element({})", json!(reference)),
        Scope::Selector(selector) => format!(
            "(() => {{ const found = __browserShell.rootBySelector({}); if (found.error) throw new SyntaxError('bad selector: ' + found.error); return found.element; }})()",
            json!(selector)
        ),
    };
    // The result travels as one JSON string: far cheaper for the browser to
    // hand over than a deep object tree.
    format!(
        "(() => {{ const root = {root}; if ({scoped} && !root) return {{ missing: true }}; \
         return JSON.stringify(__browserShell.walk(Object.assign({options}, {{ root }}))); }})()",
        scoped = !matches!(scope, Scope::Page),
    )
}

/// Runs one walk expression in `frame`'s world and reads its result.
async fn run_walk(
    page: &Page,
    frame: Option<&str>,
    scope: &Scope,
    expression: &str,
    budget: &Budget,
) -> Result<Walk> {
    let t0 = std::time::Instant::now();
    let value = match page.world(frame).evaluate(page, budget, expression).await {
        Err(BrowserError::ExecuteFailed { message }) if message.contains("bad selector") => {
            return Err(BrowserError::invalid("selector", message));
        }
        other => other?,
    };
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
    tracing::debug!(page_ms = walk.took_ms, total = ?t0.elapsed(), bytes, "walk");
    Ok(walk)
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
        let host = page
            .call_in(
                frame,
                budget,
                &RuntimeEvaluate {
                    expression: format!("__browserShell.pendingHost({index})"),
                    context_id: Some(context),
                    ..RuntimeEvaluate::default()
                },
            )
            .await?;
        let Some(host) = host.result.object_id else {
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
            let taken = page
                .call_in(
                    frame,
                    budget,
                    &RuntimeCallFunctionOn {
                        object_id: root,
                        function_declaration:
                            "function() { return __browserShell.adoptClosedRoot(this); }".into(),
                        return_by_value: true,
                        await_promise: false,
                    },
                )
                .await?;
            if taken.result.value == Some(serde_json::Value::Bool(true)) {
                adopted += 1;
            }
        }
    }
    Ok(adopted)
}
