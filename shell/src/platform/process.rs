//! Other processes: whether one runs, waiting for its end, asking it to
//! stop, and starting one that outlives our terminal or console.
//!
//! * **Unix**: `kill(pid, 0)`; a pidfd that becomes readable when the
//!   process ends (polling once a second where there is none); `SIGTERM`,
//!   which the shell answers by stopping in order; a process group of its
//!   own, so Ctrl-C in our terminal is not for it.
//! * **Windows**: a process handle (`OpenProcess`) and its exit code; a
//!   wait on that handle; stopping is `TerminateProcess` (Windows has no
//!   polite signal for a console-less process: the browser, in that
//!   process's Job Object, ends with it, and its temporary profile is
//!   swept at the next launch); `CREATE_NEW_PROCESS_GROUP |
//!   CREATE_NO_WINDOW`, so our console's Ctrl-C does not reach it and no
//!   console window appears.

use std::time::Duration;

pub use imp::{alive, detach, exited, stop};

/// Waits until process `pid` has exited, at most `within`; true if it has.
pub async fn wait_for_exit(pid: u32, within: Duration) -> bool {
    tokio::time::timeout(within, exited(pid)).await.is_ok()
}

#[cfg(unix)]
mod imp {
    use std::os::fd::OwnedFd;
    use std::time::Duration;

    /// Whether a process with this id exists.
    pub fn alive(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        pid > 0 && unsafe { libc::kill(pid, 0) } == 0
    }

    /// Resolves when process `pid` has exited (at once when there is none).
    /// Event-driven through a pidfd; where pidfds are not available, it
    /// checks once a second.
    pub async fn exited(pid: u32) {
        if let Some(fd) = pidfd(pid)
            && fd.readable().await.is_ok()
        {
            return;
        }
        while alive(pid) {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// A descriptor that becomes readable when process `pid` ends; `None`
    /// when there is no such process or pidfds are not available.
    #[cfg(target_os = "linux")]
    fn pidfd(pid: u32) -> Option<tokio::io::unix::AsyncFd<OwnedFd>> {
        use std::os::fd::{FromRawFd, RawFd};
        let raw_pid = libc::pid_t::try_from(pid).ok().filter(|pid| *pid > 0)?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw_pid, 0) };
        let fd = RawFd::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: the descriptor was just created for us and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an OwnedFd is valid and open, and the AsyncFd owns it until dropped.
        unsafe { tokio::io::unix::AsyncFd::register(fd) }.ok()
    }

    /// No pidfds outside Linux: [`exited`] polls.
    #[cfg(not(target_os = "linux"))]
    fn pidfd(_pid: u32) -> Option<tokio::io::unix::AsyncFd<OwnedFd>> {
        None
    }

    /// Asks process `pid` to stop (SIGTERM); false when there was none to ask.
    pub fn stop(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: sending SIGTERM to a process id read from our private runtime file.
        pid > 0 && unsafe { libc::kill(pid, libc::SIGTERM) } == 0
    }

    /// Starts `command` in a process group of its own: Ctrl-C in this
    /// terminal is not for it.
    pub fn detach(command: &mut tokio::process::Command) {
        command.process_group(0);
    }
}

#[cfg(windows)]
mod imp {
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

    use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, HANDLE, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, GetExitCodeProcess, INFINITE, OpenProcess,
        PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE,
        TerminateProcess, WaitForSingleObject,
    };

    /// The process `pid` opened with `rights`, if it exists and lets us.
    fn open(pid: u32, rights: u32) -> Option<OwnedHandle> {
        if pid == 0 {
            return None;
        }
        // SAFETY: OpenProcess takes plain values; a null handle is failure.
        let raw = unsafe { OpenProcess(rights, 0, pid) };
        // SAFETY: a fresh, valid handle that we own from here.
        (!raw.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(raw.cast()) })
    }

    /// Whether a process with this id is running.
    pub fn alive(pid: u32) -> bool {
        let Some(process) = open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
            return pid != 0
                && std::io::Error::last_os_error().raw_os_error()
                    == Some(ERROR_ACCESS_DENIED as i32);
        };
        let mut code = 0u32;
        // SAFETY: a valid process handle; `code` is writable.
        let ok = unsafe { GetExitCodeProcess(process.as_raw_handle() as HANDLE, &raw mut code) };
        ok != 0 && code == STILL_ACTIVE as u32
    }

    /// Resolves when process `pid` has exited (at once when there is none),
    /// by waiting on its handle on a blocking thread.
    pub async fn exited(pid: u32) {
        let Some(process) = open(pid, PROCESS_SYNCHRONIZE) else {
            return;
        };
        let _ = tokio::task::spawn_blocking(move || {
            // SAFETY: a valid process handle owned by this closure.
            unsafe { WaitForSingleObject(process.as_raw_handle() as HANDLE, INFINITE) }
        })
        .await;
    }

    /// Ends process `pid` (`TerminateProcess`); false when there was none
    /// we could end.
    pub fn stop(pid: u32) -> bool {
        let Some(process) = open(pid, PROCESS_TERMINATE) else {
            return false;
        };
        // SAFETY: a valid process handle opened with terminate rights.
        unsafe { TerminateProcess(process.as_raw_handle() as HANDLE, 1) != 0 }
    }

    /// Starts `command` in a process group of its own and without a
    /// console window.
    pub fn detach(command: &mut tokio::process::Command) {
        command.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_alive() {
        assert!(alive(std::process::id()));
        assert!(!alive(0));
        assert!(!alive(u32::MAX));
    }
}
