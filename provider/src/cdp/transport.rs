//! Transports move whole CDP messages (JSON text) in both directions.
//!
//! A transport is a pair of channels plus a shutdown token, backed by two
//! tasks (reader and writer) that own the underlying pipe or socket. The
//! connection above never touches bytes, so a pipe and a WebSocket behave
//! the same to it — and tests can put a fake peer behind either.

use std::io::{PipeReader, PipeWriter};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{self, Message, protocol::WebSocketConfig};
use tokio_util::sync::CancellationToken;

use crate::error::{BrowserError, Result};

/// Largest single message accepted from a peer. Accessibility trees and
/// full-page screenshots are big; anything past this is a broken peer.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// What the reader task reports upward.
#[derive(Debug)]
pub enum Inbound {
    /// One complete message, as received.
    Message(String),
    /// The transport is finished; no more messages will come.
    Closed {
        /// Human-readable reason (EOF, socket error, ...).
        reason: String,
        /// True when we closed it ourselves (shutdown), false when the peer went away.
        by_us: bool,
    },
}

/// A running transport: messages in, messages out, and a way to stop it.
#[derive(Debug)]
pub struct Transport {
    /// Messages from the browser, ending with exactly one [`Inbound::Closed`].
    pub incoming: mpsc::UnboundedReceiver<Inbound>,
    /// Messages to the browser. Sending fails once the writer has stopped.
    pub outgoing: mpsc::UnboundedSender<String>,
    /// Cancel to close the transport from our side.
    pub shutdown: CancellationToken,
}

/// Starts a transport over Chromium's `--remote-debugging-pipe` (see
/// [`crate::platform::debug_pipe`] for how the browser gets its ends on
/// each OS): we write NUL-terminated JSON into `to_browser` and read
/// NUL-terminated JSON from `from_browser`.
///
/// Must be called inside a tokio runtime.
pub fn pipe(from_browser: PipeReader, to_browser: PipeWriter) -> Result<Transport> {
    let io_error = |e: std::io::Error| BrowserError::NotConnected {
        reason: format!("cannot use the browser pipe: {e}"),
    };
    let (reader, writer) =
        crate::platform::debug_pipe::into_async(from_browser, to_browser).map_err(io_error)?;

    Ok(over_nul_stream(
        BufReader::with_capacity(1 << 16, reader),
        writer,
        "the browser closed its end of the pipe",
        MAX_MESSAGE_BYTES,
    ))
}

/// Runs a transport over a byte stream that carries NUL-terminated JSON
/// both ways: Chromium's debugging pipe, and the extension's native
/// messaging host on the shell's private socket. `reader` may hold bytes
/// already read past a first message; `eof` says who closed when the
/// stream ends. A message longer than `max_bytes` closes it (no more than
/// one byte past that is ever buffered).
///
/// Must be called inside a tokio runtime.
pub fn over_nul_stream<R, W>(
    reader: BufReader<R>,
    writer: W,
    eof: &'static str,
    max_bytes: usize,
) -> Transport
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (in_tx, incoming) = mpsc::unbounded_channel();
    let (outgoing, mut out_rx) = mpsc::unbounded_channel::<String>();
    let shutdown = CancellationToken::new();

    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut reader = reader;
        let mut buffer = Vec::with_capacity(1 << 16);
        let closed = loop {
            buffer.clear();
            let mut limited = (&mut reader).take(max_bytes as u64 + 1);
            let read = tokio::select! {
                () = stop.cancelled() => break Inbound::Closed { reason: "closed by us".into(), by_us: true },
                // At most one byte past the limit is read before the
                // message is refused: a peer that never sends the NUL
                // cannot make us buffer without end.
                read = limited.read_until(0, &mut buffer) => read,
            };
            match read {
                Ok(0) => {
                    break Inbound::Closed {
                        reason: eof.into(),
                        by_us: false,
                    };
                }
                Ok(_) => {
                    if buffer.last() == Some(&0) {
                        buffer.pop();
                    }
                    if buffer.len() > max_bytes {
                        break Inbound::Closed {
                            reason: format!("message of {} bytes exceeds the limit", buffer.len()),
                            by_us: false,
                        };
                    }
                    let text = String::from_utf8_lossy(&buffer).into_owned();
                    if in_tx.send(Inbound::Message(text)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    break Inbound::Closed {
                        reason: format!("pipe read failed: {e}"),
                        by_us: false,
                    };
                }
            }
        };
        let _ = in_tx.send(closed);
    });

    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut writer = writer;
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => break,
                message = out_rx.recv() => match message { Some(m) => m, None => break },
            };
            let mut framed = message.into_bytes();
            framed.push(0);
            // Flushed at once: on Windows the write runs on tokio's blocking
            // pool and only the flush waits for it.
            let written = async {
                writer.write_all(&framed).await?;
                writer.flush().await
            };
            if let Err(e) = written.await {
                tracing::debug!(target: "cdp::transport", error = %e, "pipe write failed");
                break;
            }
        }
    });

    Transport {
        incoming,
        outgoing,
        shutdown,
    }
}

