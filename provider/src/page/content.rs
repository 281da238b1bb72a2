//! Page content as html, markdown, txt or json, optionally scoped by a CSS
//! selector and capped in length.
//!
//! Extraction runs in the page (`src/js/content.js`) where visibility and
//! resolved URLs are known; sensitive form values are masked there, so they
//! never cross the protocol.

use std::str::FromStr;

use serde::Deserialize;
use serde_json::Value;

use super::{Budget, Page};
use crate::error::{BrowserError, Result};

const CONTENT_JS: &str = include_str!("../js/content.js");

/// The content formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContentFormat {
    /// The DOM serialized as HTML.
    Html,
    /// A reading view: headings, lists, links, tables, code blocks.
    #[default]
    Markdown,
    /// Rendered text only (smallest).
    Txt,
    /// Structured facts: title, url, language, description, headings,
    /// links, forms, tables and JSON-LD.
    Json,
}

impl ContentFormat {
    /// The name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Html => "html",
            Self::Markdown => "markdown",
            Self::Txt => "txt",
            Self::Json => "json",
        }
    }
}

impl FromStr for ContentFormat {
    type Err = BrowserError;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "html" => Ok(Self::Html),
            "markdown" | "md" => Ok(Self::Markdown),
            "txt" | "text" => Ok(Self::Txt),
            "json" => Ok(Self::Json),
            other => Err(BrowserError::invalid(
                "format",
                format!("{other:?} is not one of html, markdown, txt, json"),
            )),
        }
    }
}

/// What to fetch.
#[derive(Debug, Clone, Default)]
pub struct ContentRequest {
    /// The format.
    pub format: ContentFormat,
    /// Limit to the first element matching this CSS selector.
    pub selector: Option<String>,
    /// Cap on the returned text, in characters.
    pub max_chars: usize,
}

/// Fetched content.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentResult {
    /// The content; for `json`, the serialized object.
    pub content: String,
    /// True when the content was cut at `max_chars`.
    pub truncated: bool,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
enum Extracted {
    Ok {
        #[serde(default)]
        content: String,
        #[serde(default)]
        truncated: bool,
        #[serde(default)]
        data: Option<Value>,
    },
    NoMatch,
    BadSelector {
        message: String,
    },
}

/// Extracts content from the page.
///
/// # Errors
/// `INVALID_ARGUMENT` for a bad selector or `max_chars` of zero,
/// `ELEMENT_NOT_FOUND` when the selector matches nothing, `TIMEOUT` past the budget.
pub async fn content(
    page: &Page,
    request: &ContentRequest,
    budget: &Budget,
) -> Result<ContentResult> {
    if request.max_chars == 0 {
        return Err(BrowserError::invalid("maxChars", "must be at least 1"));
    }
    let selector = match request.selector.as_deref().map(str::trim) {
        Some("") => return Err(BrowserError::invalid("selector", "must not be empty")),
        other => other,
    };
    let args = serde_json::json!([request.format.as_str(), selector, request.max_chars]);
    let expression = format!("({CONTENT_JS}).apply(null, {args})");
    let value = page.evaluate_value(budget, expression).await?;
    let extracted: Extracted =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("content extraction returned an unexpected shape: {e}"),
        })?;
    match extracted {
        Extracted::NoMatch => Err(BrowserError::ElementNotFound {
            selector: selector.unwrap_or_default().to_owned(),
        }),
        Extracted::BadSelector { message } => Err(BrowserError::invalid("selector", message)),
        Extracted::Ok {
            data: Some(data), ..
        } => {
            let text = serde_json::to_string_pretty(&data).unwrap_or_default();
            Ok(cap_chars(text, request.max_chars))
        }
        Extracted::Ok {
            content, truncated, ..
        } => {
            let capped = cap_chars(content, request.max_chars);
            Ok(ContentResult {
                truncated: truncated || capped.truncated,
                ..capped
            })
        }
    }
}

/// Cuts `text` to at most `max_chars` characters.
fn cap_chars(mut text: String, max_chars: usize) -> ContentResult {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => {
            text.truncate(cut);
            ContentResult {
                content: text,
                truncated: true,
            }
        }
        None => ContentResult {
            content: text,
            truncated: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_unknown_ones_name_the_field() {
        assert_eq!(
            "md".parse::<ContentFormat>().ok(),
            Some(ContentFormat::Markdown)
        );
        let error = "pdf".parse::<ContentFormat>().err();
        assert!(
            matches!(error, Some(BrowserError::InvalidArgument { ref field, .. }) if field == "format")
        );
    }

    #[test]
    fn capping_counts_characters_not_bytes() {
        let capped = cap_chars("héllo wörld".into(), 5);
        assert_eq!(capped.content, "héllo");
        assert!(capped.truncated);
        let whole = cap_chars("abc".into(), 3);
        assert!(!whole.truncated);
    }
}
