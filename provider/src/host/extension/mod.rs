//! [`ExtensionHost`]: the view host in the person's own Chrome, through
//! the browser-shell extension (`assets/extension`, seeds 000–002).
//!
//! The extension connects to the shell's bridge ([`bridge`]) and proves the
//! pairing ([`protocol`], [`pairing`]); from then on the socket carries
//! CDP-shaped messages, so a [`Connection`] runs over it. Views are Chrome
//! tabs (`tab-<id>`): only the ones the person shared with an agent
//! session or an agent opened are ever listed, addressed or heard from —
//! the extension enforces that, and answers `NOT_SHARED` otherwise. CDP
//! goes through `chrome.debugger`, attached on a tab's first command.
//!
//! The extension's service worker may stop and come back at any time; the
//! host outlives its connections. Views and their event streams stay; a
//! call made while no extension is connected fails with `NOT_CONNECTED`
//! saying why, and one in flight when the connection drops fails the same
//! way (it is never replayed).
//!
//! A person's profile has no isolated contexts: every session shares its
//! cookies. [`ExtensionHost::create_context`] says so instead of faking one.

pub mod bridge;
pub mod native;
pub mod pairing;
pub mod protocol;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc, watch};

use super::frames::FrameSessions;
use super::{
    BatchedCommand, CommandBatch, ContextId, CreateViewOptions, FrameInfo, HostCensus, ViewEvent,
    ViewHost, ViewId, ViewInfo, send_each,
};
use crate::cdp::{CdpEvent, Connection, EventFilter, EventStream, SessionId};
use crate::error::Absence;
use crate::error::{BrowserError, Result};
use bridge::{Arrival, Authenticated, BridgeConfig, Listener, Via};
use native::{NativeConfig, NativeListener};
use pairing::Pairing;
use protocol::{
    BatchAnswer, MAX_BATCH, MAX_PENDING_COMMANDS, SEND_COMMANDS, SendCommandsParams, SessionLabel,
    SessionList,
};

/// How often at most the agents' activity is told to the extension.
const ACTIVITY_EVERY: Duration = Duration::from_millis(50);

/// Bound for the extension's own bookkeeping calls (tabs, sessions).
const EXTENSION_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// After the bridge drops, calls wait this long for the extension to come
/// back (its worker restarting takes a moment) instead of failing at once…
const COMEBACK_WAIT: Duration = Duration::from_secs(3);

/// …for this long after the drop; later (Chrome quit for good) they fail at once.
const COMEBACK_WINDOW: Duration = Duration::from_secs(15);

/// One tab as the extension describes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TabDescription {
    tab_id: i64,
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    opener_tab_id: Option<i64>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    agent_opened: bool,
}

impl TabDescription {
    fn view(&self) -> ViewId {
        view_of(self.tab_id)
    }

    fn info(&self) -> ViewInfo {
        ViewInfo {
            id: self.view(),
            url: self.url.clone(),
            title: self.title.clone(),
            opener: self
                .opener_tab_id
                .filter(|_| self.agent_opened)
                .map(view_of),
            context: None,
            shared_with: if self.agent_opened {
                None
            } else {
                self.session.clone()
            },
        }
    }
}

fn view_of(tab: i64) -> ViewId {
    ViewId(format!("tab-{tab}"))
}

fn tab_of(view: &ViewId) -> Result<i64> {
    view.0
        .strip_prefix("tab-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| BrowserError::TabNotFound {
            tab: view.0.clone(),
        })
}

/// The extension connected now, if any.
#[derive(Debug, Clone)]
struct Link {
    connection: Connection,
    /// Counts connections, for logs and to tell a dropped one from its successor.
    generation: u64,
    /// How it came (and, through the paired WebSocket, the pairing it proved).
    via: Via,
}

/// What the host saw of the extension's attempts: why it is not connected.
#[derive(Debug)]
struct Status {
    /// When the host started listening.
    started_at: tokio::time::Instant,
    /// How the extension can reach this shell (`None`: no way set up).
    setup: Option<String>,
    /// The last attempt refused: when, how it came, why.
    refused: Option<(tokio::time::Instant, String, String)>,
    /// The last connection that ended: when and why.
    dropped: Option<(tokio::time::Instant, String)>,
    /// The person pressed Disconnect (told by the extension as it left).
    person_left: bool,
}

impl Status {
    fn new(setup: Option<String>) -> Self {
        Self {
            started_at: tokio::time::Instant::now(),
            setup,
            refused: None,
            dropped: None,
            person_left: false,
        }
    }

    fn refused(&mut self, via: String, reason: String) {
        self.refused = Some((tokio::time::Instant::now(), via, reason));
    }

