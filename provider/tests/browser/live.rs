//! The live picture: screencast frames for viewers.

use std::time::Duration;

use browser_provider::TabHandle;
use browser_provider::page::screencast::{self, ScreencastOptions};

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
