//! Where a browser restart happens for sessions and tabs.
//!
//! The [`Supervisor`](crate::host::Supervisor) brings a new browser up;
//! this module makes the shell's own identities survive it. When the
//! browser goes away, every page is marked gone, so calls running on it
//! end at once with `BROWSER_RESTARTED` and the cause. When the new one
//! runs, each tab (agents' and the person's; a CDP client's pages go with
//! their client) gets a new page in the new browser, in its session's new
//! isolated context if it had one, and is reopened at its last URL. Tab
//! handles and session ids do not change; refs do (they belonged to the
//! old pages). Each session is told once, with its next call. Calls that
//! arrive meanwhile wait for this to finish ([`Inner::await_browser`]).

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use super::sessions::follow_views;
use super::{Inner, SessionId, TabHandle};
use crate::host::{BrowserState, ContextId, CreateViewOptions, Restart, ViewHost};
use crate::page::navigate::{self, NavigationTarget};
use crate::page::{Budget, Page};

/// How long reopened tabs may take to load before calls go ahead anyway.
const REOPEN_WAIT: Duration = Duration::from_secs(10);

/// How long the tabs of a session whose browser went away by itself (a
/// pool browser) wait for a new browser while the pool cannot give one
/// (it is full, or it restarts): their calls answer `BROWSER_RESTARTED`
/// meanwhile, and after this they are given up with a notice.
const RECOVERY_BOUND: Duration = Duration::from_secs(60);

/// The pause between asks for a new browser during [`RECOVERY_BOUND`].
const RECOVERY_PAUSE: Duration = Duration::from_secs(1);

/// Follows the supervisor for as long as the browser lives.
pub(super) async fn follow_browser(inner: Weak<Inner>, mut state: watch::Receiver<BrowserState>) {
    let mut reopened_generation = state.borrow().generation().unwrap_or(1);
    loop {
        if state.changed().await.is_err() {
            return;
        }
        let now = state.borrow_and_update().clone();
        let Some(inner) = inner.upgrade() else {
            return;
        };
        match now {
            BrowserState::Restarting { cause, .. } | BrowserState::Failed { cause, .. } => {
                inner.mark_pages_gone(&cause);
            }
            BrowserState::Running {
                generation,
                host,
                restarted: Some(restart),
            } if generation > reopened_generation => {
                reopened_generation = generation;
                // The restarting state may have been skipped over.
                inner.mark_pages_gone(&restart.cause);
                inner.reopen_tabs(host, &restart).await;
                inner.recovered.send_replace(generation);
            }
            BrowserState::Running { .. } => {}
            BrowserState::Stopped => return,
        }
    }
}

/// A tab that could not be brought back (no page for it in the new
/// browser), for its session's notice or another try.
struct NotReopened {
    tab: Reopening,
    error: crate::BrowserError,
}

impl NotReopened {
    /// Whether a later try may bring it back: the browser's host could
    /// not give a page now (a pool that is full or restarting).
    fn may_come_back(&self) -> bool {
        matches!(
            self.error,
            crate::BrowserError::NotConnected { .. } | crate::BrowserError::Busy { .. }
        )
    }
}

/// One tab to bring back.
struct Reopening {
    handle: TabHandle,
    context: Option<ContextId>,
    /// The session it is reopened for (`None`: the person's).
    owner: Option<String>,
    url: String,
}

impl Inner {
    /// Every page's calls fail now: their browser is gone.
    fn mark_pages_gone(&self, cause: &str) {
        let pages: Vec<Arc<Page>> = self
            .lock()
            .all_tabs()
            .map(|tab| Arc::clone(&tab.page))
            .collect();
        for page in pages {
            page.mark_browser_gone(cause);
        }
    }

    /// Moves every session and tab onto the browser `host` (see the
    /// module docs) and leaves each session a notice.
    async fn reopen_tabs(self: &Arc<Self>, host: Arc<dyn ViewHost>, restart: &Restart) {
        *self.host.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&host);
        tokio::spawn(follow_views(Arc::downgrade(self), host.watch_views()));

        let (isolated, external) = {
            let registry = self.lock();
            let isolated: Vec<SessionId> = registry
                .sessions
                .iter()
                .filter(|(_, state)| state.context.is_some())
                .map(|(id, _)| id.clone())
                .collect();
            let external: Vec<TabHandle> = registry
                .all_tabs()
                .filter(|tab| tab.page.is_external())
                .map(|tab| tab.handle.clone())
                .collect();
            (isolated, external)
        };
        // A CDP client's pages went with its connection.
        for handle in &external {
            self.lock().remove_tab(handle);
        }
        for session in isolated {
            let context = match host.create_context().await {
                Ok(context) => Some(context),
                Err(error) => {
                    // Its tabs cannot come back without their isolation.
                    tracing::warn!(%session, %error, "cannot recreate an isolated context");
                    let mut registry = self.lock();
                    let handles: Vec<TabHandle> = registry
                        .session(&session)
                        .map(|state| state.tabs.iter().map(|t| t.handle.clone()).collect())
                        .unwrap_or_default();
                    for handle in &handles {
                        registry.remove_tab(handle);
                    }
                    None
                }
            };
            if let Ok(state) = self.lock().session_mut(&session) {
                state.context = context;
            }
        }

