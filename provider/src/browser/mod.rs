//! [`Browser`]: agent sessions, their tabs, and the operations on them.
//!
//! A session is one agent's view of the browser. Tabs it opens (and popups
//! its pages open) belong to it and are addressed by short handles (`t1`,
//! `t2`, …) that are unique across the browser and never reused, so a
//! handle from another session is recognisably not yours (`TAB_NOT_OWNED`).
//! Operations act on the session's active tab. Each takes a cancellation
//! token and runs within a time bound.

mod blocked;
mod calls;
mod handoff;
mod person;
mod recovery;
mod tabs;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::control::{Control, ControlState, Holder};
use crate::error::{BrowserError, Result};
use crate::host::{BrowserState, CreateViewOptions, Supervisor, ViewEvent, ViewHost, ViewId};
use crate::page::act::{self, ActOutcome, Action, Target};
use crate::page::content::{ContentRequest, ContentResult};
use crate::page::execute::{ExecuteRequest, ExecuteResult};
use crate::page::navigate::{NavigationOutcome, NavigationTarget};
use crate::page::screenshot::{Screenshot, ScreenshotRequest};
use crate::page::{
    Budget, DialogRecord, Page, content, execute, input, navigate, screenshot, wait,
};
use crate::policy::NavigationPolicy;
use crate::registry::BrowserProvider;
use crate::snapshot::{self, Scope, Snapshot, SnapshotLimits};

pub use blocked::BlockedNavigation;
pub use handoff::{HandoffReport, HandoffRequest};
pub use recovery::clock;
use tabs::{Registry, SessionState, Tab};

/// Opaque id of an agent session (`s1`, `s2`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tab handle as models see it (`t1`, `t2`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TabHandle(String);

impl TabHandle {
    /// Parses a handle given by a caller.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` (field `tab`) unless it looks like `t<number>`.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let valid = text.len() > 1
            && text.starts_with('t')
            && text[1..].bytes().all(|b| b.is_ascii_digit());
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(BrowserError::invalid(
                "tab",
                format!("{text:?} is not a tab handle such as t1"),
            ))
        }
    }

    /// The handle as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number in `t<number>` (handles sort by it: the order tabs opened).
    pub fn number(&self) -> u64 {
        self.0.trim_start_matches('t').parse().unwrap_or(0)
    }
}

impl fmt::Display for TabHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One tab as a session sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabInfo {
    /// Its handle.
    pub handle: TabHandle,
    /// Current URL (empty for a blank tab).
    pub url: String,
    /// Current title.
    pub title: String,
    /// Whether it is the session's active tab.
    pub active: bool,
}

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

/// One tab as the person watching sees it: whose it is and what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTab {
    /// The agent session that owns it; `None`: the person's.
    pub session: Option<SessionId>,
    /// Its handle.
    pub handle: TabHandle,
    /// The view behind it.
    pub view: ViewId,
    /// Current URL.
    pub url: String,
    /// Current title.
    pub title: String,
    /// The page's icon as a `data:` URL (loaded by the browser), known while people watch.
    pub icon: Option<String>,
    /// Opened by an external CDP client (which owns its viewport).
    pub external: bool,
    /// Its page crashed; a reload brings it back.
    pub crashed: bool,
    /// Whether it is its session's active tab.
    pub active: bool,
}

/// Something an agent did, for the person watching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// The agent session.
    pub session: SessionId,
    /// The tool, such as `browser_act`.
    pub tool: String,
    /// A short summary of the arguments.
    pub summary: String,
    /// The arguments as an audit log keeps them: typed text withheld,
    /// secrets' values hidden.
    pub arguments: String,
    /// `None` while running; then `Ok(())` or the error code.
    pub outcome: Option<std::result::Result<(), String>>,
    /// How long it took, once finished.
    pub millis: Option<u64>,
    /// Once finished, what came of it in a few words: "navigated",
    /// "+2 ~1 −0", "new tab t3", "dialog", the error code.
    pub headline: String,
    /// Once finished, the result as the agent read it (secrets hidden),
    /// cut to a few kilobytes.
    pub result: String,
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

/// What an action caused besides its outcome.
#[derive(Default)]
struct Caused {
    /// Views it opened (popups, new tabs).
    opened: Vec<ViewId>,
    /// Downloads it started, refused: file names (or URLs).
    downloads_refused: Vec<String>,
}

