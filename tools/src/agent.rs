//! One agent's use of the browser, independent of how it talks to us.
//!
//! An [`Agent`] is one agent session: it offers the `browser_*` tools, runs
//! calls with the per-call bound, records them on the activity timeline the
//! person sees, and owns the session's tabs — opened on the first call,
//! ended after an idle lease, closed when the last handle is dropped. The
//! MCP server ([`crate::mcp`]) and the command-line endpoint adapt it to
//! their transports.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::policy::HostRules;
use browser_provider::{Activity, Browser, BrowserError, SessionId};
use rmcp::model::Tool;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::{ToolOutput, ToolSettings, call_tool};
use crate::catalog::{self, Offered, ToolSpec};
use crate::secrets::Secrets;
use crate::words::Surface;

/// What a tool that takes `timeoutMs` gets beyond it to answer in.
const ANSWER_MARGIN: Duration = Duration::from_secs(5);

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
    /// The browser is the person's own, not one launched for agents: the
    /// model is told what it sees there and who may stop it.
    pub persons_browser: Option<PersonsBrowser>,
    /// Who reads the answers (a model over MCP, or the command line): the
    /// words they name tools and arguments with.
    pub surface: Surface,
}

/// How agents reach the person's own browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonsBrowser {
    /// Through the browser-shell extension: shared tabs and the agent's own.
    Extension,
    /// Through the remote debugging the person enabled: the agent's own tabs.
    RemoteDebugging,
}

/// What a model is told when it works in the person's own Chrome
/// through the extension.
const PERSONS_BROWSER_EXTENSION: &str = "This is the person's own Chrome: you see only the tabs the \
person shared with you and the tabs you open (Chrome groups them under your session's name). \
It has the person's logins, and every agent session shares its cookies. The person may stop \
you at any moment (Stop in the browser-shell extension, or their own click or key in a tab you \
drive): your calls then fail with HUMAN_INTERVENED until they let you go on. NOT_SHARED means \
the person has not shared that tab with you, or it went to another site since; ask them to \
share it.";

/// What a model is told when it works in the person's running browser
/// through its remote debugging.
const PERSONS_BROWSER_REMOTE: &str = "This is the person's own running browser: you see only the \
tabs you open, never the person's. Unless your session is isolated, it has the person's logins \
and cookies.";

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
            persons_browser: None,
            surface: Surface::Mcp,
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

