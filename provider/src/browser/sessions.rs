//! Sessions and their tabs: opening and ending sessions, listing,
//! switching and closing tabs, and keeping the registry in step with the
//! browser (popups join their opener's session, closed tabs leave).

use std::sync::{Arc, Weak};

use super::tabs::{SessionState, Tab};
use super::{Browser, Inner, SessionId, SessionOptions, TabHandle};
use crate::error::{BrowserError, Result};
use crate::host::{CreateViewOptions, ViewEvent, ViewId};
use crate::page::{Budget, Page};
use crate::policy::HostRules;

/// One tab as a session sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabInfo {
    /// Its handle.
    pub handle: TabHandle,
    /// Current URL (empty for a blank tab).
    pub url: String,
    /// Current title.
    pub title: String,
    /// Whether it is the session's active tab.
    pub active: bool,
}

/// Who a browser target belongs to (see [`Browser::target_owner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetOwner {
    /// An agent session's tab.
    Agent(SessionId),
    /// The person's tab (opened by them, left by an agent, or a CDP
    /// client's page shown in the browser column).
    Person,
    /// Not one of the shell's tabs (yet).
    Unknown,
}

impl Browser {
    /// Opens a new session (with no tabs yet).
    pub async fn open_session(&self, options: SessionOptions) -> Result<SessionId> {
        self.inner.await_browser().await?;
        let context = if options.isolated {
            let host = self.inner.host();
            let created = host.create_context().await;
            Some(self.inner.explained(&host, created).await?)
        } else {
            None
        };
        let mut registry = self.inner.lock();
        registry.next_session += 1;
        let id = SessionId(format!("s{}", registry.next_session));
        registry.sessions.insert(
            id.clone(),
            SessionState {
                tabs: Vec::new(),
                active: None,
                context,
                seen_epoch: self.inner.control.state().epoch,
                notices: Vec::new(),
                hosts: HostRules::default(),
            },
        );
        drop(registry);
        self.inner.tell_host_sessions();
        Ok(id)
    }

    /// Ends the session: closes its tabs and its isolated context. Closing
    /// an unknown or already closed session succeeds.
    pub async fn close_session(&self, session: &SessionId) -> Result<()> {
        let Some(state) = self.inner.lock().sessions.remove(session) else {
            return Ok(());
        };
        {
            let mut registry = self.inner.lock();
            for tab in &state.tabs {
                registry.owners.remove(&tab.handle);
            }
            // Kept and claimed tabs go back to the person, handles unchanged.
            registry
                .unowned
                .extend(state.tabs.iter().filter(|t| t.keep).cloned());
        }
        self.inner
            .tabs_changed
            .send_modify(|generation| *generation += 1);
        // Kept tabs stay open and become the person's; the rest close.
        for tab in &state.tabs {
            if tab.keep {
                self.inner.host().release_view(tab.page.view()).await?;
            } else {
                self.inner.host().destroy_view(tab.page.view()).await?;
            }
        }
        self.inner.tell_host_sessions();
        // Disposing an isolated context would close kept tabs too.
        if let Some(context) = &state.context
            && !state.tabs.iter().any(|t| t.keep)
        {
            self.inner.host().destroy_context(context).await?;
        }
        Ok(())
    }

    /// Narrows the browser's policy for `session` with host lists of its
    /// own, replacing those it had (empty lists: the browser's policy
    /// alone). They hold for its navigations from now on and for its tabs'
    /// own requests (each tab is told at once, new ones as they open).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a rule that is not a host; `SESSION_NOT_FOUND`;
    /// what telling a tab fails with (the rules stay set).
    pub async fn set_host_rules(&self, session: &SessionId, rules: HostRules) -> Result<()> {
        let rules = rules.validated()?;
        let pages: Vec<Arc<Page>> = {
            let mut registry = self.inner.lock();
            let state = registry.session_mut(session)?;
            if state.hosts == rules {
                return Ok(());
            }
            state.hosts = rules;
            state.tabs.iter().map(|tab| Arc::clone(&tab.page)).collect()
        };
        let blocking = self.inner.policy_of(Some(session)).page_blocking();
        // Each tab is told at once, not one after another.
        futures_util::future::try_join_all(
            pages.iter().map(|page| page.set_blocking(blocking.clone())),
        )
        .await?;
        Ok(())
    }

