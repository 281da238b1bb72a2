//! Configuration: the seed plugin's keys and ours, from a TOML file
//! (`--config`), overridden by command-line flags, shown by `--print-config`.
//!
//! ```toml
//! httpOnly = true
//! timeoutMs = 60000
//! allowedHosts = ["127.0.0.1", "example.org"]
//! outputDir = "shots"
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use browser_provider::policy::NavigationPolicy;
use browser_provider::snapshot::SnapshotLimits;
use browser_provider::snapshot::render::RenderLimits;
use browser_provider::{BrowserConfig, BrowserError, Result};
use browser_tools::agent::{AgentOptions, PersonsBrowser};
use browser_tools::words::Surface;
use serde::{Deserialize, Serialize};

/// Which browser agents work in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BrowserKind {
    /// A Chromium the shell launches (or the endpoint `connect` names).
    #[default]
    Launch,
    /// The person's own Chrome, through the browser-shell extension (native
    /// messaging, or the paired WebSocket).
    Extension,
    /// The person's running Chrome, Chromium or Edge whose remote
    /// debugging they turned on (`chrome://inspect/#remote-debugging`),
    /// found through its `DevToolsActivePort` file; agents see only the
    /// tabs they open there.
    AutoConnect,
}

/// Every setting, with its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    /// Allow only http(s) navigation (and about:blank).
    pub http_only: bool,
    /// Elements a snapshot walks at most.
    pub snapshot_max_elements: u32,
    /// Bytes of snapshot text at most.
    pub snapshot_max_bytes: usize,
    /// Default cap for page content, in characters.
    pub content_max_chars: usize,
    /// A tool call running longer is cancelled and returns TIMEOUT.
    pub timeout_ms: u64,
    /// A navigation (open, navigate, a reload) that has not loaded by then
    /// returns where it got to; one that has not even started fails with TIMEOUT.
    pub navigation_timeout_ms: u64,
    /// Offer the tab tools (list, switch, close).
    pub tab_tools: bool,
    /// Offer browser_execute.
    pub execute_enabled: bool,
    /// Each agent session gets its own cookies and storage.
    pub isolated: bool,
    /// An agent session idle this long (no tool call) ends and its tabs close.
    pub session_lease_ms: u64,
    /// Only these hosts (and subdomains) may be opened; empty: any.
    pub allowed_hosts: Vec<String>,
    /// These hosts (and subdomains) may never be opened.
    pub blocked_hosts: Vec<String>,
    /// Also save screenshots as files here.
    pub output_dir: Option<PathBuf>,
    /// Run the browser without a window.
    pub headless: bool,
    /// The Chromium executable.
    pub browser_path: Option<PathBuf>,
    /// A persistent profile directory (default: temporary). With
    /// `browser = "auto-connect"`: the user data directory of the browser
    /// to attach to, searched instead of the usual ones.
    pub profile_dir: Option<PathBuf>,
    /// Device pixels per CSS pixel the browser renders at (1 to 3): 2 makes
    /// the live picture sharp on a 2× screen. Agents' screenshots keep CSS
    /// pixels. Default: the desktop window follows `GDK_SCALE`, else 1.
    pub device_scale_factor: Option<f64>,
    /// Use a running browser at this endpoint instead of launching one.
    pub connect: Option<String>,
    /// A browser pool (`ws://…`, with its token if it takes one) that hands
    /// out a fresh browser per connection, such as browserless: each agent
    /// session gets a browser of its own from it, taken on the session's
    /// first call and given back when the session ends.
    pub pool: Option<String>,
    /// How long a session waits for a free browser from a full pool before
    /// its call answers `BUSY` (at most the call's bound less 5 s).
    pub pool_wait_ms: u64,
    /// `launch` (default), `extension` (the person's own Chrome through
    /// the extension) or `auto-connect` (the person's running browser with
    /// remote debugging on).
    pub browser: BrowserKind,
    /// The extension bridge's port on 127.0.0.1 for `browser-shell extension pair`.
    pub extension_port: u16,
    /// Secrets for agents to type by name (a TOML file only you can read).
    pub secrets_file: Option<PathBuf>,
    /// The secrets themselves (from `secretsFile` and the environment);
    /// never written out.
    #[serde(skip)]
    pub secrets: browser_tools::secrets::Secrets,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            http_only: true,
            snapshot_max_elements: SnapshotLimits::default().max_nodes,
            snapshot_max_bytes: SnapshotLimits::default().render.max_bytes,
            content_max_chars: BrowserConfig::default().content_max_chars,
            timeout_ms: 60_000,
            navigation_timeout_ms: 30_000,
            tab_tools: true,
            execute_enabled: true,
            isolated: false,
            session_lease_ms: 600_000,
            allowed_hosts: Vec::new(),
            blocked_hosts: Vec::new(),
            output_dir: None,
            headless: true,
            browser_path: None,
            profile_dir: None,
            device_scale_factor: None,
            connect: None,
            pool: None,
            pool_wait_ms: 30_000,
            browser: BrowserKind::Launch,
            extension_port: browser_provider::host::extension::pairing::DEFAULT_PORT,
            secrets_file: None,
            secrets: browser_tools::secrets::Secrets::default(),
        }
    }
}

