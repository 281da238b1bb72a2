//! One CDP connection: command/response correlation and event fan-out.
//!
//! A single reader task owns the inbound side. Callers hold cheap clones of
//! [`Connection`]; each command registers a waiter keyed by its id, and the
//! reader completes it when the matching response arrives, in whatever order
//! responses come. Every command is bounded by a timeout; a caller that gives
//! up (timeout or dropped future) removes its waiter. When the transport
//! closes, every waiter fails at once and every event stream ends, so nothing
//! waits forever on a dead browser.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::protocol::Command;
use super::transport::{Inbound, Transport};
use crate::error::{BrowserError, Result};

/// A flattened target session id (`Target.attachToTarget {flatten: true}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub String);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One event as the browser sent it.
#[derive(Debug, Clone)]
pub struct CdpEvent {
    /// The event name, such as `Page.loadEventFired`.
    pub method: String,
    /// The event parameters (an object, or `Null` when absent).
    pub params: Value,
    /// The target session the event belongs to; `None` for browser-level events.
    pub session_id: Option<SessionId>,
}

impl CdpEvent {
    /// Decodes the parameters into a typed struct; `None` if they do not fit.
    pub fn decode<T: for<'de> Deserialize<'de>>(&self) -> Option<T> {
        T::deserialize(&self.params).ok()
    }
}

/// Which events a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventFilter {
    /// Every event on the connection.
    All,
    /// Events of one target session (ends when that session detaches).
    Session(SessionId),
    /// Browser-level events only (no session id).
    Browser,
}

impl EventFilter {
    fn matches(&self, session: Option<&SessionId>) -> bool {
        match self {
            Self::All => true,
            Self::Session(wanted) => session == Some(wanted),
            Self::Browser => session.is_none(),
        }
    }
}

/// A stream of events. Dropping it unsubscribes; it ends when the connection
/// closes or, for a session filter, when that session detaches.
pub type EventStream = mpsc::UnboundedReceiver<Arc<CdpEvent>>;

/// A cloneable handle to one CDP connection.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("closed", &self.closed_reason())
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// Next command id; ids are never reused on a connection.
    next_id: AtomicU64,
    /// Messages to the transport's writer task.
    outgoing: mpsc::UnboundedSender<String>,
    /// Stops the transport when we close the connection.
    shutdown: CancellationToken,
    /// Bound applied by [`Connection::send`] when the caller gives none.
    default_timeout: Duration,
    /// Waiters and subscribers; shared with the reader task.
    state: Mutex<State>,
    /// Cancelled once the connection has ended, for [`Connection::closed`].
    ended: CancellationToken,
}

#[derive(Default)]
struct State {
    /// Commands sent and not yet answered, by id.
    pending: HashMap<u64, Pending>,
    /// Live event subscribers.
    subscribers: Vec<Subscriber>,
    /// Set once, when the connection ends; later calls fail with a clone of it.
    closed: Option<BrowserError>,
}

struct Pending {
    method: String,
    session: Option<SessionId>,
    reply: Reply,
}

/// Where a command's answer goes.
enum Reply {
    /// One of ours: the decoded outcome.
    Waiter(oneshot::Sender<Result<Value>>),
    /// Relayed for another client: the answer as the browser wrote it, into
    /// that client's stream, in wire order with the events.
    Relayed {
        relay: u64,
        sender: mpsc::UnboundedSender<Relayed>,
    },
}

impl Reply {
    /// Fails the command with `error` (a relayed one gets a CDP error object).
    fn fail(self, id: u64, error: BrowserError) {
        match self {
            Self::Waiter(sender) => {
                let _ = sender.send(Err(error));
            }
            Self::Relayed { sender, .. } => {
                let mut body = serde_json::Map::new();
                body.insert(
                    "error".into(),
                    serde_json::json!({"code": -32000, "message": error.to_string()}),
                );
                let _ = sender.send(Relayed::Answer { id, body });
            }
        }
    }
}

struct Subscriber {
    filter: EventFilter,
    sender: Sink,
}

/// A subscriber's channel.
enum Sink {
    Events(mpsc::UnboundedSender<Arc<CdpEvent>>),
    Relay {
        relay: u64,
        sender: mpsc::UnboundedSender<Relayed>,
    },
}

