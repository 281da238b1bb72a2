//! `browser-shell`: a real Chromium for AI agents that a person can watch
//! and take over.
//!
//! This binary only glues: it parses the command line, starts (or connects
//! to) the browser through `browser-provider`, and runs a command from
//! `browser-tools` — here, over MCP, in the relay, or (the tool commands)
//! in a running instance through [`client`].
//!
//! # Layout
//!
//! - [`browser`]: every way to get a browser, behind one entry point
//!   (launched and supervised, connected to, the person's running browser,
//!   the person's own Chrome through the extension with its native
//!   messaging host and bridge, another shell's joined over MCP).
//! - The commands: [`mcp`] (stdio and streamable HTTP), [`people`] (relay
//!   or desktop window for people: [`relay`], [`desktop`]),
//!   [`tool_commands`] and [`client`] (the command line against a running
//!   instance, through [`cli_endpoint`]), [`doctor`], [`demo`].
//! - What the commands share: [`config`] and [`secrets`] (what a person
//!   sets), [`instance`] (the runtime file that finds a running shell),
//!   [`http`] and [`auth`] (the loopback MCP endpoint and its token),
//!   [`cdp_endpoint`] (Playwright and Puppeteer attach), [`usage`] (idle
//!   exit), [`platform`] (what differs between operating systems).

mod auth;
mod browser;
mod cdp_endpoint;
mod cli_endpoint;
mod client;
mod config;
mod demo;
mod desktop;
mod doctor;
mod http;
mod instance;
mod mcp;
mod operate;
mod people;
mod platform;
mod relay;
mod secrets;
mod tool_commands;
mod usage;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use browser::options::{self, BrowserOptions};
use browser::{attach, extension, profile};
use browser_tools::commands::ToolCommand;
use browser_tools::{cli, report};
use instance::InstanceKind;

/// The version and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BROWSER_SHELL_COMMIT"),
    ")"
);

/// A real Chromium for AI agents that a person can watch and take over.
///
/// Without a command it opens the desktop window (the relay where there
/// is no display), on URL if given. Agents use it over MCP (`mcp`; with
/// `mcp --connect` inside the running window or relay); people watch and
/// take over in their own browser (`relay`); the tool commands (`open`,
/// `snapshot`, `act`, …) drive one persistent session from a shell: the
/// first of them starts a headless background instance that later
/// commands reuse and that exits when unused (or they use a running
/// window or relay).
///
/// Examples:
///   browser-shell open https://example.org
///   browser-shell act click e3
///   browser-shell content --format markdown
///   browser-shell mcp
///   browser-shell relay
///   browser-shell https://example.org
#[derive(Debug, Parser)]
#[command(
    name = "browser-shell",
    version = VERSION,
    about,
    verbatim_doc_comment,
    override_usage = "browser-shell [OPTIONS] [URL]\n       browser-shell [OPTIONS] <COMMAND>"
)]
struct Cli {
    /// What to do; without one, start the shell for a person (the relay
    /// where there is no display).
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a command: the http(s) URL the shell opens first (default:
    /// the start page).
    #[arg(value_name = "URL")]
    url: Option<String>,
    /// Without a command: also serve an authenticated CDP endpoint
    /// (loopback) for Playwright, Puppeteer and other CDP clients.
    #[arg(long)]
    cdp_endpoint: bool,
    /// What CDP endpoint clients may see and drive: `own` (default) their
    /// own targets and the person's tabs, agents' tabs invisible; `full`
    /// every tab, the agents' included.
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        help_heading = "Browser options (for the browser a command starts)",
        value_enum,
        default_value_t = cdp_endpoint::Scope::Own
    )]
    cdp_endpoint_scope: cdp_endpoint::Scope,
    #[command(flatten)]
    browser: BrowserOptions,
    #[command(flatten)]
    client: ClientOptions,
    /// How diagnostics on stderr look: `text` for people, `json` (one
    /// object per line) for log shippers. `RUST_LOG` sets the level.
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        value_enum,
        default_value_t = LogFormat::Text,
        help_heading = "Logging"
    )]
    log_format: LogFormat,
}

