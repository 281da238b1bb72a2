//! `browser-shell mcp` driven as a real stdio child with raw JSON-RPC, a
//! real Chromium behind it, and fixtures served on 127.0.0.1. Every read is
//! bounded, so a hang fails the test instead of stalling the suite.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::mcp_stdio::Client;

/// `browser-shell mcp EXTRA_ARGS` logging at `log_level`, initialized.
async fn mcp_with(extra_args: &[&str], log_level: &str, stderr: Stdio) -> Client {
    let mut command = Command::new(env!("CARGO_BIN_EXE_browser-shell"));
    command
        .arg("mcp")
        .args(extra_args)
        .env("RUST_LOG", log_level)
        .stderr(stderr);
    Client::start(command).await
}

/// `browser-shell mcp`, initialized.
async fn mcp() -> Client {
    mcp_with(&[], "warn", Stdio::inherit()).await
}

fn ref_of(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no {needle:?} in:\n{text}"));
    let start = line.find("[ref=").unwrap() + 5;
    line[start..].split(']').next().unwrap().to_owned()
}

#[tokio::test]
async fn an_agent_works_a_page_through_the_tools() {
    let base = serve_fixtures().await;
    let mut client = mcp().await;

    let tools = client.request("tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "browser_open",
        "browser_snapshot",
        "browser_act",
        "browser_navigate",
        "browser_execute",
        "browser_content",
        "browser_screenshot",
        "browser_list_tabs",
        "browser_switch_tab",
        "browser_close_tab",
        "browser_reset",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let open_schema = &tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "browser_open")
        .unwrap()["inputSchema"];
    assert_eq!(open_schema["required"], json!(["url"]), "{open_schema}");

    // Open: a snapshot with refs, page text fenced as untrusted.
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");
    assert!(
        text.contains("Opened") && text.contains("in tab t"),
        "{text}"
    );
    assert!(
        text.contains("<<<untrusted-snapshot") && text.contains(">>>end-snapshot"),
        "{text}"
    );
    assert!(text.contains("- button \"Add one\" [ref="), "{text}");
    assert!(!text.contains("correct-horse"), "passwords stay masked");

    // Act: a diff that keeps refs.
    let add = ref_of(&text, "button \"Add one\"");
    let (text, error, _) = client
        .call_result("browser_act", json!({"action": "click", "ref": add}))
        .await;
    assert!(!error, "{text}");
    assert!(text.contains("Changes since generation"), "{text}");
    let name = ref_of(
        &client.call_result("browser_snapshot", json!({})).await.0,
        "textbox \"Full name\"",
    );
    let (text, error, _) = client
        .call_result(
            "browser_act",
            json!({"action": "fill", "ref": name, "text": "Ada"}),
        )
        .await;
    assert!(!error && text.contains("Ada"), "{text}");

    // Bad arguments and blocked URLs are tool errors with a code, a hint, and the field.
    let (text, error, _) = client
        .call_result("browser_open", json!({"newTab": true}))
        .await;
    assert!(
        error
            && text.starts_with("Error INVALID_ARGUMENT")
            && text.contains("url")
            && text.contains("Hint:"),
        "{text}"
    );
    let (text, error, _) = client
        .call_result(
            "browser_act",
            json!({"action": "click", "ref": add, "colour": "red"}),
        )
        .await;
    assert!(error && text.contains("colour"), "{text}");
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": "file:///etc/passwd"}))
        .await;
    assert!(
        error && text.starts_with("Error NAVIGATION_BLOCKED"),
        "{text}"
    );

    // Content, execute, screenshot.
    let (text, error, _) = client
        .call_result("browser_content", json!({"format": "json"}))
        .await;
    assert!(
        !error && text.contains("\"title\": \"Sign-up form\""),
        "{text}"
    );
    let (text, error, _) = client
        .call_result(
            "browser_execute",
            json!({"script": "arguments[0] * 2", "args": [21]}),
        )
        .await;
    assert!(!error && text.contains("42"), "{text}");
    let (text, error, _) = client
        .call_result(
            "browser_execute",
            json!({"script": "throw new Error('nope')"}),
        )
        .await;
    assert!(error && text.contains("Error: nope"), "{text}");
    let (text, error, result) = client.call_result("browser_screenshot", json!({})).await;
    assert!(!error, "{text}");
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["content"][1]["mimeType"], "image/png");

    // Tabs.
    let (text, _, _) = client
        .call_result(
            "browser_open",
            json!({"url": format!("{base}/article.html"), "newTab": true}),
        )
        .await;
    assert!(text.contains("Field Guide to Owls"), "{text}");
    let (text, _, _) = client.call_result("browser_list_tabs", json!({})).await;
    let own = text.split("The person's tabs").next().unwrap();
    assert_eq!(own.matches("\nt").count(), 2, "{text}");
    let (text, error, _) = client
        .call_result("browser_switch_tab", json!({"tab": "t999"}))
        .await;
    assert!(error && text.starts_with("Error TAB_NOT_FOUND"), "{text}");
    let (text, error, _) = client.call_result("browser_reset", json!({})).await;
    assert!(!error, "{text}");
    let (text, _, _) = client.call_result("browser_list_tabs", json!({})).await;
    assert!(text.starts_with("No tabs"), "{text}");

    // Closing stdin ends the session and the server exits by itself.
    client.finish().await;
}

