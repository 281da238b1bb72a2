//! One extension bridge per user (`--browser extension`): the first shell
//! holds the bridge and records where its tools are; a second
//! `browser-shell mcp --browser extension` with the same flags joins it.
//! Real processes with a private runtime and config directory each, a
//! pairing made by `browser-shell extension pair --port <free port>`, and
//! no Chrome: the owner's tools answer `NOT_CONNECTED` from its browser.
//! Every wait is bounded.
//!
//! Covered: a joined agent's calls run in the owner's browser, in a session
//! of their own (the owner's audit log); the owner's death ends the joined
//! session with a clear error and a non-zero exit; two shells started at
//! the same moment both work; a stale record is replaced and the record
//! goes when its owner stops; a port held by another program (with a
//! garbage record beside it) leaves native messaging working and calls
//! saying so; a relay
//! cannot join and names the owner's pid; a relay that owns the bridge is
//! joined through its own `/mcp`; a shell started with other rules (hosts,
//! scripts, secrets, limits) does not join and says which differ. With a real Chromium playing the
//! person's Chrome: the owner's and the joined agent's tabs each in a tab
//! group of their own, each agent seeing only its own tab; native
//! messaging (the host manifest in that Chrome's profile, nothing paired)
//! connecting whatever starts first and after a restart, with every
//! not-connected state's reason on the way; a pairing made while the
//! shell runs used at once, a new one replacing it, and a stale secret
//! refused with that reason; a TLS relay started before anything was
//! paired offering the bridge at `/extension` once it is (503 before).