/// How diagnostics are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Lines for people.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Options of the tool commands (open, snapshot, act, …).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Tool command options")]
struct ClientOptions {
    /// Tool commands: print one JSON object ({"ok", "text", "code", "file"}) instead of text.
    #[arg(long, global = true, hide_short_help = true)]
    json: bool,
    /// Tool commands: a background instance they start exits after this long unused.
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        value_name = "MS",
        default_value_t = 600_000,
        env = "BROWSER_SHELL_IDLE_EXIT_MS"
    )]
    idle_exit_ms: u64,
    /// Tool commands: keep the markers around the page's words that tell a
    /// model they are not instructions (for agents that use the command
    /// line); by default the page's words are printed as they are, so they pipe.
    #[arg(long, global = true, hide_short_help = true)]
    fences: bool,
    /// Tool commands, status, stop, report: the running instance to use, by
    /// pid or kind (window, relay, background); default: the window a
    /// person watches, else a relay, else a background instance.
    #[arg(long, global = true, hide_short_help = true, value_name = "PID|KIND")]
    instance: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    #[command(flatten)]
    Tool(ToolCommand),
    /// Show every running instance and which one tool commands use.
    ///
    /// Kind, pid, address and viewer link of each: the window a person
    /// watches first, then relays, then the background instance.
    Status,
    /// Check what browser-shell needs here and say what to fix.
    ///
    /// One line each: the browser, the display and the window, the runtime
    /// directory, a running instance, the config file. Exit status 0 when
    /// all is well.
    Doctor,
    /// Work in the person's own Chrome: install, pair or find the extension.
    ///
    /// Install the native messaging host (or pair this shell with the
    /// browser-shell extension there), or find the extension to load it.
    /// Agents then work in the tabs the person shares with them:
    /// `mcp --browser extension`.
    #[command(subcommand)]
    Extension(extension::ExtensionCommand),
    /// The native messaging host: what Chrome starts for the browser-shell
    /// extension (`extension install` writes the manifest that names it).
    /// Not for direct use: it speaks Chrome's framing on stdin/stdout.
    #[command(hide = true)]
    NativeHost {
        /// The extension's origin, as Chrome passes it.
        origin: String,
        /// What Chrome passes after it (`--parent-window=…` on Windows).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<String>,
    },
    /// Print the completion script for a shell.
    ///
    /// Example: browser-shell completions bash > ~/.local/share/bash-completion/completions/browser-shell
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), as packages install it.
    #[command(hide = true)]
    Man,
    /// Stop the background instance the tool commands started.
    Stop,
    /// Save the running instance's activity as one HTML report.
    ///
    /// The timeline with pictures of the page before and after each call,
    /// results, errors, when the person stepped in, the tabs. It opens
    /// offline in any browser; typed text and secrets are not in it.
    ///
    /// Example: browser-shell report s1 -o session.html
    Report {
        /// Only this agent session's calls (such as s1; see the column's
        /// tab strip); default: every session's.
        session: Option<String>,
        /// Where to save it.
        #[arg(
            short,
            long,
            value_name = "FILE",
            default_value = "browser-shell-report.html"
        )]
        output: std::path::PathBuf,
    },
    /// Open a URL once and print its content (markdown, html, txt or json).
    ///
    /// Optionally saves a screenshot. One-shot: its own browser, nothing kept.
    ///
    /// Example: browser-shell fetch https://example.org --format json --screenshot page.png
    Fetch {
        #[command(flatten)]
        fetch: cli::FetchArgs,
    },
    /// Serve the browser_* tools to one agent over MCP on stdin/stdout.
    ///
    /// Launches its own Chromium (headless unless --headed), or uses a running
    /// one: `--connect` alone attaches to the running browser-shell (relay or
    /// desktop, found in the per-user runtime file) so a person can watch;
    /// `--connect ENDPOINT` drives any CDP endpoint. The agent's tabs close
    /// when it disconnects.
    ///
    /// With --browser extension (the person's own Chrome) one shell per
    /// user holds the extension bridge. It also serves its tools to other
    /// local shells on loopback and says where in the runtime directory
    /// (extension-bridge.json). A second `mcp --browser extension` (another
    /// MCP client with the same flags) joins it: its agent gets a session,
    /// and a tab group in Chrome, of its own there, with the first shell's
    /// settings. When the shell holding the bridge exits, the sessions
    /// joined to it end with NOT_CONNECTED: restart those clients.
    ///
    /// Example client config: {"command": "browser-shell", "args": ["mcp"]}
    Mcp {
        #[command(flatten)]
        mcp: mcp::McpArgs,
    },
    /// Run headless and serve the browser column to people's own browsers.
    ///
    /// Prints the viewer URL (with its token) on a line of its own, a
    /// view-only link, and the MCP-over-HTTP endpoint on the same port.
    /// Tool commands (open, act, …) run in it while it runs. With
    /// --browser extension it holds the extension bridge, and agents of
    /// `mcp --browser extension` join it; it does not start when another
    /// browser-shell holds the bridge (the error names that one's pid).
    Relay {
        /// Where to listen. Other than loopback only on purpose: then with
        /// --tls-cert/--tls-key (or --insecure-no-tls); the token is always required.
        #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
        listen: std::net::SocketAddr,
        /// Serve HTTPS with this certificate chain (PEM).
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// Allow plain HTTP on a non-loopback address (only behind a trusted
        /// network or an SSH tunnel: the token crosses the network in clear text).
        #[arg(long, conflicts_with = "tls_cert")]
        insecure_no_tls: bool,
        /// The http(s) URL to open first (default: the start page).
        #[arg(value_name = "URL")]
        url: Option<String>,
        /// Also serve an authenticated CDP endpoint on loopback (printed as
        /// `CDP endpoint: ws://…`) that Playwright's connectOverCDP and
        /// Puppeteer's connect take as is.
        #[arg(long)]
        cdp_endpoint: bool,
        /// Let pages of this origin (such as https://harness.example) show
        /// the column in a frame; by default no page may frame it.
        #[arg(long, value_name = "ORIGIN", value_parser = parse_origin)]
        embed_origin: Option<String>,
        /// This shell's name among several behind one balancer (HAProxy's
        /// server name): viewer links carry node=NAME and answers set the
        /// browser_shell_node cookie, so a person's viewer reaches the shell
        /// that holds its sessions. Give every shell of a team the same
        /// BROWSER_SHELL_TOKEN (and BROWSER_SHELL_VIEW_TOKEN) in its
        /// environment so one token lets a client in on any of them.
        #[arg(long, value_name = "NAME", env = "BROWSER_SHELL_NODE")]
        node: Option<String>,
        #[command(flatten)]
        agents: mcp::AgentArgs,
    },
    /// The desktop window (what `browser-shell` alone opens where there is
    /// a display). Not for direct use.
    #[command(hide = true)]
    Desktop {
        /// The http(s) URL to open first.
        url: Option<String>,
        /// Also serve the CDP endpoint.
        #[arg(long)]
        cdp_endpoint: bool,
    },
    /// The instance tool commands start on demand (a loopback relay that
    /// exits when unused). Not for direct use.
    #[command(hide = true)]
    Background {
        /// Exit after this long without a request, viewer or tool call.
        #[arg(long, value_name = "MS", default_value_t = 600_000)]
        exit_when_idle_ms: u64,
    },
    /// Show that it works here, offline: a page as markdown and a screenshot.
    ///
    /// Serves the demo pages installed with browser-shell on 127.0.0.1,
    /// turns the article page into markdown and saves a screenshot of it.
    Demo {
        #[command(flatten)]
        demo: demo::DemoArgs,
    },
}

