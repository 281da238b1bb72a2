//! What the window program does differently per OS: initializing the
//! toolkit, and putting the webview in the window.
//!
//! * **Linux**: GTK must be initialized first (that is where a missing
//!   display shows), and wry's WebKitGTK view goes into the window's GTK
//!   container (`build_gtk`; `build` does not work with tao's GTK window).
//! * **macOS and Windows**: nothing to initialize; wry puts its WKWebView
//!   or WebView2 in the window itself (`build`). On Windows the WebView2
//!   runtime must be installed (it ships with Windows 11 and current 10).

use tao::window::Window;
use wry::{WebView, WebViewBuilder};

/// Prepares the toolkit before the event loop exists.
///
/// # Errors
/// Why no window can be opened (no display, on Linux).
#[cfg(target_os = "linux")]
pub fn init() -> Result<(), String> {
    gtk::init().map_err(|error| {
        let display = std::env::var("DISPLAY")
            .or_else(|_| std::env::var("WAYLAND_DISPLAY"))
            .unwrap_or_default();
        format!("display {display:?}: {error}")
    })
}

/// Prepares the toolkit before the event loop exists: nothing here.
///
/// # Errors
/// None on this OS.
#[cfg(not(target_os = "linux"))]
pub fn init() -> Result<(), String> {
    Ok(())
}

/// Builds the webview inside `window`.
///
/// # Errors
/// Why the webview could not be made (on Windows, typically a missing
/// WebView2 runtime).
#[cfg(target_os = "linux")]
pub fn build_webview(window: &Window, builder: WebViewBuilder<'_>) -> Result<WebView, String> {
    use tao::platform::unix::WindowExtUnix;
    use wry::WebViewBuilderExtUnix;
    let container = window
        .default_vbox()
        .ok_or("the window has no container for the webview")?;
    builder.build_gtk(container).map_err(|e| e.to_string())
}

/// Builds the webview inside `window`.
///
/// # Errors
/// Why the webview could not be made (on Windows, typically a missing
/// WebView2 runtime).
#[cfg(not(target_os = "linux"))]
pub fn build_webview(window: &Window, builder: WebViewBuilder<'_>) -> Result<WebView, String> {
    builder.build(window).map_err(|e| e.to_string())
}
