//! Navigation: go to a URL, back, forward or reload, and wait (bounded) for load.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::future::{Fuse, FusedFuture as _, FutureExt as _};
use serde::Deserialize;
use url::Url;

use super::{Budget, MainThreadProbe, Page};
use crate::cdp::protocol::{
    FrameNavigated, LifecycleEvent, NavigatedWithinDocument, PageGetNavigationHistory,
    PageNavigate, PageNavigateToHistoryEntry, PageReload, PageStopLoading,
};
use crate::cdp::{CdpEvent, EventStream};
use crate::error::{BrowserError, Result};
use crate::host::ViewHostExt as _;

/// Time kept at the end of a navigation's bound to read where it got to.
const OUTCOME_RESERVE: Duration = Duration::from_millis(800);

/// How long a page may take to start navigating before its script is stopped.
const UNSTICK_AFTER: Duration = Duration::from_secs(1);

/// Where to navigate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NavigationTarget {
    /// A URL that already passed the navigation policy.
    Url(Url),
    /// One step back in the tab's history.
    Back,
    /// One step forward in the tab's history.
    Forward,
    /// Reload the current document.
    Reload,
}

/// Where a navigation ended up.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NavigationOutcome {
    /// The final URL, after redirects.
    pub url: String,
    /// The document title.
    pub title: String,
    /// The HTTP status of the main document, when the page came over HTTP.
    pub status: Option<u16>,
    /// False when the document committed but its `load` event did not come
    /// within the budget (a hanging image, say); the page is usable anyway.
    #[serde(default = "yes")]
    pub loaded: bool,
    /// JavaScript dialogs the page opened meanwhile (all answered: alerts
    /// dismissed, `beforeunload` accepted).
    #[serde(default)]
    pub dialogs: u64,
    /// The page's main thread did not answer when asked where it got to
    /// (a script that loops): URL and title come from the browser.
    #[serde(default)]
    pub unresponsive: bool,
}

fn yes() -> bool {
    true
}

/// Navigates and waits for the main document's `load`, bounded by `budget`.
///
/// # Errors
/// `NAVIGATION_FAILED` when the browser reports a network error,
/// `INVALID_ARGUMENT` for back/forward with no such history entry,
/// `TIMEOUT` when nothing committed within the budget, `ABORTED` on cancel.
pub async fn navigate(
    page: &Page,
    target: NavigationTarget,
    budget: &Budget,
) -> Result<NavigationOutcome> {
    let dialogs_before = page.dialogs_answered();
    // Subscribe before acting so no lifecycle event can slip past.
    let mut events = page.events().await?;
    // Asked just before the navigation, but not waited for: a page busy
    // after its load (its first layout) would hold the navigation for the
    // answer. Only for a URL: a page held by a busy script is then gone to
    // afresh (see `wait_renewing`).
    let probe = match target {
        NavigationTarget::Url(_) => Some(page.probe_main_thread().await),
        _ => None,
    };
    let expected_loader = match begin(page, &target, budget, probe.as_ref()).await {
        Ok(Begun::NewDocument(loader)) => loader,
        // Same-document navigation (fragment change): nothing to wait for.
        Ok(Begun::SameDocument) => return current_outcome(page, budget, true).await,
        Err(error) => return Err(abandon(page, error).await),
    };
    // Waiting for `load` leaves time to read where the page got to, so the
    // whole navigation keeps its bound even when the page never loads.
    let mut tracker = LoadTracker::new(page, expected_loader);
    let renewal = world_renewal(page, budget);
    tokio::pin!(renewal);
    let waited = tracker
        .wait_renewing(
            page,
            &mut events,
            &budget.reserving(OUTCOME_RESERVE),
            renewal.as_mut(),
            probe.as_ref(),
        )
        .await;
    let loaded = match waited {
        Ok(loaded) => loaded,
        Err(error) if !tracker.committed => return Err(abandon(page, error).await),
        Err(error) => return Err(error),
    };
    // Where the page got to is asked while our world is still being set up
    // in it: both wait for the page's main thread, which is often busy
    // right after its load (its first layout), and are answered together.
    let read = current_outcome(page, budget, loaded);
    let read = if loaded && tracker.renewing(&renewal) {
        tokio::join!(renewal, read).1
    } else {
        read.await
    };
    let mut outcome = match read {
        Ok(outcome) => outcome,
        // Its main thread is busy (a script that loops, dialogs in a
        // loop): the browser knows the URL and title without asking it.
        Err(BrowserError::Timeout { .. }) if !loaded && !budget.cancel_token().is_cancelled() => {
            page.mark_unresponsive();
            outcome_from_browser(page).await?
        }
        Err(error) => return Err(error),
    };
    outcome.dialogs = page.dialogs_answered().saturating_sub(dialogs_before);
    Ok(outcome)
}

