//! Hostile input at every door a network peer (or an MCP client) feeds
//! (issue 41): MCP JSON-RPC on stdio and over HTTP (bodies and headers),
//! the relay's viewer WebSocket and its CDP endpoint's proxy, and the
//! extension bridge's three (the native messaging host's stdin, the
//! owner's `extension.sock`, the paired WebSocket). Each door
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
//! HTTP (it held the connection for good; now `408` after 5 s). On the
//! bridge: the `native-host` command (it panicked setting up logging a
//! second time; `cli` tests it), a first message of another `type` with
//! a hello's fields (it was let in; `protocol` and `native` test it), and
//! a host stopping for a frame past its limit (it left Chrome a length
//! without its message; `native_host` tests it).

use crate::bridge::{Client, Setup};
use crate::common::{self, bounded};

use std::time::Duration;

use browser_provider::host::extension::pairing::{Pairing, pairing_file};
use browser_provider::host::extension::protocol::{
    self, EXTENSION_ID, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, Role as ProofRole,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::Role as WebSocketRole;
use tokio_util::sync::CancellationToken;

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

// ---- The extension bridge ---------------------------------------------------
//
// Three doors: the native messaging host's stdin (Chrome's frames: a
// native-endian u32 length, then JSON), the bridge owner's private socket
// that the host dials (`extension.sock`: the host's hello carrying the
// origin Chrome named, then NUL-terminated CDP-shaped messages), and the
// paired WebSocket (an upgrade with the extension's `Origin`, then hello,
// challenge, proof, welcome). All three are fed by one `mcp --browser
// extension` with a pairing of its own; a peer that gets in is also fed
// hostile answers to the shell's own commands, while an agent calls
// through it all.

/// The origin Chrome names when it starts the native host for the
/// extension in `assets/extension` (its id is fixed by the manifest's key).
fn extension_origin() -> String {
    format!("chrome-extension://{EXTENSION_ID}/")
}

/// An origin Chrome could name for another extension (which the host
/// manifest does not allow, but a user's own program could claim).
const OTHER_ORIGIN: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop/";

/// How long a native host may run on input that ends (or never comes):
/// its bound for Chrome's hello (10 s), with a margin for a loaded machine.
const HOST_BOUND: Duration = Duration::from_secs(20);

/// How long a bridge connection may stay open without being answered: the
/// hello's bound on the socket and the handshake's on the paired WebSocket
/// (5 s each), with a margin for a loaded machine.
const HANDSHAKE_BOUND: Duration = Duration::from_secs(15);

/// How long an agent's call may take while hostile peers come and go: the
/// wait for a dropped extension to come back (3 s) and the bound of the
/// extension's bookkeeping calls (10 s), with a margin for a loaded machine.
const CALL_BOUND: Duration = Duration::from_secs(25);

/// Frames fed to one native host process: a process per case would make
/// this door the slowest of all, so each process takes several (its
/// hello, then messages) and the door gets `cases() / FRAMES_PER_HOST`
/// processes (two at least).
const FRAMES_PER_HOST: usize = 10;

/// Cases run at once on a door: the bridge's cap on connections (4), so
/// that most cases meet the handshake rather than the cap.
const AT_ONCE: usize = 4;

/// How long a peer that got in waits for the shell's next command before
/// it leaves (the shell sends its next one as soon as one is answered).
const QUIET: Duration = Duration::from_millis(300);

/// How many of the shell's commands a peer that got in answers before it
/// leaves: more than the three the shell sends as a peer settles in
/// (version, sessions, tabs), so that the agent's calls meet it too.
const ANSWERS_PER_PEER: usize = 6;

/// The nonce of the paired hellos that replay one (all but the first are
/// refused as replays).
const REPLAYED_NONCE: &str = "abababababababababababababababababababababababababababababababab";

/// The extension's hello as it posts it to the native host (`bridge.js`).
fn native_hello() -> String {
    format!(
        r#"{{"type":"hello","version":{PROTOCOL_VERSION},"minVersion":{MIN_PROTOCOL_VERSION},"extensionId":"{EXTENSION_ID}","extensionVersion":"0.1.0"}}"#
    )
}

/// The hello as the native host passes it on to the shell's socket
/// (`NativeHello`: the origin is the one Chrome named).
fn socket_hello() -> String {
    format!(
        r#"{{"type":"hello","version":{PROTOCOL_VERSION},"minVersion":{MIN_PROTOCOL_VERSION},"extensionVersion":"0.1.0","origin":"{}"}}"#,
        extension_origin()
    )
}

/// The extension's hello on the paired WebSocket, with its `nonce`.
fn paired_hello(nonce: &str) -> String {
    format!(
        r#"{{"type":"hello","version":{PROTOCOL_VERSION},"minVersion":{MIN_PROTOCOL_VERSION},"extensionId":"{EXTENSION_ID}","extensionVersion":"0.1.0","nonce":"{nonce}"}}"#
    )
}

/// Real messages of the extension once welcomed (`background.js`,
/// `bridge.js`): answers to the shell's commands (`"id":0` is replaced by
/// the id of the command answered) and events (`SESSION` is replaced by an
/// agent session the welcome named, so that a shared tab reaches it).
const EXTENSION_MESSAGES: &[&str] = &[
    r#"{"id":0,"result":{"product":"Chrome/131.0.6778.85","extensionVersion":"0.1.0"}}"#,
    r#"{"id":0,"result":{}}"#,
    r#"{"id":0,"result":{"tabs":[{"tabId":7,"url":"http://127.0.0.1:9/","title":"t","openerTabId":null,"session":"SESSION","agentOpened":false,"suspended":false}]}}"#,
    r#"{"id":0,"error":{"code":-32000,"message":"NOT_SHARED: this tab is not shared with agents"}}"#,
    r#"{"id":0,"result":{"answers":[{"result":{}},{"error":{"code":-32000,"message":"No node found"}}]}}"#,
    r#"{"id":0,"result":{"tabId":8}}"#,
    r#"{"method":"Extension.tabShared","params":{"tabId":7,"url":"http://127.0.0.1:9/","title":"t","openerTabId":3,"session":"SESSION","agentOpened":false,"suspended":false}}"#,
    r#"{"method":"Extension.tabUpdated","params":{"tabId":7,"url":"http://127.0.0.1:9/a","title":"a","openerTabId":null,"session":"SESSION","agentOpened":true,"suspended":false}}"#,
    r#"{"method":"Extension.tabRemoved","params":{"tabId":7,"reason":"closed"}}"#,
    r#"{"method":"Extension.debuggerDetached","params":{"tabId":7,"reason":"canceled_by_user"}}"#,
    r#"{"method":"Extension.stop","params":{"reason":"Stop","tabId":7}}"#,
    r#"{"method":"Extension.resume","params":{}}"#,
    r#"{"method":"Extension.goodbye","params":{"reason":"disconnected by the person"}}"#,
    r#"{"method":"Extension.heartbeat","params":{}}"#,
    r#"{"method":"Page.frameNavigated","params":{"frame":{"id":"F1","loaderId":"L1","url":"http://127.0.0.1:9/"},"type":"Navigation"},"sessionId":"tab-7"}"#,
    r#"{"method":"Target.attachedToTarget","params":{"sessionId":"S2","targetInfo":{"targetId":"F2","type":"iframe","url":"about:blank","attached":true},"waitingForDebugger":false},"sessionId":"tab-7"}"#,
    r#"{"type":"proof","proof":"00"}"#,
];

/// One of [`EXTENSION_MESSAGES`], answering `id` and naming `session`,
/// made hostile two times in three.
fn extension_message(made: &mut Cases, id: u64, session: &str) -> Vec<u8> {
    let message = EXTENSION_MESSAGES[made.below(EXTENSION_MESSAGES.len())]
        .replacen("\"id\":0", &format!("\"id\":{id}"), 1)
        .replace("SESSION", session);
    if made.below(3) == 0 {
        message.into_bytes()
    } else {
        made.mutate(&message)
    }
}

/// Results and errors of the right shape for none of the shell's commands,
/// or of the right shape with values of the wrong type, size or sense
/// (`SESSION` is replaced as in [`EXTENSION_MESSAGES`]).
const HOSTILE_RESULTS: &[&str] = &[
    r#"null"#,
    r#"[]"#,
    r#""tabs""#,
    r#"{"tabs":null}"#,
    r#"{"tabs":{}}"#,
    r#"{"tabs":[null,7,"x",[]]}"#,
    r#"{"tabs":[{"tabId":"7"}]}"#,
    r#"{"tabs":[{"tabId":-1,"url":7,"title":null,"session":"SESSION","agentOpened":"yes"}]}"#,
    r#"{"tabs":[{"tabId":9223372036854775807,"url":"","session":"SESSION"}]}"#,
    r#"{"tabs":[{"tabId":7,"url":"http://127.0.0.1:9/","session":"SESSION","openerTabId":7,"agentOpened":true}]}"#,
    r#"{"tabs":[{"tabId":7,"session":"SESSION"},{"tabId":7,"session":"another"}]}"#,
    r#"{"product":7,"extensionVersion":null}"#,
    r#"{"answers":null}"#,
    r#"{"answers":[{"error":{"message":7}},{"error":null}]}"#,
    r#"{"tabId":"8"}"#,
    r#"{"tabId":-9223372036854775808}"#,
    r#"{"frameTree":{"frame":{"id":null}}}"#,
];

/// Errors the extension could answer, hostile in shape or in words.
const HOSTILE_ERRORS: &[&str] = &[
    r#"{"code":"x","message":null}"#,
    r#"{"code":-32000,"message":"CALL_CUT: "}"#,
    r#"{"code":-32000,"message":": "}"#,
    r#"{"code":-32000,"message":"INVALID_ARGUMENT: unknown method Extension.sendCommands"}"#,
    r#"{"code":-32000,"message":"TAB_NOT_FOUND: tab-7"}"#,
    r#"{"code":-32000,"message":"DEBUGGER_DETACHED: canceled_by_user","data":"\u0000"}"#,
    r#"{}"#,
];

/// An answer to the shell's command `id`: a message of the extension's
/// (hostile two times in three, see [`extension_message`]) in a third of
/// them, else a well-formed answer whose result or error is hostile.
fn extension_answer(made: &mut Cases, id: u64, session: &str) -> Vec<u8> {
    if made.below(3) == 0 {
        return extension_message(made, id, session);
    }
    let (field, values) = if made.below(3) == 0 {
        ("error", HOSTILE_ERRORS)
    } else {
        ("result", HOSTILE_RESULTS)
    };
    let value = values[made.below(values.len())].replace("SESSION", session);
    format!(r#"{{"id":{id},"{field}":{value}}}"#).into_bytes()
}

/// How one connection (or one native host) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The shell let it in; it answered this many of the shell's commands
    /// (for a native host: the shell's commands it passed on to Chrome).
    Welcomed { answered: usize },
    /// The shell refused it, saying why (or an HTTP error at the upgrade).
    Refused,
    /// It closed (or was closed) without a word from the shell.
    Closed,
}

/// What happened at one door.
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    welcomed: usize,
    /// The shell's commands answered by peers that got in.
    answered: usize,
    refused: usize,
    closed: usize,
    /// How long the door's cases took.
    took: Duration,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cases in {:.1} s: {} welcomed (answering {} of the shell's commands), {} refused, {} closed",
            self.cases,
            self.took.as_secs_f32(),
            self.welcomed,
            self.answered,
            self.refused,
            self.closed
        )
    }
}

