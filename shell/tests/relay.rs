//! `browser-shell relay`: the browser column in a person's own browser.
//! An agent works over MCP on the same port; a viewer (a second, separate
//! headless Chromium driven by the provider) watches live frames, takes
//! over, and returns control. Screenshots of the viewer are saved under
//! `target/` for people to look at.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use browser_provider::cdp::protocol::{
    InputDispatchMouseEvent, InputImeSetComposition, InputInsertText,
};
use browser_provider::host::{ChromiumHost, LaunchOptions, ViewHostExt};
use browser_provider::page::act::{Action, Target};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::page::screenshot::ScreenshotRequest;
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig, SessionId};
use browser_testkit::fixtures::serve_fixtures;
use common::{Agent, Endpoint, get, start_shell};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn eval(browser: &Browser, session: &SessionId, script: &str) -> serde_json::Value {
    match browser
        .execute(
            session,
            script,
            vec![],
            Some(Duration::from_secs(20)),
            &CancellationToken::new(),
        )
        .await
        .unwrap()
    {
        ExecuteResult::Value { value, .. } => value,
        other => panic!("{script}: {other:?}"),
    }
}

/// Waits in the viewer page (bounded) until `condition` holds.
async fn wait_in_page(browser: &Browser, session: &SessionId, condition: &str) {
    let script = format!(
        "new Promise((resolve) => {{ const check = () => ({condition}) ? resolve(true) : requestAnimationFrame(check); check(); setTimeout(() => resolve(false), 15000); }})"
    );
    assert_eq!(
        eval(browser, session, &script).await,
        true,
        "timed out waiting for {condition}"
    );
}

/// The person presses Return control in the viewer; waits until the column says so.
async fn return_control(viewer: &Browser, person: &SessionId) {
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };
    viewer
        .act(
            person,
            &Target::Role {
                role: "button".into(),
                name: "Return control".into(),
            },
            &click,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    wait_in_page(
        viewer,
        person,
        "document.getElementById('holder-text').textContent === 'Agent has control'",
    )
    .await;
}

