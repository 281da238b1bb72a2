//! Tabs through the extension: grants, the person's login, agent tabs,
//! Stop, and a shared tab leaving its site.

use std::time::Duration;

use browser_provider::browser::NavigationRequest;
use browser_provider::control::Holder;
use browser_provider::host::{ViewHost, ViewId};
use browser_provider::page::act::{Action, Target};
use browser_provider::page::content::{ContentFormat, ContentRequest};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::page::screenshot::ScreenshotRequest;
use browser_provider::snapshot::Scope;
use browser_provider::{BrowserError, SessionId};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::Ctx;
use crate::support::bounded;
use browser_testkit::provider::extension::{control_goes_to, let_agents_go_on};

fn code<T: std::fmt::Debug>(result: Result<T, BrowserError>) -> &'static str {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.code(),
    }
}

async fn snapshot(ctx: &Ctx, session: &SessionId) -> Result<String, BrowserError> {
    ctx.env
        .suite
        .browser
        .snapshot(session, &Scope::Page, &CancellationToken::new())
        .await
        .map(|s| s.text)
}

fn ref_of(snapshot: &str, needle: &str) -> Target {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{snapshot}"));
    let start = line
        .find("[ref=")
        .unwrap_or_else(|| panic!("no ref on {line:?}"))
        + 5;
    Target::Ref(line[start..].split(']').next().unwrap().parse().unwrap())
}

fn click() -> Action {
    Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    }
}

/// Waits (bounded) until the session has `count` tabs, woken by the tab strip's changes.
async fn tabs_become(ctx: &Ctx, session: &SessionId, count: usize) {
    let mut changes = ctx.env.suite.browser.watch_tabs();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let tabs = ctx.env.suite.browser.list_tabs(session).await.unwrap();
        if tabs.len() == count {
            return;
        }
        let changed = tokio::time::timeout_at(deadline, changes.changed()).await;
        assert!(
            matches!(changed, Ok(Ok(()))),
            "the session has {tabs:?}, not {count} tabs"
        );
    }
}

/// The person shares the tab showing `url` with `session` from the popup.
async fn share(ctx: &Ctx, url: &str, session: &SessionId) {
    ctx.env
        .person
        .press_in_popup(Some(url), &format!("button[data-share=\"{session}\"]"))
        .await;
    tabs_become(ctx, session, 1).await;
}

