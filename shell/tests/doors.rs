//! Hostile input at every door a network peer (or an MCP client) feeds
//! (issue 41): MCP JSON-RPC on stdio and over HTTP (bodies and headers),
//! the relay's viewer WebSocket and its CDP endpoint's proxy. Each door
//! gets a bounded number of cases made from a corpus of real messages by
//! seeded mutations (flipped bytes, cuts, repeats, deep nesting, huge
//! numbers, wrong types, random bytes); after each batch the door must
//! still answer a valid request within its bound and the process must be
//! alive: no panic, no input that holds a connection past its bound.
//!
//! `BROWSER_SHELL_FUZZ_CASES` raises the number of cases per door (the
//! default keeps `.ci/test` short); `BROWSER_SHELL_FUZZ_SEED` replays one
//! seed. Inputs that once broke a door are kept as regression tests: a
//! line that is not UTF-8 on stdio (it ended the session; `tools`'
//! `mcp::stdio` tests it), a body shorter than its `Content-Length` over
//! HTTP (it held the connection for good; now `408` after 5 s).

use crate::common;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

/// Cases per door unless `BROWSER_SHELL_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: usize = 300;

/// How long a door may take to answer a valid request after the cases.
const ANSWER_BOUND: Duration = Duration::from_secs(15);

fn cases() -> usize {
    std::env::var("BROWSER_SHELL_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn seed() -> u64 {
    std::env::var("BROWSER_SHELL_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5eed_b10c)
}

/// A small deterministic generator (xorshift64*): the same seed, the same cases.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One hostile variant of `message`.
    fn mutate(&mut self, message: &str) -> Vec<u8> {
        let mut bytes = message.as_bytes().to_vec();
        match self.below(9) {
            // Flip a few bytes.
            0 => {
                for _ in 0..=self.below(4) {
                    if !bytes.is_empty() {
                        let at = self.below(bytes.len());
                        bytes[at] ^= 1 << self.below(8);
                    }
                }
            }
            // Cut it short.
            1 => bytes.truncate(self.below(bytes.len() + 1)),
            // Repeat a slice of it.
            2 if !bytes.is_empty() => {
                let from = self.below(bytes.len());
                let slice = bytes[from..].to_vec();
                for _ in 0..=self.below(50) {
                    bytes.extend_from_slice(&slice);
                }
            }
            // Nest it very deep.
            3 => {
                let depth = 1 + self.below(5_000);
                let mut nested = "[".repeat(depth).into_bytes();
                nested.extend_from_slice(&bytes);
                nested.extend_from_slice("]".repeat(depth).as_bytes());
                bytes = nested;
            }
            // Huge and odd numbers where numbers go.
            4 => {
                let odd = [
                    "1e999999",
                    "-0",
                    "18446744073709551616",
                    "NaN",
                    "1.5",
                    "-1",
                    "9".repeat(400).as_str(),
                ]
                .map(str::to_owned);
                let pick = odd[self.below(odd.len())].clone();
                bytes = message
                    .replacen(|c: char| c.is_ascii_digit(), &pick, 1)
                    .into_bytes();
            }
            // Wrong types for values.
            5 => {
                let values = [
                    "null",
                    "true",
                    "[]",
                    "{}",
                    "\"\"",
                    "\"\\u0000\"",
                    "\"\u{fffd}\"",
                ];
                let pick = values[self.below(values.len())];
                bytes = message
                    .replacen("\"", &format!("{pick},\""), 1)
                    .into_bytes();
            }
            // Random bytes.
            6 => {
                bytes = (0..self.below(512)).map(|_| self.next() as u8).collect();
            }
            // Invalid UTF-8 inside.
            7 if !bytes.is_empty() => {
                let at = self.below(bytes.len());
                bytes.insert(at, 0xff);
            }
            // As it is (a valid message now and then, among the rest).
            _ => {}
        }
        bytes
    }
}

/// Real messages of the MCP door.
const MCP_CORPUS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"browser_list_tabs","arguments":{}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"browser_act","arguments":{"action":"click","ref":"e9","clickCount":2}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"browser_wait","arguments":{"text":"x","timeoutMs":10},"_meta":{"progressToken":"p"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"fuzz"}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
    r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#,
];

#[tokio::test]
async fn mcp_on_stdio_takes_any_line_and_goes_on() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["mcp", "--temporary-profile"])
        .env("BROWSER_SHELL_RUNTIME_DIR", common::runtime_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // Whatever it answers is read as it comes, so its output never blocks it.
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Ok(Some(line)) = out.next_line().await {
            if answers.send(line).is_err() {
                return;
            }
        }
    });
    let mut cases_made = Cases(seed());
    let initialize = MCP_CORPUS[0];
    stdin.write_all(initialize.as_bytes()).await.unwrap();
    stdin.write_all(b"\n").await.unwrap();
    for _ in 0..cases() {
        let message = MCP_CORPUS[cases_made.below(MCP_CORPUS.len())];
        let mut case = cases_made.mutate(message);
        // One line is one message on stdio.
        case.retain(|b| *b != b'\n');
        stdin.write_all(&case).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    // Still serving: a ping with an id no case used is answered.
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"still-here\",\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let pong = async {
        while let Some(line) = answered.recv().await {
            if line.contains("\"still-here\"") {
                return line;
            }
        }
        panic!("the server's output ended (it exited)");
    };
    let pong = tokio::time::timeout(ANSWER_BOUND, pong)
        .await
        .expect("a ping after the cases is answered in time");
    let pong: Value = serde_json::from_str(&pong).unwrap();
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(child.try_wait().unwrap().is_none(), "still running");
}

