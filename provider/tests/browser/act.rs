//! Actions by ref or by role and name.

use browser_provider::BrowserError;
use browser_provider::browser::ActionReport;
use browser_provider::page::act::{Action, Target};
use browser_provider::snapshot::{Observation, Ref, ResetReason, Scope};
use tokio_util::sync::CancellationToken;

use crate::snapshot::{click, ref_of};
use crate::support::Ctx;

fn by_ref(r: Ref) -> Target {
    Target::Ref(r)
}

pub async fn every_action_kind_works(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("form.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let eval = |script: &'static str| {
        let ctx = ctx.clone();
        let session = session.clone();
        async move { ctx.eval(&session, script).await }
    };

    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Full name")),
            &Action::Type {
                text: "Ada".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Full name")),
            &Action::Type {
                text: " Lovelace".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('name').value").await,
        "Ada Lovelace"
    );
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Email")),
            &Action::Fill {
                text: "grace@example.test".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('email').value").await,
        "grace@example.test"
    );
    let Observation::Diff { text: diff, .. } = &report.outcome.observation else {
        panic!("{:?}", report.outcome.observation)
    };
    assert!(
        diff.contains("~ ") && diff.contains("grace@example.test"),
        "{diff}"
    );

    // A controlled input that rejects assigned values still gets the typed text.
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Nickname")),
            &Action::Fill {
                text: "Countess".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('nick').textContent").await,
        "Countess"
    );

    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "I accept")),
            &Action::Check,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(eval("document.getElementById('terms').checked").await, true);
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "I accept")),
            &Action::Uncheck,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('terms').checked").await,
        false
    );
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "radio \"Pro\"")),
            &Action::Check,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.querySelector('input[value=pro]').checked").await,
        true
    );

    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Country")),
            &Action::Select {
                values: vec!["Japan".into()],
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(eval("document.getElementById('country').value").await, "jp");
    let error = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Country")),
            &Action::Select {
                values: vec!["Mars".into()],
            },
            &cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
    assert!(error.to_string().contains("France"), "{error}");

    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Hover me")),
            &Action::Hover,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('hovered').textContent").await,
        "hovered"
    );
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Full name")),
            &Action::Focus,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(eval("document.activeElement.id").await, "name");
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Full name")),
            &Action::Press {
                keys: vec!["Control+A".into(), "Backspace".into()],
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(eval("document.getElementById('name').value").await, "");
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Full name")),
            &Action::Type {
                text: "Ada".into(),
                submit: true,
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('status').textContent").await,
        "Submitted grace@example.test"
    );

    let counter = ref_of(&text, "Add one");
    browser
        .act(
            &session,
            &by_ref(counter.clone()),
            &Action::Click {
                button: Default::default(),
                count: 2,
                modifiers: vec![],
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        eval("document.getElementById('count').textContent").await,
        "2"
    );
    browser
        .act(&session, &by_ref(counter), &Action::ScrollIntoView, &cancel)
        .await
        .unwrap();
}

pub async fn role_and_name_must_match_exactly_one(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("form.html").await;
    let role = |name: &str| Target::Role {
        role: "button".into(),
        name: name.into(),
    };
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };
    browser
        .act(&session, &role("Add one"), &click, &cancel)
        .await
        .unwrap();
    assert_eq!(
        ctx.eval(&session, "document.getElementById('count').textContent")
            .await,
        "1"
    );
    let error = browser
        .act(&session, &role("Duplicate"), &click, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TARGET_AMBIGUOUS");
    let error = browser
        .act(&session, &role("No such button"), &click, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "ELEMENT_NOT_FOUND");
}

pub async fn blocked_elements_are_not_actionable(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("form.html").await;
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

    let error = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Disabled action")),
            &click,
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, BrowserError::NotActionable { reason, .. } if reason == "disabled"),
        "{error:?}"
    );

    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Show consent")),
            &click,
            &cancel,
        )
        .await
        .unwrap();
    let behind = ref_of(&text, "Behind the overlay");
    let error = browser
        .act(&session, &by_ref(behind.clone()), &click, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "NOT_ACTIONABLE");
    assert!(
        error
            .to_string()
            .contains("covered by dialog \"Cookie consent\""),
        "{error}"
    );

    // Hidden after the snapshot.
    ctx.eval(&session, "document.getElementById('overlay').classList.remove('open'); document.getElementById('behind').style.visibility = 'hidden'").await;
    let error = browser
        .act(&session, &by_ref(behind), &click, &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, BrowserError::NotActionable { reason, .. } if reason == "hidden"),
        "{error:?}"
    );

    let error = browser
        .act(
            &session,
            &by_ref("e99999".parse().unwrap()),
            &click,
            &cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
}

