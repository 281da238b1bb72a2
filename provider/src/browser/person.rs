//! The person's side of the tab registry: every tab for the tab strip,
//! the person's own tabs (opened with +, the start page, a CDP client's
//! pages), handing tabs to agents and taking them back.

use std::sync::Arc;

use super::{Activity, Browser, Inner, NavigationRequest, SessionId, Tab, TabHandle, TabInfo};
use crate::cdp::protocol::DialogOpening;
use crate::error::{BrowserError, Result};
use crate::host::{CreateViewOptions, ViewId};
use crate::page::Page;
use crate::page::navigate::{self, NavigationTarget};

/// One tab as the person watching sees it: whose it is and what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTab {
    /// The agent session that owns it; `None`: the person's.
    pub session: Option<SessionId>,
    /// Its handle.
    pub handle: TabHandle,
    /// The view behind it.
    pub view: ViewId,
    /// Current URL.
    pub url: String,
    /// Current title.
    pub title: String,
    /// The page's icon as a `data:` URL (loaded by the browser), known while people watch.
    pub icon: Option<String>,
    /// Opened by an external CDP client (which owns its viewport).
    pub external: bool,
    /// Its page crashed; a reload brings it back.
    pub crashed: bool,
    /// Whether it is its session's active tab.
    pub active: bool,
}

impl Browser {
    /// Whether a tab with this handle exists (its page may be between
    /// browsers, being reopened after a restart).
    pub fn knows_tab(&self, tab: &TabHandle) -> bool {
        self.inner.lock().all_tabs().any(|t| &t.handle == tab)
    }

    /// Every tab, agents' and the person's, for the person watching (the
    /// live view's tab strip), in the order they were opened.
    pub async fn live_tabs(&self) -> Result<Vec<LiveTab>> {
        let tabs: Vec<(Option<SessionId>, TabHandle, Arc<Page>, bool)> = {
            let registry = self.inner.lock();
            let mut tabs: Vec<_> = registry
                .sessions
                .iter()
                .flat_map(|(id, state)| {
                    state.tabs.iter().map(move |t| {
                        (
                            Some(id.clone()),
                            t.handle.clone(),
                            Arc::clone(&t.page),
                            state.active.as_ref() == Some(&t.handle),
                        )
                    })
                })
                .chain(
                    registry
                        .unowned
                        .iter()
                        .map(|t| (None, t.handle.clone(), Arc::clone(&t.page), false)),
                )
                .collect();
            tabs.sort_by_key(|(_, handle, ..)| handle.number());
            tabs
        };
        let views = self.inner.host().list_views().await?;
        Ok(tabs
            .into_iter()
            .filter_map(|(session, handle, page, active)| {
                let info = views.iter().find(|v| &v.id == page.view())?;
                Some(LiveTab {
                    session,
                    handle,
                    url: info.url.clone(),
                    title: info.title.clone(),
                    icon: page.icon(),
                    external: page.is_external(),
                    crashed: page.health() == crate::page::PageHealth::Crashed,
                    view: page.view().clone(),
                    active,
                })
            })
            .collect())
    }

    /// People watch from now on (a live view runs): every tab, present and
    /// future, is followed so the tab strip shows current titles and the
    /// timeline shows JavaScript dialogs. Off by default, because following
    /// costs agents time on every page (measured: about 8 ms per click on a
    /// large page).
    pub fn follow_pages_for_people(&self) {
        if self
            .inner
            .people_watch
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let pages: Vec<Arc<Page>> = {
            let registry = self.inner.lock();
            registry.all_tabs().map(|t| Arc::clone(&t.page)).collect()
        };
        for page in &pages {
            self.inner.follow_loads(page);
        }
    }

    /// The sessions open now (for the person handing a tab to one).
    pub fn sessions(&self) -> Vec<SessionId> {
        let mut sessions: Vec<SessionId> = self.inner.lock().sessions.keys().cloned().collect();
        sessions.sort_by_key(|s| s.0.trim_start_matches('s').parse::<u64>().unwrap_or(0));
        sessions
    }

    /// Tabs that belong to no agent, with their URL and title: what an
    /// agent may claim with [`Browser::claim_tab`].
    pub async fn unowned_tabs(&self) -> Result<Vec<TabInfo>> {
        let tabs = self.inner.lock().unowned.clone();
        let views = self.inner.host().list_views().await?;
        Ok(tabs
            .into_iter()
            .filter_map(|tab| {
                let view = views.iter().find(|v| &v.id == tab.page.view())?;
                Some(TabInfo {
                    handle: tab.handle,
                    url: view.url.clone(),
                    title: view.title.clone(),
                    active: false,
                })
            })
            .collect())
    }

