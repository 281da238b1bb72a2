//! Process trees and exits on Windows: a Job Object per browser, process
//! handles for exits and liveness.

use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use std::process::{Child, Command};

use windows_sys::Win32::Foundation::{HANDLE, STILL_ACTIVE, WAIT_OBJECT_0};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, INFINITE, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    WaitForSingleObject,
};

/// The exit code of processes ended through [`ProcessTree::kill`].
const KILLED_EXIT_CODE: u32 = 1;

/// Nothing to prepare: the tree is made a job after the spawn.
pub fn isolate(_command: &mut Command) {}

/// A started browser's process tree: a Job Object that ends every process
/// in it when killed or when its last handle (ours) closes.
#[derive(Debug)]
pub struct ProcessTree {
    /// The job; closing it kills the tree (`KILL_ON_JOB_CLOSE`).
    job: OwnedHandle,
}

impl ProcessTree {
    /// Creates a job that kills its processes when closed and puts
    /// `child` in it.
    ///
    /// # Errors
    /// When the job cannot be created or the child cannot join it.
    pub fn adopt(child: &Child) -> std::io::Result<Self> {
        // SAFETY: no name and default security: an anonymous job.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a fresh, valid handle that nothing else owns.
        let job = unsafe { OwnedHandle::from_raw_handle(raw.cast()) };
        // SAFETY: all-zero is a valid JOBOBJECT_EXTENDED_LIMIT_INFORMATION.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let size = u32::try_from(size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>())
            .map_err(std::io::Error::other)?;
        // SAFETY: `limits` is a valid structure of the class and size given.
        let set = unsafe {
            SetInformationJobObject(
                job.as_raw_handle() as HANDLE,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size,
            )
        };
        if set == 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both handles are valid for the duration of the call.
        let assigned = unsafe {
            AssignProcessToJobObject(
                job.as_raw_handle() as HANDLE,
                child.as_handle().as_raw_handle() as HANDLE,
            )
        };
        if assigned == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { job })
    }

    /// Ends every process of the tree. Idempotent.
    pub fn kill(&self) {
        // SAFETY: a valid job handle; ending an empty job is harmless.
        unsafe {
            TerminateJobObject(self.job.as_raw_handle() as HANDLE, KILLED_EXIT_CODE);
        }
    }
}

/// Waits for a child to end, on a handle of its own, so the owner of the
/// [`Child`] can still wait on and kill it.
#[derive(Debug)]
pub struct ExitWatch {
    /// A copy of the child's process handle.
    process: OwnedHandle,
}

impl ExitWatch {
    /// A watch on `child`.
    ///
    /// # Errors
    /// When the process handle cannot be duplicated.
    pub fn new(child: &Child) -> std::io::Result<Self> {
        Ok(Self {
            process: child.as_handle().try_clone_to_owned()?,
        })
    }

    /// Blocks until the process has exited and says how ("exited with
    /// status 1", "crashed with status 0xC0000005").
    pub fn wait(self) -> String {
        let handle = self.process.as_raw_handle() as HANDLE;
        // SAFETY: a valid process handle we own.
        if unsafe { WaitForSingleObject(handle, INFINITE) } != WAIT_OBJECT_0 {
            return "it exited".into();
        }
        let mut code = 0u32;
        // SAFETY: a valid process handle; `code` is writable.
        if unsafe { GetExitCodeProcess(handle, &raw mut code) } == 0 {
            return "it exited".into();
        }
        describe(code)
    }
}

/// Words for an exit code: NTSTATUS failures (0xC…) are crashes.
fn describe(code: u32) -> String {
    if code >= 0xC000_0000 {
        format!("crashed with status {code:#010X}")
    } else {
        format!("exited with status {code}")
    }
}

/// Whether a process with this id is running.
pub fn is_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    // SAFETY: opening with query rights only; the handle is closed below.
    let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if raw.is_null() {
        // Either gone, or someone else's we may not open: a process that
        // exists but denies us is alive.
        return std::io::Error::last_os_error().raw_os_error() == Some(5);
    }
    // SAFETY: a fresh, valid handle that we own from here.
    let process = unsafe { OwnedHandle::from_raw_handle(raw.cast()) };
    let mut code = 0u32;
    // SAFETY: a valid process handle; `code` is writable.
    let ok = unsafe { GetExitCodeProcess(process.as_raw_handle() as HANDLE, &raw mut code) };
    ok != 0 && code == STILL_ACTIVE as u32
}

/// Whether the tree led by `root` still runs. Its Job Object ends the
/// helpers with the browser (or with the shell that holds the job), so the
/// browser stands for its tree.
pub fn tree_is_alive(root: u32) -> bool {
    is_alive(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crashes_and_exits_are_told_apart() {
        assert_eq!(describe(3), "exited with status 3");
        assert_eq!(describe(0xC000_0005), "crashed with status 0xC0000005");
    }

    #[test]
    fn our_own_process_is_alive() {
        assert!(is_alive(std::process::id()));
        assert!(!is_alive(0));
    }
}
