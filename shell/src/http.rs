//! MCP over streamable HTTP at `/mcp`: loopback only, a random per-launch
//! bearer token on every request, `Origin` checked. Each MCP session gets
//! its own agent session (its own tabs), closed when the MCP session ends.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use browser_provider::{BrowserError, Result};
use browser_tools::mcp::McpServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth;

/// `/mcp`: streamable HTTP with one agent session per MCP session. With
/// `loopback_hosts` the `Host` header must name a loopback address;
/// otherwise any host is accepted (the caller's token guard still applies).
/// Callers add their own authentication layer.
pub fn mcp_router(
    server_for_connection: impl Fn() -> McpServer + Send + Sync + 'static,
    cancel: &CancellationToken,
    loopback_hosts: bool,
) -> Router {
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    if !loopback_hosts {
        config = config.with_allowed_hosts(Vec::<String>::new());
    }
    let factory = move || Ok(server_for_connection());
    let service =
        StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(jsonrpc_over_http))
}

/// How long `/mcp` waits for a request's body to arrive whole.
const BODY_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// The largest request body `/mcp` takes (a tool call's arguments, such as
/// a script for `browser_execute`).
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// What the MCP spec asks of its HTTP transport that rmcp answers
/// otherwise: a body that is not JSON is `400` with JSON-RPC's `-32700
/// Parse error` (rmcp: `415` and a sentence), and ending a session with
/// `DELETE` is `204 No Content` (rmcp: `202`, which clients log as a failure).
async fn jsonrpc_over_http(request: Request, next: Next) -> Response {
    let deleting = request.method() == axum::http::Method::DELETE;
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    let request = if request.method() == axum::http::Method::POST && is_json {
        let (parts, body) = request.into_parts();
        // A peer that stops sending holds nothing past this bound.
        let read = tokio::time::timeout(BODY_BOUND, axum::body::to_bytes(body, MAX_REQUEST_BYTES));
        let bytes = match read.await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(_)) => {
                return jsonrpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    -32600,
                    format!("the request is over {MAX_REQUEST_BYTES} bytes"),
                );
            }
            Err(_) => {
                return jsonrpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    -32600,
                    format!(
                        "the request's body did not arrive within {} s",
                        BODY_BOUND.as_secs()
                    ),
                );
            }
        };
        if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            return jsonrpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                format!("Parse error: {error}"),
            );
        }
        Request::from_parts(parts, axum::body::Body::from(bytes))
    } else {
        request
    };
    let posting = request.method() == axum::http::Method::POST;
    let mut response = next.run(request).await;
    if deleting && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    // A drain waits until the answers to requests have been written.
    if posting {
        response = crate::operate::process_operations().answering(response);
    }
    response
}

/// A JSON-RPC error answered over HTTP with `status`.
fn jsonrpc_error(status: StatusCode, code: i64, message: String) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}

/// `/.well-known/…` (where OAuth clients look for an authorization server):
/// `404`, there is no OAuth here, before any token is asked for, so a
/// client goes on with the bearer token it was given.
pub fn without_oauth() -> Router {
    Router::new().route(
        "/.well-known/{*path}",
        axum::routing::any(|| async { StatusCode::NOT_FOUND }),
    )
}

/// MCP over HTTP bound to its address, with its token.
#[derive(Debug)]
pub struct Listening {
    listener: tokio::net::TcpListener,
    bound: SocketAddr,
    token: Arc<str>,
}

impl Listening {
    /// The base URL local clients use (`http://127.0.0.1:PORT`; MCP is at `/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}", self.bound)
    }

    /// The bearer token every request must carry.
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Binds `address` (loopback only) with a new token (or the team's, from
/// `BROWSER_SHELL_TOKEN`) and prints the endpoint and the token on stdout, for the person or program that started
/// us; never to the logs. Requests wait in the listener's queue until
/// [`serve`] runs.
///
/// # Errors
/// As [`bind`].
pub async fn listen(address: SocketAddr) -> Result<Listening> {
    let listening = bind_with(address, auth::configured_or_random(auth::TOKEN_ENV)?).await?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "MCP over HTTP: {}/mcp", listening.url());
        let _ = writeln!(out, "Authorization: Bearer {}", listening.token());
        let _ = out.flush();
    }
    Ok(listening)
}

/// Binds `address` (loopback only) with a new token, printing nothing: for
/// a server whose address and token go elsewhere (the extension bridge's
/// owner record, see [`crate::browser::extension::bridge`]), while stdout may carry MCP.
///
/// # Errors
/// `INVALID_ARGUMENT` for an address that is not loopback or cannot be bound.
pub async fn bind(address: SocketAddr) -> Result<Listening> {
    bind_with(address, auth::random_token()?).await
}

/// Binds `address` (loopback only) with `token`.
async fn bind_with(address: SocketAddr, token: String) -> Result<Listening> {
    if !address.ip().is_loopback() {
        return Err(BrowserError::invalid(
            "http",
            format!(
                "{address} is not a loopback address; MCP over HTTP listens on 127.0.0.1 or ::1 only"
            ),
        ));
    }
    let token: Arc<str> = token.into();
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| BrowserError::invalid("http", format!("cannot listen on {address}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| BrowserError::invalid("http", e.to_string()))?;
    Ok(Listening {
        listener,
        bound,
        token,
    })
}

/// Serves the tools on `listening` until `cancel`, one server (one agent
/// session) per MCP session.
///
/// # Errors
/// `INVALID_ARGUMENT` when the HTTP server stops on an I/O error.
pub async fn serve(
    listening: Listening,
    server_for_connection: impl Fn() -> McpServer + Send + Sync + 'static,
    cancel: &CancellationToken,
) -> Result<()> {
    let Listening {
        listener, token, ..
    } = listening;
    let operations = crate::operate::process_operations();
    let app = mcp_router(server_for_connection, cancel, true)
        .merge(operations.metrics())
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let token = Arc::clone(&token);
            async move { guard(&token, request, next).await }
        }))
        .merge(without_oauth())
        .merge(operations.probes());
    // No Nagle delay on small responses and streamed events.
    axum::serve(without_nagle(listener), app)
        .with_graceful_shutdown(cancel.clone().cancelled_owned())
        .await
        .map_err(|e| BrowserError::invalid("http", format!("the HTTP server stopped: {e}")))
}

/// `listener` with Nagle's algorithm off on every connection it accepts:
/// small messages (a response, an event, a frame's header, a burst of CDP
/// commands) go out at once instead of waiting for the previous one's
/// acknowledgement.
pub fn without_nagle(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    fn no_delay(stream: &mut tokio::net::TcpStream) {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot disable Nagle's algorithm");
        }
    }
    axum::serve::ListenerExt::tap_io(listener, no_delay as fn(&mut tokio::net::TcpStream))
}

/// Refuses requests without the token or from a foreign page, and new
/// sessions while draining.
async fn guard(token: &str, request: Request, next: Next) -> Response {
    if !auth::origin_is_loopback(request.headers()) {
        return (StatusCode::FORBIDDEN, "forbidden\n").into_response();
    }
    if !auth::bearer(request.headers()).is_some_and(|given| auth::same_secret(given, token)) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "unauthorized\n",
        )
            .into_response();
    }
    if let Some(refused) = crate::operate::process_operations().refuses_new_session(&request) {
        return refused;
    }
    next.run(request).await
}
