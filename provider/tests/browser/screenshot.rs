//! Screenshots: formats, regions and ceilings, checked by decoding the image
//! (and its base64, as tools hand it on).

use browser_provider::page::screenshot::{ImageKind, Screenshot, ScreenshotRequest};
use browser_provider::{BrowserError, SessionId};
use image::GenericImageView;
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

async fn shoot(
    ctx: &Ctx,
    session: &SessionId,
    request: ScreenshotRequest,
) -> Result<Screenshot, BrowserError> {
    ctx.browser()
        .screenshot(session, request, &CancellationToken::new())
        .await
}

fn decode(shot: &Screenshot) -> image::DynamicImage {
    let format = match shot.format {
        ImageKind::Png => image::ImageFormat::Png,
        ImageKind::Jpeg => image::ImageFormat::Jpeg,
    };
    assert_eq!(image::guess_format(&shot.data).unwrap(), format);
    // The base64 handed on (the browser's own when the image is as sent) spells these bytes.
    assert_eq!(
        shot.clone().into_base64(),
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &shot.data)
    );
    let picture = image::load_from_memory_with_format(&shot.data, format).unwrap();
    assert_eq!(
        (picture.width(), picture.height()),
        (shot.width, shot.height)
    );
    picture
}

fn near(pixel: image::Rgba<u8>, expected: [u8; 3]) -> bool {
    pixel.0[..3]
        .iter()
        .zip(expected)
        .all(|(a, b)| a.abs_diff(b) < 40)
}

pub async fn viewport_png_matches_the_viewport(ctx: Ctx) {
    let session = ctx.session_at("colors.html").await;
    // The viewport without its scrollbars (a person's Chrome shows them),
    // measured before and after: a person's window may still settle by a
    // pixel meanwhile, and the picture is the viewport of its moment.
    let viewport = "[document.documentElement.clientWidth, document.documentElement.clientHeight]";
    let before = ctx.eval(&session, viewport).await;
    let shot = shoot(&ctx, &session, ScreenshotRequest::default())
        .await
        .unwrap();
    let after = ctx.eval(&session, viewport).await;
    let picture = decode(&shot);
    let size = serde_json::json!([picture.width(), picture.height()]);
    assert!(
        size == before || size == after,
        "the picture is {size}, the viewport {before} then {after}"
    );
    assert!(
        near(picture.get_pixel(10, 10), [255, 0, 0]),
        "the top band is red"
    );
    assert!(!shot.downscaled);

    // After scrolling, the viewport shows what is there now.
    ctx.eval(&session, "scrollTo(0, 700)").await;
    let scrolled = decode(
        &shoot(&ctx, &session, ScreenshotRequest::default())
            .await
            .unwrap(),
    );
    assert!(
        near(scrolled.get_pixel(10, 10), [0, 255, 0]),
        "the second band is green"
    );
}

pub async fn jpeg_with_quality(ctx: Ctx) {
    let session = ctx.session_at("colors.html").await;
    let request = |quality| ScreenshotRequest {
        format: ImageKind::Jpeg,
        quality,
        full_page: true,
        ..ScreenshotRequest::default()
    };
    let high = shoot(&ctx, &session, request(95)).await.unwrap();
    let low = shoot(&ctx, &session, request(20)).await.unwrap();
    decode(&high);
    decode(&low);
    assert!(
        low.data.len() < high.data.len(),
        "{} vs {}",
        low.data.len(),
        high.data.len()
    );
}

pub async fn full_page_covers_the_document(ctx: Ctx) {
    let session = ctx.session_at("colors.html").await;
    let height = ctx
        .eval(&session, "document.documentElement.scrollHeight")
        .await
        .as_u64()
        .unwrap();
    let shot = shoot(
        &ctx,
        &session,
        ScreenshotRequest {
            full_page: true,
            ..ScreenshotRequest::default()
        },
    )
    .await
    .unwrap();
    let picture = decode(&shot);
    assert_eq!(u64::from(picture.height()), height);
    assert!(near(picture.get_pixel(10, 10), [255, 0, 0]));
    assert!(near(picture.get_pixel(10, 900), [0, 255, 0]));
}

