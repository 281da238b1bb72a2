//! Screenshot through MCP, next to the raw capture.
//!
//! Run: `cargo bench -p browser-shell --bench screenshot` (add `-- --quick`
//! for fewer rounds, `-- --rounds N` for a number of your own). An agent's
//! view, two ways: `browser-shell mcp` spawned and driven over stdio with
//! raw JSON-RPC, and `browser-shell relay` (people may watch: the activity
//! timeline runs) driven over MCP's streamable HTTP by rmcp's client. Each
//! round a `browser_screenshot` (viewport PNG) of `fixtures/article.html`
//! is timed from sending the request to holding the image's bytes (the
//! answer parsed, its base64 decoded). The floor: this process launches
//! the same Chromium over a pipe, shows the same page, and times a bare
//! `Page.captureScreenshot` to the same point (the answer parsed, its
//! base64 decoded). Rounds alternate between the three so all meet the
//! same machine. Prints p50/p95 in ms, the bytes of each
//! answer, and each way's cost over the floor. `BROWSER_SHELL_BIN`
//! names another shell binary to measure (such as a debug build).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use browser_provider::host::{ChromiumHost, LaunchOptions, ViewHost};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::provider::bare::bare_page_at;
use browser_testkit::stats::{ms, percentile};

/// `browser-shell mcp` on stdio, as an agent's client drives it.
struct Shell {
    child: tokio::process::Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    runtime: std::path::PathBuf,
}

impl Shell {
    async fn start() -> Self {
        let runtime = runtime_dir("stdio");
        let mut child = tokio::process::Command::new(shell_binary())
            .arg("mcp")
            .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut shell = Self {
            child,
            stdin,
            lines,
            next_id: 1,
            runtime,
        };
        shell
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "screenshot-bench", "version": "1"}}),
            )
            .await;
        shell
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        shell
    }

    async fn send(&mut self, message: &Value) {
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// Sends a request; returns its answer, parsed, and its size in bytes.
    async fn request(&mut self, method: &str, params: Value) -> (Value, usize) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the server answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message["error"].is_null(), "{message}");
                return (message, line.len());
            }
        }
    }

    /// Calls a tool; returns its result and the answer's size in bytes.
    async fn call(&mut self, name: &str, arguments: Value) -> (Value, usize) {
        let (answer, size) = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        let result = answer["result"].clone();
        assert!(result["isError"] != json!(true), "{result}");
        (result, size)
    }

    async fn stop(self) {
        let Self {
            mut child,
            stdin,
            runtime,
            ..
        } = self;
        drop(stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        let _ = std::fs::remove_dir_all(&runtime);
    }
}

/// A fresh runtime directory of our own for a shell.
fn runtime_dir(kind: &str) -> std::path::PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let runtime = std::env::temp_dir().join(format!(
        "browser-shell-bench-screenshot-{kind}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&runtime);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&runtime)
        .unwrap();
    runtime
}

/// `browser-shell relay`, driven over MCP's streamable HTTP.
struct Relay {
    child: tokio::process::Child,
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    runtime: std::path::PathBuf,
}

impl Relay {
    async fn start() -> Self {
        let runtime = runtime_dir("relay");
        let mut child = tokio::process::Command::new(shell_binary())
            .arg("relay")
            .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (endpoint, token) = loop {
            let line = lines.next_line().await.unwrap().expect("the relay's links");
            if let Some(found) = line
                .strip_prefix("MCP over HTTP: ")
                .and_then(|rest| rest.split_once(" (Authorization: Bearer "))
            {
                break (found.0.to_owned(), found.1.trim_end_matches(')').to_owned());
            }
        };
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(endpoint).auth_header(token),
        );
        let client = ().serve(transport).await.expect("an MCP session");
        Self {
            child,
            client,
            runtime,
        }
    }

    /// Calls a tool; returns its result as JSON.
    async fn call(&self, name: &'static str, arguments: Value) -> Value {
        let Value::Object(arguments) = arguments else {
            unreachable!("arguments are an object")
        };
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
            .await
            .unwrap();
        let result = serde_json::to_value(result).unwrap();
        assert!(result["isError"] != json!(true), "{result}");
        result
    }

    async fn stop(self) {
        let Self {
            mut child,
            client,
            runtime,
        } = self;
        let _ = client.cancel().await;
        let _ = child.kill().await;
        let _ = std::fs::remove_dir_all(&runtime);
    }
}

