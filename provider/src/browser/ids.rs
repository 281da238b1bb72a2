//! The names callers hold: session ids (`s1`, …) and tab handles (`t1`, …).
//!
//! Both are the shell's own, never Chromium's target ids, so they outlive
//! a browser restart (see [`super::recovery`]).

use std::fmt;

use crate::error::{BrowserError, Result};

/// Opaque id of an agent session (`s1`, `s2`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub(super) String);

impl SessionId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tab handle as models see it (`t1`, `t2`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TabHandle(pub(super) String);

impl TabHandle {
    /// Parses a handle given by a caller.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` (field `tab`) unless it looks like `t<number>`.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let valid = text.len() > 1
            && text.starts_with('t')
            && text[1..].bytes().all(|b| b.is_ascii_digit());
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(BrowserError::invalid(
                "tab",
                format!("{text:?} is not a tab handle such as t1"),
            ))
        }
    }

    /// The handle as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number in `t<number>` (handles sort by it: the order tabs opened).
    pub fn number(&self) -> u64 {
        self.0.trim_start_matches('t').parse().unwrap_or(0)
    }
}

impl fmt::Display for TabHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