impl Sink {
    /// Delivers `event`; false once the subscriber is gone.
    fn deliver(&self, event: &Arc<CdpEvent>) -> bool {
        match self {
            Self::Events(sender) => sender.send(Arc::clone(event)).is_ok(),
            Self::Relay { sender, .. } => sender.send(Relayed::Event(Arc::clone(event))).is_ok(),
        }
    }

    /// Whether the receiving side has been dropped.
    fn is_closed(&self) -> bool {
        match self {
            Self::Events(sender) => sender.is_closed(),
            Self::Relay { sender, .. } => sender.is_closed(),
        }
    }
}

/// What a relay (see [`Connection::open_relay`]) receives, in the order the
/// browser sent it.
#[derive(Debug)]
pub enum Relayed {
    /// The answer to a command sent with [`RelayLink::send`]: its `id` as
    /// returned there, and `{"result": …}` or `{"error": …}` as the browser
    /// wrote it.
    Answer {
        /// The id [`RelayLink::send`] returned.
        id: u64,
        /// `result` or `error`, untouched.
        body: serde_json::Map<String, Value>,
    },
    /// An event, of any session (the relay decides what its client sees).
    Event(Arc<CdpEvent>),
}

/// The shape of every inbound message: a response has an `id`, an event a `method`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InboundMessage {
    id: Option<u64>,
    result: Option<Value>,
    error: Option<Value>,
    method: Option<String>,
    #[serde(default)]
    params: Value,
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DetachedParams {
    session_id: String,
}

impl Connection {
    /// Starts a connection over `transport`, spawning its reader task on the
    /// current tokio runtime. `default_timeout` bounds every command that
    /// does not carry its own bound.
    pub fn start(transport: Transport, default_timeout: Duration) -> Self {
        let Transport {
            incoming,
            outgoing,
            shutdown,
        } = transport;
        let inner = Arc::new(Inner {
            next_id: AtomicU64::new(1),
            outgoing,
            shutdown,
            default_timeout,
            state: Mutex::new(State::default()),
            ended: CancellationToken::new(),
        });
        tokio::spawn(read_loop(Arc::clone(&inner), incoming));
        Self { inner }
    }

    /// The bound used when a command does not give its own.
    pub fn default_timeout(&self) -> Duration {
        self.inner.default_timeout
    }

    /// Sends a typed command and decodes its result, bounded by the default timeout.
    pub async fn call<C: Command>(
        &self,
        session: Option<&SessionId>,
        command: &C,
    ) -> Result<C::Response> {
        self.call_with_timeout(session, command, self.inner.default_timeout)
            .await
    }

    /// Sends a typed command with an explicit bound.
    pub async fn call_with_timeout<C: Command>(
        &self,
        session: Option<&SessionId>,
        command: &C,
        timeout: Duration,
    ) -> Result<C::Response> {
        let params = serde_json::to_value(command).map_err(|e| BrowserError::Protocol {
            method: C::METHOD.into(),
            message: format!("cannot encode parameters: {e}"),
        })?;
        let result = self
            .send_with_timeout(session, C::METHOD, params, timeout)
            .await?;
        C::Response::deserialize(&result).map_err(|e| BrowserError::Protocol {
            method: C::METHOD.into(),
            message: format!("unexpected result shape: {e}"),
        })
    }

    /// Sends a raw command, bounded by the default timeout.
    pub async fn send(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
    ) -> Result<Value> {
        self.send_with_timeout(session, method, params, self.inner.default_timeout)
            .await
    }

    /// Sends a raw command and waits at most `timeout` for its response.
    ///
    /// # Errors
    /// `TIMEOUT` when the bound expires, `PROTOCOL_ERROR` when the browser
    /// answers with an error, `BROWSER_CRASHED` / `NOT_CONNECTED` when the
    /// connection is or becomes closed, `TAB_NOT_FOUND` when the target
    /// session detaches before answering.
    pub async fn send_with_timeout(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, response) = oneshot::channel();
        {
            let mut state = self.inner.lock();
            if let Some(error) = &state.closed {
                return Err(error.clone());
            }
            state.pending.insert(
                id,
                Pending {
                    method: method.to_owned(),
                    session: session.cloned(),
                    reply: Reply::Waiter(reply),
                },
            );
        }
        // Removes the waiter if this future is dropped or times out.
        let _waiter = WaiterGuard {
            inner: &self.inner,
            id,
        };

