//! The relay's viewers at the WebSocket level: several at once, a view-only
//! one that cannot act, one that stops reading without stalling anybody,
//! frames that decode to the page's size, typing through the live view,
//! and `/mcp` on the relay's port refusing strangers.

use crate::common;

use std::time::Duration;

use base64::Engine as _;
use browser_testkit::fixtures::serve_fixtures;
use common::{Agent, Endpoint, get, post, start_shell};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A viewer's socket.
async fn connect(host: &str, token: &str) -> Socket {
    let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{host}/ws?token={token}"))
        .await
        .unwrap();
    socket
}

/// The next message, within a bound.
async fn next(socket: &mut Socket) -> Message {
    tokio::time::timeout(Duration::from_secs(30), socket.next())
        .await
        .expect("a message within 30 s")
        .expect("the socket is open")
        .unwrap()
}

/// Reads until a frame arrives (meta + JPEG), acknowledges it, and returns
/// (meta, decoded picture). Skips state and activity messages.
async fn next_frame(socket: &mut Socket) -> (Value, image::DynamicImage) {
    loop {
        let Message::Text(text) = next(socket).await else {
            continue;
        };
        let meta: Value = serde_json::from_str(&text).unwrap();
        if meta["type"] != "frame" {
            continue;
        }
        let Message::Binary(jpeg) = next(socket).await else {
            panic!("a frame's picture follows its meta")
        };
        socket
            .send(Message::Text(json!({"type": "ack"}).to_string().into()))
            .await
            .unwrap();
        let picture = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg)
            .expect("the frame is a JPEG");
        return (meta, picture);
    }
}