/// A call's activity record while it runs; if the call is dropped before
/// it ends (its caller went away), the record ends as `ABORTED`.
struct Unfinished<'a> {
    browser: &'a Browser,
    running: Option<Activity>,
    started: std::time::Instant,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            self.browser.record_activity(Activity {
                outcome: Some(Err("ABORTED".to_owned())),
                millis: Some(self.started.elapsed().as_millis() as u64),
                headline: "ABORTED".to_owned(),
                result: "The caller went away before the call ended.".to_owned(),
                ..running
            });
        }
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
            // A session whose browser is already gone (the shell stopping,
            // its pool browser given back) has nothing left to close.
            if matches!(
                error,
                BrowserError::NotConnected { .. }
                    | BrowserError::BrowserCrashed { .. }
                    | BrowserError::BrowserRestarted { .. }
            ) {
                tracing::debug!(%session, %error, "the session's browser was already gone");
            } else {
                tracing::warn!(%session, %error, "closing the session failed");
            }
        }
    }

    /// Narrows the browser's host policy for this agent's session (opened
    /// if it was not) with lists of its own, replacing those it had; empty
    /// lists leave it the browser's policy alone.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a rule that is not a host, or why the session
    /// could not be opened or its tabs told.
    pub async fn set_host_rules(&self, rules: HostRules) -> Result<(), BrowserError> {
        let session = self.session().await?;
        self.browser.set_host_rules(&session, rules).await
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
    /// bound, or for a tool that takes `timeoutMs` (a wait, a script, a
    /// handoff) what it asks for (or its default) plus a margin to answer
    /// in: its own bound, which progress reports as the total.
    pub fn bound_for(&self, tool: &str, arguments: &Value) -> Duration {
        let Some(default) = catalog::find(tool).and_then(|spec| spec.own_timeout_ms) else {
            return self.options.call_timeout;
        };
        let asked = arguments
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(default);
        // Its own bound, whether longer or shorter than the per-call one:
        // what it asked for, and a margin to answer in.
        Duration::from_millis(asked) + ANSWER_MARGIN
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
        let Some(spec) = catalog::find(name).filter(|spec| self.options.offers(spec)) else {
            let error = BrowserError::invalid("name", format!("there is no tool {name:?}"));
            return ToolOutput::error_for(&error, self.options.surface);
        };
        self.session
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _in_flight = InFlight(&self.session);
        let session = match self.session().await {
            Ok(session) => session,
            Err(error) => return ToolOutput::error_for(&error, self.options.surface),
        };
        let cancel = cancel.child_token();
        let started = std::time::Instant::now();
        let summary = self
            .options
            .secrets
            .redact(&summarize(spec, &arguments))
            .into_owned();
        // As the audit log keeps them: what people watching may read.
        let shown_arguments = audited(&arguments, &self.options.secrets);
        let typed_text = spec
            .typed_text
            .and_then(|key| arguments.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let running = Activity {
            call: Activity::next_call(),
            session: session.clone(),
            tool: name.to_owned(),
            summary: summary.clone(),
            arguments: shown_arguments.clone(),
            outcome: None,
            millis: None,
            headline: String::new(),
            result: String::new(),
        };
        self.browser.record_activity(running.clone());
        // A caller that goes away mid-call drops this future: the people
        // watching still see the call end.
        let mut unfinished = Unfinished {
            browser: &self.browser,
            running: Some(running),
            started,
        };
        let settings = ToolSettings {
            output_dir: self.options.output_dir.clone(),
            secrets: self.options.secrets.clone(),
            surface: self.options.surface,
        };
        let bound = self.bound_for(name, &arguments);
        let work = call_tool(&self.browser, &session, name, arguments, &settings, &cancel);
        let mut output = match tokio::time::timeout(bound, work).await {
            Ok(output) => output,
            Err(_) => {
                cancel.cancel();
                ToolOutput::error_for(
                    &BrowserError::timeout(name.to_owned(), bound),
                    self.options.surface,
                )
            }
        };
        // Whatever the page or the call produced, a secret's value stays hidden.
        if let Cow::Owned(redacted) = self.options.secrets.redact(&output.text) {
            output.text = redacted;
        }
        let millis = started.elapsed().as_millis() as u64;
        tracing::info!(tool = %name, %session, error = output.is_error, ms = millis, "tool call");
        tracing::info!(
            target: browser_provider::AUDIT,
            event = "tool",
            %session,
            tool = %name,
            arguments = shown_arguments.as_str(),
            outcome = if output.is_error { output.code.unwrap_or("ERROR") } else { "OK" },
            ms = millis,
        );
        let call = unfinished.running.take().map_or(0, |running| running.call);
        let headline = match (&output.headline, output.is_error) {
            (Some(headline), _) => headline.clone(),
            (None, true) => output.code.unwrap_or("ERROR").to_owned(),
            (None, false) => "done".to_owned(),
        };
        self.browser.record_activity(Activity {
            call,
            session,
            tool: name.to_owned(),
            summary,
            arguments: shown_arguments,
            outcome: Some(match (output.is_error, output.code) {
                (false, _) => Ok(()),
                (true, code) => Err(code.unwrap_or("ERROR").to_owned()),
            }),
            millis: Some(millis),
            headline,
            result: shown_result(&output.text, typed_text.as_deref()),
        });
        output
    }

    /// The tools this agent is offered, with schemas and descriptions.
    pub fn tools(&self) -> Vec<Tool> {
        self.options.tools()
    }

    /// `base` instructions for the model, plus the names (never the
    /// values) of the secrets it may type.
    pub fn instructions(&self, base: &str) -> String {
        self.options.instructions(base)
    }
}

impl AgentOptions {
    /// The tools these options offer, with schemas and descriptions.
    pub fn tools(&self) -> Vec<Tool> {
        catalog::ALL
            .iter()
            .filter(|spec| self.offers(spec))
            .map(|spec| {
                let tool = Tool::new(spec.name, spec.description, spec.input_schema())
                    .with_title(spec.title)
                    .with_annotations(spec.effect.annotations(spec.title));
                match spec.output {
                    Some(output) => tool.with_raw_output_schema(output()),
                    None => tool,
                }
            })
            .collect()
    }

    /// Whether these options offer a tool called `name`.
    pub fn offers_tool(&self, name: &str) -> bool {
        catalog::find(name).is_some_and(|spec| self.offers(spec))
    }

    /// Whether these options offer `spec`.
    fn offers(&self, spec: &ToolSpec) -> bool {
        match spec.offered {
            Offered::Always => true,
            Offered::Execute => self.execute_enabled,
            Offered::TabTools => self.tab_tools,
        }
    }

    /// `base` instructions for the model, plus the names (never the
    /// values) of the secrets it may type.
    pub fn instructions(&self, base: &str) -> String {
        let mut text = base.to_owned();
        match self.persons_browser {
            Some(PersonsBrowser::Extension) => {
                text.push(' ');
                text.push_str(PERSONS_BROWSER_EXTENSION);
            }
            Some(PersonsBrowser::RemoteDebugging) => {
                text.push(' ');
                text.push_str(PERSONS_BROWSER_REMOTE);
            }
            None => {}
        }
        let names = self.secrets.names();
        if !names.is_empty() {
            text.push_str(&format!(
                " Secrets the person gave you to type without seeing them (browser_act type or \
                 fill with secret: NAME instead of text): {}. Their values never appear in \
                 results; «secret:NAME» stands in for them.",
                names.join(", ")
            ));
        }
        text
    }
}

/// How much of a result people watching get (the timeline, a report).
const SHOWN_RESULT_BYTES: usize = 4096;

/// Typed text shorter than this stays in results people read: hiding
/// every "a" would hide the result, and so short a text is no password.
const SHORTEST_HIDDEN_TYPING: usize = 4;

/// A result (secrets already hidden) as people watching get it: what the
/// agent typed (the page may show it back, and it may be a password)
/// replaced, and cut on a character boundary, saying so.
fn shown_result(text: &str, typed: Option<&str>) -> String {
    let text = match typed {
        Some(typed) if typed.chars().count() >= SHORTEST_HIDDEN_TYPING => {
            Cow::Owned(text.replace(typed, "«typed text»"))
        }
        _ => Cow::Borrowed(text),
    };
    if text.len() <= SHOWN_RESULT_BYTES {
        return text.into_owned();
    }
    let mut end = SHOWN_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes in all)", &text[..end], text.len())
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
    secrets.redact(&arguments.to_string()).into_owned()
}

