//! One agent's use of the browser, independent of how it talks to us.
//!
//! An [`Agent`] is one agent session: it offers the `browser_*` tools, runs
//! calls with the per-call bound, records them on the activity timeline the
//! person sees, and owns the session's tabs — opened on the first call,
//! ended after an idle lease, closed when the last handle is dropped. The
//! MCP server ([`crate::mcp`]) and the command-line endpoint adapt it to
//! their transports.

use std::sync::Arc;
use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::{Activity, Browser, BrowserError, SessionId};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{
    ActArgs, ClaimTabArgs, CloseTabArgs, ConsoleArgs, ContentArgs, ExecuteArgs, HandoffArgs,
    InspectArgs, NavigateArgs, NetworkArgs, NoArgs, OpenArgs, ScreenshotArgs, SnapshotArgs,
    TabArgs, WaitArgs,
};
use crate::call::{ToolOutput, ToolSettings, call_tool};
use crate::secrets::Secrets;

/// What an agent may do and how long it may take.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Give the session its own cookies and storage.
    pub isolated: bool,
    /// A tool call running longer is cancelled and returns `TIMEOUT`.
    pub call_timeout: Duration,
    /// Offer the tab tools (list, switch, close).
    pub tab_tools: bool,
    /// Offer `browser_execute`.
    pub execute_enabled: bool,
    /// Also save screenshots as files here.
    pub output_dir: Option<std::path::PathBuf>,
    /// A session idle this long (no tool call) ends and its tabs close.
    pub lease: Duration,
    /// Secrets the agent may type by name; their values never reach it.
    pub secrets: Secrets,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            isolated: false,
            call_timeout: Duration::from_secs(60),
            tab_tools: true,
            execute_enabled: true,
            output_dir: None,
            lease: Duration::from_secs(600),
            secrets: Secrets::default(),
        }
    }
}

/// One agent session and the tools it is offered. Clones share the session.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The browser shared by every agent.
    browser: Browser,
    /// This agent's session; closed when the last clone is dropped.
    session: Arc<SessionGuard>,
    /// Options.
    options: AgentOptions,
}

/// Tools that wait for something outside the agent (a person) and so take
/// their own bound rather than the per-call one.
pub fn is_long_wait(tool: &str) -> bool {
    matches!(tool, "browser_handoff" | "browser_wait")
}

/// Owns an agent's session: opens it on first use, ends it when the agent
/// has been idle past its lease, and closes it (with its tabs) when
/// dropped, so a session ends however its connection ends.
#[derive(Debug)]
struct SessionGuard {
    browser: Browser,
    session: tokio::sync::Mutex<Option<SessionId>>,
    /// When a tool call last started or finished.
    last_used: std::sync::Mutex<tokio::time::Instant>,
    /// Tool calls running now; a session is never idle while one runs.
    in_flight: std::sync::atomic::AtomicUsize,
    /// Cancelled when the guard goes, so its lease watcher ends at once
    /// instead of sleeping out the lease.
    dropped: CancellationToken,
}

impl SessionGuard {
    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = tokio::time::Instant::now();
    }

    fn idle_since(&self) -> tokio::time::Instant {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.dropped.cancel();
        let Some(session) = self.session.get_mut().take() else {
            return;
        };
        let browser = self.browser.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = browser.close_session(&session).await {
                    tracing::warn!(%session, %error, "closing the session failed");
                }
            });
        }
    }
}

/// Counts a running call for as long as it lives.
struct InFlight<'a>(&'a SessionGuard);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0
            .in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Ends the session once it has been idle for `lease` (no call running).
