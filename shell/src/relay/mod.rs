//! The headless relay: the browser column served to people's own browsers.
//!
//! One port serves the UI (`/`), one WebSocket per viewer (`/ws`) and MCP
//! over HTTP (`/mcp`). Every request needs the per-launch token (`?token=`
//! for the page and socket, `Authorization: Bearer` for MCP); a second,
//! view-only token lets someone watch without acting. `Host` and `Origin`
//! are checked so other web pages and rebinding tricks get nowhere.

mod extension_tunnel;
mod live;
mod report;
pub mod timeline;
mod tls;
mod viewer;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Request, State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use browser_provider::{BrowserError, Result};
use browser_tools::agent::{Agent, AgentOptions};
use browser_tools::mcp::McpServer;
use browser_tools::words::Surface;
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::instance::{self, InstanceInfo, InstanceKind};
use crate::usage::Usage;
use crate::{auth, cli_endpoint};
use live::LiveView;

/// The browser column page with its style and script inlined (one
/// request), each marked with `nonce`, the only inline code its
/// Content-Security-Policy lets run.
fn column_page(nonce: &str) -> String {
    include_str!("../../../assets/column.html")
        .replace("<style>", &format!("<style nonce=\"{nonce}\">"))
        .replace("<script>", &format!("<script nonce=\"{nonce}\">"))
        .replace("/*COLUMN_CSS*/", include_str!("../../../assets/column.css"))
        .replace("/*COLUMN_JS*/", include_str!("../../../assets/column.js"))
}

/// Who may embed the column in a frame: nobody, or the harness given
/// with `--embed-origin`.
fn frame_ancestors(embed_origin: Option<&str>) -> String {
    format!("frame-ancestors {}", embed_origin.unwrap_or("'none'"))
}

/// The column page's policy: its own nonce'd style and script, frames
/// from its socket (`blob:`) and icons as `data:`, connections to itself
/// only; nothing else loads, no form goes anywhere.
fn column_policy(nonce: &str, host: &str, embed_origin: Option<&str>) -> String {
    // Some engines do not count the page's own WebSocket as 'self': name it.
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']' | '-'))
        .collect();
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         img-src blob: data:; connect-src 'self' ws://{host} wss://{host}; base-uri 'none'; \
         form-action 'none'; {}",
        frame_ancestors(embed_origin)
    )
}

/// Headers every answer carries: no referrer leaves, no type sniffing,
/// and (unless the answer set its own) a policy that loads nothing.
async fn security_headers(
    embed_origin: Option<Arc<str>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        let policy = format!(
            "default-src 'none'; {}",
            frame_ancestors(embed_origin.as_deref())
        );
        if let Ok(value) = header::HeaderValue::from_str(&policy) {
            headers.insert(header::CONTENT_SECURITY_POLICY, value);
        }
    }
    response
}

/// Shared by every request.
#[derive(Clone)]
struct Relay {
    live: Arc<LiveView>,
    /// What agents and the person did, for the column and reports.
    timeline: Arc<timeline::Timeline>,
    /// Full access: watch, act, MCP.
    token: Arc<str>,
    /// Watch only.
    view_token: Arc<str>,
    /// Whether `Host` must be a loopback name (when we listen on loopback).
    loopback: bool,
    /// `https` with TLS, else `http`.
    scheme: &'static str,
    /// Uses of this instance (viewers count while connected).
    usage: Usage,
    /// The origin allowed to embed the column in a frame.
    embed_origin: Option<Arc<str>>,
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
        origin == format!("{}://{host}", self.scheme)
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
        Ok(_) => {
            let nonce = match auth::random_token() {
                Ok(nonce) => nonce,
                Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            };
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            let policy = column_policy(&nonce, host, relay.embed_origin.as_deref());
            (
                [
                    (header::CACHE_CONTROL, "no-store".to_owned()),
                    (header::CONTENT_SECURITY_POLICY, policy),
                ],
                Html(column_page(&nonce)),
            )
                .into_response()
        }
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
            let timeline = Arc::clone(&relay.timeline);
            let watching = relay.usage.begin();
            let counted = crate::operate::process_operations().viewer();
            upgrade.on_upgrade(move |socket| async move {
                viewer::run(socket, live, timeline, access == Access::ViewOnly).await;
                drop((watching, counted));
            })
        }
        Err(status) => refuse(status),
    }
}

