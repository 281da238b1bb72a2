//! Markdown judged against a reference conversion (issue 40): pandoc, from
//! apt, reads the same HTML file, and what its document tree holds — tables,
//! definition lists, code blocks, links and headings — must be in the
//! markdown `Browser::content` gives, judged by content rather than by
//! layout. Pages: the fixtures that have such structures, and pages of the
//! Python documentation that Debian ships (`python3-doc`). `.ci/setup`
//! installs `pandoc` and `python3-doc`; without them these tests fail and
//! say so.
//!
//! pandoc's tree (`-t json`) is read rather than its markdown: the tree says
//! what is a table, a term or a code block without guessing from wrapped and
//! indented text. Our markdown is read by the small parsers below, which know
//! only the shapes `content.js` writes.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use browser_provider::page::content::{ContentFormat, ContentRequest};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::support::{Ctx, fixtures_dir};
use browser_testkit::fixtures::PYTHON_DOCS;

/// Large enough that no page here is cut.
const MAX_CHARS: usize = 5_000_000;

/// How long one pandoc run may take (stdtypes.html takes about a second).
const PANDOC_BOUND: Duration = Duration::from_secs(60);

pub async fn markdown_keeps_what_pandoc_finds_in_the_fixtures(ctx: Ctx) {
    let mut coverage = Vec::new();
    // The other fixtures with tables are not comparable: large.html and
    // scrollers.html fill theirs from scripts (pandoc reads the file as
    // written), and names.html puts buttons in its cells, which ours leaves
    // out as controls rather than content.
    for page in ["article.html", "manual.html"] {
        let file = fixtures_dir().join(page);
        let url = ctx.url(page);
        coverage.push(compare(&ctx, &file, &url, None).await);
    }
    assert_coverage(&coverage);
}

pub async fn markdown_keeps_what_pandoc_finds_in_the_python_docs(ctx: Ctx) {
    assert!(
        Path::new(PYTHON_DOCS).is_dir(),
        "{PYTHON_DOCS} is missing: install python3-doc (.ci/setup does)"
    );
    let mut coverage = Vec::new();
    for page in [
        "glossary.html",
        "library/functions.html",
        "library/stdtypes.html",
        "tutorial/datastructures.html",
    ] {
        let file = Path::new(PYTHON_DOCS).join(page);
        // The fixture server has the documentation under `/python-docs/`.
        let url = ctx.url(&format!("python-docs/{page}"));
        // Sphinx's main content; the rest is navigation, which pandoc has
        // twice (the hidden mobile menu and the sidebar).
        coverage.push(compare(&ctx, &file, &url, Some("body")).await);
    }
    assert_coverage(&coverage);
}

