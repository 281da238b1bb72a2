//! `browser-shell mcp`: the browser tools for one agent over MCP on stdio.

use std::sync::Arc;

use browser_provider::{BrowserError, Result};
use browser_tools::mcp::{BrowserStarting, McpServer};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::browser::{AgentBrowser, Audience, Started};
use crate::config::Config;

/// What shapes the agents' sessions, for every command that serves agents
/// (`mcp`, `relay`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AgentArgs {
    /// Give the agent its own cookies and storage (a separate browser context).
    #[arg(long)]
    pub isolated: bool,
    /// Cancel a tool call that runs longer than this, with TIMEOUT (default 60000).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
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

impl AgentArgs {
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

/// Arguments of `mcp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub agents: AgentArgs,
    /// Serve MCP over streamable HTTP at http://ADDR/mcp (loopback only, bearer
    /// token printed at start) instead of stdio; each MCP session is its own agent.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
}

/// Creates `outputDir` (where screenshots are also saved), if one is set.
fn create_output_dir(config: &Config) -> Result<()> {
    if let Some(dir) = &config.output_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            BrowserError::invalid("outputDir", format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    Ok(())
}

/// Serves the tools on stdin/stdout, answering the client at once while
/// the browser starts (its first call waits for it), until the client
/// disconnects or we are interrupted; then the agent's tabs are closed and
/// the browser with them. With auto-connect, a person's browser not found
/// yet is looked for again until it is (calls meanwhile say why).
///
/// In the person's own Chrome (`--browser extension`) the bridge is bound
/// first: the shell that gets it also serves its tools to other local
/// shells on loopback and records where ([`crate::browser::extension::bridge`]); a shell that
/// finds the bridge held by another browser-shell joins that one instead,
/// relaying stdio to it ([`crate::browser::attach`]).
///
/// # Errors
/// The browser's launch errors (after the handshake: the client sees the
/// server end), `INVALID_ARGUMENT` for an unusable output directory;
/// joined to another shell, `NOT_CONNECTED` when that one stops.
pub async fn run_stdio(config: &Config, cancel: &CancellationToken) -> Result<()> {
    create_output_dir(config)?;
    let (bound, offered) = match crate::browser::for_stdio_agent(config, cancel).await? {
        AgentBrowser::Join(upstream) => return crate::browser::attach::run(upstream, cancel).await,
        AgentBrowser::Own { bound, offered } => (bound, offered),
    };
    let (server, browser) = McpServer::starting(config.agent_options());
    let browser = Arc::new(browser);
    // With auto-connect, the launch goes on until the person's browser is
    // found; calls meanwhile answer why it is not there yet.
    let not_found_yet = Arc::new(std::sync::Mutex::new(None::<BrowserError>));
    let mut launch = {
        let config = config.clone();
        let browser = Arc::clone(&browser);
        let not_found_yet = Arc::clone(&not_found_yet);
        tokio::spawn(async move {
            match bound {
                Some(started) => started,
                None => {
                    Started::start_when_found(&config, Audience::AgentsOnly, |error| {
                        browser.failed(error.clone());
                        *not_found_yet.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(error.clone());
                    })
                    .await
                }
            }
        })
    };
    let service = server
        .clone()
        .serve(browser_tools::mcp::stdio::guarded())
        .await
        .map_err(|e| BrowserError::NotConnected {
            reason: format!("the MCP client did not initialize: {e}"),
        });
    let mut started: Option<Result<Started>> = None;
    let served = match service {
        Ok(service) => {
            tracing::info!("serving MCP on stdio");
            let stop = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            loop {
                tokio::select! {
                    finished = &mut waiting => {
                        if let Err(error) = finished {
                            tracing::warn!(%error, "the MCP service ended with an error");
                        }
                        break;
                    }
                    () = cancel.cancelled() => {
                        stop.cancel();
                        break;
                    }
                    joined = &mut launch, if started.is_none() => {
                        let result = joined.unwrap_or_else(|join| {
                            Err(BrowserError::LaunchFailed {
                                detail: format!("the launch did not finish: {join}"),
                            })
                        });
                        // A browser that cannot start is the answer to every
                        // call (the client shows it), until the client leaves.
                        match &result {
                            Ok(started) => browser.started(started.browser.clone()),
                            Err(error) => {
                                tracing::error!(%error, "the browser did not start");
                                browser.failed(error.clone());
                            }
                        }
                        started = Some(result);
                    }
                }
            }
            Ok(())
        }
        Err(error) => Err(error),
    };
    server.close().await;
    let started = match started {
        Some(started) => started,
        None => {
            // The client left (or never came) while the browser started or
            // was looked for: a launch cut short kills what it started; one
            // that just finished is shut down.
            launch.abort();
            match launch.await {
                Ok(started) => started,
                Err(_) => Err(not_found_yet
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                    .unwrap_or_else(|| {
                        BrowserError::not_connected("the client left before the browser started")
                    })),
            }
        }
    };
    drop(offered);
    match started {
        Ok(started) => {
            started.shutdown().await;
            served
        }
        Err(error) => Err(error),
    }
}

/// Serves the tools over streamable HTTP on `address` (loopback, with a
/// token) until interrupted. Listens and answers clients at once while the
/// browser starts (their first calls wait for it). A browser that cannot
/// start ends the server with that error; with auto-connect, a person's
/// browser not found yet is looked for again until it is (calls meanwhile
/// say why).
///
/// # Errors
/// As [`crate::http::listen`]; the browser's launch errors;
/// `INVALID_ARGUMENT` for an unusable output directory.
pub async fn run_http(
    config: &Config,
    address: std::net::SocketAddr,
    cancel: &CancellationToken,
) -> Result<()> {
    create_output_dir(config)?;
    let listening = crate::http::listen(address).await?;
    let starting = Arc::new(BrowserStarting::new());
    // With auto-connect, the launch goes on until the person's browser is
    // found; calls meanwhile answer why it is not there yet.
    let served = crate::browser::extension::bridge::Served {
        url: listening.url(),
        token: listening.token().to_owned(),
    };
    let mut launch = {
        let config = config.clone();
        let starting = Arc::clone(&starting);
        tokio::spawn(async move {
            Started::start_when_found(&config, Audience::AgentsOnly, |error| {
                starting.failed(error.clone());
            })
            .await
        })
    };
    let options = config.agent_options();
    let server_for_connection = {
        let starting = Arc::clone(&starting);
        move || starting.server(options.clone())
    };
    let serving = crate::http::serve(listening, server_for_connection, cancel);
    tokio::pin!(serving);
    let launched = tokio::select! {
        launched = &mut launch => launched,
        served = &mut serving => {
            // Stopped while the browser was starting: a launch cut short
            // kills what it started; one that just finished is shut down.
            launch.abort();
            if let Ok(Ok(started)) = launch.await {
                started.shutdown().await;
            }
            return served;
        }
    };
    let started = launched.unwrap_or_else(|join| {
        Err(BrowserError::LaunchFailed {
            detail: format!("the launch did not finish: {join}"),
        })
    });
    match started {
        Ok(started) => {
            starting.started(started.browser.clone());
            let operations = crate::operate::process_operations();
            operations.serve(started.browser.clone(), cancel.clone());
            if let Some(pool) = started.pool() {
                operations.watch_pool(Arc::clone(pool));
            }
            if let Some(host) = started.extension_host() {
                operations.watch_extension(Arc::clone(host));
            }
            tracing::info!("the browser runs; serving MCP over HTTP");
            let offered = crate::browser::extension::bridge::offer(
                &started,
                crate::browser::extension::bridge::OwnerKind::Mcp,
                Some(served),
                config,
                cancel,
            )
            .await;
            let served = serving.await;
            drop(offered);
            started.shutdown().await;
            served
        }
        Err(error) => {
            starting.failed(error.clone());
            Err(error)
        }
    }
}
