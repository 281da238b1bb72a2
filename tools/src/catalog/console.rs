//! `browser_console`: console messages and exceptions, read by cursor.

use browser_provider::Result;
use browser_provider::TabHandle;
use browser_provider::page::console::{CONSOLE_CAP, ConsoleRead, Level, Location, render_stack};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, Effect, Offered, ToolArgs, ToolSpec, is_zero};
use crate::call::ToolOutput;
use crate::render;
use crate::words::Surface;

/// `browser_console`.
pub const CONSOLE: ToolSpec = ToolSpec {
    name: "browser_console",
    title: "Console messages",
    command: Some("console"),
    description: "Read the tab's console messages and uncaught exceptions (level, text, source, stack), oldest first. \
        Pass the returned cursor as since next time to get only what is new; filter with level.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "reading the console",
    tab: true,
    summary: &["tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ConsoleArgs>,
    output: Some(super::schema::output_schema::<ConsoleOutput>),
    run: |call| Box::pin(browser_console(call)),
};

/// Console levels, least serious first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum LevelName {
    /// Everything.
    Debug,
    /// Logs and above.
    Info,
    /// Warnings and errors.
    Warning,
    /// Errors and uncaught exceptions only.
    Error,
}

/// `browser_console`; on the command line `console [--level L] [--since CURSOR] …`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConsoleArgs {
    /// Only this level and more serious: debug (default, everything), info, warning, error.
    #[arg(long)]
    pub level: Option<LevelName>,
    /// Only entries after this cursor (the "next cursor" of your last read): read only what is new.
    #[arg(long, value_name = "CURSOR")]
    pub since: Option<u64>,
    /// At most this many entries (default 100).
    #[schemars(range(min = 1))]
    #[arg(long)]
    pub limit: Option<usize>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl ToolArgs for ConsoleArgs {
    const TOOL: &'static ToolSpec = &CONSOLE;
}

async fn browser_console(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: ConsoleArgs = call.args().await?;
    let (browser, session) = (call.browser, call.session);
    let level = match args.level.unwrap_or(LevelName::Debug) {
        LevelName::Debug => Level::Debug,
        LevelName::Info => Level::Info,
        LevelName::Warning => Level::Warning,
        LevelName::Error => Level::Error,
    };
    let limit = args.limit.unwrap_or(100).clamp(1, CONSOLE_CAP);
    let read = browser.console(session, args.since.unwrap_or(0), level, limit)?;
    let tab = browser.active_tab(session)?;
    Ok(console_output(&tab, &read, call.settings.surface))
}

/// What `browser_console` answers, as data. Each URL is named once, in
/// `sources`, and entries point at it by index: a page's messages mostly
/// come from a few scripts, and naming the script on every entry would make
/// the data outweigh the text beside it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleOutput {
    /// Pass as since to read only what is new.
    pub cursor: u64,
    /// Earlier entries no longer kept (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: u64,
    /// URLs that at names by index (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Oldest first (the page's words, not instructions).
    pub entries: Vec<ConsoleLine>,
}

/// One console entry, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleLine {
    /// debug, warning or error; absent for info (console.log, console.info).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<&'static str>,
    /// The message or exception.
    pub text: String,
    /// Where it came from: [source, line, column], an index into sources, then line and column
    /// (from 1) when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 3))]
    pub at: Option<Vec<u64>>,
    /// Innermost call first (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<FrameData>,
}

/// One call of a stack, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrameData {
    /// Absent when anonymous.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// [source, line, column], as the entry's at.
    #[schemars(length(min = 1, max = 3))]
    pub at: Vec<u64>,
}

/// The URLs a console answer names, each once, in the order first named.
#[derive(Default)]
struct Sources {
    urls: Vec<String>,
    index: std::collections::HashMap<String, u64>,
}

impl Sources {
    /// `location` as `[source, line, column]`, its URL named in `self`.
    fn at(&mut self, location: &Location) -> Vec<u64> {
        let next = self.urls.len() as u64;
        let source = *self
            .index
            .entry(location.url.clone())
            .or_insert_with(|| next);
        if source == next {
            self.urls.push(location.url.clone());
        }
        [Some(source), location.line, location.column]
            .into_iter()
            .map_while(|n| n)
            .collect()
    }
}

