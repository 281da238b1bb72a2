//! The shell for people, relay or desktop: the live-view server (with MCP
//! and the command line's endpoint), the CDP endpoint when asked for, the
//! first page, and in the desktop the window on the column.

use std::sync::Arc;

use browser_tools::report;
use tokio_util::sync::CancellationToken;

use crate::{cdp_endpoint, config, mcp, options, relay};

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
/// line's endpoint), the CDP endpoint when asked for, and, in the desktop
/// (`window`), the window on it. Opens the first URL when given.
pub async fn serve(
    started: &options::Started,
    config: &config::Config,
    mut setup: relay::RelaySetup,
    people: ForPeople<'_>,
    window: bool,
    cancel: &CancellationToken,
) -> browser_provider::Result<()> {
    if people.cdp_endpoint {
        let endpoint = cdp_endpoint::start(
            Arc::clone(started.supervisor()),
            started.browser.clone(),
            people.cdp_scope,
            cancel,
        )
        .await?;
        setup.cdp_endpoint = Some(endpoint.websocket_url);
    }
    let relay = relay::bind(
        started.browser.clone(),
        mcp::agent_options(config),
        setup,
        cancel,
    )
    .await?;
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
    // Pages take the size of the window's picture area.
    let _window = window
        .then(|| crate::desktop::open(&format!("{}&fit=1", relay.viewer_url()), cancel.clone()));
    relay.serve().await
}
