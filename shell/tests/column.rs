//! The browser column as a person sees it, in a real headless Chromium
//! viewer: the agent's hand drawn over the picture, a view-only watcher
//! that tells the truth and offers nothing it cannot use, a handoff that
//! asks for attention without covering the page, and the column's keys.
//! One relay and one viewer browser serve the whole scenario.

use crate::common;

use std::time::Duration;

use browser_provider::host::{ChromiumHost, LaunchOptions};
use browser_provider::page::act::{Action, Target};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::page::screenshot::ScreenshotRequest;
use browser_provider::policy::NavigationPolicy;
use browser_provider::{Browser, BrowserConfig, SessionId};
use browser_testkit::fixtures::serve_fixtures;
use common::{Agent, Endpoint, runtime_dir, start_shell_in};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A person's browser tab on the column.
struct Viewer<'a> {
    browser: &'a Browser,
    session: SessionId,
}

impl<'a> Viewer<'a> {
    async fn open(browser: &'a Browser, url: &str) -> Viewer<'a> {
        let session = browser.open_session(Default::default()).await.unwrap();
        browser
            .open(&session, url, false, &CancellationToken::new())
            .await
            .unwrap();
        Viewer { browser, session }
    }

    async fn eval(&self, script: &str) -> Value {
        match self
            .browser
            .execute(
                &self.session,
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

    /// Waits (bounded) until `condition` holds in the column.
    async fn wait_for(&self, condition: &str) {
        let script = format!(
            "new Promise((resolve) => {{ const check = () => ({condition}) ? resolve(true) : requestAnimationFrame(check); check(); setTimeout(() => resolve(false), 15000); }})"
        );
        assert_eq!(
            self.eval(&script).await,
            true,
            "timed out waiting for {condition}"
        );
    }

    async fn press(&self, key: &str) {
        self.browser
            .act(
                &self.session,
                &Target::Page,
                &Action::Press {
                    keys: vec![key.into()],
                },
                &CancellationToken::new(),
            )
            .await
            .unwrap();
    }

    async fn screenshot(&self, name: &str) -> image::RgbaImage {
        let shot = self
            .browser
            .screenshot(
                &self.session,
                ScreenshotRequest::default(),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target")
            .join(name);
        std::fs::write(&path, &shot.data).unwrap();
        image::load_from_memory(&shot.data).unwrap().into_rgba8()
    }
}

/// A secret's value and a typed password: never in the column or a report.
const SECRET: &str = "Open Sesame 4711";
const TYPED: &str = "typed-Passw0rd";

/// The rectangle `[left, top, width, height]` of the column's element `id`.
fn rect_of(id: &str) -> String {
    format!(
        "(() => {{ const r = document.getElementById('{id}').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }})()"
    )
}

fn floats(value: Value) -> Vec<f64> {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn a_person_sees_the_agents_hand_and_a_watcher_sees_the_truth() {
    let base = serve_fixtures().await;
    let runtime = runtime_dir();
    let secrets = runtime.join("secrets.toml");
    std::fs::write(&secrets, format!("pin = \"{SECRET}\"\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let (relay, printed) = start_shell_in(
        &runtime,
        &["relay", "--secrets", secrets.to_str().unwrap()],
        3,
    )
    .await;
    let viewer_url = printed[0].clone();
    let view_only_url = printed[1].strip_prefix("View only: ").unwrap().to_owned();
    let endpoint: &'static Endpoint = Box::leak(Box::new(Endpoint::of_viewer_link(&viewer_url)));
    let mut agent = Agent::connect(endpoint).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");

    let viewer_host = std::sync::Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let people = Browser::new(viewer_host.clone(), BrowserConfig::default());
    let person = Viewer::open(&people, &viewer_url).await;
    let watcher = Viewer::open(&people, &view_only_url).await;
    for viewer in [&person, &watcher] {
        viewer
            .wait_for("document.getElementById('frame').naturalWidth > 0")
            .await;
    }

    // The agent clicks; both viewers draw its hand at the point it acted
    // on (the middle of the button), over the picture.
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "(() => { const r = document.getElementById('counter').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2, innerWidth]; })()"}),
        )
        .await;
    assert!(!error, "{text}");
    let button: Vec<f64> =
        serde_json::from_str(&text[text.find('[').unwrap()..=text.rfind(']').unwrap()]).unwrap();
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "click", "role": "button", "name": "Add one"}),
        )
        .await;
    assert!(!error, "{text}");
    let settled = "(() => { const p = document.getElementById('hand-pointer'); return p.classList.contains('shown') && p.dataset.kind === 'click' && p.getAnimations().length === 0; })()";
    for viewer in [&person, &watcher] {
        viewer.wait_for(settled).await;
        let pointer = viewer
            .eval("(() => { const d = document.getElementById('hand-pointer').dataset; return [Number(d.x), Number(d.y)]; })()")
            .await;
        let pointer = floats(pointer);
        assert!(
            (pointer[0] - button[0]).abs() < 1.0 && (pointer[1] - button[1]).abs() < 1.0,
            "the hand points at {pointer:?}, the button's middle is {button:?}"
        );
    }
    // Drawn where that point is in the picture, in the agent's colour.
    let picture = floats(person.eval(&rect_of("frame")).await);
    let scale = picture[2] / button[2];
    let (x, y) = (
        picture[0] + button[0] * scale,
        picture[1] + button[1] * scale,
    );
    let shot = person.screenshot("column-hand.png").await;
    let pixel = shot.get_pixel(x.round() as u32, y.round() as u32).0;
    let agent_blue = [0x2f, 0x6f, 0xed];
    assert!(
        (0..3).all(|i| pixel[i].abs_diff(agent_blue[i]) < 40),
        "the pointer's colour at ({x}, {y}): {pixel:?}"
    );
    let target = floats(person.eval(&rect_of("hand-target")).await);
    assert!(
        target[0] <= x
            && x <= target[0] + target[2]
            && target[1] <= y
            && y <= target[1] + target[3],
        "the button's outline {target:?} holds the point"
    );

