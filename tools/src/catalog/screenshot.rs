//! `browser_screenshot`: the viewport, the page or one element as an image.

use std::path::PathBuf;

use browser_provider::page::screenshot::{ImageKind, ScreenshotRequest};
use browser_provider::{BrowserError, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, CommandLine, Effect, Offered, Stdin, ToolSpec, arguments_of, ref_arg};
use crate::call::ToolOutput;

/// `browser_screenshot`.
pub const SCREENSHOT: ToolSpec = ToolSpec {
    name: "browser_screenshot",
    title: "Screenshot",
    command: Some("screenshot"),
    description: "Capture the viewport, the full page or one element (ref or selector) as an image. Use for visual checks; prefer snapshots for reading.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "taking the screenshot",
    tab: true,
    summary: &["ref", "tab", "format", "selector"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<ScreenshotArgs>,
    output: None,
    run: |call| Box::pin(browser_screenshot(call)),
};

/// Image formats.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum ImageName {
    /// Lossless.
    Png,
    /// Smaller; set `quality`.
    Jpeg,
}

/// `browser_screenshot`; on the command line `screenshot [-o FILE] …` (see
/// [`ScreenshotCommand`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScreenshotArgs {
    /// The whole scrollable page instead of the viewport.
    #[serde(default)]
    #[arg(long)]
    pub full_page: bool,
    /// Only this element, by ref from the latest snapshot (such as "e12").
    #[serde(rename = "ref")]
    #[arg(long = "ref", value_name = "REF", conflicts_with = "selector")]
    pub reference: Option<String>,
    /// Only the element matching this CSS selector.
    #[arg(long)]
    pub selector: Option<String>,
    /// png (default) or jpeg.
    #[arg(long)]
    pub format: Option<ImageName>,
    /// JPEG quality 1-100 (default 80).
    #[schemars(range(min = 1, max = 100))]
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: Option<u8>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

async fn browser_screenshot(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: ScreenshotArgs = call.args().await?;
    let (browser, session, settings, cancel) =
        (call.browser, call.session, call.settings, call.cancel);
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

/// `browser-shell screenshot …`: the call's flags, and the file the
/// image goes to (the command line's own).
#[derive(Debug, Clone, clap::Args)]
pub struct ScreenshotCommand {
    /// The file to write (default: screenshot.png or screenshot.jpg).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The call.
    #[command(flatten)]
    pub args: ScreenshotArgs,
}

impl CommandLine for ScreenshotCommand {
    /// The image format is `--format`, else what the file's name says.
    fn to_call(&self, _: Stdin<'_>) -> Result<(&'static str, Value)> {
        let args = ScreenshotArgs {
            format: self.image_format()?,
            ..self.args.clone()
        };
        Ok((SCREENSHOT.name, arguments_of(&args)))
    }
}

impl ScreenshotCommand {
    /// The image format: `--format`, else what the file's extension says
    /// (`.jpg`/`.jpeg` is JPEG, `.png` PNG), so the bytes match the name.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when `--format` and the extension disagree, or the
    /// extension names no format we write.
    fn image_format(&self) -> Result<Option<ImageName>> {
        let by_extension = match self.output.as_ref().and_then(|path| path.extension()) {
            None => None,
            Some(extension) => match extension.to_string_lossy().to_ascii_lowercase().as_str() {
                "jpg" | "jpeg" => Some(ImageName::Jpeg),
                "png" => Some(ImageName::Png),
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
        match (self.args.format, by_extension) {
            (Some(asked), Some(named)) if asked != named => Err(BrowserError::invalid(
                "format",
                format!(
                    "--format {} but the file is named for {}",
                    asked.name(),
                    named.name()
                ),
            )),
            (Some(format), _) | (None, Some(format)) => Ok(Some(format)),
            (None, None) => Ok(None),
        }
    }

    /// Where the image goes: `--output`, else `screenshot.png` (or `.jpg`).
    pub fn file(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| match self.args.format {
                Some(ImageName::Jpeg) => "screenshot.jpg".into(),
                _ => "screenshot.png".into(),
            })
    }
}

impl ImageName {
    /// Its name, as a call gives it.
    fn name(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpeg",
        }
    }
}
