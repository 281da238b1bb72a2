//! Key names and chords (`Enter`, `Control+A`, `Shift+ArrowDown`) as the
//! CDP key events a real keyboard produces.

use crate::error::{BrowserError, Result};

/// Modifier bits as CDP counts them.
pub const ALT: u8 = 1;
/// Control.
pub const CONTROL: u8 = 2;
/// Meta (Command on macOS).
pub const META: u8 = 4;
/// Shift.
pub const SHIFT: u8 = 8;

/// One key as the browser needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// DOM `key`.
    pub key: String,
    /// DOM `code`.
    pub code: String,
    /// Windows virtual key code.
    pub key_code: u32,
    /// Text it types when no modifier other than Shift is held.
    pub text: Option<String>,
}

/// A chord: modifiers plus one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chord {
    /// Held modifiers (bit set of [`ALT`], [`CONTROL`], [`META`], [`SHIFT`]).
    pub modifiers: u8,
    /// The key pressed with them.
    pub key: Key,
}

/// Parses `Control+Shift+K`, `Enter`, `a`, `ArrowDown`, `Space`.
///
/// # Errors
/// `INVALID_ARGUMENT` (field `key`) for an unknown key or modifier.
pub fn parse_chord(text: &str) -> Result<Chord> {
    let parts: Vec<&str> = text.split('+').map(str::trim).collect();
    // "+" itself, or a chord ending in "+" (Control++), means the plus key.
    let (modifier_names, key_name) = match parts.as_slice() {
        [.., "", ""] => (&parts[..parts.len() - 2], "+"),
        [rest @ .., last] => (rest, *last),
        [] => (&parts[..0], ""),
    };
    let mut modifiers = 0;
    for name in modifier_names {
        modifiers |= match name.to_ascii_lowercase().as_str() {
            "alt" | "option" => ALT,
            "control" | "ctrl" => CONTROL,
            "meta" | "cmd" | "command" | "super" => META,
            "shift" => SHIFT,
            other => {
                return Err(BrowserError::invalid(
                    "key",
                    format!("{other:?} is not a modifier (Alt, Control, Meta, Shift)"),
                ));
            }
        };
    }
    let key = key_for(key_name, modifiers & SHIFT != 0).ok_or_else(|| {
        BrowserError::invalid(
            "key",
            format!("{key_name:?} is not a key name such as Enter, Tab, ArrowDown, a"),
        )
    })?;
    Ok(Chord { modifiers, key })
}

/// The key a person presses to type `c` on a US layout (Shift implied by
/// the character: `A`, `!`), or `None` for a character no key types
/// (emoji, CJK, accented letters), which goes in as inserted text.
/// A line break is Enter and a tab is Tab.
pub fn for_char(c: char) -> Option<Key> {
    match c {
        '\n' | '\r' => key_for("Enter", false),
        '\t' => key_for("Tab", false),
        ' ' => key_for("Space", false),
        _ => printable(c, c.is_ascii_uppercase()).filter(|key| key.key_code != 0),
    }
}

fn named(key: &str, code: &str, key_code: u32, text: Option<&str>) -> Key {
    Key {
        key: key.into(),
        code: code.into(),
        key_code,
        text: text.map(Into::into),
    }
}

fn key_for(name: &str, shift: bool) -> Option<Key> {
    let key = match name {
        "Enter" | "Return" => named("Enter", "Enter", 13, Some("\r")),
        "Tab" => named("Tab", "Tab", 9, None),
        "Escape" | "Esc" => named("Escape", "Escape", 27, None),
        "Backspace" => named("Backspace", "Backspace", 8, None),
        "Delete" => named("Delete", "Delete", 46, None),
        "Space" | " " => named(" ", "Space", 32, Some(" ")),
        "ArrowUp" | "Up" => named("ArrowUp", "ArrowUp", 38, None),
        "ArrowDown" | "Down" => named("ArrowDown", "ArrowDown", 40, None),
        "ArrowLeft" | "Left" => named("ArrowLeft", "ArrowLeft", 37, None),
        "ArrowRight" | "Right" => named("ArrowRight", "ArrowRight", 39, None),
        "Home" => named("Home", "Home", 36, None),
        "End" => named("End", "End", 35, None),
        "PageUp" => named("PageUp", "PageUp", 33, None),
        "PageDown" => named("PageDown", "PageDown", 34, None),
        "Insert" => named("Insert", "Insert", 45, None),
        "+" => named("+", "Equal", 187, Some("+")),
        _ => {
            if let Some(number) = name
                .strip_prefix('F')
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| (1..=12).contains(n))
            {
                return Some(named(name, name, 111 + number, None));
            }
            let mut chars = name.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                return None;
            };
            return printable(c, shift);
        }
    };
    Some(key)
}

