//! Soak benchmark: agents over MCP HTTP against the real relay for minutes,
//! with a mix of calls, while the browser is killed and renderers crash.
//!
//! Run: `cargo bench -p browser-shell --bench soak -- --agents 16 --minutes 10`
//! (`--kill-every S` and `--crash-every S` set how often the browser and a
//! renderer are killed, default 60 and 20 s; `--quick` is 4 agents for one
//! minute). Prints calls per second, latency p50/p95 per tool, errors by
//! code, calls that ran past their bound (the relay runs with
//! `--timeout-ms 15000`: a call past 16 s broke its bound; there must be
//! none), and the shell's RSS, open fds and tasks plus the whole process
//! tree's PSS after warm-up and at the end.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::stats::percentile;
use support::{parents, tree_pss_kb};

/// The per-call bound the relay is given, and what it may overrun by.
const CALL_BOUND: Duration = Duration::from_secs(15);
const SLACK: Duration = Duration::from_secs(1);

struct Settings {
    agents: usize,
    run: Duration,
    kill_every: Duration,
    crash_every: Duration,
}

fn settings() -> Settings {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let quick = args.iter().any(|a| a == "--quick");
    Settings {
        agents: value("--agents").map_or(if quick { 4 } else { 16 }, |n| n as usize),
        run: Duration::from_secs_f64(
            value("--minutes").unwrap_or(if quick { 1.0 } else { 10.0 }) * 60.0,
        ),
        kill_every: Duration::from_secs_f64(value("--kill-every").unwrap_or(60.0)),
        crash_every: Duration::from_secs_f64(value("--crash-every").unwrap_or(20.0)),
    }
}

/// One finished call.
struct Call {
    tool: &'static str,
    took: Duration,
    /// `None`: it worked; else the error code.
    code: Option<String>,
}

/// The shell's figures and the tree's memory at one moment.
#[derive(Debug, Clone, Copy)]
struct Figures {
    rss_kb: u64,
    fds: u64,
    tasks: u64,
    tree_pss_kb: u64,
}

