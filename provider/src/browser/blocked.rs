//! What the host policy refused on the wire, explained.
//!
//! A browser the shell launched cannot reach a refused host at all (see
//! [`crate::policy`]); to the page such a request simply fails, as if the
//! name did not exist. Here those failures are told apart from real ones:
//! a navigation that a redirect or the page itself took to a refused host
//! becomes `NAVIGATION_BLOCKED`, and the network log says "blocked by
//! policy" with the host.

use std::time::Duration;

use super::{Inner, TabHandle};
use crate::error::{BlockReason, BrowserError, Result};
use crate::page::Page;
use crate::page::navigate::NavigationOutcome;
use crate::page::network::NetworkRead;

/// How long to wait for the failed request's events after a navigation
/// was seen to fail.
const FAILURE_EVENTS_BOUND: Duration = Duration::from_millis(300);

/// Chromium's error texts for what the policy refuses: a name the resolver
/// rules map to nothing, a URL the page's blocked patterns match.
const REFUSED_ERRORS: [&str; 2] = ["net::ERR_NAME_NOT_RESOLVED", "net::ERR_BLOCKED_BY_CLIENT"];

/// A main-frame navigation the policy stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedNavigation {
    /// The tab it happened in.
    pub tab: TabHandle,
    /// Where it was going (after redirects).
    pub url: String,
    /// The rule that refused it.
    pub reason: BlockReason,
}

impl std::fmt::Display for BlockedNavigation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} in tab {} ({})", self.url, self.tab, self.reason)
    }
}

impl Inner {
    /// The main-frame navigation in `page` (tab `tab`) since the network
    /// log was at `cursor` that the policy stopped, if one was.
    pub(super) async fn blocked_navigation(
        &self,
        tab: &TabHandle,
        page: &Page,
        cursor: u64,
    ) -> Option<BlockedNavigation> {
        let policy = self.policy_of_tab(tab);
        if !policy.has_host_lists() {
            return None;
        }
        let failed = page
            .failed_main_document(cursor, FAILURE_EVENTS_BOUND)
            .await?;
        let refused = failed
            .failure
            .as_deref()
            .is_some_and(|failure| REFUSED_ERRORS.iter().any(|e| failure.starts_with(e)));
        let reason = policy.refuses_host(&failed.url)?;
        refused.then_some(BlockedNavigation {
            tab: tab.clone(),
            url: failed.url,
            reason,
        })
    }

    /// A navigation's `result`: one that failed because it went (by a
    /// redirect) to a host the policy refuses is `NAVIGATION_BLOCKED`.
    pub(super) async fn blocked_explained(
        &self,
        tab: &TabHandle,
        page: &Page,
        cursor: u64,
        result: Result<NavigationOutcome>,
    ) -> Result<NavigationOutcome> {
        match result {
            Err(BrowserError::NavigationFailed { url, error_text }) => {
                match self.blocked_navigation(tab, page, cursor).await {
                    Some(blocked) => Err(BrowserError::NavigationBlocked {
                        url: blocked.url,
                        reason: blocked.reason,
                    }),
                    None => Err(BrowserError::NavigationFailed { url, error_text }),
                }
            }
            other => other,
        }
    }

    /// The tabs among `tabs` (just opened, with their URLs) that went to a
    /// host the policy refuses: such a tab shows the browser's error page.
    pub(super) fn blocked_popups(&self, tabs: &[super::TabInfo]) -> Vec<BlockedNavigation> {
        tabs.iter()
            .filter_map(|tab| {
                let reason = self.policy_of_tab(&tab.handle).refuses_host(&tab.url)?;
                Some(BlockedNavigation {
                    tab: tab.handle.clone(),
                    url: tab.url.clone(),
                    reason,
                })
            })
            .collect()
    }

    /// Says "blocked by policy" with the host in a network read's failures
    /// that the policy caused.
    pub(super) fn explain_refusals(&self, tab: &TabHandle, read: &mut NetworkRead) {
        let policy = self.policy_of_tab(tab);
        if !policy.has_host_lists() {
            return;
        }
        for entry in &mut read.entries {
            let Some(failure) = &entry.failure else {
                continue;
            };
            if !REFUSED_ERRORS.iter().any(|e| failure.starts_with(e))
                && !failure.starts_with("blocked: inspector")
            {
                continue;
            }
            if let Some(reason) = policy.refuses_host(&entry.url) {
                let host = url::Url::parse(&entry.url)
                    .ok()
                    .and_then(|url| url.host_str().map(str::to_owned))
                    .unwrap_or_default();
                entry.failure = Some(format!("blocked by policy: {host} ({reason})"));
            }
        }
    }
}
