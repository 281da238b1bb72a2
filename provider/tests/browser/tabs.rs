//! Sessions and tabs: open, list, switch, close, reset, ownership, popups, isolation.

use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::{BrowserError, TabHandle};
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

fn code<T: std::fmt::Debug>(result: Result<T, BrowserError>) -> &'static str {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.code(),
    }
}

pub async fn open_reports_url_title_and_status(ctx: Ctx) {
    let session = ctx.session().await;
    let url = ctx.url("article.html");
    let (tab, outcome) = ctx
        .browser()
        .open(&session, &url, false, &CancellationToken::new())
        .await
        .unwrap();
    assert!(tab.as_str().starts_with('t'));
    assert_eq!(outcome.url, url);
    assert_eq!(outcome.title, "Field Guide to Owls");
    assert_eq!(outcome.status, Some(200));
    assert!(outcome.loaded);
}

pub async fn tabs_open_switch_and_close(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session().await;
    let (first, _) = browser
        .open(&session, &ctx.url("article.html"), false, &cancel)
        .await
        .unwrap();
    let (second, _) = browser
        .open(&session, &ctx.url("colors.html"), true, &cancel)
        .await
        .unwrap();
    assert_ne!(first, second);

    let tabs = browser.list_tabs(&session).await.unwrap();
    assert_eq!(tabs.len(), 2);
    let active: Vec<_> = tabs
        .iter()
        .filter(|t| t.active)
        .map(|t| t.handle.clone())
        .collect();
    assert_eq!(active, vec![second.clone()]);
    assert_eq!(tabs[0].title, "Field Guide to Owls");
    assert_eq!(tabs[1].title, "Colors");

    // Opening without newTab reuses the active tab.
    let (reused, _) = browser
        .open(&session, &ctx.url("index.html"), false, &cancel)
        .await
        .unwrap();
    assert_eq!(reused, second);

    browser.switch_tab(&session, &first).await.unwrap();
    assert_eq!(
        ctx.eval(&session, "document.title").await,
        "Field Guide to Owls"
    );

    // Closing the active tab activates the remaining one.
    browser.close_tab(&session, &first).await.unwrap();
    let tabs = browser.list_tabs(&session).await.unwrap();
    assert_eq!(tabs.len(), 1);
    assert!(tabs[0].active && tabs[0].handle == second);
    assert_eq!(
        code(browser.switch_tab(&session, &first).await),
        "TAB_NOT_FOUND"
    );

    // Closing the last tab leaves none; operations say so; open makes a new one.
    browser.close_tab(&session, &second).await.unwrap();
    assert!(browser.list_tabs(&session).await.unwrap().is_empty());
    assert_eq!(
        code(
            browser
                .content(&session, Default::default(), None, &cancel)
                .await
        ),
        "TAB_NOT_FOUND"
    );
    let (third, _) = browser
        .open(&session, &ctx.url("index.html"), false, &cancel)
        .await
        .unwrap();
    assert_ne!(third, first);
    assert_ne!(third, second, "handles are never reused");
}

pub async fn reset_closes_every_tab(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    let marker = "colors.html?reset-test";
    browser
        .open(&session, &ctx.url(marker), true, &cancel)
        .await
        .unwrap();
    let ours = |views: Vec<browser_provider::host::ViewInfo>| {
        views.iter().filter(|v| v.url.ends_with(marker)).count()
    };
    assert_eq!(ours(browser.host().list_views().await.unwrap()), 1);
    browser.reset(&session).await.unwrap();
    assert!(browser.list_tabs(&session).await.unwrap().is_empty());
    assert_eq!(ours(browser.host().list_views().await.unwrap()), 0);
    // The session lives on.
    browser
        .open(&session, &ctx.url("index.html"), false, &cancel)
        .await
        .unwrap();
    assert_eq!(browser.list_tabs(&session).await.unwrap().len(), 1);
}

pub async fn other_sessions_tabs_are_not_owned_and_not_listed(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let owner = ctx.session().await;
    let (tab, _) = browser
        .open(&owner, &ctx.url("article.html"), false, &cancel)
        .await
        .unwrap();
    let intruder = ctx.session_at("index.html").await;

    assert_eq!(
        code(browser.switch_tab(&intruder, &tab).await),
        "TAB_NOT_OWNED"
    );
    assert_eq!(
        code(browser.close_tab(&intruder, &tab).await),
        "TAB_NOT_OWNED"
    );
    let listed = browser.list_tabs(&intruder).await.unwrap();
    assert!(listed.iter().all(|t| t.handle != tab));
    assert_eq!(
        code(
            browser
                .switch_tab(&intruder, &TabHandle::parse("t999999").unwrap())
                .await
        ),
        "TAB_NOT_FOUND"
    );
    assert_eq!(
        TabHandle::parse("tab one").err().map(|e| e.code()),
        Some("INVALID_ARGUMENT")
    );
    // The owner's tab is untouched.
    assert_eq!(
        ctx.eval(&owner, "document.title").await,
        "Field Guide to Owls"
    );
}

pub async fn closing_a_session_closes_its_tabs_and_is_idempotent(ctx: Ctx) {
    let browser = ctx.browser();
    // A URL no other test opens, to find this session's views among everyone's.
    let marker = "article.html?closing-session";
    let session = ctx.session_at(marker).await;
    browser
        .open(&session, &ctx.url(marker), true, &CancellationToken::new())
        .await
        .unwrap();
    let ours = |views: Vec<browser_provider::host::ViewInfo>| {
        views.iter().filter(|v| v.url.ends_with(marker)).count()
    };
    assert_eq!(ours(browser.host().list_views().await.unwrap()), 2);
    browser.close_session(&session).await.unwrap();
    browser.close_session(&session).await.unwrap();
    assert_eq!(ours(browser.host().list_views().await.unwrap()), 0);
    assert_eq!(code(browser.list_tabs(&session).await), "SESSION_NOT_FOUND");
}

