//! `browser-shell mcp --connect`: a stdio MCP client attached to the
//! running shell or relay.
//!
//! The instance is found through the runtime file (no token copied by
//! hand). Messages are relayed unchanged in both directions between stdin
//! / stdout and the instance's `/mcp` endpoint, so everything the protocol
//! carries — requests, results, cancellation, progress — passes through,
//! and the agent gets a session in the shell the person is watching.

use browser_provider::{BrowserError, Result};
use rmcp::RoleServer;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio_util::sync::CancellationToken;

use crate::instance;

/// Relays MCP between stdio and the running instance until either side
/// closes or we are interrupted.
///
/// # Errors
/// `NOT_CONNECTED` when no instance runs or it cannot be reached.
pub async fn run(cancel: &CancellationToken) -> Result<()> {
    let info = instance::find().ok_or_else(|| {
        BrowserError::not_connected(
            "no running browser-shell found; start one with `browser-shell relay` (or the desktop shell) first",
        )
    })?;
    let endpoint = format!("{}/mcp", info.url);
    tracing::info!(%endpoint, pid = info.pid, "attaching stdio to the running instance");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| BrowserError::not_connected(format!("cannot create an HTTP client: {e}")))?;
    let mut upstream = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(endpoint.clone()).auth_header(info.token),
    );
    let mut downstream =
        AsyncRwTransport::<RoleServer, _, _>::new_server(tokio::io::stdin(), tokio::io::stdout());
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            from_agent = downstream.receive() => {
                let Some(message) = from_agent else { break };
                if let Err(error) = upstream.send(message).await {
                    return Err(BrowserError::not_connected(format!("{endpoint} refused a message: {error}")));
                }
            }
            from_shell = upstream.receive() => {
                let Some(message) = from_shell else {
                    return Err(BrowserError::not_connected(format!("{endpoint} closed the session")));
                };
                if let Err(error) = downstream.send(message).await {
                    tracing::debug!(%error, "the agent went away");
                    break;
                }
            }
        }
    }
    // Ending the MCP session closes the agent's tabs in the shell.
    if let Err(error) = upstream.close().await {
        tracing::debug!(%error, "closing the MCP session");
    }
    Ok(())
}
