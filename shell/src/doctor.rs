//! `browser-shell doctor`: checks what the shell needs on this machine and
//! says what to fix, one line each. Exit status 0 when nothing needs fixing.
//!
//! Checks: the configuration (file and flags), the browser agents get
//! (which, its version, headless shell or not; with `--browser extension`
//! the pairing and the bridge; with `auto-connect` the running browser
//! found), the full browser a
//! `--headed` run needs, the desktop window (a display, the window program
//! and WebKitGTK), the runtime directory, and a running instance (whether
//! it answers).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use browser_provider::host::{find_browser, is_headless_shell};

use crate::browser::options::BrowserOptions;
use crate::config::Config;
use crate::{desktop, instance};

/// How long a program asked for its version, or an instance for its
/// status, may take to answer.
const ANSWER_BOUND: Duration = Duration::from_secs(5);

/// What one check found.
#[derive(Debug)]
enum Finding {
    /// All is well; what was found.
    Fine(String),
    /// Not needed for everything; said so a person knows.
    Note(String),
    /// Needs fixing: what is wrong and how to fix it.
    Fix(String, String),
}

/// Runs every check, prints one line each, and exits 0 when nothing needs fixing.
pub async fn run(options: &BrowserOptions) -> ExitCode {
    let mut findings: Vec<(&str, Finding)> = Vec::new();
    let config = match options.resolve() {
        Ok(config) => {
            let source = options.config.as_ref().map_or_else(
                || "no config file (defaults and flags)".to_owned(),
                |path| format!("{} is valid", path.display()),
            );
            findings.push(("config", Finding::Fine(source)));
            config
        }
        Err(error) => {
            findings.push((
                "config",
                Finding::Fix(error.to_string(), error.hint().to_owned()),
            ));
            Config::default()
        }
    };
    findings.push(("browser", agents_browser(&config).await));
    findings.push(("full browser", full_browser(&config).await));
    findings.push(("window", window()));
    findings.push(("runtime dir", runtime_dir()));
    findings.push(("instance", running_instance().await));

    let mut out = std::io::stdout().lock();
    let mut healthy = true;
    for (what, finding) in &findings {
        let _ = match finding {
            Finding::Fine(found) => writeln!(out, "ok    {what}: {found}"),
            Finding::Note(note) => writeln!(out, "note  {what}: {note}"),
            Finding::Fix(problem, fix) => {
                healthy = false;
                writeln!(out, "FIX   {what}: {problem}\n      fix: {fix}")
            }
        };
    }
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The browser agents get (headless): which, its version, headless shell or not.
async fn agents_browser(config: &Config) -> Finding {
    if config.browser == crate::config::BrowserKind::Extension {
        return match crate::browser::extension::diagnose().await {
            Ok(found) => Finding::Fine(format!(
                "the person's Chrome through the extension: {found}"
            )),
            Err((problem, fix)) => Finding::Fix(problem, fix),
        };
    }
    if config.browser == crate::config::BrowserKind::AutoConnect {
        return persons_browser_with_debugging(config).await;
    }
    if let Some(endpoint) = &config.connect {
        return Finding::Note(format!("agents use the browser at {endpoint} (--connect)"));
    }
    let headless = config.headless;
    match find_browser(config.browser_path.as_deref(), headless) {
        Ok(path) => {
            let kind = if is_headless_shell(&path) {
                "headless shell"
            } else if headless {
                "full Chromium run headless; installing chromium-headless-shell starts faster and \
                 uses less memory"
            } else {
                "full Chromium with a window (--headed)"
            };
            match version_of(&path).await {
                Ok(version) => Finding::Fine(format!("{} ({version}; {kind})", path.display())),
                Err(why) => Finding::Fix(
                    format!("{} does not run: {why}", path.display()),
                    "reinstall it (apt install chromium-headless-shell) or name another with --browser"
                        .into(),
                ),
            }
        }
        Err(error) => Finding::Fix(error.to_string(), error.hint().to_owned()),
    }
}

/// With `--browser auto-connect`: the person's browser found (which,
/// where, which port), or what was searched, why each place failed, and
/// how to turn remote debugging on.
async fn persons_browser_with_debugging(config: &Config) -> Finding {
    match crate::browser::auto_connect::diagnose(config).await {
        Ok(found) => Finding::Fine(found),
        Err((problem, fix)) => Finding::Fix(problem, fix),
    }
}

/// The full browser, which a `--headed` run needs.
async fn full_browser(config: &Config) -> Finding {
    let persons = config.browser != crate::config::BrowserKind::Launch;
    if config.connect.is_some() || !config.headless || persons {
        return Finding::Note("checked above".into());
    }
    match find_browser(None, false) {
        Ok(path) if is_headless_shell(&path) => {
            Finding::Note("only the headless shell is installed: --headed needs chromium".into())
        }
        Ok(path) => match version_of(&path).await {
            Ok(version) => Finding::Fine(format!("{} ({version}), for --headed", path.display())),
            Err(why) => Finding::Note(format!("{} does not run: {why}", path.display())),
        },
        Err(_) => Finding::Note("not installed: --headed needs it (apt install chromium)".into()),
    }
}

/// `PROGRAM --version`, first line.
async fn version_of(program: &Path) -> Result<String, String> {
    let asked = tokio::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(ANSWER_BOUND, asked)
        .await
        .map_err(|_| format!("no answer to --version within {ANSWER_BOUND:?}"))?
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout);
    match text.lines().next().map(str::trim) {
        Some(line) if !line.is_empty() => Ok(line.to_owned()),
        _ => Err("it printed no version".into()),
    }
}

