//! The view-host seam: everything the provider needs from "something that
//! shows pages and speaks CDP for them".
//!
//! A *view* is one page target (a tab). The provider only ever talks to
//! views through [`ViewHost`]: create, destroy, show, send a CDP command,
//! subscribe to its events, list them. [`ChromiumHost`] implements the seam
//! over a Chromium we launch (pipe transport) or one we connect to
//! (WebSocket; [`active_port`] finds a person's browser with remote
//! debugging on); a future host could wrap a platform webview that speaks CDP.

pub mod active_port;
mod chromium;
mod endpoint;
pub mod extension;
mod frames;
mod launch;
pub mod pool;
mod supervisor;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;

pub use chromium::ChromiumHost;
pub use endpoint::resolve_endpoint;
pub use extension::{ExtensionHost, ExtensionOptions};
pub use launch::{BROWSER_ENV, LaunchOptions, ProfileDir, find_browser, is_headless_shell};
pub use pool::{PoolHost, PoolOptions, PoolStats};
pub use supervisor::{BrowserState, Launcher, Restart, RestartPolicy, Supervisor};

use crate::cdp::{Command, EventStream};
use crate::error::{BrowserError, Result};

/// Opaque identity of a view. Stable for the view's life; never shown to models.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ViewId(pub(crate) String);

impl ViewId {
    /// A view by the id its host gave it (for hosts, and for tests that
    /// address a view they know).
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The underlying id, for logs and for hosts that need it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ViewId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An isolated browser context (own cookies and storage).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContextId(pub(crate) String);

impl ContextId {
    /// The underlying id (Chromium's `browserContextId`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a host knows about a view without asking the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewInfo {
    /// The view.
    pub id: ViewId,
    /// Its current URL.
    pub url: String,
    /// Its current title.
    pub title: String,
    /// The view that opened it (popups), if any.
    pub opener: Option<ViewId>,
    /// Its isolated context, if any.
    pub context: Option<ContextId>,
    /// The agent session a person shared this view with, in a host where
    /// views are the person's own (the extension host); `None` elsewhere.
    pub shared_with: Option<String>,
}

/// An out-of-process frame inside a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameInfo {
    /// The frame's id (also its target id).
    pub id: String,
    /// The out-of-process frame that contains it, or `None` when its owner
    /// element is in the view's own (main-process) document tree.
    pub parent: Option<String>,
    /// Its URL when it attached.
    pub url: String,
}

/// The event a host sends a view's subscribers when the view's debugging
/// session was taken away (params: `reason`): pages drive the view again
/// with a new page on their next use.
pub const DEBUGGER_DETACHED_EVENT: &str = "Host.debuggerDetached";

/// How to create a view.
#[derive(Debug, Clone, Default)]
pub struct CreateViewOptions {
    /// Put it in this isolated context instead of the default profile.
    pub context: Option<ContextId>,
    /// Create it without bringing it to the front.
    pub background: bool,
    /// The agent session it is for, when it is an agent's: a host in the
    /// person's own browser groups and labels it so.
    pub owner: Option<String>,
}

/// A change in the set of views, for following popups and closed tabs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewEvent {
    /// A view appeared (created by us, by a page, or by a person).
    Opened(ViewInfo),
    /// A view's URL or title changed.
    Changed(ViewInfo),
    /// A view went away (or, in the person's own browser, stopped being
    /// shared with agents).
    Closed(ViewId),
    /// The person stopped the agents from the host's own controls (the
    /// extension's Stop, or their own click or key in a driven tab): the
    /// same as taking control in the column.
    PersonStopped {
        /// What the person did, in their words ("you pressed Stop").
        reason: String,
    },
    /// The person let the agents go on from the host's own controls.
    PersonResumed,
    /// An isolated context's browser went away by itself (a pool browser
    /// that died, see [`pool`]): its views are gone, and the sessions in it
    /// start again in a new context.
    ContextLost {
        /// The context that is gone.
        context: ContextId,
        /// Why, as the connection or process ended.
        cause: String,
    },
    /// A page tried to download a file; downloads are refused.
    DownloadRefused {
        /// The frame that started it (a view's main frame id is the view id).
        frame: String,
        /// What it tried to download.
        url: String,
        /// The file name it suggested.
        file_name: String,
    },
}

