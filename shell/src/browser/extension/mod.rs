//! The person's own Chrome: `browser-shell extension install|pair|path`,
//! where the pairing and the unpacked extension live, and starting the
//! extension host for `--browser extension`.
//!
//! The extension reaches the shell that holds the bridge ([`bridge`]) in
//! one of two ways: Chrome's native messaging (the primary one: Chrome
//! starts [`native_host`] for the extension its manifest names, which
//! [`install`] writes; the host dials the shell's private socket,
//! [`native_socket`]), or the paired WebSocket on loopback (or a relay's
//! `wss://…/extension`) where native messaging is not installed. The shell
//! listens for both; a new pairing takes effect while it runs
//! ([`watch_pairing`]).

pub mod bridge;
pub mod install;
pub mod native_host;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use browser_provider::host::extension::native::NativeConfig;
use browser_provider::host::extension::pairing::{self, Pairing};
use browser_provider::host::extension::protocol::EXTENSION_ID;
use browser_provider::host::{ExtensionHost, ExtensionOptions};
use browser_provider::{Browser, BrowserError, Result};

/// Overrides the configuration directory (tests, or several setups).
pub const CONFIG_DIR_VARIABLE: &str = "BROWSER_SHELL_CONFIG_DIR";

/// Overrides where the unpacked extension is looked for.
pub const EXTENSION_DIR_VARIABLE: &str = "BROWSER_SHELL_EXTENSION_DIR";

/// Where the package installs the unpacked extension.
pub const INSTALLED_EXTENSION_DIR: &str = "/usr/share/browser-shell/extension";

/// `browser-shell extension …`
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ExtensionCommand {
    /// Install the native messaging host, so that Chrome, Chromium and
    /// Edge let the browser-shell extension reach this shell with nothing
    /// to pair (per user; undo with `uninstall`).
    ///
    /// Example: browser-shell extension install
    Install {
        /// Only for this browser (default: Chrome, Chromium and Edge).
        #[arg(long = "for", value_enum, value_name = "BROWSER")]
        targets: Vec<install::Target>,
        /// Into this browser profile directory only (a browser started
        /// with --user-data-dir=DIR).
        #[arg(long, value_name = "DIR")]
        user_data_dir: Option<PathBuf>,
    },
    /// Remove what `install` wrote.
    Uninstall,
    /// Pair this shell with the browser-shell extension in your Chrome:
    /// prints a one-time link; open it in that Chrome and press Allow.
    /// A new pairing replaces the previous one (its Chrome must pair again).
    ///
    /// Example: browser-shell extension pair
    ///
    /// For a shell on a server (`relay --browser extension` with
    /// --tls-cert/--tls-key) and the Chrome on your own machine:
    /// browser-shell extension pair --relay-url wss://relay.example:8443
    Pair {
        /// The bridge's port on 127.0.0.1 (default: the configured
        /// extensionPort, 47821). Both sides keep it.
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
        /// The extension dials this TLS relay (its `/extension`) instead
        /// of 127.0.0.1: the relay must run here with `--browser extension`
        /// and a certificate the person's Chrome trusts.
        #[arg(long, value_name = "wss://HOST[:PORT]")]
        relay_url: Option<String>,
    },
    /// Print where the unpacked extension is, to load it in Chrome
    /// (chrome://extensions → Developer mode → Load unpacked).
    Path,
}

/// Runs `browser-shell extension …`; what to tell the person.
/// `configured_port` gives the configured `extensionPort` (read only to
/// pair without `--port`).
///
/// # Errors
/// What the command meets: a broken configuration, no configuration
/// directory, a file that cannot be written, an unusable relay URL.
pub fn run(
    command: &ExtensionCommand,
    configured_port: impl FnOnce() -> Result<u16>,
) -> Result<String> {
    match command {
        ExtensionCommand::Pair { port, relay_url } => {
            let port = match port {
                Some(port) => *port,
                None => configured_port()?,
            };
            pair(port, relay_url.as_deref())
        }
        ExtensionCommand::Path => extension_dir().map(|dir| dir.display().to_string()),
        ExtensionCommand::Install {
            targets,
            user_data_dir,
        } => {
            let program = std::env::current_exe()
                .and_then(|exe| exe.canonicalize())
                .map_err(|e| {
                    BrowserError::invalid(
                        "install",
                        format!("cannot tell where this program is: {e}"),
                    )
                })?;
            let targets = if targets.is_empty() {
                install::Target::ALL.as_slice()
            } else {
                targets.as_slice()
            };
            install::install(&config_dir()?, targets, user_data_dir.as_deref(), &program)
        }
        ExtensionCommand::Uninstall => install::uninstall(&config_dir()?),
    }
}

