//! One extension bridge per user: the shell that holds the bridge to the
//! person's Chrome lets the other local shells join it.
//!
//! One shell per user holds the bridge: the first one started with
//! `--browser extension` takes [`LOCK_FILE`] in the private runtime
//! directory (an exclusive lock the system lets go of when the process
//! ends), then listens on the native messaging socket and, when paired,
//! on the paired port. It owns the bridge (whatever it is:
//! `mcp` on stdio, `mcp --http`, the relay, the desktop window). It makes
//! its tools reachable to other local shells — through the `/mcp` it
//! already serves on loopback (relay, desktop, `mcp --http`), or through a
//! streamable-HTTP MCP server of its own on a random loopback port with a
//! random token (`mcp` on stdio, a TLS relay) — and records where in
//! [`RECORD_FILE`] in the private runtime directory (mode 0600, written
//! atomically, removed when the owner stops; a record whose process is gone
//! is ignored and replaced).
//!
//! A second `mcp --browser extension` that cannot take the lock finds the
//! record and relays its stdio to the owner's `/mcp` ([`crate::browser::attach`]):
//! its agent gets a session of its own in the owner's browser, so a tab
//! group of its own in Chrome, under the owner's settings — so it joins
//! only when its own [`AgentRules`] are the same (no agent gets looser
//! rules than its shell was started with); otherwise it fails saying which
//! differ. Two shells
//! started at the same moment do not both fail: the one that loses the
//! lock waits ([`JOIN_WAIT`] at most) for the winner's record, trying the
//! lock again meanwhile (an owner that was stopping may let go of it).
//! A relay or window cannot join (it needs a browser of its own to show):
//! it fails naming the owner's pid. The owner keeps what it knows of the
//! extension's connection in [`STATE_FILE`] for `doctor`.
//!
//! When the owner exits, the sessions joined to it end with `NOT_CONNECTED`
//! (their processes exit non-zero); nothing fails over to another shell.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use browser_provider::host::ExtensionHost;
use browser_provider::{BrowserError, Result};
use browser_tools::agent::AgentOptions;
use browser_tools::mcp::McpServer;
use serde::{Deserialize, Serialize};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::browser::attach::Upstream;
use crate::browser::options::Started;
use crate::config::Config;
use crate::instance::{self, InstanceKind, Published};

/// The owner record's name in the runtime directory.
pub const RECORD_FILE: &str = "extension-bridge.json";

/// The lock the bridge's owner holds, in the runtime directory.
pub const LOCK_FILE: &str = "extension-bridge.lock";

/// What the owner knows of the extension's connection, in the runtime directory.
pub const STATE_FILE: &str = "extension-state.json";

/// How long a shell that lost the lock waits for the owner's record.
pub const JOIN_WAIT: Duration = Duration::from_secs(5);

/// How often it looks again meanwhile.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// What kind of shell holds the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OwnerKind {
    /// `browser-shell mcp` (on stdio, or `--http`).
    Mcp,
    /// `browser-shell relay`.
    Relay,
    /// The desktop window.
    Desktop,
    /// The background instance the tool commands start.
    Background,
}

impl From<InstanceKind> for OwnerKind {
    fn from(kind: InstanceKind) -> Self {
        match kind {
            InstanceKind::Background => Self::Background,
            InstanceKind::Relay => Self::Relay,
            InstanceKind::Desktop => Self::Desktop,
        }
    }
}

impl OwnerKind {
    /// The command a person would recognize.
    fn describe(self) -> &'static str {
        match self {
            Self::Mcp => "`browser-shell mcp`",
            Self::Relay => "`browser-shell relay`",
            Self::Desktop => "the browser-shell window",
            Self::Background => "the background instance of the tool commands",
        }
    }
}

