//! A team's load: agents on the official MCP SDK for Rust (rmcp) through
//! HAProxy (the shipped `assets/team/haproxy.cfg`) to several relays that
//! take each session's browser from browserless, for minutes, while one
//! shell is killed and the pool is restarted; then the same load on one
//! shell alone, to compare.
//!
//! Run: `cargo bench -p browser-shell --bench team` (48 agents, 3 shells,
//! 8 pool browsers, 5 minutes, then 5 minutes on one shell);
//! `-- --agents N --shells K --concurrent C --seconds S --compare-seconds S`
//! (0: no comparison); `-- --quick` is 8 agents for 60 s and 30 s.
//! Needs what `.ci/setup` installs (HAProxy; browserless in `tests/pool`).
//!
//! Each agent works in rounds: a session of its own, a page that names
//! the agent and the round, a snapshot that must show that name and no
//! other agent's, a script, the text, a screenshot every fourth round;
//! then it ends the session. A call the pool cannot serve yet answers
//! `BUSY` and the agent asks again a second later; `BROWSER_RESTARTED`
//! (its browser is being replaced) and it asks again half a second later; a session whose
//! shell died answers 404 and the agent starts a new one. Printed: calls, p50 /
//! p95 per tool, answers by code, lost calls (no answer within the call's
//! bound and 5 s), cross-talk (a page of another agent in a session),
//! sessions moved after the shell died, and the memory of the shells and
//! the pool per session held.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::pool::{Browserless, Haproxy, free_port, metric};
use browser_testkit::stats::percentile;
use support::tree_pss_kb;

/// The per-call bound the shells are given, and what a call may overrun
/// it by before it counts as lost.
const CALL_BOUND: Duration = Duration::from_secs(30);
const SLACK: Duration = Duration::from_secs(5);
/// The team's token (a bench value: everything listens on loopback).
const TOKEN: &str = "team-bench-token-0123456789abcdef0123456789";

struct Settings {
    agents: usize,
    shells: usize,
    concurrent: u32,
    run: Duration,
    compare: Duration,
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
        agents: value("--agents").map_or(if quick { 8 } else { 48 }, |n| n as usize),
        shells: value("--shells").map_or(3, |n| (n as usize).clamp(1, 3)),
        concurrent: value("--concurrent").map_or(8, |n| n as u32),
        run: Duration::from_secs_f64(value("--seconds").unwrap_or(if quick {
            60.0
        } else {
            300.0
        })),
        compare: Duration::from_secs_f64(value("--compare-seconds").unwrap_or(if quick {
            30.0
        } else {
            300.0
        })),
    }
}

/// One finished call.
struct Call {
    tool: &'static str,
    took: Duration,
    /// `OK`, an error code, `MCP_ERROR` or `LOST`.
    outcome: String,
}

/// What the agents saw, shared by all of them.
#[derive(Default)]
struct Seen {
    calls: Mutex<Vec<Call>>,
    cross_talk: AtomicU64,
    moved: AtomicU64,
    sessions: AtomicU64,
}

/// Makes `dir`, readable by this user only (a runtime directory must be).
fn private_dir(dir: &std::path::Path) {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .unwrap();
}

/// A relay of the team, with its port.
struct Shell {
    process: tokio::process::Child,
    port: u16,
}

async fn start_shell(number: usize, pool: &str, runtime: &std::path::Path) -> Shell {
    let port = free_port();
    let dir = runtime.join(format!("shell{number}"));
    private_dir(&dir);
    let mut process = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args([
            "relay",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--node",
            &format!("shell{number}"),
            "--timeout-ms",
            &CALL_BOUND.as_millis().to_string(),
            "--pool-wait-ms",
            "20000",
        ])
        .env("BROWSER_SHELL_TOKEN", TOKEN)
        .env("BROWSER_SHELL_POOL", pool)
        .env("BROWSER_SHELL_RUNTIME_DIR", &dir)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(process.stdout.take().unwrap()).lines();
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the shell prints its links")
            .unwrap();
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Shell { process, port }
}

