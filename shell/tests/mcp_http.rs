//! `browser-shell mcp --http`: MCP over streamable HTTP on loopback with a
//! bearer token; two MCP sessions are two agents that cannot touch each
//! other's tabs. A raw HTTP/1.1 client keeps the test honest about headers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
    let [url_line, token_line] = <[String; 2]>::try_from(printed).unwrap();
    let url = url_line
        .strip_prefix("MCP over HTTP: http://")
        .expect("the endpoint line")
        .to_owned();
    let (host, path) = url.split_once('/').unwrap();
    let endpoint = Endpoint {
        host: host.to_owned(),
        path: format!("/{path}"),
        token: token_line
            .strip_prefix("Authorization: Bearer ")
            .expect("the token line")
            .to_owned(),
    };
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
