//! The harness of the provider's test binaries: one Chromium and one
//! fixture server per binary, each test in its own session (its own tabs),
//! the tests run as libtest trials (`harness = false`). A binary names it
//! as its `support` module (`use browser_testkit::provider::harness as
//! support;`), so the test modules two binaries share find it at
//! `crate::support` in both; the bounded waits and the fixture server are
//! re-exported here for them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use browser_provider::browser::SessionOptions;
use browser_provider::host::{ChromiumHost, LaunchOptions};
use browser_provider::{Browser, BrowserConfig, SessionId};
use tokio_util::sync::CancellationToken;

pub use crate::bounded::{self, eventually};
pub use crate::fixtures::{fixtures_dir, hosts_seen, requests_seen, serve_fixtures};

/// Launch options for tests: headless, temporary profile.
pub fn launch_options() -> LaunchOptions {
    LaunchOptions {
        command_timeout: Duration::from_secs(20),
        ..LaunchOptions::default()
    }
}

/// The runtime a test binary's tests share (two workers), with logs to
/// the test's output as `RUST_LOG` asks.
pub fn test_runtime() -> tokio::runtime::Runtime {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("test runtime")
}

/// The environment shared by every test of a binary.
#[derive(Debug)]
pub struct Env {
    /// The runtime every test of the binary runs on.
    pub runtime: tokio::runtime::Runtime,
    /// The Chromium this binary launched; none when the tests drive a
    /// person's Chrome through the extension host instead.
    pub launched: Option<Arc<ChromiumHost>>,
    /// The browser the tests drive.
    pub browser: Browser,
    /// The fixture server's base URL.
    pub base: String,
}

impl Env {
    /// Launches a headless Chromium ([`launch_options`]) driven with the
    /// default configuration, and serves the fixtures.
    pub fn start() -> Arc<Self> {
        Self::start_with(launch_options(), BrowserConfig::default())
    }

    /// A browser launched with `launch`, driven with `config`.
    pub fn start_with(launch: LaunchOptions, config: BrowserConfig) -> Arc<Self> {
        let runtime = test_runtime();
        let (host, browser, base) = runtime.block_on(async {
            let base = serve_fixtures().await;
            let host = Arc::new(ChromiumHost::launch(launch).await.expect("launch Chromium"));
            let browser = Browser::new(host.clone(), config);
            (host, browser, base)
        });
        Arc::new(Self {
            runtime,
            launched: Some(host),
            browser,
            base,
        })
    }

    /// The fixture at `path` on the fixture server.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }
}

/// What each test receives.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The binary's environment.
    pub env: Arc<Env>,
}

impl Ctx {
    /// The shared browser.
    pub fn browser(&self) -> &Browser {
        &self.env.browser
    }

    /// The fixture at `path` on the fixture server.
    pub fn url(&self, path: &str) -> String {
        self.env.url(path)
    }

    /// A new session on the shared browser.
    pub async fn session(&self) -> SessionId {
        self.browser()
            .open_session(SessionOptions::default())
            .await
            .expect("open a session")
    }

    /// A new session with `path` open in its first tab.
    pub async fn session_at(&self, path: &str) -> SessionId {
        let session = self.session().await;
        self.browser()
            .open(&session, &self.url(path), false, &CancellationToken::new())
            .await
            .expect("open the fixture");
        session
    }

    /// Evaluates an expression in the session's active tab and returns its value.
    pub async fn eval(&self, session: &SessionId, script: &str) -> serde_json::Value {
        self.eval_in(self.browser(), session, script).await
    }

    /// Like [`Ctx::eval`], on a browser of the test's own.
    pub async fn eval_in(
        &self,
        browser: &Browser,
        session: &SessionId,
        script: &str,
    ) -> serde_json::Value {
        match browser
            .execute(session, script, vec![], None, &CancellationToken::new())
            .await
        {
            Ok(browser_provider::page::execute::ExecuteResult::Value { value, .. }) => value,
            other => panic!("evaluating {script:?} failed: {other:?}"),
        }
    }
}

/// A test body.
pub type TestFn = fn(Ctx) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Process ids whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmd| String::from_utf8_lossy(&cmd).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// Runs `tests` as this binary's tests (libtest arguments from the command
/// line) on one browser that `start` launches for them all (listing them
/// launches none). Returns the environment, its browser shut down, and
/// how the tests went.
pub fn run_on_one_browser(
    tests: Vec<(&'static str, TestFn)>,
    start: impl FnOnce() -> Arc<Env>,
) -> (Arc<Env>, libtest_mimic::Conclusion) {
    let args = libtest_mimic::Arguments::from_args();
    let (env, conclusion) = run_trials(args, tests, start, |env, test| {
        env.runtime.block_on(test(Ctx {
            env: Arc::clone(env),
        }));
    });
    if let Some(host) = &env.launched {
        env.runtime.block_on(host.shutdown());
    }
    (env, conclusion)
}

/// Runs `tests` as libtest trials with `args`, each by `run` on the one
/// environment `start` makes (listing them makes none, and exits).
pub fn run_trials<E, T>(
    args: libtest_mimic::Arguments,
    tests: Vec<(&'static str, T)>,
    start: impl FnOnce() -> Arc<E>,
    run: fn(&Arc<E>, T),
) -> (Arc<E>, libtest_mimic::Conclusion)
where
    E: Send + Sync + 'static,
    T: Send + 'static,
{
    use libtest_mimic::Trial;
    if args.list {
        let trials = tests
            .iter()
            .map(|(name, _)| Trial::test(*name, || Ok(())))
            .collect();
        libtest_mimic::run(&args, trials).exit();
    }
    let env = start();
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            let env = Arc::clone(&env);
            Trial::test(name, move || {
                run(&env, test);
                Ok(())
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    (env, conclusion)
}
