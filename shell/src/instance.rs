//! The per-user runtime records that tell local clients where running
//! browser-shells listen.
//!
//! Every instance (the desktop window, a relay, a background instance)
//! writes its own record, `instances/<pid>.json` (address, token, kind,
//! pid, when it started), into a private runtime directory (mode 0700, the
//! files 0600; on Windows an ACL granting only the user, see
//! [`platform::files`]), so the command line and `mcp --connect` find them
//! without anyone copying tokens by hand. None overwrites another's record,
//! and stopping one hides no other. A record is removed when its instance
//! stops; one whose process is gone is ignored. When several run, clients
//! take the one a person watches ([`find`]: the window, then a relay, then
//! a background instance; the newest of a kind) unless told otherwise
//! ([`select`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use browser_provider::{BrowserError, Result};
use serde::{Deserialize, Serialize};

use crate::platform;

/// Overrides the runtime directory (tests, or several independent setups).
pub const RUNTIME_DIR_VARIABLE: &str = "BROWSER_SHELL_RUNTIME_DIR";

/// What kind of instance wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstanceKind {
    /// Started on demand by a command-line command; exits when idle.
    Background,
    /// `browser-shell relay`, started by a person.
    Relay,
    /// The desktop window.
    Desktop,
}

/// Where a running instance listens and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceInfo {
    /// The instance's process id.
    pub pid: u32,
    /// Kind of instance.
    pub kind: InstanceKind,
    /// Base URL for local clients, such as `http://127.0.0.1:41234`.
    pub url: String,
    /// Bearer token for `/mcp` and `/cli`, and the viewer's `?token=`.
    pub token: String,
    /// The CDP endpoint for Playwright / Puppeteer (token included), when served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdp_endpoint: Option<String>,
    /// When it started (milliseconds since the Unix epoch): the newest of a
    /// kind is the one clients take.
    #[serde(default)]
    pub started_ms: u64,
}

impl InstanceInfo {
    /// The browser column's address with the token, for a person.
    pub fn viewer_url(&self) -> String {
        format!("{}/?token={}", self.url, self.token)
    }

    /// How a person names it: "the window (pid 9629)".
    pub fn described(&self) -> String {
        format!("{} (pid {})", self.kind.described(), self.pid)
    }
}

impl InstanceKind {
    /// How a person names this kind.
    pub fn described(self) -> &'static str {
        match self {
            Self::Desktop => "the window",
            Self::Relay => "the relay",
            Self::Background => "the background instance",
        }
    }

    /// Which clients take first: the ones a person watches.
    fn rank(self) -> u8 {
        match self {
            Self::Desktop => 0,
            Self::Relay => 1,
            Self::Background => 2,
        }
    }

    /// The kind a word names (`window`/`desktop`, `relay`, `background`).
    fn named(word: &str) -> Option<Self> {
        match word.to_ascii_lowercase().as_str() {
            "window" | "desktop" => Some(Self::Desktop),
            "relay" => Some(Self::Relay),
            "background" => Some(Self::Background),
            _ => None,
        }
    }
}

/// Milliseconds since the Unix epoch, now: an instance's `started_ms`.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The private directory for runtime files: `$BROWSER_SHELL_RUNTIME_DIR`,
/// else the OS's default ([`platform::dirs::runtime_default`]:
/// `$XDG_RUNTIME_DIR/browser-shell`, else `/tmp/browser-shell-<uid>`;
/// `%LOCALAPPDATA%\browser-shell\run` on Windows). Created private to
/// the user; refused when someone else owns it or others can read it.
pub fn runtime_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os(RUNTIME_DIR_VARIABLE) {
        Some(dir) => PathBuf::from(dir),
        None => platform::dirs::runtime_default(),
    };
    let refuse = |why: String| BrowserError::invalid("runtime directory", why);
    if let Err(e) = platform::files::create_private_dir(&dir) {
        return Err(refuse(format!("cannot create {}: {e}", dir.display())));
    }
    if let Some(exposure) = platform::files::exposure(&dir) {
        return Err(refuse(format!(
            "{}: {}; set {RUNTIME_DIR_VARIABLE} to a private directory, or: {}",
            dir.display(),
            exposure.problem,
            exposure.fix
        )));
    }
    Ok(dir)
}

