//! The person's own Chrome, connected again after every kind of break:
//! the time from the moment it could come back to the first agent call
//! that works, over native messaging and over the paired WebSocket, on a
//! machine with two busy-looping cores.
//!
//! Run: `cargo bench -p browser-shell --bench extension_connect` (100
//! cycles per bridge; `-- --cycles N` for another count). The cycles
//! rotate through: the shell killed and started again; a joined shell's
//! owner exiting (its client starting it again); Chrome quitting and
//! starting again; the extension's worker stopped; pairing again (over
//! native messaging there is nothing to pair: the call just works on).
//! The call timed after each is a write: the agent opens a page the
//! bench's page server counts (a new page for every attempt), then clicks
//! its Count button. Every cycle must connect (a write done within 15 s,
//! or the run stops), and at the end every write answered done must have
//! been done exactly once, every one answered NOT_CONNECTED at most once.
//!
//! Prints p50/p95/max per kind and overall, for each bridge, until the
//! write that worked was sent (connected again; goal: p95 ≤ 1 s) and
//! until its answer (the page opening included), then the writes' tally.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/bridge/mod.rs"]
mod bridge;
#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use browser_testkit::stats::ms;

use bridge::cycles::{Bridge, Cycle, Rig, busy_loops, percentile};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cycles: usize = args
        .iter()
        .position(|a| a == "--cycles")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let _load = busy_loops(2);
        println!(
            "extension reconnection: {cycles} cycles per bridge, two busy-looping cores, {}",
            chromium_version()
        );
        for kind in [Bridge::Native, Bridge::Paired] {
            let mut rig = Rig::start(kind).await;
            // Per break: until the write that worked was sent (connected
            // again), and until its answer (the write included).
            let mut by_cycle: Vec<(Cycle, Vec<Duration>, Vec<Duration>)> = Cycle::ALL
                .iter()
                .map(|c| (*c, Vec::new(), Vec::new()))
                .collect();
            for round in 0..cycles {
                let (cycle, connected, answered) = &mut by_cycle[round % Cycle::ALL.len()];
                let took = rig.cycle(*cycle).await;
                let write = rig.write_times().last().copied().unwrap_or_default();
                answered.push(took);
                connected.push(took.saturating_sub(write));
            }
            let mut write_times = rig.write_times();
            let tally = rig.finish().await;
            println!("\n{kind:?}");
            println!(
                "{:<14} {:>5}   connected: {:>6} {:>6} {:>6}   write answered: {:>6} {:>6} {:>6}",
                "break", "n", "p50", "p95", "max", "p50", "p95", "max"
            );
            let (mut all_connected, mut all_answered) = (Vec::new(), Vec::new());
            for (cycle, connected, answered) in &mut by_cycle {
                all_connected.extend(connected.iter().copied());
                all_answered.extend(answered.iter().copied());
                row(&format!("{cycle:?}"), connected, answered);
            }
            row("all", &mut all_connected, &mut all_answered);
            println!(
                "the writes alone: p50 {:.0} ms, p95 {:.0} ms ({} writes)",
                ms(percentile(&mut write_times, 50)),
                ms(percentile(&mut write_times, 95)),
                write_times.len()
            );
            println!(
                "writes: {} answered done, {} answered NOT_CONNECTED ({} of them done all the same); \
                 the page server counted {}; replayed or lost: {}",
                tally.done,
                tally.errored,
                tally.errored_but_done,
                tally.counted,
                if tally.wrong.is_empty() {
                    "none".to_owned()
                } else {
                    tally.wrong.join("; ")
                }
            );
            tally.check();
        }
    });
}

/// One break's line: until connected, and until the write's answer (ms).
fn row(name: &str, connected: &mut [Duration], answered: &mut [Duration]) {
    println!(
        "{name:<14} {:>5}              {:>6.0} {:>6.0} {:>6.0}                   {:>6.0} {:>6.0} {:>6.0}",
        connected.len(),
        ms(percentile(connected, 50)),
        ms(percentile(connected, 95)),
        ms(percentile(connected, 100)),
        ms(percentile(answered, 50)),
        ms(percentile(answered, 95)),
        ms(percentile(answered, 100))
    );
}

fn chromium_version() -> String {
    std::process::Command::new("/usr/bin/chromium")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
