//! `browser_snapshot`: the page as a tree with refs.

use browser_provider::snapshot::Scope;
use browser_provider::{BrowserError, Result};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, Effect, Offered, ToolSpec, parse, ref_arg, use_tab, without_nulls};
use crate::call::ToolOutput;
use crate::render;

/// `browser_snapshot`.
pub const SNAPSHOT: ToolSpec = ToolSpec {
    name: "browser_snapshot",
    title: "Page snapshot",
    description: "Return the page as a compact tree: role, \"name\", states, [ref=eN] on every actionable element. \
        Use the refs with browser_act. Scope with selector or ref on big pages.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "reading the page",
    schema: rmcp::handler::server::common::schema_for_type::<SnapshotArgs>,
    output: None,
    run: |call| Box::pin(browser_snapshot(call)),
};

/// `browser_snapshot`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotArgs {
    /// Only the subtree of this ref (such as "e12").
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Only the subtree of the first element matching this CSS selector.
    pub selector: Option<String>,
    /// The tab to use (such as "t2"); default: the active tab. It becomes active.
    pub tab: Option<String>,
}

async fn browser_snapshot(call: Call<'_>) -> Result<ToolOutput> {
    let Call {
        browser,
        session,
        arguments,
        cancel,
        ..
    } = call;
    let args: SnapshotArgs = parse(arguments)?;
    use_tab(browser, session, args.tab.as_deref()).await?;
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

/// `browser-shell snapshot …`: the words of a browser_snapshot call.
#[derive(Debug, Clone, clap::Args)]
pub struct SnapshotCommand {
    /// Only this ref's subtree.
    #[arg(long = "ref", value_name = "REF", conflicts_with = "selector")]
    pub reference: Option<String>,
    /// Only the first element matching this CSS selector.
    #[arg(long)]
    pub selector: Option<String>,
    /// The tab (such as t2); default: the active tab. It becomes active.
    #[arg(long)]
    pub tab: Option<String>,
}

impl SnapshotCommand {
    /// The `browser_snapshot` call these words stand for.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the word that does not fit.
    pub fn call(&self) -> Result<(&'static str, Value), BrowserError> {
        let Self {
            reference,
            selector,
            tab,
        } = self;
        Ok((
            SNAPSHOT.name,
            without_nulls(json!({ "ref": reference, "selector": selector, "tab": tab })),
        ))
    }
}
