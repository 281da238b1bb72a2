//! Rendering a tree as compact text for a model, within limits.
//!
//! One line per node, indented by depth, in the form models know from other
//! browser tools: role, quoted name, attributes, then `: value`.
//! `- textbox "Email" [required] [ref=e7]: ada@example.test`.
//! Long lists and tables show their first children and count the rest; the
//! byte budget cuts the tail and counts what it cut. Nothing is dropped
//! without a count.

use super::reference::Ref;
use super::tree::Node;

/// Limits on what a snapshot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Budget for the whole text, in bytes.
    pub max_bytes: usize,
    /// Children shown per list, table or row group before the rest is counted.
    pub max_children: usize,
}

impl Default for RenderLimits {
    fn default() -> Self {
        Self {
            max_bytes: 48 * 1024,
            max_children: 50,
        }
    }
}

/// One rendered line, kept structured so diffs can work on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Nesting depth.
    pub depth: usize,
    /// The line without indentation.
    pub text: String,
    /// The node's ref, if it has one.
    pub reference: Option<Ref>,
    /// A stable identity across snapshots: the ref, or the path of the
    /// nearest ancestors plus the text for nodes without a ref.
    pub key: String,
}

/// A rendered tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The lines, in document order.
    pub lines: Vec<Line>,
    /// Nodes not shown (by child caps, the byte budget, or the walker's limits).
    pub omitted: u64,
    /// Whether anything was left out.
    pub truncated: bool,
}

impl Rendered {
    /// The lines as text, one per line, indented two spaces per level.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            push_indented(&mut out, line.depth, &line.text);
        }
        out
    }
}

/// Appends `text` at `depth` with a newline.
pub fn push_indented(out: &mut String, depth: usize, text: &str) {
    for _ in 0..depth {
        out.push_str("  ");
    }
    out.push_str(text);
    out.push('\n');
}

/// Containers whose children are capped and counted.
fn is_collection(role: &str) -> bool {
    matches!(
        role,
        "list"
            | "table"
            | "rowgroup"
            | "listbox"
            | "menu"
            | "menubar"
            | "tree"
            | "grid"
            | "treegrid"
            | "tablist"
    )
}

fn unit_for(role: &str) -> &'static str {
    match role {
        "table" | "rowgroup" | "grid" | "treegrid" => "rows",
        _ => "items",
    }
}

/// Renders `tree` within `limits`. `walker_omitted` is what the page-side
/// walker already left out; `origin` turns same-origin link targets into paths.
pub fn render(
    tree: &[Node],
    limits: RenderLimits,
    walker_omitted: u64,
    origin: Option<&str>,
) -> Rendered {
    let mut state = State {
        limits,
        origin,
        bytes: 0,
        out: Rendered::default(),
        full: false,
    };
    let mut keys = KeyCounter::default();
    for node in tree {
        state.node(node, 0, "", &mut keys);
    }
    state.out.omitted += walker_omitted;
    if state.out.omitted > 0 {
        state.out.truncated = true;
    }
    state.out
}

struct State<'a> {
    limits: RenderLimits,
    origin: Option<&'a str>,
    bytes: usize,
    out: Rendered,
    /// Set once the byte budget is spent; later nodes are only counted.
    full: bool,
}

/// Makes keys unique among siblings that render the same.
#[derive(Default)]
struct KeyCounter(std::collections::HashMap<String, usize>);

impl KeyCounter {
    fn unique(&mut self, key: String) -> String {
        let seen = self.0.entry(key.clone()).or_insert(0);
        *seen += 1;
        if *seen == 1 {
            key
        } else {
            format!("{key}#{seen}")
        }
    }
}

