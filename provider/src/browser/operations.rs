//! The page operations agents call on their active tab: open, navigate,
//! execute, content, screenshot, console, inspect, network, wait, input
//! and snapshot. Each takes a budget (its bound and cancellation) and runs
//! guarded against the page crashing or the browser going away (see
//! [`super::calls`]); the work itself is in [`crate::page`].

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Browser, Inner, SessionId, TabHandle};
use crate::error::{BrowserError, Result};
use crate::page::content::{ContentRequest, ContentResult};
use crate::page::execute::{ExecuteRequest, ExecuteResult};
use crate::page::navigate::{NavigationOutcome, NavigationTarget};
use crate::page::observe;
use crate::page::screenshot::{Screenshot, ScreenshotRequest};
use crate::page::{Budget, DialogRecord, content, execute, input, screenshot, wait};
use crate::snapshot::{Scope, Snapshot};

/// A navigation as callers ask for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NavigationRequest<'a> {
    /// Go to this URL (checked against the navigation policy).
    Url(&'a str),
    /// One step back.
    Back,
    /// One step forward.
    Forward,
    /// Reload.
    Reload,
}

impl Browser {
    /// Opens `url` in the active tab, or in a new tab when `new_tab` is set
    /// or the session has none. Returns the tab used and where it ended up.
    pub async fn open(
        &self,
        session: &SessionId,
        url: &str,
        new_tab: bool,
        cancel: &CancellationToken,
    ) -> Result<(TabHandle, NavigationOutcome)> {
        let target = self.inner.policy_of(Some(session)).check(url)?;
        let budget = self.inner.mutating_budget(
            "open",
            Some(self.inner.config.navigation_timeout),
            cancel,
        )?;
        self.inner.await_reachable().await?;
        let tab = match self.inner.active_tab(session) {
            Ok(tab) if !new_tab => tab,
            Ok(_) | Err(BrowserError::TabNotFound { .. }) => {
                let host = self.inner.host();
                let created = self.new_tab(session, &budget).await;
                self.inner.explained(&host, created).await?
            }
            Err(other) => return Err(other),
        };
        let tab = self.inner.unstuck(session, tab).await?;
        // Opening a URL in a crashed tab is how it comes back.
        self.inner
            .navigate_tab(session, tab, NavigationTarget::Url(target), &budget)
            .await
    }

