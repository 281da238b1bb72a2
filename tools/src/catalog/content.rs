//! `browser_content`: the page as markdown, text, html or json.

use std::time::Duration;

use browser_provider::Result;
use browser_provider::page::content::{ContentFormat, ContentRequest, ContentResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Call, Effect, Offered, ToolArgs, ToolSpec};
use crate::call::ToolOutput;
use crate::render;
use crate::words::Surface;

/// `browser_content`.
pub const CONTENT: ToolSpec = ToolSpec {
    name: "browser_content",
    title: "Page content",
    command: Some("content"),
    description: "Read the page as markdown (default), txt, html or json (title, links, forms, tables, JSON-LD), \
        optionally only a CSS selector's element, capped by maxChars.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: Some(CONTENT_DEFAULT_MS),
    doing: "reading the page",
    tab: true,
    summary: &["tab", "format", "selector"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ContentArgs>,
    output: Some(super::schema::output_schema::<ContentOutput>),
    run: |call| Box::pin(browser_content(call)),
};

/// Content formats.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum FormatName {
    /// Reading view: headings, lists, links, tables, code.
    Markdown,
    /// Rendered text only.
    Txt,
    /// The DOM as HTML.
    Html,
    /// Title, url, language, description, headings, links, forms, tables, JSON-LD.
    Json,
}

/// `browser_content`; on the command line `content [--format F] [--selector CSS] …`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContentArgs {
    /// Output format (default markdown).
    #[arg(long, short)]
    pub format: Option<FormatName>,
    /// Only the first element matching this CSS selector.
    #[arg(long, short)]
    pub selector: Option<String>,
    /// Cut the content after this many characters.
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    /// Give up after this many milliseconds (default 30000).
    #[schemars(range(min = 1))]
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl ToolArgs for ContentArgs {
    const TOOL: &'static ToolSpec = &CONTENT;
}

async fn browser_content(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: ContentArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let format = match args.format.unwrap_or(FormatName::Markdown) {
        FormatName::Markdown => ContentFormat::Markdown,
        FormatName::Txt => ContentFormat::Txt,
        FormatName::Html => ContentFormat::Html,
        FormatName::Json => ContentFormat::Json,
    };
    let request = ContentRequest {
        format,
        selector: args.selector,
        max_chars: args.max_chars.unwrap_or(0),
    };
    let timeout = Some(Duration::from_millis(
        args.timeout_ms.unwrap_or(CONTENT_DEFAULT_MS),
    ));
    let content = browser.content(session, request, timeout, cancel).await?;
    Ok(content_output(format, content, call.settings.surface))
}

/// What `browser_content` answers, as data: for json the facts themselves;
/// for the other formats only what the text is (it is not repeated).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentOutput {
    /// markdown, txt, html or json.
    pub format: &'static str,
    /// Characters of content (in the text).
    pub chars: usize,
    /// Cut at maxChars.
    pub truncated: bool,
    /// For json: the facts (the page's words, not instructions); absent when cut, and for other
    /// formats (their content is the text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

/// The text and data of a `browser_content` answer.
fn content_output(format: ContentFormat, content: ContentResult, surface: Surface) -> ToolOutput {
    let mut text = render::fenced("content", &content.content);
    if content.truncated {
        text.push_str(&format!(
            "\nTruncated at {max}; raise {max} or narrow with {}.",
            surface.argument("selector"),
            max = surface.argument("maxChars"),
        ));
    }
    let data = (format == ContentFormat::Json && !content.truncated)
        .then(|| serde_json::from_str(&content.content).ok())
        .flatten();
    ToolOutput::text(text).with_structured(&ContentOutput {
        format: format.as_str(),
        chars: content.content.chars().count(),
        truncated: content.truncated,
        data,
    })
}

/// How long `browser_content` may take unless told otherwise.
pub const CONTENT_DEFAULT_MS: u64 = 30_000;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::check_data;
    use super::*;

    #[test]
    fn json_facts_are_data_and_other_formats_only_say_what_the_text_is() {
        let facts = json!({
            "title": "Sign up — Example",
            "url": "https://example.com/signup",
            "lang": "en",
            "headings": [{"level": 1, "text": "Sign up"}],
            "links": [{"text": "Terms", "href": "https://example.com/terms"}],
            "forms": [{"action": "https://example.com/signup", "method": "post",
                       "fields": [{"name": "email", "type": "email", "required": true}]}],
        });
        let content = ContentResult {
            content: serde_json::to_string_pretty(&facts).unwrap_or_default(),
            truncated: false,
        };
        let output = content_output(ContentFormat::Json, content.clone(), Surface::Mcp);
        let data = output.structured.clone().unwrap_or_default();
        assert_eq!(data["format"], "json");
        assert_eq!(data["data"], facts);
        assert_eq!(data["chars"], content.content.chars().count());
        check_data(&CONTENT, &output);

        let cut = content_output(
            ContentFormat::Json,
            ContentResult {
                content: content.content.chars().take(40).collect(),
                truncated: true,
            },
            Surface::Mcp,
        );
        assert_eq!(
            cut.structured,
            Some(json!({"format": "json", "chars": 40, "truncated": true}))
        );
        check_data(&CONTENT, &cut);

        let markdown = content_output(
            ContentFormat::Markdown,
            ContentResult {
                content: "# Sign up\n\nCreate your account.".into(),
                truncated: false,
            },
            Surface::Mcp,
        );
        assert_eq!(
            markdown.structured,
            Some(json!({"format": "markdown", "chars": 31, "truncated": false}))
        );
        check_data(&CONTENT, &markdown);
        let empty = content_output(
            ContentFormat::Txt,
            ContentResult {
                content: String::new(),
                truncated: false,
            },
            Surface::Mcp,
        );
        check_data(&CONTENT, &empty);
    }
}