pub async fn an_unshared_tab_is_invisible_and_unreachable(ctx: Ctx) {
    let url = ctx.url("account.html?unshared");
    let (_, _) = ctx.env.person.open_tab(&url).await;
    let tab = ctx.env.person.tab_id(&url).await;
    let session = ctx.session().await;
    let browser = &ctx.env.suite.browser;

    assert!(browser.list_tabs(&session).await.unwrap().is_empty());
    let views = ctx.env.host.list_views().await.unwrap();
    assert!(
        views.iter().all(|v| v.url != url),
        "an unshared tab is listed: {views:?}"
    );
    let view = ViewId::new(format!("tab-{tab}"));
    let sent = ctx
        .env
        .host
        .send_command(
            &view,
            "Runtime.evaluate",
            json!({"expression": "document.cookie"}),
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(code(sent), "NOT_SHARED");
    assert_eq!(code(ctx.env.host.subscribe(&view).await), "NOT_SHARED");
    assert_eq!(code(ctx.env.host.show_view(&view).await), "NOT_SHARED");
    browser.close_session(&session).await.unwrap();
}

pub async fn a_shared_tab_is_driven_with_the_person_s_login(ctx: Ctx) {
    let person = &ctx.env.person;
    person
        .cdp
        .send(
            None,
            "Storage.setCookies",
            json!({"cookies": [{"name": "session", "value": "Ada", "url": ctx.env.suite.base}]}),
        )
        .await
        .unwrap();
    let url = ctx.url("account.html?shared");
    person.open_tab(&url).await;
    let session = ctx.session().await;
    share(&ctx, &url, &session).await;

    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    let text = snapshot(&ctx, &session).await.unwrap();
    assert!(text.contains("Signed in as Ada"), "{text}");
    browser
        .act(
            &session,
            &ref_of(&text, "Note"),
            &Action::Fill {
                text: "from the agent".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    let report = browser
        .act(&session, &ref_of(&text, "Save"), &click(), &cancel)
        .await
        .unwrap();
    let after = snapshot(&ctx, &session).await.unwrap();
    assert!(
        after.contains("Saved: from the agent"),
        "{report:?}\n{after}"
    );

    // The share ends with the session; the person's tab stays open.
    browser.close_session(&session).await.unwrap();
    let tab = person.tab_id(&url).await;
    let views = ctx.env.host.list_views().await.unwrap();
    assert!(
        views.iter().all(|v| v.id.as_str() != format!("tab-{tab}")),
        "{views:?}"
    );
}

pub async fn agent_tabs_open_in_a_group_and_do_everything(ctx: Ctx) {
    let session = ctx.session().await;
    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    let url = ctx.url("form.html");
    let (_, outcome) = browser.open(&session, &url, false, &cancel).await.unwrap();
    assert_eq!(outcome.title, "Sign-up form");

    let text = snapshot(&ctx, &session).await.unwrap();
    browser
        .act(
            &session,
            &ref_of(&text, "Full name"),
            &Action::Type {
                text: "Ada".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    let value = browser
        .execute(
            &session,
            "return document.getElementById('name').value",
            vec![],
            None,
            &cancel,
        )
        .await
        .unwrap();
    assert!(
        matches!(&value, browser_provider::page::execute::ExecuteResult::Value { value, .. } if value == &json!("Ada")),
        "{value:?}"
    );

    let shot = browser
        .screenshot(&session, ScreenshotRequest::default(), &cancel)
        .await
        .unwrap();
    assert!(shot.data.starts_with(b"\x89PNG"), "a PNG");
    let content = browser
        .content(
            &session,
            ContentRequest {
                format: ContentFormat::Markdown,
                selector: None,
                max_chars: 0,
            },
            None,
            &cancel,
        )
        .await
        .unwrap();
    assert!(content.content.contains("Sign up"), "{}", content.content);
    browser
        .navigate(
            &session,
            NavigationRequest::Url(&ctx.url("article.html")),
            &cancel,
        )
        .await
        .unwrap();

    // The person sees the tab in a group named after the session.
    let groups = ctx
        .env
        .person
        .in_popup("chrome.tabGroups.query({}).then(g => g.map(x => x.title))")
        .await;
    assert!(
        groups
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == &json!(format!("agent {session}"))),
        "{groups}"
    );

    // The agent's tabs close with its session (closing waits for Chrome).
    browser.close_session(&session).await.unwrap();
    let article = ctx.url("article.html");
    let expression =
        format!("chrome.tabs.query({{}}).then(t => t.some(x => x.url === {article:?}))");
    assert_eq!(
        ctx.env.person.in_popup(&expression).await,
        json!(false),
        "the agent's tab stayed open"
    );
}

pub async fn stop_in_the_extension_interrupts_the_agent(ctx: Ctx) {
    let session = ctx.session().await;
    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    let text = snapshot(&ctx, &session).await.unwrap();

    ctx.env.person.press_in_popup(None, "#stop").await;
    let mut control = browser.watch_control();
    control_goes_to(&mut control, Holder::Human, "Stop takes control").await;
    let refused = browser
        .act(&session, &ref_of(&text, "Full name"), &click(), &cancel)
        .await;
    assert_eq!(code(refused), "HUMAN_INTERVENED");
    // Reading stays allowed.
    snapshot(&ctx, &session).await.unwrap();

    let_agents_go_on(&ctx.env.person, &mut control).await;
    browser
        .act(&session, &ref_of(&text, "Full name"), &click(), &cancel)
        .await
        .unwrap();
    browser.close_session(&session).await.unwrap();
}

pub async fn a_shared_tab_that_leaves_its_site_is_not_shared(ctx: Ctx) {
    let person = &ctx.env.person;
    let url = ctx.url("account.html?leaves");
    let (_, page) = person.open_tab(&url).await;
    let session = ctx.session().await;
    share(&ctx, &url, &session).await;
    snapshot(&ctx, &session).await.unwrap();

    // The person follows a link to another site in that tab.
    let elsewhere = ctx.url("article.html").replace("127.0.0.1", "localhost");
    person
        .cdp
        .send(Some(&page), "Page.navigate", json!({"url": elsewhere}))
        .await
        .unwrap();
    let refused = bounded::first_some(Duration::from_secs(10), || async {
        snapshot(&ctx, &session).await.err()
    })
    .await
    .expect("the tab is no longer shared within 10 s");
    assert_eq!(refused.code(), "NOT_SHARED", "{refused}");

    // Shared again by the person: the agent reads the new page.
    person
        .press_in_popup(
            Some("left its site"),
            &format!("button[data-share=\"{session}\"]"),
        )
        .await;
    let text = bounded::first_ok(Duration::from_secs(10), || snapshot(&ctx, &session)).await;
    assert!(
        text.contains("Owls") || text.contains("localhost"),
        "{text}"
    );
    ctx.env.suite.browser.close_session(&session).await.unwrap();
}

/// The extension's word on who holds control (after every message before it).
async fn control_in_extension(ctx: &Ctx) -> String {
    let status = ctx.env.person.status("control").await;
    status.as_str().unwrap_or_default().to_owned()
}

pub async fn the_person_s_own_input_stops_the_agent(ctx: Ctx) {
    let person = &ctx.env.person;
    let url = ctx.url("form.html?hands");
    let (_, page) = person.open_tab(&url).await;
    let session = ctx.session().await;
    share(&ctx, &url, &session).await;
    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    let text = snapshot(&ctx, &session).await.unwrap();

    // The agent's own clicks and keys are not the person's.
    browser
        .act(&session, &ref_of(&text, "Full name"), &click(), &cancel)
        .await
        .unwrap();
    browser.type_text(&session, "Ada", &cancel).await.unwrap();
    browser
        .act(&session, &ref_of(&text, "Add one"), &click(), &cancel)
        .await
        .unwrap();
    snapshot(&ctx, &session).await.unwrap();
    assert_eq!(control_in_extension(&ctx).await, "agent");
    assert_eq!(browser.control().holder, Holder::Agent);

    // While the agent waits for something, the person presses a key in the tab.
    let waiting = crate::waiting_in_background(browser, &session);
    let mut control = browser.watch_control();
    for kind in ["keyDown", "keyUp"] {
        person
            .cdp
            .send(
                Some(&page),
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "x", "code": "KeyX", "text": if kind == "keyDown" { "x" } else { "" }}),
            )
            .await
            .unwrap();
    }
    control_goes_to(
        &mut control,
        Holder::Human,
        "the person's key takes control",
    )
    .await;
    let interrupted = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait ends when the person intervenes")
        .unwrap();
    assert_eq!(code(interrupted), "HUMAN_INTERVENED");
    assert_eq!(control_in_extension(&ctx).await, "person");
    let stopped = person.status("stopped").await;
    assert_eq!(stopped, "you typed in a tab an agent drives");
    let refused = browser
        .act(&session, &ref_of(&text, "Add one"), &click(), &cancel)
        .await;
    assert_eq!(code(refused), "HUMAN_INTERVENED");

    // The person lets the agent go on; a click of theirs does the same again.
    let_agents_go_on(person, &mut control).await;
    browser
        .act(&session, &ref_of(&text, "Add one"), &click(), &cancel)
        .await
        .unwrap();
    for kind in ["mousePressed", "mouseReleased"] {
        person
            .cdp
            .send(
                Some(&page),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": 5, "y": 5, "button": "left", "clickCount": 1}),
            )
            .await
            .unwrap();
    }
    control_goes_to(
        &mut control,
        Holder::Human,
        "the person's click takes control",
    )
    .await;
    let_agents_go_on(person, &mut control).await;
    browser.close_session(&session).await.unwrap();
}

/// The person's presses reach the extension gathered in bursts, as counts:
/// a long burst of the agent's own keys is all the agent's, and the
/// person's key in the middle of one is still the person's.
pub async fn the_person_s_key_among_the_agent_s_many_is_theirs(ctx: Ctx) {
    let person = &ctx.env.person;
    let url = ctx.url("form.html?burst");
    let (_, page) = person.open_tab(&url).await;
    let session = ctx.session().await;
    share(&ctx, &url, &session).await;
    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    let text = snapshot(&ctx, &session).await.unwrap();
    let field = ref_of(&text, "Full name");
    let typing = |text: String| Action::Type {
        text,
        submit: false,
    };
    let mut control = browser.watch_control();

    // 180 keys of the agent's, then a click of the person's: the click,
    // not a key, is what stops the agent (the first stop's reason stays).
    let burst = "the quick brown fox jumps over the lazy dog ".repeat(4);
    browser
        .act(&session, &field, &typing(burst.clone()), &cancel)
        .await
        .unwrap();
    for kind in ["mousePressed", "mouseReleased"] {
        person
            .cdp
            .send(
                Some(&page),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": 5, "y": 5, "button": "left", "clickCount": 1}),
            )
            .await
            .unwrap();
    }
    control_goes_to(
        &mut control,
        Holder::Human,
        "the person's click takes control",
    )
    .await;
    let stopped = person.status("stopped").await;
    assert_eq!(stopped, "you clicked in a tab an agent drives");
    let_agents_go_on(person, &mut control).await;

    // The person presses a key while the agent is typing another burst.
    let agent = {
        let (browser, session, field) = (browser.clone(), session.clone(), field.clone());
        let action = typing(burst.repeat(2));
        tokio::spawn(async move {
            browser
                .act(&session, &field, &action, &CancellationToken::new())
                .await
        })
    };
    let longer = burst.len() + 20;
    let under_way = format!(
        "new Promise((done) => {{ const field = document.querySelector('#name'); \
         const check = () => {{ if (field.value.length >= {longer}) done(true); }}; \
         field.addEventListener('input', check); check(); }})"
    );
    tokio::time::timeout(Duration::from_secs(10), person.eval(&page, &under_way))
        .await
        .expect("the agent's second burst is under way within 10 s");
    for kind in ["keyDown", "keyUp"] {
        person
            .cdp
            .send(
                Some(&page),
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "x", "code": "KeyX", "text": if kind == "keyDown" { "x" } else { "" }}),
            )
            .await
            .unwrap();
    }
    control_goes_to(
        &mut control,
        Holder::Human,
        "the person's key takes control",
    )
    .await;
    let stopped = person.status("stopped").await;
    assert_eq!(stopped, "you typed in a tab an agent drives");
    // The agent's typing ended, one way or the other, without hanging.
    let ended = tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("the agent's typing ends")
        .unwrap();
    if let Err(error) = ended {
        assert_eq!(error.code(), "HUMAN_INTERVENED", "{error}");
    }
    let_agents_go_on(person, &mut control).await;
    browser.close_session(&session).await.unwrap();
}

