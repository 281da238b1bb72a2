//! Whether anyone is using an instance, so one started on demand can exit
//! once nobody has for a while.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// Requests, viewers and calls in progress, and when the last one ended.
#[derive(Debug, Clone, Copy)]
struct State {
    busy: usize,
    last_active: Instant,
}

/// Counts uses of an instance. Clones share the count.
#[derive(Debug, Clone)]
pub struct Usage {
    state: Arc<watch::Sender<State>>,
}

/// One use in progress; ends when dropped.
#[derive(Debug)]
pub struct InUse {
    state: Arc<watch::Sender<State>>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.state.send_modify(|state| {
            state.busy = state.busy.saturating_sub(1);
            state.last_active = Instant::now();
        });
    }
}

impl Default for Usage {
    fn default() -> Self {
        Self::new()
    }
}

impl Usage {
    /// Nobody is using it yet; the idle clock starts now.
    pub fn new() -> Self {
        let (state, _) = watch::channel(State {
            busy: 0,
            last_active: Instant::now(),
        });
        Self {
            state: Arc::new(state),
        }
    }

    /// Marks a use (a request, a viewer, a call) until the guard is dropped.
    pub fn begin(&self) -> InUse {
        self.state.send_modify(|state| state.busy += 1);
        InUse {
            state: Arc::clone(&self.state),
        }
    }

    /// Resolves once nothing has been in use for `period`.
    pub async fn idle_for(&self, period: Duration) {
        let mut changes = self.state.subscribe();
        loop {
            let state = *changes.borrow_and_update();
            if state.busy > 0 {
                if changes.changed().await.is_err() {
                    return;
                }
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep_until(state.last_active + period) => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_only_after_the_last_use_ends_and_the_period_passes() {
        let usage = Usage::new();
        let period = Duration::from_secs(10);
        let use_ = usage.begin();
        let started = Instant::now();
        let waiter = tokio::spawn({
            let usage = usage.clone();
            async move {
                usage.idle_for(period).await;
                Instant::now()
            }
        });
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!waiter.is_finished(), "idle while in use");
        drop(use_);
        let idle_at = waiter.await.unwrap();
        assert_eq!(idle_at - started, Duration::from_secs(40));
    }
}