/// The record the bridge's owner keeps in the runtime directory: where
/// other local shells reach its tools.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeOwner {
    /// The owner's process id.
    pub pid: u32,
    /// What kind of shell it is.
    pub kind: OwnerKind,
    /// Its base URL on loopback, such as `http://127.0.0.1:41234`; MCP is at `/mcp`.
    pub url: String,
    /// The bearer token for `/mcp`.
    pub token: String,
    /// The paired WebSocket's port on 127.0.0.1, when paired.
    #[serde(default)]
    pub bridge_port: Option<u16>,
    /// The rules its agents run under (absent in records of older shells).
    #[serde(default)]
    pub rules: Option<AgentRules>,
}

/// The settings that decide what an agent may do and what it gets back:
/// a joined agent runs under the owner's, so they must be the same.
/// (Secrets by name only; their values never leave the process.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRules {
    /// Only http(s) navigation.
    pub http_only: bool,
    /// Only these hosts (sorted).
    pub allowed_hosts: Vec<String>,
    /// Never these hosts (sorted).
    pub blocked_hosts: Vec<String>,
    /// `browser_execute` offered.
    pub execute_enabled: bool,
    /// The tab tools offered.
    pub tab_tools: bool,
    /// The secrets agents may type, by name (sorted).
    pub secrets: Vec<String>,
    /// Where screenshots are also saved.
    pub output_dir: Option<PathBuf>,
    /// A tool call's bound.
    pub timeout_ms: u64,
    /// A navigation's bound.
    pub navigation_timeout_ms: u64,
    /// An idle session's lease.
    pub session_lease_ms: u64,
    /// Snapshot and content limits.
    pub snapshot_max_elements: u32,
    /// Snapshot text bytes at most.
    pub snapshot_max_bytes: usize,
    /// Page content characters at most.
    pub content_max_chars: usize,
}

impl AgentRules {
    /// The rules `config` gives its agents.
    pub fn of(config: &Config) -> Self {
        let sorted = |list: &[String]| {
            let mut list = list.to_vec();
            list.sort();
            list
        };
        let mut secrets: Vec<String> = config
            .secrets
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        secrets.sort();
        Self {
            http_only: config.http_only,
            allowed_hosts: sorted(&config.allowed_hosts),
            blocked_hosts: sorted(&config.blocked_hosts),
            execute_enabled: config.execute_enabled,
            tab_tools: config.tab_tools,
            secrets,
            output_dir: config.output_dir.clone(),
            timeout_ms: config.timeout_ms,
            navigation_timeout_ms: config.navigation_timeout_ms,
            session_lease_ms: config.session_lease_ms,
            snapshot_max_elements: config.snapshot_max_elements,
            snapshot_max_bytes: config.snapshot_max_bytes,
            content_max_chars: config.content_max_chars,
        }
    }

    /// Each setting that differs, as `name: theirs vs ours`.
    pub fn differences(&self, ours: &Self) -> Vec<String> {
        let (Ok(serde_json::Value::Object(theirs)), Ok(serde_json::Value::Object(ours))) =
            (serde_json::to_value(self), serde_json::to_value(ours))
        else {
            return Vec::new();
        };
        theirs
            .iter()
            .filter(|(name, value)| ours.get(*name) != Some(*value))
            .map(|(name, value)| {
                let mine = ours.get(name).cloned().unwrap_or_default();
                format!("{name}: {value} there, {mine} here")
            })
            .collect()
    }
}

impl std::fmt::Debug for BridgeOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("BridgeOwner")
            .field("pid", &self.pid)
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("bridge_port", &self.bridge_port)
            .finish_non_exhaustive()
    }
}

impl BridgeOwner {
    /// Where a joining shell relays its stdio to.
    pub fn upstream(&self) -> Upstream {
        Upstream {
            pid: self.pid,
            url: self.url.clone(),
            token: self.token.clone(),
            what: format!(
                "the browser-shell that holds the extension bridge ({})",
                self.kind.describe()
            ),
        }
    }