fn printable(c: char, shift: bool) -> Option<Key> {
    if c.is_ascii_alphabetic() {
        let upper = c.to_ascii_uppercase();
        let typed = if shift { upper } else { c.to_ascii_lowercase() };
        return Some(named(
            &typed.to_string(),
            &format!("Key{upper}"),
            upper as u32,
            Some(&typed.to_string()),
        ));
    }
    if c.is_ascii_digit() {
        return Some(named(
            &c.to_string(),
            &format!("Digit{c}"),
            c as u32,
            Some(&c.to_string()),
        ));
    }
    let (code, key_code) = match c {
        '-' => ("Minus", 189),
        '=' => ("Equal", 187),
        ',' => ("Comma", 188),
        '.' => ("Period", 190),
        '/' => ("Slash", 191),
        ';' => ("Semicolon", 186),
        '\'' => ("Quote", 222),
        '[' => ("BracketLeft", 219),
        ']' => ("BracketRight", 221),
        '\\' => ("Backslash", 220),
        '`' => ("Backquote", 192),
        // Shifted symbols on a US layout.
        '!' => ("Digit1", 49),
        '@' => ("Digit2", 50),
        '#' => ("Digit3", 51),
        '$' => ("Digit4", 52),
        '%' => ("Digit5", 53),
        '^' => ("Digit6", 54),
        '&' => ("Digit7", 55),
        '*' => ("Digit8", 56),
        '(' => ("Digit9", 57),
        ')' => ("Digit0", 48),
        '_' => ("Minus", 189),
        '{' => ("BracketLeft", 219),
        '}' => ("BracketRight", 221),
        '|' => ("Backslash", 220),
        ':' => ("Semicolon", 186),
        '"' => ("Quote", 222),
        '<' => ("Comma", 188),
        '>' => ("Period", 190),
        '?' => ("Slash", 191),
        '~' => ("Backquote", 192),
        // Any other character types itself (no physical key).
        _ if !c.is_control() => ("", 0),
        _ => return None,
    };
    Some(named(&c.to_string(), code, key_code, Some(&c.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_map_to_the_keys_that_type_them() {
        let upper = for_char('A').unwrap();
        assert_eq!(
            (
                upper.key.as_str(),
                upper.code.as_str(),
                upper.text.as_deref()
            ),
            ("A", "KeyA", Some("A"))
        );
        let bang = for_char('!').unwrap();
        assert_eq!((bang.code.as_str(), bang.key_code), ("Digit1", 49));
        assert_eq!(for_char('\n').unwrap().key, "Enter");
        assert_eq!(for_char(' ').unwrap().code, "Space");
        assert!(for_char('é').is_none());
        assert!(for_char('😀').is_none());
        assert!(for_char('中').is_none());
    }

    #[test]
    fn chords_parse() {
        let chord = parse_chord("Control+A").unwrap();
        assert_eq!(chord.modifiers, CONTROL);
        assert_eq!(chord.key.code, "KeyA");
        let chord = parse_chord("Shift+ArrowDown").unwrap();
        assert_eq!(
            (chord.modifiers, chord.key.key.as_str()),
            (SHIFT, "ArrowDown")
        );
        assert_eq!(parse_chord("Enter").unwrap().key.key_code, 13);
        assert_eq!(parse_chord("Control++").unwrap().key.key, "+");
        assert_eq!(parse_chord("F5").unwrap().key.key_code, 116);
        assert_eq!(
            parse_chord("Hyper+A").err().map(|e| e.code()),
            Some("INVALID_ARGUMENT")
        );
        assert_eq!(
            parse_chord("Banana").err().map(|e| e.code()),
            Some("INVALID_ARGUMENT")
        );
    }
}
