//! The console of a tab: messages and uncaught exceptions captured from the
//! moment the tab was prepared, in a ring buffer with a cap. Every entry has
//! a sequence number, so a reader asks for what is new since its cursor and
//! nothing is lost or repeated between reads (what the cap pushed out is
//! counted).

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;

use crate::cdp::EventStream;

use super::ring::Ring;

/// Entries a tab keeps; older ones are dropped (and counted).
pub const CONSOLE_CAP: usize = 1000;

/// How serious an entry is, least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// `console.debug`, verbose browser messages.
    Debug,
    /// `console.log`, `console.info` and friends.
    Info,
    /// `console.warn`, browser warnings.
    Warning,
    /// `console.error`, uncaught exceptions, failed loads.
    Error,
}

impl Level {
    /// The level's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }

    fn of_console_call(kind: &str) -> Self {
        match kind {
            "debug" | "trace" => Self::Debug,
            "warning" | "warn" => Self::Warning,
            "error" | "assert" => Self::Error,
            _ => Self::Info,
        }
    }

    fn of_log_entry(level: &str) -> Self {
        match level {
            "verbose" => Self::Debug,
            "warning" => Self::Warning,
            "error" => Self::Error,
            _ => Self::Info,
        }
    }
}

/// One console message or exception.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleEntry {
    /// Its number in this tab (1, 2, …), for cursors.
    pub seq: u64,
    /// How serious.
    pub level: Level,
    /// The message, or the exception's description.
    pub text: String,
    /// Where it came from, when known.
    pub source: Option<Location>,
    /// The stack, innermost call first, for exceptions and errors that
    /// carry one (empty otherwise).
    pub stack: Vec<Frame>,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
}

/// A place in a script or resource: its URL, and the line and column when
/// known (1-based, as people and editors count). Kept apart (not as one
/// `url:line:column` string) so a reader can name each URL once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The script's or resource's URL.
    pub url: String,
    /// Line, from 1.
    pub line: Option<u64>,
    /// Column, from 1 (only with a line).
    pub column: Option<u64>,
}

impl Location {
    /// `url`, line and column from CDP's 0-based numbers.
    fn of_cdp(url: &str, line: i64, column: Option<i64>) -> Self {
        let from_one = |n: i64| u64::try_from(n + 1).ok();
        Self {
            url: url.to_owned(),
            line: from_one(line),
            column: column.and_then(from_one),
        }
    }
}

impl std::fmt::Display for Location {
    /// `url:line:column`, `url:line` or `url`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// One call of a stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name; empty for an anonymous one.
    pub function: String,
    /// Where the call is.
    pub location: Location,
}

