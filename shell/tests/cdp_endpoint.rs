//! `--cdp-endpoint`: raw CDP clients drive the shell's Chromium through the
//! authenticated endpoint while an MCP agent works in its own tab. Each
//! client sees only its own sessions; the browser and the agents' tabs
//! stay the shell's.

use crate::common;

use std::time::Duration;

use browser_testkit::fixtures::serve_fixtures;
use common::{Agent, Endpoint, get};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A raw CDP client: numbered commands, events kept until asked for.
struct CdpClient {
    socket: WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>,
    next_id: u64,
    events: Vec<Value>,
}

impl CdpClient {
    async fn connect(url: &str) -> Self {
        let (socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Self {
            socket,
            next_id: 1,
            events: Vec::new(),
        }
    }

    async fn receive(&mut self) -> Value {
        let message = tokio::time::timeout(Duration::from_secs(30), self.socket.next())
            .await
            .expect("a message within 30 s")
            .expect("the socket is open")
            .unwrap();
        let Message::Text(text) = message else {
            panic!("unexpected {message:?}")
        };
        serde_json::from_str(&text).unwrap()
    }

    /// Sends a command and returns its whole answer (`result` or `error`);
    /// events that arrive meanwhile are kept.
    async fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            command["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::Text(command.to_string().into()))
            .await
            .unwrap();
        loop {
            let message = self.receive().await;
            if message["id"] == id {
                assert_eq!(message["sessionId"].as_str(), session, "{message}");
                return message;
            }
            assert!(message["method"].is_string(), "stray answer {message}");
            self.events.push(message);
        }
    }

    /// Waits for an event (kept or new) named `method` on `session`.
    async fn event(&mut self, session: Option<&str>, method: &str) -> Value {
        let matches = |e: &Value| e["method"] == method && e["sessionId"].as_str() == session;
        if let Some(at) = self.events.iter().position(matches) {
            return self.events.remove(at);
        }
        loop {
            let message = self.receive().await;
            if matches(&message) {
                return message;
            }
            self.events.push(message);
        }
    }
}

#[tokio::test]
async fn external_clients_work_beside_agents_and_only_with_the_token() {
    let base = serve_fixtures().await;
    let runtime = common::runtime_dir();
    let audit = runtime.join("audit.jsonl");
    let (relay, printed) = common::start_shell_in(
        &runtime,
        &[
            "relay",
            "--cdp-endpoint",
            "--audit-log",
            audit.to_str().unwrap(),
        ],
        4,
    )
    .await;
    let Endpoint { host, token, .. } = Endpoint::of_viewer_link(&printed[0]);
    let websocket_url = common::cdp_endpoint_url(&printed);
    let (cdp_host, cdp_token) = {
        let rest = websocket_url.strip_prefix("ws://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        (
            host.to_owned(),
            path.strip_prefix("devtools/browser/").unwrap().to_owned(),
        )
    };
    assert!(cdp_host.starts_with("127.0.0.1:"), "{websocket_url}");
    assert_ne!(cdp_token, token, "the endpoint has a token of its own");

    // Local clients find it without copying it: the runtime file and `status`.
    let info: Value = common::instance_records(&runtime)
        .pop()
        .expect("the relay's record");
    assert_eq!(info["cdp_endpoint"], websocket_url.as_str());
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .arg("status")
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .output()
        .await
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(&format!("CDP endpoint: {websocket_url}")),
        "{status}"
    );

