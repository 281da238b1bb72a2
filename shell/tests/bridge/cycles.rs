//! Connection cycles: the things that break the extension's connection in
//! a person's day, each followed by the time until an agent's call works
//! again. Real processes: `browser-shell mcp --browser extension` shells,
//! the person's Chrome (Debian's Chromium with the extension), over native
//! messaging (the host manifest in that Chrome's profile, nothing paired)
//! or over the paired WebSocket (no native host installed).

use std::time::{Duration, Instant};

use serde_json::json;

use super::person::Person;
use super::{Client, Setup, connected_within, install_native_host};

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

/// A shell, the person's Chrome and the bridge between them.
pub struct Rig {
    setup: Setup,
    profile: tempfile::TempDir,
    bridge: Bridge,
    person: Option<Person>,
    owner: Option<Client>,
    /// The paired port (the WebSocket's), to pair again on it.
    port: Option<u16>,
}

impl Rig {
    /// Chrome first, then the shell; returns once a call works.
    pub async fn start(bridge: Bridge) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut rig = Self {
            setup: Setup::unpaired(),
            profile,
            bridge,
            person: None,
            owner: None,
            port: None,
        };
        if bridge == Bridge::Native {
            install_native_host(&rig.setup, rig.profile.path());
        }
        rig.person = Some(rig.launch_chrome().await);
        if bridge == Bridge::Paired {
            rig.pair_again().await;
        }
        let mut owner = rig.setup.start_mcp().await;
        connected_within(&mut owner).await;
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

    fn owner(&mut self) -> &mut Client {
        self.owner.as_mut().unwrap()
    }

    /// Breaks the connection as `cycle` says; the time from the moment it
    /// could come back (the new shell or Chrome started, the worker
    /// stopped, the pairing made) to the first call that works.
    pub async fn cycle(&mut self, cycle: Cycle) -> Duration {
        match cycle {
            Cycle::ShellRestart => {
                let mut owner = self.owner.take().unwrap();
                owner.child.start_kill().unwrap();
                let _ = owner.exit().await;
                let started = Instant::now();
                let mut owner = self.setup.start_mcp().await;
                connected_within(&mut owner).await;
                self.owner = Some(owner);
                started.elapsed()
            }
            Cycle::OwnerExit => {
                let mut joined = self.setup.start_mcp().await;
                connected_within(&mut joined).await;
                let mut owner = self.owner.take().unwrap();
                owner.child.start_kill().unwrap();
                let _ = owner.exit().await;
                // The joined session ends with the owner; its client starts it again.
                let (status, stderr) = joined.exit().await;
                assert!(!status.success(), "{stderr}");
                let started = Instant::now();
                let mut owner = self.setup.start_mcp().await;
                connected_within(&mut owner).await;
                self.owner = Some(owner);
                started.elapsed()
            }
            Cycle::ChromeRestart => {
                self.person.take().unwrap().quit().await;
                let started = Instant::now();
                self.person = Some(self.launch_chrome().await);
                connected_within(self.owner()).await;
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
                connected_within(self.owner()).await;
                started.elapsed()
            }
            Cycle::PairAgain => {
                let started = Instant::now();
                if self.bridge == Bridge::Paired {
                    self.pair_again().await;
                }
                connected_within(self.owner()).await;
                started.elapsed()
            }
        }
    }

    /// Ends the shell and Chrome.
    pub async fn finish(mut self) {
        if let Some(owner) = self.owner.take() {
            owner.finish().await;
        }
        if let Some(person) = self.person.take() {
            person.quit().await;
        }
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