        let mut message = serde_json::json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.0.clone());
        }
        let text = message.to_string();
        trace_send(id, method, &text, None);
        if self.inner.outgoing.send(text).is_err() {
            return Err(self.closed_error());
        }

        match tokio::time::timeout(timeout, response).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => Err(BrowserError::timeout(format!("CDP {method}"), timeout)),
        }
    }

    /// Subscribes to events matching `filter`. Subscribing to a session that
    /// is not attached yields a stream that stays open until the connection closes.
    pub fn subscribe(&self, filter: EventFilter) -> EventStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut state = self.inner.lock();
        // Subscribers whose stream was dropped are otherwise only noticed
        // when an event for them arrives; a quiet session would keep them.
        state.subscribers.retain(|s| !s.sender.is_closed());
        if state.closed.is_none() {
            state.subscribers.push(Subscriber {
                filter,
                sender: Sink::Events(sender),
            });
        }
        receiver
    }

    /// Opens a relay for another CDP client (the shell's CDP endpoint): it
    /// sends raw commands with [`RelayLink::send`] and receives their
    /// answers and every event through one stream, in the order the
    /// browser sent them (a client may rely on an event arriving before
    /// the answer that follows it). The stream ends when the connection
    /// closes.
    pub fn open_relay(&self) -> (RelayLink, mpsc::UnboundedReceiver<Relayed>) {
        static NEXT_RELAY: AtomicU64 = AtomicU64::new(1);
        let relay = NEXT_RELAY.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        // The link holds the channel weakly: once the connection has let go
        // of it (closed), the stream ends even while the link lives.
        let link = RelayLink {
            inner: Arc::clone(&self.inner),
            relay,
            sender: sender.downgrade(),
        };
        let mut state = self.inner.lock();
        if state.closed.is_none() {
            state.subscribers.push(Subscriber {
                filter: EventFilter::All,
                sender: Sink::Relay { relay, sender },
            });
        }
        drop(state);
        (link, receiver)
    }

    /// Closes the connection from our side: the transport stops and every
    /// pending and future command fails with `NOT_CONNECTED`. Idempotent.
    pub fn close(&self) {
        self.inner.finish(BrowserError::NotConnected {
            reason: "the connection was closed".into(),
        });
        self.inner.shutdown.cancel();
    }

    /// Resolves once the connection has ended (the browser went away or
    /// we closed it), with why.
    pub async fn closed(&self) -> BrowserError {
        self.inner.ended.cancelled().await;
        self.closed_error()
    }

    /// Why the connection is closed, or `None` while it is open.
    pub fn closed_reason(&self) -> Option<BrowserError> {
        self.inner.lock().closed.clone()
    }

    /// How many event subscribers and relays are live (for leak checks).
    pub fn subscribers(&self) -> usize {
        let mut state = self.inner.lock();
        state.subscribers.retain(|s| !s.sender.is_closed());
        state.subscribers.len()
    }

    /// How many commands are waiting for a response (for diagnostics and tests).
    pub fn pending_commands(&self) -> usize {
        self.inner.lock().pending.len()
    }

    /// True while the connection can still carry commands.
    pub fn is_open(&self) -> bool {
        self.closed_reason().is_none()
    }

    fn closed_error(&self) -> BrowserError {
        self.closed_reason()
            .unwrap_or_else(|| BrowserError::NotConnected {
                reason: "the connection is closing".into(),
            })
    }
}