        let mut plan: Vec<Reopening> = {
            let registry = self.lock();
            registry
                .sessions
                .iter()
                .flat_map(|(id, state)| {
                    state.tabs.iter().map(|tab| Reopening {
                        handle: tab.handle.clone(),
                        context: state.context.clone(),
                        owner: Some(id.to_string()),
                        url: tab.last_url.clone(),
                    })
                })
                .chain(registry.unowned.iter().map(|tab| Reopening {
                    handle: tab.handle.clone(),
                    context: None,
                    owner: None,
                    url: tab.last_url.clone(),
                }))
                .collect()
        };
        plan.sort_by_key(|tab| tab.handle.number());
        let not_reopened = self.reopen(&host, plan, true).await;

        let when = clock(restart.at);
        let mut registry = self.lock();
        for (id, state) in &mut registry.sessions {
            let lost = not_reopened_words(&not_reopened, id);
            let reopened = reopened_words(state, !lost.is_empty());
            state.notices.push(format!(
                "Note: the browser stopped ({}) and was restarted at {when}; {reopened}{lost}.",
                restart.cause
            ));
        }
        drop(registry);
        self.tabs_changed.send_modify(|generation| *generation += 1);
        tracing::info!(cause = %restart.cause, "tabs reopened after the browser restarted");
    }

    /// Gives each tab of `plan` a new page in `host` (in its context) and
    /// loads its last URL, waiting at most [`REOPEN_WAIT`] for the loads.
    /// A tab keeps its old (gone) page, whose calls answer
    /// `BROWSER_RESTARTED`, until the new one has loaded: a call never
    /// lands on a page still on its way back. A tab that cannot get a page
    /// is returned so that its session hears why, and removed unless it
    /// may come back on a later try and `last_try` is false.
    async fn reopen(
        self: &Arc<Self>,
        host: &Arc<dyn ViewHost>,
        plan: Vec<Reopening>,
        last_try: bool,
    ) -> Vec<NotReopened> {
        let mut loads = tokio::task::JoinSet::new();
        let mut not_reopened = Vec::new();
        for tab in plan {
            let page = match self
                .new_page(host, tab.context.clone(), tab.owner.clone())
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    let failed = NotReopened { tab, error };
                    if last_try || !failed.may_come_back() {
                        tracing::warn!(tab = %failed.tab.handle, error = %failed.error, "cannot reopen a tab");
                        self.lock().remove_tab(&failed.tab.handle);
                    }
                    not_reopened.push(failed);
                    continue;
                }
            };
            if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
                self.follow_loads(&page);
            }
            let target = self
                .policy_of(tab.owner.clone().map(SessionId).as_ref())
                .check(&tab.url)
                .ok()
                .filter(|target| target.as_str() != "about:blank");
            let bound = self.config.navigation_timeout.min(REOPEN_WAIT);
            let inner = Arc::clone(self);
            loads.spawn(async move {
                if let Some(target) = target {
                    let budget =
                        Budget::new("reopen", bound, tokio_util::sync::CancellationToken::new());
                    if let Err(error) =
                        navigate::navigate(&page, NavigationTarget::Url(target), &budget).await
                    {
                        tracing::debug!(%error, "a reopened tab did not load");
                    }
                }
                if let Some(slot) = inner.lock().all_tabs_mut().find(|t| t.handle == tab.handle) {
                    slot.page = page;
                }
            });
        }
        let _ = tokio::time::timeout(REOPEN_WAIT, async {
            while loads.join_next().await.is_some() {}
        })
        .await;
        loads.detach_all();
        not_reopened
    }

    /// A browser of an isolated context went away by itself (a pool
    /// browser that died): the sessions in that context, and only they,
    /// hear `BROWSER_RESTARTED` in calls running now, get their tabs back
    /// in a new browser for the same context (the host takes one), and a
    /// notice with their next call. Nobody else notices.
    pub(super) async fn recover_context(self: &Arc<Self>, context: &ContextId, cause: &str) {
        let (sessions, plan) = {
            let registry = self.lock();
            let sessions: Vec<SessionId> = registry
                .sessions
                .iter()
                .filter(|(_, state)| state.context.as_ref() == Some(context))
                .map(|(id, _)| id.clone())
                .collect();
            let mut plan: Vec<Reopening> = Vec::new();
            for id in &sessions {
                let Ok(state) = registry.session(id) else {
                    continue;
                };
                for tab in &state.tabs {
                    tab.page.mark_browser_gone(cause);
                    plan.push(Reopening {
                        handle: tab.handle.clone(),
                        context: Some(context.clone()),
                        owner: Some(id.to_string()),
                        url: tab.last_url.clone(),
                    });
                }
            }
            (sessions, plan)
        };
        if sessions.is_empty() {
            return;
        }
        tracing::warn!(context = context.as_str(), %cause, ?sessions, "a session's browser went away; reopening its tabs in a new one");
        let host = self.host();
        // A pool that cannot give a browser now (full, or restarting) is
        // asked again until the bound; the tabs wait, gone, meanwhile.
        let deadline = tokio::time::Instant::now() + RECOVERY_BOUND;
        let mut plan = plan;
        let mut not_reopened = Vec::new();
        loop {
            let last_try = tokio::time::Instant::now() >= deadline;
            let failed = self.reopen(&host, plan, last_try).await;
            let (again, given_up): (Vec<NotReopened>, Vec<NotReopened>) = failed
                .into_iter()
                .partition(|failed| !last_try && failed.may_come_back());
            not_reopened.extend(given_up);
            // Tabs closed meanwhile (their session ended) are not asked for.
            let again: Vec<NotReopened> = {
                let registry = self.lock();
                again
                    .into_iter()
                    .filter(|failed| registry.all_tabs().any(|t| t.handle == failed.tab.handle))
                    .collect()
            };
            if again.is_empty() {
                break;
            }
            tracing::info!(context = context.as_str(), tabs = again.len(), error = %again[0].error, "no browser for the session yet; asking again");
            plan = again.into_iter().map(|failed| failed.tab).collect();
            tokio::time::sleep(RECOVERY_PAUSE).await;
        }
        let when = clock(SystemTime::now());
        let mut registry = self.lock();
        for id in &sessions {
            if let Ok(state) = registry.session_mut(id) {
                let lost = not_reopened_words(&not_reopened, id);
                let reopened = reopened_words(state, !lost.is_empty());
                let took_place = if lost.is_empty() {
                    " and a new one took its place"
                } else {
                    ""
                };
                state.notices.push(format!(
                    "Note: your browser stopped ({cause}){took_place} at {when}; {reopened}{lost}."
                ));
            }
        }
        drop(registry);
        self.tabs_changed.send_modify(|generation| *generation += 1);
    }

    /// A blank page in `host`, prepared for operations.
    pub(super) async fn new_page(
        &self,
        host: &Arc<dyn ViewHost>,
        context: Option<ContextId>,
        owner: Option<String>,
    ) -> crate::Result<Arc<Page>> {
        let session = owner.clone().map(SessionId);
        let view = host
            .create_view(CreateViewOptions {
                context,
                background: true,
                owner,
            })
            .await?;
        match self
            .attach_page(Arc::clone(host), view.clone(), session.as_ref())
            .await
        {
            Ok(page) => Ok(Arc::new(page)),
            Err(error) => {
                let _ = host.destroy_view(&view).await;
                Err(error)
            }
        }
    }
}

