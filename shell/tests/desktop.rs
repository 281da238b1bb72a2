//! The desktop window under a virtual X display (Xvfb): it opens on the
//! browser column, its webview connects as a viewer and draws frames, the
//! window title follows the page and who holds control, and closing the
//! window shuts everything down (Chromium gone, temporary profile removed).
//! A second test: the window keeps its profile (a cookie survives a
//! restart), a second instance on that profile reports the first, and the
//! column's keys work in the window (Ctrl+T opens a tab).
//! A screenshot of the display is saved as `target/desktop-window.png`.

#![cfg(feature = "desktop")]
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use browser_testkit::fixtures::serve_fixtures;
use common::display::{VirtualDisplay, screenshot};
use common::{Endpoint, start_shell_on_display, status_until};
use serde_json::{Value, json};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    ChangeWindowAttributesAux, ClientMessageEvent, ConnectionExt, EventMask, MapState, Window,
};
use x11rb::rust_connection::RustConnection;

/// The X atom named `name`.
fn atom(x: &RustConnection, name: &str) -> u32 {
    x.intern_atom(false, name.as_bytes())
        .unwrap()
        .reply()
        .unwrap()
        .atom
}

/// Shown top-level windows and their titles.
fn windows(x: &RustConnection) -> Vec<(Window, String)> {
    let root = x.setup().roots[0].root;
    let (name, utf8) = (atom(x, "_NET_WM_NAME"), atom(x, "UTF8_STRING"));
    x.query_tree(root)
        .unwrap()
        .reply()
        .unwrap()
        .children
        .into_iter()
        .filter(|&window| {
            x.get_window_attributes(window)
                .unwrap()
                .reply()
                .is_ok_and(|a| a.map_state == MapState::VIEWABLE)
        })
        .filter_map(|window| {
            let title = x
                .get_property(false, window, name, utf8, 0, 1024)
                .ok()?
                .reply()
                .ok()?;
            Some((window, String::from_utf8_lossy(&title.value).into_owned()))
        })
        .collect()
}

/// Waits (bounded) until a shown window's title satisfies `accept`,
/// woken by X events (windows appearing under the root, titles changing),
/// not by polling.
async fn window_titled(x: &Arc<RustConnection>, accept: impl Fn(&str) -> bool) -> (Window, String) {
    let root = x.setup().roots[0].root;
    let watch = |window: Window, mask: EventMask| {
        let aux = ChangeWindowAttributesAux::new().event_mask(mask);
        // A window that is gone meanwhile has nothing to report.
        let _ = x.change_window_attributes(window, &aux).map(|c| c.check());
    };
    watch(root, EventMask::SUBSTRUCTURE_NOTIFY);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        // Watch every top-level window first, then look: no change is missed.
        for window in x.query_tree(root).unwrap().reply().unwrap().children {
            watch(window, EventMask::PROPERTY_CHANGE);
        }
        x.flush().unwrap();
        if let Some(found) = windows(x).into_iter().find(|(_, title)| accept(title)) {
            return found;
        }
        let connection = Arc::clone(x);
        let event = tokio::time::timeout_at(
            deadline,
            tokio::task::spawn_blocking(move || connection.wait_for_event()),
        )
        .await;
        assert!(event.is_ok(), "no such window; shown: {:?}", windows(x));
    }
}

/// Waits (bounded) until `window` has the keyboard focus, woken by its
/// focus events.
async fn focused(x: &Arc<RustConnection>, window: Window) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if x.get_input_focus().unwrap().reply().unwrap().focus == window {
            return;
        }
        let connection = Arc::clone(x);
        let event = tokio::time::timeout_at(
            deadline,
            tokio::task::spawn_blocking(move || connection.wait_for_event()),
        )
        .await;
        if event.is_err() {
            break;
        }
    }
    assert_eq!(
        x.get_input_focus().unwrap().reply().unwrap().focus,
        window,
        "the window has the focus"
    );
}