impl Tally {
    /// The door's outcomes counted; a panic naming the first case that failed.
    fn of(door: &str, outcomes: Vec<Result<Outcome, String>>) -> Self {
        let mut tally = Self::default();
        for (case, outcome) in outcomes.into_iter().enumerate() {
            tally.cases += 1;
            let outcome = outcome.unwrap_or_else(|e| {
                panic!(
                    "{door}, case {case}: {e} (BROWSER_SHELL_FUZZ_SEED={} replays it)",
                    seed()
                )
            });
            match outcome {
                Outcome::Welcomed { answered } => {
                    tally.welcomed += 1;
                    tally.answered += answered;
                }
                Outcome::Refused => tally.refused += 1,
                Outcome::Closed => tally.closed += 1,
            }
        }
        tally
    }
}

// -- The native host's stdin ---------------------------------------------------

/// `message` in Chrome's framing, its length honest unless `lie`.
fn chrome_frame(made: &mut Cases, message: &[u8], lie: bool) -> Vec<u8> {
    let honest = u32::try_from(message.len()).unwrap();
    let length = if lie {
        match made.below(6) {
            0 => 0,
            1 => u32::MAX,
            // Just within and just past the host's limit (16 MiB).
            2 => 16 << 20,
            3 => (16 << 20) + 1,
            4 => honest + 1 + made.below(64) as u32,
            _ => made.below(message.len() + 1) as u32,
        }
    } else {
        honest
    };
    let mut frame = length.to_ne_bytes().to_vec();
    frame.extend_from_slice(message);
    frame
}

