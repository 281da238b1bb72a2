//! Where browsers are installed, per OS, and whether a file is a program.
//!
//! [`candidates`] lists what to try in order, after the explicit path and
//! `BROWSER_SHELL_CHROMIUM` that the launcher checks first:
//!
//! * **Linux**: the headless shell's binary and names on `PATH`
//!   (`chromium-headless-shell` when headless; `chromium`, `google-chrome`…).
//! * **macOS**: the same names on `PATH`, then the app bundles of Chrome,
//!   Chromium and Edge in `/Applications`, then in `~/Applications`.
//! * **Windows**: `chrome.exe`, `msedge.exe`… on `PATH`; the registry's
//!   App Paths (`HKCU`, then `HKLM`, `SOFTWARE\Microsoft\Windows\
//!   CurrentVersion\App Paths\chrome.exe` and `msedge.exe`), where their
//!   installers register them; then the default install folders under
//!   `%ProgramFiles%`, `%ProgramFiles(x86)%` and `%LOCALAPPDATA%`.

use std::path::PathBuf;

/// One place a browser may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// A full path.
    Path(PathBuf),
    /// A program name looked up in each directory of `PATH`.
    OnPath(&'static str),
}

pub use imp::{candidates, is_program};

/// Where distributions install the headless shell's binary itself: it is
/// run directly, not through the `/usr/bin` wrapper script, which stays
/// in between as a shell process (so signals and exit status would be
/// the script's, not the browser's).
#[cfg(unix)]
const HEADLESS_SHELL_BINARIES: &[&str] = &["/usr/lib/chromium/chromium-headless-shell"];

/// Names searched on `PATH` first for a browser without a window: the
/// headless shell starts in a third of the time and runs in half the
/// memory of the full browser in headless mode.
#[cfg(unix)]
const HEADLESS_SHELL_NAMES: &[&str] = &["chromium-headless-shell", "chrome-headless-shell"];

/// Browser names searched on `PATH`, in order.
#[cfg(unix)]
const PATH_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

#[cfg(unix)]
mod imp {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::{Candidate, HEADLESS_SHELL_BINARIES, HEADLESS_SHELL_NAMES, PATH_NAMES};

    /// The browsers' programs inside their app bundles on macOS.
    const MACOS_BUNDLES: &[&str] = &[
        "Google Chrome.app/Contents/MacOS/Google Chrome",
        "Chromium.app/Contents/MacOS/Chromium",
        "Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
    ];

    /// Where to look, in order; `headless` puts the headless shell first.
    pub fn candidates(headless: bool) -> Vec<Candidate> {
        let mut list = Vec::new();
        if headless {
            list.extend(
                HEADLESS_SHELL_BINARIES
                    .iter()
                    .map(|path| Candidate::Path(PathBuf::from(path))),
            );
            list.extend(HEADLESS_SHELL_NAMES.iter().copied().map(Candidate::OnPath));
        }
        list.extend(PATH_NAMES.iter().copied().map(Candidate::OnPath));
        // The system's Applications folder, then the user's own.
        let home = std::env::var_os("HOME").map(|home| Path::new(&home).join("Applications"));
        for folder in std::iter::once(PathBuf::from("/Applications")).chain(home) {
            list.extend(
                MACOS_BUNDLES
                    .iter()
                    .map(|bundle| Candidate::Path(folder.join(bundle))),
            );
        }
        list
    }

    /// A regular file with an execute bit.
    pub fn is_program(path: &Path) -> bool {
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
}

#[cfg(windows)]
mod imp {
    use std::path::{Path, PathBuf};

    use windows_sys::Win32::System::Registry::{
        HKEY, HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ, RegGetValueW,
    };

    use super::Candidate;

    /// Names on `PATH`; the headless shell first when headless.
    const HEADLESS_SHELL_NAMES: &[&str] = &["chrome-headless-shell.exe"];
    const PATH_NAMES: &[&str] = &["chrome.exe", "chromium.exe", "msedge.exe"];

    /// Programs their installers register under App Paths.
    const APP_PATHS: &[&str] = &["chrome.exe", "msedge.exe"];