async fn save_screenshot(browser: &Browser, session: &SessionId, name: &str) {
    let shot = browser
        .screenshot(
            session,
            ScreenshotRequest::default(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join(name);
    std::fs::write(&path, &shot.data).unwrap();
}

#[tokio::test]
async fn a_person_watches_takes_over_and_returns_control() {
    let base = serve_fixtures().await;
    let (relay, printed) = start_shell(&["relay"], 3).await;
    let [viewer_url, view_only_url, mcp_line] = <[String; 3]>::try_from(printed).unwrap();
    assert!(
        viewer_url.starts_with("http://127.0.0.1:") && viewer_url.contains("/?token="),
        "{viewer_url}"
    );
    assert!(
        view_only_url.starts_with("View only: http://127.0.0.1:"),
        "{view_only_url}"
    );
    let Endpoint { host, token, .. } = Endpoint::of_viewer_link(&viewer_url);
    assert!(mcp_line.contains(&token));

    // Without the token, or from a foreign host name: refused, nothing leaked.
    let (status, body) = get(&host, "/", &[]).await;
    assert_eq!(status, 401);
    assert!(!body.contains("browser-shell"));
    let (status, _) = get(
        &host,
        &format!("/?token={token}"),
        &[("Host", "attacker.test")],
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = get(&host, "/ws?token=wrong", &[]).await;
    assert_eq!(status, 401);
    let (status, page) = get(&host, &format!("/?token={token}"), &[]).await;
    assert_eq!(status, 200);
    assert!(page.contains("Take over"));

    // An agent opens a page over MCP on the same port.
    // Leaked so the agent can move into a task for the handoff below.
    let endpoint: &'static Endpoint = Box::leak(Box::new(Endpoint {
        host: host.clone(),
        path: "/mcp".into(),
        token: token.clone(),
    }));
    let mut agent = Agent::connect(endpoint).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");

    // A person opens the viewer in their own browser.
    let viewer_host = Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let viewer = Browser::new(viewer_host.clone(), BrowserConfig::default());
    let person = viewer.open_session(Default::default()).await.unwrap();
    viewer
        .open(&person, &viewer_url, false, &CancellationToken::new())
        .await
        .unwrap();
    wait_in_page(
        &viewer,
        &person,
        "document.getElementById('frame').naturalWidth > 0",
    )
    .await;
    assert_eq!(
        eval(&viewer, &person, "location.search").await,
        "",
        "the token leaves the address bar"
    );
    assert_eq!(
        eval(
            &viewer,
            &person,
            "document.getElementById('holder-text').textContent"
        )
        .await,
        "Agent has control"
    );
    assert!(
        eval(
            &viewer,
            &person,
            "document.getElementById('tabs').textContent"
        )
        .await
        .as_str()
        .unwrap()
        .contains("Sign-up form")
    );
    save_screenshot(&viewer, &person, "relay-viewer-agent.png").await;

    // Take over: the agent is refused until control comes back.
    let snapshot = viewer
        .snapshot(&person, &Scope::Page, &CancellationToken::new())
        .await
        .unwrap()
        .text;
    let take_over = snapshot
        .lines()
        .find(|l| l.contains("button \"Take over\""))
        .unwrap();
    let take_over = take_over
        .split("[ref=")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap()
        .parse::<browser_provider::snapshot::Ref>()
        .unwrap();
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };
    viewer
        .act(
            &person,
            &Target::Ref(take_over),
            &click,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    wait_in_page(
        &viewer,
        &person,
        "document.getElementById('holder-text').textContent === 'You have control'",
    )
    .await;
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "click", "role": "button", "name": "Add one"}),
        )
        .await;
    assert!(
        error && text.starts_with("Error HUMAN_INTERVENED"),
        "{text}"
    );
    save_screenshot(&viewer, &person, "relay-viewer-human.png").await;

    return_control(&viewer, &person).await;
    let shown_before = eval(
        &viewer,
        &person,
        "Number(document.getElementById('frame').dataset.sequence)",
    )
    .await;
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "click", "role": "button", "name": "Add one"}),
        )
        .await;
    assert!(!error, "{text}");
    // The agent's click repaints the page; the viewer gets the new picture.
    let newer =
        format!("Number(document.getElementById('frame').dataset.sequence) > {shown_before}");
    wait_in_page(&viewer, &person, &newer).await;
    assert!(
        text.starts_with("Note: a person had control"),
        "the agent hears that the page may have changed: {text}"
    );
    wait_in_page(
        &viewer,
        &person,
        "document.querySelector('#events .event .name')?.textContent === 'browser_act'",
    )
    .await;

    // Handoff: the agent asks, the person sees the banner, presses Done, the agent goes on.
    let handoff = tokio::spawn(async move {
        let answer = agent
            .call(
                "browser_handoff",
                json!({"reason": "Please sign in", "timeoutMs": 30000}),
            )
            .await;
        (agent, answer)
    });
    wait_in_page(
        &viewer,
        &person,
        "document.getElementById('banner').classList.contains('open')",
    )
    .await;
    assert_eq!(
        eval(
            &viewer,
            &person,
            "document.getElementById('reason').textContent"
        )
        .await,
        "Please sign in"
    );
    assert_eq!(
        eval(
            &viewer,
            &person,
            "document.getElementById('holder-text').textContent"
        )
        .await,
        "You have control"
    );
    save_screenshot(&viewer, &person, "relay-viewer-handoff.png").await;
    viewer
        .act(
            &person,
            &Target::Role {
                role: "button".into(),
                name: "Done".into(),
            },
            &click,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let (mut agent, (text, error)) = tokio::time::timeout(Duration::from_secs(30), handoff)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !error && text.contains("The person returned control."),
        "{text}"
    );
    wait_in_page(
        &viewer,
        &person,
        "!document.getElementById('banner').classList.contains('open')",
    )
    .await;

    // The person clicks into the page's name field through the picture,
    // types, and composes with an input method; the page gets all of it.
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "(() => { const f = document.getElementById('name'); f.value = ''; const r = f.getBoundingClientRect(); return [(r.left + r.width / 2) / innerWidth, (r.top + r.height / 2) / innerHeight]; })()"}),
        )
        .await;
    assert!(!error, "{text}");
    let field: Vec<f64> =
        serde_json::from_str(&text[text.find('[').unwrap()..=text.rfind(']').unwrap()]).unwrap();
    let picture = eval(
        &viewer,
        &person,
        "(() => { const r = document.getElementById('frame').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()",
    )
    .await;
    let picture: Vec<f64> = serde_json::from_value(picture).unwrap();
    let (x, y) = (
        picture[0] + field[0] * picture[2],
        picture[1] + field[1] * picture[3],
    );
    let viewer_tab = viewer.live_tabs().await.unwrap().remove(0).view;
    for kind in ["mousePressed", "mouseReleased"] {
        viewer_host
            .call(
                &viewer_tab,
                &InputDispatchMouseEvent {
                    kind,
                    x,
                    y,
                    button: "left",
                    click_count: 1,
                    ..InputDispatchMouseEvent::default()
                },
            )
            .await
            .unwrap();
    }
    wait_in_page(
        &viewer,
        &person,
        "document.getElementById('holder-text').textContent === 'You have control' && document.activeElement === document.getElementById('keys')",
    )
    .await;
    viewer
        .act(
            &person,
            &Target::Page,
            &Action::Press {
                keys: vec!["Shift+K".into(), "a".into(), "y".into()],
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    for (composed, commit) in [("ほ", false), ("ほっぱ", false), ("ホッパー", true)] {
        if commit {
            viewer_host
                .call(
                    &viewer_tab,
                    &InputInsertText {
                        text: composed.into(),
                    },
                )
                .await
                .unwrap();
        } else {
            viewer_host
                .call(
                    &viewer_tab,
                    &InputImeSetComposition {
                        text: composed.into(),
                        selection_start: 0,
                        selection_end: 0,
                    },
                )
                .await
                .unwrap();
        }
    }
    // The viewer's messages reach the relay in order: once control is back,
    // every key has reached the page.
    return_control(&viewer, &person).await;
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "document.getElementById('name').value"}),
        )
        .await;
    assert!(!error && text.contains("\"Kayホッパー\""), "{text}");

    // A second tab: the strip shows the page's own icon, sent by the
    // relay as a data: URL (the viewer never contacts the site).
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html"), "newTab": true}),
        )
        .await;
    assert!(!error, "{text}");
    wait_in_page(
        &viewer,
        &person,
        "[...document.querySelectorAll('#tabs .icon img')].some((i) => i.src.startsWith('data:image/svg+xml;base64,') && i.complete && i.naturalWidth > 0)",
    )
    .await;
    save_screenshot(&viewer, &person, "relay-viewer-tabs.png").await;

    // The agent disconnects: its tab leaves the browser column.
    assert_eq!(agent.disconnect().await, 204);
    wait_in_page(
        &viewer,
        &person,
        "!document.getElementById('tabs').textContent.includes('Sign-up form')",
    )
    .await;

    viewer_host.shutdown().await;
    common::stop_shell(relay).await;
}