/// What one native host process is fed: the hello (hostile now and then,
/// unless `whole_hello`), then messages, one frame's length lying in a
/// third of them, the whole cut short in an eighth (after the hello, when
/// `whole_hello`). With it, where the hello's frame ends when it is whole
/// and honest (the rest goes once the host has had the shell's answer).
fn native_host_input(made: &mut Cases, whole_hello: bool) -> (Vec<u8>, Option<usize>) {
    let lie_at = (made.below(3) == 0)
        .then(|| made.below(FRAMES_PER_HOST))
        .filter(|at| !(whole_hello && *at == 0));
    let hello = if !whole_hello && made.below(3) == 0 {
        made.mutate(&native_hello())
    } else {
        native_hello().into_bytes()
    };
    let mut input = chrome_frame(made, &hello, lie_at == Some(0));
    let hello_end = (lie_at != Some(0)).then_some(input.len());
    for at in 1..FRAMES_PER_HOST {
        let message = extension_message(made, at as u64, "s1");
        input.extend(chrome_frame(made, &message, lie_at == Some(at)));
    }
    if made.below(8) == 0 {
        let kept = if whole_hello {
            hello_end.unwrap_or_default()
        } else {
            0
        };
        input.truncate(kept + made.below(input.len() - kept + 1));
    }
    let hello_end = hello_end.filter(|end| *end <= input.len());
    (input, hello_end)
}

/// The frames a native host wrote, each checked as Chrome reads it: a
/// native-endian length of at most 1 MB, then JSON.
fn chrome_frames(mut bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        let (head, rest) = bytes.split_at_checked(4).ok_or("a cut length")?;
        let length = u32::from_ne_bytes(head.try_into().unwrap()) as usize;
        if length > 1024 * 1024 {
            return Err(format!(
                "a frame of {length} bytes (Chrome takes 1 MB at most)"
            ));
        }
        let (frame, rest) = rest
            .split_at_checked(length)
            .ok_or_else(|| format!("a frame cut short of its {length} bytes"))?;
        frames.push(
            serde_json::from_slice(frame)
                .map_err(|e| format!("a frame that is not JSON ({e}): {frame:?}"))?,
        );
        bytes = rest;
    }
    Ok(frames)
}

/// Reads one frame's bytes as the host writes it (length, then that many
/// bytes) onto `out`, or what there is of it when the host ends first.
async fn read_raw_frame<R: tokio::io::AsyncRead + Unpin>(from: &mut R, out: &mut Vec<u8>) {
    let mut head = [0u8; 4];
    if from.read_exact(&mut head).await.is_err() {
        return;
    }
    out.extend_from_slice(&head);
    let length = u32::from_ne_bytes(head).min(1024 * 1024 + 1) as usize;
    let mut frame = vec![0u8; length];
    if from.read_exact(&mut frame).await.is_ok() {
        out.extend_from_slice(&frame);
    }
}

