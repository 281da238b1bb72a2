//! The live picture of a page: `Page.startScreencast` JPEG frames.
//!
//! Frames are acknowledged as soon as they arrive and published
//! latest-frame-wins: a slow viewer only ever sees fewer, newer frames, and
//! never holds the browser back. Viewers do their own flow control on top
//! (see the relay). The last frame is kept for viewers that join later,
//! since a static page sends frames rarely.

use std::sync::Arc;
use std::time::Instant;

use base64::Engine;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cdp::protocol::{PageCaptureScreenshot, PageGetLayoutMetrics};
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
}

impl Default for ScreencastOptions {
    fn default() -> Self {
        Self {
            quality: 70,
            max_width: 1280,
            max_height: 1280,
            every_nth_frame: 1,
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

/// How long the first picture may take. It is a courtesy: a capture can
/// stall while the tab is between documents, and the stream's own frames
/// follow anyway.
const INITIAL_FRAME_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

/// A one-off JPEG of the viewport at full size (no clip: a scaled capture
/// would briefly change the metrics the stream reports).
async fn initial_frame(
    host: &dyn ViewHost,
    view: &ViewId,
    options: ScreencastOptions,
) -> Option<Frame> {
    let metrics = host
        .call_within(view, &PageGetLayoutMetrics {}, INITIAL_FRAME_BOUND)
        .await
        .ok()?;
    let viewport = metrics.css_layout_viewport;
    let shot = host
        .call_within(
            view,
            &PageCaptureScreenshot {
                format: "jpeg",
                quality: Some(options.quality),
                clip: None,
                capture_beyond_viewport: false,
            },
            INITIAL_FRAME_BOUND,
        )
        .await
        .ok()?;
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(shot.data.as_bytes())
        .ok()?;
    Some(Frame {
        jpeg,
        css_width: viewport.client_width,
        css_height: viewport.client_height,
        sequence: 1,
        received: Instant::now(),
    })
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
    let first = initial_frame(host.as_ref(), &view, options).await;
    let mut sequence = u64::from(first.is_some());
    let (publish, frames) = watch::channel(first.map(Arc::new));
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let task = tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = stopped.cancelled() => break,
                event = events.recv() => match event { Some(event) => event, None => return },
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
            sequence += 1;
            let frame = Frame {
                jpeg,
                css_width: frame.metadata.device_width,
                css_height: frame.metadata.device_height,
                sequence,
                received: Instant::now(),
            };
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
