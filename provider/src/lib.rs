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
//! * [`snapshot`] — what the model sees, as pure data that never touches a
//!   page: the walked tree, its rendering within limits, diffs between
//!   renderings, and the ref registry ([`snapshot::Ref`], and
//!   [`snapshot::TabState`]: every ref a tab issued and the base of the next diff).
//! * [`page`] — one tab's view prepared for operations ([`page::Page`], each
//!   operation in its own module). [`page::observe`] is where the live page
//!   meets `snapshot`: walking the page (frames, closed shadow roots) into a
//!   snapshot and finding the element behind a ref again; [`page::act`]
//!   acts on elements by ref on top of it. Imports point one way:
//!   operations (`act`, …) → `observe` → [`page::Page`] → `snapshot`.
//! * [`browser`] — [`Browser`]: agent sessions and their tabs (handles `t1`, `t2`…),
//!   and the operations on the active tab, run on their [`page::Page`]s.
//! * [`control`] — who holds control (agents or a person) and the epoch that
//!   interrupts agent work when a person takes over.
//! * [`policy`] — which URLs may be opened.
//! * [`registry`] — choosing among several registered providers.
//! * [`error`] — [`BrowserError`], with the stable codes every caller matches on.
//! * [`platform`] — what differs between operating systems (the debugging
//!   pipe, process trees, the sandbox, where browsers are installed), one
//!   module per concern with one implementation per OS.
//!
//! Injected page scripts live in `src/js/` and are embedded at build time:
//! the agent library installed in our isolated world (`agent/*.js`, `find.js`,
//! `inspect.js`), the content and execute wrappers, and in `src/js/scripts/`
//! the smaller scripts single operations run (the walk call, frame corners,
//! icon lookup, waits, probes). Only one-line calls into them stay in Rust.

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

/// The layers the `# Layout` above promises, checked on the sources: the
/// snapshot data never reaches back into a page, and among the page's
/// modules imports only point down (operations → `observe` → `Page` →
/// `snapshot`), so no import circle can form again (issue 38).
#[cfg(test)]
mod layering {
    use std::path::{Path, PathBuf};

    /// The Rust files under `src/<relative>` (a file or a folder), each with
    /// its code only (comments dropped).
    fn sources(relative: &str) -> Vec<(PathBuf, String)> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(relative);
        let mut files = Vec::new();
        let mut pending = vec![path];
        while let Some(path) = pending.pop() {
            if path.is_dir() {
                for entry in std::fs::read_dir(&path).unwrap() {
                    pending.push(entry.unwrap().path());
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text
                    .lines()
                    .filter(|line| !line.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                files.push((path, code));
            }
        }
        assert!(!files.is_empty(), "no sources at {relative}");
        files
    }

    fn refuse(relative: &str, forbidden: &[&str]) {
        for (path, code) in sources(relative) {
            for word in forbidden {
                assert!(
                    !code.contains(word),
                    "{} uses {word}: that import runs back up",
                    path.display()
                );
            }
        }
    }

    #[test]
    fn snapshot_is_data_that_never_touches_a_page() {
        refuse(
            "snapshot",
            &["crate::page", "crate::cdp", "crate::host", "crate::browser"],
        );
    }

    #[test]
    fn page_modules_import_only_downwards() {
        // The page and what people watching see know nothing of operations.
        refuse("page/mod.rs", &["act::", "observe::"]);
        refuse("page/hand.rs", &["act::", "observe::", "crate::snapshot"]);
        // Looking at the page knows nothing of acting on it.
        refuse("page/observe", &["act::"]);
        // What the act steps share depends on nothing else of act.
        refuse("page/act/kinds.rs", &["super::"]);
        // The steps use the shared kinds and each other, never the pipeline.
        let steps = [
            "kinds",
            "drag",
            "report",
            "keyboard",
            "pointer",
            "resolve",
            "scroll",
            "selection",
            "settle",
        ];
        for (path, code) in sources("page/act") {
            if path.ends_with("mod.rs") {
                continue;
            }
            // (A file's own tests, below, reach the file itself as `super`.)
            let code = code.split("#[cfg(test)]").next().unwrap_or_default();
            for (at, _) in code.match_indices("super::") {
                let next = &code[at + "super::".len()..];
                assert!(
                    steps
                        .iter()
                        .any(|step| next.starts_with(&format!("{step}::"))),
                    "{} imports from the act pipeline: {}",
                    path.display(),
                    next.lines().next().unwrap_or_default()
                );
            }
        }
    }
}
