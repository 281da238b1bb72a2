//! Fault injection against a real Chromium: the browser killed (idle and
//! mid-call), renderers crashed and killed, and the shell carrying on.
//!
//! Each test kills or crashes what it runs on, so each has a supervised
//! browser of its own instead of sharing one; they are few. Every wait is
//! on an event (the supervisor's state, a call's result) with a bound.

#![allow(clippy::unwrap_used)]

use browser_testkit::provider::harness as support;

use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_provider::browser::{NavigationRequest, SessionOptions};
use browser_provider::host::{BrowserState, Launcher, RestartPolicy, Supervisor};
use browser_provider::page::wait::Condition;
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig, SessionId};
use tokio_util::sync::CancellationToken;

/// A supervised browser of the test's own, and the fixture server.
struct Fixture {
    supervisor: Arc<Supervisor>,
    browser: Browser,
    base: String,
}

impl Fixture {
    async fn start() -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let base = support::serve_fixtures().await;
        let policy = RestartPolicy {
            // Quick relaunches keep the tests short.
            delays: vec![Duration::from_millis(100)],
            ..RestartPolicy::default()
        };
        let supervisor = Supervisor::start(Launcher::Launch(support::launch_options()), policy)
            .await
            .expect("launch Chromium");
        let browser = Browser::supervised(Arc::clone(&supervisor), BrowserConfig::default())
            .expect("a running browser");
        Self {
            supervisor,
            browser,
            base,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    async fn session_at(&self, path: &str) -> SessionId {
        let session = self
            .browser
            .open_session(SessionOptions::default())
            .await
            .unwrap();
        self.browser
            .open(&session, &self.url(path), false, &CancellationToken::new())
            .await
            .unwrap();
        session
    }

    fn browser_pid(&self) -> i32 {
        let pid = self.supervisor.host().and_then(|h| h.pid()).unwrap();
        i32::try_from(pid).unwrap()
    }

    /// Kills the browser's main process as the OOM killer would, and
    /// returns once the supervisor has noticed.
    async fn kill_browser(&self) {
        let mut state = self.supervisor.watch();
        let generation = state.borrow().generation().unwrap();
        // SAFETY: signalling the test's own browser.
        unsafe { libc::kill(self.browser_pid(), libc::SIGKILL) };
        tokio::time::timeout(
            Duration::from_secs(10),
            state.wait_for(|s| s.generation() != Some(generation)),
        )
        .await
        .expect("the supervisor noticed the kill")
        .unwrap();
    }

    /// Waits until the browser runs generation `generation`.
    async fn running(&self, generation: u64) {
        let mut state = self.supervisor.watch();
        tokio::time::timeout(
            Duration::from_secs(20),
            state.wait_for(|s| s.generation() == Some(generation)),
        )
        .await
        .expect("the browser came back")
        .unwrap();
    }

    async fn shutdown(self) {
        self.supervisor.shutdown().await;
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_killed_browser_comes_back_with_the_sessions_tabs() {
    runtime().block_on(async {
        let fixture = Fixture::start().await;
        let browser = &fixture.browser;
        let session = fixture.session_at("form.html").await;
        let (second, _) = browser
            .open(
                &session,
                &fixture.url("article.html"),
                true,
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        let tabs_before = browser.list_tabs(&session).await.unwrap();
        let old_pid = fixture.browser_pid();

        fixture.kill_browser().await;
        fixture.running(2).await;

        // The next call runs normally, on the same handles, at the same URLs.
        let snapshot = browser
            .snapshot(&session, &Scope::Page, &CancellationToken::new())
            .await
            .expect("a snapshot after the restart");
        assert!(snapshot.url.ends_with("/article.html"), "{}", snapshot.url);
        assert!(
            snapshot.text.contains("heading"),
            "the reopened page has its content: {}",
            snapshot.text
        );
        let tabs_after = browser.list_tabs(&session).await.unwrap();
        assert_eq!(tabs_after, tabs_before, "same handles, URLs and active tab");
        assert_eq!(browser.active_tab(&session).unwrap(), second);
        assert_ne!(fixture.browser_pid(), old_pid, "a new browser process");

        // One notice, once, naming the cause and the tabs.
        let notices = browser.take_notices(&session);
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("killed by signal 9"), "{}", notices[0]);
        assert!(notices[0].contains("t1, t2"), "{}", notices[0]);
        assert!(browser.take_notices(&session).is_empty());

        // New sessions work too, and the old process is gone for good.
        let other = fixture.session_at("index.html").await;
        assert_eq!(browser.list_tabs(&other).await.unwrap().len(), 1);
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(old_pid, 0) } == 0;
        assert!(!alive, "the killed browser was reaped");
        fixture.shutdown().await;
    });
}

#[test]
fn a_call_in_flight_fails_with_browser_restarted_naming_the_cause() {
    runtime().block_on(async {
        let fixture = Fixture::start().await;
        let browser = fixture.browser.clone();
        let session = fixture.session_at("form.html").await;
        let waiting = {
            let browser = browser.clone();
            let session = session.clone();
            tokio::spawn(async move {
                let condition = Condition::Text {
                    text: "never on this page".into(),
                    gone: false,
                };
                let started = Instant::now();
                let result = browser
                    .wait(
                        &session,
                        &condition,
                        Duration::from_secs(20),
                        &CancellationToken::new(),
                    )
                    .await;
                (result, started)
            })
        };
        // The wait is under way once the page has been asked about the text.
        tokio::task::yield_now().await;
        let killed_at = Instant::now();
        fixture.kill_browser().await;
        let (result, _) = waiting.await.unwrap();
        let error = result.expect_err("the wait cannot complete");
        assert_eq!(error.code(), "BROWSER_RESTARTED", "{error}");
        assert!(error.to_string().contains("killed by signal 9"), "{error}");
        assert!(
            killed_at.elapsed() < Duration::from_secs(4),
            "failed promptly, not at its 20 s bound: {:?}",
            killed_at.elapsed()
        );

        // The next call runs normally and carries the notice.
        fixture.running(2).await;
        let value = browser
            .execute(
                &session,
                "document.title",
                vec![],
                None,
                &CancellationToken::new(),
            )
            .await
            .expect("the next call runs");
        assert!(format!("{value:?}").contains("form"), "{value:?}");
        assert_eq!(browser.take_notices(&session).len(), 1);
        fixture.shutdown().await;
    });
}

#[test]
fn a_crashed_page_fails_fast_until_reloaded_and_other_tabs_carry_on() {
    runtime().block_on(async {
        let fixture = Fixture::start().await;
        let browser = &fixture.browser;
        let crashing = fixture.session_at("form.html").await;
        let bystander = fixture.session_at("article.html").await;

        // Page.crash never answers: the crash is what ends the call.
        let host = browser.host();
        let view = browser
            .view_of(&crashing, &browser.active_tab(&crashing).unwrap())
            .unwrap();
        let crash = tokio::spawn(async move {
            host.send_command(
                &view,
                "Page.crash",
                serde_json::json!({}),
                Duration::from_secs(5),
            )
            .await
        });
        {
            let cancel = CancellationToken::new();
            // Wait on the page's own health rather than on time.
            let started = Instant::now();
            let error = loop {
                match browser.snapshot(&crashing, &Scope::Page, &cancel).await {
                    Err(error) => break error,
                    Ok(_) => assert!(
                        started.elapsed() < Duration::from_secs(5),
                        "the crash was noticed"
                    ),
                }
            };
            assert_eq!(error.code(), "PAGE_CRASHED", "{error}");
        }
        let _ = crash.await;
        let started = Instant::now();
        let error = browser
            .snapshot(&crashing, &Scope::Page, &CancellationToken::new())
            .await
            .expect_err("still crashed");
        assert_eq!(error.code(), "PAGE_CRASHED");
        assert!(started.elapsed() < Duration::from_secs(1), "fails at once");

        // Another session's tab is untouched.
        let other = browser
            .snapshot(&bystander, &Scope::Page, &CancellationToken::new())
            .await
            .expect("the other tab works");
        assert!(other.url.ends_with("/article.html"));

        // A reload brings it back.
        browser
            .navigate(
                &crashing,
                NavigationRequest::Reload,
                &CancellationToken::new(),
            )
            .await
            .expect("a crashed tab reloads");
        let snapshot = browser
            .snapshot(&crashing, &Scope::Page, &CancellationToken::new())
            .await
            .expect("a snapshot after the reload");
        assert!(snapshot.url.ends_with("/form.html"));
        fixture.shutdown().await;
    });
}

#[test]
fn killed_renderers_crash_their_tabs_and_a_new_url_revives_them() {
    runtime().block_on(async {
        let fixture = Fixture::start().await;
        let browser = &fixture.browser;
        let session = fixture.session_at("form.html").await;
        let group = fixture.browser_pid();
        let renderers = renderers_in_group(group);
        assert!(!renderers.is_empty(), "the page has a renderer");
        for pid in renderers {
            // SAFETY: signalling a renderer of the test's own browser.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let started = Instant::now();
        let error = loop {
            match browser
                .snapshot(&session, &Scope::Page, &CancellationToken::new())
                .await
            {
                Err(error) => break error,
                Ok(_) => assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "the crash was noticed"
                ),
            }
        };
        assert_eq!(error.code(), "PAGE_CRASHED", "{error}");
        let (_, outcome) = browser
            .open(
                &session,
                &fixture.url("article.html"),
                false,
                &CancellationToken::new(),
            )
            .await
            .expect("opening a URL in a crashed tab revives it");
        assert!(outcome.url.ends_with("/article.html"));
        browser
            .snapshot(&session, &Scope::Page, &CancellationToken::new())
            .await
            .expect("works again");
        fixture.shutdown().await;
    });
}

/// Renderer processes in the process group `group` (the browser's).
fn renderers_in_group(group: i32) -> Vec<i32> {
    support::processes_mentioning("--type=renderer")
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // Fields after the command name (which ends with ')'): state ppid pgrp …
            let after = stat.rsplit_once(')')?.1;
            let pgrp: i32 = after.split_whitespace().nth(2)?.parse().ok()?;
            (pgrp == group).then(|| i32::try_from(pid).ok()).flatten()
        })
        .collect()
}

