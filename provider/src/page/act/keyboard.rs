//! Keyboard actions: focus, type, fill and press.
//!
//! `type` is a person's keystrokes: a trusted key event pair per character
//! (keydown, keypress, beforeinput, input, keyup), so pages that listen
//! for keys react; characters no key types (emoji, CJK) go in as inserted
//! text. `fill` is the fast path: the whole text at once, as a paste would
//! put it (`Input.insertText`, one input event); in a code editor it is a
//! paste the editor takes itself, so it holds exactly the text, without
//! auto-closing or auto-indent. Chords (parsed by [`crate::page::keys`])
//! press modifiers before the key and release them after it.

use serde_json::json;

use super::kinds::{Ready, world_call};
use crate::cdp::protocol::{InputDispatchKeyEvent, InputInsertText};
use crate::error::{BrowserError, Result};
use crate::host::CommandBatch;
use crate::page::keys::{self, Chord};
use crate::page::{Budget, Page, input};
use crate::snapshot::Ref;

/// Gives the element keyboard focus.
pub(super) async fn focus(
    page: &Page,
    frame: Option<&str>,
    reference: &Ref,
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

/// Types `text` key by key into the focused field, then Enter with
/// `submit`. A code editor that did not have the focus is typed into at
/// the end of its text (a field appends too); one that had it, at its caret.
pub(super) async fn type_text(
    page: &Page,
    ready: &Ready,
    text: &str,
    submit: bool,
    budget: &Budget,
) -> Result<()> {
    if ready
        .editor
        .as_ref()
        .is_some_and(|editor| !editor.was_focused)
    {
        press(page, &keys::parse_chord("Control+End")?, budget).await?;
    }
    keystrokes(page, text, budget).await?;
    if submit {
        press(page, &keys::parse_chord("Enter")?, budget).await?;
    }
    Ok(())
}

/// Replaces the focused field's content with `text` (its content is
/// selected already, or, in a code editor, selected here with the
/// editor's own Control+A), then Enter with `submit`.
pub(super) async fn fill(
    page: &Page,
    ready: &Ready,
    text: &str,
    submit: bool,
    budget: &Budget,
) -> Result<()> {
    if ready.editor.is_some() {
        press(page, &keys::parse_chord("Control+A")?, budget).await?;
    }
    if text.is_empty() {
        press(page, &keys::parse_chord("Delete")?, budget).await?;
    } else if ready.editor.is_none() || !paste(page, ready, text, budget).await? {
        input::type_text(page, text, budget).await?;
    }
    if submit {
        press(page, &keys::parse_chord("Enter")?, budget).await?;
    }
    Ok(())
}

/// Offers `text` to the focused element as a paste; true if the page took
/// it (a code editor inserts pasted text verbatim).
async fn paste(page: &Page, ready: &Ready, text: &str, budget: &Budget) -> Result<bool> {
    let taken = world_call(
        page,
        ready.frame.as_deref(),
        budget,
        &format!("__browserShell.pasteText({})", json!(text)),
    )
    .await?;
    Ok(taken.as_bool() == Some(true))
}

/// Sends one key press per character (text without a key as inserted
/// text). The events go out back to back, in one batch, and their
/// acknowledgements are awaited together, as for a click: the browser
/// keeps their order, and typing does not pay a renderer round trip per key.
async fn keystrokes(page: &Page, text: &str, budget: &Budget) -> Result<()> {
    let mut strokes = Vec::new();
    let mut unkeyed = String::new();
    for c in text.chars() {
        let Some(key) = keys::for_char(c) else {
            unkeyed.push(c);
            continue;
        };
        if !unkeyed.is_empty() {
            strokes.push(Stroke::Text(std::mem::take(&mut unkeyed)));
        }
        strokes.push(Stroke::Key(key));
    }
    if !unkeyed.is_empty() {
        strokes.push(Stroke::Text(unkeyed));
    }
    let mut batch = CommandBatch::new();
    for stroke in strokes {
        match stroke {
            Stroke::Key(key) => {
                let down = if key.text.is_some() {
                    "keyDown"
                } else {
                    "rawKeyDown"
                };
                batch.push(&key_event(down, &key, 0, key.text.clone()))?;
                batch.push(&key_event("keyUp", &key, 0, None))?;
            }
            Stroke::Text(text) => batch.push(&InputInsertText { text })?,
        }
    }
    page.call_in_order(budget, batch).await
}

/// One step of typing.
enum Stroke {
    /// A key that types its character.
    Key(keys::Key),
    /// Characters no key types.
    Text(String),
}

/// Presses keys or chords in order, on the element (focused first) or, for
/// the page itself, on whatever has focus.
pub(super) async fn press_keys(
    page: &Page,
    frame: Option<&str>,
    reference: Option<&Ref>,
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
    if let Some(reference) = reference {
        focus(page, frame, reference, budget).await?;
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
    // One batch: the browser keeps the order, modifiers down to modifiers up.
    let mut batch = CommandBatch::new();
    let mut held = 0;
    for (bit, modifier) in &modifier_keys {
        held |= bit;
        batch.push(&key_event("rawKeyDown", &modifier.key, held, None))?;
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
    batch.push(&key_event(kind, &chord.key, chord.modifiers, text))?;
    batch.push(&key_event("keyUp", &chord.key, chord.modifiers, None))?;
    for (bit, modifier) in modifier_keys.iter().rev() {
        held &= !bit;
        batch.push(&key_event("keyUp", &modifier.key, held, None))?;
    }
    page.call_in_order(budget, batch).await
}

/// One key event of a press.
fn key_event(
    kind: &'static str,
    key: &keys::Key,
    modifiers: u8,
    text: Option<String>,
) -> InputDispatchKeyEvent {
    InputDispatchKeyEvent {
        kind,
        modifiers,
        key: key.key.clone(),
        code: key.code.clone(),
        windows_virtual_key_code: key.key_code,
        text,
        commands: Vec::new(),
    }
}
