//! What operators and load balancers ask of a serving shell (`mcp --http`,
//! `relay`): `/healthz` (the process answers), `/readyz` (its browser
//! answers and it is not draining: else 503, so a balancer sends new
//! sessions elsewhere), `/metrics` (Prometheus text format, behind the
//! token like everything else that says what agents do), and the drain
//! that SIGTERM starts.
//!
//! Metrics come from what the browser already tells its watchers (every
//! tool call's start and end, its sessions and tabs, its restarts), so no
//! tool and no provider operation knows about them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use browser_provider::Browser;
use browser_provider::host::{PoolHost, PoolStats};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// How long a drain lets the calls in flight finish before the shell stops
/// (below the systemd unit's `TimeoutStopSec`, 45 s, so the unit never has
/// to kill it).
pub const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// A person watching the column, counted in the metrics while it lives.
#[derive(Debug)]
pub struct Watching(Arc<Operations>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.viewers.dec();
    }
}

/// How long readiness waits for the browser pool to take a connection.
const POOL_PROBE_BOUND: Duration = Duration::from_secs(1);

/// A tool call's labels: which tool, and how it ended (`OK` or its code).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

/// A tool's label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

/// The shell's metrics and its draining state, shared by its HTTP routes,
/// the signal handler and the recorder of the browser's activity.
#[derive(Debug)]
pub struct Operations {
    /// The browser, once it runs.
    browser: OnceLock<Browser>,
    /// The pool sessions take their browsers from, if there is one.
    pool: OnceLock<Arc<PoolHost>>,
    /// The pool's counts when the metrics were last read.
    pool_seen: Mutex<PoolStats>,
    pool_held: Gauge,
    pool_taken: Counter,
    pool_waited: Counter,
    pool_refused: Counter,
    pool_lost: Counter,
    /// The person's Chrome through the extension, when that is the browser.
    extension: OnceLock<Arc<browser_provider::host::ExtensionHost>>,
    extension_connected: Gauge,
    viewers: Gauge,
    /// Set when a drain starts: no new session, readiness 503.
    draining: watch::Sender<bool>,
    /// Tool calls under way (by call number).
    in_flight: watch::Sender<HashSet<u64>>,
    /// MCP requests whose answers are still being written.
    answering: watch::Sender<usize>,
    registry: Mutex<Registry>,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<ToolLabel, Histogram>,
    sessions: Gauge,
    tabs: Gauge,
    restarts: Gauge,
    calls_in_flight: Gauge,
}

impl Default for Operations {
    fn default() -> Self {
        let calls = Family::<CallLabels, Counter>::default();
        let call_seconds = Family::<ToolLabel, Histogram>::new_with_constructor(|| {
            // 5 ms to about 80 s.
            Histogram::new(exponential_buckets(0.005, 2.0, 15))
        });
        let (sessions, tabs, restarts, calls_in_flight) = (
            Gauge::default(),
            Gauge::default(),
            Gauge::default(),
            Gauge::default(),
        );
        let mut registry = Registry::with_prefix("browser_shell");
        registry.register(
            "tool_calls",
            "Tool calls that ended, by tool and outcome (OK or the error code)",
            calls.clone(),
        );
        registry.register(
            "tool_call_seconds",
            "How long tool calls took, by tool",
            call_seconds.clone(),
        );
        registry.register("sessions", "Agent sessions open", sessions.clone());
        registry.register(
            "tabs",
            "Tabs open, the agents' and the person's",
            tabs.clone(),
        );
        registry.register(
            "browser_restarts",
            "Times the browser was relaunched or reconnected to since the start",
            restarts.clone(),
        );
        registry.register(
            "tool_calls_in_flight",
            "Tool calls under way",
            calls_in_flight.clone(),
        );
        let pool_held = Gauge::default();
        let (pool_taken, pool_waited, pool_refused, pool_lost) = (
            Counter::default(),
            Counter::default(),
            Counter::default(),
            Counter::default(),
        );
        registry.register(
            "pool_browsers_held",
            "Browsers taken from the pool and held by sessions now",
            pool_held.clone(),
        );
        registry.register(
            "pool_browsers_taken",
            "Browsers taken from the pool since the start",
            pool_taken.clone(),
        );
        registry.register(
            "pool_waits",
            "Sessions that found the pool full and waited for a browser",
            pool_waited.clone(),
        );
        registry.register(
            "pool_refusals",
            "Sessions told BUSY: no browser from the pool within their wait",
            pool_refused.clone(),
        );
        registry.register(
            "pool_browsers_lost",
            "Pool browsers that died while a session held them",
            pool_lost.clone(),
        );
        let (extension_connected, viewers) = (Gauge::default(), Gauge::default());
        registry.register(
            "extension_connected",
            "1 while the person's Chrome is connected through the extension (with --browser extension)",
            extension_connected.clone(),
        );
        registry.register(
            "viewers",
            "People watching the browser column (the relay's viewers)",
            viewers.clone(),
        );
        Self {
            browser: OnceLock::new(),
            pool: OnceLock::new(),
            extension: OnceLock::new(),
            extension_connected,
            viewers,
            pool_seen: Mutex::default(),
            pool_held,
            pool_taken,
            pool_waited,
            pool_refused,
            pool_lost,
            draining: watch::Sender::new(false),
            in_flight: watch::Sender::new(HashSet::new()),
            answering: watch::Sender::new(0),
            registry: Mutex::new(registry),
            calls,
            call_seconds,
            sessions,
            tabs,
            restarts,
            calls_in_flight,
        }
    }
}

