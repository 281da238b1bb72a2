//! What the shell's benchmarks share: the fixture server, percentiles and
//! the memory of a process tree.

// Each benchmark uses its own part of this.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use axum::Router;
use tower_http::services::ServeDir;

/// The `p` quantile (0–1) of `samples`, nearest rank.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

/// Serves `fixtures/` on 127.0.0.1; returns the base URL.
pub async fn serve_fixtures() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, Router::new().fallback_service(ServeDir::new(dir))).await
    });
    base
}

/// Parent of each process, from `/proc/PID/stat`.
pub fn parents() -> HashMap<u32, u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// PSS of `root` and every process below it, in kB.
pub fn tree_pss_kb(root: u32) -> u64 {
    let parents = parents();
    let in_tree = |mut pid: u32| loop {
        if pid == root {
            return true;
        }
        match parents.get(&pid) {
            Some(&parent) if parent > 1 => pid = parent,
            _ => return false,
        }
    };
    parents
        .keys()
        .filter(|&&pid| in_tree(pid))
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .filter_map(|rollup| {
            rollup
                .lines()
                .find_map(|line| line.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .sum()
}
