//! `browser_snapshot`: the page as a tree with refs.

use browser_provider::snapshot::Scope;
use browser_provider::{BrowserError, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, Effect, Offered, ToolArgs, ToolSpec, ref_arg};
use crate::call::ToolOutput;
use crate::render;

/// `browser_snapshot`.
pub const SNAPSHOT: ToolSpec = ToolSpec {
    name: "browser_snapshot",
    title: "Page snapshot",
    command: Some("snapshot"),
    description: "Return the page as a compact tree: role, \"name\", states, [ref=eN] on every actionable element. \
        Use the refs with browser_act. Scope with selector or ref on big pages.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "reading the page",
    tab: true,
    summary: &["ref", "tab", "selector"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<SnapshotArgs>,
    output: None,
    run: |call| Box::pin(browser_snapshot(call)),
};

/// `browser_snapshot`; on the command line `snapshot [--ref REF | --selector CSS]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotArgs {
    /// Only the subtree of this ref (such as "e12").
    #[serde(rename = "ref")]
    #[arg(long = "ref", value_name = "REF", conflicts_with = "selector")]
    pub reference: Option<String>,
    /// Only the subtree of the first element matching this CSS selector.
    #[arg(long)]
    pub selector: Option<String>,
    /// The tab to use (such as "t2"); default: the active tab. It becomes active.
    #[arg(long)]
    pub tab: Option<String>,
}

impl ToolArgs for SnapshotArgs {
    const TOOL: &'static ToolSpec = &SNAPSHOT;
}

async fn browser_snapshot(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: SnapshotArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let scope = match (args.reference, args.selector) {
        (Some(_), Some(_)) => {
            return Err(BrowserError::invalid(
                "ref",
                "give ref or selector, not both",
            ));
        }
        (Some(reference), None) => Scope::Ref(ref_arg("ref", &reference)?),
        (None, Some(selector)) => Scope::Selector(selector),
        (None, None) => Scope::Page,
    };
    let snapshot = browser.snapshot(session, &scope, cancel).await?;
    let tab = browser.active_tab(session)?;
    Ok(ToolOutput::text(render::snapshot(tab.as_str(), &snapshot)))
}