    /// Default install folders: (environment variable, path below it).
    const INSTALL_FOLDERS: &[(&str, &str)] = &[
        ("ProgramFiles", r"Google\Chrome\Application\chrome.exe"),
        ("ProgramFiles(x86)", r"Google\Chrome\Application\chrome.exe"),
        ("LOCALAPPDATA", r"Google\Chrome\Application\chrome.exe"),
        ("LOCALAPPDATA", r"Chromium\Application\chrome.exe"),
        ("ProgramFiles", r"Chromium\Application\chrome.exe"),
        (
            "ProgramFiles(x86)",
            r"Microsoft\Edge\Application\msedge.exe",
        ),
        ("ProgramFiles", r"Microsoft\Edge\Application\msedge.exe"),
        ("LOCALAPPDATA", r"Microsoft\Edge\Application\msedge.exe"),
    ];

    /// Where to look, in order.
    pub fn candidates(headless: bool) -> Vec<Candidate> {
        let mut list = Vec::new();
        if headless {
            list.extend(HEADLESS_SHELL_NAMES.iter().copied().map(Candidate::OnPath));
        }
        list.extend(PATH_NAMES.iter().copied().map(Candidate::OnPath));
        for root in [HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE] {
            for program in APP_PATHS {
                if let Some(path) = app_path(root, program) {
                    list.push(Candidate::Path(path));
                }
            }
        }
        for (variable, below) in INSTALL_FOLDERS {
            if let Some(base) = std::env::var_os(variable).filter(|v| !v.is_empty()) {
                list.push(Candidate::Path(PathBuf::from(base).join(below)));
            }
        }
        list
    }

    /// The default value of `<root>\SOFTWARE\Microsoft\Windows\CurrentVersion\App Paths\<program>`.
    fn app_path(root: HKEY, program: &str) -> Option<PathBuf> {
        let key = wide(&format!(
            r"SOFTWARE\Microsoft\Windows\CurrentVersion\App Paths\{program}"
        ));
        let mut buffer = vec![0u16; 1024];
        let mut bytes = u32::try_from(buffer.len() * 2).ok()?;
        // SAFETY: `key` is NUL-terminated; a null value name reads the
        // default value; `buffer` holds `bytes` bytes.
        let status = unsafe {
            RegGetValueW(
                root,
                key.as_ptr(),
                std::ptr::null(),
                RRF_RT_REG_SZ,
                std::ptr::null_mut(),
                buffer.as_mut_ptr().cast(),
                &raw mut bytes,
            )
        };
        if status != 0 {
            return None;
        }
        let units = usize::try_from(bytes).ok()? / 2;
        buffer.truncate(units);
        while buffer.last() == Some(&0) {
            buffer.pop();
        }
        let text = String::from_utf16(&buffer).ok()?;
        let text = text.trim().trim_matches('"');
        (!text.is_empty()).then(|| PathBuf::from(text))
    }

    /// `text` as a NUL-terminated UTF-16 string.
    fn wide(text: &str) -> Vec<u16> {
        text.encode_utf16().chain(std::iter::once(0)).collect()
    }

    /// A regular file whose name ends in `.exe`.
    pub fn is_program(path: &Path) -> bool {
        path.is_file()
            && path
                .extension()
                .is_some_and(|extension| extension.eq_ignore_ascii_case("exe"))
    }
}

/// Finds `name` in the directories of `search_path` (a `PATH` value).
pub fn on_path(name: &str, search_path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(search_path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_program(candidate))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_program_is_found_on_the_search_path() {
        let dir = tempfile::tempdir().expect("temp dir");
        let name = if cfg!(windows) {
            "fake-browser.exe"
        } else {
            "fake-browser"
        };
        let program = dir.path().join(name);
        std::fs::write(&program, b"").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let search = std::env::join_paths([Path::new("/nonexistent"), dir.path()]).expect("join");
        assert_eq!(on_path(name, &search), Some(program));
        assert_eq!(on_path("no-such-browser", &search), None);
    }

    #[test]
    fn the_full_browser_names_are_always_candidates() {
        let list = candidates(false);
        assert!(
            list.iter()
                .any(|c| matches!(c, Candidate::OnPath(name) if name.starts_with("chrom")))
        );
        #[cfg(windows)]
        if std::env::var_os("LOCALAPPDATA").is_some() {
            assert!(list.iter().any(|c| matches!(c, Candidate::Path(path)
                if path.ends_with(r"Google\Chrome\Application\chrome.exe"))));
        }
    }
}
