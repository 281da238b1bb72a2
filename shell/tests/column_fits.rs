//! The browser column fits the screen it is on (issue 40): at 800, 1,024
//! and 1,400 CSS pixels wide, with 1, 4 and 12 tabs, nothing overflows
//! sideways and every control of the header stays on screen. Measured in
//! a real headless Chromium viewing a relay; screenshots of the narrowest
//! cases go to `target/` to be looked at.

use crate::common;

use std::time::Duration;

use browser_provider::host::{ChromiumHost, LaunchOptions, ViewHost};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::page::screenshot::ScreenshotRequest;
use browser_provider::{Browser, BrowserConfig};
use browser_testkit::fixtures::serve_fixtures;
use common::{Agent, Endpoint, runtime_dir, start_shell_in};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What must stay on screen: the brand, the tabs' strip, new tab, and the
/// controls that hand control back and forth.
const CONTROLS: &str = "['.brand', '#tabs', '#new-tab', '#stop', '#takeover', '#return']";

/// The layout at the viewer's current width: its width, how wide the page
/// is, and each control's left and right edge.
const MEASURE: &str = "(() => ({ width: innerWidth, scrollWidth: document.documentElement.scrollWidth, \
    tabs: document.querySelectorAll('#tabs .tab').length, \
    controls: CONTROLS.map((s) => { const r = document.querySelector(s).getBoundingClientRect(); \
      return { s, left: r.left, right: r.right, width: r.width }; }), \
    wider: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5) \
      .slice(0, 8).map((e) => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)) }))()";

#[tokio::test]
async fn the_column_fits_at_every_width_with_any_number_of_tabs() {
    let base = serve_fixtures().await;
    let (relay, printed) = start_shell_in(&runtime_dir(), &["relay"], 3).await;
    let viewer_url = printed[0].clone();
    let endpoint: &'static Endpoint = Box::leak(Box::new(Endpoint::of_viewer_link(&viewer_url)));
    let mut agent = Agent::connect(endpoint).await;

    let viewer_host = std::sync::Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let people = Browser::new(viewer_host.clone(), BrowserConfig::default());
    let cancel = CancellationToken::new();
    let session = people.open_session(Default::default()).await.unwrap();
    people
        .open(&session, &viewer_url, false, &cancel)
        .await
        .unwrap();
    let tab = people.active_tab(&session).unwrap();
    let view = people.view_of(&session, &tab).unwrap();
    let eval = |script: String| {
        let people = people.clone();
        let session = session.clone();
        async move {
            match people
                .execute(
                    &session,
                    &script,
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
    };

    let mut opened = 0;
    for tabs in [1, 4, 12] {
        while opened < tabs {
            let (text, error) = agent
                .call(
                    "browser_open",
                    json!({"url": format!("{base}/article.html?tab={opened}"), "newTab": opened > 0}),
                )
                .await;
            assert!(!error, "{text}");
            opened += 1;
        }
        for width in [800, 1024, 1400] {
            viewer_host
                .send_command(
                    &view,
                    "Emulation.setDeviceMetricsOverride",
                    json!({"width": width, "height": 700, "deviceScaleFactor": 1, "mobile": false}),
                    Duration::from_secs(10),
                )
                .await
                .unwrap();
            // The column shows every tab before it is measured.
            let shown = eval(format!(
                "new Promise((done) => {{ const check = () => document.querySelectorAll('#tabs .tab').length >= {tabs} && innerWidth === {width} ? done(true) : requestAnimationFrame(check); check(); setTimeout(() => done(false), 15000); }})"
            ))
            .await;
            assert_eq!(
                shown,
                Value::Bool(true),
                "{tabs} tabs at {width} px never showed"
            );
            let layout = eval(MEASURE.replace("CONTROLS", CONTROLS)).await;
            let page_width = layout["scrollWidth"].as_f64().unwrap();
            assert!(
                page_width <= f64::from(width),
                "{tabs} tabs at {width} px: the column is {page_width} px wide: {layout}"
            );
            for control in layout["controls"].as_array().unwrap() {
                let (left, right) = (
                    control["left"].as_f64().unwrap(),
                    control["right"].as_f64().unwrap(),
                );
                assert!(
                    left >= 0.0
                        && right <= f64::from(width)
                        && control["width"].as_f64().unwrap() > 0.0,
                    "{tabs} tabs at {width} px: {} is at {left}..{right}: {layout}",
                    control["s"]
                );
            }
            if width == 800 {
                let shot = people
                    .screenshot(
                        &session,
                        ScreenshotRequest::default(),
                        &CancellationToken::new(),
                    )
                    .await
                    .unwrap();
                let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(format!("../target/column-800px-{tabs}-tabs.png"));
                std::fs::write(path, &shot.data).unwrap();
            }
        }
    }
    drop(agent);
    common::stop_shell(relay).await;
}

/// The column follows the agent to the tab it acts on: with its newest tab
/// shown, an agent's call on its first tab (named by `tab`) turns the
/// column, and the live picture, to that tab.
#[tokio::test]
async fn the_column_follows_the_agent_to_the_tab_it_acts_on() {
    let base = serve_fixtures().await;
    let (relay, printed) = start_shell_in(&runtime_dir(), &["relay"], 3).await;
    let endpoint: &'static Endpoint = Box::leak(Box::new(Endpoint::of_viewer_link(&printed[0])));
    let mut agent = Agent::connect(endpoint).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");
    let tab_of = |text: &str| {
        text.split("in tab ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap()
            .to_owned()
    };
    let first = tab_of(&text);
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html"), "newTab": true}),
        )
        .await;
    assert!(!error, "{text}");
    let second = tab_of(&text);
    // Shown, and pictured (the live frames are of it): waited on through
    // the relay's status, which answers when something changed.
    let shows = |tab: &str, status: &Value| status["shown"] == tab && status["pictured"] == tab;
    common::try_status_until(endpoint, |status| shows(&second, status))
        .await
        .unwrap_or_else(|last| panic!("the newest tab is shown: {last}"));
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "scroll", "dy": 200, "tab": first}),
        )
        .await;
    assert!(!error, "{text}");
    common::try_status_until(endpoint, |status| shows(&first, status))
        .await
        .unwrap_or_else(|last| panic!("the column follows to {first}: {last}"));
    drop(agent);
    common::stop_shell(relay).await;
}
