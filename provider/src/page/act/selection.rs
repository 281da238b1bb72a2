//! Form choices: options of a select, and checkboxes and radios.
//!
//! Options of a native select are chosen by value or label in the page (the
//! agent library's `selectOptions`). A custom combobox or listbox (the ARIA
//! pattern, its popup wherever the page renders it) is operated as a
//! person would: opened with a click, then each option clicked by name. A
//! checkbox or radio is clicked until it is in the wanted state, so a first
//! click that changed nothing is repeated once.

use serde_json::json;

use super::kinds::{MouseButton, Ready, world_call};
use super::pointer::click;
use super::resolve::{HandedOut, prepare};
use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};
use crate::snapshot::Ref;

/// How long a custom select's options are looked for after it was opened
/// (two animation frames between looks): its popup may animate in, and a
/// busy machine draws few frames.
const POPUP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long the page's running animations are waited for before a custom
/// select is clicked open (milliseconds).
const ANIMATIONS_WAIT_MS: u32 = 1000;

/// Chooses options of a select (native, or a custom combobox or listbox)
/// by value or label.
pub(super) async fn select(
    page: &Page,
    ready: &Ready,
    values: &[String],
    budget: &Budget,
) -> Result<()> {
    let (frame, reference) = (ready.frame.as_deref(), ready.element()?);
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
        Some("missing") => Err(no_option(&selected)),
        Some("single") => Err(BrowserError::invalid(
            "values",
            "this select takes only one option",
        )),
        Some("custom") if frame.is_none() => {
            let open = selected["open"].as_bool() == Some(true);
            choose_custom(page, ready, open, values, budget).await
        }
        Some("custom") => Err(BrowserError::invalid(
            "ref",
            format!(
                "{reference} is a custom select in a cross-origin frame: click it, then click the option"
            ),
        )),
        _ => Err(BrowserError::invalid(
            "ref",
            format!("{reference} is not a select, combobox or listbox"),
        )),
    }
}

fn no_option(answer: &serde_json::Value) -> BrowserError {
    BrowserError::invalid(
        "values",
        format!(
            "no option matches {}; the options are {}",
            answer["missing"], answer["available"]
        ),
    )
}

/// Opens a custom combobox (unless it is open) and clicks each wanted
/// option in its popup.
async fn choose_custom(
    page: &Page,
    ready: &Ready,
    open: bool,
    values: &[String],
    budget: &Budget,
) -> Result<()> {
    if !open {
        // A popup still closing from an earlier choice could be opened
        // and then hidden by its own closing animation's end.
        world_call(
            page,
            None,
            budget,
            &format!("__browserShell.animationsEnded({ANIMATIONS_WAIT_MS})"),
        )
        .await?;
        click(page, ready, MouseButton::Left, 1, 0, budget).await?;
    }
    let options = find_options(page, ready, values, budget).await?;
    for (value, option) in values.iter().zip(options) {
        let at = match prepare(page, &option, "click", budget).await {
            // The popup drew the option anew since it was found (an
            // animation, a re-render): look once more. Nothing was sent to
            // it, so this is a second look, not a retry.
            Err(BrowserError::StaleRef { .. }) => {
                let again = find_options(page, ready, std::slice::from_ref(value), budget).await?;
                let option = again.into_iter().next().unwrap_or(option);
                prepare(page, &option, "click", budget).await?
            }
            other => other?,
        };
        click(page, &at, MouseButton::Left, 1, 0, budget).await?;
    }
    Ok(())
}

/// The refs of the options named by `values` in an opened custom select's
/// popup, in order, looked for until they show (at most [`POPUP_WAIT`]).
async fn find_options(
    page: &Page,
    ready: &Ready,
    values: &[String],
    budget: &Budget,
) -> Result<Vec<Ref>> {
    let reference = ready.element()?;
    let started = std::time::Instant::now();
    loop {
        let next_ref = page.agent.lock().await.next_ref();
        let answer = world_call(
            page,
            None,
            budget,
            &format!(
                "__browserShell.customOptions({}, {}, {next_ref})",
                json!(reference),
                json!(values)
            ),
        )
        .await?;
        let status = answer["status"].as_str().unwrap_or_default().to_owned();
        if status == "ok" || started.elapsed() >= POPUP_WAIT || status == "gone" {
            let handed: HandedOut = serde_json::from_value(answer.clone()).map_err(|e| {
                BrowserError::ExecuteFailed {
                    message: format!("unexpected answer while finding options: {e}"),
                }
            })?;
            let refs = handed.record(page).await;
            return match status.as_str() {
                "ok" => Ok(refs),
                "gone" => Err(BrowserError::invalid(
                    "ref",
                    format!("{reference} left the page"),
                )),
                _ => Err(no_option(&answer)),
            };
        }
        // The popup renders a frame or two after the click.
        world_call(page, None, budget, "__browserShell.frames(2)").await?;
    }
}

/// Makes a checkbox or radio checked (`want`) or unchecked.
pub(super) async fn set_checked(
    page: &Page,
    ready: &Ready,
    want: bool,
    budget: &Budget,
) -> Result<()> {
    let (reference, frame) = (ready.element()?, ready.frame.as_deref());
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
                reference: reference.clone(),
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
