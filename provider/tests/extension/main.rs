//! The extension host against a real "person's Chrome": Debian's full
//! Chromium with `assets/extension` loaded, paired through its own pairing
//! page, tabs shared through its own popup. One such browser and one
//! [`ExtensionHost`] serve the whole binary; every test opens its own
//! agent session and tabs.

#![allow(clippy::unwrap_used, missing_debug_implementations)]

#[path = "../support/mod.rs"]
mod support;

mod bridge;
mod faults;
mod person;
mod stress;
mod tabs;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use browser_provider::SessionId;
use browser_provider::browser::{Browser, SessionOptions};
use browser_provider::host::ExtensionHost;
use browser_provider::host::extension::pairing::Pairing;

use person::Person;

/// Everything the tests share.
pub struct Env {
    pub runtime: tokio::runtime::Runtime,
    pub person: Person,
    pub host: Arc<ExtensionHost>,
    pub browser: Browser,
    pub base: String,
    pub pairing: Pairing,
}

/// One test's view of the environment.
#[derive(Clone)]
pub struct Ctx {
    pub env: Arc<Env>,
}

impl Ctx {
    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.env.base)
    }

    pub async fn session(&self) -> SessionId {
        self.env
            .browser
            .open_session(SessionOptions::default())
            .await
            .unwrap()
    }

    pub fn bridge_address(&self) -> SocketAddr {
        self.env.host.address()
    }
}

type TestFn = fn(Ctx) -> Pin<Box<dyn Future<Output = ()> + Send>>;

macro_rules! trials {
    ($($module:ident :: $name:ident),* $(,)?) => {
        vec![$((concat!(stringify!($module), "::", stringify!($name)), (|ctx| Box::pin($module::$name(ctx))) as TestFn)),*]
    };
}

fn main() {
    let tests = trials![
        tabs::an_unshared_tab_is_invisible_and_unreachable,
        tabs::a_shared_tab_is_driven_with_the_person_s_login,
        tabs::agent_tabs_open_in_a_group_and_do_everything,
        tabs::stop_in_the_extension_interrupts_the_agent,
        tabs::a_shared_tab_that_leaves_its_site_is_not_shared,
        tabs::the_person_s_own_input_stops_the_agent,
        tabs::a_tab_whose_debugger_is_taken_away_is_driven_again_once_free,
        tabs::cross_origin_frames_are_seen_and_driven,
        bridge::handshake_abuse_is_refused_and_changes_nothing,
        bridge::the_service_worker_stopping_fails_one_call_and_the_next_works,
        faults::chrome_quitting_fails_the_call_and_it_comes_back,
        stress::a_hundred_worker_stops_during_a_workload,
    ];
    let mut args = libtest_mimic::Arguments::from_args();
    // Stop in the extension holds every session: one test at a time.
    args.test_threads = Some(1);
    if args.list {
        let trials = tests
            .iter()
            .map(|(name, _)| libtest_mimic::Trial::test(*name, || Ok(())))
            .collect();
        libtest_mimic::run(&args, trials).exit();
    }
    let env = start();
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            let env = Arc::clone(&env);
            libtest_mimic::Trial::test(name, move || {
                let ctx = Ctx {
                    env: Arc::clone(&env),
                };
                env.runtime.block_on(test(ctx));
                Ok(())
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    conclusion.exit();
}

fn start() -> Arc<Env> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("test runtime");
    let (person, host, browser, base, pairing) = runtime.block_on(async {
        let base = support::serve_fixtures().await;
        let person = Person::start().await;
        let (host, browser, pairing) = person::paired(&person).await;
        (person, host, browser, base, pairing)
    });
    Arc::new(Env {
        runtime,
        person,
        host,
        browser,
        base,
        pairing,
    })
}

/// An agent's wait that never ends by itself (20 s bound), running in the
/// background: the call in flight when a fault strikes.
pub fn waiting_in_background(
    browser: &Browser,
    session: &SessionId,
) -> tokio::task::JoinHandle<browser_provider::Result<browser_provider::page::wait::Waited>> {
    let browser = browser.clone();
    let session = session.clone();
    tokio::spawn(async move {
        browser
            .wait(
                &session,
                &browser_provider::page::wait::Condition::Text {
                    text: "never on this page".into(),
                    gone: false,
                },
                std::time::Duration::from_secs(20),
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
    })
}
