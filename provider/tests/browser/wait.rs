//! Waiting for the page: each condition, timeouts that say what they saw,
//! cancellation mid-flight, and a person taking control.

use std::time::{Duration, Instant};

use browser_provider::page::wait::{Condition, ElementState, LoadState};
use browser_provider::{Browser, BrowserConfig};
use tokio_util::sync::CancellationToken;

use crate::snapshot::ref_of;
use crate::support::Ctx;

const BOUND: Duration = Duration::from_secs(10);

pub async fn each_condition_ends_the_wait_when_it_holds(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("form.html").await;
    let wait = |condition: Condition| {
        let session = session.clone();
        let cancel = cancel.clone();
        async move { browser.wait(&session, &condition, BOUND, &cancel).await }
    };

    // Text that appears later, then goes.
    ctx.eval(
        &session,
        "setTimeout(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'Saved at last'; document.body.append(p); }, 200)",
    )
    .await;
    let waited = wait(Condition::Text {
        text: "Saved at last".into(),
        gone: false,
    })
    .await
    .unwrap();
    assert!(waited.elapsed >= Duration::from_millis(100), "{waited:?}");
    ctx.eval(
        &session,
        "setTimeout(() => document.getElementById('late').remove(), 100)",
    )
    .await;
    wait(Condition::Text {
        text: "Saved at last".into(),
        gone: true,
    })
    .await
    .unwrap();

    // An element by ref becomes enabled, then hidden.
    let snapshot = browser
        .snapshot(&session, &browser_provider::snapshot::Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let disabled = ref_of(&snapshot, "button \"Disabled action\"");
    ctx.eval(
        &session,
        "setTimeout(() => { document.querySelector('button[disabled]').disabled = false; }, 150)",
    )
    .await;
    wait(Condition::Ref {
        reference: disabled.clone(),
        state: ElementState::Enabled,
    })
    .await
    .unwrap();
    ctx.eval(
        &session,
        "setTimeout(() => { document.getElementById('counter').style.display = 'none'; }, 150)",
    )
    .await;
    wait(Condition::Ref {
        reference: ref_of(&snapshot, "button \"Add one\""),
        state: ElementState::Hidden,
    })
    .await
    .unwrap();

    // By role and name, appearing later.
    ctx.eval(
        &session,
        "setTimeout(() => { const b = document.createElement('button'); b.textContent = 'Continue'; document.body.append(b); }, 150)",
    )
    .await;
    wait(Condition::Role {
        role: "button".into(),
        name: "Continue".into(),
        state: ElementState::Visible,
    })
    .await
    .unwrap();

    // The URL, changed by the page without a new document.
    ctx.eval(
        &session,
        "setTimeout(() => history.pushState({}, '', '#step-2'), 150)",
    )
    .await;
    let waited = wait(Condition::Url("#step-2".into())).await.unwrap();
    assert!(waited.detail.contains("#step-2"), "{waited:?}");

    // A load state that already holds, and a script predicate on a page variable.
    wait(Condition::Load(LoadState::Load)).await.unwrap();
    // A quiet network once the page's requests are over.
    ctx.eval(&session, "fetch('/article.html?idle'); 1").await;
    let waited = wait(Condition::Load(LoadState::NetworkIdle)).await.unwrap();
    assert!(waited.detail.contains("no request"), "{waited:?}");
    // A request that ends.
    ctx.eval(
        &session,
        "setTimeout(() => fetch('/article.html?requested'), 150); 1",
    )
    .await;
    let waited = wait(Condition::Request("?requested".into())).await.unwrap();
    assert!(waited.detail.contains("has ended"), "{waited:?}");
    ctx.eval(
        &session,
        "setTimeout(() => { window.appReady = true; }, 150)",
    )
    .await;
    wait(Condition::Script("window.appReady === true".into()))
        .await
        .unwrap();

    // A still page is stable.
    wait(Condition::Stable).await.unwrap();
    browser.close_session(&session).await.unwrap();
}

pub async fn a_wait_that_runs_out_says_what_it_saw(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("form.html").await;
    let started = Instant::now();
    let error = browser
        .wait(
            &session,
            &Condition::Text {
                text: "Never there".into(),
                gone: false,
            },
            Duration::from_millis(400),
            &cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TIMEOUT");
    assert!(
        error.to_string().contains("Sign up"),
        "the page text: {error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // A request that never ends keeps the network busy.
    ctx.eval(&session, "fetch('/hang'); 1").await;
    let error = browser
        .wait(
            &session,
            &Condition::Load(LoadState::NetworkIdle),
            Duration::from_millis(600),
            &cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TIMEOUT");
    assert!(
        error.to_string().contains("1 request still in flight"),
        "{error}"
    );
    for (part, seen) in [
        ("/hang", "one is still in flight"),
        ("/never-requested", "no such request was made"),
    ] {
        let error = browser
            .wait(
                &session,
                &Condition::Request(part.into()),
                Duration::from_millis(300),
                &cancel,
            )
            .await
            .unwrap_err();
        assert_eq!(error.code(), "TIMEOUT");
        assert!(error.to_string().contains(seen), "{error}");
    }

    // A page that keeps changing is never stable.
    let churning = ctx.session_at("spa.html").await;
    let error = browser
        .wait(
            &churning,
            &Condition::Stable,
            Duration::from_millis(800),
            &cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TIMEOUT");
    assert!(error.to_string().contains("kept changing"), "{error}");
    browser.close_session(&session).await.unwrap();
    browser.close_session(&churning).await.unwrap();
}

pub async fn waits_end_at_once_when_cancelled_or_a_person_takes_over(ctx: Ctx) {
    // A browser of its own over the shared Chromium: control is per browser.
    let browser = Browser::new(ctx.browser().host(), BrowserConfig::default());
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    let never = Condition::Text {
        text: "Never there".into(),
        gone: false,
    };

    // Cancelled mid-flight.
    let stop = CancellationToken::new();
    let waiting = {
        let (browser, session, never, stop) = (
            browser.clone(),
            session.clone(),
            never.clone(),
            stop.clone(),
        );
        tokio::spawn(async move { browser.wait(&session, &never, BOUND, &stop).await })
    };
    tokio::task::yield_now().await;
    let started = Instant::now();
    stop.cancel();
    let error = waiting.await.unwrap().unwrap_err();
    assert_eq!(error.code(), "ABORTED");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );

    // A person takes control mid-flight.
    let waiting = {
        let (browser, session, never, cancel) = (
            browser.clone(),
            session.clone(),
            never.clone(),
            cancel.clone(),
        );
        tokio::spawn(async move { browser.wait(&session, &never, BOUND, &cancel).await })
    };
    tokio::task::yield_now().await;
    let started = Instant::now();
    browser.take_control();
    let error = waiting.await.unwrap().unwrap_err();
    assert_eq!(error.code(), "HUMAN_INTERVENED");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    browser.return_control();
    browser.close_session(&session).await.unwrap();
}

pub async fn a_cancelled_wait_stops_its_work_in_the_page(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("form.html").await;
    // The page changes its DOM all the time, so a wait's observer fires
    // and its predicate runs (and counts) until it is ended.
    ctx.eval(
        &session,
        "window.checks = 0; setInterval(() => document.body.dataset.tick = Date.now(), 5); 'ok'",
    )
    .await;
    let checks = || async {
        ctx.eval(&session, "window.checks")
            .await
            .as_u64()
            .unwrap_or_default()
    };
    for condition in [
        Condition::Script("(window.checks++, false)".into()),
        Condition::Text {
            text: "Never there".into(),
            gone: false,
        },
    ] {
        let stop = CancellationToken::new();
        let waiting = {
            let (browser, session, stop, condition) = (
                browser.clone(),
                session.clone(),
                stop.clone(),
                condition.clone(),
            );
            tokio::spawn(async move { browser.wait(&session, &condition, BOUND, &stop).await })
        };
        // Under way in the page (the script predicate counts its checks).
        if matches!(condition, Condition::Script(_)) {
            let counting = crate::support::eventually(BOUND, || async { checks().await > 3 }).await;
            assert!(counting, "the predicate never ran");
        }
        stop.cancel();
        let cancelled = Instant::now();
        assert_eq!(waiting.await.unwrap().unwrap_err().code(), "ABORTED");
        // Within 50 ms of the cancel nothing of it runs in the page: the
        // count no longer moves while the page keeps changing.
        let settled = checks().await;
        assert!(
            cancelled.elapsed() < Duration::from_millis(300),
            "{:?}",
            cancelled.elapsed()
        );
        ctx.eval(
            &session,
            "new Promise((done) => setTimeout(() => done(true), 300))",
        )
        .await;
        assert_eq!(
            checks().await,
            settled,
            "the predicate ran on after the cancel"
        );
    }
    // The page's own scripts go on (the ticker still ticks).
    let before = ctx.eval(&session, "document.body.dataset.tick").await;
    ctx.eval(
        &session,
        "new Promise((done) => setTimeout(() => done(true), 50))",
    )
    .await;
    assert_ne!(
        ctx.eval(&session, "document.body.dataset.tick").await,
        before
    );
}