/// `/status` query: `?after=G` waits (at most `waitMs`, default 10 s,
/// at most 30 s) until the status differs from generation `G`.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusQuery {
    after: Option<u64>,
    wait_ms: Option<u64>,
}

/// `/status`: what the instance is doing, for scripts and tests (how many
/// people watch, how many frames went out, which tab is shown and which
/// one the latest frame pictures), with a generation number to wait for
/// the next change without polling.
async fn status(
    State(relay): State<Relay>,
    axum::extract::Query(query): axum::extract::Query<StatusQuery>,
) -> Response {
    let live = &relay.live;
    if let Some(after) = query.after {
        let bound = Duration::from_millis(query.wait_ms.unwrap_or(10_000).min(30_000));
        let mut changes = live.watch_status();
        let _ =
            tokio::time::timeout(bound, changes.wait_for(|generation| *generation > after)).await;
    }
    let generation = live.status_generation();
    let holder = match live.browser().control().holder {
        browser_provider::control::Holder::Agent => "agent",
        browser_provider::control::Holder::Human => "human",
    };
    let tabs = live.tabs().await;
    let handle_of = |view: Option<browser_provider::host::ViewId>| {
        let view = view?;
        tabs.iter()
            .find(|t| t.view == view)
            .map(|t| t.handle.as_str().to_owned())
    };
    axum::Json(serde_json::json!({
        "viewers": live.viewers(),
        "framesSent": live.frames_sent(),
        "holder": holder,
        "tabs": tabs.len(),
        "shown": handle_of(live.shown()),
        "pictured": handle_of(live.pictured()),
        "pageSize": live.page_size().map(|(width, height)| [width, height]),
        "browser": live.browser_status(),
        "census": live.browser().census(),
        "process": process_figures(),
        "crashed": tabs.iter().filter(|t| t.crashed).map(|t| t.handle.as_str()).collect::<Vec<_>>(),
        "generation": generation,
    }))
    .into_response()
}

/// The shell process's own figures, for watching it over days (and the
/// soak benchmark): tasks alive in its runtime, open file descriptors,
/// resident memory.
fn process_figures() -> serde_json::Value {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count);
    let rss_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| {
                    value
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        });
    serde_json::json!({
        "tasks": tokio::runtime::Handle::current().metrics().num_alive_tasks(),
        "fds": fds,
        "rssKb": rss_kb,
    })
}

/// A certificate chain and its private key (PEM files) for HTTPS.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: std::path::PathBuf,
    /// The private key.
    pub key: std::path::PathBuf,
}

/// How a relay runs.
#[derive(Debug, Clone)]
pub struct RelaySetup {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Serve HTTPS with these files.
    pub tls: Option<TlsFiles>,
    /// Serve plain HTTP on a non-loopback address anyway (a trusted network
    /// or a tunnel protects it).
    pub insecure_no_tls: bool,
    /// What to write in the runtime file for local clients.
    pub kind: InstanceKind,
    /// Stop once nothing (request, viewer, tool call) has used it this long.
    pub exit_when_idle: Option<Duration>,
    /// The CDP endpoint's URL, when one is served beside the relay (local
    /// clients find it in the runtime file).
    pub cdp_endpoint: Option<String>,
    /// The one origin (`https://harness.example`) allowed to show the
    /// column in a frame; none by default.
    pub embed_origin: Option<String>,
    /// This shell's name among several behind one balancer: its viewer
    /// links carry `node=NAME` and its answers set the cookie
    /// [`NODE_COOKIE`], so that a balancer sends a person's viewer to the
    /// shell that holds the sessions it shows.
    pub node: Option<String>,
}

/// The cookie that names the shell a viewer belongs to (see
/// [`RelaySetup::node`]); the shipped HAProxy configuration routes by it.
pub const NODE_COOKIE: &str = "browser_shell_node";

impl RelaySetup {
    /// Refuses plain HTTP where others can listen in, unless asked for.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a non-loopback address without TLS or the
    /// explicit insecure flag.
    pub fn check(&self) -> Result<()> {
        if let Some(node) = &self.node {
            check_node(node)?;
        }
        let address = self.listen;
        if !address.ip().is_loopback() && self.tls.is_none() && !self.insecure_no_tls {
            return Err(BrowserError::invalid(
                "listen",
                format!(
                    "{address} is reachable from other machines, and the token would cross the network in clear text; \
                     give --tls-cert and --tls-key, or pass --insecure-no-tls if a trusted network or an SSH tunnel protects it"
                ),
            ));
        }
        Ok(())
    }
}

