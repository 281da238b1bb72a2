//! A minimal Chrome DevTools Protocol client over a WebSocket: commands
//! correlated to their answers by id, with a session id for a target
//! attached in flat mode, each answer awaited with a bound. No events.
//!
//! It plays the person's side of a test (their own Chrome, driven as by
//! hand), so it is deliberately not the provider's CDP layer: what is under
//! test does not check itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The id of a CDP session on one target (`Target.attachToTarget` with
/// `flatten`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionId(pub String);

/// Why a command got no result.
#[derive(Debug, Clone)]
pub enum CdpError {
    /// The browser answered with an error.
    Protocol {
        /// Its code (such as -32000).
        code: i64,
        /// Its message (such as "Execution context was destroyed.").
        message: String,
    },
    /// No answer within the bound.
    Timeout {
        /// The command's method.
        method: String,
        /// How long it was waited for.
        after: Duration,
    },
    /// The connection closed (the browser quit or crashed) before an answer.
    Closed,
}

impl std::fmt::Display for CdpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Protocol { code, message } => write!(f, "CDP error {code}: {message}"),
            Self::Timeout { method, after } => write!(f, "{method}: no answer within {after:?}"),
            Self::Closed => f.write_str("the CDP connection closed"),
        }
    }
}

impl std::error::Error for CdpError {}

type Answer = oneshot::Sender<Result<Value, CdpError>>;

/// Calls awaiting their answers; `None` once the connection closed.
type Pending = Arc<Mutex<Option<HashMap<u64, Answer>>>>;

/// A CDP connection; the task that reads and writes its socket ends when
/// this is dropped.
#[derive(Debug)]
pub struct Cdp {
    outgoing: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: AtomicU64,
    timeout: Duration,
    task: tokio::task::AbortHandle,
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Cdp {
    /// Connects to the browser-level WebSocket at `url` (such as
    /// `ws://127.0.0.1:PORT/devtools/browser/ID`); each command is then
    /// answered within `timeout` or fails.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, String> {
        // Screenshots and accessibility trees exceed the default limits.
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await
            .map_err(|error| format!("connect to {url}: {error}"))?;
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut to_send) = mpsc::unbounded_channel::<String>();
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let answers = Arc::clone(&pending);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    text = to_send.recv() => {
                        let Some(text) = text else { break };
                        if sink.send(Message::text(text)).await.is_err() {
                            break;
                        }
                    }
                    message = stream.next() => {
                        let Some(Ok(message)) = message else { break };
                        let Message::Text(text) = message else { continue };
                        let Ok(message) = serde_json::from_str::<Value>(&text) else { continue };
                        let Some(id) = message["id"].as_u64() else { continue };
                        let answer = lock(&answers).as_mut().and_then(|calls| calls.remove(&id));
                        if let Some(answer) = answer {
                            let _ = answer.send(result_of(message));
                        }
                    }
                }
            }
            // Dropping the waiting calls' senders fails them as closed.
            lock(&answers).take();
        })
        .abort_handle();
        Ok(Self {
            outgoing,
            pending,
            next_id: AtomicU64::new(1),
            timeout,
            task,
        })
    }

    /// Sends `method` with `params` (to the target of `session`, or to the
    /// browser) and returns its result.
    pub async fn send(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            command["sessionId"] = json!(session.0);
        }
        let (answer, answered) = oneshot::channel();
        match lock(&self.pending).as_mut() {
            Some(calls) => calls.insert(id, answer),
            None => return Err(CdpError::Closed),
        };
        if self.outgoing.send(command.to_string()).is_err() {
            return Err(CdpError::Closed);
        }
        let answered = tokio::time::timeout(self.timeout, answered).await;
        if answered.is_err()
            && let Some(calls) = lock(&self.pending).as_mut()
        {
            calls.remove(&id);
        }
        match answered {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => Err(CdpError::Timeout {
                method: method.to_owned(),
                after: self.timeout,
            }),
        }
    }
}

/// The result of an answer, or its error.
fn result_of(mut answer: Value) -> Result<Value, CdpError> {
    match answer.get("error") {
        Some(error) => Err(CdpError::Protocol {
            code: error["code"].as_i64().unwrap_or_default(),
            message: error["message"].as_str().unwrap_or_default().to_owned(),
        }),
        None => Ok(answer["result"].take()),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
