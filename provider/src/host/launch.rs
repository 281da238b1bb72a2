//! Finding and starting a Chromium child process with a debugging pipe.
//!
//! The child gets a private debugging pipe ([`platform::debug_pipe`]), a
//! process tree we can end in one call ([`platform::process`]: a process
//! group on Unix, a Job Object on Windows), and a profile directory we own.
//! [`BrowserProcess`] ends the tree and removes a temporary profile when
//! dropped, so no process and no directory outlive the host, even on an
//! error path.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, PipeReader, PipeWriter};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{BrowserError, Result};
use crate::platform::{self, debug_pipe::DebugPipe, discovery::Candidate, process::ProcessTree};

/// Environment variable naming the browser executable to use.
pub const BROWSER_ENV: &str = "BROWSER_SHELL_CHROMIUM";

/// Where the browser keeps its profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ProfileDir {
    /// A fresh temporary directory, removed when the host is dropped.
    #[default]
    Temporary,
    /// A directory that persists (cookies and logins survive restarts).
    Persistent(PathBuf),
}

/// How to launch Chromium.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The executable; `None` searches [`BROWSER_ENV`], the headless shell
    /// (when `headless`), `PATH` and standard locations (see [`find_browser`]).
    pub executable: Option<PathBuf>,
    /// Run without a window.
    pub headless: bool,
    /// Profile directory policy.
    pub profile: ProfileDir,
    /// Initial window size in pixels (also the headless screen size).
    pub window_size: (u32, u32),
    /// Hosts the browser's network stack must not reach, as Chromium's
    /// `--host-resolver-rules` (see
    /// [`NavigationPolicy::host_resolver_rules`](crate::policy::NavigationPolicy::host_resolver_rules)).
    pub host_resolver_rules: Option<String>,
    /// Extra command-line switches, appended last.
    pub extra_args: Vec<String>,
    /// Bound for each CDP command unless an operation gives its own.
    pub command_timeout: Duration,
    /// Bound for the browser to start and answer its first command.
    pub startup_timeout: Duration,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        Self {
            executable: None,
            headless: true,
            profile: ProfileDir::Temporary,
            window_size: (1280, 800),
            host_resolver_rules: None,
            extra_args: Vec::new(),
            command_timeout: Duration::from_secs(30),
            startup_timeout: Duration::from_secs(30),
        }
    }
}

/// Finds the browser executable: the explicit path, then [`BROWSER_ENV`],
/// then where this OS installs browsers ([`platform::discovery`]): for a
/// browser without a window (`headless`) the headless shell first, then the
/// usual names on `PATH` and the standard locations.
///
/// # Errors
/// `BROWSER_NOT_FOUND` listing every candidate tried.
pub fn find_browser(explicit: Option<&Path>, headless: bool) -> Result<PathBuf> {
    let mut tried = Vec::new();
    if let Some(path) = explicit {
        if is_executable(path) {
            return Ok(path.to_path_buf());
        }
        tried.push(path.display().to_string());
        return Err(BrowserError::BrowserNotFound { tried });
    }
    if let Some(path) = std::env::var_os(BROWSER_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        if is_executable(&path) {
            return Ok(path);
        }
        tried.push(format!("{}={}", BROWSER_ENV, path.display()));
    }
    let search_path = std::env::var_os("PATH").unwrap_or_default();
    for candidate in platform::discovery::candidates(headless) {
        match candidate {
            Candidate::Path(path) => {
                if is_executable(&path) {
                    return Ok(path);
                }
                tried.push(path.display().to_string());
            }
            Candidate::OnPath(name) => {
                if let Some(path) = platform::discovery::on_path(name, &search_path) {
                    return Ok(path);
                }
                tried.push(format!("{name} on PATH"));
            }
        }
    }
    Err(BrowserError::BrowserNotFound { tried })
}

/// Whether `executable` is a headless shell (no window, ever).
pub fn is_headless_shell(executable: &Path) -> bool {
    executable
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.contains("headless-shell") || name.contains("headless_shell"))
}

fn is_executable(path: &Path) -> bool {
    platform::discovery::is_program(path)
}

/// The switches we always pass: quiet (no first-run UI, no calls home — this
/// machine's network is closed and a product should not phone home anyway),
/// and predictable.
fn quiet_switches() -> &'static [&'static str] {
    &[
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        // Translate, MediaRouter, OptimizationHints and AutofillServerCommunication
        // call home. DeferRendererTasksAfterInput holds a page's own tasks
        // (timers, messages) after a click until the next frame is painted,
        // so that a person sees the response sooner; an agent wants the
        // page's response itself, and the look after an action then waits
        // for a frame only when the page asked for one (`settle` in agent/wait.js).
        "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,DeferRendererTasksAfterInput",
        "--metrics-recording-only",
        "--password-store=basic",
        "--use-mock-keychain",
        "--disable-dev-shm-usage",
        // Cross-site frames in processes of their own, as in the full
        // browser (the headless shell does not isolate sites by default).
        "--site-per-process",
    ]
}

