//! A pool of browsers behind one host: each agent session gets a browser
//! of its own from a CDP endpoint that hands out a fresh browser per
//! connection (browserless, or any such service), and gives it back when
//! the session ends.
//!
//! To the provider a session's browser is its isolated context: opening a
//! context connects to the pool (a *lease*), closing it closes that
//! connection, and every view lives in the lease it was created in. A
//! full pool either refuses a connection (HTTP 429 or 503, which
//! [`crate::cdp::transport::websocket`] turns into `BUSY`) or holds it in
//! its queue; either way a session waits within [`PoolOptions::wait`] and
//! then hears `BUSY` with the pool's words. A pool that handed out
//! browsers before and cannot be reached now (it restarts) is waited for
//! the same way, and then answers `NOT_CONNECTED`. The ask itself goes on
//! after such a call and serves the next session that asks ([`asking`]).
//! A lease whose browser dies is reported as [`ViewEvent::ContextLost`],
//! so that only the sessions in it start again in a new one; nobody else
//! notices.
//!
//! Views that belong to no session (a person's tab in the column) share
//! one lease, taken when the first such view is made.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    ChromiumHost, ContextId, CreateViewOptions, FrameInfo, HostCensus, ViewEvent, ViewHost, ViewId,
    ViewInfo,
};
use crate::cdp::EventStream;
use crate::error::{BrowserError, Result};

mod asking;

use asking::{Ask, Asking, Asks};

/// Where the pool is and how long a session waits for a browser from it.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// The pool's WebSocket endpoint (`ws://…`, with its token if it takes
    /// one); every connection to it is a browser of its own.
    pub endpoint: String,
    /// How long a session waits for a free browser before `BUSY`.
    pub wait: Duration,
    /// Bound for each CDP command.
    pub command_timeout: Duration,
}

/// What the pool has done so far, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Browsers held now.
    pub held: u64,
    /// Browsers taken from the pool since start.
    pub taken: u64,
    /// Sessions that had to wait (the pool was full at first).
    pub waited: u64,
    /// Sessions told `BUSY` (no browser within the wait).
    pub refused: u64,
    /// Browsers that died while a session held them.
    pub lost: u64,
}

/// A browser pool as one [`ViewHost`] (see the module docs).
#[derive(Debug, Clone)]
pub struct PoolHost {
    state: Arc<PoolState>,
}

#[derive(Debug)]
struct PoolState {
    options: PoolOptions,
    /// The browsers held, by the context that stands for them.
    leases: Mutex<HashMap<ContextId, Arc<Lease>>>,
    /// Which lease each view lives in.
    views: Mutex<HashMap<ViewId, ContextId>>,
    /// Views whose browser died, with why: a command for one answers
    /// `BROWSER_RESTARTED` (its session's tabs are being reopened).
    lost_views: Mutex<HashMap<ViewId, (ContextId, String)>>,
    /// The lease of views that belong to no session, once one was made.
    shared: tokio::sync::Mutex<Option<ContextId>>,
    /// Held while a lost context takes its new browser.
    retaking: tokio::sync::Mutex<()>,
    /// Contexts whose sessions ended: never taken again.
    given_back: Mutex<std::collections::HashSet<ContextId>>,
    /// Everyone following views.
    watchers: Mutex<Vec<mpsc::UnboundedSender<ViewEvent>>>,
    next_lease: AtomicU64,
    /// The pool browsers' product string, once one was seen.
    version: Mutex<String>,
    /// Asks for a browser that outlasted the call that made them.
    asks: Arc<Asks>,
    taken: Arc<AtomicU64>,
    waited: AtomicU64,
    refused: AtomicU64,
    lost: AtomicU64,
}

/// One browser taken from the pool.
#[derive(Debug)]
struct Lease {
    id: ContextId,
    host: ChromiumHost,
    /// Views made here belong to no session (the shared lease).
    shared: bool,
    /// Cancelled when we give the browser back, so its end is not a loss.
    released: CancellationToken,
}

