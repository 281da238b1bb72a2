//! `--only-extension`: the same operations on the same pages through the
//! person's own Chrome (the browser-shell extension over the bridge) and
//! through a Chromium the shell launches itself, both Debian's full
//! `chromium` run headless, so the difference is the extension's path
//! (bridge, service worker, `chrome.debugger`). Goal: within 1.5×.

use std::sync::Arc;
use std::time::Instant;

use browser_provider::browser::SessionOptions;
use browser_provider::host::{ChromiumHost, LaunchOptions};
use browser_provider::page::act::{Action, Target};
use browser_provider::page::screenshot::ScreenshotRequest;
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig, SessionId};
use browser_testkit::person::Person;
use browser_testkit::provider::extension::paired;
use browser_testkit::stats::{median, ms, percentile};
use tokio_util::sync::CancellationToken;

/// One measured operation.
#[derive(Clone, Copy)]
enum Operation {
    /// One bare CDP command (`Runtime.evaluate` of `1`) to the tab: the
    /// floor under every operation, what the path itself costs.
    RoundTrip,
    Snapshot(&'static str),
    Click,
    Type,
    Screenshot,
}

impl Operation {
    fn label(self) -> String {
        match self {
            Self::RoundTrip => "one CDP round trip".into(),
            Self::Snapshot(page) => format!("snapshot {page}"),
            Self::Click => "click (form.html)".into(),
            Self::Type => "type 30 chars".into(),
            Self::Screenshot => "screenshot (article)".into(),
        }
    }
}

const OPERATIONS: [Operation; 6] = [
    Operation::RoundTrip,
    Operation::Snapshot("form.html"),
    Operation::Snapshot("large.html"),
    Operation::Click,
    Operation::Type,
    Operation::Screenshot,
];

/// Runs the comparison and prints one table.
pub async fn compare(base: &str, rounds: usize) {
    let chromium =
        std::env::var("BROWSER_SHELL_PERSON_CHROME").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let own = Arc::new(
        ChromiumHost::launch(LaunchOptions {
            executable: Some(chromium.clone().into()),
            headless: true,
            ..LaunchOptions::default()
        })
        .await
        .expect("launch Chromium"),
    );
    let own_browser = Browser::new(own.clone(), BrowserConfig::default());
    // The person's Chrome as it comes, and with the one feature switch the
    // shell gives its own browser that changes how soon a page answers
    // input (DeferRendererTasksAfterInput, see host/launch.rs): the second
    // isolates what the extension's path costs.
    for (label, extra) in [
        ("as it comes", &[][..]),
        (
            "same feature switch as ours",
            &["--disable-features=DeferRendererTasksAfterInput"][..],
        ),
    ] {
        let persons = Person::start_with(extra).await;
        let (_host, persons_browser, _pairing) = paired(&persons).await;
        table(
            &own_browser,
            &persons_browser,
            base,
            rounds,
            &chromium,
            label,
        )
        .await;
        persons.quit().await;
    }
    own.shutdown().await;
}

async fn table(
    own_browser: &Browser,
    persons_browser: &Browser,
    base: &str,
    rounds: usize,
    chromium: &str,
    label: &str,
) {
    println!(
        "\n## Through the extension (the person's Chrome {label}) vs the shell's own browser ({chromium}, headless; {rounds} rounds after 3 warm-up; ms)"
    );
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "operation", "own p50", "own p95", "ext p50", "ext p95", "ratio"
    );
    for operation in OPERATIONS {
        let mut own_samples = measure(own_browser, base, operation, rounds).await;
        let mut ext_samples = measure(persons_browser, base, operation, rounds).await;
        let own_p50 = median(&mut own_samples);
        let ext_p50 = median(&mut ext_samples);
        println!(
            "{:<24} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>6.2}×",
            operation.label(),
            own_p50,
            percentile(&mut own_samples, 0.95),
            ext_p50,
            percentile(&mut ext_samples, 0.95),
            ext_p50 / own_p50
        );
    }
}

/// `rounds` timings of `operation` in a tab of its own, after 3 unmeasured.
async fn measure(browser: &Browser, base: &str, operation: Operation, rounds: usize) -> Vec<f64> {
    let session = browser
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let page = match operation {
        Operation::Snapshot(page) => page,
        Operation::RoundTrip | Operation::Click | Operation::Type => "form.html",
        Operation::Screenshot => "article.html",
    };
    browser
        .open(&session, &format!("{base}/{page}"), false, &cancel)
        .await
        .unwrap();
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds + 3 {
        let started = Instant::now();
        once(browser, &session, operation, &text, &cancel).await;
        if round >= 3 {
            samples.push(ms(started.elapsed()));
        }
    }
    browser.close_session(&session).await.unwrap();
    samples
}

async fn once(
    browser: &Browser,
    session: &SessionId,
    operation: Operation,
    text: &str,
    cancel: &CancellationToken,
) {
    match operation {
        Operation::RoundTrip => {
            let tab = browser.active_tab(session).unwrap();
            let view = browser.view_of(session, &tab).unwrap();
            browser
                .host()
                .send_command(
                    &view,
                    "Runtime.evaluate",
                    serde_json::json!({"expression": "1"}),
                    std::time::Duration::from_secs(5),
                )
                .await
                .unwrap();
        }
        Operation::Snapshot(_) => {
            browser
                .snapshot(session, &Scope::Page, cancel)
                .await
                .unwrap();
        }
        Operation::Click => {
            let action = Action::Click {
                button: Default::default(),
                count: 1,
                modifiers: vec![],
            };
            browser
                .act(session, &ref_of(text, "Add one"), &action, cancel)
                .await
                .unwrap();
        }
        Operation::Type => {
            let action = Action::Fill {
                text: String::new(),
                submit: false,
            };
            let field = ref_of(text, "Full name");
            browser.act(session, &field, &action, cancel).await.unwrap();
            let action = Action::Type {
                text: "abcdefghijklmnopqrstuvwxyz0123".into(),
                submit: false,
            };
            browser.act(session, &field, &action, cancel).await.unwrap();
        }
        Operation::Screenshot => {
            browser
                .screenshot(session, ScreenshotRequest::default(), cancel)
                .await
                .unwrap();
        }
    }
}

fn ref_of(snapshot: &str, needle: &str) -> Target {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}"));
    let start = line.find("[ref=").expect("a ref") + 5;
    Target::Ref(
        line[start..]
            .split(']')
            .next()
            .unwrap_or_default()
            .parse()
            .expect("a ref"),
    )
}