/// A running Chromium child and the profile it uses.
#[derive(Debug)]
pub struct BrowserProcess {
    /// The child; `None` once reaped.
    child: Mutex<Option<Child>>,
    /// The child and its helpers, ended together.
    tree: ProcessTree,
    /// Held so the directory lives exactly as long as the browser; taken
    /// (and so removed) by [`BrowserProcess::terminate`].
    profile: Mutex<Option<tempfile::TempDir>>,
    /// The temporary profile's path, for callers that check it is gone.
    profile_path: Option<PathBuf>,
    /// The profile the browser runs with (temporary or the person's).
    user_data_dir: PathBuf,
    /// The last lines the browser wrote to stderr, for launch diagnostics.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// How the process ended, once it has (`None` while it runs).
    exit: tokio::sync::watch::Receiver<Option<String>>,
    /// The program that runs.
    executable: PathBuf,
}

/// Temporary profiles are named `browser-shell-profile-XXXXXX` in the temp dir.
const TEMP_PROFILE_PREFIX: &str = "browser-shell-profile-";

/// File in a temporary profile naming the process that owns it and, once
/// it runs, the browser that uses it: a line each.
const OWNER_FILE: &str = ".browser-shell-owner";

/// Writes the owner file of a temporary profile: this process and, once it
/// runs, the browser.
fn record_owners(profile: &Path, browser: Option<u32>) {
    let mut owners = format!("{}\n", std::process::id());
    if let Some(browser) = browser {
        owners.push_str(&format!("{browser}\n"));
    }
    let _ = std::fs::write(profile.join(OWNER_FILE), owners);
}

