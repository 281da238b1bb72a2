//! Options shared by every command that needs a browser, and starting it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use browser_provider::browser::NavigationRequest;
use browser_provider::cdp::protocol::PageSetDocumentContent;
use browser_provider::host::{
    ChromiumHost, CreateViewOptions, LaunchOptions, Launcher, PoolHost, PoolOptions, ProfileDir,
    RestartPolicy, Supervisor, ViewHost, ViewHostExt,
};
use browser_provider::policy::HostRules;
use browser_provider::{Browser, Result};

use crate::config::Config;

/// How often a server looks again for a person's browser with remote
/// debugging on while none is found (`--browser auto-connect`).
const AUTO_CONNECT_RETRY: Duration = Duration::from_secs(2);

/// `--connect` without an endpoint: the running browser-shell.
pub const RUNNING_SHELL: &str = "running";

/// `--browser extension`: the person's own Chrome (a path `./extension` is a path).
pub const EXTENSION: &str = "extension";

/// `--browser auto-connect`: the person's running browser with remote
/// debugging on (a path `./auto-connect` is a path).
pub const AUTO_CONNECT: &str = "auto-connect";

/// How to get a browser and which URLs it may open. Shared by every
/// command that starts a browser (listed once in `--help`, under their own
/// heading; `-h` leaves them out).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Browser options (for the browser a command starts)")]
pub struct BrowserOptions {
    /// Chromium executable; or `extension`: work in the person's own Chrome
    /// through the browser-shell extension (set up with `browser-shell
    /// extension install`, or `extension pair`); or `auto-connect`: attach to the person's running
    /// Chrome, Chromium or Edge whose remote debugging they turned on
    /// (chrome://inspect/#remote-debugging in Chrome 144+, or started with
    /// --remote-debugging-port), found through the DevToolsActivePort file
    /// in its user data directory (the usual ones of this system; or only
    /// --profile DIR; or $BROWSER_SHELL_AUTO_CONNECT_DIRS, a PATH-like list).
    /// Agents see and drive only the tabs they open there; the person's
    /// tabs stay invisible to them; --isolated gives each agent a context
    /// without the person's cookies; --cdp-endpoint is refused. When the
    /// browser quits and comes back, the shell attaches again.
    /// Default: $BROWSER_SHELL_CHROMIUM; then, without a
    /// window, the headless shell (/usr/lib/chromium/chromium-headless-shell,
    /// chromium-headless-shell on PATH); then chromium, chromium-browser,
    /// google-chrome, google-chrome-stable on PATH.
    #[arg(long, value_name = "PATH", global = true, hide_short_help = true)]
    pub browser: Option<PathBuf>,
    /// Use an already running browser instead of launching one: a CDP
    /// endpoint (ws://… or http://host:port). For `mcp`, without a value:
    /// attach to the running browser-shell (relay or desktop) found in the
    /// per-user runtime file.
    #[arg(
        long,
        value_name = "ENDPOINT",
        global = true, hide_short_help = true,
        num_args = 0..=1,
        default_missing_value = RUNNING_SHELL,
        conflicts_with = "browser"
    )]
    pub connect: Option<String>,
    /// Take each agent session's browser from this pool instead of
    /// launching one: a CDP endpoint that hands out a fresh browser per
    /// connection (browserless: ws://HOST:PORT/chromium?token=…). A session
    /// takes its browser on its first call and gives it back when it ends;
    /// while the pool is full a call waits (--pool-wait-ms) and then answers
    /// BUSY. A pool browser that dies is replaced for its session alone
    /// (BROWSER_RESTARTED). Set it in the environment rather than on the
    /// command line when the URL carries the pool's token.
    #[arg(
        long,
        value_name = "WS_URL",
        env = "BROWSER_SHELL_POOL",
        hide_env_values = true,
        global = true,
        hide_short_help = true,
        conflicts_with_all = ["connect", "browser"]
    )]
    pub pool: Option<String>,
    /// How long a session waits for a free browser from a full pool before
    /// BUSY (default 30000; kept 5 s inside the call's bound).
    #[arg(long, value_name = "MS", global = true, hide_short_help = true)]
    pub pool_wait_ms: Option<u64>,
    /// Show the browser window (default: headless).
    #[arg(long, global = true, hide_short_help = true)]
    pub headed: bool,
    /// Keep the browser profile (cookies, logins) in this directory.
    /// Default: the desktop window keeps one in
    /// $XDG_DATA_HOME/browser-shell/profile (its agents share it, so a
    /// person's sign-in helps them; --isolated keeps them apart); other
    /// commands use a temporary profile removed on exit. With
    /// `--browser auto-connect`: the user data directory of the person's
    /// browser to attach to (searched alone, never written to).
    #[arg(
        long,
        value_name = "DIR",
        global = true,
        hide_short_help = true,
        conflicts_with = "temporary_profile"
    )]
    pub profile: Option<PathBuf>,
    /// The desktop window too: a fresh temporary profile, removed on exit.
    #[arg(long, global = true, hide_short_help = true)]
    pub temporary_profile: bool,
    /// Render pages at this many device pixels per CSS pixel (1 to 3), so
    /// the live picture is sharp on a 2× screen; agents' screenshots keep
    /// CSS pixels. Default: the desktop window follows GDK_SCALE, else 1.
    #[arg(long, value_name = "N", global = true, hide_short_help = true)]
    pub device_scale_factor: Option<f64>,
    /// Only allow these hosts (and their subdomains); repeatable. On a
    /// tool command (open, act, …) they narrow the running instance's
    /// policy for that command only.
    #[arg(
        long = "allow-host",
        value_name = "HOST",
        value_parser = host_rule,
        global = true,
        hide_short_help = true
    )]
    pub allowed_hosts: Vec<String>,
    /// Never allow these hosts (and their subdomains); repeatable. On a
    /// tool command, for that command only.
    #[arg(
        long = "block-host",
        value_name = "HOST",
        value_parser = host_rule,
        global = true,
        hide_short_help = true
    )]
    pub blocked_hosts: Vec<String>,
    /// Secrets agents may type by name without seeing them: a TOML file
    /// only you can read (chmod 600) of `name = "value"` or
    /// `name = { value = "…", hosts = ["bank.example"] }`. Variables
    /// BROWSER_SHELL_SECRET_<NAME> add more.
    #[arg(
        long = "secrets",
        value_name = "FILE",
        global = true,
        hide_short_help = true
    )]
    pub secrets_file: Option<PathBuf>,
    /// Append an audit trail here, one JSON object per line: every tool
    /// call (arguments with typed text and secrets withheld, outcome,
    /// duration), takeover, return and handoff, CDP client and browser
    /// restart. Rotate it with logrotate (copytruncate).
    #[arg(long, value_name = "FILE", global = true, hide_short_help = true)]
    pub audit_log: Option<PathBuf>,
    /// Read settings from this TOML file (keys: httpOnly, timeoutMs, navigationTimeoutMs,
    /// contentMaxChars, snapshotMaxElements, snapshotMaxBytes, tabTools,
    /// executeEnabled, isolated, sessionLeaseMs, allowedHosts, blockedHosts, outputDir,
    /// headless, browserPath, profileDir, deviceScaleFactor, connect, secretsFile,
    /// browser = "launch" | "extension" | "auto-connect", extensionPort). Flags
    /// override it.
    #[arg(long, value_name = "FILE", global = true, hide_short_help = true)]
    pub config: Option<PathBuf>,
    /// Print the resulting configuration as TOML and exit.
    #[arg(long, global = true, hide_short_help = true)]
    pub print_config: bool,
}

