//! The test kit of browser-shell: what the provider's and the shell's
//! integration tests and benchmarks share, in one crate that each takes as
//! a dev-dependency (instead of including each other's files by path).
//!
//! # Layout
//!
//! * [`bounded`]: waiting with a bound: a condition looked at until it
//!   holds, a process (group) ended and waited for. No test sleeps for a
//!   condition; each waits on it, bounded.
//! * [`stats`]: percentiles (nearest rank) and milliseconds, for the
//!   p50/p95 tables the benchmarks print.
//! * [`fixtures`]: the fixture server: the repository's `fixtures/` on
//!   127.0.0.1, a few dynamic routes (a redirect, a 404, a page that never
//!   ends…), Debian's Python docs when installed, and the `Host` of every
//!   request seen.
//! * [`mcp_stdio`]: a raw JSON-RPC MCP client on a child's stdio, every
//!   read bounded.
//! * [`cdp`]: a minimal CDP client over a WebSocket, for the person's side
//!   of a test (independent of the provider's own CDP layer, which is
//!   under test).
//! * [`person`]: the person's Chrome: Debian's full Chromium with the real
//!   extension from `assets/extension`, and the person's hands on it.
//! * [`pool`]: a team's surroundings: browserless as the browser pool and
//!   HAProxy with the shipped configuration.
//! * `provider` (feature `provider`): what is typed by browser-provider:
//!   the harness of the provider's test binaries (one browser, a session
//!   a test) and an extension host paired with the person's Chrome.
//!
//! # Why the provider can take this kit as a dev-dependency
//!
//! With the `provider` feature the kit depends on browser-provider, whose
//! tests depend on the kit: a cycle Cargo allows for dev-dependencies. An
//! integration test or benchmark links the one library build of
//! browser-provider that the kit links too, so their types are the same;
//! only the provider's own unit tests (`#[cfg(test)]` in `src/`) are a
//! second build of it, and they do not use the kit. Everything but the
//! `provider` module is free of the workspace's crates.
//!
//! Linux only for what starts or ends processes (the person's Chrome,
//! process groups, the pool); the rest builds everywhere the provider's
//! unit tests build (Windows in `.ci/windows`).

#![deny(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod bounded;
pub mod cdp;
pub mod fixtures;
pub mod mcp_stdio;
#[cfg(target_os = "linux")]
pub mod person;
#[cfg(target_os = "linux")]
pub mod pool;
#[cfg(feature = "provider")]
pub mod provider;
pub mod stats;

use std::path::{Path, PathBuf};

/// The repository's root directory (the kit lives in `provider/testkit`).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
