//! The desktop's browser profile: kept between runs by default (so a
//! person who signed in yesterday is still signed in), private to its
//! owner, and used by one browser at a time.

use std::path::{Path, PathBuf};

use browser_provider::{BrowserError, Result};

use crate::platform;

/// Where the desktop keeps its profile: `profile` in the per-user data
/// folder ([`platform::dirs::data_home`]: `$XDG_DATA_HOME/browser-shell`,
/// else `~/.local/share/browser-shell`; `%LOCALAPPDATA%\browser-shell` on
/// Windows).
///
/// # Errors
/// `INVALID_ARGUMENT` when the environment names no such folder.
pub fn desktop_default() -> Result<PathBuf> {
    let data = platform::dirs::data_home().map_err(|missing| {
        BrowserError::invalid(
            "profile",
            format!(
                "{missing}, so there is no place for the profile; \
                 pass --profile DIR or --temporary-profile"
            ),
        )
    })?;
    Ok(data.join("profile"))
}

/// Creates `dir` (and its parents) readable by its owner only, when it
/// does not exist yet.
///
/// # Errors
/// `INVALID_ARGUMENT` when it cannot be created.
pub fn create_private(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    platform::files::create_private_dir(dir).map_err(|e| {
        BrowserError::invalid(
            "profile",
            format!("cannot create the profile directory {}: {e}", dir.display()),
        )
    })
}

/// This process's claim on a profile: one browser-shell at a time uses
/// it (the headless shell does not take Chromium's own lock). Released
/// when dropped, or when the process ends, however it ends.
#[derive(Debug)]
pub struct ProfileLock {
    _file: std::fs::File,
}

/// The lock file in a profile directory; it holds the owner's pid.
const LOCK_FILE: &str = "browser-shell.lock";

/// Claims the profile in `dir` (which exists) for this process; when
/// another process has it, answers that process's id (0 when unknown).
///
/// # Errors
/// `INVALID_ARGUMENT` when the lock file cannot be opened.
pub fn claim(dir: &Path) -> Result<std::result::Result<ProfileLock, u32>> {
    use std::io::{Read, Seek, Write};
    let mut file = platform::files::private_file(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(dir.join(LOCK_FILE))
    .map_err(|e| {
        BrowserError::invalid(
            "profile",
            format!("cannot lock the profile {}: {e}", dir.display()),
        )
    })?;
    let locked = platform::lock::try_lock(&file).map_err(|e| {
        BrowserError::invalid(
            "profile",
            format!("cannot lock the profile {}: {e}", dir.display()),
        )
    })?;
    if !locked {
        let mut owner = String::new();
        let _ = file.read_to_string(&mut owner);
        return Ok(Err(owner.trim().parse().unwrap_or(0)));
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    Ok(Ok(ProfileLock { _file: file }))
}

/// The process of this machine whose Chromium holds the profile in `dir`
/// (its `SingletonLock` names `host-pid`), if it still runs.
pub fn in_use_by(dir: &Path) -> Option<u32> {
    let target = std::fs::read_link(dir.join("SingletonLock")).ok()?;
    let (host, pid) = target.to_str()?.rsplit_once('-')?;
    let pid: u32 = pid.parse().ok()?;
    let this_host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    (host == this_host.trim() && platform::process::alive(pid)).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn a_lock_of_a_live_process_on_this_host_is_in_use_and_a_stale_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(in_use_by(dir.path()), None, "no lock");
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let lock = dir.path().join("SingletonLock");
        std::os::unix::fs::symlink(format!("{}-{}", host.trim(), std::process::id()), &lock)
            .unwrap();
        assert_eq!(in_use_by(dir.path()), Some(std::process::id()));
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink("elsewhere.example-1", &lock).unwrap();
        assert_eq!(in_use_by(dir.path()), None, "another host's lock");
    }

    #[test]
    fn one_process_at_a_time_claims_a_profile() {
        let dir = tempfile::tempdir().unwrap();
        let first = claim(dir.path()).unwrap().expect("free");
        // flock locks belong to the open file: a second open conflicts
        // even in the same process, as another process's would.
        assert_eq!(claim(dir.path()).unwrap().unwrap_err(), std::process::id());
        drop(first);
        // Free again. A process another test forks at this moment holds a
        // copy of the descriptor until it execs (which closes it): wait
        // for that, within a bound.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while claim(dir.path()).unwrap().is_err() {
            assert!(std::time::Instant::now() < deadline, "free again");
            std::thread::yield_now();
        }
    }

    #[test]
    fn the_profile_is_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("share/browser-shell/profile");
        create_private(&profile).unwrap();
        assert_eq!(platform::files::exposure(&profile), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&profile).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }
}