#[tokio::test]
async fn cancelling_a_call_stops_the_work_in_the_page() {
    let base = serve_fixtures().await;
    let mut client = mcp().await;
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/index.html")}))
        .await;
    assert!(!error, "{text}");

    // A runaway script blocks the page until it is stopped.
    let runaway = client.take_id();
    client
        .send(json!({"jsonrpc": "2.0", "id": runaway, "method": "tools/call", "params": {"name": "browser_execute", "arguments": {"script": "while (true) {}", "timeoutMs": 600000}}}))
        .await;
    // Liveness first: the server answers while the script runs.
    let pong = client.request("ping", json!({})).await;
    assert!(pong.get("result").is_some(), "{pong}");
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": runaway, "reason": "test"}),
        )
        .await;

    // The page answers again only if the cancelled script was terminated.
    let started = std::time::Instant::now();
    let (text, error, _) = client
        .call_result("browser_execute", json!({"script": "1 + 1"}))
        .await;
    assert!(!error && text.contains('2'), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the cancelled script was stopped: {:?}",
        started.elapsed()
    );
    client.finish().await;
}

/// A page that opens alerts forever: `browser_open` keeps the bound it
/// states (`navigationTimeoutMs`, plus a second) for the whole call, the
/// snapshot after it included, says the page does not respond and how many
/// dialogs it answered, and the tab serves the next calls. (The snapshot
/// after the navigation once got 2 s more: 32.2 s for a 30 s bound.)
/// The per-call bound (`timeoutMs`) is short too, so that a look at the
/// page ends quickly whatever it meets.
#[tokio::test]
async fn a_page_that_alerts_forever_keeps_browser_open_s_bound() {
    let bound = Duration::from_secs(3);
    let call_bound = Duration::from_secs(5);
    let base = serve_fixtures().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "navigationTimeoutMs = {}\ntimeoutMs = {}\n",
            bound.as_millis(),
            call_bound.as_millis()
        ),
    )
    .unwrap();
    let mut client = mcp_with(
        &["--config", config.to_str().unwrap()],
        "warn",
        Stdio::inherit(),
    )
    .await;
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/index.html")}))
        .await;
    assert!(!error, "{text}");

    let started = std::time::Instant::now();
    let (text, error, _) = client
        .call_result(
            "browser_open",
            json!({"url": format!("{base}/dialog-loop.html")}),
        )
        .await;
    let took = started.elapsed();
    assert!(
        took < bound + Duration::from_secs(1),
        "browser_open took {took:?} for its {bound:?} bound"
    );
    assert!(!error, "{text}");
    assert!(text.contains("the page does not respond"), "{text}");
    assert!(text.contains("dialogs; all were answered"), "{text}");
    assert!(text.contains("main thread is busy"), "{text}");

    // The next calls on the tab: a look ends (with what it saw or in
    // TIMEOUT) within its bound, and navigating away works, in the same tab.
    let started = std::time::Instant::now();
    let (text, error, _) = client.call_result("browser_snapshot", json!({})).await;
    let took = started.elapsed();
    assert!(
        took < call_bound + Duration::from_secs(1),
        "browser_snapshot took {took:?} for its {call_bound:?} bound"
    );
    assert!(!error || text.starts_with("Error TIMEOUT"), "{text}");
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/index.html")}))
        .await;
    assert!(!error, "{text}");
    assert!(text.contains("in tab t1 (HTTP 200)"), "{text}");
    client.finish().await;
}