/// The person ticks "follow this tab" for the tab showing `url` in the popup.
async fn follow(ctx: &Ctx, url: &str) {
    let person = &ctx.env.person;
    person
        .press_in_popup(Some(url), "input[type=checkbox]")
        .await;
    // The popup's messages are answered in order: this one after the tick.
    let tab = person.tab_id(url).await;
    let following = person
        .in_popup(&format!(
            "chrome.runtime.sendMessage({{type: 'status'}}).then(r => r.status.tabs.find(t => t.tabId === {tab}).follow)"
        ))
        .await;
    assert_eq!(following, true, "the tab follows");
}

pub async fn a_tab_whose_debugger_is_taken_away_is_driven_again_once_free(ctx: Ctx) {
    let person = &ctx.env.person;
    let url = ctx.url("account.html?detach");
    let (_, page) = person.open_tab(&url).await;
    let session = ctx.session().await;
    share(&ctx, &url, &session).await;
    follow(&ctx, &url).await;
    let browser = &ctx.env.suite.browser;
    snapshot(&ctx, &session).await.unwrap();

    // The person takes the tab where no extension may drive (Chrome takes
    // the debugger away) while the agent waits in it.
    let waiting = crate::waiting_in_background(browser, &session);
    person
        .cdp
        .send(
            Some(&page),
            "Page.navigate",
            json!({"url": "chrome://version"}),
        )
        .await
        .unwrap();
    let interrupted = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait ends when the debugger goes")
        .unwrap();
    let error = interrupted.expect_err("the wait cannot go on");
    // Which the wait hears first is a race: its next poll meeting the
    // protected page, or Chrome taking the debugger away.
    assert!(
        ["PAGE_PROTECTED", "DEBUGGER_DETACHED"].contains(&error.code()),
        "{error}"
    );
    // The detach reaches the agent's page as an event: a call that starts
    // before it has arrived meets it under way (DEBUGGER_DETACHED, not
    // repeated); the call after that is told the page is protected.
    let mut codes = Vec::new();
    while codes.last() != Some(&"PAGE_PROTECTED") && codes.len() < 3 {
        codes.push(code(snapshot(&ctx, &session).await));
    }
    let (last, before) = codes.split_last().unwrap();
    assert!(
        *last == "PAGE_PROTECTED" && before.iter().all(|c| *c == "DEBUGGER_DETACHED"),
        "{codes:?}"
    );

    // Back on a web page, the tab is free: the agent drives it again.
    person
        .cdp
        .send(Some(&page), "Page.navigate", json!({"url": url}))
        .await
        .unwrap();
    let text = bounded::first_ok(Duration::from_secs(10), || snapshot(&ctx, &session)).await;
    assert!(text.contains("heading \"Account\""), "{text}");
    console_is_captured(&ctx, &session, "after the protected page").await;

    // The extension's own debugger session lost without a word from Chrome
    // (detached from its worker): one call says so, the next drives again,
    // with everything the page had enabled enabled again.
    let tab = person.tab_id(&url).await;
    person
        .in_service_worker(&format!(
            "chrome.debugger.detach({{tabId: {tab}}}).then(() => true)"
        ))
        .await;
    assert_eq!(code(snapshot(&ctx, &session).await), "DEBUGGER_DETACHED");
    let text = snapshot(&ctx, &session).await.unwrap();
    assert!(text.contains("heading \"Account\""), "{text}");
    console_is_captured(&ctx, &session, "after the lost session").await;
    browser
        .act(
            &session,
            &ref_of(&text, "Save"),
            &click(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    browser.close_session(&session).await.unwrap();
}

/// The tab's console is captured again: what a script logs now is read.
pub async fn console_is_captured(ctx: &Ctx, session: &SessionId, words: &str) {
    let browser = &ctx.env.suite.browser;
    let mut news = browser.watch_console(session).unwrap();
    browser
        .execute(
            session,
            &format!("console.log({words:?}); 1"),
            vec![],
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            news.borrow_and_update();
            let read = browser
                .console(
                    session,
                    0,
                    browser_provider::page::console::Level::Debug,
                    100,
                )
                .unwrap();
            if read.entries.iter().any(|e| e.text.contains(words)) {
                return;
            }
            news.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the console shows {words:?} within 5 s"));
}

/// The snapshot of frames.html once both its frames show (the cross-origin
/// one loads after the page), bounded.
async fn with_both_frames(ctx: &Ctx, session: &SessionId) -> String {
    bounded::first_ok(Duration::from_secs(10), || async {
        let text = snapshot(ctx, session).await?;
        if text.matches("button \"Frame button\"").count() == 2 {
            Ok(text)
        } else {
            Err(BrowserError::invalid(
                "frames",
                format!("not both frames yet:\n{text}"),
            ))
        }
    })
    .await
}

/// The part of a frames.html snapshot inside its cross-origin iframe.
fn cross_origin_part(text: &str) -> String {
    text.split("- iframe \"Cross-origin frame\"")
        .nth(1)
        .expect("the cross-origin iframe")
        .to_owned()
}

pub async fn cross_origin_frames_are_seen_and_driven(ctx: Ctx) {
    let session = ctx.session().await;
    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    browser
        .open(&session, &ctx.url("frames.html"), false, &cancel)
        .await
        .unwrap();
    // The cross-origin frame (localhost against 127.0.0.1) loads after the page.
    let loaded = browser
        .execute(&session, "window.crossLoaded", vec![], None, &cancel)
        .await
        .unwrap();
    assert!(
        matches!(&loaded, ExecuteResult::Value { value, .. } if value == true),
        "{loaded:?}"
    );
    let text = with_both_frames(&ctx, &session).await;
    // It is out of process: the host follows it as a child session.
    let views = ctx.env.host.list_views().await.unwrap();
    let view = views
        .iter()
        .find(|v| v.url.ends_with("/frames.html"))
        .expect("the agent's tab");
    let frames = ctx.env.host.frames(&view.id).await.unwrap();
    assert_eq!(frames.len(), 1, "one out-of-process frame: {frames:?}");
    let cross = cross_origin_part(&text);
    let report = browser
        .act(&session, &ref_of(&cross, "Frame button"), &click(), &cancel)
        .await
        .unwrap();
    let after = snapshot(&ctx, &session).await.unwrap();
    assert!(
        after.contains("Frame button clicked"),
        "the click landed in the cross-origin frame ({report:?}):\n{after}"
    );
    browser.close_session(&session).await.unwrap();
}

/// The person's click inside a cross-origin (out-of-process) frame of a
/// driven tab stops the agents like a click in the page; the agent's own
/// click in that frame does not.
pub async fn the_person_s_input_in_a_cross_origin_frame_stops_the_agent(ctx: Ctx) {
    let person = &ctx.env.person;
    let url = ctx.url("frames.html?person");
    let (_, page) = person.open_tab(&url).await;
    let session = ctx.session().await;
    share(&ctx, &url, &session).await;
    let browser = &ctx.env.suite.browser;
    let cancel = CancellationToken::new();
    let text = with_both_frames(&ctx, &session).await;
    let cross = cross_origin_part(&text);
    browser
        .act(&session, &ref_of(&cross, "Frame button"), &click(), &cancel)
        .await
        .unwrap();
    snapshot(&ctx, &session).await.unwrap();
    assert_eq!(control_in_extension(&ctx).await, "agent");
    assert_eq!(browser.control().holder, Holder::Agent);

    // The person clicks inside the cross-origin frame.
    let mut control = browser.watch_control();
    let rect = person
        .eval(
            &page,
            "(() => { const r = document.getElementById('cross').getBoundingClientRect(); return [r.left, r.top]; })()",
        )
        .await;
    let (x, y) = (
        rect[0].as_f64().unwrap() + 12.0,
        rect[1].as_f64().unwrap() + 12.0,
    );
    for kind in ["mousePressed", "mouseReleased"] {
        person
            .cdp
            .send(
                Some(&page),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await
            .unwrap();
    }
    control_goes_to(
        &mut control,
        Holder::Human,
        "the person's click in the frame takes control",
    )
    .await;
    assert_eq!(control_in_extension(&ctx).await, "person");
    let_agents_go_on(person, &mut control).await;
    browser.close_session(&session).await.unwrap();
}

/// The person's hand while agents act: 50 clicks on Share, Stop sharing,
/// Stop and Let the agents go on, each aimed where the button is and
/// landing after the popup has redrawn (the agent opens and closes tabs
/// and its activity line changes). Every click must do what it was aimed at.
pub async fn the_popup_s_controls_stay_still_while_agents_act(ctx: Ctx) {
    let person = &ctx.env.person;
    let browser = ctx.env.suite.browser.clone();
    let url = ctx.url("todo.html?held-still");
    person.open_tab(&url).await;
    let tab = person.tab_id(&url).await;
    let session = ctx.session().await;
    let mut control = browser.watch_control();

    // The agent works: tabs of its own open and close (new rows), and its
    // activity line changes, as fast as it can.
    let working = CancellationToken::new();
    // The agent stops with the test, however it ends (the browser is shared).
    let _stop_working = working.clone().drop_guard();
    let agent = {
        let browser = browser.clone();
        let host = ctx.env.host.clone();
        let session = session.clone();
        let working = working.clone();
        let page = ctx.url("article.html?agent");
        tokio::spawn(async move {
            let mut round = 0u32;
            while !working.is_cancelled() {
                round += 1;
                host.set_activity(session.as_str(), &format!("round {round}: opening a tab"));
                if let Ok((handle, _)) = browser.open(&session, &page, true, &working).await {
                    host.set_activity(session.as_str(), &format!("round {round}: reading it"));
                    let _ = browser.close_tab(&session, &handle).await;
                }
                host.set_activity(session.as_str(), "");
                // Refused at once while the person holds control: a turn
                // for the others before the next round.
                tokio::task::yield_now().await;
            }
        })
    };

    let shared_expression =
        format!("r.status.tabs.some(t => t.tabId === {tab} && t.session !== null)");
    let shared = || async {
        ctx.env
            .person
            .in_popup(&format!(
                "chrome.runtime.sendMessage({{type: 'status'}}).then(r => {shared_expression})"
            ))
            .await
            == json!(true)
    };
    let activity_line = || async {
        ctx.env
            .person
            .in_popup("document.getElementById('activity').textContent")
            .await
    };
    let mut landed = 0;
    for click in 0..50 {
        let (selector, row) = match click % 5 {
            4 => ("#stop", None),
            _ if shared().await => ("button:not([data-share])", Some("held-still")),
            _ => ("button[data-share]", Some("held-still")),
        };
        let (x, y) = bounded::first_some(Duration::from_secs(10), || async {
            person.spot_in_popup(row, selector).await
        })
        .await
        .unwrap_or_else(|| panic!("click {click}: no {selector} to aim at"));
        let was_shared = shared().await;
        // The hand travels while the popup changes under it: it presses
        // once the popup has redrawn since it aimed (the agent's activity
        // line says something else), not after a guessed moment.
        let aimed_at = activity_line().await;
        bounded::first_some(Duration::from_secs(5), || async {
            (activity_line().await != aimed_at).then_some(())
        })
        .await
        .unwrap_or_else(|| {
            panic!("click {click}: the popup did not redraw within 5 s ({aimed_at})")
        });
        person.click_popup_at(x, y).await;
        if selector == "#stop" {
            control_goes_to(&mut control, Holder::Human, "Stop in the popup").await;
            // Let the agents go on takes Stop's place, as the person sees.
            let resume = bounded::first_some(Duration::from_secs(5), || async {
                person.spot_in_popup(None, "#resume").await
            })
            .await
            .expect("Let the agents go on is shown");
            assert!(
                (resume.0 - x).abs() < 1.0 && (resume.1 - y).abs() < 1.0,
                "Let the agents go on at {resume:?}, Stop was at ({x}, {y})"
            );
            person.click_popup_at(x, y).await;
            control_goes_to(&mut control, Holder::Agent, "Let the agents go on").await;
            landed += 1;
            continue;
        }
        let flipped = bounded::first_some(Duration::from_secs(5), || async {
            (shared().await != was_shared).then_some(())
        })
        .await;
        assert!(
            flipped.is_some(),
            "click {click} on {selector} did not land (shared before: {was_shared}; {})",
            person
                .in_popup("chrome.runtime.sendMessage({type: 'status'}).then(r => JSON.stringify(r.status.tabs.map(t => [t.title, t.session])))")
                .await
        );
        landed += 1;
    }
    working.cancel();
    let _ = agent.await;
    assert_eq!(landed, 50);
    let png = person.popup_png().await;
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/popup-while-agents-act.png"),
        png,
    );
    ctx.env.suite.browser.close_session(&session).await.unwrap();
}
