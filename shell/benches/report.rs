//! What a session report costs: an agent works through pages while a
//! viewer watches (so the timeline gets its pictures), then the report is
//! fetched and measured: bytes per call, per picture, and an hour's worth.
//!
//! Run: `cargo bench -p browser-shell --bench report -- --calls 300`
//! (default 200). Prints calls, pace, the report's size, its pictures
//! (unique frames) and their size, the shell's RSS before and after, and
//! what an hour costs at one call every 3 s and at this benchmark's pace
//! (the timeline keeps the latest 1500 entries).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;

use browser_testkit::fixtures::serve_fixtures;

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let base = serve_fixtures().await;
    let runtime =
        std::env::temp_dir().join(format!("browser-shell-report-bench-{}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .unwrap();
    }
    let mut relay = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .arg("relay")
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let shell_pid = relay.id().unwrap();
    let mut lines = tokio::io::BufReader::new(relay.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    for _ in 0..3 {
        printed.push(lines.next_line().await.unwrap().expect("the relay's links"));
    }
    let viewer_url = printed[0].clone();
    let host = viewer_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let token = viewer_url.split("token=").nth(1).unwrap().to_owned();

    // A viewer watches, drawing every frame, at a common laptop size.
    let (mut viewer, _) = tokio_tungstenite::connect_async(format!("ws://{host}/ws?token={token}"))
        .await
        .unwrap();
    viewer
        .send(Message::Text(
            json!({"type": "viewport", "width": 1000, "height": 700, "scale": 1})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    let watching = tokio::spawn(async move {
        while let Some(Ok(message)) = viewer.next().await {
            if let Message::Binary(_) = message {
                let ack = json!({"type": "ack"}).to_string();
                if viewer.send(Message::Text(ack.into())).await.is_err() {
                    return;
                }
            }
        }
    });

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{host}/mcp"))
            .auth_header(token.clone()),
    );
    let agent = ().serve(transport).await.expect("an MCP session");
    let call = |tool: &'static str, arguments: Value| {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        agent.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
    };
    call("browser_open", json!({"url": format!("{base}/todo.html")}))
        .await
        .unwrap();
    let rss_before = rss_kb(shell_pid);
    let started = Instant::now();
    for n in 0..calls {
        let result = match n % 10 {
            // Now and then another page, and back.
            4 => call("browser_open", json!({"url": format!("{base}/article.html")})).await,
            5 => call("browser_snapshot", json!({})).await,
            6 => call("browser_open", json!({"url": format!("{base}/todo.html")})).await,
            1 | 8 => {
                call(
                    "browser_act",
                    json!({"action": "fill", "role": "textbox", "name": "New todo", "text": format!("Item {n}")}),
                )
                .await
            }
            _ => {
                call(
                    "browser_act",
                    json!({"action": "click", "role": "button", "name": "Add item"}),
                )
                .await
            }
        };
        result.unwrap();
    }
    let took = started.elapsed();
    // The last pictures come a moment after the last call.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = rss_kb(shell_pid);

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let fetched = Instant::now();
    let report = http
        .get(format!("http://{host}/report"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let made_in = fetched.elapsed();
    let entries = report.matches("<li id=\"e").count();
    let pictures: Vec<&str> = report
        .split("background-image:url(")
        .skip(1)
        .map(|rest| rest.split(')').next().unwrap_or(""))
        .collect();
    let picture_bytes: usize = pictures.iter().map(|p| p.len()).sum();
    let per_call = report.len() as f64 / entries.max(1) as f64;
    let pace = took.as_secs_f64() / calls as f64;
    let mb = |bytes: f64| bytes / 1_000_000.0;
    println!(
        "report: {calls} calls in {:.1} s ({:.0} ms a call); {entries} entries",
        took.as_secs_f64(),
        pace * 1000.0
    );
    println!(
        "report: {:.2} MB, made in {} ms; {:.1} kB a call; {} pictures (unique frames), {:.1} kB each as data: URLs ({:.2} MB in all)",
        mb(report.len() as f64),
        made_in.as_millis(),
        per_call / 1000.0,
        pictures.len(),
        picture_bytes as f64 / pictures.len().max(1) as f64 / 1000.0,
        mb(picture_bytes as f64),
    );
    println!(
        "report: an hour at one call every 3 s (1200 calls): ~{:.1} MB; at this pace ({:.0} calls, the timeline keeps 1500): ~{:.1} MB",
        mb(per_call * 1200.0),
        3600.0 / pace,
        mb(per_call * (3600.0 / pace).min(1500.0)),
    );
    println!(
        "report: shell RSS {:.1} MB before, {:.1} MB after ({:+.1} MB)",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0
    );
    watching.abort();
    let _ = agent.cancel().await;
    let _ = relay.kill().await;
    let _ = std::fs::remove_dir_all(&runtime);
}
