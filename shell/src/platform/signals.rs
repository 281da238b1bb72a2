//! The signals that stop the shell in order (Ctrl+C, and SIGTERM on Unix)
//! and the one a second desktop sends the first to bring its window to
//! the front (SIGUSR1 on Unix).

/// Resolves when the shell is asked to stop.
pub async fn stop_requested() {
    imp::stop_requested().await;
}

/// Requests to raise the window, from [`ask_to_raise`] in another process.
#[derive(Debug)]
pub struct RaiseRequests {
    inner: imp::RaiseRequests,
}

impl RaiseRequests {
    /// Starts listening; taken first thing, before the default action of
    /// the signal could end the process. `None` where it is not available.
    pub fn listen() -> Option<Self> {
        imp::RaiseRequests::listen().map(|inner| Self { inner })
    }

    /// The next request; `None` when no more can come.
    pub async fn recv(&mut self) -> Option<()> {
        self.inner.recv().await
    }
}

/// Asks process `pid` (a desktop listening with [`RaiseRequests`]) to bring
/// its window to the front; true when the request was sent.
pub fn ask_to_raise(pid: u32) -> bool {
    let sent = imp::ask_to_raise(pid);
    tracing::debug!(pid, sent, "asked the running desktop to raise its window");
    sent
}

#[cfg(unix)]
mod imp {
    use tokio::signal::unix::{Signal, SignalKind, signal};

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

    #[derive(Debug)]
    pub struct RaiseRequests(Signal);

    impl RaiseRequests {
        pub fn listen() -> Option<Self> {
            signal(SignalKind::user_defined1()).ok().map(Self)
        }

        pub async fn recv(&mut self) -> Option<()> {
            self.0.recv().await
        }
    }

    pub fn ask_to_raise(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill has no memory preconditions; a stale pid fails harmlessly.
        pid > 0 && unsafe { libc::kill(pid, libc::SIGUSR1) } == 0
    }
}

#[cfg(windows)]
mod imp {
    use tokio::signal::windows::{ctrl_break, ctrl_close, ctrl_logoff, ctrl_shutdown};

    /// Ctrl+C, Ctrl+Break, the console window closed, logoff or shutdown.
    pub async fn stop_requested() {
        let (Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut shutdown)) =
            (ctrl_break(), ctrl_close(), ctrl_logoff(), ctrl_shutdown())
        else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = brk.recv() => {}
            _ = close.recv() => {}
            _ = logoff.recv() => {}
            _ = shutdown.recv() => {}
        }
    }

    /// No signal reaches another process's window here: a second desktop
    /// says where the first one is instead.
    #[derive(Debug)]
    pub struct RaiseRequests;

    impl RaiseRequests {
        pub fn listen() -> Option<Self> {
            None
        }

        pub async fn recv(&mut self) -> Option<()> {
            None
        }
    }

    pub fn ask_to_raise(_pid: u32) -> bool {
        false
    }
}
