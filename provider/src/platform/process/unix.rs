//! Process trees and exits on Unix: process groups, `waitid`, `kill(pid, 0)`.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Makes the child lead a process group of its own, so that
/// [`ProcessTree::kill`] reaches its helpers too.
pub fn isolate(command: &mut Command) {
    command.process_group(0);
}

/// A started browser's process tree: its process group.
#[derive(Debug)]
pub struct ProcessTree {
    /// The group's id (the browser's pid, as it leads the group).
    group: libc::pid_t,
}

impl ProcessTree {
    /// The tree of `child`, which was started with [`isolate`].
    ///
    /// # Errors
    /// When the child's pid does not fit a `pid_t` (it always does).
    pub fn adopt(child: &Child) -> std::io::Result<Self> {
        let group = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
        Ok(Self { group })
    }

    /// Kills every process of the tree. Idempotent; a tree that is gone
    /// already is not an error.
    pub fn kill(&self) {
        // SAFETY: signalling our own child's process group; failure
        // (already gone) is harmless.
        unsafe {
            libc::kill(-self.group, libc::SIGKILL);
        }
    }
}

/// Waits for a child to end, without reaping it, so the owner of the
/// [`Child`] still reaps it.
#[derive(Debug)]
pub struct ExitWatch {
    /// The child's pid.
    pid: libc::id_t,
}

impl ExitWatch {
    /// A watch on `child`.
    ///
    /// # Errors
    /// When the child's pid does not fit an `id_t` (it always does).
    pub fn new(child: &Child) -> std::io::Result<Self> {
        let pid = libc::id_t::try_from(child.id()).map_err(std::io::Error::other)?;
        Ok(Self { pid })
    }

    /// Blocks until the process has exited and says how ("killed by
    /// signal 9 (SIGKILL)", "exited with status 1", "it was stopped" when
    /// we reaped it first).
    pub fn wait(self) -> String {
        // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: waits on our own child without reaping it (WNOWAIT);
            // `info` is a valid, writable siginfo_t.
            let waited = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pid,
                    &raw mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if waited == 0 {
                break;
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // Already reaped: we stopped it ourselves.
                return "it was stopped".into();
            }
        }
        // SAFETY: waitid filled `info` for a child that exited.
        let status = unsafe { info.si_status() };
        match info.si_code {
            libc::CLD_EXITED => format!("exited with status {status}"),
            libc::CLD_KILLED | libc::CLD_DUMPED => {
                format!("killed by signal {status}{}", signal_name(status))
            }
            _ => "it exited".into(),
        }
    }
}

/// ` (SIGKILL)` and the like for the signals that usually end a browser.
fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGTRAP => " (SIGTRAP)",
        _ => "",
    }
}

/// Whether a process with this id exists (also when it belongs to
/// another user, whom we may not signal).
pub fn is_alive(pid: u32) -> bool {
    libc::pid_t::try_from(pid).is_ok_and(|pid| pid > 0 && signal_reaches(pid))
}

/// Whether any process of the tree led by `root` (started with
/// [`isolate`]) still exists: the leader may be gone while its helpers
/// still end, and write into the profile as they do.
pub fn tree_is_alive(root: u32) -> bool {
    libc::pid_t::try_from(root).is_ok_and(|group| group > 0 && signal_reaches(-group))
}

/// Whether a signal to `target` (a process, or a group when negative)
/// would reach anyone: signal 0 checks without sending.
fn signal_reaches(target: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks whether the target exists.
    let sent = unsafe { libc::kill(target, 0) } == 0;
    sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described_by_status_or_signal() {
        let mut killed = Command::new("sleep").arg("30").spawn().unwrap();
        let watch = ExitWatch::new(&killed).unwrap();
        killed.kill().unwrap();
        assert_eq!(watch.wait(), "killed by signal 9 (SIGKILL)");
        killed.wait().unwrap();
        let mut failed = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let watch = ExitWatch::new(&failed).unwrap();
        assert_eq!(watch.wait(), "exited with status 3");
        failed.wait().unwrap();
    }

    #[test]
    fn a_process_group_is_killed_as_one() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & wait"]);
        isolate(&mut command);
        let mut child = command.spawn().unwrap();
        let tree = ProcessTree::adopt(&child).unwrap();
        tree.kill();
        assert!(!child.wait().unwrap().success());
    }
}
