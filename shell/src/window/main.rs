//! `browser-shell-window`: the desktop window, a process of its own.
//!
//! A tao window whose wry webview shows the browser column at the URL it
//! is given (served by `browser-shell desktop` on loopback with a
//! per-launch token). GTK and WebKitGTK live only in this small program, so
//! the shell itself (MCP, tool commands, the relay) starts without loading
//! them: that saves about 70 ms and tens of megabytes on every start.
//!
//! The shell starts it and talks to it through its standard input: when
//! that closes (the shell stopped, or died), the window goes away. When the
//! person closes the window, this program exits with status 0 and the
//! shell shuts down. When it cannot open a window (no usable display) it
//! says why and where the column is on stderr, and exits with status 3.
//!
//! The page in the window sets its own title (the shown page and who holds
//! control); the window takes it over. A title that starts with "Help
//! needed:" (an agent's handoff request) also makes the window ask for the
//! person's attention, until the request ends.

mod menu;
mod platform;

use std::io::BufRead;
use std::process::ExitCode;

use tao::dpi::LogicalSize;
use tao::event::{Event, WindowEvent};
use tao::event_loop::{ControlFlow, EventLoopBuilder};
use tao::platform::run_return::EventLoopExtRunReturn;
use tao::window::{Icon, Window, WindowBuilder};
use wry::{NewWindowResponse, WebView, WebViewBuilder};

/// The window's icon (also in `assets/` for the `.desktop` file).
const ICON_PNG: &[u8] = include_bytes!("../../../assets/browser-shell.png");

/// How the column's title starts while an agent asks the person for help.
const HELP_NEEDED: &str = "Help needed:";

/// The exit status when no window can be opened.
const NO_WINDOW: u8 = 3;

/// Messages to the window's event loop.
#[derive(Debug)]
enum UserEvent {
    /// The column page changed its title.
    Title(String),
    /// The shell asks for the window to come to the front (someone started
    /// a second desktop on the same profile).
    Raise,
    /// The shell closed our standard input: it is stopping.
    ShellGone,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let (Some(url), None) = (args.next(), args.next()) else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "usage: browser-shell-window URL (it is started by `browser-shell desktop`)"
        );
        return ExitCode::from(2);
    };
    if url == "--help" || url == "-h" {
        use std::io::Write;
        let _ = writeln!(
            std::io::stdout(),
            "browser-shell-window URL\n\nThe desktop window of browser-shell, started by `browser-shell desktop`:\n\
             it shows the browser column at URL until its standard input closes or the person closes it."
        );
        return ExitCode::SUCCESS;
    }
    if let Err(error) = platform::init() {
        return no_window(&url, &error);
    }
    let mut event_loop = EventLoopBuilder::<UserEvent>::with_user_event().build();
    // ⌘Q and ⌘W on a Mac; nothing elsewhere.
    let _menu_bar = menu::install();
    let proxy = event_loop.create_proxy();
    let (window, _webview) = match build_window(&event_loop, &url, proxy.clone()) {
        Ok(built) => built,
        Err(error) => return no_window(&url, &error),
    };
    // The shell speaks on standard input: a line "raise" brings the window
    // to the front; the input closing is its word to go.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            match line {
                Ok(line) if line.trim() == "raise" => {
                    let _ = proxy.send_event(UserEvent::Raise);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = proxy.send_event(UserEvent::ShellGone);
    });
    let mut asking = false;
    event_loop.run_return(|event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        match event {
            Event::WindowEvent {
                event: WindowEvent::CloseRequested,
                ..
            } => {
                tracing::info!("the window was closed");
                window.set_visible(false);
                *control_flow = ControlFlow::Exit;
            }
            Event::UserEvent(UserEvent::Title(title)) => {
                let wants_attention = title.starts_with(HELP_NEEDED);
                if wants_attention != asking {
                    asking = wants_attention;
                    window.request_user_attention(
                        asking.then_some(tao::window::UserAttentionType::Critical),
                    );
                }
                window.set_title(&title);
            }
            Event::UserEvent(UserEvent::Raise) => {
                tracing::info!("bringing the window to the front");
                window.set_minimized(false);
                window.set_visible(true);
                window.set_focus();
            }
            Event::UserEvent(UserEvent::ShellGone) => *control_flow = ControlFlow::Exit,
            _ => {}
        }
    });
    ExitCode::SUCCESS
}

/// The window and its webview on the browser column.
fn build_window(
    event_loop: &tao::event_loop::EventLoop<UserEvent>,
    viewer_url: &str,
    proxy: tao::event_loop::EventLoopProxy<UserEvent>,
) -> Result<(Window, WebView), String> {
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
    let webview = platform::build_webview(&window, builder)?;
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

/// Says (on stderr) that there is no window, why, and where the column is;
/// exits with [`NO_WINDOW`] so the shell knows it was said.
fn no_window(viewer_url: &str, why: &str) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "browser-shell: cannot open a window ({why}); the browser column is at {viewer_url}"
    );
    ExitCode::from(NO_WINDOW)
}