impl Inner {
    /// Locks the state. A poisoned lock only means another thread panicked
    /// mid-update of plain maps; the data is still usable.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks the connection closed (first reason wins) and fails everything waiting.
    fn finish(&self, error: BrowserError) {
        let (pending, subscribers) = {
            let mut state = self.lock();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some(error.clone());
            (
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.subscribers),
            )
        };
        self.ended.cancel();
        for (_, waiter) in pending {
            match waiter.reply {
                Reply::Waiter(sender) => {
                    let _ = sender.send(Err(error.clone()));
                }
                // A relay's stream simply ends.
                Reply::Relayed { .. } => {}
            }
        }
        drop(subscribers);
    }

    fn dispatch(&self, text: &str) {
        tracing::trace!(target: "cdp::wire", direction = "recv", text = %truncate_for_log(text));
        let message: InboundMessage = match serde_json::from_str(text) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(target: "cdp", error = %e, "ignoring a malformed message from the browser");
                return;
            }
        };
        if let Some(id) = message.id {
            let Some(waiter) = self.lock().pending.remove(&id) else {
                tracing::debug!(target: "cdp", id, "response for a command nobody waits for");
                return;
            };
            match waiter.reply {
                Reply::Waiter(sender) => {
                    let outcome = match (message.error, message.result) {
                        (Some(error), _) => {
                            let error = ErrorBody::deserialize(&error).unwrap_or(ErrorBody {
                                message: error.to_string(),
                                data: None,
                            });
                            Err(BrowserError::Protocol {
                                method: waiter.method,
                                message: match error.data {
                                    Some(data) if !data.is_empty() => {
                                        format!("{} ({data})", error.message)
                                    }
                                    _ => error.message,
                                },
                            })
                        }
                        (None, result) => Ok(result.unwrap_or(Value::Null)),
                    };
                    let _ = sender.send(outcome);
                }
                Reply::Relayed { sender, .. } => {
                    let mut body = serde_json::Map::new();
                    match (message.error, message.result) {
                        (Some(error), _) => body.insert("error".into(), error),
                        (None, result) => {
                            body.insert("result".into(), result.unwrap_or(Value::Null))
                        }
                    };
                    let _ = sender.send(Relayed::Answer { id, body });
                }
            }
            return;
        }
        let Some(method) = message.method else {
            tracing::warn!(target: "cdp", "ignoring a message that is neither a response nor an event");
            return;
        };
        let event = Arc::new(CdpEvent {
            method,
            params: message.params,
            session_id: message.session_id.map(SessionId),
        });
        let mut state = self.lock();
        state.subscribers.retain(|subscriber| {
            !subscriber.filter.matches(event.session_id.as_ref())
                || subscriber.sender.deliver(&event)
        });
        if event.method == "Target.detachedFromTarget"
            && let Some(detached) = event.decode::<DetachedParams>()
        {
            let gone = SessionId(detached.session_id);
            state
                .subscribers
                .retain(|s| s.filter != EventFilter::Session(gone.clone()));
            let ids: Vec<u64> = state
                .pending
                .iter()
                .filter(|(_, p)| p.session.as_ref() == Some(&gone))
                .map(|(id, _)| *id)
                .collect();
            for id in ids {
                if let Some(waiter) = state.pending.remove(&id) {
                    waiter.reply.fail(
                        id,
                        BrowserError::TabNotFound {
                            tab: format!("(target closed during {})", waiter.method),
                        },
                    );
                }
            }
        }
    }
}

/// Removes a command's waiter when the caller stops waiting.
struct WaiterGuard<'a> {
    inner: &'a Inner,
    id: u64,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.inner.lock().pending.remove(&self.id);
    }
}

/// The sending side of a relay (see [`Connection::open_relay`]). Dropping
/// it forgets the answers still owed to it.
pub struct RelayLink {
    inner: Arc<Inner>,
    relay: u64,
    sender: mpsc::WeakUnboundedSender<Relayed>,
}

impl fmt::Debug for RelayLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayLink")
            .field("relay", &self.relay)
            .finish_non_exhaustive()
    }
}

impl RelayLink {
    /// Sends a raw command now (commands go out in the order of these
    /// calls); its answer arrives on the relay's stream under the returned id.
    ///
    /// # Errors
    /// `NOT_CONNECTED` / `BROWSER_CRASHED` when the connection is closed.
    pub fn send(&self, session: Option<&SessionId>, method: &str, params: Value) -> Result<u64> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = serde_json::json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.0.clone());
        }
        let text = message.to_string();
        // Registered and sent under the lock, so sends keep the call order.
        let mut state = self.inner.lock();
        if let Some(error) = &state.closed {
            return Err(error.clone());
        }
        let Some(sender) = self.sender.upgrade() else {
            return Err(BrowserError::NotConnected {
                reason: "the relay's stream is gone".into(),
            });
        };
        state.pending.insert(
            id,
            Pending {
                method: method.to_owned(),
                session: session.cloned(),
                reply: Reply::Relayed {
                    relay: self.relay,
                    sender,
                },
            },
        );
        trace_send(id, method, &text, Some(self.relay));
        if self.inner.outgoing.send(text).is_err() {
            state.pending.remove(&id);
            return Err(BrowserError::NotConnected {
                reason: "the connection is closing".into(),
            });
        }
        Ok(id)
    }
}

