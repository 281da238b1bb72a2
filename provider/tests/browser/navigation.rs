//! Navigation: outcomes, history, policy, failures and bounded waits.

use std::time::Duration;

use browser_provider::browser::NavigationRequest;
use browser_provider::policy::NavigationPolicy;
use browser_provider::{Browser, BrowserConfig, BrowserError};
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

fn code<T: std::fmt::Debug>(result: Result<T, BrowserError>) -> &'static str {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.code(),
    }
}

pub async fn redirects_and_http_status_are_reported(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session().await;
    let (_, missing) = browser
        .open(&session, &ctx.url("status/404"), false, &cancel)
        .await
        .unwrap();
    assert_eq!(missing.status, Some(404));
    assert_eq!(missing.title, "Missing");
    let redirected = browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("redirect")),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(redirected.url, ctx.url("article.html"));
    assert_eq!(redirected.status, Some(200));
}

pub async fn back_forward_and_reload(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("species/barn-owl.html")),
            &cancel,
        )
        .await
        .unwrap();
    let back = browser
        .navigate(&session, NavigationRequest::Back, &cancel)
        .await
        .unwrap();
    assert_eq!(back.url, ctx.url("article.html"));
    assert_eq!(back.title, "Field Guide to Owls");
    let forward = browser
        .navigate(&session, NavigationRequest::Forward, &cancel)
        .await
        .unwrap();
    assert_eq!(forward.title, "Barn owl");
    ctx.eval(&session, "window.marker = 42").await;
    let reloaded = browser
        .navigate(&session, NavigationRequest::Reload, &cancel)
        .await
        .unwrap();
    assert_eq!(reloaded.title, "Barn owl");
    assert!(reloaded.loaded);
    assert_eq!(
        ctx.eval(&session, "typeof window.marker").await,
        "undefined",
        "a new document"
    );
}

pub async fn back_without_history_is_an_invalid_argument(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    browser
        .navigate(&session, NavigationRequest::Back, &cancel)
        .await
        .unwrap();
    let error = browser
        .navigate(&session, NavigationRequest::Back, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
    assert!(error.to_string().contains("back"), "{error}");
    assert_eq!(
        code(
            browser
                .navigate(&session, NavigationRequest::Forward, &cancel)
                .await
                .and(
                    browser
                        .navigate(&session, NavigationRequest::Forward, &cancel)
                        .await
                )
        ),
        "INVALID_ARGUMENT"
    );
}

pub async fn blocked_schemes_never_reach_the_browser(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    for url in [
        "file:///etc/passwd",
        "data:text/html,<h1>x</h1>",
        "javascript:alert(1)",
        "chrome://version",
        "view-source:http://127.0.0.1/",
        "about:version",
    ] {
        assert_eq!(
            code(
                browser
                    .navigate(&session, NavigationRequest::Url(url), &cancel)
                    .await
            ),
            "NAVIGATION_BLOCKED",
            "{url}"
        );
        assert_eq!(
            code(browser.open(&session, url, true, &cancel).await),
            "NAVIGATION_BLOCKED",
            "{url}"
        );
    }
    assert_eq!(
        ctx.eval(&session, "location.pathname").await,
        "/article.html"
    );
    assert_eq!(
        browser.list_tabs(&session).await.unwrap().len(),
        1,
        "no tab was opened for a blocked URL"
    );
    browser
        .navigate(&session, NavigationRequest::Url("about:blank"), &cancel)
        .await
        .unwrap();
}

pub async fn host_lists_are_enforced(ctx: Ctx) {
    let config = BrowserConfig {
        policy: NavigationPolicy {
            allowed_hosts: vec!["127.0.0.1".into()],
            blocked_hosts: vec!["localhost".into()],
            ..NavigationPolicy::default()
        },
        ..BrowserConfig::default()
    };
    let browser = Browser::new(ctx.browser().host(), config);
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    browser
        .open(&session, &ctx.url("index.html"), false, &cancel)
        .await
        .unwrap();
    let localhost = ctx.url("index.html").replace("127.0.0.1", "localhost");
    assert_eq!(
        code(browser.open(&session, &localhost, false, &cancel).await),
        "NAVIGATION_BLOCKED"
    );
    assert_eq!(
        code(
            browser
                .open(&session, "http://example.test/", false, &cancel)
                .await
        ),
        "NAVIGATION_BLOCKED"
    );
    browser.close_session(&session).await.unwrap();
}

pub async fn unreachable_server_is_navigation_failed(ctx: Ctx) {
    // Bind and drop a listener so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let session = ctx.session().await;
    let error = ctx
        .browser()
        .open(
            &session,
            &format!("http://127.0.0.1:{port}/"),
            false,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "NAVIGATION_FAILED");
    assert!(
        error.to_string().contains("ERR_CONNECTION_REFUSED"),
        "{error}"
    );
}

pub async fn same_document_navigation_returns_at_once(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    ctx.eval(&session, "window.marker = 7").await;
    let outcome = browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("article.html#report")),
            &cancel,
        )
        .await
        .unwrap();
    assert!(outcome.url.ends_with("#report"));
    assert_eq!(
        ctx.eval(&session, "window.marker").await,
        7,
        "same document"
    );
}

