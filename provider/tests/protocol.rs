//! Protocol edge cases against fake CDP peers: a WebSocket server and a raw
//! pipe that we script message by message. Behaviour against the real
//! browser is in `tests/browser/`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use browser_provider::cdp::transport::{self, Transport};
use browser_provider::cdp::{Connection, EventFilter, SessionId};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What the test tells the fake peer to do.
enum Action {
    Send(String),
    Close,
}

/// A scripted CDP peer behind a real WebSocket.
struct FakePeer {
    /// Commands the client sent, parsed.
    received: mpsc::UnboundedReceiver<Value>,
    /// What to do next.
    actions: mpsc::UnboundedSender<Action>,
}

impl FakePeer {
    async fn next_command(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(5), self.received.recv())
            .await
            .expect("the client sends a command")
            .expect("the peer is running")
    }

    fn send(&self, message: Value) {
        self.actions
            .send(Action::Send(message.to_string()))
            .unwrap();
    }

    fn send_raw(&self, text: &str) {
        self.actions.send(Action::Send(text.to_owned())).unwrap();
    }

    fn close(&self) {
        self.actions.send(Action::Close).unwrap();
    }
}

/// Starts a fake peer and a connection to it.
async fn connect(default_timeout: Duration) -> (Connection, FakePeer) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "ws://{}/devtools/browser/fake",
        listener.local_addr().unwrap()
    );
    let (received_tx, received) = mpsc::unbounded_channel();
    let (actions, mut actions_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let socket = tokio_tungstenite::accept_async(stream).await.unwrap();
        let (mut sink, mut source) = socket.split();
        loop {
            tokio::select! {
                frame = source.next() => match frame {
                    Some(Ok(Message::Text(text))) => {
                        let _ = received_tx.send(serde_json::from_str::<Value>(text.as_str()).unwrap());
                    }
                    Some(Ok(_)) => {}
                    _ => return,
                },
                action = actions_rx.recv() => match action {
                    Some(Action::Send(text)) => { let _ = sink.send(Message::text(text)).await; }
                    Some(Action::Close) | None => { let _ = sink.close().await; return; }
                },
            }
        }
    });
    let transport = transport::websocket(&url).await.unwrap();
    (
        Connection::start(transport, default_timeout),
        FakePeer { received, actions },
    )
}

#[tokio::test]
async fn responses_may_arrive_out_of_order() {
    let (connection, mut peer) = connect(Duration::from_secs(5)).await;
    let first = connection.send(None, "Test.first", json!({"n": 1}));
    let second = connection.send(None, "Test.second", json!({"n": 2}));
    let answer = async {
        let a = peer.next_command().await;
        let b = peer.next_command().await;
        // Answer the later command first.
        for command in [&b, &a] {
            peer.send(json!({"id": command["id"], "result": {"echo": command["method"]}}));
        }
    };
    let (first, second, ()) = tokio::join!(first, second, answer);
    assert_eq!(first.unwrap(), json!({"echo": "Test.first"}));
    assert_eq!(second.unwrap(), json!({"echo": "Test.second"}));
    assert_eq!(connection.pending_commands(), 0);
}