/// `browser-shell extension …`: prints what the person needs.
fn extension_command(
    command: &extension::ExtensionCommand,
    options: &options::BrowserOptions,
) -> ExitCode {
    // Only pairing reads the configuration (its `extensionPort`).
    let answer = extension::run(command, || {
        options.resolve().map(|config| config.extension_port)
    });
    match answer {
        Ok(text) => print_bytes(format!("{text}\n").as_bytes()),
        Err(error) => fail(&error),
    }
}

/// Chrome starts the native messaging host with the caller's origin as
/// its first argument (and, on Windows, `--parent-window=…` after it).
fn native_host_origin() -> Option<String> {
    let first = std::env::args_os().nth(1)?.into_string().ok()?;
    first.starts_with("chrome-extension://").then_some(first)
}

/// `browser-shell native-host`: the bridge Chrome starts for the extension.
fn native_host(origin: String) -> ExitCode {
    // Protocol frames own stdout: logs go to stderr, which Chrome keeps.
    if let Err(error) = init_logging(None, LogFormat::Text) {
        return fail(&error);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "no runtime");
            return ExitCode::FAILURE;
        }
    };
    let socket = match extension::native_socket() {
        Ok(socket) => socket,
        Err(error) => {
            tracing::error!(%error, "no runtime directory");
            return ExitCode::FAILURE;
        }
    };
    let ended = runtime.block_on(extension::native_host::run(origin, &socket));
    // Stdin is read on a blocking thread that a runtime waits for when it
    // is dropped, and Chrome keeps the pipe open: without this the host
    // would outlive the bridge until the extension next wrote to it, and
    // Chrome would not see the port close (nor the extension reconnect).
    runtime.shutdown_background();
    match ended {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error, "the native messaging host stopped");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    if let Some(origin) = native_host_origin() {
        return native_host(origin);
    }
    let cli = Cli::parse();
    // The host sets up its own logging (stdout is Chrome's) and runtime:
    // both can be set up once per process.
    if let Some(Command::NativeHost { origin, .. }) = &cli.command {
        return native_host(origin.clone());
    }
    if let Err(error) = init_logging(cli.browser.audit_log.as_deref(), cli.log_format) {
        return fail(&error);
    }
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
    let status = runtime.block_on(run(cli));
    // A read of stdin that never returns (an MCP relay whose upstream went
    // away while the agent is quiet) must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_secs(1));
    status
}

