//! [`ChromiumHost`]: the view host backed by a real Chromium over CDP.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{OnceCell, mpsc};

use super::frames::FrameSessions;
use super::launch::{BrowserProcess, LaunchOptions};
use super::{ContextId, CreateViewOptions, FrameInfo, ViewEvent, ViewHost, ViewId, ViewInfo};
use crate::cdp::protocol::{
    BrowserClose, BrowserGetVersion, BrowserSetDownloadBehavior, TargetActivateTarget,
    TargetAttachToTarget, TargetCloseTarget, TargetCreateBrowserContext, TargetCreateTarget,
    TargetDestroyed, TargetDisposeBrowserContext, TargetGetTargets, TargetInfo, TargetInfoEvent,
    TargetSetAutoAttach, TargetSetDiscoverTargets,
};
use crate::cdp::{Connection, EventFilter, EventStream, SessionId, transport};
use crate::error::{BrowserError, Result};

/// How long a browser asked to close is given to exit by itself.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// How long to wait for a browser's exit status once its pipe closed.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(2);

/// View → its flat session, shared with the task that forgets closed targets.
type Sessions = Arc<Mutex<HashMap<ViewId, Arc<OnceCell<SessionId>>>>>;

/// Out-of-process frames of every view, maintained by [`track_frames`].
type Frames = Arc<Mutex<FrameSessions>>;

/// A Chromium browser driven over one CDP connection.
///
/// Launched ([`ChromiumHost::launch`]) it owns the child process and its
/// profile; dropping the host kills the browser and removes a temporary
/// profile. Connected ([`ChromiumHost::connect`]) it leaves the browser
/// running when dropped and only closes its connection.
pub struct ChromiumHost {
    /// The browser-level connection every view session is multiplexed on.
    connection: Connection,
    /// One flat session per view, attached on first use; entries are removed
    /// when the target goes away (see [`forget_closed_targets`]).
    sessions: Sessions,
    /// Out-of-process frames of every view.
    frames: Frames,
    /// The child browser, when we launched it.
    process: Option<BrowserProcess>,
    /// `Browser.getVersion().product`.
    version: String,
}

impl fmt::Debug for ChromiumHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChromiumHost")
            .field("version", &self.version)
            .field("pid", &self.process.as_ref().and_then(BrowserProcess::pid))
            .finish_non_exhaustive()
    }
}

impl ChromiumHost {
    /// Launches Chromium with a debugging pipe and waits until it answers.
    ///
    /// # Errors
    /// `BROWSER_NOT_FOUND` when no executable is found, `LAUNCH_FAILED` when
    /// it does not start or answer within `startup_timeout` (with its last
    /// stderr lines).
    pub async fn launch(options: LaunchOptions) -> Result<Self> {
        let (process, from_browser, to_browser) = BrowserProcess::spawn(&options)?;
        let transport = transport::pipe(from_browser, to_browser)?;
        let connection = Connection::start(transport, options.command_timeout);
        let version = match connection
            .call_with_timeout(None, &BrowserGetVersion {}, options.startup_timeout)
            .await
        {
            Ok(version) => version,
            Err(error) => {
                let tail = process.stderr_tail();
                return Err(BrowserError::LaunchFailed {
                    detail: format!(
                        "the browser did not answer ({error}); its last output:\n{tail}"
                    ),
                });
            }
        };
        tracing::info!(product = %version.product, pid = process.pid(), "Chromium is ready");
        let host = Self::new(connection, Some(process), version.product);
        host.prepare_browser().await?;
        Ok(host)
    }

    /// Connects to a running browser at `endpoint` (`ws://…` or `http://host:port`).
    pub async fn connect(endpoint: &str, command_timeout: Duration) -> Result<Self> {
        let url = super::resolve_endpoint(endpoint, command_timeout).await?;
        let transport = transport::websocket(&url).await?;
        let connection = Connection::start(transport, command_timeout);
        let version = connection.call(None, &BrowserGetVersion {}).await?;
        let host = Self::new(connection, None, version.product);
        host.prepare_browser().await?;
        Ok(host)
    }

