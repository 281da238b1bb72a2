//! Screenshots: viewport, full page, or clipped to an element, as PNG or
//! JPEG, kept under a pixel and a byte ceiling by downscaling (never by
//! failing).

use std::io::Cursor;

use base64::Engine;
use image::{ImageFormat, imageops::FilterType};
use serde::Deserialize;

use super::act::{self, Target};
use super::capture;
use super::{Budget, Page};
use crate::cdp::protocol::{
    LayoutMetrics, PageCaptureScreenshot, PageGetLayoutMetrics, ScreenshotData, Viewport,
};
use crate::error::{BrowserError, Result};
use crate::snapshot::{Ref, SnapshotLimits};

/// Image formats we produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageKind {
    /// Lossless; best for text.
    #[default]
    Png,
    /// Lossy, with a quality.
    Jpeg,
}

impl ImageKind {
    /// The MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
        }
    }

    fn cdp_name(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpeg",
        }
    }
}

/// What to capture.
#[derive(Debug, Clone)]
pub struct ScreenshotRequest {
    /// Output format.
    pub format: ImageKind,
    /// JPEG quality 1–100 (ignored for PNG).
    pub quality: u8,
    /// The whole scrollable page instead of the viewport.
    pub full_page: bool,
    /// Clip to the first element matching this CSS selector.
    pub selector: Option<String>,
    /// Clip to the element behind this ref (checked like an action's target:
    /// a stale ref fails with `STALE_REF`).
    pub reference: Option<Ref>,
    /// Ceiling on width × height of the result.
    pub max_pixels: u64,
    /// Ceiling on the encoded size.
    pub max_bytes: usize,
}

impl Default for ScreenshotRequest {
    fn default() -> Self {
        Self {
            format: ImageKind::Png,
            quality: 80,
            full_page: false,
            selector: None,
            reference: None,
            max_pixels: 4096 * 4096,
            max_bytes: 5 * 1024 * 1024,
        }
    }
}

/// A captured image.
#[derive(Clone)]
pub struct Screenshot {
    /// Encoded image bytes.
    pub data: Vec<u8>,
    /// Its format.
    pub format: ImageKind,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// True when it was scaled down to fit the ceilings.
    pub downscaled: bool,
    /// `data` in standard base64 as the browser sent it; `None` when
    /// `data` was re-encoded to fit the ceilings. Handed on by
    /// [`Screenshot::into_base64`] instead of encoding `data` again.
    base64: Option<String>,
}

impl std::fmt::Debug for Screenshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screenshot")
            .field("bytes", &self.data.len())
            .field("format", &self.format)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("downscaled", &self.downscaled)
            .finish_non_exhaustive()
    }
}

