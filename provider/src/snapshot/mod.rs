//! What the model sees: the page as a compact tree with element refs, as
//! data. Nothing here talks to a page: walking the live page (frames,
//! closed shadow roots, refs back to elements) is
//! [`page::observe`](crate::page::observe)'s, which hands its walks here.
//!
//! Pure steps and the ref registry:
//! * [`tree`]: the page-side walker's output (`src/js/agent/`, run in our
//!   isolated world), typed, and the frames' trees joined into one;
//! * [`render`] turns it into text within limits, counting what it leaves out;
//! * [`diff`] compares two renderings line by line;
//! * [`Ref`]: the name an element goes by, and [`TabState`], the registry
//!   that remembers, per tab, every ref issued (with the document it was
//!   seen in and its fingerprint) and the last full snapshot the owning
//!   session saw, which is the base for the next diff.

pub mod diff;
mod reference;
pub mod render;
pub mod tree;

use std::collections::{HashMap, HashSet, VecDeque};

pub use reference::{NotARef, Ref};
use render::{RenderLimits, Rendered};
use tree::{Fingerprint, PageWalk, Walk};

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
    Ref(Ref),
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

/// A whole-page snapshot as a later diff compares against it: the last
/// one the session saw is the base for the next diff.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// Its generation.
    generation: u64,
    /// The main document it showed.
    doc: String,
    /// Its rendering.
    rendered: Rendered,
}

/// Per-tab snapshot state: issued refs and the diff base.
#[derive(Debug)]
pub struct TabState {
    /// The next ref number; never decreases, so refs are never reused in a tab.
    next_ref: u64,
    /// Every ref issued in this tab that may still resolve.
    refs: HashMap<Ref, RefRecord>,
    /// Refs of documents that are gone (newest last, at most
    /// [`RETIRED_REFS_KEPT`]): using one is `STALE_REF`, naming what it was.
    retired: HashMap<Ref, RefRecord>,
    /// Retirement order, to forget the oldest first.
    retired_order: VecDeque<Ref>,
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
    pub(crate) fn record(&self, reference: &Ref) -> Option<&RefRecord> {
        self.refs.get(reference)
    }

    /// The record of a ref whose document is gone, if it is still remembered.
    pub(crate) fn retired(&self, reference: &Ref) -> Option<&RefRecord> {
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
        reference: &Ref,
        frame: Option<String>,
        doc: String,
        fingerprint: Fingerprint,
    ) {
        self.refs.insert(
            reference.clone(),
            RefRecord {
                frame,
                doc,
                fingerprint,
            },
        );
    }

    /// Refs of the current document whose fingerprint has this role and name.
    pub(crate) fn find(&self, docs: &HashSet<String>, role: &str, name: &str) -> Vec<Ref> {
        let mut found: Vec<Ref> = self
            .refs
            .iter()
            .filter(|(_, r)| {
                docs.contains(&r.doc) && r.fingerprint.role == role && r.fingerprint.name == name
            })
            .map(|(reference, _)| reference.clone())
            .collect();
        found.sort_by_key(|r| r.number().unwrap_or(u64::MAX));
        found
    }