impl Drop for RelayLink {
    fn drop(&mut self) {
        let relay = self.relay;
        let mut state = self.inner.lock();
        state
            .pending
            .retain(|_, p| !matches!(p.reply, Reply::Relayed { relay: r, .. } if r == relay));
        state
            .subscribers
            .retain(|s| !matches!(s.sender, Sink::Relay { relay: r, .. } if r == relay));
    }
}

async fn read_loop(inner: Arc<Inner>, mut incoming: mpsc::UnboundedReceiver<Inbound>) {
    loop {
        match incoming.recv().await {
            Some(Inbound::Message(text)) => inner.dispatch(&text),
            Some(Inbound::Closed { reason, by_us }) => {
                tracing::debug!(target: "cdp", %reason, by_us, "transport closed");
                inner.finish(if by_us {
                    BrowserError::NotConnected { reason }
                } else {
                    BrowserError::BrowserCrashed { detail: reason }
                });
                return;
            }
            None => {
                inner.finish(BrowserError::BrowserCrashed {
                    detail: "the transport stopped".into(),
                });
                return;
            }
        }
    }
}

/// Traces a command going out (`relay`: the relay client it came from),
/// with typed text withheld. Nothing is looked at unless the wire trace is on.
fn trace_send(id: u64, method: &str, text: &str, relay: Option<u64>) {
    if !tracing::enabled!(target: "cdp::wire", tracing::Level::TRACE) {
        return;
    }
    if carries_input(method, text) {
        // Typed text (passwords, secrets) stays out of even this trace.
        tracing::trace!(target: "cdp::wire", direction = "send", ?relay, id, method, "(input withheld)");
    } else {
        tracing::trace!(target: "cdp::wire", direction = "send", ?relay, %text);
    }
}

/// Whether a command carries what a person or an agent types, which stays
/// out of even the wire trace: an `Input.*` command, a batch with one in it
/// (the extension's bridge), or text pasted through the page's helper
/// (`__browserShell.pasteText`, how `fill` puts text in a code editor).
fn carries_input(method: &str, text: &str) -> bool {
    const CARRIERS: [&str; 2] = ["\"method\":\"Input.", "__browserShell.pasteText("];
    method.starts_with("Input.") || CARRIERS.iter().any(|carrier| text.contains(carrier))
}

fn truncate_for_log(text: &str) -> &str {
    const LIMIT: usize = 2000;
    if text.len() <= LIMIT {
        return text;
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_sessions() {
        let a = SessionId("A".into());
        assert!(EventFilter::All.matches(None));
        assert!(EventFilter::Browser.matches(None));
        assert!(!EventFilter::Browser.matches(Some(&a)));
        assert!(EventFilter::Session(a.clone()).matches(Some(&a)));
        assert!(!EventFilter::Session(a).matches(None));
    }

    #[test]
    fn typed_text_is_told_apart_for_the_trace() {
        let key = r#"{"id":1,"method":"Input.dispatchKeyEvent","params":{"text":"s"}}"#;
        assert!(carries_input("Input.dispatchKeyEvent", key));
        let batch = r#"{"id":2,"method":"Extension.sendCommands","params":{"sessionId":"tab-1","commands":[{"method":"Input.insertText","params":{"text":"hunter2"}}]}}"#;
        assert!(carries_input("Extension.sendCommands", batch));
        let paste = r#"{"id":3,"method":"Runtime.evaluate","params":{"expression":"__browserShell.pasteText(\"hunter2\")"}}"#;
        assert!(carries_input("Runtime.evaluate", paste));
        let look = r#"{"id":4,"method":"Runtime.evaluate","params":{"expression":"__browserShell.walk()"}}"#;
        assert!(!carries_input("Runtime.evaluate", look));
    }

    #[test]
    fn log_truncation_respects_char_boundaries() {
        let text = "é".repeat(3000);
        let cut = truncate_for_log(&text);
        assert!(cut.len() <= 2000);
        assert!(text.starts_with(cut));
    }
}
