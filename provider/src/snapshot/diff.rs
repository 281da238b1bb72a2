//! Differences between two rendered snapshots of the same document.
//!
//! Lines are matched by key (the ref, or an ancestor path plus text for
//! lines without one). The diff lists added and changed lines in document
//! order with the ancestor lines needed to read them, then the removed
//! lines. Every line keeps its ref.

use std::collections::{HashMap, HashSet};

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
}

impl Diff {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added == 0 && self.changed == 0 && self.removed == 0
    }
}

/// Computes what changed from `before` to `after`.
pub fn diff(before: &Rendered, after: &Rendered) -> Diff {
    let old: HashMap<&str, &Line> = before.lines.iter().map(|l| (l.key.as_str(), l)).collect();
    let new_keys: HashSet<&str> = after.lines.iter().map(|l| l.key.as_str()).collect();
    let mut result = Diff::default();
    let mut text = String::new();

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
        let marker = match old.get(line.key.as_str()) {
            None => Some('+'),
            Some(previous) if previous.text != line.text => Some('~'),
            Some(_) => None,
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
    for line in &before.lines {
        if !new_keys.contains(line.key.as_str()) {
            push_marked(&mut text, '-', line.depth, &line.text);
            result.removed += 1;
        }
    }
    result.text = text;
    result
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
                        reference: Some((*reference).into()),
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

    #[test]
    fn identical_snapshots_have_an_empty_diff() {
        let snapshot = render(&list(&[("Milk", "e1")]), RenderLimits::default(), 0, None);
        assert!(diff(&snapshot, &snapshot).is_empty());
    }
}
