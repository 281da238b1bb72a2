//! The page's icon, for the tab strip people watch.
//!
//! The address is looked up in our isolated world (the page's
//! `<link rel=icon>`, else the site's `/favicon.ico`), and the picture is
//! loaded by the agent's browser itself (`Network.loadNetworkResource`:
//! its network stack and host policy, no request in the page's log) and
//! passed on as a `data:` URL. A viewer's browser never contacts the sites
//! the agent visits.

use std::time::Duration;

use base64::Engine as _;
use tokio_util::sync::CancellationToken;

use super::{Budget, Page};
use crate::cdp::protocol::{
    IoClose, IoRead, LoadNetworkResourceOptions, NetworkLoadNetworkResource,
};

/// How long an icon lookup may take; it is cosmetic.
const LOOKUP_BOUND: Duration = Duration::from_secs(2);

/// Largest icon passed on (larger ones are dropped, not cut).
const MAX_BYTES: usize = 32 * 1024;

/// The last `<link rel~=icon>` with an http(s) or data address, else the
/// origin's `/favicon.ico` for http(s) pages, else nothing.
const ICON_SCRIPT: &str = include_str!("../js/scripts/icon.js");

/// The page's icon: where it is and its picture as a `data:` URL of an
/// image (`None` when it has none, it is not an image, or too big).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Icon {
    /// Its address, as the page names it.
    pub address: Option<String>,
    /// The picture.
    pub picture: Option<String>,
}

/// The page's icon now. The picture is loaded again only when the address
/// changed from `known`'s (a page loads its site's icon on every visit).
pub(crate) async fn look_up(page: &Page, known: &Icon) -> Icon {
    let budget = Budget::new("icon lookup", LOOKUP_BOUND, CancellationToken::new());
    let address = match page.evaluate_in_world(&budget, ICON_SCRIPT).await {
        Ok(value) => value.as_str().map(str::to_owned),
        Err(_) => None,
    };
    if address == known.address {
        return known.clone();
    }
    let picture = match &address {
        Some(address) => picture(page, address, &budget).await,
        None => None,
    };
    Icon { address, picture }
}

/// The picture at `address` as a `data:` URL of an image.
async fn picture(page: &Page, address: &str, budget: &Budget) -> Option<String> {
    if address.starts_with("data:image/") {
        return (address.len() <= MAX_BYTES * 4 / 3 + 64).then(|| address.to_owned());
    }
    let bytes = load(page, address, budget).await?;
    let kind = image_kind(&bytes)?;
    Some(format!(
        "data:{kind};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    ))
}

/// The bytes at `url`, loaded by the browser in the page's context.
async fn load(page: &Page, url: &str, budget: &Budget) -> Option<Vec<u8>> {
    let loaded = page
        .call(
            budget,
            &NetworkLoadNetworkResource {
                frame_id: page.main_frame().to_owned(),
                url: url.to_owned(),
                options: LoadNetworkResourceOptions {
                    disable_cache: false,
                    include_credentials: false,
                },
            },
        )
        .await
        .ok()?
        .resource;
    let stream = loaded.stream?;
    let ok = loaded.success && loaded.http_status_code.is_some_and(|s| s == 200.0);
    let bytes = if ok {
        read(page, &stream, budget).await
    } else {
        None
    };
    let _ = page.call(budget, &IoClose { handle: stream }).await;
    bytes
}

/// Reads a stream to its end, giving up past [`MAX_BYTES`].
async fn read(page: &Page, stream: &str, budget: &Budget) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    loop {
        let chunk = page
            .call(
                budget,
                &IoRead {
                    handle: stream.to_owned(),
                    size: 16 * 1024,
                },
            )
            .await
            .ok()?;
        if chunk.base64_encoded {
            bytes.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(chunk.data.as_bytes())
                    .ok()?,
            );
        } else {
            bytes.extend_from_slice(chunk.data.as_bytes());
        }
        if bytes.len() > MAX_BYTES {
            return None;
        }
        if chunk.eof {
            return Some(bytes);
        }
    }
}

/// The image type of `bytes` by their first bytes; `None` for anything
/// else (an HTML error page served as the icon, say).
fn image_kind(bytes: &[u8]) -> Option<&'static str> {
    let starts = |prefix: &[u8]| bytes.starts_with(prefix);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(&[0, 0, 1, 0]) {
        Some("image/x-icon")
    } else if starts(b"GIF8") {
        Some("image/gif")
    } else if starts(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if starts(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]);
        let text = text.trim_start_matches('\u{feff}').trim_start();
        let svg = text.starts_with("<svg") || (text.starts_with("<?xml") && text.contains("<svg"));
        svg.then_some("image/svg+xml")
    }
}

#[cfg(test)]
mod tests {
    use super::image_kind;

    #[test]
    fn only_images_pass() {
        assert_eq!(image_kind(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_kind(&[0, 0, 1, 0, 1]), Some("image/x-icon"));
        assert_eq!(
            image_kind(b"<?xml version=\"1.0\"?><svg xmlns=\"\"/>"),
            Some("image/svg+xml")
        );
        assert_eq!(image_kind(b"<!doctype html><title>404</title>"), None);
        assert_eq!(image_kind(b""), None);
    }
}
