//! A serving shell as operators and balancers see it (issue 41): `/healthz`
//! and `/readyz` for anyone, `/metrics` behind the token in the Prometheus
//! text format, and SIGTERM draining: readiness 503 at once, no new
//! session, the call under way finishing within its own bound, then exit.

use crate::common;

use std::time::Duration;

use common::{Agent, Endpoint};
use serde_json::json;

/// The endpoint `mcp --http` printed.
fn endpoint_of(printed: &[String]) -> Endpoint {
    let url = printed[0].strip_prefix("MCP over HTTP: http://").unwrap();
    let (host, path) = url.split_once('/').unwrap();
    Endpoint {
        host: host.to_owned(),
        path: format!("/{path}"),
        token: printed[1]
            .strip_prefix("Authorization: Bearer ")
            .unwrap()
            .to_owned(),
    }
}

#[tokio::test]
async fn probes_metrics_and_a_drain_that_lets_calls_finish() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let (shell, printed) = common::start_shell(&["mcp", "--http", "127.0.0.1:0"], 2).await;
    let endpoint: &'static Endpoint = Box::leak(Box::new(endpoint_of(&printed)));
    let host = endpoint.host.as_str();
    let auth = format!("Bearer {}", endpoint.token);

    assert_eq!(common::get(host, "/healthz", &[]).await.0, 200);
    let mut agent = Agent::connect(endpoint).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");
    // Ready once its browser runs (the open above needed it).
    let (status, body) = common::get(host, "/readyz", &[]).await;
    assert_eq!(status, 200, "{body}");

    // Metrics want the token, and count the call by tool and outcome.
    assert_eq!(common::get(host, "/metrics", &[]).await.0, 401);
    let (status, metrics) = common::get(host, "/metrics", &[("Authorization", &auth)]).await;
    assert_eq!(status, 200, "{metrics}");
    for expected in [
        r#"browser_shell_tool_calls_total{tool="browser_open",outcome="OK"} 1"#,
        "browser_shell_tool_call_seconds_bucket{",
        "browser_shell_sessions 1",
        "# EOF",
    ] {
        assert!(
            metrics.contains(expected),
            "missing {expected:?} in:\n{metrics}"
        );
    }

    // A call that takes a while, under way when SIGTERM comes.
    let waiting = tokio::spawn(async move {
        agent
            .call(
                "browser_wait",
                json!({"text": "Never there", "timeoutMs": 2500}),
            )
            .await
    });
    let under_way = async {
        loop {
            let (_, metrics) = common::get(host, "/metrics", &[("Authorization", &auth)]).await;
            if metrics.contains("browser_shell_tool_calls_in_flight 1") {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), under_way)
        .await
        .expect("the wait is under way");
    let pid = shell.id().unwrap();
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    // Not ready at once, and no new session; the call goes on.
    let unready = async {
        loop {
            if common::get(host, "/readyz", &[]).await.0 == 503 {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(2), unready)
        .await
        .expect("readiness turns 503 at once");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "late", "version": "1"}}});
    let (status, _, _) = common::post(endpoint, &[("Authorization", &auth)], &init).await;
    assert_eq!(status, 503, "a new session is refused while draining");
    let (text, error) = waiting.await.unwrap();
    assert!(
        error && text.starts_with("Error TIMEOUT"),
        "the call ended within its own bound: {text}"
    );
    // Then the shell exits by itself, well within the drain's bound.
    assert!(
        common::wait_for_exit(pid, Duration::from_secs(20)).await,
        "the shell exits after the drain"
    );
}
