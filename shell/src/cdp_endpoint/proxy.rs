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

use std::collections::{HashMap, HashSet};

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use browser_provider::Browser;
use browser_provider::cdp::{CdpEvent, Connection, RelayLink, Relayed, SessionId};
use browser_provider::host::BrowserState;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};

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
pub async fn run(socket: WebSocket, connection: Connection, browser: Browser, home: Home) {
    let (link, mut inbound) = connection.open_relay();
    let Some(home_session) = attach_home(&link, &mut inbound, &home).await else {
        tracing::debug!(
            ?home,
            "the CDP endpoint could not open a session for a client"
        );
        return;
    };
    tracing::info!(session = %home_session, ?home, "a CDP client connected");
    let mut sessions = ClientSessions {
        home: home_session.clone(),
        targets: HashSet::new(),
    };
    let mut outstanding: HashMap<u64, Outstanding> = HashMap::new();
    let (mut outgoing, mut incoming) = socket.split();
    let mut browser_gone = false;
    loop {
        let reply = tokio::select! {
            message = incoming.next() => {
                let Some(Ok(message)) = message else { break };
                let text = match message {
                    Message::Text(text) => text.to_string(),
                    Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Message::Close(_) => break,
                    _ => continue,
                };
                forward(&link, &browser, &sessions, &mut outstanding, &text).await
            }
            relayed = inbound.recv() => {
                match relayed {
                    Some(Relayed::Answer { id, body }) => {
                        outstanding.remove(&id).map(|command| {
                            show_created_page(&browser, &command, &body);
                            answer(&mut sessions, command, body)
                        })
                    }
                    Some(Relayed::Event(event)) => route(&mut sessions, &event),
                    // The browser is gone.
                    None => {
                        browser_gone = true;
                        break;
                    }
                }
            }
        };
        if let Some(reply) = reply
            && outgoing
                .send(Message::Text(reply.to_string().into()))
                .await
                .is_err()
        {
            break;
        }
    }
    if browser_gone {
        // Say so, in a way clients report: a close frame with a code.
        let reason = gone_reason(&browser).await;
        tracing::info!(session = %home_session, %reason, "closing a CDP client: the browser went away");
        let _ = outgoing
            .send(Message::Close(Some(CloseFrame {
                code: CLOSE_BROWSER_GONE,
                reason: reason.into(),
            })))
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
}

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

/// Sends one client message on; returns an immediate reply for a message
/// that is refused or malformed.
async fn forward(
    link: &RelayLink,
    browser: &Browser,
    sessions: &ClientSessions,
    outstanding: &mut HashMap<u64, Outstanding>,
    text: &str,
) -> Option<Value> {
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
    let refuse = |message: String| {
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
    if command.method == "Target.closeTarget"
        && let Some(target) = command.params.get("targetId").and_then(Value::as_str)
        && let Some(owner) = agent_owning(browser, target).await
    {
        return refuse(format!(
            "target {target} is a tab of agent session {owner}; it closes it when done"
        ));
    }
    let session = match &command.session_id {
        None => sessions.home.clone(),
        Some(session) if sessions.targets.contains(session) => SessionId(session.clone()),
        Some(session) => {
            return refuse(format!("Session with given id not found: {session}"));
        }
    };
    match link.send(Some(&session), &command.method, command.params) {
        Ok(id) => {
            outstanding.insert(
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

/// An event for this client, if it is one: its home session's events
/// arrive session-less, its target sessions' with their id.
fn route(sessions: &mut ClientSessions, event: &CdpEvent) -> Option<Value> {
    let session = event.session_id.as_ref()?;
    if !sessions.owns(session) {
        return None;
    }
    sessions.learn_from(event);
    let mut message = json!({"method": event.method, "params": event.params});
    if *session != sessions.home {
        message["sessionId"] = Value::String(session.0.clone());
    }
    Some(message)
}

/// A CDP error answer.
fn error_reply(id: Value, session: Option<&str>, code: i64, message: &str) -> Value {
    let mut reply = json!({"id": id, "error": {"code": code, "message": message}});
    if let Some(session) = session {
        reply["sessionId"] = Value::String(session.to_owned());
    }
    reply
}
