//! How a call meets the browser's and the page's health: it waits for a
//! restarting browser (bounded), fails fast on a crashed page, ends at once
//! when the page crashes or the browser goes away under it, explains a lost
//! connection with the cause, and moves a tab off a page whose main thread
//! is stuck when navigating it.

use std::sync::Arc;
use std::time::Duration;

use super::{Inner, SessionId, Tab, TabHandle};
use crate::error::{BrowserError, Result};
use crate::host::{BrowserState, ViewHost};
use crate::page::Budget;
use crate::page::PageHealth;
use crate::page::navigate::{self, NavigationOutcome, NavigationTarget};

/// How long a call waits for a restarting browser to be back.
const RESTART_WAIT: Duration = Duration::from_secs(15);

/// How long a call that lost its browser waits to learn why.
const CAUSE_WAIT: Duration = Duration::from_secs(3);

/// Times a read is tried when the connection keeps dropping under it.
const READ_ATTEMPTS: u32 = 3;

impl Inner {
    /// Returns once the browser runs and its tabs are back (at once,
    /// unless it is restarting). While a relaunch is under way, a call
    /// waits for it, at most [`RESTART_WAIT`]; while a connection is being
    /// re-established, or after the browser was given up on, it fails
    /// at once.
    ///
    /// # Errors
    /// `NOT_CONNECTED` while reconnecting or past the wait,
    /// `BROWSER_CRASHED` when the browser could not be restarted.
    pub(super) async fn await_browser(&self) -> Result<()> {
        let Some(supervisor) = &self.supervisor else {
            return Ok(());
        };
        let mut state = supervisor.watch();
        let mut recovered = self.recovered.subscribe();
        let wait = async {
            loop {
                let now = state.borrow_and_update().clone();
                match &now {
                    BrowserState::Running { generation, .. }
                        if *recovered.borrow_and_update() >= *generation =>
                    {
                        return Ok(());
                    }
                    // Relaunched; its tabs are being reopened.
                    BrowserState::Running { .. } => {}
                    // A relaunch takes a moment: worth waiting for.
                    BrowserState::Restarting {
                        reconnecting: false,
                        ..
                    } => {}
                    other => {
                        return Err(other.unavailable().unwrap_or_else(|| {
                            BrowserError::not_connected("the browser is not running")
                        }));
                    }
                }
                tokio::select! {
                    changed = state.changed() => if changed.is_err() {
                        return Err(BrowserError::not_connected("the browser was shut down"));
                    },
                    _ = recovered.changed() => {}
                }
            }
        };
        match tokio::time::timeout(RESTART_WAIT, wait).await {
            Ok(result) => result,
            Err(_) => Err(supervisor.state().unavailable().unwrap_or_else(|| {
                BrowserError::not_connected("the browser's tabs are still being reopened")
            })),
        }
    }

    /// The session's active tab for reading what it recorded (console,
    /// network), which works without the browser; with no tab while the
    /// browser cannot be reached, why it cannot (rather than that there
    /// is no tab).
    ///
    /// # Errors
    /// The host's `NOT_CONNECTED`; `TAB_NOT_FOUND`.
    pub(super) fn recorded_tab(&self, session: &SessionId) -> Result<Tab> {
        self.active_tab(session).map_err(|error| match error {
            BrowserError::TabNotFound { .. } => self.host().unreachable().unwrap_or(error),
            other => other,
        })
    }

    /// [`Inner::await_browser`], then the host's own word on whether it can
    /// reach its browser ([`ViewHost::ready`]): what every call that needs
    /// the browser asks first, so that an agent hears that the person's
    /// Chrome is missing rather than that its tab is.
    ///
    /// # Errors
    /// Those of [`Inner::await_browser`]; the host's `NOT_CONNECTED`.
    pub(super) async fn await_reachable(&self) -> Result<()> {
        self.await_browser().await?;
        self.host().ready().await
    }

