//! Differences between two rendered snapshots of the same document.
//!
//! Lines are matched by key (the ref, or an ancestor path plus text for
//! lines without one). The diff lists added and changed lines in document
//! order with the ancestor lines needed to read them, then the removed
//! lines. Every line keeps its ref.
//!
//! Pages that re-render (templates via `innerHTML`, frameworks without
//! keys) replace elements with identical look-alikes that get new refs.
//! A line that vanished and one that appeared with the same text in the
//! same place (everything but the ref equal, ancestors included) are one
//! *re-rendered* element: the diff leaves both out and reports the new ref
//! that replaces the old one. The old ref stays stale; nothing redirects it.

use std::collections::{HashMap, HashSet, VecDeque};

use super::reference::Ref;
use super::render::{Line, Rendered, push_indented};

/// A computed difference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// The diff as text: `+` added, `~` changed, `-` removed, two spaces for context.
    pub text: String,
    /// Lines added.
    pub added: usize,
    /// Lines whose text changed (same ref or key).
    pub changed: usize,
    /// Lines removed.
    pub removed: usize,
    /// Elements replaced by identical look-alikes, in document order.
    pub rerendered: Rerendered,
}

impl Diff {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added == 0 && self.changed == 0 && self.removed == 0 && self.rerendered.is_empty()
    }

    /// What the diff costs a reader: its lines and the re-rendering summary.
    pub fn bytes(&self) -> usize {
        self.text.len() + self.rerendered.bytes()
    }
}

/// Elements a page replaced with identical look-alikes: same role, name,
/// state and place, new ref.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rerendered {
    /// `(old ref, new ref)` pairs in the new document's order.
    pub replaced: Vec<(Ref, Ref)>,
}

impl Rerendered {
    /// True when no element was replaced.
    pub fn is_empty(&self) -> bool {
        self.replaced.is_empty()
    }

    /// The length of [`Rerendered::describe`]; nothing when no element was replaced.
    pub fn bytes(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            self.describe().len()
        }
    }

    /// One line for a model: how many elements were re-rendered unchanged
    /// and which new refs replace which old ones, consecutive refs as ranges
    /// ("re-rendered 6 elements unchanged: e3–e8 are now e9–e14 (…)").
    pub fn describe(&self) -> String {
        let count = self.replaced.len();
        let noun = if count == 1 { "element" } else { "elements" };
        let runs: Vec<String> = runs(&self.replaced)
            .into_iter()
            .map(|run| run.describe())
            .collect();
        format!(
            "re-rendered {count} {noun} unchanged: {} (old refs are stale)",
            runs.join(", ")
        )
    }
}

/// A run of replacements whose old and new refs both count up by one.
struct Run<'a> {
    first: &'a (Ref, Ref),
    last: &'a (Ref, Ref),
}

impl Run<'_> {
    fn describe(&self) -> String {
        if std::ptr::eq(self.first, self.last) {
            format!("{} is now {}", self.first.0, self.first.1)
        } else {
            format!(
                "{}–{} are now {}–{}",
                self.first.0, self.last.0, self.first.1, self.last.1
            )
        }
    }
}

/// Splits `pairs` into runs of consecutive refs.
fn runs(pairs: &[(Ref, Ref)]) -> Vec<Run<'_>> {
    let mut runs: Vec<Run<'_>> = Vec::new();
    for pair in pairs {
        if let Some(run) = runs.last_mut()
            && follows(&run.last.0, &pair.0)
            && follows(&run.last.1, &pair.1)
        {
            run.last = pair;
            continue;
        }
        runs.push(Run {
            first: pair,
            last: pair,
        });
    }
    runs
}

/// Whether ref `next` is the one numbered right after `previous` (`e4` after `e3`).
fn follows(previous: &Ref, next: &Ref) -> bool {
    match (previous.number(), next.number()) {
        (Some(a), Some(b)) => a.checked_add(1) == Some(b),
        _ => false,
    }
}

/// Computes what changed from `before` to `after`.
pub fn diff(before: &Rendered, after: &Rendered) -> Diff {
    compute(before, after, None)
}

