//! An agent's action on an element and everything it caused: the diff
//! from the action pipeline ([`crate::page::act`]), popups that joined the
//! session, downloads refused, dialogs answered, and navigations the
//! policy stopped.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{BlockedNavigation, Browser, Inner, SessionId, TabHandle, TabInfo};
use crate::error::Result;
use crate::host::{ViewEvent, ViewId};
use crate::page::DialogRecord;
use crate::page::act::{self, ActOutcome, Action, Target};

/// What an action caused besides its outcome.
#[derive(Default)]
struct Caused {
    /// Views it opened (popups, new tabs).
    opened: Vec<ViewId>,
    /// Downloads it started, refused: file names (or URLs).
    downloads_refused: Vec<String>,
}

impl Caused {
    /// Notes the browser's events for the action's tab `view` until `done`
    /// holds, at most `bound`; at once when it already does.
    async fn wait_for(
        &mut self,
        views: &mut tokio::sync::mpsc::UnboundedReceiver<ViewEvent>,
        view: &ViewId,
        bound: Duration,
        done: impl Fn(&Self) -> bool,
    ) {
        if done(self) {
            return;
        }
        let _ = tokio::time::timeout(bound, async {
            while let Some(event) = views.recv().await {
                self.note(view, event);
                if done(self) {
                    return;
                }
            }
        })
        .await;
    }

    /// Records `event` if it came from the action's tab `view`.
    fn note(&mut self, view: &ViewId, event: ViewEvent) {
        match event {
            ViewEvent::Opened(info) if info.opener.as_ref() == Some(view) => {
                self.opened.push(info.id);
            }
            ViewEvent::DownloadRefused {
                frame,
                url,
                file_name,
            } if frame == view.as_str() => {
                self.downloads_refused
                    .push(if file_name.is_empty() { url } else { file_name });
            }
            _ => {}
        }
    }
}

/// What an action did, as a model needs to hear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionReport {
    /// The ref acted on, whether it navigated, and the page after it (diff or reset).
    pub outcome: ActOutcome,
    /// Tabs the action opened (popups, `target=_blank` links), now the session's.
    pub new_tabs: Vec<TabHandle>,
    /// JavaScript dialogs it caused, answered automatically.
    pub dialogs: Vec<DialogRecord>,
    /// Downloads it started, which were refused.
    pub downloads_refused: Vec<String>,
    /// Navigations it started (in its tab, or as a popup) that went to a
    /// host the policy refuses: those tabs show the browser's error page.
    pub blocked: Vec<BlockedNavigation>,
}

/// How long an action that navigated without replacing the document
/// waits for the browser to say it was a download.
const DOWNLOAD_NOTICE: Duration = Duration::from_millis(500);

/// How long an action that opened windows waits for the browser to
/// announce their tabs.
const POPUP_NOTICE: Duration = Duration::from_secs(2);

impl Browser {
    /// Acts on an element of the active tab (by ref, or by exact role and
    /// name) and returns what changed. See [`act::act`] for the pipeline.
    pub async fn act(
        &self,
        session: &SessionId,
        target: &Target,
        action: &Action,
        cancel: &CancellationToken,
    ) -> Result<ActionReport> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("act", None, cancel)?;
        let mut views = self.inner.host().watch_views();
        let mut tabs_changed = self.watch_tabs();
        let cursor = tab.page.network_cursor();
        let outcome = self
            .inner
            .guarded(
                &tab,
                act::act(
                    &tab.page,
                    target,
                    action,
                    &self.inner.config.snapshot_limits,
                    &budget,
                ),
            )
            .await?;

        // What else the action caused: tabs it opened, downloads it tried.
        let mut caused = Caused::default();
        while let Ok(event) = views.try_recv() {
            caused.note(tab.page.view(), event);
        }
        // A navigation abandoned without a document was most likely a
        // download; the browser's word on it can trail the page's (it comes
        // from another process), so give it a moment.
        if outcome.navigation_abandoned {
            caused
                .wait_for(&mut views, tab.page.view(), DOWNLOAD_NOTICE, |c| {
                    !c.downloads_refused.is_empty()
                })
                .await;
        }
        // The browser announces a window the page opened from another
        // process: it can trail the action's end, so give it a moment too.
        caused
            .wait_for(&mut views, tab.page.view(), POPUP_NOTICE, |c| {
                c.opened.len() >= outcome.windows_opened
            })
            .await;
        let Caused {
            opened,
            downloads_refused,
        } = caused;
        // Popups join the session asynchronously; wait (briefly) until they have.
        let adopted = |inner: &Inner| -> Option<Vec<TabHandle>> {
            opened
                .iter()
                .map(|view| inner.handle_of(session, view))
                .collect()
        };
        let new_tabs = match adopted(&self.inner) {
            Some(handles) => handles,
            None => {
                let wait = async {
                    loop {
                        if tabs_changed.changed().await.is_err() {
                            return Vec::new();
                        }
                        if let Some(handles) = adopted(&self.inner) {
                            return handles;
                        }
                    }
                };
                tokio::time::timeout(Duration::from_secs(2), wait)
                    .await
                    .unwrap_or_default()
            }
        };
        // A navigation that ends on an error page may be one the policy
        // stopped; so may a popup's.
        let mut blocked = Vec::new();
        // (A delayed navigation, such as a refresh, may not have been seen
        // starting; the error page it ended on is seen all the same.)
        if outcome.observation.is_error_page() {
            blocked.extend(
                self.inner
                    .blocked_navigation(&tab.handle, &tab.page, cursor)
                    .await,
            );
        }
        if !new_tabs.is_empty() && self.inner.policy_of(Some(session)).has_host_lists() {
            let opened: Vec<TabInfo> = self
                .list_tabs(session)
                .await
                .unwrap_or_default()
                .into_iter()
                .filter(|info| new_tabs.contains(&info.handle))
                .collect();
            blocked.extend(self.inner.blocked_popups(&opened));
        }
        Ok(ActionReport {
            outcome,
            new_tabs,
            dialogs: tab.page.take_dialogs(),
            downloads_refused,
            blocked,
        })
    }
}
