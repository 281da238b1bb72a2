//! One page (a tab's view) and the operations on it.
//!
//! [`Page`] prepares a view once (page events, lifecycle events, a dialog
//! handler) and then each operation lives in its own module: navigation,
//! script execution, content extraction, screenshots and coordinate input.
//! Every operation takes a [`Budget`]: one deadline and one cancellation
//! token, checked by every wait.
//!
//! [`observe`] looks at the live page for [`snapshot`](crate::snapshot)
//! (walks, frames, refs back to elements) and [`act`] acts by ref on top of
//! it. Imports only point down: `act` → `observe` → [`Page`] → `snapshot`;
//! [`hand`] (what people watching see) depends on none of them.

pub mod act;
mod budget;
pub mod capture;
pub mod console;
pub mod content;
pub mod execute;
pub mod hand;
mod icon;
pub mod input;
pub mod inspect;
pub mod keys;
pub mod navigate;
pub mod network;
pub mod observe;
mod ring;
pub mod screencast;
pub mod screenshot;
pub mod wait;
pub(crate) mod world;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use serde_json::Value;

pub use budget::Budget;

use crate::cdp::protocol::{
    DialogOpening, InspectorEnable, LogEnable, NetworkEnable, NetworkSetBlockedUrls, PageEnable,
    PageHandleJavaScriptDialog, PageSetLifecycleEventsEnabled, RuntimeEnable,
};
use crate::cdp::{Command, EventStream};
use crate::error::{BrowserError, Result};
use crate::host::{CommandBatch, ViewHost, ViewHostExt, ViewId};

/// Dialogs remembered per page until someone reads them.
const DIALOG_LOG_CAP: usize = 50;

/// A JavaScript dialog the page opened and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialogRecord {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// The dialog's message.
    pub message: String,
    /// Whether it was accepted (only `beforeunload`, so navigations proceed)
    /// or dismissed (everything else).
    pub accepted: bool,
    /// When it opened.
    pub at: SystemTime,
}

/// Whether a page can take commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageHealth {
    /// It works.
    Alive,
    /// Its renderer crashed or was killed; a reload or a navigation
    /// brings it back.
    Crashed,
    /// The browser it lived in went away; the tab lives on in a new page.
    BrowserGone {
        /// Why the browser went away.
        cause: String,
    },
    /// Its debugging session was taken away (in the person's Chrome: the
    /// person cancelled Chrome's debugging bar, or the tab went where
    /// extensions may not drive); everything enabled on it is gone, so the
    /// next use drives the tab again with a new page.
    Detached {
        /// Why, as the host said it.
        reason: String,
    },
}

/// A view prepared for operations.
#[derive(Debug)]
pub struct Page {
    /// Who hosts the view.
    host: Arc<dyn ViewHost>,
    /// The view itself.
    view: ViewId,
    /// Its main frame's id (the view's own id for page targets; asked of
    /// the page where views are named otherwise, as tabs are).
    main_frame: String,
    /// Dialogs answered since the last [`Page::take_dialogs`].
    dialogs: Arc<Mutex<Vec<DialogRecord>>>,
    /// Its main thread stopped answering (a script that loops): a new
    /// navigation goes to a fresh page instead.
    unresponsive: std::sync::atomic::AtomicBool,
    /// Dialogs answered since the page was prepared, all together.
    dialogs_answered: Arc<std::sync::atomic::AtomicU64>,
    /// Console messages and exceptions since the page was prepared.
    console: Arc<Mutex<console::ConsoleLog>>,
    /// Requests since the page was prepared.
    network: Arc<Mutex<network::NetworkLog>>,
    /// The page's icon, looked up while people watch.
    icon: Mutex<icon::Icon>,
    /// Opened by a CDP client of the shell's endpoint, which owns its
    /// emulation (viewport and the like).
    external: std::sync::atomic::AtomicBool,
    /// A capture beyond the viewport was taken in this page (Chrome's first
    /// one in a tab can be the viewport stretched; see `screenshot`).
    pub(crate) captured_beyond_viewport: std::sync::atomic::AtomicBool,
    /// Our isolated worlds for snapshots and actions: the main frame's
    /// (`None`) and one per out-of-process frame.
    worlds: Mutex<HashMap<Option<String>, Arc<world::World>>>,
    /// Refs handed out in this tab and the snapshots the session saw.
    pub(crate) agent: tokio::sync::Mutex<crate::snapshot::TabState>,
    /// Crashed, gone with its browser, or fine.
    health: Arc<tokio::sync::watch::Sender<PageHealth>>,
    /// Where actions say where they act, for people watching.
    hand: hand::Hand,
}

