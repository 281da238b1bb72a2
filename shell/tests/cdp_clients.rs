//! Playwright's `connectOverCDP` and Puppeteer's `connect` drive the
//! shell's Chromium through the CDP endpoint, beside an agent, in both
//! scopes: with `own` (the default) the agent's tab is not among the pages
//! they see, with `full` it is. The clients are the real npm packages
//! (`shell/tests/clients`, installed by `.ci/setup`) run by Node.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use browser_testkit::fixtures::serve_fixtures;
use common::Agent;
use serde_json::{Value, json};

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Runs one client script; returns what it printed (one JSON object).
async fn run_client(script: &str, endpoint: &str, base: &str) -> Value {
    let dir = clients_dir();
    assert!(
        dir.join("node_modules/playwright-core").is_dir()
            && dir.join("node_modules/puppeteer-core").is_dir(),
        "the CDP clients are not installed: run .ci/setup (npm ci in shell/tests/clients)"
    );
    let run = tokio::process::Command::new("node")
        .arg(script)
        .current_dir(&dir)
        .env("CDP_ENDPOINT", endpoint)
        .env("BASE", base)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the client finishes within 60 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script}: {stdout}\n{stderr}");
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{script} printed {stdout:?}: {e}"))
}

async fn both_clients_in(scope: &str) {
    let base = serve_fixtures().await;
    let (relay, endpoint, printed) =
        common::start_relay(&["--cdp-endpoint", "--cdp-endpoint-scope", scope], 4).await;
    let websocket_url = common::cdp_endpoint_url(&printed);
    let mut agent = Agent::connect(&endpoint).await;
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error, "{text}");
    for (script, typed) in [
        ("playwright.js", "Playwright"),
        ("puppeteer.js", "Puppeteer"),
    ] {
        let report = run_client(script, &websocket_url, &base).await;
        assert_eq!(report["name"], typed, "{script}: {report}");
        let seen: Vec<&str> = report["seen"]
            .as_array()
            .unwrap()
            .iter()
            .map(|url| url.as_str().unwrap())
            .collect();
        assert!(
            seen.iter().any(|url| url.ends_with("/form.html")),
            "{script} sees its own page: {seen:?}"
        );
        let sees_the_agents = seen.iter().any(|url| url.ends_with("/article.html"));
        assert_eq!(
            sees_the_agents,
            scope == "full",
            "{script} in scope {scope}: {seen:?}"
        );
        // The agent carries on.
        let (text, error) = agent.call("browser_snapshot", json!({})).await;
        assert!(!error && text.contains("Field Guide to Owls"), "{text}");
    }
    common::stop_shell(relay).await;
}

#[tokio::test]
async fn playwright_and_puppeteer_work_in_the_own_scope() {
    both_clients_in("own").await;
}

#[tokio::test]
async fn playwright_and_puppeteer_work_in_the_full_scope() {
    both_clients_in("full").await;
}
