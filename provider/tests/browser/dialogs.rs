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