impl Page {
    /// Prepares `view` for operations: enables page and lifecycle events and
    /// starts answering JavaScript dialogs so they never block an operation.
    /// Requests matching `blocked_urls` (see
    /// [`NavigationPolicy::nested_blocked_patterns`](crate::policy::NavigationPolicy::nested_blocked_patterns))
    /// fail as blocked. Actions announce where they act on `hand`.
    pub async fn attach(
        host: Arc<dyn ViewHost>,
        view: ViewId,
        blocked_urls: Vec<String>,
        hand: hand::Hand,
    ) -> Result<Self> {
        let events = host.subscribe(&view).await?;
        // Subscribed before Runtime and Log are enabled, so nothing logged is missed.
        let console_events = host.subscribe(&view).await?;
        let console = Arc::new(Mutex::new(console::ConsoleLog::default()));
        tokio::spawn(console::collect(console_events, Arc::clone(&console)));
        // Likewise for requests, before Network is enabled.
        let network_events = host.subscribe(&view).await?;
        let network = Arc::new(Mutex::new(network::NetworkLog::default()));
        tokio::spawn(network::collect(network_events, Arc::clone(&network)));
        let health = Arc::new(tokio::sync::watch::Sender::new(PageHealth::Alive));
        tokio::spawn(follow_health(
            host.subscribe(&view).await?,
            Arc::downgrade(&health),
        ));
        host.call(&view, &InspectorEnable {}).await?;
        host.call(&view, &PageEnable {}).await?;
        // Console capture, and syntax checks (`Runtime.compileScript`).
        host.call(&view, &RuntimeEnable {}).await?;
        host.call(&view, &LogEnable {}).await?;
        host.call(&view, &NetworkEnable {}).await?;
        if !blocked_urls.is_empty() {
            host.call(&view, &NetworkSetBlockedUrls { urls: blocked_urls })
                .await?;
        }
        host.call(&view, &PageSetLifecycleEventsEnabled { enabled: true })
            .await?;
        let main_frame = host.main_frame(&view).await?;
        let dialogs = Arc::new(Mutex::new(Vec::new()));
        let dialogs_answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
        tokio::spawn(answer_dialogs(
            Arc::clone(&dialogs_answered),
            Arc::downgrade(&host),
            view.clone(),
            events,
            Arc::clone(&dialogs),
        ));
        Ok(Self {
            host,
            view,
            main_frame,
            dialogs,
            dialogs_answered,
            unresponsive: std::sync::atomic::AtomicBool::new(false),
            console,
            network,
            icon: Mutex::new(icon::Icon::default()),
            external: std::sync::atomic::AtomicBool::new(false),
            captured_beyond_viewport: std::sync::atomic::AtomicBool::new(false),
            worlds: Mutex::new(HashMap::new()),
            agent: tokio::sync::Mutex::new(crate::snapshot::TabState::default()),
            health,
            hand,
        })
    }

    /// Tells people watching where the agent is about to act.
    pub(crate) fn show_gesture(&self, gesture: hand::Gesture) {
        self.hand.show(gesture);
    }

    /// Whether the page can take commands now.
    pub fn health(&self) -> PageHealth {
        self.health.borrow().clone()
    }