    /// Refuses to join when `ours` differ from the owner's rules (an owner
    /// too old to say is joined).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming each setting that differs.
    pub fn check_rules(&self, ours: &AgentRules) -> Result<()> {
        let Some(theirs) = &self.rules else {
            return Ok(());
        };
        let differences = theirs.differences(ours);
        if differences.is_empty() {
            return Ok(());
        }
        Err(BrowserError::invalid(
            "settings",
            format!(
                "browser-shell pid {pid} holds the extension bridge with other settings, and an \
                 agent joining it would run under them ({list}). Start this one with the same \
                 settings, or stop that one",
                pid = self.pid,
                list = differences.join("; "),
            ),
        ))
    }

    /// Why a shell that cannot join (relay, window, `mcp --http`) does not start.
    pub fn held_error(&self) -> BrowserError {
        BrowserError::ChromeAbsent {
            absence: browser_provider::Absence::HeldElsewhere,
            detail: format!(
                "it is already driven by browser-shell pid {pid} ({kind}), which holds the \
                 extension bridge. Agents join it with `browser-shell mcp --browser extension`; \
                 a relay, window or `mcp --http` needs the bridge for itself: stop pid {pid} \
                 first (kill {pid})",
                pid = self.pid,
                kind = self.kind.describe(),
            ),
        }
    }
}

/// The owner record's path.
///
/// # Errors
/// As [`instance::runtime_dir`].
pub fn record_file() -> Result<PathBuf> {
    Ok(instance::runtime_dir()?.join(RECORD_FILE))
}

/// The browser-shell that holds the extension bridge now, from its record,
/// if that names a live process (for `doctor`, and for a shell that lost
/// the bind). A missing, unreadable or stale record is `None` (logged at
/// debug level).
pub fn owner() -> Option<BridgeOwner> {
    let path = record_file().ok()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "cannot read the extension bridge's owner record");
            return None;
        }
    };
    let owner: BridgeOwner = match serde_json::from_str(&text) {
        Ok(owner) => owner,
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "ignoring an unreadable extension bridge owner record");
            return None;
        }
    };
    if !instance::process_alive(owner.pid) {
        tracing::debug!(
            pid = owner.pid,
            "ignoring the record of an extension bridge owner that has exited"
        );
        return None;
    }
    Some(owner)
}

/// The bridge held by this shell: the extension host, and the lock that
/// makes this shell the one owner (the system lets go of it when the
/// process ends, however it ends).
#[derive(Debug)]
pub struct Held {
    /// The extension host.
    pub host: Arc<ExtensionHost>,
    /// The locked file, kept open while held.
    _lock: std::fs::File,
}

/// What [`claim`] found.
#[derive(Debug)]
pub enum Claim {
    /// We hold the bridge now.
    Owner(Held),
    /// Another browser-shell holds it; here is its record.
    Held(BridgeOwner),
}

