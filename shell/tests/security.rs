//! Secrets and the audit trail, against a real relay and Chromium: a
//! secret typed into a plain text field never reaches the agent (results,
//! snapshots, content, script results, console, network) nor the people's
//! activity timeline nor the audit log; a secret bound to a host is
//! refused elsewhere; the audit log has a line for every call and every
//! takeover and return.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use browser_testkit::fixtures::serve_fixtures;
use common::Agent;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// A value with characters that pages and results spell differently
/// (JSON, HTML, URLs).
const SITE_VALUE: &str = "Open Sesame&\"42\"";

fn private_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("browser-shell-security-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// Every spelling of the value a page or a result could use.
fn leaks(text: &str) -> bool {
    ["Open Sesame", "Open%20Sesame", "Open+Sesame", "Sesame&amp;"]
        .iter()
        .any(|part| text.contains(part))
}

#[tokio::test]
async fn secrets_stay_hidden_and_the_audit_log_records_everything() {
    let base = serve_fixtures().await;
    let secrets = private_file(
        "secrets.toml",
        &format!(
            "site = {}\nbank = {{ value = \"bank-pass-77\", hosts = [\"bank.example\"] }}\n",
            toml_string(SITE_VALUE)
        ),
    );
    let audit = private_file("audit.jsonl", "");
    let (relay, endpoint, _) = common::start_relay(
        &[
            "--secrets",
            secrets.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
        ],
        3,
    )
    .await;
    let (host, token) = (endpoint.host.clone(), endpoint.token.clone());
    // A person watches: everything the timeline shows is kept.
    let (mut viewer, _) = tokio_tungstenite::connect_async(format!("ws://{host}/ws?token={token}"))
        .await
        .unwrap();

    let mut agent = Agent::connect(&endpoint).await;
    assert!(
        agent.instructions.contains("bank, site"),
        "{}",
        agent.instructions
    );
    assert!(!agent.instructions.contains("bank-pass"));
    let mut outputs = Vec::new();
    let mut call = async |agent: &mut Agent<'_>, name: &str, arguments: Value| {
        let (text, is_error) = agent.call(name, arguments).await;
        outputs.push(text.clone());
        (text, is_error)
    };

    let (text, is_error) = call(
        &mut agent,
        "browser_open",
        json!({"url": format!("{base}/form.html")}),
    )
    .await;
    assert!(!is_error, "{text}");
    let name_ref = ref_of(&text, "textbox \"Full name\"");
    let (text, is_error) = call(
        &mut agent,
        "browser_act",
        json!({"action": "type", "ref": name_ref, "secret": "site"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        text.contains("«secret:site»"),
        "the diff shows the field's new value, hidden: {text}"
    );
    // Everything that could show the value.
    for (tool, arguments) in [
        ("browser_snapshot", json!({})),
        ("browser_content", json!({"format": "html"})),
        ("browser_content", json!({"format": "markdown"})),
        ("browser_content", json!({"format": "json"})),
        (
            "browser_execute",
            json!({"script": "document.querySelector('#name').value"}),
        ),
        (
            "browser_execute",
            json!({"script": "console.log('typed', document.querySelector('#name').value); \
             return fetch('/echo?q=' + encodeURIComponent(document.querySelector('#name').value)).then(r => r.status)"}),
        ),
        ("browser_console", json!({})),
        ("browser_network", json!({})),
        ("browser_inspect", json!({"selector": "#name"})),
    ] {
        let (text, is_error) = call(&mut agent, tool, arguments.clone()).await;
        assert!(!is_error, "{tool} {arguments}: {text}");
        assert!(!leaks(&text), "{tool} {arguments} shows the secret: {text}");
    }
    let (text, _) = call(
        &mut agent,
        "browser_execute",
        json!({"script": "document.querySelector('#name').value"}),
    )
    .await;
    assert!(text.contains("«secret:site»"), "{text}");

    // Bound to bank.example: refused here. Unknown names are named.
    let (text, is_error) = call(
        &mut agent,
        "browser_act",
        json!({"action": "fill", "ref": name_ref, "secret": "bank"}),
    )
    .await;
    assert!(is_error && text.contains("SECRET_NOT_ALLOWED"), "{text}");
    assert!(
        text.contains("127.0.0.1") && !text.contains("bank-pass"),
        "{text}"
    );
    let (text, is_error) = call(
        &mut agent,
        "browser_act",
        json!({"action": "fill", "ref": name_ref, "secret": "nope"}),
    )
    .await;
    assert!(
        is_error && text.contains("INVALID_ARGUMENT") && text.contains("\"nope\""),
        "{text}"
    );
    // Plain typed text is kept out of the audit log too.
    let (text, is_error) = call(
        &mut agent,
        "browser_act",
        json!({"action": "fill", "ref": name_ref, "text": "Ada Lovelace"}),
    )
    .await;
    assert!(!is_error, "{text}");

    // A person takes over and returns control.
    for kind in ["takeover", "return"] {
        viewer
            .send(Message::Text(json!({"type": kind}).to_string().into()))
            .await
            .unwrap();
    }
    let (text, is_error) = call(&mut agent, "browser_snapshot", json!({})).await;
    assert!(!is_error, "{text}");

    // The timeline the person saw, up to the last call.
    let mut timeline = Vec::new();
    let seen_last = tokio::time::timeout(Duration::from_secs(20), async {
        // Entries come again as they change (their pictures arrive): count ids.
        let mut finished_snapshots = std::collections::HashSet::new();
        while let Some(Ok(message)) = viewer.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let message: Value = serde_json::from_str(text.as_str()).unwrap();
            if message["type"] == "activity" {
                timeline.push(message.to_string());
                if message["what"] == "browser_snapshot" && !message["outcome"].is_null() {
                    finished_snapshots.insert(message["id"].as_u64());
                    if finished_snapshots.len() == 2 {
                        return;
                    }
                }
            }
        }
    })
    .await;
    assert!(seen_last.is_ok(), "{timeline:#?}");
    assert!(
        timeline.iter().any(|line| line.contains("secret=site")),
        "{timeline:#?}"
    );
    for line in &timeline {
        assert!(!leaks(line), "the timeline shows the secret: {line}");
    }
    for output in &outputs {
        assert!(!leaks(output), "{output}");
    }
    assert_eq!(agent.disconnect().await, 204);
    common::stop_shell(relay).await;

    // The audit log: one JSON object per line, nothing secret in it.
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(!leaks(&log) && !log.contains("Ada Lovelace"), "{log}");
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let tools: Vec<&Value> = lines.iter().filter(|l| l["event"] == "tool").collect();
    assert_eq!(tools.len(), outputs.len(), "{log}");
    for line in &tools {
        assert!(
            line["timestamp"].is_string() && line["session"].is_string(),
            "{line}"
        );
        assert!(line["ms"].is_u64() && line["outcome"].is_string(), "{line}");
    }
    let outcome_of = |needle: &str| {
        tools
            .iter()
            .find(|l| l["arguments"].as_str().unwrap().contains(needle))
            .map(|l| l["outcome"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        outcome_of("\"secret\":\"bank\"").as_deref(),
        Some("SECRET_NOT_ALLOWED")
    );
    assert_eq!(
        outcome_of("[typed text: 12 characters]").as_deref(),
        Some("OK")
    );
    for event in ["takeover", "return"] {
        assert!(
            lines.iter().any(|l| l["event"] == event),
            "no {event} in {log}"
        );
    }
    let _ = std::fs::remove_dir_all(secrets.parent().unwrap());
}

/// `value` as a TOML basic string.
fn toml_string(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The ref on the first snapshot line containing `needle`.
fn ref_of(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no {needle:?} in {snapshot}"));
    let start = line.find("[ref=").unwrap() + 5;
    line[start..].split(']').next().unwrap().to_owned()
}
