//! The bridge's listener: a loopback WebSocket endpoint for the extension
//! only. It checks the upgrade (path, `Host`, `Origin: chrome-extension://<id>`,
//! a cap on connections), runs the HMAC handshake of [`super::protocol`],
//! and hands each authenticated socket on as a CDP [`Transport`]. Every
//! refusal is logged and audited; nothing a refused peer sends reaches the
//! host.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, http};
use tokio_util::sync::CancellationToken;

use super::pairing::{Pairing, random_bytes};
use super::protocol::{
    self, Challenge, Hello, MAX_CONNECTIONS, MAX_MESSAGE_BYTES, Proof, Refused, Role, SessionList,
    Welcome,
};
use crate::cdp::transport::{self, Transport};
use crate::error::{BrowserError, Result};

/// How long a peer has for the whole handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Client nonces remembered to refuse a replayed hello.
const REMEMBERED_NONCES: usize = 4096;

/// What the listener needs to judge a connection.
#[derive(Debug, Clone)]
pub struct BridgeConfig {
    /// Where to listen (loopback unless the person asked otherwise).
    pub address: SocketAddr,
    /// The pairing: its secret proves the extension.
    pub pairing: Pairing,
    /// Extension ids accepted in `Origin` (the pinned one by default).
    pub extension_ids: Vec<String>,
    /// This shell process, sent in the welcome.
    pub shell: String,
}

/// How an extension reached the shell.
#[derive(Debug, Clone)]
pub enum Via {
    /// Chrome's native messaging, through the native host and the
    /// shell's private socket.
    Native,
    /// The paired WebSocket on loopback (or tunnelled by a relay), proved
    /// with `pairing`'s secret.
    Paired {
        /// Where it connected from.
        peer: SocketAddr,
        /// The pairing it proved (a new pairing closes it).
        pairing: Pairing,
    },
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Native => f.write_str("native messaging"),
            Self::Paired { peer, .. } => write!(f, "the paired WebSocket (from {peer})"),
        }
    }
}

/// One extension that passed the handshake.
#[derive(Debug)]
pub struct Authenticated {
    /// CDP-shaped messages both ways from here on.
    pub transport: Transport,
    /// The extension's own version.
    pub extension_version: String,
    /// How it came.
    pub via: Via,
    /// Held while the connection is open (the connection cap).
    pub permit: tokio::sync::OwnedSemaphorePermit,
}

/// What a listener tells the host: every attempt and how it ended.
#[derive(Debug)]
pub enum Arrival {
    /// An extension passed the handshake.
    Admitted(Authenticated),
    /// A peer was refused, and why (one line).
    Refused {
        /// How it came (`native messaging`, `the paired WebSocket …`).
        via: String,
        /// Why it was refused.
        reason: String,
    },
}

/// A listening bridge; dropping it stops listening (open connections stay).
#[derive(Debug)]
pub struct Listener {
    /// Where it listens.
    pub address: SocketAddr,
    stop: CancellationToken,
    shared: Arc<Shared>,
}

