//! Connection cycles: the things that break the extension's connection in
//! a person's day, each followed by the time until an agent's write works
//! again. Real processes: `browser-shell mcp --browser extension` shells,
//! the person's Chrome (Debian's Chromium with the extension), over native
//! messaging (the host manifest in that Chrome's profile, nothing paired)
//! or over the paired WebSocket (no native host installed).
//!
//! The first working call after each break is a write whose effect a
//! counting page server sees ([`Writes`]): the agent opens a page of its
//! own (`/write/<n>`, a new `n` for every attempt), then clicks its Count
//! button (`/click/<n>`), then closes the tab. When the rig finishes (Chrome
//! gone, so nothing can arrive late), [`Tally::check`] holds every write to
//! what its call answered: done exactly once if it answered done, at most
//! once if it answered an error, never twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::json;

use super::person::Person;
use super::{Client, POLL, Setup, install_native_host};

/// How the extension reaches the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bridge {
    /// Chrome's native messaging.
    Native,
    /// The paired WebSocket on loopback.
    Paired,
}

/// One thing that breaks the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cycle {
    /// The shell that holds the bridge is killed and started again.
    ShellRestart,
    /// A second shell joined the first; the first exits; the client of
    /// the second starts it again (it becomes the owner).
    OwnerExit,
    /// Chrome quits and the person starts it again.
    ChromeRestart,
    /// Chrome stops the extension's service worker.
    WorkerStop,
    /// The person pairs again (`extension pair`, the link opened); over
    /// native messaging, nothing is paired and the call works on.
    PairAgain,
}

impl Cycle {
    /// Every kind, in the order the cycles rotate through them.
    pub const ALL: [Self; 5] = [
        Self::ShellRestart,
        Self::OwnerExit,
        Self::ChromeRestart,
        Self::WorkerStop,
        Self::PairAgain,
    ];
}

/// What the page server saw: how many times each page was served.
type Seen = Arc<Mutex<HashMap<String, u32>>>;

/// The agents' writes: a page server on loopback that counts every page it
/// serves, and what each write's call answered.
pub struct Writes {
    /// `http://127.0.0.1:PORT` of the page server.
    base: String,
    /// Pages served, by path (`/write/3`, `/click/3`), for the rig's life.
    seen: Seen,
    /// The next write's number.
    next: u64,
    /// Every write tried: its path and whether its call answered done.
    answered: Vec<(String, bool)>,
    /// How long each first write done after a break took itself (its
    /// call alone, from asking to the answer): the part of the time to the
    /// first working write that is the write's own work.
    write_times: Vec<Duration>,
}