/// A one-line summary of a call's arguments for the activity timeline:
/// the ones its tool names ([`ToolSpec::summary`]: what it acts on or
/// waits for, never typed text), each cut to 60 characters.
fn summarize(spec: &ToolSpec, arguments: &Value) -> String {
    let Some(object) = arguments.as_object() else {
        return String::new();
    };
    let mut parts = Vec::new();
    for key in spec.summary {
        if let Some(value) = object.get(*key) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_summary_names_its_condition_and_typed_text_stays_out() {
        let wait = summarize(
            &catalog::wait::WAIT,
            &serde_json::json!({"text": "Signed in", "timeoutMs": 5000}),
        );
        assert_eq!(wait, "text=Signed in");
        let typed = summarize(
            &catalog::act::ACT,
            &serde_json::json!({"action": "type", "ref": "e4", "text": "hunter2"}),
        );
        assert_eq!(typed, "action=type ref=e4");
        // Text an agent types is kept out of results people read.
        assert_eq!(catalog::act::ACT.typed_text, Some("text"));
    }

    #[test]
    fn results_people_read_hide_typed_text_and_stay_short() {
        let shown = shown_result("textbox \"Name\": hunter2", Some("hunter2"));
        assert_eq!(shown, "textbox \"Name\": «typed text»");
        assert_eq!(shown_result("a b a", Some("a")), "a b a");
        let long = "é".repeat(SHOWN_RESULT_BYTES);
        let shown = shown_result(&long, None);
        assert!(shown.len() < SHOWN_RESULT_BYTES + 40 && shown.ends_with("bytes in all)"));
    }

    #[test]
    fn the_model_hears_when_it_is_in_the_person_s_own_chrome() {
        let plain = AgentOptions::default().instructions("Base.");
        assert_eq!(plain, "Base.");
        let persons = AgentOptions {
            persons_browser: Some(PersonsBrowser::Extension),
            ..AgentOptions::default()
        }
        .instructions("Base.");
        assert!(persons.starts_with("Base. This is the person's own Chrome"));
        assert!(persons.contains("HUMAN_INTERVENED") && persons.contains("NOT_SHARED"));
        let running = AgentOptions {
            persons_browser: Some(PersonsBrowser::RemoteDebugging),
            ..AgentOptions::default()
        }
        .instructions("Base.");
        assert!(running.contains("only the tabs you open"));
    }
}
