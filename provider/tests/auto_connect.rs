//! `Launcher::AutoConnect` against a real Chromium playing the person's
//! browser: started with `--remote-debugging-port=0` on a profile of the
//! test's own, found through its `DevToolsActivePort` (the explicit
//! directory list, never this machine's real profiles), attached to, and
//! attached to again after it is killed and comes back on another port.
//!
//! Each test has a browser of its own (one is killed); they are few.
//! Every wait is on a condition with a bound: the port file's appearance
//! (polled: there is no event for it), the supervisor's state, a call's
//! result.

#![allow(clippy::unwrap_used)]

use browser_testkit::provider::harness as support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_provider::browser::{SessionOptions, TabHandle, TargetOwner};
use browser_provider::host::active_port::{self, ACTIVE_PORT_FILE, SearchPath, SkipReason};
use browser_provider::host::{BrowserState, Launcher, RestartPolicy, Supervisor};
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig};
use tokio_util::sync::CancellationToken;

/// The person's browser: a headless shell with a debugging port, started
/// as a person would (keeping off the network like our own launches).
/// Kills its whole process group when dropped, even if an assertion fails.
struct PersonsBrowser {
    child: std::process::Child,
}

impl PersonsBrowser {
    /// Starts it on `profile`, showing `first_url` in a tab of the person's.
    fn start(profile: &Path, first_url: &str) -> Self {
        let executable = browser_provider::host::find_browser(None, true).unwrap();
        let child = std::process::Command::new(executable)
            .args([
                "--remote-debugging-port=0",
                "--no-sandbox",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--disable-default-apps",
                "--disable-extensions",
                "--disable-breakpad",
                "--disable-domain-reliability",
                "--disable-client-side-phishing-detection",
                "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
                "--metrics-recording-only",
                "--password-store=basic",
                "--use-mock-keychain",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(first_url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        Self { child }
    }

    /// Kills it (the whole group) and reaps it, as a crash or a person's
    /// `kill -9` would end it: its port file stays behind.
    fn kill(&mut self) {
        support::bounded::end_process_group(self.child.id(), Duration::from_secs(5));
        let _ = self.child.wait();
    }

    fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for PersonsBrowser {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits (bounded) until `profile` holds a valid port file whose port is
/// not `old`, and returns the port.
async fn port_file_appears(profile: &Path, old: Option<u16>) -> u16 {
    let file = profile.join(ACTIVE_PORT_FILE);
    let mut port = None;
    let appeared = support::eventually(Duration::from_secs(20), || {
        let read = std::fs::read(&file)
            .ok()
            .and_then(|bytes| active_port::parse_active_port(&bytes).ok())
            .map(|(port, _)| port)
            .filter(|port| Some(*port) != old);
        port = read;
        async move { read.is_some() }
    })
    .await;
    assert!(appeared, "Chromium wrote {}", file.display());
    port.unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn quick_policy() -> RestartPolicy {
    RestartPolicy {
        delays: vec![Duration::from_millis(100)],
        ..RestartPolicy::default()
    }
}

/// A directory whose port file names a port nothing listens on (its
/// browser is gone), under `root`.
fn stale_profile(root: &Path) -> PathBuf {
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = root.join("stale");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(ACTIVE_PORT_FILE),
        format!("{dead_port}\n/devtools/browser/0000-gone\n"),
    )
    .unwrap();
    dir
}

fn code<T>(result: browser_provider::Result<T>) -> &'static str {
    result.err().map_or("OK", |e| e.code())
}

#[test]
fn the_person_s_browser_is_found_and_their_tabs_stay_invisible() {
    runtime().block_on(async {
        let base = support::serve_fixtures().await;
        let root = tempfile::tempdir().unwrap();
        let profile = root.path().join("person");
        let mut person = PersonsBrowser::start(&profile, &format!("{base}/form.html"));
        let port = port_file_appears(&profile, None).await;

        // Discovery passes over a missing and a stale directory, says why,
        // and finds the person's browser.
        let missing = root.path().join("not-installed");
        let stale = stale_profile(root.path());
        let search = SearchPath::dirs([missing.clone(), stale.clone(), profile.clone()]);
        let discovery = active_port::discover(&search).await;
        let found = discovery.found.clone().expect("the person's browser");
        assert_eq!((found.dir.as_path(), found.port), (profile.as_path(), port));
        assert_eq!(discovery.skipped.len(), 2);
        assert_eq!(discovery.skipped[0].reason, SkipReason::NoDirectory);
        assert!(
            matches!(discovery.skipped[1].reason, SkipReason::NotAnswering { .. }),
            "{:?}",
            discovery.skipped[1]
        );

        let supervisor = Supervisor::start(
            Launcher::AutoConnect {
                search,
                command_timeout: Duration::from_secs(20),
            },
            quick_policy(),
        )
        .await
        .expect("attach to the person's browser");
        let browser =
            Browser::supervised(Arc::clone(&supervisor), BrowserConfig::default()).unwrap();
        let host = browser.host();
        let persons_tab = host
            .list_views()
            .await
            .unwrap()
            .into_iter()
            .find(|v| v.url.ends_with("/form.html"))
            .expect("the person's tab is there");

        // An agent opens a page of its own and works in it.
        let cancel = CancellationToken::new();
        let session = browser
            .open_session(SessionOptions::default())
            .await
            .unwrap();
        let (own, outcome) = browser
            .open(&session, &format!("{base}/article.html"), false, &cancel)
            .await
            .unwrap();
        assert_eq!(outcome.title, "Field Guide to Owls");
        let snapshot = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .unwrap();
        assert!(snapshot.url.ends_with("/article.html"), "{}", snapshot.url);
        assert!(snapshot.text.contains("Owls"), "{}", snapshot.text);

        // The person's tab is neither listed nor reachable.
        let listed = browser.list_tabs(&session).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0].handle, own);
        assert!(browser.unowned_tabs().await.unwrap().is_empty());
        assert!(
            browser
                .live_tabs()
                .await
                .unwrap()
                .iter()
                .all(|t| t.session.is_some() && t.view != persons_tab.id),
            "the column does not show the person's tabs either"
        );
        assert_eq!(
            browser.target_owner(persons_tab.id.as_str()),
            TargetOwner::Unknown
        );
        for n in 1..=20 {
            let handle = TabHandle::parse(&format!("t{n}")).unwrap();
            if handle == own {
                continue;
            }
            assert_eq!(
                code(browser.switch_tab(&session, &handle).await),
                "TAB_NOT_FOUND",
                "{handle}"
            );
        }
        assert_eq!(browser.census().tabs, 1);

        // An isolated session works too: a context of its own in the
        // person's browser, without their cookies.
        let isolated = browser
            .open_session(SessionOptions { isolated: true })
            .await
            .unwrap();
        let (_, outcome) = browser
            .open(&isolated, &format!("{base}/article.html"), false, &cancel)
            .await
            .unwrap();
        assert_eq!(outcome.title, "Field Guide to Owls");
        browser.close_session(&isolated).await.unwrap();

        // Ending the session closes the agent's tab, never the person's;
        // letting go leaves the person's browser running.
        browser.close_session(&session).await.unwrap();
        let views = host.list_views().await.unwrap();
        assert!(views.iter().any(|v| v.id == persons_tab.id), "{views:?}");
        assert!(
            views.iter().all(|v| !v.url.ends_with("/article.html")),
            "{views:?}"
        );
        supervisor.shutdown().await;
        assert!(person.is_running(), "the person's browser is theirs");
    });
}

#[test]
fn a_browser_that_comes_back_on_another_port_is_attached_again() {
    runtime().block_on(async {
        let base = support::serve_fixtures().await;
        let root = tempfile::tempdir().unwrap();
        let profile = root.path().join("person");
        let mut first = PersonsBrowser::start(&profile, "about:blank");
        let old_port = port_file_appears(&profile, None).await;
        let supervisor = Supervisor::start(
            Launcher::AutoConnect {
                search: SearchPath::dirs([profile.clone()]),
                command_timeout: Duration::from_secs(20),
            },
            quick_policy(),
        )
        .await
        .expect("attach to the person's browser");
        let browser =
            Browser::supervised(Arc::clone(&supervisor), BrowserConfig::default()).unwrap();
        let cancel = CancellationToken::new();
        let session = browser
            .open_session(SessionOptions::default())
            .await
            .unwrap();
        browser
            .open(&session, &format!("{base}/article.html"), false, &cancel)
            .await
            .unwrap();

        // The person's browser is killed: its port file stays behind, stale.
        let mut state = supervisor.watch();
        first.kill();
        tokio::time::timeout(
            Duration::from_secs(10),
            state.wait_for(|s| {
                matches!(
                    s,
                    BrowserState::Restarting {
                        reconnecting: true,
                        ..
                    }
                )
            }),
        )
        .await
        .expect("the supervisor noticed")
        .unwrap();
        let asked = Instant::now();
        let error = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .expect_err("no browser while it is away");
        assert_eq!(error.code(), "NOT_CONNECTED", "{error}");
        assert!(asked.elapsed() < Duration::from_secs(1), "fails fast");

        // It comes back (a new port, most likely) and is found again.
        let _second = PersonsBrowser::start(&profile, "about:blank");
        let new_port = port_file_appears(&profile, Some(old_port)).await;
        tracing::info!(old_port, new_port, "the person's browser is back");
        tokio::time::timeout(
            Duration::from_secs(30),
            state.wait_for(|s| s.generation() == Some(2)),
        )
        .await
        .expect("attached again")
        .unwrap();
        let snapshot = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .expect("the session carries on");
        assert!(snapshot.url.ends_with("/article.html"), "{}", snapshot.url);
        assert_eq!(browser.take_notices(&session).len(), 1);
        supervisor.shutdown().await;
    });
}

#[test]
fn nothing_found_is_not_connected_with_the_way_to_turn_debugging_on() {
    runtime().block_on(async {
        let root = tempfile::tempdir().unwrap();
        let stale = stale_profile(root.path());
        let off = root.path().join("debugging-off");
        std::fs::create_dir_all(&off).unwrap();
        let error = Supervisor::start(
            Launcher::AutoConnect {
                search: SearchPath::dirs([stale.clone(), off.clone()]),
                command_timeout: Duration::from_secs(5),
            },
            quick_policy(),
        )
        .await
        .expect_err("nothing to attach to");
        assert_eq!(error.code(), "NOT_CONNECTED");
        let message = error.to_string();
        for dir in [&stale, &off] {
            assert!(message.contains(&dir.display().to_string()), "{message}");
        }
        assert!(message.contains("remote debugging is off"), "{message}");
        assert!(message.contains("nothing answers"), "{message}");
        assert!(
            error.hint().contains("chrome://inspect/#remote-debugging"),
            "{}",
            error.hint()
        );
    });
}
