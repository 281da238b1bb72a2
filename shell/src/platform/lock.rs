//! Exclusive locks on open files, released when the file closes (also when
//! the process dies): `flock` on Unix, `LockFileEx` on Windows.

use std::fs::File;

/// Takes an exclusive lock on `file` without waiting; `Ok(false)` when
/// another process holds it.
///
/// # Errors
/// When locking fails for another reason.
pub fn try_lock(file: &File) -> std::io::Result<bool> {
    imp::lock(file, false)
}

/// Takes an exclusive lock on `file`, waiting as long as another holds it.
/// Blocks the thread: call it on a blocking one.
///
/// # Errors
/// When locking fails.
pub fn lock(file: &File) -> std::io::Result<()> {
    imp::lock(file, true).map(|_| ())
}

#[cfg(unix)]
mod imp {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    pub(super) fn lock(file: &File, wait: bool) -> std::io::Result<bool> {
        let operation = if wait {
            libc::LOCK_EX
        } else {
            libc::LOCK_EX | libc::LOCK_NB
        };
        // SAFETY: flock on a descriptor the caller keeps open.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(true);
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(false)
        } else {
            Err(error)
        }
    }
}

#[cfg(windows)]
mod imp {
    use std::fs::File;
    use std::os::windows::io::AsRawHandle;

    use windows_sys::Win32::Foundation::{ERROR_LOCK_VIOLATION, HANDLE};
    use windows_sys::Win32::Storage::FileSystem::{
        LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
    };
    use windows_sys::Win32::System::IO::OVERLAPPED;

    /// The high 32 bits of the locked byte's offset (2^62).
    const LOCKED_RANGE_OFFSET_HIGH: u32 = 0x4000_0000;

    pub(super) fn lock(file: &File, wait: bool) -> std::io::Result<bool> {
        let mut flags = LOCKFILE_EXCLUSIVE_LOCK;
        if !wait {
            flags |= LOCKFILE_FAIL_IMMEDIATELY;
        }
        // SAFETY: all-zero is a valid OVERLAPPED.
        let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
        // One byte far past any content: a Windows lock also blocks reads
        // of its range, and a lock file's content (the owner's pid) must
        // stay readable to those who find it locked.
        overlapped.Anonymous.Anonymous.OffsetHigh = LOCKED_RANGE_OFFSET_HIGH;
        // SAFETY: a valid file handle the caller keeps open;
        // `overlapped` lives through the (synchronous) call.
        let locked = unsafe {
            LockFileEx(
                file.as_raw_handle() as HANDLE,
                flags,
                0,
                1,
                0,
                &raw mut overlapped,
            )
        };
        if locked != 0 {
            return Ok(true);
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
            Ok(false)
        } else {
            Err(error)
        }
    }
}