    /// `result`, with a lost browser explained: when the call failed
    /// because `host` (the browser it used) went away, `BROWSER_RESTARTED`
    /// naming why, once the supervisor knows (at most [`CAUSE_WAIT`]).
    pub(super) async fn explained<T>(
        &self,
        host: &Arc<dyn ViewHost>,
        result: Result<T>,
    ) -> Result<T> {
        let lost = matches!(
            result,
            Err(BrowserError::BrowserCrashed { .. }
                | BrowserError::NotConnected { .. }
                | BrowserError::TabNotFound { .. })
        ) && !host.is_connected();
        let Some(supervisor) = self.supervisor.as_ref().filter(|_| lost) else {
            return result;
        };
        // The dead browser's address, to tell it from the next one.
        let dead = Arc::as_ptr(host).cast::<()>() as usize;
        let moved_on = move |state: &BrowserState| match state {
            BrowserState::Running { host, .. } => Arc::as_ptr(host).cast::<()>() as usize != dead,
            _ => true,
        };
        let mut state = supervisor.watch();
        let _ = tokio::time::timeout(CAUSE_WAIT, state.wait_for(moved_on)).await;
        let now = state.borrow().clone();
        match now {
            BrowserState::Restarting { cause, .. }
            | BrowserState::Running {
                restarted: Some(crate::host::Restart { cause, .. }),
                ..
            } if moved_on(&now) => Err(BrowserError::BrowserRestarted { cause }),
            other => match other.unavailable() {
                Some(error) => Err(error),
                None => result,
            },
        }
    }

    /// The session's active tab, once the browser is there, unless its
    /// page has crashed.
    ///
    /// # Errors
    /// Those of [`Inner::await_browser`]; `TAB_NOT_FOUND`; `PAGE_CRASHED`
    /// until the tab is reloaded or navigated.
    pub(super) async fn usable_tab(self: &Arc<Self>, session: &SessionId) -> Result<Tab> {
        self.await_reachable().await?;
        let tab = self.active_tab(session)?;
        match tab.page.health() {
            PageHealth::Crashed => Err(BrowserError::PageCrashed {
                tab: tab.handle.to_string(),
                in_flight: false,
            }),
            PageHealth::Detached { reason } => self.drive_again(tab, &reason).await,
            PageHealth::Alive | PageHealth::BrowserGone { .. } => Ok(tab),
        }
    }

