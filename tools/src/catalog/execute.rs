//! `browser_execute`: JavaScript in the page, its value as JSON.

use std::time::Duration;

use browser_provider::BrowserError;
use browser_provider::Result;
use browser_provider::page::execute::ExecuteResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Call, CommandLine, Effect, Offered, Stdin, ToolSpec, arguments_of};
use crate::call::{ErrorReport, ToolOutput};
use crate::render;

/// `browser_execute`.
pub const EXECUTE: ToolSpec = ToolSpec {
    name: "browser_execute",
    title: "Run JavaScript",
    command: Some("execute"),
    description: "Run JavaScript in the page: an expression or a function body; args arrive as arguments[0..n]; \
        promises are awaited; the value returns as JSON. Prefer browser_act for interaction.",
    effect: Effect::ACTS,
    offered: Offered::Execute,
    own_timeout_ms: Some(EXECUTE_DEFAULT_MS),
    doing: "running the script",
    tab: true,
    summary: &["tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ExecuteArgs>,
    output: Some(super::schema::output_schema::<ExecuteOutput>),
    run: |call| Box::pin(browser_execute(call)),
};

/// `browser_execute`; on the command line `execute SCRIPT|- [--arg JSON]…`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecuteArgs {
    /// JavaScript: an expression (`document.title`) or a function body with `return`.
    /// Promises are awaited. Prefer `browser_act` for interaction.
    #[arg(help = "An expression or a function body with `return`; `-` reads standard input")]
    pub script: String,
    /// Values passed to the script as `arguments[0..n]` (any JSON: strings, numbers, booleans,
    /// objects, arrays).
    #[serde(default)]
    #[schemars(extend("items" = {"anyOf": [
        {"type": "string"}, {"type": "number"}, {"type": "boolean"},
        {"type": "object"}, {"type": "array"}
    ]}))]
    #[arg(
        long = "arg",
        value_name = "JSON",
        value_parser = parse_json,
        help = "A JSON value passed as arguments[0], arguments[1], … (repeatable)"
    )]
    pub args: Vec<Value>,
    /// Give up after this many milliseconds (default 30000).
    #[schemars(range(min = 1))]
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl CommandLine for ExecuteArgs {
    /// The script `-` is read from standard input.
    fn to_call(&self, stdin: Stdin<'_>) -> Result<(&'static str, Value)> {
        let mut args = self.clone();
        if args.script == "-" {
            args.script = stdin().map_err(|e| {
                BrowserError::invalid("script", format!("cannot read standard input: {e}"))
            })?;
        }
        Ok((EXECUTE.name, arguments_of(&args)))
    }
}

async fn browser_execute(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: ExecuteArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let timeout = Some(Duration::from_millis(
        args.timeout_ms.unwrap_or(EXECUTE_DEFAULT_MS),
    ));
    let result = browser
        .execute(session, &args.script, args.args, timeout, cancel)
        .await?;
    Ok(execute_output(result))
}

/// What `browser_execute` answers, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteOutput {
    /// The value as JSON (absent for undefined and null; a string when truncated or
    /// unserializable).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("anyOf" = [
        {"type": "string"}, {"type": "number"}, {"type": "boolean"},
        {"type": "object"}, {"type": "array"}
    ]))]
    pub value: Option<Value>,
    /// Cut at the size limit: value holds the start of its JSON text.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Not JSON (a DOM node, function or cycle): value describes it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unserializable: bool,
}

/// The code of a script that threw: the call failed, not the tool.
const SCRIPT_THREW: &str = "SCRIPT_THREW";

