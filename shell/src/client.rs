//! The command line as a client of a running instance.
//!
//! `browser-shell open|snapshot|act|…` goes to the instance a person
//! watches (the desktop window, else a relay) before a background one, or
//! to the one `--instance` names; with none running it starts a background
//! instance — headless, detached, exiting after an idle timeout. It posts
//! the command's tool call to that instance's `/cli/call`, so every command
//! acts on the same session.

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use browser_provider::policy::HostRules;
use browser_provider::{BrowserError, Result};
use tokio::io::AsyncBufReadExt;

use crate::cli_endpoint::{CliCall, CliReply};
use crate::instance::{self, InstanceInfo, InstanceKind};
use crate::platform;

/// How long a new background instance may take to start (Chromium included).
const START_BOUND: Duration = Duration::from_secs(60);

/// How to start a background instance when none runs.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// Browser flags to pass on (`--browser`, `--profile`, …).
    pub browser_args: Vec<OsString>,
    /// The instance exits after this long without use.
    pub idle_exit: Duration,
}

/// A running instance and an HTTP client for it.
#[derive(Debug)]
pub struct Client {
    info: InstanceInfo,
    http: reqwest::Client,
}

impl Client {
    /// The instance `wanted` names (`--instance`: a pid, or window, relay,
    /// background), else the one a person watches, if one runs.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when `wanted` names nothing running.
    pub fn find(wanted: Option<&str>) -> Result<Option<Self>> {
        let found = match wanted {
            Some(wanted) => Some(instance::select(wanted)?),
            None => instance::find(),
        };
        found.map(Self::for_instance).transpose()
    }

    /// The instance `wanted` names, else the one a person watches, else a
    /// background instance started now.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when `wanted` names nothing running;
    /// `NOT_CONNECTED` when no instance runs and none could be started.
    pub async fn find_or_start(wanted: Option<&str>, start: &StartOptions) -> Result<Self> {
        if wanted.is_some() {
            return Self::find(wanted)?
                .ok_or_else(|| BrowserError::not_connected("no instance runs"));
        }
        // One starter at a time: two commands at once share one instance.
        let _lock = StartLock::acquire().await?;
        if let Some(found) = instance::find() {
            return Self::for_instance(found);
        }
        let info = start_background(start).await?;
        Self::for_instance(info)
    }

    /// What else runs that could have served, for saying which was taken.
    pub fn others(&self) -> Vec<InstanceInfo> {
        instance::list()
            .into_iter()
            .filter(|info| info.pid != self.info.pid)
            .collect()
    }

    fn for_instance(info: InstanceInfo) -> Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .map_err(|e| {
                BrowserError::not_connected(format!("cannot create an HTTP client: {e}"))
            })?;
        Ok(Self { info, http })
    }

    /// The instance this client talks to.
    pub fn instance(&self) -> &InstanceInfo {
        &self.info
    }

    /// Runs one tool call on the command line's session, its host policy
    /// narrowed by `hosts` for this call.
    ///
    /// # Errors
    /// `NOT_CONNECTED` when the instance cannot be reached or refuses us.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        hosts: &HostRules,
    ) -> Result<CliReply> {
        let request = self
            .http
            .post(format!("{}/cli/call", self.info.url))
            .json(&CliCall {
                tool: tool.to_owned(),
                arguments,
                hosts: hosts.clone(),
            });
        let response = self.send(request).await?;
        if !response.status().is_success() {
            return Err(self.refused(response).await);
        }
        response.json::<CliReply>().await.map_err(|e| {
            BrowserError::not_connected(format!("unreadable answer from browser-shell: {e}"))
        })
    }

    /// Sends `request` with our token.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        request
            .bearer_auth(&self.info.token)
            .send()
            .await
            .map_err(|e| {
                BrowserError::not_connected(format!(
                    "cannot reach browser-shell at {} (pid {}): {e}",
                    self.info.url, self.info.pid
                ))
            })
    }

    /// The error for an answer that is not a success: what the instance said.
    async fn refused(&self, response: reqwest::Response) -> BrowserError {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        BrowserError::not_connected(format!(
            "browser-shell at {} answered {status}: {}",
            self.info.url,
            body.trim()
        ))
    }

    /// The instance's activity report (HTML), of one session or all.
    ///
    /// # Errors
    /// `NOT_CONNECTED` when the instance cannot be reached;
    /// `SESSION_NOT_FOUND` when it keeps no activity of `session`.
    pub async fn report(&self, session: Option<&str>) -> Result<String> {
        let session_part: String =
            url::form_urlencoded::byte_serialize(session.unwrap_or_default().as_bytes()).collect();
        let request = self
            .http
            .get(format!("{}/report?session={session_part}", self.info.url));
        let response = self.send(request).await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND
            && let Some(session) = session
        {
            return Err(BrowserError::SessionNotFound {
                session: session.to_owned(),
            });
        }
        if !response.status().is_success() {
            return Err(self.refused(response).await);
        }
        response.text().await.map_err(|e| {
            BrowserError::not_connected(format!("unreadable answer from browser-shell: {e}"))
        })
    }

    /// Stops a background instance and waits (bounded) until it has exited.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for an instance a person started (a relay or the
    /// desktop window); `TIMEOUT` if it does not exit.
    pub async fn stop(&self) -> Result<()> {
        if self.info.kind != InstanceKind::Background {
            return Err(BrowserError::invalid(
                "stop",
                format!(
                    "the running instance (pid {}) is a {:?} a person started; stop it there",
                    self.info.pid, self.info.kind
                ),
            ));
        }
        if !platform::process::stop(self.info.pid) {
            return Ok(());
        }
        let bound = Duration::from_secs(15);
        if instance::wait_for_exit(self.info.pid, bound).await {
            Ok(())
        } else {
            Err(BrowserError::timeout(
                "stopping the background instance",
                bound,
            ))
        }
    }
}