/// Runs the native host as Chrome does (`browser-shell <origin>`, or the
/// `native-host` command) in `setup`, feeds it `input` and closes its
/// stdin (or holds it open, feeding nothing, when `input` is `None`).
/// Whole and honest hellos go first, the rest once the host has written
/// its first frame (the shell's answer) or ended, so that the messages
/// meet the shell's commands. Checks that it ends within [`HOST_BOUND`],
/// without a panic, having written only Chrome's frames; returns those.
async fn run_native_host(
    setup: &Setup,
    args: &[String],
    input: Option<(Vec<u8>, Option<usize>)>,
) -> Result<Vec<Value>, String> {
    let mut child = setup
        .command(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let run = async {
        let mut out = Vec::new();
        let held = match input {
            Some((input, hello_end)) => {
                let split = hello_end.unwrap_or(input.len());
                // A host that stops reading fails the write: it is not the case's end.
                let _ = stdin.write_all(&input[..split]).await;
                if hello_end.is_some() {
                    read_raw_frame(&mut stdout, &mut out).await;
                }
                let rest = input[split..].to_vec();
                // Written aside: a host that stops reading must not stall the case.
                tokio::spawn(async move {
                    let _ = stdin.write_all(&rest).await;
                });
                None
            }
            None => Some(stdin),
        };
        let mut errors = Vec::new();
        let (_, _, status) = tokio::join!(
            stdout.read_to_end(&mut out),
            stderr.read_to_end(&mut errors),
            child.wait()
        );
        drop(held);
        (out, errors, status.unwrap())
    };
    let (out, errors, status) = tokio::time::timeout(HOST_BOUND, run)
        .await
        .map_err(|_| format!("the native host still runs after {HOST_BOUND:?}"))?;
    let errors = String::from_utf8_lossy(&errors);
    if status.code() == Some(101) || errors.contains("panicked") {
        return Err(format!("the native host panicked ({status}): {errors}"));
    }
    chrome_frames(&out).map_err(|e| format!("not Chrome's framing on stdout: {e}"))
}

/// One native host process, its stdin hostile. Started by the first
/// argument (as Chrome starts it) or by the `native-host` command in turn;
/// every eighth for another extension, its hello whole, which the shell
/// must refuse; the first with its hello whole, which the shell lets in
/// (unless the cap on connections is met).
async fn native_host_case(setup: &Setup, mut made: Cases, index: usize) -> Result<Outcome, String> {
    let other = index % 8 == 1;
    let origin = if other {
        OTHER_ORIGIN.to_owned()
    } else {
        extension_origin()
    };
    let args = if index.is_multiple_of(2) {
        vec![origin]
    } else {
        vec!["native-host".to_owned(), origin]
    };
    let input = native_host_input(&mut made, index == 0 || other);
    let frames = run_native_host(setup, &args, Some(input)).await?;
    let first = frames.first();
    let said = first.map(|first| first["type"].as_str());
    if other && said != Some(Some("refused")) {
        return Err(format!(
            "the host for another extension was not refused: {frames:?}"
        ));
    }
    match said {
        None => Ok(Outcome::Closed),
        Some(Some("welcome")) => Ok(Outcome::Welcomed {
            answered: frames.iter().filter(|frame| frame["id"].is_u64()).count(),
        }),
        Some(Some("refused")) => Ok(Outcome::Refused),
        Some(_) => Err(format!(
            "the host's first frame is neither welcome nor refused: {frames:?}"
        )),
    }
}

// -- The private socket and the paired WebSocket ---------------------------------

/// One connection to the bridge, through either door a peer dials.
enum Peer {
    /// The private socket: NUL-terminated messages.
    Socket {
        reader: tokio::io::BufReader<tokio::net::unix::OwnedReadHalf>,
        writer: tokio::net::unix::OwnedWriteHalf,
    },
    /// The paired WebSocket: one message per WebSocket message.
    Paired(Box<WebSocketStream<tokio::net::TcpStream>>),
}

impl Peer {
    /// The next message from the shell; `None` once it closed.
    async fn next(&mut self) -> Option<Vec<u8>> {
        match self {
            Self::Socket { reader, .. } => {
                let mut message = Vec::new();
                let read = reader.read_until(0, &mut message).await.ok()?;
                if read == 0 {
                    return None;
                }
                if message.last() == Some(&0) {
                    message.pop();
                }
                Some(message)
            }
            Self::Paired(socket) => loop {
                match socket.next().await? {
                    Ok(Message::Text(text)) => return Some(text.as_bytes().to_vec()),
                    Ok(Message::Binary(bytes)) => return Some(bytes.to_vec()),
                    Ok(Message::Close(_)) | Err(_) => return None,
                    Ok(_) => {}
                }
            },
        }
    }

    /// The shell's next message as JSON (an error when it is not);
    /// `None` once it closed.
    async fn next_json(&mut self) -> Result<Option<Value>, String> {
        let Some(message) = self.next().await else {
            return Ok(None);
        };
        serde_json::from_slice(&message).map(Some).map_err(|e| {
            format!(
                "the shell said what is not JSON ({e}): {}",
                String::from_utf8_lossy(&message)
            )
        })
    }

    /// Sends one message (on the WebSocket as text when it is UTF-8);
    /// false once the shell closed.
    async fn send(&mut self, mut message: Vec<u8>) -> bool {
        match self {
            Self::Socket { writer, .. } => {
                message.push(0);
                writer.write_all(&message).await.is_ok()
            }
            Self::Paired(socket) => {
                let message = match String::from_utf8(message) {
                    Ok(text) => Message::text(text),
                    Err(bytes) => Message::binary(bytes.into_bytes()),
                };
                socket.send(message).await.is_ok()
            }
        }
    }
}

/// How a peer that got in goes on: it answers the shell's commands
/// ([`extension_answer`], an event now and then before the answer)
/// until it has answered [`ANSWERS_PER_PEER`] or the shell asks nothing
/// for [`QUIET`]. How many it answered; an error when the shell sends
/// what is not a command.
async fn answer_as_extension(
    peer: &mut Peer,
    made: &mut Cases,
    welcome: &Value,
) -> Result<usize, String> {
    let session = welcome["sessions"][0]["id"].as_str().unwrap_or("s1");
    let mut answered = 0;
    while answered < ANSWERS_PER_PEER {
        let Ok(next) = tokio::time::timeout(QUIET, peer.next_json()).await else {
            break;
        };
        let Some(command) = next? else { break };
        let (Some(id), Some(_)) = (command["id"].as_u64(), command["method"].as_str()) else {
            return Err(format!("the shell sent what is not a command: {command}"));
        };
        if made.below(4) == 0 && !peer.send(extension_message(made, 0, session)).await {
            break;
        }
        if !peer.send(extension_answer(made, id, session)).await {
            break;
        }
        answered += 1;
    }
    Ok(answered)
}

/// The shell's first word to a peer: welcome or refused (or nothing).
fn first_word(said: Option<&Value>) -> Result<Option<&'static str>, String> {
    let Some(said) = said else { return Ok(None) };
    match said["type"].as_str() {
        Some("welcome") => Ok(Some("welcome")),
        Some("refused") if said["reason"].is_string() => Ok(Some("refused")),
        _ => Err(format!(
            "the shell's first word is neither welcome nor refused: {said}"
        )),
    }
}

