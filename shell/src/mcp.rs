//! `browser-shell mcp`: the browser tools for one agent over MCP on stdio.

use std::time::Duration;

use browser_provider::{BrowserError, Result};
use browser_tools::mcp::{McpServer, ServerOptions};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::options::Started;

/// Arguments of `mcp`.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// Give the agent its own cookies and storage (a separate browser context).
    #[arg(long)]
    pub isolated: bool,
    /// Cancel a tool call that runs longer than this, with TIMEOUT.
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    pub timeout_ms: u64,
    /// Do not offer browser_list_tabs, browser_switch_tab, browser_close_tab.
    #[arg(long)]
    pub no_tab_tools: bool,
    /// Do not offer browser_execute (no arbitrary JavaScript).
    #[arg(long)]
    pub no_execute: bool,
}

/// Serves the tools on stdin/stdout until the client disconnects or we are
/// interrupted; then the agent's tabs are closed.
pub async fn run(started: &Started, args: &McpArgs, cancel: &CancellationToken) -> Result<()> {
    if args.timeout_ms == 0 {
        return Err(BrowserError::invalid("timeout-ms", "must be at least 1"));
    }
    let server = McpServer::new(
        started.browser.clone(),
        ServerOptions {
            isolated: args.isolated,
            call_timeout: Duration::from_millis(args.timeout_ms),
            tab_tools: !args.no_tab_tools,
            execute_enabled: !args.no_execute,
        },
    );
    let service = server
        .clone()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| BrowserError::NotConnected {
            reason: format!("the MCP client did not initialize: {e}"),
        })?;
    tracing::info!("serving MCP on stdio");
    let stop = service.cancellation_token();
    tokio::select! {
        finished = service.waiting() => {
            if let Err(error) = finished {
                tracing::warn!(%error, "the MCP service ended with an error");
            }
        }
        () = cancel.cancelled() => stop.cancel(),
    }
    server.close().await;
    Ok(())
}