/// Who watches the browser a command starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// People (the relay, the desktop window): they get the start page in
    /// a first tab of theirs.
    People,
    /// Agents only (MCP, `fetch`, `demo`): nobody would see a start page;
    /// it would only cost a renderer process and a few milliseconds.
    AgentsOnly,
}

/// A running browser: one the shell keeps running, or the person's own.
#[derive(Debug)]
pub struct Started {
    /// Sessions and operations.
    pub browser: Browser,
    /// What holds the browser.
    engine: Engine,
}

/// What holds the browser behind a [`Started`].
#[derive(Debug)]
enum Engine {
    /// A supervisor relaunches (or reconnects to) the browser when it goes
    /// away; kept to shut it down in order.
    Supervised(Arc<Supervisor>),
    /// Each session's browser from a pool: given back on shutdown.
    Pool(Arc<PoolHost>),
    /// The person's Chrome through the extension: nothing of ours to stop
    /// but the bridge (and its lock, let go of with it).
    Extension(crate::browser::extension::bridge::Held),
}

impl Started {
    /// The supervisor (for the CDP endpoint, which follows the browser
    /// across restarts); `None` in the person's own Chrome.
    pub fn supervisor(&self) -> Option<&Arc<Supervisor>> {
        match &self.engine {
            Engine::Supervised(supervisor) => Some(supervisor),
            Engine::Pool(_) | Engine::Extension(_) => None,
        }
    }

