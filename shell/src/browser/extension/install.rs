//! `browser-shell extension install|uninstall`: the native messaging host
//! manifest that lets Chrome, Chromium and Edge start
//! `browser-shell native-host` for the browser-shell extension (and for no
//! other: `allowed_origins` names its fixed id).
//!
//! Per user, where each browser looks: on Linux
//! `~/.config/{google-chrome,chromium,microsoft-edge}/NativeMessagingHosts/`;
//! on macOS `~/Library/Application Support/{Google/Chrome,Chromium,Microsoft
//! Edge}/NativeMessagingHosts/`; on Windows a manifest file in the data
//! folder and a registry key under `HKCU\Software\…\NativeMessagingHosts`
//! naming it. `--user-data-dir DIR` writes into one profile directory
//! (`DIR/NativeMessagingHosts/`), for a browser started with that
//! `--user-data-dir`. What was written is listed in a receipt in the
//! config directory, so `uninstall` removes exactly that, and `doctor`
//! and the reasons calls give know it is installed.

use std::path::{Path, PathBuf};

use browser_provider::host::extension::protocol::{EXTENSION_ID, NATIVE_HOST_NAME};
use browser_provider::{BrowserError, Result};
use serde::{Deserialize, Serialize};

/// The browsers a manifest is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Google Chrome.
    Chrome,
    /// Chromium.
    Chromium,
    /// Microsoft Edge.
    Edge,
}

impl Target {
    /// Every browser.
    pub const ALL: [Self; 3] = [Self::Chrome, Self::Chromium, Self::Edge];

    fn name(self) -> &'static str {
        match self {
            Self::Chrome => "Google Chrome",
            Self::Chromium => "Chromium",
            Self::Edge => "Microsoft Edge",
        }
    }
}

/// One place a manifest was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// For which browser (`None`: one profile directory).
    pub target: Option<Target>,
    /// The manifest file.
    pub manifest: PathBuf,
    /// The registry key naming it (Windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_key: Option<String>,
}

impl Installed {
    /// Where, in words.
    pub fn describe(&self) -> String {
        match self.target {
            Some(target) => format!("{} ({})", target.name(), self.manifest.display()),
            None => format!("a profile ({})", self.manifest.display()),
        }
    }
}

/// The host manifest Chrome reads.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    name: String,
    description: String,
    path: PathBuf,
    #[serde(rename = "type")]
    kind: String,
    allowed_origins: Vec<String>,
}

/// The manifest file's name.
fn manifest_name() -> String {
    format!("{NATIVE_HOST_NAME}.json")
}

/// The receipt's path in the configuration directory.
fn receipt_path(config_dir: &Path) -> PathBuf {
    config_dir.join("native-messaging.json")
}

/// What the receipt in `config_dir` lists (nothing when there is none or
/// it is unreadable).
pub fn receipt(config_dir: &Path) -> Vec<Installed> {
    std::fs::read_to_string(receipt_path(config_dir))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The installed manifests that are still there.
pub fn installed(config_dir: &Path) -> Vec<Installed> {
    receipt(config_dir)
        .into_iter()
        .filter(|place| place.manifest.is_file())
        .collect()
}

/// Writes the manifest for `targets` (or into `user_data_dir` alone),
/// naming `program` as the host, and records where; returns what to tell
/// the person.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the file or key that could not be written.
pub fn install(
    config_dir: &Path,
    targets: &[Target],
    user_data_dir: Option<&Path>,
    program: &Path,
) -> Result<String> {
    let manifest = Manifest {
        name: NATIVE_HOST_NAME.into(),
        description:
            "browser-shell: lets the browser-shell extension reach the shell on this machine".into(),
        path: program.to_path_buf(),
        kind: "stdio".into(),
        allowed_origins: vec![format!("chrome-extension://{EXTENSION_ID}/")],
    };
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| BrowserError::invalid("manifest", e.to_string()))?;
    let places: Vec<Installed> = match user_data_dir {
        Some(dir) => vec![Installed {
            target: None,
            manifest: dir.join("NativeMessagingHosts").join(manifest_name()),
            registry_key: None,
        }],
        None => targets
            .iter()
            .map(|&target| platform::place(target))
            .collect::<Result<_>>()?,
    };
    for place in &places {
        write(&place.manifest, &text)?;
        if let Some(key) = &place.registry_key {
            platform::register(key, &place.manifest)?;
        }
    }
    let mut recorded = receipt(config_dir);
    recorded.retain(|old| !places.iter().any(|new| new.manifest == old.manifest));
    recorded.extend(places.iter().cloned());
    write(
        &receipt_path(config_dir),
        &serde_json::to_string_pretty(&recorded)
            .map_err(|e| BrowserError::invalid("receipt", e.to_string()))?,
    )?;
    let lines: Vec<String> = places
        .iter()
        .map(|p| format!("  {}", p.describe()))
        .collect();
    Ok(format!(
        "Installed the native messaging host for the browser-shell extension:\n{}\n\
         Chrome starts `{}` when the extension connects: nothing to pair.\n\
         Load the extension (`browser-shell extension path`) if it is not loaded yet;\n\
         undo with `browser-shell extension uninstall`.",
        lines.join("\n"),
        program.display()
    ))
}

