//! One external CDP client on the shell's connection.
//!
//! The client believes it talks to Chromium's own endpoint: the browser's
//! socket, or one page's. It gets a session of its own, its *home*: a
//! browser-level one (`Target.attachToBrowserTarget`), so what it switches
//! on (`Target.setAutoAttach`, `setDiscoverTargets`) stays scoped to it, or
//! one on its page. Its session-less commands go out on that session;
//! commands on target sessions go out as they are, but only on sessions it
//! attached itself. Command ids are the connection's own; answers go back
//! under the client's ids. Events are routed back by session: its home
//! session's events arrive session-less, as from a real endpoint; other
//! clients' and the agents' sessions are never seen.
//!
//! Answers and events reach the client in the order the browser sent them
//! (clients rely on, say, `Target.attachedToTarget` arriving before the
//! answer to `Target.createTarget`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use browser_provider::cdp::{CdpEvent, Connection, RelayLink, Relayed, SessionId};
use browser_provider::host::BrowserState;
use browser_provider::{AUDIT, Browser};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::scope::{Scope, TargetFacts, Verdict, Visibility};

/// How long a client's stream may wait for the shell to learn whose a new
/// page is (an agent's tab is known within milliseconds of its creation).
const CLAIM_BOUND: Duration = Duration::from_secs(2);

/// Commands that would take the browser away from the shell and its agents.
const REFUSED: &[&str] = &["Browser.close", "Browser.crash", "Browser.crashGpuProcess"];

/// A command as a client sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClientCommand {
    id: Value,
    method: String,
    #[serde(default)]
    params: Value,
    session_id: Option<String>,
}

/// A command sent for the client and not yet answered.
struct Outstanding {
    /// The client's id for it.
    client_id: Value,
    /// The session the client named (`None`: its home session).
    session: Option<String>,
    /// Its method, to learn sessions from attach answers.
    method: String,
}

/// What a client connected to: the browser's socket or one page's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Home {
    /// The browser (Playwright's `connectOverCDP`, Puppeteer's `connect`).
    Browser,
    /// One page, by target id (clients that open a page's socket from `/json/list`).
    Page(String),
}

/// The client's view of the connection.
struct ClientSessions {
    /// Where its session-less commands go: its own browser-level session,
    /// or its session on its page.
    home: SessionId,
    /// Target sessions it attached (directly or by auto-attach).
    targets: HashSet<String>,
}

impl ClientSessions {
    /// Whether an event on `session` is this client's.
    fn owns(&self, session: &SessionId) -> bool {
        *session == self.home || self.targets.contains(&session.0)
    }

    /// Follows attachments and detachments announced by `event`.
    fn learn_from(&mut self, event: &CdpEvent) {
        let Some(session) = event.params.get("sessionId").and_then(Value::as_str) else {
            return;
        };
        match event.method.as_str() {
            "Target.attachedToTarget" => {
                self.targets.insert(session.to_owned());
            }
            "Target.detachedFromTarget" => {
                self.targets.remove(session);
            }
            _ => {}
        }
    }
}