    /// Why no extension is connected, and the one thing to do.
    fn absence(&self, more: &str) -> (Absence, String) {
        let ago = |at: tokio::time::Instant| format!("{:.1} s ago", at.elapsed().as_secs_f32());
        if self.person_left {
            let when = self
                .dropped
                .as_ref()
                .map(|(at, _)| ago(*at))
                .unwrap_or_default();
            return (
                Absence::DisconnectedByPerson,
                format!("the person pressed Disconnect in the browser-shell extension {when}"),
            );
        }
        let refused_last = self.refused.as_ref().filter(|(at, ..)| {
            self.dropped
                .as_ref()
                .is_none_or(|(dropped, _)| at > dropped)
        });
        if let Some((at, via, reason)) = refused_last {
            return (
                Absence::Refused,
                format!(
                    "the extension tried through {via} {} and was refused: {reason}",
                    ago(*at)
                ),
            );
        }
        if let Some((at, reason)) = &self.dropped {
            return (
                Absence::Dropped,
                format!(
                    "it was connected until {} ({reason}) and has not come back{more}",
                    ago(*at)
                ),
            );
        }
        match &self.setup {
            None => (
                Absence::NotSetUp,
                "the extension has no way to reach this shell: native messaging is not installed and it is not paired".into(),
            ),
            Some(setup) => (
                Absence::NeverSeen,
                format!(
                    "no attempt from the extension since this shell started {} ({setup}): Chrome is not running, or the browser-shell extension is not loaded in it",
                    ago(self.started_at)
                ),
            ),
        }
    }
}

/// What the host knows about one view.
#[derive(Debug, Default)]
struct ViewState {
    info: Option<ViewInfo>,
    subscribers: Vec<mpsc::UnboundedSender<Arc<CdpEvent>>>,
}

#[derive(Debug)]
struct Shared {
    link: watch::Sender<Option<Link>>,
    /// The newest connection's generation: an older one still settling
    /// in when a newer came gives way to it.
    newest: AtomicU64,
    /// Out-of-process frames of the views (child sessions named
    /// `tab-<id>:<session>` by the extension).
    frames: Mutex<FrameSessions>,
    views: Mutex<HashMap<ViewId, ViewState>>,
    watchers: Mutex<Vec<mpsc::UnboundedSender<ViewEvent>>>,
    sessions: watch::Sender<SessionList>,
    pending: Arc<Semaphore>,
    /// The connected extension answered that it does not know batches
    /// (an older one): batches go one command per message.
    batches_refused: AtomicBool,
    /// Who holds control, as last told to the extension (told again to
    /// every new connection).
    control: Mutex<Option<&'static str>>,
    command_timeout: Duration,
    version: Mutex<String>,
    /// Why the extension is not connected, as far as the host saw.
    status: Mutex<Status>,
    /// Activity notes not sent yet, the latest per session.
    activity: Mutex<HashMap<String, String>>,
}

/// The person's own Chrome, driven through the browser-shell extension.
#[derive(Debug)]
pub struct ExtensionHost {
    shared: Arc<Shared>,
    /// The paired WebSocket's listener, when paired.
    listener: Mutex<Option<Listener>>,
    /// The native messaging socket's listener, when this shell holds it
    /// (kept for its drop, which stops it and removes the socket).
    _native: Option<NativeListener>,
    /// Where listeners report attempts (kept to listen again on a new port).
    arrivals: mpsc::UnboundedSender<Arrival>,
    /// Extension ids accepted, and this shell process as welcomes name it
    /// (for a listener started on a new pairing's port).
    extension_ids: Vec<String>,
    shell: String,
}

/// How to start an [`ExtensionHost`].
#[derive(Debug, Clone)]
pub struct ExtensionOptions {
    /// The paired WebSocket: address, pairing and accepted extension ids
    /// (`None`: not paired, native messaging only).
    pub bridge: Option<BridgeConfig>,
    /// The native messaging socket (`None`: the paired WebSocket only).
    pub native: Option<NativeConfig>,
    /// How the extension can reach this shell, in a person's words, for
    /// the reasons calls give while it is not connected (`None`: no way
    /// is set up). The shell knows; see [`ExtensionHost::set_setup`].
    pub setup: Option<String>,
    /// Default bound for CDP commands.
    pub command_timeout: Duration,
}

impl ExtensionHost {
    /// Starts listening for the extension. The host works from the start:
    /// calls fail with `NOT_CONNECTED`, saying why, until the extension
    /// connects.
    ///
    /// # Errors
    /// `NOT_CONNECTED` when a listener cannot be bound (another shell
    /// holds it).
    pub async fn start(options: ExtensionOptions) -> Result<Self> {
        let (extension_ids, shell) = match (&options.native, &options.bridge) {
            (Some(native), _) => (native.extension_ids.clone(), native.shell.clone()),
            (None, Some(bridge)) => (bridge.extension_ids.clone(), bridge.shell.clone()),
            (None, None) => (vec![protocol::EXTENSION_ID.into()], String::new()),
        };
        let shared = Arc::new(Shared {
            link: watch::Sender::new(None),
            newest: AtomicU64::new(0),
            frames: Mutex::new(FrameSessions::default()),
            views: Mutex::new(HashMap::new()),
            watchers: Mutex::new(Vec::new()),
            sessions: watch::Sender::new(SessionList::default()),
            pending: Arc::new(Semaphore::new(MAX_PENDING_COMMANDS)),
            batches_refused: AtomicBool::new(false),
            control: Mutex::new(None),
            command_timeout: options.command_timeout,
            version: Mutex::new("Chrome (not connected yet)".into()),
            status: Mutex::new(Status::new(options.setup)),
            activity: Mutex::new(HashMap::new()),
        });
        let (arrivals, mut arrived) = mpsc::unbounded_channel();
        let native = match options.native {
            Some(config) => Some(native::listen(
                config,
                shared.sessions.subscribe(),
                arrivals.clone(),
            )?),
            None => None,
        };
        let listener = match options.bridge {
            Some(config) => {
                Some(bridge::listen(config, shared.sessions.subscribe(), arrivals.clone()).await?)
            }
            None => None,
        };
        let weak = Arc::downgrade(&shared);
        tokio::spawn(async move {
            let mut generation = 0;
            while let Some(arrival) = arrived.recv().await {
                let Some(shared) = weak.upgrade() else { return };
                match arrival {
                    Arrival::Admitted(authenticated) => {
                        generation += 1;
                        shared.adopt_connection(authenticated, generation);
                    }
                    Arrival::Refused { via, reason } => shared.status().refused(via, reason),
                }
            }
        });
        Ok(Self {
            shared,
            listener: Mutex::new(listener),
            _native: native,
            arrivals,
            extension_ids,
            shell,
        })
    }

