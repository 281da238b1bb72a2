//! `browser-provider`: everything that talks to a browser.
//!
//! An agent-facing browser built on the Chrome DevTools Protocol: sessions
//! that own tabs, page operations (navigate, execute, content, screenshot,
//! coordinate input) and the policy that keeps them safe, all reached
//! through one narrow seam to whatever hosts the pages.
//!
//! # Layout
//!
//! Read it bottom-up, the way data flows:
//!
//! * [`cdp`] — the CDP connection: transports (pipe, WebSocket), command/response
//!   correlation, event fan-out per target session, typed protocol structs.
//! * [`host`] — the view-host seam ([`host::ViewHost`]) and [`host::ChromiumHost`],
//!   which launches or connects to Chromium and exposes each tab as a view.
//! * [`browser`] — [`Browser`]: agent sessions and their tabs (handles `t1`, `t2`…),
//!   and the operations on the active tab, one module per operation under `page/`.
//! * [`snapshot`] — what the model sees: the page as a compact tree with element
//!   refs, rendered within limits, and diffs between snapshots.
//! * [`control`] — who holds control (agents or a person) and the epoch that
//!   interrupts agent work when a person takes over.
//! * [`policy`] — which URLs may be opened.
//! * [`registry`] — choosing among several registered providers.
//! * [`error`] — [`BrowserError`], with the stable codes every caller matches on.
//! * [`platform`] — what differs between operating systems (the debugging
//!   pipe, process trees, the sandbox, where browsers are installed), one
//!   module per concern with one implementation per OS.
//!
//! Injected page scripts live in `src/js/` and are embedded at build time.

pub mod browser;
pub mod cdp;
pub mod control;
pub mod error;
pub mod host;
pub mod page;
pub mod platform;
pub mod policy;
pub mod registry;
pub mod snapshot;

pub use browser::{
    Activity, Browser, BrowserConfig, HandoffReport, HandoffRequest, LiveTab, SessionId, TabHandle,
    TabInfo, TargetOwner,
};
pub use error::{Absence, BlockReason, BrowserError, Result, StaleReason};

/// The `tracing` target of audit events: what people, agents, clients and
/// the browser did (tool calls, takeovers, handoffs, CDP clients,
/// restarts). The shell writes them to its audit log (`--audit-log`).
pub const AUDIT: &str = "audit";
