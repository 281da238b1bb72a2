//! Shared test environment: one Chromium and one fixture server per test
//! binary, each test in its own session (its own tabs).

#![allow(dead_code)]

pub mod bounded;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use browser_provider::browser::SessionOptions;
use browser_provider::host::{ChromiumHost, LaunchOptions};
use browser_provider::{Browser, BrowserConfig, SessionId};
use tokio_util::sync::CancellationToken;
use tower_http::services::ServeDir;

/// The repository's `fixtures/` directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// The `Host` header and path of every request any fixture server of this
/// test binary received, in order: proof of which host names reached it.
static REQUESTS_SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// The `Host` headers the fixture servers received so far.
pub fn hosts_seen() -> Vec<String> {
    requests_seen().into_iter().map(|(host, _)| host).collect()
}

/// The `Host` header and path of each request the fixture servers received so far.
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

/// Serves `fixtures/` plus a few dynamic routes on 127.0.0.1; returns the base URL.
pub async fn serve_fixtures() -> String {
    let app = Router::new()
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
        )
        .fallback_service(ServeDir::new(fixtures_dir()))
        .layer(axum::middleware::from_fn(record_host));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the fixture server");
    let address = listener.local_addr().expect("fixture server address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}")
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

/// Launch options for tests: headless, temporary profile.
pub fn launch_options() -> LaunchOptions {
    LaunchOptions {
        command_timeout: Duration::from_secs(20),
        ..LaunchOptions::default()
    }
}

/// The environment shared by every test of a binary.
pub struct Env {
    pub runtime: tokio::runtime::Runtime,
    /// The Chromium this binary launched; none when the tests drive a
    /// person's Chrome through the extension host instead.
    pub launched: Option<Arc<ChromiumHost>>,
    pub browser: Browser,
    pub base: String,
}

impl Env {
    pub fn start() -> Arc<Self> {
        Self::start_with(launch_options(), BrowserConfig::default())
    }

    /// A browser launched with `launch`, driven with `config`.
    pub fn start_with(launch: LaunchOptions, config: BrowserConfig) -> Arc<Self> {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("test runtime");
        let (host, browser, base) = runtime.block_on(async {
            let base = serve_fixtures().await;
            let host = Arc::new(ChromiumHost::launch(launch).await.expect("launch Chromium"));
            let browser = Browser::new(host.clone(), config);
            (host, browser, base)
        });
        Arc::new(Self {
            runtime,
            launched: Some(host),
            browser,
            base,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }
}

/// What each test receives.
#[derive(Clone)]
pub struct Ctx {
    pub env: Arc<Env>,
}

impl Ctx {
    pub fn browser(&self) -> &Browser {
        &self.env.browser
    }

    pub fn url(&self, path: &str) -> String {
        self.env.url(path)
    }

    /// A new session on the shared browser.
    pub async fn session(&self) -> SessionId {
        self.browser()
            .open_session(SessionOptions::default())
            .await
            .expect("open a session")
    }

    /// A new session with `path` open in its first tab.
    pub async fn session_at(&self, path: &str) -> SessionId {
        let session = self.session().await;
        self.browser()
            .open(&session, &self.url(path), false, &CancellationToken::new())
            .await
            .expect("open the fixture");
        session
    }

    /// Evaluates an expression in the session's active tab and returns its value.
    pub async fn eval(&self, session: &SessionId, script: &str) -> serde_json::Value {
        self.eval_in(self.browser(), session, script).await
    }

    /// Like [`Ctx::eval`], on a browser of the test's own.
    pub async fn eval_in(
        &self,
        browser: &Browser,
        session: &SessionId,
        script: &str,
    ) -> serde_json::Value {
        match browser
            .execute(session, script, vec![], None, &CancellationToken::new())
            .await
        {
            Ok(browser_provider::page::execute::ExecuteResult::Value { value, .. }) => value,
            other => panic!("evaluating {script:?} failed: {other:?}"),
        }
    }
}

/// A test body.
pub type TestFn = fn(Ctx) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Whether `condition` comes to hold within `bound` (looked at every 20 ms).
pub async fn eventually<F, Fut>(bound: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    bounded::first_some(bound, || {
        let holds = condition();
        async move { holds.await.then_some(()) }
    })
    .await
    .is_some()
}

/// Process ids whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmd| String::from_utf8_lossy(&cmd).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// Runs `tests` as this binary's tests (libtest arguments from the command
/// line) on one browser that `start` launches for them all (listing them
/// launches none). Returns the environment, its browser shut down, and
/// how the tests went.
pub fn run_on_one_browser(
    tests: Vec<(&'static str, TestFn)>,
    start: impl FnOnce() -> Arc<Env>,
) -> (Arc<Env>, libtest_mimic::Conclusion) {
    let args = libtest_mimic::Arguments::from_args();
    let (env, conclusion) = run_trials(args, tests, start, |env, test| {
        env.runtime.block_on(test(Ctx {
            env: Arc::clone(env),
        }));
    });
    if let Some(host) = &env.launched {
        env.runtime.block_on(host.shutdown());
    }
    (env, conclusion)
}

/// Runs `tests` as libtest trials with `args`, each by `run` on the one
/// environment `start` makes (listing them makes none, and exits).
pub fn run_trials<E, T>(
    args: libtest_mimic::Arguments,
    tests: Vec<(&'static str, T)>,
    start: impl FnOnce() -> Arc<E>,
    run: fn(&Arc<E>, T),
) -> (Arc<E>, libtest_mimic::Conclusion)
where
    E: Send + Sync + 'static,
    T: Send + 'static,
{
    use libtest_mimic::Trial;
    if args.list {
        let trials = tests
            .iter()
            .map(|(name, _)| Trial::test(*name, || Ok(())))
            .collect();
        libtest_mimic::run(&args, trials).exit();
    }
    let env = start();
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            let env = Arc::clone(&env);
            Trial::test(name, move || {
                run(&env, test);
                Ok(())
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    (env, conclusion)
}