    /// Where the paired WebSocket listens, when paired.
    pub fn address(&self) -> Option<std::net::SocketAddr> {
        self.listener().as_ref().map(|listener| listener.address)
    }

    /// A new pairing while the host runs (`extension pair` again, or a
    /// first one): the WebSocket proves the new secret from now on (and
    /// listens on its port, when that changed), and a connection proved
    /// with another secret is closed. `None`: the pairing was removed.
    ///
    /// # Errors
    /// `NOT_CONNECTED` when the new port cannot be bound.
    pub async fn set_pairing(&self, pairing: Option<Pairing>) -> Result<()> {
        let port = self.address().map(|address| address.port());
        match &pairing {
            None => drop(self.listener().take()),
            Some(new) if port == Some(new.port) => {
                if let Some(listener) = self.listener().as_ref() {
                    listener.set_pairing(new.clone());
                }
            }
            Some(new) => {
                // The old port is let go of before the new one is bound.
                drop(self.listener().take());
                let config = BridgeConfig {
                    address: std::net::SocketAddr::from(([127, 0, 0, 1], new.port)),
                    pairing: new.clone(),
                    extension_ids: self.extension_ids.clone(),
                    shell: self.shell.clone(),
                };
                let listener = bridge::listen(
                    config,
                    self.shared.sessions.subscribe(),
                    self.arrivals.clone(),
                )
                .await?;
                *self.listener() = Some(listener);
            }
        }
        self.shared
            .close_if_proved_with_another_pairing(pairing.as_ref());
        Ok(())
    }

    fn listener(&self) -> std::sync::MutexGuard<'_, Option<Listener>> {
        self.listener.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the shell says of how the extension can reach it, for the
    /// reasons calls give while it is not connected (`None`: no way is set
    /// up: no native messaging host installed, no pairing).
    pub fn set_setup(&self, setup: Option<String>) {
        self.shared.status().setup = setup;
    }

    /// Why the person's Chrome is not connected now, as calls answer it
    /// (`None` when it is connected).
    pub fn absence(&self) -> Option<BrowserError> {
        if self.shared.connection().is_ok() {
            return None;
        }
        Some(self.shared.absent(""))
    }

    /// How the connected extension came (`None` while none is).
    pub fn connected_via(&self) -> Option<String> {
        self.shared
            .link
            .borrow()
            .as_ref()
            .map(|link| link.via.to_string())
    }

    /// Waits until an extension is connected, at most `within`.
    ///
    /// # Errors
    /// `NOT_CONNECTED` when none connected in time.
    pub async fn connected(&self, within: Duration) -> Result<()> {
        let mut link = self.shared.link.subscribe();
        tokio::time::timeout(within, link.wait_for(Option::is_some))
            .await
            .map(|_| ())
            .map_err(|_| self.shared.absent(""))
    }

    /// Follows whether an extension is connected.
    pub fn watch_connected(&self) -> watch::Receiver<bool> {
        let (tx, rx) = watch::channel(self.shared.link.borrow().is_some());
        let mut link = self.shared.link.subscribe();
        tokio::spawn(async move {
            while link.changed().await.is_ok() {
                let connected = link.borrow().is_some();
                if tx.send(connected).is_err() {
                    return;
                }
            }
        });
        rx
    }

