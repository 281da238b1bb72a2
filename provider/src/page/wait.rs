//! Waiting for the page: an element, text, a URL, a load state, a script
//! predicate or stillness — bounded, cancellable, and driven by events
//! (DOM mutations, page events), not by polling. A wait that runs out
//! fails with `TIMEOUT` saying what it last saw.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use super::{Budget, Page};
use crate::cdp::EventStream;
use crate::error::{BrowserError, Result};
use crate::snapshot::Ref;

/// How long the DOM must stay unchanged to count as stable.
const QUIET: Duration = Duration::from_millis(500);

/// What an element must be for a wait on it to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElementState {
    /// On the page and visible (the default).
    #[default]
    Visible,
    /// Gone or invisible.
    Hidden,
    /// Visible and not disabled.
    Enabled,
}

impl ElementState {
    fn name(self) -> &'static str {
        match self {
            Self::Visible => "visible",
            Self::Hidden => "hidden",
            Self::Enabled => "enabled",
        }
    }
}

/// How far a page must have loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadState {
    /// `DOMContentLoaded`.
    DomContentLoaded,
    /// `load`.
    Load,
    /// `load`, then no request in flight for half a second.
    NetworkIdle,
}

/// One condition to wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// Text appears in (or, with `gone`, disappears from) the visible page.
    Text {
        /// The text.
        text: String,
        /// Wait for it to disappear instead.
        gone: bool,
    },
    /// The element behind a ref reaches a state.
    Ref {
        /// The ref.
        reference: Ref,
        /// The state.
        state: ElementState,
    },
    /// An element with exactly this role and name reaches a state (for
    /// `Hidden`: every such element).
    Role {
        /// Role.
        role: String,
        /// Exact accessible name.
        name: String,
        /// The state.
        state: ElementState,
    },
    /// The page's URL contains this text.
    Url(String),
    /// The page has loaded this far.
    Load(LoadState),
    /// A JavaScript expression in the page is truthy.
    Script(String),
    /// A request whose URL contains this has ended (finished or failed),
    /// and none like it is in flight.
    Request(String),
    /// The DOM has not changed for half a second.
    Stable,
}

/// A wait that ended because its condition held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waited {
    /// How long it took.
    pub elapsed: Duration,
    /// What held, for the model.
    pub detail: String,
}

#[derive(Deserialize)]
struct Seen {
    ok: bool,
    #[serde(default)]
    seen: serde_json::Value,
}

