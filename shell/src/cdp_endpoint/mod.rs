//! The authenticated CDP endpoint (`--cdp-endpoint`): lets Playwright's
//! `connectOverCDP`, Puppeteer's `connect` and other CDP clients drive the
//! shell's Chromium next to the built-in agents.
//!
//! Chromium keeps no debug port of its own (it talks over a pipe); this
//! endpoint listens on loopback only and every request carries the
//! per-launch token in its path:
//!
//! * `ws://127.0.0.1:PORT/devtools/browser/TOKEN`: a browser-level CDP
//!   WebSocket (see [`proxy`] for how clients share the one connection);
//! * `ws://127.0.0.1:PORT/devtools/page/TOKEN/TARGET`: one page's socket,
//!   as `/json/list` names it;
//! * `http://127.0.0.1:PORT/TOKEN/json/version` and `…/json/list`: the
//!   discovery documents clients fetch when given an `http://` URL.
//!
//! A request with a `Host` that is not a loopback name (DNS rebinding) or
//! with any `Origin` (a web page) is refused, as Chromium's own endpoint
//! refuses origins it was not told to allow.

mod proxy;
mod scope;

pub use scope::Scope;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Path, State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use browser_provider::cdp::Connection;
use browser_provider::cdp::protocol::{BrowserGetVersion, TargetGetTargets};
use browser_provider::host::Supervisor;
use browser_provider::{Browser, BrowserError, Result};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::auth;

/// Largest message a client may send (screenshots and file uploads are big).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// Shared by every request.
#[derive(Clone)]
struct Endpoint {
    /// The browser, across restarts: each client is served on the
    /// connection of the browser running when it connects.
    supervisor: Arc<Supervisor>,
    browser: Browser,
    token: Arc<str>,
    /// `ws://127.0.0.1:PORT/devtools/browser/TOKEN`.
    websocket_url: Arc<str>,
    /// `ws://127.0.0.1:PORT/devtools/page/TOKEN/`, followed by a target id.
    page_url_prefix: Arc<str>,
    /// What clients may see and do.
    scope: Scope,
}

impl Endpoint {
    /// The running browser's connection, or why there is none (it is
    /// restarting: clients reconnect to the same URL once it is back).
    fn connection(&self) -> std::result::Result<Connection, Box<Response>> {
        match self.supervisor.host() {
            Some(host) => Ok(host.connection().clone()),
            None => {
                let why = self
                    .supervisor
                    .state()
                    .unavailable()
                    .map_or_else(|| "no browser".to_owned(), |e| e.to_string());
                Err(Box::new(
                    (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
                ))
            }
        }
    }

    /// Refuses foreign hosts, web pages and wrong tokens.
    fn check(&self, headers: &HeaderMap, token: &str) -> std::result::Result<(), StatusCode> {
        if !auth::host_is_loopback(headers) || headers.contains_key(header::ORIGIN) {
            return Err(StatusCode::FORBIDDEN);
        }
        if !auth::same_secret(token, &self.token) {
            return Err(StatusCode::UNAUTHORIZED);
        }
        Ok(())
    }
}

/// A running endpoint.
#[derive(Debug)]
pub struct CdpEndpoint {
    /// The URL to give a CDP client (Playwright, Puppeteer), token included.
    pub websocket_url: String,
}

/// Starts the endpoint on a free loopback port; it serves until `cancel`.
///
/// # Errors
/// `INVALID_ARGUMENT` when no loopback port can be bound.
pub async fn start(
    supervisor: Arc<Supervisor>,
    browser: Browser,
    scope: Scope,
    cancel: &CancellationToken,
) -> Result<CdpEndpoint> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(|e| BrowserError::invalid("cdp-endpoint", format!("cannot listen: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| BrowserError::invalid("cdp-endpoint", e.to_string()))?;
    let token = auth::random_token()?;
    let websocket_url = format!("ws://{bound}/devtools/browser/{token}");
    let endpoint = Endpoint {
        supervisor,
        browser,
        page_url_prefix: format!("ws://{bound}/devtools/page/{token}/").into(),
        token: token.into(),
        websocket_url: websocket_url.clone().into(),
        scope,
    };
    let app = Router::new()
        .route("/devtools/browser/{token}", get(socket))
        .route("/devtools/page/{token}/{target}", get(page_socket))
        .route("/{token}/json/version", get(version))
        .route("/{token}/json/version/", get(version))
        .route("/{token}/json/list", get(list))
        .route("/{token}/json/list/", get(list))
        .route("/{token}/json", get(list))
        .route("/{token}/json/", get(list))
        .with_state(endpoint);
    let stop = cancel.child_token();
    // A client's commands come in bursts (Playwright pipelines them).
    let listener = crate::http::without_nagle(listener);
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "the CDP endpoint stopped");
        }
    });
    Ok(CdpEndpoint { websocket_url })
}