    /// Tells the extension what an agent session is doing now (its popup
    /// shows it). Notes are sent at most every [`ACTIVITY_EVERY`], the
    /// latest of each session: agents calling in a tight loop must not
    /// flood the bridge (the person's Stop travels on it too).
    pub fn set_activity(&self, session: &str, text: &str) {
        let first = {
            let mut pending = self
                .shared
                .activity
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let first = pending.is_empty();
            pending.insert(session.to_owned(), text.to_owned());
            first
        };
        if !first {
            return;
        }
        let weak = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            tokio::time::sleep(ACTIVITY_EVERY).await;
            let Some(shared) = weak.upgrade() else { return };
            let notes =
                std::mem::take(&mut *shared.activity.lock().unwrap_or_else(|p| p.into_inner()));
            for (session, text) in notes {
                shared.notify(
                    "Extension.setActivity",
                    json!({"session": session, "text": text}),
                );
            }
        });
    }

    /// Tells the extension who holds control (its popup shows Stop or Resume).
    pub fn set_control(&self, person: bool) {
        let holder = if person { "person" } else { "agent" };
        *self
            .shared
            .control
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(holder);
        self.shared
            .notify("Extension.setControl", json!({"holder": holder}));
    }

    /// A tab the agents may address: shared with them or theirs.
    fn check_shared(&self, view: &ViewId) -> Result<()> {
        tab_of(view)?;
        if !self.shared.views().contains_key(view) {
            return Err(BrowserError::NotShared {
                detail: format!(
                    "{view} is not shared with agents (or no longer: it closed, the person stopped sharing it, or their Chrome restarted)"
                ),
            });
        }
        Ok(())
    }

    async fn extension_call(&self, method: &str, params: Value) -> Result<Value> {
        self.shared
            .call(None, method, params, EXTENSION_CALL_TIMEOUT)
            .await
    }
}

impl Shared {
    /// The current connection, when it is open.
    fn connection(&self) -> Result<Connection> {
        self.link
            .borrow()
            .as_ref()
            .map(|link| link.connection.clone())
            .filter(Connection::is_open)
            .ok_or_else(|| self.absent(""))
    }

    fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `NOT_CONNECTED` saying why no extension is connected (`more` is
    /// added to a dropped connection's words).
    fn absent(&self, more: &str) -> BrowserError {
        let (absence, detail) = self.status().absence(more);
        BrowserError::ChromeAbsent { absence, detail }
    }

    /// Closes the connection when it proved a pairing other than `current`
    /// (a new pairing ends the old one's connections).
    fn close_if_proved_with_another_pairing(&self, current: Option<&Pairing>) {
        let link = self.link.borrow();
        let Some(Link {
            connection,
            via: Via::Paired {
                pairing: proved, ..
            },
            ..
        }) = link.as_ref()
        else {
            return;
        };
        if current.is_none_or(|now| now.secret() != proved.secret()) {
            tracing::info!("the pairing changed: closing the connection proved with the old one");
            connection.close();
        }
    }

    /// The connection; shortly after a drop, the next one once the
    /// extension is back (a command not yet sent is sent then, never one
    /// that was in flight).
    async fn connection_or_comeback(&self) -> Result<Connection> {
        if let Ok(connection) = self.connection() {
            return Ok(connection);
        }
        // A link still set but closed dropped just now (its task has not
        // cleared it yet).
        let just_dropped = self.link.borrow().is_some();
        let (dropped, person_left) = {
            let status = self.status();
            (
                status.dropped.as_ref().map(|(at, _)| *at),
                status.person_left,
            )
        };
        if person_left
            || (!just_dropped && dropped.is_none_or(|at| at.elapsed() >= COMEBACK_WINDOW))
        {
            return Err(self.absent(""));
        }
        let mut link = self.link.subscribe();
        let back = link.wait_for(|link| link.as_ref().is_some_and(|l| l.connection.is_open()));
        match tokio::time::timeout(COMEBACK_WAIT, back).await {
            Ok(Ok(_)) => self.connection(),
            _ => Err(self.absent(&format!(" (waited {} s for it)", COMEBACK_WAIT.as_secs()))),
        }
    }

    /// One command through the extension, within the cap on pending ones.
    async fn call(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        self.call_carrying(session, method, params, timeout, 1)
            .await
    }

    /// A command through the extension that carries `commands` CDP
    /// commands, each taking one of the slots for pending ones.
    async fn call_carrying(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
        commands: u32,
    ) -> Result<Value> {
        let started = tokio::time::Instant::now();
        let connection = self.connection_or_comeback().await?;
        let slots = Arc::clone(&self.pending).acquire_many_owned(commands);
        let permit = tokio::time::timeout(timeout, slots)
            .await
            .map_err(|_| {
                BrowserError::timeout(
                    format!("CDP {method} (waiting for one of {MAX_PENDING_COMMANDS} slots)"),
                    timeout,
                )
            })?
            .map_err(|_| BrowserError::not_connected("the host is shutting down"))?;
        let left = timeout.saturating_sub(started.elapsed());
        let result = connection
            .send_with_timeout(session, method, params, left)
            .await;
        drop(permit);
        result.map_err(|error| translate(error, &connection))
    }

    /// Up to [`MAX_BATCH`] commands for a tab in one message; the first
    /// failure, in their order, is the answer.
    async fn call_batch(
        &self,
        tab: &ViewId,
        commands: &[BatchedCommand],
        timeout: Duration,
    ) -> Result<()> {
        debug_assert!(
            commands.len() <= MAX_BATCH,
            "a batch is cut into chunks first"
        );
        let params = serde_json::to_value(SendCommandsParams {
            session_id: tab.as_str(),
            commands,
        })
        .map_err(|e| BrowserError::Protocol {
            method: SEND_COMMANDS.into(),
            message: format!("cannot encode the batch: {e}"),
        })?;
        let count = u32::try_from(commands.len().min(MAX_BATCH)).unwrap_or(1);
        let answer = self
            .call_carrying(None, SEND_COMMANDS, params, timeout, count)
            .await?;
        let answer: BatchAnswer =
            serde_json::from_value(answer).map_err(|e| BrowserError::Protocol {
                method: SEND_COMMANDS.into(),
                message: format!("unexpected answer shape: {e}"),
            })?;
        if answer.answers.len() != commands.len() {
            return Err(BrowserError::Protocol {
                method: SEND_COMMANDS.into(),
                message: format!(
                    "{} answers for {} commands",
                    answer.answers.len(),
                    commands.len()
                ),
            });
        }
        let failed = answer
            .answers
            .into_iter()
            .zip(commands)
            .find_map(|(answer, command)| answer.error.map(|error| (command.method, error)));
        match failed {
            None => Ok(()),
            Some((method, error)) => Err(translate_refusal(BrowserError::Protocol {
                method: method.into(),
                message: error.message,
            })),
        }
    }

    /// A command whose answer nobody waits for (popup bookkeeping).
    fn notify(&self, method: &str, params: Value) {
        let Ok(connection) = self.connection() else {
            return;
        };
        let method = method.to_owned();
        tokio::spawn(async move {
            if let Err(error) = connection
                .send_with_timeout(None, &method, params, EXTENSION_CALL_TIMEOUT)
                .await
            {
                tracing::debug!(%error, method, "the extension did not take a notice");
            }
        });
    }

    fn emit(&self, event: ViewEvent) {
        self.watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|watcher| watcher.send(event.clone()).is_ok());
    }

