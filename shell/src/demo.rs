//! The offline demo: the bundled fixtures served on 127.0.0.1, one page
//! turned into markdown and a screenshot. Proves the whole chain (launch,
//! pipe, navigation, extraction, capture) works on this machine.

use std::path::PathBuf;

use axum::Router;
use browser_provider::page::content::ContentFormat;
use browser_provider::{Browser, BrowserError, Result};
use browser_tools::cli::{self, FetchArgs};
use tokio_util::sync::CancellationToken;
use tower_http::services::ServeDir;

/// Arguments of `demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Where to write the screenshot.
    #[arg(long, default_value = "target/demo/article.png")]
    pub screenshot: PathBuf,
    /// The fixtures directory to serve.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures"))]
    pub fixtures: PathBuf,
    /// The page to open, relative to the fixtures directory.
    #[arg(long, default_value = "article.html")]
    pub page: String,
}

/// Serves the fixtures, fetches the page as markdown with a screenshot, prints both.
pub async fn run(browser: &Browser, args: &DemoArgs, cancel: &CancellationToken) -> Result<()> {
    if !args.fixtures.join(&args.page).is_file() {
        return Err(BrowserError::invalid(
            "page",
            format!(
                "{} does not exist",
                args.fixtures.join(&args.page).display()
            ),
        ));
    }
    if let Some(parent) = args
        .screenshot
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent).map_err(|e| {
            BrowserError::invalid(
                "screenshot",
                format!("cannot create {}: {e}", parent.display()),
            )
        })?;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| {
            BrowserError::invalid("fixtures", format!("cannot listen on 127.0.0.1: {e}"))
        })?;
    let address = listener
        .local_addr()
        .map_err(|e| BrowserError::invalid("fixtures", e.to_string()))?;
    let app = Router::new().fallback_service(ServeDir::new(&args.fixtures));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    tracing::info!(%address, fixtures = %args.fixtures.display(), "serving fixtures");

    let fetch = FetchArgs {
        url: format!("http://{address}/{}", args.page),
        format: ContentFormat::Markdown,
        selector: None,
        max_chars: 100_000,
        screenshot: Some(args.screenshot.clone()),
        full_page: true,
        timeout_ms: 30_000,
    };
    let fetched = cli::fetch(browser, &fetch, cancel).await;
    server.abort();
    let fetched = fetched?;
    if let Err(error) = cli::print_fetched(&fetched) {
        tracing::warn!(%error, "cannot write the output");
    }
    Ok(())
}
