//! `--browser auto-connect`: agents work in the person's running Chrome,
//! Chromium or Edge whose remote debugging the person turned on
//! (`chrome://inspect/#remote-debugging` in Chrome 144+, or a browser
//! started with `--remote-debugging-port`).
//!
//! Where to look: a configured profile directory (`--profile DIR`,
//! `profileDir`) is the one user data directory searched; else the
//! directories in `BROWSER_SHELL_AUTO_CONNECT_DIRS`; else the usual ones of
//! this system. The provider's supervisor searches again on every
//! (re)connection, so the person's browser may quit and come back.
//!
//! Scope: agents see and drive only the tabs they open; the person's own
//! tabs are never adopted (see `options::Started::start`). `isolated`
//! sessions get a browser context of their own (`Target.createBrowserContext`
//! works over a connection to the person's browser), without the person's
//! cookies. The shell's CDP endpoint is refused: it would hand the whole
//! browser to its clients.

use std::time::Duration;

use browser_provider::host::Launcher;
use browser_provider::host::active_port::{self, SearchPath};

use crate::config::Config;

/// Bound for each CDP command, and for the person to allow the
/// connection when their browser asks.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The directories to search, as the configuration says (see the module docs).
pub fn search(config: &Config) -> SearchPath {
    match &config.profile_dir {
        Some(dir) => SearchPath::dirs([dir.clone()]),
        None => SearchPath::standard(),
    }
}

/// The supervisor's way to the person's browser.
pub fn launcher(config: &Config) -> Launcher {
    Launcher::AutoConnect {
        search: search(config),
        command_timeout: COMMAND_TIMEOUT,
    }
}

/// What `doctor` says: `Ok` with the browser found, or `Err` with what
/// was searched and the fix.
pub async fn diagnose(config: &Config) -> Result<String, (String, String)> {
    let discovery = active_port::discover(&search(config)).await;
    match &discovery.found {
        Some(found) => Ok(format!(
            "auto-connect finds {found}; agents will see only the tabs they open \
             (the browser may ask the person to allow the connection)"
        )),
        None => {
            let error = discovery.not_found();
            Err((error.to_string(), error.hint().to_owned()))
        }
    }
}