#[tokio::test]
async fn the_bare_command_starts_the_relay() {
    let (shell, printed) = start_shell(&[], 3).await;
    let viewer_url = &printed[0];
    assert!(
        viewer_url.starts_with("http://127.0.0.1:") && viewer_url.contains("/?token="),
        "{viewer_url}"
    );
    let Endpoint { host, token, .. } = Endpoint::of_viewer_link(viewer_url);
    let (status, page) = get(&host, &format!("/?token={token}"), &[]).await;
    assert_eq!(status, 200);
    assert!(page.contains("Take over"));
    common::stop_shell(shell).await;
}

#[tokio::test]
async fn other_addresses_need_tls_or_an_explicit_insecure_flag() {
    // Plain HTTP where others can listen: refused before anything starts.
    let refused = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["relay", "--listen", "0.0.0.0:0"])
        .output()
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--tls-cert"), "{stderr}");

    // With a certificate: HTTPS, and the token is still required.
    let dir = common::runtime_dir();
    let (cert, key) = common::certificate_in(&dir);
    let (relay, printed) = start_shell(
        &[
            "relay",
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        3,
    )
    .await;
    assert!(printed[0].starts_with("https://"), "{}", printed[0]);
    let port = printed[0]
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let token = printed[0].split("token=").nth(1).unwrap();
    let fetch = |path: String| {
        let cert = cert.clone();
        async move {
            let output = tokio::process::Command::new("curl")
                .args(["-s", "-w", "\n%{http_code}", "--cacert"])
                .arg(&cert)
                .arg(format!("https://127.0.0.1:{port}{path}"))
                .output()
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            let (body, status) = text.rsplit_once('\n').unwrap();
            (status.to_owned(), body.to_owned())
        }
    };
    let (status, page) = fetch(format!("/?token={token}")).await;
    assert_eq!(status, "200");
    assert!(page.contains("Take over"));
    let (status, _) = fetch("/".into()).await;
    assert_eq!(status, "401");
    common::stop_shell(relay).await;
}