impl Screenshot {
    /// The image in standard base64 (as MCP carries images): the browser's
    /// own text when the image is as the browser sent it, else `data`
    /// encoded now. The same text either way, for `data` as captured (a
    /// caller that changed `data` gets the captured image's text).
    pub fn into_base64(self) -> String {
        match self.base64 {
            Some(text) => text,
            None => base64::engine::general_purpose::STANDARD.encode(&self.data),
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
enum ElementBox {
    Ok {
        x: f64,
        y: f64,
        width: f64,
        height: f64,
    },
    NoMatch,
    BadSelector {
        message: String,
    },
}

/// Captures the page.
///
/// # Errors
/// `INVALID_ARGUMENT` for a bad selector or quality, `ELEMENT_NOT_FOUND`
/// when the selector matches nothing or an empty box, `TIMEOUT` past the budget.
pub async fn screenshot(
    page: &Page,
    request: &ScreenshotRequest,
    budget: &Budget,
) -> Result<Screenshot> {
    if !(1..=100).contains(&request.quality) {
        return Err(BrowserError::invalid(
            "quality",
            "must be between 1 and 100",
        ));
    }
    if request.reference.is_some() && request.selector.is_some() {
        return Err(BrowserError::invalid(
            "ref",
            "give ref or selector, not both",
        ));
    }
    // The whole capture, measurements included, takes the tab's turn: a
    // live view's sharp picture renders the page at another scale while it
    // lasts. The wait for the turn counts against the budget (a sharp
    // picture of a page that hangs can hold it a while).
    budget
        .run(
            "the tab's turn to capture",
            capture::in_turn(page.view(), capture_in_turn(page, request, budget)),
        )
        .await
}

/// [`screenshot`] once the tab's turn has come.
async fn capture_in_turn(
    page: &Page,
    request: &ScreenshotRequest,
    budget: &Budget,
) -> Result<Screenshot> {
    // Locating a ref scrolls it into view: measure the viewport after that.
    let located = match &request.reference {
        Some(reference) => Some(
            act::locate(
                page,
                &Target::Ref(reference.clone()),
                &SnapshotLimits::default(),
                budget,
            )
            .await?,
        ),
        None => None,
    };
    // A viewport that changes size while the browser renders a capture
    // gives a picture of the old layout stretched over the new one (seen
    // in a person's Chrome, whose debugging bar takes its room a moment
    // after an extension first attaches to a tab; or a window resized
    // meanwhile). The measurements after the capture tell; it is taken again.
    let mut attempt = 1;
    let (captured, downscaled) = loop {
        let metrics = page.call(budget, &PageGetLayoutMetrics {}).await?;
        let (captured, downscaled) =
            capture_once(page, request, budget, &metrics, located.as_ref()).await?;
        let after = page.call(budget, &PageGetLayoutMetrics {}).await?;
        if after.css_layout_viewport == metrics.css_layout_viewport || attempt == CAPTURE_ATTEMPTS {
            break (captured, downscaled);
        }
        tracing::debug!(
            attempt,
            "the viewport changed during a capture; taking it again"
        );
        attempt += 1;
    };
    let data = base64::engine::general_purpose::STANDARD
        .decode(captured.data.as_bytes())
        .map_err(|e| BrowserError::Protocol {
            method: "Page.captureScreenshot".into(),
            message: format!("the image is not base64: {e}"),
        })?;
    // The browser's own base64 goes along: the tool layer hands base64
    // on, and encoding the same bytes again would only spell them again.
    fit_under_ceiling(data, captured.data, request, downscaled)
}

/// Whether the browser encodes an agent's picture for speed rather than
/// size (`optimizeForSpeed`, as Chrome DevTools MCP asks). Measured with
/// `cargo bench -p browser-provider --bench snapshot -- --only-screenshot`
/// (article.html, viewport PNG, two runs each way, 2026-12-07): for speed
/// it came out 3.5 and -2.4 ms from the bare capture, for size 4.0 and
/// 12.9 ms: a few milliseconds on a 40 ms call, in a picture 43 % larger
/// (74,430 against 52,220 bytes) that every client carries in base64.
/// Size wins.
const SPEED_OVER_SIZE: bool = false;

/// How many times a capture is taken when the viewport keeps changing under it.
const CAPTURE_ATTEMPTS: u32 = 3;

/// The scale of the throwaway capture before one beyond the viewport.
const WARM_UP_SCALE: f64 = 0.05;

/// Resolves once the page has drawn two frames, at once for a hidden page
/// (it draws none), after 200 ms at most.
const TWO_FRAMES: &str = include_str!("../js/scripts/two_frames.js");

/// The box of the first element matching a selector, in document
/// coordinates; called with the selector (see the file).
const ELEMENT_REGION_JS: &str = include_str!("../js/scripts/element_region.js");

/// One `Page.captureScreenshot` of the region `request` asks for, measured
/// with `metrics`; also whether the browser rendered it scaled down.
async fn capture_once(
    page: &Page,
    request: &ScreenshotRequest,
    budget: &Budget,
    metrics: &LayoutMetrics,
    located: Option<&super::hand::ElementBox>,
) -> Result<(ScreenshotData, bool)> {
    let viewport = metrics.css_layout_viewport;
    let (region, beyond_viewport) = match (&request.selector, located) {
        (_, Some(found)) => (
            Region {
                x: viewport.page_x + found.x,
                y: viewport.page_y + found.y,
                width: found.width,
                height: found.height,
            },
            true,
        ),
        (Some(selector), None) => (element_region(page, budget, selector).await?, true),
        (None, None) if request.full_page => (
            Region {
                x: 0.0,
                y: 0.0,
                width: metrics.css_content_size.width,
                height: metrics.css_content_size.height,
            },
            true,
        ),
        (None, None) => (
            Region {
                x: viewport.page_x,
                y: viewport.page_y,
                width: viewport.client_width,
                height: viewport.client_height,
            },
            false,
        ),
    };
    // Let the browser render at a smaller scale when the region is huge:
    // cheaper than rendering big and shrinking, and it avoids GPU limits.
    let pixels = region.width.max(1.0) * region.height.max(1.0);
    let scale = (request.max_pixels as f64 / pixels).sqrt().min(1.0);
    // A page rendered for a 2× screen (a person watching on one) would give
    // a picture of twice the size: the agent gets CSS pixels all the same.
    let device_ratio = page
        .evaluate_value(budget, "devicePixelRatio".to_owned())
        .await
        .ok()
        .and_then(|ratio| ratio.as_f64())
        .filter(|ratio| ratio.is_finite() && *ratio >= 1.0)
        .unwrap_or(1.0);
    let clip_scale = scale / device_ratio;
    let command = PageCaptureScreenshot {
        format: request.format.cdp_name(),
        quality: (request.format == ImageKind::Jpeg).then_some(request.quality),
        clip: Some(Viewport {
            x: region.x,
            y: region.y,
            width: region.width.max(1.0),
            height: region.height.max(1.0),
            scale: clip_scale,
        }),
        capture_beyond_viewport: beyond_viewport,
        optimize_for_speed: SPEED_OVER_SIZE,
    };
    let first_beyond = beyond_viewport
        && !page
            .captured_beyond_viewport
            .swap(true, std::sync::atomic::Ordering::Relaxed);
    if first_beyond {
        // Chrome's first capture beyond the viewport of a tab can show the
        // viewport stretched over the region (seen in a person's Chrome
        // through the extension); a tiny one first makes the real one right.
        let mut warm_up = command.clone();
        if let Some(clip) = warm_up.clip.as_mut() {
            clip.scale *= WARM_UP_SCALE;
        }
        let _ = page.call(budget, &warm_up).await;
        // …once the page has drawn a frame at its own size again (a hidden
        // page draws none; a busy one gets 200 ms).
        let _ = page.evaluate_value(budget, TWO_FRAMES.to_owned()).await;
    }
    Ok((page.call(budget, &command).await?, scale < 1.0))
}

#[derive(Debug, Clone, Copy)]
struct Region {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// The element's box in document coordinates.
async fn element_region(page: &Page, budget: &Budget, selector: &str) -> Result<Region> {
    let expression = format!(
        "({ELEMENT_REGION_JS}\n)({})",
        serde_json::Value::String(selector.to_owned())
    );
    let value = page.evaluate_value(budget, expression).await?;
    let found: ElementBox =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("element box has an unexpected shape: {e}"),
        })?;
    match found {
        ElementBox::Ok {
            x,
            y,
            width,
            height,
        } if width >= 1.0 && height >= 1.0 => Ok(Region {
            x,
            y,
            width,
            height,
        }),
        ElementBox::Ok { .. } | ElementBox::NoMatch => Err(BrowserError::ElementNotFound {
            selector: selector.to_owned(),
        }),
        ElementBox::BadSelector { message } => Err(BrowserError::invalid("selector", message)),
    }
}

/// Checks the image (`data`, and the same in base64) against both
/// ceilings and, when it is over either, shrinks it (re-encoding at the
/// same format and quality) until it fits.
fn fit_under_ceiling(
    data: Vec<u8>,
    base64: String,
    request: &ScreenshotRequest,
    already_scaled: bool,
) -> Result<Screenshot> {
    let format = match request.format {
        ImageKind::Png => ImageFormat::Png,
        ImageKind::Jpeg => ImageFormat::Jpeg,
    };
    let image_error = |e: image::ImageError| BrowserError::Protocol {
        method: "Page.captureScreenshot".into(),
        message: format!("cannot process the image: {e}"),
    };
    let (width, height) = image::ImageReader::with_format(Cursor::new(&data), format)
        .into_dimensions()
        .map_err(image_error)?;
    let over_pixels = u64::from(width) * u64::from(height) > request.max_pixels;
    if !over_pixels && data.len() <= request.max_bytes {
        return Ok(Screenshot {
            data,
            format: request.format,
            width,
            height,
            downscaled: already_scaled,
            base64: Some(base64),
        });
    }
    let mut picture = image::load_from_memory_with_format(&data, format).map_err(image_error)?;
    // Shrink by area: first to the pixel ceiling, then (bytes scale roughly
    // with area) towards the byte ceiling, with a margin, a few times at most.
    let mut factor = if over_pixels {
        (request.max_pixels as f64 / (f64::from(width) * f64::from(height))).sqrt()
    } else {
        1.0
    };
    let mut size = data.len();
    for _ in 0..8 {
        if size > request.max_bytes {
            factor *= ((request.max_bytes as f64 / size as f64).sqrt() * 0.9).clamp(0.1, 0.95);
        }
        let target_width = ((f64::from(width) * factor) as u32).max(1);
        let target_height = ((f64::from(height) * factor) as u32).max(1);
        picture = picture.resize_exact(target_width, target_height, FilterType::Triangle);
        let encoded = encode(&picture, request)?;
        size = encoded.len();
        if size <= request.max_bytes || target_width == 1 || target_height == 1 {
            return Ok(Screenshot {
                data: encoded,
                format: request.format,
                width: target_width,
                height: target_height,
                downscaled: true,
                base64: None,
            });
        }
    }
    Err(BrowserError::Protocol {
        method: "Page.captureScreenshot".into(),
        message: format!("cannot fit the image under {} bytes", request.max_bytes),
    })
}

fn encode(picture: &image::DynamicImage, request: &ScreenshotRequest) -> Result<Vec<u8>> {
    let mut encoded = Cursor::new(Vec::new());
    match request.format {
        ImageKind::Png => picture.write_to(&mut encoded, ImageFormat::Png),
        ImageKind::Jpeg => picture.to_rgb8().write_with_encoder(
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut encoded, request.quality),
        ),
    }
    .map_err(|e| BrowserError::Protocol {
        method: "Page.captureScreenshot".into(),
        message: format!("cannot re-encode the image: {e}"),
    })?;
    Ok(encoded.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A noisy PNG (so it does not compress to nothing) and its base64.
    fn noisy_png(width: u32, height: u32) -> (Vec<u8>, String) {
        let picture = image::RgbImage::from_fn(width, height, |x, y| {
            let v = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)).wrapping_mul(2_654_435_761);
            image::Rgb([v as u8, (v >> 8) as u8, (v >> 16) as u8])
        });
        let mut png = Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(picture)
            .write_to(&mut png, ImageFormat::Png)
            .expect("encode a PNG");
        let png = png.into_inner();
        let text = base64::engine::general_purpose::STANDARD.encode(&png);
        (png, text)
    }

    #[test]
    fn an_image_as_sent_keeps_the_browser_s_base64() {
        let (png, text) = noisy_png(64, 48);
        let shot = fit_under_ceiling(
            png.clone(),
            text.clone(),
            &ScreenshotRequest::default(),
            false,
        )
        .expect("fits");
        assert_eq!((shot.width, shot.height, shot.downscaled), (64, 48, false));
        assert_eq!(shot.data, png);
        assert_eq!(shot.into_base64(), text);
    }

    #[test]
    fn a_shrunk_image_is_encoded_from_its_new_bytes() {
        let (png, text) = noisy_png(64, 48);
        let request = ScreenshotRequest {
            max_bytes: png.len() / 2,
            ..ScreenshotRequest::default()
        };
        let shot = fit_under_ceiling(png.clone(), text.clone(), &request, false).expect("shrinks");
        assert!(shot.downscaled && shot.data.len() <= request.max_bytes);
        let expected = base64::engine::general_purpose::STANDARD.encode(&shot.data);
        assert_ne!(expected, text);
        assert_eq!(shot.into_base64(), expected);
    }
}