/// One connection to the bridge owner's private socket, as a native host
/// (or anything else the user runs) makes it: a hello (hostile now and
/// then, or never finished), messages, and answers to what the shell asks
/// once it is in. An error when it was neither closed nor answered within
/// [`HANDSHAKE_BOUND`], or the shell said what it should not.
async fn socket_case(
    socket: &std::path::Path,
    mut made: Cases,
    index: usize,
) -> Result<Outcome, String> {
    let exchange = async {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let (reader, writer) = stream.into_split();
        let mut peer = Peer::Socket {
            reader: tokio::io::BufReader::new(reader),
            writer,
        };
        // The first hello is the host's own; every sixteenth names another
        // extension; the others are the host's own or hostile, by halves.
        let hello = if index % 16 == 1 {
            socket_hello()
                .replace(&extension_origin(), OTHER_ORIGIN)
                .into_bytes()
        } else if index == 0 || made.below(2) == 0 {
            socket_hello().into_bytes()
        } else {
            made.mutate(&socket_hello())
        };
        // A hello that never ends (no NUL) now and then: the shell's bound
        // for the hello ends it.
        let mut sent = hello.clone();
        if index == 0 || made.below(40) != 0 {
            sent.push(0);
        }
        for id in 0..made.below(6) {
            sent.extend(extension_message(&mut made, id as u64 + 1000, "s1"));
            sent.push(0);
        }
        if let Peer::Socket { writer, .. } = &mut peer {
            let _ = writer.write_all(&sent).await;
            if made.below(4) == 0 {
                let _ = writer.shutdown().await;
            }
        }
        let said = peer.next_json().await?;
        match first_word(said.as_ref())? {
            None => Ok(Outcome::Closed),
            Some("welcome") => {
                if !names_the_extension(&hello) {
                    return Err(format!(
                        "let in on a hello that names no browser-shell extension: {}",
                        String::from_utf8_lossy(&hello)
                    ));
                }
                let welcome = said.unwrap_or_default();
                let answered = answer_as_extension(&mut peer, &mut made, &welcome).await?;
                Ok(Outcome::Welcomed { answered })
            }
            Some(_) => Ok(Outcome::Refused),
        }
    };
    tokio::time::timeout(HANDSHAKE_BOUND, exchange)
        .await
        .map_err(|_| format!("neither closed nor answered within {HANDSHAKE_BOUND:?}"))?
}

/// Whether `hello` is a native hello whose origin is the browser-shell
/// extension's (the only one the shell may let in on its socket).
fn names_the_extension(hello: &[u8]) -> bool {
    serde_json::from_slice::<Value>(hello)
        .ok()
        .and_then(|hello| {
            let origin = hello["origin"].as_str()?.to_owned();
            let id = origin.strip_prefix("chrome-extension://")?;
            Some(id.trim_end_matches('/') == EXTENSION_ID)
        })
        .unwrap_or(false)
}

/// The upgrade the extension's WebSocket sends to the paired port, made
/// hostile now and then: another path, `Host`, or `Origin` (a web page,
/// another extension), or mutated bytes.
fn paired_upgrade(made: &mut Cases, port: u16) -> Vec<u8> {
    let mut path = "/extension".to_owned();
    let mut host = format!("127.0.0.1:{port}");
    let mut origin = format!("chrome-extension://{EXTENSION_ID}");
    match made.below(16) {
        0 => path = "/json/version".into(),
        1 => host = format!("evil.example:{port}"),
        2 => origin = "https://evil.example".into(),
        3 => origin = OTHER_ORIGIN.trim_end_matches('/').into(),
        _ => {}
    }
    let request = upgrade_request(&path, &host, &origin);
    if made.below(16) == 0 {
        made.mutate(&request)
    } else {
        request.into_bytes()
    }
}

/// The upgrade the extension's WebSocket sends to the paired port.
fn faithful_upgrade(port: u16) -> Vec<u8> {
    upgrade_request(
        "/extension",
        &format!("127.0.0.1:{port}"),
        &format!("chrome-extension://{EXTENSION_ID}"),
    )
    .into_bytes()
}

