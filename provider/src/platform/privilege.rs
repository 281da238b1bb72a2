//! Whether Chromium's sandbox can run as we run the browser.
//!
//! On Unix, Chromium refuses to start as root with its sandbox on, so a
//! root shell (containers, CI) passes `--no-sandbox`. On Windows the
//! sandbox works for administrators too; nothing is turned off there.

/// Whether the browser must be started with `--no-sandbox`.
#[cfg(unix)]
pub fn sandbox_must_be_disabled() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether the browser must be started with `--no-sandbox`: never on Windows.
#[cfg(windows)]
pub fn sandbox_must_be_disabled() -> bool {
    false
}
