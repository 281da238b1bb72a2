//! An MCP client from the SDK (rmcp) runs the same scripted session over
//! stdio (`browser-shell mcp` as a child) and over streamable HTTP (the
//! relay's `/mcp`, and `mcp --connect` attached to it): initialize, the
//! exact tool set with valid JSON Schemas, open → snapshot → act → diff →
//! content → screenshot → execute → tabs → errors → a cancelled long wait.

use crate::common;

use std::time::Duration;

use base64::Engine;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

/// The tools every default server offers, by their seed-plugin names.
const TOOLS: [&str; 17] = [
    "browser_act",
    "browser_claim_tab",
    "browser_close_tab",
    "browser_console",
    "browser_content",
    "browser_execute",
    "browser_handoff",
    "browser_inspect",
    "browser_list_tabs",
    "browser_navigate",
    "browser_network",
    "browser_open",
    "browser_reset",
    "browser_screenshot",
    "browser_snapshot",
    "browser_switch_tab",
    "browser_wait",
];

/// Calls a tool; returns (text of the first block, is_error, whole result).
async fn call(client: &Client, name: &str, arguments: Value) -> (String, bool, Value) {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        client.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)),
    )
    .await
    .expect("a tool call answers within 60 s")
    .unwrap();
    let result = serde_json::to_value(result).unwrap();
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let is_error = result["isError"].as_bool().unwrap_or(false);
    (text, is_error, result)
}

/// The tab handle in "Opened … in tab t3 (…)".
fn tab_of(opened: &str) -> String {
    let start = opened.find("in tab ").expect("a tab handle") + 7;
    opened[start..].split(' ').next().unwrap().to_owned()
}

fn ref_of(snapshot: &str, text: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no {text:?} in:\n{snapshot}"));
    let start = line.find("[ref=").unwrap() + 5;
    line[start..].split(']').next().unwrap().to_owned()
}