    // Refused: no token, a wrong one, a web page's Origin, a foreign Host.
    for (path, headers, status) in [
        ("/json/version".to_owned(), vec![], 404),
        ("/wrong/json/version".to_owned(), vec![], 401),
        ("/devtools/browser/wrong".to_owned(), vec![], 401),
        (
            format!("/{cdp_token}/json/version"),
            vec![("Origin", "http://127.0.0.1:9")],
            403,
        ),
        (
            format!("/devtools/browser/{cdp_token}"),
            vec![("Origin", "https://attacker.test")],
            403,
        ),
        (
            format!("/{cdp_token}/json/list"),
            vec![("Host", "attacker.test")],
            403,
        ),
    ] {
        let (code, body) = get(&cdp_host, &path, &headers).await;
        assert_eq!(code, status, "{path} {headers:?}: {body}");
        assert!(!body.contains(&cdp_token));
    }
    let refused =
        tokio_tungstenite::connect_async(format!("ws://{cdp_host}/devtools/browser/x")).await;
    assert!(refused.is_err(), "a socket without the token");

    // Discovery, as clients given an http:// URL use it.
    let (code, version) = get(&cdp_host, &format!("/{cdp_token}/json/version/"), &[]).await;
    assert_eq!(code, 200, "{version}");
    assert!(
        version.contains(&format!("\"webSocketDebuggerUrl\":\"{websocket_url}\"")),
        "{version}"
    );
    assert!(version.contains("Chrome/"), "{version}");