#[tokio::test]
async fn a_response_that_never_comes_times_out_and_is_forgotten() {
    let (connection, mut peer) = connect(Duration::from_millis(200)).await;
    let error = connection
        .send(None, "Test.silent", json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TIMEOUT");
    assert!(error.to_string().contains("Test.silent"));
    assert_eq!(connection.pending_commands(), 0, "the waiter is removed");

    // A late answer to the timed-out command is ignored; the connection still works.
    let silent = peer.next_command().await;
    peer.send(json!({"id": silent["id"], "result": {}}));
    let next = connection.send_with_timeout(None, "Test.next", json!({}), Duration::from_secs(5));
    let answer = async {
        let command = peer.next_command().await;
        peer.send(json!({"id": command["id"], "result": {"ok": true}}));
    };
    let (next, ()) = tokio::join!(next, answer);
    assert_eq!(next.unwrap(), json!({"ok": true}));
}

#[tokio::test]
async fn a_cancelled_caller_removes_its_waiter() {
    let (connection, mut peer) = connect(Duration::from_secs(30)).await;
    {
        let call = connection.send(None, "Test.cancelled", json!({}));
        tokio::pin!(call);
        // Poll until the command is on the wire, then drop the future.
        tokio::select! {
            _ = &mut call => panic!("no answer was sent"),
            command = peer.next_command() => assert_eq!(command["method"], "Test.cancelled"),
        }
        assert_eq!(connection.pending_commands(), 1);
    }
    assert_eq!(connection.pending_commands(), 0);
}

#[tokio::test]
async fn malformed_messages_are_skipped_not_fatal() {
    let (connection, mut peer) = connect(Duration::from_secs(5)).await;
    let call = connection.send(None, "Test.afterGarbage", json!({}));
    let answer = async {
        let command = peer.next_command().await;
        for garbage in [
            "not json",
            "[1, 2]",
            "{\"id\": \"seven\"}",
            "{\"neither\": true}",
            "{\"id\": 99999, \"result\": {}}",
        ] {
            peer.send_raw(garbage);
        }
        peer.send(json!({"id": command["id"], "result": {"survived": true}}));
    };
    let (result, ()) = tokio::join!(call, answer);
    assert_eq!(result.unwrap(), json!({"survived": true}));
    assert!(connection.is_open());
}

#[tokio::test]
async fn error_responses_are_protocol_errors() {
    let (connection, mut peer) = connect(Duration::from_secs(5)).await;
    let call = connection.send(None, "Test.refused", json!({}));
    let answer = async {
        let command = peer.next_command().await;
        peer.send(json!({"id": command["id"], "error": {"code": -32000, "message": "Not allowed", "data": "because"}}));
    };
    let (result, ()) = tokio::join!(call, answer);
    let error = result.unwrap_err();
    assert_eq!(error.code(), "PROTOCOL_ERROR");
    assert!(error.to_string().contains("Test.refused"));
    assert!(error.to_string().contains("Not allowed (because)"));
}

#[tokio::test]
async fn a_dropped_connection_fails_every_pending_command_at_once() {
    let (connection, mut peer) = connect(Duration::from_secs(60)).await;
    let first = connection.send(None, "Test.one", json!({}));
    let session = SessionId("S".into());
    let second = connection.send(Some(&session), "Test.two", json!({}));
    let mut events = connection.subscribe(EventFilter::All);
    let drop_it = async {
        peer.next_command().await;
        peer.next_command().await;
        peer.close();
    };
    let (first, second, ()) = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::join!(first, second, drop_it)
    })
    .await
    .expect("pending commands fail promptly, not at their timeout");
    assert_eq!(first.unwrap_err().code(), "BROWSER_CRASHED");
    assert_eq!(second.unwrap_err().code(), "BROWSER_CRASHED");
    assert!(events.recv().await.is_none(), "event streams end");
    let later = connection
        .send(None, "Test.later", json!({}))
        .await
        .unwrap_err();
    assert_eq!(later.code(), "BROWSER_CRASHED");
    assert!(!connection.is_open());
}

#[tokio::test]
async fn closing_from_our_side_is_not_connected() {
    let (connection, mut peer) = connect(Duration::from_secs(60)).await;
    let pending = connection.send(None, "Test.pending", json!({}));
    let close = async {
        peer.next_command().await;
        connection.close();
    };
    let (pending, ()) = tokio::join!(pending, close);
    assert_eq!(pending.unwrap_err().code(), "NOT_CONNECTED");
    assert_eq!(
        connection
            .send(None, "Test.after", json!({}))
            .await
            .unwrap_err()
            .code(),
        "NOT_CONNECTED"
    );
}

#[tokio::test]
async fn events_are_routed_by_session_and_detach_ends_a_session() {
    let (connection, mut peer) = connect(Duration::from_secs(60)).await;
    let a = SessionId("A".into());
    let mut only_a = connection.subscribe(EventFilter::Session(a.clone()));
    let mut only_b = connection.subscribe(EventFilter::Session(SessionId("B".into())));
    let mut browser_level = connection.subscribe(EventFilter::Browser);
    let mut everything = connection.subscribe(EventFilter::All);

    let pending_on_a = connection.send(Some(&a), "Test.onA", json!({}));
    let script = async {
        peer.next_command().await;
        peer.send(json!({"method": "Page.loadEventFired", "params": {"n": 1}, "sessionId": "A"}));
        peer.send(json!({"method": "Page.loadEventFired", "params": {"n": 2}, "sessionId": "B"}));
        peer.send(json!({"method": "Target.targetCreated", "params": {"n": 3}}));
        peer.send(json!({"method": "Target.detachedFromTarget", "params": {"sessionId": "A", "targetId": "T"}}));
    };
    let (pending_on_a, ()) = tokio::join!(pending_on_a, script);
    assert_eq!(
        pending_on_a.unwrap_err().code(),
        "TAB_NOT_FOUND",
        "commands of a detached session fail"
    );

    let a_event = only_a.recv().await.unwrap();
    assert_eq!(a_event.params["n"], 1);
    assert!(
        only_a.recv().await.is_none(),
        "the session's stream ends on detach"
    );
    assert_eq!(only_b.recv().await.unwrap().params["n"], 2);
    assert_eq!(browser_level.recv().await.unwrap().params["n"], 3);
    assert_eq!(
        browser_level.recv().await.unwrap().method,
        "Target.detachedFromTarget"
    );
    let all: Vec<String> = [
        everything.recv().await.unwrap(),
        everything.recv().await.unwrap(),
        everything.recv().await.unwrap(),
        everything.recv().await.unwrap(),
    ]
    .iter()
    .map(|e| e.method.clone())
    .collect();
    assert_eq!(
        all,
        [
            "Page.loadEventFired",
            "Page.loadEventFired",
            "Target.targetCreated",
            "Target.detachedFromTarget"
        ]
    );
    assert!(connection.is_open(), "only the session ended");
}

