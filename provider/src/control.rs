//! Who holds control of the browser: the agents, or a person.
//!
//! A person takes control by any input in the live view or the Take over /
//! Stop buttons. Taking control starts a new *epoch*: every agent operation
//! in flight is interrupted (`HUMAN_INTERVENED`) and agent mutations are
//! refused until the person returns control. Observation stays allowed.

use std::sync::Mutex;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::{BrowserError, Result};

/// Who may act on the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// Agents act; a person watches.
    Agent,
    /// A person acts; agents may only observe.
    Human,
}

/// The control state, as watchers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlState {
    /// Who holds control.
    pub holder: Holder,
    /// Increases every time control changes hands.
    pub epoch: u64,
}

/// The control switch shared by every session of a browser.
#[derive(Debug)]
pub struct Control {
    /// Cancelled (and replaced) when a person takes control.
    interrupt: Mutex<CancellationToken>,
    /// The current state, for gates and watchers.
    state: watch::Sender<ControlState>,
}

impl Default for Control {
    fn default() -> Self {
        Self {
            interrupt: Mutex::new(CancellationToken::new()),
            state: watch::Sender::new(ControlState {
                holder: Holder::Agent,
                epoch: 0,
            }),
        }
    }
}

impl Control {
    /// The current state.
    pub fn state(&self) -> ControlState {
        *self.state.borrow()
    }

    /// Follows control changes.
    pub fn watch(&self) -> watch::Receiver<ControlState> {
        self.state.subscribe()
    }

    /// A person takes control: agent work in flight is interrupted now.
    /// Returns the new epoch. Taking it again while held changes nothing.
    pub fn take(&self) -> u64 {
        let mut changed = false;
        self.state.send_modify(|state| {
            if state.holder == Holder::Agent {
                state.holder = Holder::Human;
                state.epoch += 1;
                changed = true;
            }
        });
        if changed {
            let mut interrupt = self.interrupt.lock().unwrap_or_else(|p| p.into_inner());
            interrupt.cancel();
            *interrupt = CancellationToken::new();
        }
        self.state().epoch
    }

    /// The person gives control back to the agents. Returns the new epoch.
    pub fn give_back(&self) -> u64 {
        self.state.send_modify(|state| {
            if state.holder == Holder::Human {
                state.holder = Holder::Agent;
                state.epoch += 1;
            }
        });
        self.state().epoch
    }

    /// For an agent mutation about to start: the token that interrupts it,
    /// or `HUMAN_INTERVENED` if a person holds control now.
    pub fn admit_mutation(&self) -> Result<CancellationToken> {
        let interrupt = self
            .interrupt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if self.state().holder == Holder::Human {
            return Err(BrowserError::HumanIntervened);
        }
        Ok(interrupt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taking_control_interrupts_and_refuses_until_returned() {
        let control = Control::default();
        let in_flight = control.admit_mutation().unwrap();
        assert_eq!(control.take(), 1);
        assert!(in_flight.is_cancelled());
        assert_eq!(
            control.admit_mutation().err().map(|e| e.code()),
            Some("HUMAN_INTERVENED")
        );
        assert_eq!(control.take(), 1, "taking it again changes nothing");
        assert_eq!(control.give_back(), 2);
        let next = control.admit_mutation().unwrap();
        assert!(!next.is_cancelled());
        assert_eq!(control.state().holder, Holder::Agent);
    }
}