/// Child processes of `pid` (Chromium, for the shell).
fn children(pid: u32) -> Vec<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[tokio::test]
async fn the_window_shows_the_column_and_closing_it_stops_everything() {
    let display = VirtualDisplay::start();
    let base = serve_fixtures().await;
    let runtime = common::runtime_dir();
    let url = format!("{base}/form.html");
    let (mut shell, printed) = start_shell_on_display(
        &runtime,
        Some(&display.name),
        &["--temporary-profile", &url],
        3,
    )
    .await;
    assert!(printed[2].starts_with("MCP over HTTP: "), "{printed:?}");

    // The runtime file says where the shell is: local clients need no token by hand.
    let info: Value = common::instance_records(&runtime)
        .pop()
        .expect("the window's record");
    assert_eq!(info["kind"], "desktop");
    let endpoint = Endpoint {
        host: info["url"]
            .as_str()
            .unwrap()
            .trim_start_matches("http://")
            .to_owned(),
        path: "/mcp".into(),
        token: info["token"].as_str().unwrap().to_owned(),
    };

    // The window's title follows the page and who holds control.
    let x = Arc::new(RustConnection::connect(Some(&display.name)).unwrap().0);
    let (window, title) = window_titled(&x, |t| t.starts_with("Sign-up form")).await;
    assert_eq!(title, "Sign-up form — Agent has control — browser-shell");

    // Its webview is a viewer of the live view, and frames reach it.
    status_until(&endpoint, |now| {
        now["viewers"].as_u64() >= Some(1) && now["framesSent"].as_u64() >= Some(1)
    })
    .await;

    // An agent works in it over MCP, found through the runtime file.
    let endpoint: &'static Endpoint = Box::leak(Box::new(endpoint));
    let mut agent = common::Agent::connect(endpoint).await;
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error, "{text}");
    window_titled(&x, |t| t.starts_with("Field Guide to Owls")).await;
    // Pages take the size of the window's picture area, as in a browser window.
    let sized = status_until(endpoint, |now| now["pageSize"].is_array()).await;
    let (width, height) = (sized["pageSize"][0].clone(), sized["pageSize"][1].clone());
    assert!(
        width.as_u64().unwrap() < 1280,
        "the activity column takes room: {sized}"
    );
    let (text, error) = agent
        .call(
            "browser_wait",
            json!({"script": format!("innerWidth === {width} && innerHeight === {height}")}),
        )
        .await;
    assert!(!error, "{text}");

    // The picture switches to the new tab a frame later.
    status_until(endpoint, |now| {
        now["pictured"] == "t2" && now["shown"] == "t2"
    })
    .await;

    // The browser killed as the OOM killer would: the window's column says
    // so, and the same tab is pictured again in the relaunched browser.
    let running = status_until(endpoint, |now| now["browser"]["pid"].is_u64()).await;
    let pid = running["browser"]["pid"].clone();
    // SAFETY: signalling the browser this test's shell launched.
    unsafe { libc::kill(i32::try_from(pid.as_u64().unwrap()).unwrap(), libc::SIGKILL) };
    let back = status_until(endpoint, |now| {
        now["browser"]["state"] == "running" && now["browser"]["pid"] != pid
    })
    .await;
    assert!(back["browser"]["restartedAt"].is_string(), "{back}");
    let frames = back["framesSent"].as_u64().unwrap();
    status_until(endpoint, |now| {
        now["pictured"] == "t2" && now["framesSent"].as_u64().unwrap() > frames
    })
    .await;
    window_titled(&x, |t| t.starts_with("Field Guide to Owls")).await;

    // So do the tool commands, through the same runtime file (no instance of their own).
    let listed = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .arg("tabs")
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .env_remove("DISPLAY")
        .output()
        .await
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(&url),
        "the person's tab with the first page: {listed}"
    );
    assert_eq!(
        status_until(endpoint, |_| true).await["tabs"],
        2,
        "the command line started nothing of its own"
    );

    // What a person sees: the column drawn, with the page in it (not blank):
    // the page's text in the picture area (left of the activity list, below
    // the toolbars), not just the column's placeholder. (Ink is near-black:
    // the stage around the picture is dark grey, not ink.) The webview draws a
    // frame a moment after it arrives; look until it has, for at most 3 s.
    // (The banner says the browser was restarted.)
    let ink = |picture: &image::RgbImage| {
        (90..800)
            .flat_map(|y| (0..950).map(move |x| (x, y)))
            .filter(|&(x, y)| picture.get_pixel(x, y).0.iter().all(|&c| c < 35))
            .count()
    };
    let mut picture = screenshot(&x);
    let mut looks = tokio::time::interval(Duration::from_millis(50));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while ink(&picture) <= 3000 && tokio::time::Instant::now() < deadline {
        looks.tick().await;
        picture = screenshot(&x);
    }
    picture
        .save(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/desktop-window.png"))
        .unwrap();
    let colours: std::collections::HashSet<[u8; 3]> = picture.pixels().map(|p| p.0).collect();
    assert!(colours.len() > 50, "only {} colours", colours.len());
    let ink = ink(&picture);
    assert!(
        ink > 3000,
        "the picture is empty after the restart ({ink} dark pixels)"
    );

    // Closing the window stops the shell in order: Chromium exits and its
    // temporary profile goes.
    let shell_pid = shell.id().unwrap();
    let chromium: Vec<u32> = children(shell_pid);
    assert!(!chromium.is_empty(), "Chromium runs under the shell");
    let profiles: Vec<String> = chromium
        .iter()
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .flat_map(|cmdline| {
            cmdline
                .split(|&b| b == 0)
                .filter_map(|arg| arg.strip_prefix(b"--user-data-dir="))
                .map(|dir| String::from_utf8_lossy(dir).into_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(profiles.len(), 1, "{profiles:?}");
    let protocols = atom(&x, "WM_PROTOCOLS");
    let delete = atom(&x, "WM_DELETE_WINDOW");
    let close = ClientMessageEvent::new(32, window, protocols, [delete, 0, 0, 0, 0]);
    x.send_event(false, window, EventMask::NO_EVENT, close)
        .unwrap();
    x.flush().unwrap();
    let exited = tokio::time::timeout(Duration::from_secs(30), shell.wait())
        .await
        .expect("the shell exits when its window closes")
        .unwrap();
    assert!(exited.success(), "{exited}");
    for pid in chromium {
        assert!(
            common::wait_for_exit(pid, Duration::from_secs(10)).await,
            "Chromium ({pid}) outlived the window"
        );
    }
    assert!(
        !std::path::Path::new(&profiles[0]).exists(),
        "the temporary profile {} was removed",
        profiles[0]
    );
    assert!(
        common::instance_records(&runtime).is_empty(),
        "the runtime file goes with the shell"
    );
}

/// The endpoint a desktop shell published in `runtime`.
fn published_endpoint(runtime: &std::path::Path) -> Endpoint {
    let info: Value = common::instance_records(runtime)
        .pop()
        .expect("the window's record");
    Endpoint {
        host: info["url"]
            .as_str()
            .unwrap()
            .trim_start_matches("http://")
            .to_owned(),
        path: "/mcp".into(),
        token: info["token"].as_str().unwrap().to_owned(),
    }
}

/// Whether `window` asks for attention (ICCCM urgency hint in WM_HINTS).
fn urgent(x: &RustConnection, window: Window) -> bool {
    use x11rb::protocol::xproto::AtomEnum;
    const URGENCY_HINT: u32 = 1 << 8;
    x.get_property(false, window, AtomEnum::WM_HINTS, AtomEnum::WM_HINTS, 0, 9)
        .unwrap()
        .reply()
        .unwrap()
        .value32()
        .and_then(|mut values| values.next())
        .is_some_and(|flags| flags & URGENCY_HINT != 0)
}

/// Presses Ctrl+`key` in the focused window, through the XTEST extension
/// (as a keyboard would).
fn press_ctrl(x: &RustConnection, key: char) {
    use x11rb::protocol::xtest::ConnectionExt as _;
    let setup = x.setup();
    let (first, count) = (setup.min_keycode, setup.max_keycode - setup.min_keycode + 1);
    let mapping = x
        .get_keyboard_mapping(first, count)
        .unwrap()
        .reply()
        .unwrap();
    let per = usize::from(mapping.keysyms_per_keycode);
    let keycode = |keysym: u32| {
        let index = mapping
            .keysyms
            .chunks(per)
            .position(|syms| syms.contains(&keysym))
            .expect("the key is on the keyboard");
        first + u8::try_from(index).unwrap()
    };
    let (control, letter) = (keycode(0xffe3), keycode(u32::from(key)));
    let root = setup.roots[0].root;
    for (kind, code) in [(2, control), (2, letter), (3, letter), (3, control)] {
        x.xtest_fake_input(kind, code, 0, root, 0, 0, 0).unwrap();
    }
    x.flush().unwrap();
}

/// Closes `window` as a window manager would, and waits for its shell.
async fn close_window(x: &RustConnection, window: Window, shell: &mut tokio::process::Child) {
    let protocols = atom(x, "WM_PROTOCOLS");
    let delete = atom(x, "WM_DELETE_WINDOW");
    let close = ClientMessageEvent::new(32, window, protocols, [delete, 0, 0, 0, 0]);
    x.send_event(false, window, EventMask::NO_EVENT, close)
        .unwrap();
    x.flush().unwrap();
    let exited = tokio::time::timeout(Duration::from_secs(30), shell.wait())
        .await
        .expect("the shell exits when its window closes")
        .unwrap();
    assert!(exited.success(), "{exited}");
}

#[tokio::test]
async fn the_window_keeps_its_profile_and_a_second_one_raises_the_first() {
    use x11rb::protocol::xproto::InputFocus;
    let display = VirtualDisplay::start();
    let base = serve_fixtures().await;
    let runtime = common::runtime_dir();
    let url = format!("{base}/form.html");
    let x = Arc::new(RustConnection::connect(Some(&display.name)).unwrap().0);

    // First run: the agent signs in (a cookie the site keeps for a day).
    let (mut shell, _) = start_shell_on_display(&runtime, Some(&display.name), &[&url], 3).await;
    let profile = runtime.join("data/browser-shell/profile");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&profile).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the profile is private");
    }
    let (window, _) = window_titled(&x, |t| t.starts_with("Sign-up form")).await;
    let endpoint: &'static Endpoint = Box::leak(Box::new(published_endpoint(&runtime)));
    let mut agent = common::Agent::connect(endpoint).await;
    let (text, error) = agent.call("browser_open", json!({"url": url})).await;
    assert!(!error, "{text}");
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "document.cookie = 'who=ada; max-age=86400; path=/'; return document.cookie"}),
        )
        .await;
    assert!(!error && text.contains("who=ada"), "{text}");

    // A second desktop on the same profile says where the first one is
    // and brings its window to the front (here, with no window manager:
    // the keyboard focus moves to it).
    x.set_input_focus(InputFocus::NONE, x11rb::NONE, x11rb::CURRENT_TIME)
        .unwrap();
    let aux = ChangeWindowAttributesAux::new().event_mask(EventMask::FOCUS_CHANGE);
    x.change_window_attributes(window, &aux)
        .unwrap()
        .check()
        .unwrap();
    assert_ne!(x.get_input_focus().unwrap().reply().unwrap().focus, window);
    let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .env("XDG_DATA_HOME", runtime.join("data"))
        .env("DISPLAY", &display.name)
        .arg(&url)
        .output();
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second instance answers at once")
        .unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{said}");
    assert!(
        said.contains("already running with this profile")
            && said.contains(&format!("pid {}", shell.id().unwrap())),
        "{said}"
    );
    assert_eq!(windows(&x).len(), 1, "no second window: {:?}", windows(&x));
    assert!(said.contains("brought to the front"), "{said}");
    focused(&x, window).await;

    // An agent asks for help: the window asks for attention (the urgency
    // hint a task bar shows) with the request first in its title, and
    // stops asking when the handoff ends (here: its own time runs out).
    assert!(!urgent(&x, window), "no attention asked yet");
    let handoff = agent.call(
        "browser_handoff",
        json!({"reason": "Please sign in", "timeoutMs": 3000}),
    );
    let watched = async {
        window_titled(&x, |t| t.starts_with("Help needed: Please sign in")).await;
        assert!(urgent(&x, window), "the window asks for attention");
        window_titled(&x, |t| !t.starts_with("Help needed")).await;
    };
    let ((text, _), ()) = tokio::join!(handoff, watched);
    assert!(text.contains("TIMEOUT"), "the person kept control: {text}");
    assert!(!urgent(&x, window), "no attention asked after the handoff");

    // The column's keys work in the window: Ctrl+T opens a tab of the person's.
    let tabs = status_until(endpoint, |_| true).await["tabs"]
        .as_u64()
        .unwrap();
    x.set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)
        .unwrap();
    press_ctrl(&x, 't');
    status_until(endpoint, |now| now["tabs"].as_u64() == Some(tabs + 1)).await;

    close_window(&x, window, &mut shell).await;
    assert!(profile.join("Default").is_dir(), "the profile stays");

    // Second run: still signed in.
    let (mut shell, _) = start_shell_on_display(&runtime, Some(&display.name), &[&url], 3).await;
    let (window, _) = window_titled(&x, |t| t.starts_with("Sign-up form")).await;
    let endpoint: &'static Endpoint = Box::leak(Box::new(published_endpoint(&runtime)));
    let mut agent = common::Agent::connect(endpoint).await;
    let (text, error) = agent.call("browser_open", json!({"url": url})).await;
    assert!(!error, "{text}");
    let (text, error) = agent
        .call("browser_execute", json!({"script": "document.cookie"}))
        .await;
    assert!(
        !error && text.contains("who=ada"),
        "the cookie survived: {text}"
    );
    close_window(&x, window, &mut shell).await;
}