async fn run(cli: Cli) -> ExitCode {
    let cancel = CancellationToken::new();
    // A second desktop on our profile asks us to bring our window to the
    // front. Taken first thing: the signal's default action would end us.
    let raise_requests = platform::signals::RaiseRequests::listen();
    {
        // SIGTERM (or Ctrl+C) drains: no new sessions, readiness 503, the
        // calls under way finish within DRAIN_BOUND; a second one stops at once.
        let cancel = cancel.clone();
        tokio::spawn(async move {
            platform::signals::stop_requested().await;
            let operations = operate::process_operations();
            operations.start_draining();
            tokio::select! {
                _ = operations.calls_finished(operate::DRAIN_BOUND) => {}
                () = platform::signals::stop_requested() => {
                    tracing::info!("interrupted again; stopping now");
                }
            }
            tracing::info!("stopping");
            cancel.cancel();
        });
    }
    // A word that is neither a command nor a URL is most likely a mistyped command.
    if cli.command.is_none()
        && let Some(word) = cli.url.as_deref()
        && !word.contains(':')
    {
        return fail(&browser_provider::BrowserError::invalid(
            "command",
            format!(
                "{word:?} is neither a command nor a URL; see `browser-shell --help` for the commands, \
                 and give URLs with their scheme (https://…)"
            ),
        ));
    }
    let command = cli
        .command
        .unwrap_or_else(|| default_command(cli.url.clone(), cli.cdp_endpoint));
    let outcome = match &command {
        Command::Tool(command) => {
            let (browser, host_rules) = cli.browser.without_host_rules();
            let start = client::StartOptions {
                browser_args: browser.to_args(),
                idle_exit: Duration::from_millis(cli.client.idle_exit_ms),
            };
            let output = tool_commands::Output {
                json: cli.client.json,
                fences: cli.client.fences,
            };
            return tool_commands::run(
                command,
                cli.client.instance.as_deref(),
                &start,
                &host_rules,
                output,
            )
            .await;
        }
        Command::Status => return tool_commands::status(cli.client.json),
        Command::Doctor => return doctor::run(&cli.browser).await,
        Command::Extension(command) => return extension_command(command, &cli.browser),
        // Run by `main` before logging and the runtime are set up.
        Command::NativeHost { .. } => {
            return fail(&browser_provider::BrowserError::invalid(
                "command",
                "native-host runs before the runtime starts",
            ));
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(
                *shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "browser-shell",
                &mut script,
            );
            return print_bytes(&script);
        }
        Command::Man => {
            let mut page = Vec::new();
            let rendered =
                clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut page);
            if let Err(error) = rendered {
                tracing::error!(%error, "cannot render the manual page");
                return ExitCode::FAILURE;
            }
            return print_bytes(&page);
        }
        Command::Stop => {
            return tool_commands::stop(cli.client.instance.as_deref(), cli.client.json).await;
        }
        Command::Report { session, output } => {
            return tool_commands::report(
                cli.client.instance.as_deref(),
                session.as_deref(),
                output,
                cli.client.json,
            )
            .await;
        }
        Command::Fetch { fetch } => Job::Fetch(fetch),
        Command::Demo { demo } => Job::Demo(demo),
        Command::Mcp { mcp } => Job::Mcp(mcp),
        Command::Desktop { url, cdp_endpoint } => Job::Desktop(people::ForPeople {
            url: url.as_deref(),
            cdp_endpoint: *cdp_endpoint,
            cdp_scope: cli.cdp_endpoint_scope,
        }),
        Command::Relay {
            listen,
            tls_cert,
            tls_key,
            insecure_no_tls,
            url,
            cdp_endpoint,
            embed_origin,
            node,
            agents,
        } => Job::Relay(
            relay::RelaySetup {
                listen: *listen,
                tls: tls_cert
                    .clone()
                    .zip(tls_key.clone())
                    .map(|(cert, key)| relay::TlsFiles { cert, key }),
                insecure_no_tls: *insecure_no_tls,
                kind: InstanceKind::Relay,
                exit_when_idle: None,
                cdp_endpoint: None,
                embed_origin: embed_origin.clone(),
                node: node.clone(),
            },
            agents,
            people::ForPeople {
                url: url.as_deref(),
                cdp_endpoint: *cdp_endpoint,
                cdp_scope: cli.cdp_endpoint_scope,
            },
        ),
        Command::Background { exit_when_idle_ms } => Job::Relay(
            relay::RelaySetup {
                listen: std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
                tls: None,
                insecure_no_tls: false,
                kind: InstanceKind::Background,
                exit_when_idle: Some(Duration::from_millis(*exit_when_idle_ms)),
                cdp_endpoint: None,
                embed_origin: None,
                node: None,
            },
            &DEFAULT_AGENT_ARGS,
            people::ForPeople::default(),
        ),
    };
    let mut config = match cli.browser.resolve() {
        Ok(config) => config,
        Err(error) => return fail(&error),
    };
    if let Job::Relay(setup, ..) = &outcome
        && let Err(error) = setup.check()
    {
        return fail(&error);
    }
    // A refused first URL fails now, before Chromium starts.
    if let Some(url) = outcome.first_url()
        && let Err(error) = config.browser_config().policy.check(url)
    {
        return fail(&error);
    }
    let agent_args = match &outcome {
        Job::Mcp(args) => Some(&args.agents),
        Job::Relay(_, args, _) => Some(*args),
        _ => None,
    };
    if let Some(args) = agent_args {
        args.apply(&mut config);
        if let Err(error) = config.validate() {
            return fail(&error);
        }
    }
    // The CDP endpoint would hand the person's whole browser (every tab of
    // theirs) to its clients; refused before anything connects to it.
    if config.browser == config::BrowserKind::AutoConnect && outcome.serves_cdp_endpoint() {
        return fail(&browser_provider::BrowserError::invalid(
            "cdp-endpoint",
            "the CDP endpoint is not offered with --browser auto-connect: it would reach every tab \
             of the person's browser, not only the agents' own",
        ));
    }
    // The desktop renders for the screen it is on, as GTK is told to.
    if matches!(outcome, Job::Desktop(_)) && config.device_scale_factor.is_none() {
        config.device_scale_factor = std::env::var("GDK_SCALE")
            .ok()
            .and_then(|scale| scale.trim().parse::<f64>().ok())
            .filter(|scale| (1.0..=3.0).contains(scale));
    }
    // The desktop keeps the person's profile (their sign-ins) between runs.
    let _profile_claim = match &outcome {
        Job::Desktop(_) => match keep_desktop_profile(&mut config, cli.browser.temporary_profile) {
            Ok(claim) => claim,
            Err(error) => return fail(&error),
        },
        _ => None,
    };
    if cli.browser.print_config {
        use std::io::Write;
        let _ = std::io::stdout().write_all(config.to_toml().as_bytes());
        return ExitCode::SUCCESS;
    }
    if let Job::Mcp(args) = &outcome
        && config.connect.as_deref() == Some(options::RUNNING_SHELL)
    {
        if args.http.is_some() {
            return fail(&browser_provider::BrowserError::invalid(
                "connect",
                "--http serves a browser of its own; the running shell already serves MCP over HTTP",
            ));
        }
        let upstream = match attach::running_instance() {
            Ok(upstream) => upstream,
            Err(error) => return fail(&error),
        };
        return match attach::run(upstream, &cancel).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => fail(&error),
        };
    }
    // MCP answers its clients at once; the browser starts meanwhile.
    if let Job::Mcp(args) = &outcome {
        let served = match args.http {
            None => mcp::run_stdio(&config, &cancel).await,
            Some(address) => mcp::run_http(&config, address, &cancel).await,
        };
        return match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => fail(&error),
        };
    }
    // A person's shell listens first (a port in use fails before Chromium
    // starts), and the desktop's window opens on the column while Chromium
    // starts: its requests wait in the listener's queue.
    let mut window = None;
    let for_people = match &outcome {
        Job::Relay(setup, _, people) => Some((setup.clone(), *people)),
        Job::Desktop(people) => Some((
            relay::RelaySetup {
                listen: std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
                tls: None,
                insecure_no_tls: false,
                kind: InstanceKind::Desktop,
                exit_when_idle: None,
                cdp_endpoint: None,
                embed_origin: None,
                node: None,
            },
            *people,
        )),
        Job::Fetch(_) | Job::Demo(_) | Job::Mcp(_) => None,
    };
    let mut listening = None;
    if let Some((setup, people)) = for_people {
        match relay::listen(setup).await {
            Ok(listened) => listening = Some((listened, people)),
            Err(error) => return fail(&error),
        }
    }
    if let (Job::Desktop(_), Some((listened, _))) = (&outcome, &listening) {
        // Pages take the size of the window's picture area.
        let column = format!("{}&fit=1", listened.viewer_url());
        window = Some(desktop::open(&column, cancel.clone(), raise_requests));
    }
    // A background instance (started for tool commands) is watched only
    // if someone opens its link: no start page nobody would see.
    let background =
        matches!(&outcome, Job::Relay(setup, ..) if setup.kind == InstanceKind::Background);
    let audience = match listening {
        Some(_) if !background => options::Audience::People,
        _ => options::Audience::AgentsOnly,
    };
    let started = match browser::start(&config, audience).await {
        Ok(started) => started,
        Err(error) => return fail(&error),
    };
    let result = match (listening, outcome) {
        (Some((listening, people)), _) => {
            people::serve(&started, &config, listening, people, &cancel).await
        }
        (None, Job::Fetch(args)) => {
            cli::fetch(&started.browser, args, &cancel)
                .await
                .map(|fetched| {
                    if let Err(error) = cli::print_fetched(&fetched) {
                        tracing::warn!(%error, "cannot write the output");
                    }
                })
        }
        (None, Job::Demo(args)) => demo::run(&started.browser, args, &cancel).await,
        // MCP was served above, its browser started beside it.
        (None, Job::Mcp(_)) => Ok(()),
        // A person's shell has listened above.
        (None, Job::Relay(..) | Job::Desktop(_)) => Ok(()),
    };
    drop(window);
    started.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