#[tokio::main]
async fn main() {
    let settings = settings();
    let base = serve_fixtures().await;
    let runtime = std::env::temp_dir().join(format!("browser-shell-soak-{}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .unwrap();
    }
    let mut relay = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["relay", "--timeout-ms", &CALL_BOUND.as_millis().to_string()])
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
    let (endpoint, token) = printed[2]
        .strip_prefix("MCP over HTTP: ")
        .and_then(|rest| rest.split_once(" (Authorization: Bearer "))
        .map(|(url, token)| (url.to_owned(), token.trim_end_matches(')').to_owned()))
        .expect("the MCP line");
    let status_url = endpoint.replace("/mcp", "/status");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let status = {
        let http = http.clone();
        let token = token.clone();
        move || {
            let http = http.clone();
            let url = status_url.clone();
            let token = token.clone();
            async move {
                http.get(url)
                    .bearer_auth(token)
                    .send()
                    .await
                    .ok()?
                    .json::<Value>()
                    .await
                    .ok()
            }
        }
    };

    println!(
        "soak: {} agents for {:.1} min; browser killed every {:?}, a renderer every {:?}; call bound {:?}",
        settings.agents,
        settings.run.as_secs_f64() / 60.0,
        settings.kill_every,
        settings.crash_every,
        CALL_BOUND
    );
    let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
    let started = Instant::now();
    let deadline = started + settings.run;
    let mut agents = Vec::new();
    for number in 0..settings.agents {
        let calls = Arc::clone(&calls);
        let endpoint = endpoint.clone();
        let token = token.clone();
        let base = base.clone();
        agents.push(tokio::spawn(async move {
            agent(number, &endpoint, &token, &base, deadline, &calls).await;
        }));
    }

    // Faults, injected from outside as the world does it.
    let mut kills = 0;
    let mut crashes = 0;
    let mut next_kill = started + settings.kill_every;
    let mut next_crash = started + settings.crash_every;
    let warm_up = started + settings.run.mul_f64(0.1).max(Duration::from_secs(20));
    let mut start_figures: Option<Figures> = None;
    while Instant::now() < deadline {
        let now = Instant::now();
        if start_figures.is_none() && now >= warm_up {
            start_figures = figures(&status().await, shell_pid);
        }
        if now >= next_kill {
            next_kill += settings.kill_every;
            if let Some(pid) = status().await.and_then(|s| s["browser"]["pid"].as_i64()) {
                // SAFETY: signalling the browser of the relay this benchmark started.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                kills += 1;
            }
        }
        if now >= next_crash {
            next_crash += settings.crash_every;
            if let Some(pid) = status().await.and_then(|s| s["browser"]["pid"].as_i64())
                && let Some(renderer) = renderers_in_group(pid as i32).into_iter().next()
            {
                // SAFETY: signalling a renderer of that browser.
                unsafe { libc::kill(renderer, libc::SIGKILL) };
                crashes += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for agent in agents {
        let _ = agent.await;
    }
    let end_figures = figures(&status().await, shell_pid);
    let elapsed = started.elapsed();
    report(
        &calls.lock().unwrap(),
        elapsed,
        kills,
        crashes,
        start_figures,
        end_figures,
    );
    let _ = relay.kill().await;
    let _ = std::fs::remove_dir_all(&runtime);
}

/// One agent: its own MCP session, calling a mix of tools until the deadline.
async fn agent(
    number: usize,
    endpoint: &str,
    token: &str,
    base: &str,
    deadline: Instant,
    calls: &Mutex<Vec<Call>>,
) {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(endpoint.to_owned())
            .auth_header(token.to_owned()),
    );
    let client = ().serve(transport).await.expect("an MCP session");
    let pages = ["form.html", "article.html", "index.html", "large.html"];
    let mut round = number;
    while Instant::now() < deadline {
        round += 1;
        let page = pages[round % pages.len()];
        let steps: [(&'static str, Value); 6] = [
            ("browser_open", json!({"url": format!("{base}/{page}")})),
            ("browser_snapshot", json!({})),
            ("browser_execute", json!({"script": "document.title"})),
            (
                "browser_content",
                json!({"format": "txt", "maxChars": 2000}),
            ),
            ("browser_list_tabs", json!({})),
            ("browser_screenshot", json!({})),
        ];
        for (tool, arguments) in steps {
            // Screenshots are the heaviest call: one round in four.
            if tool == "browser_screenshot" && !round.is_multiple_of(4) {
                continue;
            }
            let Value::Object(arguments) = arguments else {
                unreachable!()
            };
            let started = Instant::now();
            let result = client
                .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
                .await;
            let took = started.elapsed();
            let code = match result {
                Ok(result) => {
                    let result = serde_json::to_value(result).unwrap();
                    if result["isError"].as_bool().unwrap_or(false) {
                        let text = result["content"][0]["text"].as_str().unwrap_or("");
                        Some(error_code(text))
                    } else {
                        None
                    }
                }
                Err(_) => Some("MCP_ERROR".to_owned()),
            };
            calls.lock().unwrap().push(Call { tool, took, code });
            if Instant::now() >= deadline {
                break;
            }
        }
    }
    let _ = client.cancel().await;
}

/// `TIMEOUT` from "…Error TIMEOUT: …" (after any notice lines).
fn error_code(text: &str) -> String {
    text.lines()
        .find_map(|line| line.strip_prefix("Error "))
        .and_then(|rest| rest.split(':').next())
        .unwrap_or("UNKNOWN")
        .to_owned()
}

fn figures(status: &Option<Value>, shell: u32) -> Option<Figures> {
    let process = &status.as_ref()?["process"];
    Some(Figures {
        rss_kb: process["rssKb"].as_u64()?,
        fds: process["fds"].as_u64()?,
        tasks: process["tasks"].as_u64()?,
        tree_pss_kb: tree_pss_kb(shell),
    })
}

/// Renderer processes in process group `group` (the browser's).
fn renderers_in_group(group: i32) -> Vec<i32> {
    let parents = parents();
    parents
        .keys()
        .filter_map(|&pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            if !String::from_utf8_lossy(&cmdline).contains("--type=renderer") {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let pgrp: i32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(2)?
                .parse()
                .ok()?;
            (pgrp == group).then_some(pid as i32)
        })
        .collect()
}

fn report(
    calls: &[Call],
    elapsed: Duration,
    kills: u32,
    crashes: u32,
    start: Option<Figures>,
    end: Option<Figures>,
) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "calls: {} in {:.0} s = {:.1} calls/s; browser kills {kills}, renderer kills {crashes}",
        calls.len(),
        elapsed.as_secs_f64(),
        calls.len() as f64 / elapsed.as_secs_f64()
    );
    let mut by_tool: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for call in calls {
        by_tool.entry(call.tool).or_default().push(ms(call.took));
    }
    let mut all: Vec<f64> = calls.iter().map(|c| ms(c.took)).collect();
    if !all.is_empty() {
        println!(
            "  all calls           p50 {:8.1} ms  p95 {:8.1} ms  max {:8.1} ms",
            percentile(&mut all, 0.5),
            percentile(&mut all, 0.95),
            percentile(&mut all, 1.0)
        );
    }
    for (tool, samples) in &mut by_tool {
        println!(
            "  {tool:<19} p50 {:8.1} ms  p95 {:8.1} ms  ({} calls)",
            percentile(samples, 0.5),
            percentile(samples, 0.95),
            samples.len()
        );
    }
    let mut errors: BTreeMap<&str, usize> = BTreeMap::new();
    for call in calls {
        if let Some(code) = &call.code {
            *errors.entry(code.as_str()).or_default() += 1;
        }
    }
    println!("errors by code: {errors:?}");
    let over = calls.iter().filter(|c| c.took > CALL_BOUND + SLACK).count();
    println!(
        "calls past their bound ({:?} + {:?}): {over}",
        CALL_BOUND, SLACK
    );
    if let (Some(start), Some(end)) = (start, end) {
        let growth = |a: u64, b: u64| (b as f64 - a as f64) / a.max(1) as f64 * 100.0;
        println!(
            "shell RSS {} → {} kB ({:+.1} %), fds {} → {}, tasks {} → {}; tree PSS {} → {} kB ({:+.1} %)",
            start.rss_kb,
            end.rss_kb,
            growth(start.rss_kb, end.rss_kb),
            start.fds,
            end.fds,
            start.tasks,
            end.tasks,
            start.tree_pss_kb,
            end.tree_pss_kb,
            growth(start.tree_pss_kb, end.tree_pss_kb)
        );
    }
}