/// How much of what pandoc found on one page our markdown has.
#[derive(Debug)]
struct Coverage {
    page: String,
    /// Per category: (name, found in ours, pandoc's count, what is missing).
    categories: Vec<(&'static str, usize, usize, Vec<String>)>,
}

/// The percentage each category must reach.
fn required(category: &str) -> f64 {
    match category {
        "terms" | "links" => 98.0,
        _ => 100.0,
    }
}

/// Prints each page's coverage (the numbers are this test's report, worth
/// seeing when it passes too) and fails below the required percentages.
#[allow(clippy::print_stderr)]
fn assert_coverage(pages: &[Coverage]) {
    let mut failures = Vec::new();
    for page in pages {
        let mut line = format!("{}:", page.page);
        for (name, found, total, missing) in &page.categories {
            line.push_str(&format!(" {name} {found}/{total}"));
            let percent = if *total == 0 {
                100.0
            } else {
                100.0 * *found as f64 / *total as f64
            };
            if !missing.is_empty() {
                eprintln!(
                    "{}: {} {name} missing, e.g. {:#?}",
                    page.page,
                    missing.len(),
                    &missing[..missing.len().min(8)]
                );
            }
            if percent < required(name) {
                failures.push(format!(
                    "{}: {name} {found}/{total} is under {}%; missing: {:#?}",
                    page.page,
                    required(name),
                    &missing[..missing.len().min(20)]
                ));
            }
        }
        eprintln!("{line}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Converts `file` with pandoc and the page at `url` with `Browser::content`,
/// and counts what of pandoc's (inside the first div of class `scope`, when
/// given) is in ours.
async fn compare(ctx: &Ctx, file: &Path, url: &str, scope: Option<&str>) -> Coverage {
    let tree = pandoc_tree(file).await;
    let blocks = match scope {
        Some(class) => find_div(&tree["blocks"], class)
            .unwrap_or_else(|| panic!("no div.{class} in pandoc's tree of {}", file.display())),
        None => &tree["blocks"],
    };
    let mut reference = Found::default();
    reference.blocks(blocks);
    let base = url::Url::parse(url).unwrap();

    let session = ctx.session().await;
    ctx.browser()
        .open(&session, url, false, &CancellationToken::new())
        .await
        .expect("open the page");
    let request = ContentRequest {
        format: ContentFormat::Markdown,
        selector: None,
        max_chars: MAX_CHARS,
    };
    let result = ctx
        .browser()
        .content(&session, request, None, &CancellationToken::new())
        .await
        .expect("markdown of the page");
    assert!(!result.truncated, "{url} was cut");
    let ours = Markdown::parse(&result.content);
    ctx.browser().close_session(&session).await.ok();

    let page = url.rsplit_once("/python-docs/").map_or_else(
        || url.rsplit('/').next().unwrap_or(url).to_owned(),
        |(_, page)| page.to_owned(),
    );
    Coverage {
        page,
        categories: vec![
            tables(&reference.tables, &ours.tables),
            terms(&reference.terms, &ours),
            code(&reference.code, &ours.code),
            links(&reference.links, &ours.links, &base),
            headings(&reference.headings, &ours.headings),
        ],
    }
}

/// pandoc's document tree of `file`, from a run bounded by [`PANDOC_BOUND`].
async fn pandoc_tree(file: &Path) -> Value {
    let run = tokio::process::Command::new("pandoc")
        .args(["--from", "html", "--to", "json"])
        .arg(file)
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(PANDOC_BOUND, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => panic!("pandoc did not run ({error}): install pandoc (.ci/setup does)"),
        Err(_) => panic!("pandoc took over {PANDOC_BOUND:?} on {}", file.display()),
    };
    assert!(
        output.status.success(),
        "pandoc failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("pandoc's JSON")
}

// ---- pandoc's tree ---------------------------------------------------------

/// The blocks of the first `Div` with class `class`, depth first.
fn find_div<'a>(value: &'a Value, class: &str) -> Option<&'a Value> {
    match value {
        Value::Array(items) => items.iter().find_map(|item| find_div(item, class)),
        Value::Object(node) => {
            let content = node.get("c")?;
            if node.get("t").and_then(Value::as_str) == Some("Div")
                && content[0][1]
                    .as_array()
                    .is_some_and(|classes| classes.iter().any(|c| c == class))
            {
                return Some(&content[1]);
            }
            find_div(content, class)
        }
        _ => None,
    }
}

/// What one side holds, in document order.
#[derive(Default)]
struct Found {
    /// (level, text).
    headings: Vec<(usize, String)>,
    /// Each table's rows of cell texts.
    tables: Vec<Vec<Vec<String>>>,
    /// Each term's lines (a definition may have several, as a function with
    /// several signatures) and the start of its definition.
    terms: Vec<(Vec<String>, String)>,
    /// Each code block's text.
    code: Vec<String>,
    /// (text, target as written).
    links: Vec<(String, String)>,
}

impl Found {
    fn blocks(&mut self, blocks: &Value) {
        for block in blocks.as_array().into_iter().flatten() {
            self.block(block);
        }
    }

    fn block(&mut self, block: &Value) {
        let c = &block["c"];
        match block["t"].as_str().unwrap_or("") {
            "Plain" | "Para" => self.inlines(c),
            "LineBlock" => c
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|l| self.inlines(l)),
            "Header" => {
                self.headings.push((
                    c[0].as_u64().unwrap_or(0) as usize,
                    plain(&inline_text(&c[2])),
                ));
                self.inlines(&c[2]);
            }
            "CodeBlock" => self.code.push(c[1].as_str().unwrap_or("").to_owned()),
            "BlockQuote" => self.blocks(c),
            "OrderedList" => c[1]
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|b| self.blocks(b)),
            "BulletList" => c
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|b| self.blocks(b)),
            "DefinitionList" => {
                for item in c.as_array().into_iter().flatten() {
                    let lines: Vec<String> = term_lines(&item[0]);
                    let definition = item[1]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(blocks_text)
                        .collect::<Vec<_>>()
                        .join(" ");
                    let start = plain(&definition)
                        .split(' ')
                        .take(6)
                        .collect::<Vec<_>>()
                        .join(" ");
                    if lines.iter().any(|l| !l.is_empty()) {
                        self.terms.push((lines, start));
                    }
                    self.inlines(&item[0]);
                    item[1]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .for_each(|b| self.blocks(b));
                }
            }
            "Table" => {
                let mut rows = Vec::new();
                let mut add = |list: &Value| {
                    for row in list.as_array().into_iter().flatten() {
                        let cells = row[1].as_array().into_iter().flatten();
                        rows.push(trim_row(
                            cells.map(|cell| plain(&blocks_text(&cell[4]))).collect(),
                        ));
                    }
                };
                add(&c[3][1]);
                for body in c[4].as_array().into_iter().flatten() {
                    add(&body[2]);
                    add(&body[3]);
                }
                add(&c[5][1]);
                self.tables.push(rows);
                // Links and code inside cells count too.
                self.walk_table(c);
            }
            "Div" => self.blocks(&c[1]),
            _ => {}
        }
    }