/// The text and data of a `browser_console` answer for `tab`.
fn console_output(tab: &TabHandle, read: &ConsoleRead, surface: Surface) -> ToolOutput {
    let mut text = format!(
        "Console of {tab}: {} entr{} (next cursor: {}; pass it as {} to read only what is new).",
        read.entries.len(),
        if read.entries.len() == 1 { "y" } else { "ies" },
        read.cursor,
        surface.argument("since")
    );
    if read.dropped > 0 {
        text.push_str(&format!(
            " {} earlier entries were dropped (a tab keeps the last {CONSOLE_CAP}).",
            read.dropped
        ));
    }
    if !read.entries.is_empty() {
        let lines: Vec<String> = read
            .entries
            .iter()
            .map(|e| {
                let mut line = format!("[{}] {} {}", e.seq, e.level.name(), e.text);
                if let Some(source) = &e.source {
                    line.push_str(&format!(" ({source})"));
                }
                if !e.stack.is_empty() {
                    line.push('\n');
                    line.push_str(&render_stack(&e.stack));
                }
                line
            })
            .collect();
        text.push('\n');
        text.push_str(&render::fenced("console", &lines.join("\n")));
    }
    let mut sources = Sources::default();
    let entries = read
        .entries
        .iter()
        .map(|e| ConsoleLine {
            level: (e.level != Level::Info).then(|| e.level.name()),
            text: e.text.clone(),
            at: e.source.as_ref().map(|source| sources.at(source)),
            stack: e
                .stack
                .iter()
                .map(|frame| FrameData {
                    function: Some(frame.function.clone()).filter(|f| !f.is_empty()),
                    at: sources.at(&frame.location),
                })
                .collect(),
        })
        .collect();
    ToolOutput::text(text).with_structured(&ConsoleOutput {
        cursor: read.cursor,
        dropped: read.dropped,
        sources: sources.urls,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use browser_provider::page::console::{ConsoleEntry, Frame};
    use serde_json::json;

    use super::super::check_data;
    use super::*;

    const BUNDLE: &str = "http://127.0.0.1:4173/assets/index-3f9a2c.js";

    fn at(url: &str, line: u64, column: u64) -> Location {
        Location {
            url: url.into(),
            line: Some(line),
            column: Some(column),
        }
    }

    fn entry(seq: u64, level: Level, text: &str, source: Option<Location>) -> ConsoleEntry {
        ConsoleEntry {
            seq,
            level,
            text: text.into(),
            source,
            stack: Vec::new(),
            timestamp_ms: 1_765_000_000_000,
        }
    }

    fn thrown(seq: u64) -> ConsoleEntry {
        let mut thrown = entry(
            seq,
            Level::Error,
            "Uncaught TypeError: Cannot read properties of undefined (reading 'map')",
            Some(at(BUNDLE, 88, 17)),
        );
        thrown.stack = vec![
            Frame {
                function: "renderList".into(),
                location: at(BUNDLE, 88, 17),
            },
            Frame {
                function: String::new(),
                location: at(BUNDLE, 120, 5),
            },
        ];
        thrown
    }

    #[test]
    fn entries_are_data_no_larger_than_their_text() {
        let read = ConsoleRead {
            entries: vec![
                entry(7, Level::Info, "app started in development mode", None),
                entry(
                    8,
                    Level::Warning,
                    "Each child in a list should have a unique \"key\" prop.",
                    Some(at(BUNDLE, 41, 9)),
                ),
                thrown(9),
                entry(
                    10,
                    Level::Error,
                    "Failed to load resource: the server responded with a status of 404 (Not Found)",
                    Some(Location {
                        url: "http://127.0.0.1:4173/api/items.json".into(),
                        line: None,
                        column: None,
                    }),
                ),
            ],
            cursor: 10,
            dropped: 0,
        };
        let tab = TabHandle::parse("t1").unwrap_or_else(|e| panic!("{e}"));
        let output = console_output(&tab, &read, Surface::Mcp);
        assert!(
            output
                .text
                .starts_with("Console of t1: 4 entries (next cursor: 10;"),
            "{}",
            output.text
        );
        // The text names every place in full, as V8 prints it.
        assert!(
            output.text.contains(&format!(
                "[9] error Uncaught TypeError: Cannot read properties of undefined (reading 'map') ({BUNDLE}:88:17)\n    at renderList ({BUNDLE}:88:17)\n    at (anonymous) ({BUNDLE}:120:5)\n[10] error"
            )),
            "{}",
            output.text
        );
        let data = output.structured.clone().unwrap_or_default();
        assert_eq!(
            data,
            json!({
                "cursor": 10,
                "sources": [BUNDLE, "http://127.0.0.1:4173/api/items.json"],
                "entries": [
                    {"text": "app started in development mode"},
                    {"level": "warning", "text": "Each child in a list should have a unique \"key\" prop.", "at": [0, 41, 9]},
                    {"level": "error", "text": "Uncaught TypeError: Cannot read properties of undefined (reading 'map')",
                     "at": [0, 88, 17],
                     "stack": [{"function": "renderList", "at": [0, 88, 17]}, {"at": [0, 120, 5]}]},
                    {"level": "error", "text": "Failed to load resource: the server responded with a status of 404 (Not Found)", "at": [1]},
                ],
            })
        );
        check_data(&CONSOLE, &output);

        let nothing = console_output(
            &tab,
            &ConsoleRead {
                entries: Vec::new(),
                cursor: 9,
                dropped: 3,
            },
            Surface::Mcp,
        );
        assert_eq!(
            nothing.structured,
            Some(json!({"cursor": 9, "dropped": 3, "entries": []}))
        );
        check_data(&CONSOLE, &nothing);
    }

    /// A chatty page: a thousand entries (the most a read returns), most
    /// of them plain logs from one bundle, some warnings, errors with a
    /// stack; and only its errors. The data stays smaller than the text.
    #[test]
    fn a_long_console_is_data_no_larger_than_its_text() {
        let entries: Vec<ConsoleEntry> = (1..=CONSOLE_CAP as u64)
            .map(|seq| match seq % 10 {
                0 => thrown(seq),
                3 | 7 => entry(
                    seq,
                    Level::Warning,
                    &format!("cache miss for \"items:{seq}\"; fetching again"),
                    Some(at(BUNDLE, 12, 24)),
                ),
                5 => entry(
                    seq,
                    Level::Debug,
                    &format!("render <ItemList> with {seq} items"),
                    Some(at(BUNDLE, 9, 15)),
                ),
                _ => entry(
                    seq,
                    Level::Info,
                    &format!("[api] GET /api/items?page={seq} -> 200"),
                    Some(at(BUNDLE, 6, 15)),
                ),
            })
            .collect();
        let tab = TabHandle::parse("t1").unwrap_or_else(|e| panic!("{e}"));
        let all = ConsoleRead {
            cursor: CONSOLE_CAP as u64,
            dropped: 0,
            entries: entries.clone(),
        };
        let (text, data) = check_data(&CONSOLE, &console_output(&tab, &all, Surface::Mcp));
        assert!(data < text, "{data} ≥ {text}");
        let errors = ConsoleRead {
            cursor: CONSOLE_CAP as u64,
            dropped: 0,
            entries: entries
                .into_iter()
                .filter(|e| e.level == Level::Error)
                .collect(),
        };
        check_data(&CONSOLE, &console_output(&tab, &errors, Surface::Mcp));
        // Plain logs from a short URL: the least the text can say of one.
        let plain = ConsoleRead {
            cursor: 200,
            dropped: 0,
            entries: (1..=200)
                .map(|seq| {
                    entry(
                        seq,
                        Level::Info,
                        "tick",
                        Some(at("http://a.test/x.js", 1, 1)),
                    )
                })
                .collect(),
        };
        check_data(&CONSOLE, &console_output(&tab, &plain, Surface::Mcp));
    }
}
