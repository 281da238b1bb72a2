//! `browser-tools`: how agents and people use the browser provider.
//!
//! # Layout
//!
//! * [`cli`] — command-line commands (`fetch`): arguments, running them on a
//!   [`browser_provider::Browser`], and printing results and errors.
//! * [`report`] — turning provider errors into the text and exit status a
//!   caller sees, the same codes and hints everywhere.
//!
//! The `browser_*` MCP tools arrive here next, on the same building blocks.

pub mod cli;
pub mod report;