#[tokio::test]
async fn pipe_frames_are_nul_delimited_and_may_arrive_in_pieces() {
    use std::io::Write;
    let (our_reader, mut peer_writer) = std::io::pipe().unwrap();
    let (mut peer_reader, our_writer) = std::io::pipe().unwrap();
    let transport: Transport = transport::pipe(our_reader, our_writer).unwrap();
    let connection = Connection::start(transport, Duration::from_secs(5));

    let call = connection.send(None, "Test.piped", json!({"x": 1}));
    let peer = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut command = Vec::new();
        let mut byte = [0u8; 1];
        while peer_reader.read(&mut byte).unwrap() == 1 && byte[0] != 0 {
            command.push(byte[0]);
        }
        let command: Value = serde_json::from_slice(&command).unwrap();
        let event = json!({"method": "Test.event", "params": {}}).to_string();
        let response = json!({"id": command["id"], "result": {"piped": true}}).to_string();
        // An event and the response in one write, the response split in two.
        let (head, tail) = response.split_at(7);
        peer_writer
            .write_all(format!("{event}\0{head}").as_bytes())
            .unwrap();
        peer_writer.flush().unwrap();
        peer_writer
            .write_all(format!("{tail}\0").as_bytes())
            .unwrap();
        peer_writer
    });
    let mut events = connection.subscribe(EventFilter::All);
    assert_eq!(call.await.unwrap(), json!({"piped": true}));
    assert_eq!(events.recv().await.unwrap().method, "Test.event");
    // Closing the peer's end is the browser exiting: the event stream ends.
    drop(peer.await.unwrap());
    let ended = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap();
    assert!(ended.is_none());
    assert_eq!(
        connection.closed_reason().map(|e| e.code()),
        Some("BROWSER_CRASHED")
    );
}

/// The next thing a relay receives, within a bound.
async fn next(
    stream: &mut mpsc::UnboundedReceiver<browser_provider::cdp::Relayed>,
) -> browser_provider::cdp::Relayed {
    tokio::time::timeout(Duration::from_secs(5), stream.recv())
        .await
        .expect("within 5 s")
        .expect("the stream is open")
}

/// A relay (the shell's CDP endpoint) gets answers and events in the order
/// the browser sent them, errors as the browser wrote them; answers owed to
/// a relay that went away are forgotten; its stream ends with the browser.
#[tokio::test]
async fn a_relay_sees_answers_and_events_in_wire_order() {
    use browser_provider::cdp::Relayed;
    let (connection, mut peer) = connect(Duration::from_secs(5)).await;
    let (link, mut stream) = connection.open_relay();
    let session = SessionId("S1".into());
    let create = link
        .send(
            Some(&session),
            "Target.createTarget",
            json!({"url": "about:blank"}),
        )
        .unwrap();
    let broken = link.send(None, "Test.broken", json!({})).unwrap();
    let sent = peer.next_command().await;
    assert_eq!(sent["sessionId"], "S1");
    assert_eq!(sent["id"], create);
    assert_eq!(
        peer.next_command().await["id"],
        broken,
        "sent in call order"
    );
    // The event that announces the target comes before the answer.
    peer.send(json!({"method": "Target.attachedToTarget", "sessionId": "S1", "params": {"sessionId": "S2"}}));
    peer.send(json!({"id": create, "result": {"targetId": "T1"}, "sessionId": "S1"}));
    peer.send(
        json!({"id": broken, "error": {"code": -32601, "message": "'Test.broken' wasn't found"}}),
    );
    let Relayed::Event(event) = next(&mut stream).await else {
        panic!("the event first")
    };
    assert_eq!(event.method, "Target.attachedToTarget");
    let Relayed::Answer { id, body } = next(&mut stream).await else {
        panic!("then the answer")
    };
    assert_eq!((id, &body["result"]["targetId"]), (create, &json!("T1")));
    let Relayed::Answer { id, body } = next(&mut stream).await else {
        panic!("then the error")
    };
    assert_eq!(id, broken);
    assert_eq!(body["error"]["code"], -32601, "untouched: {body:?}");

    // A relay that goes away is owed nothing; the connection keeps working.
    let silent = link.send(None, "Test.silent", json!({})).unwrap();
    assert_eq!(peer.next_command().await["id"], silent);
    drop(link);
    assert_eq!(connection.pending_commands(), 0);
    peer.send(json!({"id": silent, "result": {}}));
    let (ours, ()) = tokio::join!(connection.send(None, "Test.ours", json!({})), async {
        let command = peer.next_command().await;
        peer.send(json!({"id": command["id"], "result": {"ok": true}}));
    });
    assert_eq!(ours.unwrap(), json!({"ok": true}));

    // Its stream ends with the browser.
    let (_other, mut other_stream) = connection.open_relay();
    peer.close();
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        while other_stream.recv().await.is_some() {}
    })
    .await;
    assert!(end.is_ok(), "the stream ends when the connection does");
}