impl Operations {
    /// New, with nothing recorded yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The browser runs: record its calls until `cancel`.
    pub fn serve(self: &Arc<Self>, browser: Browser, cancel: CancellationToken) {
        if self.browser.set(browser.clone()).is_err() {
            return;
        }
        let operations = Arc::clone(self);
        tokio::spawn(async move {
            let mut activity = browser.watch_activity();
            loop {
                let event = tokio::select! {
                    () = cancel.cancelled() => return,
                    event = activity.recv() => event,
                };
                match event {
                    Ok(event) => operations.record(
                        event.call,
                        &event.tool,
                        event.outcome.as_ref(),
                        event.millis,
                    ),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Sessions take their browsers from `pool`: its counts join the
    /// metrics, and readiness asks whether it answers.
    pub fn watch_pool(&self, pool: Arc<PoolHost>) {
        let _ = self.pool.set(pool);
    }

    /// The browser is the person's Chrome through `host`: whether it is
    /// connected joins the metrics.
    pub fn watch_extension(&self, host: Arc<browser_provider::host::ExtensionHost>) {
        let _ = self.extension.set(host);
    }

    /// A person starts watching the column; counted until the guard drops.
    pub fn viewer(self: &Arc<Self>) -> Watching {
        self.viewers.inc();
        Watching(Arc::clone(self))
    }

    /// Notes one call's start (no outcome yet) or end.
    fn record(
        &self,
        call: u64,
        tool: &str,
        outcome: Option<&Result<(), String>>,
        millis: Option<u64>,
    ) {
        let Some(outcome) = outcome else {
            self.in_flight.send_modify(|calls| {
                calls.insert(call);
            });
            return;
        };
        self.in_flight.send_modify(|calls| {
            calls.remove(&call);
        });
        let outcome = match outcome {
            Ok(()) => "OK".to_owned(),
            Err(code) => code.clone(),
        };
        let tool = tool.to_owned();
        self.calls
            .get_or_create(&CallLabels {
                tool: tool.clone(),
                outcome,
            })
            .inc();
        if let Some(millis) = millis {
            self.call_seconds
                .get_or_create(&ToolLabel { tool })
                .observe(millis as f64 / 1000.0);
        }
    }

    /// Whether a drain is under way.
    pub fn draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Starts the drain: readiness answers 503 and no new session is taken
    /// from now on; the calls in flight go on.
    pub fn start_draining(&self) {
        if !self.draining.send_replace(true) {
            tracing::info!(
                in_flight = self.in_flight.borrow().len(),
                "draining: no new sessions; the calls under way finish"
            );
        }
    }

    /// Resolves when no tool call is under way and every answer to an MCP
    /// request has been written (a call's result follows its end by a
    /// moment), or after `bound`; true if so.
    pub async fn calls_finished(&self, bound: Duration) -> bool {
        let mut in_flight = self.in_flight.subscribe();
        let mut answering = self.answering.subscribe();
        let idle = async {
            in_flight.wait_for(HashSet::is_empty).await.is_ok()
                && answering.wait_for(|answers| *answers == 0).await.is_ok()
        };
        tokio::time::timeout(bound, idle).await.unwrap_or(false)
    }

    /// `response`, counted as an answer being written until its body has
    /// been sent (or its client is gone), for the drain to wait on.
    pub fn answering(self: &Arc<Self>, response: Response) -> Response {
        /// Counts one answer while it lives.
        struct Answer(Arc<Operations>);
        impl Drop for Answer {
            fn drop(&mut self) {
                self.0
                    .answering
                    .send_modify(|answers| *answers = answers.saturating_sub(1));
            }
        }
        self.answering.send_modify(|answers| *answers += 1);
        let answer = Answer(Arc::clone(self));
        let (parts, body) = response.into_parts();
        let body = futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
            let _counted = &answer;
            chunk
        });
        Response::from_parts(parts, axum::body::Body::from_stream(body))
    }

    /// Why the shell is not ready for new sessions, if it is not.
    fn not_ready(&self) -> Option<&'static str> {
        if self.draining() {
            return Some("draining: it is stopping");
        }
        let Some(browser) = self.browser.get() else {
            return Some("its browser is starting");
        };
        if let Some(state) = browser.watch_browser() {
            let running = matches!(
                *state.borrow(),
                browser_provider::host::BrowserState::Running { .. }
            );
            if !running {
                return Some("its browser is restarting");
            }
        }
        None
    }

    /// Why the pool cannot be reached, if there is one and it cannot: a
    /// TCP connection to it within [`POOL_PROBE_BOUND`] (asking for a
    /// browser would take one; a pool such as browserless even starts a
    /// browser to answer `/json/version`).
    async fn pool_unreachable(&self) -> Option<String> {
        let pool = self.pool.get()?;
        let url = url::Url::parse(pool.endpoint_shown()).ok()?;
        let address = format!(
            "{}:{}",
            url.host_str()?,
            url.port_or_known_default().unwrap_or(80)
        );
        match tokio::time::timeout(POOL_PROBE_BOUND, tokio::net::TcpStream::connect(&address)).await
        {
            Ok(Ok(_)) => None,
            Ok(Err(error)) => Some(format!("its browser pool at {address} refuses ({error})")),
            Err(_) => Some(format!(
                "its browser pool at {address} did not answer within {} ms",
                POOL_PROBE_BOUND.as_millis()
            )),
        }
    }

    /// The metrics now, in the Prometheus text format.
    fn encode(&self) -> String {
        if let Some(browser) = self.browser.get() {
            let census = browser.census();
            self.sessions.set(census.sessions as i64);
            self.tabs.set(census.tabs as i64);
            if let Some(state) = browser.watch_browser()
                && let browser_provider::host::BrowserState::Running { generation, .. } =
                    &*state.borrow()
            {
                self.restarts
                    .set(i64::try_from(generation.saturating_sub(1)).unwrap_or(i64::MAX));
            }
        }
        self.calls_in_flight
            .set(self.in_flight.borrow().len() as i64);
        if let Some(extension) = self.extension.get() {
            self.extension_connected
                .set(i64::from(extension.connected_via().is_some()));
        }
        if let Some(pool) = self.pool.get() {
            let now = pool.stats();
            let mut seen = self.pool_seen.lock().unwrap_or_else(|p| p.into_inner());
            self.pool_held
                .set(i64::try_from(now.held).unwrap_or(i64::MAX));
            self.pool_taken.inc_by(now.taken.saturating_sub(seen.taken));
            self.pool_waited
                .inc_by(now.waited.saturating_sub(seen.waited));
            self.pool_refused
                .inc_by(now.refused.saturating_sub(seen.refused));
            self.pool_lost.inc_by(now.lost.saturating_sub(seen.lost));
            *seen = now;
        }
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &registry) {
            tracing::warn!(%error, "cannot encode the metrics");
        }
        text
    }

    /// `/healthz` and `/readyz`, for anyone (a balancer has no token).
    pub fn probes(self: &Arc<Self>) -> Router {
        let ready = Arc::clone(self);
        Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok\n" }))
            .route(
                "/readyz",
                axum::routing::get(move || {
                    let ready = Arc::clone(&ready);
                    async move {
                        let why = match ready.not_ready() {
                            Some(why) => Some(why.to_owned()),
                            None => ready.pool_unreachable().await,
                        };
                        match why {
                            None => (StatusCode::OK, "ready\n".to_owned()),
                            Some(why) => (
                                StatusCode::SERVICE_UNAVAILABLE,
                                format!("not ready: {why}\n"),
                            ),
                        }
                    }
                }),
            )
    }

    /// `/metrics`, to be guarded by the caller's token check.
    pub fn metrics(self: &Arc<Self>) -> Router {
        let metrics = Arc::clone(self);
        Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let metrics = Arc::clone(&metrics);
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.encode(),
                    )
                        .into_response()
                }
            }),
        )
    }

    /// While draining, a request that would start an MCP session (no
    /// `Mcp-Session-Id`) is answered 503 with `Retry-After`, so a client
    /// or balancer tries another shell; sessions under way go on.
    pub fn refuses_new_session(&self, request: &axum::extract::Request) -> Option<Response> {
        let new_session = !request.headers().contains_key("mcp-session-id");
        (self.draining() && new_session && request.uri().path().starts_with("/mcp")).then(|| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                "draining: this shell takes no new sessions; try another\n",
            )
                .into_response()
        })
    }
}