/// A task on a real data grid (AG Grid, pinned in `fixtures/widgets/`)
/// through the tools alone: the snapshot shows the grid and its headers with
/// refs, a header is clicked by role and name to sort, and a row far below
/// the rendered window is clicked by role and name; `browser_execute` only
/// checks the outcome.
#[tokio::test]
async fn an_agent_sorts_a_real_data_grid_through_the_tools() {
    let base = serve_fixtures().await;
    let mut client = mcp().await;
    let (text, error, _) = client
        .call_result(
            "browser_open",
            json!({"url": format!("{base}/widgets/aggrid.html")}),
        )
        .await;
    assert!(!error, "{text}");
    let (text, error, _) = client
        .call_result(
            "browser_wait",
            json!({"role": "columnheader", "name": "Weight (t)"}),
        )
        .await;
    assert!(!error, "{text}");
    let (text, error, _) = client.call_result("browser_snapshot", json!({})).await;
    assert!(!error, "{text}");
    assert!(text.contains(" of 5001]"), "{text}");
    assert!(
        text.contains("- columnheader \"Weight (t)\" [ref="),
        "{text}"
    );

    let (text, error, _) = client
        .call_result(
            "browser_act",
            json!({"action": "click", "role": "columnheader", "name": "Weight (t)"}),
        )
        .await;
    assert!(!error, "{text}");
    assert!(text.contains("[sort=ascending]"), "{text}");
    let (text, error, _) = client
        .call_result(
            "browser_act",
            json!({"action": "click", "role": "gridcell", "name": "INV-04321"}),
        )
        .await;
    assert!(!error, "{text}");
    let (text, error, _) = client
        .call_result(
            "browser_execute",
            json!({"script": "return [sortState()[0].colId, gridApi.getDisplayedRowAtIndex(gridApi.getFocusedCell().rowIndex).data.id]"}),
        )
        .await;
    assert!(!error, "{text}");
    assert!(
        text.contains("\"weight\"") && text.contains("\"INV-04321\""),
        "{text}"
    );
    client.finish().await;
}

#[tokio::test]
async fn an_idle_session_ends_after_its_lease() {
    let base = serve_fixtures().await;
    let mut client = mcp_with(&["--lease-ms", "400"], "browser_tools=info", Stdio::piped()).await;
    let mut log = BufReader::new(client.child.stderr.take().unwrap()).lines();
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/index.html")}))
        .await;
    assert!(!error, "{text}");
    // Wait (bounded) for the server to say the lease ended the session.
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = log.next_line().await {
            if line.contains("session idle past its lease") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(ended, "the lease ended the session");
    // The next call starts a fresh session: the old tabs are gone.
    let (text, _, _) = client.call_result("browser_list_tabs", json!({})).await;
    assert!(text.starts_with("No tabs"), "{text}");
    client.finish().await;
}

#[tokio::test]
async fn malformed_input_gets_an_error_and_the_server_keeps_serving() {
    let mut client = mcp().await;
    // JSON that is not a valid JSON-RPC message gets an Invalid Request error.
    for garbage in [
        "[1, 2]",
        r#"{"jsonrpc": "2.0", "id": 41, "params": {}}"#,
        r#"{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": "not an object"}"#,
    ] {
        client.send_raw(garbage).await;
        let answer = client.next_message().await;
        assert_eq!(answer["error"]["code"], -32600, "{garbage}: {answer}");
    }
    // Bytes that are not JSON at all are dropped without an answer (the SDK's
    // choice, shared by the official MCP SDKs: answering could start an error
    // storm with a peer that echoes); the next request is answered as usual.
    client.send_raw("{not json").await;
    let pong = client.request("ping", json!({})).await;
    assert!(pong.get("result").is_some(), "{pong}");
    // An unknown method is Method Not Found.
    let answer = client.request("no/such/method", json!({})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // And the server still serves.
    let (text, error, _) = client.call_result("browser_list_tabs", json!({})).await;
    assert!(!error && text.starts_with("No tabs"), "{text}");
    client.finish().await;
}

#[tokio::test]
async fn a_long_wait_reports_progress() {
    let base = serve_fixtures().await;
    let mut client = mcp().await;
    let (text, error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/index.html")}))
        .await;
    assert!(!error, "{text}");
    // Nobody is watching: the handoff waits out its bound, telling the client it waits.
    let id = client.take_id();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "browser_handoff",
                "arguments": {"reason": "Please sign in", "timeoutMs": 2500},
                "_meta": {"progressToken": "wait-1"}
            }}),
        )
        .await;
    let mut progress = Vec::new();
    let answer = loop {
        let message = client.next_message().await;
        if message["method"] == "notifications/progress" {
            progress.push(message["params"].clone());
        } else if message["id"] == json!(id) {
            break message;
        }
    };
    assert!(!progress.is_empty(), "no progress before {answer}");
    assert_eq!(progress[0]["progressToken"], "wait-1");
    assert!(
        progress[0]["message"]
            .as_str()
            .unwrap()
            .contains("waiting for the person"),
        "{progress:?}"
    );
    assert!(answer.get("result").is_some(), "{answer}");
    client.finish().await;
}

