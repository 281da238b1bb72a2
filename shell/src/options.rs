//! Options shared by every command that needs a browser, and starting it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use browser_provider::host::{ChromiumHost, LaunchOptions, ProfileDir};
use browser_provider::policy::NavigationPolicy;
use browser_provider::{Browser, BrowserConfig, Result};

/// How to get a browser and which URLs it may open.
#[derive(Debug, Clone, clap::Args)]
pub struct BrowserOptions {
    /// Chromium executable. Default: $BROWSER_SHELL_CHROMIUM, then chromium,
    /// chromium-browser, google-chrome, google-chrome-stable on PATH.
    #[arg(long, value_name = "PATH", global = true)]
    pub browser: Option<PathBuf>,
    /// Use an already running browser instead of launching one
    /// (ws://… or http://host:port).
    #[arg(
        long,
        value_name = "ENDPOINT",
        global = true,
        conflicts_with = "browser"
    )]
    pub connect: Option<String>,
    /// Show the browser window (default: headless).
    #[arg(long, global = true)]
    pub headed: bool,
    /// Keep the browser profile (cookies, logins) in this directory.
    /// Default: a temporary profile removed on exit.
    #[arg(long, value_name = "DIR", global = true)]
    pub profile: Option<PathBuf>,
    /// Only allow these hosts (and their subdomains); repeatable.
    #[arg(long = "allow-host", value_name = "HOST", global = true)]
    pub allowed_hosts: Vec<String>,
    /// Never allow these hosts (and their subdomains); repeatable.
    #[arg(long = "block-host", value_name = "HOST", global = true)]
    pub blocked_hosts: Vec<String>,
}

/// A running browser and the host behind it.
#[derive(Debug)]
pub struct Started {
    /// Sessions and operations.
    pub browser: Browser,
    /// The host, kept to shut it down in order.
    host: Arc<ChromiumHost>,
}

impl Started {
    /// Closes the browser (or the connection to it) and removes a temporary profile.
    pub async fn shutdown(self) {
        self.host.shutdown().await;
    }
}

impl BrowserOptions {
    /// Launches or connects to the browser.
    pub async fn start(&self) -> Result<Started> {
        let host = match &self.connect {
            Some(endpoint) => ChromiumHost::connect(endpoint, Duration::from_secs(30)).await?,
            None => {
                ChromiumHost::launch(LaunchOptions {
                    executable: self.browser.clone(),
                    headless: !self.headed,
                    profile: self
                        .profile
                        .clone()
                        .map_or(ProfileDir::Temporary, ProfileDir::Persistent),
                    ..LaunchOptions::default()
                })
                .await?
            }
        };
        let host = Arc::new(host);
        let config = BrowserConfig {
            policy: NavigationPolicy {
                allowed_hosts: self.allowed_hosts.clone(),
                blocked_hosts: self.blocked_hosts.clone(),
                ..NavigationPolicy::default()
            },
            ..BrowserConfig::default()
        };
        let browser = Browser::new(host.clone(), config);
        Ok(Started { browser, host })
    }
}
