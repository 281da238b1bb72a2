//! The pairing between this shell and one Chrome profile's extension: the
//! bridge's port and a 256-bit shared secret, kept in a file only the user
//! can read. `browser-shell extension pair` makes a new one (the old one
//! stops working) and prints the link that hands it to the extension.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::protocol::{EXTENSION_ID, hex, unhex};
use crate::error::{BrowserError, Result};

/// The bridge's port when none is configured: fixed, so the extension finds
/// the shell again after either restarts.
pub const DEFAULT_PORT: u16 = 47_821;

/// What both sides keep after pairing.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pairing {
    /// Where the bridge listens (127.0.0.1).
    pub port: u16,
    /// The shared secret, hex (never logged, never sent).
    secret: String,
    /// The extension it was made for.
    pub extension_id: String,
    /// Where the extension dials instead of 127.0.0.1: a relay's
    /// `wss://…/extension`, for a shell on a server and the Chrome on the
    /// person's desk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

impl std::fmt::Debug for Pairing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pairing")
            .field("port", &self.port)
            .field("extension_id", &self.extension_id)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

impl Pairing {
    /// A new pairing with a fresh secret.
    ///
    /// # Errors
    /// `PROTOCOL_ERROR` when the system has no randomness to give.
    pub fn generate(port: u16) -> Result<Self> {
        Ok(Self {
            port,
            secret: hex(&random_bytes::<32>()?),
            extension_id: EXTENSION_ID.into(),
            remote: None,
        })
    }

    /// The same pairing, the extension dialling the relay at `relay`
    /// (`wss://host[:port]`; its `/extension` is the bridge) instead of
    /// 127.0.0.1. Only TLS: what crosses the network is the agents' work in
    /// the person's browser, typed text included.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for anything but a `wss://` URL with a host.
    pub fn via_relay(mut self, relay: &str) -> Result<Self> {
        let refuse = |why: &str| {
            BrowserError::invalid(
                "relay-url",
                format!(
                    "{relay:?} {why}; give the relay's address, such as wss://relay.example:8443"
                ),
            )
        };
        let mut url = url::Url::parse(relay).map_err(|e| refuse(&format!("is not a URL ({e})")))?;
        if url.scheme() != "wss" {
            return Err(refuse(
                "is not wss:// (the bridge crosses the network only over TLS)",
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(refuse("names no host"));
        }
        if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
            return Err(refuse("has a user, password or query"));
        }
        url.set_path("/extension");
        url.set_fragment(None);
        self.remote = Some(url.to_string());
        Ok(self)
    }

    /// The secret's bytes.
    pub fn secret(&self) -> Vec<u8> {
        unhex(&self.secret).unwrap_or_default()
    }

    /// The link that opens the extension's pairing page with this pairing.
    pub fn link(&self) -> String {
        let mut link = format!(
            "chrome-extension://{}/pair.html#port={}&secret={}",
            self.extension_id, self.port, self.secret
        );
        if let Some(remote) = &self.remote {
            let encoded: String = url::form_urlencoded::byte_serialize(remote.as_bytes()).collect();
            link.push_str("&url=");
            link.push_str(&encoded);
        }
        link
    }

    /// Reads a pairing file; `Ok(None)` when there is none.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the file when it cannot be read or parsed.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(file_error(path, &e.to_string())),
        };
        let pairing: Self =
            serde_json::from_str(&text).map_err(|e| file_error(path, &e.to_string()))?;
        if pairing.secret().len() != 32 {
            return Err(file_error(path, "the secret is not 64 hex digits"));
        }
        Ok(Some(pairing))
    }

    /// Writes the pairing so that only the user can read it (0600).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the file when it cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| file_error(path, &e.to_string()))?;
        }
        let text =
            serde_json::to_string_pretty(self).map_err(|e| file_error(path, &e.to_string()))?;
        let partial = path.with_extension("partial");
        write_private(&partial, text.as_bytes()).map_err(|e| file_error(path, &e.to_string()))?;
        std::fs::rename(&partial, path).map_err(|e| file_error(path, &e.to_string()))
    }
}

/// Where the pairing is kept in a configuration directory.
pub fn pairing_file(config_dir: &Path) -> PathBuf {
    config_dir.join("extension-pairing.json")
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

fn file_error(path: &Path, problem: &str) -> BrowserError {
    BrowserError::invalid(
        "extension pairing",
        format!("{}: {problem}", path.display()),
    )
}

/// Random bytes from the operating system.
///
/// # Errors
/// `PROTOCOL_ERROR` when the system has none to give.
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| BrowserError::Protocol {
        method: "random".into(),
        message: format!("the system gave no random bytes: {e}"),
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_pairing_reads_back_and_only_its_owner_can_read_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = pairing_file(dir.path());
        assert_eq!(Pairing::load(&path).expect("no file is fine"), None);
        let pairing = Pairing::generate(DEFAULT_PORT).expect("random");
        pairing.save(&path).expect("save");
        assert_eq!(Pairing::load(&path).expect("load"), Some(pairing.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(pairing.link().starts_with(&format!(
            "chrome-extension://{EXTENSION_ID}/pair.html#port={DEFAULT_PORT}&secret="
        )));
        assert!(!format!("{pairing:?}").contains(&pairing.secret));
    }

    #[test]
    fn a_broken_file_is_named_in_the_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = pairing_file(dir.path());
        std::fs::write(
            &path,
            "{\"port\":1,\"secret\":\"00\",\"extensionId\":\"x\"}",
        )
        .expect("write");
        let error = Pairing::load(&path).expect_err("short secret");
        assert_eq!(error.code(), "INVALID_ARGUMENT");
        assert!(error.to_string().contains("extension-pairing.json"));
    }

    #[test]
    fn a_relay_pairing_dials_its_wss_bridge_and_nothing_else() {
        let pairing = Pairing::generate(DEFAULT_PORT).expect("random");
        let remote = pairing
            .clone()
            .via_relay("wss://relay.example:8443")
            .expect("a wss URL");
        assert_eq!(
            remote.remote.as_deref(),
            Some("wss://relay.example:8443/extension")
        );
        assert!(
            remote
                .link()
                .ends_with("&url=wss%3A%2F%2Frelay.example%3A8443%2Fextension"),
            "{}",
            remote.link()
        );
        for refused in [
            "ws://relay.example:8443",
            "https://relay.example",
            "wss://user:pw@relay.example",
            "wss://relay.example/?x=1",
            "relay.example",
        ] {
            let error = pairing.clone().via_relay(refused).expect_err(refused);
            assert_eq!(error.code(), "INVALID_ARGUMENT", "{refused}");
        }
        // A local pairing's file and link say nothing of a relay.
        let text = serde_json::to_string(&pairing).expect("json");
        assert!(!text.contains("remote") && !pairing.link().contains("url="));
    }
}