/// Commands for one view's page that must arrive in order, such as the
/// key events of typed text: sent back to back with
/// [`ViewHost::send_commands`], without a round trip per command.
#[derive(Debug, Default)]
pub struct CommandBatch {
    commands: Vec<BatchedCommand>,
}

/// One command of a [`CommandBatch`] (as the extension's bridge carries it).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BatchedCommand {
    /// The protocol method, such as `Input.dispatchKeyEvent`.
    pub method: &'static str,
    /// Its parameters.
    pub params: Value,
}

impl CommandBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a typed command after the ones already in.
    ///
    /// # Errors
    /// `PROTOCOL_ERROR` when its parameters cannot be encoded.
    pub fn push<C: Command>(&mut self, command: &C) -> Result<()> {
        self.commands.push(BatchedCommand {
            method: C::METHOD,
            params: encode(command)?,
        });
        Ok(())
    }

    /// How many commands it holds.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The commands, in order.
    pub fn into_commands(self) -> Vec<BatchedCommand> {
        self.commands
    }
}

/// Sends each command as a message of its own, back to back, and waits for
/// every answer: [`ViewHost::send_commands`] for a host with nothing cheaper,
/// and the extension host's way with an extension from before batches.
pub(crate) async fn send_each<H: ViewHost + ?Sized>(
    host: &H,
    view: &ViewId,
    commands: Vec<BatchedCommand>,
    timeout: Duration,
) -> Result<()> {
    let sends = commands
        .into_iter()
        .map(|command| host.send_command(view, command.method, command.params, timeout));
    // Every answer is awaited (the commands after a failure still ran, and
    // the caller's next look must see them); the first failure, in their
    // order, is the answer.
    for answer in futures_util::future::join_all(sends).await {
        answer?;
    }
    Ok(())
}