pub async fn clicking_a_link_navigates_and_resets(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("article.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "barn owl page")),
            &Action::Click {
                button: Default::default(),
                count: 1,
                modifiers: vec![],
            },
            &cancel,
        )
        .await
        .unwrap();
    assert!(report.outcome.navigated);
    let Observation::Reset { snapshot, reason } = report.outcome.observation else {
        panic!("{:?}", report.outcome.observation)
    };
    assert_eq!(reason, ResetReason::Navigated);
    assert_eq!(snapshot.title, "Barn owl");
    assert!(snapshot.text.contains("- heading \"Barn owl\" [level=1]"));
}

pub async fn a_change_nearly_as_large_as_the_page_is_a_reset(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("spa.html").await;
    ctx.eval(
        &session,
        "document.getElementById('add').onclick = () => { \
           document.body.innerHTML = '<h1>Checkout</h1><button>Pay now</button>'; }",
    )
    .await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Add item")),
            &click(),
            &cancel,
        )
        .await
        .unwrap();
    assert!(!report.outcome.navigated);
    let Observation::Reset { snapshot, reason } = report.outcome.observation else {
        panic!("{:?}", report.outcome.observation)
    };
    assert_eq!(reason, ResetReason::LargeChange);
    assert!(
        snapshot.text.contains("- button \"Pay now\" [ref="),
        "{}",
        snapshot.text
    );
    assert!(!snapshot.text.contains("Add item"), "{}", snapshot.text);
}

pub async fn a_re_rendered_list_reports_its_look_alikes_in_one_line(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("todo.html").await;
    let full = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let delete_milk = ref_of(&full, "Delete Milk");
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&full, "Add item")),
            &click(),
            &cancel,
        )
        .await
        .unwrap();
    let Observation::Diff {
        text, rerendered, ..
    } = &report.outcome.observation
    else {
        panic!("{:?}", report.outcome.observation)
    };
    // Three items (a checkbox and a button each) and the footer's three
    // links and button, replaced by look-alikes.
    assert_eq!(rerendered.replaced.len(), 10, "{rerendered:?}\n{text}");
    assert!(
        text.contains("+ ") && text.contains("\"Delete Task 4\" [ref="),
        "the new item in full: {text}"
    );
    assert!(
        text.contains("~ ") && text.contains("3 items left"),
        "the counter changed: {text}"
    );
    assert!(!text.contains("Milk"), "look-alikes stay out: {text}");
    let shown = text.len() + rerendered.describe().len();
    assert!(
        shown * 100 <= full.len() * 40,
        "{shown} bytes for a click against a {}-byte snapshot:\n{full}\n{text}\n{}",
        full.len(),
        rerendered.describe()
    );

    // The old ref is stale, never redirected; the new one it names works.
    let error = browser
        .act(&session, &by_ref(delete_milk.clone()), &click(), &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "STALE_REF", "{error:?}");
    let (_, replacement) = rerendered
        .replaced
        .iter()
        .find(|(old, _)| *old == delete_milk)
        .expect("Delete Milk was replaced");
    browser
        .act(&session, &by_ref(replacement.clone()), &click(), &cancel)
        .await
        .unwrap();
    assert_eq!(
        ctx.eval(
            &session,
            "document.getElementById('items').textContent.includes('Milk')"
        )
        .await,
        false
    );
}

/// Opens `path` in a session of its own, takes a snapshot and runs `action`
/// on the element named `target`; the session is closed after.
async fn act_once(ctx: &Ctx, path: &str, target: &str, action: &Action) -> ActionReport {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at(path).await;
    let full = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let report = browser
        .act(&session, &by_ref(ref_of(&full, target)), action, &cancel)
        .await
        .unwrap();
    browser.close_session(&session).await.unwrap();
    report
}

/// What the page shows after `action` on the element named `target`, as the
/// action's result reports it (a diff's lines or a reset's snapshot).
async fn result_of(ctx: &Ctx, path: &str, target: &str, action: Action) -> String {
    match act_once(ctx, path, target, &action)
        .await
        .outcome
        .observation
    {
        Observation::Diff { text, .. } => text,
        Observation::Reset { snapshot, .. } => snapshot.text,
    }
}

/// An action's result does not wait for a frame on a page that asked for
/// none; these pages answer after the handler has returned, and the result
/// must still hold their answer.
pub async fn what_a_page_draws_after_the_handler_is_in_the_result(ctx: Ctx) {
    for (path, target, action, drawn) in [
        ("later.html", "Draw in a frame", click(), "drawn in a frame"),
        ("later.html", "Draw in a task", click(), "drawn in a task"),
        (
            "later.html",
            "Echo",
            Action::Type {
                text: "hi".into(),
                submit: false,
            },
            "you typed hi",
        ),
        (
            "later.html?loop",
            "Draw by the loop",
            click(),
            "drawn by the loop",
        ),
    ] {
        let result = result_of(&ctx, path, target, action).await;
        assert!(
            result.contains(drawn),
            "{target} on {path}: {drawn:?} is not in the result:\n{result}"
        );
    }
}