impl PoolHost {
    /// A pool host; nothing is taken from the pool until a session needs it.
    pub fn new(options: PoolOptions) -> Self {
        Self {
            state: Arc::new(PoolState {
                asks: Arc::new(Asks::new(options.wait)),
                options,
                leases: Mutex::default(),
                views: Mutex::default(),
                lost_views: Mutex::default(),
                shared: tokio::sync::Mutex::default(),
                retaking: tokio::sync::Mutex::default(),
                given_back: Mutex::default(),
                watchers: Mutex::default(),
                next_lease: AtomicU64::new(1),
                version: Mutex::new(String::new()),
                taken: Arc::new(AtomicU64::new(0)),
                waited: AtomicU64::new(0),
                refused: AtomicU64::new(0),
                lost: AtomicU64::new(0),
            }),
        }
    }

    /// What the pool has done so far.
    pub fn stats(&self) -> PoolStats {
        let state = &self.state;
        PoolStats {
            held: state.leases().len() as u64,
            taken: state.taken.load(Ordering::Relaxed),
            waited: state.waited.load(Ordering::Relaxed),
            refused: state.refused.load(Ordering::Relaxed),
            lost: state.lost.load(Ordering::Relaxed),
        }
    }

    /// The pool's endpoint without its query (which may carry a token).
    pub fn endpoint_shown(&self) -> &str {
        let endpoint = &self.state.options.endpoint;
        endpoint.split('?').next().unwrap_or(endpoint)
    }

    /// Gives every browser back to the pool (and stops asking for more).
    pub async fn shutdown(&self) {
        self.state.asks.drop_all().await;
        let leases: Vec<Arc<Lease>> = self.state.leases().drain().map(|(_, l)| l).collect();
        for lease in leases {
            lease.release().await;
        }
    }

    /// The lease a view lives in; `BROWSER_RESTARTED` for a view whose
    /// browser died.
    fn lease_of(&self, view: &ViewId) -> Result<Arc<Lease>> {
        let context = self
            .state
            .views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(view)
            .cloned();
        if let Some(lease) = context.and_then(|context| self.state.leases().get(&context).cloned())
        {
            return Ok(lease);
        }
        let lost = self
            .state
            .lost_views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(view)
            .map(|(_, cause)| cause.clone());
        Err(match lost {
            Some(cause) => BrowserError::BrowserRestarted { cause },
            None => BrowserError::TabNotFound {
                tab: view.as_str().to_owned(),
            },
        })
    }

    /// A command's failure, as the session should hear it: when the
    /// lease's browser died under it, `BROWSER_RESTARTED` (the session
    /// gets a new one), not a crash that nothing brings back. A browser
    /// being shut down (its pool restarting) fails commands a moment
    /// before its connection ends, so such a failure waits up to
    /// [`CLOSE_GRACE`] for that end before it is taken as it is.
    async fn explained(lease: &Lease, error: BrowserError) -> BrowserError {
        let may_be_lost = matches!(
            error,
            BrowserError::BrowserCrashed { .. } | BrowserError::NotConnected { .. }
        ) && !lease.released.is_cancelled();
        if !may_be_lost {
            return error;
        }
        let ended = !lease.host.connection().is_open()
            || tokio::time::timeout(CLOSE_GRACE, lease.host.connection().closed())
                .await
                .is_ok();
        if ended && !lease.released.is_cancelled() {
            BrowserError::BrowserRestarted {
                cause: error.to_string(),
            }
        } else {
            error
        }
    }

    /// `result` of a command on `lease`, its failure [`Self::explained`].
    async fn through<T>(lease: &Lease, result: Result<T>) -> Result<T> {
        match result {
            Ok(value) => Ok(value),
            Err(error) => Err(Self::explained(lease, error).await),
        }
    }

    /// The lease of views that belong to no session, taken on first use.
    async fn shared_lease(&self) -> Result<Arc<Lease>> {
        let mut shared = self.state.shared.lock().await;
        if let Some(lease) = shared
            .as_ref()
            .and_then(|id| self.state.leases().get(id).cloned())
        {
            return Ok(lease);
        }
        let lease = self.take(true, None).await?;
        *shared = Some(lease.id.clone());
        Ok(lease)
    }