impl Writes {
    /// Starts the page server.
    async fn serve() -> Self {
        async fn page(
            State(seen): State<Seen>,
            Path((kind, n)): Path<(String, u64)>,
        ) -> impl IntoResponse {
            let body = match kind.as_str() {
                "write" => format!(
                    "<!doctype html><title>write {n}</title><h1>write {n}</h1>\
                     <form action=\"/click/{n}\"><button>Count</button></form>"
                ),
                "click" => format!("<!doctype html><title>counted {n}</title><h1>counted {n}</h1>"),
                _ => {
                    return (axum::http::StatusCode::NOT_FOUND, Html(String::new()))
                        .into_response();
                }
            };
            *seen
                .lock()
                .unwrap()
                .entry(format!("/{kind}/{n}"))
                .or_default() += 1;
            (
                [(axum::http::header::CACHE_CONTROL, "no-store")],
                Html(body),
            )
                .into_response()
        }
        let seen = Seen::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new()
            .route("/{kind}/{n}", get(page))
            .with_state(Arc::clone(&seen));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base,
            seen,
            next: 1,
            answered: Vec::new(),
            write_times: Vec::new(),
        }
    }

    /// Opens the next write's page until a call answers done (every
    /// [`POLL`], 15 s at most): each attempt is a write of its own, so an
    /// attempt that answered NOT_CONNECTED yet took effect is told apart
    /// from one done twice. Then clicks the page's Count button and closes
    /// the tab (at once: the connection is up). How long until the first
    /// write was done.
    pub async fn write_within(&mut self, client: &mut Client) -> Duration {
        let started = Instant::now();
        let n = loop {
            let n = self.next;
            self.next += 1;
            let asked = Instant::now();
            let (text, is_error) = client
                .call(
                    "browser_open",
                    json!({"url": format!("{}/write/{n}", self.base)}),
                )
                .await;
            self.answered.push((format!("/write/{n}"), !is_error));
            if !is_error {
                self.write_times.push(asked.elapsed());
                assert!(text.contains(&format!("write {n}")), "{text}");
                break n;
            }
            // Not connected, or cut by the worker's end (Chrome's "No SW"):
            // not done either way, and asked again.
            assert!(
                text.contains("NOT_CONNECTED") || text.contains("CALL_CUT"),
                "{text}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "no write done within 15 s: {text}"
            );
            tokio::time::sleep(POLL).await;
        };
        let took = started.elapsed();
        let (text, is_error) = client
            .call(
                "browser_act",
                json!({"action": "click", "role": "button", "name": "Count"}),
            )
            .await;
        self.answered.push((format!("/click/{n}"), !is_error));
        assert!(
            !is_error && text.contains(&format!("counted {n}")),
            "{text}"
        );
        let (text, is_error) = client.call("browser_close_tab", json!({})).await;
        assert!(!is_error, "{text}");
        took
    }

    /// What the server saw of the writes, held to their answers.
    fn tally(&self) -> Tally {
        let seen = self.seen.lock().unwrap().clone();
        let mut tally = Tally::default();
        for (path, done) in &self.answered {
            let times = seen.get(path).copied().unwrap_or(0);
            if *done {
                tally.done += 1;
            } else {
                tally.errored += 1;
                tally.errored_but_done += u32::from(times == 1);
            }
            tally.counted += times;
            if times > 1 || (*done && times == 0) {
                tally.wrong.push(format!(
                    "{path}: answered {}, served {times} times",
                    if *done { "done" } else { "an error" }
                ));
            }
        }
        for (path, times) in &seen {
            if !self.answered.iter().any(|(tried, _)| tried == path) {
                tally
                    .wrong
                    .push(format!("{path}: never asked for, served {times} times"));
            }
        }
        tally
    }
}

/// The writes of a run: how their calls answered, and what the page
/// server counted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Writes whose call answered done.
    pub done: u32,
    /// Writes whose call answered an error (NOT_CONNECTED while the
    /// connection was down).
    pub errored: u32,
    /// Of those, the ones the server saw anyway.
    pub errored_but_done: u32,
    /// Pages the server served for the writes, in all.
    pub counted: u32,
    /// Each write held to its answer that failed: done twice, answered
    /// done and never seen, or seen and never asked for.
    pub wrong: Vec<String>,
}

impl Tally {
    /// Every write answered done was done exactly once; every one
    /// answered an error at most once: none replayed, none lost. So
    /// `done <= counted <= done + errored`.
    pub fn check(&self) {
        assert!(self.wrong.is_empty(), "{self:?}");
        assert!(
            self.done <= self.counted && self.counted <= self.done + self.errored,
            "{self:?}"
        );
    }
}

/// A shell, the person's Chrome and the bridge between them.
pub struct Rig {
    setup: Setup,
    profile: tempfile::TempDir,
    bridge: Bridge,
    person: Option<Person>,
    owner: Option<Client>,
    /// The paired port (the WebSocket's), to pair again on it.
    port: Option<u16>,
    /// The agents' writes and the page server that counts them.
    writes: Writes,
}