impl Caused {
    /// Records `event` if it came from the action's tab `view`.
    fn note(&mut self, view: &ViewId, event: ViewEvent) {
        match event {
            ViewEvent::Opened(info) if info.opener.as_ref() == Some(view) => {
                self.opened.push(info.id);
            }
            ViewEvent::DownloadRefused {
                frame,
                url,
                file_name,
            } if frame == view.as_str() => {
                self.downloads_refused
                    .push(if file_name.is_empty() { url } else { file_name });
            }
            _ => {}
        }
    }
}

/// How long an action that navigated without replacing the document
/// waits for the browser to say it was a download.
const DOWNLOAD_NOTICE: Duration = Duration::from_millis(500);

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
        tokio::spawn(follow_views(Arc::downgrade(&inner), host.watch_views()));
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

    /// One-line notices for the session's next call (the browser was
    /// restarted and its tabs reopened), oldest first; each is given once.
    pub fn take_notices(&self, session: &SessionId) -> Vec<String> {
        let mut registry = self.inner.lock();
        registry
            .session_mut(session)
            .map(|state| std::mem::take(&mut state.notices))
            .unwrap_or_default()
    }

    /// Notifies whenever a tab opens, closes, changes hands (claimed, given,
    /// returned) or shows a new URL or title: what the tab strip shows.
    pub fn watch_tabs(&self) -> watch::Receiver<u64> {
        self.inner.tabs_changed.subscribe()
    }

    /// A person takes control: agent operations in flight stop with
    /// `HUMAN_INTERVENED`, and agent actions are refused until control is
    /// returned. Returns the new control epoch.
    pub fn take_control(&self) -> u64 {
        let epoch = self.inner.control.take();
        tracing::info!(epoch, "a person took control");
        tracing::info!(target: crate::AUDIT, event = "takeover", epoch);
        epoch
    }

    /// The person returns control to the agents. Returns the new epoch.
    pub fn return_control(&self) -> u64 {
        let epoch = self.inner.control.give_back();
        tracing::info!(epoch, "control returned to the agents");
        tracing::info!(target: crate::AUDIT, event = "return", epoch);
        epoch
    }

    /// Who holds control now.
    pub fn control(&self) -> ControlState {
        self.inner.control.state()
    }

    /// Follows control changes.
    pub fn watch_control(&self) -> watch::Receiver<ControlState> {
        self.inner.control.watch()
    }

    /// True once after control came back to the agents since this session
    /// last asked: the page may have changed under it.
    pub fn control_returned_since_last_call(&self, session: &SessionId) -> bool {
        let now = self.inner.control.state();
        let mut registry = self.inner.lock();
        let Ok(state) = registry.session_mut(session) else {
            return false;
        };
        let returned = now.holder == Holder::Agent && now.epoch > state.seen_epoch;
        if now.holder == Holder::Agent {
            state.seen_epoch = now.epoch;
        }
        returned
    }

    /// The configuration in force.
    pub fn config(&self) -> &BrowserConfig {
        &self.inner.config
    }

    /// Opens a new session (with no tabs yet).
    pub async fn open_session(&self, options: SessionOptions) -> Result<SessionId> {
        self.inner.await_browser().await?;
        let context = if options.isolated {
            let host = self.inner.host();
            let created = host.create_context().await;
            Some(self.inner.explained(&host, created).await?)
        } else {
            None
        };
        let mut registry = self.inner.lock();
        registry.next_session += 1;
        let id = SessionId(format!("s{}", registry.next_session));
        registry.sessions.insert(
            id.clone(),
            SessionState {
                tabs: Vec::new(),
                active: None,
                context,
                seen_epoch: self.inner.control.state().epoch,
                notices: Vec::new(),
            },
        );
        Ok(id)
    }

    /// Opens `url` in the active tab, or in a new tab when `new_tab` is set
    /// or the session has none. Returns the tab used and where it ended up.
    pub async fn open(
        &self,
        session: &SessionId,
        url: &str,
        new_tab: bool,
        cancel: &CancellationToken,
    ) -> Result<(TabHandle, NavigationOutcome)> {
        let target = self.inner.config.policy.check(url)?;
        let budget = self.inner.mutating_budget(
            "open",
            Some(self.inner.config.navigation_timeout),
            cancel,
        )?;
        self.inner.await_browser().await?;
        let tab = match self.inner.active_tab(session) {
            Ok(tab) if !new_tab => tab,
            Ok(_) | Err(BrowserError::TabNotFound { .. }) => {
                let host = self.inner.host();
                let created = self.new_tab(session, &budget).await;
                self.inner.explained(&host, created).await?
            }
            Err(other) => return Err(other),
        };
        let tab = self.inner.unstuck(session, tab).await?;
        let cursor = tab.page.network_cursor();
        // Opening a URL in a crashed tab is how it comes back.
        let navigated = self
            .inner
            .guarded(
                &tab,
                navigate::navigate(&tab.page, NavigationTarget::Url(target), &budget),
            )
            .await;
        let outcome = self
            .inner
            .blocked_explained(&tab.handle, &tab.page, cursor, navigated)
            .await?;
        Ok((tab.handle, outcome))
    }

    /// Navigates the active tab: a URL (checked by policy), `back`, `forward` or `reload`.
    pub async fn navigate(
        &self,
        session: &SessionId,
        target: NavigationRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<NavigationOutcome> {
        let target = self.inner.checked_target(target)?;
        self.inner.await_browser().await?;
        // A crashed tab may be reloaded or navigated: that revives it.
        let mut tab = self.inner.active_tab(session)?;
        let target = match target {
            // A stuck page cannot let go of its document: go there afresh.
            NavigationTarget::Reload if tab.page.is_unresponsive() => {
                match self.inner.config.policy.check(&tab.last_url) {
                    Ok(url) => NavigationTarget::Url(url),
                    Err(_) => NavigationTarget::Reload,
                }
            }
            other => other,
        };
        if matches!(target, NavigationTarget::Url(_)) {
            tab = self.inner.unstuck(session, tab).await?;
        }
        let budget = self.inner.mutating_budget(
            "navigate",
            Some(self.inner.config.navigation_timeout),
            cancel,
        )?;
        let cursor = tab.page.network_cursor();
        let navigated = self
            .inner
            .guarded(&tab, navigate::navigate(&tab.page, target, &budget))
            .await;
        self.inner
            .blocked_explained(&tab.handle, &tab.page, cursor, navigated)
            .await
    }

    /// Lists the session's tabs with their current URL and title.
    pub async fn list_tabs(&self, session: &SessionId) -> Result<Vec<TabInfo>> {
        self.inner.await_browser().await?;
        let (tabs, active) = {
            let registry = self.inner.lock();
            let state = registry.session(session)?;
            (state.tabs.clone(), state.active.clone())
        };
        let host = self.inner.host();
        let listed = host.list_views().await;
        let views = self.inner.explained(&host, listed).await?;
        Ok(tabs
            .into_iter()
            .filter_map(|tab| {
                let view = views.iter().find(|v| &v.id == tab.page.view())?;
                Some(TabInfo {
                    active: active.as_ref() == Some(&tab.handle),
                    handle: tab.handle,
                    url: if view.url == "about:blank" {
                        String::new()
                    } else {
                        view.url.clone()
                    },
                    title: view.title.clone(),
                })
            })
            .collect())
    }

    /// The session's active tab, if it has one.
    pub fn active_tab(&self, session: &SessionId) -> Result<TabHandle> {
        Ok(self.inner.active_tab(session)?.handle)
    }

    /// Makes `tab` the session's active tab and shows it.
    pub async fn switch_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = {
            let mut registry = self.inner.lock();
            let view = registry.owned_tab(session, tab)?.page.view().clone();
            registry.session_mut(session)?.active = Some(tab.clone());
            view
        };
        let host = self.inner.host();
        let shown = host.show_view(&view).await;
        self.inner.explained(&host, shown).await
    }

    /// Closes one tab. Closing the active tab activates the most recently
    /// opened remaining one; closing the last leaves the session with none.
    pub async fn close_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = {
            let registry = self.inner.lock();
            registry.owned_tab(session, tab)?.page.view().clone()
        };
        let host = self.inner.host();
        let closed = host.destroy_view(&view).await;
        self.inner.explained(&host, closed).await?;
        self.inner.forget_view(&view);
        Ok(())
    }

    /// Closes every tab of the session; the session stays open, with no tabs.
    pub async fn reset(&self, session: &SessionId) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let views: Vec<ViewId> = {
            let registry = self.inner.lock();
            registry
                .session(session)?
                .tabs
                .iter()
                .map(|t| t.page.view().clone())
                .collect()
        };
        for view in &views {
            let host = self.inner.host();
            let closed = host.destroy_view(view).await;
            self.inner.explained(&host, closed).await?;
            self.inner.forget_view(view);
        }
        Ok(())
    }

    /// Ends the session: closes its tabs and its isolated context. Closing
    /// an unknown or already closed session succeeds.
    pub async fn close_session(&self, session: &SessionId) -> Result<()> {
        let Some(state) = self.inner.lock().sessions.remove(session) else {
            return Ok(());
        };
        {
            let mut registry = self.inner.lock();
            for tab in &state.tabs {
                registry.owners.remove(&tab.handle);
            }
            // Kept and claimed tabs go back to the person, handles unchanged.
            registry
                .unowned
                .extend(state.tabs.iter().filter(|t| t.keep).cloned());
        }
        self.inner
            .tabs_changed
            .send_modify(|generation| *generation += 1);
        // Kept tabs stay open and become the person's; the rest close.
        for tab in state.tabs.iter().filter(|t| !t.keep) {
            self.inner.host().destroy_view(tab.page.view()).await?;
        }
        // Disposing an isolated context would close kept tabs too.
        if let Some(context) = &state.context
            && !state.tabs.iter().any(|t| t.keep)
        {
            self.inner.host().destroy_context(context).await?;
        }
        Ok(())
    }

    /// Marks a tab as a deliverable for the person: it stays open when the
    /// session ends (and is no longer the agent's then).
    pub fn keep_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        let mut registry = self.inner.lock();
        registry.owned_tab(session, tab)?;
        let state = registry.session_mut(session)?;
        if let Some(kept) = state.tabs.iter_mut().find(|t| &t.handle == tab) {
            kept.keep = true;
        }
        Ok(())
    }

    /// Runs JavaScript in the active tab.
    pub async fn execute(
        &self,
        session: &SessionId,
        script: &str,
        args: Vec<serde_json::Value>,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<ExecuteResult> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("execute", timeout, cancel)?;
        let request = ExecuteRequest {
            script: script.to_owned(),
            args,
            max_result_bytes: self.inner.config.execute_max_result_bytes,
        };
        self.inner
            .guarded(&tab, execute::execute(&tab.page, &request, &budget))
            .await
    }

    /// Fetches the active tab's content. `max_chars` defaults to the configured cap.
    pub async fn content(
        &self,
        session: &SessionId,
        mut request: ContentRequest,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<ContentResult> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.budget("content", timeout, cancel)?;
        if request.max_chars == 0 {
            request.max_chars = self.inner.config.content_max_chars;
        }
        self.inner
            .guarded(&tab, content::content(&tab.page, &request, &budget))
            .await
    }

    /// Captures the active tab, within the configured ceilings.
    pub async fn screenshot(
        &self,
        session: &SessionId,
        mut request: ScreenshotRequest,
        cancel: &CancellationToken,
    ) -> Result<Screenshot> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.budget("screenshot", None, cancel)?;
        request.max_pixels = request
            .max_pixels
            .min(self.inner.config.screenshot_max_pixels);
        request.max_bytes = request
            .max_bytes
            .min(self.inner.config.screenshot_max_bytes);
        self.inner
            .guarded(&tab, screenshot::screenshot(&tab.page, &request, &budget))
            .await
    }

    /// Console messages and uncaught exceptions of the active tab after
    /// cursor `since`, at `min_level` or above, at most `limit`.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn console(
        &self,
        session: &SessionId,
        since: u64,
        min_level: crate::page::console::Level,
        limit: usize,
    ) -> Result<crate::page::console::ConsoleRead> {
        let tab = self.inner.active_tab(session)?;
        Ok(tab.page.console(since, min_level, limit))
    }

    /// Structured evidence about one element of the active tab (see
    /// [`crate::page::inspect`]). Observation: allowed while a person has control.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab; the target errors of
    /// [`crate::page::inspect::inspect`].
    pub async fn inspect(
        &self,
        session: &SessionId,
        target: &crate::page::inspect::InspectTarget,
        options: &crate::page::inspect::InspectOptions,
        cancel: &CancellationToken,
    ) -> Result<crate::page::inspect::Inspection> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = Budget::new(
            "inspect",
            self.inner.config.operation_timeout,
            cancel.clone(),
        );
        self.inner
            .guarded(
                &tab,
                crate::page::inspect::inspect(&tab.page, target, options, &budget),
            )
            .await
    }

    /// Requests of the active tab that ended after cursor `since` and that
    /// `filter` accepts, at most `limit`.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn network(
        &self,
        session: &SessionId,
        since: u64,
        filter: &crate::page::network::NetworkFilter,
        limit: usize,
    ) -> Result<crate::page::network::NetworkRead> {
        let tab = self.inner.active_tab(session)?;
        let mut read = tab.page.network(since, filter, limit);
        self.inner.explain_refusals(&mut read);
        Ok(read)
    }

    /// Follows how many requests of the active tab are in flight; it
    /// changes whenever a request starts or ends.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn watch_network(&self, session: &SessionId) -> Result<watch::Receiver<usize>> {
        Ok(self.inner.active_tab(session)?.page.watch_in_flight())
    }

    /// A request of the active tab by its sequence number, with its
    /// response body (at most `max_chars` characters of text).
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab; `INVALID_ARGUMENT` for a request
    /// the log no longer has or whose body the browser no longer holds.
    pub async fn network_body(
        &self,
        session: &SessionId,
        seq: u64,
        max_chars: usize,
        cancel: &CancellationToken,
    ) -> Result<(
        crate::page::network::RequestEntry,
        crate::page::network::Body,
    )> {
        let tab = self.inner.active_tab(session)?;
        let entry = tab.page.network_entry(seq).ok_or_else(|| {
            BrowserError::invalid(
                "request",
                format!(
                    "no request {seq} in this tab's log (it keeps the last {})",
                    crate::page::network::NETWORK_CAP
                ),
            )
        })?;
        let budget = Budget::new(
            "network body",
            self.inner.config.operation_timeout,
            cancel.clone(),
        );
        let body = self
            .inner
            .guarded(
                &tab,
                crate::page::network::response_body(&tab.page, &entry, max_chars, &budget),
            )
            .await?;
        Ok((entry, body))
    }

    /// Follows the active tab's console: changes with every new entry.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn watch_console(&self, session: &SessionId) -> Result<watch::Receiver<u64>> {
        Ok(self.inner.active_tab(session)?.page.watch_console())
    }

    /// Waits in the active tab until `condition` holds, at most `timeout`.
    /// A person taking control ends the wait with `HUMAN_INTERVENED`.
    ///
    /// # Errors
    /// `TIMEOUT` with what was last seen, `ABORTED`, `HUMAN_INTERVENED`,
    /// `INVALID_ARGUMENT`, `TAB_NOT_FOUND`.
    pub async fn wait(
        &self,
        session: &SessionId,
        condition: &wait::Condition,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<wait::Waited> {
        let tab = self.inner.usable_tab(session).await?;
        // The page-side bound ends the wait; ours only guards against a stuck page.
        let budget =
            self.inner
                .mutating_budget("wait", Some(timeout + Duration::from_secs(1)), cancel)?;
        self.inner
            .guarded(&tab, wait::wait(&tab.page, condition, timeout, &budget))
            .await
    }

    /// Clicks at viewport coordinates in the active tab (fallback path).
    pub async fn click(
        &self,
        session: &SessionId,
        x: f64,
        y: f64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("click", None, cancel)?;
        self.inner
            .guarded(&tab, input::click(&tab.page, x, y, &budget))
            .await
    }

    /// Types text into the focused element of the active tab (fallback path).
    pub async fn type_text(
        &self,
        session: &SessionId,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("type", None, cancel)?;
        self.inner
            .guarded(&tab, input::type_text(&tab.page, text, &budget))
            .await
    }

    /// Takes a snapshot of the active tab: the visible page as a compact tree
    /// with refs for every actionable element. A whole-page snapshot is the
    /// base of the next action's diff.
    pub async fn snapshot(
        &self,
        session: &SessionId,
        scope: &Scope,
        cancel: &CancellationToken,
    ) -> Result<Snapshot> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.budget("snapshot", None, cancel)?;
        self.inner
            .guarded(
                &tab,
                snapshot::snapshot(
                    &tab.page,
                    scope,
                    &self.inner.config.snapshot_limits,
                    &budget,
                ),
            )
            .await
    }

    /// Acts on an element of the active tab (by ref, or by exact role and
    /// name) and returns what changed. See [`act::act`] for the pipeline.
    pub async fn act(
        &self,
        session: &SessionId,
        target: &Target,
        action: &Action,
        cancel: &CancellationToken,
    ) -> Result<ActionReport> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("act", None, cancel)?;
        let mut views = self.inner.host().watch_views();
        let mut tabs_changed = self.watch_tabs();
        let cursor = tab.page.network_cursor();
        let outcome = self
            .inner
            .guarded(
                &tab,
                act::act(
                    &tab.page,
                    target,
                    action,
                    &self.inner.config.snapshot_limits,
                    &budget,
                ),
            )
            .await?;

        // What else the action caused: tabs it opened, downloads it tried.
        let mut caused = Caused::default();
        while let Ok(event) = views.try_recv() {
            caused.note(tab.page.view(), event);
        }
        // A navigation abandoned without a document was most likely a
        // download; the browser's word on it can trail the page's (it comes
        // from another process), so give it a moment.
        if outcome.navigation_abandoned && caused.downloads_refused.is_empty() {
            let _ = tokio::time::timeout(DOWNLOAD_NOTICE, async {
                while let Some(event) = views.recv().await {
                    caused.note(tab.page.view(), event);
                    if !caused.downloads_refused.is_empty() {
                        return;
                    }
                }
            })
            .await;
        }
        let Caused {
            opened,
            downloads_refused,
        } = caused;
        // Popups join the session asynchronously; wait (briefly) until they have.
        let adopted = |inner: &Inner| -> Option<Vec<TabHandle>> {
            opened
                .iter()
                .map(|view| inner.handle_of(session, view))
                .collect()
        };
        let new_tabs = match adopted(&self.inner) {
            Some(handles) => handles,
            None => {
                let wait = async {
                    loop {
                        if tabs_changed.changed().await.is_err() {
                            return Vec::new();
                        }
                        if let Some(handles) = adopted(&self.inner) {
                            return handles;
                        }
                    }
                };
                tokio::time::timeout(Duration::from_secs(2), wait)
                    .await
                    .unwrap_or_default()
            }
        };
        // A navigation that ends on an error page may be one the policy
        // stopped; so may a popup's.
        let mut blocked = Vec::new();
        // (A delayed navigation, such as a refresh, may not have been seen
        // starting; the error page it ended on is seen all the same.)
        if outcome.observation.is_error_page() {
            blocked.extend(
                self.inner
                    .blocked_navigation(&tab.handle, &tab.page, cursor)
                    .await,
            );
        }
        if !new_tabs.is_empty() && self.inner.has_host_lists() {
            let opened: Vec<TabInfo> = self
                .list_tabs(session)
                .await
                .unwrap_or_default()
                .into_iter()
                .filter(|info| new_tabs.contains(&info.handle))
                .collect();
            blocked.extend(self.inner.blocked_popups(&opened));
        }
        Ok(ActionReport {
            outcome,
            new_tabs,
            dialogs: tab.page.take_dialogs(),
            downloads_refused,
            blocked,
        })
    }

    /// Reports what an agent is doing to people watching.
    pub fn record_activity(&self, activity: Activity) {
        let _ = self.inner.activity.send(activity);
    }

    /// Follows where agents act (pointer, target, drag), for the live view.
    pub fn watch_gestures(&self) -> tokio::sync::broadcast::Receiver<crate::page::hand::Gesture> {
        self.inner.hand.watch()
    }

    /// Follows agent activity.
    pub fn watch_activity(&self) -> tokio::sync::broadcast::Receiver<Activity> {
        self.inner.activity.subscribe()
    }

    /// The view behind a tab, for the live view (streaming, input) that the
    /// shell runs next to the agents.
    pub fn view_of(&self, session: &SessionId, tab: &TabHandle) -> Result<ViewId> {
        let registry = self.inner.lock();
        Ok(registry.owned_tab(session, tab)?.page.view().clone())
    }

    /// Returns and forgets the JavaScript dialogs the active tab opened
    /// (and that were answered automatically) since the last call.
    pub fn take_dialogs(&self, session: &SessionId) -> Result<Vec<DialogRecord>> {
        Ok(self.inner.active_tab(session)?.page.take_dialogs())
    }

    /// Creates a tab for the session and makes it active.
    async fn new_tab(&self, session: &SessionId, budget: &Budget) -> Result<Tab> {
        let context = self.inner.lock().session(session)?.context.clone();
        let host = &self.inner.host();
        let view = budget
            .run(
                "create tab",
                host.create_view(CreateViewOptions {
                    context,
                    background: false,
                }),
            )
            .await?;
        // Known as the agent's from now on (for CDP clients' view of targets).
        self.inner
            .lock()
            .in_the_making
            .insert(view.clone(), session.clone());
        let prepared = budget
            .run(
                "prepare tab",
                self.inner.attach_page(Arc::clone(host), view.clone()),
            )
            .await;
        let adopted = prepared.and_then(|page| self.inner.adopt(session, page, true));
        self.inner.lock().in_the_making.remove(&view);
        if adopted.is_err() {
            // Not prepared, or the session closed while the tab was being made.
            let _ = host.destroy_view(&view).await;
        }
        adopted
    }

    /// Who a browser target (a page, by target id) belongs to, as far as
    /// the shell knows now.
    pub fn target_owner(&self, target: &str) -> TargetOwner {
        let registry = self.inner.lock();
        let is = |tab: &tabs::Tab| tab.page.view().as_str() == target;
        if let Some((_, session)) = registry
            .in_the_making
            .iter()
            .find(|(view, _)| view.as_str() == target)
        {
            return TargetOwner::Agent(session.clone());
        }
        if let Some((session, _)) = registry
            .sessions
            .iter()
            .find(|(_, state)| state.tabs.iter().any(is))
        {
            return TargetOwner::Agent(session.clone());
        }
        if registry.unowned.iter().any(is) {
            return TargetOwner::Person;
        }
        TargetOwner::Unknown
    }

    /// The browser contexts of isolated agent sessions.
    pub fn agent_contexts(&self) -> Vec<String> {
        self.inner
            .lock()
            .sessions
            .values()
            .filter_map(|state| state.context.as_ref().map(|c| c.as_str().to_owned()))
            .collect()
    }
}

