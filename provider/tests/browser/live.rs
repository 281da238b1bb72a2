//! The live picture: screencast frames for viewers.

use std::time::Duration;

use browser_provider::TabHandle;
use browser_provider::page::screencast::{self, ScreencastOptions};
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

pub async fn screencast_frames_arrive_and_keep_coming(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("spa.html").await;
    let tab: TabHandle = browser.active_tab(&session).unwrap();
    let view = browser.view_of(&session, &tab).unwrap();
    let options = ScreencastOptions {
        max_width: 640,
        max_height: 640,
        ..ScreencastOptions::default()
    };
    let cast = screencast::start(browser.host().clone(), view, options)
        .await
        .unwrap();
    let mut frames = cast.frames();
    // The page's clock repaints every 100 ms, so frames keep coming; wait (bounded) for three.
    let third = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            frames.changed().await.expect("the stream is running");
            let frame = frames.borrow_and_update().clone();
            if let Some(frame) = frame.filter(|f| f.sequence >= 3) {
                return frame;
            }
        }
    })
    .await
    .expect("three frames within 15 s");
    let picture =
        image::load_from_memory_with_format(&third.jpeg, image::ImageFormat::Jpeg).unwrap();
    assert!(
        picture.width() <= 640 && picture.height() <= 640,
        "{}x{}",
        picture.width(),
        picture.height()
    );
    let width = ctx.eval(&session, "innerWidth").await.as_f64().unwrap();
    assert_eq!(third.css_width, width);
    let bad = screencast::start(
        browser.host().clone(),
        browser.view_of(&session, &tab).unwrap(),
        ScreencastOptions {
            quality: 0,
            ..ScreencastOptions::default()
        },
    )
    .await;
    assert_eq!(bad.unwrap_err().code(), "INVALID_ARGUMENT");
    drop(cast);
}

pub async fn a_change_on_a_static_page_sends_a_new_frame(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("form.html").await;
    let tab = browser.active_tab(&session).unwrap();
    let cast = screencast::start(
        browser.host().clone(),
        browser.view_of(&session, &tab).unwrap(),
        ScreencastOptions::default(),
    )
    .await
    .unwrap();
    let mut frames = cast.frames();
    // Let the stream settle on the static page: take whatever came first.
    let _ = frames.borrow_and_update().clone();
    ctx.eval(
        &session,
        "document.getElementById('count').textContent = '42'",
    )
    .await;
    let changed = tokio::time::timeout(Duration::from_secs(10), frames.changed()).await;
    assert!(matches!(changed, Ok(Ok(()))), "a repaint sends a frame");
}

/// The width of a JPEG frame in device pixels.
fn picture_width(frame: &screencast::Frame) -> f64 {
    let picture =
        image::load_from_memory_with_format(&frame.jpeg, image::ImageFormat::Jpeg).unwrap();
    f64::from(picture.width())
}

/// Waits (bounded) for a frame of the stream that `wanted` accepts.
async fn frame_where(
    frames: &mut tokio::sync::watch::Receiver<Option<std::sync::Arc<screencast::Frame>>>,
    what: &str,
    wanted: impl Fn(&screencast::Frame) -> bool,
) -> std::sync::Arc<screencast::Frame> {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let frame = frames.borrow_and_update().clone();
            if let Some(frame) = frame.filter(|f| wanted(f)) {
                return frame;
            }
            frames.changed().await.expect("the stream is running");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within 10 s"))
}

pub async fn a_still_page_is_sent_sharp_for_sharper_screens(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("form.html").await;
    let tab = browser.active_tab(&session).unwrap();
    let before = ctx.eval(&session, "[innerWidth, devicePixelRatio]").await;
    let css_width = before[0].as_f64().unwrap();
    let cast = screencast::start(
        browser.host().clone(),
        browser.view_of(&session, &tab).unwrap(),
        ScreencastOptions {
            max_width: 4000,
            max_height: 4000,
            pixel_ratio: 2.0,
            ..ScreencastOptions::default()
        },
    )
    .await
    .unwrap();
    let mut frames = cast.frames();
    let sharp = |f: &screencast::Frame| (picture_width(f) - 2.0 * f.css_width).abs() <= 1.0;
    let first_sharp = frame_where(&mut frames, "a sharp picture of the still page", sharp).await;
    assert_eq!(first_sharp.css_width, css_width, "sizes stay in CSS pixels");

    // The page never saw a larger screen, and the agent's screenshots keep
    // the page's own size.
    assert_eq!(
        ctx.eval(&session, "[innerWidth, devicePixelRatio]").await,
        before
    );
    let shot = browser
        .screenshot(&session, Default::default(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(f64::from(shot.width), css_width);

    // A change is shown at once at the stream's pixels, then sharp again.
    ctx.eval(
        &session,
        "document.getElementById('count').textContent = 'changed'",
    )
    .await;
    let changed = frame_where(&mut frames, "the change", |f| {
        f.sequence > first_sharp.sequence && !sharp(f)
    })
    .await;
    assert_eq!(picture_width(&changed), css_width);
    let again = frame_where(&mut frames, "a sharp picture of the change", sharp).await;
    assert!(again.sequence > changed.sequence);
    drop(cast);
}