/// `browser-shell` alone: the shell for a person. That is the desktop
/// window where there is a display (and the window program is installed),
/// else the relay, said in one line.
fn default_command(url: Option<String>, cdp_endpoint: bool) -> Command {
    let why = match desktop::available() {
        Ok(_) => return Command::Desktop { url, cdp_endpoint },
        Err(why) => why,
    };
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "browser-shell: {why}; starting the relay: open the first link below in your browser."
        );
    }
    Command::Relay {
        listen: std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
        tls_cert: None,
        tls_key: None,
        insecure_no_tls: false,
        url,
        cdp_endpoint,
        embed_origin: None,
        node: None,
        agents: mcp::AgentArgs::default(),
    }
}

/// The agent settings of a background instance come from its configuration only.
static DEFAULT_AGENT_ARGS: std::sync::LazyLock<mcp::AgentArgs> =
    std::sync::LazyLock::new(mcp::AgentArgs::default);

enum Job<'a> {
    Fetch(&'a cli::FetchArgs),
    Demo(&'a demo::DemoArgs),
    Mcp(&'a mcp::McpArgs),
    Relay(relay::RelaySetup, &'a mcp::AgentArgs, people::ForPeople<'a>),
    Desktop(people::ForPeople<'a>),
}

impl Job<'_> {
    /// Whether a person's shell is asked to serve the CDP endpoint.
    fn serves_cdp_endpoint(&self) -> bool {
        match self {
            Job::Relay(_, _, people) | Job::Desktop(people) => people.cdp_endpoint,
            _ => false,
        }
    }

    /// The URL a person's shell opens first, if one was given.
    fn first_url(&self) -> Option<&str> {
        match self {
            Job::Relay(_, _, people) => people.url,
            Job::Desktop(people) => people.url,
            _ => None,
        }
    }
}

/// Writes `bytes` to stdout. A reader that stopped early (`| head`) is not an error.
fn print_bytes(bytes: &[u8]) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().lock().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "cannot write to stdout");
            ExitCode::FAILURE
        }
    }
}