/// Serves one client until it or the browser goes away.
pub async fn run(
    socket: WebSocket,
    connection: Connection,
    browser: Browser,
    home: Home,
    scope: Scope,
) {
    let (link, mut inbound) = connection.open_relay();
    let Some(home_session) = attach_home(&link, &mut inbound, &home).await else {
        tracing::debug!(
            ?home,
            "the CDP endpoint could not open a session for a client"
        );
        return;
    };
    tracing::info!(session = %home_session, ?home, "a CDP client connected");
    tracing::info!(target: AUDIT, event = "cdp_connect", client = %home_session, ?home, ?scope);
    let mut client = Client {
        sessions: ClientSessions {
            home: home_session.clone(),
            targets: HashSet::new(),
        },
        visibility: Visibility::new(scope, browser.clone()),
        outstanding: HashMap::new(),
        held: VecDeque::new(),
        hold_until: None,
    };
    let mut tabs = browser.watch_tabs();
    let (mut outgoing, mut incoming) = socket.split();
    let mut browser_gone = false;
    'serving: loop {
        let waiting = client.hold_until;
        tokio::select! {
            message = incoming.next() => {
                let Some(Ok(message)) = message else { break };
                let text = match message {
                    Message::Text(text) => text.to_string(),
                    Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Message::Close(_) => break,
                    _ => continue,
                };
                if let Some(reply) = client.forward(&link, &browser, &text).await
                    && outgoing.send(Message::Text(reply.to_string().into())).await.is_err()
                {
                    break;
                }
                continue;
            }
            relayed = inbound.recv() => {
                let Some(relayed) = relayed else {
                    browser_gone = true;
                    break;
                };
                client.receive(relayed);
            }
            // The shell learned of a tab: a held page may be decided now.
            _ = tabs.changed(), if !client.held.is_empty() => {}
            () = sleep_until(waiting), if waiting.is_some() => {}
        }
        for reply in client.deliverable(&link, &browser) {
            if outgoing
                .send(Message::Text(reply.to_string().into()))
                .await
                .is_err()
            {
                break 'serving;
            }
        }
    }
    if browser_gone {
        // Say so, in a way clients report: a close frame with a code.
        let reason = gone_reason(&browser).await;
        tracing::info!(session = %home_session, %reason, "closing a CDP client: the browser went away");
        tracing::info!(target: AUDIT, event = "cdp_disconnect", client = %home_session, %reason);
        let _ = outgoing
            .send(Message::Close(Some(CloseFrame {
                code: CLOSE_BROWSER_GONE,
                reason: reason.into(),
            })))
            .await;
        // The closing handshake: the client answers with its own close
        // frame. Waiting for it (briefly) ends the connection cleanly
        // instead of dropping it under a client still reading.
        let _ = tokio::time::timeout(CLOSING_HANDSHAKE, async {
            while let Some(Ok(message)) = incoming.next().await {
                if matches!(message, Message::Close(_)) {
                    return;
                }
            }
        })
        .await;
        return;
    }
    // What it attached goes with its home session.
    let _ = link.send(
        None,
        "Target.detachFromTarget",
        json!({"sessionId": home_session.0}),
    );
    tracing::info!(session = %home_session, "a CDP client disconnected");
    tracing::info!(target: AUDIT, event = "cdp_disconnect", client = %home_session, reason = "the client left");
}

/// Sleeps until `deadline` (never, without one).
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// One client's state on the shared connection.
struct Client {
    sessions: ClientSessions,
    visibility: Visibility,
    /// Commands sent for it and not answered yet, by the connection's id.
    outstanding: HashMap<u64, Outstanding>,
    /// What the browser sent for it, in order, not passed on yet: held
    /// while a new page waits to be known as an agent's or not.
    held: VecDeque<Relayed>,
    /// Until when the page at the front may be held.
    hold_until: Option<tokio::time::Instant>,
}

/// What to do with the message at the front of the held stream.
enum Step {
    /// Pass these on (possibly nothing) and go on.
    Send(Option<Value>),
    /// Wait: whose page it is about is not known yet.
    Wait,
}

impl Client {
    /// Takes what the browser sent; answers that make targets the client's
    /// are learned at once (a held page may be waiting on one).
    fn receive(&mut self, relayed: Relayed) {
        if let Relayed::Answer { id, body } = &relayed
            && let Some(command) = self.outstanding.get(id)
        {
            self.visibility.learn(&command.method, body);
        }
        self.held.push_back(relayed);
    }

    /// What can be passed on now, in order.
    fn deliverable(&mut self, link: &RelayLink, browser: &Browser) -> Vec<Value> {
        let mut replies = Vec::new();
        while let Some(front) = self.held.front() {
            let step = match front {
                // Answers never wait (they are taken, not copied: a
                // screenshot's can be megabytes).
                Relayed::Answer { .. } => {
                    let Some(Relayed::Answer { id, mut body }) = self.held.pop_front() else {
                        break;
                    };
                    self.hold_until = None;
                    // None: ours (undoing an attach to a hidden page).
                    if let Some(command) = self.outstanding.remove(&id) {
                        show_created_page(browser, &command, &body);
                        self.visibility.filter_answer(&command.method, &mut body);
                        replies.push(answer(&mut self.sessions, command, body));
                    }
                    continue;
                }
                Relayed::Event(event) => {
                    let event = std::sync::Arc::clone(event);
                    self.route(link, &event)
                }
            };
            match step {
                Step::Send(reply) => {
                    self.held.pop_front();
                    self.hold_until = None;
                    replies.extend(reply);
                }
                Step::Wait => {
                    self.hold_until
                        .get_or_insert_with(|| tokio::time::Instant::now() + CLAIM_BOUND);
                    break;
                }
            }
        }
        replies
    }

