//! `browser-shell mcp`: the browser tools for one agent over MCP on stdio.

use browser_provider::{BrowserError, Result};
use browser_tools::agent::AgentOptions;
use browser_tools::mcp::McpServer;
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::options::Started;

/// Arguments of `mcp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct McpArgs {
    /// Give the agent its own cookies and storage (a separate browser context).
    #[arg(long)]
    pub isolated: bool,
    /// Cancel a tool call that runs longer than this, with TIMEOUT (default 60000).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Serve MCP over streamable HTTP at http://ADDR/mcp (loopback only, bearer
    /// token printed at start) instead of stdio; each MCP session is its own agent.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// End an agent session (closing its tabs) after this long without a tool call (default 600000).
    #[arg(long, value_name = "MS")]
    pub lease_ms: Option<u64>,
    /// Also save every screenshot as a file in this directory.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<std::path::PathBuf>,
    /// Do not offer browser_list_tabs, browser_switch_tab, browser_close_tab.
    #[arg(long)]
    pub no_tab_tools: bool,
    /// Do not offer browser_execute (no arbitrary JavaScript).
    #[arg(long)]
    pub no_execute: bool,
}

impl McpArgs {
    /// Puts these flags on top of the configuration.
    pub fn apply(&self, config: &mut Config) {
        config.isolated |= self.isolated;
        if let Some(timeout) = self.timeout_ms {
            config.timeout_ms = timeout;
        }
        if let Some(lease) = self.lease_ms {
            config.session_lease_ms = lease;
        }
        if let Some(dir) = &self.output_dir {
            config.output_dir = Some(dir.clone());
        }
        config.tab_tools &= !self.no_tab_tools;
        config.execute_enabled &= !self.no_execute;
    }
}

/// The tool options a configuration asks for.
pub fn agent_options(config: &Config) -> AgentOptions {
    AgentOptions {
        isolated: config.isolated,
        call_timeout: config.call_timeout(),
        tab_tools: config.tab_tools,
        execute_enabled: config.execute_enabled,
        output_dir: config.output_dir.clone(),
        lease: std::time::Duration::from_millis(config.session_lease_ms),
        secrets: config.secrets.clone(),
    }
}

/// Serves the tools on stdin/stdout until the client disconnects or we are
/// interrupted; then the agent's tabs are closed.
pub async fn run(
    started: &Started,
    config: &Config,
    http: Option<std::net::SocketAddr>,
    cancel: &CancellationToken,
) -> Result<()> {
    if let Some(dir) = &config.output_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            BrowserError::invalid("outputDir", format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    let options = agent_options(config);
    if let Some(address) = http {
        return crate::http::serve(started.browser.clone(), options, address, cancel).await;
    }
    let server = McpServer::new(started.browser.clone(), options);
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