/// A relay listening on its port, not yet serving: its address and
/// tokens are known (to print, or to show in the desktop window).
pub struct BoundRelay {
    app: Router,
    listener: tokio::net::TcpListener,
    tls: Option<tls::TlsConfig>,
    scheme: &'static str,
    bound: SocketAddr,
    token: Arc<str>,
    view_token: Arc<str>,
    usage: Usage,
    command_line: Agent,
    setup: RelaySetup,
    stop: CancellationToken,
    published: Option<instance::Published>,
}

impl std::fmt::Debug for BoundRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundRelay")
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

/// A relay listening on its port before it has a browser: its address and
/// tokens are known, so the desktop window can open on it while Chromium
/// starts. Connections wait in the listener's queue until it serves.
pub struct Listening {
    listener: tokio::net::TcpListener,
    tls: Option<tls::TlsConfig>,
    scheme: &'static str,
    bound: SocketAddr,
    token: Arc<str>,
    view_token: Arc<str>,
    setup: RelaySetup,
    /// The extension bridge offered at `/extension` (TLS relays only).
    extension_bridge: Option<extension_tunnel::LocalBridge>,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listening")
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

/// Listens for the relay: checks the address, reads the certificates,
/// makes the tokens and binds the port.
///
/// # Errors
/// `INVALID_ARGUMENT` for an address refused by [`RelaySetup::check`], one
/// that cannot be bound, or unusable certificate files.
pub async fn listen(setup: RelaySetup) -> Result<Listening> {
    let address = setup.listen;
    setup.check()?;
    // Certificates are read before anything listens, so a bad file fails at once.
    let tls = match &setup.tls {
        Some(files) => Some(tls::load(&files.cert, &files.key).await?),
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let token: Arc<str> = auth::configured_or_random(auth::TOKEN_ENV)?.into();
    let view_token: Arc<str> = auth::configured_or_random(auth::VIEW_TOKEN_ENV)?.into();
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| BrowserError::invalid("listen", format!("cannot listen on {address}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| BrowserError::invalid("listen", e.to_string()))?;
    Ok(Listening {
        listener,
        tls,
        scheme,
        bound,
        token,
        view_token,
        setup,
        extension_bridge: None,
    })
}

impl Listening {
    /// The browser column's address with the full-access token.
    pub fn viewer_url(&self) -> String {
        format!("{}://{}/?token={}", self.scheme, self.bound, self.token)
    }

    /// Names the CDP endpoint this shell serves (printed with the links).
    pub fn set_cdp_endpoint(&mut self, websocket_url: String) {
        self.setup.cdp_endpoint = Some(websocket_url);
    }

    /// Offers `host`'s paired WebSocket at `/extension`, when this relay
    /// serves TLS (a person's Chrome elsewhere pairs with `extension pair
    /// --relay-url`, before the relay starts or while it runs); a relay
    /// without TLS offers nothing.
    pub fn offer_extension_bridge(&mut self, host: Arc<browser_provider::host::ExtensionHost>) {
        if self.tls.is_some() {
            self.extension_bridge = Some(extension_tunnel::LocalBridge { host });
        } else {
            tracing::debug!("the extension bridge is offered over TLS only");
        }
    }

    /// Puts `browser` behind the relay (and publishes address and token in
    /// the runtime file for local clients); [`BoundRelay::serve`] then
    /// serves it until `cancel` (or until idle, when asked).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when a background instance cannot publish itself.
    pub fn attach(
        self,
        browser: browser_provider::Browser,
        options: AgentOptions,
        cancel: &CancellationToken,
    ) -> Result<BoundRelay> {
        let Self {
            listener,
            tls,
            scheme,
            bound,
            token,
            view_token,
            setup,
            extension_bridge,
        } = self;
        let address = setup.listen;
        let usage = Usage::new();
        let live = LiveView::start(browser.clone(), cancel.child_token());
        let timeline = Arc::new(timeline::Timeline::default());
        tokio::spawn(timeline::record(
            Arc::clone(&live),
            Arc::clone(&timeline),
            cancel.child_token(),
        ));
        let relay = Relay {
            live,
            timeline,
            token: Arc::clone(&token),
            view_token: Arc::clone(&view_token),
            loopback: address.ip().is_loopback(),
            scheme,
            usage: usage.clone(),
            embed_origin: setup.embed_origin.as_deref().map(Arc::from),
        };
        // The command line's session lives as long as the relay.
        let command_line = Agent::new(
            browser.clone(),
            AgentOptions {
                surface: Surface::CommandLine,
                ..options.clone()
            },
        );
        // Listening elsewhere was asked for explicitly; the token still guards everything.
        let operations = crate::operate::process_operations();
        operations.serve(browser.clone(), cancel.clone());
        let agent_server = move || McpServer::new(browser.clone(), options.clone());
        let agents = crate::http::mcp_router(agent_server, cancel, relay.loopback)
            .merge(operations.metrics())
            .merge(cli_endpoint::router(command_line.clone()))
            .merge(
                Router::new()
                    .route("/status", get(status))
                    .route("/report", get(report::download))
                    .with_state(relay.clone()),
            );
        let guard_relay = relay.clone();
        let agents = agents.layer(axum::middleware::from_fn(
            move |request: Request, next: axum::middleware::Next| {
                let relay = guard_relay.clone();
                async move {
                    match relay.access(request.headers(), request.uri()) {
                        Ok(Access::Full) => match operations.refuses_new_session(&request) {
                            Some(refused) => refused,
                            None => next.run(request).await,
                        },
                        Ok(Access::ViewOnly) => refuse(StatusCode::FORBIDDEN),
                        Err(status) => refuse(status),
                    }
                }
            },
        ));
        let in_use = usage.clone();
        let embed_origin = relay.embed_origin.clone();
        let throttle = auth::Throttle::default();
        let mut app = Router::new()
            .route("/", get(page))
            .route("/ws", get(socket))
            .with_state(relay)
            // (Before the agents' routes: their guarded fallback stays the
            // answer to every other path, 401 without the token.)
            .merge(crate::http::without_oauth())
            .merge(operations.probes())
            .merge(agents);
        if let Some(bridge) = extension_bridge {
            tracing::info!("the extension bridge is offered at /extension");
            app = app.merge(
                Router::new()
                    .route("/extension", get(extension_tunnel::tunnel))
                    .with_state(bridge),
            );
        }
        let node: Option<Arc<str>> = setup.node.as_deref().map(Arc::from);
        let app = app
            .layer(axum::middleware::from_fn(
                move |request: Request, next: axum::middleware::Next| {
                    name_the_node(node.clone(), request, next)
                },
            ))
            .layer(axum::middleware::from_fn(
                move |request: Request, next: axum::middleware::Next| {
                    let usage = in_use.clone();
                    async move { count_use(&usage, request, next).await }
                },
            ))
            .layer(axum::middleware::from_fn(
                move |request: Request, next: axum::middleware::Next| {
                    security_headers(embed_origin.clone(), request, next)
                },
            ))
            .layer(axum::middleware::from_fn(
                move |request: Request, next: axum::middleware::Next| {
                    throttle.clone().layer(request, next)
                },
            ));
        let info = InstanceInfo {
            pid: std::process::id(),
            kind: setup.kind,
            url: format!("http://{}", local_address(bound)),
            token: token.to_string(),
            cdp_endpoint: setup.cdp_endpoint.clone(),
            started_ms: instance::now_ms(),
        };
        // Local clients (tool commands, `mcp --connect`) speak plain HTTP on loopback.
        let published = match instance::publish(&info) {
            _ if tls.is_some() => {
                tracing::info!("a TLS relay is not offered to local clients");
                None
            }
            Ok(published) => Some(published),
            // Only an instance started for local clients cannot do without it.
            Err(error) if setup.kind == InstanceKind::Background => return Err(error),
            Err(error) => {
                tracing::warn!(%error, "local clients will not find this relay");
                None
            }
        };
        Ok(BoundRelay {
            app,
            listener,
            tls,
            scheme,
            bound,
            token,
            view_token,
            usage,
            command_line,
            setup,
            stop: cancel.child_token(),
            published,
        })
    }
}

impl BoundRelay {
    /// The browser column's address with the full-access token.
    pub fn viewer_url(&self) -> String {
        format!(
            "{}://{}/?token={}{}",
            self.scheme,
            self.bound,
            self.token,
            node_parameter(self.setup.node.as_deref())
        )
    }

    /// Where local shells reach this relay's `/mcp`, with its token: its
    /// loopback address in plain HTTP; `None` for a TLS relay or one on an
    /// address other than loopback.
    pub fn local_mcp(&self) -> Option<crate::browser::extension::bridge::Served> {
        let local = local_address(self.bound);
        (self.tls.is_none() && local.ip().is_loopback()).then(|| {
            crate::browser::extension::bridge::Served {
                url: format!("http://{local}"),
                token: self.token.to_string(),
            }
        })
    }

    /// What kind of instance this relay is.
    pub fn kind(&self) -> InstanceKind {
        self.setup.kind
    }

    /// Prints the viewer links and the MCP endpoint, each on a line of its
    /// own, for a person (and for scripts that read the first line).
    pub fn print_links(&self) {
        use std::io::Write;
        let (scheme, bound) = (self.scheme, self.bound);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", self.viewer_url());
        let _ = writeln!(
            out,
            "View only: {scheme}://{bound}/?token={}{}",
            self.view_token,
            node_parameter(self.setup.node.as_deref())
        );
        let _ = writeln!(
            out,
            "MCP over HTTP: {scheme}://{bound}/mcp (Authorization: Bearer {})",
            self.token
        );
        if let Some(endpoint) = &self.setup.cdp_endpoint {
            let _ = writeln!(out, "CDP endpoint: {endpoint}");
        }
        let _ = out.flush();
    }

    /// Serves until cancelled (or idle, when asked); then ends the command
    /// line's session and withdraws the runtime file.
    pub async fn serve(self) -> Result<()> {
        let Self {
            app,
            listener,
            tls,
            usage,
            command_line,
            setup,
            stop,
            published,
            ..
        } = self;
        if let Some(period) = setup.exit_when_idle {
            let stop = stop.clone();
            tokio::spawn(async move {
                usage.idle_for(period).await;
                tracing::info!(
                    idle_ms = period.as_millis() as u64,
                    "nobody used this instance for a while; stopping"
                );
                stop.cancel();
            });
        }
        let stopped =
            |e: std::io::Error| BrowserError::invalid("listen", format!("the relay stopped: {e}"));
        let served = match tls {
            // No Nagle delay: a frame's small header must not wait for an ACK
            // before its picture goes out (tens of milliseconds per frame).
            None => axum::serve(
                crate::http::without_nagle(listener),
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
            .map_err(stopped),
            Some(config) => tls::serve(listener, config, app, stop)
                .await
                .map_err(stopped),
        };
        command_line.close().await;
        drop(published);
        served
    }
}

/// `&node=NAME` for a viewer link of a named shell; nothing otherwise.
fn node_parameter(node: Option<&str>) -> String {
    node.map(|node| format!("&node={node}")).unwrap_or_default()
}

/// Adds the cookie that names this shell to every answer (see
/// [`RelaySetup::node`]).
async fn name_the_node(
    node: Option<Arc<str>>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    if let Some(node) = node
        && let Ok(cookie) = axum::http::HeaderValue::from_str(&format!(
            "{NODE_COOKIE}={node}; Path=/; HttpOnly; SameSite=Lax"
        ))
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Checks a shell's name: a balancer's server name and a cookie value.
///
/// # Errors
/// `INVALID_ARGUMENT` unless it is 1 to 32 letters, digits, `-` or `_`.
pub fn check_node(node: &str) -> Result<()> {
    let fits = (1..=32).contains(&node.len())
        && node
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fits {
        Ok(())
    } else {
        Err(BrowserError::invalid(
            "node",
            format!(
                "{node:?} is not a usable name: give 1 to 32 letters, digits, - or _ (the balancer's server name)"
            ),
        ))
    }
}

/// The address local clients use: loopback when listening on all interfaces.
fn local_address(bound: SocketAddr) -> SocketAddr {
    match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((Ipv4Addr::LOCALHOST, bound.port()))
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((Ipv6Addr::LOCALHOST, bound.port()))
        }
        _ => bound,
    }
}

/// Counts a request as a use until its response body has been sent (a
/// streamed MCP response or a viewer's socket included).
async fn count_use(usage: &Usage, request: Request, next: Next) -> Response {
    let in_use = usage.begin();
    let response = next.run(request).await;
    response.map(|body| {
        let stream = body.into_data_stream().map(move |chunk| {
            let _still_in_use = &in_use;
            chunk
        });
        axum::body::Body::from_stream(stream)
    })
}