#[test]
fn a_browser_that_keeps_dying_is_given_up_on_with_a_clear_state() {
    runtime().block_on(async {
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        let policy = RestartPolicy {
            delays: vec![Duration::from_millis(50)],
            window: Duration::from_secs(60),
            max_restarts: 1,
            max_attempts: 5,
        };
        let supervisor = Supervisor::start(Launcher::Launch(support::launch_options()), policy)
            .await
            .unwrap();
        let browser =
            Browser::supervised(Arc::clone(&supervisor), BrowserConfig::default()).unwrap();
        let mut state = supervisor.watch();
        for generation in 1..=2u64 {
            let pid = supervisor.host().and_then(|h| h.pid()).unwrap();
            // SAFETY: signalling the test's own browser.
            unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL) };
            tokio::time::timeout(
                Duration::from_secs(20),
                state.wait_for(|s| s.generation() != Some(generation)),
            )
            .await
            .unwrap()
            .unwrap();
            if generation == 1 {
                tokio::time::timeout(
                    Duration::from_secs(20),
                    state.wait_for(|s| s.generation() == Some(2)),
                )
                .await
                .unwrap()
                .unwrap();
            }
        }
        let failed = tokio::time::timeout(
            Duration::from_secs(10),
            state.wait_for(|s| matches!(s, BrowserState::Failed { .. })),
        )
        .await
        .unwrap()
        .unwrap()
        .clone();
        let BrowserState::Failed { cause, .. } = failed else {
            unreachable!()
        };
        assert!(cause.contains("not restarted again"), "{cause}");
        let error = browser
            .open_session(SessionOptions::default())
            .await
            .expect_err("no browser");
        assert_eq!(error.code(), "BROWSER_CRASHED");
        assert!(
            error.to_string().contains("could not be restarted"),
            "{error}"
        );
        supervisor.shutdown().await;
    });
}

