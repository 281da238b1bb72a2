//! Helpers shared by the shell's integration tests: the shell and relay
//! started as the real binary, a raw HTTP/1.1 MCP client (so the tests see
//! exactly the headers that go over the wire), a virtual display. What the
//! provider's tests and the benchmarks share too (bounded waits, the
//! fixture server, the MCP stdio client, the person's Chrome, the browser
//! pool) is in the test kit, `browser_testkit`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub use browser_testkit::bounded;

pub mod display;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A private runtime directory for one test's instances, so tests never
/// find each other's (or a developer's) running instance.
/// The records of the instances running with runtime directory `runtime`
/// (`instances/<pid>.json`), newest last.
#[allow(dead_code)]
pub fn instance_records(runtime: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(runtime.join("instances")) else {
        return Vec::new();
    };
    let mut records: Vec<Value> = entries
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "json"))
        .filter_map(|entry| serde_json::from_str(&std::fs::read_to_string(entry.path()).ok()?).ok())
        .collect();
    records.sort_by_key(|record| record["started_ms"].as_u64().unwrap_or_default());
    records
}

pub fn runtime_dir() -> std::path::PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(remove_dirs_of_finished_runs);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("{RUNTIME_DIR_PREFIX}{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    dir
}

const RUNTIME_DIR_PREFIX: &str = "browser-shell-test-";