    fn views(&self) -> std::sync::MutexGuard<'_, HashMap<ViewId, ViewState>> {
        self.views.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A view the extension showed us (shared, opened by an agent): known
    /// from now on; `true` when it is new.
    fn know(&self, info: ViewInfo) -> bool {
        let mut views = self.views();
        let state = views.entry(info.id.clone()).or_default();
        let new = state.info.is_none();
        state.info = Some(info);
        new
    }

    /// A view the agents may no longer reach: its event streams end.
    fn forget(&self, view: &ViewId) -> bool {
        self.frames().forget_under(&SessionId(view.0.clone()));
        self.views().remove(view).is_some()
    }

    fn frames(&self) -> std::sync::MutexGuard<'_, FrameSessions> {
        self.frames.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A newly authenticated extension replaces the previous connection.
    fn adopt_connection(self: &Arc<Self>, authenticated: Authenticated, generation: u64) {
        let Authenticated {
            transport,
            extension_version,
            via,
            permit,
        } = authenticated;
        let connection = Connection::start(transport, self.command_timeout);
        tracing::info!(%via, generation, extension_version, "the browser-shell extension connected");
        tracing::info!(target: crate::AUDIT, event = "extension_connected", %via, generation);
        self.status().person_left = false;
        self.newest.store(generation, Ordering::SeqCst);
        // A new connection may be a newer extension that knows batches.
        self.batches_refused.store(false, Ordering::Relaxed);
        let previous = self.link.send_replace(None);
        if let Some(previous) = previous {
            previous.connection.close();
        }
        let events = connection.subscribe(EventFilter::All);
        tokio::spawn(sync_sessions(self.sessions.subscribe(), connection.clone()));
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            let _permit = permit;
            // Connected (for calls and for `connected()`) once the views
            // agree with what the extension shows now: a tab of a Chrome
            // that quit is gone before anyone calls again.
            shared.reconcile(&connection).await;
            let published = shared.link.send_if_modified(|link| {
                let newest = shared.newest.load(Ordering::SeqCst) == generation;
                if newest {
                    *link = Some(Link {
                        connection: connection.clone(),
                        generation,
                        via: via.clone(),
                    });
                }
                newest
            });
            if !published {
                connection.close();
                return;
            }
            // A worker that came back, or a Chrome that did, hears who holds control.
            let holder = *shared.control.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(holder) = holder {
                shared.notify("Extension.setControl", json!({"holder": holder}));
            }
            shared.pump(events).await;
            let reason = connection.closed().await;
            let current = shared
                .link
                .borrow()
                .as_ref()
                .is_some_and(|link| link.generation == generation);
            if current {
                shared.link.send_replace(None);
                shared.status().dropped = Some((tokio::time::Instant::now(), reason.to_string()));
            }
            tracing::warn!(generation, %reason, "the browser-shell extension disconnected");
            tracing::info!(target: crate::AUDIT, event = "extension_disconnected", generation);
        });
    }

    /// After a (re)connection: the browser's version, and the views the
    /// extension shows now against the ones we knew.
    async fn reconcile(&self, connection: &Connection) {
        if let Ok(version) = connection
            .send_with_timeout(
                None,
                "Extension.getVersion",
                json!({}),
                EXTENSION_CALL_TIMEOUT,
            )
            .await
            && let Some(product) = version.get("product").and_then(Value::as_str)
        {
            *self.version.lock().unwrap_or_else(|p| p.into_inner()) = product.to_owned();
        }
        let sessions = self.sessions.borrow().clone();
        let _ = connection
            .send_with_timeout(
                None,
                "Extension.setSessions",
                json!(sessions),
                EXTENSION_CALL_TIMEOUT,
            )
            .await;
        let Ok(listed) = connection
            .send_with_timeout(
                None,
                "Extension.listTabs",
                json!({}),
                EXTENSION_CALL_TIMEOUT,
            )
            .await
        else {
            return;
        };
        let tabs: Vec<TabDescription> = listed
            .get("tabs")
            .cloned()
            .and_then(|tabs| serde_json::from_value(tabs).ok())
            .unwrap_or_default();
        let now: Vec<ViewId> = tabs.iter().map(TabDescription::view).collect();
        let gone: Vec<ViewId> = self
            .views()
            .keys()
            .filter(|view| !now.contains(view))
            .cloned()
            .collect();
        for view in gone {
            self.forget(&view);
            self.emit(ViewEvent::Closed(view));
        }
        for tab in tabs {
            let info = tab.info();
            if self.know(info.clone()) {
                self.emit(ViewEvent::Opened(info));
            }
        }
    }

    /// Routes the connection's events until it closes: the extension's own
    /// to view events, CDP events to their view's subscribers.
    async fn pump(&self, mut events: EventStream) {
        while let Some(event) = events.recv().await {
            if let Some(name) = event.method.strip_prefix("Extension.") {
                self.extension_event(name, &event.params);
                continue;
            }
            let Some(session) = &event.session_id else {
                continue;
            };
            if event.method.starts_with("Target.") {
                self.frames().note(&event);
            }
            let view = ViewId(session.0.clone());
            self.deliver(&view, &event);
        }
    }

    /// Hands an event to everyone following `view`.
    fn deliver(&self, view: &ViewId, event: &Arc<CdpEvent>) {
        if let Some(state) = self.views().get_mut(view) {
            state
                .subscribers
                .retain(|subscriber| subscriber.send(Arc::clone(event)).is_ok());
        }
    }

    fn extension_event(&self, name: &str, params: &Value) {
        let tab = || serde_json::from_value::<TabDescription>(params.clone()).ok();
        match name {
            "tabShared" => {
                if let Some(tab) = tab() {
                    let info = tab.info();
                    tracing::debug!(view = %info.id, opener = ?info.opener, url = info.url, "a tab is shared with an agent");
                    // Shared again (after it left its site): the same tab.
                    if self.know(info.clone()) {
                        self.emit(ViewEvent::Opened(info));
                    } else {
                        self.emit(ViewEvent::Changed(info));
                    }
                }
            }
            "tabUpdated" => {
                if let Some(tab) = tab() {
                    let info = tab.info();
                    if self.views().contains_key(&info.id) {
                        self.know(info.clone());
                        self.emit(ViewEvent::Changed(info));
                    }
                }
            }
            "tabRemoved" => {
                if let Some(tab) = params.get("tabId").and_then(Value::as_i64) {
                    let view = view_of(tab);
                    let reason = params.get("reason").and_then(Value::as_str).unwrap_or("");
                    tracing::info!(%view, reason, "a tab left the agents");
                    if self.forget(&view) {
                        self.emit(ViewEvent::Closed(view));
                    }
                }
            }
            "debuggerDetached" => {
                let Some(tab) = params.get("tabId").and_then(Value::as_i64) else {
                    return;
                };
                let reason = params
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                tracing::warn!(tab, reason, "the debugger of a driven tab was taken away");
                let view = view_of(tab);
                // Its page drives it again (a new page) on its next use.
                let event = Arc::new(CdpEvent {
                    method: super::DEBUGGER_DETACHED_EVENT.into(),
                    params: json!({"reason": explain_detach(reason)}),
                    session_id: Some(SessionId(view.0.clone())),
                });
                self.deliver(&view, &event);
            }
            "stop" => {
                let reason = params
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("Stop");
                self.emit(ViewEvent::PersonStopped {
                    reason: reason.chars().take(200).collect(),
                });
            }
            "resume" => self.emit(ViewEvent::PersonResumed),
            "goodbye" => {
                // The person pressed Disconnect: the connection closes next.
                tracing::info!("the person disconnected the browser-shell extension");
                self.status().person_left = true;
            }
            "heartbeat" => {}
            other => tracing::debug!(event = other, %params, "an extension event we do not know"),
        }
    }
}

