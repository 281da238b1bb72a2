//! Snapshot and action benchmark against a real Chromium and the fixtures.
//!
//! Run: `cargo bench -p browser-provider --bench snapshot` (add `-- --quick`
//! for fewer iterations, `-- --rounds N` for a number of your own). It serves `fixtures/` itself on 127.0.0.1 (and
//! under `localhost` for the cross-origin frame), and prints, with machine
//! and Chromium version:
//! * warm snapshot latency p50/p95, bytes and refs per fixture, a real
//!   Sphinx page and real widget libraries (AG Grid, Monaco, an APG grid;
//!   installed by `.ci/setup`), for our walker and,
//!   for comparison, the raw cost of `Accessibility.getFullAXTree` and
//!   `DOMSnapshot.captureSnapshot` on the same page;
//! * click → settled diff latency p50/p95, and diff bytes against the full
//!   snapshot (median reduction); each action both back to back and after a
//!   pause that lands it anywhere in the page's frame (as an agent's do);
//! * actions on stale refs that hit a wrong element (must be 0);
//! * navigation (open → loaded → snapshot) p50/p95 with and without a host
//!   policy on the wire, on `large.html` and on a real Sphinx page (Debian's
//!   `python3-doc`, served under `/python-docs/` when installed), next to
//!   two floors on a bare page of the same browser: `Page.navigate` until
//!   the load event, and until the page then answers a first command (the
//!   work a page does after its load event holds every tool's first
//!   command), and the latter again on the agent's own tab, taking turns
//!   with our open; and where our time goes (the open alone, the first
//!   snapshot after it). Only this part: `-- --only-navigate`; only the
//!   warm snapshots: `-- --only-snapshot` (only some pages of it:
//!   `-- --pages frames.html,form.html`).
//! * with `-- --only-extension`: snapshot, click, type and screenshot through
//!   the person's own Chrome (the browser-shell extension) against the same
//!   Chromium launched by the shell (see `extension.rs`).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_provider::browser::SessionOptions;
use browser_provider::host::{ChromiumHost, LaunchOptions, ViewHost, ViewId};
use browser_provider::page::Budget;
use browser_provider::page::act::{Action, Target};
use browser_provider::page::navigate::{NavigationTarget, navigate};
use browser_provider::page::observe;
use browser_provider::snapshot::{Ref, Scope, SnapshotLimits};
use browser_provider::{Browser, BrowserConfig, BrowserError, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use browser_testkit::fixtures::{PYTHON_DOCS, serve};
use browser_testkit::provider::bare::{bare_page, bare_page_at};
use browser_testkit::stats::{median, ms, percentile};

mod extension;

#[tokio::main]
async fn main() {
    // Diagnostics (such as per-phase action timings) go to stderr with RUST_LOG.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = rounds_asked().unwrap_or(if quick { 8 } else { 30 });
    let port = serve().await.port();
    let base = format!("http://127.0.0.1:{port}");
    if std::env::args().any(|a| a == "--only-extension") {
        extension::compare(&base, rounds).await;
        return;
    }
    if std::env::args().any(|a| a == "--only-navigate") {
        navigation_with_and_without_policy(&base, rounds).await;
        return;
    }
    if std::env::args().any(|a| a == "--only-clicks") {
        let host = Arc::new(
            ChromiumHost::launch(LaunchOptions::default())
                .await
                .unwrap(),
        );
        clicks(
            &Browser::new(host.clone(), BrowserConfig::default()),
            &base,
            rounds,
        )
        .await;
        host.shutdown().await;
        return;
    }
    if std::env::args().any(|a| a == "--only-screenshot") {
        let host = Arc::new(
            ChromiumHost::launch(LaunchOptions::default())
                .await
                .unwrap(),
        );
        screenshot_costs(&host, &format!("{base}/article.html"), rounds).await;
        host.shutdown().await;
        return;
    }

    let host = Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .expect("launch Chromium"),
    );
    print_machine(&host.browser_version());

    warm_snapshots(&host, &base, rounds).await;
    if std::env::args().any(|a| a == "--only-snapshot") {
        host.shutdown().await;
        return;
    }

    let browser = Browser::new(host.clone(), BrowserConfig::default());
    clicks(&browser, &base, rounds).await;

    println!(
        "\n## Stale refs (churn.html: look-alikes, renames, reloads between snapshot and click)"
    );
    stale_ref_safety(&browser, &format!("{base}/churn.html"), rounds * 2).await;

    println!("\n## A person takes control → the agent's operation stops ({rounds} rounds; ms)");
    takeover_latency(&host, &format!("{base}/form.html"), rounds).await;

    screenshot_costs(&host, &format!("{base}/article.html"), rounds).await;

    host.shutdown().await;
    navigation_with_and_without_policy(&base, rounds).await;
}

