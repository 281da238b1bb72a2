//! The bridge under abuse, and the extension's worker going away.

use std::time::Duration;

use browser_provider::host::ViewHost;
use browser_provider::host::extension::protocol::{self, EXTENSION_ID, Role};
use browser_provider::snapshot::Scope;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use crate::Ctx;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn dial(ctx: &Ctx, origin: &str) -> Result<Socket, tungstenite::Error> {
    let mut request = format!("ws://{}/extension", ctx.bridge_address())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", origin.parse().unwrap());
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}

fn status_of(result: Result<Socket, tungstenite::Error>) -> u16 {
    match result {
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("expected an HTTP refusal, the upgrade was accepted"),
    }
}

async fn next_json(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(6), socket.next())
            .await
            .ok()??
        {
            Ok(Message::Text(text)) => return serde_json::from_str(text.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

fn hello(nonce: &str) -> Message {
    Message::text(
        json!({"type": "hello", "version": protocol::PROTOCOL_VERSION, "extensionId": EXTENSION_ID, "extensionVersion": "test", "nonce": nonce})
            .to_string(),
    )
}

/// The shell still works through the real extension.
async fn still_works(ctx: &Ctx) {
    assert!(
        ctx.env.host.is_connected(),
        "the real extension was dropped"
    );
    let session = ctx.session().await;
    let cancel = CancellationToken::new();
    ctx.env
        .suite
        .browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    let text = ctx
        .env
        .suite
        .browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    assert!(text.contains("Full name"), "{text}");
    ctx.env.suite.browser.close_session(&session).await.unwrap();
}

pub async fn handshake_abuse_is_refused_and_changes_nothing(ctx: Ctx) {
    let own = format!("chrome-extension://{EXTENSION_ID}");
    // Wrong Origin: a web page, another extension, none at all.
    assert_eq!(status_of(dial(&ctx, "http://127.0.0.1:1").await), 403);
    assert_eq!(
        status_of(dial(&ctx, "chrome-extension://abcdefghijklmnopabcdefghijklmnop").await),
        403
    );

    // A hello from the right Origin naming another extension.
    let mut socket = dial(&ctx, &own).await.unwrap();
    let nonce = protocol::hex(&[1u8; 32]);
    socket
        .send(Message::text(
            json!({"type": "hello", "version": 1, "extensionId": "abcdefghijklmnopabcdefghijklmnop", "nonce": nonce}).to_string(),
        ))
        .await
        .unwrap();
    let answer = next_json(&mut socket).await.unwrap();
    assert_eq!(answer["type"], "refused", "{answer}");

    // Another protocol version.
    let mut socket = dial(&ctx, &own).await.unwrap();
    socket
        .send(Message::text(
            json!({"type": "hello", "version": 99, "extensionId": EXTENSION_ID, "nonce": protocol::hex(&[2u8; 32])}).to_string(),
        ))
        .await
        .unwrap();
    let answer = next_json(&mut socket).await.unwrap();
    assert!(
        answer["reason"].as_str().unwrap().contains("protocol 99"),
        "{answer}"
    );

    // A peer without the secret: its proof is wrong; the shell's proof
    // does not verify under a guessed secret either.
    let mut socket = dial(&ctx, &own).await.unwrap();
    let nonce = protocol::hex(&[3u8; 32]);
    socket.send(hello(&nonce)).await.unwrap();
    let challenge = next_json(&mut socket).await.unwrap();
    assert_eq!(challenge["type"], "challenge");
    let server_nonce = challenge["nonce"].as_str().unwrap();
    let text = protocol::proof_text(Role::Server, EXTENSION_ID, &nonce, server_nonce);
    assert!(protocol::verify(
        &ctx.env.pairing.secret(),
        &text,
        challenge["proof"].as_str().unwrap()
    ));
    assert!(!protocol::verify(
        &[0u8; 32],
        &text,
        challenge["proof"].as_str().unwrap()
    ));
    let guessed = protocol::proof(
        &[0u8; 32],
        &protocol::proof_text(Role::Client, EXTENSION_ID, &nonce, server_nonce),
    );
    socket
        .send(Message::text(
            json!({"type": "proof", "proof": guessed}).to_string(),
        ))
        .await
        .unwrap();
    let answer = next_json(&mut socket).await.unwrap();
    assert_eq!(answer["type"], "refused", "{answer}");
    assert!(
        next_json(&mut socket).await.is_none(),
        "the socket is closed after a refusal"
    );

    // The same hello again (a replay): refused before any challenge.
    let mut socket = dial(&ctx, &own).await.unwrap();
    socket.send(hello(&nonce)).await.unwrap();
    let answer = next_json(&mut socket).await.unwrap();
    assert!(
        answer["reason"].as_str().unwrap().contains("replayed"),
        "{answer}"
    );

    // A frame over 8 MiB ends that connection only.
    let mut socket = dial(&ctx, &own).await.unwrap();
    let _ = socket
        .send(Message::text("x".repeat(9 * 1024 * 1024)))
        .await;
    if let Some(answer) = next_json(&mut socket).await {
        assert_eq!(answer["type"], "refused", "{answer}");
        assert!(next_json(&mut socket).await.is_none());
    }

    // Garbage instead of a hello.
    let mut socket = dial(&ctx, &own).await.unwrap();
    socket.send(Message::text("{not json")).await.unwrap();
    assert_eq!(next_json(&mut socket).await.unwrap()["type"], "refused");

    // At most four connections: the extension holds one; three idle
    // handshakes fill the rest; the next is refused at the upgrade.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(dial(&ctx, &own).await.unwrap());
    }
    assert_eq!(status_of(dial(&ctx, &own).await), 503);
    drop(idle);

    still_works(&ctx).await;
}

pub async fn the_service_worker_stopping_fails_one_call_and_the_next_works(ctx: Ctx) {
    let session = ctx.session().await;
    let cancel = CancellationToken::new();
    let browser = &ctx.env.suite.browser;
    browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap();

    // The worker stops while the agent waits in its tab.
    let waiting = crate::waiting_in_background(browser, &session);
    let worker = ctx
        .env
        .person
        .service_worker()
        .await
        .expect("the extension's worker runs");
    ctx.env
        .person
        .cdp
        .send(None, "Target.closeTarget", json!({"targetId": worker}))
        .await
        .unwrap();
    let failed = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait ends when the worker stops")
        .unwrap()
        .expect_err("the call in flight cannot go on");
    assert_eq!(failed.code(), "NOT_CONNECTED", "{failed}");
    assert!(
        failed.to_string().contains("during the call"),
        "it says the call was cut: {failed}"
    );

    // The extension's doorbell starts the worker again at once; the next
    // call waits for it to reconnect and works.
    let started = tokio::time::Instant::now();
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    assert!(text.contains("Full name"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the worker came back in {:?}",
        started.elapsed()
    );
    // The tab's debugger session outlived the worker: what the page set up
    // (console capture among it) still works.
    crate::tabs::console_is_captured(&ctx, &session, "after the worker restarted").await;
    browser.close_session(&session).await.unwrap();
}

/// More commands at once than the bridge's cap: every one is answered, and
/// no more than [`protocol::MAX_PENDING_COMMANDS`] are ever at the extension at once
/// (the page counts how many of its evaluations run together).
pub async fn commands_past_the_pending_cap_wait_for_a_slot(ctx: Ctx) {
    let session = ctx.session().await;
    let cancel = CancellationToken::new();
    let browser = &ctx.env.suite.browser;
    browser
        .open(&session, &ctx.url("form.html"), false, &cancel)
        .await
        .unwrap();
    let tab = browser.active_tab(&session).unwrap();
    let view = browser.view_of(&session, &tab).unwrap();
    let host = ctx.env.host.clone();
    let counting = "(async () => { \
        globalThis.running = (globalThis.running ?? 0) + 1; \
        globalThis.most = Math.max(globalThis.most ?? 0, globalThis.running); \
        await new Promise((done) => setTimeout(done, 150)); \
        globalThis.running -= 1; return 1; })()";
    let calls = protocol::MAX_PENDING_COMMANDS * 2 + 8;
    let started = tokio::time::Instant::now();
    let answers = futures_util::future::join_all((0..calls).map(|_| {
        let host = host.clone();
        let view = view.clone();
        async move {
            host.send_command(
                &view,
                "Runtime.evaluate",
                json!({"expression": counting, "awaitPromise": true, "returnByValue": true}),
                Duration::from_secs(20),
            )
            .await
        }
    }))
    .await;
    let answered = answers
        .iter()
        .filter(|answer| matches!(answer, Ok(value) if value["result"]["value"] == 1))
        .count();
    assert_eq!(answered, calls, "{:?}", answers.iter().find(|a| a.is_err()));
    let most = host
        .send_command(
            &view,
            "Runtime.evaluate",
            json!({"expression": "globalThis.most", "returnByValue": true}),
            Duration::from_secs(5),
        )
        .await
        .unwrap()["result"]["value"]
        .as_u64()
        .unwrap();
    assert!(
        most <= protocol::MAX_PENDING_COMMANDS as u64 && most > 1,
        "{most} evaluations ran at once"
    );
    tracing::info!(calls, most, took = ?started.elapsed(), "commands past the cap");
    still_works(&ctx).await;
}
