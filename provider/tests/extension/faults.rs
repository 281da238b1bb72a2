//! The person's Chrome going away and coming back, with its own browser,
//! host and pairing (the other tests' Chrome stays up).

use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::snapshot::Scope;
use browser_testkit::person::Person;
use browser_testkit::provider::extension::paired;
use tokio_util::sync::CancellationToken;

use crate::Ctx;

pub async fn chrome_quitting_fails_the_call_and_it_comes_back(ctx: Ctx) {
    let profile = tempfile::tempdir().unwrap();
    let person = Person::launch(profile.path()).await;
    let (host, browser, _pairing) = paired(&person).await;
    let session = browser
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    browser
        .open(&session, &ctx.url("form.html?quits"), false, &cancel)
        .await
        .unwrap();

    // Chrome goes away while the agent waits in its tab.
    let waiting = crate::waiting_in_background(&browser, &session);
    let mut connected = host.watch_connected();
    person.kill().await;
    let failed = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait ends when Chrome goes")
        .unwrap()
        .expect_err("the wait cannot go on");
    assert_eq!(failed.code(), "NOT_CONNECTED", "{failed}");
    assert!(failed.to_string().contains("Chrome"), "{failed}");
    tokio::time::timeout(Duration::from_secs(5), connected.wait_for(|c| !c))
        .await
        .expect("the host sees the bridge go")
        .unwrap();
    let started = tokio::time::Instant::now();
    let refused = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .expect_err("no Chrome, no snapshot");
    assert_eq!(refused.code(), "NOT_CONNECTED", "{refused}");
    // Soon after the drop a call waits a moment for the extension to come
    // back (a restarting worker does); a Chrome that quit does not.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "refused after a short wait, not a timeout: {:?}",
        started.elapsed()
    );

    // The person starts Chrome again: the extension still holds the
    // pairing and connects by itself; the agent's tab went with the old
    // Chrome, a new one works.
    let person = Person::launch(profile.path()).await;
    host.connected(Duration::from_secs(30))
        .await
        .expect("the extension reconnects when Chrome comes back");
    let mut tabs = browser.watch_tabs();
    tokio::time::timeout(Duration::from_secs(10), async {
        while browser.census().tabs > 0 {
            tabs.changed().await.unwrap();
        }
    })
    .await
    .expect("the tab of the old Chrome is gone");
    browser
        .open(&session, &ctx.url("form.html?back"), false, &cancel)
        .await
        .unwrap();
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    assert!(text.contains("Full name"), "{text}");
    browser.close_session(&session).await.unwrap();
    person.kill().await;
}
