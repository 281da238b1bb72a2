//! Every call keeps the bound it states, whatever the page does: a script
//! that never returns, a server that stalls mid-page or never answers, a storm of popups
//! (Chromium's popup blocker lets one through per click), a huge script
//! result.

use std::time::{Duration, Instant};

use browser_provider::page::act::{Action, Target};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig};
use tokio_util::sync::CancellationToken;

use crate::support::{self, Ctx};

/// What "keeps its bound" allows beyond the bound.
const SLACK: Duration = Duration::from_secs(1);

/// A browser on the shared host with short bounds, so the tests are quick.
fn short_bounds(ctx: &Ctx, navigation: Duration, operation: Duration) -> Browser {
    Browser::new(
        ctx.browser().host(),
        BrowserConfig {
            navigation_timeout: navigation,
            operation_timeout: operation,
            ..BrowserConfig::default()
        },
    )
}

fn within(started: Instant, bound: Duration, what: &str) {
    let took = started.elapsed();
    assert!(
        took < bound + SLACK,
        "{what} took {took:?}, bound {bound:?}"
    );
}

pub async fn a_page_that_loops_keeps_every_call_bounded(ctx: Ctx) {
    let bound = Duration::from_secs(2);
    let browser = short_bounds(&ctx, bound, bound);
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();

    let started = Instant::now();
    let (tab, outcome) = browser
        .open(&session, &ctx.url("loop.html"), false, &cancel)
        .await
        .expect("a page that never finishes still opens");
    within(started, bound, "open");
    assert!(!outcome.loaded && outcome.unresponsive, "{outcome:?}");
    assert!(outcome.url.ends_with("/loop.html"), "{outcome:?}");

    // Stopping the page's script to read where it got to unstuck it; make
    // it loop again, after this call returns.
    browser
        .execute(
            &session,
            "setTimeout(() => { for (;;) {} }, 0); 'looping'",
            vec![],
            None,
            &cancel,
        )
        .await
        .unwrap();
    let started = Instant::now();
    let error = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .expect_err("a stuck page cannot be walked");
    assert_eq!(error.code(), "TIMEOUT", "{error}");
    within(started, bound, "snapshot");

    // Navigating away works, in the same tab, and so does closing it.
    let started = Instant::now();
    let (same, away) = browser
        .open(&session, &ctx.url("index.html"), false, &cancel)
        .await
        .expect("navigating away from a stuck page");
    within(started, bound, "open elsewhere");
    assert_eq!(same, tab);
    assert!(away.loaded, "{away:?}");
    let snapshot = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap();
    assert!(snapshot.url.ends_with("/index.html"));
    browser.close_tab(&session, &tab).await.unwrap();
    browser.close_session(&session).await.unwrap();
}

pub async fn a_page_that_starts_looping_later_lets_go_on_navigation(ctx: Ctx) {
    let bound = Duration::from_secs(3);
    let browser = short_bounds(&ctx, bound, bound);
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    // The page's script starts looping after the call that started it returns.
    browser
        .execute(
            &session,
            "setTimeout(() => { for (;;) {} }, 0); 'started'",
            vec![],
            None,
            &cancel,
        )
        .await
        .unwrap();
    let started = Instant::now();
    let (_, outcome) = browser
        .open(&session, &ctx.url("article.html"), false, &cancel)
        .await
        .expect("the navigation goes ahead");
    within(started, bound, "open");
    assert!(
        outcome.loaded && outcome.url.ends_with("/article.html"),
        "{outcome:?}"
    );
    browser.close_session(&session).await.unwrap();
}

pub async fn a_stalled_server_keeps_the_navigation_bound(ctx: Ctx) {
    let bound = Duration::from_secs(2);
    let browser = short_bounds(&ctx, bound, Duration::from_secs(10));
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    let started = Instant::now();
    let (_, outcome) = browser
        .open(&session, &ctx.url("half"), false, &cancel)
        .await
        .expect("half a page is a page");
    within(started, bound, "open");
    assert!(!outcome.loaded, "{outcome:?}");
    assert_eq!(outcome.title, "Half a page");
    let snapshot = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .expect("what arrived can be read");
    assert!(
        snapshot.text.contains("The first half"),
        "{}",
        snapshot.text
    );
    browser.close_session(&session).await.unwrap();
}

/// A navigation that never commits because the server does not answer is
/// told apart from one held by a busy page: the page it was on stays.
pub async fn a_silent_server_leaves_the_page_in_place(ctx: Ctx) {
    let bound = Duration::from_secs(2);
    let browser = short_bounds(&ctx, bound, Duration::from_secs(10));
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    let (tab, _) = browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    let started = Instant::now();
    let error = browser
        .open(&session, &ctx.url("hang"), false, &cancel)
        .await
        .expect_err("nothing came to show");
    within(started, bound, "open");
    assert_eq!(error.code(), "TIMEOUT", "{error:?}");
    let snapshot = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .expect("the page it was on still answers");
    assert!(snapshot.url.ends_with("/form.html"), "{}", snapshot.url);
    assert!(snapshot.text.contains("Sign up"), "{}", snapshot.text);
    assert_eq!(browser.active_tab(&session).unwrap(), tab);
    browser.close_session(&session).await.unwrap();
}