/// The warm snapshot table: the fixtures, a real Sphinx page and real
/// widget libraries (each page with the condition that says it is ready).
async fn warm_snapshots(host: &Arc<ChromiumHost>, base: &str, rounds: usize) {
    println!("\n## Warm snapshot, whole page ({rounds} rounds after 3 warm-up; ms)");
    println!(
        "{:<22} {:>8} {:>8} {:>9} {:>6} {:>8} | {:>10} {:>10} {:>10} | {:>10} {:>10}",
        "page",
        "p50",
        "p95",
        "bytes",
        "refs",
        "omitted",
        "AX p50",
        "AX p95",
        "AX bytes",
        "DOMSn p50",
        "DOMSn bytes"
    );
    let mut pages: Vec<(&str, String, &str)> = [
        "form.html",
        "spa.html",
        "article.html",
        "frames.html",
        "churn.html",
        "large.html",
    ]
    .into_iter()
    .map(|fixture| (fixture, format!("{base}/{fixture}"), "true"))
    .collect();
    if std::path::Path::new(PYTHON_DOCS)
        .join("library/functions.html")
        .exists()
    {
        pages.push((
            "Sphinx functions.html",
            format!("{base}/python-docs/library/functions.html"),
            "true",
        ));
    } else {
        println!("(no {PYTHON_DOCS}: install python3-doc for the Sphinx page)");
    }
    if std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/widgets/node_modules")
        .is_dir()
    {
        pages.push((
            "AG Grid 5,000 rows",
            format!("{base}/widgets/aggrid.html"),
            "window.gridReady === true",
        ));
        pages.push((
            "Monaco editor",
            format!("{base}/widgets/monaco.html"),
            "window.editorReady === true",
        ));
        pages.push((
            "APG grid 1,000 rows",
            format!("{base}/widgets/apg-grid.html"),
            "!!window.apg",
        ));
    } else {
        println!("(no fixtures/widgets/node_modules: run .ci/setup for the widget pages)");
    }
    let picked = pages_asked();
    for (name, url, ready) in &pages {
        if picked
            .as_ref()
            .is_some_and(|picked| !picked.iter().any(|p| p == name))
        {
            continue;
        }
        snapshot_costs(host, url, name, ready, rounds).await;
    }
}

