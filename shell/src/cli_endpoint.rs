//! `/cli/call`: the command line's door into a running instance.
//!
//! Every `browser-shell open|snapshot|act|…` process posts one tool call
//! here. All of them share one agent session, so tabs and refs persist
//! from one command to the next, exactly as for an MCP agent; the session
//! shows in the browser column like any other. Callers add authentication.
//!
//! A call may narrow the instance's host policy for itself (a command's
//! `--block-host`/`--allow-host`): the session takes those lists for the
//! call and drops them after it. Such a call runs alone, so the lists
//! never reach another command's call.

use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Router, extract::rejection::JsonRejection};
use std::sync::Arc;

use browser_provider::policy::HostRules;
use browser_tools::agent::Agent;
use browser_tools::call::ToolOutput;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{OwnedRwLockWriteGuard, RwLock};
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
    /// Host lists that narrow the instance's policy for this call.
    #[serde(default, skip_serializing_if = "HostRules::is_empty")]
    pub hosts: HostRules,
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

/// The command line's shared session, and the turns its calls take.
#[derive(Clone)]
struct Door {
    agent: Agent,
    /// Calls share it; a call with host lists of its own takes it alone.
    turns: Arc<RwLock<()>>,
}

/// The route, serving `agent` (the command line's shared session).
pub fn router(agent: Agent) -> Router {
    Router::new()
        .route("/cli/call", post(call))
        .with_state(Door {
            agent,
            turns: Arc::new(RwLock::new(())),
        })
}

async fn call(State(door): State<Door>, body: Result<Json<CliCall>, JsonRejection>) -> Response {
    let Json(request) = match body {
        Ok(body) => body,
        Err(rejection) => {
            return (StatusCode::BAD_REQUEST, rejection.body_text()).into_response();
        }
    };
    // A client that goes away (Ctrl+C) drops this future: cancel its work.
    let cancel = CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let output = if request.hosts.is_empty() {
        let _turn = door.turns.read().await;
        door.agent
            .call(&request.tool, request.arguments, &cancel)
            .await
    } else {
        let turn = Arc::clone(&door.turns).write_owned().await;
        // Dropped however the call ends (a client gone drops this future),
        // it gives the session back its own policy before the next call.
        let _narrowed = Narrowed {
            agent: door.agent.clone(),
            turn: Some(turn),
        };
        match door.agent.set_host_rules(request.hosts).await {
            Ok(()) => {
                door.agent
                    .call(&request.tool, request.arguments, &cancel)
                    .await
            }
            Err(error) => ToolOutput::error(&error),
        }
    };
    Json(CliReply::from(output)).into_response()
}

/// The session's host lists for one call: when dropped, the lists go
/// (then the next call may run).
struct Narrowed {
    agent: Agent,
    turn: Option<OwnedRwLockWriteGuard<()>>,
}

impl Drop for Narrowed {
    fn drop(&mut self) {
        let agent = self.agent.clone();
        let turn = self.turn.take();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            if let Err(error) = agent.set_host_rules(HostRules::default()).await {
                tracing::debug!(%error, "could not drop a command's host lists");
            }
            drop(turn);
        });
    }
}