impl Listener {
    /// Proves the next connections with `pairing` (a new `extension pair`
    /// while the shell runs); the port stays.
    pub fn set_pairing(&self, pairing: Pairing) {
        *self
            .shared
            .pairing
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = pairing;
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[derive(Debug)]
struct Shared {
    config: BridgeConfig,
    /// The pairing proved now (the config's, until a new pairing).
    pairing: Mutex<Pairing>,
    sessions: watch::Receiver<SessionList>,
    connections: Arc<Semaphore>,
    seen_nonces: Mutex<(HashSet<String>, VecDeque<String>)>,
}

/// Listens for the extension; every attempt's outcome goes to `arrivals`.
///
/// # Errors
/// `NOT_CONNECTED` when the address cannot be bound (another shell holds it).
pub async fn listen(
    config: BridgeConfig,
    sessions: watch::Receiver<SessionList>,
    arrivals: mpsc::UnboundedSender<Arrival>,
) -> Result<Listener> {
    let listener = TcpListener::bind(config.address).await.map_err(|e| {
        BrowserError::not_connected(format!(
            "cannot listen for the extension on {}: {e}",
            config.address
        ))
    })?;
    let address = listener
        .local_addr()
        .map_err(|e| BrowserError::not_connected(format!("no local address: {e}")))?;
    tracing::info!(%address, "listening for the browser-shell extension");
    let stop = CancellationToken::new();
    let shared = Arc::new(Shared {
        pairing: Mutex::new(config.pairing.clone()),
        config,
        sessions,
        connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        seen_nonces: Mutex::new((HashSet::new(), VecDeque::new())),
    });
    let stopping = stop.clone();
    let listening = Arc::clone(&shared);
    tokio::spawn(async move {
        let shared = listening;
        loop {
            let (stream, peer) = tokio::select! {
                () = stopping.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(error) => {
                        tracing::debug!(%error, "bridge accept failed");
                        continue;
                    }
                },
            };
            // Commands are small and come in bursts (a click is three
            // input events sent back to back): Nagle's algorithm would hold
            // each one back until the one before it was acknowledged.
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "bridge: cannot turn off Nagle's algorithm");
            }
            let shared = Arc::clone(&shared);
            let arrivals = arrivals.clone();
            tokio::spawn(async move {
                let reason =
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, shared.admit(stream, peer)).await
                    {
                        Ok(Ok(authenticated)) => {
                            let _ = arrivals.send(Arrival::Admitted(authenticated));
                            return;
                        }
                        Ok(Err(reason)) => reason,
                        Err(_) => "the handshake took longer than 5 s".to_owned(),
                    };
                let via = format!("the paired WebSocket (from {peer})");
                refused(&via, &reason);
                let _ = arrivals.send(Arrival::Refused { via, reason });
            });
        }
    });
    Ok(Listener {
        address,
        stop,
        shared,
    })
}

/// Logs and audits a refused connection.
pub(super) fn refused(via: &str, reason: &str) {
    tracing::warn!(via, reason, "refused an extension connection");
    tracing::info!(target: crate::AUDIT, event = "extension_refused", via, reason);
}