/// With the window running and a relay started after it, the tool commands
/// go to the window a person watches (and say so), `status` lists both,
/// and stopping the relay hides nothing of the window (issue 40).
#[tokio::test]
async fn tool_commands_go_to_the_window_a_person_watches() {
    let display = VirtualDisplay::start();
    let base = serve_fixtures().await;
    let runtime = common::runtime_dir();
    let (window, _) = start_shell_on_display(
        &runtime,
        Some(&display.name),
        &["--temporary-profile", &format!("{base}/form.html")],
        3,
    )
    .await;
    let (relay, _) = common::start_shell_in(&runtime, &["relay", "--temporary-profile"], 3).await;
    let (window_pid, relay_pid) = (window.id().unwrap(), relay.id().unwrap());
    let run = |args: Vec<String>| {
        let runtime = runtime.clone();
        async move {
            let output = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
                    .args(&args)
                    .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
                    .env_remove("DISPLAY")
                    .output(),
            )
            .await
            .expect("a command ends within 60 s")
            .unwrap();
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    let (code, status, _) = run(vec!["status".into(), "--json".into()]).await;
    assert_eq!(code, Some(0));
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["kind"], "desktop", "the window first: {status}");
    assert_eq!(
        status["instances"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );

    let (code, opened, stderr) = run(vec!["open".into(), format!("{base}/article.html")]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(opened.contains("article.html"), "{opened}");
    assert!(
        stderr.contains(&format!(
            "Using the window (pid {window_pid}); also running: the relay (pid {relay_pid})"
        )),
        "{stderr}"
    );
    // The page is in the window's browser, where the person looks.
    let window_record = common::instance_records(&runtime)
        .into_iter()
        .find(|record| record["kind"] == "desktop")
        .unwrap();
    let endpoint = Endpoint {
        host: window_record["url"]
            .as_str()
            .unwrap()
            .trim_start_matches("http://")
            .to_owned(),
        path: "/mcp".into(),
        token: window_record["token"].as_str().unwrap().to_owned(),
    };
    status_until(&endpoint, |now| now["tabs"].as_u64() >= Some(2)).await;

    // Stopping the relay hides nothing: the window is still found and used.
    common::stop_shell(relay).await;
    let (code, status, _) = run(vec!["status".into(), "--json".into()]).await;
    assert_eq!(code, Some(0));
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["pid"], u64::from(window_pid), "{status}");
    assert_eq!(
        status["instances"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    let (code, _, stderr) = run(vec!["snapshot".into()]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("also running"), "{stderr}");
    common::stop_shell(window).await;
}