    /// An event for this client, if it is one it may see: its home
    /// session's events arrive session-less, its target sessions' with
    /// their id. Events about targets it may not see are dropped (an
    /// automatic attach to one is undone); one about a page nobody knows
    /// yet waits, at most [`CLAIM_BOUND`].
    fn route(&mut self, link: &RelayLink, event: &CdpEvent) -> Step {
        let Some(session) = event.session_id.as_ref() else {
            return Step::Send(None);
        };
        if !self.sessions.owns(session) {
            return Step::Send(None);
        }
        if let Some(facts) = target_facts(event) {
            match self.visibility.decide(&facts) {
                Some(true) => {}
                Some(false) => {
                    if event.method == "Target.attachedToTarget"
                        && let Some(attached) =
                            event.params.get("sessionId").and_then(Value::as_str)
                    {
                        undo_attach(link, &self.sessions.home, attached);
                    }
                    return Step::Send(None);
                }
                None => {
                    let expired = self
                        .hold_until
                        .is_some_and(|until| tokio::time::Instant::now() >= until);
                    if !expired {
                        return Step::Wait;
                    }
                    self.visibility.settle_unclaimed(&facts.target_id);
                }
            }
        } else if let Some(target) = event.params.get("targetId").and_then(Value::as_str)
            && matches!(
                event.method.as_str(),
                "Target.targetDestroyed" | "Target.targetCrashed" | "Target.detachedFromTarget"
            )
            && self.visibility.is_hidden(target)
        {
            return Step::Send(None);
        }
        self.sessions.learn_from(event);
        let mut message = json!({"method": event.method, "params": event.params});
        if *session != self.sessions.home {
            message["sessionId"] = Value::String(session.0.clone());
        }
        Step::Send(Some(message))
    }

    /// Sends one client message on; returns an immediate reply for a
    /// message that is refused, acknowledged or malformed.
    async fn forward(&mut self, link: &RelayLink, browser: &Browser, text: &str) -> Option<Value> {
        let command: ClientCommand = match serde_json::from_str(text) {
            Ok(command) => command,
            Err(error) => {
                // As Chromium does: an error with the id, when there is one.
                let id = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(json!(0));
                return Some(error_reply(
                    id,
                    None,
                    -32600,
                    &format!("invalid message: {error}"),
                ));
            }
        };
        let home = &self.sessions.home;
        let refuse = |message: String| {
            tracing::info!(target: AUDIT, event = "cdp_refused", client = %home, method = %command.method, reason = %message);
            Some(error_reply(
                command.id.clone(),
                command.session_id.as_deref(),
                -32000,
                &message,
            ))
        };
        if REFUSED.contains(&command.method.as_str()) {
            return refuse(format!(
                "{} is not allowed through browser-shell's CDP endpoint: the browser belongs to the shell and its agents; disconnect instead",
                command.method
            ));
        }
        match self.visibility.check(&command.method, &command.params) {
            Verdict::Forward => {}
            Verdict::Refuse(message) => return refuse(message),
            Verdict::Acknowledge => {
                let mut reply = json!({"id": command.id, "result": {}});
                if let Some(session) = &command.session_id {
                    reply["sessionId"] = Value::String(session.clone());
                }
                return Some(reply);
            }
        }
        if command.method == "Target.closeTarget"
            && let Some(target) = command.params.get("targetId").and_then(Value::as_str)
            && let Some(owner) = agent_owning(browser, target).await
        {
            return refuse(format!(
                "target {target} is a tab of agent session {owner}; it closes it when done"
            ));
        }
        let session = match &command.session_id {
            None => self.sessions.home.clone(),
            Some(session) if self.sessions.targets.contains(session) => SessionId(session.clone()),
            Some(session) => {
                return refuse(format!("Session with given id not found: {session}"));
            }
        };
        match link.send(Some(&session), &command.method, command.params) {
            Ok(id) => {
                self.outstanding.insert(
                    id,
                    Outstanding {
                        client_id: command.id,
                        session: command.session_id,
                        method: command.method,
                    },
                );
                None
            }
            Err(error) => refuse(error.to_string()),
        }
    }
}

/// The target a target event describes, when it carries a `targetInfo`.
fn target_facts(event: &CdpEvent) -> Option<TargetFacts> {
    if !matches!(
        event.method.as_str(),
        "Target.targetCreated" | "Target.targetInfoChanged" | "Target.attachedToTarget"
    ) {
        return None;
    }
    serde_json::from_value(event.params.get("targetInfo")?.clone()).ok()
}

