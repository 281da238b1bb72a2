//! Mouse actions: click and hover, with held modifiers.
//!
//! The low-level mouse event and the click (move, then press and release
//! `count` times) are shared with the other families: check and uncheck
//! click, and drag moves the mouse.

use serde_json::json;

use super::kinds::{MouseButton, Ready, world_call};
use crate::cdp::protocol::InputDispatchMouseEvent;
use crate::error::{BrowserError, Result};
use crate::host::CommandBatch;
use crate::page::keys;
use crate::page::{Budget, Page};

impl MouseButton {
    fn cdp_name(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Middle => "middle",
        }
    }
}

/// The click action: in the main frame's process, [`click`]; in an
/// out-of-process frame, a click whose arrival is checked (and which is
/// pressed once more if it did not arrive).
pub(super) async fn click_action(
    page: &Page,
    ready: &Ready,
    button: MouseButton,
    count: u32,
    modifiers: &[String],
    budget: &Budget,
) -> Result<()> {
    let (reference, frame) = (ready.element()?, ready.frame.as_deref());
    let modifiers = modifier_bits(modifiers)?;
    let count = count.clamp(1, 3);
    if frame.is_none() {
        return click(page, ready, button, count, modifiers, budget).await;
    }
    // In an out-of-process frame, make sure the press reached the element:
    // a frame that has just loaded can miss input. If it did not arrive,
    // the element never saw it, so pressing again is safe.
    let arm = format!("__browserShell.armInput({})", json!(reference));
    let arrived = format!("__browserShell.inputArrived({})", json!(reference));
    world_call(page, frame, budget, &arm).await?;
    click(page, ready, button, count, modifiers, budget).await?;
    if world_call(page, frame, budget, &arrived).await?.as_bool() == Some(true) {
        return Ok(());
    }
    world_call(page, frame, budget, "__browserShell.frames(2)").await?;
    world_call(page, frame, budget, &arm).await?;
    click(page, ready, button, count, modifiers, budget).await?;
    if world_call(page, frame, budget, &arrived).await?.as_bool() == Some(true) {
        return Ok(());
    }
    Err(BrowserError::NotActionable {
        reference: reference.clone(),
        role: String::new(),
        name: String::new(),
        reason: "its frame did not receive the click".into(),
    })
}

/// Moves the mouse onto the action point.
pub(super) async fn hover(page: &Page, x: f64, y: f64, budget: &Budget) -> Result<()> {
    mouse(page, "mouseMoved", x, y, "none", 0, budget).await
}

fn modifier_bits(names: &[String]) -> Result<u8> {
    let mut bits = 0;
    for name in names {
        bits |= match name.to_ascii_lowercase().as_str() {
            "alt" => keys::ALT,
            "control" | "ctrl" => keys::CONTROL,
            "meta" | "cmd" => keys::META,
            "shift" => keys::SHIFT,
            other => {
                return Err(BrowserError::invalid(
                    "modifiers",
                    format!("{other:?} is not Alt, Control, Meta or Shift"),
                ));
            }
        };
    }
    Ok(bits)
}

/// One mouse event with the buttons held during it (a drag's moves say the
/// left button is down, as a person's do; a hover holds none).
pub(super) async fn mouse(
    page: &Page,
    kind: &'static str,
    x: f64,
    y: f64,
    button: &'static str,
    buttons: u32,
    budget: &Budget,
) -> Result<()> {
    page.call(
        budget,
        &InputDispatchMouseEvent {
            kind,
            x,
            y,
            button,
            click_count: u32::from(kind != "mouseMoved"),
            buttons: Some(buttons),
            ..InputDispatchMouseEvent::default()
        },
    )
    .await?;
    Ok(())
}

/// Moves to the element's action point and presses and releases `count`
/// times. In the main frame's process the events are sent back to back, in
/// one batch, and their acknowledgements awaited together (as Puppeteer does): the browser
/// keeps their order, and the click does not pay one renderer round trip per
/// event. An out-of-process frame gets them one by one: a frame that has just
/// loaded can lose input that arrives before it is ready for it.
pub(super) async fn click(
    page: &Page,
    ready: &Ready,
    button: MouseButton,
    count: u32,
    modifiers: u8,
    budget: &Budget,
) -> Result<()> {
    let (x, y, name) = (ready.x, ready.y, button.cdp_name());
    let event = |kind, button, click_count| InputDispatchMouseEvent {
        kind,
        x,
        y,
        button,
        click_count,
        modifiers,
        ..InputDispatchMouseEvent::default()
    };
    let mut events = vec![event("mouseMoved", "none", 0)];
    for click_count in 1..=count {
        for kind in ["mousePressed", "mouseReleased"] {
            events.push(event(kind, name, click_count));
        }
    }
    if ready.frame.is_some() {
        for event in &events {
            page.call(budget, event).await?;
        }
        return Ok(());
    }
    let mut batch = CommandBatch::new();
    for event in &events {
        batch.push(event)?;
    }
    page.call_in_order(budget, batch).await
}