impl Config {
    /// Reads a TOML file.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the file and what is wrong (unknown key,
    /// wrong type, unreadable file).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            BrowserError::invalid("config", format!("cannot read {}: {e}", path.display()))
        })?;
        let config: Self = toml::from_str(&text).map_err(|e| {
            BrowserError::invalid("config", format!("{}: {}", path.display(), e.message()))
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("timeoutMs", self.timeout_ms == 0),
            ("navigationTimeoutMs", self.navigation_timeout_ms == 0),
            ("sessionLeaseMs", self.session_lease_ms == 0),
            ("poolWaitMs", self.pool_wait_ms == 0),
            ("contentMaxChars", self.content_max_chars == 0),
            ("snapshotMaxElements", self.snapshot_max_elements == 0),
            ("snapshotMaxBytes", self.snapshot_max_bytes < 1024),
        ];
        for (key, bad) in positive {
            if bad {
                return Err(BrowserError::invalid(key, "is too small"));
            }
        }
        if self.browser == BrowserKind::Extension {
            if self.connect.is_some() {
                return Err(BrowserError::invalid(
                    "browser",
                    "extension and connect exclude each other: the extension is the way into the person's Chrome",
                ));
            }
            if self.isolated {
                return Err(BrowserError::invalid(
                    "isolated",
                    "the person's own Chrome has no isolated contexts: every agent session shares its cookies; leave isolated off with the extension",
                ));
            }
        }
        if let Some(pool) = &self.pool {
            if self.connect.is_some() || self.browser != BrowserKind::Launch {
                return Err(BrowserError::invalid(
                    "pool",
                    "a pool gives each session a browser of its own; it excludes connect, extension and auto-connect",
                ));
            }
            if !(pool.starts_with("ws://") || pool.starts_with("wss://")) {
                return Err(BrowserError::invalid(
                    "pool",
                    format!(
                        "{:?} is not a WebSocket URL: give the pool's ws://… or wss://… endpoint (browserless: ws://HOST:PORT/chromium?token=…)",
                        pool.split('?').next().unwrap_or(pool)
                    ),
                ));
            }
        }
        if self.browser == BrowserKind::AutoConnect && self.connect.is_some() {
            return Err(BrowserError::invalid(
                "browser",
                "auto-connect and connect exclude each other: auto-connect finds the person's browser by itself; \
                 give an endpoint with connect alone",
            ));
        }
        if let Some(scale) = self.device_scale_factor
            && !(1.0..=3.0).contains(&scale)
        {
            return Err(BrowserError::invalid(
                "deviceScaleFactor",
                format!("{scale} is out of range: give 1 to 3 (2 for a 2× screen)"),
            ));
        }
        Ok(())
    }

    /// The configuration as TOML (for `--print-config`).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The provider's settings.
    pub fn browser_config(&self) -> BrowserConfig {
        let defaults = SnapshotLimits::default();
        let limits = SnapshotLimits {
            max_nodes: self.snapshot_max_elements,
            render: RenderLimits {
                max_bytes: self.snapshot_max_bytes,
                ..defaults.render
            },
            ..defaults
        };
        BrowserConfig {
            policy: NavigationPolicy {
                http_only: self.http_only,
                allowed_hosts: self.allowed_hosts.clone(),
                blocked_hosts: self.blocked_hosts.clone(),
            },
            content_max_chars: self.content_max_chars,
            navigation_timeout: Duration::from_millis(self.navigation_timeout_ms),
            snapshot_limits: limits,
            ..BrowserConfig::default()
        }
    }

    /// The tool options a configuration asks for.
    pub fn agent_options(&self) -> AgentOptions {
        AgentOptions {
            // A pool's sessions each have a browser of their own.
            isolated: self.isolated || self.pool.is_some(),
            call_timeout: self.call_timeout(),
            tab_tools: self.tab_tools,
            execute_enabled: self.execute_enabled,
            output_dir: self.output_dir.clone(),
            lease: std::time::Duration::from_millis(self.session_lease_ms),
            secrets: self.secrets.clone(),
            persons_browser: match self.browser {
                BrowserKind::Extension => Some(PersonsBrowser::Extension),
                BrowserKind::AutoConnect => Some(PersonsBrowser::RemoteDebugging),
                BrowserKind::Launch => None,
            },
            surface: Surface::Mcp,
        }
    }

    /// The pool to take sessions' browsers from, if one is set: how long a
    /// session waits is kept inside the call's bound, so that a full pool
    /// answers `BUSY` rather than `TIMEOUT`.
    pub fn pool_options(&self) -> Option<browser_provider::host::PoolOptions> {
        let endpoint = self.pool.clone()?;
        let inside_call = self.call_timeout().saturating_sub(Duration::from_secs(5));
        Some(browser_provider::host::PoolOptions {
            endpoint,
            wait: Duration::from_millis(self.pool_wait_ms)
                .min(inside_call)
                .max(Duration::from_secs(1)),
            command_timeout: Duration::from_secs(30),
        })
    }

    /// The per-call bound for tools.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_use_the_seed_keys_and_refuse_unknown_ones() {
        let dir = tempfile_dir();
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            "httpOnly = false\ntimeoutMs = 5000\nallowedHosts = [\"127.0.0.1\"]\n",
        )
        .unwrap();
        let config = Config::load(&good).unwrap();
        assert!(!config.http_only);
        assert_eq!(config.call_timeout(), Duration::from_secs(5));
        assert_eq!(
            config.browser_config().policy.allowed_hosts,
            vec!["127.0.0.1".to_owned()]
        );
        assert!(config.tab_tools, "unset keys keep their defaults");

        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "httpOnly = true\nspeed = 11\n").unwrap();
        let error = Config::load(&bad).unwrap_err();
        assert_eq!(error.code(), "INVALID_ARGUMENT");
        assert!(error.to_string().contains("speed"), "{error}");

        std::fs::write(&bad, "timeoutMs = 0\n").unwrap();
        assert!(
            Config::load(&bad)
                .unwrap_err()
                .to_string()
                .contains("timeoutMs")
        );
        assert_eq!(
            Config::load(&dir.join("missing.toml")).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn printing_round_trips() {
        let config = Config {
            blocked_hosts: vec!["ads.test".into()],
            ..Config::default()
        };
        let printed = config.to_toml();
        assert!(
            printed.contains("blockedHosts = [\"ads.test\"]"),
            "{printed}"
        );
        assert_eq!(toml::from_str::<Config>(&printed).unwrap(), config);
    }

    #[test]
    fn auto_connect_is_a_browser_kind_that_excludes_connect() {
        let config: Config =
            toml::from_str("browser = \"auto-connect\"\nisolated = true\n").unwrap();
        assert_eq!(config.browser, BrowserKind::AutoConnect);
        // Isolated contexts work in a browser reached over CDP.
        assert!(config.validate().is_ok());
        assert!(config.to_toml().contains("browser = \"auto-connect\""));
        let both = Config {
            connect: Some("ws://127.0.0.1:9/devtools/browser/x".into()),
            ..config
        };
        let error = both.validate().unwrap_err();
        assert_eq!(error.code(), "INVALID_ARGUMENT");
        assert!(error.to_string().contains("exclude each other"), "{error}");
    }

    fn tempfile_dir() -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("browser-shell-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