/// Lets go of a session the browser attached the client to automatically,
/// on a page it may not see: the page runs on (it may be waiting for a
/// debugger) and the client never hears of it.
fn undo_attach(link: &RelayLink, home: &SessionId, attached: &str) {
    let attached_session = SessionId(attached.to_owned());
    let _ = link.send(
        Some(&attached_session),
        "Runtime.runIfWaitingForDebugger",
        json!({}),
    );
    let _ = link.send(
        Some(home),
        "Target.detachFromTarget",
        json!({"sessionId": attached}),
    );
}

/// How long a client whose browser went away has to answer the close frame.
const CLOSING_HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(2);

/// The WebSocket close code for "the browser went away; come back later"
/// (1012, Service Restart).
const CLOSE_BROWSER_GONE: u16 = 1012;

/// The close reason for a client whose browser went away: why, and that
/// the same URL works again once the browser is back (at most 123 bytes,
/// as a close frame allows).
async fn gone_reason(browser: &Browser) -> String {
    let mut cause = None;
    if let Some(mut state) = browser.watch_browser() {
        // The supervisor learns the cause a moment after the pipe closes.
        let known = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            state.wait_for(|s| !matches!(s, BrowserState::Running { .. })),
        )
        .await;
        if let Ok(Ok(state)) = known
            && let BrowserState::Restarting { cause: why, .. }
            | BrowserState::Failed { cause: why, .. } = &*state
        {
            cause = Some(why.clone());
        }
    }
    let mut reason = match cause {
        Some(cause) => format!("browser stopped ({cause}); reconnect to the same URL"),
        None => "browser stopped; reconnect to the same URL".to_owned(),
    };
    while reason.len() > 123 {
        reason.pop();
    }
    reason
}

/// Opens the client's home session.
async fn attach_home(
    link: &RelayLink,
    inbound: &mut tokio::sync::mpsc::UnboundedReceiver<Relayed>,
    home: &Home,
) -> Option<SessionId> {
    let id = match home {
        Home::Browser => link.send(None, "Target.attachToBrowserTarget", json!({})),
        Home::Page(target) => link.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        ),
    }
    .ok()?;
    let bound = std::time::Duration::from_secs(30);
    tokio::time::timeout(bound, async {
        while let Some(relayed) = inbound.recv().await {
            if let Relayed::Answer { id: answered, body } = relayed
                && answered == id
            {
                let session = body.get("result")?.get("sessionId")?.as_str()?;
                return Some(SessionId(session.to_owned()));
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

/// A page the client created appears in the browser column (as the
/// person's tab), so whoever watches sees what it does.
fn show_created_page(browser: &Browser, command: &Outstanding, body: &Map<String, Value>) {
    if command.method != "Target.createTarget" {
        return;
    }
    let Some(target) = body
        .get("result")
        .and_then(|r| r.get("targetId"))
        .and_then(Value::as_str)
    else {
        return;
    };
    let browser = browser.clone();
    let target = target.to_owned();
    tokio::spawn(async move {
        if let Err(error) = browser.adopt_external_view(&target).await {
            tracing::debug!(%error, "a CDP client's page is not in the browser column");
        }
    });
}

/// The agent session whose tab `target` is, if any.
async fn agent_owning(browser: &Browser, target: &str) -> Option<String> {
    let tabs = browser.live_tabs().await.ok()?;
    tabs.into_iter()
        .find(|tab| tab.view.as_str() == target)
        .and_then(|tab| tab.session)
        .map(|session| session.as_str().to_owned())
}

/// The browser's answer, under the client's id.
fn answer(sessions: &mut ClientSessions, command: Outstanding, body: Map<String, Value>) -> Value {
    // A session the client attached by hand is its own from now on.
    if matches!(
        command.method.as_str(),
        "Target.attachToTarget" | "Target.attachToBrowserTarget"
    ) && let Some(session) = body
        .get("result")
        .and_then(|r| r.get("sessionId"))
        .and_then(Value::as_str)
    {
        sessions.targets.insert(session.to_owned());
    }
    let mut reply = body;
    reply.insert("id".into(), command.client_id);
    if let Some(session) = command.session {
        reply.insert("sessionId".into(), Value::String(session));
    }
    Value::Object(reply)
}

/// A CDP error answer.
fn error_reply(id: Value, session: Option<&str>, code: i64, message: &str) -> Value {
    let mut reply = json!({"id": id, "error": {"code": code, "message": message}});
    if let Some(session) = session {
        reply["sessionId"] = Value::String(session.to_owned());
    }
    reply
}