/// Stops a navigation that ended in `error` before anything committed (a
/// server that does not answer, a cancelled call): while it is in
/// progress, the browser holds back every command for the page, so the
/// tab would not answer the next call. A page held by a busy script is
/// left as it is: it is replaced.
async fn abandon(page: &Page, error: BrowserError) -> BrowserError {
    let ended_by_time = matches!(error, BrowserError::Timeout { .. } | BrowserError::Aborted);
    if ended_by_time && !page.is_unresponsive() {
        let stopped = page
            .host()
            .call_within(page.view(), &PageStopLoading {}, OUTCOME_RESERVE)
            .await;
        if let Err(stop_error) = stopped {
            tracing::debug!(error = %stop_error, "could not stop an unfinished navigation");
        }
    }
    error
}

/// URL and title as the browser has them, for a page that does not answer.
async fn outcome_from_browser(page: &Page) -> Result<NavigationOutcome> {
    let views = tokio::time::timeout(OUTCOME_RESERVE, page.host().list_views())
        .await
        .map_err(|_| BrowserError::timeout("read the tab's URL", OUTCOME_RESERVE))??;
    let view = views
        .into_iter()
        .find(|view| view.id == *page.view())
        .ok_or_else(|| BrowserError::TabNotFound {
            tab: "(the tab closed during navigation)".into(),
        })?;
    Ok(NavigationOutcome {
        url: view.url,
        title: view.title,
        status: None,
        loaded: false,
        dialogs: 0,
        unresponsive: true,
    })
}

/// How a navigation began.
enum Begun {
    /// A new document is loading (with its loader id when known).
    NewDocument(Option<String>),
    /// Only the fragment changed.
    SameDocument,
}

/// Starts a navigation without waiting for it: for a person's address bar,
/// where the live view shows the rest.
///
/// # Errors
/// As [`navigate`], up to the point where the navigation has begun.
pub async fn start(page: &Page, target: NavigationTarget, budget: &Budget) -> Result<()> {
    begin(page, &target, budget, None).await.map(|_| ())
}

/// Starts a navigation. A page whose main thread is busy (a script that
/// loops, dialogs in a loop) cannot let go of its document; when it has
/// not after [`UNSTICK_AFTER`], its script is stopped so the navigation
/// can go ahead, as a browser does with an unresponsive page. When
/// `probe` (asked just before) has been answered, the page is free and
/// the server is what is slow: nothing is stopped.
async fn begin(
    page: &Page,
    target: &NavigationTarget,
    budget: &Budget,
    probe: Option<&MainThreadProbe>,
) -> Result<Begun> {
    let started = send_navigation(page, target, budget);
    tokio::pin!(started);
    tokio::select! {
        result = &mut started => return result,
        () = tokio::time::sleep(UNSTICK_AFTER) => {}
    }
    if !probe.is_some_and(MainThreadProbe::answered) {
        tracing::debug!("the page is slow to let go of its document; stopping its script");
        page.terminate_scripts();
    }
    started.await
}

async fn send_navigation(page: &Page, target: &NavigationTarget, budget: &Budget) -> Result<Begun> {
    match target {
        NavigationTarget::Url(url) => {
            let started = page
                .call(
                    budget,
                    &PageNavigate {
                        url: url.to_string(),
                    },
                )
                .await?;
            if let Some(error_text) = started.error_text.filter(|t| !t.is_empty()) {
                return Err(BrowserError::NavigationFailed {
                    url: url.to_string(),
                    error_text,
                });
            }
            Ok(match started.loader_id {
                Some(loader) => Begun::NewDocument(Some(loader)),
                None => Begun::SameDocument,
            })
        }
        NavigationTarget::Back | NavigationTarget::Forward => {
            let history = page.call(budget, &PageGetNavigationHistory {}).await?;
            let back = *target == NavigationTarget::Back;
            let index = if back {
                history.current_index.checked_sub(1)
            } else {
                Some(history.current_index + 1)
            };
            let Some(entry) = index.and_then(|i| history.entries.get(i)) else {
                let (field, problem) = if back {
                    ("back", "there is no earlier page in this tab's history")
                } else {
                    ("forward", "there is no later page in this tab's history")
                };
                return Err(BrowserError::invalid(field, problem));
            };
            page.call(budget, &PageNavigateToHistoryEntry { entry_id: entry.id })
                .await?;
            Ok(Begun::NewDocument(None))
        }
        NavigationTarget::Reload => {
            page.call(budget, &PageReload::default()).await?;
            Ok(Begun::NewDocument(None))
        }
    }
}

