//! A person taking control stops the agents; returning it lets them act again.

use std::sync::Arc;
use std::time::Duration;

use browser_provider::control::Holder;
use browser_provider::page::act::{Action, Target};
use browser_provider::page::content::{ContentFormat, ContentRequest};
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig};
use tokio_util::sync::CancellationToken;

use crate::snapshot::ref_of;
use crate::support::Ctx;

pub async fn taking_control_interrupts_and_blocks_agent_actions(ctx: Ctx) {
    // A browser of its own over the shared Chromium: control is per browser,
    // and other tests must keep acting.
    let browser = Browser::new(Arc::clone(ctx.browser().host()), BrowserConfig::default());
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };
    let counter = Target::Ref(ref_of(&text, "Add one"));

    // An agent operation in flight stops when a person takes over.
    let running = {
        let browser = browser.clone();
        let session = session.clone();
        tokio::spawn(async move {
            browser
                .execute(
                    &session,
                    "new Promise(() => {})",
                    vec![],
                    Some(Duration::from_secs(60)),
                    &CancellationToken::new(),
                )
                .await
        })
    };
    // The call is admitted before control changes hands (it may still be on its way).
    tokio::task::yield_now().await;
    let epoch = browser.take_control();
    assert_eq!(browser.control().holder, Holder::Human);
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("stopped promptly")
        .unwrap();
    assert_eq!(result.unwrap_err().code(), "HUMAN_INTERVENED");

    // While the person holds control: actions are refused, observation works.
    let refused = browser
        .act(&session, &counter, &click, &cancel)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "HUMAN_INTERVENED");
    assert!(refused.hint().contains("browser_handoff"));
    assert_eq!(
        browser
            .open(&session, &ctx.url("index.html"), false, &cancel)
            .await
            .unwrap_err()
            .code(),
        "HUMAN_INTERVENED"
    );
    browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap();
    // (Reading content is observation; scripts count as actions.)
    let count = browser
        .content(
            &session,
            ContentRequest {
                format: ContentFormat::Txt,
                selector: Some("#count".into()),
                max_chars: 100,
            },
            None,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(count.content.trim(), "0", "nothing was clicked");
    assert_eq!(
        browser
            .execute(&session, "1", vec![], None, &cancel)
            .await
            .unwrap_err()
            .code(),
        "HUMAN_INTERVENED"
    );

    // Control comes back: the session hears about it once, and acts again.
    assert!(browser.return_control() > epoch);
    assert!(browser.control_returned_since_last_call(&session));
    assert!(!browser.control_returned_since_last_call(&session));
    browser
        .act(&session, &counter, &click, &cancel)
        .await
        .unwrap();
    assert_eq!(
        ctx.eval_in(
            &browser,
            &session,
            "document.getElementById('count').textContent"
        )
        .await,
        "1"
    );
    browser.close_session(&session).await.unwrap();
}
