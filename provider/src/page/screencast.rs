//! The live picture of a page: `Page.startScreencast` JPEG frames.
//!
//! Frames are acknowledged as soon as they arrive and published
//! latest-frame-wins: a slow viewer only ever sees fewer, newer frames, and
//! never holds the browser back. Viewers do their own flow control on top
//! (see the relay). The last frame is kept for viewers that join later,
//! since a static page sends frames rarely.
//!
//! Viewers on sharper screens than the browser renders for get, once the
//! page has been still for a moment, one more picture rendered at their
//! pixel ratio (see [`Sharpener`]): the stream itself only ever sends the
//! browser's own pixels.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::capture;
use crate::cdp::protocol::{PageCaptureScreenshot, PageGetLayoutMetrics, Viewport};
use crate::error::{BrowserError, Result};
use crate::host::{ViewHost, ViewHostExt, ViewId};

/// How to stream.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreencastOptions {
    /// JPEG quality 1–100.
    pub quality: u8,
    /// Largest frame width in pixels.
    pub max_width: u32,
    /// Largest frame height in pixels.
    pub max_height: u32,
    /// Send every n-th frame (2 halves the browser's cost).
    pub every_nth_frame: u32,
    /// Device pixels per CSS pixel the viewers show (their screens' pixel
    /// ratio). When it is above the browser's own, a page that stays still
    /// is sent once more rendered at this ratio (within the largest frame
    /// size), so its text is sharp on such screens. 1: never.
    #[serde(skip)]
    pub pixel_ratio: f64,
}

impl Default for ScreencastOptions {
    fn default() -> Self {
        Self {
            quality: 70,
            max_width: 1280,
            max_height: 1280,
            every_nth_frame: 1,
            pixel_ratio: 1.0,
        }
    }
}

/// One frame.
#[derive(Debug, Clone)]
pub struct Frame {
    /// JPEG bytes.
    pub jpeg: Vec<u8>,
    /// The page's viewport width in CSS pixels when the frame was taken.
    pub css_width: f64,
    /// The page's viewport height in CSS pixels.
    pub css_height: f64,
    /// Frames published so far on this stream (1 for the first).
    pub sequence: u64,
    /// When it arrived.
    pub received: Instant,
}

/// A running screencast. Dropping it stops the stream.
#[derive(Debug)]
pub struct Screencast {
    frames: watch::Receiver<Option<Arc<Frame>>>,
    stop: CancellationToken,
    /// The task that acks frames, and stops the stream when it ends.
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Screencast {
    /// Follows frames (latest wins). The current value is the last frame, if any.
    pub fn frames(&self) -> watch::Receiver<Option<Arc<Frame>>> {
        self.frames.clone()
    }

    /// Stops the stream and waits (briefly) until the browser has stopped
    /// it, so a new stream on the same tab can start at once.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), task).await;
        }
    }
}

