//! Coordinate click and text typing, the fallback input path.

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