impl State<'_> {
    fn node(&mut self, node: &Node, depth: usize, parent_key: &str, keys: &mut KeyCounter) {
        if self.full {
            self.out.omitted += node.count() as u64;
            return;
        }
        let text = line_text(node, self.origin);
        let cost = depth * 2 + text.len() + 1;
        if self.bytes + cost > self.limits.max_bytes {
            self.full = true;
            self.out.omitted += node.count() as u64;
            return;
        }
        self.bytes += cost;
        let key = match &node.reference {
            Some(reference) => reference.to_string(),
            None => keys.unique(format!("{parent_key}/{text}")),
        };
        self.out.lines.push(Line {
            depth,
            text,
            reference: node.reference.clone(),
            key: key.clone(),
        });
        let cap = if is_collection(&node.role) {
            self.limits.max_children
        } else {
            usize::MAX
        };
        let mut child_keys = KeyCounter::default();
        for child in node.children.iter().take(cap) {
            self.node(child, depth + 1, &key, &mut child_keys);
        }
        let hidden: Vec<&Node> = node.children.iter().skip(cap).collect();
        let walker_skipped = node.more.unwrap_or(0);
        if !hidden.is_empty() || walker_skipped > 0 {
            let count: usize = hidden.iter().map(|n| n.count()).sum();
            self.out.omitted += count as u64;
            if !self.full {
                let more = hidden.len() as u64 + walker_skipped;
                let note = format!("… {more} more {} omitted", unit_for(&node.role));
                self.bytes += (depth + 1) * 2 + note.len() + 1;
                self.out.lines.push(Line {
                    depth: depth + 1,
                    key: format!("{key}/…"),
                    text: note,
                    reference: None,
                });
            }
        }
    }
}

/// One node's line: `- role "name" [attrs] [ref=eN]: value`.
pub fn line_text(node: &Node, origin: Option<&str>) -> String {
    let mut line = String::with_capacity(64);
    line.push_str("- ");
    line.push_str(&node.role);
    if let Some(name) = node.name.as_deref().filter(|n| !n.is_empty()) {
        line.push_str(" \"");
        line.push_str(&name.replace('"', "\\\""));
        line.push('"');
    }
    if let Some(level) = node.level {
        line.push_str(&format!(" [level={level}]"));
    }
    match &node.checked {
        Some(serde_json::Value::Bool(true)) => line.push_str(" [checked]"),
        Some(serde_json::Value::String(s)) if s == "mixed" => line.push_str(" [checked=mixed]"),
        _ => {}
    }
    for (flag, label) in [
        (node.selected, "selected"),
        (node.active, "active"),
        (node.pressed, "pressed"),
        (node.disabled, "disabled"),
        (node.required, "required"),
        (node.readonly, "readonly"),
        (node.invalid, "invalid"),
        (node.modal, "modal"),
        (node.multiselectable, "multiselectable"),
        (node.focused, "focused"),
    ] {
        if flag == Some(true) {
            line.push_str(" [");
            line.push_str(label);
            line.push(']');
        }
    }
    match node.expanded {
        Some(true) => line.push_str(" [expanded]"),
        Some(false) => line.push_str(" [collapsed]"),
        None => {}
    }
    for (label, value) in [
        ("sort", node.sort.as_deref()),
        ("min", node.min.as_deref()),
        ("max", node.max.as_deref()),
    ] {
        if let Some(value) = value {
            line.push_str(&format!(" [{label}={value}]"));
        }
    }
    match &node.current {
        Some(serde_json::Value::Bool(true)) => line.push_str(" [current]"),
        Some(serde_json::Value::String(token)) => line.push_str(&format!(" [current={token}]")),
        _ => {}
    }
    if let Some(window) = &node.window {
        let total = window
            .of
            .map_or_else(|| "an unknown number".to_owned(), |of| of.to_string());
        let contiguous = window.count == 0 || window.to + 1 - window.from == window.count;
        if contiguous {
            line.push_str(&format!(
                " [{} {}–{} of {total}]",
                window.unit, window.from, window.to
            ));
        } else {
            line.push_str(&format!(
                " [{} {} shown between {} and {} of {total}]",
                window.count, window.unit, window.from, window.to
            ));
        }
    }
    if let Some(url) = &node.url {
        line.push_str(" [url=");
        line.push_str(&compact_url(url, origin));
        line.push(']');
    }
    if let Some(reference) = &node.reference {
        line.push_str(" [ref=");
        line.push_str(reference.as_str());
        line.push(']');
    }
    if let Some(value) = node.value.as_deref().or(node.text.as_deref()) {
        line.push_str(": ");
        // One node, one line: a multi-line value (a text area, an editor)
        // shows its line breaks as `\n`.
        if value.contains(['\n', '\r']) {
            line.push_str(&value.replace("\r\n", "\n").replace(['\n', '\r'], "\\n"));
        } else {
            line.push_str(value);
        }
    }
    line
}

