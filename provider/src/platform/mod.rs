//! What differs between operating systems, one concern per module, each
//! with one implementation per OS behind the same functions and types.
//!
//! The rest of the crate never names an OS: the launcher asks
//! [`debug_pipe`] for a private channel to the browser, [`process`] for a
//! process tree it can end in one call, [`privilege`] whether Chromium's
//! sandbox can run, and [`discovery`] where browsers are installed.
//!
//! # Layout
//!
//! * [`debug_pipe`] — the `--remote-debugging-pipe` channel: anonymous
//!   pipes handed to the child (fds 3 and 4 on Unix; inherited handles named
//!   by `--remote-debugging-io-pipes` on Windows), and our ends made async.
//! * [`process`] — the browser's process tree (a process group on Unix, a
//!   Job Object on Windows), how a process ended, whether a pid is alive.
//! * [`privilege`] — whether the browser must run with `--no-sandbox`.
//! * [`discovery`] — where Chrome, Chromium and Edge are installed, and
//!   whether a file is a program.
//! * `private_pipe` (Windows) — named pipes only the current user (and
//!   SYSTEM) may open, for the native messaging socket.

pub mod debug_pipe;
pub mod discovery;
#[cfg(windows)]
pub mod private_pipe;
pub mod privilege;
pub mod process;