    /// An agent takes over a tab that belongs to no agent. The caller names
    /// the tab by handle, URL and title exactly as it last saw them; if any
    /// of them changed meanwhile the claim fails and nothing moves. The tab
    /// becomes the session's active tab and goes back to the person (not
    /// closed) when the session ends.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` when no unowned tab has that handle or it changed,
    /// `TAB_NOT_OWNED` when an agent owns it, `HUMAN_INTERVENED` while the
    /// person has control.
    pub async fn claim_tab(
        &self,
        session: &SessionId,
        tab: &TabHandle,
        url: &str,
        title: &str,
    ) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = self.unowned_view(tab)?;
        let views = self.inner.host().list_views().await?;
        let now = views
            .iter()
            .find(|v| v.id == view)
            .ok_or_else(|| BrowserError::TabNotFound { tab: tab.0.clone() })?;
        if now.url != url || now.title != title {
            return Err(BrowserError::TabNotFound {
                tab: format!(
                    "{tab} (it changed since it was listed: now {:?} titled {:?}; list the tabs again)",
                    now.url, now.title
                ),
            });
        }
        self.move_to_session(session, tab)
    }

    /// The person hands one of their tabs to an agent session (from the
    /// tab strip). Like a claim, it goes back to the person when the
    /// session ends.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND`, `TAB_NOT_OWNED`, `SESSION_NOT_FOUND`.
    pub fn give_tab(&self, tab: &TabHandle, session: &SessionId) -> Result<()> {
        self.move_to_session(session, tab)
    }

    /// Opens a tab for the person (the tab strip's "new tab") and waits
    /// (bounded) for it to load: it belongs to no agent. `url` is checked
    /// by the navigation policy.
    ///
    /// # Errors
    /// `NAVIGATION_BLOCKED`, or what creating the tab fails with.
    pub async fn open_person_tab(&self, url: &str) -> Result<TabHandle> {
        let target = self.inner.config.policy.check(url)?;
        let host = &self.inner.host();
        let view = host
            .create_view(CreateViewOptions {
                context: None,
                background: false,
                owner: None,
            })
            .await?;
        let page = match self
            .inner
            .attach_page(Arc::clone(host), view.clone(), None)
            .await
        {
            Ok(page) => page,
            Err(error) => {
                let _ = host.destroy_view(&view).await;
                return Err(error);
            }
        };
        let page = Arc::new(page);
        let handle = self.inner.adopt_unowned(Arc::clone(&page));
        if target.as_str() != "about:blank" {
            let budget = self.inner.person_budget();
            navigate::navigate(&page, NavigationTarget::Url(target), &budget).await?;
        }
        Ok(handle)
    }

    /// Registers the browser's existing tabs that belong to nobody yet (a
    /// start page, tabs of a persistent profile) as the person's.
    ///
    /// # Errors
    /// What listing or attaching to the tabs fails with.
    pub async fn adopt_unowned_views(&self) -> Result<()> {
        let known: Vec<ViewId> = {
            let registry = self.inner.lock();
            registry.all_tabs().map(|t| t.page.view().clone()).collect()
        };
        for view in self.inner.host().list_views().await? {
            if known.contains(&view.id) {
                continue;
            }
            let page = self
                .inner
                .attach_page(self.inner.host(), view.id, None)
                .await?;
            self.inner.adopt_unowned(Arc::new(page));
        }
        Ok(())
    }

    /// Shows a page that someone outside the shell opened (a CDP client
    /// of the shell's endpoint) in the browser column, as a tab of the
    /// person's; nothing happens for a target that is already a tab or is
    /// not a page.
    ///
    /// # Errors
    /// Whatever listing the views or preparing the page reports.
    pub async fn adopt_external_view(&self, target_id: &str) -> Result<()> {
        let known = {
            let registry = self.inner.lock();
            registry
                .all_tabs()
                .any(|t| t.page.view().as_str() == target_id)
        };
        if known {
            return Ok(());
        }
        let views = self.inner.host().list_views().await?;
        let Some(view) = views.into_iter().find(|v| v.id.as_str() == target_id) else {
            return Ok(());
        };
        let page = self
            .inner
            .attach_page(self.inner.host(), view.id, None)
            .await?;
        page.mark_external();
        self.inner.adopt_unowned(Arc::new(page));
        Ok(())
    }

    /// The person closes any tab from the tab strip (an agent's included:
    /// the person is in charge; the agent finds it gone).
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` for an unknown handle.
    pub async fn close_any_tab(&self, tab: &TabHandle) -> Result<()> {
        let view = self.view_of_any(tab)?;
        self.inner.host().destroy_view(&view).await?;
        self.inner.forget_view(&view);
        Ok(())
    }

    /// The person navigates any tab from the address bar (http(s) only,
    /// like agents). Returns once the navigation has started; the live view
    /// shows the rest.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND`, `NAVIGATION_BLOCKED`, `INVALID_ARGUMENT` (no
    /// history entry to go to).
    pub async fn person_navigate(
        &self,
        tab: &TabHandle,
        target: NavigationRequest<'_>,
    ) -> Result<()> {
        let page = self.page_of_any(tab)?;
        let target = self.inner.checked_target(None, target)?;
        let budget = self.inner.person_budget();
        navigate::start(&page, target, &budget).await
    }

    fn unowned_view(&self, tab: &TabHandle) -> Result<ViewId> {
        let registry = self.inner.lock();
        if let Some(found) = registry.unowned.iter().find(|t| &t.handle == tab) {
            return Ok(found.page.view().clone());
        }
        if registry.owners.contains_key(tab) {
            return Err(BrowserError::TabNotOwned { tab: tab.0.clone() });
        }
        Err(BrowserError::TabNotFound { tab: tab.0.clone() })
    }

    fn page_of_any(&self, tab: &TabHandle) -> Result<Arc<Page>> {
        let registry = self.inner.lock();
        registry
            .all_tabs()
            .find(|t| &t.handle == tab)
            .map(|t| Arc::clone(&t.page))
            .ok_or_else(|| BrowserError::TabNotFound { tab: tab.0.clone() })
    }

    fn view_of_any(&self, tab: &TabHandle) -> Result<ViewId> {
        Ok(self.page_of_any(tab)?.view().clone())
    }

    fn move_to_session(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        {
            let mut registry = self.inner.lock();
            registry.session(session)?;
            let index = match registry.unowned.iter().position(|t| &t.handle == tab) {
                Some(index) => index,
                None if registry.owners.contains_key(tab) => {
                    return Err(BrowserError::TabNotOwned { tab: tab.0.clone() });
                }
                None => return Err(BrowserError::TabNotFound { tab: tab.0.clone() }),
            };
            let mut moved = registry.unowned.remove(index);
            moved.keep = true;
            registry.owners.insert(tab.clone(), session.clone());
            let state = registry.session_mut(session)?;
            state.tabs.push(moved);
            state.active = Some(tab.clone());
        }
        self.inner
            .tabs_changed
            .send_modify(|generation| *generation += 1);
        Ok(())
    }
}