pub async fn popups_join_the_opener_session(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("popup.html").await;
    let mut changes = browser.watch_tabs();
    ctx.eval(&session, "document.getElementById('open').click()")
        .await;
    let adopted = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let tabs = browser.list_tabs(&session).await.unwrap();
            if tabs.len() == 2 {
                return tabs;
            }
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("the popup joins the session");
    assert!(adopted[0].active, "the opener stays active");
    let popup = adopted[1].handle.clone();
    browser.switch_tab(&session, &popup).await.unwrap();
    let title = tokio::time::timeout(Duration::from_secs(10), async {
        // The popup may still be loading; its title arrives with the document.
        loop {
            let title = ctx
                .eval(
                    &session,
                    "document.readyState === 'complete' ? document.title : null",
                )
                .await;
            if !title.is_null() {
                return title;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the popup loads");
    assert_eq!(title, "Colors");
}

pub async fn isolated_sessions_do_not_share_cookies(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let isolated = SessionOptions { isolated: true };
    let first = browser.open_session(isolated.clone()).await.unwrap();
    let second = browser.open_session(isolated).await.unwrap();
    for session in [&first, &second] {
        browser
            .open(session, &ctx.url("index.html"), false, &cancel)
            .await
            .unwrap();
    }
    ctx.eval(&first, "document.cookie = 'owl=barn; path=/'")
        .await;
    assert_eq!(ctx.eval(&first, "document.cookie").await, "owl=barn");
    assert_eq!(ctx.eval(&second, "document.cookie").await, "");
    browser.close_session(&first).await.unwrap();
    browser.close_session(&second).await.unwrap();
}

pub async fn kept_tabs_outlive_their_session(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session().await;
    let marker = "article.html?kept-tab";
    let (kept, _) = browser
        .open(&session, &ctx.url(marker), false, &cancel)
        .await
        .unwrap();
    browser
        .open(&session, &ctx.url("colors.html?dropped-tab"), true, &cancel)
        .await
        .unwrap();
    browser.keep_tab(&session, &kept).unwrap();
    browser.close_session(&session).await.unwrap();
    let views = browser.host().list_views().await.unwrap();
    assert!(
        views.iter().any(|v| v.url.ends_with(marker)),
        "the kept tab stays open"
    );
    assert!(
        !views.iter().any(|v| v.url.ends_with("dropped-tab")),
        "the others close"
    );
    // It is the person's now: a new session cannot reach it by handle
    // (it is told whose it is, and may claim it).
    let other = ctx.session().await;
    assert_eq!(
        browser.switch_tab(&other, &kept).await.unwrap_err().code(),
        "TAB_NOT_OWNED"
    );
    let view = views
        .iter()
        .find(|v| v.url.ends_with(marker))
        .unwrap()
        .id
        .clone();
    browser.host().destroy_view(&view).await.unwrap();
}

pub async fn a_person_s_tab_is_claimed_exactly_and_returned_when_the_session_ends(ctx: Ctx) {
    let browser = ctx.browser();
    let url = ctx.url("article.html?person-tab");
    let tab = browser.open_person_tab(&url).await.unwrap();
    let listed = browser.unowned_tabs().await.unwrap();
    let mine = listed
        .iter()
        .find(|t| t.handle == tab)
        .expect("the person's tab is listed");
    assert_eq!(mine.url, url);
    let title = mine.title.clone();
    assert_eq!(title, "Field Guide to Owls");

    let agent = ctx.session().await;
    // Listed, but the person's: switching to it says so (until it is claimed).
    let refused = browser.switch_tab(&agent, &tab).await.unwrap_err();
    assert_eq!(refused.code(), "TAB_NOT_OWNED", "{refused}");
    assert!(refused.to_string().contains("the person's"), "{refused}");
    assert!(browser.list_tabs(&agent).await.unwrap().is_empty());
    // Anything changed since it was listed: the claim fails and nothing moves.
    let error = browser
        .claim_tab(&agent, &tab, &url, "Another title")
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TAB_NOT_FOUND", "{error}");
    assert!(error.to_string().contains("changed"), "{error}");
    let error = browser
        .claim_tab(&agent, &tab, &ctx.url("index.html"), &title)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TAB_NOT_FOUND");
    assert!(browser.list_tabs(&agent).await.unwrap().is_empty());

    // Exactly as listed: it becomes the agent's active tab.
    browser.claim_tab(&agent, &tab, &url, &title).await.unwrap();
    assert_eq!(browser.active_tab(&agent).unwrap(), tab);
    assert!(
        !browser
            .unowned_tabs()
            .await
            .unwrap()
            .iter()
            .any(|t| t.handle == tab)
    );
    let other = ctx.session().await;
    let error = browser
        .claim_tab(&other, &tab, &url, &title)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TAB_NOT_OWNED");

    // The session ends: the tab goes back to the person, still open.
    browser.close_session(&agent).await.unwrap();
    assert!(
        browser
            .unowned_tabs()
            .await
            .unwrap()
            .iter()
            .any(|t| t.handle == tab)
    );
    // The person hands it to another agent from the tab strip.
    browser.give_tab(&tab, &other).unwrap();
    assert_eq!(browser.active_tab(&other).unwrap(), tab);
    browser.close_session(&other).await.unwrap();
    browser.close_any_tab(&tab).await.unwrap();
    assert!(
        !browser
            .unowned_tabs()
            .await
            .unwrap()
            .iter()
            .any(|t| t.handle == tab)
    );
}