/// Computes what an action on `acted_on` changed. The element gaining focus
/// because it was clicked or typed into is the action's echo, not news, and
/// is left out.
pub fn diff_after_action(before: &Rendered, after: &Rendered, acted_on: &Ref) -> Diff {
    compute(before, after, Some(acted_on))
}

fn compute(before: &Rendered, after: &Rendered, acted_on: Option<&Ref>) -> Diff {
    let old: HashMap<&str, &Line> = before.lines.iter().map(|l| (l.key.as_str(), l)).collect();
    let new_keys: HashSet<&str> = after.lines.iter().map(|l| l.key.as_str()).collect();
    let mut result = Diff::default();
    let mut text = String::new();

    let gone: Vec<usize> = (0..before.lines.len())
        .filter(|&i| !new_keys.contains(before.lines[i].key.as_str()))
        .collect();
    // Shapes matter only when lines vanished: most actions change a few
    // lines in place, and then they are not worked out at all.
    let (old_shapes, new_shapes) = if gone.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        (shapes(before), shapes(after))
    };
    let mut vanished = Vanished::default();
    for index in gone {
        vanished.add(index, &before.lines[index], &old_shapes[index]);
    }

    // Ancestors (by index into `after.lines`) already printed as context.
    let mut printed: HashSet<usize> = HashSet::new();
    let mut ancestors: Vec<usize> = Vec::new();
    for (index, line) in after.lines.iter().enumerate() {
        while ancestors
            .last()
            .is_some_and(|&a| after.lines[a].depth >= line.depth)
        {
            ancestors.pop();
        }
        let shape = new_shapes.get(index);
        let marker = match old.get(line.key.as_str()) {
            Some(previous) if previous.text == line.text => None,
            Some(previous)
                if acted_on.is_some()
                    && line.reference.as_ref() == acted_on
                    && line.text.replacen(" [focused]", "", 1) == previous.text =>
            {
                None
            }
            Some(_) => Some('~'),
            None => {
                if let Some(look_alike) = shape.and_then(|s| vanished.take_look_alike(s)) {
                    let previous = &before.lines[look_alike];
                    if let (Some(old_ref), Some(new_ref)) = (&previous.reference, &line.reference) {
                        result
                            .rerendered
                            .replaced
                            .push((old_ref.clone(), new_ref.clone()));
                    }
                    None
                } else if line.reference.is_none()
                    && shape.and_then(|s| vanished.take_in_place(s)).is_some()
                {
                    Some('~')
                } else {
                    Some('+')
                }
            }
        };
        if let Some(marker) = marker {
            for &ancestor in &ancestors {
                if printed.insert(ancestor) {
                    let context = &after.lines[ancestor];
                    push_marked(&mut text, ' ', context.depth, &context.text);
                }
            }
            push_marked(&mut text, marker, line.depth, &line.text);
            printed.insert(index);
            if marker == '+' {
                result.added += 1;
            } else {
                result.changed += 1;
            }
        }
        ancestors.push(index);
    }
    for index in vanished.left() {
        let line = &before.lines[index];
        push_marked(&mut text, '-', line.depth, &line.text);
        result.removed += 1;
    }
    result.text = text;
    result
}

/// Where a line sits and what it looks like, independent of refs.
struct Shape {
    /// Its text and its ancestors' texts with refs blanked, and whether it
    /// has a ref: two lines with the same look differ at most in refs.
    look: String,
    /// Its parent's look, its position among its siblings and its role:
    /// a line without a ref whose text changed keeps its place.
    place: String,
}

