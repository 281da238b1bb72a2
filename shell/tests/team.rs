//! Serving a team: each agent session's browser from a real pool
//! (browserless, installed by `.ci/setup` in `tests/pool`), `BUSY` when it
//! is full, a pool browser that dies replaced for its session alone; and
//! two relays behind HAProxy with the shipped configuration
//! (`assets/team/haproxy.cfg`): one token for both, sessions that stick to
//! their shell, a dead shell's sessions told 404 so their clients start
//! again on the other, viewers routed by their node, and a drain.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::common::{self, Agent, Endpoint, bounded};

/// The pool's token (a test value: the pool listens on loopback only).
const POOL_TOKEN: &str = "pool-test-token";

/// browserless started from the pinned package, with Debian's Chromium
/// behind the path Playwright would look for its own, and stopped (with
/// every browser it started) when dropped.
struct Browserless {
    child: std::process::Child,
    port: u16,
    /// Where it keeps its browsers' profiles (and so how they are found).
    data: PathBuf,
    _files: TempDir,
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browserless {
    /// Starts it with at most `concurrent` browsers and `queued` waiting
    /// connections; returns once it says it is ready (within 60 s).
    async fn start(concurrent: u32, queued: u32) -> Self {
        let install = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pool");
        assert!(
            install
                .join("node_modules/@browserless.io/browserless")
                .is_dir(),
            "browserless is not installed: run .ci/setup (npm ci in shell/tests/pool)"
        );
        let files = TempDir(common::runtime_dir());
        let browsers = files.0.join("playwright-browsers");
        let data = files.0.join("data");
        std::fs::create_dir_all(&data).unwrap();
        // Where Playwright (inside browserless) looks for its Chromium: a
        // link to Debian's, so that nothing downloads a browser.
        let expected = std::process::Command::new("node")
            .args([
                "-e",
                "process.stdout.write(require('playwright-core').chromium.executablePath())",
            ])
            .current_dir(&install)
            .env("PLAYWRIGHT_BROWSERS_PATH", &browsers)
            .output()
            .unwrap();
        let expected = PathBuf::from(String::from_utf8(expected.stdout).unwrap());
        std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("/usr/bin/chromium", &expected).unwrap();
        let port = free_port();
        let mut command = std::process::Command::new("node");
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/team/browserless.mjs"))
            .current_dir(&install)
            .env("PLAYWRIGHT_BROWSERS_PATH", &browsers)
            // Nothing of it outside this test's directory.
            .env("DATA_DIR", &data)
            .env("DOWNLOAD_DIR", files.0.join("downloads"))
            .env("METRICS_JSON_PATH", files.0.join("metrics.json"))
            .env("TOKEN", POOL_TOKEN)
            .env("PORT", port.to_string())
            .env("HOST", "127.0.0.1")
            .env("CONCURRENT", concurrent.to_string())
            .env("QUEUED", queued.to_string())
            // No limit on a session's length: a shell gives its browsers back.
            .env("TIMEOUT", "0")
            .env("DEBUG", "-*")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // Its own process group: dropping it ends every browser it started.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().unwrap();
        let stdout = tokio::process::ChildStdout::from_std(child.stdout.take().unwrap()).unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("browserless is ready") {
                    return;
                }
            }
            panic!("browserless ended before it was ready");
        })
        .await
        .expect("browserless is ready within 60 s");
        // Its output is not read any more: a closed pipe would not stop it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            port,
            data,
            _files: files,
        }
    }

    /// The endpoint shells take browsers from.
    fn endpoint(&self) -> String {
        format!("ws://127.0.0.1:{}/chromium?token={POOL_TOKEN}", self.port)
    }

    /// How many browsers it runs now (its `/pressure`).
    async fn running(&self) -> u64 {
        let (status, body) = common::get(
            &format!("127.0.0.1:{}", self.port),
            &format!("/pressure?token={POOL_TOKEN}"),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let json = &body[body.find('{').unwrap()..=body.rfind('}').unwrap()];
        serde_json::from_str::<Value>(json).unwrap()["pressure"]["running"]
            .as_u64()
            .unwrap()
    }

    /// Kills the pool browser that shows a page whose URL contains
    /// `marker` (as a crash would), found through its debugging port.
    async fn kill_browser_showing(&self, marker: &str) {
        let pid = bounded::first_some(Duration::from_secs(10), || async {
            for (pid, port) in browsers_with_profile_in(&self.data) {
                if devtools_pages(port).await.contains(marker) {
                    return Some(pid);
                }
            }
            None
        })
        .await
        .unwrap_or_else(|| panic!("no pool browser shows {marker}"));
        // SAFETY: killing a browser process this test's pool started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

impl Drop for Browserless {
    fn drop(&mut self) {
        // Stopped as a service manager would: it closes its browsers. They
        // run in process groups of their own, so any left are ended too.
        // SAFETY: signalling the process this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        if !bounded::has_ended_within(self.child.id() as i32, Duration::from_secs(10)) {
            bounded::end_process_group(self.child.id(), Duration::from_secs(5));
        }
        let _ = self.child.wait();
        for (pid, _) in browsers_with_profile_in(&self.data) {
            bounded::end_process_group(pid, Duration::from_secs(5));
        }
    }
}

/// The pool's browsers (main processes with a debugging port) whose
/// profiles are in `data`, with their ports.
fn browsers_with_profile_in(data: &Path) -> Vec<(u32, u16)> {
    let profile = format!("--user-data-dir={}", data.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a.starts_with("--type="))
            || !args.iter().any(|a| a.starts_with(&profile))
        {
            continue;
        }
        if let Some(port) = args
            .iter()
            .find_map(|a| a.strip_prefix("--remote-debugging-port="))
            .and_then(|p| p.parse().ok())
        {
            found.push((pid, port));
        }
    }
    found
}

