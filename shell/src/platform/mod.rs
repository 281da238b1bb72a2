//! What differs between operating systems for the shell, one concern per
//! module, each with one implementation per OS behind the same functions.
//! The rest of the shell never names an OS.
//!
//! # Layout
//!
//! * [`dirs`] — where per-user data and runtime files live by default.
//! * [`files`] — directories and files only their owner can read (modes
//!   0700/0600 on Unix; on Windows a protected ACL granting only the
//!   current user), and the check that a file is so.
//! * [`lock`] — exclusive locks on open files (`flock`; `LockFileEx`).
//! * [`process`] — whether a process runs, waiting for its end, asking it
//!   to stop, and starting one detached from our terminal or console.
//! * [`signals`] — the requests the shell takes from outside: stop (Ctrl-C,
//!   SIGTERM; on Windows Ctrl-C, Ctrl-Break and closing the console) and
//!   "bring your window to the front" (SIGUSR1; none on Windows yet).

pub mod dirs;
pub mod files;
pub mod lock;
pub mod process;
pub mod signals;