async fn scripted_session(client: &Client, base: &str) {
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("browser-shell")
    );

    // The exact tool set, each schema a valid JSON Schema that accepts a
    // good call and refuses a misspelt field.
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        jsonschema::meta::validate(&schema)
            .unwrap_or_else(|e| panic!("{}: invalid schema: {e}\n{schema}", tool.name));
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(
            !validator.is_valid(&json!({"noSuchField": 1})),
            "{} refuses unknown fields",
            tool.name
        );
        assert!(
            tool.description.as_ref().is_some_and(|d| d.len() > 20),
            "{} explains itself",
            tool.name
        );
    }
    let open_schema = Value::Object(
        (*tools
            .iter()
            .find(|t| t.name == "browser_open")
            .unwrap()
            .input_schema)
            .clone(),
    );
    assert!(jsonschema::is_valid(
        &open_schema,
        &json!({"url": "http://127.0.0.1/", "newTab": true})
    ));

    // Open → snapshot → act → diff.
    let (opened, error, _) = call(
        client,
        "browser_open",
        json!({"url": format!("{base}/form.html")}),
    )
    .await;
    assert!(!error, "{opened}");
    assert!(opened.contains("<<<untrusted-snapshot"), "{opened}");
    let (snapshot, error, _) = call(client, "browser_snapshot", json!({})).await;
    assert!(!error, "{snapshot}");
    let add = ref_of(&snapshot, "button \"Add one\"");
    assert_eq!(
        add,
        ref_of(&opened, "button \"Add one\""),
        "refs are stable"
    );
    let (acted, error, _) = call(
        client,
        "browser_act",
        json!({"action": "click", "ref": add}),
    )
    .await;
    assert!(!error, "{acted}");
    assert!(
        acted.contains("Changes since generation") && acted.contains("~ - text: 1"),
        "{acted}"
    );

    // Content, screenshot (an image that decodes), execute.
    let (content, error, _) = call(client, "browser_content", json!({"format": "markdown"})).await;
    assert!(!error && content.contains("# Sign up"), "{content}");
    let (text, error, result) = call(client, "browser_screenshot", json!({"ref": add})).await;
    assert!(!error, "{text}");
    assert_eq!(result["content"][1]["type"], "image");
    let png = base64::engine::general_purpose::STANDARD
        .decode(result["content"][1]["data"].as_str().unwrap())
        .unwrap();
    let image = image::load_from_memory(&png).expect("the screenshot decodes");
    assert!(
        image.width() > 10 && image.width() < 400,
        "only the button: {}",
        image.width()
    );
    let (text, error, _) = call(
        client,
        "browser_execute",
        json!({"script": "return arguments[0] + arguments[1]", "args": [40, 2]}),
    )
    .await;
    assert!(!error && text.contains("42"), "{text}");

    // Tabs (handles are unique in the browser, so read them from the answers).
    let first_tab = tab_of(&opened);
    let (text, error, _) = call(
        client,
        "browser_open",
        json!({"url": format!("{base}/article.html"), "newTab": true}),
    )
    .await;
    assert!(!error, "{text}");
    let second_tab = tab_of(&text);
    assert_ne!(first_tab, second_tab);
    let (text, _, _) = call(client, "browser_list_tabs", json!({})).await;
    assert!(
        text.contains(&format!("{first_tab}:")) && text.contains(&format!("{second_tab} (active)")),
        "{text}"
    );
    let (text, error, _) = call(client, "browser_switch_tab", json!({"tab": first_tab})).await;
    assert!(
        !error && text.contains(&format!("Switched to {first_tab}")),
        "{text}"
    );

    // Errors: a stale ref (its document was replaced), a blocked URL, a bad argument.
    let (text, error, _) = call(client, "browser_navigate", json!({"action": "reload"})).await;
    assert!(!error, "{text}");
    let (text, error, _) = call(
        client,
        "browser_act",
        json!({"action": "click", "ref": add}),
    )
    .await;
    assert!(error && text.starts_with("Error STALE_REF"), "{text}");
    assert!(text.contains("Hint:"), "{text}");
    let (text, error, _) = call(
        client,
        "browser_open",
        json!({"url": "javascript:alert(1)"}),
    )
    .await;
    assert!(
        error && text.starts_with("Error NAVIGATION_BLOCKED"),
        "{text}"
    );
    let (text, error, _) = call(client, "browser_content", json!({"format": "pdf"})).await;
    assert!(
        error && text.starts_with("Error INVALID_ARGUMENT") && text.contains("format"),
        "{text}"
    );

    // A long wait, cancelled: the server keeps serving and the page is free.
    let params = CallToolRequestParams::new("browser_execute").with_arguments(
        json!({"script": "await new Promise(() => {}); return 1", "timeoutMs": 600000})
            .as_object()
            .unwrap()
            .clone(),
    );
    let handle = client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    handle
        .cancel(Some("the test changed its mind".into()))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let (text, error, _) = call(client, "browser_execute", json!({"script": "6 * 7"})).await;
    assert!(!error && text.contains("42"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // A wait past its own bound comes back as TIMEOUT, within a bound.
    let started = std::time::Instant::now();
    let (text, error, _) = call(
        client,
        "browser_execute",
        json!({"script": "await new Promise(() => {})", "timeoutMs": 500}),
    )
    .await;
    assert!(error && text.starts_with("Error TIMEOUT"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_sdk_client_over_stdio() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"));
    command.arg("mcp");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    scripted_session(&client, &base).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_sdk_client_over_http_and_through_mcp_connect() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let runtime = common::runtime_dir();
    let (_relay, lines) = common::start_shell_in(&runtime, &["relay"], 3).await;
    let (endpoint, token) = lines[2]
        .strip_prefix("MCP over HTTP: ")
        .and_then(|rest| rest.split_once(" (Authorization: Bearer "))
        .map(|(url, token)| (url.to_owned(), token.trim_end_matches(')').to_owned()))
        .expect("the MCP line");

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(endpoint).auth_header(token),
    );
    let client = ().serve(transport).await.unwrap();
    scripted_session(&client, &base).await;
    client.cancel().await.unwrap();

    // `mcp --connect` finds the relay through the runtime file and relays stdio to it.
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"));
    command
        .args(["mcp", "--connect"])
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    scripted_session(&client, &base).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_connect_without_a_running_shell_says_so() {
    let runtime = common::runtime_dir();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["mcp", "--connect"])
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("NOT_CONNECTED") && stderr.contains("browser-shell relay"),
        "{stderr}"
    );
}

#[tokio::test]
async fn isolated_agents_do_not_share_cookies() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let (_server, lines) =
        common::start_shell(&["mcp", "--http", "127.0.0.1:0", "--isolated"], 2).await;
    let endpoint = lines[0]
        .strip_prefix("MCP over HTTP: ")
        .expect("the endpoint line")
        .to_owned();
    let token = lines[1]
        .strip_prefix("Authorization: Bearer ")
        .expect("the token line")
        .to_owned();
    let connect = || async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(endpoint.clone())
                .auth_header(token.clone()),
        );
        ().serve(transport).await.unwrap()
    };
    let (first, second) = (connect().await, connect().await);
    let page = json!({"url": format!("{base}/form.html")});
    for client in [&first, &second] {
        let (text, error, _) = call(client, "browser_open", page.clone()).await;
        assert!(!error, "{text}");
    }
    let (text, error, _) = call(
        &first,
        "browser_execute",
        json!({"script": "document.cookie = 'who=first; path=/'; return document.cookie"}),
    )
    .await;
    assert!(!error && text.contains("who=first"), "{text}");
    let (text, error, _) = call(&second, "browser_navigate", json!({"action": "reload"})).await;
    assert!(!error, "{text}");
    let (text, error, _) = call(
        &second,
        "browser_execute",
        json!({"script": "JSON.stringify(document.cookie)"}),
    )
    .await;
    assert!(!error && !text.contains("who=first"), "{text}");
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}

