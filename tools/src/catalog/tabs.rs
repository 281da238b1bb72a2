//! The session's tabs: list, switch, claim one of the person's, close,
//! close them all.

use browser_provider::snapshot::Scope;
use browser_provider::{Result, TabHandle, TabInfo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::check_data;
use super::{Call, Effect, Offered, ToolArgs, ToolSpec};
use crate::call::ToolOutput;
use crate::catalog::navigation::OPEN;
use crate::render;
use crate::words::Surface;

/// `browser_reset`.
pub const RESET: ToolSpec = ToolSpec {
    name: "browser_reset",
    title: "Close every tab",
    command: Some("reset"),
    description: "Close every tab this session opened.",
    effect: Effect::CLOSES,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "closing the tabs",
    tab: false,
    summary: &[],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ResetArgs>,
    output: None,
    run: |call| Box::pin(browser_reset(call)),
};

/// `browser_list_tabs`.
pub const LIST_TABS: ToolSpec = ToolSpec {
    name: "browser_list_tabs",
    title: "List tabs",
    command: Some("tabs"),
    description: "List this session's tabs (t1, t2, …) with URL and title.",
    effect: Effect::READS,
    offered: Offered::TabTools,
    own_timeout_ms: None,
    doing: "listing the tabs",
    tab: false,
    summary: &[],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ListTabsArgs>,
    output: Some(super::schema::output_schema::<TabsOutput>),
    run: |call| Box::pin(browser_list_tabs(call)),
};

/// `browser_switch_tab`.
pub const SWITCH_TAB: ToolSpec = ToolSpec {
    name: "browser_switch_tab",
    title: "Switch tab",
    command: Some("tab TAB"),
    description: "Make a tab active (such as t2) and return its snapshot.",
    effect: Effect::SELECTS,
    offered: Offered::TabTools,
    own_timeout_ms: None,
    doing: "switching tabs",
    tab: false,
    summary: &["tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<TabArgs>,
    output: None,
    run: |call| Box::pin(browser_switch_tab(call)),
};

/// `browser_claim_tab`.
pub const CLAIM_TAB: ToolSpec = ToolSpec {
    name: "browser_claim_tab",
    title: "Take the person's tab",
    command: None,
    description: "Take over a tab the person opened (listed by browser_list_tabs): give its tab, url and title exactly \
        as listed; if the person changed it meanwhile, the claim fails. It returns to the person when you finish.",
    effect: Effect::SELECTS,
    offered: Offered::TabTools,
    own_timeout_ms: None,
    doing: "taking the person's tab",
    tab: false,
    summary: &["url", "tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ClaimTabArgs>,
    output: None,
    run: |call| Box::pin(browser_claim_tab(call)),
};

/// `browser_close_tab`.
pub const CLOSE_TAB: ToolSpec = ToolSpec {
    name: "browser_close_tab",
    title: "Close a tab",
    command: Some("close"),
    description: "Close one of this session's tabs (default: the active one).",
    effect: Effect::CLOSES,
    offered: Offered::TabTools,
    own_timeout_ms: None,
    doing: "closing the tab",
    tab: false,
    summary: &["tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<CloseTabArgs>,
    output: None,
    run: |call| Box::pin(browser_close_tab(call)),
};

/// `browser_reset`: no arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct ResetArgs {}

impl ToolArgs for ResetArgs {
    const TOOL: &'static ToolSpec = &RESET;
}

/// `browser_list_tabs`: no arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct ListTabsArgs {}

impl ToolArgs for ListTabsArgs {
    const TOOL: &'static ToolSpec = &LIST_TABS;
}

/// `browser_switch_tab`; on the command line `tab t2`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TabArgs {
    /// The tab handle from `browser_list_tabs`, such as "t2".
    pub tab: String,
}

impl ToolArgs for TabArgs {
    const TOOL: &'static ToolSpec = &SWITCH_TAB;
}

/// `browser_claim_tab` (no command of its own).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimTabArgs {
    /// The handle of a tab a person opened, from `browser_list_tabs` (such as "t3").
    pub tab: String,
    /// Its URL exactly as listed; if it changed, the claim fails.
    pub url: String,
    /// Its title exactly as listed; if it changed, the claim fails.
    pub title: String,
}

/// `browser_close_tab`; on the command line `close [t2]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseTabArgs {
    /// The tab handle from `browser_list_tabs`, such as "t2"; default: the active tab.
    pub tab: Option<String>,
}

impl ToolArgs for CloseTabArgs {
    const TOOL: &'static ToolSpec = &CLOSE_TAB;
}

async fn browser_reset(mut call: Call<'_>) -> Result<ToolOutput> {
    let _: ResetArgs = call.args().await?;
    let (browser, session) = (call.browser, call.session);
    browser.reset(session).await?;
    Ok(ToolOutput::text("Closed every tab of this session.".into()))
}

async fn browser_list_tabs(mut call: Call<'_>) -> Result<ToolOutput> {
    let _: ListTabsArgs = call.args().await?;
    let (browser, session) = (call.browser, call.session);
    let tabs = browser.list_tabs(session).await?;
    let unowned = browser.unowned_tabs().await?;
    Ok(list_tabs_output(&tabs, &unowned, call.settings.surface))
}

/// What `browser_list_tabs` answers, as data. A tab is `[tab, url,
/// title]`, what browser_claim_tab takes: the text says a tab in about as
/// few bytes as a JSON array can (`t2: url | title`), so a tab as an
/// object with its keys spelled out would make the data of five tabs
/// outweigh their text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TabsOutput {
    /// This session's active tab (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
    /// This session's tabs, each [tab, url, title] (the title is the page's words).
    pub tabs: Vec<[String; 3]>,
    /// The person's tabs, each [tab, url, title], for browser_claim_tab (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub person_tabs: Vec<[String; 3]>,
}