    // The timeline: each call with its pictures before and after and what
    // came of it; typed text and secrets are not in it.
    // (A password typed as text, then a secret filled in its place.)
    for arguments in [
        json!({"action": "type", "role": "textbox", "name": "Password", "text": TYPED}),
        json!({"action": "fill", "role": "textbox", "name": "Password", "secret": "pin"}),
    ] {
        let (text, error) = agent.call("browser_act", arguments).await;
        assert!(!error, "{text}");
    }
    person
        .wait_for("[...document.querySelectorAll('#events .event.agent')].filter((row) => row.querySelector('img.before').src.startsWith('data:image/jpeg') && row.querySelector('img.after').src.startsWith('data:image/jpeg')).length >= 3")
        .await;
    let click_row = person
        .eval("(() => { const row = [...document.querySelectorAll('#events .event.agent')].find((r) => r.querySelector('.args').textContent.includes('name=Add one')); return row.querySelector('.result').textContent; })()")
        .await;
    assert!(
        click_row.as_str().unwrap().starts_with("+0 ~1 −0"),
        "the click's row says what changed: {click_row}"
    );
    // Selecting an entry opens its arguments and result.
    let typing_row = "[...document.querySelectorAll('#events .event.agent')].find((r) => r.querySelector('.args').textContent.startsWith('action=type') && r.querySelector('.text').textContent)";
    person.wait_for(typing_row).await;
    person.eval(&format!("{typing_row}.click()")).await;
    let detail = person
        .eval(&format!("(() => {{ const row = {typing_row}; return row.classList.contains('open') && row.querySelector('.detail').checkVisibility() ? row.querySelector('.detail').textContent : null; }})()"))
        .await;
    assert!(
        detail.as_str().is_some_and(|d| d.contains("Done: type")),
        "{detail}"
    );
    let column_text = person.eval("document.body.innerHTML").await;
    let column_text = column_text.as_str().unwrap();
    assert!(!column_text.contains(SECRET) && !column_text.contains(TYPED));
    person.screenshot("column-timeline.png").await;

    // A handoff: the agent asks for help. Both tabs' titles start with the
    // request and their icons change; the request sits in a bar above the
    // picture, covering none of it.
    let quiet_icon = person.eval("document.getElementById('favicon').href").await;
    let handoff = tokio::spawn(async move {
        let answer = agent
            .call(
                "browser_handoff",
                json!({"reason": "Please sign in", "timeoutMs": 30000}),
            )
            .await;
        (agent, answer)
    });
    for viewer in [&person, &watcher] {
        viewer
            .wait_for("document.title.startsWith('Help needed: Please sign in')")
            .await;
        assert_ne!(
            viewer.eval("document.getElementById('favicon').href").await,
            quiet_icon
        );
        let banner = floats(viewer.eval(&rect_of("banner")).await);
        let stage = floats(viewer.eval(&rect_of("stage")).await);
        let frame = floats(viewer.eval(&rect_of("frame")).await);
        assert!(banner[3] > 0.0, "the request is shown");
        assert!(
            banner[1] + banner[3] <= stage[1] && stage[1] <= frame[1],
            "the request ({banner:?}) ends above the picture ({frame:?})"
        );
    }
    person.screenshot("column-handoff.png").await;

