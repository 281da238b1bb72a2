//! Coordinate click and text typing, the fallback input path.

use std::time::Duration;

use browser_provider::cdp::Command;
use browser_provider::cdp::protocol::RuntimeEvaluate;
use browser_provider::host::CommandBatch;
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

pub async fn click_and_type_at_coordinates(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("input.html").await;
    browser
        .click(&session, 150.0, 130.0, &cancel)
        .await
        .unwrap();
    assert_eq!(
        ctx.eval(&session, "document.getElementById('target').textContent")
            .await,
        "clicked 1"
    );
    browser
        .click(&session, 150.0, 310.0, &cancel)
        .await
        .unwrap();
    browser
        .type_text(&session, "Grace Hopper ✓", &cancel)
        .await
        .unwrap();
    assert_eq!(
        ctx.eval(&session, "document.getElementById('name').value")
            .await,
        "Grace Hopper ✓"
    );
    assert_eq!(
        browser
            .click(&session, -1.0, 5.0, &cancel)
            .await
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        browser
            .type_text(&session, "", &cancel)
            .await
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
}

/// A command no browser knows, to fail inside a batch.
#[derive(serde::Serialize)]
struct NoSuchCommand {}

impl Command for NoSuchCommand {
    const METHOD: &'static str = "Runtime.noSuchCommand";
    type Response = serde_json::Value;
}

/// One step of a batch: appends `n` to the page's `order`.
fn append(n: usize) -> RuntimeEvaluate {
    RuntimeEvaluate {
        expression: format!("(globalThis.order ??= []).push({n})"),
        ..RuntimeEvaluate::default()
    }
}

pub async fn commands_in_a_batch_arrive_in_order_and_answer_their_first_failure(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("form.html").await;
    let tab = browser.active_tab(&session).unwrap();
    let view = browser.view_of(&session, &tab).unwrap();
    let host = browser.host();
    let bound = Duration::from_secs(10);

    // More commands than one message of the extension's carries.
    let mut batch = CommandBatch::new();
    for n in 0..75 {
        batch.push(&append(n)).unwrap();
    }
    host.send_commands(&view, batch, bound).await.unwrap();
    let order = ctx.eval(&session, "globalThis.order").await;
    assert_eq!(order, serde_json::json!((0..75).collect::<Vec<_>>()));

    // A failure in the middle is the answer; the commands around it ran.
    ctx.eval(&session, "globalThis.order = []").await;
    let mut batch = CommandBatch::new();
    batch.push(&append(1)).unwrap();
    batch.push(&NoSuchCommand {}).unwrap();
    batch.push(&append(2)).unwrap();
    let failure = host.send_commands(&view, batch, bound).await.unwrap_err();
    assert_eq!(failure.code(), "PROTOCOL_ERROR", "{failure}");
    assert!(
        failure.to_string().contains("Runtime.noSuchCommand"),
        "{failure}"
    );
    assert_eq!(
        ctx.eval(&session, "globalThis.order").await,
        serde_json::json!([1, 2])
    );

    // An empty batch is nothing to do; a closed tab's is refused.
    host.send_commands(&view, CommandBatch::new(), bound)
        .await
        .unwrap();
    browser.close_session(&session).await.unwrap();
    let mut batch = CommandBatch::new();
    batch.push(&append(3)).unwrap();
    let refused = host.send_commands(&view, batch, bound).await.unwrap_err();
    // The person's Chrome says the tab is no longer shared; our own, gone.
    let expected = if host.opens_person_tabs() {
        "TAB_NOT_FOUND"
    } else {
        "NOT_SHARED"
    };
    assert_eq!(refused.code(), expected, "{refused}");
}
