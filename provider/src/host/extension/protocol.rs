//! The bridge protocol (seed 001), shell side: the handshake messages and
//! the proofs both sides compute. `assets/extension/protocol.js` is the
//! other half; the two must agree byte for byte.
//!
//! ```text
//! extension → shell  hello      {version, extensionId, extensionVersion, nonce}
//! shell → extension  challenge  {nonce, proof = HMAC(secret, "…|server|id|cn|sn")}
//! extension → shell  proof      {proof = HMAC(secret, "…|client|id|cn|sn")}
//! shell → extension  welcome    {shell, sessions, sessionsVersion}  (or refused {reason})
//! ```
//!
//! After the welcome, messages are CDP-shaped (commands with ids, answers,
//! events), so a [`crate::cdp::Connection`] runs over the socket. One
//! bridge command carries several CDP commands for a tab at once
//! ([`SEND_COMMANDS`]): input events that must arrive in order, one message
//! each way instead of one per event.
//!
//! ```text
//! shell → extension  {id, method: "Extension.sendCommands",
//!                     params: {sessionId: "tab-<id>", commands: [{method, params}…]}}
//! extension → shell  {id, result: {answers: [{result} | {error: {code, message}}…]}}
//! ```

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The newest protocol version this shell speaks.
///
/// 2: the extension may come through Chrome's native messaging (the
/// [`NativeHello`]), and messages from the shell may arrive cut into
/// [`Chunk`]s (native messaging carries at most 1 MB to the extension).
pub const PROTOCOL_VERSION: u32 = 2;

/// The oldest protocol version this shell still speaks: an extension
/// whose range `[minVersion, version]` overlaps `[MIN_PROTOCOL_VERSION,
/// PROTOCOL_VERSION]` is welcome, at the newest version both speak.
pub const MIN_PROTOCOL_VERSION: u32 = 1;

/// The native messaging host's name, as the extension calls
/// `chrome.runtime.connectNative()` with it and the host manifest names
/// it (lowercase, digits, dots and underscores only).
pub const NATIVE_HOST_NAME: &str = "com.browser_shell.bridge";

/// The newest version both sides speak, when their ranges overlap; the
/// extension's range is `[min_version, version]` (an extension that
/// names no minimum speaks only `version`).
///
/// # Errors
/// Says which side is older, for the person to update it.
pub fn negotiate(version: u32, min_version: Option<u32>) -> Result<u32, String> {
    let theirs_min = min_version.unwrap_or(version).min(version);
    let agreed = version.min(PROTOCOL_VERSION);
    if agreed < theirs_min.max(MIN_PROTOCOL_VERSION) {
        let older = if version < MIN_PROTOCOL_VERSION {
            "the extension is older: reload it (chrome://extensions) from `browser-shell extension path`"
        } else {
            "this browser-shell is older: update it"
        };
        return Err(format!(
            "the extension speaks protocol {theirs_min}..={version} and this shell \
             {MIN_PROTOCOL_VERSION}..={PROTOCOL_VERSION}; {older}"
        ));
    }
    Ok(agreed)
}

/// The largest message either side accepts.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Commands the shell may have waiting on the extension at once.
pub const MAX_PENDING_COMMANDS: usize = 64;

/// The bridge command that carries a batch of CDP commands for one tab,
/// sent by the extension in order without waiting between them.
pub const SEND_COMMANDS: &str = "Extension.sendCommands";

/// The most CDP commands one [`SEND_COMMANDS`] carries; each counts
/// against [`MAX_PENDING_COMMANDS`].
pub const MAX_BATCH: usize = 32;
const _: () = assert!(MAX_BATCH <= MAX_PENDING_COMMANDS);

/// What [`SEND_COMMANDS`] carries.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendCommandsParams<'a> {
    /// The tab, as `tab-<id>`.
    pub session_id: &'a str,
    /// The commands, at most [`MAX_BATCH`], in the order Chrome gets them.
    pub commands: &'a [crate::host::BatchedCommand],
}

/// The extension's answer to [`SEND_COMMANDS`]: one per command, in order.
#[derive(Debug, Clone, Deserialize)]
pub struct BatchAnswer {
    /// What each command answered.
    pub answers: Vec<BatchedAnswer>,
}

/// One command's answer in a [`BatchAnswer`].
#[derive(Debug, Clone, Deserialize)]
pub struct BatchedAnswer {
    /// Its failure, as CDP words it (`CODE: text` for the extension's own refusals).
    #[serde(default)]
    pub error: Option<BatchedError>,
}

/// A failed command in a [`BatchAnswer`].
#[derive(Debug, Clone, Deserialize)]
pub struct BatchedError {
    /// What went wrong.
    pub message: String,
}

/// Extension connections (handshaking or connected) at once.
pub const MAX_CONNECTIONS: usize = 4;

/// The id of the extension in `assets/extension` (fixed by its manifest's `key`).
pub const EXTENSION_ID: &str = "fmmpmjfbfbolhenibabebgogdehficei";