/// A person stops an open that is waiting for a silent server: the call
/// ends at once and the tab answers the next call on the page it was on.
pub async fn a_stopped_navigation_leaves_the_tab_usable(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("form.html").await;
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let asked_before = hang_requests();
    // The person presses Stop once the server has the request and has not answered.
    let pressed = tokio::spawn(async move {
        let asked = support::eventually(Duration::from_secs(10), || async {
            hang_requests() > asked_before
        })
        .await;
        stop.cancel();
        (asked, Instant::now())
    });
    let error = browser
        .open(&session, &ctx.url("hang"), false, &cancel)
        .await
        .expect_err("stopped");
    let (asked, pressed_at) = pressed.await.unwrap();
    assert!(asked, "the server never saw the request");
    within(pressed_at, Duration::ZERO, "the stopped open");
    assert_eq!(error.code(), "ABORTED", "{error:?}");
    let snapshot = browser
        .snapshot(&session, &Scope::Page, &CancellationToken::new())
        .await
        .expect("the tab answers after the stop");
    assert!(snapshot.url.ends_with("/form.html"), "{}", snapshot.url);
    browser.close_session(&session).await.unwrap();
}

/// How many requests for `/hang` the fixture server has had (in any test).
fn hang_requests() -> usize {
    support::requests_seen()
        .iter()
        .filter(|(_, path)| path == "/hang")
        .count()
}

pub async fn a_popup_storm_is_bounded_and_reported(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("popup-storm.html").await;
    let started = Instant::now();
    let report = browser
        .act(
            &session,
            &Target::Role {
                role: "button".into(),
                name: "Open 40 windows".into(),
            },
            &Action::Click {
                button: Default::default(),
                count: 1,
                modifiers: Vec::new(),
            },
            &cancel,
        )
        .await
        .expect("the click");
    // The act bound (the operation timeout) is far above this.
    within(started, Duration::from_secs(10), "the click");
    // However many windows the browser lets one click open, each is reported.
    assert!(report.outcome.windows_opened >= 1, "{report:?}");
    assert!(!report.new_tabs.is_empty(), "the new tab is reported");
    let tabs = browser.list_tabs(&session).await.unwrap();
    assert_eq!(tabs.len(), report.new_tabs.len() + 1, "{tabs:?}");
    let started = Instant::now();
    browser.reset(&session).await.expect("all of them close");
    within(started, Duration::from_secs(10), "closing them");
    assert!(browser.list_tabs(&session).await.unwrap().is_empty());
    browser.close_session(&session).await.unwrap();
}

pub async fn a_huge_script_result_is_capped(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("index.html").await;
    let started = Instant::now();
    let result = browser
        .execute(
            &session,
            "'x'.repeat(60 * 1024 * 1024)",
            vec![],
            None,
            &cancel,
        )
        .await
        .expect("a 60 MB string");
    within(started, browser.config().operation_timeout, "execute");
    let ExecuteResult::Value {
        value, truncated, ..
    } = result
    else {
        panic!("a value: {result:?}")
    };
    assert!(truncated);
    let text = value.as_str().unwrap_or_default();
    assert!(
        text.len() <= browser.config().execute_max_result_bytes,
        "{} bytes",
        text.len()
    );
    browser.close_session(&session).await.unwrap();
}

/// A screenshot waits for its tab's turn (another capture of the tab holds
/// it, as a live view's sharp picture of a hung page can for seconds) within
/// its bound, and the next one runs once the turn is free.
pub async fn a_screenshot_waiting_for_its_turn_keeps_its_bound(ctx: Ctx) {
    let bound = Duration::from_secs(1);
    let browser = short_bounds(&ctx, Duration::from_secs(10), bound);
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    browser
        .open(&session, &ctx.url("colors.html"), false, &cancel)
        .await
        .unwrap();
    let tab = browser.active_tab(&session).unwrap();
    let view = browser.view_of(&session, &tab).unwrap();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let (holding, held) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        browser_provider::page::capture::in_turn(&view, async move {
            let _ = holding.send(());
            let _ = released.await;
        })
        .await;
    });
    held.await.unwrap();

    let started = Instant::now();
    let waited = tokio::time::timeout(
        bound + SLACK * 5,
        browser.screenshot(&session, Default::default(), &cancel),
    )
    .await
    .expect("the screenshot ends while the turn is still held");
    within(started, bound, "a screenshot waiting for its turn");
    assert_eq!(
        waited.map(|_| ()).unwrap_err().code(),
        "TIMEOUT",
        "the wait is the operation's timeout"
    );

    release.send(()).unwrap();
    holder.await.unwrap();
    let shot = browser
        .screenshot(&session, Default::default(), &cancel)
        .await
        .expect("the next screenshot runs once the turn is free");
    assert!(shot.width > 0 && shot.height > 0);
    browser.close_session(&session).await.unwrap();
}