/// Gives the desktop its persistent profile unless told otherwise (a
/// profile named, `--temporary-profile`, a browser connected to) and
/// claims it for this process (kept until it exits). Stops here when
/// another browser-shell (or browser) already runs on that profile: the
/// person is told where it is, and the first one stays as it is.
fn keep_desktop_profile(
    config: &mut config::Config,
    temporary: bool,
) -> browser_provider::Result<Option<profile::ProfileLock>> {
    // A person's browser attached to (auto-connect) keeps its own profile:
    // never claim or create one for it.
    if config.connect.is_some() || temporary || config.browser == config::BrowserKind::AutoConnect {
        return Ok(None);
    }
    let dir = match &config.profile_dir {
        Some(dir) => dir.clone(),
        None => profile::desktop_default()?,
    };
    profile::create_private(&dir)?;
    let holder = match profile::claim(&dir)? {
        Ok(lock) => match profile::in_use_by(&dir) {
            None => {
                config.profile_dir = Some(dir);
                return Ok(Some(lock));
            }
            Some(pid) => pid,
        },
        Err(pid) => pid,
    };
    let running = instance::find().filter(|info| instance::process_alive(info.pid));
    let whose = match &running {
        Some(info) if info.pid == holder || holder == 0 => {
            let raised =
                info.kind == InstanceKind::Desktop && platform::signals::ask_to_raise(info.pid);
            format!(
                "browser-shell is already running with this profile (pid {}); {}, \
                 also at {}",
                info.pid,
                if raised {
                    "its window, brought to the front, shows the column"
                } else {
                    "its window shows the column"
                },
                info.viewer_url()
            )
        }
        _ => format!("another process (pid {holder}) uses this profile"),
    };
    Err(browser_provider::BrowserError::invalid(
        "profile",
        format!(
            "{whose}. Use that one, or start this one with --temporary-profile (or --profile DIR) \
             [profile: {}]",
            dir.display()
        ),
    ))
}

