//! Scrolling: the mouse wheel over an element or the page.
//!
//! (Scrolling an element into view needs nothing here: every prepared
//! element already is.)

use crate::cdp::protocol::InputDispatchMouseEvent;
use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};

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
