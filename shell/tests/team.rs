//! Serving a team: each agent session's browser from a real pool
//! (browserless, installed by `.ci/setup` in `tests/pool`), `BUSY` when it
//! is full (and a session's place in the pool's queue kept for its next
//! call), a pool browser that dies replaced for its session alone; and
//! two relays behind HAProxy with the shipped configuration
//! (`assets/team/haproxy.cfg`): one token for both, sessions that stick to
//! their shell, a dead shell's sessions told 404 so their clients start
//! again on the other, viewers routed by their node, and a drain.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{self, Agent, Endpoint, bounded};
use browser_testkit::pool::{Browserless, Haproxy, free_port, metric};

/// Calls `tool` through `agent` and returns its text, failing the test
/// when it is an error.
async fn works(agent: &mut Agent<'_>, tool: &str, arguments: Value) -> String {
    let (text, is_error) = agent.call(tool, arguments).await;
    assert!(!is_error, "{tool} failed: {text}");
    text
}

/// `mcp --http` taking its sessions' browsers from `pool`, each waiting
/// `wait_ms` at most: the shell, its host and its MCP endpoint.
async fn mcp_over_http_with_pool(
    pool: &Browserless,
    wait_ms: &str,
) -> (common::Shell, String, Endpoint) {
    let pool_endpoint = pool.endpoint();
    let (shell, printed) = common::start_shell(
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--pool",
            &pool_endpoint,
            "--pool-wait-ms",
            wait_ms,
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
    (shell, host, endpoint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_takes_a_browser_from_the_pool_waits_then_busy_and_a_dead_one_is_replaced_for_it_alone()
 {
    let pool = Browserless::start(common::runtime_dir(), 0, 2, 0).await;
    let fixtures = browser_testkit::fixtures::serve_fixtures().await;
    let (shell, host, endpoint) = mcp_over_http_with_pool(&pool, "5000").await;
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

    // The pool restarts (a deployment, or its crash): each session hears
    // BROWSER_RESTARTED (or a note with its next answer) and works again
    // at its page in a browser of the new pool.
    let port = pool.port();
    drop(pool);
    let pool = Browserless::start(common::runtime_dir(), port, 2, 0).await;
    for (agent, who) in [(&mut first, "first"), (&mut second, "second")] {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut told = false;
        let text = loop {
            let (text, is_error) = agent.call("browser_snapshot", json!({})).await;
            if !is_error {
                break text;
            }
            assert!(
                text.contains("BROWSER_RESTARTED"),
                "{who}, while the pool restarts: {text}"
            );
            told = true;
            assert!(
                Instant::now() < deadline,
                "{who} works again within 30 s of the pool's restart: {text}"
            );
        };
        assert!(
            told || text.contains("Note: your browser stopped"),
            "{who} is told: {text}"
        );
        assert!(text.contains(&format!("who={who}")), "{who}: {text}");
    }
    assert_eq!(
        pool.running().await,
        2,
        "one browser each from the new pool"
    );

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_queued_by_a_full_pool_keeps_its_place_after_busy() {
    // One browser, a queue: the second session's connection waits in it.
    let pool = Browserless::start(common::runtime_dir(), 0, 1, 4).await;
    let fixtures = browser_testkit::fixtures::serve_fixtures().await;
    let (shell, host, endpoint) = mcp_over_http_with_pool(&pool, "3000").await;
    let mut first = Agent::connect(&endpoint).await;
    let mut second = Agent::connect(&endpoint).await;
    works(
        &mut first,
        "browser_open",
        json!({"url": format!("{fixtures}/form.html?who=first")}),
    )
    .await;
    let (text, is_error) = second
        .call(
            "browser_open",
            json!({"url": format!("{fixtures}/form.html?who=second")}),
        )
        .await;
    assert!(is_error && text.contains("BUSY"), "{text}");
    assert!(text.contains("kept this session in its queue"), "{text}");

    // The first ends: the connection still queued for the second gets the
    // browser, and the second's next call takes it at once.
    assert_eq!(first.disconnect().await, 204);
    bounded::first_some(Duration::from_secs(10), || async {
        let (_, metrics) = common::get(
            &host,
            "/metrics",
            &[("Authorization", &format!("Bearer {}", endpoint.token))],
        )
        .await;
        (metric(&metrics, "browser_shell_pool_browsers_held") == 0.0).then_some(())
    })
    .await
    .expect("the first session's browser goes back");
    bounded::first_some(Duration::from_secs(10), || async {
        (pool.running().await == 1).then_some(())
    })
    .await
    .expect("the queued connection gets the pool's browser");
    let asked = Instant::now();
    let text = works(
        &mut second,
        "browser_open",
        json!({"url": format!("{fixtures}/form.html?who=second")}),
    )
    .await;
    assert!(text.contains("who=second"), "{text}");
    assert!(
        asked.elapsed() < Duration::from_millis(2500),
        "the browser was waiting for it: {:?}",
        asked.elapsed()
    );
    let (_, metrics) = common::get(
        &host,
        "/metrics",
        &[("Authorization", &format!("Bearer {}", endpoint.token))],
    )
    .await;
    assert_eq!(
        metric(&metrics, "browser_shell_pool_browsers_taken_total"),
        2.0
    );
    assert!(
        metric(&metrics, "browser_shell_pool_waits_total") >= 1.0,
        "{metrics}"
    );
    assert_eq!(
        pool.running().await,
        1,
        "one browser: none launched for nobody"
    );
    common::stop_shell(shell).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_asked_for_by_a_session_that_ended_goes_back_to_the_pool() {
    // One browser, a queue; the shell keeps an unclaimed browser for 3 s.
    let pool = Browserless::start(common::runtime_dir(), 0, 1, 4).await;
    let fixtures = browser_testkit::fixtures::serve_fixtures().await;
    let (shell, _host, endpoint) = mcp_over_http_with_pool(&pool, "3000").await;
    let endpoint: &'static Endpoint = Box::leak(Box::new(endpoint));
    let mut first = Agent::connect(endpoint).await;
    works(
        &mut first,
        "browser_open",
        json!({"url": format!("{fixtures}/form.html?who=first")}),
    )
    .await;
    // The second's call waits in the pool's queue; its client ends the
    // session meanwhile (the call is dropped, not answered).
    let mut second = Agent::connect(endpoint).await;
    let session = second.session().to_owned();
    let waiting = tokio::spawn(async move {
        second
            .call("browser_open", json!({"url": "http://127.0.0.1:9/never"}))
            .await
    });
    bounded::first_some(Duration::from_secs(10), || async {
        (pool.queued().await == 1).then_some(())
    })
    .await
    .expect("the second's ask waits in the pool's queue");
    assert_eq!(common::delete_session(endpoint, &session).await, 204);
    waiting.abort();
    // The first ends: the queued ask gets the browser, nobody takes it up,
    // and it goes back to the pool once the shell stops keeping it.
    assert_eq!(first.disconnect().await, 204);
    bounded::first_some(Duration::from_secs(30), || async {
        (pool.running().await == 0).then_some(())
    })
    .await
    .expect("the browser nobody took goes back to the pool");
    common::stop_shell(shell).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shells_behind_haproxy_share_one_token_keep_their_sessions_and_hand_over_when_one_dies()
{
    let pool = Browserless::start(common::runtime_dir(), 0, 6, 6).await;
    let fixtures = browser_testkit::fixtures::serve_fixtures().await;
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
    let haproxy = Haproxy::start(common::runtime_dir(), front, &ports).await;
    let front_host = format!("127.0.0.1:{front}");
    let endpoint = Endpoint {
        host: front_host.clone(),
        path: "/mcp".into(),
        token: token.into(),
    };

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