/// What a notice says of a session's tabs after they were reopened
/// (`some_lost`: some could not be, and the notice says so after this).
fn reopened_words(state: &super::tabs::SessionState, some_lost: bool) -> String {
    let tabs: Vec<&str> = state.tabs.iter().map(|t| t.handle.as_str()).collect();
    match tabs.as_slice() {
        [] if some_lost => "no tab of yours came back".to_owned(),
        [] => "you had no open tabs".to_owned(),
        [one] => format!(
            "your tab {one} was reopened at its last URL; refs from before no longer work: take a snapshot"
        ),
        many => format!(
            "your tabs {} were reopened at their last URLs; refs from before no longer work: take a snapshot",
            many.join(", ")
        ),
    }
}

/// What a notice adds for the tabs of `session` that could not be
/// reopened: empty when there are none.
fn not_reopened_words(not_reopened: &[NotReopened], session: &SessionId) -> String {
    let session = session.to_string();
    not_reopened
        .iter()
        .filter(|failed| failed.tab.owner.as_deref() == Some(session.as_str()))
        .map(|failed| {
            format!(
                "; your tab {} ({}) could not be reopened ({}): open its URL again",
                failed.tab.handle, failed.tab.url, failed.error
            )
        })
        .collect()
}

/// `10:42:07 UTC`: a time of day as notices and banners give it.
pub fn clock(at: SystemTime) -> String {
    let seconds = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_utc_time_of_day() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400 * 3 + 10 * 3600 + 42 * 60 + 7);
        assert_eq!(clock(at), "10:42:07 UTC");
    }
}
