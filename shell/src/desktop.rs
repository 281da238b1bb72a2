//! The desktop window: a program of its own, `browser-shell-window` (built
//! with the cargo feature `desktop`), showing the browser column that this
//! shell serves on loopback with its own per-launch token.
//!
//! GTK and WebKitGTK live only in that program, so this one (MCP, tool
//! commands, the relay) starts without loading them. The shell talks to it
//! on its standard input: a line `raise` brings it to the front; the input
//! closing, which also happens when this process dies, tells it to go.
//! When the person closes the window, the shell shuts down: it ends agent
//! sessions, stops Chromium and removes the temporary profile.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// The window program's name.
const WINDOW_PROGRAM: &str = "browser-shell-window";

/// Its exit status when it cannot open a window (it has said why, and where
/// the column is, on stderr).
const NO_WINDOW: i32 = 3;

/// Whether a desktop session can show a window here: a display is set and
/// the window program is installed.
pub fn available() -> Result<PathBuf, String> {
    if !["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
    {
        return Err("no display (DISPLAY / WAYLAND_DISPLAY unset)".into());
    }
    window_program().ok_or_else(|| {
        format!("{WINDOW_PROGRAM} is not installed next to browser-shell (this build has no desktop window)")
    })
}

/// Where the window program is: next to this executable (a build tree, or
/// `/usr/bin`), else in `../lib/browser-shell/` from it.
fn window_program() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join(WINDOW_PROGRAM),
        dir.join("../lib/browser-shell").join(WINDOW_PROGRAM),
    ]
    .into_iter()
    .find(|candidate| candidate.is_file())
}

/// The open window. Dropping it closes the window.
#[derive(Debug, Default)]
pub struct Window {
    /// Cancelled on drop: the writer then closes the window's standard
    /// input, which tells it to go.
    closing: CancellationToken,
    /// Set when the shell closes the window (rather than the person).
    leaving: Arc<AtomicBool>,
}

impl Drop for Window {
    fn drop(&mut self) {
        self.leaving.store(true, Ordering::SeqCst);
        self.closing.cancel();
    }
}

/// Writes a `raise` line to the window's standard input at each of
/// `raise_requests` until `closing`; then drops the input, which closes it.
async fn speak_to_window(
    mut stdin: tokio::process::ChildStdin,
    mut raise_requests: Option<crate::platform::signals::RaiseRequests>,
    closing: CancellationToken,
) {
    use tokio::io::AsyncWriteExt;
    loop {
        let raise = async {
            match raise_requests.as_mut() {
                Some(requests) => requests.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = closing.cancelled() => return,
            request = raise => {
                tracing::info!("asked to bring the window to the front");
                if request.is_none() || stdin.write_all(b"raise\n").await.is_err() {
                    return;
                }
                let _ = stdin.flush().await;
            }
        }
    }
}

/// Opens the window on `viewer_url`. When the person closes it, `close` is
/// cancelled. Each of `raise_requests` (SIGUSR1, sent by a second desktop
/// on the same profile) brings it to the front. When no window can be
/// opened, that is said on stderr with where the column is, and the shell
/// goes on without one.
pub fn open(
    viewer_url: &str,
    close: CancellationToken,
    raise_requests: Option<crate::platform::signals::RaiseRequests>,
) -> Window {
    let program = match available() {
        Ok(program) => program,
        Err(why) => {
            warn_no_window(viewer_url, &why);
            return Window::default();
        }
    };
    let spawned = tokio::process::Command::new(&program)
        .arg(viewer_url)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            warn_no_window(viewer_url, &format!("{}: {error}", program.display()));
            return Window::default();
        }
    };
    let window = Window {
        closing: CancellationToken::new(),
        leaving: Arc::default(),
    };
    if let Some(stdin) = child.stdin.take() {
        tokio::spawn(speak_to_window(
            stdin,
            raise_requests,
            window.closing.clone(),
        ));
    }
    let leaving = Arc::clone(&window.leaving);
    let viewer_url = viewer_url.to_owned();
    tokio::spawn(async move {
        let status = child.wait().await;
        if leaving.load(Ordering::SeqCst) {
            return;
        }
        match status {
            Ok(status) if status.success() => {
                tracing::info!("the window was closed; stopping");
                close.cancel();
            }
            Ok(status) if status.code() == Some(NO_WINDOW) => {}
            Ok(status) => {
                warn_no_window(&viewer_url, &format!("the window program ended: {status}"))
            }
            Err(error) => warn_no_window(&viewer_url, &error.to_string()),
        }
    });
    window
}

/// Says (on stderr) that there is no window and where the column is.
fn warn_no_window(viewer_url: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "browser-shell: cannot open a window ({why}); the browser column is at {viewer_url}"
    );
}
