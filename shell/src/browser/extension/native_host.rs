//! `browser-shell native-host`: the program Chrome starts when the
//! browser-shell extension calls `chrome.runtime.connectNative()` (seed
//! 000's native host). Chrome runs the manifest's `path` with the caller's
//! origin (`chrome-extension://<id>/`) as its first argument, which is how
//! `browser-shell` knows to be this (see `main`).
//!
//! It only carries messages: Chrome's frames on stdin/stdout (a 32-bit
//! length in the machine's byte order, then UTF-8 JSON) to and from the
//! shell that holds the bridge, on that shell's private socket
//! ([`super::native_socket`]), as NUL-terminated JSON. The extension's
//! first message (its hello) goes on with the origin Chrome named; the
//! shell decides. Protocol frames go to stdout only; logs go to stderr.
//!
//! When no shell holds the bridge yet, it says so to the extension
//! (`{"type":"waiting"}`) and looks again every [`LOOK_EVERY`] for
//! [`WAIT_FOR_SHELL`]; then it says `{"type":"unavailable"}` and exits (the
//! extension starts it again). When either side closes, it exits.

use std::path::Path;
use std::time::Duration;

use browser_provider::host::extension::protocol::{Chunk, NativeHello};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// How long the host waits for a shell to hold the bridge before it gives up.
pub const WAIT_FOR_SHELL: Duration = Duration::from_secs(60);

/// How often it looks for the shell's socket meanwhile.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// How long Chrome has to pass the extension's hello.
const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// The largest frame from the extension accepted (Chrome allows 4 GB; the
/// bridge's own limit is 8 MiB).
const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// The largest frame sent to the extension: Chrome refuses more than
/// 1 MB, so longer messages go in [`Chunk`]s.
const MAX_FRAME_TO_EXTENSION: usize = 1024 * 1024;

/// How long a host that stops waits for the frame it was writing to
/// reach Chrome (which may read no more).
const LAST_FRAME_WITHIN: Duration = Duration::from_secs(1);

/// How many characters of a long message one chunk carries: escaped as a
/// JSON string, even text of nothing but quotes stays within the limit.
const CHUNK_CHARS: usize = 128 * 1024;

/// Runs the host for `origin` until either side closes.
///
/// # Errors
/// A one-line reason (also logged) when the host stops for a fault.
pub async fn run(origin: String, socket: &Path) -> Result<(), String> {
    let mut stdin = tokio::io::stdin();
    let mut stdout = tokio::io::stdout();
    let hello = tokio::time::timeout(HELLO_WITHIN, read_frame(&mut stdin))
        .await
        .map_err(|_| "the extension sent no hello".to_owned())??
        .ok_or_else(|| "Chrome closed the port before the hello".to_owned())?;
    let hello = native_hello(&hello, origin)?;
    let Some(stream) = find_shell(socket, &mut stdout).await? else {
        return Ok(());
    };
    tracing::info!(socket = %socket.display(), "connected the extension to the shell");
    let (from_shell, mut to_shell) = tokio::io::split(stream);
    let mut text = serde_json::to_vec(&hello).map_err(|e| e.to_string())?;
    text.push(0);
    to_shell
        .write_all(&text)
        .await
        .map_err(|e| format!("the shell went away: {e}"))?;
    let upstream = async {
        loop {
            let Some(frame) = read_frame(&mut stdin).await? else {
                return Ok::<_, String>("Chrome closed the extension's port");
            };
            let mut bytes = frame;
            bytes.push(0);
            to_shell
                .write_all(&bytes)
                .await
                .map_err(|e| format!("the shell went away: {e}"))?;
        }
    };
    let downstream = async {
        let mut reader = BufReader::with_capacity(1 << 16, from_shell);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            let read = reader
                .read_until(0, &mut buffer)
                .await
                .map_err(|e| format!("cannot read from the shell: {e}"))?;
            if read == 0 {
                return Ok::<_, String>("the shell closed the bridge");
            }
            if buffer.last() == Some(&0) {
                buffer.pop();
            }
            send_to_extension(&mut stdout, &buffer).await?;
        }
    };
    let ended = tokio::select! {
        ended = upstream => ended,
        ended = downstream => ended,
    };
    // A frame handed to stdout as the other side stopped goes out whole:
    // Chrome takes a cut one for a broken host.
    let _ = tokio::time::timeout(LAST_FRAME_WITHIN, stdout.flush()).await;
    let ended = ended?;
    tracing::info!(ended, "the native host stops");
    Ok(())
}