    /// Follows the page's health.
    pub fn watch_health(&self) -> tokio::sync::watch::Receiver<PageHealth> {
        self.health.subscribe()
    }

    /// Marks the page as gone with its browser: calls on it fail at once.
    pub fn mark_browser_gone(&self, cause: &str) {
        self.health.send_replace(PageHealth::BrowserGone {
            cause: cause.to_owned(),
        });
    }

    /// Marks the page as having lost its debugging session (a call was
    /// refused so): the next use drives the tab again with a new page.
    pub fn mark_detached(&self, reason: &str) {
        self.health.send_if_modified(|now| {
            let detached = matches!(now, PageHealth::Alive | PageHealth::Crashed);
            if detached {
                *now = PageHealth::Detached {
                    reason: reason.to_owned(),
                };
            }
            detached
        });
    }

    /// Resolves when the page stops working (its browser went away, or it
    /// crashes while the caller waits) with the error for a call that was
    /// running on it; never resolves while it works. A page that had
    /// crashed already only counts once it has come back and crashed
    /// again: a reload or navigation is how it comes back. `tab` names the
    /// tab in the error.
    pub async fn failure(&self, tab: &str) -> BrowserError {
        let mut health = self.health.subscribe();
        let mut crashed_before = *health.borrow() == PageHealth::Crashed;
        loop {
            let now = health.borrow_and_update().clone();
            match now {
                PageHealth::BrowserGone { cause } => {
                    return BrowserError::BrowserRestarted { cause };
                }
                PageHealth::Crashed if !crashed_before => {
                    return BrowserError::PageCrashed {
                        tab: tab.to_owned(),
                        in_flight: true,
                    };
                }
                PageHealth::Detached { reason } => {
                    return BrowserError::DebuggerDetached {
                        detail: format!(
                            "the tab's debugger was taken away during the call ({reason}); it was not repeated; the next call drives the tab again once it is free"
                        ),
                    };
                }
                PageHealth::Alive => crashed_before = false,
                PageHealth::Crashed => {}
            }
            if health.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// The view this page drives.
    pub fn view(&self) -> &ViewId {
        &self.view
    }

    /// The id CDP events give the page's main frame.
    pub fn main_frame(&self) -> &str {
        &self.main_frame
    }

    /// The host, for operations that need more than a command.
    pub fn host(&self) -> &Arc<dyn ViewHost> {
        &self.host
    }

    /// Sends a typed command within the budget.
    pub async fn call<C: Command + Sync>(
        &self,
        budget: &Budget,
        command: &C,
    ) -> Result<C::Response> {
        let bound = budget.command_bound(self.host.command_timeout());
        budget
            .run(C::METHOD, self.host.call_within(&self.view, command, bound))
            .await
    }

    /// Sends commands back to back, in order, within the budget (input
    /// events: the browser keeps their order).
    pub async fn call_in_order(&self, budget: &Budget, batch: CommandBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let bound = budget.command_bound(self.host.command_timeout());
        budget
            .run(
                "commands in order",
                self.host.send_commands(&self.view, batch, bound),
            )
            .await
    }

    /// A fresh subscription to this page's events (subscribe before acting).
    pub async fn events(&self) -> Result<EventStream> {
        self.host.subscribe(&self.view).await
    }

    /// Console entries after `since` at `min_level` or above, at most `limit`.
    pub fn console(
        &self,
        since: u64,
        min_level: console::Level,
        limit: usize,
    ) -> console::ConsoleRead {
        self.console
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .read(since, min_level, limit)
    }

    /// Follows the console's last sequence number (changes with every entry).
    pub fn watch_console(&self) -> tokio::sync::watch::Receiver<u64> {
        self.console
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .watch()
    }

    /// Requests that ended after `since` and that `filter` accepts, at most `limit`.
    pub fn network(
        &self,
        since: u64,
        filter: &network::NetworkFilter,
        limit: usize,
    ) -> network::NetworkRead {
        self.network
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .read(since, filter, limit)
    }

    /// The request with sequence number `seq`, if the log still has it.
    pub fn network_entry(&self, seq: u64) -> Option<network::RequestEntry> {
        self.network
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(seq)
    }

    /// For requests whose URL contains `part`: whether one has ended, and
    /// whether one is still in flight.
    pub fn network_settled(&self, part: &str) -> (bool, bool) {
        self.network
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .settled(part)
    }

    /// Where the network log is now: requests that end later read after it.
    pub fn network_cursor(&self) -> u64 {
        self.network
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cursor()
    }

    /// The last document request for the main frame that failed after
    /// `cursor`, waiting up to `bound` for it to be logged (its events may
    /// come after the command that saw the navigation fail).
    pub async fn failed_main_document(
        &self,
        cursor: u64,
        bound: std::time::Duration,
    ) -> Option<network::RequestEntry> {
        let main = self.main_frame.as_str();
        let mut in_flight = self.watch_in_flight();
        let waited = tokio::time::timeout(bound, async {
            loop {
                let read = self.network(cursor, &network::NetworkFilter::default(), usize::MAX);
                let failed = read.entries.into_iter().rev().find(|entry| {
                    entry.resource_type == "Document"
                        && entry.frame_id.as_deref() == Some(main)
                        && entry.failure.is_some()
                });
                if failed.is_some() {
                    return failed;
                }
                if in_flight.changed().await.is_err() {
                    return None;
                }
            }
        });
        waited.await.ok().flatten()
    }

    /// Follows how many requests are in flight (for waits on a quiet network).
    pub fn watch_in_flight(&self) -> tokio::sync::watch::Receiver<usize> {
        self.network
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .watch_in_flight()
    }

    /// Asks the page's main thread a trivial question without waiting for
    /// the answer; the returned [`MainThreadProbe`] tells later whether it
    /// came. Sent alongside a navigation, silence tells a page held by a
    /// busy script (which cannot let go of its document) from a slow server.
    ///
    /// The question is on its way when this returns, so it reaches the
    /// page ahead of a navigation sent next (once a navigation has begun,
    /// the browser holds the page's commands until it commits).
    pub async fn probe_main_thread(&self) -> MainThreadProbe {
        let host = Arc::clone(&self.host);
        let view = self.view.clone();
        let answered = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&answered);
        let mut asked = Box::pin(async move {
            let probe = trivial_question();
            // Only an answer counts: the browser fails a question still
            // pending when a navigation moves on from the page.
            match host
                .call_within(&view, &probe, MainThreadProbe::BOUND)
                .await
            {
                Ok(_) => flag.store(true, std::sync::atomic::Ordering::Relaxed),
                Err(error) => tracing::debug!(%error, "the page did not answer its probe"),
            }
        });
        // The first poll sends the command; a task waits for the answer
        // (unless the first poll already ended it: a closed tab, say).
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(asked.as_mut(), cx))
        })
        .await;
        MainThreadProbe {
            answered,
            question: first.is_pending().then(|| tokio::spawn(asked)),
        }
    }

    /// Stops the script running in the page's main thread, if any (one
    /// that loops, say), without waiting for the page to confirm: a busy
    /// page may be slow to, and the caller keeps its bound.
    ///
    /// A probe asks first whether the page answers; only silence means a
    /// script runs, and only then is it terminated (and the probe asked
    /// again, a few times: a script whose evaluation was sent a moment ago
    /// may not have started when the first termination arrived). A page
    /// that answers is left alone: a termination sent while nothing runs can
    /// stop the next script instead, such as the agent's next call.
    pub fn terminate_scripts(&self) {
        const ATTEMPTS: usize = 5;
        const PROBE_BOUND: std::time::Duration = std::time::Duration::from_secs(1);
        let host = Arc::clone(&self.host);
        let view = self.view.clone();
        tokio::spawn(async move {
            let stop = crate::cdp::protocol::RuntimeTerminateExecution {};
            let probe = trivial_question();
            for attempt in 1..=ATTEMPTS {
                // An answer, a closed tab or a lost browser ends the effort.
                match host.call_within(&view, &probe, PROBE_BOUND).await {
                    Err(crate::error::BrowserError::Timeout { .. }) => {
                        tracing::debug!(attempt, "the page runs a script; terminating it");
                    }
                    _ => return,
                }
                if let Err(error) = host
                    .call_within(&view, &stop, std::time::Duration::from_secs(2))
                    .await
                {
                    tracing::debug!(%error, "could not terminate a script");
                    return;
                }
            }
        });
    }

    /// Whether the page's main thread stopped answering.
    pub fn is_unresponsive(&self) -> bool {
        self.unresponsive.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Notes that the page's main thread stopped answering.
    pub fn mark_unresponsive(&self) {
        self.unresponsive
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many dialogs the page has opened (all answered) since it was prepared.
    pub fn dialogs_answered(&self) -> u64 {
        self.dialogs_answered
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Returns and forgets the dialogs answered since the last call.
    pub fn take_dialogs(&self) -> Vec<DialogRecord> {
        std::mem::take(&mut *self.dialogs.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Marks the page as opened by an external CDP client.
    pub(crate) fn mark_external(&self) {
        self.external
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether an external CDP client opened the page (it sets the page's
    /// viewport itself; the shell leaves it alone).
    pub fn is_external(&self) -> bool {
        self.external.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The page's icon as a `data:` URL (for the tab strip), as last
    /// looked up by [`Page::refresh_icon`].
    pub fn icon(&self) -> Option<String> {
        self.icon
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .picture
            .clone()
    }

    /// Looks the page's icon up again; says whether it changed.
    pub async fn refresh_icon(&self) -> bool {
        let known = self.icon.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let icon = icon::look_up(self, &known).await;
        let changed = icon.picture != known.picture;
        *self.icon.lock().unwrap_or_else(|p| p.into_inner()) = icon;
        changed
    }

    /// Evaluates `expression` in our isolated world of the main frame (see [`world`]).
    pub(crate) async fn evaluate_in_world(
        &self,
        budget: &Budget,
        expression: &str,
    ) -> Result<Value> {
        self.world(None).evaluate(self, budget, expression).await
    }

    /// Our world in `frame` (`None`: the main frame).
    pub(crate) fn world(&self, frame: Option<&str>) -> Arc<world::World> {
        let mut worlds = self.worlds.lock().unwrap_or_else(|p| p.into_inner());
        // Forget worlds of frames that are gone, so the map does not grow.
        if worlds.len() > 64 {
            worlds.retain(|key, _| key.is_none());
        }
        Arc::clone(
            worlds
                .entry(frame.map(str::to_owned))
                .or_insert_with(|| Arc::new(world::World::new(frame.map(str::to_owned)))),
        )
    }

    /// Sends a typed command to the main frame (`None`) or an out-of-process frame.
    pub async fn call_in<C: Command + Sync>(
        &self,
        frame: Option<&str>,
        budget: &Budget,
        command: &C,
    ) -> Result<C::Response> {
        let Some(frame) = frame else {
            return self.call(budget, command).await;
        };
        let bound = budget.command_bound(self.host.command_timeout());
        budget
            .run(
                C::METHOD,
                self.host
                    .call_frame_within(&self.view, frame, command, bound),
            )
            .await
    }

    /// Evaluates a page-side helper expression and returns its JSON value.
    pub(crate) async fn evaluate_value(
        &self,
        budget: &Budget,
        expression: String,
    ) -> Result<Value> {
        execute::evaluate_json(self, budget, expression).await
    }
}

/// Answers every dialog at once: `beforeunload` is accepted (the navigation
/// the agent asked for proceeds); alert, confirm and prompt are dismissed.
async fn answer_dialogs(
    answered: Arc<std::sync::atomic::AtomicU64>,
    host: Weak<dyn ViewHost>,
    view: ViewId,
    mut events: EventStream,
    log: Arc<Mutex<Vec<DialogRecord>>>,
) {
    while let Some(event) = events.recv().await {
        if event.method != "Page.javascriptDialogOpening" {
            continue;
        }
        let Some(dialog) = event.decode::<DialogOpening>() else {
            continue;
        };
        let accept = dialog.kind == "beforeunload";
        let Some(host) = host.upgrade() else { return };
        if let Err(error) = host
            .call(&view, &PageHandleJavaScriptDialog { accept })
            .await
        {
            tracing::debug!(%view, %error, "could not answer a dialog");
        }
        tracing::debug!(%view, kind = %dialog.kind, accept, "answered a JavaScript dialog");
        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() == DIALOG_LOG_CAP {
            log.remove(0);
        }
        log.push(DialogRecord {
            kind: dialog.kind,
            message: dialog.message,
            accepted: accept,
            at: SystemTime::now(),
        });
    }
}

/// Marks the page crashed when its renderer dies, and alive again once a
/// reload or navigation has given it a new document.
async fn follow_health(
    mut events: EventStream,
    health: Weak<tokio::sync::watch::Sender<PageHealth>>,
) {
    while let Some(event) = events.recv().await {
        let Some(health) = health.upgrade() else {
            return;
        };
        match event.method.as_str() {
            "Inspector.targetCrashed" => {
                tracing::info!("a page's renderer crashed");
                health.send_if_modified(|now| {
                    let crashed = *now == PageHealth::Alive;
                    if crashed {
                        *now = PageHealth::Crashed;
                    }
                    crashed
                });
            }
            // Said by hosts whose debugging sessions can be taken away
            // (the extension host), never by Chromium itself.
            crate::host::DEBUGGER_DETACHED_EVENT => {
                let reason = event
                    .params
                    .get("reason")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("no reason given")
                    .to_owned();
                tracing::info!(%reason, "a page's debugger was taken away");
                health.send_if_modified(|now| {
                    let detached = !matches!(now, PageHealth::BrowserGone { .. });
                    if detached {
                        *now = PageHealth::Detached { reason };
                    }
                    detached
                });
            }
            "Page.frameNavigated" | "Page.loadEventFired" | "Page.domContentEventFired" => {
                let main_frame = event.params.pointer("/frame/parentId").is_none();
                if main_frame {
                    health.send_if_modified(|now| {
                        let revived = *now == PageHealth::Crashed;
                        if revived {
                            *now = PageHealth::Alive;
                        }
                        revived
                    });
                }
            }
            _ => {}
        }
    }
}

/// The cheapest question a page's main thread can answer: whether an
/// answer comes tells whether that thread is free.
fn trivial_question() -> crate::cdp::protocol::RuntimeEvaluate {
    crate::cdp::protocol::RuntimeEvaluate {
        expression: "0".into(),
        return_by_value: true,
        ..Default::default()
    }
}

/// A question put to a page's main thread (see [`Page::probe_main_thread`]);
/// dropping it forgets the question.
#[derive(Debug)]
pub struct MainThreadProbe {
    answered: Arc<std::sync::atomic::AtomicBool>,
    /// The task waiting for the answer, while it waits.
    question: Option<tokio::task::JoinHandle<()>>,
}

impl MainThreadProbe {
    /// How long the question stays open at most.
    const BOUND: std::time::Duration = std::time::Duration::from_secs(60);

    /// Whether the page has answered.
    pub fn answered(&self) -> bool {
        self.answered.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for MainThreadProbe {
    fn drop(&mut self) {
        if let Some(question) = &self.question {
            question.abort();
        }
    }
}