/// Takes the bridge (its lock, then its listeners), or finds the
/// browser-shell that holds it. A lost lock waits [`JOIN_WAIT`] at most
/// for the owner's record (which the owner writes right after binding),
/// trying the lock again meanwhile.
///
/// # Errors
/// `NOT_CONNECTED` when the native socket cannot be made, or when the lock
/// stays held by a process that records nothing; `INVALID_ARGUMENT` for a
/// runtime directory that is not private.
pub async fn claim(command_timeout: Duration) -> Result<Claim> {
    let path = instance::runtime_dir()?.join(LOCK_FILE);
    let deadline = tokio::time::Instant::now() + JOIN_WAIT;
    loop {
        if let Some(lock) = try_lock(&path)? {
            let host = crate::browser::extension::bind_host(command_timeout).await?;
            follow_state(&host);
            return Ok(Claim::Owner(Held { host, _lock: lock }));
        }
        let held = owner().filter(|owner| owner.pid != std::process::id());
        if let Some(owner) = held {
            tracing::info!(?owner, "another browser-shell holds the extension bridge");
            return Ok(Claim::Held(owner));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(BrowserError::not_connected(format!(
                "another process holds {} but recorded no bridge within {} s; stop it, or remove the file",
                path.display(),
                JOIN_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}

/// The lock on `path` when no other process holds it.
fn try_lock(path: &std::path::Path) -> Result<Option<std::fs::File>> {
    let failed = |e: std::io::Error| {
        BrowserError::not_connected(format!("cannot lock {}: {e}", path.display()))
    };
    let file = crate::platform::files::private_file(
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true),
    )
    .open(path)
    .map_err(failed)?;
    Ok(crate::platform::lock::try_lock(&file)
        .map_err(failed)?
        .then_some(file))
}

/// What the owner knows of the extension's connection, for `doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct BridgeState {
    /// How the extension is connected (`None`: it is not).
    connected_via: Option<String>,
    /// Why not, when it is not.
    absence: Option<String>,
    /// When this was written (seconds since the epoch).
    at: u64,
}

/// Keeps [`STATE_FILE`] in step with the extension's connection while
/// `host` lives: looked at every second, written when how it is connected
/// or why it is not changes (not when only the "s ago" in the words
/// does); removed with the host.
fn follow_state(host: &Arc<ExtensionHost>) {
    let Ok(path) = instance::runtime_dir().map(|dir| dir.join(STATE_FILE)) else {
        return;
    };
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        let mut last = None;
        loop {
            let Some(host) = weak.upgrade() else {
                let _ = std::fs::remove_file(&path);
                return;
            };
            let via = host.connected_via();
            let absence = host.absence();
            drop(host);
            let kind = absence.as_ref().map(|error| match error {
                BrowserError::ChromeAbsent { absence, .. } => Some(*absence),
                _ => None,
            });
            if last != Some((via.clone(), kind)) {
                let record = BridgeState {
                    connected_via: via.clone(),
                    absence: absence.map(|error| error.to_string()),
                    at: std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs()),
                };
                // The record names no process: its guard leaves it in place.
                if let Err(error) = instance::write_private(&path, &record).map(drop) {
                    tracing::debug!(%error, "cannot write the bridge's state");
                }
                last = Some((via, kind));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

/// What the owner last wrote of the extension's connection, in words.
pub fn read_state() -> Option<String> {
    let path = instance::runtime_dir().ok()?.join(STATE_FILE);
    let state: BridgeState = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let noted = format!("noted {} s ago", now.saturating_sub(state.at));
    Some(match state.connected_via {
        Some(via) => format!("the extension is connected through {via} ({noted})"),
        None => format!(
            "{} ({noted})",
            state
                .absence
                .unwrap_or_else(|| "the extension is not connected".into())
        ),
    })
}

/// Keeps the owner record (and the server for joining shells, when this
/// shell runs one of its own) while alive; dropping it removes the record
/// and stops that server.
#[derive(Debug)]
pub struct Offered {
    /// Removes the record on drop (first, so no one joins a server going away).
    _record: Published,
    /// Stops the server of our own, if any, on drop.
    _server: Option<DropGuard>,
}

/// Where a shell already serves its tools on loopback, with its token.
#[derive(Clone, PartialEq, Eq)]
pub struct Served {
    /// Base URL (`http://127.0.0.1:PORT`; MCP at `/mcp`).
    pub url: String,
    /// Bearer token for `/mcp`.
    pub token: String,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// When `started` holds the extension bridge, lets other local shells join
/// it: through `served` (this shell's own loopback `/mcp`), or else through
/// a streamable-HTTP MCP server started here on a random loopback port with
/// a random token, each of its MCP sessions an agent session of its own
/// with `options`; then writes the owner record. `None` when `started` is
/// not in the person's Chrome, or when that fails (logged: this shell works
/// on, but others cannot join it).
pub async fn offer(
    started: &Started,
    kind: OwnerKind,
    served: Option<Served>,
    config: &Config,
    cancel: &CancellationToken,
) -> Option<Offered> {
    let host = started.extension_host()?;
    let bridge_port = host.address().map(|a| a.port());
    let owner = Owner {
        kind,
        bridge_port,
        rules: AgentRules::of(config),
    };
    let options = config.agent_options();
    match offer_on(started, owner, served, options, cancel).await {
        Ok(offered) => Some(offered),
        Err(error) => {
            tracing::warn!(%error, "other browser-shells will not be able to join this one's extension bridge");
            None
        }
    }
}

/// What the owner record says of this shell besides where it serves.
struct Owner {
    kind: OwnerKind,
    bridge_port: Option<u16>,
    rules: AgentRules,
}

async fn offer_on(
    started: &Started,
    owner: Owner,
    served: Option<Served>,
    options: AgentOptions,
    cancel: &CancellationToken,
) -> Result<Offered> {
    let (served, server) = match served {
        Some(served) => (served, None),
        None => {
            let listening =
                crate::http::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await?;
            let served = Served {
                url: listening.url(),
                token: listening.token().to_owned(),
            };
            let stop = cancel.child_token();
            let browser = started.browser.clone();
            let serving = stop.clone();
            tokio::spawn(async move {
                let server_for_connection =
                    move || McpServer::new(browser.clone(), options.clone());
                if let Err(error) =
                    crate::http::serve(listening, server_for_connection, &serving).await
                {
                    tracing::warn!(%error, "the server for joining browser-shells stopped");
                }
            });
            (served, Some(stop.drop_guard()))
        }
    };
    let record = BridgeOwner {
        pid: std::process::id(),
        kind: owner.kind,
        url: served.url,
        token: served.token,
        bridge_port: owner.bridge_port,
        rules: Some(owner.rules),
    };
    let published = instance::write_private(&record_file()?, &record)?;
    tracing::info!(
        ?record,
        "other browser-shells with --browser extension join this one"
    );
    Ok(Offered {
        _record: published,
        _server: server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_reads_back_and_hides_its_token_in_debug() {
        let owner = BridgeOwner {
            pid: 7,
            kind: OwnerKind::Mcp,
            url: "http://127.0.0.1:1".into(),
            token: "secret-token".into(),
            bridge_port: Some(47_821),
            rules: Some(AgentRules::of(&Config::default())),
        };
        let text = serde_json::to_string(&owner).unwrap_or_default();
        assert!(text.contains("\"kind\":\"mcp\"") && text.contains("\"bridge_port\":47821"));
        assert_eq!(
            serde_json::from_str::<BridgeOwner>(&text).ok(),
            Some(owner.clone())
        );
        assert!(!format!("{owner:?}").contains("secret-token"));
        assert!(!format!("{:?}", owner.upstream()).contains("secret-token"));
        assert!(owner.held_error().to_string().contains("pid 7"));
    }

    #[test]
    fn a_shell_joins_only_an_owner_with_the_same_rules() {
        let ours = Config::default();
        let mut theirs = Config {
            blocked_hosts: vec!["b.example".into(), "a.example".into()],
            ..Config::default()
        };
        let mut owner = BridgeOwner {
            pid: 7,
            kind: OwnerKind::Mcp,
            url: "http://127.0.0.1:1".into(),
            token: "t".into(),
            bridge_port: Some(47_821),
            rules: Some(AgentRules::of(&theirs)),
        };
        let refused = owner
            .check_rules(&AgentRules::of(&ours))
            .expect_err("other blocked hosts");
        assert_eq!(refused.code(), "INVALID_ARGUMENT");
        let text = refused.to_string();
        assert!(
            text.contains("pid 7") && text.contains("blocked_hosts"),
            "{text}"
        );
        assert!(!text.contains("http_only"), "only what differs: {text}");

        // The same hosts in another order are the same rules.
        theirs.blocked_hosts.reverse();
        let same = Config {
            blocked_hosts: theirs.blocked_hosts.clone(),
            ..Config::default()
        };
        owner.rules = Some(AgentRules::of(&theirs));
        assert!(owner.check_rules(&AgentRules::of(&same)).is_ok());
        // An owner too old to say is joined.
        owner.rules = None;
        assert!(owner.check_rules(&AgentRules::of(&ours)).is_ok());
    }
}