impl Drop for Screencast {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameEvent {
    data: String,
    metadata: FrameMetadata,
    session_id: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameMetadata {
    /// The page's viewport, in CSS pixels (as rendered for the capture
    /// while one runs).
    device_width: f64,
    device_height: f64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FrameAck {
    session_id: i64,
}

impl crate::cdp::Command for FrameAck {
    const METHOD: &'static str = "Page.screencastFrameAck";
    type Response = crate::cdp::protocol::Empty;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartScreencast {
    format: &'static str,
    #[serde(flatten)]
    options: ScreencastOptions,
}

impl crate::cdp::Command for StartScreencast {
    const METHOD: &'static str = "Page.startScreencast";
    type Response = crate::cdp::protocol::Empty;
}

#[derive(Serialize)]
struct StopScreencast {}

impl crate::cdp::Command for StopScreencast {
    const METHOD: &'static str = "Page.stopScreencast";
    type Response = crate::cdp::protocol::Empty;
}

/// How long a picture taken apart from the stream (the first one, a sharp
/// one) may take. It is a courtesy: a capture can stall while the tab is
/// between documents, and the stream's own frames follow anyway.
const CAPTURE_BOUND: Duration = Duration::from_secs(2);

/// A one-off JPEG of the viewport at its own pixels (no clip: a scaled
/// capture would briefly change the metrics the stream reports), or with
/// `scale` device pixels per CSS pixel.
async fn capture_viewport(
    host: &dyn ViewHost,
    view: &ViewId,
    quality: u8,
    scale: Option<f64>,
) -> Option<Frame> {
    let captured = capture::in_turn(view, async {
        let metrics = host
            .call_within(view, &PageGetLayoutMetrics {}, CAPTURE_BOUND)
            .await
            .ok()?;
        let viewport = metrics.css_layout_viewport;
        let clip = scale.map(|scale| Viewport {
            x: viewport.page_x,
            y: viewport.page_y,
            width: viewport.client_width,
            height: viewport.client_height,
            scale,
        });
        let shot = host
            .call_within(
                view,
                &PageCaptureScreenshot {
                    format: "jpeg",
                    quality: Some(quality),
                    clip,
                    capture_beyond_viewport: false,
                    optimize_for_speed: false,
                },
                CAPTURE_BOUND,
            )
            .await
            .ok()?;
        Some((viewport, shot))
    })
    .await;
    let (viewport, shot) = captured?;
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(shot.data.as_bytes())
        .ok()?;
    Some(Frame {
        jpeg,
        css_width: viewport.client_width,
        css_height: viewport.client_height,
        sequence: 0,
        received: Instant::now(),
    })
}

/// How long the picture stays still before a sharp one is taken.
const STILL_BEFORE_SHARPENING: Duration = Duration::from_millis(300);
/// The least time between two sharp pictures. A page that changes again
/// right after one (a caret's blink, a clock) doubles it, up to
/// [`LONGEST_SHARPENING_INTERVAL`]; a sharp picture that stands for this
/// long brings it back.
const SHARPENING_INTERVAL: Duration = Duration::from_secs(1);
/// See [`SHARPENING_INTERVAL`].
const LONGEST_SHARPENING_INTERVAL: Duration = Duration::from_secs(16);
/// A sharp picture worth taking renders this much finer than the stream.
const SHARPER_BY: f64 = 1.15;

/// Decides when a still page is sent once more at the viewers' pixel
/// ratio, and which of the stream's frames that follow are no news.
///
/// A scaled capture makes the stream send a frame or two at the capture's
/// size, then the picture it had before, byte for byte (measured on
/// Chromium 156): neither is a change of the page, and the second would
/// put the blurry picture back.
#[derive(Debug)]
struct Sharpener {
    /// Device pixels per CSS pixel wanted; frames are within `max_size`.
    ratio: f64,
    max_size: (f64, f64),
    /// When to take a sharp picture, if one is due.
    due: Option<Instant>,
    /// The latest sharp picture: the frame it replaced, its scale and
    /// when it was taken.
    replaced: Option<(Arc<Frame>, f64, Instant)>,
    /// The least time between sharp pictures now.
    interval: Duration,
    last_sharpened: Option<Instant>,
}

impl Sharpener {
    fn new(options: &ScreencastOptions) -> Self {
        Self {
            ratio: options.pixel_ratio,
            max_size: (f64::from(options.max_width), f64::from(options.max_height)),
            due: None,
            replaced: None,
            interval: SHARPENING_INTERVAL,
            last_sharpened: None,
        }
    }

    /// The scale a sharp picture of `frame` would have, when it is worth
    /// taking.
    fn sharp_scale(&self, frame: &Frame) -> Option<f64> {
        let scale = self
            .ratio
            .min(self.max_size.0 / frame.css_width.max(1.0))
            .min(self.max_size.1 / frame.css_height.max(1.0));
        let streamed = f64::from(jpeg_width(&frame.jpeg)?) / frame.css_width.max(1.0);
        (scale >= streamed * SHARPER_BY).then_some(scale)
    }

    /// Whether a frame of the stream (its viewport `css` size and JPEG) is
    /// news, given the sharp picture that may stand.
    fn is_news(&mut self, css: (f64, f64), jpeg: &[u8]) -> bool {
        let Some((before, scale, at)) = &self.replaced else {
            return true;
        };
        let capture_size = (before.css_width * scale, before.css_height * scale);
        let near = |a: f64, b: f64| (a - b).abs() < 1.0;
        if at.elapsed() < SHARPENING_INTERVAL
            && ((near(css.0, capture_size.0) && near(css.1, capture_size.1))
                || jpeg == before.jpeg.as_slice())
        {
            return false;
        }
        // A change: the sharp picture gives way. Did it stand long enough?
        self.interval = if at.elapsed() < SHARPENING_INTERVAL {
            (self.interval * 2).min(LONGEST_SHARPENING_INTERVAL)
        } else {
            SHARPENING_INTERVAL
        };
        self.replaced = None;
        true
    }

    /// `frame` was published: a sharp one is due once it has stood still.
    fn published(&mut self, frame: &Frame) {
        self.due = self.sharp_scale(frame).map(|_| {
            let still = Instant::now() + STILL_BEFORE_SHARPENING;
            match self.last_sharpened {
                Some(last) => still.max(last + self.interval),
                None => still,
            }
        });
    }

    /// A sharp picture at `scale` replaced `before`.
    fn sharpened(&mut self, before: Arc<Frame>, scale: f64) {
        let now = Instant::now();
        self.due = None;
        self.last_sharpened = Some(now);
        self.replaced = Some((before, scale, now));
    }
}

/// The width of a JPEG picture, read from its header.
fn jpeg_width(jpeg: &[u8]) -> Option<u32> {
    image::ImageReader::with_format(std::io::Cursor::new(jpeg), image::ImageFormat::Jpeg)
        .into_dimensions()
        .ok()
        .map(|(width, _)| width)
}

/// Starts streaming `view`. The stream ends when the returned value is
/// dropped or the view closes.
///
/// # Errors
/// `INVALID_ARGUMENT` for a quality outside 1–100 or a zero size, and
/// whatever starting the screencast reports.
pub async fn start(
    host: Arc<dyn ViewHost>,
    view: ViewId,
    options: ScreencastOptions,
) -> Result<Screencast> {
    if !(1..=100).contains(&options.quality) {
        return Err(BrowserError::invalid(
            "quality",
            "must be between 1 and 100",
        ));
    }
    if options.max_width == 0 || options.max_height == 0 || options.every_nth_frame == 0 {
        return Err(BrowserError::invalid(
            "maxWidth",
            "sizes and everyNthFrame must be at least 1",
        ));
    }
    let mut events = host.subscribe(&view).await?;
    host.call(
        &view,
        &StartScreencast {
            format: "jpeg",
            options,
        },
    )
    .await?;
    // A page that does not repaint sends no frame: start with a capture so
    // viewers always have a picture.
    let first = capture_viewport(host.as_ref(), &view, options.quality, None).await;
    let mut sharpener = Sharpener::new(&options);
    let first = first.map(|frame| {
        let frame = Frame {
            sequence: 1,
            ..frame
        };
        sharpener.published(&frame);
        Arc::new(frame)
    });
    let mut sequence = u64::from(first.is_some());
    let (publish, frames) = watch::channel(first);
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let task = tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = stopped.cancelled() => break,
                event = events.recv() => match event { Some(event) => event, None => return },
                () = sleep_until(sharpener.due) => {
                    let latest = publish.borrow().clone();
                    let Some(latest) = latest else { continue };
                    let Some(scale) = sharpener.sharp_scale(&latest) else {
                        sharpener.due = None;
                        continue;
                    };
                    let started = Instant::now();
                    // A stop does not wait for the capture of a page that hangs.
                    let sharp = tokio::select! {
                        () = stopped.cancelled() => break,
                        sharp = capture_viewport(host.as_ref(), &view, options.quality, Some(scale)) => sharp,
                    };
                    let Some(sharp) = sharp else {
                        sharpener.due = None;
                        continue;
                    };
                    tracing::debug!(
                        scale,
                        bytes = sharp.jpeg.len(),
                        millis = started.elapsed().as_millis(),
                        "sharp picture of a still page"
                    );
                    sequence += 1;
                    sharpener.sharpened(latest, scale);
                    if publish.send(Some(Arc::new(Frame { sequence, ..sharp }))).is_err() {
                        break;
                    }
                    continue;
                }
            };
            if event.method != "Page.screencastFrame" {
                continue;
            }
            let Some(frame) = event.decode::<FrameEvent>() else {
                continue;
            };
            // Ack at once: viewers take the latest frame, the browser never waits on them.
            if let Err(error) = host
                .call(
                    &view,
                    &FrameAck {
                        session_id: frame.session_id,
                    },
                )
                .await
            {
                tracing::debug!(%error, "screencast ack failed");
                return;
            }
            let Ok(jpeg) = base64::engine::general_purpose::STANDARD.decode(frame.data.as_bytes())
            else {
                continue;
            };
            let css = (frame.metadata.device_width, frame.metadata.device_height);
            if !sharpener.is_news(css, &jpeg) {
                continue;
            }
            sequence += 1;
            let frame = Frame {
                jpeg,
                css_width: css.0,
                css_height: css.1,
                sequence,
                received: Instant::now(),
            };
            sharpener.published(&frame);
            if publish.send(Some(Arc::new(frame))).is_err() {
                break;
            }
        }
        let _ = host.call(&view, &StopScreencast {}).await;
    });
    Ok(Screencast {
        frames,
        stop,
        task: Some(task),
    })
}