/// The desktop window: a display, the window program, and the WebKitGTK
/// it loads (the program answers `--help` only when its libraries load).
fn window() -> Finding {
    let program = match desktop::available() {
        Ok(program) => program,
        Err(why) => {
            return Finding::Note(format!(
                "{why}; `browser-shell` serves the relay instead (open its link in a browser)"
            ));
        }
    };
    let loads = std::process::Command::new(&program)
        .arg("--help")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    match loads {
        Ok(output) if output.status.success() => Finding::Fine(format!(
            "{} with WebKitGTK; display {}",
            program.display(),
            display_name()
        )),
        Ok(output) => Finding::Fix(
            format!(
                "{} does not start: {}",
                program.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            "install WebKitGTK (apt install libwebkit2gtk-4.1-0)".into(),
        ),
        Err(error) => Finding::Fix(
            format!("{} does not start: {error}", program.display()),
            "reinstall browser-shell".into(),
        ),
    }
}

fn display_name() -> String {
    std::env::var("DISPLAY")
        .or_else(|_| std::env::var("WAYLAND_DISPLAY"))
        .unwrap_or_default()
}

/// The runtime directory: private to this user (it holds tokens).
fn runtime_dir() -> Finding {
    match instance::runtime_dir() {
        Ok(dir) => {
            let access = crate::platform::files::describe_access(&dir);
            Finding::Fine(format!("{} ({access})", dir.display()))
        }
        Err(error) => Finding::Fix(error.to_string(), error.hint().to_owned()),
    }
}

/// A running instance, and whether it answers.
async fn running_instance() -> Finding {
    let Some(info) = instance::find() else {
        return Finding::Note(
            "none runs; tool commands start one, `browser-shell relay` or the window serve people"
                .into(),
        );
    };
    let answered = async {
        let client = reqwest::Client::builder().timeout(ANSWER_BOUND).build()?;
        client
            .get(format!("{}/status", info.url))
            .bearer_auth(&info.token)
            .send()
            .await?
            .error_for_status()
    };
    match answered.await {
        Ok(_) => Finding::Fine(format!(
            "a {:?} instance (pid {}) answers at {}",
            info.kind, info.pid, info.url
        )),
        Err(error) => Finding::Fix(
            format!(
                "a {:?} instance (pid {}) at {} does not answer: {error}",
                info.kind, info.pid, info.url
            ),
            format!("stop it (kill {}) and start it again", info.pid),
        ),
    }
}