    fn new(connection: Connection, process: Option<BrowserProcess>, version: String) -> Self {
        let sessions = Sessions::default();
        tokio::spawn(forget_closed_targets(
            connection.subscribe(EventFilter::Browser),
            Arc::clone(&sessions),
        ));
        let frames = Frames::default();
        tokio::spawn(track_frames(
            connection.clone(),
            connection.subscribe(EventFilter::All),
            Arc::clone(&frames),
        ));
        Self {
            connection,
            sessions,
            frames,
            process,
            version,
        }
    }

    /// Browser-wide settings: follow targets, refuse downloads.
    async fn prepare_browser(&self) -> Result<()> {
        self.connection
            .call(None, &TargetSetDiscoverTargets { discover: true })
            .await?;
        self.connection
            .call(
                None,
                &BrowserSetDownloadBehavior {
                    behavior: "deny",
                    events_enabled: true,
                },
            )
            .await?;
        Ok(())
    }

    /// The underlying connection (for the shell's CDP endpoint and tests).
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The program running the browser, when we launched it.
    pub fn executable(&self) -> Option<&std::path::Path> {
        self.process.as_ref().map(BrowserProcess::executable)
    }

    /// The child's process id, when we launched it.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(BrowserProcess::pid)
    }

    /// The temporary profile directory, when we launched with one.
    pub fn temporary_profile(&self) -> Option<std::path::PathBuf> {
        self.process
            .as_ref()
            .and_then(BrowserProcess::temporary_profile)
            .map(std::path::Path::to_path_buf)
    }

    /// Closes the browser gracefully (so a persistent profile is flushed),
    /// then makes sure the process is gone and a temporary profile removed.
    /// For a connected browser, only the connection closes. Idempotent;
    /// every later command fails with `NOT_CONNECTED`.
    pub async fn shutdown(&self) {
        if let Some(process) = &self.process {
            if self.connection.is_open()
                && self
                    .connection
                    .call_with_timeout(None, &BrowserClose {}, Duration::from_secs(2))
                    .await
                    .is_ok()
            {
                // The process, not the pipe, says the browser is done: it
                // exits once it has flushed the profile and removed its
                // singleton files, which a kill would leave behind.
                let _ = tokio::time::timeout(SHUTDOWN_WAIT, process.exited()).await;
            }
            process.terminate();
        }
        self.connection.close();
    }

    /// Resolves when this browser has gone away, with why: how the process
    /// ended ("killed by signal 9 (SIGKILL)") or why the connection closed.
    /// Also resolves after [`ChromiumHost::shutdown`]; the caller knows
    /// whether it shut the browser down itself.
    pub async fn ended(&self) -> String {
        let closed = self.connection.closed().await;
        let Some(process) = &self.process else {
            return format!("the connection closed: {closed}");
        };
        // The pipe closes as the process dies; its status follows at once.
        match tokio::time::timeout(EXIT_STATUS_WAIT, process.exited()).await {
            Ok(cause) => cause,
            Err(_) => {
                // The connection broke but the process lives on: stop it.
                process.terminate();
                format!("its connection broke ({closed})")
            }
        }
    }

    /// Returns the view's session, attaching (once) on first use.
    async fn session(&self, view: &ViewId) -> Result<SessionId> {
        let cell = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(sessions.entry(view.clone()).or_default())
        };
        let attached = cell
            .get_or_try_init(|| async {
                let attached = self
                    .connection
                    .call(
                        None,
                        &TargetAttachToTarget {
                            target_id: view.0.clone(),
                            flatten: true,
                        },
                    )
                    .await
                    .map_err(|error| match error {
                        BrowserError::Protocol { .. } => BrowserError::TabNotFound {
                            tab: view.0.clone(),
                        },
                        other => other,
                    })?;
                let session = SessionId(attached.session_id);
                // Out-of-process iframes and workers attach as flat child sessions.
                self.connection
                    .call(
                        Some(&session),
                        &TargetSetAutoAttach {
                            auto_attach: true,
                            wait_for_debugger_on_start: false,
                            flatten: true,
                        },
                    )
                    .await?;
                Ok::<_, BrowserError>(session)
            })
            .await;
        match attached {
            Ok(session) => Ok(session.clone()),
            Err(error) => {
                self.forget(view);
                Err(error)
            }
        }
    }

    fn forget(&self, view: &ViewId) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(view);
    }
}