#[tokio::main]
async fn main() {
    let settings = settings();
    let base = serve_fixtures().await;
    let runtime = std::env::temp_dir().join(format!("browser-shell-team-{}", std::process::id()));
    private_dir(&runtime);
    let pool_port = free_port();
    let mut pool = Some(
        Browserless::start(
            runtime.join("pool"),
            pool_port,
            settings.concurrent,
            settings.agents as u32,
        )
        .await,
    );
    let pool_endpoint = pool.as_ref().unwrap().endpoint();
    let mut shells = Vec::new();
    for number in 1..=settings.shells {
        shells.push(start_shell(number, &pool_endpoint, &runtime).await);
    }
    let ports: Vec<u16> = shells.iter().map(|s| s.port).collect();
    let front = free_port();
    let haproxy = Haproxy::start(runtime.join("haproxy"), front, &ports).await;
    println!(
        "team: {} agents through HAProxy to {} shells, {} pool browsers (browserless), {:.0} s; \
         call bound {:?}",
        settings.agents,
        settings.shells,
        settings.concurrent,
        settings.run.as_secs_f64(),
        CALL_BOUND
    );

    // The team: a shell dies at 40 %, the pool restarts at 70 %.
    let seen = Arc::new(Seen::default());
    let started = Instant::now();
    let deadline = started + settings.run;
    let agents = spawn_agents(
        settings.agents,
        &format!("http://127.0.0.1:{front}/mcp"),
        &base,
        deadline,
        &seen,
    );
    let mut peak = Memory::default();
    let mut killed = false;
    let mut restarted = false;
    while Instant::now() < deadline {
        let elapsed = started.elapsed().as_secs_f64() / settings.run.as_secs_f64();
        if !killed && elapsed >= 0.4 && shells.len() > 1 {
            killed = true;
            let mut dead = shells.remove(1);
            let _ = dead.process.start_kill();
            let _ = dead.process.wait().await;
            println!(
                "  {:>5.1} s: shell2 killed",
                started.elapsed().as_secs_f64()
            );
        }
        if !restarted && elapsed >= 0.7 {
            restarted = true;
            drop(pool.take());
            pool = Some(
                Browserless::start(
                    runtime.join("pool-again"),
                    pool_port,
                    settings.concurrent,
                    settings.agents as u32,
                )
                .await,
            );
            println!(
                "  {:>5.1} s: the pool restarted",
                started.elapsed().as_secs_f64()
            );
        }
        let now = memory(&shells, pool.as_ref().unwrap()).await;
        if now.total_kb() > peak.total_kb() {
            peak = now;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    for agent in agents {
        let _ = agent.await;
    }
    report("through HAProxy", &seen, started.elapsed(), Some(&peak));
    drop(haproxy);

    if !settings.compare.is_zero() {
        // The same load on one shell alone (the first), the same pool.
        let one = &shells[0];
        println!(
            "\none shell: {} agents straight to shell1, {:.0} s",
            settings.agents,
            settings.compare.as_secs_f64()
        );
        let seen = Arc::new(Seen::default());
        let started = Instant::now();
        let agents = spawn_agents(
            settings.agents,
            &format!("http://127.0.0.1:{}/mcp", one.port),
            &base,
            started + settings.compare,
            &seen,
        );
        for agent in agents {
            let _ = agent.await;
        }
        report("one shell", &seen, started.elapsed(), None);
    }
    for mut shell in shells {
        let _ = shell.process.start_kill();
        let _ = shell.process.wait().await;
    }
    drop(pool);
    let _ = std::fs::remove_dir_all(&runtime);
}

fn spawn_agents(
    count: usize,
    endpoint: &str,
    base: &str,
    deadline: Instant,
    seen: &Arc<Seen>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..count)
        .map(|number| {
            let (endpoint, base, seen) = (endpoint.to_owned(), base.to_owned(), Arc::clone(seen));
            tokio::spawn(async move { agent(number, &endpoint, &base, deadline, &seen).await })
        })
        .collect()
}

/// How one call ended.
enum Answer {
    Text(String),
    Error(String),
    /// The session is gone (its shell died): start a new one.
    SessionGone,
}

/// How an agent reaches the balancer. The SDK's default resumes a broken
/// answer stream forever (a GET with `Last-Event-ID`, answered 404 by the
/// shell that took over); an agent of a team bounds it, as the TypeScript
/// SDK does by default (two tries): three tries a quarter, half and one
/// second apart, then the call fails and the agent starts a new session.
fn agent_transport(endpoint: &str) -> StreamableHttpClientTransportConfig {
    let mut resume = ExponentialBackoff::default();
    resume.max_times = Some(3);
    resume.base_duration = Duration::from_millis(250);
    resume.max_delay = Some(Duration::from_secs(1));
    let mut config = StreamableHttpClientTransportConfig::with_uri(endpoint.to_owned())
        .auth_header(TOKEN.to_owned());
    config.retry_config = Arc::new(resume);
    config
}

/// One agent: rounds of a session each until the deadline.
async fn agent(number: usize, endpoint: &str, base: &str, deadline: Instant, seen: &Seen) {
    let mut round = 0usize;
    while Instant::now() < deadline {
        round += 1;
        let transport = StreamableHttpClientTransport::from_config(agent_transport(endpoint));
        let Ok(client) = ().serve(transport).await else {
            // No shell took the session (all busy, or the balancer found
            // none ready): try again shortly.
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        seen.sessions.fetch_add(1, Ordering::Relaxed);
        let marker = format!("agent={number}&round={round}");
        let url = format!("{base}/form.html?{marker}");
        let steps: [(&'static str, Value); 5] = [
            ("browser_open", json!({ "url": url })),
            ("browser_snapshot", json!({})),
            ("browser_execute", json!({"script": "location.search"})),
            (
                "browser_content",
                json!({"format": "txt", "maxChars": 2000}),
            ),
            ("browser_screenshot", json!({})),
        ];
        'steps: for (tool, arguments) in steps {
            if tool == "browser_screenshot" && !round.is_multiple_of(4) {
                continue;
            }
            loop {
                if Instant::now() >= deadline {
                    break 'steps;
                }
                match call(&client, tool, &arguments, seen).await {
                    Answer::Text(text) => {
                        if matches!(tool, "browser_snapshot" | "browser_execute") {
                            let others = text.contains("agent=")
                                && (!text.contains(&marker)
                                    || text.matches("agent=").count()
                                        > text.matches(&marker).count());
                            if others {
                                seen.cross_talk.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        break;
                    }
                    // A full pool: ask again a second later.
                    Answer::Error(code) if code == "BUSY" => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    // The session's browser is being replaced: the same
                    // call again shortly, as the error's hint says.
                    Answer::Error(code) if code == "BROWSER_RESTARTED" => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Answer::Error(_) => break,
                    Answer::SessionGone => {
                        seen.moved.fetch_add(1, Ordering::Relaxed);
                        break 'steps;
                    }
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), client.cancel()).await;
    }
}

/// Prints the first few different transport errors, so that a run says
/// what the agents were told (the SDK's words) when a shell went away.
fn note_transport_error(words: &str) {
    static SHOWN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut shown = SHOWN.lock().unwrap();
    let short: String = words.chars().take(160).collect();
    if shown.len() < 5 && !shown.contains(&short) {
        println!("  (the SDK said: {short})");
        shown.push(short);
    }
}

/// Calls `tool` and records how it ended.
async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &'static str,
    arguments: &Value,
    seen: &Seen,
) -> Answer {
    let Value::Object(arguments) = arguments.clone() else {
        unreachable!()
    };
    let started = Instant::now();
    let result = tokio::time::timeout(
        CALL_BOUND + SLACK,
        client.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments)),
    )
    .await;
    let took = started.elapsed();
    let (outcome, answer) = match result {
        Err(_) => ("LOST".to_owned(), Answer::Error("LOST".to_owned())),
        // The session's transport failed (its shell died, or the balancer
        // answered for none): like any agent, start a new session.
        Ok(Err(error)) => {
            let words = error.to_string();
            note_transport_error(&words);
            let outcome = if words.contains("404") {
                "SESSION_GONE"
            } else {
                "MCP_ERROR"
            };
            (outcome.to_owned(), Answer::SessionGone)
        }
        Ok(Ok(result)) => {
            let result = serde_json::to_value(result).unwrap();
            let text = result["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if result["isError"].as_bool().unwrap_or(false) {
                let code = result["structuredContent"]["error"]["code"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| {
                        static SHOWN: std::sync::Once = std::sync::Once::new();
                        SHOWN.call_once(|| println!("  (an error without a code: {result})"));
                        "UNKNOWN".to_owned()
                    });
                (code.clone(), Answer::Error(code))
            } else {
                ("OK".to_owned(), Answer::Text(text))
            }
        }
    };
    seen.calls.lock().unwrap().push(Call {
        tool,
        took,
        outcome,
    });
    answer
}

/// The memory of the shells and the pool, and the sessions holding
/// browsers, at one moment.
#[derive(Debug, Default, Clone, Copy)]
struct Memory {
    shells_kb: u64,
    pool_kb: u64,
    held: f64,
    /// Browsers the pool runs (held ones, and ones it is starting).
    running: u64,
}

impl Memory {
    fn total_kb(&self) -> u64 {
        self.shells_kb + self.pool_kb
    }
}

async fn memory(shells: &[Shell], pool: &Browserless) -> Memory {
    let mut memory = Memory {
        pool_kb: tree_pss_kb(pool.pid()),
        running: pool.running().await,
        ..Memory::default()
    };
    for shell in shells {
        if let Some(pid) = shell.process.id() {
            memory.shells_kb += tree_pss_kb(pid);
        }
        let metrics = http_get_with_token(shell.port, "/metrics").await;
        if metrics.contains("browser_shell_pool_browsers_held") {
            memory.held += metric(&metrics, "browser_shell_pool_browsers_held");
        }
    }
    memory
}

/// A GET with the team's token, by the kit's reader.
async fn http_get_with_token(port: u16, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.ok()?;
        Some(String::from_utf8_lossy(&received).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn report(title: &str, seen: &Seen, elapsed: Duration, peak: Option<&Memory>) {
    let calls = seen.calls.lock().unwrap();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{title}: {} calls in {:.0} s = {:.1} calls/s, {} sessions",
        calls.len(),
        elapsed.as_secs_f64(),
        calls.len() as f64 / elapsed.as_secs_f64(),
        seen.sessions.load(Ordering::Relaxed)
    );
    let mut by_tool: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for call in calls.iter().filter(|c| c.outcome == "OK") {
        by_tool.entry(call.tool).or_default().push(ms(call.took));
    }
    for (tool, samples) in &mut by_tool {
        println!(
            "  {tool:<19} p50 {:8.1} ms  p95 {:8.1} ms  ({} answered)",
            percentile(samples, 0.5),
            percentile(samples, 0.95),
            samples.len()
        );
    }
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for call in calls.iter() {
        *outcomes.entry(call.outcome.as_str()).or_default() += 1;
    }
    println!("  answers: {outcomes:?}");
    let lost = calls.iter().filter(|c| c.outcome == "LOST").count();
    println!(
        "  lost calls (no answer within {:?} + {:?}): {lost}; cross-talk: {}; sessions that moved \
         after their shell died: {}",
        CALL_BOUND,
        SLACK,
        seen.cross_talk.load(Ordering::Relaxed),
        seen.moved.load(Ordering::Relaxed)
    );
    if let Some(peak) = peak {
        println!(
            "  peak memory: shells {:.0} MB, pool {:.0} MB with {} browsers running ({} held by sessions): {:.0} MB per browser",
            peak.shells_kb as f64 / 1024.0,
            peak.pool_kb as f64 / 1024.0,
            peak.running,
            peak.held,
            peak.total_kb() as f64 / 1024.0 / (peak.running.max(1) as f64)
        );
    }
}