/// The shell's socket once one listens there; `None` after telling the
/// extension that none came within [`WAIT_FOR_SHELL`].
async fn find_shell<W: AsyncWrite + Unpin>(
    socket: &Path,
    stdout: &mut W,
) -> Result<Option<imp::Stream>, String> {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_SHELL;
    let mut told = false;
    loop {
        match imp::connect(socket).await {
            Ok(stream) => return Ok(Some(stream)),
            Err(error) => {
                tracing::debug!(%error, socket = %socket.display(), "no shell yet");
                if !told {
                    told = true;
                    let waiting = json!({
                        "type": "waiting",
                        "reason": "no browser-shell with --browser extension runs on this machine yet",
                    });
                    send_json(stdout, &waiting).await?;
                }
            }
        }
        if tokio::time::Instant::now() >= deadline {
            let unavailable = json!({
                "type": "unavailable",
                "reason": format!(
                    "no browser-shell with --browser extension started within {} s",
                    WAIT_FOR_SHELL.as_secs()
                ),
            });
            send_json(stdout, &unavailable).await?;
            return Ok(None);
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// The extension's hello as the shell reads it: its versions, and the
/// origin Chrome named (never what the extension says of itself).
fn native_hello(frame: &[u8], origin: String) -> Result<NativeHello, String> {
    let hello: Value =
        serde_json::from_slice(frame).map_err(|e| format!("the hello is not JSON: {e}"))?;
    if hello.get("type").and_then(Value::as_str) != Some("hello") {
        return Err("the extension's first message is not a hello".into());
    }
    let number = |name: &str| {
        hello
            .get(name)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    Ok(NativeHello {
        version: number("version").ok_or("the hello names no version")?,
        min_version: number("minVersion"),
        extension_version: hello
            .get("extensionVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(64)
            .collect(),
        origin,
    })
}

/// One frame from Chrome; `None` when the port closed.
async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Option<Vec<u8>>, String> {
    let mut length = [0u8; 4];
    match reader.read_exact(&mut length).await {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(format!("cannot read from Chrome: {error}")),
    }
    let length = usize::try_from(u32::from_ne_bytes(length)).unwrap_or(usize::MAX);
    if length > MAX_FRAME_BYTES {
        return Err(format!(
            "a message of {length} bytes from the extension (at most {MAX_FRAME_BYTES})"
        ));
    }
    let mut frame = vec![0u8; length];
    reader
        .read_exact(&mut frame)
        .await
        .map_err(|e| format!("cannot read from Chrome: {e}"))?;
    Ok(Some(frame))
}

/// One message to the extension, cut into chunks when longer than Chrome
/// takes in one frame.
async fn send_to_extension<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &[u8],
) -> Result<(), String> {
    if message.len() <= MAX_FRAME_TO_EXTENSION {
        return write_frame(writer, message).await;
    }
    let text = String::from_utf8_lossy(message);
    let mut pieces = chunks(&text).peekable();
    while let Some(piece) = pieces.next() {
        let chunk = Chunk {
            chunk: piece.to_owned(),
            last: pieces.peek().is_none(),
        };
        send_json(writer, &chunk).await?;
    }
    Ok(())
}

/// `text` in pieces of at most [`CHUNK_CHARS`] characters.
fn chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .nth(CHUNK_CHARS)
            .map_or(rest.len(), |(at, _)| at);
        let (piece, after) = rest.split_at(end);
        rest = after;
        Some(piece)
    })
}

async fn send_json<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &impl serde::Serialize,
) -> Result<(), String> {
    let bytes = serde_json::to_vec(message).map_err(|e| e.to_string())?;
    write_frame(writer, &bytes).await
}

