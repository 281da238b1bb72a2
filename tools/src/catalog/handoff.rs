//! `browser_handoff`: asking the person watching to do something, and
//! what changed while they did.

use std::time::Duration;

use browser_provider::{Result, TabHandle};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Call, Effect, Offered, ToolSpec};
use crate::call::ToolOutput;
use crate::render;

/// `browser_handoff`.
pub const HANDOFF: ToolSpec = ToolSpec {
    name: "browser_handoff",
    title: "Ask the person",
    command: None,
    description: "Ask the person watching to do something you cannot (sign in, solve a CAPTCHA, confirm a payment). \
        Shows your reason and gives them control; waits until they return it, then reports what changed \
        (URL, tabs, whether cookies changed) with a fresh snapshot.",
    effect: Effect::ASKS,
    offered: Offered::Always,
    own_timeout_ms: Some(HANDOFF_DEFAULT_MS),
    doing: "waiting for the person",
    tab: false,
    summary: &["reason"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<HandoffArgs>,
    output: None,
    run: |call| Box::pin(browser_handoff(call)),
};

/// `browser_handoff`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HandoffArgs {
    /// What the person should do, in a sentence (such as "Please sign in to your bank").
    pub reason: String,
    /// How long to wait for the person, in milliseconds (default 600000).
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

async fn browser_handoff(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: HandoffArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let timeout = Duration::from_millis(args.timeout_ms.unwrap_or(HANDOFF_DEFAULT_MS).max(1));
    let report = browser
        .handoff(session, &args.reason, timeout, cancel)
        .await?;
    let tab = browser.active_tab(session)?;
    let mut text = String::from("The person returned control.");
    if report.url_after != report.url_before {
        text.push_str(&format!(
            " The page moved from {} to {}.",
            report.url_before, report.url_after
        ));
    }
    let list = |tabs: &[TabHandle]| {
        tabs.iter()
            .map(TabHandle::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !report.tabs_opened.is_empty() {
        text.push_str(&format!(" Tabs opened: {}.", list(&report.tabs_opened)));
    }
    if !report.tabs_closed.is_empty() {
        text.push_str(&format!(" Tabs closed: {}.", list(&report.tabs_closed)));
    }
    text.push_str(match report.cookies_changed {
        Some(true) => " The site's cookies changed (a sign-in may have happened).",
        Some(false) => " The site's cookies did not change.",
        None => "",
    });
    text.push('\n');
    text.push_str(&render::snapshot(tab.as_str(), &report.snapshot));
    Ok(ToolOutput::text(text))
}

/// How long `browser_handoff` waits for the person unless told otherwise.
pub const HANDOFF_DEFAULT_MS: u64 = 600_000;
