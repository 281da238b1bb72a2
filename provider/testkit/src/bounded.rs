//! Waiting with a bound, for tests and benchmarks. A condition with no
//! event to wait on (a file Chromium writes, a tab the extension lists) is
//! looked at every 20 ms until it holds; a process's end is waited on
//! (Linux: through a pidfd).

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

/// Whether `condition` comes to hold within `bound` (looked at every 20 ms).
pub async fn eventually<F, Fut>(bound: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    first_some(bound, || {
        let holds = condition();
        async move { holds.await.then_some(()) }
    })
    .await
    .is_some()
}

/// The first value `probe` gives (looked for every 20 ms); panics naming
/// `what` once `within` has passed without one.
pub async fn wait_for<T>(within: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    first_some(within, || std::future::ready(probe()))
        .await
        .unwrap_or_else(|| panic!("{what} did not come within {within:?}"))
}

/// Kills process group `group` (a browser started as the leader of a group
/// of its own, with every helper it started) and waits up to `bound` until
/// each of its processes has ended: a helper still ending writes its disk
/// cache, which would put back a profile directory removed meanwhile.
/// Whether they all ended within the bound. Blocking, so that `Drop` can
/// use it; event-driven, as a pidfd turns readable when its process ends.
#[cfg(target_os = "linux")]
pub fn end_process_group(group: u32, bound: Duration) -> bool {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return true;
    };
    // SAFETY: signalling a process group the caller started.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let deadline = std::time::Instant::now() + bound;
    members_of(group).into_iter().all(|pid| {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        has_ended_within(pid, left)
    })
}

/// The processes of group `group`, as `/proc` lists them.
#[cfg(target_os = "linux")]
fn members_of(group: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<libc::pid_t>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // After the command name's closing parenthesis: state, parent, group.
            let process_group = stat.rsplit_once(')')?.1.split_whitespace().nth(2)?;
            (process_group.parse::<libc::pid_t>().ok()? == group).then_some(pid)
        })
        .collect()
}

/// Whether process `pid` has ended (or is gone) within `bound`.
#[cfg(target_os = "linux")]
pub fn has_ended_within(pid: libc::pid_t, bound: Duration) -> bool {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let Ok(fd) = i32::try_from(fd) else {
        return true;
    };
    if fd < 0 {
        return true; // no such process
    }
    // SAFETY: the descriptor was just created for us.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut readable = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = i32::try_from(bound.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd, for the length given.
    unsafe { libc::poll(&raw mut readable, 1, millis) > 0 }
}
