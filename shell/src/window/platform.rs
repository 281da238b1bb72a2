//! How the web view goes into the window on each OS: on Linux GTK must be
//! started first and the view goes into the window's GTK box (WebKitGTK);
//! on Windows (WebView2) and macOS (WKWebView) it goes into the window
//! itself.

use tao::window::Window;
use wry::{WebView, WebViewBuilder};

/// Readies the windowing toolkit; `Err(why)` when there is no usable
/// display.
#[cfg(target_os = "linux")]
pub fn init() -> Result<(), String> {
    gtk::init().map_err(|error| {
        let display = std::env::var("DISPLAY")
            .or_else(|_| std::env::var("WAYLAND_DISPLAY"))
            .unwrap_or_default();
        format!("display {display:?}: {error}")
    })
}

/// Nothing to ready here: tao starts the toolkit with its event loop.
#[cfg(not(target_os = "linux"))]
pub fn init() -> Result<(), String> {
    Ok(())
}

/// Builds the web view into `window`.
#[cfg(target_os = "linux")]
pub fn attach(builder: WebViewBuilder<'_>, window: &Window) -> Result<WebView, String> {
    use tao::platform::unix::WindowExtUnix;
    use wry::WebViewBuilderExtUnix;
    let container = window
        .default_vbox()
        .ok_or("the window has no container for the webview")?;
    builder.build_gtk(container).map_err(|e| e.to_string())
}

/// Builds the web view into `window`.
#[cfg(not(target_os = "linux"))]
pub fn attach(builder: WebViewBuilder<'_>, window: &Window) -> Result<WebView, String> {
    builder.build(window).map_err(|e| e.to_string())
}