/// Clicks, typing and filling → settled observation on several pages: the time, and the bytes of
/// the diff next to the full snapshot's.
async fn clicks(browser: &Browser, base: &str, rounds: usize) {
    println!("\n## Action → settled observation ({rounds} actions each way; ms)");
    // An action's result waits for the page's next animation frame. Back to
    // back, each action starts a fixed time after the last one's frame; an
    // agent that thinks between calls starts at any point of the frame.
    println!(
        "{:<26} {:>8} {:>8} | {:>8} {:>8} | {:>11} {:>11} {:>16}",
        "", "back to", "back", "after a", "pause", "", "", ""
    );
    println!(
        "{:<26} {:>8} {:>8} | {:>8} {:>8} | {:>11} {:>11} {:>16}",
        "fixture / target",
        "p50",
        "p95",
        "p50",
        "p95",
        "diff bytes",
        "full bytes",
        "median reduction"
    );
    click_costs(
        browser,
        &format!("{base}/form.html"),
        "form.html / Add one",
        rounds,
        |_| "button \"Add one\"".to_owned(),
    )
    .await;
    click_costs(
        browser,
        &format!("{base}/large.html"),
        "large.html / Order N",
        rounds,
        // The snapshot shows the first 50 rows of the table.
        |i| format!("button \"Order {}\"", i % 48 + 1),
    )
    .await;
    click_costs(
        browser,
        &format!("{base}/form.html"),
        "form.html / checkbox",
        rounds,
        |_| "checkbox \"I accept the terms\"".to_owned(),
    )
    .await;
    action_costs(
        browser,
        &format!("{base}/form.html"),
        "form.html / type",
        rounds,
        |_| "textbox \"Full name\"".to_owned(),
        // One letter a round: over all the rounds the field's value stays
        // under the snapshot's text limit, so every round's change shows.
        &Action::Type {
            text: "A".into(),
            submit: false,
        },
    )
    .await;
    action_costs(
        browser,
        &format!("{base}/form.html"),
        "form.html / type 30 chars",
        rounds,
        |_| "textbox \"Full name\"".to_owned(),
        // 30 key presses (keydown, keypress, input, keyup each) a round.
        &Action::Type {
            text: "Ada Lovelace, Countess of Love".into(),
            submit: false,
        },
    )
    .await;
    action_costs(
        browser,
        &format!("{base}/form.html"),
        "form.html / fill",
        rounds,
        |_| "textbox \"Email\"".to_owned(),
        &Action::Fill {
            text: "ada@example.test".into(),
            submit: false,
        },
    )
    .await;
    // A list that re-renders every item on each change (look-alikes).
    click_costs(
        browser,
        &format!("{base}/todo.html"),
        "todo.html / toggle",
        rounds,
        |_| "checkbox \"Toggle Milk\"".to_owned(),
    )
    .await;
    click_costs(
        browser,
        &format!("{base}/todo.html"),
        "todo.html / Add item",
        rounds,
        |_| "button \"Add item\"".to_owned(),
    )
    .await;
}

/// On the tab of `session`, round by round: the floor (`Page.navigate` to
/// `url` until the load event and the page's answer to a first command,
/// over raw CDP) and then our open of the same URL and the snapshot after
/// it, as an agent's navigation returns it. Each starts on a page that was
/// walked after its load. Returns the three series, one
/// entry per round, so that rounds can be compared pairwise.
async fn floor_on_the_agent_tab(
    host: &Arc<ChromiumHost>,
    browser: &Browser,
    session: &SessionId,
    url: &str,
    rounds: usize,
) -> TakingTurns {
    let tab = browser.active_tab(session).unwrap();
    let view = browser.view_of(session, &tab).unwrap();
    let mut turns = TakingTurns::default();
    for _ in 0..rounds {
        turns.floor.push(raw_navigation(host, &view, url).await.1);
        let cancel = CancellationToken::new();
        // Untimed, so that our open starts from a page as settled as the
        // floor's next round does (after our snapshot).
        browser
            .snapshot(session, &Scope::Page, &cancel)
            .await
            .unwrap();
        let started = Instant::now();
        browser.open(session, url, false, &cancel).await.unwrap();
        turns.open.push(ms(started.elapsed()));
        browser
            .snapshot(session, &Scope::Page, &cancel)
            .await
            .unwrap();
        turns.open_and_snapshot.push(ms(started.elapsed()));
    }
    turns
}

/// Rounds on one tab where the floor and our open took turns (ms, one
/// entry per round in each series).
#[derive(Default)]
struct TakingTurns {
    floor: Vec<f64>,
    open: Vec<f64>,
    open_and_snapshot: Vec<f64>,
}

/// The differences `ours[i] − floor[i]` of rounds that took turns: their
/// median, p25 and p75. A page's own time to load varies far more from
/// round to round (its first layout lands before or after its load event)
/// than what a tool adds, so differences within rounds say more about the
/// tool than the difference of two medians.
fn paired_differences(ours: &[f64], floor: &[f64]) -> (f64, f64, f64) {
    let mut differences: Vec<f64> = ours.iter().zip(floor).map(|(o, f)| o - f).collect();
    (
        percentile(&mut differences, 0.5),
        percentile(&mut differences, 0.25),
        percentile(&mut differences, 0.75),
    )
}