/// Removes the runtime directories (profiles included) of test processes
/// that have ended, so that test runs do not pile up in the temp directory.
/// A test's directory outlives the test: the shell it started may still be
/// shutting down when the test returns.
fn remove_dirs_of_finished_runs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(RUNTIME_DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A `browser-shell` a test started. A test that drops it without
/// [`stop_shell`] (or panics) still stops it in order, with SIGTERM as a
/// service manager would: it closes its browser and removes its temporary
/// profile (killed, it could not). Killed if it has not exited in 10 s.
#[derive(Debug)]
pub struct Shell(tokio::process::Child);

impl From<tokio::process::Child> for Shell {
    fn from(child: tokio::process::Child) -> Self {
        Self(child)
    }
}

impl std::ops::Deref for Shell {
    type Target = tokio::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Shell {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let Some(pid) = self.0.id() else { return };
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        // SAFETY: signalling the child we started (not yet reaped).
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        if !bounded::has_ended_within(pid as i32, Duration::from_secs(10)) {
            let _ = self.0.start_kill();
        }
    }
}

/// Starts `browser-shell` with `args` and returns it with the first
/// `lines` lines it prints (links, tokens), each read within a bound.
pub async fn start_shell(args: &[&str], lines: usize) -> (Shell, Vec<String>) {
    start_shell_in(&runtime_dir(), args, lines).await
}

/// [`start_shell`] with `runtime` as its runtime directory, so other
/// processes of the test can find it.
pub async fn start_shell_in(runtime: &Path, args: &[&str], lines: usize) -> (Shell, Vec<String>) {
    start_shell_on_display(runtime, None, args, lines).await
}

/// [`start_shell_in`] on X display `display` (such as `:5`); with `None`,
/// without any display (so it never opens a window).
pub async fn start_shell_on_display(
    runtime: &Path,
    display: Option<&str>,
    args: &[&str],
    lines: usize,
) -> (Shell, Vec<String>) {
    start_shell_with_env(runtime, display, &[], args, lines).await
}

/// [`start_shell_on_display`] with `env` added to its environment (a
/// team's shared token, say).
pub async fn start_shell_with_env(
    runtime: &Path,
    display: Option<&str>,
    env: &[(&str, &str)],
    args: &[&str],
    lines: usize,
) -> (Shell, Vec<String>) {
    use tokio::io::AsyncBufReadExt;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"));
    command.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    command.envs(env.iter().copied());
    if let Some(display) = display {
        command
            .env("DISPLAY", display)
            .env("WEBKIT_DISABLE_DMABUF_RENDERER", "1");
    }
    let mut child = command
        .args(args)
        .env("BROWSER_SHELL_RUNTIME_DIR", runtime)
        // Kept data (the desktop's profile) stays in the test's directory.
        .env("XDG_DATA_HOME", runtime.join("data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut reader = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    for _ in 0..lines {
        let line = tokio::time::timeout(Duration::from_secs(60), reader.next_line())
            .await
            .expect("the shell prints its links within 60 s")
            .unwrap()
            .expect("the shell is running");
        printed.push(line);
    }
    (Shell(child), printed)
}

/// Sends SIGTERM to a shell we started and checks that it shuts down in
/// order and exits cleanly, within a bound.
pub async fn stop_shell(mut shell: Shell) {
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(shell.id().unwrap() as i32, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(30), shell.wait())
        .await
        .expect("exits on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// Waits until process `pid` has exited, at most `within`; true if it has.
/// Event-driven: a pidfd becomes readable when the process ends.
pub async fn wait_for_exit(pid: u32, within: Duration) -> bool {
    tokio::task::spawn_blocking(move || bounded::has_ended_within(pid as i32, within))
        .await
        .unwrap()
}

/// Sends one GET and returns (status, body).
pub async fn get(host: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let (status, _, body) = get_with_head(host, path, headers).await;
    (status, body)
}

/// Sends one GET and returns (status, the response head in lower case, body).
pub async fn get_with_head(
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(host).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {host}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_ascii_lowercase(), body.to_owned())
}

pub struct Endpoint {
    pub host: String,
    pub path: String,
    pub token: String,
}

impl Endpoint {
    /// The MCP endpoint of the relay whose viewer link (the first line it
    /// prints: `http://HOST/?token=TOKEN`) is `link`.
    pub fn of_viewer_link(link: &str) -> Self {
        let host = link
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let token = link.split("token=").nth(1).unwrap().to_owned();
        Self {
            host,
            path: "/mcp".into(),
            token,
        }
    }
}

/// Starts `browser-shell relay` with `extra` arguments in a runtime
/// directory of its own, reading the first `lines` lines it prints;
/// returns it, its MCP endpoint and those lines.
pub async fn start_relay(extra: &[&str], lines: usize) -> (Shell, Endpoint, Vec<String>) {
    let mut args = vec!["relay"];
    args.extend_from_slice(extra);
    let (relay, printed) = start_shell_in(&runtime_dir(), &args, lines).await;
    let endpoint = Endpoint::of_viewer_link(&printed[0]);
    (relay, endpoint, printed)
}

/// The CDP endpoint a relay started with `--cdp-endpoint` prints on a line
/// of its own (its fourth).
pub fn cdp_endpoint_url(printed: &[String]) -> String {
    printed[3]
        .strip_prefix("CDP endpoint: ")
        .expect("the endpoint on a line of its own")
        .to_owned()
}

/// Sends one POST and returns (status, headers, body).
pub async fn post(
    endpoint: &Endpoint,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, String, String) {
    post_text(endpoint, headers, &body.to_string()).await
}

/// Sends one POST with any body, JSON or not.
pub async fn post_text(
    endpoint: &Endpoint,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(&endpoint.host).await.unwrap();
    let mut request = format!(
        "POST {} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        endpoint.path,
        body.len()
    );
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {}\r\n", endpoint.host));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
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
pub fn message_with_id(body: &str, id: u64) -> Value {
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

/// Ends MCP session `session` at `endpoint` the way a client does (HTTP
/// DELETE); returns the status.
pub async fn delete_session(endpoint: &Endpoint, session: &str) -> u16 {
    let mut stream = TcpStream::connect(&endpoint.host).await.unwrap();
    let request = format!(
        "DELETE {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nMcp-Session-Id: {}\r\nConnection: close\r\n\r\n",
        endpoint.path, endpoint.host, endpoint.token, session
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    text.split_whitespace().nth(1).unwrap().parse().unwrap()
}

pub struct Agent<'a> {
    endpoint: &'a Endpoint,
    session: String,
    next_id: u64,
    /// What the server told the model when it connected.
    pub instructions: String,
}

impl<'a> Agent<'a> {
    pub async fn connect(endpoint: &'a Endpoint) -> Agent<'a> {
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
        let result = &message_with_id(&body, 1)["result"];
        assert_eq!(result["serverInfo"]["name"], "browser-shell");
        let agent = Agent {
            endpoint,
            session,
            next_id: 2,
            instructions: result["instructions"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
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

    /// The MCP session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Ends the MCP session the way a client does (HTTP DELETE); returns the status.
    pub async fn disconnect(self) -> u16 {
        delete_session(self.endpoint, &self.session).await
    }

    pub async fn call(&mut self, name: &str, arguments: Value) -> (String, bool) {
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

/// `GET /status` of a running shell, waiting (bounded, no polling) until
/// `accept` holds: each request returns when the status has changed since
/// the generation the last one saw, or after 2 s (figures such as the task
/// count change without a new generation).
pub async fn status_until(endpoint: &Endpoint, accept: impl Fn(&Value) -> bool) -> Value {
    try_status_until(endpoint, accept)
        .await
        .unwrap_or_else(|last| panic!("the status never got there; last: {last}"))
}

/// As [`status_until`], but gives the last status seen when it never got
/// there within 60 s, for a test to explain.
pub async fn try_status_until(
    endpoint: &Endpoint,
    accept: impl Fn(&Value) -> bool,
) -> Result<Value, Value> {
    let auth = format!("Bearer {}", endpoint.token);
    let mut after: Option<u64> = None;
    let mut last = Value::Null;
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let path = match after {
                Some(generation) => format!("/status?after={generation}&waitMs=2000"),
                None => "/status".to_owned(),
            };
            let (code, body) = get(&endpoint.host, &path, &[("Authorization", &auth)]).await;
            assert_eq!(code, 200, "{body}");
            // The body comes chunked: the JSON object is between the chunk sizes.
            let now: Value =
                serde_json::from_str(&body[body.find('{').unwrap()..=body.rfind('}').unwrap()])
                    .unwrap();
            if accept(&now) {
                return now;
            }
            after = now["generation"].as_u64();
            last = now;
        }
    })
    .await;
    waited.map_err(|_| last)
}

/// A self-signed certificate for 127.0.0.1 and its key (PEM files in
/// `dir`), made by openssl, for TLS relays in tests.
pub fn certificate_in(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    (cert, key)
}
