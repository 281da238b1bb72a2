//! The relay through faults: a browser kill (the people watching see what
//! happened and get the picture back, a CDP client is told with a close
//! code and comes back on the same URL, the agent carries on) and an MCP
//! client that vanishes in the middle of a call.

use crate::common;

use std::time::{Duration, Instant};

use browser_testkit::fixtures::serve_fixtures;
use common::{Agent, start_relay, status_until};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

#[tokio::test]
async fn the_relay_survives_a_killed_browser() {
    let base = serve_fixtures().await;
    let (relay, endpoint, printed) = start_relay(&["--cdp-endpoint"], 4).await;
    let (host, token) = (endpoint.host.clone(), endpoint.token.clone());
    let cdp_url = printed[3]
        .strip_prefix("CDP endpoint: ")
        .unwrap()
        .to_owned();
    let mut agent = Agent::connect(&endpoint).await;
    let (text, is_error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/live.html?animate")}),
        )
        .await;
    assert!(!is_error, "{text}");
    let start = text.find("in tab ").expect("a tab handle") + 7;
    let agents_tab = json!(text[start..].split(' ').next().unwrap());

    // A viewer watches the agent's tab; a CDP client is attached.
    let (mut viewer, _) = tokio_tungstenite::connect_async(format!("ws://{host}/ws?token={token}"))
        .await
        .unwrap();
    // The viewer draws (acknowledges) every frame, as the column does, and
    // reports the first state that tells of a restart. Its picture is
    // small: the animated page's frames then cost little on a busy machine.
    viewer
        .send(Message::Text(
            json!({"type": "viewport", "width": 320, "height": 320})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    let (tell, restarted_state) = tokio::sync::oneshot::channel::<Value>();
    tokio::spawn(async move {
        let mut tell = Some(tell);
        while let Some(Ok(message)) = viewer.next().await {
            match message {
                Message::Binary(_) => {
                    let ack = json!({"type": "ack"}).to_string();
                    if viewer.send(Message::Text(ack.into())).await.is_err() {
                        return;
                    }
                }
                Message::Text(text) => {
                    let message: Value = serde_json::from_str(&text).unwrap();
                    if message["type"] == "state"
                        && message["browser"]["restartedAt"].is_string()
                        && let Some(tell) = tell.take()
                    {
                        let _ = tell.send(message);
                    }
                }
                _ => {}
            }
        }
    });
    let (mut client, _) = tokio_tungstenite::connect_async(cdp_url.as_str())
        .await
        .unwrap();
    // The column has moved from the start page to the agent's tab (the
    // tab it shows again after the restart).
    let running = status_until(&endpoint, |s| {
        s["browser"]["state"] == "running" && s["pictured"] == agents_tab
    })
    .await;
    let pid = i32::try_from(running["browser"]["pid"].as_u64().unwrap()).unwrap();
    let pictured = running["pictured"].clone();

    // SAFETY: signalling the browser this test's relay launched.
    unsafe { libc::kill(pid, libc::SIGKILL) };

    // The CDP client is told, with a close code and the cause.
    let close = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match client.next().await {
                Some(Ok(Message::Close(frame))) => return frame,
                Some(Ok(_)) => {}
                other => panic!("the socket ended without a close frame: {other:?}"),
            }
        }
    })
    .await
    .expect("a close frame");
    let close = close.expect("a close code and reason");
    assert_eq!(close.code, CloseCode::Restart);
    assert!(
        close.reason.contains("killed by signal 9"),
        "{}",
        close.reason
    );

    // The people see it come back, on the same tab, with a fresh picture.
    let back = status_until(&endpoint, |s| {
        s["browser"]["state"] == "running" && s["browser"]["pid"] != json!(pid)
    })
    .await;
    let back_at = Instant::now();
    assert!(
        back["browser"]["cause"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{back}"
    );
    assert!(back["browser"]["restartedAt"].is_string(), "{back}");
    // The page animates, so frames keep coming once the screencast is
    // back: one counted after this status is one of the new browser's
    // (a static page's only new frame could be counted before it).
    let frames_then = back["framesSent"].as_u64().unwrap();
    let again = status_until(&endpoint, |s| {
        s["pictured"] == pictured && s["framesSent"].as_u64().unwrap() > frames_then
    })
    .await;
    assert_eq!(again["shown"], pictured, "the same tab is shown");
    assert!(
        back_at.elapsed() < Duration::from_secs(2),
        "the picture is back within 2 s of the relaunch: {:?}",
        back_at.elapsed()
    );
    // The viewer's state says what happened, for the banner.
    let state = tokio::time::timeout(Duration::from_secs(10), restarted_state)
        .await
        .expect("the viewer hears of the restart")
        .unwrap();
    assert_eq!(state["browser"]["state"], "running", "{state}");

    // The same CDP URL accepts clients again.
    let (mut client, _) = tokio_tungstenite::connect_async(cdp_url.as_str())
        .await
        .unwrap();
    client
        .send(Message::Text(
            json!({"id": 1, "method": "Browser.getVersion"})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(Ok(Message::Text(text))) = client.next().await {
                let message: Value = serde_json::from_str(&text).unwrap();
                if message["id"] == 1 {
                    return message;
                }
            }
        }
    })
    .await
    .unwrap();
    assert!(answer["result"]["product"].is_string(), "{answer}");

    // The agent carries on, told once.
    let (text, is_error) = agent.call("browser_snapshot", json!({})).await;
    assert!(!is_error, "{text}");
    assert!(text.contains("was reopened at its last URL"), "{text}");
    assert!(text.contains("/live.html"), "{text}");
    common::stop_shell(relay).await;
}

