//! 100 stops of the extension's service worker during a mixed agent
//! workload. Chrome stops an idle worker (no call in flight): 50 stops
//! come between calls, and every call must be answered. A worker can also
//! crash mid-call: 50 stops come at once while calls run; reads cut so are
//! read again, writes cut so fail with NOT_CONNECTED and are never
//! repeated. Nothing is ever done twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use browser_provider::page::act::{Action, Target};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::page::screenshot::ScreenshotRequest;
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserError, SessionId};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::Ctx;

/// Stops between calls, then stops while calls run.
const IDLE_STOPS: usize = 50;
const BUSY_STOPS: usize = 50;

/// Calls the workload makes between two stops (at least).
const CALLS_BETWEEN_STOPS: u64 = 2;

/// One call of the workload: a snapshot, a click, a script that logs its
/// number, or a screenshot, by turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Snapshot,
    Click,
    Script,
    Screenshot,
}

impl Kind {
    fn of(call: u64) -> Self {
        match call % 4 {
            0 => Self::Snapshot,
            1 => Self::Click,
            2 => Self::Script,
            _ => Self::Screenshot,
        }
    }

    fn writes(self) -> bool {
        matches!(self, Self::Click | Self::Script)
    }
}

/// What the workload did.
#[derive(Default, Debug)]
struct Tally {
    answered: u64,
    /// Failed calls: their kind and error.
    failed: Vec<(Kind, BrowserError)>,
    clicks_answered: u64,
    clicks_failed: u64,
    scripts_answered: Vec<u64>,
    scripts_failed: Vec<u64>,
}

impl Tally {
    fn total(&self) -> u64 {
        self.answered + self.failed.len() as u64
    }

    fn summary(&self) -> String {
        let codes: Vec<String> = self
            .failed
            .iter()
            .map(|(kind, error)| {
                let cut = matches!(error, BrowserError::CallCut { .. });
                format!(
                    "{kind:?} {}{}",
                    error.code(),
                    if cut { " (cut)" } else { "" }
                )
            })
            .collect();
        format!(
            "{} of {} answered; failed: {codes:?}",
            self.answered,
            self.total()
        )
    }
}

struct Workload {
    browser: Browser,
    session: SessionId,
    add_one: Target,
}

impl Workload {
    async fn call(&self, call: u64, tally: &mut Tally) {
        let cancel = CancellationToken::new();
        let kind = Kind::of(call);
        let outcome = match kind {
            Kind::Snapshot => self
                .browser
                .snapshot(&self.session, &Scope::Page, &cancel)
                .await
                .map(|_| ()),
            Kind::Click => self
                .browser
                .act(
                    &self.session,
                    &self.add_one,
                    &Action::Click {
                        button: Default::default(),
                        count: 1,
                        modifiers: vec![],
                    },
                    &cancel,
                )
                .await
                .map(|_| ()),
            Kind::Script => self
                .browser
                .execute(
                    &self.session,
                    &format!("window.__log.push({call}); 1"),
                    vec![],
                    None,
                    &cancel,
                )
                .await
                .map(|_| ()),
            Kind::Screenshot => self
                .browser
                .screenshot(&self.session, ScreenshotRequest::default(), &cancel)
                .await
                .map(|_| ()),
        };
        let ok = outcome.is_ok();
        match kind {
            Kind::Click if ok => tally.clicks_answered += 1,
            Kind::Click => tally.clicks_failed += 1,
            Kind::Script if ok => tally.scripts_answered.push(call),
            Kind::Script => tally.scripts_failed.push(call),
            _ => {}
        }
        match outcome {
            Ok(()) => tally.answered += 1,
            Err(error) => tally.failed.push((kind, error)),
        }
    }
}

fn value_of(result: &ExecuteResult) -> &serde_json::Value {
    match result {
        ExecuteResult::Value { value, .. } => value,
        other => panic!("the script threw: {other:?}"),
    }
}

/// Stops the extension's worker, as Chrome does; with `settled`, returns
/// once the host saw the bridge go (Chrome stops a worker that is idle,
/// and the agent's next call comes later).
async fn stop_worker(ctx: &Ctx, settled: bool) {
    let person = &ctx.env.person;
    let mut connected = ctx.env.host.watch_connected();
    let Some(worker) = person.service_worker().await else {
        // Not back from the last stop yet: it comes by itself.
        tokio::time::timeout(Duration::from_secs(10), connected.wait_for(|c| *c))
            .await
            .expect("the extension reconnects")
            .unwrap();
        return;
    };
    let _ = person
        .cdp
        .send(None, "Target.closeTarget", json!({"targetId": worker}))
        .await;
    if settled {
        tokio::time::timeout(Duration::from_secs(10), connected.wait_for(|c| !*c))
            .await
            .expect("the host sees the bridge go")
            .unwrap();
    }
}

