//! Handoff: an agent asks the person to do something (log in, solve a
//! CAPTCHA), control passes to the person, and the agent hears what
//! changed once it comes back.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Browser, SessionId, Tab, TabHandle};
use crate::cdp::protocol::NetworkGetCookies;
use crate::control::Holder;
use crate::error::{BrowserError, Result};
use crate::page::observe;
use crate::page::{Budget, navigate};
use crate::snapshot::{Scope, Snapshot};

/// An agent asking the person for help (log in, solve a CAPTCHA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffRequest {
    /// The asking session.
    pub session: SessionId,
    /// What the agent asks for, in its words.
    pub reason: String,
}

/// What changed while the person had control during a handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffReport {
    /// The active tab's URL before and after.
    pub url_before: String,
    /// The active tab's URL now.
    pub url_after: String,
    /// The active tab's title now.
    pub title_after: String,
    /// Tabs of the session that appeared meanwhile.
    pub tabs_opened: Vec<TabHandle>,
    /// Tabs of the session that went away meanwhile.
    pub tabs_closed: Vec<TabHandle>,
    /// Whether the site's cookies changed (`None` if they could not be read).
    pub cookies_changed: Option<bool>,
    /// A fresh snapshot of the active tab.
    pub snapshot: Snapshot,
}

/// What a handoff compares before and after.
struct PageFacts {
    url: String,
    title: String,
    cookies: Option<Vec<(String, String)>>,
}

impl Browser {
    /// Asks the person to do something and waits (bounded, cancellable)
    /// until they return control; then reports what changed and returns a
    /// fresh snapshot. Control passes to the person while the request shows.
    ///
    /// # Errors
    /// `TIMEOUT` when the person does not return control in time (they keep
    /// it), `ABORTED` when cancelled, `TAB_NOT_FOUND` without an open tab.
    pub async fn handoff(
        &self,
        session: &SessionId,
        reason: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<HandoffReport> {
        if reason.trim().is_empty() {
            return Err(BrowserError::invalid(
                "reason",
                "say what the person should do",
            ));
        }
        let tab = self.inner.active_tab(session)?;
        let budget = self.inner.budget("handoff", Some(timeout), cancel)?;
        let before = self.page_facts(&tab, &budget).await?;
        let tabs_before: Vec<TabHandle> = self
            .list_tabs(session)
            .await?
            .into_iter()
            .map(|t| t.handle)
            .collect();

        let mut control = self.watch_control();
        // Control first, then the banner: whoever sees the request can act on it.
        self.take_control();
        self.inner.handoff.send_replace(Some(HandoffRequest {
            session: session.clone(),
            reason: reason.trim().to_owned(),
        }));
        tracing::info!(target: crate::AUDIT, event = "handoff", %session, reason = reason.trim());
        let waited = budget
            .run("wait for the person", async {
                loop {
                    if control.borrow_and_update().holder == Holder::Agent {
                        return Ok(());
                    }
                    if control.changed().await.is_err() {
                        return Err(BrowserError::Aborted);
                    }
                }
            })
            .await;
        self.inner.handoff.send_replace(None);
        let outcome = match &waited {
            Ok(()) => "OK",
            Err(error) => error.code(),
        };
        tracing::info!(target: crate::AUDIT, event = "handoff_done", %session, outcome);
        waited?;

        let tab = self.inner.active_tab(session)?;
        let grace = budget.grace(self.inner.config.operation_timeout);
        let after = self.page_facts(&tab, &grace).await?;
        let tabs_after: Vec<TabHandle> = self
            .list_tabs(session)
            .await?
            .into_iter()
            .map(|t| t.handle)
            .collect();
        let snapshot = observe::snapshot(
            &tab.page,
            &Scope::Page,
            &self.inner.config.snapshot_limits,
            &grace,
        )
        .await?;
        // The agent has now seen the page as it is.
        let _ = self.control_returned_since_last_call(session);
        Ok(HandoffReport {
            url_before: before.url,
            url_after: after.url,
            title_after: after.title,
            tabs_opened: tabs_after
                .iter()
                .filter(|t| !tabs_before.contains(t))
                .cloned()
                .collect(),
            tabs_closed: tabs_before
                .iter()
                .filter(|t| !tabs_after.contains(t))
                .cloned()
                .collect(),
            cookies_changed: match (before.cookies, after.cookies) {
                (Some(a), Some(b)) => Some(a != b),
                _ => None,
            },
            snapshot,
        })
    }

    /// URL, title and the site's cookies (names and values, sorted) of a tab.
    async fn page_facts(&self, tab: &Tab, budget: &Budget) -> Result<PageFacts> {
        let outcome = navigate::current_outcome(&tab.page, budget, true).await?;
        let cookies = tab
            .page
            .call(
                budget,
                &NetworkGetCookies {
                    urls: vec![outcome.url.clone()],
                },
            )
            .await
            .ok()
            .map(|found| {
                let mut pairs: Vec<(String, String)> = found
                    .cookies
                    .into_iter()
                    .map(|c| (c.name, c.value))
                    .collect();
                pairs.sort();
                pairs
            });
        Ok(PageFacts {
            url: outcome.url,
            title: outcome.title,
            cookies,
        })
    }

    /// The pending handoff request, for the live view's banner.
    pub fn watch_handoff(&self) -> watch::Receiver<Option<HandoffRequest>> {
        self.inner.handoff.subscribe()
    }
}