/// Waits until `condition` holds in `page`, at most `timeout`.
///
/// # Errors
/// `TIMEOUT` naming the condition and what was last seen; `ABORTED` or
/// `HUMAN_INTERVENED` when the budget says stop; `INVALID_ARGUMENT` for a
/// ref this tab never issued; `EXECUTE_FAILED` for a script that throws.
pub async fn wait(
    page: &Page,
    condition: &Condition,
    timeout: Duration,
    budget: &Budget,
) -> Result<Waited> {
    let started = Instant::now();
    let bound_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let expired = |what: String| BrowserError::timeout(what, timeout);
    let detail = match condition {
        Condition::Text { text, gone } => {
            let spec = json!({"kind": "text", "text": text, "gone": gone});
            let seen = across_navigations(page, started + timeout, budget, |bound_ms| {
                in_world(page, None, &spec, bound_ms, budget)
            })
            .await?;
            let verb = if *gone { "disappear" } else { "appear" };
            if !seen.ok {
                return Err(expired(format!(
                    "waiting for the text {text:?} to {verb} (the page now reads: {})",
                    seen.seen
                )));
            }
            format!("the text {text:?} did {verb}")
        }
        Condition::Ref { reference, state } => {
            let frame = {
                let tab = page.agent.lock().await;
                match (tab.record(reference), tab.retired(reference)) {
                    (Some(record), _) => record.frame.clone(),
                    // Its document is gone: it can only be hidden now.
                    (None, Some(_)) if *state == ElementState::Hidden => {
                        return Ok(Waited {
                            elapsed: started.elapsed(),
                            detail: format!("{reference} is gone (its page was replaced)"),
                        });
                    }
                    (None, Some(_)) => {
                        return Err(BrowserError::invalid(
                            "ref",
                            format!("{reference} belonged to a page that is gone; take a snapshot"),
                        ));
                    }
                    (None, None) => {
                        return Err(BrowserError::invalid(
                            "ref",
                            format!(
                                "{reference} was not issued in this tab; take a snapshot and use a ref from it"
                            ),
                        ));
                    }
                }
            };
            let spec = json!({"kind": "ref", "ref": reference, "state": state.name()});
            let seen = in_world(page, frame.as_deref(), &spec, bound_ms, budget).await?;
            if !seen.ok {
                return Err(expired(format!(
                    "waiting for {reference} to be {} (it is {})",
                    state.name(),
                    seen.seen
                )));
            }
            format!("{reference} is {}", state.name())
        }
        Condition::Role { role, name, state } => {
            let spec = json!({"kind": "role", "role": role, "name": name, "state": state.name()});
            let seen = across_navigations(page, started + timeout, budget, |bound_ms| {
                in_world(page, None, &spec, bound_ms, budget)
            })
            .await?;
            if !seen.ok {
                return Err(expired(format!(
                    "waiting for {role} {name:?} to be {} (seen: {})",
                    state.name(),
                    seen.seen
                )));
            }
            format!("{role} {name:?} is {}", state.name())
        }
        Condition::Url(part) => {
            let url =
                wait_for_page(page, budget, timeout, |url, _| url.contains(part.as_str())).await?;
            match url {
                Ok(url) => format!("the URL is {url}"),
                Err(url) => {
                    return Err(expired(format!(
                        "waiting for the URL to contain {part:?} (it is {url})"
                    )));
                }
            }
        }
        Condition::Load(state) => {
            let wanted = match state {
                LoadState::Load | LoadState::NetworkIdle => ["complete", "complete"],
                LoadState::DomContentLoaded => ["interactive", "complete"],
            };
            let reached =
                wait_for_page(page, budget, timeout, |_, ready| wanted.contains(&ready)).await?;
            let name = match state {
                LoadState::Load | LoadState::NetworkIdle => "load",
                LoadState::DomContentLoaded => "DOMContentLoaded",
            };
            if let Err(url) = reached {
                return Err(expired(format!("waiting for {name} of {url}")));
            }
            if *state == LoadState::NetworkIdle {
                // Short of the budget's own deadline, so the message says what was seen.
                let bound = budget.remaining().saturating_sub(Duration::from_millis(20));
                let quiet = budget
                    .run("network idle", async {
                        Ok(tokio::time::timeout(bound, network_quiet(page)).await)
                    })
                    .await?;
                if quiet.is_err() {
                    let busy = *page.watch_in_flight().borrow();
                    return Err(expired(format!(
                        "waiting for the network to be quiet ({busy} request{} still in flight)",
                        if busy == 1 { "" } else { "s" }
                    )));
                }
                return Ok(Waited {
                    elapsed: started.elapsed(),
                    detail: format!(
                        "the page loaded and no request was in flight for {} ms",
                        QUIET.as_millis()
                    ),
                });
            }
            format!("the page reached {name}")
        }
        Condition::Script(expression) => {
            let seen = across_navigations(page, started + timeout, budget, |bound_ms| {
                script(page, expression, bound_ms, budget)
            })
            .await?;
            if !seen.ok {
                return Err(expired(format!(
                    "waiting for the script to be true (last value: {})",
                    seen.seen
                )));
            }
            "the script is true".to_owned()
        }
        Condition::Request(part) => {
            let mut changes = page.watch_in_flight();
            let settled = budget
                .run("wait", async {
                    let settle = async {
                        loop {
                            changes.borrow_and_update();
                            if page.network_settled(part) == (true, false) {
                                return;
                            }
                            if changes.changed().await.is_err() {
                                return;
                            }
                        }
                    };
                    Ok(tokio::time::timeout(timeout, settle).await)
                })
                .await?;
            if settled.is_err() {
                let (ended, in_flight) = page.network_settled(part);
                let seen = match (ended, in_flight) {
                    (_, true) => "one is still in flight",
                    (false, false) => "no such request was made",
                    (true, false) => "it has ended",
                };
                return Err(expired(format!(
                    "waiting for a request to a URL containing {part:?} to end ({seen})"
                )));
            }
            format!("a request to a URL containing {part:?} has ended")
        }
        Condition::Stable => {
            let id = next_wait_id();
            let expression = format!(
                "__browserShell.waitStable({}, {bound_ms}, {id})",
                QUIET.as_millis()
            );
            let evaluated = page
                .world(None)
                .evaluate(
                    page,
                    &budget.grace(timeout + Duration::from_secs(1)),
                    &expression,
                )
                .await;
            let end = format!("__browserShell.endWait({id})");
            end_page_wait(page, None, true, end, &evaluated).await;
            let stable = evaluated?;
            if stable.as_bool() != Some(true) {
                return Err(expired(
                    "waiting for the page to stop changing (it kept changing)".into(),
                ));
            }
            format!("the page did not change for {} ms", QUIET.as_millis())
        }
    };
    Ok(Waited {
        elapsed: started.elapsed(),
        detail,
    })
}