    fn walk_table(&mut self, value: &Value) {
        match value {
            Value::Array(items) => items.iter().for_each(|item| self.walk_table(item)),
            Value::Object(node) => match node.get("t").and_then(Value::as_str) {
                Some(
                    "Plain" | "Para" | "CodeBlock" | "Div" | "BulletList" | "OrderedList" | "Table",
                ) => self.block(value),
                _ => {
                    if let Some(c) = node.get("c") {
                        self.walk_table(c);
                    }
                }
            },
            _ => {}
        }
    }

    /// Collects the links among `inlines`.
    fn inlines(&mut self, inlines: &Value) {
        for inline in inlines.as_array().into_iter().flatten() {
            let c = &inline["c"];
            match inline["t"].as_str().unwrap_or("") {
                "Link" => {
                    let text = plain(&inline_text(&c[1]));
                    let target = c[2][0].as_str().unwrap_or("");
                    // Sphinx's permalinks (¶) show only on hover, and ours
                    // leave them out on purpose; links without words say
                    // nothing; `javascript:` is no target.
                    if !text.is_empty() && text != "¶" && !target.starts_with("javascript:") {
                        self.links.push((text, target.to_owned()));
                    }
                    self.inlines(&c[1]);
                }
                "Emph" | "Strong" | "Underline" | "Strikeout" | "Superscript" | "Subscript"
                | "SmallCaps" => self.inlines(c),
                "Span" | "Quoted" | "Cite" => self.inlines(&c[1]),
                _ => {}
            }
        }
    }
}

/// A definition list term's lines: pandoc joins a `dt` after another with a
/// line break.
fn term_lines(inlines: &Value) -> Vec<String> {
    let mut lines = vec![String::new()];
    for inline in inlines.as_array().into_iter().flatten() {
        if inline["t"] == "LineBreak" {
            lines.push(String::new());
        } else if let Some(last) = lines.last_mut() {
            last.push_str(&inline_text(&Value::Array(vec![inline.clone()])));
        }
    }
    lines
        .iter()
        .map(|l| plain(l))
        .filter(|l| !l.is_empty())
        .collect()
}