/// The shape of every line of `rendered`.
fn shapes(rendered: &Rendered) -> Vec<Shape> {
    let mut shapes: Vec<Shape> = Vec::with_capacity(rendered.lines.len());
    // Open ancestors: (line index, children seen so far).
    let mut ancestors: Vec<(usize, usize)> = Vec::new();
    let mut top_level = 0;
    for (index, line) in rendered.lines.iter().enumerate() {
        while ancestors
            .last()
            .is_some_and(|&(a, _)| rendered.lines[a].depth >= line.depth)
        {
            ancestors.pop();
        }
        let (parent, position) = match ancestors.last_mut() {
            Some((a, children)) => {
                *children += 1;
                (shapes[*a].look.as_str(), *children)
            }
            None => {
                top_level += 1;
                ("", top_level)
            }
        };
        let own = match &line.reference {
            Some(reference) => line
                .text
                .replacen(&format!(" [ref={reference}]"), " [ref]", 1),
            None => line.text.clone(),
        };
        let role = line.text.split([' ', ':']).nth(1).unwrap_or("");
        shapes.push(Shape {
            place: format!("{parent}\n{position} {role}"),
            look: format!("{parent}\n{}{own}", line.depth),
        });
        ancestors.push((index, 0));
    }
    shapes
}

/// Lines of the old snapshot whose keys are gone, waiting to be matched
/// with lines that appeared: first by look, then (lines without refs) by place.
#[derive(Default)]
struct Vanished<'a> {
    by_look: HashMap<&'a str, VecDeque<usize>>,
    by_place: HashMap<&'a str, VecDeque<usize>>,
    order: Vec<usize>,
    taken: HashSet<usize>,
}

impl<'a> Vanished<'a> {
    fn add(&mut self, index: usize, line: &Line, shape: &'a Shape) {
        self.by_look
            .entry(&shape.look)
            .or_default()
            .push_back(index);
        if line.reference.is_none() {
            self.by_place
                .entry(&shape.place)
                .or_default()
                .push_back(index);
        }
        self.order.push(index);
    }

    fn take_look_alike(&mut self, shape: &Shape) -> Option<usize> {
        Self::take(self.by_look.get_mut(shape.look.as_str()), &mut self.taken)
    }

    fn take_in_place(&mut self, shape: &Shape) -> Option<usize> {
        Self::take(self.by_place.get_mut(shape.place.as_str()), &mut self.taken)
    }

    fn take(queue: Option<&mut VecDeque<usize>>, taken: &mut HashSet<usize>) -> Option<usize> {
        let queue = queue?;
        while let Some(index) = queue.pop_front() {
            if taken.insert(index) {
                return Some(index);
            }
        }
        None
    }

    /// The vanished lines nothing took, in the old document's order.
    fn left(&self) -> impl Iterator<Item = usize> + '_ {
        self.order
            .iter()
            .copied()
            .filter(|i| !self.taken.contains(i))
    }
}

