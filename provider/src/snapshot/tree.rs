//! The page-side walker's output, as typed data.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use super::reference::Ref;

/// One node of the walker's tree: an element with a role, or a run of text.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Node {
    /// ARIA role (`button`, `heading`, …) or `text` for a run of text.
    pub role: String,
    /// Accessible name.
    pub name: Option<String>,
    /// Element reference, for actionable nodes.
    #[serde(rename = "ref")]
    pub reference: Option<Ref>,
    /// Heading level.
    pub level: Option<u8>,
    /// `true`, `false` or `"mixed"`.
    pub checked: Option<serde_json::Value>,
    /// Selected (options, tabs).
    pub selected: Option<bool>,
    /// Expanded or collapsed.
    pub expanded: Option<bool>,
    /// Toggle buttons.
    pub pressed: Option<bool>,
    /// Disabled controls.
    pub disabled: Option<bool>,
    /// Required fields.
    pub required: Option<bool>,
    /// The element with keyboard focus.
    pub focused: Option<bool>,
    /// Read-only fields.
    pub readonly: Option<bool>,
    /// Fields the page marks invalid (`aria-invalid`).
    pub invalid: Option<bool>,
    /// Column or row sort order (`aria-sort`: ascending, descending, other).
    pub sort: Option<String>,
    /// `aria-current`: `true` or its token (`page`, `step`, `date`, …).
    pub current: Option<serde_json::Value>,
    /// Lists and grids that take several selected items.
    pub multiselectable: Option<bool>,
    /// Modal dialogs (the rest of the page is inert while they show).
    pub modal: Option<bool>,
    /// The active descendant of a composite widget (the option a combobox
    /// or listbox has highlighted).
    pub active: Option<bool>,
    /// Lower bound of a range (sliders, spin buttons, progress bars).
    pub min: Option<String>,
    /// Upper bound of a range.
    pub max: Option<String>,
    /// The part of a larger collection the DOM holds (virtualized grids and lists).
    pub window: Option<Window>,
    /// Current value (masked for sensitive fields).
    pub value: Option<String>,
    /// Link target (absolute).
    pub url: Option<String>,
    /// Text of text-bearing nodes (paragraphs, cells) and text runs.
    pub text: Option<String>,
    /// Child nodes in document order.
    pub children: Vec<Node>,
    /// Further children the walker counted but did not walk (long lists and tables).
    pub more: Option<u64>,
    /// For an iframe whose document lives in another process: its slot,
    /// where that frame's own tree is attached.
    pub frame: Option<String>,
}

/// Which items of a collection are in the DOM, out of how many exist
/// (`aria-rowcount`/`aria-rowindex`, `aria-setsize`/`aria-posinset`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Window {
    /// `rows` or `items`.
    pub unit: String,
    /// The first index present (1-based).
    pub from: u64,
    /// The last index present.
    pub to: u64,
    /// How many distinct indexes are present (fewer than `to - from + 1`
    /// while rows move, as when a grid animates a sort).
    #[serde(default)]
    pub count: u64,
    /// How many exist; `None` when the page says it does not know (`-1`).
    pub of: Option<u64>,
}

impl Node {
    /// Number of nodes in this subtree, itself included.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }
}

/// What identifies an element semantically; a ref is only honoured while
/// its element still matches the fingerprint it was seen with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Fingerprint {
    /// Role.
    pub role: String,
    /// Accessible name (first 100 characters).
    pub name: String,
    /// Tag name, lower case.
    pub tag: String,
    /// The `type` attribute.
    #[serde(rename = "type")]
    pub kind: String,
    /// Absolute link target, for links.
    pub href: String,
}

/// One walk of a document.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Walk {
    /// Identity of the document the walk saw (changes when it is replaced).
    pub doc: String,
    /// The document's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// The next ref number to hand out.
    pub next_ref: u64,
    /// The visible tree.
    pub tree: Vec<Node>,
    /// Elements the walker looked at.
    pub visited: u64,
    /// Elements left out by the walker's node or depth limits.
    pub omitted: u64,
    /// Fingerprints of every ref in the tree.
    pub fingerprints: HashMap<Ref, Fingerprint>,
    /// Custom elements seen for the first time that may hide closed shadow roots.
    #[serde(default)]
    pub pending_hosts: u32,
    /// Lists of plain items seen for the first time, whose listeners the
    /// provider checks (a list the page listens for presses on is one whose
    /// items a person drags).
    #[serde(default)]
    pub pending_lists: u32,
    /// How long the walk took inside the page (milliseconds), for diagnostics.
    #[serde(default)]
    pub took_ms: f64,
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

impl PageWalk {
    /// The page as its main frame's walk shows it, before any
    /// out-of-process frame is attached.
    pub(crate) fn of_main(main: Walk) -> Self {
        let mut tree = main.tree;
        tag_frame_slots(&mut tree, "");
        Self {
            tree,
            main_doc: main.doc.clone(),
            docs: HashSet::from([main.doc]),
            url: main.url,
            title: main.title,
            omitted: main.omitted,
        }
    }

    /// Attaches the walk of out-of-process `frame` under the iframe whose
    /// slot is `key` (`parent:slot`); false, and nothing attached, if no
    /// iframe has that slot.
    pub(crate) fn attach_frame(&mut self, frame: &str, key: &str, child: Walk) -> bool {
        let mut subtree = child.tree;
        tag_frame_slots(&mut subtree, frame);
        if attach(&mut self.tree, key, &mut Some(subtree)) {
            self.docs.insert(child.doc);
            self.omitted += child.omitted;
            true
        } else {
            false
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(doc: &str, tree: Vec<Node>) -> Walk {
        Walk {
            doc: doc.into(),
            url: format!("https://{doc}.test/"),
            title: doc.into(),
            next_ref: 1,
            tree,
            visited: 0,
            omitted: 1,
            fingerprints: HashMap::new(),
            pending_hosts: 0,
            pending_lists: 0,
            took_ms: 0.0,
        }
    }

    fn iframe(slot: &str) -> Node {
        Node {
            role: "iframe".into(),
            frame: Some(slot.into()),
            ..Node::default()
        }
    }

    #[test]
    fn frames_attach_under_their_iframes_slot() {
        let mut page = PageWalk::of_main(walk("main", vec![iframe("1"), iframe("2")]));
        let child = walk("child", vec![iframe("1")]);
        assert!(page.attach_frame("F", ":2", child));
        assert_eq!(page.tree[1].children[0].frame.as_deref(), Some("F:1"));
        let grandchild = walk("grandchild", vec![]);
        assert!(page.attach_frame("G", "F:1", grandchild));
        assert!(!page.attach_frame("H", ":9", walk("lost", vec![])));
        assert_eq!(page.docs.len(), 3);
        assert_eq!(page.omitted, 3);
        assert_eq!(page.main_doc, "main");
    }
}
