//! Requests the shell takes from outside its own input.
//!
//! * **Stop**: Ctrl-C or `SIGTERM` on Unix; Ctrl-C, Ctrl-Break, closing
//!   the console window, logging off and shutting down on Windows (tokio's
//!   `ctrl_c`, `ctrl_break`, `ctrl_close`, `ctrl_logoff`,
//!   `ctrl_shutdown`). On console close Windows gives a process about five
//!   seconds before it ends it: long enough for sessions to end and the
//!   browser (a Job Object of ours) to go.
//! * **Raise the window**: a second desktop on the same profile sends
//!   `SIGUSR1` to the first one on Unix. Windows has no such signal; the
//!   second desktop there says that one runs and where, and leaves the
//!   window as it is.

pub use imp::{RaiseRequests, ask_to_raise, stop_requested};

#[cfg(unix)]
mod imp {
    use tokio::signal::unix::{Signal, SignalKind, signal};

    /// Resolves on Ctrl-C (SIGINT) or SIGTERM.
    pub async fn stop_requested() {
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }

    /// Requests (SIGUSR1) to bring our window to the front.
    #[derive(Debug)]
    pub struct RaiseRequests {
        /// SIGUSR1, taken from the start (its default action ends us).
        signal: Signal,
    }

    impl RaiseRequests {
        /// Starts taking requests; `None` when the signal cannot be taken.
        /// Call it first thing: before, a request would end the process.
        pub fn listen() -> Option<Self> {
            signal(SignalKind::user_defined1())
                .ok()
                .map(|signal| Self { signal })
        }

        /// The next request; `None` when no more can come.
        pub async fn recv(&mut self) -> Option<()> {
            self.signal.recv().await
        }
    }

    /// Asks the shell `pid` (which takes [`RaiseRequests`]) to bring its
    /// window to the front; true when the request was sent.
    pub fn ask_to_raise(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill has no memory preconditions; a stale pid fails harmlessly.
        unsafe { libc::kill(pid, libc::SIGUSR1) == 0 }
    }
}

#[cfg(windows)]
mod imp {
    use tokio::signal::windows;

    /// Resolves on Ctrl-C, Ctrl-Break, console close, log-off or shutdown.
    pub async fn stop_requested() {
        let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut shutdown)) = (
            windows::ctrl_c(),
            windows::ctrl_break(),
            windows::ctrl_close(),
            windows::ctrl_logoff(),
            windows::ctrl_shutdown(),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = c.recv() => {}
            _ = brk.recv() => {}
            _ = close.recv() => {}
            _ = logoff.recv() => {}
            _ = shutdown.recv() => {}
        }
    }

    /// Requests to bring our window to the front: none on Windows yet.
    #[derive(Debug)]
    pub struct RaiseRequests {
        /// Never constructed.
        _never: std::convert::Infallible,
    }

    impl RaiseRequests {
        /// `None`: Windows has no signal for it.
        pub fn listen() -> Option<Self> {
            None
        }

        /// Never resolves with a request.
        pub async fn recv(&mut self) -> Option<()> {
            match self._never {}
        }
    }

    /// Not possible on Windows: false.
    pub fn ask_to_raise(_pid: u32) -> bool {
        false
    }
}
