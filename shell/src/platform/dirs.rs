//! Per-user directories, where each OS keeps them:
//!
//! | | Linux and other Unixes | macOS | Windows |
//! |---|---|---|---|
//! | runtime (tokens, records of running shells) | `$XDG_RUNTIME_DIR/browser-shell`, else `/tmp/browser-shell-<uid>` | `$TMPDIR/browser-shell` (a per-user temp directory) | `%LOCALAPPDATA%\browser-shell\run` |
//! | configuration (pairing, config file) | `$XDG_CONFIG_HOME`, else `~/.config` | `~/Library/Application Support` | `%LOCALAPPDATA%` |
//! | data (the desktop's profile) | `$XDG_DATA_HOME`, else `~/.local/share` | `~/Library/Application Support` | `%LOCALAPPDATA%` |
//!
//! The configuration and data bases are where `browser-shell/` goes.

use std::path::PathBuf;

/// The runtime directory itself (not yet created or checked).
pub fn runtime() -> PathBuf {
    imp::runtime()
}

/// The base under which the configuration directory `browser-shell` is.
pub fn config_base() -> Option<PathBuf> {
    imp::config_base()
}

/// The base under which the data directory `browser-shell` is.
pub fn data_base() -> Option<PathBuf> {
    imp::data_base()
}

/// An absolute directory from an environment variable, if set.
fn absolute_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
}

/// `$HOME`/`below`, when `HOME` is an absolute directory.
#[cfg(unix)]
fn under_home(below: &str) -> Option<PathBuf> {
    absolute_var("HOME").map(|home| home.join(below))
}

#[cfg(all(unix, not(target_os = "macos")))]
mod imp {
    use std::path::PathBuf;

    pub fn runtime() -> PathBuf {
        match super::absolute_var("XDG_RUNTIME_DIR") {
            Some(base) => base.join("browser-shell"),
            None => std::env::temp_dir().join(format!(
                "browser-shell-{}",
                super::super::process::user_id()
            )),
        }
    }

    pub fn config_base() -> Option<PathBuf> {
        super::absolute_var("XDG_CONFIG_HOME").or_else(|| super::under_home(".config"))
    }

    pub fn data_base() -> Option<PathBuf> {
        super::absolute_var("XDG_DATA_HOME").or_else(|| super::under_home(".local/share"))
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use std::path::PathBuf;

    pub fn runtime() -> PathBuf {
        // `$TMPDIR` is the user's own (`/var/folders/…/T/`).
        std::env::temp_dir().join("browser-shell")
    }

    pub fn config_base() -> Option<PathBuf> {
        super::under_home("Library/Application Support")
    }

    pub fn data_base() -> Option<PathBuf> {
        super::under_home("Library/Application Support")
    }
}

#[cfg(windows)]
mod imp {
    use std::path::PathBuf;

    /// `%LOCALAPPDATA%` (the user's own, not roaming to other machines:
    /// tokens and the pairing's secret stay on this one).
    fn local_app_data() -> Option<PathBuf> {
        super::absolute_var("LOCALAPPDATA")
    }

    pub fn runtime() -> PathBuf {
        local_app_data()
            .unwrap_or_else(std::env::temp_dir)
            .join("browser-shell")
            .join("run")
    }

    pub fn config_base() -> Option<PathBuf> {
        local_app_data()
    }

    pub fn data_base() -> Option<PathBuf> {
        local_app_data()
    }
}