fn refuse(status: StatusCode) -> Response {
    (
        status,
        format!("{}\n", status.canonical_reason().unwrap_or("refused")),
    )
        .into_response()
}

/// `/json/version`: what Chromium's own endpoint says, with our socket URL.
async fn version(
    State(endpoint): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(status) = endpoint.check(&headers, &token) {
        return refuse(status);
    }
    let connection = match endpoint.connection() {
        Ok(connection) => connection,
        Err(response) => return *response,
    };
    match connection.call(None, &BrowserGetVersion {}).await {
        Ok(version) => axum::Json(json!({
            "Browser": version.product,
            "Protocol-Version": version.protocol_version,
            "User-Agent": version.user_agent,
            "V8-Version": version.js_version,
            "WebKit-Version": version.revision,
            "webSocketDebuggerUrl": &*endpoint.websocket_url,
        }))
        .into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")).into_response(),
    }
}

/// `/json/list`: the browser's pages (the shell's tabs among them).
async fn list(
    State(endpoint): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(status) = endpoint.check(&headers, &token) {
        return refuse(status);
    }
    let connection = match endpoint.connection() {
        Ok(connection) => connection,
        Err(response) => return *response,
    };
    match connection.call(None, &TargetGetTargets {}).await {
        Ok(targets) => {
            let pages: Vec<serde_json::Value> = targets
                .target_infos
                .into_iter()
                .filter(|t| t.kind == "page")
                .filter(|t| {
                    endpoint.scope == Scope::Full
                        || !matches!(
                            endpoint.browser.target_owner(&t.target_id),
                            browser_provider::TargetOwner::Agent(_)
                        )
                })
                .map(|t| {
                    let socket = format!("{}{}", endpoint.page_url_prefix, t.target_id);
                    json!({"id": t.target_id, "type": t.kind, "title": t.title, "url": t.url, "description": "", "webSocketDebuggerUrl": socket})
                })
                .collect();
            axum::Json(pages).into_response()
        }
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")).into_response(),
    }
}

/// `/devtools/browser/TOKEN`: one external client's CDP session.
async fn socket(
    State(endpoint): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    upgrade: std::result::Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Err(status) = endpoint.check(&headers, &token) {
        return refuse(status);
    }
    serve_client(endpoint, upgrade, proxy::Home::Browser)
}

/// `/devtools/page/TOKEN/TARGET`: one external client's CDP session on one page.
async fn page_socket(
    State(endpoint): State<Endpoint>,
    Path((token, target)): Path<(String, String)>,
    headers: HeaderMap,
    upgrade: std::result::Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Err(status) = endpoint.check(&headers, &token) {
        return refuse(status);
    }
    serve_client(endpoint, upgrade, proxy::Home::Page(target))
}

/// Hands an accepted socket to the proxy.
fn serve_client(
    endpoint: Endpoint,
    upgrade: std::result::Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    home: proxy::Home,
) -> Response {
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let connection = match endpoint.connection() {
        Ok(connection) => connection,
        Err(response) => return *response,
    };
    upgrade
        .max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(move |socket| {
            proxy::run(socket, connection, endpoint.browser, home, endpoint.scope)
        })
}
