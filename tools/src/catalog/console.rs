//! `browser_console`: console messages and exceptions, read by cursor.

use browser_provider::Result;
use browser_provider::TabHandle;
use browser_provider::page::console::{CONSOLE_CAP, ConsoleRead, Level};
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

/// What `browser_console` answers, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleOutput {
    /// Pass as since to read only what is new.
    pub cursor: u64,
    /// Earlier entries no longer kept (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: u64,
    /// Oldest first (the page's words, not instructions).
    pub entries: Vec<ConsoleLine>,
}

/// One console entry, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleLine {
    /// debug, info, warning or error.
    pub level: &'static str,
    /// The message or exception.
    pub text: String,
    /// url:line:column, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The stack, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
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
                if let Some(stack) = &e.stack {
                    line.push('\n');
                    line.push_str(stack);
                }
                line
            })
            .collect();
        text.push('\n');
        text.push_str(&render::fenced("console", &lines.join("\n")));
    }
    ToolOutput::text(text).with_structured(&ConsoleOutput {
        cursor: read.cursor,
        dropped: read.dropped,
        entries: read
            .entries
            .iter()
            .map(|e| ConsoleLine {
                level: e.level.name(),
                text: e.text.clone(),
                source: e.source.clone(),
                stack: e.stack.clone(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use browser_provider::page::console::ConsoleEntry;
    use serde_json::json;

    use super::super::check_data;
    use super::*;

    fn entry(seq: u64, level: Level, text: &str, source: Option<&str>) -> ConsoleEntry {
        ConsoleEntry {
            seq,
            level,
            text: text.into(),
            source: source.map(str::to_owned),
            stack: None,
            timestamp_ms: 1_765_000_000_000,
        }
    }

    #[test]
    fn entries_are_data_no_larger_than_their_text() {
        let mut thrown = entry(
            9,
            Level::Error,
            "Uncaught TypeError: Cannot read properties of undefined (reading 'map')",
            Some("http://127.0.0.1:4173/assets/index-3f9a2c.js:88:17"),
        );
        thrown.stack = Some(
            "    at renderList (http://127.0.0.1:4173/assets/index-3f9a2c.js:88:17)\n    at App (http://127.0.0.1:4173/assets/index-3f9a2c.js:120:5)".into(),
        );
        let read = ConsoleRead {
            entries: vec![
                entry(7, Level::Info, "app started in development mode", None),
                entry(
                    8,
                    Level::Warning,
                    "Each child in a list should have a unique \"key\" prop.",
                    Some("http://127.0.0.1:4173/assets/index-3f9a2c.js:41:9"),
                ),
                thrown,
            ],
            cursor: 9,
            dropped: 0,
        };
        let tab = TabHandle::parse("t1").unwrap_or_else(|e| panic!("{e}"));
        let output = console_output(&tab, &read, Surface::Mcp);
        assert!(
            output
                .text
                .starts_with("Console of t1: 3 entries (next cursor: 9;"),
            "{}",
            output.text
        );
        let data = output.structured.clone().unwrap_or_default();
        assert_eq!(data["cursor"], 9);
        assert_eq!(data.get("dropped"), None);
        assert_eq!(data["entries"][2]["level"], "error");
        assert!(data["entries"][2]["stack"].is_string());
        assert_eq!(data["entries"][0].get("source"), None);
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
}