use crate::bridge;
use crate::common;
use bridge::{
    Client, PAGE, Setup, call_until, connected_within, extension_connected_to, install_native_host,
    open_fails_not_connected, person, persons_chrome_with_native_host, port_of,
};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_second_mcp_joins_the_shell_that_holds_the_bridge() {
    let setup = Setup::new().await;
    let mut owner = setup.start_mcp().await;
    // The owner recorded where its tools are before it answered.
    let record = setup.record();
    assert_eq!(record["pid"], json!(owner.pid()), "{record}");
    assert_eq!(record["kind"], "mcp");
    assert_eq!(record["bridge_port"], json!(setup.port));
    assert!(
        record["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{record}"
    );
    assert_eq!(mode_of(&setup.record_file()), 0o600);

    let mut joined = setup.start_mcp().await;
    open_fails_not_connected(&mut owner).await;
    open_fails_not_connected(&mut joined).await;
    // Both calls ran in the owner's browser (its audit log), each in a
    // session of its own; the joined shell runs none.
    let sessions = setup.audited_sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_ne!(sessions[0], sessions[1]);
    assert_eq!(
        setup.record()["pid"],
        json!(owner.pid()),
        "the joined shell leaves the record alone"
    );

    // The owner dies: the joined session ends with a clear error.
    owner.child.start_kill().unwrap();
    let owner_pid = owner.pid();
    let _ = owner.exit().await;
    let (status, stderr) = joined.exit().await;
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("NOT_CONNECTED") && stderr.contains(&format!("pid {owner_pid}) stopped")),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_shell_with_other_rules_does_not_join() {
    let setup = Setup::new().await;
    let mut owner = setup.start_mcp().await;
    let stricter = setup.spawn_mcp_with(&["--block-host", "example.com"]);
    let (status, stderr) = stricter.exit().await;
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("INVALID_ARGUMENT")
            && stderr.contains(&format!("pid {}", owner.pid()))
            && stderr.contains("blocked_hosts"),
        "{stderr}"
    );
    // The owner goes on, and the record is still its own.
    open_fails_not_connected(&mut owner).await;
    assert_eq!(setup.record()["pid"], json!(owner.pid()));
    owner.finish().await;
}

#[tokio::test]
async fn a_stale_record_is_replaced_and_the_record_goes_with_its_owner() {
    let setup = Setup::new().await;
    // A record left by a shell that was killed: its process is gone.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let stale = json!({"pid": dead_pid, "kind": "mcp", "url": "http://127.0.0.1:9", "token": "old", "bridge_port": setup.port});
    std::fs::write(setup.record_file(), stale.to_string()).unwrap();

    let mut owner = setup.start_mcp().await;
    assert_eq!(setup.record()["pid"], json!(owner.pid()));
    open_fails_not_connected(&mut owner).await;
    owner.finish().await;
    assert!(
        !setup.record_file().exists(),
        "the record goes when its owner stops"
    );
}

#[tokio::test]
async fn two_shells_started_at_the_same_moment_both_work() {
    let setup = Setup::new().await;
    let (mut first, mut second) = (setup.spawn_mcp(), setup.spawn_mcp());
    tokio::join!(first.initialize(), second.initialize());
    tokio::join!(
        open_fails_not_connected(&mut first),
        open_fails_not_connected(&mut second)
    );
    let owner = setup.record()["pid"].as_u64().unwrap();
    assert!(
        owner == u64::from(first.pid()) || owner == u64::from(second.pid()),
        "{owner}"
    );
    let sessions = setup.audited_sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_ne!(sessions[0], sessions[1]);
    // The one that joined leaves first, then the owner.
    let (joined, owning) = if owner == u64::from(first.pid()) {
        (second, first)
    } else {
        (first, second)
    };
    joined.finish().await;
    owning.finish().await;
    assert!(!setup.record_file().exists());
}

#[tokio::test]
async fn a_port_held_by_another_program_says_so() {
    let setup = Setup::new().await;
    let _squatter = tokio::net::TcpListener::bind(("127.0.0.1", setup.port))
        .await
        .unwrap();
    std::fs::write(setup.record_file(), "{ not json").unwrap();
    // The shell still holds the bridge (native messaging needs no port),
    // and its calls say what is wrong with the pairing's.
    let mut shell = setup.start_mcp().await;
    assert_eq!(setup.record()["pid"], json!(shell.pid()));
    let (text, is_error) = shell.call("browser_open", json!({"url": PAGE})).await;
    assert!(is_error && text.contains("NOT_CONNECTED"), "{text}");
    assert!(
        text.contains("another program holds the paired port"),
        "{text}"
    );
    shell.finish().await;
}

#[tokio::test]
async fn a_relay_cannot_join_and_names_the_owner() {
    let setup = Setup::new().await;
    let owner = setup.start_mcp().await;
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        setup
            .command(&["relay", "--browser", "extension"])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("the relay gives up within 30 s")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("NOT_CONNECTED")
            && stderr.contains(&format!("pid {}", owner.pid()))
            && stderr.contains("mcp --browser extension"),
        "{stderr}"
    );
    owner.finish().await;
}