/// Who signs a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The shell, in its challenge.
    Server,
    /// The extension, in its proof.
    Client,
}

/// The extension's first message.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type", rename = "hello")]
pub struct Hello {
    /// The newest protocol version it speaks.
    pub version: u32,
    /// The oldest it speaks (absent: only `version`).
    #[serde(default)]
    pub min_version: Option<u32>,
    /// Its id (must match the `Origin` it connected from).
    pub extension_id: String,
    /// Its own version, for `doctor` and logs.
    #[serde(default)]
    pub extension_version: String,
    /// 256 random bits, hex.
    pub nonce: String,
}

/// The shell's answer to a good hello.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename = "challenge")]
pub struct Challenge {
    /// 256 random bits of the shell's, hex.
    pub nonce: String,
    /// The shell's proof that it holds the secret.
    pub proof: String,
}

/// The extension's proof.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename = "proof")]
pub struct Proof {
    /// HMAC over the client text, hex.
    pub proof: String,
}

/// The first message on the native messaging path, as the native host
/// (`browser-shell native-host`) passes the extension's hello on: no
/// proof, since Chrome started the host for the extension the host
/// manifest names (`origin`, from Chrome's command line) and the socket
/// it reaches the shell through is private to the user.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type", rename = "hello")]
pub struct NativeHello {
    /// The newest protocol version the extension speaks.
    pub version: u32,
    /// The oldest it speaks (absent: only `version`).
    #[serde(default)]
    pub min_version: Option<u32>,
    /// The extension's own version, for `doctor` and logs.
    #[serde(default)]
    pub extension_version: String,
    /// `chrome-extension://<id>/`: who Chrome started the host for.
    pub origin: String,
}

/// A piece of a message from the shell too large for one native
/// messaging frame (Chrome passes at most 1 MB to an extension): the
/// native host cuts it, the extension joins the pieces in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chunk {
    /// This piece of the message's text.
    pub chunk: String,
    /// Whether it is the last piece.
    pub last: bool,
}

/// A handshake message of type `kind` (`hello`, `proof`) read from
/// `bytes`. Serde checks the `type` tag of a struct only as it writes one,
/// so it is checked here: a message of another type is not taken for it.
///
/// # Errors
/// Says what is wrong with the message, in one line.
pub fn read_message<T: serde::de::DeserializeOwned>(bytes: &[u8], kind: &str) -> Result<T, String> {
    let message: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let said = message.get("type").and_then(serde_json::Value::as_str);
    if said != Some(kind) {
        return Err(format!("its type is {said:?}, not {kind:?}"));
    }
    serde_json::from_value(message).map_err(|e| e.to_string())
}

/// The shell accepts the connection.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename = "welcome")]
pub struct Welcome {
    /// This shell process, so the extension drops grants of a previous one.
    pub shell: String,
    /// The agent sessions open now.
    pub sessions: Vec<SessionLabel>,
    /// Their [`SessionList::version`].
    #[serde(rename = "sessionsVersion")]
    pub sessions_version: u64,
    /// The protocol version agreed on.
    pub version: u32,
}

impl Welcome {
    /// The welcome of `shell`, naming the agent sessions open now.
    pub fn new(shell: &str, sessions: &SessionList, version: u32) -> Self {
        Self {
            shell: shell.to_owned(),
            sessions: sessions.sessions.clone(),
            sessions_version: sessions.version,
            version,
        }
    }
}

/// The shell refuses the connection, saying why.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename = "refused")]
pub struct Refused {
    /// One line.
    pub reason: String,
}

/// The agent sessions open now, numbered in the order they changed: the
/// extension ignores a list older than one it has (a tab an agent opens
/// for a new session may reach it before the list that names the session,
/// and an older list arriving after it must not end that session).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionList {
    /// Grows with every change.
    pub version: u64,
    /// The sessions.
    pub sessions: Vec<SessionLabel>,
}

/// An agent session as the person sees it in the extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionLabel {
    /// The session id.
    pub id: String,
    /// What the person reads.
    pub label: String,
}

/// The text a proof signs: the role, bound to the handshake's version
/// (`v1`: the handshake has not changed since, whatever protocol version
/// is agreed), the extension id and both nonces.
pub fn proof_text(
    role: Role,
    extension_id: &str,
    client_nonce: &str,
    server_nonce: &str,
) -> String {
    let role = match role {
        Role::Server => "server",
        Role::Client => "client",
    };
    format!("browser-shell bridge v1|{role}|{extension_id}|{client_nonce}|{server_nonce}")
}

/// HMAC-SHA-256 of `text` under `secret`, as lowercase hex.
pub fn proof(secret: &[u8], text: &str) -> String {
    hex(&hmac_over(secret, text).finalize().into_bytes())
}