    /// Records the refs a walk of `frame`'s document (the main frame's
    /// with `None`) handed out.
    pub(crate) fn absorb(&mut self, walk: &Walk, frame: Option<&str>) {
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
    pub(crate) fn prune(&mut self, live_docs: &HashSet<String>) {
        let gone: Vec<Ref> = self
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

    /// Renders a walk of the whole page as the tab's next generation: the
    /// snapshot for the model, and what a later diff compares against.
    pub(crate) fn render(&mut self, walk: PageWalk, limits: RenderLimits) -> (Snapshot, Seen) {
        let rendered = render::render(
            &walk.tree,
            limits,
            walk.omitted,
            origin_of(&walk.url).as_deref(),
        );
        self.generation += 1;
        let snapshot = Snapshot {
            generation: self.generation,
            url: walk.url,
            title: walk.title,
            text: rendered.text(),
            omitted: rendered.omitted,
            truncated: rendered.truncated,
        };
        let seen = Seen {
            generation: self.generation,
            doc: walk.main_doc,
            rendered,
        };
        (snapshot, seen)
    }

    /// Makes `seen` the base for the next diff.
    pub(crate) fn set_base(&mut self, seen: Seen) {
        self.last = Some(seen);
    }

    /// The observation after an action on `acted_on` (`None`: the page
    /// itself): a diff of `seen` against the base, or `snapshot` marked as
    /// a reset. `seen` becomes the base for the next diff.
    pub(crate) fn observe(
        &mut self,
        seen: Seen,
        snapshot: Snapshot,
        acted_on: Option<&Ref>,
    ) -> Observation {
        let observation = compare(self.last.as_ref(), &seen, snapshot, acted_on);
        self.last = Some(seen);
        observation
    }
}

/// The origin of a URL (`scheme://host:port`), for compact same-origin links.
fn origin_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    match parsed.origin() {
        origin @ url::Origin::Tuple(..) => Some(origin.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// What changed from `previous` to `seen` (whose snapshot is `snapshot`).
fn compare(
    previous: Option<&Seen>,
    seen: &Seen,
    snapshot: Snapshot,
    acted_on: Option<&Ref>,
) -> Observation {
    let reason = match previous {
        None => ResetReason::FirstSnapshot,
        Some(previous) if previous.doc != seen.doc => ResetReason::Navigated,
        Some(previous) => {
            let changes = match acted_on {
                Some(acted_on) => {
                    diff::diff_after_action(&previous.rendered, &seen.rendered, acted_on)
                }
                None => diff::diff(&previous.rendered, &seen.rendered),
            };
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

#[cfg(test)]
mod tests {
    use super::tree::{Node, Walk};
    use super::*;

    fn button(name: &str, reference: &str) -> Node {
        Node {
            role: "button".into(),
            name: Some(name.into()),
            reference: Some(reference.parse().unwrap()),
            ..Node::default()
        }
    }

    fn walk(doc: &str, tree: Vec<Node>) -> Walk {
        let fingerprints = tree
            .iter()
            .filter_map(|node| {
                let fingerprint = Fingerprint {
                    role: node.role.clone(),
                    name: node.name.clone().unwrap_or_default(),
                    tag: "button".into(),
                    kind: String::new(),
                    href: String::new(),
                };
                Some((node.reference.clone()?, fingerprint))
            })
            .collect();
        Walk {
            doc: doc.into(),
            url: "https://example.test/".into(),
            title: "Example".into(),
            next_ref: 10,
            tree,
            visited: 0,
            omitted: 0,
            fingerprints,
            pending_hosts: 0,
            pending_lists: 0,
            took_ms: 0.0,
        }
    }

    /// Record, render and compare without a page: what `page::observe`
    /// does around its walks.
    #[test]
    fn looks_become_generations_and_diffs_against_the_base() {
        let mut state = TabState::default();
        let first = walk("d1", vec![button("Save", "e1"), button("Undo", "e2")]);
        state.absorb(&first, None);
        let (snapshot, seen) = state.render(PageWalk::of_main(first), RenderLimits::default());
        assert_eq!(snapshot.generation, 1);
        assert!(
            snapshot.text.contains("button \"Save\" [ref=e1]"),
            "{}",
            snapshot.text
        );
        let observation = state.observe(seen, snapshot, None);
        assert!(matches!(
            observation,
            Observation::Reset {
                reason: ResetReason::FirstSnapshot,
                ..
            }
        ));

        let e1: Ref = "e1".parse().unwrap();
        let after = walk("d1", vec![button("Saved", "e1"), button("Undo", "e2")]);
        let (snapshot, seen) = state.render(PageWalk::of_main(after), RenderLimits::default());
        match state.observe(seen, snapshot, Some(&e1)) {
            Observation::Diff {
                base,
                generation,
                text,
                ..
            } => {
                assert_eq!((base, generation), (1, 2));
                assert_eq!(text, "~ - button \"Saved\" [ref=e1]\n");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(state.next_ref(), 10);
        assert!(state.record(&e1).is_some());

        // Another document: its refs retire, and the next look is a reset.
        state.prune(&HashSet::from(["d2".to_owned()]));
        assert!(state.record(&e1).is_none());
        assert_eq!(state.retired(&e1).unwrap().doc, "d1");
        let elsewhere = walk("d2", vec![button("Next", "e10")]);
        let (snapshot, seen) = state.render(PageWalk::of_main(elsewhere), RenderLimits::default());
        assert!(matches!(
            state.observe(seen, snapshot, None),
            Observation::Reset {
                reason: ResetReason::Navigated,
                ..
            }
        ));
        assert_eq!(
            state.find(&HashSet::from(["d1".to_owned()]), "button", "Undo"),
            Vec::<Ref>::new()
        );
    }
}
