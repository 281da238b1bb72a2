//! A raw JSON-RPC MCP client on the stdio of a `browser-shell mcp` child:
//! every read bounded, so a hang fails the test instead of stalling the
//! suite. Raw, not an SDK: a test sees (and can send) exactly the lines
//! that go over the pipe.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a test waits between two calls that poll for a call to work
/// ([`Client::call_until`]).
///
/// Not a sleep standing in for a condition: whether a call works (the
/// browser connected, attached) can only be seen by calling, and a
/// NOT_CONNECTED answer comes at once, so the pause keeps the poll from
/// loading the shell it waits on (a call every 50 ms costs it next to
/// nothing; a time measured so is late by 50 ms at most). Every poll has
/// its bound.
pub const POLL: Duration = Duration::from_millis(50);

/// An MCP client speaking to a child over its stdin and stdout.
#[derive(Debug)]
pub struct Client {
    /// The server's process.
    pub child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Client {
    /// Spawns `command` with stdin and stdout piped (stderr as `command`
    /// has it), not yet initialized.
    pub fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start browser-shell mcp");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    /// [`Self::spawn`], initialized.
    pub async fn start(command: Command) -> Self {
        let mut client = Self::spawn(command);
        client.initialize().await;
        client
    }

    /// A request id of its own, for a request sent by hand.
    pub fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// `initialize`, checked to be answered by browser-shell, then
    /// `notifications/initialized`.
    pub async fn initialize(&mut self) {
        let init = self
            .request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}))
            .await;
        assert_eq!(
            init["result"]["serverInfo"]["name"], "browser-shell",
            "{init}"
        );
        self.notify("notifications/initialized", json!({})).await;
    }

    /// Writes one JSON-RPC message as a line.
    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// Writes one raw line, valid JSON-RPC or not.
    pub async fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends notification `method` with `params`.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next message on stdout, read within `bound`.
    async fn message_within(&mut self, bound: Duration) -> Value {
        let line = tokio::time::timeout(bound, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("a message within {bound:?}"))
            .unwrap()
            .expect("the server is still running");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// The next message on stdout, read within 30 s.
    pub async fn next_message(&mut self) -> Value {
        self.message_within(Duration::from_secs(30)).await
    }

    /// Sends a request; returns its answer (within 60 s), passing over
    /// notifications and other answers.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.take_id();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.message_within(Duration::from_secs(60)).await;
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls a tool; returns the text of its first block, whether it
    /// failed, and the whole result.
    pub async fn call_result(&mut self, name: &str, arguments: Value) -> (String, bool, Value) {
        let answer = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        let result = answer["result"].clone();
        assert!(
            !result.is_null(),
            "tools/call answered with a protocol error: {answer}"
        );
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (text, result["isError"] == json!(true), result)
    }

    /// Calls a tool; returns the text of its first block and whether it failed.
    pub async fn call(&mut self, name: &str, arguments: Value) -> (String, bool) {
        let (text, is_error, _) = self.call_result(name, arguments).await;
        (text, is_error)
    }

    /// Calls `tool` with `arguments` until `done(text, is_error)` holds
    /// (every [`POLL`], `bound` at most); that answer's text.
    pub async fn call_until(
        &mut self,
        tool: &str,
        arguments: &Value,
        bound: Duration,
        mut done: impl FnMut(&str, bool) -> bool,
    ) -> String {
        let started = std::time::Instant::now();
        loop {
            let (text, is_error) = self.call(tool, arguments.clone()).await;
            if done(&text, is_error) {
                return text;
            }
            assert!(
                started.elapsed() < bound,
                "{tool}: not done within {bound:?}: {text}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits (bounded) for the process to exit, its stdin still open;
    /// returns its status and stderr (empty unless piped).
    pub async fn exit(self) -> (ExitStatus, String) {
        let Self { child, stdin, .. } = self;
        let exited = exit_of(child).await;
        drop(stdin);
        exited
    }

    /// Ends the session as a client does (closing stdin); waits (bounded)
    /// for the process to exit and returns its status and stderr.
    pub async fn close(self) -> (ExitStatus, String) {
        let Self { child, stdin, .. } = self;
        drop(stdin);
        exit_of(child).await
    }

    /// Goes away as a client that dies does: both pipes close at once;
    /// returns the child to wait for.
    pub fn hang_up(self) -> Child {
        self.child
    }

    /// [`Self::close`], asserting a clean exit; returns stderr.
    pub async fn finish(self) -> String {
        let (status, stderr) = self.close().await;
        assert!(status.success(), "{status}\n{stderr}");
        stderr
    }
}

/// Waits (bounded) for `child` to exit; returns its status and its stderr
/// if piped.
async fn exit_of(mut child: Child) -> (ExitStatus, String) {
    let stderr = child.stderr.take();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("exits within 30 s")
        .unwrap();
    let mut text = String::new();
    if let Some(mut stderr) = stderr {
        stderr.read_to_string(&mut text).await.unwrap();
    }
    (status, text)
}