/// A WebSocket upgrade request from `origin`.
fn upgrade_request(path: &str, host: &str, origin: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// The status of the HTTP response the shell wrote, read to the end of
/// its head (byte by byte, so nothing past it is taken from the WebSocket);
/// `None` when the shell closed first.
async fn response_status(stream: &mut tokio::net::TcpStream) -> Option<u16> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        if stream.read(&mut byte).await.ok()? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    text.split_whitespace().nth(1)?.parse().ok()
}

/// A client's (masked) WebSocket text frame carrying `payload`.
fn masked_frame(made: &mut Cases, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x81];
    let length = payload.len();
    if length < 126 {
        frame.push(0x80 | length as u8);
    } else if let Ok(length) = u16::try_from(length) {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&length.to_be_bytes());
    } else {
        frame.push(0x80 | 127);
        frame.extend_from_slice(&(length as u64).to_be_bytes());
    }
    let mask = (made.next() as u32).to_be_bytes();
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

/// Hostile bytes where the hello's WebSocket frame goes: flipped bits, an
/// unmasked frame, a length past any limit, a reserved opcode, a fragment
/// never finished, or random bytes.
fn hostile_frames(made: &mut Cases, hello: &str) -> Vec<u8> {
    let mut frame = masked_frame(made, hello.as_bytes());
    match made.below(6) {
        0 => {
            for _ in 0..=made.below(4) {
                let at = made.below(frame.len());
                frame[at] ^= 1 << made.below(8);
            }
        }
        1 => frame[1] &= 0x7f,
        2 => {
            frame.truncate(1);
            frame.push(0x80 | 127);
            frame.extend_from_slice(&u64::MAX.to_be_bytes());
        }
        3 => frame[0] = 0x83,
        4 => frame[0] = 0x01,
        _ => frame = (0..made.below(256)).map(|_| made.next() as u8).collect(),
    }
    frame
}

/// A fresh nonce: 256 bits of lowercase hex.
fn fresh_nonce(made: &mut Cases) -> String {
    (0..4).map(|_| format!("{:016x}", made.next())).collect()
}

/// The proof an extension paired with `secret` gives for its hello's
/// `nonce` and the shell's `server_nonce`.
fn client_proof(secret: &[u8], nonce: &str, server_nonce: &str) -> String {
    protocol::proof(
        secret,
        &protocol::proof_text(ProofRole::Client, EXTENSION_ID, nonce, server_nonce),
    )
}

/// One connection to the paired WebSocket: a raw TCP upgrade (hostile now
/// and then), hostile frames or a hello with a fresh nonce (mutated,
/// replayed, binary, or never sent now and then), then the right proof in
/// half the cases and a hostile one otherwise, and answers to what the
/// shell asks once it is in. The shell's challenge, when the hello was
/// the extension's own, must prove the pairing's secret. An error when
/// the connection was neither closed nor answered within
/// [`HANDSHAKE_BOUND`], or the shell said what it should not.
async fn paired_case(
    port: u16,
    secret: &[u8],
    mut made: Cases,
    index: usize,
) -> Result<Outcome, String> {
    // The first case is the extension's own throughout; every sixteenth
    // is, but for its proof (the shell's own, sent back).
    let faithful = index == 0;
    let proof_sent_back = index % 16 == 1;
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let upgrade = if faithful || proof_sent_back {
            faithful_upgrade(port)
        } else {
            paired_upgrade(&mut made, port)
        };
        if stream.write_all(&upgrade).await.is_err() {
            return Ok(Outcome::Closed);
        }
        match response_status(&mut stream).await {
            None => return Ok(Outcome::Closed),
            Some(101) => {}
            Some(_) => return Ok(Outcome::Refused),
        }
        let nonce = if !faithful && !proof_sent_back && made.below(12) == 0 {
            REPLAYED_NONCE.to_owned()
        } else {
            fresh_nonce(&mut made)
        };
        let hello = paired_hello(&nonce);
        let raw = !faithful && !proof_sent_back && made.below(12) == 0;
        if raw {
            let frames = hostile_frames(&mut made, &hello);
            if stream.write_all(&frames).await.is_err() {
                return Ok(Outcome::Closed);
            }
        }
        let socket = WebSocketStream::from_raw_socket(stream, WebSocketRole::Client, None).await;
        let mut peer = Peer::Paired(Box::new(socket));
        let own_hello = faithful || proof_sent_back || (!raw && made.below(4) != 0);
        if own_hello || (!raw && made.below(40) != 0) {
            let sent = if own_hello {
                hello.into_bytes()
            } else {
                made.mutate(&hello)
            };
            if !own_hello && made.below(12) == 0 {
                // A binary frame, which the handshake does not take.
                if let Peer::Paired(socket) = &mut peer {
                    let _ = socket.send(Message::binary(sent)).await;
                }
            } else {
                peer.send(sent).await;
            }
        }
        let Some(said) = peer.next_json().await? else {
            return Ok(Outcome::Closed);
        };
        match said["type"].as_str() {
            Some("refused") => return Ok(Outcome::Refused),
            Some("challenge") if raw => return Ok(Outcome::Closed),
            Some("challenge") => {}
            _ => return Err(format!("the shell's first word is not a challenge: {said}")),
        }
        let server_nonce = said["nonce"].as_str().unwrap_or_default().to_owned();
        if own_hello {
            let text = protocol::proof_text(ProofRole::Server, EXTENSION_ID, &nonce, &server_nonce);
            if !protocol::verify(secret, &text, said["proof"].as_str().unwrap_or_default()) {
                return Err(format!(
                    "the shell's challenge does not prove the secret: {said}"
                ));
            }
        }
        let right = json!({"type": "proof", "proof": client_proof(secret, &nonce, &server_nonce)})
            .to_string();
        let sent_back = json!({"type": "proof", "proof": said["proof"]}).to_string();
        let proof = match made.below(8) {
            _ if faithful => right.clone().into_bytes(),
            _ if proof_sent_back => sent_back.into_bytes(),
            0..=3 => right.clone().into_bytes(),
            4 => made.mutate(&right),
            5 => sent_back.into_bytes(),
            6 => right.replace("\"proof\":\"", "\"proof\":\"A").into_bytes(),
            _ => extension_message(&mut made, 1, "s1"),
        };
        let proved = proof == right.as_bytes();
        if !peer.send(proof).await {
            return Ok(Outcome::Closed);
        }
        let said = peer.next_json().await?;
        match first_word(said.as_ref())? {
            None => Ok(Outcome::Closed),
            Some("welcome") if !proved => Err(format!("let in without the right proof: {said:?}")),
            Some("welcome") => {
                let welcome = said.unwrap_or_default();
                let answered = answer_as_extension(&mut peer, &mut made, &welcome).await?;
                Ok(Outcome::Welcomed { answered })
            }
            Some(_) => Ok(Outcome::Refused),
        }
    };
    tokio::time::timeout(HANDSHAKE_BOUND, exchange)
        .await
        .map_err(|_| format!("neither closed nor answered within {HANDSHAKE_BOUND:?}"))?
}