/// Chrome's reason for taking a tab's debugger away, in words for the agent.
fn explain_detach(reason: &str) -> String {
    match reason {
        "canceled_by_user" => "the person closed Chrome's debugging bar".into(),
        "target_closed" => {
            "the tab went to a page extensions may not drive, or its page was replaced".into()
        }
        other => other.chars().take(200).collect(),
    }
}

/// Tells the extension every change of the agent sessions, one after the
/// other (an older list arriving last would end a newer session's shares).
async fn sync_sessions(mut sessions: watch::Receiver<SessionList>, connection: Connection) {
    while sessions.changed().await.is_ok() {
        let list = sessions.borrow_and_update().clone();
        let sent = connection
            .send_with_timeout(
                None,
                "Extension.setSessions",
                json!(list),
                EXTENSION_CALL_TIMEOUT,
            )
            .await;
        if let Err(error) = sent {
            if !connection.is_open() {
                return;
            }
            tracing::debug!(%error, "the extension did not take the sessions");
        }
    }
}

/// The extension answers refusals as `CODE: text`; those become our codes.
fn translate(error: BrowserError, connection: &Connection) -> BrowserError {
    if !matches!(error, BrowserError::Protocol { .. }) {
        let dropped = matches!(
            error,
            BrowserError::NotConnected { .. } | BrowserError::BrowserCrashed { .. }
        );
        if dropped && !connection.is_open() {
            return BrowserError::CallCut {
                detail: format!(
                    "the person's Chrome (the extension's worker stopped, or Chrome quit): {error}"
                ),
            };
        }
        return error;
    }
    translate_refusal(error)
}

