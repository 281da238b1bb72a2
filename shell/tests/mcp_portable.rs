//! The tool list as strict clients check it (issue 39): the MCP
//! Inspector's strict portability check and Ajv's JSON Schema 2020 strict
//! mode, both the real npm packages (`shell/tests/clients`, installed by
//! `.ci/setup`) run by Node against `browser-shell mcp` on stdio; and the
//! metadata a host shows and decides by (titles, annotations, server info).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

fn clients_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/inspector")
            .is_dir(),
        "the MCP clients are not installed: run .ci/setup (npm ci in shell/tests/clients)"
    );
    dir
}

/// The Inspector's `tools/list` with `--strict`: its exit status, the
/// tool list (stdout) and its findings (stderr).
async fn strict_tools_list() -> (std::process::ExitStatus, Value, String) {
    let dir = clients_dir();
    let run = tokio::process::Command::new(dir.join("node_modules/.bin/mcp-inspector"))
        .args(["--cli", "--strict", "--method", "tools/list"])
        .arg(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["mcp", "--temporary-profile"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the Inspector answers within 60 s")
        .expect("the Inspector runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let list: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("the Inspector printed no tool list ({e}): {stdout}"));
    (
        output.status,
        list,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn strict_clients_take_every_schema_and_read_every_tool_s_metadata() {
    let (status, list, findings) = strict_tools_list().await;
    // Errors make the Inspector exit 6; warnings are only printed.
    assert!(status.success(), "{status}: {findings}");
    assert!(
        !findings.contains("Warning:") && !findings.contains("Error:"),
        "the strict check found problems:\n{findings}"
    );
    let tools = list["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 17, "{list}");

    // Ajv 2020 in strict mode compiles every schema.
    let mut ajv = tokio::process::Command::new("node")
        .arg("schemas.mjs")
        .current_dir(clients_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut stdin = ajv.stdin.take().unwrap();
    stdin.write_all(list.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let checked = tokio::time::timeout(Duration::from_secs(30), ajv.wait_with_output())
        .await
        .expect("Ajv answers within 30 s")
        .unwrap();
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "Ajv 2020 strict: {said}");
    assert!(said.contains("17 tools, 0 problems"), "{said}");

    // Every tool has a title, and annotations that say what it does.
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let title = tool["title"].as_str().unwrap_or_default();
        assert!(!title.is_empty(), "{name} has no title");
        let annotations = &tool["annotations"];
        assert_eq!(annotations["title"], tool["title"], "{name}");
        for hint in ["readOnlyHint", "openWorldHint"] {
            assert!(annotations[hint].is_boolean(), "{name}: no {hint}");
        }
        if annotations["readOnlyHint"] == Value::Bool(false) {
            for hint in ["destructiveHint", "idempotentHint"] {
                assert!(annotations[hint].is_boolean(), "{name}: no {hint}");
            }
        }
    }
    let annotation = |name: &str, hint: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["annotations"][hint].clone())
    };
    // A host that asks before destructive tools does not ask for a tab switch.
    assert_eq!(
        annotation("browser_switch_tab", "destructiveHint"),
        Some(Value::Bool(false))
    );
    assert_eq!(
        annotation("browser_close_tab", "destructiveHint"),
        Some(Value::Bool(true))
    );
    assert_eq!(
        annotation("browser_snapshot", "readOnlyHint"),
        Some(Value::Bool(true))
    );
}

/// Sends `lines` to `browser-shell mcp` on stdio and returns the answers
/// to the requests among them, by id (at most 30 s).
async fn stdio_answers(lines: &[&str], ids: &[Value]) -> Vec<Value> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["mcp", "--temporary-profile"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("browser-shell runs");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers: Vec<Value> = Vec::new();
    let read = async {
        while answers.len() < ids.len() {
            let line = out
                .next_line()
                .await
                .unwrap()
                .expect("an answer per request");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id").is_some_and(|id| ids.contains(id)) {
                answers.push(message);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("every request answered within 30 s");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    answers
}

/// The answer with `id` among `answers`.
fn answer(answers: &[Value], id: Value) -> &Value {
    answers
        .iter()
        .find(|answer| answer["id"] == id)
        .unwrap_or_else(|| panic!("no answer with id {id}: {answers:?}"))
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

#[tokio::test]
async fn protocol_errors_are_the_spec_s_on_stdio() {
    let answers = stdio_answers(
        &[
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
            INITIALIZE,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list""#,
            r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
        ],
        &[0, 1, 2, 3, 4, 6].map(Value::from).into_iter().chain([Value::Null]).collect::<Vec<_>>(),
    )
    .await;
    let error = |id: Value| answer(&answers, id)["error"].clone();
    // Before initialize: told to initialize.
    assert_eq!(error(0.into())["code"], -32600);
    assert!(
        error(0.into())["message"]
            .as_str()
            .unwrap()
            .contains("initialize first")
    );
    // Server info with a title and a description.
    let info = &answer(&answers, 1.into())["result"]["serverInfo"];
    assert_eq!(info["title"], "browser-shell", "{info}");
    assert!(
        info["description"].as_str().is_some_and(|d| !d.is_empty()),
        "{info}"
    );
    // An unknown tool, a call without a name: invalid params, named.
    assert_eq!(error(2.into())["code"], -32602);
    assert!(
        error(2.into())["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
    assert_eq!(error(3.into())["code"], -32602);
    assert!(
        error(3.into())["message"]
            .as_str()
            .unwrap()
            .contains("params.name")
    );
    // An unknown method: method not found, named.
    assert_eq!(error(4.into())["code"], -32601);
    assert_eq!(error(4.into())["message"], "Method not found: no/such");
    // A line that is not JSON: a parse error (with no id to answer to), and
    // the server goes on.
    assert_eq!(error(Value::Null)["code"], -32700);
    assert_eq!(answer(&answers, 6.into())["result"], serde_json::json!({}));
}

use crate::common;

/// Sends a request without a body (`GET`, `DELETE`) and returns its status.
async fn bodiless(
    endpoint: &common::Endpoint,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> u16 {
    use tokio::io::AsyncReadExt;
    let mut stream = tokio::net::TcpStream::connect(&endpoint.host)
        .await
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        endpoint.host
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("an answer within 30 s")
        .unwrap();
    String::from_utf8_lossy(&response)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn protocol_errors_are_the_spec_s_over_http() {
    let (child, printed) = common::start_shell(&["mcp", "--http", "127.0.0.1:0"], 2).await;
    let url = printed[0].strip_prefix("MCP over HTTP: http://").unwrap();
    let (host, path) = url.split_once('/').unwrap();
    let endpoint = common::Endpoint {
        host: host.to_owned(),
        path: format!("/{path}"),
        token: printed[1]
            .strip_prefix("Authorization: Bearer ")
            .unwrap()
            .to_owned(),
    };
    let auth = format!("Bearer {}", endpoint.token);
    let agent = common::Agent::connect(&endpoint).await;
    let session = agent.session().to_owned();
    let with_session = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", session.as_str()),
    ];

    // Not JSON: 400 with a JSON-RPC parse error.
    let (status, _, body) = common::post_text(&endpoint, &with_session, "{\"jsonrpc\":").await;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32700, "{body}");
    // An unknown tool: invalid params.
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "no_such_tool", "arguments": {}}});
    let (_, _, body) = common::post(&endpoint, &with_session, &call).await;
    assert_eq!(
        common::message_with_id(&body, 7)["error"]["code"],
        -32602,
        "{body}"
    );
    // No OAuth here: its discovery path is not found (not unauthorized).
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
    ] {
        assert_eq!(bodiless(&endpoint, "GET", path, &[]).await, 404, "{path}");
    }
    // Ending the session: 204, and the session is gone after.
    assert_eq!(
        bodiless(&endpoint, "DELETE", &endpoint.path, &with_session).await,
        204
    );
    let ping = serde_json::json!({"jsonrpc": "2.0", "id": 8, "method": "ping"});
    let (status, _, _) = common::post(&endpoint, &with_session, &ping).await;
    assert_eq!(status, 404, "an ended session is unknown");
    common::stop_shell(child).await;
}

/// A tool's own `timeoutMs` is its bound, above the per-call one: with the
/// server's per-call bound at 1.5 s, a script that takes 2.5 s and asks
/// for 6 s returns its value (it was cut at the per-call bound before);
/// one that asks for less than it takes is a TIMEOUT naming its own bound.
#[tokio::test]
async fn a_tool_s_own_timeout_is_its_bound() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["mcp", "--temporary-profile", "--timeout-ms", "1500"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("browser-shell runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let call = |id: u64, timeout_ms: u64| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "browser_execute",
            "arguments": {
                "script": "return new Promise((done) => setTimeout(() => done('slow and done'), 2500))",
                "timeoutMs": timeout_ms,
            },
            "_meta": {"progressToken": format!("p{id}")},
        }})
        .to_string()
    };
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let open = serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "browser_open", "arguments": {"url": format!("{base}/index.html")}}});
    for line in [
        INITIALIZE.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        open.to_string(),
    ] {
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    // (Calls run side by side: the two scripts go once the page is open.)
    let opened = async {
        loop {
            let line = out.next_line().await.unwrap().expect("answers");
            if serde_json::from_str::<Value>(&line).unwrap()["id"] == 9 {
                return line;
            }
        }
    };
    let opened = tokio::time::timeout(Duration::from_secs(30), opened)
        .await
        .expect("opened");
    assert!(!opened.contains("\"isError\":true"), "{opened}");
    for line in [call(2, 6000), call(3, 1000)] {
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    let mut answers = std::collections::HashMap::new();
    let mut progress = Vec::new();
    let read = async {
        while answers.len() < 2 {
            let line = out.next_line().await.unwrap().expect("answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "notifications/progress" {
                progress.push(message["params"].clone());
            } else if let Some(id @ (2 | 3)) = message["id"].as_u64() {
                answers.insert(id, message);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("both calls answered within 60 s");
    let text = |id: u64| {
        answers[&id]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(text(2).contains("slow and done"), "{}", answers[&2]);
    assert_eq!(answers[&3]["result"]["isError"], true, "{}", answers[&3]);
    assert!(text(3).starts_with("Error TIMEOUT"), "{}", text(3));
    // Progress for a call that asked for it: its words, its own bound as total.
    let first = progress
        .iter()
        .find(|p| p["progressToken"] == "p2")
        .expect("progress for the long call");
    assert_eq!(first["total"], 11.0, "6 s asked + 5 s to answer: {first}");
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .starts_with("running the script"),
        "{first}"
    );
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
}

/// The official Python SDK's HTTP client ends its session with DELETE and
/// logs no warning (it did while the server answered 202).
#[tokio::test]
async fn the_python_sdk_closes_its_session_without_a_warning() {
    let python = clients_dir().join("python/.venv/bin/python");
    assert!(
        python.is_file(),
        "the Python MCP SDK is not installed: run .ci/setup"
    );
    let (child, printed) = common::start_shell(&["mcp", "--http", "127.0.0.1:0"], 2).await;
    let url = printed[0]
        .strip_prefix("MCP over HTTP: ")
        .unwrap()
        .to_owned();
    let token = printed[1]
        .strip_prefix("Authorization: Bearer ")
        .unwrap()
        .to_owned();
    let run = tokio::process::Command::new(python)
        .arg(clients_dir().join("python/session.py"))
        .args([&url, &token])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), run)
        .await
        .expect("the Python client ends within 90 s")
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(seen["server"], "browser-shell", "{seen}");
    assert_eq!(seen["tools"], 17, "{seen}");
    assert_eq!(seen["titled"], 17, "{seen}");
    assert_eq!(seen["list_tabs_is_error"], false, "{seen}");
    assert_eq!(seen["warnings"], serde_json::json!([]), "{seen}");
    common::stop_shell(child).await;
}
