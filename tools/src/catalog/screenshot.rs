//! `browser_screenshot`: the viewport, the page or one element as an image.

use std::path::PathBuf;

use browser_provider::page::screenshot::{ImageKind, ScreenshotRequest};
use browser_provider::{BrowserError, Result};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, Effect, Offered, ToolSpec, parse, ref_arg, use_tab, without_nulls};
use crate::call::ToolOutput;

/// `browser_screenshot`.
pub const SCREENSHOT: ToolSpec = ToolSpec {
    name: "browser_screenshot",
    title: "Screenshot",
    description: "Capture the viewport, the full page or one element (ref or selector) as an image. Use for visual checks; prefer snapshots for reading.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "taking the screenshot",
    schema: rmcp::handler::server::common::schema_for_type::<ScreenshotArgs>,
    output: None,
    run: |call| Box::pin(browser_screenshot(call)),
};

/// Image formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ImageName {
    /// Lossless.
    Png,
    /// Smaller; set `quality`.
    Jpeg,
}

/// `browser_screenshot`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScreenshotArgs {
    /// The whole scrollable page instead of the viewport.
    #[serde(default)]
    pub full_page: bool,
    /// Only this element, by ref from the latest snapshot (such as "e12").
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Only the element matching this CSS selector.
    pub selector: Option<String>,
    /// png (default) or jpeg.
    pub format: Option<ImageName>,
    /// JPEG quality 1-100 (default 80).
    #[schemars(range(min = 1, max = 100))]
    pub quality: Option<u8>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

async fn browser_screenshot(call: Call<'_>) -> Result<ToolOutput> {
    let Call {
        browser,
        session,
        arguments,
        settings,
        cancel,
        ..
    } = call;
    let args: ScreenshotArgs = parse(arguments)?;
    use_tab(browser, session, args.tab.as_deref()).await?;
    let request = ScreenshotRequest {
        format: match args.format.unwrap_or(ImageName::Png) {
            ImageName::Png => ImageKind::Png,
            ImageName::Jpeg => ImageKind::Jpeg,
        },
        quality: args.quality.unwrap_or(80),
        full_page: args.full_page,
        selector: args.selector,
        reference: args
            .reference
            .as_deref()
            .map(|reference| ref_arg("ref", reference))
            .transpose()?,
        ..ScreenshotRequest::default()
    };
    let shot = browser.screenshot(session, request, cancel).await?;
    let mut text = format!(
        "Screenshot {}x{} {}, {} bytes",
        shot.width,
        shot.height,
        shot.format.mime(),
        shot.data.len()
    );
    if shot.downscaled {
        text.push_str(" (downscaled to fit the size limit)");
    }
    if let Some(dir) = &settings.output_dir {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let extension = if shot.format == ImageKind::Png {
            "png"
        } else {
            "jpg"
        };
        let path = dir.join(format!("screenshot-{session}-{stamp}.{extension}"));
        std::fs::write(&path, &shot.data).map_err(|e| {
            BrowserError::invalid("outputDir", format!("cannot write {}: {e}", path.display()))
        })?;
        text.push_str(&format!("; saved as {}", path.display()));
    }
    let mime = shot.format.mime();
    Ok(ToolOutput {
        text,
        // As the browser sent it, unless it was shrunk to fit: not decoded
        // and encoded again on the way.
        image: Some((shot.into_base64(), mime)),
        is_error: false,
        code: None,
        headline: None,
        structured: None,
    })
}

/// `browser-shell screenshot …`: the words of a browser_screenshot call.
#[derive(Debug, Clone, clap::Args)]
pub struct ScreenshotCommand {
    /// The file to write (default: screenshot.png or screenshot.jpg).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The whole scrollable page.
    #[arg(long)]
    pub full_page: bool,
    /// Only this ref's element.
    #[arg(long = "ref", value_name = "REF", conflicts_with = "selector")]
    pub reference: Option<String>,
    /// Only the element matching this CSS selector.
    #[arg(long)]
    pub selector: Option<String>,
    /// png (default) or jpeg.
    #[arg(long, value_parser = ["png", "jpeg"])]
    pub format: Option<String>,
    /// JPEG quality 1-100.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: Option<u8>,
    /// The tab (such as t2); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl ScreenshotCommand {
    /// The `browser_screenshot` call these words stand for.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the word that does not fit.
    pub fn call(&self) -> Result<(&'static str, Value), BrowserError> {
        let Self {
            full_page,
            reference,
            selector,
            quality,
            tab,
            ..
        } = self;
        let format = self.image_format()?;
        Ok((
            SCREENSHOT.name,
            without_nulls(json!({
                "fullPage": full_page, "ref": reference, "selector": selector,
                "format": format, "quality": quality, "tab": tab,
            })),
        ))
    }

    /// The image format: `--format`, else what the file's extension says
    /// (`.jpg`/`.jpeg` is JPEG, `.png` PNG), so the bytes match the name.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when `--format` and the extension disagree, or the
    /// extension names no format we write.
    fn image_format(&self) -> Result<Option<&'static str>, BrowserError> {
        let by_extension = match self.output.as_ref().and_then(|path| path.extension()) {
            None => None,
            Some(extension) => match extension.to_string_lossy().to_ascii_lowercase().as_str() {
                "jpg" | "jpeg" => Some("jpeg"),
                "png" => Some("png"),
                other => {
                    return Err(BrowserError::invalid(
                        "output",
                        format!(
                            "a .{other} file: name it .png or .jpg (or give --format and a name that fits)"
                        ),
                    ));
                }
            },
        };
        let asked = match self.format.as_deref() {
            Some("jpeg") => Some("jpeg"),
            Some(_) => Some("png"),
            None => None,
        };
        match (asked, by_extension) {
            (Some(asked), Some(named)) if asked != named => Err(BrowserError::invalid(
                "format",
                format!("--format {asked} but the file is named for {named}"),
            )),
            (Some(format), _) | (None, Some(format)) => Ok(Some(format)),
            (None, None) => Ok(None),
        }
    }
}

impl ScreenshotCommand {
    /// Where the image goes: `--output`, else `screenshot.png` (or `.jpg`).
    pub fn file(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| match self.format.as_deref() {
                Some("jpeg") => "screenshot.jpg".into(),
                _ => "screenshot.png".into(),
            })
    }
}