/// Waits until `deadline`, or forever when there is none.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(jpeg: &[u8]) -> Arc<Frame> {
        Arc::new(Frame {
            jpeg: jpeg.to_vec(),
            css_width: 800.0,
            css_height: 600.0,
            sequence: 1,
            received: Instant::now(),
        })
    }

    #[test]
    fn the_stream_echoing_a_sharp_capture_is_no_news_and_a_change_is() {
        let mut sharpener = Sharpener::new(&ScreencastOptions {
            pixel_ratio: 2.0,
            ..ScreencastOptions::default()
        });
        let before = frame(b"blurry");
        sharpener.sharpened(before, 2.0);
        // The frame at the capture's size and the restored old picture.
        assert!(!sharpener.is_news((1600.0, 1200.0), b"anything"));
        assert!(!sharpener.is_news((800.0, 600.0), b"blurry"));
        assert_eq!(sharpener.interval, SHARPENING_INTERVAL);
        // A real change right away: sharp pictures come half as often.
        assert!(sharpener.is_news((800.0, 600.0), b"changed"));
        assert_eq!(sharpener.interval, SHARPENING_INTERVAL * 2);
        // With no sharp picture standing, every frame is news.
        assert!(sharpener.is_news((800.0, 600.0), b"blurry"));
    }

    #[test]
    fn undone_sharp_pictures_back_off_to_a_bound() {
        let mut sharpener = Sharpener::new(&ScreencastOptions {
            pixel_ratio: 2.0,
            ..ScreencastOptions::default()
        });
        for _ in 0..10 {
            sharpener.sharpened(frame(b"a"), 2.0);
            assert!(sharpener.is_news((800.0, 600.0), b"b"));
        }
        assert_eq!(sharpener.interval, LONGEST_SHARPENING_INTERVAL);
    }

    fn jpeg_of_width(width: u32) -> Vec<u8> {
        let mut bytes = Vec::new();
        image::RgbImage::new(width, 10)
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Jpeg,
            )
            .unwrap();
        bytes
    }

    #[test]
    fn a_sharp_picture_fits_the_largest_frame_and_must_be_finer() {
        let sharpener = Sharpener::new(&ScreencastOptions {
            pixel_ratio: 2.0,
            ..ScreencastOptions::default()
        });
        let at = |jpeg_width| Frame {
            jpeg: jpeg_of_width(jpeg_width),
            ..(*frame(b"")).clone()
        };
        // 800 CSS px wide, at most 1280 px: 1.6, not 2.
        assert_eq!(sharpener.sharp_scale(&at(800)), Some(1.6));
        // Already streamed that fine (or nearly): not worth a capture.
        assert_eq!(sharpener.sharp_scale(&at(1280)), None);
        assert_eq!(sharpener.sharp_scale(&at(1200)), None);
        let one = Sharpener::new(&ScreencastOptions::default());
        assert_eq!(one.sharp_scale(&at(800)), None);
    }
}