/// The words of `inlines`, without markup; permalinks (¶) left out.
fn inline_text(inlines: &Value) -> String {
    let mut out = String::new();
    for inline in inlines.as_array().into_iter().flatten() {
        let c = &inline["c"];
        match inline["t"].as_str().unwrap_or("") {
            "Str" => out.push_str(c.as_str().unwrap_or("")),
            "Space" | "SoftBreak" | "LineBreak" => out.push(' '),
            "Code" | "Math" => out.push_str(c[1].as_str().unwrap_or("")),
            "Emph" | "Strong" | "Underline" | "Strikeout" | "Superscript" | "Subscript"
            | "SmallCaps" => out.push_str(&inline_text(c)),
            "Span" | "Quoted" | "Cite" | "Image" => out.push_str(&inline_text(&c[1])),
            "Link" => {
                let text = inline_text(&c[1]);
                if text.trim() != "¶" {
                    out.push_str(&text);
                }
            }
            _ => {}
        }
    }
    out
}

/// The words of `blocks`, without markup, blocks joined by a space.
fn blocks_text(blocks: &Value) -> String {
    let mut parts = Vec::new();
    for block in blocks.as_array().into_iter().flatten() {
        let c = &block["c"];
        parts.push(match block["t"].as_str().unwrap_or("") {
            "Plain" | "Para" => inline_text(c),
            "Header" => inline_text(&c[2]),
            "CodeBlock" => c[1].as_str().unwrap_or("").to_owned(),
            "BlockQuote" => blocks_text(c),
            "Div" => blocks_text(&c[1]),
            "BulletList" => c
                .as_array()
                .into_iter()
                .flatten()
                .map(blocks_text)
                .collect::<Vec<_>>()
                .join(" "),
            "OrderedList" => c[1]
                .as_array()
                .into_iter()
                .flatten()
                .map(blocks_text)
                .collect::<Vec<_>>()
                .join(" "),
            "DefinitionList" => c
                .as_array()
                .into_iter()
                .flatten()
                .map(|item| {
                    let definitions = item[1].as_array().into_iter().flatten();
                    let definitions = definitions.map(blocks_text).collect::<Vec<_>>();
                    format!("{} {}", inline_text(&item[0]), definitions.join(" "))
                })
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        });
    }
    parts.join(" ")
}

// ---- our markdown ------------------------------------------------------------

/// What our markdown holds, read from the shapes `content.js` writes.
#[derive(Default)]
struct Markdown {
    headings: Vec<(usize, String)>,
    tables: Vec<Vec<Vec<String>>>,
    code: Vec<String>,
    /// (text, absolute target).
    links: Vec<(String, String)>,
    /// The lines outside code blocks, markup removed, in order; empty lines
    /// left out.
    lines: Vec<String>,
}

impl Markdown {
    fn parse(text: &str) -> Self {
        let mut ours = Markdown::default();
        let mut lines = text.lines().peekable();
        let mut table: Vec<Vec<String>> = Vec::new();
        while let Some(line) = lines.next() {
            let trimmed = line.trim_start();
            let is_row = trimmed.starts_with('|') && trimmed.trim_end().ends_with('|');
            if !is_row && !table.is_empty() {
                ours.tables.push(std::mem::take(&mut table));
            }
            if let Some(fence) = fence(trimmed) {
                // A fenced block: its lines lose the fence's indentation.
                let indent = line.len() - trimmed.len();
                let mut body = Vec::new();
                for inner in lines.by_ref() {
                    if inner.trim() == fence {
                        break;
                    }
                    let cut = inner.len() - inner.trim_start_matches(' ').len();
                    body.push(&inner[cut.min(indent)..]);
                }
                ours.code.push(body.join("\n"));
                continue;
            }
            if is_row {
                let cells = split_row(trimmed.trim_end());
                if !cells
                    .iter()
                    .all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-'))
                {
                    table.push(trim_row(cells.iter().map(|c| plain_markdown(c)).collect()));
                }
            } else if let Some((level, heading)) = heading(trimmed) {
                ours.headings.push((level, plain_markdown(heading)));
            }
            ours.links.extend(links_in(line));
            // A table row's words without the bars between its cells.
            let words = if is_row {
                plain_markdown(&split_row(trimmed.trim_end()).join(" "))
            } else {
                plain_markdown(strip_marker(trimmed))
            };
            if !words.is_empty() {
                ours.lines.push(words);
            }
        }
        if !table.is_empty() {
            ours.tables.push(table);
        }
        ours
    }
}

