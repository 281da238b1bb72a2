//! CDP endpoint benchmark: what the shell's proxy costs an external client.
//!
//! Run: `cargo bench -p browser-shell --bench cdp` (add `-- --quick` for
//! fewer rounds). A raw client drives a page through `relay
//! --cdp-endpoint` (WebSocket → proxy → the shell's pipe to Chromium), and
//! the same commands go straight over a pipe from this process, as the
//! shell's own agents send them. Prints round-trip p50/p95 for a small
//! command (`Runtime.evaluate`) and a large answer (a PNG screenshot).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_provider::cdp::protocol::{PageNavigate, RuntimeEvaluate};
use browser_provider::host::{
    ChromiumHost, CreateViewOptions, LaunchOptions, ViewHost, ViewHostExt,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::stats::percentile;

/// A raw CDP client on the shell's endpoint.
struct Client {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next_id: u64,
}

impl Client {
    /// Sends a command and waits for its answer (events are skipped).
    async fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> (Value, usize) {
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
            let Some(Ok(Message::Text(text))) = self.socket.next().await else {
                panic!("the endpoint closed")
            };
            let message: Value = serde_json::from_str(&text).unwrap();
            if message["id"] == id {
                return (message, text.len());
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 100 } else { 500 };
    let shots = if quick { 10 } else { 40 };
    let base = serve_fixtures().await;
    let page = format!("{base}/article.html");
    let runtime =
        std::env::temp_dir().join(format!("browser-shell-bench-cdp-{}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .unwrap();
    }
    let mut relay = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["relay", "--cdp-endpoint"])
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(relay.stdout.take().unwrap()).lines();
    let mut endpoint = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Some(url) = line.strip_prefix("CDP endpoint: ") {
            endpoint = url.to_owned();
            break;
        }
    }

    println!("# browser-shell CDP endpoint benchmark");
    println!("loopback, release build; {rounds} evaluations and {shots} screenshots each way\n");
    println!(
        "{:<44} {:>9} {:>9} {:>11}",
        "path / command", "p50 ms", "p95 ms", "answer B"
    );

    // Through the endpoint: WebSocket to the proxy, then the shell's pipe.
    let (socket, _) = tokio_tungstenite::connect_async(endpoint.as_str())
        .await
        .unwrap();
    let mut client = Client { socket, next_id: 1 };
    let (created, _) = client
        .send(None, "Target.createTarget", json!({"url": page}))
        .await;
    let target = created["result"]["targetId"].as_str().unwrap().to_owned();
    let (attached, _) = client
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )
        .await;
    let session = attached["result"]["sessionId"].as_str().unwrap().to_owned();
    client
        .send(Some(&session), "Runtime.enable", json!({}))
        .await;
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let (_, size) = client
            .send(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": "1 + 1", "returnByValue": true}),
            )
            .await;
        times.push(millis(started));
        bytes = size;
    }
    report("endpoint / Runtime.evaluate", &mut times, bytes);
    let mut times = Vec::new();
    for _ in 0..shots {
        let started = Instant::now();
        let (_, size) = client
            .send(
                Some(&session),
                "Page.captureScreenshot",
                json!({"format": "png"}),
            )
            .await;
        times.push(millis(started));
        bytes = size;
    }
    report("endpoint / Page.captureScreenshot (png)", &mut times, bytes);
    drop(client);

    // Straight over a pipe, as the shell's agents talk to Chromium.
    let host = Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let view = host
        .create_view(CreateViewOptions::default())
        .await
        .unwrap();
    host.call(&view, &PageNavigate { url: page.clone() })
        .await
        .unwrap();
    let mut times = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        host.call(
            &view,
            &RuntimeEvaluate {
                expression: "1 + 1".into(),
                return_by_value: true,
                ..RuntimeEvaluate::default()
            },
        )
        .await
        .unwrap();
        times.push(millis(started));
    }
    report("pipe / Runtime.evaluate", &mut times, 0);
    let mut times = Vec::new();
    for _ in 0..shots {
        let started = Instant::now();
        host.send_command(
            &view,
            "Page.captureScreenshot",
            json!({"format": "png"}),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        times.push(millis(started));
    }
    report("pipe / Page.captureScreenshot (png)", &mut times, 0);
    host.shutdown().await;
    let _ = std::fs::remove_dir_all(&runtime);
}

fn millis(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

fn report(label: &str, times: &mut [f64], bytes: usize) {
    let bytes = if bytes == 0 {
        "-".to_owned()
    } else {
        bytes.to_string()
    };
    println!(
        "{label:<44} {:>9.2} {:>9.2} {bytes:>11}",
        percentile(times, 0.5),
        percentile(times, 0.95)
    );
}
