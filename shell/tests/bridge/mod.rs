//! The extension bridge's test setup, shared by `bridge_join.rs` and the
//! connection benchmark (`benches/extension_connect.rs`): a private
//! runtime and config directory, `browser-shell mcp --browser extension`
//! children driven as raw JSON-RPC clients, the person's Chrome with the
//! native messaging host installed, and the connection cycles (a shell or
//! Chrome restarted, the worker stopped, pairing again) timed to the first
//! working call. The including crate has the shell tests' common helpers
//! (`crate::common`).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod cycles;

pub use browser_testkit::mcp_stdio::{Client, POLL};

/// Opens a page, which fails as nothing is connected: the answer of the
/// owner's browser.
pub async fn open_fails_not_connected(client: &mut Client) {
    let (text, is_error) = client.call("browser_open", json!({"url": PAGE})).await;
    assert!(is_error && text.contains("NOT_CONNECTED"), "{text}");
    assert!(text.contains("Chrome is not connected"), "{text}");
}
/// The person's Chrome with the extension (the test kit's).
pub use browser_testkit::person;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

/// A URL no call gets to load (nothing is connected), on loopback anyway.
pub const PAGE: &str = "http://127.0.0.1:9/";

/// A private setup: runtime directory, config directory with a pairing on
/// a free port, and an audit log.
pub struct Setup {
    pub runtime: PathBuf,
    pub config: tempfile::TempDir,
    pub port: u16,
}

impl Setup {
    pub async fn new() -> Self {
        Self::paired().await.0
    }

    /// [`Self::new`], and the pairing link `extension pair` printed.
    pub async fn paired() -> (Self, String) {
        Self::paired_with(&[]).await
    }

    /// [`Self::paired`], `extension pair` given `more` flags.
    pub async fn paired_with(more: &[&str]) -> (Self, String) {
        let runtime = crate::common::runtime_dir();
        let config = tempfile::tempdir().unwrap();
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let output = Command::new(env!("CARGO_BIN_EXE_browser-shell"))
            .args(["extension", "pair", "--port", &port.to_string()])
            .args(more)
            .env("BROWSER_SHELL_CONFIG_DIR", config.path())
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let link = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::trim)
            .find(|line| line.starts_with("chrome-extension://"))
            .expect("the pairing link")
            .to_owned();
        (
            Self {
                runtime,
                config,
                port,
            },
            link,
        )
    }

    /// A setup with nothing paired and nothing installed.
    pub fn unpaired() -> Self {
        Self {
            runtime: crate::common::runtime_dir(),
            config: tempfile::tempdir().unwrap(),
            port: 0,
        }
    }

    /// `extension pair` on `port` (default: a free one); the link it printed.
    pub async fn pair(&self, port: Option<u16>) -> String {
        self.pair_with(port, &[]).await
    }

    /// [`Self::pair`], `extension pair` given `more` flags.
    pub async fn pair_with(&self, port: Option<u16>, more: &[&str]) -> String {
        let port = port.unwrap_or_else(|| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        });
        let port = port.to_string();
        let mut args = vec!["extension", "pair", "--port", &port];
        args.extend_from_slice(more);
        let output = self.command(&args).output().await.unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::trim)
            .find(|line| line.starts_with("chrome-extension://"))
            .expect("the pairing link")
            .to_owned()
    }

    pub fn record_file(&self) -> PathBuf {
        self.runtime.join("extension-bridge.json")
    }

    /// The owner record, read as JSON.
    pub fn record(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.record_file()).unwrap()).unwrap()
    }

    pub fn audit_log(&self) -> PathBuf {
        self.config.path().join("audit.jsonl")
    }

    /// `browser-shell` with `args`, in this setup.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browser-shell"));
        command
            .args(args)
            .env("BROWSER_SHELL_CONFIG_DIR", self.config.path())
            .env("BROWSER_SHELL_RUNTIME_DIR", &self.runtime)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .kill_on_drop(true);
        command
    }

    /// `mcp --browser extension` with the flags every client of the test
    /// is configured with, not yet initialized.
    pub fn spawn_mcp(&self) -> Client {
        self.spawn_mcp_with(&[])
    }

    /// [`Self::spawn_mcp`] with `more` flags.
    pub fn spawn_mcp_with(&self, more: &[&str]) -> Client {
        let audit = self.audit_log();
        let mut args = vec![
            "mcp",
            "--browser",
            "extension",
            "--audit-log",
            audit.to_str().unwrap(),
        ];
        args.extend_from_slice(more);
        let mut command = self.command(&args);
        command.stderr(Stdio::piped());
        Client::spawn(command)
    }

    /// [`Self::spawn_mcp`], initialized.
    pub async fn start_mcp(&self) -> Client {
        let mut client = self.spawn_mcp();
        client.initialize().await;
        client
    }

    /// The agent sessions of the tool calls in the audit log, in order.
    pub fn audited_sessions(&self) -> Vec<String> {
        std::fs::read_to_string(self.audit_log())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| event["event"] == "tool")
            .map(|event| event["session"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// `browser-shell extension install --user-data-dir DIR` in this setup.
pub fn install_native_host(setup: &Setup, profile: &Path) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["extension", "install", "--user-data-dir"])
        .arg(profile)
        .env("BROWSER_SHELL_CONFIG_DIR", setup.config.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("nothing to pair"),
        "{output:?}"
    );
}