    // An agent works in its own tab over MCP.
    let endpoint: &'static Endpoint = Box::leak(Box::new(Endpoint {
        host,
        path: "/mcp".into(),
        token,
    }));
    let mut agent = Agent::connect(endpoint).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");
    // Agents' tabs do not exist for clients (the default scope).
    let (code, list) = get(&cdp_host, &format!("/{cdp_token}/json/list"), &[]).await;
    assert_eq!(code, 200);
    let list: Value =
        serde_json::from_str(&list[list.find('[').unwrap()..=list.rfind(']').unwrap()]).unwrap();
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|t| !t["url"].as_str().unwrap().ends_with("/form.html")),
        "the agent's tab is not listed: {list}"
    );

    // A raw client creates a target, navigates it, evaluates, gets events.
    let mut client = CdpClient::connect(&websocket_url).await;
    let version = client.send(None, "Browser.getVersion", json!({})).await;
    assert!(
        version["result"]["product"]
            .as_str()
            .unwrap()
            .contains("Chrome")
    );
    let created = client
        .send(None, "Target.createTarget", json!({"url": "about:blank"}))
        .await;
    let target = created["result"]["targetId"].as_str().unwrap().to_owned();
    let attached = client
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )
        .await;
    let session = attached["result"]["sessionId"].as_str().unwrap().to_owned();
    client.send(Some(&session), "Page.enable", json!({})).await;
    let navigate = client.send(
        Some(&session),
        "Page.navigate",
        json!({"url": format!("{base}/article.html")}),
    );
    // The agent clicks in its tab at the same time.
    let click = agent.call(
        "browser_act",
        json!({"action": "click", "role": "button", "name": "Add one"}),
    );
    let (navigated, (text, error)) = tokio::join!(navigate, click);
    assert!(navigated["result"]["frameId"].is_string(), "{navigated}");
    assert!(!error, "{text}");
    client.event(Some(&session), "Page.loadEventFired").await;
    let title = client
        .send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "document.title", "returnByValue": true}),
        )
        .await;
    assert_eq!(title["result"]["result"]["value"], "Field Guide to Owls");

    // Its page shows in the browser column, as the person's tab (one an
    // agent may claim).
    let article = format!("{base}/article.html");
    common::status_until(endpoint, |now| now["tabs"] == 3).await;
    // The column marks it as the CDP client's (whose viewport the shell leaves alone).
    let (mut viewer, _) = tokio_tungstenite::connect_async(format!(
        "ws://{}/ws?token={}",
        endpoint.host, endpoint.token
    ))
    .await
    .unwrap();
    let state: Value = loop {
        let message = tokio::time::timeout(Duration::from_secs(30), viewer.next())
            .await
            .expect("the column's state within 30 s")
            .unwrap()
            .unwrap();
        if let Message::Text(text) = message {
            let value: Value = serde_json::from_str(&text).unwrap();
            if value["type"] == "state" {
                break value;
            }
        }
    };
    let external: Vec<&Value> = state["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["external"] == true)
        .collect();
    assert_eq!(external.len(), 1, "{state}");
    assert!(external[0]["session"].is_null(), "{state}");
    let (listed, _) = agent.call("browser_list_tabs", json!({})).await;
    assert!(
        listed.contains(&format!("{article} | Field Guide to Owls")),
        "{listed}"
    );

    // One page's own socket, as /json/list names it: session-less commands
    // and events are that page's.
    let (_, list) = get(&cdp_host, &format!("/{cdp_token}/json/list"), &[]).await;
    let list: Value =
        serde_json::from_str(&list[list.find('[').unwrap()..=list.rfind(']').unwrap()]).unwrap();
    let page_socket = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == target.as_str())
        .expect("the client's page is listed")["webSocketDebuggerUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(page_socket.contains(&cdp_token), "{page_socket}");
    let mut on_page = CdpClient::connect(&page_socket).await;
    let title = on_page
        .send(
            None,
            "Runtime.evaluate",
            json!({"expression": "document.title", "returnByValue": true}),
        )
        .await;
    assert_eq!(title["result"]["result"]["value"], "Field Guide to Owls");
    on_page.send(None, "Page.enable", json!({})).await;
    on_page.send(None, "Page.reload", json!({})).await;
    on_page.event(None, "Page.loadEventFired").await;
    drop(on_page);

    // The client's page is not the agent's; the agent's page is untouched.
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "document.getElementById('count').textContent"}),
        )
        .await;
    assert!(!error && text.contains("\"1\""), "{text}");

    // A second client cannot use the first one's session, and sees none of its events.
    let mut other = CdpClient::connect(&websocket_url).await;
    let borrowed = other
        .send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "1"}),
        )
        .await;
    assert!(
        borrowed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Session with given id not found"),
        "{borrowed}"
    );
    client.events.clear(); // the page socket's reload was seen here too
    client.send(Some(&session), "Page.reload", json!({})).await;
    client.event(Some(&session), "Page.loadEventFired").await;
    let probe = other.send(None, "Browser.getVersion", json!({})).await;
    assert!(probe["result"].is_object());
    assert!(
        other
            .events
            .iter()
            .all(|e| e["sessionId"] != session.as_str()),
        "{:?}",
        other.events
    );

    // The browser stays the shell's.
    let close = client.send(None, "Browser.close", json!({})).await;
    assert!(
        close["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not allowed"),
        "{close}"
    );
    // Nor does an agent's new tab appear, even to a client that attaches
    // to everything automatically and makes new pages wait for it.
    client
        .send(None, "Target.setDiscoverTargets", json!({"discover": true}))
        .await;
    client
        .send(
            None,
            "Target.setAutoAttach",
            json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
        )
        .await;
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/colors.html"), "newTab": true}),
        )
        .await;
    assert!(!error, "the agent's new page is not held up: {text}");
    let targets = client.send(None, "Target.getTargets", json!({})).await;
    let infos = targets["result"]["targetInfos"].as_array().unwrap();
    assert!(!infos.is_empty());
    let agents_urls = ["/form.html", "/colors.html"];
    assert!(
        infos.iter().all(|t| agents_urls
            .iter()
            .all(|u| !t["url"].as_str().unwrap().ends_with(u))),
        "{targets}"
    );
    assert!(
        client
            .events
            .iter()
            .all(|e| !e.to_string().contains("colors.html")),
        "{:?}",
        client.events
    );
    // The person's start page is there; once an agent claims it, it is gone
    // for the client, and naming it is refused.
    let start_page = infos
        .iter()
        .find(|t| t["type"] == "page" && t["targetId"] != target.as_str())
        .expect("the person's start page")["targetId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (listed, _) = agent.call("browser_list_tabs", json!({})).await;
    let line = listed
        .lines()
        .find(|l| l.starts_with("t1: "))
        .unwrap_or_else(|| panic!("{listed}"));
    let (url, title) = line.trim_start_matches("t1: ").split_once(" | ").unwrap();
    let (text, error) = agent
        .call(
            "browser_claim_tab",
            json!({"tab": "t1", "url": url, "title": title}),
        )
        .await;
    assert!(!error, "{text}");
    for method in [
        "Target.attachToTarget",
        "Target.closeTarget",
        "Target.activateTarget",
    ] {
        let refused = client
            .send(
                None,
                method,
                json!({"targetId": start_page, "flatten": true}),
            )
            .await;
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("No target with given id found"),
            "{method}: {refused}"
        );
    }
    // What the agents share with the client is not the client's to change.
    let downloads = client
        .send(
            None,
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "downloadPath": "/tmp"}),
        )
        .await;
    assert!(
        downloads["result"].is_object(),
        "acknowledged, not applied: {downloads}"
    );
    let cookies = client.send(None, "Storage.getCookies", json!({})).await;
    assert!(
        cookies["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("browser context"),
        "{cookies}"
    );
    let context = client
        .send(None, "Target.createBrowserContext", json!({}))
        .await;
    let context = context["result"]["browserContextId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cookies = client
        .send(
            None,
            "Storage.getCookies",
            json!({"browserContextId": context}),
        )
        .await;
    assert!(
        cookies["result"]["cookies"].is_array(),
        "its own context is its own: {cookies}"
    );
    let (text, error) = agent.call("browser_snapshot", json!({})).await;
    assert!(!error, "{text}");
    // Its own target it may close.
    let closed = client
        .send(None, "Target.closeTarget", json!({"targetId": target}))
        .await;
    assert_eq!(closed["result"]["success"], true, "{closed}");

    drop(client);
    drop(other);
    common::stop_shell(relay).await;

    // The audit log has the clients and what they were refused.
    let log = std::fs::read_to_string(&audit).unwrap();
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |event: &str| events.iter().filter(|e| e["event"] == event).count();
    assert!(count("cdp_connect") >= 3, "{log}");
    assert!(count("cdp_disconnect") >= 1, "{log}");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "cdp_refused" && e["method"] == "Browser.close"),
        "{log}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "cdp_refused" && e["method"] == "Storage.getCookies"),
        "{log}"
    );
}