/// The user's configuration directory: `$BROWSER_SHELL_CONFIG_DIR`, else
/// the OS's place for it ([`crate::platform::dirs::config_home`]: on Linux
/// `$XDG_CONFIG_HOME/browser-shell`, else `~/.config/browser-shell`).
///
/// # Errors
/// `INVALID_ARGUMENT` when none of them names a directory.
pub fn config_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(CONFIG_DIR_VARIABLE) {
        return Ok(PathBuf::from(dir));
    }
    crate::platform::dirs::config_home().map_err(|why| {
        BrowserError::invalid(
            "config directory",
            format!("{why}; set {CONFIG_DIR_VARIABLE}"),
        )
    })
}

/// Where the pairing is kept.
///
/// # Errors
/// As [`config_dir`].
pub fn pairing_path() -> Result<PathBuf> {
    Ok(pairing::pairing_file(&config_dir()?))
}

/// Where the unpacked extension is: `$BROWSER_SHELL_EXTENSION_DIR`, the
/// package's copy, or the source tree's `assets/extension`.
///
/// # Errors
/// `INVALID_ARGUMENT` when none holds a `manifest.json`.
pub fn extension_dir() -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = [
        std::env::var_os(EXTENSION_DIR_VARIABLE).map(PathBuf::from),
        Some(PathBuf::from(INSTALLED_EXTENSION_DIR)),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/extension")),
    ]
    .into_iter()
    .flatten()
    .collect();
    candidates
        .iter()
        .find(|dir| dir.join("manifest.json").is_file())
        .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.clone()))
        .ok_or_else(|| {
            BrowserError::invalid(
                "extension",
                format!(
                    "the unpacked extension is not in any of {}; install the package or set {EXTENSION_DIR_VARIABLE}",
                    candidates
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
}

/// Makes a new pairing and returns what to tell the person.
///
/// # Errors
/// What writing the pairing file fails with.
pub fn pair(port: u16, relay_url: Option<&str>) -> Result<String> {
    let path = pairing_path()?;
    let mut pairing = Pairing::generate(port)?;
    if let Some(relay_url) = relay_url {
        pairing = pairing.via_relay(relay_url)?;
    }
    pairing.save(&path)?;
    tracing::info!(
        target: browser_provider::AUDIT,
        event = "extension_paired",
        port,
        remote = pairing.remote.as_deref().unwrap_or("")
    );
    Ok(format!(
        "Open this link in the Chrome you want agents to work in, and press Allow\n\
         (the browser-shell extension must be loaded there: `browser-shell extension path`):\n\n\
         {}\n\n\
         Kept in {} (readable by you only). Agents then use it with `--browser extension`.",
        pairing.link(),
        path.display()
    ))
}

/// The pairing, if there is one.
///
/// # Errors
/// `INVALID_ARGUMENT` for a broken file.
pub fn load_pairing() -> Result<Option<Pairing>> {
    Pairing::load(&pairing_path()?)
}

/// Where the shell that holds the bridge listens for the native messaging
/// host: `extension.sock` in the private runtime directory (its
/// permissions are the credential); on Windows a named pipe of the user's.
///
/// # Errors
/// As [`crate::instance::runtime_dir`].
pub fn native_socket() -> Result<PathBuf> {
    let runtime = crate::instance::runtime_dir()?;
    #[cfg(windows)]
    {
        // A pipe's name is global: the runtime directory's own path makes
        // it this user's (and this setup's).
        let mut name: String = runtime
            .display()
            .to_string()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        name.truncate(200);
        Ok(PathBuf::from(format!(
            r"\\.\pipe\browser-shell-{name}-extension"
        )))
    }
    #[cfg(not(windows))]
    Ok(runtime.join("extension.sock"))
}

/// How the extension can reach this shell, in a person's words (`None`:
/// no way is set up), for the reasons calls give while it is not
/// connected.
pub fn setup(pairing: Option<&Pairing>) -> Option<String> {
    let mut ways = Vec::new();
    if let Ok(config) = config_dir() {
        let installed = install::installed(&config);
        if !installed.is_empty() {
            let places: Vec<String> = installed.iter().map(install::Installed::describe).collect();
            ways.push(format!(
                "native messaging installed for {}",
                places.join(", ")
            ));
        }
    }
    if let Some(pairing) = pairing {
        ways.push(match &pairing.remote {
            Some(remote) => format!("paired through the relay {remote}"),
            None => format!("paired on 127.0.0.1:{}", pairing.port),
        });
    }
    (!ways.is_empty()).then(|| ways.join("; "))
}

/// The bound on CDP commands in the person's Chrome.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts the extension host, for a shell that needs the bridge for
/// itself (relay, window, `mcp --http`).
///
/// # Errors
/// `NOT_CONNECTED` when another browser-shell holds the bridge (naming its
/// pid: see [`bridge`]).
pub async fn start_host() -> Result<bridge::Held> {
    match bridge::claim(COMMAND_TIMEOUT).await? {
        bridge::Claim::Owner(held) => Ok(held),
        bridge::Claim::Held(owner) => Err(owner.held_error()),
    }
}

/// Starts the extension host: the native socket, and the paired WebSocket
/// when paired. A paired port another program holds does not stop it
/// (native messaging still works): calls say so while nothing connects.
///
/// # Errors
/// `NOT_CONNECTED` when the native socket cannot be made.
pub async fn bind_host(command_timeout: Duration) -> Result<Arc<ExtensionHost>> {
    let pairing = match load_pairing() {
        Ok(pairing) => pairing,
        Err(error) => {
            tracing::warn!(%error, "the pairing file is broken; native messaging only");
            None
        }
    };
    let host = Arc::new(
        ExtensionHost::start(ExtensionOptions {
            bridge: None,
            native: Some(NativeConfig {
                address: native_socket()?,
                extension_ids: vec![EXTENSION_ID.into()],
                shell: format!("{}-{}", std::process::id(), now_millis()),
            }),
            setup: setup(pairing.as_ref()),
            command_timeout,
        })
        .await?,
    );
    // The paired WebSocket as any later pairing is taken up.
    if let Err(error) = host.set_pairing(pairing.clone()).await {
        tracing::warn!(%error, "the paired port is taken; native messaging only");
        host.set_setup(Some(format!(
            "{} — but {error}: another program holds the paired port",
            setup(pairing.as_ref()).unwrap_or_default()
        )));
    }
    watch_pairing(&host, pairing);
    Ok(host)
}

/// How often the pairing file (and what `extension install` wrote) is
/// looked at while the shell runs.
const SETUP_LOOK_EVERY: Duration = Duration::from_millis(250);

/// Follows the pairing file and the native messaging install while `host`
/// lives: a new `extension pair` takes effect at once (the old secret's
/// connections close), `extension install` or `uninstall` changes what
/// calls say while nothing connects, and a removed or broken pairing file
/// is said on the next call.
fn watch_pairing(host: &Arc<ExtensionHost>, mut known: Option<Pairing>) {
    let Ok(path) = pairing_path() else { return };
    let weak = Arc::downgrade(host);
    let mut described = setup(known.as_ref());
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(SETUP_LOOK_EVERY).await;
            let Some(host) = weak.upgrade() else { return };
            let now = match Pairing::load(&path) {
                Ok(now) => now,
                Err(error) => {
                    if known.take().is_some() {
                        tracing::warn!(%error, "the pairing file is broken");
                        let _ = host.set_pairing(None).await;
                        described =
                            Some(format!("{error}; run `browser-shell extension pair` again"));
                        host.set_setup(described.clone());
                    }
                    continue;
                }
            };
            if now != known {
                tracing::info!(paired = now.is_some(), "the pairing changed");
                if let Err(error) = host.set_pairing(now.clone()).await {
                    tracing::warn!(%error, "cannot listen on the new pairing's port");
                }
                known = now;
            }
            let setup = setup(known.as_ref());
            if setup != described {
                host.set_setup(setup.clone());
                described = setup;
            }
        }
    });
}

