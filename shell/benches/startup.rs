//! Cold start and memory, next to the floor.
//!
//! Run: `cargo bench -p browser-shell --bench startup` (add `-- --quick`
//! for fewer rounds). Each round:
//! * **browser-shell**: spawn `browser-shell mcp` (stdio) → `initialize`
//!   answered → `browser_open` of `fixtures/article.html` answered (the
//!   page loaded and its snapshot made); then a snapshot and a screenshot
//!   (a warm session), and the PSS of the whole process tree (the shell
//!   and its Chromium);
//! * **floor**: this process launches the same Chromium over a pipe,
//!   creates a page and navigates it to the same URL, until `load`; then
//!   the tree's PSS — once with the headless shell, once with `chromium
//!   --headless`.
//!
//! Prints p50/p95 of each step in ms, PSS in MB, and our overhead over the
//! floor.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_provider::host::{ChromiumHost, LaunchOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::provider::bare::bare_page_at;
use browser_testkit::stats::{ms, percentile};
use support::tree_pss_by_kind;

/// PSS (kB) and process count by kind.
type ByKind = std::collections::BTreeMap<String, (usize, u64)>;

/// One round of the shell: (spawn → initialize, spawn → first page, PSS kB
/// by kind of process).
async fn shell_round(url: &str, round: usize) -> (f64, f64, ByKind) {
    use std::os::unix::fs::DirBuilderExt;
    let runtime = std::env::temp_dir().join(format!(
        "browser-shell-startup-{}-{round}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&runtime);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&runtime)
        .unwrap();
    let started = Instant::now();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .arg("mcp")
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "startup-bench", "version": "1"}}}),
    )
    .await;
    let mut answer = async |id: u64| loop {
        let line = lines.next_line().await.unwrap().expect("an answer");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            assert!(message["error"].is_null(), "{message}");
            return message;
        }
    };
    answer(1).await;
    let initialized = started.elapsed();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    send(&mut stdin, call(2, "browser_open", json!({"url": url}))).await;
    let opened = answer(2).await;
    let loaded = started.elapsed();
    assert!(opened["result"]["isError"] != json!(true), "{opened}");
    // A warm session: what an agent does next.
    send(&mut stdin, call(3, "browser_snapshot", json!({}))).await;
    answer(3).await;
    send(&mut stdin, call(4, "browser_screenshot", json!({}))).await;
    answer(4).await;
    let pss = tree_pss_by_kind(pid);
    // End of input: the server exits (and closes its browser).
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let _ = std::fs::remove_dir_all(&runtime);
    (ms(initialized), ms(loaded), pss)
}

/// Writes one JSON-RPC message to the server.
async fn send(stdin: &mut tokio::process::ChildStdin, message: Value) {
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
}

/// One round of the floor: (launch → page loaded, PSS kB by kind).
async fn floor_round(url: &str, executable: &std::path::Path) -> (f64, ByKind) {
    let started = Instant::now();
    let host = Arc::new(
        ChromiumHost::launch(LaunchOptions {
            executable: Some(executable.to_path_buf()),
            ..LaunchOptions::default()
        })
        .await
        .unwrap(),
    );
    let (_, page) = bare_page_at(&host, url, Duration::from_secs(30)).await;
    let loaded = started.elapsed();
    let pss = tree_pss_by_kind(host.pid().unwrap());
    drop(page);
    host.shutdown().await;
    (ms(loaded), pss)
}

fn line(label: &str, samples: &mut [f64]) {
    println!(
        "{label:<44} p50 {:>7.1}  p95 {:>7.1}",
        percentile(samples, 0.5),
        percentile(samples, 0.95)
    );
}

/// The median round's processes by kind, one line each.
fn breakdown(label: &str, rounds: &mut [ByKind]) {
    rounds.sort_by_key(|kinds| kinds.values().map(|(_, kb)| kb).sum::<u64>());
    let median = &rounds[rounds.len() / 2];
    println!("{label}");
    for (kind, (count, kb)) in median {
        println!(
            "  {kind:<42} {count:>2} × → {:>6.1} MB",
            *kb as f64 / 1024.0
        );
    }
}

fn memory(label: &str, samples: &mut [u64]) -> f64 {
    samples.sort_unstable();
    let median = samples[samples.len() / 2] as f64 / 1024.0;
    let peak = samples[samples.len() - 1] as f64 / 1024.0;
    println!("{label:<44} median {median:>6.0} MB  max {peak:>6.0} MB");
    median
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 3 } else { 10 };
    let base = serve_fixtures().await;
    let url = format!("{base}/article.html");
    let headless_shell = browser_provider::host::find_browser(None, true).unwrap();
    let full = browser_provider::host::find_browser(None, false).unwrap();
    println!("# browser-shell startup benchmark ({rounds} rounds each, after one warm-up)");
    println!(
        "headless: {}; full: {}",
        headless_shell.display(),
        full.display()
    );

    let mut initialize = Vec::new();
    let mut first_page = Vec::new();
    let mut shell_pss = Vec::new();
    let mut shell_kinds = Vec::new();
    let mut floor_kinds = Vec::new();
    let mut floor_shell = Vec::new();
    let mut floor_shell_pss = Vec::new();
    let mut floor_full = Vec::new();
    let mut floor_full_pss = Vec::new();
    for round in 0..=rounds {
        let (init, loaded, pss) = shell_round(&url, round).await;
        let (shell_floor, shell_floor_pss) = floor_round(&url, &headless_shell).await;
        let (full_floor, full_floor_pss) = floor_round(&url, &full).await;
        if round == 0 {
            continue; // warm-up: disk caches
        }
        initialize.push(init);
        first_page.push(loaded);
        shell_pss.push(pss.values().map(|(_, kb)| kb).sum());
        shell_kinds.push(pss);
        floor_shell.push(shell_floor);
        floor_shell_pss.push(shell_floor_pss.values().map(|(_, kb)| kb).sum());
        floor_kinds.push(shell_floor_pss);
        floor_full.push(full_floor);
        floor_full_pss.push(full_floor_pss.values().map(|(_, kb)| kb).sum());
    }
    println!("\n## Cold start (ms)");
    line("browser-shell mcp: spawn → initialize", &mut initialize);
    line(
        "browser-shell mcp: spawn → first page loaded",
        &mut first_page,
    );
    line("floor, headless shell: launch → load", &mut floor_shell);
    line("floor, chromium --headless: launch → load", &mut floor_full);
    println!(
        "overhead over the headless-shell floor (p50): {:+.1} ms",
        percentile(&mut first_page, 0.5) - percentile(&mut floor_shell, 0.5)
    );
    println!("\n## Memory: PSS of the whole process tree");
    let ours = memory(
        "browser-shell, warm session (open, snapshot, shot)",
        &mut shell_pss,
    );
    let floor = memory(
        "floor, headless shell, one page loaded",
        &mut floor_shell_pss,
    );
    memory(
        "floor, chromium --headless, one page loaded",
        &mut floor_full_pss,
    );
    println!(
        "overhead over the headless-shell floor (median): {:+.0} MB",
        ours - floor
    );
    println!("\n## Memory by kind of process (the median round; PSS)");
    breakdown("browser-shell, warm session", &mut shell_kinds);
    breakdown("floor, headless shell, one page loaded", &mut floor_kinds);
}
