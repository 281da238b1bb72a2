//! The browser's process tree, ended as one; how a process ended; whether
//! a process id is alive.
//!
//! Chromium starts many helper processes (renderers, GPU, network). When
//! the shell stops the browser, all of them must go:
//!
//! * **Unix**: the browser leads a process group of its own
//!   ([`isolate`]) and one `SIGKILL` to the group ends the tree.
//! * **Windows**: the browser is put in a Job Object created with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` right after it starts; ending the
//!   job ends every process in it, and if the shell dies without cleaning
//!   up, Windows closes our job handle and ends the tree itself. Chromium's
//!   own helpers are created after it runs its first instructions, so they
//!   are in the job (jobs nest since Windows 8).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

pub use imp::{ExitWatch, ProcessTree, is_alive, isolate, tree_is_alive};

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    /// This test binary, run again with libtest arguments: a child process
    /// that exists on every OS (and under Wine).
    fn this_test_binary(args: &[&str]) -> Command {
        let mut command = Command::new(std::env::current_exe().expect("own path"));
        command
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    #[test]
    fn a_normal_exit_is_described_with_its_status() {
        let mut child = this_test_binary(&["--list"]).spawn().expect("spawn");
        let watch = ExitWatch::new(&child).expect("watch");
        assert_eq!(watch.wait(), "exited with status 0");
        child.wait().expect("reap");
    }

    #[test]
    fn a_tree_is_killed_and_ends() {
        let mut command = this_test_binary(&[
            "--ignored",
            "--exact",
            "platform::process::tests::sleeps_when_asked",
        ]);
        isolate(&mut command);
        let mut child = command.spawn().expect("spawn");
        let tree = ProcessTree::adopt(&child).expect("adopt");
        let watch = ExitWatch::new(&child).expect("watch");
        tree.kill();
        let how = watch.wait();
        assert_ne!(how, "exited with status 0", "{how}");
        assert!(!child.wait().expect("reap").success());
    }

    /// The child of [`a_tree_is_killed_and_ends`]; not a test of its own.
    #[test]
    #[ignore = "a helper process for a_tree_is_killed_and_ends"]
    fn sleeps_when_asked() {
        std::thread::sleep(std::time::Duration::from_secs(30));
    }
}
