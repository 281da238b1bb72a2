//! The tool commands across separate processes: one session kept by a
//! background instance that the first command starts and that exits when
//! unused; `--json`, exit codes, `stop`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// Runs one `browser-shell` command with `runtime` as its runtime directory.
async fn shell(runtime: &Path, args: &[&str]) -> (i32, String, String) {
    let output = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
            .args(args)
            .env("BROWSER_SHELL_RUNTIME_DIR", runtime)
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .expect("a command finishes within 90 s")
    .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The ref on the snapshot line that contains `text`.
fn ref_of(snapshot: &str, text: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no {text:?} in:\n{snapshot}"));
    let start = line.find("[ref=").unwrap() + 5;
    line[start..].split(']').next().unwrap().to_owned()
}

/// Background instances running with this runtime directory.
fn background_instances(runtime: &Path) -> Vec<u32> {
    let marker = format!("BROWSER_SHELL_RUNTIME_DIR={}", runtime.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let is_background = cmdline.split(|b| *b == 0).any(|arg| arg == b"background");
        let ours = environ
            .split(|b| *b == 0)
            .any(|var| var == marker.as_bytes());
        if is_background && ours {
            found.push(pid);
        }
    }
    found
}

fn instance_pid(runtime: &Path) -> u32 {
    let records = common::instance_records(runtime);
    let [info] = records.as_slice() else {
        panic!("one instance record: {records:?}")
    };
    u32::try_from(info["pid"].as_u64().unwrap()).unwrap()
}

#[tokio::test]
async fn commands_in_separate_processes_share_one_session_until_idle() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let runtime = common::runtime_dir();
    let idle = ["--idle-exit-ms", "4000"];
    let form = format!("{base}/form.html");

    // The host list of the command that starts the instance is that
    // command's, not the instance's (checked below).
    let first = [&idle[..], &["open", "--block-host", "localhost", &form]].concat();
    let (code, opened, stderr) = shell(&runtime, &first).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(opened.contains("Opened"), "{opened}");
    let pid = instance_pid(&runtime);
    let other_host = form.replace("127.0.0.1", "localhost");
    let fetch = format!(
        "fetch({other_host:?}, {{mode: 'no-cors'}}).then(() => 'reached', () => 'refused')"
    );
    let (code, fetched, stderr) = shell(&runtime, &["execute", &fetch]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(fetched.contains("reached"), "{fetched}");
    // Nobody watches a background instance: the opened page is its only
    // tab (no start page for nobody).
    let record = common::instance_records(&runtime).remove(0);
    let endpoint = common::Endpoint::of_viewer_link(&format!(
        "{}/?token={}",
        record["url"].as_str().unwrap(),
        record["token"].as_str().unwrap()
    ));
    let status = common::status_until(&endpoint, |_| true).await;
    assert_eq!(status["tabs"], 1, "{status}");
    let file_mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(runtime.join(format!("instances/{pid}.json")))
            .unwrap()
            .permissions(),
    );
    assert_eq!(file_mode & 0o077, 0, "the token file is private");

    // A second process sees the same tab and the same refs.
    let (code, snapshot, _) = shell(&runtime, &["snapshot"]).await;
    assert_eq!(code, 0);
    let add = ref_of(&snapshot, "button \"Add one\"");
    assert_eq!(add, ref_of(&opened, "button \"Add one\""));

    let (code, acted, stderr) = shell(&runtime, &["act", "click", &add]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        acted.contains("~ - text: 1"),
        "the counter, changed in place: {acted}"
    );

    let name = ref_of(&snapshot, "textbox \"Full name\"");
    let (code, _, stderr) = shell(&runtime, &["act", "fill", &name, "Ada Lovelace"]).await;
    assert_eq!(code, 0, "{stderr}");
    let (code, content, _) = shell(
        &runtime,
        &["--json", "execute", "document.querySelector('#name').value"],
    )
    .await;
    assert_eq!(code, 0);
    let content: Value = serde_json::from_str(content.trim()).unwrap();
    assert_eq!(content["ok"], true);
    assert!(
        content["text"].as_str().unwrap().contains("Ada Lovelace"),
        "{content}"
    );

    let (code, text, _) = shell(&runtime, &["content", "--format", "txt"]).await;
    assert_eq!(code, 0);
    assert!(text.contains("Sign up"), "{text}");

    let shot: PathBuf = runtime.join("button.png");
    let (code, saved, stderr) = shell(
        &runtime,
        &["screenshot", "--ref", &add, "-o", shot.to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(saved.contains("Saved"), "{saved}");
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert!(
        width > 10 && width < 400 && height > 5 && height < 100,
        "{width}x{height}: only the button"
    );

    let (code, tabs, _) = shell(&runtime, &["--json", "tabs"]).await;
    assert_eq!(code, 0);
    let tabs: Value = serde_json::from_str(tabs.trim()).unwrap();
    assert!(
        tabs["text"].as_str().unwrap().contains(" (active): http"),
        "{tabs}"
    );

    // Exit codes: a usage mistake caught before any call, a browser-side
    // caller mistake, a policy refusal; each with the code in --json.
    let (code, _, stderr) = shell(&runtime, &["act", "click", "Submit"]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is not a ref"), "{stderr}");
    let (code, out, _) = shell(&runtime, &["--json", "act", "click", "e999"]).await;
    assert_eq!(code, 2);
    let out: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(out["code"], "INVALID_ARGUMENT");
    let (code, _, stderr) = shell(&runtime, &["open", "file:///etc/passwd"]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("NAVIGATION_BLOCKED"), "{stderr}");
    let (code, _, stderr) = shell(&runtime, &["bogus-command"]).await;
    assert_eq!(code, 2, "{stderr}");

    // Nobody uses it: it exits, with its browser, and says so in the runtime dir.
    assert!(
        common::wait_for_exit(pid, Duration::from_secs(30)).await,
        "the background instance exits after its idle timeout"
    );
    assert!(common::instance_records(&runtime).is_empty());
    let (code, status, _) = shell(&runtime, &["status"]).await;
    assert_eq!(code, 0);
    assert!(status.contains("No instance runs"), "{status}");
}

#[tokio::test]
async fn stop_ends_the_background_instance_and_concurrent_first_commands_share_it() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let runtime = common::runtime_dir();
    let url = format!("{base}/article.html");
    // Two first commands at once: both succeed, and only one instance starts.
    let open_args = ["open", url.as_str()];
    let (first, second) = tokio::join!(shell(&runtime, &open_args), shell(&runtime, &["tabs"]));
    assert_eq!(first.0, 0, "{}", first.2);
    assert_eq!(second.0, 0, "{}", second.2);
    let pid = instance_pid(&runtime);
    assert_eq!(background_instances(&runtime), vec![pid]);
    let (code, again, _) = shell(&runtime, &["open", &url, "--new-tab"]).await;
    assert_eq!(code, 0);
    assert!(again.contains("in tab t"), "{again}");
    assert_eq!(
        shell(&runtime, &["tabs"])
            .await
            .1
            .matches("article.html")
            .count(),
        2,
        "both tabs are the session's"
    );
    assert_eq!(instance_pid(&runtime), pid, "one instance serves both");

    let (code, stopped, stderr) = shell(&runtime, &["stop"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stopped.contains(&pid.to_string()), "{stopped}");
    assert!(common::wait_for_exit(pid, Duration::from_secs(5)).await);
    assert!(common::instance_records(&runtime).is_empty());
}

/// Every instance is known and none hides another: with two relays
/// running, `status` lists both, a tool command goes to the newest relay
/// (not a new background instance) and says which, `--instance` chooses;
/// stopping one relay leaves the other in use; `stop` never stops a relay.
#[tokio::test]
async fn several_instances_are_all_known_and_the_watched_one_is_used() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let runtime = common::runtime_dir();
    let url = format!("{base}/article.html");
    let (first, _) = common::start_shell_in(&runtime, &["relay", "--temporary-profile"], 3).await;
    let first_pid = first.id().unwrap();
    let (code, opened, stderr) = shell(&runtime, &["open", &url]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(opened.contains("article.html"), "{opened}");
    assert!(
        background_instances(&runtime).is_empty(),
        "the relay served it"
    );
    assert!(
        !stderr.contains("also running"),
        "one instance, nothing to say: {stderr}"
    );

    let (second, _) = common::start_shell_in(&runtime, &["relay", "--temporary-profile"], 3).await;
    let second_pid = second.id().unwrap();
    let (code, status, _) = shell(&runtime, &["status", "--json"]).await;
    assert_eq!(code, 0);
    let status: Value = serde_json::from_str(&status).unwrap();
    let pids: Vec<u64> = status["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(
        pids,
        vec![u64::from(second_pid), u64::from(first_pid)],
        "{status}"
    );
    let (code, text, _) = shell(&runtime, &["status"]).await;
    assert_eq!(code, 0);
    assert!(
        text.contains(&format!("The relay (pid {second_pid})"))
            && text.contains(&format!("pid {first_pid}")),
        "{text}"
    );

    // The newest relay serves, and the command says so.
    let (code, _, stderr) = shell(&runtime, &["open", &url]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Using the relay (pid {second_pid}); also running: the relay (pid {first_pid})"
        )),
        "{stderr}"
    );
    // --instance chooses: the first relay's session has the tab opened there.
    let first_arg = first_pid.to_string();
    let (code, tabs, stderr) = shell(&runtime, &["tabs", "--instance", &first_arg]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(tabs.contains("article.html"), "{tabs}");
    let (code, _, stderr) = shell(&runtime, &["tabs", "--instance", "background"]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("INVALID_ARGUMENT") && stderr.contains("running"),
        "{stderr}"
    );

    // A flag that shapes an instance as it starts cannot apply to one that
    // runs: refused, naming the flag and the instance, not ignored.
    let (code, _, stderr) = shell(&runtime, &["open", "--headed", &url]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("INVALID_ARGUMENT")
            && stderr.contains("--headed")
            && stderr.contains(&format!("pid {second_pid}")),
        "{stderr}"
    );
    // Host lists apply to the command they come with: its navigation, and
    // its tab's own requests while it runs; the next command is free again.
    let (code, _, stderr) = shell(&runtime, &["open", "--block-host", "127.0.0.1", &url]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("NAVIGATION_BLOCKED") && stderr.contains("blocked-hosts"),
        "{stderr}"
    );
    let (code, _, stderr) = shell(&runtime, &["open", "--allow-host", "localhost", &url]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("NAVIGATION_BLOCKED") && stderr.contains("allowed-hosts"),
        "{stderr}"
    );
    let (code, _, stderr) = shell(&runtime, &["open", &url]).await;
    assert_eq!(code, 0, "{stderr}");
    let other_host = url
        .replace("127.0.0.1", "localhost")
        .replace("article.html", "form.html");
    let fetch = format!(
        "fetch({other_host:?}, {{mode: 'no-cors'}}).then(() => 'reached', () => 'refused')"
    );
    for (flags, expected) in [
        (&["--block-host", "localhost"][..], "refused"),
        (&[][..], "reached"),
        (&["--allow-host", "127.0.0.1"][..], "refused"),
        (&[][..], "reached"),
        (&["--block-host", "example.invalid"][..], "reached"),
    ] {
        let mut words = vec!["execute", fetch.as_str()];
        words.extend_from_slice(flags);
        let (code, result, stderr) = shell(&runtime, &words).await;
        assert_eq!(code, 0, "{flags:?}: {stderr}");
        assert!(result.contains(expected), "{flags:?}: {result}");
    }

    // `stop` stops no relay; stopping one relay hides nothing of the other.
    let (code, stopped, _) = shell(&runtime, &["stop"]).await;
    assert_eq!(code, 0);
    assert!(stopped.contains("No background instance runs"), "{stopped}");
    common::stop_shell(second).await;
    let (code, status, _) = shell(&runtime, &["status", "--json"]).await;
    assert_eq!(code, 0);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["pid"], u64::from(first_pid), "{status}");
    let (code, _, stderr) = shell(&runtime, &["snapshot"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        background_instances(&runtime).is_empty(),
        "the remaining relay served it"
    );
    common::stop_shell(first).await;
}

/// What the command line prints pipes: the page's words without the
/// model's fences (`content --format json | jq`), `--json` valid on its
/// own with no fences in it, `--fences` for agents that want them, and a
/// screenshot's bytes in the format its file is named for.
#[tokio::test]
async fn output_pipes_and_files_are_what_their_names_say() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let runtime = common::runtime_dir();
    let url = format!("{base}/article.html");
    // The command line's words, not MCP's, from the first answer on.
    let (code, tabs, _) = shell(&runtime, &["tabs"]).await;
    assert_eq!(code, 0);
    assert!(
        tabs.starts_with("No tabs. Open one with `browser-shell open URL`."),
        "{tabs}"
    );
    let (code, _, stderr) = shell(&runtime, &["open", &url]).await;
    assert_eq!(code, 0, "{stderr}");
    let (_, console, _) = shell(&runtime, &["console"]).await;
    assert!(console.contains("pass it as --since"), "{console}");
    let (_, network, _) = shell(&runtime, &["network"]).await;
    assert!(network.contains("--body NUMBER"), "{network}");
    // One error format: the command line's, whoever raised it.
    let (code, _, stderr) = shell(&runtime, &["act", "click", "e999"]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error[INVALID_ARGUMENT]: ") && stderr.contains("\nhint: "),
        "{stderr}"
    );
    let program = env!("CARGO_BIN_EXE_browser-shell");
    let piped = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("sh")
            .arg("-c")
            .arg(format!("'{program}' content --format json | jq -r .title"))
            .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let title = String::from_utf8_lossy(&piped.stdout);
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert!(title.trim().contains("Owl"), "jq read {title:?}");
    for args in [
        &["content", "--format", "txt"][..],
        &["wait", "--text", "Owls"][..],
    ] {
        let (code, out, stderr) = shell(&runtime, args).await;
        assert_eq!(code, 0, "{stderr}");
        assert!(
            !out.contains("<<<untrusted") && !out.contains(">>>end-"),
            "{args:?}: {out}"
        );
    }
    let (code, out, _) = shell(&runtime, &["content", "--format", "txt", "--json"]).await;
    assert_eq!(code, 0);
    let reply: Value = serde_json::from_str(&out).unwrap();
    assert!(
        !reply["text"].as_str().unwrap().contains("<<<untrusted"),
        "{reply}"
    );
    let (code, out, _) = shell(&runtime, &["content", "--format", "txt", "--fences"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("<<<untrusted-content"), "{out}");

    // The file's name says the format: a .jpg is a JPEG.
    let jpeg = runtime.join("shot.jpg");
    let (code, _, stderr) = shell(&runtime, &["screenshot", "-o", jpeg.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        &std::fs::read(&jpeg).unwrap()[..3],
        &[0xff, 0xd8, 0xff],
        "JPEG bytes"
    );
    let (code, _, stderr) = shell(
        &runtime,
        &[
            "screenshot",
            "-o",
            jpeg.to_str().unwrap(),
            "--format",
            "png",
        ],
    )
    .await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("INVALID_ARGUMENT"), "{stderr}");
    let _ = shell(&runtime, &["stop"]).await;
}

/// Help that answers without repeating itself: `-h` is a command's own
/// options; `--help` adds the shared ones once, under their own headings;
/// every summary is one line; `relay` offers nothing it does not do.
#[tokio::test]
async fn help_says_each_thing_once() {
    let runtime = common::runtime_dir();
    let (code, short, _) = shell(&runtime, &["tabs", "-h"]).await;
    assert_eq!(code, 0);
    assert!(short.lines().count() <= 8, "tabs -h:\n{short}");
    let (_, short, _) = shell(&runtime, &["open", "-h"]).await;
    assert!(
        short.contains("--new-tab") && !short.contains("--browser"),
        "open -h:\n{short}"
    );
    let (_, long, _) = shell(&runtime, &["open", "--help"]).await;
    assert_eq!(long.matches("Browser options").count(), 1, "{long}");
    assert_eq!(long.matches("Tool command options").count(), 1, "{long}");
    assert_eq!(long.matches("--block-host").count(), 1, "{long}");
    let (_, relay, _) = shell(&runtime, &["relay", "--help"]).await;
    assert!(
        !relay.contains("--http"),
        "relay serves MCP on its own port:\n{relay}"
    );
    let (_, top, _) = shell(&runtime, &["--help"]).await;
    let commands = top
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    for line in commands.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            line.chars().count() <= 110,
            "a summary of one line: {line:?}"
        );
    }
}

