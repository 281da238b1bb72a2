//! The desktop window (cargo feature `desktop`): a tao window whose wry
//! webview shows the browser column, served by the live-view server on
//! loopback with its own per-launch token.
//!
//! GTK owns the main thread, so the shell itself runs on a thread of its
//! own (with tokio's threads under it) and asks for the window through a
//! [`WindowOpener`] once its server listens. Shutdown has one path whoever
//! starts it: closing the window cancels the shell, Ctrl+C and SIGTERM do
//! the same; the shell then ends agent sessions, stops Chromium and
//! removes the temporary profile, and only when it has finished does the
//! window go away and the process exit with the shell's status.
//!
//! The page in the window sets its own title (the shown page and who holds
//! control); the window takes it over.

use std::process::ExitCode;
use std::sync::mpsc;
use std::thread::JoinHandle;

use browser_provider::{BrowserError, Result};
use tao::dpi::LogicalSize;
use tao::event::{Event, WindowEvent};
use tao::event_loop::{ControlFlow, EventLoopBuilder};
use tao::platform::run_return::EventLoopExtRunReturn;
use tao::window::{Icon, Window, WindowBuilder};
use tokio_util::sync::CancellationToken;
use wry::{NewWindowResponse, WebView, WebViewBuilder};

/// The window's icon (also in `assets/` for the `.desktop` file).
const ICON_PNG: &[u8] = include_bytes!("../../assets/browser-shell.png");

/// What the shell asks the window to show.
#[derive(Debug)]
pub struct WindowRequest {
    /// The browser column with its token (loopback).
    pub viewer_url: String,
    /// Cancelled when the person closes the window: the shell stops.
    pub close: CancellationToken,
}

/// Lets the shell (on its own thread) ask the main thread for the window.
#[derive(Debug, Clone)]
pub struct WindowOpener(mpsc::Sender<WindowRequest>);

impl WindowOpener {
    /// Opens the window showing `request.viewer_url`.
    ///
    /// # Errors
    /// `NOT_CONNECTED` when the window side is gone (it never is while the
    /// shell runs, short of a crash).
    pub fn open(&self, request: WindowRequest) -> Result<()> {
        self.0
            .send(request)
            .map_err(|_| BrowserError::not_connected("the desktop window"))
    }
}

/// Messages to the window's event loop.
#[derive(Debug)]
enum UserEvent {
    /// The column page changed its title.
    Title(String),
    /// The shell finished shutting down.
    ShellStopped,
}

/// Whether a desktop session can show a window here: a display is set.
pub fn display_available() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Runs `shell` on a thread of its own and, when it asks, a window on this
/// (the main) thread; returns the shell's status once it has stopped.
pub fn run<F>(shell: F) -> ExitCode
where
    F: FnOnce(WindowOpener) -> ExitCode + Send + 'static,
{
    let (opener, requests) = mpsc::channel();
    let worker = match std::thread::Builder::new()
        .name("shell".into())
        .spawn(move || shell(WindowOpener(opener)))
    {
        Ok(worker) => worker,
        Err(error) => {
            tracing::error!(%error, "cannot start the shell thread");
            return ExitCode::FAILURE;
        }
    };
    // The shell drops its opener without asking when it needs no window.
    match requests.recv() {
        Ok(request) => show(request, worker),
        Err(_) => finish(worker),
    }
}

/// Waits for the shell thread and returns its status.
fn finish(worker: JoinHandle<ExitCode>) -> ExitCode {
    worker.join().unwrap_or(ExitCode::FAILURE)
}

/// Shows the window until the shell stops.
fn show(request: WindowRequest, worker: JoinHandle<ExitCode>) -> ExitCode {
    // A display that is set but cannot be opened: the shell goes on
    // without a window, as the relay (tao would panic on it).
    if let Err(error) = gtk::init() {
        let display = std::env::var("DISPLAY")
            .or_else(|_| std::env::var("WAYLAND_DISPLAY"))
            .unwrap_or_default();
        warn_no_window(
            &request.viewer_url,
            &format!("display {display:?}: {error}"),
        );
        return finish(worker);
    }
    let mut event_loop = EventLoopBuilder::<UserEvent>::with_user_event().build();
    let proxy = event_loop.create_proxy();
    let (window, _webview) = match build_window(&event_loop, &request.viewer_url, proxy.clone()) {
        Ok(built) => built,
        Err(error) => {
            warn_no_window(&request.viewer_url, &error);
            return finish(worker);
        }
    };
    // When the shell stops (closed window, signal, or error), the loop ends.
    let waiter = std::thread::spawn(move || {
        let status = finish(worker);
        let _ = proxy.send_event(UserEvent::ShellStopped);
        status
    });
    event_loop.run_return(|event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        match event {
            Event::WindowEvent {
                event: WindowEvent::CloseRequested,
                ..
            } => {
                tracing::info!("the window was closed; stopping");
                // Gone from the screen at once; the shell shuts down behind it.
                window.set_visible(false);
                request.close.cancel();
            }
            Event::UserEvent(UserEvent::Title(title)) => window.set_title(&title),
            Event::UserEvent(UserEvent::ShellStopped) => *control_flow = ControlFlow::Exit,
            _ => {}
        }
    });
    waiter.join().unwrap_or(ExitCode::FAILURE)
}

/// The window and its webview on the browser column.
fn build_window(
    event_loop: &tao::event_loop::EventLoop<UserEvent>,
    viewer_url: &str,
    proxy: tao::event_loop::EventLoopProxy<UserEvent>,
) -> std::result::Result<(Window, WebView), String> {
    let window = WindowBuilder::new()
        .with_title("browser-shell")
        .with_inner_size(LogicalSize::new(1280.0, 860.0))
        .with_min_inner_size(LogicalSize::new(480.0, 360.0))
        .with_window_icon(window_icon())
        .build(event_loop)
        .map_err(|e| e.to_string())?;
    let origin = origin_of(viewer_url);
    let builder = WebViewBuilder::new()
        .with_url(viewer_url)
        .with_focused(true)
        .with_document_title_changed_handler(move |title| {
            let _ = proxy.send_event(UserEvent::Title(title));
        })
        // The column stays the column: no navigating away, no popups.
        .with_navigation_handler(move |url| origin_of(&url) == origin)
        .with_new_window_req_handler(|_, _| NewWindowResponse::Deny);
    let webview = {
        use tao::platform::unix::WindowExtUnix;
        use wry::WebViewBuilderExtUnix;
        let container = window
            .default_vbox()
            .ok_or("the window has no container for the webview")?;
        builder.build_gtk(container).map_err(|e| e.to_string())?
    };
    Ok((window, webview))
}

/// `scheme://host:port` of a URL (empty when it has none).
fn origin_of(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default()
}

fn window_icon() -> Option<Icon> {
    let image = image::load_from_memory_with_format(ICON_PNG, image::ImageFormat::Png)
        .ok()?
        .into_rgba8();
    let (width, height) = image.dimensions();
    Icon::from_rgba(image.into_raw(), width, height).ok()
}

/// Says (once, on stderr) that there is no window and where the column is.
fn warn_no_window(viewer_url: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "browser-shell: cannot open a window ({why}); the browser column is at {viewer_url}"
    );
}
