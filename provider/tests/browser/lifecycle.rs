//! Launching, dropping, crashing and connecting — each with a browser of its own.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::Duration;

use browser_provider::cdp::protocol::RuntimeEvaluate;
use browser_provider::host::{
    ChromiumHost, CreateViewOptions, LaunchOptions, ViewHost, ViewHostExt,
};
use tokio_util::sync::CancellationToken;

use crate::support::{self, Ctx};

pub async fn missing_browser_names_the_paths_tried(_ctx: Ctx) {
    let options = LaunchOptions {
        executable: Some(PathBuf::from("/opt/nowhere/chromium")),
        ..support::launch_options()
    };
    let error = ChromiumHost::launch(options).await.unwrap_err();
    assert_eq!(error.code(), "BROWSER_NOT_FOUND");
    assert!(error.to_string().contains("/opt/nowhere/chromium"));
    assert!(error.hint().contains("apt-get install chromium"));
}

pub async fn dropping_the_host_leaves_nothing_behind(_ctx: Ctx) {
    let host = ChromiumHost::launch(support::launch_options())
        .await
        .unwrap();
    let profile = host.temporary_profile().expect("a temporary profile");
    let pid = host.pid().expect("a child process");
    assert!(profile.exists());
    let view = host
        .create_view(CreateViewOptions::default())
        .await
        .unwrap();
    assert!(
        host.list_views()
            .await
            .unwrap()
            .iter()
            .any(|v| v.id == view)
    );
    drop(host);
    assert!(!profile.exists(), "the temporary profile is removed");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || support::processes_mentioning(&profile.display().to_string()).is_empty()
    );
    let needle = profile.display().to_string();
    assert!(
        support::eventually(Duration::from_secs(5), || {
            let needle = needle.clone();
            async move { support::processes_mentioning(&needle).is_empty() }
        })
        .await,
        "no Chromium process survives the host"
    );
}