/// Resolves once no request of the page has been in flight for [`QUIET`].
async fn network_quiet(page: &Page) {
    let mut in_flight = page.watch_in_flight();
    loop {
        if *in_flight.borrow_and_update() == 0 {
            tokio::select! {
                () = tokio::time::sleep(QUIET) => return,
                changed = in_flight.changed() => if changed.is_err() { return },
            }
        } else if in_flight.changed().await.is_err() {
            return;
        }
    }
}

/// Runs `attempt` (given the milliseconds left until `deadline`) and, when
/// the page navigates in the middle of it (the document, and the wait in
/// it, gone: a reload, a redirect, a hot reload), runs it again in the next
/// document, until the deadline.
async fn across_navigations<T, F, Fut>(
    page: &Page,
    deadline: Instant,
    budget: &Budget,
    mut attempt: F,
) -> Result<T>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut events: EventStream = page.events().await?;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let bound_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        match attempt(bound_ms).await {
            Err(error) if navigated_away(&error) && !left.is_zero() => {
                tracing::debug!(%error, "the page navigated during a wait; waiting in the new document");
                // The next document's first sign of life, within the time left.
                budget
                    .run("wait", async {
                        let next = async {
                            while let Some(event) = events.recv().await {
                                if matches!(
                                    event.method.as_str(),
                                    "Runtime.executionContextCreated"
                                        | "Page.domContentEventFired"
                                        | "Page.loadEventFired"
                                ) {
                                    break;
                                }
                            }
                        };
                        let _ = tokio::time::timeout(left, next).await;
                        Ok(())
                    })
                    .await?;
            }
            other => return other,
        }
    }
}

/// The evaluation died with its document (the page navigated meanwhile).
fn navigated_away(error: &BrowserError) -> bool {
    match error {
        BrowserError::Protocol { message, .. } | BrowserError::ExecuteFailed { message } => {
            message.contains("Inspected target navigated or closed")
                || message.contains("Execution context was destroyed")
                || message.contains("Cannot find context")
        }
        _ => false,
    }
}

/// A new id for a page-side wait, so that a call that gives up can end it.
fn next_wait_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// How long ending a page-side wait may take (the page may be busy).
const END_WAIT_BOUND: Duration = Duration::from_secs(1);