    /// Lists the session's tabs with their current URL and title.
    pub async fn list_tabs(&self, session: &SessionId) -> Result<Vec<TabInfo>> {
        self.inner.await_reachable().await?;
        let (tabs, active) = {
            let registry = self.inner.lock();
            let state = registry.session(session)?;
            (state.tabs.clone(), state.active.clone())
        };
        let host = self.inner.host();
        let listed = host.list_views().await;
        let views = self.inner.explained(&host, listed).await?;
        Ok(tabs
            .into_iter()
            .filter_map(|tab| {
                let view = views.iter().find(|v| &v.id == tab.page.view())?;
                Some(TabInfo {
                    active: active.as_ref() == Some(&tab.handle),
                    handle: tab.handle,
                    url: if view.url == "about:blank" {
                        String::new()
                    } else {
                        view.url.clone()
                    },
                    title: view.title.clone(),
                })
            })
            .collect())
    }

    /// The session's active tab, if it has one.
    ///
    /// # Errors
    /// `TAB_NOT_FOUND` when it has none; while the browser cannot be
    /// reached, why (`NOT_CONNECTED`) rather than that.
    pub fn active_tab(&self, session: &SessionId) -> Result<TabHandle> {
        Ok(self.inner.recorded_tab(session)?.handle)
    }

    /// Makes `tab` the session's active tab and shows it.
    pub async fn switch_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = {
            let mut registry = self.inner.lock();
            let view = registry.owned_tab(session, tab)?.page.view().clone();
            registry.session_mut(session)?.active = Some(tab.clone());
            view
        };
        let host = self.inner.host();
        let shown = host.show_view(&view).await;
        self.inner.explained(&host, shown).await
    }

    /// Closes one tab. Closing the active tab activates the most recently
    /// opened remaining one; closing the last leaves the session with none.
    pub async fn close_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        self.inner.control.admit_mutation()?;
        let view = {
            let registry = self.inner.lock();
            registry.owned_tab(session, tab)?.page.view().clone()
        };
        let host = self.inner.host();
        let closed = host.destroy_view(&view).await;
        self.inner.explained(&host, closed).await?;
        self.inner.forget_view(&view);
        Ok(())
    }

    /// Closes every tab of the session; the session stays open, with no tabs.
    pub async fn reset(&self, session: &SessionId) -> Result<()> {
        self.inner.control.admit_mutation()?;
        self.inner.await_reachable().await?;
        let views: Vec<ViewId> = {
            let registry = self.inner.lock();
            registry
                .session(session)?
                .tabs
                .iter()
                .map(|t| t.page.view().clone())
                .collect()
        };
        for view in &views {
            let host = self.inner.host();
            let closed = host.destroy_view(view).await;
            self.inner.explained(&host, closed).await?;
            self.inner.forget_view(view);
        }
        Ok(())
    }

    /// Marks a tab as a deliverable for the person: it stays open when the
    /// session ends (and is no longer the agent's then).
    pub fn keep_tab(&self, session: &SessionId, tab: &TabHandle) -> Result<()> {
        let mut registry = self.inner.lock();
        registry.owned_tab(session, tab)?;
        let state = registry.session_mut(session)?;
        if let Some(kept) = state.tabs.iter_mut().find(|t| &t.handle == tab) {
            kept.keep = true;
        }
        Ok(())
    }

    /// One-line notices for the session's next call (the browser was
    /// restarted and its tabs reopened), oldest first; each is given once.
    pub fn take_notices(&self, session: &SessionId) -> Vec<String> {
        let mut registry = self.inner.lock();
        registry
            .session_mut(session)
            .map(|state| std::mem::take(&mut state.notices))
            .unwrap_or_default()
    }

    /// The view behind a tab, for the live view (streaming, input) that the
    /// shell runs next to the agents.
    pub fn view_of(&self, session: &SessionId, tab: &TabHandle) -> Result<ViewId> {
        let registry = self.inner.lock();
        Ok(registry.owned_tab(session, tab)?.page.view().clone())
    }

    /// Who a browser target (a page, by target id) belongs to, as far as
    /// the shell knows now.
    pub fn target_owner(&self, target: &str) -> TargetOwner {
        let registry = self.inner.lock();
        let is = |tab: &Tab| tab.page.view().as_str() == target;
        if let Some((_, session)) = registry
            .in_the_making
            .iter()
            .find(|(view, _)| view.as_str() == target)
        {
            return TargetOwner::Agent(session.clone());
        }
        if let Some((session, _)) = registry
            .sessions
            .iter()
            .find(|(_, state)| state.tabs.iter().any(is))
        {
            return TargetOwner::Agent(session.clone());
        }
        if registry.unowned.iter().any(is) {
            return TargetOwner::Person;
        }
        TargetOwner::Unknown
    }

    /// The browser contexts of isolated agent sessions.
    pub fn agent_contexts(&self) -> Vec<String> {
        self.inner
            .lock()
            .sessions
            .values()
            .filter_map(|state| state.context.as_ref().map(|c| c.as_str().to_owned()))
            .collect()
    }

    /// Creates a tab for the session and makes it active.
    pub(super) async fn new_tab(&self, session: &SessionId, budget: &Budget) -> Result<Tab> {
        let context = self.inner.lock().session(session)?.context.clone();
        let host = &self.inner.host();
        let view = budget
            .run(
                "create tab",
                host.create_view(CreateViewOptions {
                    context,
                    background: false,
                    owner: Some(session.to_string()),
                }),
            )
            .await?;
        // Known as the agent's from now on (for CDP clients' view of targets).
        self.inner
            .lock()
            .in_the_making
            .insert(view.clone(), session.clone());
        let prepared = budget
            .run(
                "prepare tab",
                self.inner
                    .attach_page(Arc::clone(host), view.clone(), Some(session)),
            )
            .await;
        let adopted = prepared.and_then(|page| self.inner.adopt(session, page, true));
        self.inner.lock().in_the_making.remove(&view);
        if adopted.is_err() {
            // Not prepared, or the session closed while the tab was being made.
            let _ = host.destroy_view(&view).await;
        }
        adopted
    }
}