impl Shared {
    /// The whole admission: upgrade checks, then the handshake.
    // The upgrade callback's error type is tungstenite's HTTP response.
    #[allow(clippy::result_large_err)]
    async fn admit(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> std::result::Result<Authenticated, String> {
        let permit = Arc::clone(&self.connections).try_acquire_owned().ok();
        let mut origin_id = None;
        let mut upgrade_refusal = None;
        let check = |request: &Request, response: Response| match self
            .check_upgrade(request, permit.is_some())
        {
            Ok(id) => {
                origin_id = Some(id);
                Ok(response)
            }
            Err((status, reason)) => {
                upgrade_refusal = Some(reason.clone());
                Err(refusal(status, reason))
            }
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        let socket =
            tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await;
        let mut socket = match socket {
            Ok(socket) => socket,
            Err(error) => {
                return Err(
                    upgrade_refusal.unwrap_or_else(|| format!("not a WebSocket upgrade: {error}"))
                );
            }
        };
        let (Some(permit), Some(origin_id)) = (permit, origin_id) else {
            return Err("refused at the upgrade".into());
        };
        let pairing = self
            .pairing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match self.handshake(&mut socket, &origin_id, &pairing).await {
            Ok(extension_version) => Ok(Authenticated {
                transport: transport::over_websocket(socket),
                extension_version,
                via: Via::Paired { peer, pairing },
                permit,
            }),
            Err(reason) => {
                let refusal = serde_json::to_string(&Refused {
                    reason: reason.clone(),
                })
                .unwrap_or_default();
                let _ = socket.send(Message::text(refusal)).await;
                let _ = socket.close(None).await;
                Err(reason)
            }
        }
    }

    /// Path, `Host` and `Origin`, and room for one more connection.
    fn check_upgrade(
        &self,
        request: &Request,
        room: bool,
    ) -> std::result::Result<String, (StatusCode, String)> {
        if request.uri().path() != "/extension" {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no endpoint {}", request.uri().path()),
            ));
        }
        let header = |name: &str| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let host = header("host");
        let port = self.config.address.port();
        let host_ok = [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
        .contains(&host)
            || !self.config.address.ip().is_loopback();
        if !host_ok {
            return Err((
                StatusCode::FORBIDDEN,
                format!("Host {host:?} is not this bridge"),
            ));
        }
        let origin = header("origin");
        let Some(id) = origin.strip_prefix("chrome-extension://") else {
            return Err((
                StatusCode::FORBIDDEN,
                format!("Origin {origin:?} is not a browser extension"),
            ));
        };
        if !self
            .config
            .extension_ids
            .iter()
            .any(|allowed| allowed == id)
        {
            return Err((
                StatusCode::FORBIDDEN,
                format!("extension {id:?} is not the paired browser-shell extension"),
            ));
        }
        if !room {
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{MAX_CONNECTIONS} extension connections are open already"),
            ));
        }
        Ok(id.to_owned())
    }

    /// hello → challenge → proof → welcome; the extension's version on success.
    async fn handshake(
        &self,
        socket: &mut WebSocketStream<TcpStream>,
        origin_id: &str,
        pairing: &Pairing,
    ) -> std::result::Result<String, String> {
        let hello: Hello = protocol::read_message(next_text(socket).await?.as_bytes(), "hello")
            .map_err(|e| format!("the first message is not a hello: {e}"))?;
        let agreed = protocol::negotiate(hello.version, hello.min_version)?;
        if hello.extension_id != origin_id {
            return Err(format!(
                "the hello names extension {:?} but it connected from {origin_id:?}",
                hello.extension_id
            ));
        }
        if !protocol::is_nonce(&hello.nonce) {
            return Err("the hello's nonce is not 256 bits of hex".into());
        }
        if !self.remember_nonce(&hello.nonce) {
            return Err("a replayed hello (its nonce was seen before)".into());
        }
        let secret = pairing.secret();
        let server_nonce = protocol::hex(&random_bytes::<32>().map_err(|e| e.to_string())?);
        let challenge = Challenge {
            proof: protocol::proof(
                &secret,
                &protocol::proof_text(Role::Server, origin_id, &hello.nonce, &server_nonce),
            ),
            nonce: server_nonce.clone(),
        };
        send_json(socket, &challenge).await?;
        let proof: Proof = protocol::read_message(next_text(socket).await?.as_bytes(), "proof")
            .map_err(|e| format!("expected the extension's proof: {e}"))?;
        let text = protocol::proof_text(Role::Client, origin_id, &hello.nonce, &server_nonce);
        if !protocol::verify(&secret, &text, &proof.proof) {
            return Err(
                "the extension's proof is wrong: it is paired with another shell (pair again with `browser-shell extension pair`)"
                    .into(),
            );
        }
        let welcome = Welcome::new(&self.config.shell, &self.sessions.borrow(), agreed);
        send_json(socket, &welcome).await?;
        Ok(hello.extension_version)
    }

    /// False when the nonce was seen before.
    fn remember_nonce(&self, nonce: &str) -> bool {
        let mut seen = self.seen_nonces.lock().unwrap_or_else(|p| p.into_inner());
        let (set, order) = &mut *seen;
        if !set.insert(nonce.to_owned()) {
            return false;
        }
        order.push_back(nonce.to_owned());
        if order.len() > REMEMBERED_NONCES
            && let Some(oldest) = order.pop_front()
        {
            set.remove(&oldest);
        }
        true
    }
}

fn refusal(status: StatusCode, reason: String) -> ErrorResponse {
    let mut response = http::Response::new(Some(reason));
    *response.status_mut() = status;
    response
}

async fn next_text(socket: &mut WebSocketStream<TcpStream>) -> std::result::Result<String, String> {
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            Some(Ok(Message::Binary(_))) => return Err("a binary frame in the handshake".into()),
            Some(Ok(Message::Close(_))) | None => {
                return Err("the peer went away in the handshake".into());
            }
            Some(Ok(Message::Frame(_))) => {}
            Some(Err(error)) => return Err(format!("a broken frame in the handshake: {error}")),
        }
    }
}

async fn send_json<T: serde::Serialize>(
    socket: &mut WebSocketStream<TcpStream>,
    message: &T,
) -> std::result::Result<(), String> {
    let text = serde_json::to_string(message).map_err(|e| e.to_string())?;
    socket
        .send(Message::text(text))
        .await
        .map_err(|e| format!("the peer went away in the handshake: {e}"))
}
