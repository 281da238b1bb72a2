//! The shell's integration tests: one binary whose modules say what they
//! cover. `common` holds what they share (the shell and relay started as
//! the real binary, an MCP client over HTTP, a virtual display); `bridge`
//! sets up the extension bridge for the tests that need it; what the
//! provider's tests and the benchmarks share too is in the test kit
//! (`browser_testkit`: bounded waits, the fixture server, the MCP stdio
//! client, the person's Chrome, the browser pool).
//!
//! The tests run in parallel threads of this one process, so each starts
//! its own processes with its own runtime directory and ports and display:
//! none sets a process-wide environment variable. The extension bridge's
//! tests (`bridge_join`) have a binary of their own: they time how soon the
//! person's Chrome connects, which the others' load would skew.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bridge;
mod common;

mod auto_connect;
mod cdp_clients;
mod cdp_endpoint;
mod cli;
mod column;
mod column_fits;
mod desktop;
mod doors;
mod extension_cancel;
mod faults;
mod install;
mod mcp_http;
mod mcp_portable;
mod mcp_sdk;
mod mcp_sdk_ts;
mod mcp_stdio;
mod operate;
mod relay;
mod security;
mod team;
mod viewers;
