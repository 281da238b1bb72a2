//! `browser-shell mcp --http`: MCP over streamable HTTP on loopback with a
//! bearer token; two MCP sessions are two agents that cannot touch each
//! other's tabs. A raw HTTP/1.1 client keeps the test honest about headers.

use crate::common;

use common::{Agent, Endpoint, post};

use std::path::Path;

use axum::Router;
use serde_json::json;
use tower_http::services::ServeDir;

#[tokio::test]
async fn http_needs_the_token_and_keeps_agents_apart() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let fixtures = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", fixtures.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(fixtures, Router::new().fallback_service(ServeDir::new(dir))).await
    });

    let (child, printed) = common::start_shell(&["mcp", "--http", "127.0.0.1:0"], 2).await;
    let endpoint = endpoint_of(printed);
    assert_eq!(endpoint.token.len(), 64);

    // No token, a wrong token, a foreign page: refused, nothing leaked.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let (status, _, body) = post(&endpoint, &[], &ping).await;
    assert_eq!(status, 401);
    assert!(!body.contains(&endpoint.token));
    let (status, _, _) = post(&endpoint, &[("Authorization", "Bearer 0000")], &ping).await;
    assert_eq!(status, 401);
    let auth = format!("Bearer {}", endpoint.token);
    let (status, _, _) = post(
        &endpoint,
        &[("Authorization", &auth), ("Origin", "https://evil.test")],
        &ping,
    )
    .await;
    assert_eq!(status, 403);

    // Two agents: one cannot see or touch the other's tab.
    let mut first = Agent::connect(&endpoint).await;
    let mut second = Agent::connect(&endpoint).await;
    let (text, error) = first
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error && text.contains("in tab t"), "{text}");
    let tab = text
        .split("in tab ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let (text, error) = second.call("browser_switch_tab", json!({"tab": tab})).await;
    assert!(error && text.starts_with("Error TAB_NOT_OWNED"), "{text}");
    let (text, _) = second.call("browser_list_tabs", json!({})).await;
    assert!(text.starts_with("No tabs"), "{text}");
    let (text, error) = first.call("browser_list_tabs", json!({})).await;
    assert!(!error && text.contains(&tab), "{text}");

    // Malformed input is refused and the server keeps serving.
    for garbage in ["{not json", "[1, 2]"] {
        let (status, _, body) = common::post_text(
            &endpoint,
            &[
                ("Authorization", &auth),
                ("Mcp-Session-Id", first.session()),
            ],
            garbage,
        )
        .await;
        assert!((400..500).contains(&status), "{garbage}: {status} {body}");
    }
    let (text, error) = first.call("browser_list_tabs", json!({})).await;
    assert!(!error && text.contains(&tab), "{text}");

    // SIGTERM shuts down in order and the process exits by itself.
    common::stop_shell(child).await;
}

/// The endpoint and token `mcp --http` printed.
fn endpoint_of(printed: Vec<String>) -> Endpoint {
    let [url_line, token_line] = <[String; 2]>::try_from(printed).unwrap();
    let url = url_line
        .strip_prefix("MCP over HTTP: http://")
        .expect("the endpoint line")
        .to_owned();
    let (host, path) = url.split_once('/').unwrap();
    Endpoint {
        host: host.to_owned(),
        path: format!("/{path}"),
        token: token_line
            .strip_prefix("Authorization: Bearer ")
            .expect("the token line")
            .to_owned(),
    }
}

/// Clients are answered while the browser starts: with a "browser" that
/// never comes up (a program that only sleeps), `initialize` is answered
/// all the same, and SIGTERM ends the server at once, the launch with it,
/// instead of after the launch's own 30 s bound.
#[tokio::test]
async fn clients_are_answered_while_the_browser_starts() {
    let dir = tempfile::tempdir().unwrap();
    // It says its pid through a named pipe once it runs.
    let started = dir.path().join("started");
    let fifo = std::ffi::CString::new(started.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let never_ready = dir.path().join("never-ready");
    let script = format!(
        "#!/bin/sh\necho $$ > '{}'\nexec sleep 300\n",
        started.display()
    );
    std::fs::write(&never_ready, script).unwrap();
    std::fs::set_permissions(
        &never_ready,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (mut child, printed) = common::start_shell(
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--browser",
            never_ready.to_str().unwrap(),
        ],
        2,
    )
    .await;
    let endpoint = endpoint_of(printed);
    let agent = Agent::connect(&endpoint).await;
    assert!(agent.instructions.contains("browser_open"));
    let mut pid = String::new();
    // Read-write, so that no writer yet is not the end of the pipe.
    let said = tokio::net::unix::pipe::OpenOptions::new()
        .read_write(true)
        .open_receiver(&started)
        .unwrap();
    let mut said = tokio::io::BufReader::new(said);
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::io::AsyncBufReadExt::read_line(&mut said, &mut pid),
    )
    .await
    .expect("the browser is launched")
    .unwrap();
    let launching: u32 = pid.trim().parse().unwrap();
    assert!(child.try_wait().unwrap().is_none());
    let shell = child.id().unwrap();

    // SAFETY: signalling the child we started.
    unsafe { libc::kill(shell as i32, libc::SIGTERM) };
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("the launch does not hold up the exit")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(
        common::wait_for_exit(launching, std::time::Duration::from_secs(5)).await,
        "the browser being launched is stopped"
    );
}
