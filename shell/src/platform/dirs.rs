//! Default places for per-user data and runtime files.
//!
//! * **Unix**: data in `$XDG_DATA_HOME/browser-shell` (else
//!   `~/.local/share/browser-shell`), configuration in
//!   `$XDG_CONFIG_HOME/browser-shell` (else `~/.config/browser-shell`);
//!   runtime files in
//!   `$XDG_RUNTIME_DIR/browser-shell`, else `<temp>/browser-shell-<uid>`.
//! * **Windows**: all under `%LOCALAPPDATA%\browser-shell` (runtime files
//!   in its `run` folder), which is the user's own and not roamed.

use std::path::PathBuf;

/// The folder for data kept between runs (the desktop profile), or why
/// there is none (the variables that were missing).
///
/// # Errors
/// A sentence naming the environment variables that were looked at.
pub fn data_home() -> Result<PathBuf, &'static str> {
    imp::data_home()
}

/// The folder for configuration (the extension pairing), or why there is none.
///
/// # Errors
/// A sentence naming the environment variables that were looked at.
pub fn config_home() -> Result<PathBuf, &'static str> {
    imp::config_home()
}

/// The default runtime directory (before the private check).
pub fn runtime_default() -> PathBuf {
    imp::runtime_default()
}

/// `name` as an absolute directory from the environment.
fn absolute_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
}

#[cfg(unix)]
mod imp {
    use std::path::{Path, PathBuf};

    use super::absolute_var;

    pub(super) fn data_home() -> Result<PathBuf, &'static str> {
        absolute_var("XDG_DATA_HOME")
            .or_else(|| absolute_var("HOME").map(|home| home.join(".local/share")))
            .map(|data| data.join("browser-shell"))
            .ok_or("neither XDG_DATA_HOME nor HOME is set")
    }

    pub(super) fn config_home() -> Result<PathBuf, &'static str> {
        absolute_var("XDG_CONFIG_HOME")
            .or_else(|| absolute_var("HOME").map(|home| home.join(".config")))
            .map(|config| config.join("browser-shell"))
            .ok_or("neither XDG_CONFIG_HOME nor HOME is set")
    }

    pub(super) fn runtime_default() -> PathBuf {
        match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(base) => Path::new(&base).join("browser-shell"),
            // SAFETY: getuid has no preconditions and cannot fail.
            None => {
                std::env::temp_dir().join(format!("browser-shell-{}", unsafe { libc::getuid() }))
            }
        }
    }
}

#[cfg(windows)]
mod imp {
    use std::path::PathBuf;

    use super::absolute_var;

    pub(super) fn data_home() -> Result<PathBuf, &'static str> {
        absolute_var("LOCALAPPDATA")
            .map(|base| base.join("browser-shell"))
            .ok_or("LOCALAPPDATA is not set")
    }

    pub(super) fn config_home() -> Result<PathBuf, &'static str> {
        data_home()
    }

    pub(super) fn runtime_default() -> PathBuf {
        match data_home() {
            Ok(base) => base.join("run"),
            Err(_) => std::env::temp_dir().join("browser-shell-run"),
        }
    }
}