/// `--cdp-endpoint-scope full`: clients see and drive the agents' tabs
/// too; closing one is still the agent's business.
#[tokio::test]
async fn the_full_scope_shows_the_agents_tabs() {
    let base = serve_fixtures().await;
    let (relay, endpoint, printed) =
        common::start_relay(&["--cdp-endpoint", "--cdp-endpoint-scope", "full"], 4).await;
    let websocket_url = common::cdp_endpoint_url(&printed);
    let mut agent = Agent::connect(&endpoint).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");
    let mut client = CdpClient::connect(&websocket_url).await;
    let targets = client.send(None, "Target.getTargets", json!({})).await;
    let agent_tab = targets["result"]["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["url"].as_str().unwrap().ends_with("/form.html"))
        .unwrap_or_else(|| panic!("the agent's tab is listed: {targets}"))["targetId"]
        .as_str()
        .unwrap()
        .to_owned();
    let attached = client
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": agent_tab, "flatten": true}),
        )
        .await;
    let session = attached["result"]["sessionId"].as_str().unwrap().to_owned();
    let title = client
        .send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "document.title", "returnByValue": true}),
        )
        .await;
    assert_eq!(
        title["result"]["result"]["value"], "Sign-up form",
        "{title}"
    );
    let close = client
        .send(None, "Target.closeTarget", json!({"targetId": agent_tab}))
        .await;
    assert!(
        close["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent session"),
        "{close}"
    );
    drop(client);
    common::stop_shell(relay).await;
}
