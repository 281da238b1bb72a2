//! `--browser auto-connect` from the outside: the real binary with the
//! search pointed at directories of the test's own
//! (`BROWSER_SHELL_AUTO_CONNECT_DIRS`), never at this machine's profiles.
//! Nothing found is `NOT_CONNECTED` with the way to turn remote debugging
//! on; the CDP endpoint and `connect` are refused with it; `doctor` says
//! what it found or searched; an agent over MCP works in the person's
//! browser and sees only its own tab.

use crate::common;
use browser_testkit::mcp_stdio::Client;
use common::bounded;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

const DIRS_ENV: &str = "BROWSER_SHELL_AUTO_CONNECT_DIRS";

/// `browser-shell ARGS` searching only `dirs`, without a display.
fn shell(args: &[&str], dirs: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"));
    command
        .args(args)
        .env(DIRS_ENV, dirs)
        .env("BROWSER_SHELL_RUNTIME_DIR", common::runtime_dir())
        .env("RUST_LOG", "warn")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .kill_on_drop(true);
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `browser-shell ARGS` (an `mcp` command) searching only `dirs`, as an
/// initialized MCP client.
async fn mcp(args: &[&str], dirs: &Path) -> Client {
    let mut command = shell(args, dirs);
    command.stderr(Stdio::null());
    Client::start(command).await
}

/// The person's browser: a headless shell with a debugging port on
/// `profile`, off the network; its process group is killed when dropped.
struct PersonsBrowser(std::process::Child);

impl PersonsBrowser {
    fn start(profile: &Path, first_url: &str) -> Self {
        let executable = browser_provider::host::find_browser(None, true).unwrap();
        let child = std::process::Command::new(executable)
            .args([
                "--remote-debugging-port=0",
                "--no-sandbox",
                "--no-first-run",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--disable-extensions",
                "--disable-breakpad",
                "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(first_url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        Self(child)
    }

    /// Waits (bounded; there is no event for it) for the port file and
    /// returns the port.
    async fn port(profile: &Path) -> u16 {
        let file = profile.join("DevToolsActivePort");
        let port = bounded::first_some(Duration::from_secs(20), || {
            let port = std::fs::read(&file).ok().and_then(|bytes| {
                browser_provider::host::active_port::parse_active_port(&bytes)
                    .ok()
                    .map(|(port, _)| port)
            });
            std::future::ready(port)
        })
        .await;
        port.unwrap_or_else(|| panic!("Chromium did not write {}", file.display()))
    }
}

impl Drop for PersonsBrowser {
    fn drop(&mut self) {
        bounded::end_process_group(self.0.id(), Duration::from_secs(5));
        let _ = self.0.wait();
    }
}

/// With no browser to attach to, every call answers `NOT_CONNECTED`
/// naming what was searched and how to turn remote debugging on; once
/// the person turns it on, the server finds the browser by itself.
#[tokio::test]
async fn without_a_browser_calls_say_how_to_turn_remote_debugging_on_until_it_is() {
    let root = tempfile::tempdir().unwrap();
    let profile = root.path().join("chrome-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let mut client = mcp(&["mcp", "--browser", "auto-connect"], &profile).await;
    let (answer, is_error) = client
        .call("browser_open", json!({"url": "http://127.0.0.1:9/"}))
        .await;
    assert!(is_error, "{answer}");
    assert!(answer.contains("NOT_CONNECTED"), "{answer}");
    assert!(
        answer.contains("chrome://inspect/#remote-debugging"),
        "{answer}"
    );
    assert!(answer.contains(&profile.display().to_string()), "{answer}");
    assert!(answer.contains("remote debugging is off"), "{answer}");

    // A one-shot command says the same, with the exit status of a missing browser.
    let out = shell(
        &["fetch", "--browser", "auto-connect", "http://127.0.0.1:9/"],
        &profile,
    )
    .output()
    .await
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error[NOT_CONNECTED]"), "{stderr}");
    assert!(
        stderr.contains("chrome://inspect/#remote-debugging"),
        "{stderr}"
    );

    // The person turns remote debugging on (here: starts a browser with a
    // debugging port): the server attaches by itself, within its retry
    // period (the calls are polled, bounded).
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let _person = PersonsBrowser::start(&profile, "about:blank");
    PersonsBrowser::port(&profile).await;
    let answer = client
        .call_until(
            "browser_open",
            &json!({"url": format!("{base}/article.html")}),
            Duration::from_secs(20),
            |answer, is_error| {
                assert!(!is_error || answer.contains("NOT_CONNECTED"), "{answer}");
                !is_error
            },
        )
        .await;
    assert!(answer.contains("Field Guide to Owls"), "{answer}");
    assert!(client.close().await.0.success());

    // A client that leaves while nothing is found ends the server (with the reason).
    let elsewhere = root.path().join("never");
    let client = mcp(&["mcp", "--browser", "auto-connect"], &elsewhere).await;
    assert!(!client.close().await.0.success());
}

/// The CDP endpoint would hand the person's whole browser to its
/// clients; `connect` is another way in. Both are refused before anything
/// connects.
#[tokio::test]
async fn the_cdp_endpoint_and_connect_are_refused_with_auto_connect() {
    let empty = tempfile::tempdir().unwrap();
    let out = shell(
        &["relay", "--browser", "auto-connect", "--cdp-endpoint"],
        empty.path(),
    )
    .output()
    .await
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error[INVALID_ARGUMENT]"), "{stderr}");
    assert!(
        stderr.contains("cdp-endpoint") && stderr.contains("auto-connect"),
        "{stderr}"
    );

    let out = shell(
        &[
            "mcp",
            "--browser",
            "auto-connect",
            "--connect",
            "ws://127.0.0.1:9/devtools/browser/x",
        ],
        empty.path(),
    )
    .output()
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot be used with"),
        "{}",
        text(&out.stderr)
    );

    let config = empty.path().join("config.toml");
    std::fs::write(
        &config,
        "browser = \"auto-connect\"\nconnect = \"ws://127.0.0.1:9/devtools/browser/x\"\n",
    )
    .unwrap();
    let out = shell(&["mcp", "--config", config.to_str().unwrap()], empty.path())
        .output()
        .await
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("exclude each other"), "{stderr}");
}

/// `doctor` says what it searched and why nothing fitted; with the
/// person's browser running, which browser, directory and port it found.
/// Then an agent works there over MCP and sees only its own tab.
#[tokio::test]
async fn doctor_finds_the_person_s_browser_and_an_agent_sees_only_its_own_tab() {
    let root = tempfile::tempdir().unwrap();
    let profile = root.path().join("person");
    let out = shell(&["doctor", "--browser", "auto-connect"], &profile)
        .output()
        .await
        .unwrap();
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("FIX   browser: "), "{report}");
    assert!(report.contains(&profile.display().to_string()), "{report}");
    assert!(
        report.contains("fix: turn remote debugging on") && report.contains("chrome://inspect"),
        "{report}"
    );

    let base = browser_testkit::fixtures::serve_fixtures().await;
    let _person = PersonsBrowser::start(&profile, &format!("{base}/form.html"));
    let port = PersonsBrowser::port(&profile).await;
    let out = shell(&["doctor", "--browser", "auto-connect"], &profile)
        .output()
        .await
        .unwrap();
    let report = text(&out.stdout);
    assert!(
        report.contains(&format!(
            "ok    browser: auto-connect finds given directory in {} (port {port})",
            profile.display()
        )),
        "{report}"
    );

    let mut client = mcp(&["mcp", "--browser", "auto-connect"], &profile).await;
    let (opened, is_error) = client
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!is_error, "{opened}");
    assert!(opened.contains("Field Guide to Owls"), "{opened}");
    let (tabs, is_error) = client.call("browser_list_tabs", json!({})).await;
    assert!(!is_error, "{tabs}");
    assert!(tabs.contains("article.html"), "{tabs}");
    assert!(
        !tabs.contains("form.html"),
        "the person's tab is not listed: {tabs}"
    );
    assert!(client.close().await.0.success());
}
