//! Form choices: options of a select, and checkboxes and radios.
//!
//! Options are chosen by value or label in the page (the agent library's
//! `selectOptions`); a checkbox or radio is clicked until it is in the
//! wanted state, so a first click that changed nothing is repeated once.

use serde_json::json;

use super::pointer::click;
use super::{MouseButton, Ready, world_call};
use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};

/// Chooses options of a select by value or label.
pub(super) async fn select(
    page: &Page,
    frame: Option<&str>,
    reference: &str,
    values: &[String],
    budget: &Budget,
) -> Result<()> {
    if values.is_empty() {
        return Err(BrowserError::invalid(
            "values",
            "name at least one option value or label",
        ));
    }
    let selected = world_call(
        page,
        frame,
        budget,
        &format!(
            "__browserShell.selectOptions({}, {})",
            json!(reference),
            json!(values)
        ),
    )
    .await?;
    match selected.get("status").and_then(|s| s.as_str()) {
        Some("ok") => Ok(()),
        Some("missing") => Err(BrowserError::invalid(
            "values",
            format!(
                "no option matches {}; the options are {}",
                selected["missing"], selected["available"]
            ),
        )),
        Some("single") => Err(BrowserError::invalid(
            "values",
            "this select takes only one option",
        )),
        _ => Err(BrowserError::invalid(
            "ref",
            format!("{reference} is not a select element"),
        )),
    }
}

/// Makes a checkbox or radio checked (`want`) or unchecked.
pub(super) async fn set_checked(
    page: &Page,
    ready: &Ready,
    want: bool,
    budget: &Budget,
) -> Result<()> {
    let (reference, frame) = (ready.reference.as_str(), ready.frame.as_deref());
    let state_of = format!("__browserShell.checkedState({})", json!(reference));
    let now = world_call(page, frame, budget, &state_of).await?;
    if now.is_null() {
        return Err(BrowserError::invalid(
            "ref",
            format!("{reference} is not a checkbox or radio"),
        ));
    }
    if now.as_bool() != Some(want) {
        click(page, ready, MouseButton::Left, 1, 0, budget).await?;
        // The goal is a state, so one more click is safe when the first
        // changed nothing (an out-of-process frame can miss input right
        // after it loads). Nothing else is ever retried.
        if world_call(page, frame, budget, &state_of).await?.as_bool() != Some(want) {
            click(page, ready, MouseButton::Left, 1, 0, budget).await?;
        }
        if world_call(page, frame, budget, &state_of).await?.as_bool() != Some(want) {
            return Err(BrowserError::NotActionable {
                reference: reference.to_owned(),
                role: String::new(),
                name: String::new(),
                reason: format!(
                    "clicking it did not make it {}",
                    if want { "checked" } else { "unchecked" }
                ),
            });
        }
    }
    Ok(())
}