/// `Page.navigate` to `url` over raw CDP on `view` (its page events
/// enabled): ms until the load event, and until the page then answers a
/// first command (work a page does after its load event, such as scripts
/// and its first frame, holds any tool's first command).
async fn raw_navigation(host: &Arc<ChromiumHost>, view: &ViewId, url: &str) -> (f64, f64) {
    let bound = Duration::from_secs(30);
    let mut events = host.subscribe(view).await.unwrap();
    let started = Instant::now();
    host.send_command(view, "Page.navigate", json!({ "url": url }), bound)
        .await
        .unwrap();
    while events.recv().await.unwrap().method != "Page.loadEventFired" {}
    let to_load = ms(started.elapsed());
    host.send_command(
        view,
        "Runtime.evaluate",
        json!({ "expression": "0", "returnByValue": true }),
        bound,
    )
    .await
    .unwrap();
    (to_load, ms(started.elapsed()))
}

/// A viewport PNG through `Browser::screenshot`, next to the floor: the
/// bare `Page.captureScreenshot` (and decoding its base64) on another page
/// of the same browser showing the same URL.
async fn screenshot_costs(host: &Arc<ChromiumHost>, url: &str, rounds: usize) {
    let browser = Browser::new(host.clone(), BrowserConfig::default());
    let session = open(&browser, url).await;
    let (view, _page) = bare_page_at(host, url, Duration::from_secs(60)).await;
    let mut ours = Vec::new();
    let mut floor = Vec::new();
    let mut bytes = (0, 0);
    for round in 0..rounds + 3 {
        let started = Instant::now();
        let shot = browser
            .screenshot(&session, Default::default(), &CancellationToken::new())
            .await
            .unwrap();
        let took = ms(started.elapsed());
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
        let data = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(raw["data"].as_str().unwrap())
                .unwrap()
        };
        let raw_took = ms(started.elapsed());
        if round >= 3 {
            ours.push(took);
            floor.push(raw_took);
        }
        bytes = (shot.data.len(), data.len());
    }
    println!("\n## Screenshot, viewport PNG ({rounds} rounds after 3 warm-up; ms)");
    println!(
        "Browser::screenshot     p50 {:>7.1}  p95 {:>7.1}  {} bytes",
        percentile(&mut ours, 0.5),
        percentile(&mut ours, 0.95),
        bytes.0
    );
    println!(
        "floor (captureScreenshot) p50 {:>5.1}  p95 {:>7.1}  {} bytes",
        percentile(&mut floor, 0.5),
        percentile(&mut floor, 0.95),
        bytes.1
    );
    println!(
        "overhead over the floor (p50): {:+.1} ms",
        percentile(&mut ours, 0.5) - percentile(&mut floor, 0.5)
    );
    browser.close_session(&session).await.unwrap();
}

