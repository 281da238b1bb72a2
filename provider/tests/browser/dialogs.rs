//! JavaScript dialogs never hang an operation.

use browser_provider::browser::NavigationRequest;
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

pub async fn dialogs_are_dismissed_and_reported(ctx: Ctx) {
    let session = ctx.session_at("dialogs.html").await;
    let result = "document.getElementById('result').textContent";
    ctx.eval(&session, "document.getElementById('alert').click()")
        .await;
    assert_eq!(ctx.eval(&session, result).await, "after alert");
    ctx.eval(&session, "document.getElementById('confirm').click()")
        .await;
    assert_eq!(ctx.eval(&session, result).await, "confirm=false");
    ctx.eval(&session, "document.getElementById('prompt').click()")
        .await;
    assert_eq!(ctx.eval(&session, result).await, "prompt=null");

    let dialogs = ctx.browser().take_dialogs(&session).unwrap();
    let kinds: Vec<&str> = dialogs.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, ["alert", "confirm", "prompt"]);
    assert_eq!(dialogs[0].message, "hello from alert");
    assert!(dialogs.iter().all(|d| !d.accepted));
    assert!(
        ctx.browser().take_dialogs(&session).unwrap().is_empty(),
        "read once"
    );
}

pub async fn beforeunload_does_not_block_navigation(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("dialogs.html").await;
    // beforeunload only prompts after a real user gesture on the page.
    browser.click(&session, 5.0, 5.0, &cancel).await.unwrap();
    let outcome = browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("index.html")),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(outcome.title, "browser-shell fixtures");
}

/// A page that opens alerts forever: opening it keeps the navigation bound
/// (within a second), says how many dialogs it answered, and the tab can
/// still be navigated away and closed.
pub async fn a_dialog_loop_keeps_the_navigation_bound(ctx: Ctx) {
    let bound = std::time::Duration::from_secs(3);
    let config = browser_provider::BrowserConfig {
        navigation_timeout: bound,
        ..browser_provider::BrowserConfig::default()
    };
    let browser = browser_provider::Browser::new(ctx.browser().host(), config);
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    let started = std::time::Instant::now();
    let (tab, outcome) = browser
        .open(&session, &ctx.url("dialog-loop.html"), false, &cancel)
        .await
        .expect("a page that never loads still opens");
    let took = started.elapsed();
    assert!(
        took < bound + std::time::Duration::from_secs(1),
        "kept its {bound:?} bound: {took:?}"
    );
    assert!(!outcome.loaded, "{outcome:?}");
    assert!(outcome.url.ends_with("/dialog-loop.html"), "{outcome:?}");
    assert!(outcome.dialogs > 10, "counted the dialogs: {outcome:?}");

    let (_, away) = browser
        .open(&session, &ctx.url("index.html"), false, &cancel)
        .await
        .expect("navigating away works");
    assert!(away.loaded && away.dialogs == 0, "{away:?}");
    browser.close_tab(&session, &tab).await.unwrap();
    browser.close_session(&session).await.unwrap();
}