/// `--log-format json`: every diagnostic line on stderr is a JSON object,
/// for log shippers.
#[tokio::test]
async fn logs_can_be_json_lines() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
            .args([
                "--log-format",
                "json",
                "fetch",
                &format!("{base}/article.html"),
            ])
            .env("RUST_LOG", "info")
            .env("BROWSER_SHELL_RUNTIME_DIR", common::runtime_dir())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    // (The command's own word to a person, "fetched …", is not a log line.)
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("fetched "))
        .collect();
    assert!(!lines.is_empty(), "some diagnostics at info");
    for line in lines {
        let entry: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            entry["level"].is_string() && entry["message"].is_string(),
            "{line}"
        );
    }
}

/// The native messaging host runs as Chrome starts it (the extension's
/// origin first) and as the `native-host` command: a Chrome that closes
/// the port before the hello ends it with a reason, nothing on stdout.
/// (The command once set up logging and a runtime a second time, and
/// panicked.)
#[tokio::test]
async fn the_native_host_runs_as_chrome_starts_it_and_as_a_command() {
    let runtime = common::runtime_dir();
    let origin = "chrome-extension://fmmpmjfbfbolhenibabebgogdehficei/";
    for args in [&[origin][..], &["native-host", origin]] {
        let (code, stdout, stderr) = shell(&runtime, args).await;
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(
            stderr.contains("closed the port before the hello") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}
