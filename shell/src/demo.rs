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
    #[arg(long, default_value = "browser-shell-demo.png")]
    pub screenshot: PathBuf,
    /// The directory of pages to serve. Default: the demo pages installed
    /// with browser-shell (/usr/share/browser-shell/demo, or `demo` beside
    /// the executable), else those of the source tree it was built from.
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// The page to open, relative to that directory.
    #[arg(long, default_value = "article.html")]
    pub page: String,
}

/// Where the demo pages are installed on Linux (by the package).
const INSTALLED_DEMO_DIR: &str = "/usr/share/browser-shell/demo";

/// The directory to serve: the one asked for, else the first place the
/// demo pages are found.
///
/// # Errors
/// `INVALID_ARGUMENT` naming `fixtures` when it is not a directory, or
/// when no demo pages are installed anywhere we look (with where we looked).
fn pages_dir(asked: Option<&PathBuf>) -> Result<PathBuf> {
    if let Some(dir) = asked {
        return if dir.is_dir() {
            Ok(dir.clone())
        } else {
            Err(BrowserError::invalid(
                "fixtures",
                format!("{} is not a directory", dir.display()),
            ))
        };
    }
    let beside_executable = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("demo")));
    let source_tree = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures"));
    let candidates: Vec<PathBuf> = [
        Some(PathBuf::from(INSTALLED_DEMO_DIR)),
        beside_executable,
        Some(source_tree),
    ]
    .into_iter()
    .flatten()
    .collect();
    candidates
        .iter()
        .find(|dir| dir.is_dir())
        .cloned()
        .ok_or_else(|| {
            let looked: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
            BrowserError::invalid(
                "fixtures",
                format!(
                    "no demo pages are installed (looked in {}); give --fixtures DIR",
                    looked.join(", ")
                ),
            )
        })
}

/// Serves the fixtures, fetches the page as markdown with a screenshot, prints both.
pub async fn run(browser: &Browser, args: &DemoArgs, cancel: &CancellationToken) -> Result<()> {
    let fixtures = pages_dir(args.fixtures.as_ref())?;
    if !fixtures.join(&args.page).is_file() {
        return Err(BrowserError::invalid(
            "page",
            format!(
                "{} is not among the demo pages in {}",
                args.page,
                fixtures.display()
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
    let app = Router::new().fallback_service(ServeDir::new(&fixtures));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    tracing::info!(%address, fixtures = %fixtures.display(), "serving fixtures");

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
