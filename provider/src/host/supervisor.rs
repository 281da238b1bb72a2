//! [`Supervisor`]: keeps a browser for as long as the shell runs.
//!
//! Browsers die: the OOM killer, a crash, a person killing a process, a
//! remote endpoint going away. The supervisor owns the browser's
//! lifecycle: it notices the end of the current [`ChromiumHost`] (the
//! process exited or the connection closed), relaunches it (or reconnects
//! to the endpoint) with backoff, and publishes each step as a
//! [`BrowserState`]. Everything above it (sessions, tabs, the live view,
//! the CDP endpoint) follows that state; nothing above it restarts
//! anything. A launched browser that keeps dying is given up on after a
//! few restarts in a short window, with the cause kept in the state.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::active_port::{self, SearchPath};
use super::{ChromiumHost, LaunchOptions};
use crate::error::{BrowserError, Result};

/// How to get a browser, the first time and after it went away.
#[derive(Debug, Clone)]
pub enum Launcher {
    /// Launch a Chromium child with these options (the same flags, and the
    /// same profile when persistent, a fresh temporary one otherwise).
    Launch(LaunchOptions),
    /// Connect to a browser someone else runs.
    Connect {
        /// `ws://…` or `http://host:port`.
        endpoint: String,
        /// Bound for each CDP command.
        command_timeout: Duration,
    },
    /// Attach to a person's Chrome, Chromium or Edge whose remote
    /// debugging they turned on, found through its `DevToolsActivePort`
    /// file (see [`active_port`](super::active_port)). Searched again on
    /// every start, so a browser that quit and came back (on a new port)
    /// is found again.
    AutoConnect {
        /// The user data directories to search.
        search: SearchPath,
        /// Bound for each CDP command (and for the person to allow the
        /// connection when their browser asks).
        command_timeout: Duration,
    },
}

impl Launcher {
    async fn start(&self) -> Result<ChromiumHost> {
        match self {
            Self::Launch(options) => ChromiumHost::launch(options.clone()).await,
            Self::Connect {
                endpoint,
                command_timeout,
            } => ChromiumHost::connect(endpoint, *command_timeout).await,
            Self::AutoConnect {
                search,
                command_timeout,
            } => auto_connect(search, *command_timeout).await,
        }
    }

    fn reconnects(&self) -> bool {
        matches!(self, Self::Connect { .. } | Self::AutoConnect { .. })
    }
}

/// Finds a browser with remote debugging on and connects to it.
///
/// # Errors
/// `NOT_CONNECTED` ([`BrowserError::RemoteDebuggingOff`]) saying what was
/// searched when none is found; `NOT_CONNECTED` naming the browser when
/// one is found but the connection fails (the person declined it, or the
/// browser went away meanwhile).
async fn auto_connect(search: &SearchPath, command_timeout: Duration) -> Result<ChromiumHost> {
    let discovery = active_port::discover(search).await;
    let Some(found) = discovery.found else {
        return Err(discovery.not_found());
    };
    tracing::info!(browser = %found.browser, dir = %found.dir.display(), port = found.port, "attaching to a browser with remote debugging on");
    ChromiumHost::connect(&found.endpoint(), command_timeout)
        .await
        .map_err(|error| match error {
            BrowserError::NotConnected { reason } => BrowserError::not_connected(format!(
                "{found} has remote debugging on, but the connection failed ({reason}); \
                 if the browser asked whether to allow remote debugging, allow it"
            )),
            other => other,
        })
}

/// When to relaunch and when to give up.
#[derive(Debug, Clone)]
pub struct RestartPolicy {
    /// Waits before successive relaunch attempts; the last repeats.
    pub delays: Vec<Duration>,
    /// A launched browser that stops more than `max_restarts` times within
    /// `window` is not relaunched again.
    pub window: Duration,
    /// See `window`.
    pub max_restarts: usize,
    /// Failed launch attempts in a row before giving up (a connection is
    /// retried for as long as the shell runs).
    pub max_attempts: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            delays: [500, 1000, 2000, 4000]
                .into_iter()
                .map(Duration::from_millis)
                .collect(),
            window: Duration::from_secs(60),
            max_restarts: 5,
            max_attempts: 5,
        }
    }
}