/// Waits for a navigation that has already begun (its first events are in
/// `seen`) to load (a new document committed but still loading at the
/// bound counts as there). Returns whether a document came of it: `false`
/// when the navigation was abandoned (it became a download, or a 204).
pub(crate) async fn wait_for_navigation(
    page: &Page,
    events: &mut EventStream,
    seen: &[std::sync::Arc<CdpEvent>],
    budget: &Budget,
) -> Result<bool> {
    let mut tracker = LoadTracker::new(page, None);
    if !seen.iter().any(|event| tracker.feed(event)) {
        tracker.wait(page, events, budget).await?;
    }
    Ok(tracker.committed || tracker.same_document)
}

/// Follows one main-frame navigation from commit to `load`.
struct LoadTracker {
    main_frame: String,
    loader: Option<String>,
    committed: bool,
    /// A new document committed (not one restored from the back/forward cache).
    new_document: bool,
    /// It moved within the document (history, fragment).
    same_document: bool,
}

impl LoadTracker {
    fn new(page: &Page, expected_loader: Option<String>) -> Self {
        Self {
            main_frame: page.main_frame().to_owned(),
            loader: expected_loader,
            committed: false,
            new_document: false,
            same_document: false,
        }
    }

    /// Takes one event; true once the navigation has loaded.
    fn feed(&mut self, event: &CdpEvent) -> bool {
        match classify(event, &self.main_frame) {
            Some(Progress::Committed { loader, restored }) => {
                self.committed = true;
                if restored {
                    return true;
                }
                self.new_document = true;
                self.loader.get_or_insert(loader);
                false
            }
            Some(Progress::Loaded { loader }) => self.loader.as_deref() == Some(loader.as_str()),
            Some(Progress::LoadEventFired) => self.committed,
            Some(Progress::SameDocument) => {
                self.same_document = true;
                self.loader.is_none()
            }
            // A navigation that never commits (it became a download) ends here.
            Some(Progress::Stopped) => !self.committed || self.loader.is_none(),
            None => false,
        }
    }

    /// Waits for `load`. Meanwhile, once a new document has committed, our
    /// world is created in it (the first look after a navigation need not
    /// wait for that), and a page that loads is returned with it ready.
    async fn wait(
        &mut self,
        page: &Page,
        events: &mut EventStream,
        budget: &Budget,
    ) -> Result<bool> {
        let renewal = world_renewal(page, budget);
        tokio::pin!(renewal);
        let loaded = self
            .wait_renewing(page, events, budget, renewal.as_mut(), None)
            .await?;
        if loaded && self.renewing(&renewal) {
            renewal.await;
        }
        Ok(loaded)
    }

    /// Whether `renewal` has begun (a new document committed) and not yet
    /// finished.
    fn renewing(&self, renewal: &Pin<&mut Fuse<impl Future<Output = ()>>>) -> bool {
        self.new_document && !renewal.is_terminated()
    }

