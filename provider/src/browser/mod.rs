//! [`Browser`]: agent sessions, their tabs, and the operations on them.
//!
//! A session is one agent's view of the browser. Tabs it opens (and popups
//! its pages open) belong to it and are addressed by short handles (`t1`,
//! `t2`, …) that are unique across the browser and never reused, so a
//! handle from another session is recognisably not yours (`TAB_NOT_OWNED`).
//! Operations act on the session's active tab. Each takes a cancellation
//! token and runs within a time bound.
//!
//! `Browser` is a facade over small pieces, one concern each:
//!
//! | piece | what it is about |
//! |---|---|
//! | [`crate::host::Supervisor`] | the browser process: launch, watch, relaunch |
//! | `recovery` | what a restart means for sessions and tabs (reopened, told) |
//! | `calls` | how a call meets a restarting browser or a crashed page |
//! | `tabs` | the registry: who has which tab (plain data, one lock) |
//! | `ids` | session ids and tab handles, the shell's own names |
//! | `sessions` | opening and ending sessions; listing, switching, closing tabs |
//! | `operations` | page operations on the active tab (work in [`crate::page`]) |
//! | `action` | an action and what it caused (popups, downloads, dialogs) |
//! | `blocked` | navigations the host policy refused, explained |
//! | `person` | the person's tabs and the tab strip |
//! | `control` | who holds control |
//! | `handoff` | an agent asks the person to do something |
//! | `activity` | what people watching follow: calls, gestures, tab changes |

mod action;
mod activity;
mod blocked;
mod calls;
mod control;
mod handoff;
mod ids;
mod operations;
mod person;
mod recovery;
mod sessions;
mod tabs;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::control::Control;
use crate::error::{BrowserError, Result};
use crate::host::{BrowserState, Supervisor, ViewHost, ViewId};
use crate::page::{Budget, Page};
use crate::policy::{NavigationPolicy, SessionPolicy};
use crate::registry::BrowserProvider;
use crate::snapshot::SnapshotLimits;

pub use action::ActionReport;
pub use activity::Activity;
pub use blocked::BlockedNavigation;
pub use handoff::{HandoffReport, HandoffRequest};
pub use ids::{SessionId, TabHandle};
pub use operations::NavigationRequest;
pub use person::LiveTab;
pub use recovery::clock;
pub use sessions::{TabInfo, TargetOwner};
use tabs::{Registry, Tab};

/// Limits and policy for every session of a [`Browser`].
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// Which URLs may be opened.
    pub policy: NavigationPolicy,
    /// Bound for a navigation to load.
    pub navigation_timeout: Duration,
    /// Bound for `execute`, content extraction and screenshots.
    pub operation_timeout: Duration,
    /// Default cap for content, in characters.
    pub content_max_chars: usize,
    /// Cap for a script's result, in bytes of JSON.
    pub execute_max_result_bytes: usize,
    /// Pixel ceiling for screenshots.
    pub screenshot_max_pixels: u64,
    /// Byte ceiling for screenshots.
    pub screenshot_max_bytes: usize,
    /// Limits for snapshots.
    pub snapshot_limits: SnapshotLimits,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            policy: NavigationPolicy::default(),
            navigation_timeout: Duration::from_secs(30),
            operation_timeout: Duration::from_secs(30),
            content_max_chars: 100_000,
            execute_max_result_bytes: 256 * 1024,
            screenshot_max_pixels: 4096 * 4096,
            screenshot_max_bytes: 5 * 1024 * 1024,
            snapshot_limits: SnapshotLimits::default(),
        }
    }
}

/// Sizes of what the browser keeps: sessions, tabs, ownership records and
/// the host's own; where they must return once sessions and tabs are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Census {
    /// Agent sessions.
    pub sessions: usize,
    /// Tabs, agents' and the person's.
    pub tabs: usize,
    /// Tab ownership records.
    pub owners: usize,
    /// The current host's.
    pub host: crate::host::HostCensus,
}

/// Options for a new session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Give the session its own browser context (cookies, storage) instead
    /// of the shared profile.
    pub isolated: bool,
}

/// The browser as agents use it: sessions, tabs, operations.
#[derive(Clone)]
pub struct Browser {
    inner: Arc<Inner>,
}

impl fmt::Debug for Browser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Browser")
            .field("host", &self.inner.host())
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// Where the pages live: the current browser's host (replaced when a
    /// supervised browser restarts).
    host: Mutex<Arc<dyn ViewHost>>,
    /// Keeps the browser running, when it is supervised.
    supervisor: Option<Arc<Supervisor>>,
    /// The browser generation whose tabs have been reopened (see
    /// [`recovery`]); calls wait for it after a restart.
    recovered: watch::Sender<u64>,
    /// Limits and policy.
    config: BrowserConfig,
    /// Sessions and tab ownership.
    registry: Mutex<Registry>,
    /// Bumped whenever a tab opens, closes, changes hands, or shows a new
    /// URL or title.
    tabs_changed: watch::Sender<u64>,
    /// Whether people watch (a live view runs): then every tab is followed
    /// for the tab strip and the timeline (see [`Browser::follow_pages_for_people`]).
    people_watch: std::sync::atomic::AtomicBool,
    /// Agents or a person.
    control: Control,
    /// What agents are doing, for people watching.
    activity: tokio::sync::broadcast::Sender<Activity>,
    /// Where agents act, for people watching.
    hand: crate::page::hand::Hand,
    /// An agent's request for the person to do something, while it waits.
    handoff: watch::Sender<Option<HandoffRequest>>,
}