/// Keeps the extension's popup in step with the browser: who holds
/// control and what each agent session is doing.
pub fn follow_browser(host: &Arc<ExtensionHost>, browser: &Browser) {
    let mut control = browser.watch_control();
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        while control.changed().await.is_ok() {
            let person =
                control.borrow_and_update().holder == browser_provider::control::Holder::Human;
            let Some(host) = weak.upgrade() else { return };
            host.set_control(person);
        }
    });
    let mut activity = browser.watch_activity();
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        loop {
            let event = match activity.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let Some(host) = weak.upgrade() else { return };
            let text = match &event.outcome {
                None => format!("{} {}", event.tool, event.summary),
                Some(Ok(())) => format!("done: {} {}", event.tool, event.summary),
                Some(Err(code)) => format!("{} failed: {code}", event.tool),
            };
            host.set_activity(event.session.as_str(), &text);
        }
    });
}

/// What `doctor` says of the person's Chrome through the extension: where
/// the unpacked extension is, which bridges are set up (native messaging
/// first, the pairing), and, when a shell holds the bridge, whether the
/// extension is connected, through which and when it was last seen.
/// `Err((problem, fix))` when something needs fixing.
pub async fn diagnose() -> std::result::Result<String, (String, String)> {
    let fail = |e: BrowserError| (e.to_string(), e.hint().to_owned());
    let unpacked = extension_dir().map_err(fail)?;
    let config = config_dir().map_err(fail)?;
    let path = pairing_path().map_err(fail)?;
    let pairing = Pairing::load(&path).map_err(|error| {
        (
            error.to_string(),
            "run `browser-shell extension pair` again (it writes a new pairing), or remove it and use native messaging (`browser-shell extension install`)".to_owned(),
        )
    })?;
    if pairing.is_some()
        && let Some(exposure) = crate::platform::files::exposure(&path)
    {
        return Err((
            format!("{}: {}", path.display(), exposure.problem),
            exposure.fix,
        ));
    }
    let native = install::installed(&config);
    let bridges = match (native.is_empty(), &pairing) {
        (true, None) => {
            return Err((
                "the extension has no way to reach a shell: native messaging is not installed and it is not paired".into(),
                format!(
                    "run `browser-shell extension install`, and load {} in Chrome (chrome://extensions, Developer mode, Load unpacked)",
                    unpacked.display()
                ),
            ));
        }
        (false, _) => format!(
            "native messaging installed for {} (the extension uses it: nothing to pair){}",
            native
                .iter()
                .map(install::Installed::describe)
                .collect::<Vec<_>>()
                .join(", "),
            pairing
                .as_ref()
                .map(|p| format!(
                    "; also paired on 127.0.0.1:{} (used where native messaging is not installed)",
                    p.port
                ))
                .unwrap_or_default()
        ),
        (true, Some(pairing)) => format!(
            "native messaging not installed, so the extension uses the paired WebSocket on 127.0.0.1:{} ({}, {}); `browser-shell extension install` makes it connect without a port",
            pairing.port,
            path.display(),
            crate::platform::files::describe_access(&path)
        ),
    };
    let state = match bridge::owner() {
        Some(owner) => format!(
            "browser-shell {:?} (pid {}) holds the bridge: {}",
            owner.kind,
            owner.pid,
            bridge::read_state().unwrap_or_else(|| "its state is not known yet".into())
        ),
        None => {
            "no shell holds the bridge now (one does when a `--browser extension` shell starts)"
                .into()
        }
    };
    Ok(format!(
        "{bridges}; extension in {}; {state}",
        unpacked.display()
    ))
}

fn now_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default()
}
