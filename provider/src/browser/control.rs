//! Who holds control, as agents and people meet it: a person takes it
//! and gives it back; an agent hears once that it came back.

use tokio::sync::watch;

use super::{Browser, SessionId};
use crate::control::{ControlState, Holder};

impl Browser {
    /// A person takes control: agent operations in flight stop with
    /// `HUMAN_INTERVENED`, and agent actions are refused until control is
    /// returned. Returns the new control epoch.
    pub fn take_control(&self) -> u64 {
        let epoch = self.inner.control.take();
        tracing::info!(epoch, "a person took control");
        tracing::info!(target: crate::AUDIT, event = "takeover", epoch);
        epoch
    }

    /// The person returns control to the agents. Returns the new epoch.
    pub fn return_control(&self) -> u64 {
        let epoch = self.inner.control.give_back();
        tracing::info!(epoch, "control returned to the agents");
        tracing::info!(target: crate::AUDIT, event = "return", epoch);
        epoch
    }

    /// Who holds control now.
    pub fn control(&self) -> ControlState {
        self.inner.control.state()
    }

    /// Follows control changes.
    pub fn watch_control(&self) -> watch::Receiver<ControlState> {
        self.inner.control.watch()
    }

    /// True once after control came back to the agents since this session
    /// last asked: the page may have changed under it.
    pub fn control_returned_since_last_call(&self, session: &SessionId) -> bool {
        let now = self.inner.control.state();
        let mut registry = self.inner.lock();
        let Ok(state) = registry.session_mut(session) else {
            return false;
        };
        let returned = now.holder == Holder::Agent && now.epoch > state.seen_epoch;
        if now.holder == Holder::Agent {
            state.seen_epoch = now.epoch;
        }
        returned
    }
}
