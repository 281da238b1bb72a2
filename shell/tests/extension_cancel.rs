//! Cancel on Chrome's own debugging bar, pressed as a person would: the
//! person's Chrome runs with a window on a virtual X display, and the test
//! clicks the bar's Cancel button where the screen shows it. The agents
//! stop as with the extension's Stop; until the person lets them go on,
//! their calls answer `DEBUGGER_DETACHED` naming the Cancel and nothing
//! attaches again (the bar would come back), even after Chrome stops and
//! restarts the extension's worker; then they drive the tab again.
//! Screenshots of the bar and of the extension's popup after the Cancel are
//! saved as `target/debugging-bar.png` and `target/popup-after-cancel.png`.

use crate::common;
use browser_testkit::person;
use browser_testkit::provider::extension::paired;
use common::bounded;

use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::control::Holder;
use browser_provider::snapshot::Scope;
use common::display::{VirtualDisplay, click_at, screenshot};
use tokio_util::sync::CancellationToken;

/// The colour of Chrome's filled buttons, such as the bar's Cancel.
const BUTTON_BLUE: [u8; 3] = [0x0b, 0x57, 0xd0];

/// Where the debugging bar's Cancel button is on the screen: the middle of
/// the button-blue pixels between the toolbar and the page (the bar sits
/// under the toolbar, 80–200 px from the top of a window at 0,0).
fn cancel_button(shot: &image::RgbImage) -> Option<(i16, i16)> {
    let mut found = None::<(u32, u32, u32, u32)>;
    for y in 80..200.min(shot.height()) {
        for x in 0..shot.width() {
            if shot.get_pixel(x, y).0 != BUTTON_BLUE {
                continue;
            }
            let (left, top, right, bottom) = found.unwrap_or((x, y, x, y));
            found = Some((left.min(x), top.min(y), right.max(x), bottom.max(y)));
        }
    }
    let (left, top, right, bottom) = found?;
    // A button, not a stray pixel of an icon.
    if right - left < 30 || bottom - top < 15 {
        return None;
    }
    Some((
        i16::try_from((left + right) / 2).ok()?,
        i16::try_from((top + bottom) / 2).ok()?,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_on_the_debugging_bar_stops_the_agents_until_they_are_let_go_on() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let display = VirtualDisplay::start();
    let x = display.connect();
    let person = person::Person::start_shown(&display.name).await;
    let (host, browser, _pairing) = paired(&person).await;
    let session = browser
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let look = || async { browser.snapshot(&session, &Scope::Page, &cancel).await };

    // The person shares a tab of theirs; the agent's first look attaches.
    let url = format!("{base}/form.html?bar");
    person.open_tab(&url).await;
    person
        .press_in_popup(Some(&url), &format!("button[data-share=\"{session}\"]"))
        .await;
    let shared = bounded::first_some(Duration::from_secs(10), || async {
        let tabs = browser.list_tabs(&session).await.ok()?;
        (tabs.len() == 1).then_some(())
    })
    .await;
    assert!(shared.is_some(), "the tab is shared within 10 s");
    bounded::first_ok(Duration::from_secs(10), look).await;

    // Chrome shows its debugging bar; the person presses its Cancel.
    let button = bounded::first_some(Duration::from_secs(10), || async {
        cancel_button(&screenshot(&x))
    })
    .await;
    let shot = screenshot(&x);
    let _ = shot.save(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/debugging-bar.png"
    ));
    let button = button.expect("Chrome shows the debugging bar with its Cancel within 10 s");
    let mut control = browser.watch_control();
    click_at(&x, button);
    tokio::time::timeout(
        Duration::from_secs(10),
        control.wait_for(|c| c.holder == Holder::Human),
    )
    .await
    .expect("Cancel stops the agents within 10 s")
    .unwrap();
    let stopped = person.status("stopped").await;
    assert_eq!(stopped, "you pressed Cancel on Chrome's debugging bar");
    let popup = person.popup_png().await;
    let _ = std::fs::write(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/popup-after-cancel.png"
        ),
        popup,
    );

    // The bar goes; nothing attaches again behind the person's back (the
    // extension refuses before it would attach).
    let gone = bounded::first_some(Duration::from_secs(10), || async {
        cancel_button(&screenshot(&x)).is_none().then_some(())
    })
    .await;
    assert!(gone.is_some(), "the debugging bar goes within 10 s");
    let refused = look().await.unwrap_err();
    assert_eq!(refused.code(), "DEBUGGER_DETACHED", "{refused}");
    assert!(
        refused
            .to_string()
            .contains("Cancel on Chrome's debugging bar"),
        "{refused}"
    );

    // Chrome stops the extension's worker and it comes back: the Cancel
    // still holds.
    let mut connected = host.watch_connected();
    let worker = person
        .service_worker()
        .await
        .expect("the extension's worker");
    let _ = person
        .cdp
        .send(
            None,
            "Target.closeTarget",
            serde_json::json!({"targetId": worker}),
        )
        .await;
    tokio::time::timeout(Duration::from_secs(10), connected.wait_for(|c| !*c))
        .await
        .expect("the bridge goes with the worker")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), connected.wait_for(|c| *c))
        .await
        .expect("the extension reconnects")
        .unwrap();
    let refused = look().await.unwrap_err();
    assert_eq!(refused.code(), "DEBUGGER_DETACHED", "{refused}");

    // The person lets the agents go on: the tab is driven again.
    person.press_in_popup(None, "#resume").await;
    tokio::time::timeout(
        Duration::from_secs(10),
        control.wait_for(|c| c.holder == Holder::Agent),
    )
    .await
    .expect("control comes back")
    .unwrap();
    let text = bounded::first_ok(Duration::from_secs(10), look).await.text;
    assert!(text.contains("Full name"), "{text}");
    person.quit().await;
}
