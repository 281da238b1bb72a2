//! Other processes by id: whether one still runs, waiting for it to end,
//! asking it to stop; and who this user is.

use std::time::Duration;

/// Whether a process with this id exists.
pub fn is_alive(pid: u32) -> bool {
    imp::is_alive(pid)
}

/// Resolves when process `pid` has exited (at once when there is none).
pub async fn exited(pid: u32) {
    imp::exited(pid).await;
}

/// Waits until process `pid` has exited, at most `within`; true if it has.
pub async fn wait_for_exit(pid: u32, within: Duration) -> bool {
    tokio::time::timeout(within, exited(pid)).await.is_ok()
}

/// Asks process `pid` to stop as on Ctrl+C (it shuts down in order); false
/// when there is no such process.
pub fn ask_to_stop(pid: u32) -> bool {
    imp::ask_to_stop(pid)
}

/// Starts `command`'s process apart from this terminal's: Ctrl+C here is
/// not for it (a background instance outlives the command that started it).
pub fn detach(command: &mut tokio::process::Command) {
    imp::detach(command);
}

/// This user's id (Unix), for directories named after it.
#[cfg(unix)]
pub fn user_id() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(unix)]
mod imp {
    use std::os::fd::OwnedFd;
    use std::time::Duration;

    pub fn is_alive(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        pid > 0 && unsafe { libc::kill(pid, 0) } == 0
    }

    /// Event-driven through a pidfd (so it works for processes that are
    /// not our children); where pidfds are not available, it checks once
    /// a second.
    pub async fn exited(pid: u32) {
        if let Some(fd) = pidfd(pid)
            && fd.readable().await.is_ok()
        {
            return;
        }
        while is_alive(pid) {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    pub fn detach(command: &mut tokio::process::Command) {
        command.process_group(0);
    }

    pub fn ask_to_stop(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill has no memory preconditions; a stale pid fails harmlessly.
        pid > 0 && unsafe { libc::kill(pid, libc::SIGTERM) } == 0
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

    #[cfg(not(target_os = "linux"))]
    fn pidfd(_pid: u32) -> Option<tokio::io::unix::AsyncFd<OwnedFd>> {
        None
    }
}

#[cfg(windows)]
mod imp {
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, STILL_ACTIVE, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, INFINITE, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
        PROCESS_SYNCHRONIZE, PROCESS_TERMINATE, TerminateProcess, WaitForSingleObject,
    };

    /// A process handle, closed on drop.
    struct Process(HANDLE);

    impl Process {
        fn open(pid: u32, access: u32) -> Option<Self> {
            if pid == 0 {
                return None;
            }
            // SAFETY: OpenProcess takes plain values and returns a handle or null.
            let handle = unsafe { OpenProcess(access, 0, pid) };
            (!handle.is_null()).then_some(Self(handle))
        }
    }

    impl Process {
        /// Blocks until the process ends; true when it did.
        fn wait(&self) -> bool {
            // SAFETY: a live handle with synchronize access.
            unsafe { WaitForSingleObject(self.0, INFINITE) == WAIT_OBJECT_0 }
        }
    }

    impl Drop for Process {
        fn drop(&mut self) {
            // SAFETY: a handle OpenProcess gave us.
            unsafe { CloseHandle(self.0) };
        }
    }

    // SAFETY: a process handle may be used from any thread.
    unsafe impl Send for Process {}

    pub fn is_alive(pid: u32) -> bool {
        let Some(process) = Process::open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
            return false;
        };
        let mut code = 0u32;
        // SAFETY: a live handle with query access and an out-pointer.
        let read = unsafe { GetExitCodeProcess(process.0, &mut code) };
        read != 0 && code == STILL_ACTIVE as u32
    }

    /// Waits on the process handle (on a blocking thread).
    pub async fn exited(pid: u32) {
        let Some(process) = Process::open(pid, PROCESS_SYNCHRONIZE) else {
            return;
        };
        let _ = tokio::task::spawn_blocking(move || process.wait()).await;
    }

    /// Windows has no polite signal for another console's process: it is
    /// ended (its browser goes with it, through the Job Object it holds).
    pub fn ask_to_stop(pid: u32) -> bool {
        let Some(process) = Process::open(pid, PROCESS_TERMINATE) else {
            return false;
        };
        // SAFETY: a live handle with terminate access.
        unsafe { TerminateProcess(process.0, 1) != 0 }
    }

    pub fn detach(command: &mut tokio::process::Command) {
        /// Its own console process group, and no console of ours.
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        command.creation_flags(CREATE_NEW_PROCESS_GROUP | DETACHED_PROCESS);
    }
}