/// `tab` as data: `[tab, url, title]`.
fn tab_data(tab: &TabInfo) -> [String; 3] {
    [tab.handle.to_string(), tab.url.clone(), tab.title.clone()]
}

/// The text and data of a `browser_list_tabs` answer: the session's
/// `tabs` and the person's (`unowned`).
fn list_tabs_output(tabs: &[TabInfo], unowned: &[TabInfo], surface: Surface) -> ToolOutput {
    let mut text = if tabs.is_empty() {
        format!("No tabs. Open one with {}.", surface.tool(&OPEN, ""))
    } else {
        let lines: Vec<String> = tabs
            .iter()
            .map(|t| {
                let marker = if t.active { " (active)" } else { "" };
                format!("{}{marker}: {} | {}", t.handle, t.url, t.title)
            })
            .collect();
        format!("Tabs:\n{}", render::fenced("tabs", &lines.join("\n")))
    };
    if !unowned.is_empty() {
        let lines: Vec<String> = unowned
            .iter()
            .map(|t| format!("{}: {} | {}", t.handle, t.url, t.title))
            .collect();
        text.push_str(&format!(
            "\nThe person's tabs ({}):\n{}",
            match surface {
                Surface::Mcp => "take one with browser_claim_tab, giving its tab, url and title exactly as shown",
                Surface::CommandLine => "an agent may take one with browser_claim_tab; from the command line, work in your own tabs",
            },
            render::fenced("person-tabs", &lines.join("\n"))
        ));
    }
    let data = TabsOutput {
        active: tabs.iter().find(|t| t.active).map(|t| t.handle.to_string()),
        tabs: tabs.iter().map(tab_data).collect(),
        person_tabs: unowned.iter().map(tab_data).collect(),
    };
    ToolOutput::text(text).with_structured(&data)
}

async fn browser_switch_tab(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: TabArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let tab = TabHandle::parse(&args.tab)?;
    browser.switch_tab(session, &tab).await?;
    let snapshot = browser.snapshot(session, &Scope::Page, cancel).await?;
    Ok(ToolOutput::text(format!(
        "Switched to {tab}.\n{}",
        render::snapshot(tab.as_str(), &snapshot)
    )))
}

async fn browser_claim_tab(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: ClaimTabArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let tab = TabHandle::parse(&args.tab)?;
    browser
        .claim_tab(session, &tab, &args.url, &args.title)
        .await?;
    let snapshot = browser.snapshot(session, &Scope::Page, cancel).await?;
    Ok(ToolOutput::text(format!(
        "Claimed {tab}; it is your active tab and goes back to the person when your session ends.\n{}",
        render::snapshot(tab.as_str(), &snapshot)
    )))
}

async fn browser_close_tab(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: CloseTabArgs = call.args().await?;
    let (browser, session) = (call.browser, call.session);
    let tab = match args.tab {
        Some(tab) => TabHandle::parse(&tab)?,
        None => browser.active_tab(session)?,
    };
    browser.close_tab(session, &tab).await?;
    let now = browser
        .active_tab(session)
        .map(|t| format!(" The active tab is now {t}."))
        .unwrap_or_else(|_| " No tabs are left.".into());
    Ok(ToolOutput::text(format!("Closed {tab}.{now}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tab(handle: &str, url: &str, title: &str, active: bool) -> TabInfo {
        TabInfo {
            handle: TabHandle::parse(handle).unwrap_or_else(|e| panic!("{e}")),
            url: url.into(),
            title: title.into(),
            active,
        }
    }

    #[test]
    fn tabs_are_data_no_larger_than_their_text() {
        let tabs = [
            tab(
                "t1",
                "https://github.com/tokio-rs/mini-redis/blob/master/src/server.rs",
                "mini-redis/src/server.rs at master · tokio-rs/mini-redis",
                false,
            ),
            tab(
                "t3",
                "https://docs.rs/tokio/latest/tokio/sync/watch/index.html",
                "tokio::sync::watch - Rust",
                true,
            ),
        ];
        let person = [tab(
            "t2",
            "https://mail.example.com/inbox",
            "Inbox (3)",
            true,
        )];
        let output = list_tabs_output(&tabs, &person, Surface::Mcp);
        assert!(
            output.text.contains("t3 (active): https://docs.rs/"),
            "{}",
            output.text
        );
        let data = output.structured.clone().unwrap_or_default();
        assert_eq!(data["active"], "t3");
        assert_eq!(
            data["tabs"][1],
            json!([
                "t3",
                "https://docs.rs/tokio/latest/tokio/sync/watch/index.html",
                "tokio::sync::watch - Rust"
            ])
        );
        assert_eq!(
            data["personTabs"][0],
            json!(["t2", "https://mail.example.com/inbox", "Inbox (3)"])
        );
        check_data(&LIST_TABS, &output);

        // A dozen tabs (about the most the data stays under the text for:
        // a tab costs 5 bytes more as `["t2","url","title"],` than as
        // `t2: url | title` and a line break, against some 70 of fences).
        let many: Vec<TabInfo> = (1..=12)
            .map(|n| {
                tab(
                    &format!("t{n}"),
                    &format!("http://127.0.0.1:4173/species/owl-{n}.html"),
                    &format!("Owl {n}"),
                    n == 12,
                )
            })
            .collect();
        check_data(&LIST_TABS, &list_tabs_output(&many, &[], Surface::Mcp));

        let none = list_tabs_output(&[], &[], Surface::Mcp);
        assert_eq!(none.text, "No tabs. Open one with browser_open.");
        assert_eq!(none.structured, Some(json!({"tabs": []})));
        check_data(&LIST_TABS, &none);
    }
}