pub async fn a_killed_browser_fails_pending_commands_promptly(_ctx: Ctx) {
    let host = ChromiumHost::launch(support::launch_options())
        .await
        .unwrap();
    let view = host
        .create_view(CreateViewOptions::default())
        .await
        .unwrap();
    let pending = {
        let evaluate = RuntimeEvaluate {
            expression: "new Promise(() => {})".into(),
            return_by_value: true,
            await_promise: true,
            user_gesture: false,
            timeout: None,
            ..Default::default()
        };
        let host = &host;
        let view = view.clone();
        async move {
            host.call_within(&view, &evaluate, Duration::from_secs(60))
                .await
        }
    };
    let pid = host.pid().unwrap() as i32;
    let killer = async {
        // Prove the command is in flight: another command on the same view answers.
        host.call(
            &view,
            &RuntimeEvaluate {
                expression: "1".into(),
                return_by_value: true,
                await_promise: false,
                user_gesture: false,
                timeout: None,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        // SAFETY: signalling the child we launched.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(pending, killer)
    })
    .await
    .expect("the pending command fails promptly");
    assert_eq!(result.unwrap_err().code(), "BROWSER_CRASHED");
    // Later commands fail at once with the same code.
    let later = host.list_views().await.unwrap_err();
    assert_eq!(later.code(), "BROWSER_CRASHED");
    drop(host);
}

pub async fn connects_to_an_existing_browser_over_websocket(ctx: Ctx) {
    // A browser with a debug port, started the way a user would.
    let profile = tempfile::tempdir().unwrap();
    // The headless shell: killed, it leaves nothing in the temp directory.
    let executable = browser_provider::host::find_browser(None, true).unwrap();
    let child = std::process::Command::new(executable)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Kills the browser's whole process group even if an assertion fails.
    let mut child = KillOnDrop(child);
    // Chromium writes the port file when the endpoint is up; wait for it with a bound.
    let port_file = profile.path().join("DevToolsActivePort");
    let ready = support::eventually(Duration::from_secs(20), || {
        let port_file = port_file.clone();
        async move {
            std::fs::read_to_string(&port_file)
                .map(|t| t.lines().count() >= 2)
                .unwrap_or(false)
        }
    })
    .await;
    assert!(ready, "Chromium wrote DevToolsActivePort");
    let port = std::fs::read_to_string(&port_file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();

    let connected = async {
        let host = std::sync::Arc::new(
            ChromiumHost::connect(&format!("http://127.0.0.1:{port}"), Duration::from_secs(10))
                .await
                .unwrap(),
        );
        assert!(host.browser_version().contains("Chrome"));
        let browser = browser_provider::Browser::new(host.clone(), Default::default());
        let session = browser.open_session(Default::default()).await.unwrap();
        let (_, outcome) = browser
            .open(
                &session,
                &ctx.url("article.html"),
                false,
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(outcome.title, "Field Guide to Owls");
        browser.close_session(&session).await.unwrap();
        host.shutdown().await;
    };
    connected.await;
    // A connected browser is not ours to stop: it still runs after we close.
    assert!(child.0.try_wait().unwrap().is_none());
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        crate::support::bounded::end_process_group(self.0.id(), Duration::from_secs(5));
        let _ = self.0.wait();
    }
}

/// Without a window the headless shell is preferred where it is installed
/// (the shared browser of these tests runs on it); the full browser still
/// works, and is what a window needs.
pub async fn the_headless_shell_is_preferred_and_the_full_browser_works_too(ctx: Ctx) {
    let headless = browser_provider::host::find_browser(None, true).unwrap();
    let windowed = browser_provider::host::find_browser(None, false).unwrap();
    assert!(
        !browser_provider::host::is_headless_shell(&windowed),
        "{}",
        windowed.display()
    );
    if std::path::Path::new("/usr/bin/chromium-headless-shell").exists()
        && std::env::var_os(browser_provider::host::BROWSER_ENV).is_none()
    {
        assert!(
            browser_provider::host::is_headless_shell(&headless),
            "{}",
            headless.display()
        );
        // A window needs the full browser.
        let launched = ChromiumHost::launch(LaunchOptions {
            executable: Some(headless.clone()),
            headless: false,
            ..support::launch_options()
        })
        .await;
        let Err(refused) = launched else {
            panic!("the headless shell cannot show a window");
        };
        assert_eq!(refused.code(), "LAUNCH_FAILED");
        assert!(refused.to_string().contains("full browser"), "{refused}");
    }
    let full = ChromiumHost::launch(LaunchOptions {
        executable: Some(windowed),
        ..support::launch_options()
    })
    .await
    .unwrap();
    let browser = browser_provider::Browser::new(
        std::sync::Arc::new(full),
        browser_provider::BrowserConfig::default(),
    );
    let session = browser.open_session(Default::default()).await.unwrap();
    let (_, outcome) = browser
        .open(
            &session,
            &ctx.url("article.html"),
            false,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.title, "Field Guide to Owls");
    let shot = browser
        .screenshot(&session, Default::default(), &CancellationToken::new())
        .await
        .unwrap();
    assert!(shot.width > 0 && shot.data.len() > 1000);
    browser.close_session(&session).await.unwrap();
}

/// The full browser keeps its process-singleton socket in a directory of
/// its own in the temporary directory, linked from the profile. Closed, or
/// killed first, it leaves nothing there.
pub async fn the_full_browser_leaves_no_singleton_directory_closed_or_killed(_ctx: Ctx) {
    let windowed = browser_provider::host::find_browser(None, false).unwrap();
    for killed in [false, true] {
        let host = ChromiumHost::launch(LaunchOptions {
            executable: Some(windowed.clone()),
            ..support::launch_options()
        })
        .await
        .unwrap();
        let profile = host.temporary_profile().expect("a temporary profile");
        let socket = std::fs::read_link(profile.join("SingletonSocket"))
            .expect("the full browser links its singleton socket from the profile");
        let singleton = socket.parent().unwrap().to_path_buf();
        assert!(singleton.is_dir(), "{}", singleton.display());
        if killed {
            let pid = i32::try_from(host.pid().unwrap()).unwrap();
            // SAFETY: signalling the child we launched.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            tokio::time::timeout(Duration::from_secs(10), host.ended())
                .await
                .expect("the kill is noticed");
        }
        host.shutdown().await;
        assert!(
            !singleton.exists(),
            "{} is left (killed first: {killed})",
            singleton.display()
        );
        assert!(!profile.exists(), "the temporary profile is removed");
    }
}
