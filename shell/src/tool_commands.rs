//! Running the tool commands (`open`, `snapshot`, `act`, …) against a
//! running instance, and `status` / `stop` for that instance; printing
//! their results for a person (text) or a program (`--json`).
//!
//! Exit status: 0 on success; 2 for caller mistakes (`INVALID_ARGUMENT`,
//! `NAVIGATION_BLOCKED`, `ELEMENT_NOT_FOUND`); 3 when no instance or browser
//! can be reached; 1 for other failures (such as `STALE_REF`). Usage errors
//! caught by the argument parser also exit with 2.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use base64::Engine;
use browser_provider::policy::HostRules;
use browser_provider::{BrowserError, Result};
use browser_tools::commands::ToolCommand;
use browser_tools::report;
use serde_json::json;

use crate::cli_endpoint::CliReply;
use crate::client::{Client, StartOptions};
use crate::instance::InstanceInfo;

/// How a tool command prints its answer.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// One JSON object instead of text.
    pub json: bool,
    /// Keep the fences around the page's words (for agents).
    pub fences: bool,
}

/// Runs one tool command on the instance `instance` names, else the one a
/// person watches; starts a background instance if none runs. When others
/// run too, says on stderr which one it used. `host_rules` (the command's
/// `--allow-host`/`--block-host`) narrow the instance's host policy for
/// this call: its navigations and its tabs' requests while it runs.
pub async fn run(
    command: &ToolCommand,
    instance: Option<&str>,
    start: &StartOptions,
    host_rules: &HostRules,
    output: Output,
) -> ExitCode {
    let as_json = output.json;
    let read_stdin = || std::io::read_to_string(std::io::stdin());
    let (tool, arguments) = match command.to_call(read_stdin) {
        Ok(call) => call,
        Err(error) => return failed(&error, as_json),
    };
    // Browser flags shape an instance as it starts: one that runs already
    // has its own, so a flag given now would silently not apply. (Host
    // lists are not among them: they narrow this command's call.)
    if let Some(flag) = start.browser_args.first().and_then(|flag| flag.to_str()) {
        let running = match instance {
            Some(wanted) => crate::instance::select(wanted).ok(),
            None => crate::instance::find(),
        };
        if let Some(running) = running {
            let error = BrowserError::invalid(
                flag.trim_start_matches('-'),
                format!(
                    "{flag} applies to the instance a command starts, and {} runs already with its \
                     own settings; leave the flag out, or stop that instance (for the background \
                     one: browser-shell stop) and run the command again",
                    running.described()
                ),
            );
            return failed(&error, as_json);
        }
    }
    let client = match Client::find_or_start(instance, start).await {
        Ok(client) => client,
        Err(error) => return failed(&error, as_json),
    };
    let others = client.others();
    if !others.is_empty() && instance.is_none() && !as_json {
        let names: Vec<String> = others.iter().map(InstanceInfo::described).collect();
        let _ = writeln!(
            std::io::stderr().lock(),
            "Using {}; also running: {}. Choose with --instance PID, window, relay or background.",
            client.instance().described(),
            names.join(", ")
        );
    }
    let reply = match client.call(tool, arguments, host_rules).await {
        Ok(reply) => reply,
        Err(error) => return failed(&error, as_json),
    };
    let mut reply = reply;
    // The page's words as they are, for people and pipes; `content` prints
    // only them on stdout (a note such as a truncation goes to stderr).
    let mut notes = None;
    if !output.fences {
        match (command, browser_tools::render::fenced_part(&reply.text)) {
            (ToolCommand::Content(_), Some((words, around))) if !reply.is_error => {
                reply.text = words;
                notes = Some(around.trim().to_owned()).filter(|n| !n.is_empty());
            }
            _ => reply.text = browser_tools::render::unfenced(&reply.text),
        }
    }
    if let Some(notes) = &notes
        && !as_json
    {
        let _ = writeln!(std::io::stderr().lock(), "{notes}");
    }
    // An error in the command line's one format (`error[CODE]: …` and
    // `hint: …`); the session speaks the command line's words already.
    if let Some(error) = reply.error.as_ref().filter(|_| reply.is_error) {
        reply.text = format!(
            "error[{}]: {}\nhint: {}",
            error.code, error.message, error.hint
        );
    }
    if reply.is_error {
        let code = reply.code.as_deref().unwrap_or("ERROR");
        print_out(
            as_json,
            &json!({ "ok": false, "code": code, "text": reply.text }),
            None,
            Some(&reply.text),
        );
        return ExitCode::from(report::exit_status_of_code(code));
    }
    let file = match (command.screenshot_file(), &reply) {
        (
            Some(path),
            CliReply {
                image: Some(image), ..
            },
        ) => match save_image(&path, &image.data) {
            Ok(()) => Some(path),
            Err(error) => return failed(&error, as_json),
        },
        _ => None,
    };
    let saved = file
        .as_ref()
        .map(|path| format!("Saved {}", path.display()));
    print_out(
        as_json,
        &json!({
            "ok": true,
            "text": reply.text,
            "file": file.as_ref().map(|p| p.display().to_string()),
        }),
        Some(&[Some(reply.text.as_str()), saved.as_deref()]),
        None,
    );
    ExitCode::SUCCESS
}