impl RestartPolicy {
    fn delay(&self, step: usize) -> Duration {
        self.delays
            .get(step)
            .or(self.delays.last())
            .copied()
            .unwrap_or_default()
    }
}

/// The last time the browser went away and came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// Why it went away ("killed by signal 9 (SIGKILL)").
    pub cause: String,
    /// When it was back.
    pub at: SystemTime,
}

/// Where the browser is in its life.
#[derive(Debug, Clone)]
pub enum BrowserState {
    /// Running; `generation` counts launches (1 for the first).
    Running {
        /// 1, then one more for every relaunch or reconnection.
        generation: u64,
        /// The browser now.
        host: Arc<ChromiumHost>,
        /// The last restart, if there was one.
        restarted: Option<Restart>,
    },
    /// It went away and is being relaunched (or reconnected to).
    Restarting {
        /// Why it went away.
        cause: String,
        /// When it went away.
        since: SystemTime,
        /// Which attempt is under way (1 for the first).
        attempt: u32,
        /// A connection being re-established rather than a launch.
        reconnecting: bool,
    },
    /// It went away and will not be relaunched.
    Failed {
        /// Why, in one line.
        cause: String,
        /// When it was given up on.
        at: SystemTime,
    },
    /// Shut down by the shell.
    Stopped,
}

impl BrowserState {
    /// The generation running now, if any.
    pub fn generation(&self) -> Option<u64> {
        match self {
            Self::Running { generation, .. } => Some(*generation),
            _ => None,
        }
    }

    /// Why calls cannot reach a browser now (`None` while it runs).
    pub fn unavailable(&self) -> Option<BrowserError> {
        match self {
            Self::Running { .. } => None,
            Self::Restarting {
                cause,
                attempt,
                reconnecting: true,
                ..
            } => Some(BrowserError::not_connected(format!(
                "the connection to the browser was lost ({cause}); reconnecting (attempt {attempt})"
            ))),
            Self::Restarting { cause, .. } => Some(BrowserError::not_connected(format!(
                "the browser stopped ({cause}) and is restarting"
            ))),
            Self::Failed { cause, .. } => Some(BrowserError::BrowserCrashed {
                detail: format!("{cause}; it could not be restarted: restart browser-shell"),
            }),
            Self::Stopped => Some(BrowserError::not_connected("the browser was shut down")),
        }
    }
}

/// Keeps one browser running (see the module docs).
#[derive(Debug)]
pub struct Supervisor {
    launcher: Launcher,
    policy: RestartPolicy,
    state: watch::Sender<BrowserState>,
    /// Cancelled by [`Supervisor::shutdown`]: an end after that is ours.
    stopping: CancellationToken,
}

impl Supervisor {
    /// Starts the browser and keeps it running from then on.
    ///
    /// # Errors
    /// What the first launch or connection fails with: a browser that
    /// cannot start at all is not retried.
    pub async fn start(launcher: Launcher, policy: RestartPolicy) -> Result<Arc<Self>> {
        let host = Arc::new(launcher.start().await?);
        let supervisor = Arc::new(Self {
            launcher,
            policy,
            state: watch::Sender::new(BrowserState::Running {
                generation: 1,
                host: Arc::clone(&host),
                restarted: None,
            }),
            stopping: CancellationToken::new(),
        });
        tokio::spawn(supervise(Arc::downgrade(&supervisor), host));
        Ok(supervisor)
    }

    /// The state now.
    pub fn state(&self) -> BrowserState {
        self.state.borrow().clone()
    }

    /// Follows the state.
    pub fn watch(&self) -> watch::Receiver<BrowserState> {
        self.state.subscribe()
    }

    /// The browser running now, if one is.
    pub fn host(&self) -> Option<Arc<ChromiumHost>> {
        match &*self.state.borrow() {
            BrowserState::Running { host, .. } => Some(Arc::clone(host)),
            _ => None,
        }
    }

