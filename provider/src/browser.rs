//! [`Browser`]: agent sessions, their tabs, and the operations on them.
//!
//! A session is one agent's view of the browser. Tabs it opens (and popups
//! its pages open) belong to it and are addressed by short handles (`t1`,
//! `t2`, …) that are unique across the browser and never reused, so a
//! handle from another session is recognisably not yours (`TAB_NOT_OWNED`).
//! Operations act on the session's active tab. Each takes a cancellation
//! token and runs within a time bound.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cdp::protocol::{DialogOpening, NetworkGetCookies};
use crate::control::{Control, ControlState, Holder};
use crate::error::{BrowserError, Result};
use crate::host::{ContextId, CreateViewOptions, ViewEvent, ViewHost, ViewId};
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
    /// The page's icon address (http(s) or data), known while people watch.
    pub icon: Option<String>,
    /// Opened by an external CDP client (which owns its viewport).
    pub external: bool,
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
    /// `None` while running; then `Ok(())` or the error code.
    pub outcome: Option<std::result::Result<(), String>>,
    /// How long it took, once finished.
    pub millis: Option<u64>,
}

/// An agent asking the person for help (log in, solve a CAPTCHA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffRequest {
    /// The asking session.
    pub session: SessionId,
    /// What the agent asks for, in its words.
    pub reason: String,
}

/// What changed while the person had control during a handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffReport {
    /// The active tab's URL before and after.
    pub url_before: String,
    /// The active tab's URL now.
    pub url_after: String,
    /// The active tab's title now.
    pub title_after: String,
    /// Tabs of the session that appeared meanwhile.
    pub tabs_opened: Vec<TabHandle>,
    /// Tabs of the session that went away meanwhile.
    pub tabs_closed: Vec<TabHandle>,
    /// Whether the site's cookies changed (`None` if they could not be read).
    pub cookies_changed: Option<bool>,
    /// A fresh snapshot of the active tab.
    pub snapshot: Snapshot,
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
            .field("host", &self.inner.host)
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// Where the pages live.
    host: Arc<dyn ViewHost>,
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
    /// An agent's request for the person to do something, while it waits.
    handoff: watch::Sender<Option<HandoffRequest>>,
}

#[derive(Default)]
struct Registry {
    /// Live sessions.
    sessions: HashMap<SessionId, SessionState>,
    /// Which session owns each tab handle ever given out while it lives.
    owners: HashMap<TabHandle, SessionId>,
    /// Tabs that belong to no agent: opened by the person, or left behind
    /// (kept or claimed) by sessions that ended.
    unowned: Vec<Tab>,
    /// Counters for ids; never reset, so ids are never reused.
    next_session: u64,
    next_tab: u64,
}

struct SessionState {
    /// Tabs in the order they were opened.
    tabs: Vec<Tab>,
    /// The tab operations act on.
    active: Option<TabHandle>,
    /// The session's own browser context, when isolated.
    context: Option<ContextId>,
    /// The control epoch this session last heard about.
    seen_epoch: u64,
}

#[derive(Clone)]
struct Tab {
    handle: TabHandle,
    page: Arc<Page>,
    /// Stays open when the session ends and goes back to the person: a
    /// deliverable (`keep`) or a tab the session claimed from the person.
    keep: bool,
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
    /// A browser over `host`. Spawns a task (on the current runtime) that
    /// adopts popups into their opener's session and forgets closed tabs.
    pub fn new(host: Arc<dyn ViewHost>, config: BrowserConfig) -> Self {
        let inner = Arc::new(Inner {
            host,
            config,
            registry: Mutex::new(Registry::default()),
            tabs_changed: watch::Sender::new(0),
            people_watch: std::sync::atomic::AtomicBool::new(false),
            control: Control::default(),
            activity: tokio::sync::broadcast::Sender::new(256),
            handoff: watch::Sender::new(None),
        });
        tokio::spawn(follow_views(
            Arc::downgrade(&inner),
            inner.host.watch_views(),
        ));
        Self { inner }
    }

    /// The host behind this browser.
    pub fn host(&self) -> &Arc<dyn ViewHost> {
        &self.inner.host
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
        epoch
    }