/// A browser's `/json/list` (its pages and their URLs), read by its
/// `Content-Length`: DevTools keeps the connection open after answering.
/// Empty when it does not answer within 2 s.
async fn devtools_pages(port: u16) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let request = format!("GET /json/list HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut received = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                break;
            }
            received.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&received);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|line| {
                        line.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_owned())
                    })
                    .and_then(|value| value.parse::<usize>().ok())?;
                if body.len() >= length {
                    break;
                }
            }
        }
        Some(String::from_utf8_lossy(&received).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(2), read)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A port free now on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Calls `tool` through `agent` and returns its text, failing the test
/// when it is an error.
async fn works(agent: &mut Agent<'_>, tool: &str, arguments: Value) -> String {
    let (text, is_error) = agent.call(tool, arguments).await;
    assert!(!is_error, "{tool} failed: {text}");
    text
}

/// A value of `name` in Prometheus text `metrics` (the first sample).
fn metric(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find(|line| line.starts_with(name) && line[name.len()..].starts_with([' ', '{']))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_takes_a_browser_from_the_pool_waits_then_busy_and_a_dead_one_is_replaced_for_it_alone()
 {
    let pool = Browserless::start(2, 0).await;
    let fixtures = common::serve_fixtures().await;
    let pool_endpoint = pool.endpoint();
    let (shell, printed) = common::start_shell(
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--pool",
            &pool_endpoint,
            "--pool-wait-ms",
            "5000",
        ],
        2,
    )
    .await;
    let host = printed[0]
        .trim_start_matches("MCP over HTTP: http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let endpoint = Endpoint {
        host: host.clone(),
        path: "/mcp".into(),
        token: printed[1]
            .trim_start_matches("Authorization: Bearer ")
            .to_owned(),
    };
    assert_eq!(pool.running().await, 0, "nothing is taken before a call");

    let mut first = Agent::connect(&endpoint).await;
    let mut second = Agent::connect(&endpoint).await;
    let mut third = Agent::connect(&endpoint).await;
    works(
        &mut first,
        "browser_open",
        json!({"url": format!("{fixtures}/form.html?who=first")}),
    )
    .await;
    works(
        &mut second,
        "browser_open",
        json!({"url": format!("{fixtures}/form.html?who=second")}),
    )
    .await;
    assert_eq!(pool.running().await, 2, "a browser of its own per session");

    // Full (no queue): the third asks again within its wait, then hears BUSY and the pool's words.
    let asked = Instant::now();
    let (text, is_error) = third
        .call(
            "browser_open",
            json!({"url": format!("{fixtures}/form.html?who=third")}),
        )
        .await;
    let waited = asked.elapsed();
    assert!(is_error, "{text}");
    assert!(text.contains("BUSY"), "{text}");
    assert!(
        text.contains("Too many requests"),
        "the pool's words: {text}"
    );
    assert!(
        waited >= Duration::from_millis(4500) && waited < Duration::from_secs(15),
        "waited {waited:?} for a 5 s pool wait"
    );
    let (status, metrics) = common::get(
        &host,
        "/metrics",
        &[("Authorization", &format!("Bearer {}", endpoint.token))],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(metric(&metrics, "browser_shell_pool_browsers_held"), 2.0);
    assert!(
        metric(&metrics, "browser_shell_pool_refusals_total") >= 1.0,
        "{metrics}"
    );

    // The second's browser dies: only the second hears of it, and gets its
    // tab back in a new browser at its last URL.
    pool.kill_browser_showing("who=second").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let recovered = loop {
        let (text, is_error) = second.call("browser_snapshot", json!({})).await;
        if !is_error {
            break text;
        }
        assert!(
            text.contains("BROWSER_RESTARTED"),
            "while its browser is replaced: {text}"
        );
        assert!(
            Instant::now() < deadline,
            "the second session works again within 30 s: {text}"
        );
        // Each failed call answered at once; the next one asks again.
        tokio::task::yield_now().await;
    };
    // (Its notice may have come with a call that failed meanwhile.)
    assert!(recovered.contains("who=second"), "{recovered}");
    let text = works(&mut first, "browser_snapshot", json!({})).await;
    assert!(!text.contains("Note:"), "the first noticed nothing: {text}");
    assert!(text.contains("who=first"), "{text}");

    // A session that ends gives its browser back; the third then gets one.
    assert_eq!(first.disconnect().await, 204);
    bounded::first_some(Duration::from_secs(10), || async {
        (pool.running().await < 2).then_some(())
    })
    .await
    .expect("the ended session's browser goes back to the pool");
    let text = works(
        &mut third,
        "browser_open",
        json!({"url": format!("{fixtures}/form.html?who=third")}),
    )
    .await;
    assert!(text.contains("who=third"), "{text}");
    let tabs = works(&mut third, "browser_list_tabs", json!({})).await;
    assert!(
        !tabs.contains("who=second") && !tabs.contains("who=first"),
        "{tabs}"
    );

    common::stop_shell(shell).await;
    bounded::first_some(Duration::from_secs(10), || async {
        (pool.running().await == 0).then_some(())
    })
    .await
    .expect("a stopped shell gives every browser back");
}

/// The shipped HAProxy configuration for two shells on `ports`, its
/// frontend on `front`.
fn haproxy_config(front: u16, ports: [u16; 2]) -> String {
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/team/haproxy.cfg"),
    )
    .unwrap();
    shipped
        .replace("127.0.0.1:8900", &format!("127.0.0.1:{front}"))
        .replace("127.0.0.1:8910", &format!("127.0.0.1:{}", ports[0]))
        .replace("127.0.0.1:8920", &format!("127.0.0.1:{}", ports[1]))
        .lines()
        .filter(|line| !line.contains("shell3"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// HAProxy, stopped when dropped (with the directory of its configuration).
struct Haproxy {
    process: std::process::Child,
    _config: TempDir,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shells_behind_haproxy_share_one_token_keep_their_sessions_and_hand_over_when_one_dies()
{
    let pool = Browserless::start(6, 6).await;
    let fixtures = common::serve_fixtures().await;
    let token = "team-token-0123456789abcdef0123456789abcdef";
    let view_token = "team-view-token-0123456789abcdef0123456789";
    let ports = [free_port(), free_port()];
    let pool_endpoint = pool.endpoint();
    let mut shells = Vec::new();
    for (number, port) in ports.iter().enumerate() {
        let listen = format!("127.0.0.1:{port}");
        let node = format!("shell{}", number + 1);
        let (shell, printed) = common::start_shell_with_env(
            &common::runtime_dir(),
            None,
            &[
                ("BROWSER_SHELL_TOKEN", token),
                ("BROWSER_SHELL_VIEW_TOKEN", view_token),
                ("BROWSER_SHELL_POOL", &pool_endpoint),
            ],
            &["relay", "--listen", &listen, "--node", &node],
            3,
        )
        .await;
        assert!(
            printed[0].ends_with(&format!("?token={token}&node={node}")),
            "{printed:?}"
        );
        shells.push(shell);
    }
    let front = free_port();
    let dir = TempDir(common::runtime_dir());
    let config = dir.0.join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(front, ports)).unwrap();
    let haproxy = Haproxy {
        process: std::process::Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy is installed (.ci/setup)"),
        _config: dir,
    };
    let front_host = format!("127.0.0.1:{front}");
    let endpoint = Endpoint {
        host: front_host.clone(),
        path: "/mcp".into(),
        token: token.into(),
    };
    bounded::first_some(Duration::from_secs(20), || async {
        let ready = tokio::net::TcpStream::connect(&front_host).await.is_ok()
            && common::get(&front_host, "/readyz", &[]).await.0 == 200;
        ready.then_some(())
    })
    .await
    .expect("HAProxy takes connections and finds a ready shell within 20 s");

    // Four agents through the balancer, one token: each keeps its session
    // (and its own browser) on whichever shell took it.
    let mut agents = Vec::new();
    for _ in 0..4 {
        agents.push(Agent::connect(&endpoint).await);
    }
    for (number, agent) in agents.iter_mut().enumerate() {
        let url = format!("{fixtures}/form.html?agent={number}");
        works(agent, "browser_open", json!({ "url": url })).await;
    }
    for (number, agent) in agents.iter_mut().enumerate() {
        let tabs = works(agent, "browser_list_tabs", json!({})).await;
        assert!(tabs.contains(&format!("agent={number}")), "{tabs}");
        let others = (0..4).filter(|n| *n != number);
        for other in others {
            assert!(
                !tabs.contains(&format!("agent={other}")),
                "cross-talk: {tabs}"
            );
        }
    }
    let auth = format!("Bearer {token}");
    let mut sessions_per_shell = Vec::new();
    for port in ports {
        let (status, metrics) = common::get(
            &format!("127.0.0.1:{port}"),
            "/metrics",
            &[("Authorization", &auth)],
        )
        .await;
        assert_eq!(status, 200, "the team token opens every shell's metrics");
        sessions_per_shell.push(metric(&metrics, "browser_shell_sessions"));
    }
    assert_eq!(
        sessions_per_shell.iter().sum::<f64>(),
        4.0,
        "{sessions_per_shell:?}"
    );

    // A viewer link of shell2 reaches shell2 through the balancer, and its
    // answer names the node for the viewer's next requests.
    let (status, head, _) =
        common::get_with_head(&front_host, &format!("/?token={token}&node=shell2"), &[]).await;
    assert_eq!(status, 200);
    assert!(
        head.contains("set-cookie: browser_shell_node=shell2"),
        "{head}"
    );
    let (viewer, _) = tokio_tungstenite::connect_async(format!(
        "ws://{front_host}/ws?token={view_token}&node=shell2"
    ))
    .await
    .expect("the viewer's WebSocket through the balancer");
    let second_host = format!("127.0.0.1:{}", ports[1]);
    bounded::first_some(Duration::from_secs(10), || async {
        let (_, metrics) = common::get(&second_host, "/metrics", &[("Authorization", &auth)]).await;
        (metric(&metrics, "browser_shell_viewers") == 1.0).then_some(())
    })
    .await
    .expect("shell2 counts the viewer");
    drop(viewer);

    // shell1 dies: its agents hear 404 (the spec's unknown session) from
    // the other shell and start again there; the others see nothing.
    let mut first_shell = shells.remove(0);
    first_shell.start_kill().unwrap();
    first_shell.wait().await.unwrap();
    let mut moved = 0;
    for (number, agent) in agents.iter_mut().enumerate() {
        let request = json!({"jsonrpc": "2.0", "id": 90, "method": "tools/call", "params": {"name": "browser_snapshot", "arguments": {}}});
        let (status, _, body) = common::post(
            &endpoint,
            &[
                ("Authorization", &auth),
                ("Mcp-Session-Id", agent.session()),
            ],
            &request,
        )
        .await;
        match status {
            200 => {
                let text = common::message_with_id(&body, 90)["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                assert!(text.contains(&format!("agent={number}")), "{text}");
            }
            404 => {
                moved += 1;
                let mut again = Agent::connect(&endpoint).await;
                let url = format!("{fixtures}/form.html?agent={number}&again=1");
                works(&mut again, "browser_open", json!({ "url": url })).await;
                *agent = again;
            }
            other => panic!("a session of a dead shell answers {other}: {body}"),
        }
    }
    assert_eq!(
        f64::from(moved),
        sessions_per_shell[0],
        "exactly the dead shell's sessions moved"
    );

    // shell2 drains on SIGTERM: not ready at once, the call under way
    // finishes, then it exits and gives its browsers back.
    let second_shell = shells.remove(0);
    let waiting_agent = &mut agents[0];
    let pid = second_shell.id().unwrap();
    let drain = async {
        bounded::first_some(Duration::from_secs(10), || async {
            let (_, metrics) =
                common::get(&second_host, "/metrics", &[("Authorization", &auth)]).await;
            (metric(&metrics, "browser_shell_tool_calls_in_flight") >= 1.0).then_some(())
        })
        .await
        .expect("the call is under way");
        // SAFETY: signalling the shell this test started.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        bounded::first_some(Duration::from_secs(2), || async {
            (common::get(&second_host, "/readyz", &[]).await.0 == 503).then_some(())
        })
        .await
        .expect("not ready within 2 s of SIGTERM");
    };
    let ((text, is_error), ()) = tokio::join!(
        waiting_agent.call(
            "browser_execute",
            json!({"script": "return new Promise(r => setTimeout(() => r('finished'), 1500))"}),
        ),
        drain
    );
    assert!(!is_error && text.contains("finished"), "{text}");
    assert!(
        common::wait_for_exit(pid, Duration::from_secs(35)).await,
        "the drained shell exits within its bound"
    );
    drop(second_shell);
    bounded::first_some(Duration::from_secs(10), || async {
        (pool.running().await == 0).then_some(())
    })
    .await
    .expect("every browser went back to the pool");
    drop(haproxy);
}