    /// Navigates the active tab: a URL (checked by policy), `back`, `forward` or `reload`.
    pub async fn navigate(
        &self,
        session: &SessionId,
        target: NavigationRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<NavigationOutcome> {
        let target = self.inner.checked_target(Some(session), target)?;
        self.inner.await_reachable().await?;
        // A crashed tab may be reloaded or navigated: that revives it.
        let mut tab = self.inner.active_tab(session)?;
        let target = match target {
            // A stuck page cannot let go of its document: go there afresh.
            NavigationTarget::Reload if tab.page.is_unresponsive() => {
                match self.inner.policy_of(Some(session)).check(&tab.last_url) {
                    Ok(url) => NavigationTarget::Url(url),
                    Err(_) => NavigationTarget::Reload,
                }
            }
            other => other,
        };
        if matches!(target, NavigationTarget::Url(_)) {
            tab = self.inner.unstuck(session, tab).await?;
        }
        let budget = self.inner.mutating_budget(
            "navigate",
            Some(self.inner.config.navigation_timeout),
            cancel,
        )?;
        let (_, outcome) = self
            .inner
            .navigate_tab(session, tab, target, &budget)
            .await?;
        Ok(outcome)
    }

    /// Runs JavaScript in the active tab.
    pub async fn execute(
        &self,
        session: &SessionId,
        script: &str,
        args: Vec<serde_json::Value>,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<ExecuteResult> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("execute", timeout, cancel)?;
        let request = ExecuteRequest {
            script: script.to_owned(),
            args,
            max_result_bytes: self.inner.config.execute_max_result_bytes,
        };
        self.inner
            .guarded(&tab, execute::execute(&tab.page, &request, &budget))
            .await
    }

    /// Fetches the active tab's content. `max_chars` defaults to the configured cap.
    pub async fn content(
        &self,
        session: &SessionId,
        mut request: ContentRequest,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<ContentResult> {
        let budget = self.inner.budget("content", timeout, cancel)?;
        if request.max_chars == 0 {
            request.max_chars = self.inner.config.content_max_chars;
        }
        let request = &request;
        let budget = &budget;
        self.inner
            .read(session, |tab| async move {
                content::content(&tab.page, request, budget).await
            })
            .await
    }

    /// Captures the active tab, within the configured ceilings.
    pub async fn screenshot(
        &self,
        session: &SessionId,
        mut request: ScreenshotRequest,
        cancel: &CancellationToken,
    ) -> Result<Screenshot> {
        let budget = self.inner.budget("screenshot", None, cancel)?;
        request.max_pixels = request
            .max_pixels
            .min(self.inner.config.screenshot_max_pixels);
        request.max_bytes = request
            .max_bytes
            .min(self.inner.config.screenshot_max_bytes);
        let request = &request;
        let budget = &budget;
        self.inner
            .read(session, |tab| async move {
                screenshot::screenshot(&tab.page, request, budget).await
            })
            .await
    }

    /// Console messages and uncaught exceptions of the active tab after
    /// cursor `since`, at `min_level` or above, at most `limit`.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn console(
        &self,
        session: &SessionId,
        since: u64,
        min_level: crate::page::console::Level,
        limit: usize,
    ) -> Result<crate::page::console::ConsoleRead> {
        let tab = self.inner.recorded_tab(session)?;
        Ok(tab.page.console(since, min_level, limit))
    }

    /// Structured evidence about one element of the active tab (see
    /// [`crate::page::inspect`]). Observation: allowed while a person has control.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab; the target errors of
    /// [`crate::page::inspect::inspect`].
    pub async fn inspect(
        &self,
        session: &SessionId,
        target: &crate::page::inspect::InspectTarget,
        options: &crate::page::inspect::InspectOptions,
        cancel: &CancellationToken,
    ) -> Result<crate::page::inspect::Inspection> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = Budget::new(
            "inspect",
            self.inner.config.operation_timeout,
            cancel.clone(),
        );
        self.inner
            .guarded(
                &tab,
                crate::page::inspect::inspect(
                    &tab.page,
                    target,
                    options,
                    &self.inner.config.snapshot_limits,
                    &budget,
                ),
            )
            .await
    }