impl Drop for ChromiumHost {
    fn drop(&mut self) {
        self.connection.close();
    }
}

/// Drops cached sessions of targets that closed or detached, so a later
/// command to them fails with `TAB_NOT_FOUND` instead of a stale session.
async fn forget_closed_targets(mut events: EventStream, sessions: Sessions) {
    while let Some(event) = events.recv().await {
        let gone = match event.method.as_str() {
            "Target.targetDestroyed" => event
                .decode::<TargetDestroyed>()
                .map(|d| ViewId(d.target_id)),
            "Target.detachedFromTarget" => event
                .params
                .get("targetId")
                .and_then(Value::as_str)
                .map(|id| ViewId(id.to_owned())),
            _ => None,
        };
        if let Some(view) = gone {
            sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&view);
        }
    }
}

/// Records out-of-process frames as they attach under a page (or under
/// another frame) and forgets them when they detach. Each new frame gets
/// auto-attach too, so frames nested at any depth are found.
async fn track_frames(connection: Connection, mut events: EventStream, frames: Frames) {
    while let Some(event) = events.recv().await {
        let attached = frames
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(&event);
        let Some(session) = attached else { continue };
        let connection = connection.clone();
        tokio::spawn(async move {
            let nested = TargetSetAutoAttach {
                auto_attach: true,
                wait_for_debugger_on_start: false,
                flatten: true,
            };
            if let Err(error) = connection.call(Some(&session), &nested).await {
                tracing::debug!(%error, "could not follow frames nested in a frame");
            }
        });
    }
}

fn view_info(target: TargetInfo) -> ViewInfo {
    ViewInfo {
        id: ViewId(target.target_id),
        url: target.url,
        title: target.title,
        opener: target.opener_id.map(ViewId),
        context: target.browser_context_id.map(ContextId),
        shared_with: None,
    }
}

#[async_trait]
impl ViewHost for ChromiumHost {
    async fn create_view(&self, options: CreateViewOptions) -> Result<ViewId> {
        let created = self
            .connection
            .call(
                None,
                &TargetCreateTarget {
                    url: "about:blank".into(),
                    browser_context_id: options.context.map(|c| c.0),
                    background: options.background,
                    new_window: true,
                },
            )
            .await?;
        let view = ViewId(created.target_id);
        self.session(&view).await?;
        Ok(view)
    }

    async fn destroy_view(&self, view: &ViewId) -> Result<()> {
        // Closing returns before the target is gone; wait for that, so a
        // listing right after no longer shows it.
        let mut events = self.connection.subscribe(EventFilter::Browser);
        let closed = self
            .connection
            .call(
                None,
                &TargetCloseTarget {
                    target_id: view.0.clone(),
                },
            )
            .await;
        self.forget(view);
        match closed {
            Ok(_) => {}
            // Already gone is what the caller wanted.
            Err(BrowserError::Protocol { .. }) => return Ok(()),
            Err(other) => return Err(other),
        }
        let gone = async {
            while let Some(event) = events.recv().await {
                if event.method == "Target.targetDestroyed"
                    && event
                        .decode::<TargetDestroyed>()
                        .is_some_and(|d| d.target_id == view.0)
                {
                    return;
                }
            }
        };
        tokio::time::timeout(self.connection.default_timeout(), gone)
            .await
            .map_err(|_| BrowserError::timeout("close tab", self.connection.default_timeout()))
    }

