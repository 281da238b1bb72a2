//! Running an agent's JavaScript in the page.
//!
//! A script is either an expression (`document.title`) or a function body
//! (`const a = 1; return a + arguments[0]`); we tell them apart by compiling
//! the expression form first, without running anything. Arguments arrive as
//! `arguments[0..n]`, promises are awaited, the value comes back as JSON
//! (capped), and an exception comes back as data, not as an error.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{Budget, Page};
use crate::cdp::protocol::{ExceptionDetails, RuntimeCompileScript, RuntimeEvaluate};
use crate::error::{BrowserError, Result};
use crate::host::ViewHostExt;

/// Page-side wrapper that applies the script and serializes its value.
const EXECUTE_JS: &str = include_str!("../js/execute.js");

/// Largest JSON arguments payload accepted.
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ExecuteRequest {
    /// An expression or a function body.
    pub script: String,
    /// Passed as `arguments[0..n]`.
    pub args: Vec<Value>,
    /// Largest result, in bytes of JSON; longer results are cut and flagged.
    pub max_result_bytes: usize,
}

/// How a script ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecuteResult {
    /// It returned (or its promise resolved to) a value.
    Value {
        /// The value as JSON; `Null` for `undefined`. When `truncated`, a
        /// string holding the start of the JSON text.
        value: Value,
        /// The JSON text was longer than the cap.
        truncated: bool,
        /// Set when the value could not be represented as JSON (a DOM node,
        /// a function, a cycle); `value` then holds a description.
        unserializable: bool,
    },
    /// It threw (or its promise rejected).
    Exception {
        /// The exception's message (first line of the error description).
        message: String,
        /// 1-based line in the agent's script, when known.
        line: Option<u32>,
        /// 1-based column, when known.
        column: Option<u32>,
        /// The full description, usually with a stack trace.
        stack: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Serialized {
    Undefined,
    Json { json: String, truncated: bool },
    Unserializable { description: String },
}

/// Runs the agent's script within `budget`.
///
/// # Errors
/// `INVALID_ARGUMENT` for an empty script or oversized arguments,
/// `TIMEOUT` when it runs past the budget (the script is terminated),
/// `ABORTED` on cancel (likewise).
pub async fn execute(
    page: &Page,
    request: &ExecuteRequest,
    budget: &Budget,
) -> Result<ExecuteResult> {
    if request.script.trim().is_empty() {
        return Err(BrowserError::invalid("script", "must not be empty"));
    }
    let args = serde_json::to_string(&request.args)
        .map_err(|e| BrowserError::invalid("args", e.to_string()))?;
    if args.len() > MAX_ARGS_BYTES {
        return Err(BrowserError::invalid(
            "args",
            format!(
                "{} bytes of JSON exceed the {MAX_ARGS_BYTES}-byte limit",
                args.len()
            ),
        ));
    }
    // The script starts on a line of its own so that exception line numbers
    // map back to the agent's own lines (see `exception_result`).
    let as_expression = format!("(async function() {{ return (\n{}\n); }})", request.script);
    let function = if compiles(page, budget, &as_expression).await? {
        as_expression
    } else {
        format!("(async function() {{\n{}\n}})", request.script)
    };
    let prefix = format!("({EXECUTE_JS})(");
    let lines_before_script = prefix.matches('\n').count() + 1;
    let expression = format!(
        "{prefix}{function}, {args}, {})",
        request.max_result_bytes.max(64)
    );

    let evaluated = run_script(page, budget, expression).await?;
    if let Some(details) = evaluated.exception_details {
        return Ok(exception_result(details, lines_before_script));
    }
    let serialized: Serialized = evaluated
        .result
        .value
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or_else(|| BrowserError::ExecuteFailed {
            message: "the page returned an unexpected result shape".into(),
        })?;
    Ok(match serialized {
        Serialized::Undefined => ExecuteResult::Value {
            value: Value::Null,
            truncated: false,
            unserializable: false,
        },
        Serialized::Json { json, truncated } => ExecuteResult::Value {
            value: if truncated {
                Value::String(json)
            } else {
                serde_json::from_str(&json).unwrap_or(Value::String(json))
            },
            truncated,
            unserializable: false,
        },
        Serialized::Unserializable { description } => ExecuteResult::Value {
            value: Value::String(description),
            truncated: false,
            unserializable: true,
        },
    })
}

/// True when `source` compiles. A syntax error is an answer, not an error.
async fn compiles(page: &Page, budget: &Budget, source: &str) -> Result<bool> {
    let compiled = page
        .call(
            budget,
            &RuntimeCompileScript {
                expression: source.to_owned(),
                source_url: String::new(),
                persist_script: false,
            },
        )
        .await?;
    Ok(compiled.exception_details.is_none())
}

/// Evaluates `expression`, awaiting promises, and terminates the page's
/// script if the budget runs out or is cancelled first.
async fn run_script(
    page: &Page,
    budget: &Budget,
    expression: String,
) -> Result<crate::cdp::protocol::EvaluateResult> {
    let remaining = budget.remaining();
    let command = RuntimeEvaluate {
        expression,
        return_by_value: true,
        await_promise: true,
        user_gesture: true,
        // V8 terminates a synchronous runaway script by itself at this bound.
        timeout: Some(remaining.as_millis() as f64),
        context_id: None,
    };
    let outcome = budget
        .run(
            "execute",
            page.host()
                .call_within(page.view(), &command, remaining + Duration::from_secs(1)),
        )
        .await;
    if matches!(
        outcome,
        Err(BrowserError::Timeout { .. } | BrowserError::Aborted)
    ) {
        // Stop whatever still runs so the tab stays usable.
        page.terminate_scripts();
    }
    let evaluated = outcome?;
    // A script that V8 terminated at our bound reports an exception without details.
    if let Some(details) = &evaluated.exception_details
        && details.exception.is_none()
        && budget.remaining().is_zero()
    {
        return Err(budget.expired());
    }
    Ok(evaluated)
}

/// Evaluates one of our own helper expressions and returns its value.
/// An exception here means the page interfered (or a bug): `EXECUTE_FAILED`.
pub(crate) async fn evaluate_json(
    page: &Page,
    budget: &Budget,
    expression: String,
) -> Result<Value> {
    let evaluated = run_script(page, budget, expression).await?;
    if let Some(details) = evaluated.exception_details {
        return Err(BrowserError::ExecuteFailed {
            message: exception_message(&details),
        });
    }
    Ok(evaluated.result.value.unwrap_or(Value::Null))
}

/// Maps CDP's exception details to the agent's view: `lines_before_script`
/// lines of wrapper precede the agent's first line in the evaluated source.
fn exception_result(details: ExceptionDetails, lines_before_script: usize) -> ExecuteResult {
    let message = exception_message(&details);
    let stack = details.exception.and_then(|e| e.description);
    // The first stack frame is exact (1-based); CDP's own line number is not
    // for awaited rejections. Without a stack (syntax errors, thrown
    // primitives) fall back to CDP's 0-based position.
    let (line, column) = stack
        .as_deref()
        .and_then(first_frame_position)
        .unwrap_or((details.line_number + 1, details.column_number + 1));
    let line = usize::try_from(line)
        .ok()
        .and_then(|l| l.checked_sub(lines_before_script))
        .filter(|l| *l >= 1)
        .and_then(|l| u32::try_from(l).ok());
    let column = line.and_then(|_| u32::try_from(column).ok());
    ExecuteResult::Exception {
        message,
        line,
        column,
        stack,
    }
}

/// The 1-based `line:column` of the first `<anonymous>` frame of a V8 stack.
fn first_frame_position(stack: &str) -> Option<(i64, i64)> {
    let (_, rest) = stack.split_once("<anonymous>:")?;
    let mut numbers = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    let line = numbers.next()?.parse().ok()?;
    let column = numbers.next()?.parse().ok()?;
    Some((line, column))
}

/// The first line of the thrown error's description, or the thrown value.
fn exception_message(details: &ExceptionDetails) -> String {
    let thrown = details.exception.as_ref();
    thrown
        .and_then(|e| e.description.as_deref())
        .and_then(|d| d.lines().next())
        .map(str::to_owned)
        .or_else(|| thrown.and_then(|e| e.value.as_ref()).map(value_text))
        .unwrap_or_else(|| details.text.clone())
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_positions_are_read_from_the_first_frame() {
        let stack = "TypeError: x\n    at <anonymous>:29:7\n    at <anonymous>:5:26";
        assert_eq!(first_frame_position(stack), Some((29, 7)));
        assert_eq!(first_frame_position("Error: no frames"), None);
    }
}
