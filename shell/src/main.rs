//! `browser-shell`: a real Chromium for AI agents that a person can watch
//! and take over.
//!
//! This binary only glues: it parses the command line, starts (or connects
//! to) the browser through `browser-provider`, and runs a command from
//! `browser-tools`. The desktop window, the relay and the MCP server join
//! here as later subcommands.

mod auth;
mod config;
mod demo;
mod http;
mod mcp;
mod options;
mod relay;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use browser_tools::{cli, report};
use options::BrowserOptions;

/// A real Chromium for AI agents that a person can watch and take over.
#[derive(Debug, Parser)]
#[command(name = "browser-shell", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open a URL in Chromium and print its content (markdown, html, txt or json),
    /// optionally saving a screenshot.
    ///
    /// Example: browser-shell fetch https://example.org --format json --screenshot page.png
    Fetch {
        #[command(flatten)]
        fetch: cli::FetchArgs,
        #[command(flatten)]
        browser: BrowserOptions,
    },
    /// Serve the browser_* tools to one agent over MCP on stdin/stdout.
    ///
    /// Launches its own Chromium (headless unless --headed), or uses a running
    /// one with --connect. The agent's tabs close when it disconnects.
    /// Example client config: {"command": "browser-shell", "args": ["mcp"]}
    Mcp {
        #[command(flatten)]
        mcp: mcp::McpArgs,
        #[command(flatten)]
        browser: BrowserOptions,
    },
    /// Run headless and serve the browser column to people's own browsers.
    ///
    /// Prints the viewer URL (with its token) on a line of its own, a
    /// view-only link, and the MCP-over-HTTP endpoint on the same port.
    Relay {
        /// Where to listen. Other than loopback only on purpose; the token is still required.
        #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
        listen: std::net::SocketAddr,
        #[command(flatten)]
        mcp: mcp::McpArgs,
        #[command(flatten)]
        browser: BrowserOptions,
    },
    /// Offline demo: serve the bundled fixtures on 127.0.0.1, turn the
    /// article page into markdown and save a screenshot of it.
    Demo {
        #[command(flatten)]
        demo: demo::DemoArgs,
        #[command(flatten)]
        browser: BrowserOptions,
    },
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    let cancel = CancellationToken::new();
    {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            wait_for_stop_signal().await;
            tracing::info!("interrupted; stopping");
            cancel.cancel();
        });
    }
    let (browser_options, outcome) = match &cli.command {
        Command::Fetch { fetch, browser } => (browser, Job::Fetch(fetch)),
        Command::Demo { demo, browser } => (browser, Job::Demo(demo)),
        Command::Mcp { mcp, browser } => (browser, Job::Mcp(mcp)),
        Command::Relay {
            listen,
            mcp,
            browser,
        } => (browser, Job::Relay(*listen, mcp)),
    };
    let mut config = match browser_options.resolve() {
        Ok(config) => config,
        Err(error) => return fail(&error),
    };
    if let Job::Mcp(args) | Job::Relay(_, args) = &outcome {
        args.apply(&mut config);
        if let Err(error) = config.validate() {
            return fail(&error);
        }
    }
    if browser_options.print_config {
        use std::io::Write;
        let _ = std::io::stdout().write_all(config.to_toml().as_bytes());
        return ExitCode::SUCCESS;
    }
    let started = match options::Started::start(&config).await {
        Ok(started) => started,
        Err(error) => return fail(&error),
    };
    let result = match outcome {
        Job::Fetch(args) => cli::fetch(&started.browser, args, &cancel)
            .await
            .map(|fetched| {
                if let Err(error) = cli::print_fetched(&fetched) {
                    tracing::warn!(%error, "cannot write the output");
                }
            }),
        Job::Demo(args) => demo::run(&started.browser, args, &cancel).await,
        Job::Mcp(args) => mcp::run(&started, &config, args.http, &cancel).await,
        Job::Relay(listen, _) => {
            relay::serve(
                started.browser.clone(),
                mcp::agent_options(&config),
                listen,
                &cancel,
            )
            .await
        }
    };
    started.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

enum Job<'a> {
    Fetch(&'a cli::FetchArgs),
    Demo(&'a demo::DemoArgs),
    Mcp(&'a mcp::McpArgs),
    Relay(std::net::SocketAddr, &'a mcp::McpArgs),
}

fn fail(error: &browser_provider::BrowserError) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", report::render(error));
    ExitCode::from(report::exit_status(error))
}

/// Resolves on Ctrl+C (SIGINT) or SIGTERM, so both shut down in order:
/// sessions end, Chromium exits, the temporary profile is removed.
async fn wait_for_stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Logs go to stderr (stdout carries results); `RUST_LOG` sets the level.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