    /// The person returns control to the agents. Returns the new epoch.
    pub fn return_control(&self) -> u64 {
        let epoch = self.inner.control.give_back();
        tracing::info!(epoch, "control returned to the agents");
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
        let context = if options.isolated {
            Some(self.inner.host.create_context().await?)
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
        let tab = match self.inner.active_tab(session) {
            Ok(tab) if !new_tab => tab,
            Ok(_) | Err(BrowserError::TabNotFound { .. }) => self.new_tab(session, &budget).await?,
            Err(other) => return Err(other),
        };
        let outcome = navigate::navigate(&tab.page, NavigationTarget::Url(target), &budget).await?;
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
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.mutating_budget(
            "navigate",
            Some(self.inner.config.navigation_timeout),
            cancel,
        )?;
        navigate::navigate(&tab.page, target, &budget).await
    }

    /// Lists the session's tabs with their current URL and title.
    pub async fn list_tabs(&self, session: &SessionId) -> Result<Vec<TabInfo>> {
        let (tabs, active) = {
            let registry = self.inner.lock();
            let state = registry.session(session)?;
            (state.tabs.clone(), state.active.clone())
        };
        let views = self.inner.host.list_views().await?;
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
        self.inner.host.show_view(&view).await
    }

    /// Closes one tab. Closing the active tab activates the most recently
    /// opened remaining one; closing the last leaves the session with none.
    pub async fn close_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = {
            let registry = self.inner.lock();
            registry.owned_tab(session, tab)?.page.view().clone()
        };
        self.inner.host.destroy_view(&view).await?;
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
            self.inner.host.destroy_view(view).await?;
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
            self.inner.host.destroy_view(tab.page.view()).await?;
        }
        // Disposing an isolated context would close kept tabs too.
        if let Some(context) = &state.context
            && !state.tabs.iter().any(|t| t.keep)
        {
            self.inner.host.destroy_context(context).await?;
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
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.mutating_budget("execute", timeout, cancel)?;
        let request = ExecuteRequest {
            script: script.to_owned(),
            args,
            max_result_bytes: self.inner.config.execute_max_result_bytes,
        };
        execute::execute(&tab.page, &request, &budget).await
    }

