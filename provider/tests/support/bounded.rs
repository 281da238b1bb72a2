//! Waiting on a condition with a bound, for tests and benchmarks: what
//! they wait for has no event to wait on (a file Chromium writes, a tab
//! the extension lists), so it is looked at every 20 ms until it holds.

use std::future::Future;
use std::time::Duration;

/// How often a condition is looked at again.
const EVERY: Duration = Duration::from_millis(20);

/// The first `Some` that `attempt` gives, looked for every 20 ms; `None`
/// once `bound` has passed without one.
pub async fn first_some<T, F, Fut>(bound: Duration, mut attempt: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if let Some(value) = attempt().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep_until(tokio::time::Instant::now() + EVERY).await;
    }
}

/// The first success of `attempt`, tried every 20 ms; panics with the last
/// failure once `bound` has passed without one.
pub async fn first_ok<T, E, F, Fut>(bound: Duration, mut attempt: F) -> T
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let last = std::sync::Mutex::new(String::new());
    let found = first_some(bound, || {
        let tried = attempt();
        let last = &last;
        async move {
            tried
                .await
                .map_err(|error| {
                    *last.lock().unwrap_or_else(|p| p.into_inner()) = error.to_string()
                })
                .ok()
        }
    })
    .await;
    found.unwrap_or_else(|| {
        let last = last.lock().unwrap_or_else(|p| p.into_inner());
        panic!("still failing after {bound:?}: {last}")
    })
}

/// Kills process group `group` (a browser started as the leader of a group
/// of its own, with every helper it started) and waits up to `bound` until
/// none of it runs any more: a helper still ending writes its disk cache,
/// which would put back a profile directory removed meanwhile. Whether it
/// ended within the bound. Blocking, so that `Drop` can use it.
pub fn end_process_group(group: u32, bound: Duration) -> bool {
    if let Ok(group) = libc::pid_t::try_from(group) {
        // SAFETY: signalling a process group the caller started.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    let deadline = std::time::Instant::now() + bound;
    while group_runs(group) {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(EVERY);
    }
    true
}

/// Whether a process of group `group` still runs (a zombie, ended and not
/// yet reaped, does not).
fn group_runs(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // After the command name's closing parenthesis: state, parent, group.
        let mut fields = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace();
        let state = fields.next();
        let _parent = fields.next();
        let process_group = fields.next().and_then(|field| field.parse::<u32>().ok());
        process_group == Some(group) && state != Some("Z")
    })
}