/// Open → loaded → snapshot, in a browser without and one with a host
/// policy on the wire (allow `127.0.0.1`), taking turns.
async fn navigation_with_and_without_policy(base: &str, rounds: usize) {
    use browser_provider::policy::NavigationPolicy;
    let policy = NavigationPolicy {
        allowed_hosts: vec!["127.0.0.1".into()],
        ..NavigationPolicy::default()
    };
    let plain = Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let guarded = Arc::new(
        ChromiumHost::launch(LaunchOptions {
            host_resolver_rules: policy.host_resolver_rules(),
            ..LaunchOptions::default()
        })
        .await
        .unwrap(),
    );
    let browsers = [
        (
            "no policy",
            Browser::new(plain.clone(), BrowserConfig::default()),
        ),
        (
            "allow 127.0.0.1",
            Browser::new(
                guarded.clone(),
                BrowserConfig {
                    policy,
                    ..BrowserConfig::default()
                },
            ),
        ),
    ];
    let mut pages = vec![("large.html", format!("{base}/large.html"))];
    if std::path::Path::new(PYTHON_DOCS)
        .join("library/functions.html")
        .exists()
    {
        pages.push((
            "Sphinx functions.html",
            format!("{base}/python-docs/library/functions.html"),
        ));
    } else {
        println!("(no {PYTHON_DOCS}: install python3-doc for the Sphinx page)");
    }
    println!("\n## Open → loaded → snapshot, with and without a host policy ({rounds} rounds; ms)");
    println!("{:<24} {:<34} {:>8} {:>8}", "page", "what", "p50", "p95");
    // The floor: a bare page of the same browser, `Page.navigate` until
    // `Page.loadEventFired`, nothing else.
    // Attached for its page events (the load event); kept to the end.
    let (view, bare) = bare_page(&plain).await;
    for (name, url) in &pages {
        let mut floor = Vec::new();
        let mut floor_answering = Vec::new();
        let mut snapshot_alone = Vec::new();
        for _ in 0..rounds {
            let (to_load, to_answer) = raw_navigation(&plain, &view, url).await;
            floor.push(to_load);
            floor_answering.push(to_answer);
        }
        println!(
            "{:<24} {:<34} {:>8.1} {:>8.1}",
            name,
            "floor: Page.navigate → load event",
            percentile(&mut floor, 0.5),
            percentile(&mut floor, 0.95)
        );
        println!(
            "{:<24} {:<34} {:>8.1} {:>8.1}",
            name,
            "floor: … → load → page answers",
            percentile(&mut floor_answering, 0.5),
            percentile(&mut floor_answering, 0.95)
        );
        let mut times: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
        // Where the time of "ours, no policy" goes: the open alone (to the
        // load event, and where it ended up), then the first snapshot of
        // the new document.
        let mut open_alone = Vec::new();
        let mut first_snapshot = Vec::new();
        let sessions = [
            open(&browsers[0].1, url).await,
            open(&browsers[1].1, url).await,
        ];
        for _ in 0..rounds {
            for (index, (_, browser)) in browsers.iter().enumerate() {
                let cancel = CancellationToken::new();
                let started = Instant::now();
                browser
                    .open(&sessions[index], url, false, &cancel)
                    .await
                    .unwrap();
                let opened = started.elapsed();
                browser
                    .snapshot(&sessions[index], &Scope::Page, &cancel)
                    .await
                    .unwrap();
                times[index].push(ms(started.elapsed()));
                if index == 0 {
                    open_alone.push(ms(opened));
                    first_snapshot.push(ms(started.elapsed() - opened));
                }
            }
        }
        // The same floor on the agent's own tab (its context, its domains),
        // taking turns with our open: the fairest comparison on a machine
        // whose speed drifts between the parts of a run.
        let turns = floor_on_the_agent_tab(&plain, &browsers[0].1, &sessions[0], url, rounds).await;
        // The snapshot's own cost, on the page as loaded.
        for _ in 0..rounds {
            let started = Instant::now();
            browsers[0]
                .1
                .snapshot(&sessions[0], &Scope::Page, &CancellationToken::new())
                .await
                .unwrap();
            snapshot_alone.push(ms(started.elapsed()));
        }
        let warm_snapshot = percentile(&mut snapshot_alone, 0.5);
        println!(
            "{:<24} {:<34} {:>8.1} {:>8.1}",
            name,
            "the snapshot alone (warm)",
            warm_snapshot,
            percentile(&mut snapshot_alone, 0.95)
        );
        let open_over_floor = paired_differences(&turns.open, &turns.floor);
        let navigation_over_floor = paired_differences(&turns.open_and_snapshot, &turns.floor);
        for (what, mut samples) in [
            ("floor on our tab, taking turns", turns.floor),
            ("ours, taking turns: the open", turns.open),
            ("ours, taking turns: open+snapshot", turns.open_and_snapshot),
        ] {
            println!(
                "{:<24} {:<34} {:>8.1} {:>8.1}",
                name,
                what,
                percentile(&mut samples, 0.5),
                percentile(&mut samples, 0.95)
            );
        }
        for (what, (median, p25, p75)) in [
            ("per round: open − floor", open_over_floor),
            ("per round: open+snapshot − floor", navigation_over_floor),
        ] {
            println!(
                "{:<24} {:<34} {:>+8.1}   (p25 {:+.1}, p75 {:+.1})",
                name, what, median, p25, p75
            );
        }
        println!(
            "{:<24} {:<34} {:>8.1} {:>8.1}",
            name,
            "ours, no policy: the open alone",
            percentile(&mut open_alone, 0.5),
            percentile(&mut open_alone, 0.95)
        );
        println!(
            "{:<24} {:<34} {:>8.1} {:>8.1}",
            name,
            "ours, no policy: the snapshot after",
            percentile(&mut first_snapshot, 0.5),
            percentile(&mut first_snapshot, 0.95)
        );
        for (index, (label, _)) in browsers.iter().enumerate() {
            println!(
                "{:<24} {:<34} {:>8.1} {:>8.1}",
                name,
                format!("ours, {label}"),
                percentile(&mut times[index], 0.5),
                percentile(&mut times[index], 0.95)
            );
        }
        println!(
            "{:<24} {:<34} {:>+8.1}",
            name,
            "ours − floor − snapshot (p50)",
            percentile(&mut times[0], 0.5)
                - percentile(&mut floor, 0.5)
                - percentile(&mut snapshot_alone, 0.5)
        );
        println!(
            "{:<24} {:<34} {:>+8.1}",
            name,
            "ours − floor(answers) − snapshot",
            percentile(&mut times[0], 0.5)
                - percentile(&mut floor_answering, 0.5)
                - percentile(&mut snapshot_alone, 0.5)
        );
    }
    drop(bare);
    plain.shutdown().await;
    guarded.shutdown().await;
}

