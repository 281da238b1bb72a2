//! `browser_network`: requests read by cursor, or one response's body.

use browser_provider::BrowserError;
use browser_provider::page::network::{Body, NETWORK_CAP, NetworkFilter};
use browser_provider::{Browser, Result, SessionId};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Call, Effect, Offered, ToolSpec, parse, use_tab, without_nulls};
use crate::call::ToolOutput;
use crate::render;

/// `browser_network`.
pub const NETWORK: ToolSpec = ToolSpec {
    name: "browser_network",
    title: "Network requests",
    description: "Read the tab's requests (method, URL, status, type, MIME type, size, duration, why it failed), in \
        the order they ended. Filter with failed, url and type; pass the returned cursor as since next \
        time to get only what is new; headers: true adds headers (credentials redacted); body: <number> \
        shows one response's body.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "reading the network log",
    schema: rmcp::handler::server::common::schema_for_type::<NetworkArgs>,
    output: None,
    run: |call| Box::pin(browser_network(call)),
};

/// `browser_network`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkArgs {
    /// Only failed requests: network errors, blocked or canceled ones, and HTTP 4xx/5xx.
    pub failed: Option<bool>,
    /// Only requests whose URL contains this.
    pub url: Option<String>,
    /// Only this resource type: document, stylesheet, script, image, font, fetch, xhr, …
    #[serde(rename = "type")]
    pub resource_type: Option<String>,
    /// Only requests after this cursor (the "next cursor" of your last read): read only what is new.
    pub since: Option<u64>,
    /// At most this many requests (default 50).
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
    /// Include request and response headers (credentials and token-like values redacted).
    pub headers: Option<bool>,
    /// Show the response body of this request, by its number from a read (such as 7).
    pub body: Option<u64>,
    /// At most this many characters of body (default 20000).
    pub body_max_chars: Option<usize>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

async fn browser_network(call: Call<'_>) -> Result<ToolOutput> {
    let Call {
        browser,
        session,
        arguments,
        cancel,
        ..
    } = call;
    let args: NetworkArgs = parse(arguments)?;
    use_tab(browser, session, args.tab.as_deref()).await?;
    network(browser, session, &args, cancel).await
}

/// `browser_network`: one request's body, or the requests since a cursor.
async fn network(
    browser: &Browser,
    session: &SessionId,
    args: &NetworkArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput> {
    let tab = browser.active_tab(session)?;
    let with_headers = args.headers.unwrap_or(false);
    if let Some(seq) = args.body {
        let max_chars = args.body_max_chars.unwrap_or(20_000).max(1);
        let (entry, body) = browser
            .network_body(session, seq, max_chars, cancel)
            .await?;
        let mut text = format!(
            "Request {seq} of {tab}:\n{}",
            render::fenced("request", &render::request(&entry, with_headers))
        );
        match body {
            Body::Text {
                text: body,
                omitted_chars,
            } => {
                text.push_str(&format!(
                    "\nResponse body ({} characters",
                    body.chars().count()
                ));
                if omitted_chars > 0 {
                    text.push_str(&format!(
                        "; {omitted_chars} more left out, raise bodyMaxChars to see them"
                    ));
                }
                text.push_str("):\n");
                text.push_str(&render::fenced("body", &body));
            }
            Body::Binary { bytes } => {
                text.push_str(&format!(
                    "\nResponse body: {bytes} bytes of binary data, not shown."
                ));
            }
        }
        return Ok(ToolOutput::text(text));
    }
    let filter = NetworkFilter {
        failed_only: args.failed.unwrap_or(false),
        url_contains: args.url.clone(),
        resource_type: args.resource_type.clone(),
    };
    let limit = args.limit.unwrap_or(50).clamp(1, NETWORK_CAP);
    let read = browser.network(session, args.since.unwrap_or(0), &filter, limit)?;
    let mut text = format!(
        "Network of {tab}: {} request{} (next cursor: {}; pass it as since to read only what is new).",
        read.entries.len(),
        if read.entries.len() == 1 { "" } else { "s" },
        read.cursor
    );
    if read.in_flight > 0 {
        text.push_str(&format!(
            " {} still in flight (listed once they end).",
            read.in_flight
        ));
    }
    if read.dropped > 0 {
        text.push_str(&format!(
            " {} earlier requests were dropped (a tab keeps the last {NETWORK_CAP}).",
            read.dropped
        ));
    }
    if !read.entries.is_empty() {
        let lines: Vec<String> = read
            .entries
            .iter()
            .map(|entry| render::request(entry, with_headers))
            .collect();
        text.push('\n');
        text.push_str(&render::fenced("network", &lines.join("\n")));
        text.push_str("\nAsk for a body with body: <number>.");
    }
    Ok(ToolOutput::text(text))
}

/// `browser-shell network …`: the words of a browser_network call.
#[derive(Debug, Clone, clap::Args)]
pub struct NetworkCommand {
    /// Only failed requests (network errors, HTTP 4xx/5xx).
    #[arg(long)]
    pub failed: bool,
    /// Only URLs containing this.
    #[arg(long)]
    pub url: Option<String>,
    /// Only this resource type: document, stylesheet, script, image, fetch, xhr, …
    #[arg(long = "type", value_name = "TYPE")]
    pub resource_type: Option<String>,
    /// Only requests after this cursor (printed by the last read).
    #[arg(long, value_name = "CURSOR")]
    pub since: Option<u64>,
    /// At most this many requests (default 50).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Include headers (credentials redacted).
    #[arg(long)]
    pub headers: bool,
    /// Print the response body of this request (its number in a listing).
    #[arg(long, value_name = "NUMBER")]
    pub body: Option<u64>,
    /// The tab (such as t2); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl NetworkCommand {
    /// The `browser_network` call these words stand for.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the word that does not fit.
    pub fn call(&self) -> Result<(&'static str, Value), BrowserError> {
        let Self {
            failed,
            url,
            resource_type,
            since,
            limit,
            headers,
            body,
            tab,
        } = self;
        Ok((
            NETWORK.name,
            without_nulls(json!({
                "failed": failed.then_some(true), "url": url, "type": resource_type,
                "since": since, "limit": limit, "headers": headers.then_some(true),
                "body": body, "tab": tab,
            })),
        ))
    }
}