    /// The extension host when this is the person's own Chrome (for the
    /// bridge's owner record, see [`crate::browser::extension::bridge`]).
    pub fn extension_host(&self) -> Option<&Arc<browser_provider::host::ExtensionHost>> {
        match &self.engine {
            Engine::Extension(held) => Some(&held.host),
            Engine::Supervised(_) | Engine::Pool(_) => None,
        }
    }

    /// Closes the browser (or the connection to it) and removes a temporary
    /// profile; in the person's own Chrome, stops listening for the extension.
    pub async fn shutdown(self) {
        match self.engine {
            Engine::Supervised(supervisor) => supervisor.shutdown().await,
            Engine::Pool(pool) => pool.shutdown().await,
            Engine::Extension(held) => drop(held),
        }
    }
}

/// A `--allow-host`/`--block-host` value: a host name or an IP address.
fn host_rule(value: &str) -> std::result::Result<String, String> {
    let rules = HostRules {
        allowed_hosts: Vec::new(),
        blocked_hosts: vec![value.to_owned()],
    };
    match rules.validated() {
        Ok(_) => Ok(value.to_owned()),
        Err(error) => Err(match error {
            browser_provider::BrowserError::InvalidArgument { problem, .. } => problem,
            other => other.to_string(),
        }),
    }
}

impl BrowserOptions {
    /// These options without their host lists, and the host lists: a tool
    /// command applies its host lists to its own call (they narrow the
    /// instance's policy for that command) rather than to the instance it
    /// may start.
    pub fn without_host_rules(&self) -> (Self, HostRules) {
        let mut rest = self.clone();
        let rules = HostRules {
            allowed_hosts: std::mem::take(&mut rest.allowed_hosts),
            blocked_hosts: std::mem::take(&mut rest.blocked_hosts),
        };
        (rest, rules)
    }

