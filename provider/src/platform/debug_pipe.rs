//! The private channel to a browser we launch: Chromium's
//! `--remote-debugging-pipe`, two anonymous pipes that only the browser
//! and we hold, so no other local process can reach its DevTools (a
//! `--remote-debugging-port` can be opened by anyone on the machine).
//!
//! How the browser finds its ends differs:
//!
//! * **Unix**: Chromium reads commands from fd 3 and writes to fd 4. Our
//!   `pre_exec` moves the child's ends there between fork and exec.
//! * **Windows**: Chromium takes the two handle values from
//!   `--remote-debugging-io-pipes=<read>,<write>` (decimal), which it
//!   added for ChromeDriver (`chrome/test/chromedriver/net/pipe_builder.cc`):
//!   an inherited handle has the same value in the child. The older route,
//!   which Playwright and Puppeteer take through Node's `stdio` array, puts
//!   the handles in the C runtime's fd table (`STARTUPINFO.lpReserved2`) so
//!   that Chromium's `_get_osfhandle(3)` / `(4)` finds them; Rust's
//!   `std::process::Command` cannot fill `lpReserved2`, and doing so by hand
//!   means calling `CreateProcessW` ourselves. The switch needs only
//!   inheritable handles, which `Command` passes on (it always creates the
//!   child with `bInheritHandles`). Chromium builds older than the switch
//!   (before 2023) do not know it and fail to answer on the pipe: the launch
//!   then ends with its startup timeout and the browser's stderr.
//!
//!   The child's ends are inheritable only from [`DebugPipe::new`] until
//!   [`DebugPipe::into_parent_ends`]: a process another thread of ours
//!   spawns meanwhile may inherit them too (`Command` has no stable way to
//!   restrict inheritance to a list). That only delays end-of-file on the
//!   pipe until that process exits; it opens nothing to other users.

use std::io::{PipeReader, PipeWriter};
use std::process::Command;

pub use imp::{AsyncReader, AsyncWriter, into_async};

/// A debugging pipe prepared for one child: made before the spawn,
/// [attached](DebugPipe::attach) to its command, then split after it.
#[derive(Debug)]
pub struct DebugPipe {
    /// We read the browser's messages here.
    from_browser: PipeReader,
    /// We write commands here.
    to_browser: PipeWriter,
    /// The browser's read end; closed here once the child holds it.
    child_reads: PipeReader,
    /// The browser's write end; closed here once the child holds it.
    child_writes: PipeWriter,
}

impl DebugPipe {
    /// Creates both pipes.
    ///
    /// # Errors
    /// When the OS has no pipe (or, on Windows, cannot mark the child's
    /// ends inheritable).
    pub fn new() -> std::io::Result<Self> {
        let (child_reads, to_browser) = std::io::pipe()?;
        let (from_browser, child_writes) = std::io::pipe()?;
        let pipe = Self {
            from_browser,
            to_browser,
            child_reads,
            child_writes,
        };
        imp::prepare(&pipe.child_reads, &pipe.child_writes)?;
        Ok(pipe)
    }

    /// Makes `command` hand the child its ends, and say where they are
    /// when this OS needs a switch for it (the command itself passes
    /// `--remote-debugging-pipe`).
    pub fn attach(&self, command: &mut Command) {
        imp::attach(command, &self.child_reads, &self.child_writes);
    }

    /// Our ends (read the browser's messages, write commands), after the
    /// spawn; our copies of the child's ends close here, or we would never
    /// see end-of-file when the browser goes.
    pub fn into_parent_ends(self) -> (PipeReader, PipeWriter) {
        drop(self.child_reads);
        drop(self.child_writes);
        (self.from_browser, self.to_browser)
    }
}

#[cfg(unix)]
mod imp {
    use std::io::{PipeReader, PipeWriter};
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// Our read end, registered with tokio's reactor.
    pub type AsyncReader = tokio::net::unix::pipe::Receiver;
    /// Our write end, registered with tokio's reactor.
    pub type AsyncWriter = tokio::net::unix::pipe::Sender;

    /// Nothing to do: the ends stay close-on-exec; `pre_exec` copies them.
    #[expect(clippy::unnecessary_wraps, reason = "the Windows version can fail")]
    pub(super) fn prepare(_reads: &PipeReader, _writes: &PipeWriter) -> std::io::Result<()> {
        Ok(())
    }