/// Open file descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// What must come back to where it was: the browser's maps, the host's,
/// the runtime's tasks and our file descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Footprint {
    census: browser_provider::browser::Census,
    tasks: usize,
    fds: usize,
}

fn footprint(browser: &Browser) -> Footprint {
    Footprint {
        census: browser.census(),
        tasks: tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        fds: open_fds(),
    }
}

/// Waits (bounded) until the footprint is back to `baseline`: tasks that
/// close tabs finish a moment after the calls that started them.
async fn settles_to(browser: &Browser, baseline: Footprint) -> Footprint {
    let settled = support::eventually(Duration::from_secs(20), || async {
        let now = footprint(browser);
        let (census, host, was) = (now.census, now.census.host, baseline.census);
        (census.sessions, census.tabs, census.owners) == (was.sessions, was.tabs, was.owners)
            && host.sessions == was.host.sessions
            && host.frames <= was.host.frames
            && host.subscribers <= was.host.subscribers
            && host.pending <= was.host.pending
            && now.tasks <= baseline.tasks
            && now.fds <= baseline.fds
    })
    .await;
    let now = footprint(browser);
    assert!(settled, "before {baseline:?}\nafter  {now:?}");
    now
}

#[test]
fn opening_and_closing_tabs_and_twenty_restarts_leave_nothing_behind() {
    runtime().block_on(async {
        let base = support::serve_fixtures().await;
        let policy = RestartPolicy {
            delays: vec![Duration::from_millis(50)],
            max_restarts: 100,
            ..RestartPolicy::default()
        };
        let supervisor = Supervisor::start(Launcher::Launch(support::launch_options()), policy)
            .await
            .unwrap();
        let browser =
            Browser::supervised(Arc::clone(&supervisor), BrowserConfig::default()).unwrap();
        let cancel = CancellationToken::new();
        let session = browser
            .open_session(SessionOptions::default())
            .await
            .unwrap();
        let (home, _) = browser
            .open(&session, &format!("{base}/form.html"), false, &cancel)
            .await
            .unwrap();
        let baseline = footprint(&browser);

        // 1000 by hand (LEAK_TABS=1000, about 3 minutes here); fewer in CI.
        let tabs: usize = std::env::var("LEAK_TABS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(100);
        let started = Instant::now();
        for _ in 0..tabs {
            let (tab, _) = browser
                .open(&session, "about:blank", true, &cancel)
                .await
                .unwrap();
            browser.close_tab(&session, &tab).await.unwrap();
        }
        browser.switch_tab(&session, &home).await.unwrap();
        let after_tabs = settles_to(&browser, baseline).await;
        tracing::info!(
            "{tabs} tabs opened and closed in {:?}: {after_tabs:?}",
            started.elapsed()
        );

        for generation in 1..=20u64 {
            let pid = supervisor.host().and_then(|h| h.pid()).unwrap();
            let mut state = supervisor.watch();
            // SAFETY: signalling the test's own browser.
            unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL) };
            tokio::time::timeout(
                Duration::from_secs(20),
                state.wait_for(|s| s.generation() == Some(generation + 1)),
            )
            .await
            .expect("back after the kill")
            .unwrap();
            // Each restart is noticed by the session's next call.
            browser
                .snapshot(&session, &Scope::Page, &cancel)
                .await
                .expect("a snapshot after the restart");
            assert_eq!(browser.take_notices(&session).len(), 1);
        }
        let after_restarts = settles_to(&browser, baseline).await;
        tracing::info!("20 restarts: {after_restarts:?}");
        supervisor.shutdown().await;
    });
}