async fn watch_lease(guard: std::sync::Weak<SessionGuard>, lease: Duration) {
    let Some(dropped) = guard.upgrade().map(|g| g.dropped.clone()) else {
        return;
    };
    loop {
        let Some(deadline) = guard.upgrade().map(|g| g.idle_since() + lease) else {
            return;
        };
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            () = dropped.cancelled() => return,
        }
        let Some(guard) = guard.upgrade() else { return };
        let idle = guard.idle_since() + lease <= tokio::time::Instant::now();
        if idle && guard.in_flight.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            if let Some(session) = guard.session.lock().await.take() {
                tracing::info!(%session, lease_ms = lease.as_millis() as u64, "session idle past its lease; closing it");
                if let Err(error) = guard.browser.close_session(&session).await {
                    tracing::warn!(%session, %error, "closing the session failed");
                }
            }
            return;
        }
    }
}

impl Agent {
    /// A new agent; its session opens on its first call.
    pub fn new(browser: Browser, options: AgentOptions) -> Self {
        Self {
            session: Arc::new(SessionGuard {
                browser: browser.clone(),
                session: tokio::sync::Mutex::new(None),
                last_used: std::sync::Mutex::new(tokio::time::Instant::now()),
                in_flight: std::sync::atomic::AtomicUsize::new(0),
                dropped: CancellationToken::new(),
            }),
            browser,
            options,
        }
    }

    /// Ends the session now: closes its tabs. Safe to call more than once.
    pub async fn close(&self) {
        if let Some(session) = self.session.session.lock().await.take()
            && let Err(error) = self.browser.close_session(&session).await
        {
            tracing::warn!(%session, %error, "closing the session failed");
        }
    }

    /// This agent's session, opened (with its lease watch) on first use or
    /// after the lease ended the previous one.
    async fn session(&self) -> Result<SessionId, BrowserError> {
        let mut slot = self.session.session.lock().await;
        if let Some(session) = slot.as_ref() {
            return Ok(session.clone());
        }
        let options = SessionOptions {
            isolated: self.options.isolated,
        };
        let session = self.browser.open_session(options).await?;
        self.session.touch();
        tokio::spawn(watch_lease(
            Arc::downgrade(&self.session),
            self.options.lease,
        ));
        *slot = Some(session.clone());
        Ok(session)
    }

    /// How long a call of `tool` with `arguments` may run: the per-call
    /// bound, or for a wait on a person the wait it asked for plus a margin.
    pub fn bound_for(&self, tool: &str, arguments: &Value) -> Duration {
        if !is_long_wait(tool) {
            return self.options.call_timeout;
        }
        let default = if tool == "browser_wait" {
            crate::call::WAIT_DEFAULT_MS
        } else {
            crate::call::HANDOFF_DEFAULT_MS
        };
        let asked = arguments
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(default);
        self.options
            .call_timeout
            .max(Duration::from_millis(asked) + Duration::from_secs(5))
    }