    /// Closes the browser for good (a persistent profile is flushed, a
    /// temporary one removed). Idempotent.
    pub async fn shutdown(&self) {
        self.stopping.cancel();
        let host = self.host();
        self.state.send_replace(BrowserState::Stopped);
        if let Some(host) = host {
            host.shutdown().await;
        }
    }
}

/// Follows each browser to its end and brings up the next.
async fn supervise(supervisor: Weak<Supervisor>, mut host: Arc<ChromiumHost>) {
    let mut generation = 1;
    let mut recent_ends: Vec<Instant> = Vec::new();
    loop {
        let stopping = match supervisor.upgrade() {
            Some(supervisor) => supervisor.stopping.clone(),
            None => return,
        };
        let cause = tokio::select! {
            cause = host.ended() => cause,
            () = stopping.cancelled() => return,
        };
        if stopping.is_cancelled() {
            return;
        }
        let Some(this) = supervisor.upgrade() else {
            host.shutdown().await;
            return;
        };
        let since = SystemTime::now();
        tracing::warn!(%cause, generation, "the browser went away");
        tracing::info!(target: crate::AUDIT, event = "browser_gone", %cause, generation);
        recent_ends.retain(|end| end.elapsed() < this.policy.window);
        recent_ends.push(Instant::now());
        if !this.launcher.reconnects() && recent_ends.len() > this.policy.max_restarts {
            let cause = format!(
                "{cause}; it stopped {} times within {} s, so it is not restarted again",
                recent_ends.len(),
                this.policy.window.as_secs()
            );
            tracing::error!(%cause, "giving up on the browser");
            tracing::info!(target: crate::AUDIT, event = "browser_failed", %cause);
            this.state.send_replace(BrowserState::Failed {
                cause,
                at: SystemTime::now(),
            });
            host.shutdown().await;
            return;
        }
        // Said first (calls waiting on the cause go on at once), then the
        // old browser is reaped, its helpers stopped, a temporary profile
        // removed (that can take a while for a large profile).
        this.state.send_replace(BrowserState::Restarting {
            cause: cause.clone(),
            since,
            attempt: 1,
            reconnecting: this.launcher.reconnects(),
        });
        host.shutdown().await;
        let mut attempt: u32 = 0;
        host = loop {
            attempt += 1;
            // The first attempt was announced above.
            if attempt > 1 {
                this.state.send_replace(BrowserState::Restarting {
                    cause: cause.clone(),
                    since,
                    attempt,
                    reconnecting: this.launcher.reconnects(),
                });
            }
            let step = recent_ends.len() - 1 + attempt as usize - 1;
            tokio::select! {
                () = tokio::time::sleep(this.policy.delay(step)) => {}
                () = stopping.cancelled() => return,
            }
            let started = tokio::select! {
                started = this.launcher.start() => started,
                () = stopping.cancelled() => return,
            };
            match started {
                Ok(started) => break Arc::new(started),
                Err(error) if this.launcher.reconnects() || attempt < this.policy.max_attempts => {
                    tracing::warn!(%error, attempt, "the browser did not come back yet");
                }
                Err(error) => {
                    let cause = format!("{cause}; relaunching failed {attempt} times: {error}");
                    tracing::error!(%cause, "giving up on the browser");
                    tracing::info!(target: crate::AUDIT, event = "browser_failed", %cause);
                    this.state.send_replace(BrowserState::Failed {
                        cause,
                        at: SystemTime::now(),
                    });
                    return;
                }
            }
        };
        if stopping.is_cancelled() {
            host.shutdown().await;
            return;
        }
        generation += 1;
        tracing::info!(generation, %cause, "the browser is back");
        tracing::info!(target: crate::AUDIT, event = "browser_restarted", %cause, generation);
        this.state.send_replace(BrowserState::Running {
            generation,
            host: Arc::clone(&host),
            restarted: Some(Restart {
                cause,
                at: SystemTime::now(),
            }),
        });
    }
}