/// An agent calling `browser_list_tabs` until `done`, each call answered
/// within [`CALL_BOUND`] with the tabs or an error with a code; how many
/// answered what (`ok`, or the code), and the longest call.
async fn agent_calls(
    agent: &mut Client,
    done: &CancellationToken,
) -> (std::collections::BTreeMap<String, usize>, Duration) {
    let mut answers = std::collections::BTreeMap::new();
    let mut longest = Duration::ZERO;
    while !done.is_cancelled() {
        let started = std::time::Instant::now();
        let (text, is_error, result) = agent.call_result("browser_list_tabs", json!({})).await;
        let took = started.elapsed();
        assert!(took < CALL_BOUND, "a call took {took:?}: {text}");
        longest = longest.max(took);
        let code = if is_error {
            let code = result["structuredContent"]["error"]["code"]
                .as_str()
                .unwrap_or_default();
            assert!(!code.is_empty(), "an error without a code: {result}");
            code.to_owned()
        } else {
            "ok".to_owned()
        };
        *answers.entry(code).or_default() += 1;
        // Paced as `Client::call_until` polls: a NOT_CONNECTED answer
        // comes at once, and calls back to back would load the shell the
        // cases are feeding.
        tokio::select! {
            () = done.cancelled() => {}
            () = tokio::time::sleep(browser_testkit::mcp_stdio::POLL) => {}
        }
    }
    (answers, longest)
}

/// A faithful extension behind `peer` after its welcome: answers every
/// command as `background.js` does for a Chrome with no shared tabs;
/// counts the `Extension.listTabs` it answered in `listed`.
async fn serve_faithfully(mut peer: Peer, listed: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    while let Ok(Some(command)) = peer.next_json().await {
        let Some(id) = command["id"].as_u64() else {
            continue;
        };
        let result = match command["method"].as_str().unwrap_or_default() {
            "Extension.getVersion" => {
                json!({"product": "Chrome/131.0.6778.85", "extensionVersion": "0.1.0"})
            }
            "Extension.listTabs" => {
                listed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                json!({"tabs": []})
            }
            _ => json!({}),
        };
        let answer = json!({"id": id, "result": result}).to_string();
        if !peer.send(answer.into_bytes()).await {
            return;
        }
    }
}

