//! A bare page, for the benchmarks' floors: a new view of a launched
//! Chromium attached as a [`Page`] with no host policy and no hand, so a
//! measure can be set beside what `Browser` adds on top.

use std::sync::Arc;
use std::time::Duration;

use browser_provider::host::{ChromiumHost, CreateViewOptions, ViewHost, ViewId};
use browser_provider::page::navigate::{NavigationTarget, navigate};
use browser_provider::page::{Budget, Page};
use browser_provider::policy::PageBlocking;
use tokio_util::sync::CancellationToken;

/// A new view of `host`, attached as a page that refuses nothing.
///
/// # Panics
/// When the browser cannot make or prepare the view (a benchmark cannot
/// go on without it).
pub async fn bare_page(host: &Arc<ChromiumHost>) -> (ViewId, Page) {
    let view = host
        .create_view(CreateViewOptions::default())
        .await
        .expect("a new view");
    let page = Page::attach(
        host.clone() as Arc<dyn ViewHost>,
        view.clone(),
        PageBlocking::default(),
        Default::default(),
    )
    .await
    .expect("a prepared page");
    (view, page)
}

/// A [`bare_page`] that has loaded `url` (within `bound`).
///
/// # Panics
/// When the page cannot be made or `url` does not load.
pub async fn bare_page_at(host: &Arc<ChromiumHost>, url: &str, bound: Duration) -> (ViewId, Page) {
    let (view, page) = bare_page(host).await;
    let budget = Budget::new("bench", bound, CancellationToken::new());
    let target = NavigationTarget::Url(url.parse().expect("a URL"));
    navigate(&page, target, &budget)
        .await
        .expect("the page loads");
    (view, page)
}
