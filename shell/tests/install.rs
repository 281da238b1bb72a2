//! What an installed program offers around its work: `--version` with the
//! commit, `doctor`, shell completions and the manual page.

use crate::common;

use std::process::{Output, Stdio};

/// Runs the binary with `args`, without a display, in a private runtime directory.
async fn shell(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(args)
        .env("BROWSER_SHELL_RUNTIME_DIR", common::runtime_dir())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .await
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn the_version_names_the_commit() {
    let out = shell(&["--version"]).await;
    assert!(out.status.success());
    let line = text(&out.stdout);
    assert!(
        line.starts_with(&format!(
            "browser-shell {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{line}"
    );
    let commit = line
        .trim()
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .unwrap();
    assert!(
        commit == "unknown" || commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{line}"
    );
}

#[tokio::test]
async fn doctor_says_what_is_there_and_what_to_fix() {
    // This machine has what the shell needs: every line is ok or a note.
    let out = shell(&["doctor"]).await;
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}");
    let browser = report
        .lines()
        .find(|l| l.starts_with("ok    browser: "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(browser.contains("Chromium "), "the version: {browser}");
    assert!(browser.contains("headless shell"), "{browser}");
    assert!(
        report.contains("note  window: no display"),
        "no display here: {report}"
    );
    assert!(report.contains("ok    runtime dir: "), "{report}");
    assert!(report.contains("note  instance: none runs"), "{report}");

    // A browser that is not there: a line that says so and how to fix it, exit 1.
    let out = shell(&["doctor", "--browser", "/nonexistent/chromium"]).await;
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("FIX   browser: ") && report.contains("/nonexistent/chromium"),
        "{report}"
    );
    assert!(report.contains("      fix: "), "{report}");

    // A config file that does not parse: said, not a crash.
    let bad = std::env::temp_dir().join(format!("doctor-{}.toml", std::process::id()));
    std::fs::write(&bad, "timeoutMs = \"soon\"\n").unwrap();
    let out = shell(&["doctor", "--config", bad.to_str().unwrap()]).await;
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("FIX   config: "), "{report}");
    let _ = std::fs::remove_file(bad);
}

#[tokio::test]
async fn completions_and_the_manual_page() {
    for (name, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef browser-shell"),
        ("fish", "complete -c browser-shell"),
    ] {
        let out = shell(&["completions", name]).await;
        assert!(out.status.success());
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{name}: {script:.300}");
        assert!(script.contains("snapshot"), "{name} knows the commands");
    }
    let out = shell(&["completions", "tcsh"]).await;
    assert!(!out.status.success(), "an unknown shell is refused");
    assert!(text(&out.stderr).contains("possible values"));

    let out = shell(&["man"]).await;
    assert!(out.status.success());
    let page = text(&out.stdout);
    assert!(page.contains(".TH browser-shell 1"), "{page:.300}");
    assert!(page.contains("doctor"), "the commands are listed");

    // A reader that stops early is no error and no crash.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"));
}

#[tokio::test]
async fn the_service_unit_is_valid() {
    // As installed, with the binary where this build has it and without
    // the manual page reference (not installed here).
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/browser-shell-relay.service"
    ))
    .unwrap();
    for needed in [
        "ExecStart=/usr/bin/browser-shell relay --listen 127.0.0.1:8930",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "PrivateTmp=yes",
        "StateDirectory=browser-shell",
    ] {
        assert!(unit.contains(needed), "{needed}");
    }
    let here: String = unit
        .replace(
            "/usr/bin/browser-shell",
            env!("CARGO_BIN_EXE_browser-shell"),
        )
        .lines()
        .filter(|line| !line.starts_with("Documentation="))
        .map(|line| format!("{line}\n"))
        .collect();
    let dir = common::runtime_dir();
    let path = dir.join("browser-shell-relay.service");
    std::fs::write(&path, here).unwrap();
    let out = tokio::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .await
        .expect("systemd-analyze (package systemd) is installed");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        out.stderr.is_empty(),
        "no unknown keys or bad values: {}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn doctor_reports_the_extension_pairing_and_bridge() {
    let config = tempfile::tempdir().unwrap();
    let doctor = || async {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
            .args(["doctor", "--browser", "extension"])
            .env("BROWSER_SHELL_RUNTIME_DIR", common::runtime_dir())
            .env("BROWSER_SHELL_CONFIG_DIR", config.path())
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .output()
            .await
            .unwrap();
        (out.status.code(), text(&out.stdout))
    };
    // Nothing set up: what to do, exit 1.
    let (status, report) = doctor().await;
    assert_eq!(status, Some(1), "{report}");
    assert!(
        report.contains("FIX   browser: the extension has no way to reach a shell")
            && report.contains("browser-shell extension install"),
        "{report}"
    );

    // Paired: the file (mode 600), the unpacked extension, the bridge not held.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let paired = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["extension", "pair", "--port", &port.to_string()])
        .env("BROWSER_SHELL_CONFIG_DIR", config.path())
        .output()
        .await
        .unwrap();
    assert!(paired.status.success(), "{}", text(&paired.stderr));
    let (status, report) = doctor().await;
    assert_eq!(status, Some(0), "{report}");
    assert!(
        report.contains(&format!(
            "native messaging not installed, so the extension uses the paired WebSocket on 127.0.0.1:{port}"
        )) && report.contains("mode 600")
            && report.contains("no shell holds the bridge now"),
        "{report}"
    );

    // Native messaging installed (into a profile): it is the bridge in use.
    let profile = tempfile::tempdir().unwrap();
    let installed = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["extension", "install", "--user-data-dir"])
        .arg(profile.path())
        .env("BROWSER_SHELL_CONFIG_DIR", config.path())
        .output()
        .await
        .unwrap();
    assert!(installed.status.success(), "{}", text(&installed.stderr));
    let (status, report) = doctor().await;
    assert_eq!(status, Some(0), "{report}");
    assert!(
        report.contains("native messaging installed for a profile")
            && report.contains("the extension uses it: nothing to pair")
            && report.contains(&format!("also paired on 127.0.0.1:{port}")),
        "{report}"
    );
}