    /// Waits for `load`, driving `renewal` once a new document has
    /// committed; returns when the page has loaded, whether or not the
    /// renewal is done (the caller finishes it).
    ///
    /// When nothing has committed after [`UNSTICK_AFTER`] and `probe` (a
    /// question put to the page as the navigation began) has no answer, a
    /// busy script holds the old document. Its commands now wait behind
    /// the navigation, so nothing sent to it can stop the script: the page
    /// is marked unresponsive and the wait ends with `TIMEOUT`, for the
    /// caller to go to the URL on a fresh page. Without a probe, the
    /// page's script is stopped (which helps while the navigation has not
    /// yet reached the page).
    async fn wait_renewing(
        &mut self,
        page: &Page,
        events: &mut EventStream,
        budget: &Budget,
        mut renewal: Pin<&mut Fuse<impl Future<Output = ()>>>,
        probe: Option<&MainThreadProbe>,
    ) -> Result<bool> {
        let unstick = tokio::time::sleep(UNSTICK_AFTER);
        tokio::pin!(unstick);
        let mut unstuck = false;
        let waited = budget
            .run("wait for load", async {
                loop {
                    tokio::select! {
                        event = events.recv() => {
                            let Some(event) = event else { break };
                            if self.feed(&event) {
                                return Ok(());
                            }
                        }
                        () = &mut renewal, if self.renewing(&renewal) => {}
                        // Nothing committed yet: the old document may be
                        // held by a busy script (dialogs in a loop).
                        () = &mut unstick, if !unstuck && !self.committed => {
                            unstuck = true;
                            match probe {
                                // A slow server: the page is free, wait on.
                                Some(probe) if probe.answered() => {}
                                Some(_) => {
                                    tracing::debug!("a busy script holds the page's document");
                                    page.mark_unresponsive();
                                    return Err(BrowserError::timeout(
                                        "let go of the page's document",
                                        UNSTICK_AFTER,
                                    ));
                                }
                                None => {
                                    tracing::debug!("the page is slow to let go of its document; stopping its script");
                                    page.terminate_scripts();
                                }
                            }
                        }
                    }
                }
                Err(BrowserError::TabNotFound {
                    tab: "(the tab closed during navigation)".into(),
                })
            })
            .await;
        match waited {
            Ok(()) => Ok(true),
            Err(BrowserError::Timeout { .. }) if self.committed => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// The creation of our world in a new document, for
/// [`LoadTracker::wait_renewing`] (a future does nothing until polled, and
/// that polls it only once a new document has committed).
fn world_renewal<'a>(page: &'a Page, budget: &'a Budget) -> Fuse<impl Future<Output = ()> + 'a> {
    async move { page.world(None).renew(page, budget).await }.fuse()
}

/// The navigation milestones we care about.
enum Progress {
    /// The main frame committed a new document (`restored` = from the back/forward cache).
    Committed { loader: String, restored: bool },
    /// A document's `load` lifecycle event.
    Loaded { loader: String },
    /// `Page.loadEventFired` (carries no loader id).
    LoadEventFired,
    /// A history navigation within the same document.
    SameDocument,
    /// The main frame stopped loading: finished, or abandoned (a download, a 204).
    Stopped,
}

#[derive(Deserialize)]
struct FrameNavigatedKind {
    #[serde(rename = "type", default)]
    kind: String,
}

fn classify(event: &CdpEvent, main_frame: &str) -> Option<Progress> {
    match event.method.as_str() {
        "Page.frameNavigated" => {
            let navigated: FrameNavigated = event.decode()?;
            if navigated.frame.parent_id.is_some() {
                return None;
            }
            let restored = event
                .decode::<FrameNavigatedKind>()
                .is_some_and(|k| k.kind == "BackForwardCacheRestore");
            Some(Progress::Committed {
                loader: navigated.frame.loader_id,
                restored,
            })
        }
        "Page.lifecycleEvent" => {
            let lifecycle: LifecycleEvent = event.decode()?;
            (lifecycle.frame_id == main_frame && lifecycle.name == "load").then_some(
                Progress::Loaded {
                    loader: lifecycle.loader_id,
                },
            )
        }
        "Page.loadEventFired" => Some(Progress::LoadEventFired),
        "Page.frameStoppedLoading" => {
            let frame = event.params.get("frameId").and_then(|f| f.as_str());
            (frame == Some(main_frame)).then_some(Progress::Stopped)
        }
        "Page.navigatedWithinDocument" => {
            let within: NavigatedWithinDocument = event.decode()?;
            (within.frame_id == main_frame).then_some(Progress::SameDocument)
        }
        _ => None,
    }
}

/// Reads URL, title and HTTP status from the page itself.
pub(crate) async fn current_outcome(
    page: &Page,
    budget: &Budget,
    loaded: bool,
) -> Result<NavigationOutcome> {
    const PROBE: &str = include_str!("../js/scripts/navigation_probe.js");
    let value = page.evaluate_value(budget, PROBE.to_owned()).await?;
    let mut outcome: NavigationOutcome =
        serde_json::from_value(value).map_err(|e| BrowserError::Protocol {
            method: "Runtime.evaluate".into(),
            message: format!("unexpected page state: {e}"),
        })?;
    outcome.loaded = loaded;
    Ok(outcome)
}