#[tokio::test]
async fn an_mcp_joins_a_relay_that_holds_the_bridge() {
    let setup = Setup::new().await;
    let audit = setup.audit_log();
    let mut relay = setup
        .command(&[
            "relay",
            "--browser",
            "extension",
            "--audit-log",
            audit.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first line is the viewer link, printed once it serves (and has
    // written the record).
    let mut printed = BufReader::new(relay.stdout.take().unwrap()).lines();
    let link = tokio::time::timeout(Duration::from_secs(60), printed.next_line())
        .await
        .expect("the relay prints its link within 60 s")
        .unwrap()
        .expect("the relay is running");
    // The relay's own /mcp, with its token, is what others join.
    let record = setup.record();
    assert_eq!(record["kind"], "relay");
    assert_eq!(record["pid"], json!(relay.id().unwrap()));
    let endpoint = common::Endpoint::of_viewer_link(&link);
    assert_eq!(record["url"], json!(format!("http://{}", endpoint.host)));
    assert_eq!(record["token"], json!(endpoint.token));
    // In the person's Chrome the column offers no "+": they open tabs in Chrome.
    let status = common::status_until(&endpoint, |_| true).await;
    assert_eq!(status["browser"]["personTabs"], json!(false), "{status}");

    let mut joined = setup.start_mcp().await;
    open_fails_not_connected(&mut joined).await;
    assert_eq!(setup.audited_sessions().len(), 1);
    joined.finish().await;
    common::stop_shell(relay.into()).await;
    assert!(!setup.record_file().exists());
}

/// Calls `browser_open` until the person's Chrome has connected (bounded):
/// before that, it answers NOT_CONNECTED.
async fn open_once_connected(client: &mut Client, url: &str) -> String {
    call_until(
        client,
        "browser_open",
        &json!({"url": url}),
        Duration::from_secs(20),
        |text, is_error| {
            assert!(!is_error || text.contains("NOT_CONNECTED"), "{text}");
            !is_error
        },
    )
    .await
}

#[tokio::test]
async fn in_the_persons_chrome_each_agent_has_its_own_tabs_and_tab_group() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let (setup, link) = Setup::paired().await;
    let mut owner = setup.start_mcp().await;
    let person = person::Person::start().await;
    person.pair(&link).await;
    let mut joined = setup.start_mcp().await;

    let form = format!("{base}/form.html");
    let article = format!("{base}/article.html");
    open_once_connected(&mut owner, &form).await;
    open_once_connected(&mut joined, &article).await;
    for (client, own, other) in [
        (&mut owner, &form, &article),
        (&mut joined, &article, &form),
    ] {
        let (tabs, is_error) = client.call("browser_list_tabs", json!({})).await;
        assert!(!is_error, "{tabs}");
        assert!(
            tabs.contains(own.as_str()) && !tabs.contains(other.as_str()),
            "{tabs}"
        );
    }
    // In Chrome, each agent's tab is in a tab group of its own.
    let groups = person
        .in_popup(&format!(
            "chrome.tabs.query({{}}).then(tabs => [{form:?}, {article:?}].map(url => (tabs.find(t => t.url === url) || {{}}).groupId ?? null))"
        ))
        .await;
    let (first, second) = (groups[0].as_i64(), groups[1].as_i64());
    assert!(
        first.is_some_and(|g| g >= 0) && second.is_some_and(|g| g >= 0) && first != second,
        "{groups}"
    );
    joined.finish().await;
    owner.finish().await;
}

#[tokio::test]
async fn a_tls_relay_offers_the_bridge_to_a_chrome_elsewhere() {
    let base = browser_testkit::fixtures::serve_fixtures().await;
    let relay_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let relay_url = format!("wss://127.0.0.1:{relay_port}");
    // Nothing paired yet when the relay starts.
    let setup = Setup::unpaired();
    let (cert, key) = common::certificate_in(&setup.runtime);
    let mut relay = setup
        .command(&[
            "relay",
            "--browser",
            "extension",
            "--listen",
            &format!("127.0.0.1:{relay_port}"),
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut printed = BufReader::new(relay.stdout.take().unwrap()).lines();
    let viewer = tokio::time::timeout(Duration::from_secs(60), printed.next_line())
        .await
        .expect("the relay prints its link within 60 s")
        .unwrap()
        .expect("the relay is running");
    assert!(viewer.starts_with("https://"), "{viewer}");

    // Only a Chrome extension's page may knock.
    let knock = |origin: Option<&str>| {
        let mut curl = std::process::Command::new("curl");
        curl.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
            .arg(&cert)
            .args(["-H", "Connection: Upgrade", "-H", "Upgrade: websocket"])
            .args(["-H", "Sec-WebSocket-Version: 13"])
            .args(["-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]);
        if let Some(origin) = origin {
            curl.args(["-H", &format!("Origin: {origin}")]);
        }
        curl.arg(format!("https://127.0.0.1:{relay_port}/extension"));
        String::from_utf8(curl.output().unwrap().stdout).unwrap()
    };
    assert_eq!(knock(None), "403");
    assert_eq!(knock(Some("https://evil.example")), "403");
    // An extension's knock before anything is paired: not yet, and why.
    let extension = format!("chrome-extension://{}", person::extension_id());
    assert_eq!(knock(Some(&extension)), "503");

    // Paired while the relay runs: no restart.
    let link = setup.pair_with(None, &["--relay-url", &relay_url]).await;
    assert!(
        link.ends_with(&format!(
            "&url=wss%3A%2F%2F127.0.0.1%3A{relay_port}%2Fextension"
        )),
        "{link}"
    );
    // The person's Chrome (trusting the test's certificate) pairs through
    // the relay; an agent joining the relay works in it.
    let person = person::Person::start_with(&["--ignore-certificate-errors"]).await;
    person.pair(&link).await;
    let mut joined = setup.start_mcp().await;
    let form = format!("{base}/form.html");
    let opened = open_once_connected(&mut joined, &form).await;
    assert!(opened.contains("form.html"), "{opened}");
    let (text, is_error) = joined.call("browser_snapshot", json!({})).await;
    assert!(!is_error && text.contains("Full name"), "{text}");
    let state = person.status("bridge").await;
    assert!(
        state
            .to_string()
            .contains(&format!("127.0.0.1:{relay_port}")),
        "the popup names the relay: {state}"
    );
    joined.finish().await;
    common::stop_shell(relay.into()).await;
}

#[tokio::test]
async fn native_messaging_connects_whatever_starts_first_with_nothing_paired() {
    let setup = Setup::unpaired();
    // Nothing set up yet: every call says so, list_tabs included.
    let mut shell = setup.start_mcp().await;
    // Every tool that needs the browser says so, not that a tab is missing.
    for (tool, arguments) in [
        ("browser_list_tabs", json!({})),
        ("browser_open", json!({"url": PAGE})),
        ("browser_snapshot", json!({})),
        ("browser_screenshot", json!({})),
        ("browser_content", json!({})),
        ("browser_console", json!({})),
        ("browser_network", json!({})),
        ("browser_execute", json!({"script": "1"})),
        ("browser_act", json!({"action": "press", "key": "Enter"})),
        ("browser_wait", json!({"text": "x", "timeoutMs": 1000})),
        ("browser_close_tab", json!({})),
        ("browser_reset", json!({})),
    ] {
        let (text, is_error) = shell.call(tool, arguments).await;
        assert!(is_error && text.contains("NOT_CONNECTED"), "{tool}: {text}");
        assert!(
            text.contains("native messaging is not installed and it is not paired")
                && text.contains("browser-shell extension install"),
            "{tool}: {text}"
        );
    }
    shell.finish().await;

    // Chrome first, then the shell.
    let person = persons_chrome_with_native_host(&setup).await;
    let mut shell = setup.start_mcp().await;
    let first = connected_within(&mut shell).await;
    let (text, _) = shell
        .call("browser_open", json!({"url": "http://127.0.0.1:9/"}))
        .await;
    assert!(!text.contains("NOT_CONNECTED"), "{text}");
    // The shell restarts: the extension is back through a new host.
    shell.child.start_kill().unwrap();
    let _ = shell.exit().await;
    let mut shell = setup.start_mcp().await;
    let again = connected_within(&mut shell).await;
    shell.finish().await;
    person.quit().await;

    // The shell first, then Chrome (its profile set up before).
    let profile = tempfile::tempdir().unwrap();
    install_native_host(&setup, profile.path());
    let mut shell = setup.start_mcp().await;
    let (text, is_error) = shell.call("browser_list_tabs", json!({})).await;
    assert!(
        is_error && text.contains("no attempt from the extension"),
        "{text}"
    );
    assert!(text.contains("native messaging installed for"), "{text}");
    let started = std::time::Instant::now();
    let config = setup.config.path().to_path_buf();
    let person = person::Person::launch_with_env(
        profile.path(),
        &[
            ("BROWSER_SHELL_RUNTIME_DIR", setup.runtime.as_path()),
            ("BROWSER_SHELL_CONFIG_DIR", config.as_path()),
        ],
    )
    .await;
    let chrome_up = started.elapsed();
    let after_chrome = connected_within(&mut shell).await;
    // The times, for a person reading the run (`-- --nocapture`); nothing
    // is asserted on them here (the bound is the 15 s of each wait).
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "connected: {first:?} after the shell started (Chrome first); {again:?} after a restart; \
         {after_chrome:?} after Chrome was up ({chrome_up:?} to start it)"
        );
    }
    // The state `doctor` reads says which bridge is in use.
    let state = std::fs::read_to_string(setup.runtime.join("extension-state.json")).unwrap();
    assert!(state.contains("native messaging"), "{state}");
    shell.finish().await;
    person.quit().await;
}

/// Calls `browser_list_tabs` until its error says `words` (within `bound`);
/// that error's text.
async fn says_within(client: &mut Client, words: &str, bound: Duration) -> String {
    call_until(
        client,
        "browser_list_tabs",
        &json!({}),
        bound,
        |text, is_error| is_error && text.contains(words),
    )
    .await
}

#[tokio::test]
async fn pairing_while_the_shell_runs_takes_effect_and_a_new_pairing_replaces_it() {
    let setup = Setup::unpaired();
    let person = person::Person::start().await;
    let mut shell = setup.start_mcp().await;
    let (text, is_error) = shell.call("browser_list_tabs", json!({})).await;
    assert!(is_error && text.contains("NOT_CONNECTED"), "{text}");
    // Paired now, the shell running: no restart.
    let link = setup.pair(None).await;
    person.pair(&link).await;
    extension_connected_to(&person, port_of(&link)).await;
    connected_within(&mut shell).await;
    // Paired again (another port): the old connection closes, the new
    // secret connects.
    let link = setup.pair(None).await;
    person.pair(&link).await;
    extension_connected_to(&person, port_of(&link)).await;
    connected_within(&mut shell).await;
    // The person presses Disconnect: calls say so and what to do; Connect
    // brings it back at once.
    person.press_in_popup(None, "#disconnect").await;
    let text = says_within(&mut shell, "pressed Disconnect", Duration::from_secs(10)).await;
    assert!(text.contains("press Connect"), "{text}");
    person.press_in_popup(None, "#connect").await;
    connected_within(&mut shell).await;
    // Paired again in the shell only, on the same port: the extension
    // holds the old secret and is refused, and calls say so.
    setup.pair(Some(port_of(&link))).await;
    let text = says_within(&mut shell, "was refused", Duration::from_secs(20)).await;
    assert!(text.contains("pair again"), "{text}");
    shell.finish().await;
    person.quit().await;
}

#[tokio::test]
async fn every_kind_of_break_connects_again_under_load_over_both_bridges() {
    use bridge::cycles::{Bridge, Cycle, Rig, busy_loops, percentile};
    let _load = busy_loops(2);
    for kind in [Bridge::Native, Bridge::Paired] {
        let mut rig = Rig::start(kind).await;
        let mut times = Vec::new();
        // Each kind of break once (the benchmark runs a hundred); after
        // each, a write (a page opened, its button clicked) must be done
        // within the write's 15 s bound.
        for cycle in Cycle::ALL {
            let took = rig.cycle(cycle).await;
            times.push((cycle, took));
        }
        // No write replayed, none answered done lost.
        let tally = rig.finish().await;
        tally.check();
        let mut all: Vec<Duration> = times.iter().map(|(_, t)| *t).collect();
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "{kind:?}: {times:?}; p50 {:?}, max {:?}; writes {tally:?}",
                percentile(&mut all, 50),
                percentile(&mut all, 100)
            );
        }
    }
}
