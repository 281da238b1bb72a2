//! `browser_console`: console messages and exceptions, read by cursor.

use browser_provider::BrowserError;
use browser_provider::Result;
use browser_provider::page::console::{CONSOLE_CAP, Level};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, Effect, Offered, ToolSpec, parse, use_tab, without_nulls};
use crate::call::ToolOutput;
use crate::render;

/// `browser_console`.
pub const CONSOLE: ToolSpec = ToolSpec {
    name: "browser_console",
    title: "Console messages",
    description: "Read the tab's console messages and uncaught exceptions (level, text, source, stack), oldest first. \
        Pass the returned cursor as since next time to get only what is new; filter with level.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "reading the console",
    schema: rmcp::handler::server::common::schema_for_type::<ConsoleArgs>,
    output: None,
    run: |call| Box::pin(browser_console(call)),
};

/// Console levels, least serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
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

/// `browser_console`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConsoleArgs {
    /// Only this level and more serious: debug (default, everything), info, warning, error.
    pub level: Option<LevelName>,
    /// Only entries after this cursor (the "next cursor" of your last read): read only what is new.
    pub since: Option<u64>,
    /// At most this many entries (default 100).
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

async fn browser_console(call: Call<'_>) -> Result<ToolOutput> {
    let Call {
        browser,
        session,
        arguments,
        ..
    } = call;
    let args: ConsoleArgs = parse(arguments)?;
    use_tab(browser, session, args.tab.as_deref()).await?;
    let level = match args.level.unwrap_or(LevelName::Debug) {
        LevelName::Debug => Level::Debug,
        LevelName::Info => Level::Info,
        LevelName::Warning => Level::Warning,
        LevelName::Error => Level::Error,
    };
    let limit = args.limit.unwrap_or(100).clamp(1, CONSOLE_CAP);
    let read = browser.console(session, args.since.unwrap_or(0), level, limit)?;
    let tab = browser.active_tab(session)?;
    let mut text = format!(
        "Console of {tab}: {} entr{} (next cursor: {}; pass it as since to read only what is new).",
        read.entries.len(),
        if read.entries.len() == 1 { "y" } else { "ies" },
        read.cursor
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
    Ok(ToolOutput::text(text))
}

/// `browser-shell console …`: the words of a browser_console call.
#[derive(Debug, Clone, clap::Args)]
pub struct ConsoleCommand {
    /// Only this level and above: debug, info, warning, error.
    #[arg(long, value_parser = ["debug", "info", "warning", "error"])]
    pub level: Option<String>,
    /// Only entries after this cursor (printed by the last read).
    #[arg(long, value_name = "CURSOR")]
    pub since: Option<u64>,
    /// At most this many entries (default 100).
    #[arg(long)]
    pub limit: Option<usize>,
    /// The tab (such as t2); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl ConsoleCommand {
    /// The `browser_console` call these words stand for.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the word that does not fit.
    pub fn call(&self) -> Result<(&'static str, Value), BrowserError> {
        let Self {
            level,
            since,
            limit,
            tab,
        } = self;
        Ok((
            CONSOLE.name,
            without_nulls(json!({ "level": level, "since": since, "limit": limit, "tab": tab })),
        ))
    }
}
