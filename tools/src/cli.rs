//! Command-line commands over a [`Browser`].

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::page::content::{ContentFormat, ContentRequest};
use browser_provider::page::screenshot::{ImageKind, ScreenshotRequest};
use browser_provider::{Browser, BrowserError, Result};
use tokio_util::sync::CancellationToken;

/// Arguments of `fetch`: open a URL and print its content.
#[derive(Debug, Clone, clap::Args)]
pub struct FetchArgs {
    /// The http(s) URL to open.
    pub url: String,
    /// Output format: markdown, html, txt or json.
    #[arg(long, short, default_value = "markdown", value_parser = parse_format)]
    pub format: ContentFormat,
    /// Only the first element matching this CSS selector.
    #[arg(long, short)]
    pub selector: Option<String>,
    /// Cut the content after this many characters.
    #[arg(long, default_value_t = 100_000)]
    pub max_chars: usize,
    /// Also save a screenshot to this file (.png or .jpg/.jpeg).
    #[arg(long, value_name = "FILE")]
    pub screenshot: Option<PathBuf>,
    /// Capture the whole page instead of the viewport.
    #[arg(long, requires = "screenshot")]
    pub full_page: bool,
    /// Give up on the page after this many milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
}

fn parse_format(text: &str) -> std::result::Result<ContentFormat, String> {
    text.parse().map_err(|e: BrowserError| e.to_string())
}

/// What `fetch` produced, for callers that print or check it.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The final URL.
    pub url: String,
    /// The page title.
    pub title: String,
    /// The HTTP status, when known.
    pub status: Option<u16>,
    /// The content in the requested format.
    pub content: String,
    /// Whether the content was cut.
    pub truncated: bool,
    /// Where the screenshot was written, with its size in pixels and bytes.
    pub screenshot: Option<(PathBuf, u32, u32, usize)>,
}

/// Opens `args.url` in a new session, extracts content and optionally a
/// screenshot, then closes the session.
pub async fn fetch(
    browser: &Browser,
    args: &FetchArgs,
    cancel: &CancellationToken,
) -> Result<Fetched> {
    let screenshot_format = match &args.screenshot {
        Some(path) => Some(image_kind_for(path)?),
        None => None,
    };
    let session = browser.open_session(SessionOptions::default()).await?;
    let result = async {
        let (_, outcome) = browser.open(&session, &args.url, false, cancel).await?;
        let request = ContentRequest {
            format: args.format,
            selector: args.selector.clone(),
            max_chars: args.max_chars,
        };
        let timeout = Some(Duration::from_millis(args.timeout_ms.max(1)));
        let content = browser.content(&session, request, timeout, cancel).await?;
        let screenshot = match (&args.screenshot, screenshot_format) {
            (Some(path), Some(format)) => {
                let request = ScreenshotRequest {
                    format,
                    full_page: args.full_page,
                    ..ScreenshotRequest::default()
                };
                let shot = browser.screenshot(&session, request, cancel).await?;
                std::fs::write(path, &shot.data).map_err(|e| {
                    BrowserError::invalid(
                        "screenshot",
                        format!("cannot write {}: {e}", path.display()),
                    )
                })?;
                Some((path.clone(), shot.width, shot.height, shot.data.len()))
            }
            _ => None,
        };
        Ok(Fetched {
            url: outcome.url,
            title: outcome.title,
            status: outcome.status,
            content: content.content,
            truncated: content.truncated,
            screenshot,
        })
    }
    .await;
    if let Err(error) = browser.close_session(&session).await {
        tracing::debug!(%error, "closing the fetch session failed");
    }
    result
}

/// Writes a fetch result: the content on stdout, a summary on stderr.
pub fn print_fetched(fetched: &Fetched) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(fetched.content.as_bytes())?;
    if !fetched.content.ends_with('\n') {
        stdout.write_all(b"\n")?;
    }
    stdout.flush()?;
    let mut stderr = std::io::stderr().lock();
    let status = fetched
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "-".into());
    writeln!(
        stderr,
        "fetched {} (HTTP {status}): {:?}",
        fetched.url, fetched.title
    )?;
    if fetched.truncated {
        writeln!(
            stderr,
            "content truncated; raise --max-chars or narrow with --selector"
        )?;
    }
    if let Some((path, width, height, bytes)) = &fetched.screenshot {
        writeln!(
            stderr,
            "screenshot {} ({width}x{height}, {bytes} bytes)",
            path.display()
        )?;
    }
    Ok(())
}

fn image_kind_for(path: &std::path::Path) -> Result<ImageKind> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match extension.as_str() {
        "png" => Ok(ImageKind::Png),
        "jpg" | "jpeg" => Ok(ImageKind::Jpeg),
        _ => Err(BrowserError::invalid(
            "screenshot",
            format!("{} must end in .png, .jpg or .jpeg", path.display()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshot_format_follows_the_extension() {
        assert_eq!(
            image_kind_for(std::path::Path::new("a.PNG")).ok(),
            Some(ImageKind::Png)
        );
        assert_eq!(
            image_kind_for(std::path::Path::new("a.jpeg")).ok(),
            Some(ImageKind::Jpeg)
        );
        assert_eq!(
            image_kind_for(std::path::Path::new("a.gif"))
                .err()
                .map(|e| e.code()),
            Some("INVALID_ARGUMENT")
        );
    }
}
