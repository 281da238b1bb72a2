//! The element ref: the name a snapshot gives an element so that the model
//! can act on it.
//!
//! The page-side walker hands refs out (`e` and a number from the tab's
//! counter, `e12`), in every frame alike: out-of-process frames draw from
//! the same counter, so a ref names one element in its tab and is never
//! reused there. The tab's registry ([`TabState`](super::TabState)) keeps
//! what each ref was seen as.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An element ref, such as `e12`.
///
/// Refs from the page are taken as they come (deserialized without checks:
/// what the walker hands out is a ref by definition). Refs from a model or
/// a person are parsed ([`FromStr`]), which accepts only the form the
/// walker hands out; whether the ref was issued in the tab is for the tab's
/// registry to say. Serialized, a ref is its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ref(String);

impl Ref {
    /// The ref's text, such as `e12`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The ref's number (`e12` → 12), for ordering refs as they were issued.
    pub fn number(&self) -> Option<u64> {
        self.0.strip_prefix('e')?.parse().ok()
    }
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Ref {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Ref {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Ref {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Ref {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl FromStr for Ref {
    type Err = NotARef;

    /// Accepts `e` followed by digits, the only form the walker hands out.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.strip_prefix('e').unwrap_or_default();
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            Ok(Self(text.to_owned()))
        } else {
            Err(NotARef {
                text: text.to_owned(),
            })
        }
    }
}

/// A text that does not have a ref's form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a ref (refs look like e12)")]
pub struct NotARef {
    /// The text as given.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_walkers_form_parses() {
        for good in ["e1", "e12", "e0042"] {
            let parsed: Ref = good.parse().unwrap();
            assert_eq!(parsed.as_str(), good);
            assert_eq!(parsed.to_string(), good);
        }
        for bad in [
            "",
            "e",
            "12",
            "E12",
            "e12 ",
            "[ref=e12]",
            "ref=e12",
            "e1x",
            "page",
        ] {
            let error = bad.parse::<Ref>().unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("{bad:?} is not a ref (refs look like e12)")
            );
        }
    }

    #[test]
    fn a_ref_is_its_text_in_json() {
        let reference: Ref = "e7".parse().unwrap();
        assert_eq!(serde_json::to_string(&reference).unwrap(), "\"e7\"");
        let back: Ref = serde_json::from_str("\"e7\"").unwrap();
        assert_eq!(back, reference);
        assert_eq!(reference.number(), Some(7));
    }
}
