//! Who has which tab: sessions, their tabs in order, the person's tabs,
//! and the handle counters. Plain data behind the browser's one lock.

use std::collections::HashMap;
use std::sync::Arc;

use super::{SessionId, TabHandle};
use crate::error::{BrowserError, Result};
use crate::host::ContextId;
use crate::page::Page;
use crate::policy::HostRules;

/// Sessions and tab ownership.
#[derive(Default)]
pub(super) struct Registry {
    /// Live sessions.
    pub(super) sessions: HashMap<SessionId, SessionState>,
    /// Which session owns each tab handle ever given out while it lives.
    pub(super) owners: HashMap<TabHandle, SessionId>,
    /// Tabs that belong to no agent: opened by the person, or left behind
    /// (kept or claimed) by sessions that ended.
    pub(super) unowned: Vec<Tab>,
    /// Agents' tabs being made: created in the browser, not yet adopted.
    pub(super) in_the_making: HashMap<crate::host::ViewId, SessionId>,
    /// Counters for ids; never reset, so ids are never reused.
    pub(super) next_session: u64,
    pub(super) next_tab: u64,
}

/// One agent session's tabs and what it has been told.
pub(super) struct SessionState {
    /// Tabs in the order they were opened.
    pub(super) tabs: Vec<Tab>,
    /// The tab operations act on.
    pub(super) active: Option<TabHandle>,
    /// The session's own browser context, when isolated.
    pub(super) context: Option<ContextId>,
    /// The control epoch this session last heard about.
    pub(super) seen_epoch: u64,
    /// Things to tell the agent with its next call (a browser restart).
    pub(super) notices: Vec<String>,
    /// Host lists narrowing the browser's policy for this session's tabs.
    pub(super) hosts: HostRules,
}

/// One tab: its handle (the shell's own identity, which outlives the
/// browser) and the page currently behind it.
#[derive(Clone)]
pub(super) struct Tab {
    pub(super) handle: TabHandle,
    /// Replaced when the browser restarts and the tab is reopened.
    pub(super) page: Arc<Page>,
    /// The last URL the tab committed, where it reopens after a restart.
    pub(super) last_url: String,
    /// Stays open when the session ends and goes back to the person: a
    /// deliverable (`keep`) or a tab the session claimed from the person.
    pub(super) keep: bool,
}

impl Registry {
    /// Every tab: the sessions' and the person's.
    pub(super) fn all_tabs(&self) -> impl Iterator<Item = &Tab> {
        self.sessions
            .values()
            .flat_map(|s| s.tabs.iter())
            .chain(self.unowned.iter())
    }

    /// Removes a tab from whoever has it (a session: the most recently
    /// opened remaining tab becomes active if it was; or the person).
    pub(super) fn remove_tab(&mut self, handle: &TabHandle) -> Option<Tab> {
        let mut removed = None;
        for state in self.sessions.values_mut() {
            let Some(index) = state.tabs.iter().position(|t| &t.handle == handle) else {
                continue;
            };
            let tab = state.tabs.remove(index);
            if state.active.as_ref() == Some(handle) {
                state.active = state.tabs.last().map(|t| t.handle.clone());
            }
            removed = Some(tab);
            break;
        }
        if removed.is_none()
            && let Some(index) = self.unowned.iter().position(|t| &t.handle == handle)
        {
            removed = Some(self.unowned.remove(index));
        }
        if removed.is_some() {
            self.owners.remove(handle);
        }
        removed
    }

    /// Every tab, for changing one.
    pub(super) fn all_tabs_mut(&mut self) -> impl Iterator<Item = &mut Tab> {
        self.sessions
            .values_mut()
            .flat_map(|s| s.tabs.iter_mut())
            .chain(self.unowned.iter_mut())
    }

    pub(super) fn session(&self, session: &SessionId) -> Result<&SessionState> {
        self.sessions
            .get(session)
            .ok_or_else(|| BrowserError::SessionNotFound {
                session: session.0.clone(),
            })
    }

    pub(super) fn session_mut(&mut self, session: &SessionId) -> Result<&mut SessionState> {
        self.sessions
            .get_mut(session)
            .ok_or_else(|| BrowserError::SessionNotFound {
                session: session.0.clone(),
            })
    }

    /// The tab `handle` of `session`, or why not: another session's or the
    /// person's (`TAB_NOT_OWNED`), or nobody's (`TAB_NOT_FOUND`).
    pub(super) fn owned_tab(&self, session: &SessionId, handle: &TabHandle) -> Result<&Tab> {
        let state = self.session(session)?;
        if let Some(tab) = state.tabs.iter().find(|t| &t.handle == handle) {
            return Ok(tab);
        }
        match self.owners.get(handle) {
            Some(owner) if owner != session => Err(BrowserError::TabNotOwned {
                tab: handle.0.clone(),
            }),
            // The person's (listed among the person's tabs): not this
            // session's until it claims it.
            _ if self.unowned.iter().any(|t| &t.handle == handle) => {
                Err(BrowserError::TabNotOwned {
                    tab: handle.0.clone(),
                })
            }
            _ => Err(BrowserError::TabNotFound {
                tab: handle.0.clone(),
            }),
        }
    }
}