#[tokio::test]
async fn a_client_that_vanishes_mid_call_leaves_nothing_running() {
    let base = serve_fixtures().await;
    let (relay, endpoint, _) = start_relay(&[], 3).await;
    let (host, token) = (endpoint.host.clone(), endpoint.token.clone());
    let mut agent = Agent::connect(&endpoint).await;
    let (text, is_error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!is_error, "{text}");
    let mut baseline = Value::Null;

    for round in 0..4 {
        // A long wait, and the client goes away as soon as the answer starts.
        let call = json!({"jsonrpc": "2.0", "id": 77 + round, "method": "tools/call", "params": {
            "name": "browser_wait",
            "arguments": {"text": "never on this page", "timeoutMs": 3000}
        }})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nMcp-Session-Id: {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n\r\n{call}",
            agent.session(),
            call.len()
        );
        let mut stream = tokio::net::TcpStream::connect(&host).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut first = [0u8; 12];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut first))
            .await
            .expect("the answer starts")
            .unwrap();
        assert!(
            first.starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&first)
        );
        drop(stream);
        if round == 0 {
            // The first vanished call starts what stays (pools, buffers):
            // the baseline is taken after it has ended.
            let (text, is_error) = agent.call("browser_snapshot", json!({})).await;
            assert!(!is_error, "{text}");
            baseline = status_until(&endpoint, |s| s["census"]["host"]["pending"] == 0).await;
        }
    }
    // The server keeps serving the same session: the next call waits at
    // most for the vanished call's 3 s bound (it runs to its bound; the
    // transport does not cancel it).
    let started = Instant::now();
    let (text, is_error) = agent.call("browser_snapshot", json!({})).await;
    assert!(!is_error, "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // …and what the vanished calls started ends by their bound: no task is left.
    let tasks_before = baseline["process"]["tasks"].as_u64().unwrap();
    // Both are read from one status (a command of the page's own may be
    // in flight at the moment the threads have settled).
    let settled = status_until(&endpoint, |s| {
        s["process"]["tasks"].as_u64().unwrap() <= tasks_before
            && s["census"]["host"]["pending"] == 0
    })
    .await;
    assert_eq!(settled["census"]["host"]["pending"], 0, "{settled}");
    common::stop_shell(relay).await;
}

#[tokio::test]
async fn a_hundred_sessions_coming_and_going_leave_nothing_behind() {
    let base = serve_fixtures().await;
    let (relay, endpoint, _) = start_relay(&[], 3).await;
    let visit = |number: usize| {
        let endpoint = &endpoint;
        let url = format!("{base}/{}", ["form.html", "article.html"][number % 2]);
        async move {
            let mut agent = Agent::connect(endpoint).await;
            let (text, is_error) = agent.call("browser_open", json!({"url": url})).await;
            assert!(!is_error, "{text}");
            assert_eq!(agent.disconnect().await, 204);
        }
    };
    // The first sessions start what stays (pools, buffers): the baseline
    // is taken once they have gone, and the column shows and pictures the
    // person's tab again (following it costs a subscriber and a task).
    for number in 0..3 {
        visit(number).await;
    }
    let baseline = status_until(&endpoint, |s| {
        s["census"]["sessions"] == 0 && !s["shown"].is_null() && !s["pictured"].is_null()
    })
    .await;
    for number in 3..103 {
        visit(number).await;
    }
    // `/status` says which browser runs: the headless shell where installed.
    let executable = baseline["browser"]["executable"]
        .as_str()
        .unwrap_or_default();
    assert!(!executable.is_empty(), "{baseline}");
    let headless_shell_installed =
        std::path::Path::new("/usr/lib/chromium/chromium-headless-shell").exists()
            && std::env::var_os("BROWSER_SHELL_CHROMIUM").is_none();
    assert_eq!(
        baseline["browser"]["headlessShell"], headless_shell_installed,
        "{baseline}"
    );
    // The person may open tabs of their own through the column ("+").
    assert_eq!(baseline["browser"]["personTabs"], true, "{baseline}");
    let tasks = baseline["process"]["tasks"].as_u64().unwrap();
    let fds = baseline["process"]["fds"].as_u64().unwrap();
    // A leak per session would show as a hundred; a thread, descriptor or
    // subscriber that the runtime or the live view keeps or lets go of in
    // its own time is not one (on a loaded machine the baseline can catch
    // one of them away).
    const SLACK: u64 = 2;
    let at_most = |now: &Value, was: &Value, key: &str| {
        now[key].as_u64().unwrap() <= was[key].as_u64().unwrap() + SLACK
    };
    let after = common::try_status_until(&endpoint, |s| {
        let (census, was) = (&s["census"], &baseline["census"]);
        ["sessions", "tabs", "owners"]
            .iter()
            .all(|key| census[key] == was[key])
            && ["sessions", "frames", "subscribers", "pending"]
                .iter()
                .all(|key| at_most(&census["host"], &was["host"], key))
            && s["process"]["tasks"].as_u64().unwrap() <= tasks + SLACK
            && s["process"]["fds"].as_u64().unwrap() <= fds + SLACK
    })
    .await
    .unwrap_or_else(|last| panic!("something stayed behind: {last}; before: {baseline}"));
    assert_eq!(after["census"]["sessions"], 0, "{after}");
    common::stop_shell(relay).await;
}