/// One drain for the process, started by the first SIGTERM (the second
/// stops at once).
pub fn process_operations() -> &'static Arc<Operations> {
    static OPERATIONS: OnceLock<Arc<Operations>> = OnceLock::new();
    OPERATIONS.get_or_init(Operations::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_are_counted_by_tool_and_outcome_and_a_drain_waits_for_them() {
        let operations = Operations::new();
        let open = "browser_open";
        operations.record(1, open, None, None);
        operations.record(2, open, None, None);
        assert!(!operations.calls_finished(Duration::from_millis(20)).await);
        operations.record(1, open, Some(&Ok(())), Some(120));
        operations.record(2, open, Some(&Err("TIMEOUT".into())), Some(60_000));
        assert!(operations.calls_finished(Duration::from_millis(20)).await);
        let text = operations.encode();
        assert!(
            text.contains(r#"browser_shell_tool_calls_total{tool="browser_open",outcome="OK"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"browser_shell_tool_calls_total{tool="browser_open",outcome="TIMEOUT"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains("browser_shell_tool_call_seconds_bucket"),
            "{text}"
        );
        assert_eq!(operations.not_ready(), Some("its browser is starting"));
        operations.start_draining();
        assert_eq!(operations.not_ready(), Some("draining: it is stopping"));
    }
}
