//! The fixture server: the repository's `fixtures/` served on 127.0.0.1,
//! with the dynamic routes some tests need (a redirect, a 404, a download,
//! a response that never ends…), Debian's Python documentation (a real
//! Sphinx site, `python3-doc`) under `/python-docs/` when installed, and a
//! record of the `Host` header and path of every request, proof of which
//! host names reached it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use tower_http::services::ServeDir;

/// Where Debian's `python3-doc` keeps a real Sphinx site.
pub const PYTHON_DOCS: &str = "/usr/share/doc/python3/html";

/// The repository's `fixtures/` directory.
pub fn fixtures_dir() -> PathBuf {
    crate::repository().join("fixtures")
}

/// The `Host` header and path of every request any fixture server of this
/// process received, in order.
static REQUESTS_SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// The `Host` headers the fixture servers of this process received so far.
pub fn hosts_seen() -> Vec<String> {
    requests_seen().into_iter().map(|(host, _)| host).collect()
}

/// The `Host` header and path of each request the fixture servers of this
/// process received so far.
pub fn requests_seen() -> Vec<(String, String)> {
    REQUESTS_SEEN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

async fn record_host(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(host) = request.headers().get(header::HOST) {
        let host = String::from_utf8_lossy(host.as_bytes()).into_owned();
        let path = request.uri().path().to_owned();
        REQUESTS_SEEN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((host, path));
    }
    next.run(request).await
}

/// Query of `/redirect-to`.
#[derive(serde::Deserialize)]
struct RedirectTo {
    url: String,
}

/// Serves the fixtures on a free port of 127.0.0.1 (`localhost` reaches
/// it too); returns the base URL, such as `http://127.0.0.1:41234`.
pub async fn serve_fixtures() -> String {
    format!("http://{}", serve().await)
}

/// Serves the fixtures on a free port of 127.0.0.1; returns its address.
/// The server runs as long as the runtime does.
pub async fn serve() -> SocketAddr {
    let mut app = Router::new()
        .route(
            "/redirect-to",
            get(|query: axum::extract::Query<RedirectTo>| async move { Redirect::to(&query.url) }),
        )
        .route(
            "/status/404",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    axum::response::Html("<title>Missing</title><h1>Not here</h1>"),
                )
            }),
        )
        .route(
            "/redirect",
            get(|| async { Redirect::temporary("/article.html") }),
        )
        .route("/hang", get(std::future::pending::<String>))
        .route("/half", get(half_a_page))
        .route(
            "/hanging-image.html",
            get(|| async {
                axum::response::Html("<title>Hanging</title><h1>Waiting</h1><img src=\"/hang\">")
            }),
        )
        .route(
            "/download",
            get(|| async {
                (
                    [
                        (
                            header::CONTENT_DISPOSITION,
                            "attachment; filename=\"owls.bin\"",
                        ),
                        (header::CONTENT_TYPE, "application/octet-stream"),
                    ],
                    vec![0u8; 64],
                )
                    .into_response()
            }),
        );
    if Path::new(PYTHON_DOCS).is_dir() {
        app = app.nest_service("/python-docs", ServeDir::new(PYTHON_DOCS));
    }
    let app = app
        .fallback_service(ServeDir::new(fixtures_dir()))
        .layer(axum::middleware::from_fn(record_host));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the fixture server");
    let address = listener.local_addr().expect("fixture server address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    address
}

/// A server that sends the start of a page and then nothing more, forever.
async fn half_a_page() -> impl IntoResponse {
    let start = futures_util::stream::once(async {
        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(
            b"<!doctype html><title>Half a page</title><h1>The first half</h1><p>and then",
        ))
    });
    let stalled = futures_util::stream::pending();
    (
        [(header::CONTENT_TYPE, "text/html")],
        axum::body::Body::from_stream(futures_util::StreamExt::chain(start, stalled)),
    )
}