/// `status`: every running instance (the one tool commands use first),
/// where it listens, and its viewer link.
pub fn status(as_json: bool) -> ExitCode {
    let running = crate::instance::list();
    if running.is_empty() {
        print_out(
            as_json,
            &json!({ "ok": true, "running": false, "instances": [] }),
            Some(&[Some(
                "No instance runs. The next tool command (such as `browser-shell open URL`) starts one.",
            )]),
            None,
        );
        return ExitCode::SUCCESS;
    }
    let mut lines = Vec::new();
    for (index, info) in running.iter().enumerate() {
        let used = if index == 0 {
            " — tool commands use this one"
        } else {
            ""
        };
        let mut text = format!(
            "{} at {}{used}
  Watch and take over: {}",
            capitalized(&info.described()),
            info.url,
            info.viewer_url()
        );
        if let Some(endpoint) = &info.cdp_endpoint {
            text.push_str(&format!("\n  CDP endpoint: {endpoint}"));
        }
        lines.push(text);
    }
    let instances: Vec<serde_json::Value> = running
        .iter()
        .map(|info| {
            json!({
                "kind": info.kind, "pid": info.pid, "url": info.url,
                "viewer": info.viewer_url(), "cdpEndpoint": info.cdp_endpoint,
            })
        })
        .collect();
    let first = &running[0];
    let lines: Vec<Option<&str>> = lines.iter().map(|line| Some(line.as_str())).collect();
    print_out(
        as_json,
        &json!({
            "ok": true, "running": true, "kind": first.kind, "pid": first.pid,
            "url": first.url, "viewer": first.viewer_url(), "cdpEndpoint": first.cdp_endpoint,
            "instances": instances,
        }),
        Some(&lines),
        None,
    );
    ExitCode::SUCCESS
}

/// `text` with its first letter in capitals.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `stop`: ends the background instance (and its browser).
/// `browser-shell report [SESSION] -o FILE`: saves the running
/// instance's activity report.
pub async fn report(
    instance: Option<&str>,
    session: Option<&str>,
    output: &std::path::Path,
    as_json: bool,
) -> ExitCode {
    let client = match Client::find(instance) {
        Ok(Some(client)) => client,
        Ok(None) => {
            let error = BrowserError::not_connected(
                "no instance runs, so there is no activity to report; reports come from a running \
                 window, relay or background instance",
            );
            return failed(&error, as_json);
        }
        Err(error) => return failed(&error, as_json),
    };
    let html = match client.report(session).await {
        Ok(html) => html,
        Err(error) => return failed(&error, as_json),
    };
    if let Err(error) = std::fs::write(output, &html) {
        let error = BrowserError::invalid(
            "output",
            format!("cannot write {}: {error}", output.display()),
        );
        return failed(&error, as_json);
    }
    let text = format!(
        "Saved the report of {} as {} ({} kB).",
        session.map_or_else(|| "every session".to_owned(), |s| format!("session {s}")),
        output.display(),
        html.len() / 1024
    );
    print_out(
        as_json,
        &json!({ "ok": true, "file": output, "bytes": html.len() }),
        Some(&[Some(&text)]),
        None,
    );
    ExitCode::SUCCESS
}

pub async fn stop(instance: Option<&str>, as_json: bool) -> ExitCode {
    // Without --instance: the background instance (the window and a relay
    // were started by a person, who stops them there).
    let client = match Client::find(Some(instance.unwrap_or("background"))) {
        Ok(Some(client)) => client,
        Ok(None) => {
            print_out(
                as_json,
                &json!({ "ok": true, "stopped": false }),
                Some(&[Some("No instance runs.")]),
                None,
            );
            return ExitCode::SUCCESS;
        }
        Err(_) if instance.is_none() => {
            print_out(
                as_json,
                &json!({ "ok": true, "stopped": false }),
                Some(&[Some("No background instance runs.")]),
                None,
            );
            return ExitCode::SUCCESS;
        }
        Err(error) => return failed(&error, as_json),
    };
    match client.stop().await {
        Ok(()) => {
            let pid = client.instance().pid;
            print_out(
                as_json,
                &json!({ "ok": true, "stopped": true, "pid": pid }),
                Some(&[Some(&format!(
                    "Stopped the background instance (pid {pid})."
                ))]),
                None,
            );
            ExitCode::SUCCESS
        }
        Err(error) => failed(&error, as_json),
    }
}

fn save_image(path: &Path, data: &str) -> Result<()> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| BrowserError::invalid("image", format!("not base64: {e}")))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            BrowserError::invalid("output", format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    std::fs::write(path, bytes).map_err(|e| {
        BrowserError::invalid("output", format!("cannot write {}: {e}", path.display()))
    })
}

fn failed(error: &BrowserError, as_json: bool) -> ExitCode {
    let text = report::render(error);
    print_out(
        as_json,
        &json!({ "ok": false, "code": error.code(), "text": text }),
        None,
        Some(&text),
    );
    ExitCode::from(report::exit_status(error))
}

/// Prints the JSON object, or the text lines to stdout and the error text to stderr.
fn print_out(
    as_json: bool,
    object: &serde_json::Value,
    lines: Option<&[Option<&str>]>,
    error: Option<&str>,
) {
    if as_json {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{object}");
        return;
    }
    if let Some(lines) = lines {
        let mut out = std::io::stdout().lock();
        for line in lines.iter().flatten() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    if let Some(error) = error {
        let _ = writeln!(std::io::stderr().lock(), "{}", error.trim_end());
    }
}
