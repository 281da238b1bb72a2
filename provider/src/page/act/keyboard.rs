//! Keyboard actions: focus, type, fill and press.
//!
//! Text goes in with `Input.insertText`; keys and chords (parsed by
//! [`crate::page::keys`]) are sent as trusted key events, modifiers
//! pressed before the key and released after it.

use serde_json::json;

use super::world_call;
use crate::cdp::protocol::{InputDispatchKeyEvent, InputInsertText};
use crate::error::{BrowserError, Result};
use crate::page::keys::{self, Chord};
use crate::page::{Budget, Page};

/// Gives the element keyboard focus.
pub(super) async fn focus(
    page: &Page,
    frame: Option<&str>,
    reference: &str,
    budget: &Budget,
) -> Result<()> {
    world_call(
        page,
        frame,
        budget,
        &format!("__browserShell.focus({})", json!(reference)),
    )
    .await?;
    Ok(())
}

/// Types `text` into the focused field (replacing its selected content with
/// `replace`, deleting it when `text` is empty), then Enter with `submit`.
pub(super) async fn insert(
    page: &Page,
    text: &str,
    replace: bool,
    submit: bool,
    budget: &Budget,
) -> Result<()> {
    if text.is_empty() {
        if replace {
            press(page, &keys::parse_chord("Delete")?, budget).await?;
        }
    } else {
        page.call(
            budget,
            &InputInsertText {
                text: text.to_owned(),
            },
        )
        .await?;
    }
    if submit {
        press(page, &keys::parse_chord("Enter")?, budget).await?;
    }
    Ok(())
}

/// Presses keys or chords in order, on the element (focused first) or, for
/// the page itself, on whatever has focus.
pub(super) async fn press_keys(
    page: &Page,
    frame: Option<&str>,
    reference: &str,
    names: &[String],
    budget: &Budget,
) -> Result<()> {
    if names.is_empty() {
        return Err(BrowserError::invalid(
            "key",
            "name at least one key, such as Enter",
        ));
    }
    let chords = names
        .iter()
        .map(|k| keys::parse_chord(k))
        .collect::<Result<Vec<_>>>()?;
    // On the page itself, keys go to whatever has focus.
    if reference != "page" {
        world_call(
            page,
            frame,
            budget,
            &format!("__browserShell.focus({})", json!(reference)),
        )
        .await?;
    }
    for chord in &chords {
        press(page, chord, budget).await?;
    }
    Ok(())
}

/// Presses one chord: modifiers down, the key down and up, modifiers up.
async fn press(page: &Page, chord: &Chord, budget: &Budget) -> Result<()> {
    let modifier_keys: Vec<(u8, Chord)> = [
        (keys::CONTROL, "Control", "ControlLeft", 17),
        (keys::SHIFT, "Shift", "ShiftLeft", 16),
        (keys::ALT, "Alt", "AltLeft", 18),
        (keys::META, "Meta", "MetaLeft", 91),
    ]
    .into_iter()
    .filter(|(bit, ..)| chord.modifiers & bit != 0)
    .map(|(bit, key, code, key_code)| {
        (
            bit,
            Chord {
                modifiers: 0,
                key: keys::Key {
                    key: key.into(),
                    code: code.into(),
                    key_code,
                    text: None,
                },
            },
        )
    })
    .collect();
    let mut held = 0;
    for (bit, modifier) in &modifier_keys {
        held |= bit;
        key_event(page, "rawKeyDown", &modifier.key, held, None, budget).await?;
    }
    // Text is typed only without Control/Alt/Meta (a chord like Control+A is a command).
    let text = chord
        .key
        .text
        .clone()
        .filter(|_| chord.modifiers & !keys::SHIFT == 0);
    let kind = if text.is_some() {
        "keyDown"
    } else {
        "rawKeyDown"
    };
    key_event(page, kind, &chord.key, chord.modifiers, text, budget).await?;
    key_event(page, "keyUp", &chord.key, chord.modifiers, None, budget).await?;
    for (bit, modifier) in modifier_keys.iter().rev() {
        held &= !bit;
        key_event(page, "keyUp", &modifier.key, held, None, budget).await?;
    }
    Ok(())
}

async fn key_event(
    page: &Page,
    kind: &'static str,
    key: &keys::Key,
    modifiers: u8,
    text: Option<String>,
    budget: &Budget,
) -> Result<()> {
    page.call(
        budget,
        &InputDispatchKeyEvent {
            kind,
            modifiers,
            key: key.key.clone(),
            code: key.code.clone(),
            windows_virtual_key_code: key.key_code,
            text,
            commands: Vec::new(),
        },
    )
    .await?;
    Ok(())
}
