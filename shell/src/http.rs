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
use browser_provider::{Browser, BrowserError, Result};
use browser_tools::agent::AgentOptions;
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
    browser: Browser,
    options: AgentOptions,
    cancel: &CancellationToken,
    loopback_hosts: bool,
) -> Router {
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    if !loopback_hosts {
        config = config.with_allowed_hosts(Vec::<String>::new());
    }
    let factory = move || Ok(McpServer::new(browser.clone(), options.clone()));
    let service =
        StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    Router::new().nest_service("/mcp", service)
}

/// Serves the tools on `address` until `cancel`; prints the endpoint and token.
pub async fn serve(
    browser: Browser,
    options: AgentOptions,
    address: SocketAddr,
    cancel: &CancellationToken,
) -> Result<()> {
    if !address.ip().is_loopback() {
        return Err(BrowserError::invalid(
            "http",
            format!(
                "{address} is not a loopback address; MCP over HTTP listens on 127.0.0.1 or ::1 only"
            ),
        ));
    }
    let token: Arc<str> = auth::random_token()?.into();
    let token_copy = Arc::clone(&token);
    let app = mcp_router(browser, options, cancel, true).layer(middleware::from_fn(
        move |request: Request, next: Next| {
            let token = Arc::clone(&token);
            async move { guard(&token, request, next).await }
        },
    ));
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| BrowserError::invalid("http", format!("cannot listen on {address}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| BrowserError::invalid("http", e.to_string()))?;
    {
        // The endpoint and token go to stdout, for the person or program that
        // started us; never to the logs.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "MCP over HTTP: http://{bound}/mcp");
        let _ = writeln!(
            out,
            "Authorization: Bearer {token_text}",
            token_text = &*token_copy
        );
        let _ = out.flush();
    }
    // No Nagle delay on small responses and streamed events.
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot disable Nagle's algorithm");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(cancel.clone().cancelled_owned())
        .await
        .map_err(|e| BrowserError::invalid("http", format!("the HTTP server stopped: {e}")))
}

/// Refuses requests without the token or from a foreign page.
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
    next.run(request).await
}
