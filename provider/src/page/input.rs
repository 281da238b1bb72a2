//! Coordinate input: the fallback path when no element reference fits
//! (canvas, maps, pixel-first UI). Events are trusted `Input.*` events, the
//! same a person's mouse and keyboard produce.

use super::{Budget, Page};
use crate::cdp::protocol::{InputDispatchMouseEvent, InputInsertText};
use crate::error::{BrowserError, Result};

/// Clicks at viewport coordinates (CSS pixels): move, press, release.
///
/// # Errors
/// `INVALID_ARGUMENT` for negative or non-finite coordinates.
pub async fn click(page: &Page, x: f64, y: f64, budget: &Budget) -> Result<()> {
    for (field, value) in [("x", x), ("y", y)] {
        if !value.is_finite() || value < 0.0 {
            return Err(BrowserError::invalid(
                field,
                "must be a finite, non-negative number of CSS pixels",
            ));
        }
    }
    for (kind, button, click_count) in [
        ("mouseMoved", "none", 0),
        ("mousePressed", "left", 1),
        ("mouseReleased", "left", 1),
    ] {
        page.call(
            budget,
            &InputDispatchMouseEvent {
                kind,
                x,
                y,
                button,
                click_count,
                ..InputDispatchMouseEvent::default()
            },
        )
        .await?;
    }
    Ok(())
}

/// Types text into whatever has focus, as an input method would commit it.
///
/// # Errors
/// `INVALID_ARGUMENT` for empty text.
pub async fn type_text(page: &Page, text: &str, budget: &Budget) -> Result<()> {
    if text.is_empty() {
        return Err(BrowserError::invalid("text", "must not be empty"));
    }
    page.call(
        budget,
        &InputInsertText {
            text: text.to_owned(),
        },
    )
    .await?;
    Ok(())
}