/// An error answer of the extension's own (`CODE: text`) as our code.
fn translate_refusal(error: BrowserError) -> BrowserError {
    let BrowserError::Protocol { method, message } = &error else {
        return error;
    };
    let Some((code, detail)) = message.split_once(": ") else {
        return error;
    };
    let detail = detail.to_owned();
    match code {
        "NOT_SHARED" => BrowserError::NotShared { detail },
        "CALL_CUT" => BrowserError::CallCut { detail },
        "DEBUGGER_DETACHED" => BrowserError::DebuggerDetached { detail },
        "PAGE_PROTECTED" => BrowserError::PageProtected { detail },
        "TAB_NOT_FOUND" => BrowserError::TabNotFound { tab: detail },
        "SESSION_NOT_FOUND" => BrowserError::SessionNotFound { session: detail },
        "INVALID_ARGUMENT" => BrowserError::invalid(method.clone(), detail),
        _ => error,
    }
}

#[async_trait]
impl ViewHost for ExtensionHost {
    async fn create_view(&self, options: CreateViewOptions) -> Result<ViewId> {
        let Some(session) = options.owner else {
            return Err(BrowserError::invalid(
                "tab",
                "in the person's own Chrome, the person opens their tabs in Chrome itself",
            ));
        };
        if options.context.is_some() {
            return Err(no_contexts());
        }
        let created = self
            .extension_call(
                "Extension.createTab",
                json!({
                    "session": session,
                    "background": options.background,
                    "sessionsVersion": self.shared.sessions.borrow().version,
                }),
            )
            .await?;
        let tab = created
            .get("tabId")
            .and_then(Value::as_i64)
            .ok_or_else(|| BrowserError::Protocol {
                method: "Extension.createTab".into(),
                message: "no tabId in the answer".into(),
            })?;
        let info = ViewInfo {
            id: view_of(tab),
            url: "about:blank".into(),
            title: String::new(),
            opener: None,
            context: None,
            shared_with: None,
        };
        self.shared.know(info.clone());
        Ok(info.id)
    }

