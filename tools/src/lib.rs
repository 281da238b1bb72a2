//! `browser-tools`: how agents and people use the browser provider.
//!
//! # Layout
//!
//! * [`args`] — the strict, typed arguments of every `browser_*` tool; their
//!   docs are the schema descriptions a model reads.
//! * [`call`] — running one tool call on a [`browser_provider::Browser`] session
//!   and turning the result or error into model text.
//! * [`render`] — model-facing text: snapshots, diffs, errors, with page text
//!   fenced by untrusted-content markers.
//! * [`agent`] — one agent session: the tools it is offered, calls with
//!   their bounds, the activity timeline, its tabs' lifetime.
//! * [`mcp`] — the MCP server (one connection = one [`agent::Agent`]).
//! * [`cli`] — the one-shot `fetch` command.
//! * [`commands`] — the command line's tool commands (`open`, `act`, …),
//!   each one `browser_*` call.
//! * [`report`] — errors and exit status for the command line.

pub mod agent;
pub mod args;
pub mod call;
pub mod cli;
pub mod commands;
pub mod mcp;
pub mod render;
pub mod report;
pub mod secrets;
