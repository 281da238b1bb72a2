//! The page's icon, for the tab strip people watch.
//!
//! Only the address is looked up (in our isolated world, from the page's
//! `<link rel=icon>`, else the site's `/favicon.ico`); the viewer's own
//! browser loads the picture. Nothing is fetched in the agent's browser,
//! so the page's network log shows no request the page did not make.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Budget, Page};

/// How long an icon lookup may take; it is cosmetic.
const LOOKUP_BOUND: Duration = Duration::from_secs(2);

/// Longest icon address passed on (a `data:` icon can be big; larger
/// ones are dropped, not cut).
const MAX_ADDRESS: usize = 16 * 1024;

/// The last `<link rel~=icon>` with an http(s) or data address, else the
/// origin's `/favicon.ico` for http(s) pages, else nothing.
const ICON_SCRIPT: &str = r#"(() => {
  const links = [...document.querySelectorAll('link[rel~="icon" i][href]')];
  const usable = links.map((l) => l.href).filter((h) => /^(https?|data):/i.test(h));
  if (usable.length) return usable[usable.length - 1];
  return /^https?:$/.test(location.protocol) ? location.origin + '/favicon.ico' : null;
})()"#;

/// Looks up the page's icon address now; `None` when it has none or the
/// page did not answer in time.
pub(crate) async fn look_up(page: &Page) -> Option<String> {
    let budget = Budget::new("icon lookup", LOOKUP_BOUND, CancellationToken::new());
    let value = page.evaluate_in_world(&budget, ICON_SCRIPT).await.ok()?;
    let address = value.as_str()?;
    (address.len() <= MAX_ADDRESS).then(|| address.to_owned())
}
