//! Every way the shell gets a browser, behind one entry point: the
//! commands ask [`start`] (or, for an agent on stdio, [`for_stdio_agent`])
//! and get a [`Started`] browser, whatever it is.
//!
//! # Layout
//!
//! - [`options`]: the browser flags every command shares, and [`Started`]:
//!   a browser that runs (launched and supervised, connected to, or the
//!   person's own Chrome) with its shutdown.
//! - [`auto_connect`]: finding the person's running browser whose remote
//!   debugging they turned on (`--browser auto-connect`).
//! - [`profile`]: the desktop's persistent profile and its lock.
//! - [`extension`]: the person's own Chrome through the browser-shell
//!   extension (`--browser extension`): where the extension and its
//!   pairing live, the native-messaging host Chrome starts
//!   ([`extension::native_host`]) and its manifests
//!   ([`extension::install`]), and the one shell per user that holds the
//!   bridge to it ([`extension::bridge`]).
//! - [`attach`]: an agent's stdio relayed to another shell's `/mcp` (the
//!   running shell with `mcp --connect`, or the shell that holds the
//!   extension bridge).
//!
//! Nothing here imports the commands (`mcp`, `relay`, the window); they
//! import this.

pub mod attach;
pub mod auto_connect;
pub mod extension;
pub mod options;
pub mod profile;

use browser_provider::Result;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
pub use options::{Audience, Started};

/// Launches (or connects to) the browser `config` names and keeps it
/// running: the entry point of every command that shows or serves a
/// browser of its own.
///
/// # Errors
/// The browser's launch errors; in the person's own Chrome, `NOT_CONNECTED`
/// when another browser-shell holds the bridge.
pub async fn start(config: &Config, audience: Audience) -> Result<Started> {
    Started::start(config, audience).await
}

/// What an agent's `mcp` on stdio works in.
#[derive(Debug)]
pub enum AgentBrowser {
    /// A browser of its own, starting (or the person's Chrome, with the
    /// bridge held here and offered to other local shells while `offered`
    /// lives).
    Own {
        /// The extension host already bound, when in the person's Chrome;
        /// `None` when the browser is still to be started.
        bound: Option<Result<Started>>,
        /// Keeps the owner record and the server for joining shells.
        offered: Option<extension::bridge::Offered>,
    },
    /// Another browser-shell holds the person's Chrome: relay to it.
    Join(attach::Upstream),
}

/// For `mcp` on stdio: in the person's own Chrome, holds the bridge (and
/// offers it to other local shells) or joins the shell that holds it;
/// otherwise the browser is started later, while the client is answered.
///
/// # Errors
/// `INVALID_ARGUMENT` when the shell that holds the bridge runs under
/// other rules than `config`'s.
pub async fn for_stdio_agent(config: &Config, cancel: &CancellationToken) -> Result<AgentBrowser> {
    if config.browser != crate::config::BrowserKind::Extension {
        return Ok(AgentBrowser::Own {
            bound: None,
            offered: None,
        });
    }
    match extension::bridge::claim(extension::COMMAND_TIMEOUT).await {
        Ok(extension::bridge::Claim::Held(owner)) => {
            owner.check_rules(&extension::bridge::AgentRules::of(config))?;
            tracing::info!(
                pid = owner.pid,
                "another browser-shell holds the extension bridge; joining it (its settings apply)"
            );
            Ok(AgentBrowser::Join(owner.upstream()))
        }
        Ok(extension::bridge::Claim::Owner(held)) => {
            let started = Started::with_extension_host(held, config);
            let offered = extension::bridge::offer(
                &started,
                extension::bridge::OwnerKind::Mcp,
                None,
                config,
                cancel,
            )
            .await;
            Ok(AgentBrowser::Own {
                bound: Some(Ok(started)),
                offered,
            })
        }
        Err(error) => Ok(AgentBrowser::Own {
            bound: Some(Err(error)),
            offered: None,
        }),
    }
}
