//! Running one `browser_*` tool call: find the tool, run it on the
//! session, and turn the result (or the error) into model text, with the
//! notices the session is owed in front.

use browser_provider::{Browser, BrowserError, SessionId};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Call};
use crate::render;
use crate::secrets::Secrets;
use crate::words::Surface;

/// What a tool call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the model.
    pub text: String,
    /// An image (base64 data and MIME type), for screenshots.
    pub image: Option<(String, &'static str)>,
    /// True when the call failed; `text` then starts with the error code.
    pub is_error: bool,
    /// The error's stable code, when the call failed with one.
    pub code: Option<&'static str>,
    /// What came of the call in a few words, for people watching
    /// ("navigated", "+2 ~1 −0", "new tab t3"); `None`: "done", or the
    /// error's code.
    pub headline: Option<String>,
    /// The answer as data, for clients that read it instead of the text
    /// (MCP `structuredContent`, shaped as the tool's output schema says):
    /// for the tools whose answers are data, and for every error
    /// (`{"error": {"code", "message", "hint"}}`).
    pub structured: Option<Value>,
}

impl ToolOutput {
    pub(crate) fn text(text: String) -> Self {
        Self {
            text,
            image: None,
            is_error: false,
            code: None,
            headline: None,
            structured: None,
        }
    }

    /// This output, with its answer as data too (see [`Self::structured`]).
    pub(crate) fn with_structured<T: serde::Serialize>(mut self, data: &T) -> Self {
        self.structured = serde_json::to_value(data).ok();
        self
    }

    /// This output, with what came of it in a few words for people watching.
    pub(crate) fn with_headline(mut self, headline: String) -> Self {
        self.headline = Some(headline);
        self
    }

    /// A failed call, carrying the error's code and hint, for a model.
    pub fn error(error: &BrowserError) -> Self {
        Self::error_for(error, Surface::Mcp)
    }

    /// A failed call, carrying the error's code and the hint in the
    /// words of `surface`.
    pub fn error_for(error: &BrowserError, surface: Surface) -> Self {
        let report = ErrorReport::of(error, surface);
        Self {
            text: render::error(&report),
            image: None,
            is_error: true,
            code: Some(error.code()),
            headline: None,
            structured: Some(serde_json::json!({ "error": report })),
        }
    }
}

/// An error as data: its stable code, what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorReport {
    /// Stable code, such as STALE_REF.
    pub code: String,
    /// What happened.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl ErrorReport {
    /// The report of `error`, its hint in the words of `surface`.
    pub fn of(error: &BrowserError, surface: Surface) -> Self {
        Self {
            code: error.code().to_owned(),
            message: error.to_string(),
            hint: surface.hint(error).into_owned(),
        }
    }
}

/// Settings that shape tool results.
#[derive(Debug, Clone, Default)]
pub struct ToolSettings {
    /// Also save screenshots as files here.
    pub output_dir: Option<std::path::PathBuf>,
    /// Secrets `browser_act` may type by name.
    pub secrets: Secrets,
    /// Who reads the answers: their words for tools and arguments.
    pub surface: Surface,
}

/// Runs tool `name` with `arguments` for `session`. Never fails: errors
/// become outputs flagged as errors so the model can read and recover.
pub async fn call_tool(
    browser: &Browser,
    session: &SessionId,
    name: &str,
    arguments: Value,
    settings: &ToolSettings,
    cancel: &CancellationToken,
) -> ToolOutput {
    let control_notice = browser.control_returned_since_last_call(session).then_some(
        "Note: a person had control of the browser since your last call; the page may have changed. \
         Take a snapshot before using earlier refs.\n",
    );
    let result = match catalog::find(name) {
        Some(spec) => {
            (spec.run)(Call {
                spec,
                browser,
                session,
                arguments,
                settings,
                cancel,
            })
            .await
        }
        None => Err(BrowserError::invalid(
            "name",
            format!("there is no tool {name:?}"),
        )),
    };
    let mut output = match result {
        Ok(output) => output,
        Err(error) => ToolOutput::error_for(&error, settings.surface),
    };
    // The data is a result too: a secret's value stays hidden in it (the
    // agent hides it in the text).
    if let Some(data) = output.structured.as_mut() {
        settings.secrets.redact_data(data);
    }
    // Taken after the call: a restart it waited for is news to the agent.
    let mut notices = String::new();
    for notice in browser.take_notices(session) {
        notices.push_str(&notice);
        notices.push('\n');
    }
    if let Some(notice) = control_notice {
        notices.push_str(notice);
    }
    output.text.insert_str(0, &notices);
    output
}
