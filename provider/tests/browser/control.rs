//! A person taking control stops the agents; returning it lets them act again.

use std::time::Duration;

use browser_provider::cdp::protocol::{PageNavigate, RuntimeEvaluate};
use browser_provider::control::Holder;
use browser_provider::host::ViewHostExt;
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
    let browser = Browser::new(ctx.browser().host(), BrowserConfig::default());
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
    assert!(refused.hint().contains("until they return control"));
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

pub async fn handoff_waits_for_the_person_and_reports_what_changed(ctx: Ctx) {
    let browser = Browser::new(ctx.browser().host(), BrowserConfig::default());
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    let (tab, _) = browser
        .open(&session, &ctx.url("article.html"), false, &cancel)
        .await
        .unwrap();
    let mut requests = browser.watch_handoff();

    let waiting = {
        let browser = browser.clone();
        let session = session.clone();
        tokio::spawn(async move {
            browser
                .handoff(
                    &session,
                    "Please sign in",
                    Duration::from_secs(30),
                    &CancellationToken::new(),
                )
                .await
        })
    };
    let request = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(request) = requests.borrow_and_update().clone() {
                return request;
            }
            requests.changed().await.unwrap();
        }
    })
    .await
    .expect("the request shows");
    assert_eq!(request.reason, "Please sign in");
    assert_eq!(browser.control().holder, Holder::Human);

    // The person works in the page (as live-view input would, straight to the view).
    let view = browser.view_of(&session, &tab).unwrap();
    let host = browser.host();
    host.call(
        &view,
        &RuntimeEvaluate {
            expression: "document.cookie = 'signed_in=yes; path=/'".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    host.call(
        &view,
        &PageNavigate {
            url: ctx.url("species/barn-owl.html"),
        },
    )
    .await
    .unwrap();
    browser.return_control();

    let report = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("returns once control is back")
        .unwrap()
        .unwrap();
    assert!(report.url_before.ends_with("/article.html"));
    assert!(
        report.url_after.ends_with("/species/barn-owl.html"),
        "{report:?}"
    );
    assert_eq!(report.cookies_changed, Some(true));
    assert!(
        report
            .snapshot
            .text
            .contains("- heading \"Barn owl\" [level=1]"),
        "{}",
        report.snapshot.text
    );
    assert!(
        browser.watch_handoff().borrow().is_none(),
        "the banner goes away"
    );

    // A cancelled handoff ends at once and clears its request.
    let cancel_it = CancellationToken::new();
    let pending = {
        let browser = browser.clone();
        let session = session.clone();
        let cancel_it = cancel_it.clone();
        tokio::spawn(async move {
            browser
                .handoff(
                    &session,
                    "Solve the CAPTCHA",
                    Duration::from_secs(30),
                    &cancel_it,
                )
                .await
        })
    };
    let mut requests = browser.watch_handoff();
    tokio::time::timeout(Duration::from_secs(5), requests.wait_for(Option::is_some))
        .await
        .unwrap()
        .unwrap();
    cancel_it.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.unwrap_err().code(), "ABORTED");
    assert!(browser.watch_handoff().borrow().is_none());
    browser.return_control();
    browser.close_session(&session).await.unwrap();
}
