//! MCP over streamable HTTP at `/mcp`: loopback only, a random per-launch
//! bearer token on every request, `Origin` checked. Each MCP session gets
//! its own agent session (its own tabs), closed when the MCP session ends.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use browser_provider::{Browser, BrowserError, Result};
use browser_tools::mcp::{McpServer, ServerOptions};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

/// A random token: 32 bytes from the operating system, as hex.
pub fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| BrowserError::invalid("token", format!("no randomness available: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Serves the tools on `address` until `cancel`; prints the endpoint and token.
pub async fn serve(
    browser: Browser,
    options: ServerOptions,
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
    let token: Arc<str> = random_token()?.into();
    let token_copy = Arc::clone(&token);
    let factory = move || Ok(McpServer::new(browser.clone(), options.clone()));
    let mcp = StreamableHttpService::new(
        factory,
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token()),
    );
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let token = Arc::clone(&token);
            async move { guard(&token, request, next).await }
        }));
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
    axum::serve(listener, app)
        .with_graceful_shutdown(cancel.clone().cancelled_owned())
        .await
        .map_err(|e| BrowserError::invalid("http", format!("the HTTP server stopped: {e}")))
}

/// Refuses requests without the token or from a foreign page.
async fn guard(token: &str, request: Request, next: Next) -> Response {
    if !origin_allowed(request.headers()) {
        return (StatusCode::FORBIDDEN, "forbidden\n").into_response();
    }
    if !bearer_matches(request.headers(), token) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "unauthorized\n",
        )
            .into_response();
    }
    next.run(request).await
}

/// No `Origin` (a non-browser client) or a loopback one.
fn origin_allowed(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
}

/// Compares the bearer token in constant time.
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}