async fn takeover_latency(host: &Arc<ChromiumHost>, url: &str, rounds: usize) {
    // A browser of its own: taking control affects every session of a browser.
    let browser = Browser::new(host.clone(), BrowserConfig::default());
    let session = open(&browser, url).await;
    let mut times = Vec::new();
    for _ in 0..rounds {
        let running = {
            let browser = browser.clone();
            let session = session.clone();
            tokio::spawn(async move {
                browser
                    .execute(
                        &session,
                        "new Promise(() => {})",
                        vec![],
                        Some(Duration::from_secs(60)),
                        &CancellationToken::new(),
                    )
                    .await
            })
        };
        // Give the call time to reach the page, then take over.
        let probe = browser
            .snapshot(&session, &Scope::Page, &CancellationToken::new())
            .await;
        assert!(probe.is_ok());
        let started = Instant::now();
        browser.take_control();
        let result = running.await.unwrap();
        times.push(ms(started.elapsed()));
        assert_eq!(result.unwrap_err().code(), "HUMAN_INTERVENED");
        browser.return_control();
    }
    println!(
        "p50 {:.2}  p95 {:.2}",
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.95)
    );
    browser.close_session(&session).await.unwrap();
}

fn print_machine(chromium: &str) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines().next().map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<u64>()
                    .unwrap_or(0)
                    / 1024
                    / 1024
            })
        })
        .unwrap_or(0);
    println!("# browser-shell snapshot benchmark");
    println!(
        "machine: {cpu}, {cores} cores, {memory} GiB; {chromium} (headless, pipe); build: {}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
}

/// `--pages a,b`, when given: only these pages of the warm snapshot table
/// (by the name it prints, such as `frames.html`).
fn pages_asked() -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--pages")?;
    let list = args
        .get(at + 1)
        .expect("--pages takes a comma-separated list");
    Some(list.split(',').map(str::to_owned).collect())
}

/// `--rounds N`, when given: how many rounds each measure takes.
fn rounds_asked() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--rounds")?;
    match args.get(at + 1).and_then(|n| n.parse().ok()) {
        Some(rounds) if rounds > 0 => Some(rounds),
        _ => panic!("--rounds takes a positive number"),
    }
}

