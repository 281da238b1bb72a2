//! The tool list as strict clients check it (issue 39): the MCP
//! Inspector's strict portability check and Ajv's JSON Schema 2020 strict
//! mode, both the real npm packages (`shell/tests/clients`, installed by
//! `.ci/setup`) run by Node against `browser-shell mcp` on stdio; and the
//! metadata a host shows and decides by (titles, annotations, server info).

#![allow(clippy::unwrap_used, clippy::expect_used)]

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
