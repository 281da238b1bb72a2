//! The extension bridge offered over the relay's TLS: for a shell on a
//! server (`relay --browser extension --tls-cert … --tls-key …`) and the
//! person's Chrome on their own machine, paired with
//! `browser-shell extension pair --relay-url wss://<relay>`.
//!
//! The relay only carries the socket: `wss://<relay>/extension` is joined,
//! message for message, to the bridge on 127.0.0.1, which does everything
//! else as for a local extension (the `Origin` check, the HMAC handshake
//! bound to both nonces, the limits, refusals logged and audited). So the
//! relay's token is not asked for here: the pairing's secret is the
//! credential, and it never crosses the wire.
//!
//! The bridge's port is looked up as each socket comes, not when the
//! relay starts: a relay started before anything was paired offers the
//! bridge as soon as `extension pair --relay-url` has written the pairing
//! (the shell follows the pairing file while it runs), and a pairing made
//! again on another port is joined on its new port. Until then a socket is
//! answered 503 with what to do.

use std::sync::Arc;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message as Incoming, WebSocket};
use axum::extract::{State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use browser_provider::host::ExtensionHost;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message as Outgoing;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The largest message either way: the bridge's own limit (8 MiB) and room
/// for framing; the bridge refuses anything larger itself.
const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024 + 64 * 1024;

/// The bridge this relay offers: the extension host whose paired
/// WebSocket (on 127.0.0.1) each socket is joined to.
#[derive(Debug, Clone)]
pub struct LocalBridge {
    /// The relay's extension host, for as long as the relay serves.
    pub host: Arc<ExtensionHost>,
}

impl LocalBridge {
    /// The paired WebSocket's port now; `None` while nothing is paired.
    fn port(&self) -> Option<u16> {
        self.host.address().map(|address| address.port())
    }
}

/// `GET /extension`: an extension's socket, joined to the local bridge.
/// Only a Chrome extension's page comes here (`Origin: chrome-extension://…`;
/// the bridge checks which one).
pub async fn tunnel(
    State(bridge): State<LocalBridge>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let Some(origin) = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok())
        .filter(|origin| origin.starts_with("chrome-extension://"))
        .map(str::to_owned)
    else {
        return StatusCode::FORBIDDEN.into_response();
    };
    let Some(port) = bridge.port() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "this relay is not paired with a Chrome yet: run `browser-shell extension pair --relay-url wss://<this relay>` where it runs",
        )
            .into_response();
    };
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            if let Err(error) = join(socket, port, &origin).await {
                tracing::info!(%error, "an extension's socket through the relay ended");
            }
        })
}

/// Carries messages both ways until either side closes.
async fn join(
    extension: WebSocket,
    port: u16,
    origin: &str,
) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    let mut request = format!("ws://127.0.0.1:{port}/extension").into_client_request()?;
    if let Ok(value) = origin.parse() {
        request.headers_mut().insert(header::ORIGIN, value);
    }
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let (local, _) =
        tokio_tungstenite::connect_async_with_config(request, Some(config), true).await?;
    tracing::info!("an extension connected through the relay");
    let (mut to_bridge, mut from_bridge) = local.split();
    let (mut to_extension, mut from_extension) = extension.split();
    let inbound = async {
        while let Some(Ok(message)) = from_extension.next().await {
            let message = match message {
                Incoming::Text(text) => Outgoing::text(text.as_str()),
                Incoming::Binary(bytes) => Outgoing::binary(bytes),
                Incoming::Close(_) => break,
                Incoming::Ping(_) | Incoming::Pong(_) => continue,
            };
            if to_bridge.send(message).await.is_err() {
                break;
            }
        }
        let _ = to_bridge.close().await;
    };
    let outbound = async {
        while let Some(Ok(message)) = from_bridge.next().await {
            let message = match message {
                Outgoing::Text(text) => Incoming::Text(text.as_str().into()),
                Outgoing::Binary(bytes) => Incoming::Binary(bytes),
                Outgoing::Close(_) => break,
                Outgoing::Ping(_) | Outgoing::Pong(_) | Outgoing::Frame(_) => continue,
            };
            if to_extension.send(message).await.is_err() {
                break;
            }
        }
        let _ = to_extension.close().await;
    };
    // Either side going ends both.
    tokio::select! {
        () = inbound => {}
        () = outbound => {}
    }
    Ok(())
}