pub async fn a_hundred_worker_stops_during_a_workload(ctx: Ctx) {
    let session = ctx.session().await;
    let browser = ctx.env.suite.browser.clone();
    let cancel = CancellationToken::new();
    browser
        .open(&session, &ctx.url("form.html?stress"), false, &cancel)
        .await
        .unwrap();
    browser
        .execute(&session, "window.__log = []; 1", vec![], None, &cancel)
        .await
        .unwrap();
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    let add_one = {
        let line = text.lines().find(|l| l.contains("Add one")).unwrap();
        let start = line.find("[ref=").unwrap() + 5;
        Target::Ref(line[start..].split(']').next().unwrap().parse().unwrap())
    };
    let workload = Arc::new(Workload {
        browser: browser.clone(),
        session: session.clone(),
        add_one,
    });

    // Stops between calls (Chrome's idle stop): every call is answered.
    let started = tokio::time::Instant::now();
    let mut idle = Tally::default();
    let mut call = 0_u64;
    for _ in 0..IDLE_STOPS {
        stop_worker(&ctx, true).await;
        for _ in 0..CALLS_BETWEEN_STOPS {
            call += 1;
            workload.call(call, &mut idle).await;
        }
    }
    let idle_took = started.elapsed();

    // Stops while calls run (a crash mid-call).
    let started = tokio::time::Instant::now();
    let (calls_tx, mut calls) = watch::channel(call);
    let done = Arc::new(AtomicBool::new(false));
    let running = {
        let workload = Arc::clone(&workload);
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            let mut busy = Tally::default();
            while !done.load(Ordering::SeqCst) {
                call += 1;
                workload.call(call, &mut busy).await;
                calls_tx.send_replace(call);
            }
            busy
        })
    };
    for stop in 0..BUSY_STOPS {
        let from = *calls.borrow_and_update();
        tokio::time::timeout(
            Duration::from_secs(30),
            calls.wait_for(|made| *made >= from + CALLS_BETWEEN_STOPS),
        )
        .await
        .unwrap_or_else(|_| panic!("the workload stalled before stop {stop}"))
        .unwrap();
        stop_worker(&ctx, false).await;
    }
    done.store(true, Ordering::SeqCst);
    let busy = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the workload ends")
        .unwrap();
    let busy_took = started.elapsed();
    // The checks below read the page once the bridge has gone and come
    // back from one more stop: the workload's own last stop may still be
    // under way, and a read then would be cut like any call in flight.
    stop_worker(&ctx, true).await;

    tracing::info!(
        "{IDLE_STOPS} stops between calls ({idle_took:.1?}): {}",
        idle.summary()
    );
    tracing::info!(
        "{BUSY_STOPS} stops during calls ({busy_took:.1?}): {}",
        busy.summary()
    );
    assert!(
        idle.answered * 100 >= idle.total() * 99,
        "stops between calls: {}",
        idle.summary()
    );
    for (kind, error) in &busy.failed {
        assert!(
            kind.writes() && matches!(error, BrowserError::CallCut { .. }),
            "only writes cut by a stop fail, saying so ({kind:?}): {error}"
        );
    }

    // Nothing was done twice: each answered script logged once, a cut one
    // at most once; the clicks counted lie between the answered ones and
    // every one tried.
    let both = [&idle, &busy];
    let log = browser
        .execute(
            &session,
            "JSON.stringify(window.__log)",
            vec![],
            None,
            &cancel,
        )
        .await
        .unwrap();
    let logged: Vec<u64> = serde_json::from_str(value_of(&log).as_str().unwrap()).unwrap();
    for id in both.iter().flat_map(|t| &t.scripts_answered) {
        assert_eq!(logged.iter().filter(|l| *l == id).count(), 1, "script {id}");
    }
    let distinct: std::collections::HashSet<_> = logged.iter().collect();
    assert_eq!(
        logged.len(),
        distinct.len(),
        "a script ran twice: {logged:?}"
    );
    let count = browser
        .execute(
            &session,
            "Number(document.getElementById('count').textContent)",
            vec![],
            None,
            &cancel,
        )
        .await
        .unwrap();
    let count = value_of(&count).as_u64().unwrap();
    let answered: u64 = both.iter().map(|t| t.clicks_answered).sum();
    let failed: u64 = both.iter().map(|t| t.clicks_failed).sum();
    assert!(
        (answered..=answered + failed).contains(&count),
        "{count} clicks counted, {answered} answered, {failed} cut"
    );
    browser.close_session(&session).await.unwrap();
}
