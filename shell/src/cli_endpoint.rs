//! `/cli/call`: the command line's door into a running instance.
//!
//! Every `browser-shell open|snapshot|act|…` process posts one tool call
//! here. All of them share one agent session, so tabs and refs persist
//! from one command to the next, exactly as for an MCP agent; the session
//! shows in the browser column like any other. Callers add authentication.

use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Router, extract::rejection::JsonRejection};
use browser_tools::agent::Agent;
use browser_tools::call::ToolOutput;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One tool call from the command line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliCall {
    /// The tool, such as `browser_open`.
    pub tool: String,
    /// Its arguments, as for MCP.
    #[serde(default)]
    pub arguments: Value,
}

/// The tool's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CliReply {
    /// Text, as a model would read it.
    pub text: String,
    /// A screenshot, base64.
    pub image: Option<CliImage>,
    /// Whether the call failed.
    pub is_error: bool,
    /// The error's stable code.
    pub code: Option<String>,
    /// The error as data (code, message, hint), so the command line writes
    /// it in its own format.
    #[serde(default)]
    pub error: Option<CliError>,
}

/// A failed call's error, as the tool reported it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CliError {
    /// The stable code, such as `STALE_REF`.
    pub code: String,
    /// What happened.
    pub message: String,
    /// The one thing to do about it.
    pub hint: String,
}

/// An image in a reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CliImage {
    /// Base64 data.
    pub data: String,
    /// `image/png` or `image/jpeg`.
    pub mime_type: String,
}

impl From<ToolOutput> for CliReply {
    fn from(output: ToolOutput) -> Self {
        Self {
            text: output.text,
            image: output.image.map(|(data, mime)| CliImage {
                data,
                mime_type: mime.to_owned(),
            }),
            is_error: output.is_error,
            code: output.code.map(str::to_owned),
            error: output
                .structured
                .and_then(|data| serde_json::from_value(data.get("error")?.clone()).ok()),
        }
    }
}

/// The route, serving `agent` (the command line's shared session).
pub fn router(agent: Agent) -> Router {
    Router::new()
        .route("/cli/call", post(call))
        .with_state(agent)
}

async fn call(State(agent): State<Agent>, body: Result<Json<CliCall>, JsonRejection>) -> Response {
    let Json(request) = match body {
        Ok(body) => body,
        Err(rejection) => {
            return (StatusCode::BAD_REQUEST, rejection.body_text()).into_response();
        }
    };
    // A client that goes away (Ctrl+C) drops this future: cancel its work.
    let cancel = CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let output = agent.call(&request.tool, request.arguments, &cancel).await;
    Json(CliReply::from(output)).into_response()
}