/// The person's Chrome with the native messaging host installed in its
/// profile, its native host started in this setup's directories.
pub async fn persons_chrome_with_native_host(setup: &Setup) -> person::Person {
    let config = setup.config.path().to_path_buf();
    person::Person::start_prepared(
        |profile| install_native_host(setup, profile),
        &[
            ("BROWSER_SHELL_RUNTIME_DIR", setup.runtime.as_path()),
            ("BROWSER_SHELL_CONFIG_DIR", config.as_path()),
        ],
    )
    .await
}

/// Calls `tool` with `arguments` until `done(text, is_error)` holds
/// (every [`POLL`], `bound` at most); that answer's text.
pub async fn call_until(
    client: &mut Client,
    tool: &str,
    arguments: &Value,
    bound: Duration,
    done: impl FnMut(&str, bool) -> bool,
) -> String {
    client.call_until(tool, arguments, bound, done).await
}

/// The port a pairing link names (`…&port=N&…`).
pub fn port_of(link: &str) -> u16 {
    link.split("port=")
        .nth(1)
        .and_then(|rest| rest.split('&').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {link}"))
}

/// Waits (15 s at most) until the person's extension says it is connected
/// through `127.0.0.1:port`. After a new pairing the old connection can
/// answer calls for a moment longer, so a working call alone does not show
/// that the new one is up.
pub async fn extension_connected_to(person: &person::Person, port: u16) {
    let through = format!("127.0.0.1:{port}");
    let last = std::cell::RefCell::new(Value::Null);
    let connected = browser_testkit::bounded::eventually(Duration::from_secs(15), || async {
        let bridge = person.status("bridge").await;
        let holds = bridge["state"] == "connected"
            && bridge["detail"]
                .as_str()
                .is_some_and(|detail| detail.contains(&through));
        last.replace(bridge);
        holds
    })
    .await;
    assert!(
        connected,
        "not connected through {through} within 15 s: {}",
        last.borrow()
    );
}

/// Calls `browser_list_tabs` until it answers without NOT_CONNECTED (15 s
/// at most); how long that took.
pub async fn connected_within(client: &mut Client) -> Duration {
    let started = std::time::Instant::now();
    call_until(
        client,
        "browser_list_tabs",
        &json!({}),
        Duration::from_secs(15),
        |text, is_error| {
            assert!(!is_error || text.contains("NOT_CONNECTED"), "{text}");
            !is_error
        },
    )
    .await;
    started.elapsed()
}