/// Who a browser target belongs to (see [`Browser::target_owner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetOwner {
    /// An agent session's tab.
    Agent(SessionId),
    /// The person's tab (opened by them, left by an agent, or a CDP
    /// client's page shown in the browser column).
    Person,
    /// Not one of the shell's tabs (yet).
    Unknown,
}

/// What an action did, as a model needs to hear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionReport {
    /// The ref acted on, whether it navigated, and the page after it (diff or reset).
    pub outcome: ActOutcome,
    /// Tabs the action opened (popups, `target=_blank` links), now the session's.
    pub new_tabs: Vec<TabHandle>,
    /// JavaScript dialogs it caused, answered automatically.
    pub dialogs: Vec<DialogRecord>,
    /// Downloads it started, which were refused.
    pub downloads_refused: Vec<String>,
    /// Navigations it started (in its tab, or as a popup) that went to a
    /// host the policy refuses: those tabs show the browser's error page.
    pub blocked: Vec<BlockedNavigation>,
}

/// A navigation as callers ask for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NavigationRequest<'a> {
    /// Go to this URL (checked against the navigation policy).
    Url(&'a str),
    /// One step back.
    Back,
    /// One step forward.
    Forward,
    /// Reload.
    Reload,
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
    /// Prepares `view` for operations under this browser's policy.
    async fn attach_page(&self, host: Arc<dyn ViewHost>, view: ViewId) -> Result<Page> {
        Page::attach(
            host,
            view,
            self.config.policy.nested_blocked_patterns(),
            self.hand.clone(),
        )
        .await
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

    /// Where a navigation request goes, with its URL checked by the policy.
    fn checked_target(&self, request: NavigationRequest<'_>) -> Result<NavigationTarget> {
        Ok(match request {
            NavigationRequest::Url(url) => NavigationTarget::Url(self.config.policy.check(url)?),
            NavigationRequest::Back => NavigationTarget::Back,
            NavigationRequest::Forward => NavigationTarget::Forward,
            NavigationRequest::Reload => NavigationTarget::Reload,
        })
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

    fn active_tab(&self, session: &SessionId) -> Result<Tab> {
        let registry = self.lock();
        let state = registry.session(session)?;
        let handle = state
            .active
            .as_ref()
            .ok_or_else(|| BrowserError::TabNotFound {
                tab: "(this session has no open tab; open a URL first)".into(),
            })?;
        registry.owned_tab(session, handle).cloned()
    }

    /// Records `page` as a tab of `session`.
    fn adopt(self: &Arc<Self>, session: &SessionId, page: Page, activate: bool) -> Result<Tab> {
        let mut registry = self.lock();
        registry.session(session)?;
        registry.next_tab += 1;
        let handle = TabHandle(format!("t{}", registry.next_tab));
        registry.owners.insert(handle.clone(), session.clone());
        let tab = Tab {
            handle: handle.clone(),
            page: Arc::new(page),
            last_url: String::new(),
            keep: false,
        };
        let state = registry.session_mut(session)?;
        state.tabs.push(tab.clone());
        if activate || state.active.is_none() {
            state.active = Some(handle);
        }
        drop(registry);
        self.tabs_changed.send_modify(|generation| *generation += 1);
        if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
            self.follow_loads(&tab.page);
        }
        Ok(tab)
    }

    /// Removes the tab showing `view` from whichever session has it.
    fn forget_view(&self, view: &ViewId) {
        let mut registry = self.lock();
        let handle = registry
            .all_tabs()
            .find(|t| t.page.view() == view)
            .map(|t| t.handle.clone());
        if let Some(handle) = handle {
            registry.remove_tab(&handle);
            drop(registry);
            self.tabs_changed.send_modify(|generation| *generation += 1);
        }
    }

    /// Remembers where the tab showing `view` is, to reopen it there.
    fn note_url(&self, view: &ViewId, url: &str) {
        let mut registry = self.lock();
        if let Some(tab) = registry.all_tabs_mut().find(|t| t.page.view() == view) {
            url.clone_into(&mut tab.last_url);
        }
    }

    /// The handle of `view` if `session` owns it.
    fn handle_of(&self, session: &SessionId, view: &ViewId) -> Option<TabHandle> {
        let registry = self.lock();
        let state = registry.sessions.get(session)?;
        state
            .tabs
            .iter()
            .find(|t| t.page.view() == view)
            .map(|t| t.handle.clone())
    }

    /// The session that owns `view`, if any.
    fn owner_of(&self, view: &ViewId) -> Option<SessionId> {
        let registry = self.lock();
        registry
            .sessions
            .iter()
            .find(|(_, state)| state.tabs.iter().any(|t| t.page.view() == view))
            .map(|(id, _)| id.clone())
    }
}

/// Keeps sessions in step with the browser: a popup opened by a session's
/// tab becomes a tab of that session; a tab closed by the page or a person
/// leaves its session.
async fn follow_views(
    inner: Weak<Inner>,
    mut views: tokio::sync::mpsc::UnboundedReceiver<ViewEvent>,
) {
    while let Some(event) = views.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        match event {
            ViewEvent::Opened(info) => {
                let Some(opener) = info.opener.as_ref() else {
                    continue;
                };
                let Some(session) = inner.owner_of(opener) else {
                    // A popup of one of the person's tabs is the person's too.
                    let person_opened =
                        inner.lock().unowned.iter().any(|t| t.page.view() == opener);
                    if person_opened
                        && let Ok(page) = inner.attach_page(inner.host(), info.id.clone()).await
                    {
                        inner.adopt_unowned(Arc::new(page));
                    }
                    continue;
                };
                match inner.attach_page(inner.host(), info.id.clone()).await {
                    Ok(page) => {
                        if let Ok(tab) = inner.adopt(&session, page, false) {
                            tracing::debug!(%session, tab = %tab.handle, "adopted a popup");
                        }
                    }
                    Err(error) => tracing::debug!(%error, "could not prepare a popup"),
                }
            }
            ViewEvent::Closed(view) => inner.forget_view(&view),
            // A new URL or title: the tab strip shows it, and a restart
            // reopens the tab there.
            ViewEvent::Changed(info) => {
                inner.note_url(&info.id, &info.url);
                inner
                    .tabs_changed
                    .send_modify(|generation| *generation += 1);
            }
            ViewEvent::DownloadRefused { .. } => {}
        }
    }
}