/// The shell to measure: this build's, or the one `BROWSER_SHELL_BIN`
/// names (a debug build, say, to see what a development run costs).
fn shell_binary() -> std::path::PathBuf {
    std::env::var_os("BROWSER_SHELL_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_browser-shell").into())
}

/// The image of a `browser_screenshot` result, decoded.
fn image_of(result: &Value) -> Vec<u8> {
    let data = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "image")
        .and_then(|block| block["data"].as_str())
        .expect("an image block");
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap()
}

fn rounds_asked() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = rounds_asked().unwrap_or(if quick { 10 } else { 40 });
    let warm_up = 3;
    let base = serve_fixtures().await;
    let url = format!("{base}/article.html");

    let mut shell = Shell::start().await;
    shell.call("browser_open", json!({"url": url})).await;
    let relay = Relay::start().await;
    relay.call("browser_open", json!({"url": url})).await;

    let host = Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let (view, page) = bare_page_at(&host, &url, Duration::from_secs(60)).await;

    println!("# browser-shell screenshot benchmark: MCP (stdio, HTTP) next to the raw capture");
    println!(
        "{}; {}; fixtures/article.html, viewport PNG; {rounds} rounds each after {warm_up} warm-up, alternating",
        host.browser_version(),
        shell_binary().display()
    );
    let mut ours = Vec::new();
    let mut over_http = Vec::new();
    let mut floor = Vec::new();
    let mut sizes = (0, 0, 0);
    for round in 0..warm_up + rounds {
        let started = Instant::now();
        let (result, answer_bytes) = shell.call("browser_screenshot", json!({})).await;
        let image = image_of(&result);
        let took = ms(started.elapsed());

        let started = Instant::now();
        let result = relay.call("browser_screenshot", json!({})).await;
        let http_image = image_of(&result);
        let http_took = ms(started.elapsed());
        assert_eq!(http_image.len(), image.len(), "the same picture both ways");

        let started = Instant::now();
        let raw = host
            .send_command(
                &view,
                "Page.captureScreenshot",
                json!({"format": "png"}),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        let raw_image = base64::engine::general_purpose::STANDARD
            .decode(raw["data"].as_str().unwrap())
            .unwrap();
        let raw_took = ms(started.elapsed());
        if round >= warm_up {
            ours.push(took);
            over_http.push(http_took);
            floor.push(raw_took);
        }
        sizes = (answer_bytes, image.len(), raw_image.len());
    }
    println!("\n## Viewport PNG (ms)");
    println!(
        "MCP browser_screenshot      p50 {:>7.1}  p95 {:>7.1}  answer {} B, image {} B",
        percentile(&mut ours, 0.5),
        percentile(&mut ours, 0.95),
        sizes.0,
        sizes.1
    );
    println!(
        "MCP over HTTP (relay)       p50 {:>7.1}  p95 {:>7.1}",
        percentile(&mut over_http, 0.5),
        percentile(&mut over_http, 0.95),
    );
    println!(
        "floor (captureScreenshot)   p50 {:>7.1}  p95 {:>7.1}  image {} B",
        percentile(&mut floor, 0.5),
        percentile(&mut floor, 0.95),
        sizes.2
    );
    println!(
        "overhead over the floor     p50 {:>+7.1}  p95 {:>+7.1}  (stdio)",
        percentile(&mut ours, 0.5) - percentile(&mut floor, 0.5),
        percentile(&mut ours, 0.95) - percentile(&mut floor, 0.95)
    );
    println!(
        "                            p50 {:>+7.1}  p95 {:>+7.1}  (HTTP)",
        percentile(&mut over_http, 0.5) - percentile(&mut floor, 0.5),
        percentile(&mut over_http, 0.95) - percentile(&mut floor, 0.95)
    );
    drop(page);
    host.shutdown().await;
    shell.stop().await;
    relay.stop().await;
}