impl Browser {
    /// A browser over `host`, for as long as that host lives. Spawns a
    /// task (on the current runtime) that adopts popups into their
    /// opener's session and forgets closed tabs.
    pub fn new(host: Arc<dyn ViewHost>, config: BrowserConfig) -> Self {
        Self::build(host, None, config)
    }

    /// A browser that outlives its browser processes: when `supervisor`
    /// brings up a new one, sessions keep their ids and tab handles, their
    /// tabs are reopened at their last URLs, and each session is told.
    ///
    /// # Errors
    /// `NOT_CONNECTED` or `BROWSER_CRASHED` when the supervisor has no
    /// browser running.
    pub fn supervised(supervisor: Arc<Supervisor>, config: BrowserConfig) -> Result<Self> {
        let state = supervisor.state();
        let Some(host) = supervisor.host() else {
            return Err(state
                .unavailable()
                .unwrap_or_else(|| BrowserError::not_connected("no browser")));
        };
        let browser = Self::build(host, Some(Arc::clone(&supervisor)), config);
        tokio::spawn(recovery::follow_browser(
            Arc::downgrade(&browser.inner),
            supervisor.watch(),
        ));
        Ok(browser)
    }

    fn build(
        host: Arc<dyn ViewHost>,
        supervisor: Option<Arc<Supervisor>>,
        config: BrowserConfig,
    ) -> Self {
        let generation = supervisor
            .as_ref()
            .and_then(|s| s.state().generation())
            .unwrap_or(1);
        let inner = Arc::new(Inner {
            host: Mutex::new(Arc::clone(&host)),
            supervisor,
            recovered: watch::Sender::new(generation),
            config,
            registry: Mutex::new(Registry::default()),
            tabs_changed: watch::Sender::new(0),
            people_watch: std::sync::atomic::AtomicBool::new(false),
            control: Control::default(),
            activity: tokio::sync::broadcast::Sender::new(256),
            hand: crate::page::hand::Hand::default(),
            handoff: watch::Sender::new(None),
        });
        tokio::spawn(sessions::follow_views(
            Arc::downgrade(&inner),
            host.watch_views(),
        ));
        Self { inner }
    }

    /// The host behind this browser now (after a restart, the new one's).
    pub fn host(&self) -> Arc<dyn ViewHost> {
        self.inner.host()
    }

    /// The browser's lifecycle (running, restarting, given up), when it is
    /// supervised.
    pub fn watch_browser(&self) -> Option<watch::Receiver<BrowserState>> {
        self.inner.supervisor.as_ref().map(|s| s.watch())
    }

    /// What the browser keeps track of now, for leak checks and `/status`.
    pub fn census(&self) -> Census {
        let registry = self.inner.lock();
        Census {
            sessions: registry.sessions.len(),
            tabs: registry.all_tabs().count(),
            owners: registry.owners.len(),
            host: self.inner.host().census(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &BrowserConfig {
        &self.inner.config
    }
}

impl BrowserProvider for Browser {
    fn id(&self) -> &str {
        "chromium"
    }

    fn available(&self) -> bool {
        true
    }
}

impl Inner {
    /// Prepares `view` for operations under the policy of `session` (the
    /// browser's alone for the person's tabs).
    async fn attach_page(
        &self,
        host: Arc<dyn ViewHost>,
        view: ViewId,
        session: Option<&SessionId>,
    ) -> Result<Page> {
        let blocking = self.policy_of(session).page_blocking();
        Page::attach(host, view, blocking, self.hand.clone()).await
    }

    /// The policy `session`'s tabs live under: the browser's, narrowed by
    /// the session's own host lists (the browser's alone for `None` or a
    /// session that ended).
    fn policy_of(&self, session: Option<&SessionId>) -> SessionPolicy {
        let own = session
            .and_then(|session| {
                let registry = self.lock();
                registry.sessions.get(session).map(|s| s.hosts.clone())
            })
            .unwrap_or_default();
        SessionPolicy {
            browser: self.config.policy.clone(),
            own,
        }
    }

    /// The policy of the session that owns `tab` (the browser's alone for
    /// the person's tabs).
    fn policy_of_tab(&self, tab: &TabHandle) -> SessionPolicy {
        let session = self.lock().owners.get(tab).cloned();
        self.policy_of(session.as_ref())
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn budget(
        &self,
        operation: &'static str,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<Budget> {
        let timeout = timeout.unwrap_or(self.config.operation_timeout);
        if timeout.is_zero() {
            return Err(BrowserError::invalid("timeoutMs", "must be at least 1"));
        }
        Ok(Budget::new(operation, timeout, cancel.clone()))
    }

    /// A budget for an agent action: refused while a person holds control,
    /// interrupted if they take it during the action.
    fn mutating_budget(
        &self,
        operation: &'static str,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<Budget> {
        let interrupt = self.control.admit_mutation()?;
        Ok(self
            .budget(operation, timeout, cancel)?
            .with_interrupt(interrupt))
    }

    /// A budget for the person's own navigations: not interrupted by a
    /// takeover (the person is the one acting), bounded like any navigation.
    fn person_budget(&self) -> Budget {
        Budget::new(
            "person navigation",
            self.config.navigation_timeout,
            CancellationToken::new(),
        )
    }

    /// The current browser's host.
    fn host(&self) -> Arc<dyn ViewHost> {
        Arc::clone(&self.host.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