/// Starts `browser-shell background` detached and waits until it listens.
async fn start_background(start: &StartOptions) -> Result<InstanceInfo> {
    let program = std::env::current_exe()
        .map_err(|e| BrowserError::not_connected(format!("cannot find our own executable: {e}")))?;
    let log_path = instance::runtime_dir()?.join("background.log");
    let log = platform::files::private_file(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .open(&log_path)
    .map_err(|e| {
        BrowserError::not_connected(format!("cannot create {}: {e}", log_path.display()))
    })?;
    let mut command = tokio::process::Command::new(program);
    command
        .arg("background")
        .arg("--exit-when-idle-ms")
        .arg(start.idle_exit.as_millis().to_string())
        .args(&start.browser_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(false);
    // Ctrl+C in this terminal is not for it.
    platform::process::detach(&mut command);
    let mut child = command.spawn().map_err(|e| {
        BrowserError::not_connected(format!("cannot start a background instance: {e}"))
    })?;
    let pid = child.id().unwrap_or_default();
    tracing::info!(pid, "started a background instance");
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BrowserError::not_connected("the background instance has no output"))?;
    // Its first line (the viewer URL) means it listens and has written the runtime file.
    let mut first_line = String::new();
    let mut reader = tokio::io::BufReader::new(stdout);
    let ready = tokio::time::timeout(START_BOUND, reader.read_line(&mut first_line)).await;
    let log_tail = || {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(5).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    };
    match ready {
        Ok(Ok(read)) if read > 0 => {}
        Ok(_) => {
            return Err(BrowserError::not_connected(format!(
                "the background instance stopped while starting:\n{}",
                log_tail()
            )));
        }
        Err(_) => {
            let _ = child.start_kill();
            return Err(BrowserError::timeout(
                "starting the background instance",
                START_BOUND,
            ));
        }
    }
    match instance::list().into_iter().find(|info| info.pid == pid) {
        Some(info) => Ok(info),
        None => Err(BrowserError::not_connected(format!(
            "the background instance (pid {pid}) started but did not publish its address in {}",
            instance::instances_dir()?.display()
        ))),
    }
}

/// An exclusive lock on the runtime directory's `start.lock`, held while
/// looking for or starting an instance.
#[derive(Debug)]
struct StartLock {
    _file: std::fs::File,
}

impl StartLock {
    async fn acquire() -> Result<Self> {
        let path = instance::runtime_dir()?.join("start.lock");
        let file = platform::files::private_file(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true),
        )
        .open(&path)
        .map_err(|e| BrowserError::not_connected(format!("cannot open {}: {e}", path.display())))?;
        let cannot_lock =
            |e: &dyn std::fmt::Display| format!("cannot lock {}: {e}", path.display());
        let file = tokio::task::spawn_blocking(move || platform::lock::lock(&file).map(|()| file))
            .await
            .map_err(|e| BrowserError::not_connected(cannot_lock(&e)))?
            .map_err(|e| BrowserError::not_connected(cannot_lock(&e)))?;
        Ok(Self { _file: file })
    }
}