impl Inner {
    pub(super) fn active_tab(&self, session: &SessionId) -> Result<Tab> {
        let registry = self.lock();
        let state = registry.session(session)?;
        let handle = state
            .active
            .as_ref()
            .ok_or_else(|| BrowserError::TabNotFound {
                tab: "(this session has no open tab; open a URL first)".into(),
            })?;
        registry.owned_tab(session, handle).cloned()
    }

    /// Records `page` as a tab of `session`.
    /// Tells the host which agent sessions exist (the extension shows them).
    fn tell_host_sessions(&self) {
        let mut sessions: Vec<SessionId> = self.lock().sessions.keys().cloned().collect();
        sessions.sort_by_key(|s| s.0.trim_start_matches('s').parse::<u64>().unwrap_or(0));
        let names: Vec<String> = sessions.iter().map(ToString::to_string).collect();
        self.host().sessions_changed(&names);
    }

    /// A view the person shared with `session` (in their own browser)
    /// becomes that session's active tab; it goes back to the person, not
    /// closed, when the session ends.
    async fn adopt_shared(self: &Arc<Self>, session: &SessionId, view: ViewId) {
        if self.lock().session(session).is_err() {
            tracing::debug!(%session, "a tab was shared with a session that ended");
            let _ = self.host().release_view(&view).await;
            return;
        }
        match self
            .attach_page(self.host(), view.clone(), Some(session))
            .await
        {
            Ok(page) => match self.adopt(session, page, true) {
                Ok(tab) => {
                    if let Some(slot) = self.lock().all_tabs_mut().find(|t| t.handle == tab.handle)
                    {
                        slot.keep = true;
                    }
                    tracing::info!(%session, tab = %tab.handle, "the person shared a tab");
                    tracing::info!(target: crate::AUDIT, event = "tab_shared", %session, tab = %tab.handle);
                }
                Err(error) => tracing::debug!(%error, "could not adopt a shared tab"),
            },
            Err(error) => tracing::warn!(%error, "could not prepare a shared tab"),
        }
    }

    pub(super) fn adopt(
        self: &Arc<Self>,
        session: &SessionId,
        page: Page,
        activate: bool,
    ) -> Result<Tab> {
        let mut registry = self.lock();
        registry.session(session)?;
        registry.next_tab += 1;
        let handle = TabHandle(format!("t{}", registry.next_tab));
        registry.owners.insert(handle.clone(), session.clone());
        let tab = Tab {
            handle: handle.clone(),
            page: Arc::new(page),
            last_url: String::new(),
            keep: false,
        };
        let state = registry.session_mut(session)?;
        state.tabs.push(tab.clone());
        if activate || state.active.is_none() {
            state.active = Some(handle);
        }
        drop(registry);
        self.tabs_changed.send_modify(|generation| *generation += 1);
        if self.people_watch.load(std::sync::atomic::Ordering::Relaxed) {
            self.follow_loads(&tab.page);
        }
        Ok(tab)
    }

    /// Removes the tab showing `view` from whichever session has it.
    pub(super) fn forget_view(&self, view: &ViewId) {
        let mut registry = self.lock();
        let handle = registry
            .all_tabs()
            .find(|t| t.page.view() == view)
            .map(|t| t.handle.clone());
        if let Some(handle) = handle {
            registry.remove_tab(&handle);
            drop(registry);
            self.tabs_changed.send_modify(|generation| *generation += 1);
        }
    }