    /// The browser of a session's context; when it died, a new one taken
    /// for the same context (so the session's tabs come back in it).
    async fn session_lease(&self, context: &ContextId) -> Result<Arc<Lease>> {
        if let Some(lease) = self.state.leases().get(context).cloned() {
            return Ok(lease);
        }
        // One taker at a time, so a context gets one browser, not one per tab.
        let _taking = self.state.retaking.lock().await;
        if let Some(lease) = self.state.leases().get(context).cloned() {
            return Ok(lease);
        }
        let known = context.as_str().starts_with("pool-")
            && !self
                .state
                .given_back
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(context);
        if !known {
            return Err(BrowserError::not_connected(format!(
                "the browser of context {} was given back to the pool",
                context.as_str()
            )));
        }
        tracing::info!(
            context = context.as_str(),
            "taking a new browser for a session whose browser went away"
        );
        self.take(false, Some(context.clone())).await
    }

    /// Takes a browser from the pool, waiting within the pool's wait while
    /// it is full (see the module docs): an ask left by an earlier call
    /// (see [`asking`]), or a new one; when the wait ends first, the ask
    /// goes on for the next call and this one hears `BUSY`.
    async fn take(&self, shared: bool, id: Option<ContextId>) -> Result<Arc<Lease>> {
        let state = &self.state;
        let wait = state.options.wait;
        let deadline = tokio::time::Instant::now() + wait;
        let asking = Asking {
            endpoint: state.options.endpoint.clone(),
            command_timeout: state.options.command_timeout,
            taken: Arc::clone(&state.taken),
        };
        let (ask, taken_up) = state.asks.take_up_or_start(&asking);
        // A call cancelled while it waits (its client left) leaves the ask
        // like one whose wait ended: its place in the pool's queue serves
        // the next session instead of ending with the call.
        let mut waiting = LeftIfDropped {
            asks: Arc::clone(&state.asks),
            ask: Some(Arc::clone(&ask)),
        };
        let outcome = ask.outcome_by(deadline).await;
        waiting.ask = None;
        match outcome {
            Some(Ok(host)) => {
                if taken_up || ask.last_refusal().is_some() {
                    state.waited.fetch_add(1, Ordering::Relaxed);
                }
                Ok(self.hold(host, shared, id))
            }
            Some(Err(error)) => Err(error),
            None => Err(self.not_yet(ask)),
        }
    }

    /// Why a call that waited the pool's whole wait has no browser: the
    /// pool's last refusal, or that it kept the session in its queue. The
    /// ask goes on for the session's next call.
    fn not_yet(&self, ask: Arc<Ask>) -> BrowserError {
        let state = &self.state;
        let wait = state.options.wait.as_millis();
        let kept = state.asks.keep().as_secs();
        let error = match ask.last_refusal() {
            Some(BrowserError::Busy {
                detail,
                retry_after_secs,
            }) => BrowserError::Busy {
                detail: format!(
                    "{detail}; asked for {wait} ms, and asking on for {kept} s for this session's next call"
                ),
                retry_after_secs,
            },
            Some(unreachable) => unreachable,
            None => BrowserError::Busy {
                detail: format!(
                    "{} kept this session in its queue for {wait} ms; its place is kept for {kept} s for the next call",
                    self.endpoint_shown()
                ),
                retry_after_secs: None,
            },
        };
        if matches!(error, BrowserError::Busy { .. }) {
            state.refused.fetch_add(1, Ordering::Relaxed);
            tracing::info!(%error, "the browser pool is full");
        } else {
            tracing::warn!(%error, "the browser pool did not come back");
        }
        state.asks.leave(ask);
        error
    }

    /// Holds a browser just taken: follows its views (as views of its
    /// context) and its end.
    fn hold(&self, host: ChromiumHost, shared: bool, id: Option<ContextId>) -> Arc<Lease> {
        let id = id.unwrap_or_else(|| {
            let number = self.state.next_lease.fetch_add(1, Ordering::Relaxed);
            ContextId(format!("pool-{number}"))
        });
        let lease = Arc::new(Lease {
            id,
            host,
            shared,
            released: CancellationToken::new(),
        });
        {
            let mut version = self.state.version.lock().unwrap_or_else(|p| p.into_inner());
            if version.is_empty() {
                *version = lease.host.browser_version();
            }
        }
        self.state.taken.fetch_add(1, Ordering::Relaxed);
        self.state
            .leases()
            .insert(lease.id.clone(), Arc::clone(&lease));
        tracing::info!(lease = %lease.id.as_str(), "took a browser from the pool");
        tokio::spawn(follow_lease(
            Arc::downgrade(&self.state),
            Arc::clone(&lease),
        ));
        lease
    }
}