/// Reads until a state message satisfies `accept`, acknowledging the
/// frames that pass by (as the browser column does).
async fn state_where(socket: &mut Socket, accept: impl Fn(&Value) -> bool) -> Value {
    loop {
        let message = next(socket).await;
        if let Message::Binary(_) = message {
            send(socket, json!({"type": "ack"})).await;
            continue;
        }
        if let Message::Text(text) = message {
            let message: Value = serde_json::from_str(&text).unwrap();

            if message["type"] == "state" && accept(&message) {
                return message;
            }
        }
    }
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn viewers_watch_act_and_never_stall_each_other() {
    let base = serve_fixtures().await;
    let (_relay, printed) = start_shell(&["relay"], 3).await;
    let Endpoint { host, token, .. } = Endpoint::of_viewer_link(&printed[0]);
    let view_token = printed[1].split("token=").nth(1).unwrap().to_owned();

    // /mcp on the relay's port: strangers and watchers are refused.
    let mcp = Endpoint {
        host: host.clone(),
        path: "/mcp".into(),
        token: token.clone(),
    };
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for (headers, expected) in [
        (vec![], 401),
        (vec![("Authorization", "Bearer wrong".to_owned())], 401),
        (vec![("Authorization", format!("Bearer {view_token}"))], 403),
        (
            vec![
                ("Authorization", format!("Bearer {token}")),
                ("Origin", "https://evil.test".to_owned()),
            ],
            403,
        ),
        (
            vec![
                ("Authorization", format!("Bearer {token}")),
                ("Host", "attacker.test".to_owned()),
            ],
            403,
        ),
    ] {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, _, body) = post(&mcp, &headers, &ping).await;
        assert_eq!(status, expected, "{headers:?}: {body}");
        assert!(!body.contains("browser-shell"), "nothing leaks: {body}");
    }
    let (status, _) = get(&host, &format!("/ws?token={view_token}x"), &[]).await;
    assert_eq!(status, 401);

    // An agent works a page.
    let mut agent = Agent::connect(&mcp).await;
    let (text, error) = agent
        .call("browser_open", json!({"url": format!("{base}/form.html")}))
        .await;
    assert!(!error, "{text}");

    // Three viewers: one that acts, one that only watches, one that stops reading.
    let mut person = connect(&host, &token).await;
    let mut watcher = connect(&host, &view_token).await;
    let stalled = connect(&host, &token).await;
    let first = state_where(&mut person, |s| {
        s["tabs"].as_array().is_some_and(|tabs| !tabs.is_empty())
    })
    .await;
    assert_eq!(first["holder"], "agent");
    assert_eq!(first["viewOnly"], false);
    let watching = state_where(&mut watcher, |_| true).await;
    assert_eq!(watching["viewOnly"], true);

    // Frames decode to the page's size (CSS pixels, device scale 1).
    let (meta, picture) = next_frame(&mut person).await;
    let width = meta["cssWidth"].as_f64().unwrap();
    let height = meta["cssHeight"].as_f64().unwrap();
    assert!(
        (f64::from(picture.width()) - width).abs() <= 2.0
            && (f64::from(picture.height()) - height).abs() <= 2.0,
        "{}x{} for {width}x{height}",
        picture.width(),
        picture.height()
    );
    next_frame(&mut watcher).await;

    // The watcher's input and control requests change nothing.
    let epoch = first["epoch"].clone();
    send(&mut watcher, json!({"type": "takeover"})).await;
    send(
        &mut watcher,
        json!({"type": "mouse", "kind": "down", "x": 0.5, "y": 0.5, "button": "left", "clicks": 1}),
    )
    .await;
    send(&mut watcher, json!({"type": "text", "text": "intruder"})).await;
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "click", "role": "button", "name": "Add one"}),
        )
        .await;
    assert!(!error, "the agent still holds control: {text}");

    // The stalled viewer never reads: the agent and the others go on.
    for round in 0..5 {
        let started = std::time::Instant::now();
        let (text, error) = agent
            .call(
                "browser_act",
                json!({"action": "click", "role": "button", "name": "Add one"}),
            )
            .await;
        assert!(!error, "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "round {round}: {:?}",
            started.elapsed()
        );
    }
    let before = next_frame(&mut person).await.0["sequence"]
        .as_u64()
        .unwrap();
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "click", "role": "button", "name": "Add one"}),
        )
        .await;
    assert!(!error, "{text}");
    let mut later = before;
    while later <= before {
        later = next_frame(&mut person).await.0["sequence"]
            .as_u64()
            .unwrap();
    }
    drop(stalled);

    // Typing through the live view: click the field, type; it takes control.
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "const r = document.getElementById('name').getBoundingClientRect(); \
                return [(r.left + r.width / 2) / innerWidth, (r.top + r.height / 2) / innerHeight]"}),
        )
        .await;
    assert!(!error, "{text}");
    let array = &text[text.find('[').unwrap()..=text.rfind(']').unwrap()];
    let numbers: Vec<f64> = serde_json::from_str(array).expect("the point as a JSON array");
    let (x, y) = (numbers[0], numbers[1]);
    for kind in ["down", "up"] {
        send(
            &mut person,
            json!({"type": "mouse", "kind": kind, "x": x, "y": y, "button": "left", "clicks": 1}),
        )
        .await;
    }
    for letter in ["G", "r", "a", "c", "e"] {
        send(
            &mut person,
            json!({"type": "key", "kind": "down", "key": letter, "code": format!("Key{}", letter.to_uppercase()), "text": letter}),
        )
        .await;
        send(
            &mut person,
            json!({"type": "key", "kind": "up", "key": letter, "code": format!("Key{}", letter.to_uppercase())}),
        )
        .await;
    }
    // An input method: text shown while composed, then committed in its place.
    for composed in ["ほ", "ほっぱ"] {
        send(&mut person, json!({"type": "compose", "text": composed})).await;
    }
    send(&mut person, json!({"type": "text", "text": "ホッパー"})).await;
    let human = state_where(&mut person, |s| s["holder"] == "human").await;
    assert_ne!(human["epoch"], epoch);
    let (text, error) = agent
        .call(
            "browser_act",
            json!({"action": "click", "role": "button", "name": "Add one"}),
        )
        .await;
    assert!(
        error && text.starts_with("Error HUMAN_INTERVENED"),
        "{text}"
    );
    // The viewer's messages are handled in order, so once control is back
    // every key has reached the page.
    send(&mut person, json!({"type": "return"})).await;
    state_where(&mut person, |s| s["holder"] == "agent").await;
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "document.getElementById('name').value"}),
        )
        .await;
    assert!(!error && text.contains("\"Graceホッパー\""), "{text}");
    assert!(
        !text.contains("intruder"),
        "the watcher typed nothing: {text}"
    );

    // A dialog the page opens shows on the timeline as it happens.
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "setTimeout(() => alert('Saved!'), 0); return 1"}),
        )
        .await;
    assert!(!error, "{text}");
    loop {
        let message = next(&mut person).await;
        if let Message::Binary(_) = message {
            send(&mut person, json!({"type": "ack"})).await;
            continue;
        }
        let Message::Text(text) = message else {
            continue;
        };
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["type"] == "activity" && message["what"] == "alert dialog" {
            assert!(
                message["summary"].as_str().unwrap().contains("Saved!")
                    && message["summary"].as_str().unwrap().contains("dismissed"),
                "{message}"
            );
            break;
        }
    }

    // A small viewer gets small frames: no bigger than its picture area.
    send(
        &mut person,
        json!({"type": "viewport", "width": 640, "height": 360}),
    )
    .await;
    let mut small = next_frame(&mut person).await.1;
    for _ in 0..20 {
        if small.width() <= 640 {
            break;
        }
        // Frames already under way at the old size come first.
        small = next_frame(&mut person).await.1;
    }
    assert!(
        small.width() <= 640 && small.height() <= 360,
        "{}x{}",
        small.width(),
        small.height()
    );
    send(
        &mut person,
        json!({"type": "viewport", "width": 1600, "height": 1000}),
    )
    .await;

    // The person's own tabs: open one, an agent claims it exactly as listed.
    send(
        &mut person,
        json!({"type": "newTab", "url": format!("{base}/article.html")}),
    )
    .await;
    // Its icon is the page's own, loaded by the agent's browser and sent
    // as a data: URL; the agent's form page names none and its site has
    // no /favicon.ico: no icon.
    let svg = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/favicon.svg"),
    )
    .unwrap();
    let article_icon = format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg)
    );
    let with_yours = state_where(&mut person, |s| {
        s["tabs"].as_array().unwrap().iter().any(|t| {
            t["session"].is_null()
                && t["title"] == "Field Guide to Owls"
                && t["shown"] == true
                && t["icon"] == article_icon.as_str()
        })
    })
    .await;
    let form_tab = with_yours["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["url"].as_str().unwrap().ends_with("/form.html"))
        .unwrap();
    assert!(form_tab["icon"].is_null(), "{form_tab}");
    let yours = with_yours["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "Field Guide to Owls")
        .unwrap()
        .clone();
    let (listed, _) = agent.call("browser_list_tabs", json!({})).await;
    assert!(
        listed.contains(&format!(
            "{}: {} | Field Guide to Owls",
            yours["handle"].as_str().unwrap(),
            yours["url"].as_str().unwrap()
        )),
        "{listed}"
    );
    let (text, error) = agent
        .call(
            "browser_claim_tab",
            json!({"tab": yours["handle"], "url": yours["url"], "title": "Not the title"}),
        )
        .await;
    assert!(error && text.starts_with("Error TAB_NOT_FOUND"), "{text}");
    let (text, error) = agent
        .call(
            "browser_claim_tab",
            json!({"tab": yours["handle"], "url": yours["url"], "title": yours["title"]}),
        )
        .await;
    assert!(!error && text.contains("Claimed"), "{text}");
    let claimed = state_where(&mut person, |s| {
        s["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["handle"] == yours["handle"] && !t["session"].is_null())
    })
    .await;
    let session = claimed["sessions"][0].clone();

    // The person closes it from the tab strip; the agent finds it gone.
    send(
        &mut person,
        json!({"type": "closeTab", "tab": yours["handle"]}),
    )
    .await;
    state_where(&mut person, |s| {
        !s["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["handle"] == yours["handle"])
    })
    .await;
    let (listed, _) = agent.call("browser_list_tabs", json!({})).await;
    assert!(!listed.contains("Field Guide to Owls"), "{listed}");

    // A blank tab of the person's, handed to the agent from the tab strip.
    send(&mut person, json!({"type": "newTab", "url": ""})).await;
    let blank = state_where(&mut person, |s| {
        s["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["session"].is_null() && t["shown"] == true && t["url"] == "about:blank")
    })
    .await;
    let blank = blank["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["shown"] == true)
        .unwrap()["handle"]
        .clone();
    send(
        &mut person,
        json!({"type": "give", "tab": blank, "session": session}),
    )
    .await;
    state_where(&mut person, |s| {
        s["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["handle"] == blank && t["session"] == session)
    })
    .await;
    // Blocked addresses are refused with a code, not opened.
    send(
        &mut person,
        json!({"type": "newTab", "url": "file:///etc/passwd"}),
    )
    .await;
    loop {
        if let Message::Text(text) = next(&mut person).await {
            let message: Value = serde_json::from_str(&text).unwrap();
            if message["type"] == "error" {
                assert_eq!(message["code"], "NAVIGATION_BLOCKED", "{message}");
                break;
            }
        }
    }

    // An agent's wait in flight ends with HUMAN_INTERVENED when the person
    // touches the live view (the timeline says when the wait has started).
    let started = std::time::Instant::now();
    let (waited, ()) = tokio::join!(
        agent.call(
            "browser_wait",
            json!({"text": "Never on this page", "timeoutMs": 20000}),
        ),
        async {
            loop {
                let message = next(&mut person).await;
                if let Message::Binary(_) = message {
                    send(&mut person, json!({"type": "ack"})).await;
                    continue;
                }
                let Message::Text(text) = message else {
                    continue;
                };
                let message: Value = serde_json::from_str(&text).unwrap();
                if message["type"] == "activity"
                    && message["what"] == "browser_wait"
                    && message["outcome"].is_null()
                {
                    break;
                }
            }
            send(
                &mut person,
                json!({"type": "mouse", "kind": "move", "x": 0.5, "y": 0.5}),
            )
            .await;
        }
    );
    let (text, error) = waited;
    assert!(
        error && text.starts_with("Error HUMAN_INTERVENED"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    send(&mut person, json!({"type": "return"})).await;
}

/// Every answer of the relay carries a restrictive policy (the column's
/// allows only its own nonce'd code), no referrer and no sniffing; a
/// harness origin may frame it only when named; an address that keeps
/// guessing tokens is answered more and more slowly.
#[tokio::test]
async fn answers_carry_security_headers_and_guessers_are_slowed_down() {
    let (_relay, printed) =
        start_shell(&["relay", "--embed-origin", "https://harness.example"], 3).await;
    let Endpoint { host, token, .. } = Endpoint::of_viewer_link(&printed[0]);
    let (status, head, body) = common::get_with_head(&host, &format!("/?token={token}"), &[]).await;
    assert_eq!(status, 200);
    let policy = head
        .lines()
        .find_map(|line| line.strip_prefix("content-security-policy: "))
        .unwrap_or_else(|| panic!("{head}"))
        .to_owned();
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("{policy}"));
    assert!(policy.starts_with("default-src 'none'; "), "{policy}");
    assert!(
        policy.contains("frame-ancestors https://harness.example"),
        "{policy}"
    );
    assert!(!policy.contains("unsafe"), "{policy}");
    assert!(
        body.contains(&format!("<script nonce=\"{nonce}\">")),
        "the page's script carries the nonce"
    );
    assert!(head.contains("referrer-policy: no-referrer"), "{head}");
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    // Answers that are not pages too, refusals included.
    for (path, expected) in [
        ("/status", 401),
        ("/nowhere", 401),
        ("/.well-known/oauth-protected-resource", 404),
    ] {
        let (status, head, _) = common::get_with_head(&host, path, &[]).await;
        assert_eq!(status, expected, "{path}");
        assert!(head.contains("content-security-policy: default-src 'none'; frame-ancestors https://harness.example"), "{head}");
        assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    }

    // Wrong tokens: the first few are answered at once, then slower each time.
    let guess = |_: usize| async {
        let started = std::time::Instant::now();
        let (status, _) = get(&host, "/?token=wrong", &[]).await;
        assert_eq!(status, 401);
        started.elapsed()
    };
    let mut times = Vec::new();
    for attempt in 0..8 {
        times.push(guess(attempt).await);
    }
    assert!(times[0] < Duration::from_millis(200), "{times:?}");
    assert!(times[7] >= Duration::from_millis(500), "{times:?}");
    // The right token still works, and clears the slate.
    let (status, _) = get(&host, &format!("/?token={token}"), &[]).await;
    assert_eq!(status, 200);
    assert!(guess(9).await < Duration::from_millis(200));
}

/// A relay rendering for 2× screens: frames are twice the page's CSS size
/// (sharp on such a screen), the agent's screenshot keeps CSS pixels, and
/// a scale out of range is refused before anything starts.
#[tokio::test]
async fn a_relay_for_sharp_screens_sends_frames_at_twice_the_page_size() {
    let base = serve_fixtures().await;
    let refused = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["relay", "--device-scale-factor", "5", "--print-config"])
        .output()
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("deviceScaleFactor"));

    let (_relay, printed) = start_shell(&["relay", "--device-scale-factor", "2"], 3).await;
    let endpoint = Endpoint::of_viewer_link(&printed[0]);
    let mut agent = Agent::connect(&endpoint).await;
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error, "{text}");
    let mut viewer = connect(&endpoint.host, &endpoint.token).await;
    send(
        &mut viewer,
        json!({"type": "viewport", "width": 2560, "height": 1600}),
    )
    .await;
    let mut seen = Vec::new();
    loop {
        let (meta, picture) = next_frame(&mut viewer).await;
        seen.push((meta["cssWidth"].clone(), picture.width(), picture.height()));
        if meta["cssWidth"].as_f64() == Some(1280.0) && picture.width() == 2560 {
            break;
        }
        // Frames under way at the old size come first.
        assert!(seen.len() < 60, "never twice the page's size: {seen:?}");
    }
    let (text, error) = agent.call("browser_screenshot", json!({})).await;
    assert!(
        !error && text.starts_with("Screenshot 1280x800 "),
        "the agent's picture keeps CSS pixels: {text}"
    );
}

/// A relay rendering at the browser's own scale, watched from a 2× screen:
/// once the page is still, the viewer gets it at twice its CSS size, while
/// the page and the agent's screenshots keep their own.
#[tokio::test]
async fn a_viewer_on_a_sharp_screen_gets_sharp_pictures_of_a_still_page() {
    let base = serve_fixtures().await;
    let (_relay, printed) = start_shell(&["relay"], 3).await;
    let endpoint = Endpoint::of_viewer_link(&printed[0]);
    let mut agent = Agent::connect(&endpoint).await;
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error, "{text}");
    let mut viewer = connect(&endpoint.host, &endpoint.token).await;
    send(
        &mut viewer,
        json!({"type": "viewport", "width": 2560, "height": 1600, "cssWidth": 1280, "cssHeight": 800}),
    )
    .await;
    let mut seen = Vec::new();
    loop {
        let (meta, picture) = next_frame(&mut viewer).await;
        seen.push((meta["cssWidth"].clone(), picture.width(), picture.height()));
        if meta["cssWidth"].as_f64() == Some(1280.0) && picture.width() == 2560 {
            break;
        }
        assert!(seen.len() < 60, "never a sharp picture: {seen:?}");
    }
    let (text, error) = agent.call("browser_screenshot", json!({})).await;
    assert!(
        !error && text.starts_with("Screenshot 1280x800 "),
        "the agent's picture keeps CSS pixels: {text}"
    );
    let (text, error) = agent
        .call(
            "browser_execute",
            json!({"script": "`${innerWidth}x${devicePixelRatio}`"}),
        )
        .await;
    assert!(
        !error && text.contains("1280x1"),
        "the page saw no larger screen: {text}"
    );
}

/// Two identical calls running at once in one session keep their own
/// timeline entries: each ends, none stays "running".
#[tokio::test]
async fn identical_calls_at_once_keep_their_own_timeline_entries() {
    let base = serve_fixtures().await;
    let (_relay, printed) = start_shell(&["relay"], 3).await;
    let endpoint = Endpoint::of_viewer_link(&printed[0]);
    let mut agent = Agent::connect(&endpoint).await;
    let (text, error) = agent
        .call(
            "browser_open",
            json!({"url": format!("{base}/article.html")}),
        )
        .await;
    assert!(!error, "{text}");
    let mut viewer = connect(&endpoint.host, &endpoint.token).await;
    let auth = format!("Bearer {}", endpoint.token);
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", agent.session()),
    ];
    let wait = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "browser_wait",
            "arguments": {"text": "Never on this page", "timeoutMs": 500}}})
    };
    let (one, other) = (wait(100), wait(101));
    let (first, second) = tokio::join!(
        post(&endpoint, &headers, &one),
        post(&endpoint, &headers, &other)
    );
    assert!(first.2.contains("TIMEOUT") && second.2.contains("TIMEOUT"));

    // The viewer's timeline: every browser_wait entry it heard of has ended.
    let mut entries = std::collections::BTreeMap::new();
    while entries.values().filter(|ended| **ended).count() < 2 {
        let message = next(&mut viewer).await;
        if let Message::Binary(_) = message {
            send(&mut viewer, json!({"type": "ack"})).await;
            continue;
        }
        let Message::Text(text) = message else {
            continue;
        };
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["type"] == "activity" && message["what"] == "browser_wait" {
            let ended = !message["outcome"].is_null();
            entries.insert(message["id"].as_u64().unwrap(), ended);
        }
    }
    assert_eq!(
        entries.len(),
        2,
        "one entry per call, each ended: {entries:?}"
    );
}