/// The door's cases, [`AT_ONCE`] at a time (a slow one holds up no
/// other), counted.
async fn run_cases<F, Fut>(door: &str, count: usize, seed: u64, case: F) -> Tally
where
    F: Fn(Cases, usize) -> Fut,
    Fut: std::future::Future<Output = Result<Outcome, String>>,
{
    let started = std::time::Instant::now();
    let mut seeds = Cases(seed);
    let cases: Vec<(Cases, usize)> = (0..count).map(|i| (Cases(seeds.next() | 1), i)).collect();
    let case = &case;
    let mut outcomes = futures_util::stream::iter(cases)
        .map(|(made, index)| async move { (index, case(made, index).await) })
        .buffer_unordered(AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    outcomes.sort_by_key(|(index, _)| *index);
    let outcomes = outcomes.into_iter().map(|(_, outcome)| outcome).collect();
    Tally {
        took: started.elapsed(),
        ..Tally::of(door, outcomes)
    }
}

/// Says what the cases did (each door's counts and time), for the person
/// running the tests (`--nocapture`).
#[allow(clippy::print_stderr)]
fn report(text: &str) {
    eprintln!("{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extension_bridge_s_doors_take_any_input_and_go_on() {
    let started = std::time::Instant::now();
    let setup = Setup::new().await;
    let mut agent = setup.spawn_mcp();
    // Its log is read as it comes (a full pipe would stall the shell) and
    // searched for a panic at the end.
    let mut log = agent.child.stderr.take().unwrap();
    let logged = tokio::spawn(async move {
        let mut text = Vec::new();
        let _ = log.read_to_end(&mut text).await;
        String::from_utf8_lossy(&text).into_owned()
    });
    agent.initialize().await;
    let socket = setup.runtime.join("extension.sock");
    // It holds the bridge once it recorded it (after both listeners).
    let port = bounded::first_some(ANSWER_BOUND, || async {
        let record = std::fs::read_to_string(setup.record_file()).ok()?;
        let record: Value = serde_json::from_str(&record).ok()?;
        socket.exists().then_some(())?;
        record["bridge_port"].as_u64()
    })
    .await
    .expect("the shell holds the bridge within its bound");
    assert_eq!(port, u64::from(setup.port));
    let secret = Pairing::load(&pairing_file(setup.config.path()))
        .unwrap()
        .expect("the setup's pairing")
        .secret();
    // Nothing connected yet: the agent's call says so (and its session is
    // open from now on, so welcomes name it).
    let (text, is_error) = agent.call("browser_list_tabs", json!({})).await;
    assert!(is_error && text.contains("NOT_CONNECTED"), "{text}");

    let done = CancellationToken::new();
    let doors = async {
        // At least the extension's own host and one for another extension.
        let host_processes = cases().div_ceil(FRAMES_PER_HOST).max(2);
        let silent_chrome = [extension_origin()];
        let (native, held) = tokio::join!(
            run_cases(
                "native host",
                host_processes,
                seed() ^ 0x4e47,
                |made, index| { native_host_case(&setup, made, index) }
            ),
            // A host whose Chrome never says hello: it gives up on its own.
            run_native_host(&setup, &silent_chrome, None),
        );
        let held = held.unwrap_or_else(|e| panic!("a host fed nothing: {e}"));
        assert!(held.is_empty(), "a host fed nothing wrote {held:?}");
        let socket_door = run_cases("extension.sock", cases(), seed() ^ 0x50c4, |made, index| {
            socket_case(&socket, made, index)
        })
        .await;
        let paired = run_cases(
            "paired WebSocket",
            cases(),
            seed() ^ 0x9a12,
            |made, index| paired_case(setup.port, &secret, made, index),
        )
        .await;
        done.cancel();
        (native, socket_door, paired)
    };
    let ((native, socket_door, paired), calls) =
        tokio::join!(doors, agent_calls(&mut agent, &done));
    let (calls, longest_call) = calls;
    report(&format!(
        "native host stdin: {native}\nextension.sock:    {socket_door}\npaired WebSocket:  {paired}\n\
         agent calls meanwhile: {calls:?}, the longest in {longest_call:.1?}"
    ));
    for (door, tally) in [
        ("native host", &native),
        ("extension.sock", &socket_door),
        ("paired WebSocket", &paired),
    ] {
        assert!(
            tally.welcomed > 0 && tally.refused > 0,
            "{door}: some cases are let in and some refused: {tally:?}"
        );
    }
    assert!(
        socket_door.answered > 0 && paired.answered > 0,
        "hostile answers reached the shell's commands: {socket_door:?} {paired:?}"
    );

    // Still serving: alive, saying why nothing is connected…
    assert!(
        agent.child.try_wait().unwrap().is_none(),
        "the shell exited"
    );
    let text = agent
        .call_until(
            "browser_list_tabs",
            &json!({}),
            ANSWER_BOUND,
            |text, is_error| is_error && text.contains("NOT_CONNECTED"),
        )
        .await;
    assert!(text.contains("NOT_CONNECTED"), "{text}");
    // …letting the extension in through native messaging…
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let (reader, writer) = stream.into_split();
    let mut native_peer = Peer::Socket {
        reader: tokio::io::BufReader::new(reader),
        writer,
    };
    assert!(native_peer.send(socket_hello().into_bytes()).await);
    let welcome = tokio::time::timeout(ANSWER_BOUND, native_peer.next_json())
        .await
        .expect("the native hello is answered in time")
        .unwrap()
        .expect("the shell answers the native hello");
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    drop(native_peer);
    // …and through the paired WebSocket, whose extension then serves an agent's call.
    let mut made = Cases(seed());
    let nonce = fresh_nonce(&mut made);
    let mut request = format!("ws://127.0.0.1:{}/extension", setup.port)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "Origin",
        extension_origin().trim_end_matches('/').parse().unwrap(),
    );
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", setup.port))
        .await
        .unwrap();
    let (websocket, _) = tokio::time::timeout(
        ANSWER_BOUND,
        tokio_tungstenite::client_async(request, stream),
    )
    .await
    .expect("the upgrade is answered in time")
    .expect("the paired WebSocket lets the extension in");
    let mut paired_peer = Peer::Paired(Box::new(websocket));
    assert!(paired_peer.send(paired_hello(&nonce).into_bytes()).await);
    let challenge = paired_peer.next_json().await.unwrap().expect("a challenge");
    assert_eq!(challenge["type"], "challenge", "{challenge}");
    let proof = client_proof(&secret, &nonce, challenge["nonce"].as_str().unwrap());
    assert!(
        paired_peer
            .send(
                json!({"type": "proof", "proof": proof})
                    .to_string()
                    .into_bytes()
            )
            .await
    );
    let welcome = paired_peer.next_json().await.unwrap().expect("a welcome");
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    let listed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let serving = tokio::spawn(serve_faithfully(paired_peer, listed.clone()));
    agent
        .call_until(
            "browser_list_tabs",
            &json!({}),
            ANSWER_BOUND,
            |text, is_error| {
                assert!(!is_error || text.contains("NOT_CONNECTED"), "{text}");
                !is_error
            },
        )
        .await;
    // Once as it connected, once for the call.
    assert!(listed.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    serving.abort();

    agent.finish().await;
    let log = logged.await.unwrap();
    assert!(!log.contains("panicked"), "the shell panicked: {log}");
    report(&format!(
        "the bridge's doors took {:.1?}",
        started.elapsed()
    ));
}