/// The dev-loop app of `fixtures/dev-loop/`, served at `/app/` in the
/// version the test chooses; the page reloads itself when it changes.
async fn serve_dev_loop_app(version: std::sync::Arc<std::sync::atomic::AtomicU32>) -> String {
    use axum::extract::State;
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::get;
    use std::sync::atomic::Ordering;
    type Version = State<std::sync::Arc<std::sync::atomic::AtomicU32>>;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/dev-loop");
    let read = move |name: String| std::fs::read_to_string(dir.join(name)).unwrap();
    let (page, style, script) = (read.clone(), read.clone(), read);
    let app = axum::Router::new()
        .route(
            "/app/",
            get(move |State(v): Version| async move {
                let n = v.load(Ordering::SeqCst).to_string();
                axum::response::Html(page("index.html".into()).replace("{{VERSION}}", &n))
            }),
        )
        .route(
            "/app/style.css",
            get(move |State(v): Version| async move {
                let n = v.load(Ordering::SeqCst);
                (
                    [(header::CONTENT_TYPE, "text/css")],
                    style(format!("v{n}.css")),
                )
            }),
        )
        .route(
            "/app/app.js",
            get(move |State(v): Version| async move {
                let n = v.load(Ordering::SeqCst);
                let body = script(format!("app-v{n}.js"));
                ([(header::CONTENT_TYPE, "text/javascript")], body)
            }),
        )
        .route(
            "/app/version",
            get(|State(v): Version| async move { v.load(Ordering::SeqCst).to_string() }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found").into_response() })
        .with_state(version);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// The development loop of seed 002: observe, inspect, change the source,
/// wait for the reload, inspect again in the same tab, read the new
/// version's console error and failed request, take a screenshot.
#[tokio::test]
async fn the_dev_loop_verifies_a_change_in_the_same_tab() {
    let version = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(1));
    let base = serve_dev_loop_app(version.clone()).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"));
    command.arg("mcp");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let url = format!("{base}/app/");

    let (opened, error, _) = call(&client, "browser_open", json!({"url": url})).await;
    assert!(!error && opened.contains("button \"Save\""), "{opened}");
    let tab = tab_of(&opened);
    let inspect = json!({"selector": "#save", "styles": ["background-color", "width"]});
    let (before, error, _) = call(&client, "browser_inspect", inspect.clone()).await;
    assert!(!error, "{before}");
    assert!(
        before.contains("\"background-color\": \"rgb(0, 128, 0)\""),
        "{before}"
    );
    assert!(before.contains("\"width\": \"120px\""), "{before}");
    assert!(before.contains("\"selector\": \"#save\""), "{before}");

    // The source changes; the page notices and reloads itself.
    version.store(2, std::sync::atomic::Ordering::SeqCst);
    let (waited, error, _) = call(
        &client,
        "browser_wait",
        json!({"text": "Version 2", "timeoutMs": 15000}),
    )
    .await;
    assert!(!error, "{waited}");
    let (waited, error, _) = call(&client, "browser_wait", json!({"load": "load"})).await;
    assert!(!error, "{waited}");

    // Same tab, same URL, the new style.
    let (after, error, _) = call(&client, "browser_inspect", inspect).await;
    assert!(!error, "{after}");
    assert!(after.contains(&format!("in {tab}")), "{after}");
    assert!(
        after.contains("\"background-color\": \"rgb(200, 0, 0)\""),
        "{after}"
    );
    assert!(after.contains("\"width\": \"160px\""), "{after}");
    let (tabs, _, _) = call(&client, "browser_list_tabs", json!({})).await;
    assert!(
        tabs.contains(&format!("{tab} (active): {url} | Notes")),
        "{tabs}"
    );

    // The new version's console error and failed request.
    let (console, error, _) = call(&client, "browser_console", json!({"level": "error"})).await;
    assert!(!error, "{console}");
    assert!(
        console.contains("settings failed to load: HTTP 404"),
        "{console}"
    );
    // The request ends a moment after the page has read its status.
    let (waited, error, _) = call(
        &client,
        "browser_wait",
        json!({"request": "/app/api/settings"}),
    )
    .await;
    assert!(!error, "{waited}");
    let (network, error, _) = call(&client, "browser_network", json!({"failed": true})).await;
    assert!(!error, "{network}");
    assert!(
        network.contains("GET 404 FAILED Fetch") && network.contains("/app/api/settings"),
        "{network}"
    );
    let requests = network.matches("/app/api/settings").count();
    assert_eq!(requests, 1, "{network}");

    // A screenshot as supporting evidence.
    let (text, error, result) = call(&client, "browser_screenshot", json!({})).await;
    assert!(!error, "{text}");
    let png = base64::engine::general_purpose::STANDARD
        .decode(result["content"][1]["data"].as_str().unwrap())
        .unwrap();
    let image = image::load_from_memory(&png).expect("the screenshot decodes");
    let save = image.to_rgb8();
    assert!(
        save.pixels().any(|p| p.0 == [200, 0, 0]),
        "the red button is in the picture"
    );
    client.cancel().await.unwrap();
}
