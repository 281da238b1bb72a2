//! Finding and starting a Chromium child process with a debugging pipe.
//!
//! The child gets our pipe on fds 3 (it reads commands) and 4 (it writes
//! responses), its own process group (so we can stop it and its helpers in
//! one signal), and a profile directory we own. [`BrowserProcess`] kills the
//! group and removes a temporary profile when dropped, so no process and no
//! directory outlive the host, even on an error path.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, PipeReader, PipeWriter};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{BrowserError, Result};

/// Environment variable naming the browser executable to use.
pub const BROWSER_ENV: &str = "BROWSER_SHELL_CHROMIUM";

/// Program names searched on `PATH`, in order.
/// Where distributions install the headless shell's binary itself: it is
/// run directly, not through the `/usr/bin` wrapper script, which stays
/// in between as a shell process (so signals and exit status would be
/// the script's, not the browser's).
const HEADLESS_SHELL_BINARIES: &[&str] = &["/usr/lib/chromium/chromium-headless-shell"];

/// Names searched on `PATH` first for a browser without a window: the
/// headless shell starts in a third of the time and runs in half the
/// memory of the full browser in headless mode.
const HEADLESS_SHELL_CANDIDATES: &[&str] = &["chromium-headless-shell", "chrome-headless-shell"];

const PATH_CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// Standard application paths on macOS.
const MACOS_CANDIDATES: &[&str] = &[
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
];

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
/// then, for a browser without a window (`headless`), the headless shell
/// on `PATH`, then the usual names on `PATH`, then standard macOS locations.
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
    if headless {
        for path in HEADLESS_SHELL_BINARIES {
            if is_executable(Path::new(path)) {
                return Ok(PathBuf::from(path));
            }
            tried.push((*path).to_owned());
        }
    }
    let search_path = std::env::var_os("PATH").unwrap_or_default();
    let headless_shell = if headless {
        HEADLESS_SHELL_CANDIDATES
    } else {
        &[]
    };
    for name in headless_shell.iter().chain(PATH_CANDIDATES) {
        for dir in std::env::split_paths(&search_path) {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
        tried.push(format!("{name} on PATH"));
    }
    for path in MACOS_CANDIDATES {
        if is_executable(Path::new(path)) {
            return Ok(PathBuf::from(path));
        }
        tried.push((*path).to_owned());
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
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
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
        // for a frame only when the page asked for one (`settle` in agent.js).
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
    /// Held so the directory lives exactly as long as the browser; taken
    /// (and so removed) by [`BrowserProcess::terminate`].
    profile: Mutex<Option<tempfile::TempDir>>,
    /// The temporary profile's path, for callers that check it is gone.
    profile_path: Option<PathBuf>,
    /// The last lines the browser wrote to stderr, for launch diagnostics.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// How the process ended, once it has (`None` while it runs).
    exit: tokio::sync::watch::Receiver<Option<String>>,
    /// The program that runs.
    executable: PathBuf,
}

/// Temporary profiles are named `browser-shell-profile-XXXXXX` in the temp dir.
const TEMP_PROFILE_PREFIX: &str = "browser-shell-profile-";

/// File in a temporary profile naming the process that owns it.
const OWNER_FILE: &str = ".browser-shell-owner";

/// Removes temporary profiles whose owning process is gone (it was killed
/// before it could clean up). Profiles of live processes are left alone.
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
        let owner = std::fs::read_to_string(path.join(OWNER_FILE))
            .ok()
            .and_then(|pid| pid.trim().parse::<libc::pid_t>().ok());
        let Some(owner) = owner else { continue };
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(owner, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            tracing::debug!(path = %path.display(), owner, "removing an orphaned temporary profile");
            let _ = std::fs::remove_dir_all(&path);
        }
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
                let _ = std::fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string());
                (dir.path().to_path_buf(), Some(dir))
            }
            ProfileDir::Persistent(path) => {
                std::fs::create_dir_all(path).map_err(|e| BrowserError::LaunchFailed {
                    detail: format!("cannot create profile directory {}: {e}", path.display()),
                })?;
                (path.clone(), None)
            }
        };

        let pipe_error = |e: std::io::Error| BrowserError::LaunchFailed {
            detail: format!("cannot create the debugging pipe: {e}"),
        };
        // The browser reads commands from fd 3 and writes to fd 4.
        let (commands_reader, commands_writer) = std::io::pipe().map_err(pipe_error)?;
        let (responses_reader, responses_writer) = std::io::pipe().map_err(pipe_error)?;

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
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // Chromium refuses to run as root with its sandbox on.
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
            .stderr(Stdio::piped())
            .process_group(0);

        let child_reads = commands_reader.as_raw_fd();
        let child_writes = responses_writer.as_raw_fd();
        // SAFETY: the closure only calls async-signal-safe functions (fcntl,
        // dup2) on descriptors that are open in the forked child.
        unsafe {
            command.pre_exec(move || {
                // Move both ends out of the way first so that dup2 onto 3 and 4
                // cannot clobber one of them, whatever numbers they had.
                let high_read = libc::fcntl(child_reads, libc::F_DUPFD_CLOEXEC, 10);
                let high_write = libc::fcntl(child_writes, libc::F_DUPFD_CLOEXEC, 10);
                if high_read < 0 || high_write < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::dup2(high_read, 3) < 0 || libc::dup2(high_write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }

        tracing::debug!(executable = %executable.display(), headless = options.headless, "launching Chromium");
        let mut child = command.spawn().map_err(|e| BrowserError::LaunchFailed {
            detail: format!("cannot run {}: {e}", executable.display()),
        })?;
        // Our copies of the child's ends must close, or we never see EOF.
        drop(commands_reader);
        drop(responses_writer);

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
        let pid = libc::pid_t::try_from(child.id()).unwrap_or(0);
        std::thread::Builder::new()
            .name("chromium-exit".into())
            .spawn(move || {
                let _ = exit_sender.send(Some(wait_for_exit(pid)));
            })
            .map_err(|e| BrowserError::LaunchFailed {
                detail: format!("cannot start the exit watcher: {e}"),
            })?;

        let process = Self {
            exit,
            executable,
            child: Mutex::new(Some(child)),
            profile_path: profile.as_ref().map(|dir| dir.path().to_path_buf()),
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

    /// Kills the browser and its helpers, reaps it, then removes a
    /// temporary profile. Idempotent.
    pub fn terminate(&self) {
        self.kill();
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

    /// Kills the browser and its helpers and reaps it. Idempotent.
    fn kill(&self) {
        let Some(mut child) = self.lock_child().take() else {
            return;
        };
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: signalling our own child's process group; failure
            // (already gone) is harmless.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
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

/// Blocks until process `pid` (our child) has exited and says how,
/// without reaping it: [`BrowserProcess::kill`] still reaps it.
fn wait_for_exit(pid: libc::pid_t) -> String {
    let Ok(id) = libc::id_t::try_from(pid) else {
        return "it exited".into();
    };
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits on our own child without reaping it (WNOWAIT);
        // `info` is a valid, writable siginfo_t.
        let waited = unsafe {
            libc::waitid(
                libc::P_PID,
                id,
                &raw mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if waited == 0 {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // Already reaped: we stopped it ourselves.
            return "it was stopped".into();
        }
    }
    // SAFETY: waitid filled `info` for a child that exited.
    let status = unsafe { info.si_status() };
    match info.si_code {
        libc::CLD_EXITED => format!("exited with status {status}"),
        libc::CLD_KILLED | libc::CLD_DUMPED => {
            format!("killed by signal {status}{}", signal_name(status))
        }
        _ => "it exited".into(),
    }
}

/// ` (SIGKILL)` and the like for the signals that usually end a browser.
fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGTRAP => " (SIGTRAP)",
        _ => "",
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
        let mut gone = Command::new("true").spawn().unwrap();
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
        sweep_orphaned_profiles();
        assert!(!orphan.exists(), "the dead process's profile is removed");
        assert!(live.path().exists(), "a live process's profile is kept");
    }

    #[test]
    fn exits_are_described_by_status_or_signal() {
        let mut killed = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = libc::pid_t::try_from(killed.id()).unwrap();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(wait_for_exit(pid), "killed by signal 9 (SIGKILL)");
        killed.wait().unwrap();
        let mut failed = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let pid = libc::pid_t::try_from(failed.id()).unwrap();
        assert_eq!(wait_for_exit(pid), "exited with status 3");
        failed.wait().unwrap();
    }

    #[test]
    fn quiet_switches_include_the_pipe() {
        assert!(quiet_switches().contains(&"--remote-debugging-pipe"));
        assert!(quiet_switches().contains(&"--disable-background-networking"));
    }
}