/// Sends raw bytes as one HTTP request and reads the status, bounded.
async fn raw_http(host: &str, request: &[u8]) -> Option<u16> {
    use tokio::io::AsyncReadExt;
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(host).await.ok()?;
        stream.write_all(request).await.ok()?;
        let mut head = vec![0u8; 64];
        let read = stream.read(&mut head).await.ok()?;
        let text = String::from_utf8_lossy(&head[..read]);
        text.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(ANSWER_BOUND, exchange)
        .await
        .expect("every request is answered (or refused) within its bound")
}

#[tokio::test]
async fn the_relay_s_doors_take_any_input_and_go_on() {
    let (relay, printed) = common::start_shell(&["relay", "--cdp-endpoint"], 4).await;
    let common::Endpoint { host, token, .. } = common::Endpoint::of_viewer_link(&printed[0]);
    let cdp_url = common::cdp_endpoint_url(&printed);
    let mut cases_made = Cases(seed() ^ 0xd00d);

    // MCP over HTTP: hostile bodies and headers, many at once (a body
    // shorter than it says holds its connection until the relay's body
    // bound, 5 s, and is answered then).
    let mut requests = Vec::new();
    let header_names = [
        "Content-Type",
        "Accept",
        "Mcp-Session-Id",
        "Authorization",
        "Content-Length",
        "Origin",
        "Host",
    ];
    for _ in 0..cases() {
        let message = MCP_CORPUS[cases_made.below(MCP_CORPUS.len())];
        let body = cases_made.mutate(message);
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\n"
        );
        // Now and then, a header made hostile too.
        if cases_made.below(3) == 0 {
            let name = header_names[cases_made.below(header_names.len())];
            let value = String::from_utf8_lossy(
                &cases_made.mutate("application/json, text/event-stream 12345"),
            )
            .replace(['\r', '\n'], "");
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let length = if cases_made.below(10) == 0 {
            body.len() + 1 + cases_made.below(100)
        } else {
            body.len()
        };
        head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        requests.push(request);
    }
    let host_ref = host.as_str();
    futures_util::stream::iter(requests)
        .map(|request| async move { raw_http(host_ref, &request).await })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;

    // The viewer's WebSocket: hostile messages from a connected viewer.
    let viewer_corpus = [
        r#"{"type":"ack"}"#,
        r#"{"type":"viewport","width":800,"height":600,"fit":true,"cssWidth":800,"cssHeight":600}"#,
        r#"{"type":"show","tab":"t1"}"#,
        r#"{"type":"mouse","kind":"mousePressed","x":10,"y":10,"button":"left","clickCount":1}"#,
        r#"{"type":"key","kind":"keyDown","key":"a","code":"KeyA","text":"a"}"#,
        r#"{"type":"navigate","url":"http://127.0.0.1:9/"}"#,
        r#"{"type":"newTab"}"#,
    ];
    let (mut viewer, _) = tokio_tungstenite::connect_async(format!("ws://{host}/ws?token={token}"))
        .await
        .unwrap();
    for _ in 0..cases() {
        let pick = cases_made.below(viewer_corpus.len());
        let case = cases_made.mutate(viewer_corpus[pick]);
        let message = match String::from_utf8(case.clone()) {
            Ok(text) if cases_made.below(4) != 0 => Message::Text(text.into()),
            _ => Message::Binary(case.into()),
        };
        if viewer.send(message).await.is_err() {
            // The relay may close a socket that sends garbage: a new one is
            // let in, and goes on.
            let (again, _) =
                tokio_tungstenite::connect_async(format!("ws://{host}/ws?token={token}"))
                    .await
                    .unwrap();
            viewer = again;
        }
    }
    drop(viewer);

    // The CDP endpoint: hostile commands from a connected client.
    let cdp_corpus = [
        r#"{"id":1,"method":"Target.getTargets"}"#,
        r#"{"id":2,"method":"Target.createTarget","params":{"url":"about:blank"}}"#,
        r#"{"id":3,"method":"Runtime.evaluate","params":{"expression":"1"},"sessionId":"x"}"#,
        r#"{"id":4,"method":"Browser.close"}"#,
        r#"{"id":5,"method":"Target.setDiscoverTargets","params":{"discover":true}}"#,
    ];
    let (mut client, _) = tokio_tungstenite::connect_async(&cdp_url).await.unwrap();
    for _ in 0..cases() {
        let pick = cases_made.below(cdp_corpus.len());
        let case = cases_made.mutate(cdp_corpus[pick]);
        let text = String::from_utf8_lossy(&case).into_owned();
        if client.send(Message::Text(text.into())).await.is_err() {
            let (again, _) = tokio_tungstenite::connect_async(&cdp_url).await.unwrap();
            client = again;
        }
    }
    // The CDP door still answers a valid command.
    client
        .send(Message::Text(
            r#"{"id":424242,"method":"Target.getTargets"}"#.into(),
        ))
        .await
        .unwrap();
    let answered = async {
        while let Some(Ok(message)) = client.next().await {
            if let Message::Text(text) = message
                && text.contains("424242")
            {
                return text.to_string();
            }
        }
        panic!("the CDP endpoint closed the client");
    };
    let answer = tokio::time::timeout(ANSWER_BOUND, answered)
        .await
        .expect("a valid command after the cases is answered in time");
    assert!(answer.contains("targetInfos"), "{answer}");

    // And MCP over HTTP still serves a new agent.
    let endpoint = common::Endpoint::of_viewer_link(&printed[0]);
    let mut agent = common::Agent::connect(&endpoint).await;
    let (text, error) = agent.call("browser_list_tabs", json!({})).await;
    assert!(!error, "{text}");
    common::stop_shell(relay).await;
}