    /// These options as command-line flags again, for an instance this
    /// process starts on its behalf (paths made absolute, since it runs
    /// elsewhere).
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let absolute = |path: &PathBuf| std::path::absolute(path).unwrap_or_else(|_| path.clone());
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        match &self.browser {
            Some(word) if word.as_os_str() == EXTENSION || word.as_os_str() == AUTO_CONNECT => {
                args.extend(["--browser".into(), word.into()]);
            }
            Some(path) => args.extend(["--browser".into(), absolute(path).into()]),
            None => {}
        }
        if let Some(endpoint) = &self.connect {
            args.extend(["--connect".into(), endpoint.into()]);
        }
        if let Some(pool) = &self.pool {
            args.extend(["--pool".into(), pool.into()]);
        }
        if let Some(wait) = self.pool_wait_ms {
            args.extend(["--pool-wait-ms".into(), wait.to_string().into()]);
        }
        if self.headed {
            args.push("--headed".into());
        }
        if let Some(dir) = &self.profile {
            args.extend(["--profile".into(), absolute(dir).into()]);
        }
        if self.temporary_profile {
            args.push("--temporary-profile".into());
        }
        if let Some(scale) = self.device_scale_factor {
            args.extend(["--device-scale-factor".into(), scale.to_string().into()]);
        }
        for host in &self.allowed_hosts {
            args.extend(["--allow-host".into(), host.into()]);
        }
        for host in &self.blocked_hosts {
            args.extend(["--block-host".into(), host.into()]);
        }
        if let Some(path) = &self.secrets_file {
            args.extend(["--secrets".into(), absolute(path).into()]);
        }
        if let Some(path) = &self.audit_log {
            args.extend(["--audit-log".into(), absolute(path).into()]);
        }
        if let Some(path) = &self.config {
            args.extend(["--config".into(), absolute(path).into()]);
        }
        args
    }

    /// The configuration: the file (if any), then these flags on top.
    pub fn resolve(&self) -> Result<Config> {
        let mut config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        match &self.browser {
            Some(word) if word.as_os_str() == EXTENSION => {
                config.browser = crate::config::BrowserKind::Extension;
            }
            Some(word) if word.as_os_str() == AUTO_CONNECT => {
                config.browser = crate::config::BrowserKind::AutoConnect;
            }
            Some(path) => config.browser_path = Some(path.clone()),
            None => {}
        }
        if let Some(endpoint) = &self.connect {
            config.connect = Some(endpoint.clone());
        }
        if let Some(pool) = &self.pool {
            config.pool = Some(pool.clone());
        }
        if let Some(wait) = self.pool_wait_ms {
            config.pool_wait_ms = wait;
        }
        if self.headed {
            config.headless = false;
        }
        if let Some(dir) = &self.profile {
            config.profile_dir = Some(dir.clone());
        }
        if let Some(scale) = self.device_scale_factor {
            config.device_scale_factor = Some(scale);
        }
        if !self.allowed_hosts.is_empty() {
            config.allowed_hosts = self.allowed_hosts.clone();
        }
        if !self.blocked_hosts.is_empty() {
            config.blocked_hosts = self.blocked_hosts.clone();
        }
        if let Some(path) = &self.secrets_file {
            config.secrets_file = Some(path.clone());
        }
        config.validate()?;
        // Variables that are not Unicode cannot be secrets' names or values.
        let variables = std::env::vars_os()
            .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)));
        config.secrets = crate::secrets::load(config.secrets_file.as_deref(), variables)?;
        Ok(config)
    }
}

