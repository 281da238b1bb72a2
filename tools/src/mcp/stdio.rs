//! MCP on stdio with JSON-RPC's own errors answered, which rmcp leaves to
//! the transport: a line that is not JSON gets `-32700 Parse error` (rmcp
//! skips it, and the client would wait for an answer that never comes), and
//! a request before `initialize` gets `-32600` saying to initialize first
//! (rmcp answers it with a message about `_meta` fields of a later protocol).
//!
//! [`guarded`] sits between the process's stdin/stdout and rmcp: it reads
//! the client's lines, answers those itself, and passes the rest on; rmcp's
//! own lines and the guard's answers are written whole, one per line.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// How many bytes a line may hold in flight between the guard and rmcp.
const PIPE_BYTES: usize = 1 << 20;

/// A stdio transport for rmcp (`(reader, writer)`) with the guard in front:
/// rmcp reads the client's passed-on lines from the reader and writes its
/// messages to the writer; the guard owns the real stdin and stdout.
pub fn guarded() -> (DuplexStream, DuplexStream) {
    guard(tokio::io::stdin(), tokio::io::stdout())
}

/// [`guarded`] over any input and output (tests use in-memory pipes).
pub fn guard<I, O>(input: I, output: O) -> (DuplexStream, DuplexStream)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (lines_out, lines) = mpsc::unbounded_channel::<String>();
    tokio::spawn(read_client(input, to_rmcp, lines_out.clone()));
    tokio::spawn(pass_on_rmcp(from_rmcp, lines_out));
    tokio::spawn(write_lines(lines, output));
    (rmcp_reads, rmcp_writes)
}

/// The client's lines: answered here, or passed on to rmcp. Ends (closing
/// rmcp's input, which ends the session) when the client's input ends.
async fn read_client<I: AsyncRead + Unpin>(
    input: I,
    mut to_rmcp: DuplexStream,
    answers: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut initialized = false;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match input.read_until(b'\n', &mut bytes).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                tracing::debug!(%error, "the MCP client's input failed");
                break;
            }
        }
        // A line that is not UTF-8 is not JSON either: answered, not fatal.
        let line = String::from_utf8_lossy(&bytes);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        match answer_here(line, &mut initialized) {
            Some(answer) => {
                let _ = answers.send(answer.to_string());
            }
            None => {
                let passed = async {
                    to_rmcp.write_all(line.as_bytes()).await?;
                    to_rmcp.write_all(b"\n").await
                };
                if passed.await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// The answer the guard gives to `line` itself, if any. Marks the session
/// initialized when `initialize` passes.
fn answer_here(line: &str, initialized: &mut bool) -> Option<Value> {
    // Only what the guard looks at is read into values; the rest of the
    // message (a tool call's arguments) is only checked, and rmcp reads it.
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(default)]
        method: Option<String>,
        #[serde(default)]
        id: Option<Value>,
    }
    let envelope = match serde_json::from_str::<Envelope>(line) {
        Ok(envelope) => envelope,
        // Not one message object: valid JSON (a batch) is rmcp's to answer.
        Err(_) => {
            return match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                Ok(_) => None,
                Err(error) => Some(json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": -32700, "message": format!("Parse error: {error}")},
                })),
            };
        }
    };
    match (envelope.method.as_deref(), envelope.id) {
        (Some("initialize"), _) => {
            *initialized = true;
            None
        }
        // A request (it has an id) other than ping before initialize.
        (Some(method), Some(id)) if !*initialized && method != "ping" => Some(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32600,
                "message": format!(
                    "Not initialized: send initialize first (the MCP session starts with it), then {method}"
                ),
            },
        })),
        _ => None,
    }
}

/// rmcp's lines, passed on whole.
async fn pass_on_rmcp(from_rmcp: DuplexStream, lines_out: mpsc::UnboundedSender<String>) {
    let mut lines = BufReader::new(from_rmcp).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if lines_out.send(line).is_err() {
            break;
        }
    }
}

/// Writes each line (rmcp's and the guard's) whole, in the order they come.
async fn write_lines<O: AsyncWrite + Unpin>(
    mut lines: mpsc::UnboundedReceiver<String>,
    mut output: O,
) {
    while let Some(line) = lines.recv().await {
        let written = async {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await
        };
        if let Err(error) = written.await {
            tracing::debug!(%error, "cannot write to the MCP client");
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once fatal (the guard read lines as UTF-8 and stopped at the first
    /// that was not): a line of bytes that are not UTF-8 is a parse error,
    /// and the lines after it are served.
    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_answered_and_the_next_one_served() {
        use tokio::io::AsyncReadExt;
        let (mut client, input) = tokio::io::duplex(4096);
        let (output, mut from_guard) = tokio::io::duplex(4096);
        let (mut rmcp_reads, _rmcp_writes) = guard(input, output);
        client.write_all(b"\xff\xfe{\n").await.unwrap();
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        let mut answer = vec![0u8; 256];
        let read = from_guard.read(&mut answer).await.unwrap();
        let answer: Value = serde_json::from_slice(&answer[..read]).unwrap();
        assert_eq!(answer["error"]["code"], -32700);
        let mut passed = vec![0u8; 256];
        let read = rmcp_reads.read(&mut passed).await.unwrap();
        assert!(String::from_utf8_lossy(&passed[..read]).contains("notifications/initialized"));
    }

    #[test]
    fn what_the_guard_answers_itself() {
        let mut initialized = false;
        let parse = answer_here("{\"jsonrpc\":\"2.0\",", &mut initialized).unwrap();
        assert_eq!(parse["error"]["code"], -32700);
        assert_eq!(parse["id"], Value::Null);
        let early = answer_here(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
            &mut initialized,
        )
        .unwrap();
        assert_eq!(early["error"]["code"], -32600);
        assert_eq!(early["id"], 7);
        assert!(
            early["error"]["message"]
                .as_str()
                .unwrap()
                .contains("send initialize first")
        );
        // ping and notifications pass before initialize; everything after it.
        assert!(
            answer_here(
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                &mut initialized
            )
            .is_none()
        );
        assert!(
            answer_here(
                r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
                &mut initialized
            )
            .is_none()
        );
        assert!(
            answer_here(
                r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#,
                &mut initialized
            )
            .is_none()
        );
        assert!(
            answer_here(
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
                &mut initialized
            )
            .is_none()
        );
    }
}