    /// Requests of the active tab that ended after cursor `since` and that
    /// `filter` accepts, at most `limit`.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn network(
        &self,
        session: &SessionId,
        since: u64,
        filter: &crate::page::network::NetworkFilter,
        limit: usize,
    ) -> Result<crate::page::network::NetworkRead> {
        let tab = self.inner.recorded_tab(session)?;
        let mut read = tab.page.network(since, filter, limit);
        self.inner.explain_refusals(&tab.handle, &mut read);
        Ok(read)
    }

    /// Follows how many requests of the active tab are in flight; it
    /// changes whenever a request starts or ends.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn watch_network(&self, session: &SessionId) -> Result<watch::Receiver<usize>> {
        Ok(self.inner.active_tab(session)?.page.watch_in_flight())
    }

    /// A request of the active tab by its sequence number, with its
    /// response body (at most `max_chars` characters of text).
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab; `INVALID_ARGUMENT` for a request
    /// the log no longer has or whose body the browser no longer holds.
    pub async fn network_body(
        &self,
        session: &SessionId,
        seq: u64,
        max_chars: usize,
        cancel: &CancellationToken,
    ) -> Result<(
        crate::page::network::RequestEntry,
        crate::page::network::Body,
    )> {
        let tab = self.inner.active_tab(session)?;
        let entry = tab.page.network_entry(seq).ok_or_else(|| {
            BrowserError::invalid(
                "request",
                format!(
                    "no request {seq} in this tab's log (it keeps the last {})",
                    crate::page::network::NETWORK_CAP
                ),
            )
        })?;
        let budget = Budget::new(
            "network body",
            self.inner.config.operation_timeout,
            cancel.clone(),
        );
        let body = self
            .inner
            .guarded(
                &tab,
                crate::page::network::response_body(&tab.page, &entry, max_chars, &budget),
            )
            .await?;
        Ok((entry, body))
    }

    /// Follows the active tab's console: changes with every new entry.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` without an open tab.
    pub fn watch_console(&self, session: &SessionId) -> Result<watch::Receiver<u64>> {
        Ok(self.inner.active_tab(session)?.page.watch_console())
    }

    /// Waits in the active tab until `condition` holds, at most `timeout`.
    /// A person taking control ends the wait with `HUMAN_INTERVENED`.
    ///
    /// # Errors
    /// `TIMEOUT` with what was last seen, `ABORTED`, `HUMAN_INTERVENED`,
    /// `INVALID_ARGUMENT`, `TAB_NOT_FOUND`.
    pub async fn wait(
        &self,
        session: &SessionId,
        condition: &wait::Condition,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<wait::Waited> {
        let tab = self.inner.usable_tab(session).await?;
        // The page-side bound ends the wait; ours only guards against a stuck page.
        let budget =
            self.inner
                .mutating_budget("wait", Some(timeout + Duration::from_secs(1)), cancel)?;
        self.inner
            .guarded(&tab, wait::wait(&tab.page, condition, timeout, &budget))
            .await
    }

    /// Clicks at viewport coordinates in the active tab (fallback path).
    pub async fn click(
        &self,
        session: &SessionId,
        x: f64,
        y: f64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("click", None, cancel)?;
        self.inner
            .guarded(&tab, input::click(&tab.page, x, y, &budget))
            .await
    }

    /// Types text into the focused element of the active tab (fallback path).
    pub async fn type_text(
        &self,
        session: &SessionId,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let tab = self.inner.usable_tab(session).await?;
        let budget = self.inner.mutating_budget("type", None, cancel)?;
        self.inner
            .guarded(&tab, input::type_text(&tab.page, text, &budget))
            .await
    }

    /// Takes a snapshot of the active tab: the visible page as a compact tree
    /// with refs for every actionable element. A whole-page snapshot is the
    /// base of the next action's diff.
    pub async fn snapshot(
        &self,
        session: &SessionId,
        scope: &Scope,
        cancel: &CancellationToken,
    ) -> Result<Snapshot> {
        let budget = &self.inner.budget("snapshot", None, cancel)?;
        let limits = &self.inner.config.snapshot_limits;
        self.inner
            .read(session, |tab| async move {
                observe::snapshot(&tab.page, scope, limits, budget).await
            })
            .await
    }

    /// Returns and forgets the JavaScript dialogs the active tab opened
    /// (and that were answered automatically) since the last call.
    pub fn take_dialogs(&self, session: &SessionId) -> Result<Vec<DialogRecord>> {
        Ok(self.inner.active_tab(session)?.page.take_dialogs())
    }
}

impl Inner {
    /// Where a navigation request goes, with its URL checked by the policy
    /// of `session` (the browser's alone for the person).
    pub(super) fn checked_target(
        &self,
        session: Option<&SessionId>,
        request: NavigationRequest<'_>,
    ) -> Result<NavigationTarget> {
        Ok(match request {
            NavigationRequest::Url(url) => {
                NavigationTarget::Url(self.policy_of(session).check(url)?)
            }
            NavigationRequest::Back => NavigationTarget::Back,
            NavigationRequest::Forward => NavigationTarget::Forward,
            NavigationRequest::Reload => NavigationTarget::Reload,
        })
    }
}