impl Started {
    /// Launches (or connects to) the browser the configuration names, and
    /// keeps it running from then on.
    pub async fn start(config: &Config, audience: Audience) -> Result<Self> {
        if config.browser == crate::config::BrowserKind::Extension {
            return Self::in_persons_chrome(config).await;
        }
        if let Some(options) = config.pool_options() {
            return Ok(Self::from_pool(options, config));
        }
        let policy = config.browser_config().policy;
        let launcher = match &config.connect {
            Some(endpoint) if endpoint == RUNNING_SHELL => {
                return Err(browser_provider::BrowserError::invalid(
                    "connect",
                    "--connect without an endpoint attaches `mcp` to a running browser-shell; \
                     other commands need a CDP endpoint (ws://… or http://host:port)",
                ));
            }
            Some(endpoint) => {
                if let Some(rules) = policy.host_resolver_rules() {
                    tracing::warn!(
                        "the host lists are checked for navigations the shell starts, but the \
                         network of a browser it connects to is not under its control; start \
                         that browser with --host-resolver-rules=\"{rules}\" to enforce them there"
                    );
                }
                Launcher::Connect {
                    endpoint: endpoint.clone(),
                    command_timeout: Duration::from_secs(30),
                }
            }
            None if config.browser == crate::config::BrowserKind::AutoConnect => {
                if let Some(rules) = policy.host_resolver_rules() {
                    tracing::warn!(
                        "the host lists are checked for navigations agents start, but the \
                         person's browser is theirs: its network is not under the shell's \
                         control ({rules})"
                    );
                }
                crate::browser::auto_connect::launcher(config)
            }
            None => Launcher::Launch(LaunchOptions {
                executable: config.browser_path.clone(),
                headless: config.headless,
                profile: config
                    .profile_dir
                    .clone()
                    .map_or(ProfileDir::Temporary, ProfileDir::Persistent),
                host_resolver_rules: policy.host_resolver_rules(),
                // Rendered for a sharp screen: the live picture's frames
                // come at this scale (emulating it per page does not change
                // the headless screencast's frames).
                extra_args: config
                    .device_scale_factor
                    .filter(|scale| *scale != 1.0)
                    .map(|scale| vec![format!("--force-device-scale-factor={scale}")])
                    .unwrap_or_default(),
                ..LaunchOptions::default()
            }),
        };
        let nested = policy.nested_blocked_patterns();
        if !nested.is_empty() {
            tracing::warn!(
                ?nested,
                "blocked hosts inside an allowed domain are refused for pages' own requests and \
                 navigations, but not for their workers, WebSockets and out-of-process frames \
                 (Chromium's resolver cannot tell them apart); list the allowed subdomains instead"
            );
        }
        let launched = matches!(launcher, Launcher::Launch(_));
        let supervisor = Supervisor::start(launcher, RestartPolicy::default()).await?;
        if launched
            && audience == Audience::People
            && let Some(host) = supervisor.host()
        {
            show_start_page(&host).await;
        }
        let browser = Browser::supervised(Arc::clone(&supervisor), config.browser_config())?;
        // The start page (and a persistent profile's tabs) are the person's.
        // A browser we connect to is someone else's: leave its tabs alone
        // (with auto-connect, the person's own tabs stay invisible to agents).
        if launched && let Err(error) = browser.adopt_unowned_views().await {
            tracing::debug!(%error, "could not list the first tabs");
        }
        Ok(Self {
            browser,
            engine: Engine::Supervised(supervisor),
        })
    }

    /// [`Started::start`] for a server that answers its clients while the
    /// browser starts: with auto-connect, a person's browser not found yet
    /// (remote debugging off, or the browser not running) is looked for
    /// again every [`AUTO_CONNECT_RETRY`] until it is, and `waiting` is
    /// told each time, so calls meanwhile answer why (with the way to turn
    /// remote debugging on). A browser that is found but refuses the
    /// connection is not tried again: each try would ask the person anew.
    ///
    /// # Errors
    /// As [`Started::start`], except nothing found with auto-connect.
    pub async fn start_when_found(
        config: &Config,
        audience: Audience,
        waiting: impl Fn(&browser_provider::BrowserError),
    ) -> Result<Self> {
        loop {
            match Self::start(config, audience).await {
                Err(error @ browser_provider::BrowserError::RemoteDebuggingOff { .. })
                    if config.browser == crate::config::BrowserKind::AutoConnect =>
                {
                    tracing::debug!(%error, "no browser to attach to yet");
                    waiting(&error);
                    tokio::time::sleep(AUTO_CONNECT_RETRY).await;
                }
                started => return started,
            }
        }
    }

