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
use std::time::Duration;

use browser_provider::SessionId;
use browser_provider::browser::{Browser, BrowserConfig, SessionOptions};
use browser_provider::host::extension::bridge::BridgeConfig;
use browser_provider::host::extension::pairing::Pairing;
use browser_provider::host::{ExtensionHost, ExtensionOptions};

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
        let (host, browser, pairing) = paired(&person).await;
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

/// A host and browser of their own on a free port, paired with `person`'s
/// extension through its pairing page, once the extension connected.
pub async fn paired(person: &Person) -> (Arc<ExtensionHost>, Browser, Pairing) {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let pairing = Pairing::generate(port).unwrap();
    let host = Arc::new(
        ExtensionHost::start(ExtensionOptions {
            bridge: BridgeConfig {
                address: SocketAddr::from(([127, 0, 0, 1], port)),
                pairing: pairing.clone(),
                extension_ids: vec![person::EXTENSION_ID.into()],
                shell: format!("test-shell-{port}"),
            },
            command_timeout: Duration::from_secs(10),
        })
        .await
        .expect("start the extension host"),
    );
    person.pair(&pairing.link()).await;
    if host.connected(Duration::from_secs(15)).await.is_err() {
        let targets = person
            .cdp
            .send(None, "Target.getTargets", serde_json::json!({}))
            .await;
        let storage = person
            .in_popup("chrome.storage.local.get().then(x => JSON.stringify(x))")
            .await;
        let status = person
            .in_popup("chrome.runtime.sendMessage({type:'status'}).then(x => JSON.stringify(x))")
            .await;
        panic!("the extension did not connect once paired:\n{targets:?}\n{storage}\n{status}");
    }
    let browser = Browser::new(host.clone(), BrowserConfig::default());
    (host, browser, pairing)
}
