//! browser_inspect: structured evidence about one element, by ref or by
//! selector, with passwords masked and a selector that matches only it.

use browser_provider::SessionId;
use browser_provider::page::inspect::{InspectOptions, InspectTarget, Inspection};
use tokio_util::sync::CancellationToken;

use crate::snapshot::{ref_of, snap};
use crate::support::Ctx;

async fn inspect(
    ctx: &Ctx,
    session: &SessionId,
    target: InspectTarget,
    styles: Option<&[&str]>,
) -> browser_provider::Result<Inspection> {
    let options = InspectOptions {
        styles: styles.map(|names| names.iter().map(|n| (*n).to_owned()).collect()),
    };
    ctx.browser()
        .inspect(session, &target, &options, &CancellationToken::new())
        .await
}

/// Whether `selector` matches exactly one element, and its text is `text`.
async fn matches_only(ctx: &Ctx, session: &SessionId, selector: &str, text: &str) -> bool {
    let script = format!(
        "(() => {{ const all = document.querySelectorAll({}); return all.length === 1 && all[0].textContent === {}; }})()",
        serde_json::json!(selector),
        serde_json::json!(text)
    );
    ctx.eval(session, &script).await == serde_json::json!(true)
}

pub async fn elements_are_inspected_by_ref_and_selector(ctx: Ctx) {
    let session = ctx.session_at("form.html").await;
    let snapshot = snap(&ctx, &session).await;

    // By ref: what it is, how it looks, where it is, a selector for it.
    let button = inspect(
        &ctx,
        &session,
        InspectTarget::Ref(ref_of(&snapshot, "button \"Add one\"")),
        None,
    )
    .await
    .unwrap();
    assert_eq!(button.tag, "button");
    assert_eq!(button.role.as_deref(), Some("button"));
    assert_eq!(button.name, "Add one");
    assert_eq!(button.text, "Add one");
    assert_eq!(button.selector.as_deref(), Some("#counter"));
    assert_eq!(
        button.attributes.get("id").map(String::as_str),
        Some("counter")
    );
    assert!(
        button.styles["background-color"].starts_with("rgb"),
        "{:?}",
        button.styles
    );
    assert_eq!(button.styles["display"], "inline-block");
    assert!(button.bounds.width > 10.0 && button.bounds.height > 10.0);
    assert_eq!(button.quads.len(), 1);
    assert_eq!(button.quads[0][0], button.bounds.x);
    assert!(button.visibility.visible && button.visibility.in_viewport);
    assert_eq!(button.visibility.covered_by, None);
    let geometry = ctx
        .eval(
            &session,
            "(() => { const r = document.getElementById('counter').getBoundingClientRect(); return [r.x, r.width]; })()",
        )
        .await;
    let geometry: Vec<f64> = serde_json::from_value(geometry).unwrap();
    assert!(
        (geometry[0] - button.bounds.x).abs() < 0.01
            && (geometry[1] - button.bounds.width).abs() < 0.01
    );

    // Passwords are masked, in the value and in the attribute.
    let password = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("#password".into()),
        None,
    )
    .await
    .unwrap();
    let form = password.form.unwrap();
    assert_eq!(form.value.as_deref(), Some("••••••"));
    assert_eq!(password.attributes["value"], "••••••");
    let debug = format!("{:?}", password.attributes);
    assert!(!debug.contains("correct-horse"), "{debug}");

    // Form state: required and invalid while empty; a checkbox's checked.
    let name = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("#name".into()),
        None,
    )
    .await
    .unwrap()
    .form
    .unwrap();
    assert_eq!((name.required, name.valid), (Some(true), Some(false)));
    assert!(name.validation_message.is_some());
    let terms = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("#terms".into()),
        None,
    )
    .await
    .unwrap()
    .form
    .unwrap();
    assert_eq!(terms.checked, Some(false));

    // Hidden, covered.
    let hidden = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("button.gone".into()),
        None,
    )
    .await
    .unwrap();
    assert!(!hidden.visibility.visible);
    assert_eq!(hidden.visibility.display, "none");
    ctx.eval(
        &session,
        "document.getElementById('overlay').classList.add('open'); 1",
    )
    .await;
    let behind = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("#behind".into()),
        None,
    )
    .await
    .unwrap();
    assert!(
        behind
            .visibility
            .covered_by
            .as_deref()
            .is_some_and(|c| c.contains("Cookie consent")),
        "{:?}",
        behind.visibility
    );
    ctx.eval(
        &session,
        "document.getElementById('overlay').classList.remove('open'); 1",
    )
    .await;

    // Twin buttons get a selector that tells them apart, checked in the page.
    let twin = inspect(
        &ctx,
        &session,
        InspectTarget::Ref(ref_of(&snapshot, "button \"Duplicate\"")),
        None,
    )
    .await
    .unwrap();
    let selector = twin.selector.unwrap();
    assert!(selector.contains("nth-of-type"), "{selector}");
    let count = ctx
        .eval(
            &session,
            &format!(
                "document.querySelectorAll({}).length",
                serde_json::json!(selector)
            ),
        )
        .await;
    assert_eq!(count, 1, "{selector}");
    assert!(matches_only(&ctx, &session, "#counter", "Add one").await);

    // Named styles only, or all of them.
    let one = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("#counter".into()),
        Some(&["color"]),
    )
    .await
    .unwrap();
    assert_eq!(one.styles.len(), 1);
    let all = inspect(
        &ctx,
        &session,
        InspectTarget::Selector("#counter".into()),
        Some(&["all"]),
    )
    .await
    .unwrap();
    assert!(all.styles.len() > 200, "{}", all.styles.len());

    // Selectors that do not name exactly one element.
    for (selector, code) in [
        ("button", "INVALID_ARGUMENT"),
        ("#nothing-here", "ELEMENT_NOT_FOUND"),
        ("[[", "INVALID_ARGUMENT"),
    ] {
        let error = inspect(
            &ctx,
            &session,
            InspectTarget::Selector(selector.into()),
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(error.code(), code, "{selector}: {error}");
    }
    let error = inspect(
        &ctx,
        &session,
        InspectTarget::Ref("e9999".parse().unwrap()),
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
    ctx.browser().close_session(&session).await.unwrap();
}