    /// Sessions' browsers from a pool: nothing is taken until a session
    /// needs it, so the shell serves at once.
    fn from_pool(options: PoolOptions, config: &Config) -> Self {
        if let Some(rules) = config.browser_config().policy.host_resolver_rules() {
            tracing::warn!(
                "the host lists are checked for navigations agents start, but the pool's \
                 browsers are not launched by the shell: start them with \
                 --host-resolver-rules=\"{rules}\" to enforce the lists on their network too"
            );
        }
        let pool = Arc::new(PoolHost::new(options));
        tracing::info!(
            pool = pool.endpoint_shown(),
            "sessions take their browsers from a pool"
        );
        let browser = Browser::new(
            Arc::clone(&pool) as Arc<dyn ViewHost>,
            config.browser_config(),
        );
        Self {
            browser,
            engine: Engine::Pool(pool),
        }
    }

    /// The pool sessions take their browsers from, when there is one.
    pub fn pool(&self) -> Option<&Arc<PoolHost>> {
        match &self.engine {
            Engine::Pool(pool) => Some(pool),
            Engine::Supervised(_) | Engine::Extension(_) => None,
        }
    }

    /// The person's own Chrome through the paired extension. The shell
    /// works from the start; calls say `NOT_CONNECTED` until the extension
    /// connects (it does by itself once Chrome runs).
    async fn in_persons_chrome(config: &Config) -> Result<Self> {
        let held = crate::browser::extension::start_host().await?;
        Ok(Self::with_extension_host(held, config))
    }

    /// The person's own Chrome through an extension host already bound
    /// (`mcp` binds it first, to join another shell's when it cannot).
    pub fn with_extension_host(
        held: crate::browser::extension::bridge::Held,
        config: &Config,
    ) -> Self {
        let host = Arc::clone(&held.host);
        if let Some(rules) = config.browser_config().policy.host_resolver_rules() {
            tracing::warn!(
                "the host lists are checked for navigations agents start, but the person's \
                 Chrome is theirs: its network is not under the shell's control ({rules})"
            );
        }
        let browser = Browser::new(host.clone(), config.browser_config());
        crate::browser::extension::follow_browser(&host, &browser);
        Self {
            browser,
            engine: Engine::Extension(held),
        }
    }
}

/// Shows `url` in the person's first tab (the start page), or in a new
/// tab of theirs when there is none.
///
/// # Errors
/// `NAVIGATION_BLOCKED` for a URL the policy refuses; navigation errors.
pub async fn show_first_page(browser: &Browser, url: &str) -> Result<()> {
    let first = browser.unowned_tabs().await?.into_iter().next();
    match first {
        Some(tab) => {
            browser
                .person_navigate(&tab.handle, NavigationRequest::Url(url))
                .await
        }
        None => browser.open_person_tab(url).await.map(|_| ()),
    }
}

/// The page a person sees in the browser's first tab before the agent opens anything.
const START_PAGE: &str = include_str!("../../../assets/start.html");

/// Opens the start page from `assets/` as the first tab of a browser we launched.
/// Cosmetic: failure is logged, never fatal.
async fn show_start_page(host: &ChromiumHost) {
    if let Err(error) = try_show_start_page(host).await {
        tracing::debug!(%error, "could not show the start page");
    }
}

async fn try_show_start_page(host: &ChromiumHost) -> Result<()> {
    let view = host.create_view(CreateViewOptions::default()).await?;
    host.call(
        &view,
        &PageSetDocumentContent {
            frame_id: view.as_str().to_owned(),
            html: START_PAGE.to_owned(),
        },
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_launched_browser_shows_the_start_page() {
        let started = Started::start(&Config::default(), Audience::People)
            .await
            .unwrap();
        let host = started.browser.host();
        let first = host.list_views().await.unwrap().remove(0);
        let title = host
            .call(
                &first.id,
                &browser_provider::cdp::protocol::RuntimeEvaluate {
                    expression: "document.title".into(),
                    return_by_value: true,
                    await_promise: false,
                    user_gesture: false,
                    timeout: None,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(title.result.value, Some(serde_json::json!("browser-shell")));
        started.shutdown().await;
    }
}