/// A form's submission starts in a task after the click, a script's
/// navigation at once: either way the action reports the new page.
pub async fn navigations_that_start_after_a_click_are_followed(ctx: Ctx) {
    for target in ["Go by a form", "Go by a script"] {
        for _ in 0..3 {
            let report = act_once(&ctx, "later.html", target, &click()).await;
            assert!(report.outcome.navigated, "{target}: {report:?}");
            let Observation::Reset { snapshot, .. } = &report.outcome.observation else {
                panic!("{target}: {:?}", report.outcome.observation)
            };
            assert!(
                snapshot.url.contains("/form.html"),
                "{target}: {}",
                snapshot.url
            );
            assert!(
                snapshot.text.contains("Sign up"),
                "{target}: {}",
                snapshot.text
            );
        }
    }
}

pub async fn passwords_never_appear_in_snapshots_or_diffs(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("form.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Password")),
            &Action::Fill {
                text: "new-secret-pass".into(),
                submit: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    let shown = match report.outcome.observation {
        Observation::Diff { text, .. } => text,
        Observation::Reset { snapshot, .. } => snapshot.text,
    };
    assert!(
        !shown.contains("new-secret-pass") && !shown.contains("correct-horse"),
        "{shown}"
    );
    assert_eq!(
        ctx.eval(&session, "document.getElementById('password').value")
            .await,
        "new-secret-pass"
    );
    let again = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    assert!(!again.contains("new-secret-pass"));
}

pub async fn outcomes_report_new_tabs_dialogs_and_refused_downloads(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let click = Action::Click {
        button: Default::default(),
        count: 1,
        modifiers: vec![],
    };

    let session = ctx.session_at("popup.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Open colors")),
            &click,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(report.new_tabs.len(), 1, "{report:?}");
    let tabs = browser.list_tabs(&session).await.unwrap();
    assert!(tabs.iter().any(|t| t.handle == report.new_tabs[0]));
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Open the article")),
            &click,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        report.new_tabs.len(),
        1,
        "target=_blank links open a tab: {report:?}"
    );
    let report = browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Download the owl data")),
            &click,
            &cancel,
        )
        .await
        .unwrap();
    // Our own browser refuses downloads. A person's Chrome, reached through
    // the extension, downloads as the person set it up: refusing them there
    // would refuse the person's own downloads in the whole browser.
    let refused: &[&str] = if ctx.env.launched.is_some() {
        &["owls.bin"]
    } else {
        &[]
    };
    assert_eq!(report.downloads_refused, refused, "{report:?}");

    let session = ctx.session_at("dialogs.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let report = browser
        .act(&session, &by_ref(ref_of(&text, "Confirm")), &click, &cancel)
        .await
        .unwrap();
    assert_eq!(report.dialogs.len(), 1);
    assert_eq!(report.dialogs[0].kind, "confirm");
    let Observation::Diff { text: diff, .. } = &report.outcome.observation else {
        panic!("{:?}", report.outcome.observation)
    };
    assert!(diff.contains("confirm=false"), "{diff}");
}

pub async fn drag_moves_an_element_onto_another(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("drag.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    browser
        .act(
            &session,
            &by_ref(ref_of(&text, "Card A")),
            &Action::Drag {
                to: by_ref(ref_of(&text, "Done column")),
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.eval(
            &session,
            "document.getElementById('done').textContent.includes('Card A')"
        )
        .await,
        true
    );
}

pub async fn scrolling_the_page_and_pressing_keys_without_an_element(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let session = ctx.session_at("large.html").await;
    browser
        .act(
            &session,
            &Target::Page,
            &Action::Scroll { dx: 0.0, dy: 900.0 },
            &cancel,
        )
        .await
        .unwrap();
    let scrolled = ctx.eval(&session, "scrollY").await.as_f64().unwrap();
    assert!(scrolled > 100.0, "scrollY {scrolled}");
    browser
        .act(
            &session,
            &Target::Page,
            &Action::Press {
                keys: vec!["Home".into()],
            },
            &cancel,
        )
        .await
        .unwrap();
    // Keyboard scrolling may animate: wait (in the page, bounded) until it reaches the top.
    let top = "new Promise((resolve) => { const check = () => scrollY === 0 ? resolve(0) : requestAnimationFrame(check); check(); setTimeout(() => resolve(scrollY), 3000); })";
    assert_eq!(ctx.eval(&session, top).await.as_f64().unwrap(), 0.0);
    let error = browser
        .act(&session, &Target::Page, &Action::Hover, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
}