/// Connects a WebSocket transport to a browser endpoint such as
/// `ws://127.0.0.1:9222/devtools/browser/<id>`.
pub async fn websocket(url: &str) -> Result<Transport> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let (stream, _response) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .map_err(|e| refused(url, e))?;
    Ok(over_websocket(stream))
}

/// Why a WebSocket could not be opened: `BUSY` when the endpoint is a pool
/// that answered "too many" (429) or "unavailable" (503), with its words
/// and its `Retry-After`; `NOT_CONNECTED` otherwise. The URL is named
/// without its query, which may carry a pool's token.
fn refused(url: &str, error: tokio_tungstenite::tungstenite::Error) -> BrowserError {
    use tokio_tungstenite::tungstenite::Error;
    let shown = url.split('?').next().unwrap_or(url);
    match error {
        Error::Http(response) if matches!(response.status().as_u16(), 429 | 503) => {
            let retry_after_secs = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok());
            let said = response
                .body()
                .as_deref()
                .map(|body| {
                    String::from_utf8_lossy(body)
                        .trim()
                        .chars()
                        .take(200)
                        .collect()
                })
                .filter(|words: &String| !words.is_empty())
                .unwrap_or_else(|| response.status().to_string());
            BrowserError::Busy {
                detail: format!("{shown} answered {}: {said}", response.status().as_u16()),
                retry_after_secs,
            }
        }
        other => BrowserError::NotConnected {
            reason: format!("cannot connect to {shown}: {other}"),
        },
    }
}

/// Runs a transport over an open WebSocket (ours as a client, or one a
/// peer opened to us, such as the extension bridge).
///
/// Must be called inside a tokio runtime.
pub fn over_websocket<S>(stream: tokio_tungstenite::WebSocketStream<S>) -> Transport
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = stream.split();

    let (in_tx, incoming) = mpsc::unbounded_channel();
    let (outgoing, mut out_rx) = mpsc::unbounded_channel::<String>();
    let shutdown = CancellationToken::new();

    let stop = shutdown.clone();
    tokio::spawn(async move {
        let closed = loop {
            let frame = tokio::select! {
                () = stop.cancelled() => break Inbound::Closed { reason: "closed by us".into(), by_us: true },
                frame = source.next() => frame,
            };
            let text = match frame {
                None => {
                    break Inbound::Closed {
                        reason: "the peer closed the WebSocket".into(),
                        by_us: false,
                    };
                }
                Some(Err(e)) => {
                    break Inbound::Closed {
                        reason: format!("WebSocket error: {e}"),
                        by_us: false,
                    };
                }
                Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
                Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                Some(Ok(Message::Close(_))) => {
                    break Inbound::Closed {
                        reason: "the peer closed the WebSocket".into(),
                        by_us: false,
                    };
                }
                Some(Ok(_)) => continue,
            };
            if in_tx.send(Inbound::Message(text)).is_err() {
                return;
            }
        };
        let _ = in_tx.send(closed);
    });

    let stop = shutdown.clone();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => break,
                message = out_rx.recv() => match message { Some(m) => m, None => break },
            };
            // Commands often come in bursts (a click's three input events,
            // a typed word's key events): whatever is queued goes out in one
            // write instead of one write per message.
            let mut written = sink.feed(Message::text(message)).await;
            while written.is_ok() {
                let Ok(more) = out_rx.try_recv() else { break };
                written = sink.feed(Message::text(more)).await;
            }
            let written = match written {
                Ok(()) => sink.flush().await,
                failed => failed,
            };
            if let Err(e) = written {
                if !matches!(e, tungstenite::Error::ConnectionClosed) {
                    tracing::debug!(target: "cdp::transport", error = %e, "WebSocket write failed");
                }
                break;
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    });

    Transport {
        incoming,
        outgoing,
        shutdown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer that never ends its message is cut off past the limit: the
    /// transport closes after reading at most one byte more, whatever the
    /// peer goes on sending.
    #[tokio::test]
    async fn a_message_past_the_limit_closes_the_stream() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 16);
        let (reader, writer) = tokio::io::split(ours);
        let mut transport = over_nul_stream(BufReader::new(reader), writer, "closed", 1000);
        theirs.write_all(b"{\"id\":1}\0").await.unwrap();
        let first = transport.incoming.recv().await;
        assert!(
            matches!(&first, Some(Inbound::Message(text)) if text == "{\"id\":1}"),
            "{first:?}"
        );
        // 64 KiB without a NUL, then more: closed at the limit.
        let flood = tokio::spawn(async move {
            let chunk = vec![b'x'; 1 << 16];
            while theirs.write_all(&chunk).await.is_ok() {}
        });
        let closed =
            tokio::time::timeout(std::time::Duration::from_secs(5), transport.incoming.recv())
                .await
                .expect("closed at once");
        assert!(
            matches!(&closed, Some(Inbound::Closed { reason, .. }) if reason.contains("1001 bytes exceeds")),
            "{closed:?}"
        );
        flood.abort();
    }
}