    async fn show_view(&self, view: &ViewId) -> Result<()> {
        self.connection
            .call(
                None,
                &TargetActivateTarget {
                    target_id: view.0.clone(),
                },
            )
            .await
            .map_err(|error| match error {
                BrowserError::Protocol { .. } => BrowserError::TabNotFound {
                    tab: view.0.clone(),
                },
                other => other,
            })?;
        Ok(())
    }

    async fn send_command(
        &self,
        view: &ViewId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let session = self.session(view).await?;
        self.connection
            .send_with_timeout(Some(&session), method, params, timeout)
            .await
    }

    async fn subscribe(&self, view: &ViewId) -> Result<EventStream> {
        let session = self.session(view).await?;
        Ok(self.connection.subscribe(EventFilter::Session(session)))
    }

    async fn frames(&self, view: &ViewId) -> Result<Vec<FrameInfo>> {
        let root = self.session(view).await?;
        Ok(self
            .frames
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tree(&root))
    }

    async fn send_frame_command(
        &self,
        view: &ViewId,
        frame: &str,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        // The view must be live; the frame must be one of ours.
        self.session(view).await?;
        let session = self
            .frames
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .session_of(frame)
            .ok_or_else(|| BrowserError::TabNotFound {
                tab: format!("(frame {frame} is gone)"),
            })?;
        self.connection
            .send_with_timeout(Some(&session), method, params, timeout)
            .await
    }

    async fn list_views(&self) -> Result<Vec<ViewInfo>> {
        let targets = self.connection.call(None, &TargetGetTargets {}).await?;
        Ok(targets
            .target_infos
            .into_iter()
            .filter(|t| t.kind == "page")
            .map(view_info)
            .collect())
    }

    fn watch_views(&self) -> mpsc::UnboundedReceiver<ViewEvent> {
        let mut events = self.connection.subscribe(EventFilter::Browser);
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let change = match event.method.as_str() {
                    "Target.targetCreated" | "Target.targetInfoChanged" => {
                        let Some(TargetInfoEvent { target_info }) = event.decode() else {
                            continue;
                        };
                        if target_info.kind != "page" {
                            continue;
                        }
                        if event.method == "Target.targetCreated" {
                            ViewEvent::Opened(view_info(target_info))
                        } else {
                            ViewEvent::Changed(view_info(target_info))
                        }
                    }
                    "Target.targetDestroyed" => {
                        let Some(TargetDestroyed { target_id }) = event.decode() else {
                            continue;
                        };
                        ViewEvent::Closed(ViewId(target_id))
                    }
                    "Browser.downloadWillBegin" => {
                        let text = |key: &str| {
                            event
                                .params
                                .get(key)
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned()
                        };
                        ViewEvent::DownloadRefused {
                            frame: text("frameId"),
                            url: text("url"),
                            file_name: text("suggestedFilename"),
                        }
                    }
                    _ => continue,
                };
                if sender.send(change).is_err() {
                    return;
                }
            }
        });
        receiver
    }

    async fn create_context(&self) -> Result<ContextId> {
        let created = self
            .connection
            .call(
                None,
                &TargetCreateBrowserContext {
                    dispose_on_detach: true,
                },
            )
            .await?;
        Ok(ContextId(created.browser_context_id))
    }

    async fn destroy_context(&self, context: &ContextId) -> Result<()> {
        self.connection
            .call(
                None,
                &TargetDisposeBrowserContext {
                    browser_context_id: context.0.clone(),
                },
            )
            .await?;
        Ok(())
    }

    fn command_timeout(&self) -> Duration {
        self.connection.default_timeout()
    }

    fn browser_version(&self) -> String {
        self.version.clone()
    }

    fn is_connected(&self) -> bool {
        self.connection.is_open()
    }

    fn census(&self) -> super::HostCensus {
        super::HostCensus {
            sessions: self
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len(),
            frames: self.frames.lock().unwrap_or_else(|p| p.into_inner()).len(),
            subscribers: self.connection.subscribers(),
            pending: self.connection.pending_commands(),
        }
    }
}