    /// Remembers where the tab showing `view` is, to reopen it there.
    pub(super) fn note_url(&self, view: &ViewId, url: &str) {
        let mut registry = self.lock();
        if let Some(tab) = registry.all_tabs_mut().find(|t| t.page.view() == view) {
            url.clone_into(&mut tab.last_url);
        }
    }

    /// The handle of `view` if `session` owns it.
    pub(super) fn handle_of(&self, session: &SessionId, view: &ViewId) -> Option<TabHandle> {
        let registry = self.lock();
        let state = registry.sessions.get(session)?;
        state
            .tabs
            .iter()
            .find(|t| t.page.view() == view)
            .map(|t| t.handle.clone())
    }

    /// The session that owns `view`, if any.
    pub(super) fn owner_of(&self, view: &ViewId) -> Option<SessionId> {
        let registry = self.lock();
        registry
            .sessions
            .iter()
            .find(|(_, state)| state.tabs.iter().any(|t| t.page.view() == view))
            .map(|(id, _)| id.clone())
    }
}

/// Keeps sessions in step with the browser: a popup opened by a session's
/// tab becomes a tab of that session; a tab closed by the page or a person
/// leaves its session.
///
/// The person's Stop and Resume (from their own Chrome) take effect at
/// once: the tab bookkeeping, which may wait on the browser (attaching a
/// popup, adopting a shared tab), follows in its own order behind them,
/// so an agent opening tabs in a loop cannot hold a Stop back.
pub(super) async fn follow_views(
    inner: Weak<Inner>,
    mut views: tokio::sync::mpsc::UnboundedReceiver<ViewEvent>,
) {
    let (tab_events, tab_queue) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(follow_tab_events(inner.clone(), tab_queue));
    while let Some(event) = views.recv().await {
        match event {
            ViewEvent::PersonStopped { reason } => {
                let Some(inner) = inner.upgrade() else { return };
                let epoch = inner.control.take();
                tracing::info!(epoch, %reason, "the person stopped the agents from their browser");
                tracing::info!(target: crate::AUDIT, event = "takeover", epoch, from = "extension", %reason);
            }
            ViewEvent::PersonResumed => {
                let Some(inner) = inner.upgrade() else { return };
                let epoch = inner.control.give_back();
                tracing::info!(epoch, "the person let the agents go on from their browser");
                tracing::info!(target: crate::AUDIT, event = "return", epoch, from = "extension");
            }
            other => {
                if tab_events.send(other).is_err() {
                    return;
                }
            }
        }
    }
}

/// The tab events of [`follow_views`], one after the other.
async fn follow_tab_events(
    inner: Weak<Inner>,
    mut views: tokio::sync::mpsc::UnboundedReceiver<ViewEvent>,
) {
    while let Some(event) = views.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        match event {
            ViewEvent::Opened(info) => {
                if let Some(session) = info.shared_with.clone() {
                    inner
                        .adopt_shared(&SessionId(session), info.id.clone())
                        .await;
                    continue;
                }
                let Some(opener) = info.opener.as_ref() else {
                    continue;
                };
                let Some(session) = inner.owner_of(opener) else {
                    // A popup of one of the person's tabs is the person's too.
                    let person_opened =
                        inner.lock().unowned.iter().any(|t| t.page.view() == opener);
                    if person_opened
                        && let Ok(page) =
                            inner.attach_page(inner.host(), info.id.clone(), None).await
                    {
                        inner.adopt_unowned(Arc::new(page));
                    }
                    continue;
                };
                match inner
                    .attach_page(inner.host(), info.id.clone(), Some(&session))
                    .await
                {
                    Ok(page) => {
                        if let Ok(tab) = inner.adopt(&session, page, false) {
                            tracing::debug!(%session, tab = %tab.handle, "adopted a popup");
                        }
                    }
                    Err(error) => tracing::debug!(%error, "could not prepare a popup"),
                }
            }
            ViewEvent::Closed(view) => inner.forget_view(&view),
            // A new URL or title: the tab strip shows it, and a restart
            // reopens the tab there.
            ViewEvent::Changed(info) => {
                inner.note_url(&info.id, &info.url);
                inner
                    .tabs_changed
                    .send_modify(|generation| *generation += 1);
            }
            // Handled at once by `follow_views`.
            ViewEvent::PersonStopped { .. } | ViewEvent::PersonResumed => {}
            ViewEvent::DownloadRefused { .. } => {}
            // Reopening takes a while (a new browser, the tabs' loads):
            // other tabs' events go on meanwhile.
            ViewEvent::ContextLost { context, cause } => {
                tokio::spawn(async move { inner.recover_context(&context, &cause).await });
            }
        }
    }
}
