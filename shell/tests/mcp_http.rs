//! `browser-shell mcp --http`: MCP over streamable HTTP on loopback with a
//! bearer token; two MCP sessions are two agents that cannot touch each
//! other's tabs. A raw HTTP/1.1 client keeps the test honest about headers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use axum::Router;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;
use tower_http::services::ServeDir;

struct Endpoint {
    host: String,
    path: String,
    token: String,
}

/// Sends one POST and returns (status, headers, body).
async fn post(
    endpoint: &Endpoint,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(&endpoint.host).await.unwrap();
    let body = body.to_string();
    let mut request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        endpoint.path,
        endpoint.host,
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut response))
        .await
        .expect("an answer within 60 s")
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

/// The JSON-RPC message with `id` in an SSE or JSON body (chunked or not).
fn message_with_id(body: &str, id: u64) -> Value {
    body.lines()
        .filter_map(|line| {
            line.strip_prefix("data:")
                .map(str::trim)
                .or(Some(line.trim()))
        })
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no message with id {id} in:\n{body}"))
}

struct Agent<'a> {
    endpoint: &'a Endpoint,
    session: String,
    next_id: u64,
}

impl<'a> Agent<'a> {
    async fn connect(endpoint: &'a Endpoint) -> Agent<'a> {
        let auth = format!("Bearer {}", endpoint.token);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
        let (status, head, body) = post(endpoint, &[("Authorization", &auth)], &init).await;
        assert_eq!(status, 200, "{head}\n{body}");
        let session = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .starts_with("mcp-session-id:")
                    .then(|| l.split_once(':').unwrap().1.trim().to_owned())
            })
            .expect("a session id");
        assert_eq!(
            message_with_id(&body, 1)["result"]["serverInfo"]["name"],
            "browser-shell"
        );
        let agent = Agent {
            endpoint,
            session,
            next_id: 2,
        };
        let (status, _, _) = post(
            endpoint,
            &[("Authorization", &auth), ("Mcp-Session-Id", &agent.session)],
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        assert_eq!(status, 202);
        agent
    }

    async fn call(&mut self, name: &str, arguments: Value) -> (String, bool) {
        let id = self.next_id;
        self.next_id += 1;
        let auth = format!("Bearer {}", self.endpoint.token);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        let (status, _, body) = post(
            self.endpoint,
            &[("Authorization", &auth), ("Mcp-Session-Id", &self.session)],
            &request,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let result = &message_with_id(&body, id)["result"];
        (
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            result["isError"] == json!(true),
        )
    }
}

#[tokio::test]
async fn http_needs_the_token_and_keeps_agents_apart() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let fixtures = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", fixtures.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(fixtures, Router::new().fallback_service(ServeDir::new(dir))).await
    });

    let mut child = Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["mcp", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    };
    let url_line = next().await;
    let token_line = next().await;
    let url = url_line
        .strip_prefix("MCP over HTTP: http://")
        .expect("the endpoint line")
        .to_owned();
    let (host, path) = url.split_once('/').unwrap();
    let endpoint = Endpoint {
        host: host.to_owned(),
        path: format!("/{path}"),
        token: token_line
            .strip_prefix("Authorization: Bearer ")
            .expect("the token line")
            .to_owned(),
    };
    assert_eq!(endpoint.token.len(), 64);

    // No token, a wrong token, a foreign page: refused, nothing leaked.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let (status, _, body) = post(&endpoint, &[], &ping).await;
    assert_eq!(status, 401);
    assert!(!body.contains(&endpoint.token));
    let (status, _, _) = post(&endpoint, &[("Authorization", "Bearer 0000")], &ping).await;
    assert_eq!(status, 401);
    let auth = format!("Bearer {}", endpoint.token);
    let (status, _, _) = post(
        &endpoint,
        &[("Authorization", &auth), ("Origin", "https://evil.test")],
        &ping,
    )
    .await;
    assert_eq!(status, 403);

    // Two agents: one cannot see or touch the other's tab.
    let mut first = Agent::connect(&endpoint).await;
    let mut second = Agent::connect(&endpoint).await;
    let (text, error) = first
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error && text.contains("in tab t"), "{text}");
    let tab = text
        .split("in tab ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let (text, error) = second.call("browser_switch_tab", json!({"tab": tab})).await;
    assert!(error && text.starts_with("Error TAB_NOT_OWNED"), "{text}");
    let (text, _) = second.call("browser_list_tabs", json!({})).await;
    assert!(text.starts_with("No tabs"), "{text}");
    let (text, error) = first.call("browser_list_tabs", json!({})).await;
    assert!(!error && text.contains(&tab), "{text}");

    // SIGTERM shuts down in order and the process exits by itself.
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("exits on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
}
