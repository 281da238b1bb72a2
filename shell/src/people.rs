//! The shell for people, relay or desktop: the live-view server (with MCP
//! and the command line's endpoint), the CDP endpoint when asked for, and
//! the first page. (The desktop's window opens on the column before the
//! browser starts: see `main`.)

use std::sync::Arc;

use browser_tools::report;
use tokio_util::sync::CancellationToken;

use crate::browser::options;
use crate::{cdp_endpoint, config, relay};

/// What a person's shell (relay or desktop) adds to serving the column.
#[derive(Debug, Clone, Copy, Default)]
pub struct ForPeople<'a> {
    /// Open this URL first (else the start page).
    pub url: Option<&'a str>,
    /// Serve the CDP endpoint too.
    pub cdp_endpoint: bool,
    /// What its clients may see and drive.
    pub cdp_scope: cdp_endpoint::Scope,
}

/// The shell for people: the live-view server (with MCP and the command
/// line's endpoint), already listening, and the CDP endpoint when asked
/// for. Opens the first URL when given.
pub async fn serve(
    started: &options::Started,
    config: &config::Config,
    mut listening: relay::Listening,
    people: ForPeople<'_>,
    cancel: &CancellationToken,
) -> browser_provider::Result<()> {
    if people.cdp_endpoint {
        let supervisor = started.supervisor().ok_or_else(|| {
            let why = if started.pool().is_some() {
                "the CDP endpoint is not offered with a pool: each session has a browser of its own, and a CDP client would have none; connect the client to the pool itself"
            } else {
                "the CDP endpoint is not offered in the person's own Chrome: it would reach past the tabs they share"
            };
            browser_provider::BrowserError::invalid("cdp-endpoint", why)
        })?;
        let endpoint = cdp_endpoint::start(
            Arc::clone(supervisor),
            started.browser.clone(),
            people.cdp_scope,
            cancel,
        )
        .await?;
        listening.set_cdp_endpoint(endpoint.websocket_url);
    }
    if let Some(host) = started.extension_host() {
        // A relay on a server offers the person's Chrome its bridge over
        // TLS, paired now or later.
        listening.offer_extension_bridge(Arc::clone(host));
    }
    let relay = listening.attach(started.browser.clone(), config.agent_options(), cancel)?;
    if let Some(pool) = started.pool() {
        crate::operate::process_operations().watch_pool(Arc::clone(pool));
    }
    if let Some(host) = started.extension_host() {
        crate::operate::process_operations().watch_extension(Arc::clone(host));
    }
    // Holding the person's Chrome, it lets other shells' agents join it
    // through its `/mcp` (see `bridge`), until it stops; recorded before
    // the links are printed, so whoever reads them finds the record.
    let _offered = crate::browser::extension::bridge::offer(
        started,
        relay.kind().into(),
        relay.local_mcp(),
        config,
        cancel,
    )
    .await;
    relay.print_links();
    // Loaded while the shell already serves (a slow site holds nothing up).
    // A page that fails to load is the page's problem, shown in its tab;
    // the shell goes on (a refused URL failed before Chromium started).
    if let Some(url) = people.url {
        let browser = started.browser.clone();
        let url = url.to_owned();
        tokio::spawn(async move {
            if let Err(error) = options::show_first_page(&browser, &url).await {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "{}", report::render(&error));
            }
        });
    }
    relay.serve().await
}
