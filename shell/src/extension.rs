//! The person's own Chrome: `browser-shell extension pair|path`, where the
//! pairing and the unpacked extension live, and starting the extension host
//! for `--browser extension`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use browser_provider::host::extension::bridge::BridgeConfig;
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

/// The pairing, or a clear error saying how to make one.
///
/// # Errors
/// `NOT_CONNECTED` when there is none yet; `INVALID_ARGUMENT` for a broken file.
pub fn load_pairing() -> Result<Pairing> {
    let path = pairing_path()?;
    Pairing::load(&path)?.ok_or_else(|| {
        BrowserError::not_connected(format!(
            "this shell is not paired with a Chrome yet ({} does not exist): run `browser-shell extension pair` and open its link in your Chrome",
            path.display()
        ))
    })
}

/// The bound on CDP commands in the person's Chrome.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts the extension host on the paired port, for a shell that needs
/// the bridge for itself (relay, window, `mcp --http`).
///
/// # Errors
/// `NOT_CONNECTED` when not paired, when another browser-shell holds the
/// bridge (naming its pid: see [`crate::bridge`]) or when the port is
/// taken by another program.
pub async fn start_host(command_timeout: Duration) -> Result<Arc<ExtensionHost>> {
    match crate::bridge::claim(command_timeout).await? {
        crate::bridge::Claim::Owner(host) => Ok(host),
        crate::bridge::Claim::Held(owner) => Err(owner.held_error()),
    }
}

/// Binds the bridge with `pairing`: one attempt.
///
/// # Errors
/// `NOT_CONNECTED` when the port is taken.
pub async fn bind_host(pairing: Pairing, command_timeout: Duration) -> Result<Arc<ExtensionHost>> {
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], pairing.port));
    let shell = format!("{}-{}", std::process::id(), now_millis());
    let host = ExtensionHost::start(ExtensionOptions {
        bridge: BridgeConfig {
            address,
            pairing,
            extension_ids: vec![EXTENSION_ID.into()],
            shell,
        },
        command_timeout,
    })
    .await?;
    Ok(Arc::new(host))
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
/// the unpacked extension is, the pairing (and its file's mode), and
/// whether a shell holds the bridge now. `Err((problem, fix))` when
/// something needs fixing.
pub async fn diagnose() -> std::result::Result<String, (String, String)> {
    let unpacked = extension_dir().map_err(|e| (e.to_string(), e.hint().to_owned()))?;
    let path = pairing_path().map_err(|e| (e.to_string(), e.hint().to_owned()))?;
    let pairing = match Pairing::load(&path) {
        Ok(Some(pairing)) => pairing,
        Ok(None) => {
            return Err((
                format!(
                    "not paired with a Chrome yet ({} does not exist)",
                    path.display()
                ),
                format!(
                    "load {} in Chrome (chrome://extensions, Developer mode, Load unpacked), then run `browser-shell extension pair` and open its link there",
                    unpacked.display()
                ),
            ));
        }
        Err(error) => {
            return Err((
                error.to_string(),
                "run `browser-shell extension pair` again (it writes a new pairing)".into(),
            ));
        }
    };
    if let Some(exposure) = crate::platform::files::exposure(&path) {
        return Err((
            format!("{}: {}", path.display(), exposure.problem),
            exposure.fix,
        ));
    }
    let access = crate::platform::files::describe_access(&path);
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], pairing.port));
    let probe = tokio::net::TcpStream::connect(address);
    let bridge = match tokio::time::timeout(Duration::from_secs(1), probe).await {
        Ok(Ok(_)) => match crate::bridge::owner().filter(|o| o.bridge_port == pairing.port) {
            Some(owner) => format!(
                "browser-shell {:?} (pid {}) holds the bridge on {address}; other `mcp --browser extension` shells join it (the extension's popup says whether your Chrome is connected)",
                owner.kind, owner.pid
            ),
            None => format!(
                "a shell holds the bridge on {address} (the extension's popup says whether your Chrome is connected)"
            ),
        },
        _ => format!("the bridge on {address} opens when a `--browser extension` shell starts"),
    };
    Ok(format!(
        "paired ({}, {access}); extension in {}; {bridge}",
        path.display(),
        unpacked.display()
    ))
}

fn now_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default()
}