/// The seam between page operations and whatever hosts the pages.
#[async_trait]
pub trait ViewHost: Send + Sync + fmt::Debug {
    /// Creates a new, blank view and returns it once it accepts commands.
    async fn create_view(&self, options: CreateViewOptions) -> Result<ViewId>;
    /// Closes a view. Closing a view that is already gone succeeds.
    async fn destroy_view(&self, view: &ViewId) -> Result<()>;
    /// Brings a view to the front of its window (what a person sees).
    async fn show_view(&self, view: &ViewId) -> Result<()>;
    /// Sends one CDP command to the view's page, bounded by `timeout`.
    async fn send_command(
        &self,
        view: &ViewId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value>;
    /// The id of the view's main frame (what CDP events name it by). For a
    /// page target it is the target's own id.
    async fn main_frame(&self, view: &ViewId) -> Result<String> {
        Ok(view.as_str().to_owned())
    }
    /// Subscribes to the view's CDP events. The stream ends when the view closes.
    async fn subscribe(&self, view: &ViewId) -> Result<EventStream>;
    /// The view's out-of-process frames (cross-origin iframes at any depth),
    /// parents before children.
    async fn frames(&self, view: &ViewId) -> Result<Vec<FrameInfo>>;
    /// Sends one CDP command to an out-of-process frame of the view.
    async fn send_frame_command(
        &self,
        view: &ViewId,
        frame: &str,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value>;
    /// Lists the views that exist now.
    async fn list_views(&self) -> Result<Vec<ViewInfo>>;
    /// Follows views opening, changing and closing.
    fn watch_views(&self) -> mpsc::UnboundedReceiver<ViewEvent>;
    /// Creates an isolated browser context.
    async fn create_context(&self) -> Result<ContextId>;
    /// Disposes an isolated context and closes its views.
    async fn destroy_context(&self, context: &ContextId) -> Result<()>;
    /// Sends commands to the view's page back to back, in their order, and
    /// waits for every answer; a failure among them is the answer. The browser
    /// keeps their order, so input does not pay a round trip per event; a
    /// host whose path costs something per message (the extension's) sends
    /// them as one.
    async fn send_commands(
        &self,
        view: &ViewId,
        batch: CommandBatch,
        timeout: Duration,
    ) -> Result<()> {
        send_each(self, view, batch.into_commands(), timeout).await
    }
    /// The default bound for commands.
    fn command_timeout(&self) -> Duration;
    /// The browser's product string, such as `Chrome/156.0.8078.114`.
    fn browser_version(&self) -> String;
    /// Whether the host can still reach its pages (false once its browser
    /// or its connection is gone for good).
    fn is_connected(&self) -> bool {
        true
    }
    /// Waits, within the host's own short bound, until its browser can be
    /// reached, or says why it cannot (`NOT_CONNECTED` with the reason):
    /// every call asks first, so that an agent hears that the browser is
    /// missing rather than that its tab is. A host that is there whenever
    /// it exists answers at once (a supervised one is waited for by its
    /// supervisor instead).
    async fn ready(&self) -> Result<()> {
        Ok(())
    }
    /// Why the browser cannot be reached now, without waiting (`None`
    /// when it can, or when the host cannot tell).
    fn unreachable(&self) -> Option<crate::error::BrowserError> {
        None
    }
    /// The agent is done with a view it does not close (a tab the person
    /// shared, returned when its session ends). Nothing to do by default.
    async fn release_view(&self, view: &ViewId) -> Result<()> {
        let _ = view;
        Ok(())
    }
    /// Whether the person may open tabs of their own through the shell (the
    /// column's "+"). Not in the person's own Chrome: they open tabs there.
    fn opens_person_tabs(&self) -> bool {
        true
    }
    /// The agent sessions open now, for a host that shows them to the
    /// person (the extension's popup). Nothing to do by default.
    fn sessions_changed(&self, sessions: &[String]) {
        let _ = sessions;
    }
    /// What the host keeps track of, for leak checks (nothing by default).
    fn census(&self) -> HostCensus {
        HostCensus::default()
    }
}

/// What a host keeps per view and per connection: sizes that must come
/// back to where they were once views close.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostCensus {
    /// Views with an attached session.
    pub sessions: usize,
    /// Out-of-process frames followed.
    pub frames: usize,
    /// Event subscribers on the connection.
    pub subscribers: usize,
    /// Commands waiting for an answer.
    pub pending: usize,
}

/// Typed helpers over [`ViewHost::send_command`].
#[async_trait]
pub trait ViewHostExt: ViewHost {
    /// Sends a typed command with the host's default bound.
    async fn call<C: Command + Sync>(&self, view: &ViewId, command: &C) -> Result<C::Response> {
        self.call_within(view, command, self.command_timeout())
            .await
    }

    /// Sends a typed command with an explicit bound.
    async fn call_within<C: Command + Sync>(
        &self,
        view: &ViewId,
        command: &C,
        timeout: Duration,
    ) -> Result<C::Response> {
        let value = self
            .send_command(view, C::METHOD, encode(command)?, timeout)
            .await?;
        decode(C::METHOD, value)
    }

    /// Sends a typed command to an out-of-process frame of the view.
    async fn call_frame_within<C: Command + Sync>(
        &self,
        view: &ViewId,
        frame: &str,
        command: &C,
        timeout: Duration,
    ) -> Result<C::Response> {
        let value = self
            .send_frame_command(view, frame, C::METHOD, encode(command)?, timeout)
            .await?;
        decode(C::METHOD, value)
    }
}

fn encode<C: Command>(command: &C) -> Result<Value> {
    serde_json::to_value(command).map_err(|e| BrowserError::Protocol {
        method: C::METHOD.into(),
        message: format!("cannot encode parameters: {e}"),
    })
}

impl<T: ViewHost + ?Sized> ViewHostExt for T {}

fn decode<T: DeserializeOwned>(method: &str, value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|e| BrowserError::Protocol {
        method: method.into(),
        message: format!("unexpected result shape: {e}"),
    })
}