/// The text and data of a `browser_execute` answer.
fn execute_output(result: ExecuteResult) -> ToolOutput {
    match result {
        ExecuteResult::Value {
            value,
            truncated,
            unserializable,
        } => {
            let json = serde_json::to_string_pretty(&value).unwrap_or_default();
            let mut text = format!("Result:\n{}", render::fenced("value", &json));
            if truncated {
                text.push_str("\nThe value was cut at the size limit; return less data.");
            }
            if unserializable {
                text.push_str("\nThe value is not JSON (a DOM node, a function or a cycle); this is its description.");
            }
            ToolOutput::text(text).with_structured(&ExecuteOutput {
                // Absent stands for null, as in every schema of ours.
                value: Some(value).filter(|v| !v.is_null()),
                truncated,
                unserializable,
            })
        }
        ExecuteResult::Exception {
            message,
            line,
            column,
            ..
        } => {
            let (place, at) = match (line, column) {
                (Some(line), Some(column)) => (
                    format!(" at line {line}, column {column}"),
                    format!(" (line {line}, column {column})"),
                ),
                (Some(line), None) => (format!(" at line {line}"), format!(" (line {line})")),
                _ => (String::new(), String::new()),
            };
            // The code says that the script threw; the message, what and where.
            let report = ErrorReport {
                code: SCRIPT_THREW.to_owned(),
                message: format!("{message}{at}"),
                hint: "fix the script and run it again".to_owned(),
            };
            ToolOutput {
                text: format!(
                    "The script threw{place}:\n{}",
                    render::fenced("exception", &message)
                ),
                image: None,
                is_error: true,
                code: Some(SCRIPT_THREW),
                headline: None,
                structured: Some(json!({ "error": report })),
            }
        }
    }
}

/// A `--arg` value: JSON.
fn parse_json(text: &str) -> std::result::Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("not JSON ({e}); quote strings like '\"text\"'"))
}

/// How long `browser_execute` lets a script run unless told otherwise.
pub const EXECUTE_DEFAULT_MS: u64 = 30_000;

#[cfg(test)]
mod tests {
    use super::super::check_data;
    use super::*;

    #[test]
    fn a_value_is_data_no_larger_than_its_text() {
        let output = execute_output(ExecuteResult::Value {
            value: json!({"title": "Sign up", "fields": ["email", "password"], "count": 2}),
            truncated: false,
            unserializable: false,
        });
        assert!(!output.is_error);
        assert_eq!(
            output.structured,
            Some(
                json!({"value": {"title": "Sign up", "fields": ["email", "password"], "count": 2}})
            )
        );
        check_data(&EXECUTE, &output);
        for value in [json!(42), json!(null), json!("a"), json!([1, {"a": null}])] {
            let output = execute_output(ExecuteResult::Value {
                value: value.clone(),
                truncated: false,
                unserializable: false,
            });
            let data = output.structured.clone().unwrap_or_default();
            assert_eq!(data.get("value").unwrap_or(&Value::Null), &value);
            check_data(&EXECUTE, &output);
        }
        let cut = execute_output(ExecuteResult::Value {
            value: json!("[{\"id\":1,\"name\":\"first\"},{\"id\":2,"),
            truncated: true,
            unserializable: false,
        });
        assert!(cut.text.contains("cut at the size limit"), "{}", cut.text);
        assert_eq!(
            cut.structured.as_ref().map(|d| &d["truncated"]),
            Some(&json!(true))
        );
        check_data(&EXECUTE, &cut);
        let node = execute_output(ExecuteResult::Value {
            value: json!("HTMLButtonElement"),
            truncated: false,
            unserializable: true,
        });
        assert_eq!(
            node.structured,
            Some(json!({"value": "HTMLButtonElement", "unserializable": true}))
        );
        check_data(&EXECUTE, &node);
    }

    #[test]
    fn a_script_that_throws_is_an_error_with_its_code() {
        let output = execute_output(ExecuteResult::Exception {
            message: "TypeError: Cannot read properties of null (reading 'click')".into(),
            line: Some(1),
            column: Some(31),
            stack: None,
        });
        assert!(output.is_error);
        assert_eq!(output.code, Some("SCRIPT_THREW"));
        assert!(
            output
                .text
                .starts_with("The script threw at line 1, column 31:\n"),
            "{}",
            output.text
        );
        let data = output.structured.clone().unwrap_or_default();
        assert_eq!(data["error"]["code"], "SCRIPT_THREW");
        assert_eq!(
            data["error"]["message"],
            "TypeError: Cannot read properties of null (reading 'click') (line 1, column 31)"
        );
        assert!(
            data["error"]["hint"]
                .as_str()
                .is_some_and(|h| !h.is_empty())
        );
        check_data(&EXECUTE, &output);
    }
}