/// A Chromium of the test's own with a debugging port, as someone else
/// would run one for `--connect`.
fn chromium_on_port(port: u16, profile: &std::path::Path) -> std::process::Child {
    // The headless shell: killed, it leaves nothing in the temp directory.
    let executable = browser_provider::host::find_browser(None, true).unwrap();
    let mut command = std::process::Command::new(executable);
    command.args([
        "--headless",
        "--no-first-run",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-sandbox",
        &format!("--remote-debugging-port={port}"),
        &format!("--user-data-dir={}", profile.display()),
        "about:blank",
    ]);
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

#[test]
fn a_lost_endpoint_fails_fast_while_reconnecting_and_comes_back() {
    runtime().block_on(async {
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        let base = support::serve_fixtures().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let profile = tempfile::tempdir().unwrap();
        let mut first = chromium_on_port(port, profile.path());
        let endpoint = format!("http://127.0.0.1:{port}");
        // The endpoint answers once Chromium is up: the first connection retries.
        let supervisor = {
            let started = Instant::now();
            loop {
                let launcher = Launcher::Connect {
                    endpoint: endpoint.clone(),
                    command_timeout: Duration::from_secs(10),
                };
                match Supervisor::start(launcher, RestartPolicy::default()).await {
                    Ok(supervisor) => break supervisor,
                    Err(error) => {
                        assert!(started.elapsed() < Duration::from_secs(20), "{error}");
                        tokio::task::yield_now().await;
                    }
                }
            }
        };
        let browser =
            Browser::supervised(Arc::clone(&supervisor), BrowserConfig::default()).unwrap();
        let cancel = CancellationToken::new();
        let session = browser
            .open_session(SessionOptions::default())
            .await
            .unwrap();
        browser
            .open(&session, &format!("{base}/form.html"), false, &cancel)
            .await
            .unwrap();

        let mut state = supervisor.watch();
        assert!(support::bounded::end_process_group(
            first.id(),
            Duration::from_secs(5)
        ));
        first.wait().unwrap();
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
        let started = Instant::now();
        let error = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .expect_err("no browser while reconnecting");
        assert_eq!(error.code(), "NOT_CONNECTED", "{error}");
        assert!(error.to_string().contains("reconnecting"), "{error}");
        assert!(started.elapsed() < Duration::from_millis(500), "fails fast");

        // The endpoint comes back (another Chromium on the same port).
        let mut second = chromium_on_port(port, profile.path());
        tokio::time::timeout(
            Duration::from_secs(30),
            state.wait_for(|s| s.generation() == Some(2)),
        )
        .await
        .expect("reconnected")
        .unwrap();
        let snapshot = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .expect("the session carries on");
        assert!(snapshot.url.ends_with("/form.html"), "{}", snapshot.url);
        assert_eq!(browser.take_notices(&session).len(), 1);
        supervisor.shutdown().await;
        assert!(support::bounded::end_process_group(
            second.id(),
            Duration::from_secs(5)
        ));
        second.wait().unwrap();
    });
}
