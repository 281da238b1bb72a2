//! `browser-tools`: how agents and people use the browser provider.
//!
//! # Layout
//!
//! * [`catalog`] — every `browser_*` tool defined once, one module per tool
//!   or family: its strict argument type (whose docs are the schema a model
//!   reads, and whose fields are also its command-line flags and words),
//!   description, annotations, bound, whether it acts on a tab, what the
//!   timeline shows of a call, how it runs and reads.
//! * [`call`] — running one tool call on a [`browser_provider::Browser`] session
//!   and turning the result or error into model text, and into data
//!   (`structuredContent`) for the tools whose answers are data and for
//!   every error.
//! * [`secrets`] — secrets agents type by name and never see.
//! * [`render`] — model-facing text: snapshots, diffs, errors, with page text
//!   fenced by untrusted-content markers.
//! * [`agent`] — one agent session: the tools it is offered, calls with
//!   their bounds, the activity timeline, its tabs' lifetime.
//! * [`mcp`] — the MCP server (one connection = one [`agent::Agent`]).
//! * [`cli`] — the one-shot `fetch` command.
//! * [`commands`] — the list of the command line's tool commands (`open`,
//!   `act`, …), each one `browser_*` call whose words its tool defines.
//! * [`report`] — errors and exit status for the command line.
//! * [`words`] — how answers name tools and arguments for a model (MCP)
//!   or a person (the command line).

pub mod agent;
pub mod call;
pub mod catalog;
pub mod cli;
pub mod commands;
pub mod mcp;
pub mod render;
pub mod report;
pub mod secrets;
pub mod words;