    // The watcher says who holds control, that it only watches, and
    // offers no control it cannot use.
    let seen = watcher
        .eval(
            "(() => { const $ = (id) => document.getElementById(id); const usable = (id) => $(id).checkVisibility(); \
             return { holder: $('holder-text').textContent, badge: usable('view-only'), \
             controls: ['done', 'takeover', 'stop', 'return', 'new-tab', 'back', 'forward', 'reload'].filter(usable), \
             closes: [...document.querySelectorAll('#tabs .close')].filter((b) => b.checkVisibility()).length, \
             outlined: $('stage').classList.contains('human'), title: document.title, \
             tabs: $('tabs').textContent, asks: $('banner-who').textContent }; })()",
        )
        .await;
    watcher.screenshot("column-view-only-handoff.png").await;
    assert_eq!(seen["holder"], "A person has control", "{seen}");
    assert_eq!(seen["badge"], true, "{seen}");
    assert_eq!(seen["controls"], json!([]), "{seen}");
    assert_eq!(seen["closes"], 0, "{seen}");
    assert_eq!(seen["outlined"], false, "{seen}");
    assert!(!seen["title"].as_str().unwrap().contains("You have control"));
    assert!(!seen["tabs"].as_str().unwrap().contains("you"), "{seen}");
    // The person in control sees the request with its Done button.
    assert_eq!(
        person
            .eval("[document.getElementById('holder-text').textContent, document.getElementById('done').checkVisibility()]")
            .await,
        json!(["You have control", true])
    );
    person
        .browser
        .act(
            &person.session,
            &Target::Role {
                role: "button".into(),
                name: "Done".into(),
            },
            &Action::Click {
                button: Default::default(),
                count: 1,
                modifiers: vec![],
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let (_agent, (text, error)) = tokio::time::timeout(Duration::from_secs(30), handoff)
        .await
        .unwrap()
        .unwrap();
    assert!(!error, "{text}");
    for viewer in [&person, &watcher] {
        viewer
            .wait_for("!document.title.startsWith('Help needed') && document.getElementById('holder-text').textContent === 'Agent has control'")
            .await;
        assert_eq!(
            viewer.eval("document.getElementById('favicon').href").await,
            quiet_icon
        );
    }

    // The column's keys: Esc while the agent holds control is Stop;
    // Ctrl+T opens a tab of the person's. A watcher's keys do nothing.
    watcher.press("Escape").await;
    watcher.press("Control+t").await;
    person.press("Escape").await;
    person
        .wait_for("document.getElementById('holder-text').textContent === 'You have control'")
        .await;
    let tabs_before = person
        .eval("document.querySelectorAll('#tabs .tab').length")
        .await
        .as_u64()
        .unwrap();
    assert_eq!(
        watcher
            .eval("document.querySelectorAll('#tabs .tab').length")
            .await,
        tabs_before,
        "the watcher's Ctrl+T opened nothing"
    );
    person.press("Control+t").await;
    person
        .wait_for(&format!("document.querySelectorAll('#tabs .tab').length === {} && document.querySelector('#tabs .tab.yours.shown') !== null", tabs_before + 1))
        .await;
    // Ctrl+W closes the shown tab, as it is the person's.
    person.press("Control+w").await;
    person
        .wait_for(&format!(
            "document.querySelectorAll('#tabs .tab').length === {tabs_before}"
        ))
        .await;

    // The person's steps are in the timeline too.
    person
        .wait_for("(() => { const names = [...document.querySelectorAll('#events .event.person .name')].map((n) => n.textContent); return names.includes('You finished the handoff') && names.includes('You took over'); })()")
        .await;
    watcher
        .wait_for("[...document.querySelectorAll('#events .event.person .name')].some((n) => n.textContent === 'The person took over')")
        .await;

    // The report, from the command line: it opens offline, shows the
    // entries with their pictures, fetches nothing and keeps no secret.
    let report = runtime.join("report.html");
    let saved = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["report", "-o", report.to_str().unwrap()])
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .output()
        .await
        .unwrap();
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        !html.contains(SECRET) && !html.contains(TYPED),
        "no secret, no typed text"
    );
    assert!(!html.contains("<script"), "no script");
    let reader = Browser::new(
        viewer_host.clone(),
        BrowserConfig {
            policy: NavigationPolicy {
                http_only: false,
                ..NavigationPolicy::default()
            },
            ..BrowserConfig::default()
        },
    );
    let reading = Viewer::open(&reader, &format!("file://{}", report.display())).await;
    let seen = reading
        .eval("(() => { const pictures = [...document.querySelectorAll('.picture')]; return { entries: document.querySelectorAll('.timeline li').length, acts: [...document.querySelectorAll('.timeline li b')].filter((b) => b.textContent === 'browser_act').length, person: document.querySelectorAll('.timeline li.person').length, pictures: pictures.filter((p) => getComputedStyle(p).backgroundImage.startsWith('url(\"data:image/jpeg') && p.getBoundingClientRect().height > 0).length, fetched: performance.getEntriesByType('resource').length }; })()")
        .await;
    reading.screenshot("column-report.png").await;
    assert!(seen["acts"].as_u64().unwrap() >= 3, "{seen}");
    assert!(
        seen["person"].as_u64().unwrap() >= 2,
        "the person's steps: {seen}"
    );
    assert!(seen["pictures"].as_u64().unwrap() >= 6, "{seen}");
    assert_eq!(seen["fetched"], 0, "{seen}");
    // A session the instance never saw is an error that says so.
    let unknown = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["report", "s99", "-o", report.to_str().unwrap()])
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .output()
        .await
        .unwrap();
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("SESSION_NOT_FOUND")
            || String::from_utf8_lossy(&unknown.stdout).contains("SESSION_NOT_FOUND"),
        "{unknown:?}"
    );

    viewer_host.shutdown().await;
    common::stop_shell(relay).await;
}