async fn write_frame<W: AsyncWrite + Unpin>(writer: &mut W, bytes: &[u8]) -> Result<(), String> {
    let length = u32::try_from(bytes.len()).map_err(|_| "a message over 4 GB".to_owned())?;
    // One write for the whole frame: tokio's stdout takes up to 2 MiB at
    // once (a frame is at most 1 MB), so a host that stops while writing
    // (`run`) has handed on all of the frame or none of it, never a length
    // without its message.
    let mut frame = Vec::with_capacity(4 + bytes.len());
    frame.extend_from_slice(&length.to_ne_bytes());
    frame.extend_from_slice(bytes);
    let written = async {
        writer.write_all(&frame).await?;
        writer.flush().await
    };
    written
        .await
        .map_err(|e| format!("Chrome closed the extension's port: {e}"))
}

#[cfg(unix)]
mod imp {
    /// The shell's end.
    pub type Stream = tokio::net::UnixStream;

    pub async fn connect(socket: &std::path::Path) -> std::io::Result<Stream> {
        tokio::net::UnixStream::connect(socket).await
    }
}

#[cfg(windows)]
mod imp {
    /// The shell's end.
    pub type Stream = tokio::net::windows::named_pipe::NamedPipeClient;

    pub async fn connect(socket: &std::path::Path) -> std::io::Result<Stream> {
        tokio::net::windows::named_pipe::ClientOptions::new().open(socket.as_os_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_messages_go_in_chunks_that_join_again() {
        let long = format!("{{\"id\":1,\"result\":\"{}\"}}", "\\\"é".repeat(400_000));
        let mut written = Vec::new();
        send_to_extension(&mut written, long.as_bytes())
            .await
            .expect("write");
        let mut reader = written.as_slice();
        let mut joined = String::new();
        let mut frames = 0;
        while let Some(frame) = read_frame(&mut reader).await.expect("a frame") {
            assert!(frame.len() <= MAX_FRAME_TO_EXTENSION, "{}", frame.len());
            let chunk: Chunk = serde_json::from_slice(&frame).expect("a chunk");
            joined.push_str(&chunk.chunk);
            frames += 1;
            if chunk.last {
                break;
            }
        }
        assert!(frames > 1);
        assert_eq!(joined, long);
        // A short one goes as it is.
        let mut written = Vec::new();
        send_to_extension(&mut written, b"{\"id\":2}")
            .await
            .expect("write");
        let mut reader = written.as_slice();
        assert_eq!(
            read_frame(&mut reader).await.expect("frame").as_deref(),
            Some(&b"{\"id\":2}"[..])
        );
    }

    #[test]
    fn the_hello_carries_chrome_s_origin_not_the_extension_s_word() {
        let hello = native_hello(
            br#"{"type":"hello","version":2,"minVersion":1,"extensionVersion":"0.1.0","origin":"chrome-extension://evil/"}"#,
            "chrome-extension://fmmpmjfbfbolhenibabebgogdehficei/".into(),
        )
        .expect("a hello");
        assert_eq!(
            hello.origin,
            "chrome-extension://fmmpmjfbfbolhenibabebgogdehficei/"
        );
        assert_eq!((hello.version, hello.min_version), (2, Some(1)));
        assert!(native_hello(br#"{"type":"proof"}"#, String::new()).is_err());
        assert!(native_hello(b"garbage", String::new()).is_err());
    }

    /// A writer that keeps each write it is given apart.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl AsyncWrite for Writes {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            bytes: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.get_mut().0.push(bytes.to_vec());
            std::task::Poll::Ready(Ok(bytes.len()))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_frame_goes_to_chrome_in_one_write() {
        // Written as its length and then its message, a host that stopped
        // between the two (the extension sent a frame past the limit) left
        // Chrome a length without its message.
        let mut writes = Writes::default();
        send_to_extension(&mut writes, b"{\"id\":2}")
            .await
            .expect("write");
        let frame = [&8u32.to_ne_bytes()[..], b"{\"id\":2}"].concat();
        assert_eq!(writes.0, vec![frame]);
    }

    #[tokio::test]
    async fn an_oversized_or_cut_frame_is_refused() {
        let mut huge = Vec::new();
        huge.extend_from_slice(&u32::MAX.to_ne_bytes());
        assert!(read_frame(&mut huge.as_slice()).await.is_err());
        let mut cut = Vec::new();
        cut.extend_from_slice(&10u32.to_ne_bytes());
        cut.extend_from_slice(b"abc");
        assert!(read_frame(&mut cut.as_slice()).await.is_err());
        assert_eq!(read_frame(&mut [].as_slice()).await, Ok(None));
    }
}