impl Inner {
    /// Follows `page` for the person watching: bumps the tab strip when it
    /// loads or navigates (so its title, URL and icon there stay current;
    /// the browser's own notices of a new title can lag indefinitely), and puts
    /// JavaScript dialogs it opens on the activity timeline. Ends when the
    /// tab goes away.
    pub(super) fn follow_loads(self: &Arc<Self>, page: &Arc<Page>) {
        // A crash (and the reload that ends it) shows in the tab strip.
        let mut health = page.watch_health();
        let watcher = Arc::downgrade(self);
        tokio::spawn(async move {
            while health.changed().await.is_ok() {
                let Some(inner) = watcher.upgrade() else {
                    return;
                };
                inner
                    .tabs_changed
                    .send_modify(|generation| *generation += 1);
            }
        });
        let page = Arc::clone(page);
        let inner = Arc::downgrade(self);
        tokio::spawn(async move {
            let Ok(mut events) = page.events().await else {
                return;
            };
            // A page loaded before people watched has an icon already.
            if page.refresh_icon().await
                && let Some(inner) = inner.upgrade()
            {
                inner
                    .tabs_changed
                    .send_modify(|generation| *generation += 1);
            }
            while let Some(event) = events.recv().await {
                let Some(inner) = inner.upgrade() else { return };
                match event.method.as_str() {
                    "Page.loadEventFired"
                    | "Page.domContentEventFired"
                    | "Page.navigatedWithinDocument" => {
                        inner
                            .tabs_changed
                            .send_modify(|generation| *generation += 1);
                        if event.method != "Page.navigatedWithinDocument" {
                            let page = Arc::clone(&page);
                            let inner = Arc::downgrade(&inner);
                            tokio::spawn(async move {
                                if page.refresh_icon().await
                                    && let Some(inner) = inner.upgrade()
                                {
                                    inner
                                        .tabs_changed
                                        .send_modify(|generation| *generation += 1);
                                }
                            });
                        }
                    }
                    "Page.javascriptDialogOpening" => {
                        let Some(dialog) = event.decode::<DialogOpening>() else {
                            continue;
                        };
                        let Some(session) = inner.owner_of(page.view()) else {
                            continue;
                        };
                        let answer = if dialog.kind == "beforeunload" {
                            "accepted"
                        } else {
                            "dismissed"
                        };
                        let message: String = dialog.message.chars().take(120).collect();
                        let _ = inner.activity.send(Activity {
                            call: 0,
                            session,
                            tool: format!("{} dialog", dialog.kind),
                            summary: format!("{message:?} ({answer})"),
                            arguments: String::new(),
                            outcome: Some(Ok(())),
                            millis: None,
                            headline: format!("dialog {answer}"),
                            result: String::new(),
                        });
                    }
                    _ => {}
                }
            }
        });
    }

    /// Records `page` as a tab of the person's (no agent's).
    pub(super) fn adopt_unowned(self: &Arc<Self>, page: Arc<Page>) -> TabHandle {
        let mut registry = self.lock();
        registry.next_tab += 1;
        let handle = TabHandle(format!("t{}", registry.next_tab));
        registry.unowned.push(Tab {
            handle: handle.clone(),
            page: Arc::clone(&page),
            last_url: String::new(),
            keep: false,
        });
        drop(registry);
        self.tabs_changed.send_modify(|generation| *generation += 1);
        if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
            self.follow_loads(&page);
        }
        handle
    }
}
