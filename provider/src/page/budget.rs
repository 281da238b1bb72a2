//! [`Budget`]: the deadline and cancellation token of one operation.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{BrowserError, Result};

/// How long an operation may take and how to stop it early.
///
/// Every wait inside an operation goes through [`Budget::run`], so
/// cancellation and the deadline win over whatever is being awaited.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Cancelled by the caller (or a person taking control).
    cancel: CancellationToken,
    /// When the operation must have finished.
    deadline: Instant,
    /// The whole bound, for error messages.
    total: Duration,
    /// What the operation is, for error messages.
    operation: &'static str,
    /// Cancelled when a person takes control (agent mutations only).
    interrupt: Option<CancellationToken>,
}

impl Budget {
    /// A budget of `timeout` from now for `operation`, cancelled by `cancel`.
    pub fn new(operation: &'static str, timeout: Duration, cancel: CancellationToken) -> Self {
        Self {
            cancel,
            deadline: Instant::now() + timeout,
            total: timeout,
            operation,
            interrupt: None,
        }
    }

    /// The same budget, also stopped (with `HUMAN_INTERVENED`) when
    /// `interrupt` is cancelled: a person took control.
    pub fn with_interrupt(mut self, interrupt: CancellationToken) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// A fresh budget of `grace` with the same cancellation token, for a
    /// short wrap-up step after the main deadline passed (reading where a
    /// slow navigation got to, say).
    pub fn grace(&self, grace: Duration) -> Self {
        Self {
            interrupt: self.interrupt.clone(),
            ..Self::new(self.operation, grace, self.cancel.clone())
        }
    }

    /// The same budget ending `reserve` earlier (but not before now), for
    /// a step that must leave time for what follows it: reading where a
    /// navigation got to after waiting for it to load. Its timeout still
    /// names the whole bound.
    pub fn reserving(&self, reserve: Duration) -> Self {
        let now = Instant::now();
        let deadline = self.deadline.checked_sub(reserve).unwrap_or(now).max(now);
        Self {
            deadline,
            ..self.clone()
        }
    }

    /// The time left (zero once expired).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The token that cancels this operation.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The bound for one command inside the operation: what is left of the
    /// budget, but never more than the host's own command bound.
    pub fn command_bound(&self, host_bound: Duration) -> Duration {
        self.remaining().min(host_bound)
    }

    /// The error for this budget running out.
    pub fn expired(&self) -> BrowserError {
        BrowserError::timeout(self.operation, self.total)
    }

    /// Awaits `work` unless the budget is cancelled (`ABORTED`) or runs out
    /// (`TIMEOUT`) first. `step` names what was awaited, for logs.
    pub async fn run<T>(&self, step: &str, work: impl Future<Output = Result<T>>) -> Result<T> {
        if self.cancel.is_cancelled() {
            return Err(BrowserError::Aborted);
        }
        let interrupted = async {
            match &self.interrupt {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(BrowserError::Aborted),
            () = interrupted => Err(BrowserError::HumanIntervened),
            () = tokio::time::sleep_until(self.deadline) => {
                tracing::debug!(operation = self.operation, step, "budget expired");
                Err(self.expired())
            }
            result = work => result.map_err(|error| match error {
                // A command bound cut short by our own deadline is the operation's timeout.
                BrowserError::Timeout { .. } if self.remaining().is_zero() => self.expired(),
                other => other,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deadline_turns_into_timeout() {
        let budget = Budget::new("wait", Duration::from_millis(50), CancellationToken::new());
        let result: Result<()> = budget.run("never", std::future::pending()).await;
        assert_eq!(result.err().map(|e| e.code()), Some("TIMEOUT"));
    }

    #[tokio::test]
    async fn a_person_taking_control_interrupts() {
        let interrupt = CancellationToken::new();
        let budget = Budget::new("act", Duration::from_secs(60), CancellationToken::new())
            .with_interrupt(interrupt.clone());
        interrupt.cancel();
        let result: Result<()> = budget.run("never", std::future::pending()).await;
        assert_eq!(result.err().map(|e| e.code()), Some("HUMAN_INTERVENED"));
    }

    #[tokio::test]
    async fn cancellation_wins() {
        let cancel = CancellationToken::new();
        let budget = Budget::new("wait", Duration::from_secs(60), cancel.clone());
        cancel.cancel();
        let result: Result<()> = budget.run("never", std::future::pending()).await;
        assert_eq!(result.err().map(|e| e.code()), Some("ABORTED"));
    }
}