impl Rig {
    /// Chrome first, then the shell; returns once a write works.
    pub async fn start(bridge: Bridge) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut rig = Self {
            setup: Setup::unpaired(),
            profile,
            bridge,
            person: None,
            owner: None,
            port: None,
            writes: Writes::serve().await,
        };
        if bridge == Bridge::Native {
            install_native_host(&rig.setup, rig.profile.path());
        }
        rig.person = Some(rig.launch_chrome().await);
        if bridge == Bridge::Paired {
            rig.pair_again().await;
        }
        let mut owner = rig.setup.start_mcp().await;
        rig.writes.write_within(&mut owner).await;
        rig.owner = Some(owner);
        rig
    }

    async fn launch_chrome(&self) -> Person {
        let config = self.setup.config.path().to_path_buf();
        Person::launch_with_env(
            self.profile.path(),
            &[
                ("BROWSER_SHELL_RUNTIME_DIR", self.setup.runtime.as_path()),
                ("BROWSER_SHELL_CONFIG_DIR", config.as_path()),
            ],
        )
        .await
    }

    /// `extension pair` on the same port, and the link opened in Chrome.
    async fn pair_again(&mut self) {
        let link = self.setup.pair(self.port).await;
        self.port = link
            .split("port=")
            .nth(1)
            .and_then(|rest| rest.split('&').next())
            .and_then(|port| port.parse().ok());
        self.person.as_ref().unwrap().pair(&link).await;
    }

    /// A write by the owner's agent (see [`Writes::write_within`]).
    async fn write_within(&mut self) -> Duration {
        self.writes.write_within(self.owner.as_mut().unwrap()).await
    }

    /// Breaks the connection as `cycle` says; the time from the moment it
    /// could come back (the new shell or Chrome started, the worker
    /// stopped, the pairing made) to the first write that works.
    pub async fn cycle(&mut self, cycle: Cycle) -> Duration {
        match cycle {
            Cycle::ShellRestart => {
                let mut owner = self.owner.take().unwrap();
                owner.child.start_kill().unwrap();
                let _ = owner.exit().await;
                let started = Instant::now();
                self.owner = Some(self.setup.start_mcp().await);
                self.write_within().await;
                started.elapsed()
            }
            Cycle::OwnerExit => {
                let mut joined = self.setup.start_mcp().await;
                self.writes.write_within(&mut joined).await;
                let mut owner = self.owner.take().unwrap();
                owner.child.start_kill().unwrap();
                let _ = owner.exit().await;
                // The joined session ends with the owner; its client starts it again.
                let (status, stderr) = joined.exit().await;
                assert!(!status.success(), "{stderr}");
                let started = Instant::now();
                self.owner = Some(self.setup.start_mcp().await);
                self.write_within().await;
                started.elapsed()
            }
            Cycle::ChromeRestart => {
                self.person.take().unwrap().quit().await;
                let started = Instant::now();
                self.person = Some(self.launch_chrome().await);
                self.write_within().await;
                started.elapsed()
            }
            Cycle::WorkerStop => {
                let person = self.person.as_ref().unwrap();
                let worker = person.service_worker().await.expect("the worker runs");
                let started = Instant::now();
                person
                    .cdp
                    .send(None, "Target.closeTarget", json!({"targetId": worker}))
                    .await
                    .unwrap();
                self.write_within().await;
                started.elapsed()
            }
            Cycle::PairAgain => {
                let started = Instant::now();
                if self.bridge == Bridge::Paired {
                    self.pair_again().await;
                }
                self.write_within().await;
                started.elapsed()
            }
        }
    }

    /// How long each first write done after a break (or the start) took
    /// itself, its call alone.
    pub fn write_times(&self) -> Vec<Duration> {
        self.writes.write_times.clone()
    }

    /// Ends the shell and Chrome; then (nothing can reach the page
    /// server any more) what it counted of the writes.
    pub async fn finish(mut self) -> Tally {
        if let Some(owner) = self.owner.take() {
            owner.finish().await;
        }
        if let Some(person) = self.person.take() {
            person.quit().await;
        }
        self.writes.tally()
    }
}

/// Two processes that keep a core busy each, while they live (a machine
/// with other work running).
pub fn busy_loops(count: usize) -> Vec<tokio::process::Child> {
    (0..count)
        .map(|_| {
            tokio::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .kill_on_drop(true)
                .spawn()
                .unwrap()
        })
        .collect()
}

/// The `p`-th percentile (0–100) of `times`, sorted in place.
pub fn percentile(times: &mut [Duration], p: usize) -> Duration {
    times.sort();
    let index = (times.len() * p).div_ceil(100).saturating_sub(1);
    times.get(index).copied().unwrap_or_default()
}