/// The closing fence when `line` opens a fenced code block.
fn fence(line: &str) -> Option<String> {
    let ticks = line.chars().take_while(|&c| c == '`').count();
    (ticks >= 3 && !line[ticks..].contains('`')).then(|| "`".repeat(ticks))
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    let rest = line[level..].strip_prefix(' ')?;
    (1..=6).contains(&level).then_some((level, rest))
}

/// A line without its leading list or quote marker.
fn strip_marker(line: &str) -> &str {
    let line = line.trim_start_matches("> ");
    if let Some(rest) = line.strip_prefix("- ") {
        return rest;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = line[digits..].strip_prefix(". ")
    {
        return rest;
    }
    line
}

/// The cells of a table row, split at the `|` that are not escaped.
fn split_row(row: &str) -> Vec<String> {
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    if next != '|' {
                        cells.last_mut().unwrap().push('\\');
                    }
                    cells.last_mut().unwrap().push(next);
                }
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

/// The `[text](target)` links of a line, code spans skipped; images give
/// their alt text to the link around them.
fn links_in(line: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        match chars[at] {
            '`' => at = skip_code_span(&chars, at),
            '[' => match link_at(&chars, at) {
                Some((text, target, end)) => {
                    if !(at > 0 && chars[at - 1] == '!') {
                        found.push((plain_markdown(&text), target));
                    }
                    // Links inside the text (an image in a link) count too.
                    found.extend(links_in(&text));
                    at = end;
                }
                None => at += 1,
            },
            _ => at += 1,
        }
    }
    found
}

/// Past the code span starting at `at` (or past its backticks when it is
/// not closed).
fn skip_code_span(chars: &[char], at: usize) -> usize {
    let ticks = chars[at..].iter().take_while(|&&c| c == '`').count();
    let mut i = at + ticks;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|&&c| c == '`').count();
            if run == ticks {
                return i + run;
            }
            i += run;
        } else {
            i += 1;
        }
    }
    at + ticks
}

/// The link whose `[` is at `at`: its text, target and where it ends.
fn link_at(chars: &[char], at: usize) -> Option<(String, String, usize)> {
    let mut depth = 0;
    let mut i = at;
    let close = loop {
        match chars.get(i)? {
            '`' => {
                i = skip_code_span(chars, i);
                continue;
            }
            '\\' => i += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break i;
                }
            }
            _ => {}
        }
        i += 1;
    };
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let mut depth = 0;
    let mut j = close + 1;
    let end = loop {
        match chars.get(j)? {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    break j;
                }
            }
            _ => {}
        }
        j += 1;
    };
    let text = chars[at + 1..close].iter().collect();
    let target = chars[close + 2..end].iter().collect();
    Some((text, target, end + 1))
}

/// Markdown text reduced to its words: links and images to their text,
/// emphasis and code marks and escapes removed, whitespace collapsed.
fn plain_markdown(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        match chars[at] {
            '`' => {
                let end = skip_code_span(&chars, at);
                out.extend(&chars[at..end]);
                at = end;
            }
            '!' if chars.get(at + 1) == Some(&'[') => at += 1,
            '[' => match link_at(&chars, at) {
                Some((text, _, end)) => {
                    out.push_str(&plain_markdown(&text));
                    at = end;
                }
                None => {
                    out.push('[');
                    at += 1;
                }
            },
            '\\' if chars.get(at + 1).is_some_and(|c| c.is_ascii_punctuation()) => {
                out.push(chars[at + 1]);
                at += 2;
            }
            c => {
                out.push(c);
                at += 1;
            }
        }
    }
    plain(&out)
}