    /// A tab whose debugger was taken away, driven again: a new page on the
    /// same view in the same slot (refs from before no longer work). Fails
    /// as the host says while the tab is not free.
    async fn drive_again(self: &Arc<Self>, mut tab: Tab, reason: &str) -> Result<Tab> {
        tracing::info!(tab = %tab.handle, reason, "driving a tab again after its debugger was taken away");
        let session = self.lock().owners.get(&tab.handle).cloned();
        let page = Arc::new(
            self.attach_page(
                Arc::clone(tab.page.host()),
                tab.page.view().clone(),
                session.as_ref(),
            )
            .await?,
        );
        if let Some(slot) = self.lock().all_tabs_mut().find(|t| t.handle == tab.handle) {
            slot.page = Arc::clone(&page);
        }
        if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
            self.follow_loads(&page);
        }
        tab.page = page;
        Ok(tab)
    }

    /// Runs a read on the session's active tab (guarded, see
    /// [`Self::guarded`]). When the connection to the browser dropped under
    /// it, reads again on the connection that comes back (up to
    /// [`READ_ATTEMPTS`] in all): a read changes nothing, so running it
    /// again is safe (writes never are).
    pub(super) async fn read<T, F, Fut>(self: &Arc<Self>, session: &SessionId, read: F) -> Result<T>
    where
        F: Fn(Tab) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 1;
        loop {
            let tab = self.usable_tab(session).await?;
            match self.guarded(&tab, read(tab.clone())).await {
                Err(BrowserError::CallCut { detail }) if attempt < READ_ATTEMPTS => {
                    tracing::info!(%detail, attempt, "a read was cut by the connection dropping; reading again");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Runs `work` on `tab`, ending it as soon as the page crashes
    /// (`PAGE_CRASHED`) or its browser goes away (`BROWSER_RESTARTED`,
    /// naming why), rather than when some command times out.
    pub(super) async fn guarded<T>(
        &self,
        tab: &Tab,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let result = tokio::select! {
            biased;
            result = work => result,
            error = tab.page.failure(tab.handle.as_str()) => return Err(error),
        };
        match result {
            // The host lost the tab's debugger: its next use drives it again.
            Err(BrowserError::DebuggerDetached { detail }) => {
                tab.page.mark_detached(&detail);
                Err(BrowserError::DebuggerDetached { detail })
            }
            // The browser died under the call: say why.
            Err(_) => self.explained(tab.page.host(), result).await,
            ok => ok,
        }
    }

    /// Navigates `tab` (guarded, see [`Self::guarded`]) and explains a
    /// blocked navigation. When a busy script turns out to hold the page
    /// (the navigation marked it unresponsive: a script that started
    /// looping unnoticed), goes to the URL again on a fresh page in the
    /// same tab, within the same budget. Returns the tab and where it ended up.
    pub(super) async fn navigate_tab(
        self: &Arc<Self>,
        session: &SessionId,
        tab: Tab,
        target: NavigationTarget,
        budget: &Budget,
    ) -> Result<(TabHandle, NavigationOutcome)> {
        let navigated = self.navigate_once(&tab, target.clone(), budget).await;
        let held = navigated.is_err()
            && tab.page.is_unresponsive()
            && matches!(target, NavigationTarget::Url(_))
            && !budget.cancel_token().is_cancelled();
        if !held {
            return navigated.map(|outcome| (tab.handle, outcome));
        }
        let tab = self.unstuck(session, tab).await?;
        let outcome = self.navigate_once(&tab, target, budget).await?;
        Ok((tab.handle, outcome))
    }

    /// One navigation of `tab`, guarded, with a blocked one explained.
    async fn navigate_once(
        &self,
        tab: &Tab,
        target: NavigationTarget,
        budget: &Budget,
    ) -> Result<NavigationOutcome> {
        let cursor = tab.page.network_cursor();
        let navigated = self
            .guarded(tab, navigate::navigate(&tab.page, target, budget))
            .await;
        self.blocked_explained(&tab.handle, &tab.page, cursor, navigated)
            .await
    }

    /// `tab`, or, when its page is known to have stopped answering (a
    /// navigation found it so: a script that loops, dialogs in a loop),
    /// the same tab on a fresh page: a busy page cannot let go of its
    /// document. The old page is closed.
    pub(super) async fn unstuck(self: &Arc<Self>, session: &SessionId, tab: Tab) -> Result<Tab> {
        if !tab.page.is_unresponsive() {
            return Ok(tab);
        }
        tracing::info!(tab = %tab.handle, "replacing a page that does not respond");
        let context = self.lock().session(session)?.context.clone();
        let host = self.host();
        let created = self
            .new_page(&host, context, Some(session.to_string()))
            .await;
        let page = self.explained(&host, created).await?;
        let replaced = {
            let mut registry = self.lock();
            let slot = registry
                .all_tabs_mut()
                .find(|t| t.handle == tab.handle)
                .ok_or_else(|| BrowserError::TabNotFound {
                    tab: tab.handle.to_string(),
                })?;
            let old = std::mem::replace(&mut slot.page, Arc::clone(&page));
            let updated = slot.clone();
            (old, updated)
        };
        let (old, updated) = replaced;
        if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
            self.follow_loads(&updated.page);
        }
        let old_view = old.view().clone();
        tokio::spawn(async move {
            if let Err(error) = host.destroy_view(&old_view).await {
                tracing::debug!(%error, "could not close a page that does not respond");
            }
        });
        self.tabs_changed.send_modify(|generation| *generation += 1);
        Ok(updated)
    }
}