    async fn destroy_view(&self, view: &ViewId) -> Result<()> {
        let tab = tab_of(view)?;
        match self
            .extension_call("Extension.closeTab", json!({"tabId": tab}))
            .await
        {
            Ok(_) | Err(BrowserError::NotShared { .. } | BrowserError::TabNotFound { .. }) => {
                if self.shared.forget(view) {
                    self.shared.emit(ViewEvent::Closed(view.clone()));
                }
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    async fn show_view(&self, view: &ViewId) -> Result<()> {
        let tab = tab_of(view)?;
        self.extension_call("Extension.activateTab", json!({"tabId": tab}))
            .await
            .map(|_| ())
    }

    async fn release_view(&self, view: &ViewId) -> Result<()> {
        let tab = tab_of(view)?;
        let released = self
            .extension_call("Extension.releaseTab", json!({"tabId": tab}))
            .await;
        if self.shared.forget(view) {
            self.shared.emit(ViewEvent::Closed(view.clone()));
        }
        match released {
            Ok(_) | Err(BrowserError::NotConnected { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn send_command(
        &self,
        view: &ViewId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        self.check_shared(view)?;
        let session = SessionId(view.0.clone());
        self.shared
            .call(Some(&session), method, params, timeout)
            .await
    }

    async fn send_commands(
        &self,
        view: &ViewId,
        batch: CommandBatch,
        timeout: Duration,
    ) -> Result<()> {
        self.check_shared(view)?;
        let commands = batch.into_commands();
        if self.shared.batches_refused.load(Ordering::Relaxed) {
            return send_each(self, view, commands, timeout).await;
        }
        // One chunk after the other: a chunk reaches Chrome only once the
        // one before it has, whatever the connection does meanwhile.
        for (index, chunk) in commands.chunks(MAX_BATCH).enumerate() {
            match self.shared.call_batch(view, chunk, timeout).await {
                Ok(()) => {}
                Err(error) if index == 0 && is_unknown_batch(&error) => {
                    // An extension from before batches (Chrome runs an unpacked
                    // extension's old code until it reloads): it ran none of them.
                    self.shared.batches_refused.store(true, Ordering::Relaxed);
                    return send_each(self, view, commands, timeout).await;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    async fn main_frame(&self, view: &ViewId) -> Result<String> {
        let tree = self
            .send_command(
                view,
                "Page.getFrameTree",
                json!({}),
                self.shared.command_timeout,
            )
            .await?;
        tree.pointer("/frameTree/frame/id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| BrowserError::Protocol {
                method: "Page.getFrameTree".into(),
                message: "no main frame in the answer".into(),
            })
    }

    async fn subscribe(&self, view: &ViewId) -> Result<EventStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut views = self.shared.views();
        let Some(state) = views.get_mut(view) else {
            return Err(BrowserError::NotShared {
                detail: format!("{view} is not shared with agents"),
            });
        };
        state.subscribers.push(tx);
        Ok(rx)
    }

    async fn frames(&self, view: &ViewId) -> Result<Vec<FrameInfo>> {
        tab_of(view)?;
        Ok(self.shared.frames().tree(&SessionId(view.0.clone())))
    }

    async fn send_frame_command(
        &self,
        view: &ViewId,
        frame: &str,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        tab_of(view)?;
        let session = self
            .shared
            .frames()
            .session_of(frame)
            .filter(|session| session.0.starts_with(&format!("{}:", view.0)))
            .ok_or_else(|| BrowserError::TabNotFound {
                tab: format!("(frame {frame} is gone)"),
            })?;
        self.shared
            .call(Some(&session), method, params, timeout)
            .await
    }

    async fn list_views(&self) -> Result<Vec<ViewInfo>> {
        // The extension's own list (it is the authority on shares). Not
        // connected, there is no list to give: an empty one would tell an
        // agent that there are no tabs rather than no browser.
        let listed = self.extension_call("Extension.listTabs", json!({})).await?;
        let tabs: Vec<TabDescription> = listed
            .get("tabs")
            .cloned()
            .and_then(|tabs| serde_json::from_value(tabs).ok())
            .unwrap_or_default();
        Ok(tabs.iter().map(TabDescription::info).collect())
    }

    fn watch_views(&self) -> mpsc::UnboundedReceiver<ViewEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared
            .watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    async fn create_context(&self) -> Result<ContextId> {
        Err(no_contexts())
    }

    async fn destroy_context(&self, context: &ContextId) -> Result<()> {
        let _ = context;
        Ok(())
    }

    fn command_timeout(&self) -> Duration {
        self.shared.command_timeout
    }

    fn browser_version(&self) -> String {
        self.shared
            .version
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn is_connected(&self) -> bool {
        self.shared.link.borrow().is_some()
    }

    async fn ready(&self) -> Result<()> {
        self.shared.connection_or_comeback().await.map(|_| ())
    }

    fn unreachable(&self) -> Option<BrowserError> {
        self.absence()
    }

    fn opens_person_tabs(&self) -> bool {
        false
    }

    fn sessions_changed(&self, sessions: &[String]) {
        let labels: Vec<SessionLabel> = sessions
            .iter()
            .map(|id| SessionLabel {
                id: id.clone(),
                label: id.clone(),
            })
            .collect();
        // Sent in order by the connection's session task (see `sync_sessions`).
        self.shared.sessions.send_modify(|list| {
            list.version += 1;
            list.sessions = labels;
        });
    }

    fn census(&self) -> HostCensus {
        let views = self.shared.views();
        let connection = self.shared.connection().ok();
        HostCensus {
            sessions: views.len(),
            frames: 0,
            subscribers: views.values().map(|v| v.subscribers.len()).sum(),
            pending: connection.map_or(0, |c| c.pending_commands()),
        }
    }
}

/// The extension's refusal of a bridge method it does not know, for [`SEND_COMMANDS`].
fn is_unknown_batch(error: &BrowserError) -> bool {
    matches!(error, BrowserError::InvalidArgument { problem, .. }
        if problem.contains(&format!("unknown method {SEND_COMMANDS}")))
}

fn no_contexts() -> BrowserError {
    BrowserError::invalid(
        "isolated",
        "the person's own Chrome has no isolated contexts: every agent session shares its cookies and logins",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_without_batches_is_told_apart_from_other_refusals() {
        let refused = |message: &str| {
            translate_refusal(BrowserError::Protocol {
                method: SEND_COMMANDS.into(),
                message: message.into(),
            })
        };
        // What an extension from before batches answers (background.js).
        let old = refused("INVALID_ARGUMENT: unknown method Extension.sendCommands");
        assert_eq!(old.code(), "INVALID_ARGUMENT");
        assert!(is_unknown_batch(&old));
        let other = refused("INVALID_ARGUMENT: a batch is a sessionId and at most 32 commands");
        assert!(!is_unknown_batch(&other));
        assert!(!is_unknown_batch(&refused(
            "NOT_SHARED: this tab is not shared with agents"
        )));
        assert_eq!(
            refused("NOT_SHARED: this tab is not shared with agents").code(),
            "NOT_SHARED"
        );
    }
}