/// Words only: the characters both sides may use as marks (`*`, `` ` ``,
/// `\`) removed, whitespace collapsed.
fn plain(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '`' | '\\'))
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A row without its empty cells at the end (ours pads short rows; pandoc's
/// have fewer cells where one spans columns).
fn trim_row(mut cells: Vec<String>) -> Vec<String> {
    while cells.last().is_some_and(String::is_empty) {
        cells.pop();
    }
    cells
}

// ---- judging -----------------------------------------------------------------

fn tables(
    reference: &[Vec<Vec<String>>],
    ours: &[Vec<Vec<String>>],
) -> (&'static str, usize, usize, Vec<String>) {
    let mut unused: Vec<&Vec<Vec<String>>> = ours.iter().collect();
    let mut missing = Vec::new();
    for table in reference {
        match unused.iter().position(|t| *t == table) {
            Some(i) => {
                unused.remove(i);
            }
            None => {
                let first = table.first().map(|r| r.join(" | ")).unwrap_or_default();
                // The closest of ours, to show how it differs.
                let near = ours
                    .iter()
                    .find(|t| t.first().map(|r| r.join(" | ")) == Some(first.clone()));
                missing.push(format!(
                    "{} rows starting {first:?}; ours {}",
                    table.len(),
                    near.map_or("has no table starting so".to_owned(), |t| format!(
                        "has {} rows: {:?}",
                        t.len(),
                        t.iter().zip(table).find(|(a, b)| a != b)
                    ))
                ));
            }
        }
    }
    (
        "tables",
        reference.len() - missing.len(),
        reference.len(),
        missing,
    )
}

fn terms(
    reference: &[(Vec<String>, String)],
    ours: &Markdown,
) -> (&'static str, usize, usize, Vec<String>) {
    let lines = &ours.lines;
    let mut missing = Vec::new();
    for (term, start) in reference {
        let found = (0..lines.len()).any(|i| {
            let after = i + term.len();
            after <= lines.len()
                && lines[i..after] == term[..]
                && lines[after..lines.len().min(after + 3)]
                    .join(" ")
                    .starts_with(start.as_str())
        });
        if !found {
            missing.push(format!("{term:?} then {start:?}"));
        }
    }
    (
        "terms",
        reference.len() - missing.len(),
        reference.len(),
        missing,
    )
}

fn code(reference: &[String], ours: &[String]) -> (&'static str, usize, usize, Vec<String>) {
    let mut unused: Vec<&String> = ours.iter().collect();
    let mut missing = Vec::new();
    for block in reference {
        let block = block.trim_end_matches('\n');
        match unused
            .iter()
            .position(|b| b.trim_end_matches('\n') == block)
        {
            Some(i) => {
                unused.remove(i);
            }
            None => missing.push(block.chars().take(120).collect()),
        }
    }
    (
        "code blocks",
        reference.len() - missing.len(),
        reference.len(),
        missing,
    )
}

fn links(
    reference: &[(String, String)],
    ours: &[(String, String)],
    base: &url::Url,
) -> (&'static str, usize, usize, Vec<String>) {
    let resolve = |target: &str, base: &url::Url| {
        base.join(target)
            .map_or_else(|_| target.to_owned(), |u| u.to_string())
    };
    let mut counts: HashMap<(String, String), usize> = HashMap::new();
    for (text, target) in ours {
        *counts
            .entry((text.clone(), resolve(target, base)))
            .or_default() += 1;
    }
    let mut missing = Vec::new();
    for (text, target) in reference {
        let key = (text.clone(), resolve(target, base));
        match counts.get_mut(&key) {
            Some(n) if *n > 0 => *n -= 1,
            _ => missing.push(format!("[{}]({})", key.0, key.1)),
        }
    }
    (
        "links",
        reference.len() - missing.len(),
        reference.len(),
        missing,
    )
}

/// pandoc's headings must be a run of ours, in order, at the same levels:
/// matched in order, and none of ours between them that pandoc lacks.
fn headings(
    reference: &[(usize, String)],
    ours: &[(usize, String)],
) -> (&'static str, usize, usize, Vec<String>) {
    let mut missing = Vec::new();
    let mut matched = Vec::new();
    let mut at = 0;
    for heading in reference {
        match ours[at..].iter().position(|h| h == heading) {
            Some(i) => {
                matched.push(at + i);
                at += i + 1;
            }
            None => missing.push(format!("{heading:?}")),
        }
    }
    if let (Some(&first), Some(&last)) = (matched.first(), matched.last()) {
        for (i, extra) in ours[first..=last].iter().enumerate() {
            if !matched.contains(&(first + i)) {
                missing.push(format!("ours has {extra:?} between them"));
            }
        }
    }
    (
        "headings",
        reference.len().saturating_sub(missing.len()),
        reference.len(),
        missing,
    )
}