fn push_marked(out: &mut String, marker: char, depth: usize, text: &str) {
    out.push(marker);
    out.push(' ');
    push_indented(out, depth, text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::render::{RenderLimits, render};
    use crate::snapshot::tree::Node;

    fn list(items: &[(&str, &str)]) -> Vec<Node> {
        vec![Node {
            role: "list".into(),
            name: Some("Todo".into()),
            children: items
                .iter()
                .map(|(name, reference)| Node {
                    role: "listitem".into(),
                    children: vec![Node {
                        role: "button".into(),
                        name: Some((*name).into()),
                        reference: Some(reference.parse().unwrap()),
                        ..Node::default()
                    }],
                    ..Node::default()
                })
                .collect(),
            ..Node::default()
        }]
    }

    #[test]
    fn added_changed_and_removed_keep_refs_and_context() {
        let before = render(
            &list(&[("Milk", "e1"), ("Eggs", "e2"), ("Tea", "e3")]),
            RenderLimits::default(),
            0,
            None,
        );
        let after = render(
            &list(&[("Milk", "e1"), ("Eggs (2)", "e2"), ("Bread", "e4")]),
            RenderLimits::default(),
            0,
            None,
        );
        let diff = diff(&before, &after);
        assert_eq!(
            (diff.added, diff.changed, diff.removed),
            (1, 1, 1),
            "{}",
            diff.text
        );
        assert!(
            diff.text.contains("  - list \"Todo\"\n"),
            "context: {}",
            diff.text
        );
        assert!(
            diff.text.contains("~     - button \"Eggs (2)\" [ref=e2]\n"),
            "{}",
            diff.text
        );
        assert!(
            diff.text.contains("+     - button \"Bread\" [ref=e4]\n"),
            "{}",
            diff.text
        );
        assert!(
            diff.text.contains("-     - button \"Tea\" [ref=e3]\n"),
            "{}",
            diff.text
        );
        assert!(
            !diff.text.contains("Milk"),
            "unchanged lines stay out: {}",
            diff.text
        );
    }

    /// A todo list as a template re-renders it: every item is a new
    /// element with a new ref; `refs` numbers them from `first`.
    fn todo(items: &[&str], first: usize) -> Rendered {
        let refs: Vec<String> = (0..items.len())
            .map(|i| format!("e{}", first + i))
            .collect();
        let pairs: Vec<(&str, &str)> = items
            .iter()
            .zip(&refs)
            .map(|(item, reference)| (*item, reference.as_str()))
            .collect();
        render(&list(&pairs), RenderLimits::default(), 0, None)
    }

    #[test]
    fn look_alikes_of_a_re_render_are_summarised_and_only_the_new_item_is_shown() {
        let before = todo(&["Milk", "Eggs", "Tea"], 3);
        let after = todo(&["Milk", "Eggs", "Tea", "Bread"], 9);
        let diff = diff(&before, &after);
        assert_eq!(
            (diff.added, diff.changed, diff.removed),
            (2, 0, 0),
            "the new list item and its button: {}",
            diff.text
        );
        assert!(
            diff.text.contains("+     - button \"Bread\" [ref=e12]\n"),
            "{}",
            diff.text
        );
        assert!(!diff.text.contains("Milk"), "{}", diff.text);
        assert_eq!(
            diff.rerendered.describe(),
            "re-rendered 3 elements unchanged: e3–e5 are now e9–e11 (old refs are stale)"
        );
    }

    #[test]
    fn a_look_alike_must_match_text_and_place_and_runs_break_on_gaps() {
        let before = todo(&["Milk", "Eggs", "Tea"], 1);
        // Eggs changed (not a look-alike); Milk and Tea are look-alikes with
        // refs that are not consecutive.
        let after = todo(&["Milk", "Eggs (2)", "Tea"], 7);
        let diff = diff(&before, &after);
        assert_eq!((diff.added, diff.removed), (1, 1), "{}", diff.text);
        assert!(diff.text.contains("+     - button \"Eggs (2)\" [ref=e8]"));
        assert!(diff.text.contains("-     - button \"Eggs\" [ref=e2]"));
        assert_eq!(
            diff.rerendered.describe(),
            "re-rendered 2 elements unchanged: e1 is now e7, e3 is now e9 (old refs are stale)"
        );
        // The same text in another list is not a look-alike.
        let mut moved = list(&[("Milk", "e20")]);
        moved[0].name = Some("Done".into());
        let elsewhere = render(&moved, RenderLimits::default(), 0, None);
        let diff = super::diff(&before, &elsewhere);
        assert!(diff.rerendered.is_empty(), "{:?}", diff.rerendered);
        assert_eq!(
            (diff.changed, diff.added, diff.removed),
            (1, 2, 6),
            "the list renamed in place, its items new: {}",
            diff.text
        );
    }

    #[test]
    fn the_acted_on_element_gaining_focus_is_not_news() {
        let before = todo(&["Milk", "Eggs"], 1);
        let mut focused = list(&[("Milk", "e1"), ("Eggs", "e2")]);
        focused[0].children[0].children[0].focused = Some(true);
        let after = render(&focused, RenderLimits::default(), 0, None);
        assert!(diff_after_action(&before, &after, &"e1".parse().unwrap()).is_empty());
        let elsewhere = diff_after_action(&before, &after, &"e2".parse().unwrap());
        assert_eq!(elsewhere.changed, 1, "{}", elsewhere.text);
        assert!(
            elsewhere.text.contains("[focused] [ref=e1]"),
            "{}",
            elsewhere.text
        );
    }

    #[test]
    fn identical_snapshots_have_an_empty_diff() {
        let snapshot = render(&list(&[("Milk", "e1")]), RenderLimits::default(), 0, None);
        assert!(diff(&snapshot, &snapshot).is_empty());
    }
}