pub async fn element_clip_shows_the_element(ctx: Ctx) {
    let session = ctx.session_at("colors.html").await;
    let shot = shoot(
        &ctx,
        &session,
        ScreenshotRequest {
            selector: Some("#blue".into()),
            ..ScreenshotRequest::default()
        },
    )
    .await
    .unwrap();
    let picture = decode(&shot);
    assert_eq!((picture.width(), picture.height()), (300, 200));
    for (x, y) in [(1, 1), (150, 100), (298, 198)] {
        assert!(
            near(picture.get_pixel(x, y), [0, 0, 255]),
            "pixel {x},{y} is {:?}",
            picture.get_pixel(x, y)
        );
    }
}

pub async fn ceilings_downscale_instead_of_failing(ctx: Ctx) {
    let session = ctx.session_at("colors.html").await;
    let by_pixels = shoot(
        &ctx,
        &session,
        ScreenshotRequest {
            full_page: true,
            max_pixels: 100_000,
            ..ScreenshotRequest::default()
        },
    )
    .await
    .unwrap();
    decode(&by_pixels);
    assert!(by_pixels.downscaled);
    assert!(u64::from(by_pixels.width) * u64::from(by_pixels.height) <= 100_000);

    let by_bytes = shoot(
        &ctx,
        &session,
        ScreenshotRequest {
            full_page: true,
            max_bytes: 30_000,
            ..ScreenshotRequest::default()
        },
    )
    .await
    .unwrap();
    decode(&by_bytes);
    assert!(by_bytes.downscaled);
    assert!(
        by_bytes.data.len() <= 30_000,
        "{} bytes",
        by_bytes.data.len()
    );
}

pub async fn bad_arguments_are_refused(ctx: Ctx) {
    let session = ctx.session_at("colors.html").await;
    let missing = shoot(
        &ctx,
        &session,
        ScreenshotRequest {
            selector: Some("#nope".into()),
            ..ScreenshotRequest::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(missing.code(), "ELEMENT_NOT_FOUND");
    let quality = shoot(
        &ctx,
        &session,
        ScreenshotRequest {
            quality: 0,
            format: ImageKind::Jpeg,
            ..ScreenshotRequest::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(quality.code(), "INVALID_ARGUMENT");
}

/// A page rendered for a 2× screen (a CDP client, or a person's sharp
/// screen, may ask for that) still gives the agent a picture in CSS
/// pixels: four times the pixels would cost four times the tokens.
pub async fn a_page_rendered_at_2x_still_gives_css_pixels(ctx: Ctx) {
    use browser_provider::cdp::protocol::EmulationSetDeviceMetricsOverride;
    use browser_provider::host::ViewHostExt;
    let session = ctx.session_at("colors.html").await;
    let tab = ctx.browser().active_tab(&session).unwrap();
    let view = ctx.browser().view_of(&session, &tab).unwrap();
    ctx.browser()
        .host()
        .call(
            &view,
            &EmulationSetDeviceMetricsOverride {
                width: 0,
                height: 0,
                device_scale_factor: 2.0,
                mobile: false,
            },
        )
        .await
        .unwrap();
    let seen = ctx
        .eval(
            &session,
            "[document.documentElement.clientWidth, document.documentElement.clientHeight, devicePixelRatio]",
        )
        .await;
    assert_eq!(seen[2], 2, "{seen}");
    let shot = shoot(&ctx, &session, ScreenshotRequest::default())
        .await
        .unwrap();
    let picture = decode(&shot);
    assert_eq!(u64::from(picture.width()), seen[0].as_u64().unwrap());
    assert_eq!(u64::from(picture.height()), seen[1].as_u64().unwrap());
    assert!(near(picture.get_pixel(10, 10), [255, 0, 0]));
}