    /// Runs one tool call. Never fails: errors (an unknown tool, bad
    /// arguments, a browser error, the per-call bound) come back as outputs
    /// flagged as errors with a code and a hint. `cancel` stops the work.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        if !self.tools().iter().any(|t| t.name == name) {
            let error = BrowserError::invalid("name", format!("there is no tool {name:?}"));
            return ToolOutput::error(&error);
        }
        self.session
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _in_flight = InFlight(&self.session);
        let session = match self.session().await {
            Ok(session) => session,
            Err(error) => return ToolOutput::error(&error),
        };
        let cancel = cancel.child_token();
        let started = std::time::Instant::now();
        let summary = self.options.secrets.redact(&summarize(&arguments));
        self.browser.record_activity(Activity {
            session: session.clone(),
            tool: name.to_owned(),
            summary: summary.clone(),
            outcome: None,
            millis: None,
        });
        let settings = ToolSettings {
            output_dir: self.options.output_dir.clone(),
            secrets: self.options.secrets.clone(),
        };
        let bound = self.bound_for(name, &arguments);
        let arguments_for_audit = arguments.clone();
        let work = call_tool(&self.browser, &session, name, arguments, &settings, &cancel);
        let mut output = match tokio::time::timeout(bound, work).await {
            Ok(output) => output,
            Err(_) => {
                cancel.cancel();
                ToolOutput::error(&BrowserError::timeout(name.to_owned(), bound))
            }
        };
        // Whatever the page or the call produced, a secret's value stays hidden.
        output.text = self.options.secrets.redact(&output.text);
        let millis = started.elapsed().as_millis() as u64;
        tracing::info!(tool = %name, %session, error = output.is_error, ms = millis, "tool call");
        tracing::info!(
            target: browser_provider::AUDIT,
            event = "tool",
            %session,
            tool = %name,
            arguments = %audited(&arguments_for_audit, &self.options.secrets),
            outcome = if output.is_error { output.code.unwrap_or("ERROR") } else { "OK" },
            ms = millis,
        );
        self.browser.record_activity(Activity {
            session,
            tool: name.to_owned(),
            summary,
            outcome: Some(match (output.is_error, output.code) {
                (false, _) => Ok(()),
                (true, code) => Err(code.unwrap_or("ERROR").to_owned()),
            }),
            millis: Some(millis),
        });
        output
    }

    /// `base` instructions for the model, plus the names (never the
    /// values) of the secrets it may type.
    pub fn instructions(&self, base: &str) -> String {
        let names = self.options.secrets.names();
        if names.is_empty() {
            return base.to_owned();
        }
        format!(
            "{base} Secrets the person gave you to type without seeing them (browser_act type or \
             fill with secret: NAME instead of text): {}. Their values never appear in results; \
             «secret:NAME» stands in for them.",
            names.join(", ")
        )
    }

    /// The tools this agent is offered, with schemas and descriptions.
    pub fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool::<OpenArgs>(
                "browser_open",
                "Open an http(s) URL in the active tab (or a new tab with newTab) and return a snapshot with element refs.",
                false,
            ),
            tool::<SnapshotArgs>(
                "browser_snapshot",
                "Return the page as a compact tree: role, \"name\", states, [ref=eN] on every actionable element. \
                 Use the refs with browser_act. Scope with selector or ref on big pages.",
                true,
            ),
            tool::<ActArgs>(
                "browser_act",
                "Act on an element by ref (or exact role + name): click, type, fill, press, select, check, uncheck, \
                 hover, focus, scroll, drag. Returns what changed since your last snapshot (a diff with refs), or a \
                 full snapshot after a navigation. Fails with STALE_REF (take a new snapshot) or NOT_ACTIONABLE (with the reason).",
                false,
            ),
            tool::<NavigateArgs>(
                "browser_navigate",
                "Go to a URL, or back, forward or reload, and return a snapshot.",
                false,
            ),
            tool::<ContentArgs>(
                "browser_content",
                "Read the page as markdown (default), txt, html or json (title, links, forms, tables, JSON-LD), \
                 optionally only a CSS selector's element, capped by maxChars.",
                true,
            ),
            tool::<ScreenshotArgs>(
                "browser_screenshot",
                "Capture the viewport, the full page or one element (ref or selector) as an image. Use for visual checks; prefer snapshots for reading.",
                true,
            ),
            tool::<HandoffArgs>(
                "browser_handoff",
                "Ask the person watching to do something you cannot (sign in, solve a CAPTCHA, confirm a payment). \
                 Shows your reason and gives them control; waits until they return it, then reports what changed \
                 (URL, tabs, whether cookies changed) with a fresh snapshot.",
                false,
            ),
            tool::<WaitArgs>(
                "browser_wait",
                "Wait (bounded) for one condition: text to appear (text) or go (textGone), an element by ref or \
                 role+name to be visible / hidden / enabled, the URL to contain a string, a load state (load, \
                 domcontentloaded, networkidle), a request to end, a JavaScript expression to be true, or the page \
                 to stop changing (stable). On timeout it fails with TIMEOUT and \
                 says what it last saw.",
                true,
            ),
            tool::<ConsoleArgs>(
                "browser_console",
                "Read the tab's console messages and uncaught exceptions (level, text, source, stack), oldest first. \
                 Pass the returned cursor as since next time to get only what is new; filter with level.",
                true,
            ),
            tool::<InspectArgs>(
                "browser_inspect",
                "Inspect one element by ref or CSS selector: tag, role, name, attributes, text, computed style (a \
                 common set, the properties you name, or all), box and quads in CSS pixels, visibility (display, \
                 visibility, opacity, in viewport, what covers it), scroll position, form state (passwords \
                 masked), and a CSS selector verified to match only this element, for writing a test.",
                true,
            ),
            tool::<NetworkArgs>(
                "browser_network",
                "Read the tab's requests (method, URL, status, type, MIME type, size, duration, why it failed), in \
                 the order they ended. Filter with failed, url and type; pass the returned cursor as since next \
                 time to get only what is new; headers: true adds headers (credentials redacted); body: <number> \
                 shows one response's body.",
                true,
            ),
            tool::<NoArgs>(
                "browser_reset",
                "Close every tab this session opened.",
                false,
            ),
        ];
        if self.options.execute_enabled {
            tools.push(tool::<ExecuteArgs>(
                "browser_execute",
                "Run JavaScript in the page: an expression or a function body; args arrive as arguments[0..n]; \
                 promises are awaited; the value returns as JSON. Prefer browser_act for interaction.",
                false,
            ));
        }
        if self.options.tab_tools {
            tools.push(tool::<NoArgs>(
                "browser_list_tabs",
                "List this session's tabs (t1, t2, …) with URL and title.",
                true,
            ));
            tools.push(tool::<TabArgs>(
                "browser_switch_tab",
                "Make a tab active (such as t2) and return its snapshot.",
                false,
            ));
            tools.push(tool::<ClaimTabArgs>(
                "browser_claim_tab",
                "Take over a tab the person opened (listed by browser_list_tabs): give its tab, url and title exactly \
                 as listed; if the person changed it meanwhile, the claim fails. It returns to the person when you finish.",
                false,
            ));
            tools.push(tool::<CloseTabArgs>(
                "browser_close_tab",
                "Close one of this session's tabs (default: the active one).",
                false,
            ));
        }
        tools
    }
}

fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    read_only: bool,
) -> Tool {
    let mut tool = Tool::new(name, description, schema_for_type::<T>());
    tool.annotations = Some(ToolAnnotations::new().read_only(read_only));
    tool
}

/// Tool arguments as the audit log keeps them: typed text withheld (it
/// may be a password), token-like URL parts and secrets' values hidden.
fn audited(arguments: &Value, secrets: &Secrets) -> String {
    let mut arguments = arguments.clone();
    if let Some(object) = arguments.as_object_mut() {
        if let Some(text) = object.get_mut("text")
            && let Some(typed) = text.as_str()
        {
            *text = Value::String(format!(
                "[typed text: {} characters]",
                typed.chars().count()
            ));
        }
        if let Some(url) = object.get_mut("url")
            && let Some(address) = url.as_str()
        {
            *url = Value::String(browser_provider::page::network::redacted_url(address));
        }
    }
    secrets.redact(&arguments.to_string())
}

/// A one-line summary of tool arguments for the activity timeline (no
/// typed text or script bodies beyond a short prefix).
fn summarize(arguments: &Value) -> String {
    let Some(object) = arguments.as_object() else {
        return String::new();
    };
    let mut parts = Vec::new();
    for key in [
        "action", "url", "ref", "role", "name", "key", "secret", "tab", "format", "selector",
        "reason",
    ] {
        if let Some(value) = object.get(key) {
            let text = value
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| value.to_string());
            let short: String = text.chars().take(60).collect();
            parts.push(format!("{key}={short}"));
        }
    }
    parts.join(" ")
}