    /// Fetches the active tab's content. `max_chars` defaults to the configured cap.
    pub async fn content(
        &self,
        session: &SessionId,
        mut request: ContentRequest,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<ContentResult> {
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.budget("content", timeout, cancel)?;
        if request.max_chars == 0 {
            request.max_chars = self.inner.config.content_max_chars;
        }
        content::content(&tab.page, &request, &budget).await
    }

    /// Captures the active tab, within the configured ceilings.
    pub async fn screenshot(
        &self,
        session: &SessionId,
        mut request: ScreenshotRequest,
        cancel: &CancellationToken,
    ) -> Result<Screenshot> {
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.budget("screenshot", None, cancel)?;
        request.max_pixels = request
            .max_pixels
            .min(self.inner.config.screenshot_max_pixels);
        request.max_bytes = request
            .max_bytes
            .min(self.inner.config.screenshot_max_bytes);
        screenshot::screenshot(&tab.page, &request, &budget).await
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
        let tab = self.inner.active_tab(session)?;
        let budget = Budget::new(
            "inspect",
            self.inner.config.operation_timeout,
            cancel.clone(),
        );
        crate::page::inspect::inspect(&tab.page, target, options, &budget).await
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
        Ok(tab.page.network(since, filter, limit))
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
        let body =
            crate::page::network::response_body(&tab.page, &entry, max_chars, &budget).await?;
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
        let tab = self.inner.active_tab(session)?;
        // The page-side bound ends the wait; ours only guards against a stuck page.
        let budget =
            self.inner
                .mutating_budget("wait", Some(timeout + Duration::from_secs(3)), cancel)?;
        wait::wait(&tab.page, condition, timeout, &budget).await
    }

    /// Clicks at viewport coordinates in the active tab (fallback path).
    pub async fn click(
        &self,
        session: &SessionId,
        x: f64,
        y: f64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.mutating_budget("click", None, cancel)?;
        input::click(&tab.page, x, y, &budget).await
    }

    /// Types text into the focused element of the active tab (fallback path).
    pub async fn type_text(
        &self,
        session: &SessionId,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.mutating_budget("type", None, cancel)?;
        input::type_text(&tab.page, text, &budget).await
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
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.budget("snapshot", None, cancel)?;
        snapshot::snapshot(
            &tab.page,
            scope,
            &self.inner.config.snapshot_limits,
            &budget,
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
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.mutating_budget("act", None, cancel)?;
        let mut views = self.inner.host.watch_views();
        let mut tabs_changed = self.watch_tabs();
        let outcome = act::act(
            &tab.page,
            target,
            action,
            &self.inner.config.snapshot_limits,
            &budget,
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
        Ok(ActionReport {
            outcome,
            new_tabs,
            dialogs: tab.page.take_dialogs(),
            downloads_refused,
        })
    }

    /// Every tab, agents' and the person's, for the person watching (the
    /// live view's tab strip), in the order they were opened.
    pub async fn live_tabs(&self) -> Result<Vec<LiveTab>> {
        let tabs: Vec<(Option<SessionId>, TabHandle, Arc<Page>, bool)> = {
            let registry = self.inner.lock();
            let mut tabs: Vec<_> = registry
                .sessions
                .iter()
                .flat_map(|(id, state)| {
                    state.tabs.iter().map(move |t| {
                        (
                            Some(id.clone()),
                            t.handle.clone(),
                            Arc::clone(&t.page),
                            state.active.as_ref() == Some(&t.handle),
                        )
                    })
                })
                .chain(
                    registry
                        .unowned
                        .iter()
                        .map(|t| (None, t.handle.clone(), Arc::clone(&t.page), false)),
                )
                .collect();
            tabs.sort_by_key(|(_, handle, ..)| handle.number());
            tabs
        };
        let views = self.inner.host.list_views().await?;
        Ok(tabs
            .into_iter()
            .filter_map(|(session, handle, page, active)| {
                let info = views.iter().find(|v| &v.id == page.view())?;
                Some(LiveTab {
                    session,
                    handle,
                    url: info.url.clone(),
                    title: info.title.clone(),
                    icon: page.icon(),
                    external: page.is_external(),
                    view: page.view().clone(),
                    active,
                })
            })
            .collect())
    }

    /// People watch from now on (a live view runs): every tab, present and
    /// future, is followed so the tab strip shows current titles and the
    /// timeline shows JavaScript dialogs. Off by default, because following
    /// costs agents time on every page (measured: about 8 ms per click on a
    /// large page).
    pub fn follow_pages_for_people(&self) {
        if self
            .inner
            .people_watch
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let pages: Vec<Arc<Page>> = {
            let registry = self.inner.lock();
            registry.all_tabs().map(|t| Arc::clone(&t.page)).collect()
        };
        for page in &pages {
            self.inner.follow_loads(page);
        }
    }

    /// The sessions open now (for the person handing a tab to one).
    pub fn sessions(&self) -> Vec<SessionId> {
        let mut sessions: Vec<SessionId> = self.inner.lock().sessions.keys().cloned().collect();
        sessions.sort_by_key(|s| s.0.trim_start_matches('s').parse::<u64>().unwrap_or(0));
        sessions
    }

    /// Tabs that belong to no agent, with their URL and title: what an
    /// agent may claim with [`Browser::claim_tab`].
    pub async fn unowned_tabs(&self) -> Result<Vec<TabInfo>> {
        let tabs = self.inner.lock().unowned.clone();
        let views = self.inner.host.list_views().await?;
        Ok(tabs
            .into_iter()
            .filter_map(|tab| {
                let view = views.iter().find(|v| &v.id == tab.page.view())?;
                Some(TabInfo {
                    handle: tab.handle,
                    url: view.url.clone(),
                    title: view.title.clone(),
                    active: false,
                })
            })
            .collect())
    }

    /// An agent takes over a tab that belongs to no agent. The caller names
    /// the tab by handle, URL and title exactly as it last saw them; if any
    /// of them changed meanwhile the claim fails and nothing moves. The tab
    /// becomes the session's active tab and goes back to the person (not
    /// closed) when the session ends.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` when no unowned tab has that handle or it changed,
    /// `TAB_NOT_OWNED` when an agent owns it, `HUMAN_INTERVENED` while the
    /// person has control.
    pub async fn claim_tab(
        &self,
        session: &SessionId,
        tab: &TabHandle,
        url: &str,
        title: &str,
    ) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = self.unowned_view(tab)?;
        let views = self.inner.host.list_views().await?;
        let now = views
            .iter()
            .find(|v| v.id == view)
            .ok_or_else(|| BrowserError::TabNotFound { tab: tab.0.clone() })?;
        if now.url != url || now.title != title {
            return Err(BrowserError::TabNotFound {
                tab: format!(
                    "{tab} (it changed since it was listed: now {:?} titled {:?}; list the tabs again)",
                    now.url, now.title
                ),
            });
        }
        self.move_to_session(session, tab)
    }

    /// The person hands one of their tabs to an agent session (from the
    /// tab strip). Like a claim, it goes back to the person when the
    /// session ends.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND`, `TAB_NOT_OWNED`, `SESSION_NOT_FOUND`.
    pub fn give_tab(&self, tab: &TabHandle, session: &SessionId) -> Result<()> {
        self.move_to_session(session, tab)
    }

    /// Opens a tab for the person (the tab strip's "new tab") and waits
    /// (bounded) for it to load: it belongs to no agent. `url` is checked
    /// by the navigation policy.
    ///
    /// # Errors
    /// `NAVIGATION_BLOCKED`, or what creating the tab fails with.
    pub async fn open_person_tab(&self, url: &str) -> Result<TabHandle> {
        let target = self.inner.config.policy.check(url)?;
        let host = &self.inner.host;
        let view = host
            .create_view(CreateViewOptions {
                context: None,
                background: false,
            })
            .await?;
        let page = match Page::attach(Arc::clone(host), view.clone()).await {
            Ok(page) => page,
            Err(error) => {
                let _ = host.destroy_view(&view).await;
                return Err(error);
            }
        };
        let page = Arc::new(page);
        let handle = self.inner.adopt_unowned(Arc::clone(&page));
        if target.as_str() != "about:blank" {
            let budget = self.inner.person_budget();
            navigate::navigate(&page, NavigationTarget::Url(target), &budget).await?;
        }
        Ok(handle)
    }

    /// Registers the browser's existing tabs that belong to nobody yet (a
    /// start page, tabs of a persistent profile) as the person's.
    ///
    /// # Errors
    /// What listing or attaching to the tabs fails with.
    pub async fn adopt_unowned_views(&self) -> Result<()> {
        let known: Vec<ViewId> = {
            let registry = self.inner.lock();
            registry.all_tabs().map(|t| t.page.view().clone()).collect()
        };
        for view in self.inner.host.list_views().await? {
            if known.contains(&view.id) {
                continue;
            }
            let page = Page::attach(Arc::clone(&self.inner.host), view.id).await?;
            self.inner.adopt_unowned(Arc::new(page));
        }
        Ok(())
    }

    /// Shows a page that someone outside the shell opened (a CDP client
    /// of the shell's endpoint) in the browser column, as a tab of the
    /// person's; nothing happens for a target that is already a tab or is
    /// not a page.
    ///
    /// # Errors
    /// Whatever listing the views or preparing the page reports.
    pub async fn adopt_external_view(&self, target_id: &str) -> Result<()> {
        let known = {
            let registry = self.inner.lock();
            registry
                .all_tabs()
                .any(|t| t.page.view().as_str() == target_id)
        };
        if known {
            return Ok(());
        }
        let views = self.inner.host.list_views().await?;
        let Some(view) = views.into_iter().find(|v| v.id.as_str() == target_id) else {
            return Ok(());
        };
        let page = Page::attach(Arc::clone(&self.inner.host), view.id).await?;
        page.mark_external();
        self.inner.adopt_unowned(Arc::new(page));
        Ok(())
    }

    /// The person closes any tab from the tab strip (an agent's included:
    /// the person is in charge; the agent finds it gone).
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` for an unknown handle.
    pub async fn close_any_tab(&self, tab: &TabHandle) -> Result<()> {
        let view = self.view_of_any(tab)?;
        self.inner.host.destroy_view(&view).await?;
        self.inner.forget_view(&view);
        Ok(())
    }

    /// The person navigates any tab from the address bar (http(s) only,
    /// like agents). Returns once the navigation has started; the live view
    /// shows the rest.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND`, `NAVIGATION_BLOCKED`, `INVALID_ARGUMENT` (no
    /// history entry to go to).
    pub async fn person_navigate(
        &self,
        tab: &TabHandle,
        target: NavigationRequest<'_>,
    ) -> Result<()> {
        let page = self.page_of_any(tab)?;
        let target = self.inner.checked_target(target)?;
        let budget = self.inner.person_budget();
        navigate::start(&page, target, &budget).await
    }

    fn unowned_view(&self, tab: &TabHandle) -> Result<ViewId> {
        let registry = self.inner.lock();
        if let Some(found) = registry.unowned.iter().find(|t| &t.handle == tab) {
            return Ok(found.page.view().clone());
        }
        if registry.owners.contains_key(tab) {
            return Err(BrowserError::TabNotOwned { tab: tab.0.clone() });
        }
        Err(BrowserError::TabNotFound { tab: tab.0.clone() })
    }

    fn page_of_any(&self, tab: &TabHandle) -> Result<Arc<Page>> {
        let registry = self.inner.lock();
        registry
            .all_tabs()
            .find(|t| &t.handle == tab)
            .map(|t| Arc::clone(&t.page))
            .ok_or_else(|| BrowserError::TabNotFound { tab: tab.0.clone() })
    }

    fn view_of_any(&self, tab: &TabHandle) -> Result<ViewId> {
        Ok(self.page_of_any(tab)?.view().clone())
    }

    fn move_to_session(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        {
            let mut registry = self.inner.lock();
            registry.session(session)?;
            let index = match registry.unowned.iter().position(|t| &t.handle == tab) {
                Some(index) => index,
                None if registry.owners.contains_key(tab) => {
                    return Err(BrowserError::TabNotOwned { tab: tab.0.clone() });
                }
                None => return Err(BrowserError::TabNotFound { tab: tab.0.clone() }),
            };
            let mut moved = registry.unowned.remove(index);
            moved.keep = true;
            registry.owners.insert(tab.clone(), session.clone());
            let state = registry.session_mut(session)?;
            state.tabs.push(moved);
            state.active = Some(tab.clone());
        }
        self.inner
            .tabs_changed
            .send_modify(|generation| *generation += 1);
        Ok(())
    }

    /// Asks the person to do something and waits (bounded, cancellable)
    /// until they return control; then reports what changed and returns a
    /// fresh snapshot. Control passes to the person while the request shows.
    ///
    /// # Errors
    /// `TIMEOUT` when the person does not return control in time (they keep
    /// it), `ABORTED` when cancelled, `TAB_NOT_FOUND` without an open tab.
    pub async fn handoff(
        &self,
        session: &SessionId,
        reason: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<HandoffReport> {
        if reason.trim().is_empty() {
            return Err(BrowserError::invalid(
                "reason",
                "say what the person should do",
            ));
        }
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.budget("handoff", Some(timeout), cancel)?;
        let before = self.page_facts(&tab, &budget).await?;
        let tabs_before: Vec<TabHandle> = self
            .list_tabs(session)
            .await?
            .into_iter()
            .map(|t| t.handle)
            .collect();

        let mut control = self.watch_control();
        // Control first, then the banner: whoever sees the request can act on it.
        self.take_control();
        self.inner.handoff.send_replace(Some(HandoffRequest {
            session: session.clone(),
            reason: reason.trim().to_owned(),
        }));
        let waited = budget
            .run("wait for the person", async {
                loop {
                    if control.borrow_and_update().holder == Holder::Agent {
                        return Ok(());
                    }
                    if control.changed().await.is_err() {
                        return Err(BrowserError::Aborted);
                    }
                }
            })
            .await;
        self.inner.handoff.send_replace(None);
        waited?;

        let tab = self.inner.active_tab(session)?;
        let grace = budget.grace(self.inner.config.operation_timeout);
        let after = self.page_facts(&tab, &grace).await?;
        let tabs_after: Vec<TabHandle> = self
            .list_tabs(session)
            .await?
            .into_iter()
            .map(|t| t.handle)
            .collect();
        let snapshot = snapshot::snapshot(
            &tab.page,
            &Scope::Page,
            &self.inner.config.snapshot_limits,
            &grace,
        )
        .await?;
        // The agent has now seen the page as it is.
        let _ = self.control_returned_since_last_call(session);
        Ok(HandoffReport {
            url_before: before.url,
            url_after: after.url,
            title_after: after.title,
            tabs_opened: tabs_after
                .iter()
                .filter(|t| !tabs_before.contains(t))
                .cloned()
                .collect(),
            tabs_closed: tabs_before
                .iter()
                .filter(|t| !tabs_after.contains(t))
                .cloned()
                .collect(),
            cookies_changed: match (before.cookies, after.cookies) {
                (Some(a), Some(b)) => Some(a != b),
                _ => None,
            },
            snapshot,
        })
    }

    /// URL, title and the site's cookies (names and values, sorted) of a tab.
    async fn page_facts(&self, tab: &Tab, budget: &Budget) -> Result<PageFacts> {
        let outcome = navigate::current_outcome(&tab.page, budget, true).await?;
        let cookies = tab
            .page
            .call(
                budget,
                &NetworkGetCookies {
                    urls: vec![outcome.url.clone()],
                },
            )
            .await
            .ok()
            .map(|found| {
                let mut pairs: Vec<(String, String)> = found
                    .cookies
                    .into_iter()
                    .map(|c| (c.name, c.value))
                    .collect();
                pairs.sort();
                pairs
            });
        Ok(PageFacts {
            url: outcome.url,
            title: outcome.title,
            cookies,
        })
    }

    /// The pending handoff request, for the live view's banner.
    pub fn watch_handoff(&self) -> watch::Receiver<Option<HandoffRequest>> {
        self.inner.handoff.subscribe()
    }

    /// Reports what an agent is doing to people watching.
    pub fn record_activity(&self, activity: Activity) {
        let _ = self.inner.activity.send(activity);
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
        let host = &self.inner.host;
        let view = budget
            .run(
                "create tab",
                host.create_view(CreateViewOptions {
                    context,
                    background: false,
                }),
            )
            .await?;
        let page = match budget
            .run("prepare tab", Page::attach(Arc::clone(host), view.clone()))
            .await
        {
            Ok(page) => page,
            Err(error) => {
                let _ = host.destroy_view(&view).await;
                return Err(error);
            }
        };
        match self.inner.adopt(session, page, true) {
            Ok(tab) => Ok(tab),
            Err(error) => {
                // The session closed while the tab was being made.
                let _ = host.destroy_view(&view).await;
                Err(error)
            }
        }
    }
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
}

/// What a handoff compares before and after.
struct PageFacts {
    url: String,
    title: String,
    cookies: Option<Vec<(String, String)>>,
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

    /// Follows `page` for the person watching: bumps the tab strip when it
    /// loads or navigates (so its title, URL and icon there stay current;
    /// the browser's own notices of a new title can lag indefinitely), and puts
    /// JavaScript dialogs it opens on the activity timeline. Ends when the
    /// tab goes away.
    fn follow_loads(self: &Arc<Self>, page: &Arc<Page>) {
        let page = Arc::clone(page);
        let inner = Arc::downgrade(self);
        tokio::spawn(async move {
            let Ok(mut events) = page.events().await else {
                return;
            };
            // A page loaded before people watched has an icon already.
            if page.refresh_icon().await
                && let Some(inner) = inner.upgrade()
            {
                inner
                    .tabs_changed
                    .send_modify(|generation| *generation += 1);
            }
            while let Some(event) = events.recv().await {
                let Some(inner) = inner.upgrade() else { return };
                match event.method.as_str() {
                    "Page.loadEventFired"
                    | "Page.domContentEventFired"
                    | "Page.navigatedWithinDocument" => {
                        inner
                            .tabs_changed
                            .send_modify(|generation| *generation += 1);
                        if event.method != "Page.navigatedWithinDocument" {
                            let page = Arc::clone(&page);
                            let inner = Arc::downgrade(&inner);
                            tokio::spawn(async move {
                                if page.refresh_icon().await
                                    && let Some(inner) = inner.upgrade()
                                {
                                    inner
                                        .tabs_changed
                                        .send_modify(|generation| *generation += 1);
                                }
                            });
                        }
                    }
                    "Page.javascriptDialogOpening" => {
                        let Some(dialog) = event.decode::<DialogOpening>() else {
                            continue;
                        };
                        let Some(session) = inner.owner_of(page.view()) else {
                            continue;
                        };
                        let answer = if dialog.kind == "beforeunload" {
                            "accepted"
                        } else {
                            "dismissed"
                        };
                        let message: String = dialog.message.chars().take(120).collect();
                        let _ = inner.activity.send(Activity {
                            session,
                            tool: format!("{} dialog", dialog.kind),
                            summary: format!("{message:?} ({answer})"),
                            outcome: Some(Ok(())),
                            millis: None,
                        });
                    }
                    _ => {}
                }
            }
        });
    }

    /// Records `page` as a tab of the person's (no agent's).
    fn adopt_unowned(self: &Arc<Self>, page: Arc<Page>) -> TabHandle {
        let mut registry = self.lock();
        registry.next_tab += 1;
        let handle = TabHandle(format!("t{}", registry.next_tab));
        registry.unowned.push(Tab {
            handle: handle.clone(),
            page: Arc::clone(&page),
            keep: false,
        });
        drop(registry);
        self.tabs_changed.send_modify(|generation| *generation += 1);
        if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
            self.follow_loads(&page);
        }
        handle
    }

    /// Removes the tab showing `view` from whichever session has it.
    fn forget_view(&self, view: &ViewId) {
        let mut registry = self.lock();
        let mut removed = None;
        for state in registry.sessions.values_mut() {
            let Some(index) = state.tabs.iter().position(|t| t.page.view() == view) else {
                continue;
            };
            let tab = state.tabs.remove(index);
            if state.active.as_ref() == Some(&tab.handle) {
                state.active = state.tabs.last().map(|t| t.handle.clone());
            }
            removed = Some(tab.handle);
            break;
        }
        if removed.is_none()
            && let Some(index) = registry.unowned.iter().position(|t| t.page.view() == view)
        {
            removed = Some(registry.unowned.remove(index).handle);
        }
        if let Some(handle) = removed {
            registry.owners.remove(&handle);
            drop(registry);
            self.tabs_changed.send_modify(|generation| *generation += 1);
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

impl Registry {
    /// Every tab: the sessions' and the person's.
    fn all_tabs(&self) -> impl Iterator<Item = &Tab> {
        self.sessions
            .values()
            .flat_map(|s| s.tabs.iter())
            .chain(self.unowned.iter())
    }

    fn session(&self, session: &SessionId) -> Result<&SessionState> {
        self.sessions
            .get(session)
            .ok_or_else(|| BrowserError::SessionNotFound {
                session: session.0.clone(),
            })
    }

    fn session_mut(&mut self, session: &SessionId) -> Result<&mut SessionState> {
        self.sessions
            .get_mut(session)
            .ok_or_else(|| BrowserError::SessionNotFound {
                session: session.0.clone(),
            })
    }

    /// The tab `handle` of `session`, or why not: another session's
    /// (`TAB_NOT_OWNED`) or nobody's (`TAB_NOT_FOUND`).
    fn owned_tab(&self, session: &SessionId, handle: &TabHandle) -> Result<&Tab> {
        let state = self.session(session)?;
        if let Some(tab) = state.tabs.iter().find(|t| &t.handle == handle) {
            return Ok(tab);
        }
        match self.owners.get(handle) {
            Some(owner) if owner != session => Err(BrowserError::TabNotOwned {
                tab: handle.0.clone(),
            }),
            _ => Err(BrowserError::TabNotFound {
                tab: handle.0.clone(),
            }),
        }
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
                        && let Ok(page) =
                            Page::attach(Arc::clone(&inner.host), info.id.clone()).await
                    {
                        inner.adopt_unowned(Arc::new(page));
                    }
                    continue;
                };
                match Page::attach(Arc::clone(&inner.host), info.id.clone()).await {
                    Ok(page) => {
                        if let Ok(tab) = inner.adopt(&session, page, false) {
                            tracing::debug!(%session, tab = %tab.handle, "adopted a popup");
                        }
                    }
                    Err(error) => tracing::debug!(%error, "could not prepare a popup"),
                }
            }
            ViewEvent::Closed(view) => inner.forget_view(&view),
            // A new URL or title: the tab strip shows it.
            ViewEvent::Changed(_) => inner
                .tabs_changed
                .send_modify(|generation| *generation += 1),
            ViewEvent::DownloadRefused { .. } => {}
        }
    }
}
