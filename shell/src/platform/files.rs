//! Files and directories only their owner may read: the runtime directory
//! (tokens), the pairing, secrets, profiles. On Unix that is the owner's
//! uid and mode bits (0700, 0600).

use std::fs::OpenOptions;
use std::path::Path;

/// Creates `dir` and its missing parents, the new ones readable by their
/// owner only.
///
/// # Errors
/// What the file system says.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    imp::create_private_dir(dir)
}

/// Options that create a file readable by its owner only (the caller adds
/// read, write, create, truncate as needed).
pub fn private_file_options() -> OpenOptions {
    imp::private_file_options()
}

/// `Err(why, in words)` unless `path` (a file or directory) belongs to
/// this user and no one else may read it; `fix` names the command that
/// makes it so.
///
/// # Errors
/// Why it is not private, or why it cannot be checked.
pub fn check_private(path: &Path) -> Result<(), String> {
    imp::check_private(path)
}

/// Who may read `path`, in a few words for `doctor` (such as `mode 700`).
pub fn access_of(path: &Path) -> String {
    imp::access_of(path)
}

#[cfg(unix)]
mod imp {
    use std::fs::OpenOptions;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::path::Path;

    pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }

    pub fn private_file_options() -> OpenOptions {
        let mut options = OpenOptions::new();
        options.mode(0o600);
        options
    }

    pub fn check_private(path: &Path) -> Result<(), String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
        let me = super::super::process::user_id();
        if meta.uid() != me {
            return Err(format!(
                "it belongs to user {}, not to you ({me})",
                meta.uid()
            ));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            let wanted = if meta.is_dir() { 700 } else { 600 };
            return Err(format!(
                "other users may read it (mode {mode:o}); run: chmod {wanted} {}",
                path.display()
            ));
        }
        Ok(())
    }

    pub fn access_of(path: &Path) -> String {
        std::fs::metadata(path)
            .map(|meta| format!("mode {:o}", meta.permissions().mode() & 0o777))
            .unwrap_or_else(|e| format!("unreadable: {e}"))
    }
}