fn fail(error: &browser_provider::BrowserError) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", report::render(error));
    ExitCode::from(report::exit_status(error))
}

/// Logs go to stderr (stdout carries results); `RUST_LOG` sets the level.
/// Diagnostics go to stderr as `RUST_LOG` says (default: warnings), as
/// text or JSON lines (`--log-format`);
/// audit events (target [`browser_provider::AUDIT`]) go to the audit log,
/// when one is given, as JSON lines, whatever `RUST_LOG` says.
fn init_logging(
    audit_log: Option<&std::path::Path>,
    format: LogFormat,
) -> browser_provider::Result<()> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let formatted = match format {
        LogFormat::Text => lines.boxed(),
        LogFormat::Json => lines.json().flatten_event(true).boxed(),
    };
    let diagnostics =
        formatted
            .with_filter(filter)
            .with_filter(tracing_subscriber::filter::filter_fn(|metadata| {
                metadata.target() != browser_provider::AUDIT
            }));
    let audit = match audit_log {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    browser_provider::BrowserError::invalid(
                        "auditLog",
                        format!("cannot append to {}: {e}", path.display()),
                    )
                })?;
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_target(false)
                    .with_level(false)
                    .with_writer(std::sync::Mutex::new(file))
                    .with_filter(
                        tracing_subscriber::filter::Targets::new()
                            .with_target(browser_provider::AUDIT, tracing::Level::INFO),
                    ),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(diagnostics)
        .with(audit)
        .init();
    Ok(())
}

/// An origin as a browser sends it: `http(s)://host[:port]`, nothing more.
fn parse_origin(value: &str) -> std::result::Result<String, String> {
    let url = url::Url::parse(value).map_err(|e| format!("not a URL: {e}"))?;
    let origin = url.origin();
    if !matches!(url.scheme(), "http" | "https") || !origin.is_tuple() {
        return Err("give an http(s) origin such as https://harness.example".into());
    }
    let serialized = origin.ascii_serialization();
    if serialized != value.trim_end_matches('/') {
        return Err(format!(
            "give the origin only ({serialized}), without a path"
        ));
    }
    Ok(serialized)
}