/// Removes every manifest the receipt lists (only files that are our
/// host's manifest) and their registry keys, then the receipt.
///
/// # Errors
/// `INVALID_ARGUMENT` naming what could not be removed.
pub fn uninstall(config_dir: &Path) -> Result<String> {
    let recorded = receipt(config_dir);
    let mut removed = Vec::new();
    for place in &recorded {
        let ours = std::fs::read_to_string(&place.manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<Manifest>(&text).ok())
            .is_some_and(|manifest| manifest.name == NATIVE_HOST_NAME);
        if ours {
            std::fs::remove_file(&place.manifest).map_err(|e| {
                BrowserError::invalid(
                    "uninstall",
                    format!("cannot remove {}: {e}", place.manifest.display()),
                )
            })?;
            removed.push(format!("  {}", place.describe()));
        }
        if let Some(key) = &place.registry_key {
            platform::unregister(key)?;
        }
    }
    let _ = std::fs::remove_file(receipt_path(config_dir));
    Ok(if removed.is_empty() {
        "The native messaging host was not installed (nothing to remove).".into()
    } else {
        format!(
            "Removed the native messaging host:\n{}\nThe extension now reaches a shell only when paired (`browser-shell extension pair`).",
            removed.join("\n")
        )
    })
}

fn write(path: &Path, text: &str) -> Result<()> {
    let failed = |e: std::io::Error| {
        BrowserError::invalid("install", format!("cannot write {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text).map_err(failed)?;
    std::fs::rename(&partial, path).map_err(failed)
}

#[cfg(not(windows))]
mod platform {
    use super::{Installed, Target, manifest_name};
    use browser_provider::{BrowserError, Result};
    use std::path::{Path, PathBuf};

    /// Where each browser keeps its per-user data (Linux: under the XDG
    /// configuration folder).
    #[cfg(not(target_os = "macos"))]
    fn browser_dir(target: Target) -> Result<PathBuf> {
        let ours = crate::platform::dirs::config_home()
            .map_err(|why| BrowserError::invalid("install", why))?;
        let config = ours.parent().unwrap_or(&ours);
        Ok(config.join(match target {
            Target::Chrome => "google-chrome",
            Target::Chromium => "chromium",
            Target::Edge => "microsoft-edge",
        }))
    }

    /// Where each browser keeps its per-user data (macOS: Application Support).
    #[cfg(target_os = "macos")]
    fn browser_dir(target: Target) -> Result<PathBuf> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .ok_or_else(|| BrowserError::invalid("install", "HOME is not set"))?;
        Ok(home.join("Library/Application Support").join(match target {
            Target::Chrome => "Google/Chrome",
            Target::Chromium => "Chromium",
            Target::Edge => "Microsoft Edge",
        }))
    }

    pub(super) fn place(target: Target) -> Result<Installed> {
        Ok(Installed {
            target: Some(target),
            manifest: browser_dir(target)?
                .join("NativeMessagingHosts")
                .join(manifest_name()),
            registry_key: None,
        })
    }

    /// Only Windows names manifests in its registry.
    pub(super) fn register(_key: &str, _manifest: &Path) -> Result<()> {
        Ok(())
    }

    /// Only Windows names manifests in its registry.
    pub(super) fn unregister(_key: &str) -> Result<()> {
        Ok(())
    }
}

#[cfg(windows)]
mod platform {
    use super::{Installed, Target, manifest_name};
    use browser_provider::host::extension::protocol::NATIVE_HOST_NAME;
    use browser_provider::{BrowserError, Result};
    use std::path::Path;

    pub(super) fn place(target: Target) -> Result<Installed> {
        let data = crate::platform::dirs::data_home()
            .map_err(|why| BrowserError::invalid("install", why))?;
        let vendor = match target {
            Target::Chrome => r"Google\Chrome",
            Target::Chromium => "Chromium",
            Target::Edge => r"Microsoft\Edge",
        };
        Ok(Installed {
            target: Some(target),
            manifest: data.join("native-messaging").join(manifest_name()),
            registry_key: Some(format!(
                r"HKCU\Software\{vendor}\NativeMessagingHosts\{NATIVE_HOST_NAME}"
            )),
        })
    }

    /// `reg add KEY /ve /d MANIFEST /f`: the key's default value names the manifest.
    pub(super) fn register(key: &str, manifest: &Path) -> Result<()> {
        reg(&[
            "add",
            key,
            "/ve",
            "/t",
            "REG_SZ",
            "/d",
            &manifest.display().to_string(),
            "/f",
        ])
    }

    pub(super) fn unregister(key: &str) -> Result<()> {
        reg(&["delete", key, "/f"]).or(Ok(()))
    }

    fn reg(args: &[&str]) -> Result<()> {
        let output = std::process::Command::new("reg")
            .args(args)
            .output()
            .map_err(|e| BrowserError::invalid("install", format!("cannot run reg: {e}")))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(BrowserError::invalid(
                "install",
                format!(
                    "reg {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_install_writes_a_manifest_chrome_reads_and_uninstall_removes_it() {
        let config = tempfile::tempdir().expect("temp dir");
        let profile = tempfile::tempdir().expect("temp dir");
        let config = config.path();
        let said = install(
            config,
            &[],
            Some(profile.path()),
            Path::new("/usr/bin/browser-shell"),
        )
        .expect("install");
        assert!(said.contains("nothing to pair"), "{said}");
        let path = profile
            .path()
            .join("NativeMessagingHosts")
            .join("com.browser_shell.bridge.json");
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("json");
        assert_eq!(manifest["name"], "com.browser_shell.bridge");
        assert_eq!(manifest["type"], "stdio");
        assert_eq!(manifest["path"], "/usr/bin/browser-shell");
        assert_eq!(
            manifest["allowed_origins"],
            serde_json::json!([format!("chrome-extension://{EXTENSION_ID}/")])
        );
        assert_eq!(installed(config).len(), 1);
        let said = uninstall(config).expect("uninstall");
        assert!(said.contains("Removed"), "{said}");
        assert!(!path.exists() && installed(config).is_empty());
        assert!(
            uninstall(config)
                .expect("again")
                .contains("nothing to remove")
        );
    }

    use serde_json::Value;
}