/// When the call stopped waiting (cancelled, or out of time) while the
/// page still waits: ends the page-side wait `expression` names at once,
/// so that its observer, timers and frame loop stop with the call instead
/// of at their own bound.
async fn end_page_wait<T>(
    page: &Page,
    frame: Option<&str>,
    ours: bool,
    expression: String,
    result: &Result<T>,
) {
    if !matches!(
        result,
        Err(BrowserError::Aborted | BrowserError::Timeout { .. } | BrowserError::HumanIntervened)
    ) {
        return;
    }
    let budget = Budget::new(
        "end a wait",
        END_WAIT_BOUND,
        tokio_util::sync::CancellationToken::new(),
    );
    let ended = if ours {
        page.world(frame).evaluate(page, &budget, &expression).await
    } else {
        page.evaluate_value(&budget, expression).await
    };
    if let Err(error) = ended {
        tracing::debug!(%error, "could not end a page-side wait (its document may be gone)");
    }
}

/// Runs `__browserShell.waitFor` in our world of `frame`.
async fn in_world(
    page: &Page,
    frame: Option<&str>,
    spec: &serde_json::Value,
    bound_ms: u64,
    budget: &Budget,
) -> Result<Seen> {
    let id = next_wait_id();
    let expression = format!("__browserShell.waitFor({spec}, {bound_ms}, {id})");
    let evaluated = page.world(frame).evaluate(page, budget, &expression).await;
    let end = format!("__browserShell.endWait({id})");
    end_page_wait(page, frame, true, end, &evaluated).await;
    let value = evaluated?;
    serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
        message: format!("the wait returned an unexpected shape: {e}"),
    })
}

/// Waits for a predicate, called with it, the bound and an id (see the file).
const WAIT_FOR_SCRIPT_JS: &str = include_str!("../js/scripts/wait_for_script.js");

/// Ends such a wait by its id (see the file).
const END_SCRIPT_WAIT_JS: &str = include_str!("../js/scripts/end_script_wait.js");

/// A script predicate in the page's own world (it may read the page's
/// variables), checked now, after DOM changes and once per frame.
async fn script(page: &Page, expression: &str, bound_ms: u64, budget: &Budget) -> Result<Seen> {
    // The newlines end any line comment the agent's expression (or the
    // script file) closes with.
    let id = next_wait_id();
    let source = format!("({WAIT_FOR_SCRIPT_JS}\n)(() => ({expression}\n), {bound_ms}, {id})");
    let evaluated = page.evaluate_value(budget, source).await;
    let end = format!("({END_SCRIPT_WAIT_JS}\n)({id})");
    end_page_wait(page, None, false, end, &evaluated).await;
    let value = evaluated?;
    serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
        message: format!("the wait returned an unexpected shape: {e}"),
    })
}

/// Re-checks the page's URL and readiness after each navigation or load
/// event until `holds` says yes. `Ok(Ok(url))` when it held, `Ok(Err(url))`
/// at the bound.
async fn wait_for_page(
    page: &Page,
    budget: &Budget,
    timeout: Duration,
    holds: impl Fn(&str, &str) -> bool,
) -> Result<std::result::Result<String, String>> {
    let mut events: EventStream = page.events().await?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut url = String::new();
    loop {
        match page
            .evaluate_value(budget, "[location.href, document.readyState]".to_owned())
            .await
        {
            Ok(now) => {
                url = now[0].as_str().unwrap_or_default().to_owned();
                let ready = now[1].as_str().unwrap_or_default();
                if holds(&url, ready) {
                    return Ok(Ok(url));
                }
            }
            // Between documents: the next page event tells when to look again.
            Err(error) if navigated_away(&error) => {}
            Err(error) => return Err(error),
        }
        // The next page event that could change the answer.
        loop {
            let event = budget
                .run("wait", async {
                    Ok(tokio::time::timeout_at(deadline, events.recv()).await)
                })
                .await?;
            match event {
                Err(_) => return Ok(Err(url)),
                Ok(None) => {
                    return Err(BrowserError::TabNotFound {
                        tab: "(the tab closed while waiting)".into(),
                    });
                }
                Ok(Some(event))
                    if matches!(
                        event.method.as_str(),
                        "Page.frameNavigated"
                            | "Page.navigatedWithinDocument"
                            | "Page.domContentEventFired"
                            | "Page.loadEventFired"
                    ) =>
                {
                    break;
                }
                Ok(Some(_)) => {}
            }
        }
    }
}
