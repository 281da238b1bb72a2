//! A stdio MCP client attached to another browser-shell's `/mcp`:
//! `browser-shell mcp --connect` (the running shell or relay, found
//! through the runtime file), and a second `mcp --browser extension`
//! joining the shell that holds the extension bridge ([`crate::browser::extension::bridge`]).
//!
//! No token is copied by hand: both are found in the private runtime
//! directory. Messages are relayed unchanged in both directions between
//! stdin / stdout and the other shell's `/mcp` endpoint, so everything the
//! protocol carries — requests, results, cancellation, progress — passes
//! through, and the agent gets a session of its own in that shell.
//!
//! The relay lives as long as that shell: when its process ends, the
//! agent's MCP session ends with `NOT_CONNECTED` (and this process exits
//! non-zero); there is no failover to another shell.

use browser_provider::{BrowserError, Result};
use rmcp::RoleServer;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio_util::sync::CancellationToken;

use crate::instance;

/// The shell to attach to: where its MCP endpoint is and who runs it.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its process id: its exit ends the session.
    pub pid: u32,
    /// Its base URL on loopback (MCP is at `/mcp`).
    pub url: String,
    /// The bearer token for `/mcp`.
    pub token: String,
    /// What it is, for messages ("the running browser-shell").
    pub what: String,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("Upstream")
            .field("pid", &self.pid)
            .field("url", &self.url)
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

/// The running relay or desktop shell the runtime file names, for
/// `mcp --connect`.
///
/// # Errors
/// `NOT_CONNECTED` when none runs.
pub fn running_instance() -> Result<Upstream> {
    let info = instance::find().ok_or_else(|| {
        BrowserError::not_connected(
            "no running browser-shell found; start one with `browser-shell relay` (or the desktop shell) first",
        )
    })?;
    Ok(Upstream {
        pid: info.pid,
        url: info.url,
        token: info.token,
        what: "the running browser-shell".into(),
    })
}

/// Relays MCP between stdio and `upstream` until the agent leaves or we
/// are interrupted.
///
/// # Errors
/// `NOT_CONNECTED` when `upstream` cannot be reached, refuses a message,
/// closes the session or its process ends.
pub async fn run(upstream: Upstream, cancel: &CancellationToken) -> Result<()> {
    let Upstream {
        pid,
        url,
        token,
        what,
    } = upstream;
    let endpoint = format!("{url}/mcp");
    tracing::info!(%endpoint, pid, "attaching stdio to {what}");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| BrowserError::not_connected(format!("cannot create an HTTP client: {e}")))?;
    let mut to_shell = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(endpoint.clone()).auth_header(token),
    );
    let mut to_agent =
        AsyncRwTransport::<RoleServer, _, _>::new_server(tokio::io::stdin(), tokio::io::stdout());
    let gone = || {
        BrowserError::not_connected(format!(
            "{what} (pid {pid}) stopped, and this agent's session in it ended; \
             restart the MCP client to start a new one"
        ))
    };
    let shell_exited = instance::exited(pid);
    tokio::pin!(shell_exited);
    let outcome = loop {
        tokio::select! {
            () = cancel.cancelled() => break Ok(()),
            () = &mut shell_exited => break Err(gone()),
            from_agent = to_agent.receive() => {
                let Some(message) = from_agent else { break Ok(()) };
                if let Err(error) = to_shell.send(message).await {
                    break Err(if instance::process_alive(pid) {
                        BrowserError::not_connected(format!("{endpoint} refused a message: {error}"))
                    } else {
                        gone()
                    });
                }
            }
            from_shell = to_shell.receive() => {
                let Some(message) = from_shell else {
                    // A shell that is stopping closes its sessions before it exits.
                    let stopped = instance::wait_for_exit(pid, std::time::Duration::from_secs(2)).await;
                    break Err(if stopped {
                        gone()
                    } else {
                        BrowserError::not_connected(format!("{endpoint} closed the session"))
                    });
                };
                if let Err(error) = to_agent.send(message).await {
                    tracing::debug!(%error, "the agent went away");
                    break Ok(());
                }
            }
        }
    };
    // Ending the MCP session closes the agent's tabs in the shell.
    if outcome.is_ok()
        && let Err(error) = to_shell.close().await
    {
        tracing::debug!(%error, "closing the MCP session");
    }
    outcome
}