/// Whether `claimed` (hex) is the proof of `text`, compared in constant time.
pub fn verify(secret: &[u8], text: &str, claimed: &str) -> bool {
    let Some(claimed) = unhex(claimed) else {
        return false;
    };
    hmac_over(secret, text).verify_slice(&claimed).is_ok()
}

fn hmac_over(secret: &[u8], text: &str) -> Hmac<Sha256> {
    // HMAC takes keys of any length; this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(text.as_bytes());
    mac
}

/// Whether a nonce is 256 bits of lowercase hex.
pub fn is_nonce(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex as bytes.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            let pair = text.get(i..i + 2)?;
            if pair.bytes().any(|b| b.is_ascii_uppercase()) {
                return None;
            }
            u8::from_str_radix(pair, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_are_bound_to_role_id_and_both_nonces() {
        let secret = [7u8; 32];
        let (cn, sn) = ("a".repeat(64), "b".repeat(64));
        let server = proof(&secret, &proof_text(Role::Server, EXTENSION_ID, &cn, &sn));
        assert!(verify(
            &secret,
            &proof_text(Role::Server, EXTENSION_ID, &cn, &sn),
            &server
        ));
        for other in [
            proof_text(Role::Client, EXTENSION_ID, &cn, &sn),
            proof_text(Role::Server, "abcdefghijklmnopabcdefghijklmnop", &cn, &sn),
            proof_text(Role::Server, EXTENSION_ID, &sn, &cn),
        ] {
            assert!(!verify(&secret, &other, &server), "{other}");
        }
        assert!(!verify(
            &[8u8; 32],
            &proof_text(Role::Server, EXTENSION_ID, &cn, &sn),
            &server
        ));
        assert!(!verify(&secret, "x", "not hex"));
    }

    #[test]
    fn the_proof_matches_what_the_extension_computes() {
        // HMAC-SHA-256 test vector (RFC 4231, case 2) through our hex helpers.
        assert_eq!(
            proof(b"Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn versions_meet_at_the_newest_both_speak() {
        assert_eq!(negotiate(1, None), Ok(1));
        assert_eq!(negotiate(2, Some(1)), Ok(2));
        assert_eq!(negotiate(9, Some(1)), Ok(PROTOCOL_VERSION));
        let newer = negotiate(9, Some(8)).expect_err("no overlap");
        assert!(newer.contains("this browser-shell is older"), "{newer}");
        let older = negotiate(0, None).expect_err("no overlap");
        assert!(older.contains("the extension is older"), "{older}");
    }

    #[test]
    fn a_message_is_read_only_as_its_own_type() {
        let origin = format!("chrome-extension://{EXTENSION_ID}/");
        let hello = format!(r#"{{"type":"hello","version":2,"origin":"{origin}"}}"#);
        let read: NativeHello = read_message(hello.as_bytes(), "hello").expect("a hello");
        assert_eq!((read.version, read.origin.as_str()), (2, origin.as_str()));
        // Another type, no type, or a type that is not UTF-8, with every
        // field a hello has: not a hello.
        for other in [
            hello.replace(r#""type":"hello""#, r#""type":"proof""#),
            hello.replace(r#""type":"hello","#, ""),
        ] {
            let refused =
                read_message::<NativeHello>(other.as_bytes(), "hello").expect_err("not a hello");
            assert!(refused.contains("not \"hello\""), "{other}: {refused}");
        }
        let mut not_utf8 = hello.into_bytes();
        not_utf8[10] = 0xff;
        assert!(read_message::<NativeHello>(&not_utf8, "hello").is_err());
        let proof = r#"{"type":"hello","proof":"00"}"#;
        assert!(read_message::<Proof>(proof.as_bytes(), "proof").is_err());
        assert!(read_message::<Proof>(br#"{"type":"proof","proof":"00"}"#, "proof").is_ok());
    }

    #[test]
    fn nonces_are_64_lowercase_hex_digits() {
        assert!(is_nonce(&"0f".repeat(32)));
        assert!(!is_nonce(&"0F".repeat(32)));
        assert!(!is_nonce("00"));
        assert_eq!(unhex("00ff"), Some(vec![0, 255]));
        assert_eq!(unhex("0"), None);
    }

    #[test]
    fn the_limits_agree_with_the_extension_s() {
        let script = include_str!("../../../../assets/extension/protocol.js");
        for line in [
            format!("export const PROTOCOL_VERSION = {PROTOCOL_VERSION};"),
            format!("export const MIN_PROTOCOL_VERSION = {MIN_PROTOCOL_VERSION};"),
            format!("export const NATIVE_HOST_NAME = \"{NATIVE_HOST_NAME}\";"),
            format!("export const MAX_BATCH = {MAX_BATCH};"),
            format!(
                "export const MAX_MESSAGE_BYTES = {} * 1024 * 1024;",
                MAX_MESSAGE_BYTES / (1024 * 1024)
            ),
        ] {
            assert!(script.contains(&line), "protocol.js lacks `{line}`");
        }
    }
}