/// The Chromium that the shell `shell` launched (its child on the debugging pipe).
fn browser_of(shell: u32) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, after)| after.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            parent == Some(shell)
                && String::from_utf8_lossy(&cmdline).contains("--remote-debugging-pipe")
        })
}

#[tokio::test]
async fn the_server_outlives_a_killed_browser() {
    let base = serve_fixtures().await;
    let mut client = mcp().await;
    let shell = client.child.id().unwrap();
    let (text, is_error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!is_error, "{text}");

    // A wait in flight (its first progress report says it runs) when the
    // browser is killed as the OOM killer would.
    let id = 900;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "browser_wait",
                "arguments": {"text": "never on this page", "timeoutMs": 20000},
                "_meta": {"progressToken": "kill-1"}
            }}),
        )
        .await;
    loop {
        let message = client.next_message().await;
        if message["method"] == "notifications/progress" {
            break;
        }
        assert_ne!(message["id"], json!(id), "the wait ended early: {message}");
    }
    let browser = browser_of(shell).expect("the shell's browser");
    let killed_at = std::time::Instant::now();
    // SAFETY: signalling the browser this test's shell launched.
    unsafe { libc::kill(browser, libc::SIGKILL) };
    let answer = loop {
        let message = client.next_message().await;
        if message["id"] == json!(id) {
            break message;
        }
    };
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    assert!(text.contains("BROWSER_RESTARTED"), "{text}");
    assert!(text.contains("killed by signal 9"), "{text}");
    assert!(
        killed_at.elapsed() < Duration::from_secs(5),
        "failed promptly: {:?}",
        killed_at.elapsed()
    );

    // The next call runs normally on the reopened tab and says what happened, once.
    let (text, is_error, _) = client.call_result("browser_snapshot", json!({})).await;
    assert!(!is_error, "{text}");
    assert!(
        text.contains("the browser stopped (killed by signal 9"),
        "{text}"
    );
    assert!(text.contains("your tab t1 was reopened"), "{text}");
    assert!(text.contains("/form.html"), "{text}");
    let (text, is_error, _) = client.call_result("browser_snapshot", json!({})).await;
    assert!(!is_error, "{text}");
    assert!(!text.contains("restarted"), "the notice comes once: {text}");
    assert_ne!(browser_of(shell), Some(browser), "a new browser runs");
    client.finish().await;
}

#[tokio::test]
async fn a_client_that_vanishes_mid_call_ends_the_server_cleanly() {
    let base = serve_fixtures().await;
    let mut client = mcp().await;
    let shell = client.child.id().unwrap();
    let (text, is_error, _) = client
        .call_result("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!is_error, "{text}");
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": {
                "name": "browser_wait",
                "arguments": {"text": "never on this page", "timeoutMs": 20000},
                "_meta": {"progressToken": "gone-1"}
            }}),
        )
        .await;
    loop {
        if client.next_message().await["method"] == "notifications/progress" {
            break;
        }
    }
    let browser = browser_of(shell).expect("the shell's browser");
    // The client goes away: both pipes close, mid-call.
    let mut child = client.hang_up();
    let started = std::time::Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server ends, not at the wait's 20 s bound")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // SAFETY: signal 0 only checks whether the process exists.
    let alive = unsafe { libc::kill(browser, 0) } == 0;
    assert!(!alive, "its browser is gone too");
}

/// The server answers its client while the browser starts; a browser that
/// cannot start is then the answer to every call (the client shows it),
/// the tools are listed all the same, and the server ends with a failure
/// when the client leaves.
#[tokio::test]
async fn a_browser_that_cannot_start_is_the_answer_to_every_call() {
    let mut client = mcp_with(
        &["--browser", "/nonexistent/chromium"],
        "warn",
        Stdio::null(),
    )
    .await;
    let tools = client.request("tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() > 10),
        "{tools}"
    );
    for _ in 0..2 {
        let (text, is_error, _) = client
            .call_result("browser_open", json!({"url": "http://127.0.0.1:9/"}))
            .await;
        assert!(is_error, "{text}");
        assert!(
            text.contains("BROWSER_NOT_FOUND") && text.contains("/nonexistent/chromium"),
            "{text}"
        );
    }
    let (status, _) = client.close().await;
    assert!(!status.success(), "{status}");
}