async fn snapshot_costs(
    host: &Arc<ChromiumHost>,
    url: &str,
    name: &str,
    ready: &str,
    rounds: usize,
) {
    let (view, page) = bare_page(host).await;
    let budget = || Budget::new("bench", Duration::from_secs(60), CancellationToken::new());
    navigate(
        &page,
        NavigationTarget::Url(url.parse().unwrap()),
        &budget(),
    )
    .await
    .unwrap();
    // Pages that build themselves after load (grids, editors) say when they are done.
    let deadline = Instant::now() + Duration::from_secs(20);
    let is_ready = || async {
        host.send_command(
            &view,
            "Runtime.evaluate",
            json!({ "expression": ready, "returnByValue": true }),
            Duration::from_secs(10),
        )
        .await
        .ok()
        .and_then(|answer| answer["result"]["value"].as_bool())
            == Some(true)
    };
    while !is_ready().await {
        assert!(Instant::now() < deadline, "{name}: {ready} never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let limits = SnapshotLimits::default();

    let mut ours = Vec::new();
    let mut bytes = 0;
    let mut refs = 0;
    let mut omitted = 0;
    for round in 0..rounds + 3 {
        let started = Instant::now();
        let snap = observe::snapshot(&page, &Scope::Page, &limits, &budget())
            .await
            .unwrap();
        if round >= 3 {
            ours.push(ms(started.elapsed()));
        }
        bytes = snap.text.len();
        refs = snap.text.matches("[ref=").count();
        omitted = snap.omitted;
    }
    let raw = |method: &'static str, params: Value| {
        let host = host.clone();
        let view = view.clone();
        async move {
            let mut times = Vec::new();
            let mut size = 0;
            for round in 0..rounds.min(10) + 2 {
                let started = Instant::now();
                let result = host
                    .send_command(&view, method, params.clone(), Duration::from_secs(60))
                    .await
                    .unwrap();
                if round >= 2 {
                    times.push(ms(started.elapsed()));
                }
                size = result.to_string().len();
            }
            (times, size)
        }
    };
    let (mut ax, ax_bytes) = raw("Accessibility.getFullAXTree", json!({})).await;
    let (mut dom, dom_bytes) = raw(
        "DOMSnapshot.captureSnapshot",
        json!({"computedStyles": ["display", "visibility"], "includeDOMRects": true}),
    )
    .await;
    println!(
        "{:<22} {:>8.1} {:>8.1} {:>9} {:>6} {:>8} | {:>10.1} {:>10.1} {:>10} | {:>10.1} {:>10}",
        name,
        percentile(&mut ours, 0.5),
        percentile(&mut ours, 0.95),
        bytes,
        refs,
        omitted,
        percentile(&mut ax, 0.5),
        percentile(&mut ax, 0.95),
        ax_bytes,
        percentile(&mut dom, 0.5),
        dom_bytes
    );
    host.destroy_view(&view).await.unwrap();
}

async fn open(browser: &Browser, url: &str) -> SessionId {
    let session = browser
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    browser
        .open(&session, url, false, &CancellationToken::new())
        .await
        .unwrap();
    session
}

/// The ref of the first line that reads `- {role_and_name} …`, such as `button "Add one"`.
fn ref_of(snapshot: &str, role_and_name: &str) -> Ref {
    let prefix = format!("- {role_and_name} ");
    let line = snapshot
        .lines()
        .find(|l| l.trim_start().starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {role_and_name:?} in:\n{snapshot}"));
    let start = line.find("[ref=").unwrap() + 5;
    line[start..].split(']').next().unwrap().parse().unwrap()
}

async fn click_costs(
    browser: &Browser,
    url: &str,
    label: &str,
    rounds: usize,
    target: impl Fn(usize) -> String,
) {
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };
    action_costs(browser, url, label, rounds, target, &click).await;
}

/// `action` on the element `target(round)` names, after a fresh snapshot
/// each round: time to the settled observation, and its bytes. Every other
/// round pauses before the action, 0–16 ms spread evenly over the rounds,
/// so that those actions start at every point of the page's frame, as an
/// agent's do (it thinks between calls); the other rounds act at once.
async fn action_costs(
    browser: &Browser,
    url: &str,
    label: &str,
    rounds: usize,
    target: impl Fn(usize) -> String,
    action: &Action,
) {
    let cancel = CancellationToken::new();
    let session = open(browser, url).await;
    let mut back_to_back = Vec::new();
    let mut paused = Vec::new();
    let mut diff_bytes = Vec::new();
    let mut full_bytes = Vec::new();
    let mut reductions = Vec::new();
    for round in 0..2 * (rounds + 2) {
        let full = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .unwrap();
        let reference = ref_of(&full.text, &target(round));
        let pause = (round % 2 == 1).then(|| Duration::from_millis((round as u64 / 2 * 7) % 17));
        if let Some(pause) = pause {
            tokio::time::sleep(pause).await;
        }
        let started = Instant::now();
        let report = browser
            .act(&session, &Target::Ref(reference), action, &cancel)
            .await
            .unwrap();
        let took = ms(started.elapsed());
        if round < 4 {
            continue;
        }
        if pause.is_some() {
            paused.push(took);
        } else {
            back_to_back.push(took);
        }
        let shown = report.outcome.observation.shown_bytes();
        diff_bytes.push(shown as f64);
        full_bytes.push(full.text.len() as f64);
        reductions.push(100.0 * (1.0 - shown as f64 / full.text.len().max(1) as f64));
    }
    println!(
        "{:<26} {:>8.1} {:>8.1} | {:>8.1} {:>8.1} | {:>11.0} {:>11.0} {:>15.1}%",
        label,
        percentile(&mut back_to_back, 0.5),
        percentile(&mut back_to_back, 0.95),
        percentile(&mut paused, 0.5),
        percentile(&mut paused, 0.95),
        median(&mut diff_bytes),
        median(&mut full_bytes),
        median(&mut reductions)
    );
    browser.close_session(&session).await.unwrap();
}

async fn stale_ref_safety(browser: &Browser, url: &str, rounds: usize) {
    let cancel = CancellationToken::new();
    let session = open(browser, url).await;
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };
    let eval = |script: &str| {
        let script = script.to_owned();
        let session = session.clone();
        let cancel = cancel.clone();
        async move {
            match browser
                .execute(&session, &script, vec![], None, &cancel)
                .await
                .unwrap()
            {
                browser_provider::page::execute::ExecuteResult::Value { value, .. } => value,
                other => panic!("{other:?}"),
            }
        }
    };
    let (mut wrong, mut refused, mut done) = (0, 0, 0);
    for round in 0..rounds {
        // Fresh buttons each round (a rename from the last round is undone).
        eval("window.churn()").await;
        let snap = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .unwrap();
        let reference = ref_of(&snap.text, "button \"Pick 3\"");
        let serial = eval("document.querySelectorAll('#choices button')[2].dataset.serial").await;
        // What happens between the snapshot and the click.
        let disturbance = round % 4;
        match disturbance {
            0 => {}
            1 => {
                eval("window.churn()").await;
            }
            2 => {
                eval("document.querySelectorAll('#choices button')[2].textContent = 'Pick three'")
                    .await;
            }
            _ => {
                browser
                    .navigate(
                        &session,
                        browser_provider::browser::NavigationRequest::Reload,
                        &cancel,
                    )
                    .await
                    .unwrap();
            }
        }
        let before = eval("window.clicks.length").await.as_u64().unwrap_or(0);
        let result = browser
            .act(&session, &Target::Ref(reference), &click, &cancel)
            .await;
        let clicks: Vec<String> =
            serde_json::from_value(eval("window.clicks").await).unwrap_or_default();
        match result {
            Ok(_) => {
                done += 1;
                // Only an undisturbed element may be clicked, and only that one.
                let hit_the_same = clicks.len() as u64 == before + 1
                    && clicks.last().map(String::as_str) == serial.as_str();
                if disturbance != 0 || !hit_the_same {
                    wrong += 1;
                }
            }
            Err(BrowserError::StaleRef { .. }) => {
                refused += 1;
                if clicks.len() as u64 != before {
                    wrong += 1;
                }
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    println!(
        "{rounds} actions: {done} done on the right element, {refused} refused as STALE_REF, wrong element: {wrong}"
    );
    browser.close_session(&session).await.unwrap();
}