impl PoolState {
    fn leases(&self) -> std::sync::MutexGuard<'_, HashMap<ContextId, Arc<Lease>>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells every follower; forgets those that left.
    fn tell(&self, event: &ViewEvent) {
        self.watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|watcher| watcher.send(event.clone()).is_ok());
    }

    /// `info` as the provider sees it: in its lease's context, unless it
    /// belongs to no session.
    fn in_context(lease: &Lease, mut info: ViewInfo) -> ViewInfo {
        info.context = (!lease.shared).then(|| lease.id.clone());
        info
    }
}

impl Lease {
    /// Gives the browser back: closing the connection ends it in the pool.
    async fn release(&self) {
        self.released.cancel();
        self.host.shutdown().await;
        tracing::info!(lease = %self.id.as_str(), "gave a browser back to the pool");
    }
}

/// Leaves its ask for the next session when dropped while still armed:
/// the call that waited on it was cancelled.
struct LeftIfDropped {
    asks: Arc<Asks>,
    ask: Option<Arc<Ask>>,
}

impl Drop for LeftIfDropped {
    fn drop(&mut self) {
        if let Some(ask) = self.ask.take() {
            self.asks.leave(ask);
        }
    }
}

/// How long a view a pool browser closed by itself is held back before
/// its sessions hear of it: a browser that is being shut down (its pool
/// restarting) closes every page before its connection ends, and those
/// pages are the session's to get back in a new browser, not pages that
/// closed. A page that closes itself (`window.close()`) leaves its
/// session's tabs this much later; tabs closed by an agent leave at once.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Passes a lease's view events on as views of its context, until the
/// lease is given back or its browser ends; an end we did not ask for is
/// a [`ViewEvent::ContextLost`] (or, for the shared lease, its views
/// closing). Closed views are held back for [`CLOSE_GRACE`] (see there).
async fn follow_lease(state: std::sync::Weak<PoolState>, lease: Arc<Lease>) {
    let mut events = lease.host.watch_views();
    let mut closing: std::collections::VecDeque<(ViewId, tokio::time::Instant)> =
        std::collections::VecDeque::new();
    let cause = loop {
        let next_close = closing.front().map(|(_, at)| *at);
        tokio::select! {
            () = lease.released.cancelled() => return,
            cause = lease.host.ended() => break cause,
            () = sleep_until_some(next_close) => {
                let Some(state) = state.upgrade() else { return };
                let now = tokio::time::Instant::now();
                while closing.front().is_some_and(|(_, at)| *at <= now) {
                    let Some((view, _)) = closing.pop_front() else { break };
                    state.views.lock().unwrap_or_else(|p| p.into_inner()).remove(&view);
                    state.tell(&ViewEvent::Closed(view));
                }
            }
            event = events.recv() => {
                let Some(event) = event else { break lease.host.ended().await };
                let Some(state) = state.upgrade() else { return };
                let event = match event {
                    ViewEvent::Opened(info) => {
                        state.views.lock().unwrap_or_else(|p| p.into_inner()).insert(info.id.clone(), lease.id.clone());
                        ViewEvent::Opened(PoolState::in_context(&lease, info))
                    }
                    ViewEvent::Changed(info) => ViewEvent::Changed(PoolState::in_context(&lease, info)),
                    ViewEvent::Closed(view) => {
                        closing.push_back((view, tokio::time::Instant::now() + CLOSE_GRACE));
                        continue;
                    }
                    other => other,
                };
                state.tell(&event);
            }
        }
    };
    if lease.released.is_cancelled() {
        return;
    }
    let Some(state) = state.upgrade() else { return };
    state.lost.fetch_add(1, Ordering::Relaxed);
    state.leases().remove(&lease.id);
    let gone: Vec<ViewId> = {
        let mut views = state.views.lock().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<ViewId> = views
            .iter()
            .filter(|(_, context)| **context == lease.id)
            .map(|(view, _)| view.clone())
            .collect();
        for view in &gone {
            views.remove(view);
        }
        gone
    };
    if !lease.shared {
        let mut lost = state.lost_views.lock().unwrap_or_else(|p| p.into_inner());
        for view in &gone {
            lost.insert(view.clone(), (lease.id.clone(), cause.clone()));
        }
    }
    tracing::warn!(lease = %lease.id.as_str(), %cause, "a pool browser went away");
    if lease.shared {
        for view in gone {
            state.tell(&ViewEvent::Closed(view));
        }
    } else {
        state.tell(&ViewEvent::ContextLost {
            context: lease.id.clone(),
            cause,
        });
    }
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[async_trait]
impl ViewHost for PoolHost {
    async fn create_view(&self, options: CreateViewOptions) -> Result<ViewId> {
        let lease = match &options.context {
            Some(context) => self.session_lease(context).await?,
            None => self.shared_lease().await?,
        };
        let view = lease
            .host
            .create_view(CreateViewOptions {
                context: None,
                ..options
            })
            .await?;
        self.state
            .views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(view.clone(), lease.id.clone());
        Ok(view)
    }

    async fn destroy_view(&self, view: &ViewId) -> Result<()> {
        self.state
            .lost_views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(view);
        let Ok(lease) = self.lease_of(view) else {
            return Ok(());
        };
        lease.host.destroy_view(view).await
    }

    async fn show_view(&self, view: &ViewId) -> Result<()> {
        let lease = self.lease_of(view)?;
        let result = lease.host.show_view(view).await;
        Self::through(&lease, result).await
    }

    async fn send_command(
        &self,
        view: &ViewId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let lease = self.lease_of(view)?;
        let result = lease.host.send_command(view, method, params, timeout).await;
        Self::through(&lease, result).await
    }

    async fn subscribe(&self, view: &ViewId) -> Result<EventStream> {
        let lease = self.lease_of(view)?;
        let result = lease.host.subscribe(view).await;
        Self::through(&lease, result).await
    }

    async fn frames(&self, view: &ViewId) -> Result<Vec<FrameInfo>> {
        let lease = self.lease_of(view)?;
        let result = lease.host.frames(view).await;
        Self::through(&lease, result).await
    }

    async fn send_frame_command(
        &self,
        view: &ViewId,
        frame: &str,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let lease = self.lease_of(view)?;
        let result = lease
            .host
            .send_frame_command(view, frame, method, params, timeout)
            .await;
        Self::through(&lease, result).await
    }

    async fn list_views(&self) -> Result<Vec<ViewInfo>> {
        let leases: Vec<Arc<Lease>> = self.state.leases().values().cloned().collect();
        let mut all = Vec::new();
        for lease in leases {
            // Only the views made or followed here: a pool browser's own
            // first tab belongs to nobody.
            let known = self
                .state
                .views
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            match lease.host.list_views().await {
                Ok(views) => all.extend(
                    views
                        .into_iter()
                        .filter(|info| known.get(&info.id) == Some(&lease.id))
                        .map(|info| PoolState::in_context(&lease, info)),
                ),
                Err(error) => {
                    tracing::debug!(lease = %lease.id.as_str(), %error, "cannot list a pool browser's views");
                }
            }
        }
        Ok(all)
    }

    fn watch_views(&self) -> mpsc::UnboundedReceiver<ViewEvent> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.state
            .watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sender);
        receiver
    }

    async fn create_context(&self) -> Result<ContextId> {
        Ok(self.take(false, None).await?.id.clone())
    }

    async fn destroy_context(&self, context: &ContextId) -> Result<()> {
        self.state
            .given_back
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(context.clone());
        let lease = self.state.leases().remove(context);
        if let Some(lease) = lease {
            self.state
                .views
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|_, held_in| held_in != context);
            lease.release().await;
        }
        {
            self.state
                .lost_views
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|_, (held_in, _)| held_in != context);
        }
        Ok(())
    }

    fn command_timeout(&self) -> Duration {
        self.state.options.command_timeout
    }

    fn browser_version(&self) -> String {
        let version = self
            .state
            .version
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if version.is_empty() {
            format!("a browser pool at {}", self.endpoint_shown())
        } else {
            version
        }
    }

    fn census(&self) -> HostCensus {
        let leases: Vec<Arc<Lease>> = self.state.leases().values().cloned().collect();
        leases
            .iter()
            .map(|lease| lease.host.census())
            .fold(HostCensus::default(), |sum, one| HostCensus {
                sessions: sum.sessions + one.sessions,
                frames: sum.frames + one.frames,
                subscribers: sum.subscribers + one.subscribers,
                pending: sum.pending + one.pending,
            })
    }
}
