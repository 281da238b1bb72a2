//! Scrolling and dragging: the mouse wheel over an element or the page,
//! and a drag from one element onto another.
//!
//! (Scrolling an element into view needs nothing here: every prepared
//! element already is.)

use super::kinds::{Action, Ready, Target};
use super::pointer::mouse;
use super::resolve::{prepare, resolve_target};
use crate::cdp::protocol::InputDispatchMouseEvent;
use crate::error::{BrowserError, Result};
use crate::page::hand::{Gesture, Point};
use crate::page::{Budget, Page};
use crate::snapshot::SnapshotLimits;

/// Turns the mouse wheel by `dx`, `dy` CSS pixels at `x`, `y`.
pub(super) async fn wheel(
    page: &Page,
    x: f64,
    y: f64,
    dx: f64,
    dy: f64,
    budget: &Budget,
) -> Result<()> {
    if !dx.is_finite() || !dy.is_finite() {
        return Err(BrowserError::invalid(
            "scroll",
            "distances must be finite numbers",
        ));
    }
    page.call(
        budget,
        &InputDispatchMouseEvent {
            kind: "mouseWheel",
            x,
            y,
            button: "none",
            delta_x: Some(dx),
            delta_y: Some(dy),
            ..InputDispatchMouseEvent::default()
        },
    )
    .await?;
    Ok(())
}

/// Presses the mouse on the element, moves it in steps onto `to` (prepared
/// once the press is down) and releases it there.
pub(super) async fn drag(
    page: &Page,
    ready: &Ready,
    action: &Action,
    to: &Target,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<()> {
    let (x, y) = (ready.x, ready.y);
    let destination = resolve_target(page, to, limits, budget).await?;
    mouse(page, "mouseMoved", x, y, "none", 0, 0, budget).await?;
    mouse(page, "mousePressed", x, y, "left", 1, 0, budget).await?;
    let drop_at = prepare(page, &destination, "drag", budget).await?;
    let (to_x, to_y) = (drop_at.x, drop_at.y);
    page.show_gesture(Gesture {
        to: Some(Point { x: to_x, y: to_y }),
        ..Gesture::of(
            page.view(),
            action.gesture(),
            x,
            y,
            (ready.width, ready.height),
        )
    });
    for step in 1..=5 {
        let t = f64::from(step) / 5.0;
        mouse(
            page,
            "mouseMoved",
            x + (to_x - x) * t,
            y + (to_y - y) * t,
            "left",
            0,
            0,
            budget,
        )
        .await?;
    }
    mouse(page, "mouseReleased", to_x, to_y, "left", 1, 0, budget).await
}