/// The folder of the instances' records.
pub fn instances_dir() -> Result<PathBuf> {
    let dir = runtime_dir()?.join("instances");
    platform::files::create_private_dir(&dir).map_err(|e| {
        BrowserError::invalid(
            "runtime directory",
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    Ok(dir)
}

/// Every running instance, the one clients take first first (see [`find`]).
pub fn list() -> Vec<InstanceInfo> {
    let Ok(dir) = instances_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut running: Vec<InstanceInfo> = entries
        .filter_map(std::result::Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            match serde_json::from_str::<InstanceInfo>(&text) {
                Ok(info) => Some(info),
                Err(error) => {
                    tracing::debug!(path = %path.display(), %error, "ignoring an unreadable instance record");
                    None
                }
            }
        })
        .filter(|info| process_alive(info.pid))
        .collect();
    running.sort_by_key(|info| (info.kind.rank(), std::cmp::Reverse(info.started_ms)));
    running
}

/// The instance clients take: the one a person watches (the window, then
/// the newest relay), else a background instance.
pub fn find() -> Option<InstanceInfo> {
    list().into_iter().next()
}

/// The running instance `wanted` names: a pid, or a kind (`window`,
/// `relay`, `background`: the newest of it).
///
/// # Errors
/// `INVALID_ARGUMENT` naming `--instance` when nothing running matches,
/// with what runs.
pub fn select(wanted: &str) -> Result<InstanceInfo> {
    let running = list();
    let found = match (wanted.parse::<u32>(), InstanceKind::named(wanted)) {
        (Ok(pid), _) => running.iter().find(|info| info.pid == pid),
        (_, Some(kind)) => running.iter().find(|info| info.kind == kind),
        _ => {
            return Err(BrowserError::invalid(
                "--instance",
                format!("{wanted:?} is neither a pid nor window, relay or background"),
            ));
        }
    };
    found.cloned().ok_or_else(|| {
        let what_runs = if running.is_empty() {
            "no instance runs".to_owned()
        } else {
            let names: Vec<String> = running.iter().map(InstanceInfo::described).collect();
            format!("running: {}", names.join(", "))
        };
        BrowserError::invalid(
            "--instance",
            format!("nothing running is {wanted:?} ({what_runs})"),
        )
    })
}

/// Whether a process with this id exists.
pub fn process_alive(pid: u32) -> bool {
    platform::process::alive(pid)
}

/// Waits until process `pid` has exited, at most `within`; true if it has.
/// Event-driven where the OS allows it, so it works for processes that
/// are not our children.
pub async fn wait_for_exit(pid: u32, within: Duration) -> bool {
    platform::process::wait_for_exit(pid, within).await
}

/// Resolves when process `pid` has exited (at once when there is none).
pub async fn exited(pid: u32) {
    platform::process::exited(pid).await;
}

/// Keeps a runtime file while alive; removes it on drop if it still names
/// this process (a newer instance may have replaced it).
#[derive(Debug)]
pub struct Published {
    path: PathBuf,
}

/// The one field every runtime file has: whose it is.
#[derive(Deserialize)]
struct Owner {
    pid: u32,
}

impl Drop for Published {
    fn drop(&mut self) {
        let ours = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str::<Owner>(&text).ok())
            .is_some_and(|owner| owner.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `info` as this instance's record (atomically, mode 0600).
pub fn publish(info: &InstanceInfo) -> Result<Published> {
    write_private(&instances_dir()?.join(format!("{}.json", info.pid)), info)
}

/// Writes `record` as JSON to `path` in the runtime directory: to a
/// temporary file of this process's first (mode 0600), then renamed over
/// `path`, so a reader sees the old file or the whole new one. `record`
/// must have a `pid` field: the file is removed when the returned guard
/// drops, if it still names this process.
pub fn write_private(path: &Path, record: &impl Serialize) -> Result<Published> {
    let temporary = path.with_extension(format!("{}.tmp", std::process::id()));
    let fail = |e: std::io::Error| {
        BrowserError::invalid(
            "runtime directory",
            format!("cannot write {}: {e}", path.display()),
        )
    };
    let text = serde_json::to_string_pretty(record).map_err(|e| fail(std::io::Error::other(e)))?;
    let mut file = platform::files::private_file(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .open(&temporary)
    .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(fail)?;
    Ok(Published {
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_id_that_does_not_exist_is_not_alive() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(0));
        assert!(!process_alive(u32::MAX));
    }
}