/// Removes temporary profiles whose owning process is gone (it was killed
/// before it could clean up) and whose browser has ended too: a browser
/// whose owner was killed ends by itself, and its helpers write their
/// caches as they end, which would put back a profile removed meanwhile
/// (without its owner file, so for good). Other profiles are left alone.
fn sweep_orphaned_profiles() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.filter_map(std::result::Result::ok) {
        let path = entry.path();
        let is_ours = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(TEMP_PROFILE_PREFIX));
        if !is_ours {
            continue;
        }
        let Ok(owner_file) = std::fs::read_to_string(path.join(OWNER_FILE)) else {
            continue;
        };
        let mut pids = owner_file
            .lines()
            .map(|line| line.trim().parse::<u32>().ok());
        let Some(Some(owner)) = pids.next() else {
            continue;
        };
        let browser = pids.next().flatten();
        if !platform::process::is_alive(owner)
            && !browser.is_some_and(platform::process::tree_is_alive)
        {
            tracing::debug!(path = %path.display(), owner, ?browser, "removing an orphaned temporary profile");
            remove_singleton_dir(&path, None);
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Removes the directory of a dead browser's process-singleton socket.
///
/// Chromium (not the headless shell) puts that socket in a directory of
/// its own in the temporary directory (`org.chromium.Chromium.XXXXXX`,
/// `com.google.Chrome.XXXXXX`) and links it from the profile as
/// `SingletonSocket`. It removes both when it exits by itself; a browser
/// that was killed, or crashed, leaves the directory behind for good.
///
/// Only the directory of a dead browser: the one `browser` names, or with
/// `None` any that is no longer running (the profile's `SingletonLock`
/// names it, as `<host>-<pid>`). A browser that handed its command line to
/// another one on the same profile and quit must not take that one's.
fn remove_singleton_dir(user_data_dir: &Path, browser: Option<u32>) {
    let holder = std::fs::read_link(user_data_dir.join("SingletonLock"))
        .ok()
        .and_then(|lock| {
            let (_, pid) = lock.to_str()?.rsplit_once('-')?;
            pid.parse::<u32>().ok()
        });
    let dead = match (holder, browser) {
        (Some(holder), Some(browser)) => holder == browser,
        (Some(holder), None) => !platform::process::is_alive(holder),
        (None, _) => false,
    };
    if !dead {
        return;
    }
    let Ok(socket) = std::fs::read_link(user_data_dir.join("SingletonSocket")) else {
        return;
    };
    let Some(dir) = socket.parent() else { return };
    let named_by_chromium = dir
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("org.chromium.") || name.starts_with("com.google."));
    let in_temp = match (
        dir.parent().map(Path::canonicalize),
        std::env::temp_dir().canonicalize(),
    ) {
        (Some(Ok(parent)), Ok(temp)) => parent == temp,
        _ => false,
    };
    if named_by_chromium && in_temp {
        tracing::debug!(dir = %dir.display(), "removing a dead browser's singleton directory");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Lines of browser stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 20;

impl BrowserProcess {
    /// Starts the browser. Returns the process and our ends of the pipe:
    /// the reader receives the browser's messages, the writer sends ours.
    pub fn spawn(options: &LaunchOptions) -> Result<(Self, PipeReader, PipeWriter)> {
        let executable = find_browser(options.executable.as_deref(), options.headless)?;
        if !options.headless && is_headless_shell(&executable) {
            return Err(BrowserError::LaunchFailed {
                detail: format!(
                    "{} has no window; showing one (--headed) needs the full browser (chromium)",
                    executable.display()
                ),
            });
        }
        tracing::info!(executable = %executable.display(), headless = options.headless, "launching the browser");
        let (profile_dir, profile) = match &options.profile {
            ProfileDir::Temporary => {
                sweep_orphaned_profiles();
                let dir = tempfile::Builder::new()
                    .prefix(TEMP_PROFILE_PREFIX)
                    .tempdir()
                    .map_err(|e| BrowserError::LaunchFailed {
                        detail: format!("cannot create a temporary profile directory: {e}"),
                    })?;
                // Who owns it, so a later launch can clean up after a killed process.
                record_owners(dir.path(), None);
                (dir.path().to_path_buf(), Some(dir))
            }
            ProfileDir::Persistent(path) => {
                std::fs::create_dir_all(path).map_err(|e| BrowserError::LaunchFailed {
                    detail: format!("cannot create profile directory {}: {e}", path.display()),
                })?;
                (path.clone(), None)
            }
        };

        let pipe = DebugPipe::new().map_err(|e| BrowserError::LaunchFailed {
            detail: format!("cannot create the debugging pipe: {e}"),
        })?;

        let mut command = Command::new(&executable);
        command.args(quiet_switches());
        command.arg(format!("--user-data-dir={}", profile_dir.display()));
        command.arg(format!(
            "--window-size={},{}",
            options.window_size.0, options.window_size.1
        ));
        if options.headless {
            command.arg("--headless");
            command.arg("--hide-scrollbars");
            command.arg("--mute-audio");
        }
        if platform::privilege::sandbox_must_be_disabled() {
            command.arg("--no-sandbox");
        }
        if let Some(rules) = &options.host_resolver_rules {
            command.arg(format!("--host-resolver-rules={rules}"));
        }
        command.args(&options.extra_args);
        // No tab of its own: every tab is created through the host, so the
        // set of pages is known and nothing races with our first commands.
        command.arg("--no-startup-window");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        platform::process::isolate(&mut command);
        pipe.attach(&mut command);

        tracing::debug!(executable = %executable.display(), headless = options.headless, "launching Chromium");
        let mut child = command.spawn().map_err(|e| BrowserError::LaunchFailed {
            detail: format!("cannot run {}: {e}", executable.display()),
        })?;
        let (responses_reader, commands_writer) = pipe.into_parent_ends();
        if profile.is_some() {
            record_owners(&profile_dir, Some(child.id()));
        }
        let tree = match ProcessTree::adopt(&child) {
            Ok(tree) => tree,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BrowserError::LaunchFailed {
                    detail: format!("cannot take charge of the browser's processes: {e}"),
                });
            }
        };

        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_LINES)));
        if let Some(stderr) = child.stderr.take() {
            let tail = Arc::clone(&stderr_tail);
            std::thread::Builder::new()
                .name("chromium-stderr".into())
                .spawn(move || forward_stderr(stderr, tail))
                .map_err(|e| BrowserError::LaunchFailed {
                    detail: format!("cannot start the stderr reader: {e}"),
                })?;
        }

        let (exit_sender, exit) = tokio::sync::watch::channel(None);
        let watch =
            platform::process::ExitWatch::new(&child).map_err(|e| BrowserError::LaunchFailed {
                detail: format!("cannot watch the browser process: {e}"),
            })?;
        std::thread::Builder::new()
            .name("chromium-exit".into())
            .spawn(move || {
                let _ = exit_sender.send(Some(watch.wait()));
            })
            .map_err(|e| BrowserError::LaunchFailed {
                detail: format!("cannot start the exit watcher: {e}"),
            })?;

        let process = Self {
            exit,
            executable,
            child: Mutex::new(Some(child)),
            tree,
            profile_path: profile.as_ref().map(|dir| dir.path().to_path_buf()),
            user_data_dir: profile_dir,
            profile: Mutex::new(profile),
            stderr_tail,
        };
        Ok((process, responses_reader, commands_writer))
    }

    /// The program that runs (for logs and status).
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// The operating-system process id, while the child is known.
    pub fn pid(&self) -> Option<u32> {
        self.lock_child().as_ref().map(Child::id)
    }

    /// Resolves once the process has exited, with how ("killed by signal
    /// 9 (SIGKILL)", "exited with status 1").
    pub async fn exited(&self) -> String {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(cause) => cause.clone().unwrap_or_default(),
            Err(_) => "it exited".into(),
        }
    }

    /// The temporary profile directory, if this process uses one.
    pub fn temporary_profile(&self) -> Option<&Path> {
        self.profile_path.as_deref()
    }

    /// The browser's last stderr lines joined, for error messages.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Kills the browser and its helpers, reaps it, then removes what a
    /// killed browser leaves behind: its singleton directory and a
    /// temporary profile. Idempotent.
    pub fn terminate(&self) {
        if let Some(pid) = self.kill() {
            remove_singleton_dir(&self.user_data_dir, Some(pid));
        }
        let profile = self
            .profile
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(dir) = profile
            && let Err(error) = dir.close()
        {
            tracing::warn!(%error, "could not remove the temporary profile");
        }
    }

    /// Kills the browser and its helpers and reaps it; its process id, or
    /// `None` when it was reaped already. Idempotent.
    fn kill(&self) -> Option<u32> {
        let mut child = self.lock_child().take()?;
        self.tree.kill();
        let _ = child.kill();
        let _ = child.wait();
        Some(child.id())
    }

    fn lock_child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for BrowserProcess {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn forward_stderr(stderr: std::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        tracing::debug!(target: "chromium", "{line}");
        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_missing_path_is_reported() {
        let error = find_browser(Some(Path::new("/nonexistent/chromium")), true).err();
        let Some(BrowserError::BrowserNotFound { tried }) = error else {
            panic!("expected BROWSER_NOT_FOUND, got {error:?}");
        };
        assert_eq!(tried, vec!["/nonexistent/chromium".to_owned()]);
    }

    #[test]
    fn orphaned_temporary_profiles_are_swept_and_live_ones_kept() {
        // A process that has exited: its pid is (almost certainly) free now.
        // This test binary listing its tests is a program on every OS.
        let mut gone = Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let dead_pid = gone.id();
        gone.wait().unwrap();
        let orphan = tempfile::Builder::new()
            .prefix(TEMP_PROFILE_PREFIX)
            .tempdir()
            .unwrap()
            .keep();
        std::fs::write(orphan.join(OWNER_FILE), dead_pid.to_string()).unwrap();
        let live = tempfile::Builder::new()
            .prefix(TEMP_PROFILE_PREFIX)
            .tempdir()
            .unwrap();
        std::fs::write(live.path().join(OWNER_FILE), std::process::id().to_string()).unwrap();
        // A dead owner whose browser still runs (its helpers ending).
        let mut browser = Command::new(std::env::current_exe().unwrap());
        browser
            .args([
                "--ignored",
                "--exact",
                "platform::process::tests::sleeps_when_asked",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        platform::process::isolate(&mut browser);
        let mut browser = browser.spawn().unwrap();
        let ending = tempfile::Builder::new()
            .prefix(TEMP_PROFILE_PREFIX)
            .tempdir()
            .unwrap()
            .keep();
        let owners = format!("{dead_pid}\n{}\n", browser.id());
        std::fs::write(ending.join(OWNER_FILE), owners).unwrap();

        sweep_orphaned_profiles();
        assert!(!orphan.exists(), "the dead process's profile is removed");
        assert!(live.path().exists(), "a live process's profile is kept");
        assert!(
            ending.exists(),
            "a profile whose browser still runs is kept"
        );

        ProcessTree::adopt(&browser).unwrap().kill();
        browser.wait().unwrap();
        sweep_orphaned_profiles();
        assert!(
            !ending.exists(),
            "once its browser has ended, it is removed"
        );
    }

    #[test]
    fn quiet_switches_include_the_pipe() {
        assert!(quiet_switches().contains(&"--remote-debugging-pipe"));
        assert!(quiet_switches().contains(&"--disable-background-networking"));
    }
}