    /// Puts the child's ends on fds 3 (it reads) and 4 (it writes).
    pub(super) fn attach(command: &mut Command, reads: &PipeReader, writes: &PipeWriter) {
        let child_reads = reads.as_raw_fd();
        let child_writes = writes.as_raw_fd();
        // SAFETY: the closure only calls async-signal-safe functions (fcntl,
        // dup2) on descriptors that are open in the forked child (the
        // DebugPipe holds them until after the spawn).
        unsafe {
            command.pre_exec(move || {
                // Move both ends out of the way first so that dup2 onto 3 and 4
                // cannot clobber one of them, whatever numbers they had.
                let high_read = libc::fcntl(child_reads, libc::F_DUPFD_CLOEXEC, 10);
                let high_write = libc::fcntl(child_writes, libc::F_DUPFD_CLOEXEC, 10);
                if high_read < 0 || high_write < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::dup2(high_read, 3) < 0 || libc::dup2(high_write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// Our ends as non-blocking tokio pipes. Must be called inside a
    /// tokio runtime.
    ///
    /// # Errors
    /// When the reactor cannot register them.
    pub fn into_async(
        reader: PipeReader,
        writer: PipeWriter,
    ) -> std::io::Result<(AsyncReader, AsyncWriter)> {
        Ok((
            AsyncReader::from_owned_fd(OwnedFd::from(reader))?,
            AsyncWriter::from_owned_fd(OwnedFd::from(writer))?,
        ))
    }
}

#[cfg(windows)]
mod imp {
    use std::io::{PipeReader, PipeWriter};
    use std::os::windows::io::{AsRawHandle, OwnedHandle};
    use std::process::Command;

    use windows_sys::Win32::Foundation::{HANDLE, HANDLE_FLAG_INHERIT, SetHandleInformation};

    /// Our read end. Anonymous pipes on Windows cannot do overlapped I/O,
    /// so tokio's file type reads them on its blocking pool.
    pub type AsyncReader = tokio::fs::File;
    /// Our write end, written on tokio's blocking pool.
    pub type AsyncWriter = tokio::fs::File;

    /// Marks the child's ends inheritable, so the child gets them.
    pub(super) fn prepare(reads: &PipeReader, writes: &PipeWriter) -> std::io::Result<()> {
        for handle in [reads.as_raw_handle(), writes.as_raw_handle()] {
            // SAFETY: a valid handle this process owns, held by the caller.
            let done = unsafe {
                SetHandleInformation(handle as HANDLE, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT)
            };
            if done == 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Names the inherited handles: `--remote-debugging-io-pipes=<read>,<write>`.
    pub(super) fn attach(command: &mut Command, reads: &PipeReader, writes: &PipeWriter) {
        command.arg(format!(
            "--remote-debugging-io-pipes={},{}",
            reads.as_raw_handle() as usize,
            writes.as_raw_handle() as usize
        ));
    }

    /// Our ends as tokio files (reads and writes on the blocking pool).
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// None today; the signature matches the Unix version.
    pub fn into_async(
        reader: PipeReader,
        writer: PipeWriter,
    ) -> std::io::Result<(AsyncReader, AsyncWriter)> {
        let reader = std::fs::File::from(OwnedHandle::from(reader));
        let writer = std::fs::File::from(OwnedHandle::from(writer));
        Ok((
            tokio::fs::File::from_std(reader),
            tokio::fs::File::from_std(writer),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn the_parent_ends_talk_to_the_child_ends() {
        let pipe = DebugPipe::new().expect("pipes");
        let DebugPipe {
            from_browser,
            mut to_browser,
            mut child_reads,
            mut child_writes,
        } = pipe;
        to_browser.write_all(b"{}\0").expect("write");
        let mut got = [0u8; 3];
        child_reads.read_exact(&mut got).expect("read");
        assert_eq!(&got, b"{}\0");
        child_writes.write_all(b"ok\0").expect("write back");
        drop(child_writes);
        let mut back = Vec::new();
        let mut from_browser = from_browser;
        from_browser.read_to_end(&mut back).expect("read back");
        assert_eq!(back, b"ok\0");
    }
}