/// Our world is made in a new document while it loads, so the look that
/// follows a navigation does not wait for it: by the time the navigation
/// returns, the world exists in the document that committed, made once.
pub async fn our_world_is_ready_in_a_page_that_has_loaded(ctx: Ctx) {
    use browser_provider::snapshot::Scope;
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    let tab = browser.active_tab(&session).unwrap();
    let view = browser.view_of(&session, &tab).unwrap();
    let mut events = browser.host().subscribe(&view).await.unwrap();
    browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("form.html")),
            &cancel,
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    let committed = seen
        .iter()
        .position(|event| {
            event.method == "Page.frameNavigated" && event.params["frame"]["parentId"].is_null()
        })
        .expect("the new document committed");
    let ours = |events: &[std::sync::Arc<browser_provider::cdp::CdpEvent>]| {
        events
            .iter()
            .filter(|event| {
                event.method == "Runtime.executionContextCreated"
                    && event.params["context"]["name"] == "browser-shell"
            })
            .count()
    };
    assert_eq!(
        ours(&seen[committed..]),
        1,
        "our world is made in the new document before the navigation returns"
    );
    let snapshot = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap();
    assert!(snapshot.text.contains("Full name"), "{}", snapshot.text);
    let mut later = Vec::new();
    while let Ok(event) = events.try_recv() {
        later.push(event);
    }
    assert_eq!(ours(&later), 0, "the snapshot uses the world made at load");
}

pub async fn a_load_that_never_finishes_is_reported_not_hung(ctx: Ctx) {
    let config = BrowserConfig {
        navigation_timeout: Duration::from_secs(3),
        ..BrowserConfig::default()
    };
    let browser = Browser::new(ctx.browser().host(), config);
    let session = browser.open_session(Default::default()).await.unwrap();
    let (_, outcome) = browser
        .open(
            &session,
            &ctx.url("hanging-image.html"),
            false,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        !outcome.loaded,
        "the image never arrives, so load never fires"
    );
    assert_eq!(outcome.title, "Hanging");

    // Cancelling a navigation ends it with ABORTED.
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert_eq!(
        code(
            browser
                .navigate(&session, NavigationRequest::Reload, &cancel)
                .await
        ),
        "ABORTED"
    );
    browser.close_session(&session).await.unwrap();
}

pub async fn downloads_are_refused(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("index.html").await;
    let result = browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("download")),
            &cancel,
        )
        .await;
    // Chromium aborts a navigation that turns into a denied download.
    assert_eq!(code(result), "NAVIGATION_FAILED");
    assert_eq!(ctx.eval(&session, "location.pathname").await, "/index.html");
}