/// A stack as V8 prints it, one `    at name (url:line:column)` line per
/// frame (`(anonymous)` for a function without a name).
pub fn render_stack(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|frame| {
            let name = if frame.function.is_empty() {
                "(anonymous)"
            } else {
                &frame.function
            };
            format!("    at {name} ({})", frame.location)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleRead {
    /// Matching entries after the cursor, oldest first.
    pub entries: Vec<ConsoleEntry>,
    /// The cursor for the next read (the last sequence number seen).
    pub cursor: u64,
    /// Entries after the cursor that the cap dropped before this read.
    pub dropped: u64,
}

/// A tab's console buffer.
#[derive(Debug)]
pub struct ConsoleLog {
    entries: Ring<ConsoleEntry>,
    /// The last sequence number, for readers that wait for news.
    news: tokio::sync::watch::Sender<u64>,
}

impl Default for ConsoleLog {
    fn default() -> Self {
        Self {
            entries: Ring::new(CONSOLE_CAP),
            news: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl ConsoleLog {
    /// Follows the last sequence number (it changes with every new entry).
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.news.subscribe()
    }

    fn push(&mut self, entry: ConsoleEntry) {
        let seq = self.entries.push(entry);
        self.news.send_replace(seq);
    }

    /// Entries after `since` at `min_level` or above, at most `limit`.
    pub fn read(&self, since: u64, min_level: Level, limit: usize) -> ConsoleRead {
        let read = self
            .entries
            .read(since, limit, |entry| entry.level >= min_level);
        ConsoleRead {
            entries: read
                .entries
                .into_iter()
                .map(|(seq, entry)| ConsoleEntry { seq, ..entry })
                .collect(),
            cursor: read.cursor,
            dropped: read.dropped,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConsoleApiCalled {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    args: Vec<RemoteValue>,
    #[serde(default)]
    stack_trace: Option<StackTrace>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteValue {
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    unserializable_value: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "type", default)]
    kind: String,
}

impl RemoteValue {
    fn text(&self) -> String {
        match (&self.value, &self.unserializable_value, &self.description) {
            (Some(Value::String(text)), _, _) => text.clone(),
            (Some(value), _, _) => value.to_string(),
            (None, Some(text), _) | (None, None, Some(text)) => text.clone(),
            (None, None, None) => self.kind.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StackTrace {
    #[serde(default)]
    call_frames: Vec<CallFrame>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallFrame {
    #[serde(default)]
    function_name: String,
    #[serde(default)]
    url: String,
    line_number: i64,
    column_number: i64,
}

impl StackTrace {
    fn top(&self) -> Option<Location> {
        self.call_frames.first().map(CallFrame::location)
    }

    fn frames(&self) -> Vec<Frame> {
        self.call_frames
            .iter()
            .map(|f| Frame {
                function: f.function_name.clone(),
                location: f.location(),
            })
            .collect()
    }
}

impl CallFrame {
    fn location(&self) -> Location {
        Location::of_cdp(&self.url, self.line_number, Some(self.column_number))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExceptionThrown {
    exception_details: ExceptionDetails,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExceptionDetails {
    text: String,
    #[serde(default)]
    url: Option<String>,
    line_number: i64,
    column_number: i64,
    #[serde(default)]
    exception: Option<RemoteValue>,
    #[serde(default)]
    stack_trace: Option<StackTrace>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogEntryAdded {
    entry: LogEntry,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogEntry {
    level: String,
    text: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    line_number: Option<i64>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Fills `log` from a tab's events until the tab goes away.
pub(crate) async fn collect(mut events: EventStream, log: Arc<Mutex<ConsoleLog>>) {
    while let Some(event) = events.recv().await {
        let entry = match event.method.as_str() {
            "Runtime.consoleAPICalled" => {
                let Some(call) = event.decode::<ConsoleApiCalled>() else {
                    continue;
                };
                let text: Vec<String> = call.args.iter().map(RemoteValue::text).collect();
                let level = Level::of_console_call(&call.kind);
                ConsoleEntry {
                    seq: 0,
                    level,
                    text: text.join(" "),
                    source: call.stack_trace.as_ref().and_then(StackTrace::top),
                    stack: (level == Level::Error)
                        .then(|| call.stack_trace.as_ref().map(StackTrace::frames))
                        .flatten()
                        .unwrap_or_default(),
                    timestamp_ms: now_ms(),
                }
            }
            "Runtime.exceptionThrown" => {
                let Some(thrown) = event.decode::<ExceptionThrown>() else {
                    continue;
                };
                let details = thrown.exception_details;
                let description = details
                    .exception
                    .as_ref()
                    .and_then(|e| e.description.clone())
                    .unwrap_or_else(|| details.text.clone());
                let first_line = description.lines().next().unwrap_or_default().to_owned();
                let source = details.url.as_ref().map(|url| {
                    Location::of_cdp(url, details.line_number, Some(details.column_number))
                });
                ConsoleEntry {
                    seq: 0,
                    level: Level::Error,
                    text: format!("Uncaught {first_line}"),
                    source,
                    stack: details
                        .stack_trace
                        .as_ref()
                        .map(StackTrace::frames)
                        .unwrap_or_default(),
                    timestamp_ms: now_ms(),
                }
            }
            "Log.entryAdded" => {
                let Some(added) = event.decode::<LogEntryAdded>() else {
                    continue;
                };
                let entry = added.entry;
                ConsoleEntry {
                    seq: 0,
                    level: Level::of_log_entry(&entry.level),
                    text: entry.text,
                    source: entry.url.map(|url| match entry.line_number {
                        Some(line) => Location::of_cdp(&url, line, None),
                        None => Location {
                            url,
                            line: None,
                            column: None,
                        },
                    }),
                    stack: Vec::new(),
                    timestamp_ms: now_ms(),
                }
            }
            _ => continue,
        };
        log.lock().unwrap_or_else(|p| p.into_inner()).push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(level: Level, text: &str) -> ConsoleEntry {
        ConsoleEntry {
            seq: 0,
            level,
            text: text.into(),
            source: None,
            stack: Vec::new(),
            timestamp_ms: 0,
        }
    }

    #[test]
    fn cursors_never_lose_or_repeat_and_count_what_the_cap_dropped() {
        let mut log = ConsoleLog::default();
        for i in 0..CONSOLE_CAP + 5 {
            log.push(entry(Level::Info, &format!("m{i}")));
        }
        let first = log.read(0, Level::Debug, 10);
        assert_eq!(first.dropped, 5);
        assert_eq!(first.entries[0].text, "m5");
        assert_eq!(first.cursor, first.entries[9].seq);
        let second = log.read(first.cursor, Level::Debug, 10);
        assert_eq!(second.dropped, 0);
        assert_eq!(second.entries[0].seq, first.cursor + 1);
        let rest = log.read(second.cursor, Level::Debug, usize::MAX);
        assert_eq!(rest.entries.len(), CONSOLE_CAP - 20);
        assert_eq!(rest.cursor, (CONSOLE_CAP + 5) as u64);
        log.push(entry(Level::Error, "boom"));
        let errors = log.read(rest.cursor, Level::Error, 10);
        assert_eq!(errors.entries.len(), 1);
        assert_eq!(errors.entries[0].text, "boom");
    }
}
