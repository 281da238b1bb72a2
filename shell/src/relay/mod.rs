//! The headless relay: the browser column served to people's own browsers.
//!
//! One port serves the UI (`/`), one WebSocket per viewer (`/ws`) and MCP
//! over HTTP (`/mcp`). Every request needs the per-launch token (`?token=`
//! for the page and socket, `Authorization: Bearer` for MCP); a second,
//! view-only token lets someone watch without acting. `Host` and `Origin`
//! are checked so other web pages and rebinding tricks get nowhere.

mod live;
mod viewer;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Request, State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use browser_provider::{BrowserError, Result};
use browser_tools::agent::AgentOptions;
use tokio_util::sync::CancellationToken;

use crate::auth;
use live::LiveView;

/// The browser column page with its style and script inlined (one request).
fn column_page() -> String {
    include_str!("../../../assets/column.html")
        .replace("/*COLUMN_CSS*/", include_str!("../../../assets/column.css"))
        .replace("/*COLUMN_JS*/", include_str!("../../../assets/column.js"))
}

/// Shared by every request.
#[derive(Clone)]
struct Relay {
    live: Arc<LiveView>,
    /// Full access: watch, act, MCP.
    token: Arc<str>,
    /// Watch only.
    view_token: Arc<str>,
    /// Whether `Host` must be a loopback name (when we listen on loopback).
    loopback: bool,
}

/// What a request's credentials allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Full,
    ViewOnly,
}

impl Relay {
    fn access(&self, headers: &HeaderMap, uri: &Uri) -> std::result::Result<Access, StatusCode> {
        if self.loopback && !auth::host_is_loopback(headers) {
            return Err(StatusCode::FORBIDDEN);
        }
        if !self.origin_allowed(headers) {
            return Err(StatusCode::FORBIDDEN);
        }
        let given =
            auth::query_token(uri.query()).or_else(|| auth::bearer(headers).map(str::to_owned));
        match given {
            Some(given) if auth::same_secret(&given, &self.token) => Ok(Access::Full),
            Some(given) if auth::same_secret(&given, &self.view_token) => Ok(Access::ViewOnly),
            _ => Err(StatusCode::UNAUTHORIZED),
        }
    }

    /// A browser may only come from our own page.
    fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) else {
            return true;
        };
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        origin == format!("http://{host}")
            || (self.loopback
                && auth::origin_is_loopback(headers)
                && origin.ends_with(host.rsplit_once(':').map_or("", |(_, port)| port)))
    }
}

fn refuse(status: StatusCode) -> Response {
    let text = if status == StatusCode::UNAUTHORIZED {
        "unauthorized\n"
    } else {
        "forbidden\n"
    };
    (status, text).into_response()
}

async fn page(State(relay): State<Relay>, headers: HeaderMap, uri: Uri) -> Response {
    match relay.access(&headers, &uri) {
        Ok(_) => (
            [
                (header::CACHE_CONTROL, "no-store"),
                (header::REFERRER_POLICY, "no-referrer"),
            ],
            Html(column_page()),
        )
            .into_response(),
        Err(status) => refuse(status),
    }
}

async fn socket(
    State(relay): State<Relay>,
    headers: HeaderMap,
    uri: Uri,
    upgrade: std::result::Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // Credentials first: a stranger learns nothing, not even that this is a socket.
    match relay.access(&headers, &uri) {
        Ok(access) => {
            let upgrade = match upgrade {
                Ok(upgrade) => upgrade,
                Err(rejection) => return rejection.into_response(),
            };
            let live = Arc::clone(&relay.live);
            upgrade.on_upgrade(move |socket| viewer::run(socket, live, access == Access::ViewOnly))
        }
        Err(status) => refuse(status),
    }
}

/// Serves the relay on `address` until `cancel`. Prints the viewer links
/// and the MCP endpoint, each on a line of its own.
pub async fn serve(
    browser: browser_provider::Browser,
    options: AgentOptions,
    address: SocketAddr,
    cancel: &CancellationToken,
) -> Result<()> {
    let token: Arc<str> = auth::random_token()?.into();
    let view_token: Arc<str> = auth::random_token()?.into();
    let live = LiveView::start(browser.clone(), cancel.child_token());
    let relay = Relay {
        live,
        token: Arc::clone(&token),
        view_token: Arc::clone(&view_token),
        loopback: address.ip().is_loopback(),
    };
    // Listening elsewhere was asked for explicitly; the token still guards everything.
    let mcp = crate::http::mcp_router(browser, options, cancel, relay.loopback);
    let guard_relay = relay.clone();
    let mcp = mcp.layer(axum::middleware::from_fn(
        move |request: Request, next: axum::middleware::Next| {
            let relay = guard_relay.clone();
            async move {
                match relay.access(request.headers(), request.uri()) {
                    Ok(Access::Full) => next.run(request).await,
                    Ok(Access::ViewOnly) => refuse(StatusCode::FORBIDDEN),
                    Err(status) => refuse(status),
                }
            }
        },
    ));
    let app = Router::new()
        .route("/", get(page))
        .route("/ws", get(socket))
        .with_state(relay)
        .merge(mcp);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| BrowserError::invalid("listen", format!("cannot listen on {address}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| BrowserError::invalid("listen", e.to_string()))?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "http://{bound}/?token={token}");
        let _ = writeln!(out, "View only: http://{bound}/?token={view_token}");
        let _ = writeln!(
            out,
            "MCP over HTTP: http://{bound}/mcp (Authorization: Bearer {token})"
        );
        let _ = out.flush();
    }
    axum::serve(listener, app)
        .with_graceful_shutdown(cancel.clone().cancelled_owned())
        .await
        .map_err(|e| BrowserError::invalid("listen", format!("the relay stopped: {e}")))
}
