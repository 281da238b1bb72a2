//! `browser_open` and `browser_navigate`: going to a page, and the
//! snapshot of where it ended up.

use browser_provider::browser::NavigationRequest;
use browser_provider::page::navigate::NavigationOutcome;
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserError, Result, SessionId, TabHandle};
use clap::ValueEnum;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Call, CommandLine, Effect, Offered, Stdin, ToolArgs, ToolSpec, arguments_of};
use crate::call::ToolOutput;
use crate::catalog::snapshot::SNAPSHOT;
use crate::render;
use crate::words::Surface;

/// `browser_open`.
pub const OPEN: ToolSpec = ToolSpec {
    name: "browser_open",
    title: "Open a page",
    command: Some("open URL"),
    description: "Open an http(s) URL in the active tab (or a new tab with newTab) and return a snapshot with element refs.",
    effect: Effect::BROWSES,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "loading the page",
    tab: false,
    summary: &["url"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<OpenArgs>,
    output: None,
    run: |call| Box::pin(browser_open(call)),
};

/// `browser_navigate`.
pub const NAVIGATE: ToolSpec = ToolSpec {
    name: "browser_navigate",
    title: "Back, forward or reload",
    command: Some("navigate"),
    description: "Go to a URL, or back, forward or reload, and return a snapshot.",
    effect: Effect::BROWSES,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "loading the page",
    tab: true,
    summary: &["action", "url", "tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<NavigateArgs>,
    output: None,
    run: |call| Box::pin(browser_navigate(call)),
};

/// `browser_open`; on the command line `open URL [--new-tab] [--keep]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OpenArgs {
    /// The http(s) URL to open.
    pub url: String,
    /// Open in a new tab instead of the active one.
    #[serde(default)]
    #[arg(long)]
    pub new_tab: bool,
    /// Leave this tab open for the person when your session ends (a deliverable).
    #[serde(default)]
    #[arg(long)]
    pub keep: bool,
}

impl ToolArgs for OpenArgs {
    const TOOL: &'static ToolSpec = &OPEN;
}

/// History moves for `browser_navigate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, ValueEnum)]
#[serde(rename_all = "camelCase")]
pub enum HistoryMove {
    /// One page back.
    Back,
    /// One page forward.
    Forward,
    /// Reload the page.
    Reload,
}

/// `browser_navigate`; on the command line `navigate URL|back|forward|reload`
/// (see [`NavigateCommand`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NavigateArgs {
    /// An http(s) URL to go to (give this or `action`).
    #[arg(skip)]
    pub url: Option<String>,
    /// "back", "forward" or "reload" (give this or `url`).
    #[arg(skip)]
    pub action: Option<HistoryMove>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

/// `browser-shell navigate …`: one word, a URL or a history move.
#[derive(Debug, Clone, clap::Args)]
pub struct NavigateCommand {
    /// A URL, or one of: back, forward, reload.
    pub target: String,
    /// The rest of the call.
    #[command(flatten)]
    pub args: NavigateArgs,
}

impl CommandLine for NavigateCommand {
    fn to_call(&self, _: Stdin<'_>) -> Result<(&'static str, Value)> {
        let mut args = self.args.clone();
        match HistoryMove::from_str(&self.target, false) {
            Ok(action) => args.action = Some(action),
            Err(_) => args.url = Some(self.target.clone()),
        }
        Ok((NAVIGATE.name, arguments_of(&args)))
    }
}

async fn browser_open(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: OpenArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let surface = call.settings.surface;
    let deadline = navigation_deadline(browser);
    let (tab, outcome) = browser
        .open(session, &args.url, args.new_tab, cancel)
        .await?;
    if args.keep {
        browser.keep_tab(session, &tab)?;
    }
    let page = page_after(browser, session, &outcome, deadline, cancel, surface).await?;
    Ok(ToolOutput::text(format!(
        "Opened {} in tab {tab} ({}).{}\n{page}",
        outcome.url,
        render::load_state(&outcome),
        render::dialogs_seen(&outcome),
    ))
    .with_headline(render::navigation_headline(&outcome)))
}

async fn browser_navigate(mut call: Call<'_>) -> Result<ToolOutput> {
    let deadline = navigation_deadline(call.browser);
    let args: NavigateArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    let surface = call.settings.surface;
    let request = match (&args.url, args.action) {
        (Some(url), None) => NavigationRequest::Url(url),
        (None, Some(HistoryMove::Back)) => NavigationRequest::Back,
        (None, Some(HistoryMove::Forward)) => NavigationRequest::Forward,
        (None, Some(HistoryMove::Reload)) => NavigationRequest::Reload,
        _ => {
            return Err(BrowserError::invalid(
                "url",
                "give either url or action (back, forward, reload)",
            ));
        }
    };
    let outcome = browser.navigate(session, request, cancel).await?;
    let page = page_after(browser, session, &outcome, deadline, cancel, surface).await?;
    Ok(ToolOutput::text(format!(
        "Now at {} ({}).{}\n{page}",
        outcome.url,
        render::load_state(&outcome),
        render::dialogs_seen(&outcome),
    ))
    .with_headline(render::navigation_headline(&outcome)))
}

/// When a navigation tool call must have ended: the navigation's bound
/// (`navigationTimeoutMs`) from the start of the call. The navigation
/// keeps it by itself; the snapshot that follows gets what it left, so
/// the call as a whole keeps the bound it states.
fn navigation_deadline(browser: &Browser) -> tokio::time::Instant {
    tokio::time::Instant::now() + browser.config().navigation_timeout
}

/// The snapshot that follows a navigation, as text, taken within what is
/// left of the navigation's bound (`deadline`). A page whose main thread
/// the navigation found busy (a script that loops, dialogs in a loop) is
/// not asked again: the result says so at once. A page that did not finish
/// loading, or that left no time, gets a snapshot only if one fits.
async fn page_after(
    browser: &Browser,
    session: &SessionId,
    outcome: &NavigationOutcome,
    deadline: tokio::time::Instant,
    cancel: &CancellationToken,
    surface: Surface,
) -> Result<String> {
    let tab = browser.active_tab(session)?;
    if outcome.unresponsive {
        return Ok(busy_page(&tab, surface));
    }
    let snapshot = browser.snapshot(session, &Scope::Page, cancel);
    match tokio::time::timeout_at(deadline, snapshot).await {
        Ok(snapshot) => Ok(render::snapshot(tab.as_str(), &snapshot?)),
        Err(_) if outcome.loaded => {
            tracing::debug!(%tab, "the navigation left no time for its snapshot");
            Ok(format!(
                "Tab {tab}: the navigation used its bound; no snapshot now. Take one with {}.",
                surface.tool(&SNAPSHOT, "")
            ))
        }
        Err(_) => Ok(busy_page(&tab, surface)),
    }
}

/// What a navigation's result says instead of a snapshot when the page's
/// main thread does not answer.
fn busy_page(tab: &TabHandle, surface: Surface) -> String {
    format!(
        "Tab {tab}: the page's main thread is busy (a script that does not return?); \
         no snapshot now. Try {} later, or navigate away.",
        surface.tool(&SNAPSHOT, "")
    )
}