/// Same-origin URLs as paths; others as they are.
fn compact_url(url: &str, origin: Option<&str>) -> String {
    match origin {
        Some(origin) if url.starts_with(origin) && url[origin.len()..].starts_with('/') => {
            url[origin.len()..].to_owned()
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: &str, name: Option<&str>, reference: Option<&str>) -> Node {
        Node {
            role: role.into(),
            name: name.map(Into::into),
            reference: reference.map(|r| r.parse().unwrap()),
            ..Node::default()
        }
    }

    #[test]
    fn lines_read_role_name_attributes_ref_value() {
        let mut email = node("textbox", Some("Email"), Some("e7"));
        email.required = Some(true);
        email.value = Some("ada@example.test".into());
        assert_eq!(
            line_text(&email, None),
            "- textbox \"Email\" [required] [ref=e7]: ada@example.test"
        );
        let mut link = node("link", Some("Home \"page\""), Some("e1"));
        link.url = Some("http://127.0.0.1:8080/index.html".into());
        assert_eq!(
            line_text(&link, Some("http://127.0.0.1:8080")),
            "- link \"Home \\\"page\\\"\" [url=/index.html] [ref=e1]"
        );
        let mut heading = node("heading", Some("Owls"), None);
        heading.level = Some(2);
        assert_eq!(line_text(&heading, None), "- heading \"Owls\" [level=2]");
    }

    #[test]
    fn widget_states_and_windows_read_as_attributes() {
        let mut grid = node("grid", Some("Inventory"), None);
        grid.window = Some(crate::snapshot::tree::Window {
            unit: "rows".into(),
            from: 2,
            to: 21,
            count: 20,
            of: Some(5001),
        });
        assert_eq!(
            line_text(&grid, None),
            "- grid \"Inventory\" [rows 2–21 of 5001]"
        );
        grid.window = Some(crate::snapshot::tree::Window {
            unit: "rows".into(),
            from: 2,
            to: 4625,
            count: 21,
            of: None,
        });
        assert_eq!(
            line_text(&grid, None),
            "- grid \"Inventory\" [21 rows shown between 2 and 4625 of an unknown number]"
        );
        let mut header = node("columnheader", Some("Weight (t)"), Some("e4"));
        header.sort = Some("ascending".into());
        assert_eq!(
            line_text(&header, None),
            "- columnheader \"Weight (t)\" [sort=ascending] [ref=e4]"
        );
        let mut slider = node("slider", Some("Temperature"), Some("e5"));
        slider.min = Some("10".into());
        slider.max = Some("30".into());
        slider.value = Some("20 °C".into());
        assert_eq!(
            line_text(&slider, None),
            "- slider \"Temperature\" [min=10] [max=30] [ref=e5]: 20 °C"
        );
        let mut option = node("option", Some("Canada"), Some("e6"));
        option.selected = Some(true);
        option.active = Some(true);
        assert_eq!(
            line_text(&option, None),
            "- option \"Canada\" [selected] [active] [ref=e6]"
        );
        let mut editor = node("textbox", Some("Script"), Some("e7"));
        editor.value = Some("if (a) {\r\n  b();\n}".into());
        assert_eq!(
            line_text(&editor, None),
            "- textbox \"Script\" [ref=e7]: if (a) {\\n  b();\\n}"
        );
    }

    #[test]
    fn long_collections_are_counted_not_dropped() {
        let mut table = node("table", Some("Big"), None);
        table.children = (0..300)
            .map(|i| Node {
                role: "row".into(),
                children: vec![Node {
                    role: "cell".into(),
                    text: Some(format!("row {i}")),
                    ..Node::default()
                }],
                ..Node::default()
            })
            .collect();
        let rendered = render(&[table], RenderLimits::default(), 0, None);
        let text = rendered.text();
        assert!(text.contains("… 250 more rows omitted"), "{text}");
        assert_eq!(rendered.omitted, 500);
        assert!(rendered.truncated);
    }

    #[test]
    fn the_byte_budget_cuts_and_counts() {
        let items: Vec<Node> = (0..1000)
            .map(|i| {
                node(
                    "button",
                    Some(&format!("Button {i}")),
                    Some(&format!("e{i}")),
                )
            })
            .collect();
        let limits = RenderLimits {
            max_bytes: 2000,
            max_children: 50,
        };
        let rendered = render(&items, limits, 7, None);
        assert!(rendered.text().len() <= 2000);
        assert_eq!(rendered.lines.len() as u64 + rendered.omitted, 1000 + 7);
    }

    #[test]
    fn keys_are_refs_or_unique_paths() {
        let tree = vec![
            node("text", None, None),
            node("text", None, None),
            node("button", Some("Go"), Some("e3")),
        ];
        let rendered = render(&tree, RenderLimits::default(), 0, None);
        let keys: Vec<&str> = rendered.lines.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["/- text", "/- text#2", "e3"]);
    }
}
