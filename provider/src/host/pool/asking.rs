//! Asking the pool for a browser, in the background.
//!
//! A full pool either refuses a connection (429 or 503: ask again later)
//! or holds it in its queue. Either way the asking may outlast the call
//! that started it, and it goes on after that call has answered `BUSY`:
//! a queued connection keeps its place (browserless launches a browser for
//! every connection it takes from its queue, even one whose client has
//! left, so a connection closed at each call's end would cost the pool a
//! launch each time and the session its place), and a refused one is
//! asked again. The browser such an ask brings waits for the next session
//! that asks. An ask nobody takes up within [`Asks::keep`] is dropped, and
//! a browser it got is given back.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::super::ChromiumHost;
use crate::error::{BrowserError, Result};

/// The first pause before asking a pool that refused again; it doubles up
/// to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// See [`FIRST_PAUSE`].
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// Where and how to ask.
#[derive(Debug, Clone)]
pub(super) struct Asking {
    /// The pool's endpoint.
    pub endpoint: String,
    /// Bound for each CDP command of a browser taken.
    pub command_timeout: Duration,
    /// Browsers taken from this pool so far: a pool that handed out
    /// browsers and cannot be reached now is restarting, and is asked
    /// again like a full one; a pool never reached is misconfigured.
    pub taken: Arc<AtomicU64>,
}

/// One ask for a browser, running until it has one, a failure that
/// asking again cannot mend, or it is cancelled.
#[derive(Debug)]
pub(super) struct Ask {
    /// Set once, when the ask has ended.
    ended: watch::Sender<bool>,
    /// What it ended with, for its one taker.
    outcome: Mutex<Option<Result<ChromiumHost>>>,
    /// The pool's last refusal (or why it could not be reached), for the
    /// `BUSY` of a call that waited in vain.
    last_refusal: Mutex<Option<BrowserError>>,
    cancel: CancellationToken,
    /// How many times it was left without a taker, so that a stale
    /// reaper can tell it was taken up and left again since.
    times_left: AtomicU64,
}

impl Ask {
    /// Starts asking the pool.
    pub fn start(asking: Asking) -> Arc<Self> {
        let ask = Arc::new(Self {
            ended: watch::channel(false).0,
            outcome: Mutex::new(None),
            last_refusal: Mutex::new(None),
            cancel: CancellationToken::new(),
            times_left: AtomicU64::new(0),
        });
        tokio::spawn(Arc::clone(&ask).run(asking));
        ask
    }

    async fn run(self: Arc<Self>, asking: Asking) {
        let mut pause = FIRST_PAUSE;
        loop {
            let attempt = tokio::select! {
                () = self.cancel.cancelled() => return,
                attempt = ChromiumHost::connect(&asking.endpoint, asking.command_timeout) => attempt,
            };
            match attempt {
                Ok(host) => return self.end(Ok(host)),
                Err(refusal @ BrowserError::Busy { .. }) => self.refused(refusal),
                Err(unreachable @ BrowserError::NotConnected { .. })
                    if asking.taken.load(Ordering::Relaxed) > 0 =>
                {
                    self.refused(unreachable);
                }
                Err(error) => return self.end(Err(error)),
            }
            tokio::select! {
                () = self.cancel.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }

    fn refused(&self, refusal: BrowserError) {
        *self.last_refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(refusal);
    }

    fn end(&self, outcome: Result<ChromiumHost>) {
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
        self.ended.send_replace(true);
    }

    /// What the ask ended with, once it has (by `deadline` at most):
    /// `None` while it still runs. Only one caller gets the outcome.
    pub async fn outcome_by(&self, deadline: tokio::time::Instant) -> Option<Result<ChromiumHost>> {
        let mut ended = self.ended.subscribe();
        tokio::time::timeout_at(deadline, ended.wait_for(|ended| *ended))
            .await
            .ok()?
            .ok()?;
        self.outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The pool's last refusal, if it refused.
    pub fn last_refusal(&self) -> Option<BrowserError> {
        self.last_refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether it ended without a browser (nothing to take up).
    fn failed(&self) -> bool {
        matches!(
            *self.outcome.lock().unwrap_or_else(|p| p.into_inner()),
            Some(Err(_))
        )
    }

    /// Stops asking; gives back a browser it got that nobody took.
    async fn drop_it(&self) {
        self.cancel.cancel();
        let left = self
            .outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(Ok(host)) = left {
            host.shutdown().await;
            tracing::info!("gave back a browser that no session took up");
        }
    }
}

/// The asks whose callers have answered: the next session that asks takes
/// one up (the oldest first: it has waited longest in the pool's queue).
#[derive(Debug)]
pub(super) struct Asks {
    left: Mutex<VecDeque<Arc<Ask>>>,
    /// How long a left ask keeps running without a taker.
    keep: Duration,
}

impl Asks {
    /// No asks yet; a left one is kept for `keep`.
    pub fn new(keep: Duration) -> Self {
        Self {
            left: Mutex::new(VecDeque::new()),
            keep,
        }
    }

    /// How long a left ask keeps running without a taker.
    pub fn keep(&self) -> Duration {
        self.keep
    }

    /// The oldest left ask that may still bring a browser, taken up; or a
    /// new one. Also whether it was taken up.
    pub fn take_up_or_start(&self, asking: &Asking) -> (Arc<Ask>, bool) {
        let mut left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(ask) = left.pop_front() {
            if !ask.failed() && !ask.cancel.is_cancelled() {
                return (ask, true);
            }
        }
        (Ask::start(asking.clone()), false)
    }

    /// Leaves `ask` running for the next session that asks; drops it when
    /// nobody has taken it up within [`Self::keep`].
    pub fn leave(self: &Arc<Self>, ask: Arc<Ask>) {
        // Without a runtime (a call dropped as the program ends) nothing
        // can wait for a taker: stop asking (dropping a browser it got
        // closes its connection, which gives it back).
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            ask.cancel.cancel();
            return;
        };
        let times = ask.times_left.fetch_add(1, Ordering::Relaxed) + 1;
        self.left
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Arc::clone(&ask));
        let asks = Arc::downgrade(self);
        let keep = self.keep;
        runtime.spawn(async move {
            tokio::time::sleep(keep).await;
            let Some(asks) = asks.upgrade() else {
                return ask.drop_it().await;
            };
            let still_left = {
                let mut left = asks.left.lock().unwrap_or_else(|p| p.into_inner());
                let at = left.iter().position(|held| Arc::ptr_eq(held, &ask));
                match at {
                    Some(at) if ask.times_left.load(Ordering::Relaxed) == times => {
                        left.remove(at);
                        true
                    }
                    _ => false,
                }
            };
            if still_left {
                ask.drop_it().await;
            }
        });
    }

    /// Drops every left ask (the shell stops).
    pub async fn drop_all(&self) {
        let left: Vec<Arc<Ask>> = self
            .left
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for ask in left {
            ask.drop_it().await;
        }
    }
}
