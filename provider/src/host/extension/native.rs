//! The native messaging side of the bridge: the shell's private socket (a
//! Unix socket in the private runtime directory; a named pipe on Windows)
//! that `browser-shell native-host` — the program Chrome starts for the
//! extension on `chrome.runtime.connectNative()` — dials.
//!
//! No secret is proved here: Chrome starts the host only for the
//! extension its manifest names (`allowed_origins`) and tells it which one
//! (`origin`), and only the user can reach the socket (the directory's
//! permissions are the credential). The host passes the extension's hello
//! on with that origin; the listener checks the origin and the protocol
//! versions, answers the welcome, and hands the stream on as a CDP
//! [`Transport`] of NUL-terminated JSON both ways.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::bridge::{Arrival, Authenticated, Via, refused};
use super::protocol::{self, MAX_CONNECTIONS, NativeHello, Refused, SessionList, Welcome};
use crate::cdp::transport;
use crate::error::{BrowserError, Result};

/// How long the host has to pass the hello on.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest hello accepted.
const MAX_HELLO_BYTES: u64 = 64 * 1024;

/// What the native listener needs.
#[derive(Debug, Clone)]
pub struct NativeConfig {
    /// The socket's path (Unix) or the pipe's name (`\\.\pipe\…`, Windows).
    pub address: PathBuf,
    /// Extension ids accepted as the origin Chrome named.
    pub extension_ids: Vec<String>,
    /// This shell process, sent in the welcome.
    pub shell: String,
}

/// A listening native socket; dropping it stops listening and removes
/// the socket file (open connections stay).
#[derive(Debug)]
pub struct NativeListener {
    /// Where it listens.
    pub address: PathBuf,
    stop: CancellationToken,
}

impl Drop for NativeListener {
    fn drop(&mut self) {
        self.stop.cancel();
        #[cfg(unix)]
        let _ = std::fs::remove_file(&self.address);
    }
}

/// Judges one native host's connection.
#[derive(Debug)]
struct Admission {
    config: NativeConfig,
    sessions: watch::Receiver<SessionList>,
    connections: Arc<Semaphore>,
}

/// Listens on the private socket; every attempt's outcome goes to `arrivals`.
///
/// # Errors
/// `NOT_CONNECTED` when the socket cannot be made (another process
/// listens there, or the directory is not writable).
pub fn listen(
    config: NativeConfig,
    sessions: watch::Receiver<SessionList>,
    arrivals: mpsc::UnboundedSender<Arrival>,
) -> Result<NativeListener> {
    let address = config.address.clone();
    let admission = Arc::new(Admission {
        config,
        sessions,
        connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
    });
    let stop = CancellationToken::new();
    imp::serve(&address, admission, arrivals, stop.clone()).map_err(|e| {
        BrowserError::not_connected(format!(
            "cannot listen for the native messaging host on {}: {e}",
            address.display()
        ))
    })?;
    tracing::info!(address = %address.display(), "listening for the extension's native messaging host");
    Ok(NativeListener { address, stop })
}

impl Admission {
    /// Runs one connection's admission and hands on what came of it.
    async fn run<S>(self: Arc<Self>, stream: S, arrivals: mpsc::UnboundedSender<Arrival>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (reader, mut writer) = tokio::io::split(stream);
        let mut reader = BufReader::new(reader);
        let admitted = tokio::time::timeout(HELLO_TIMEOUT, self.hello(&mut reader)).await;
        let reason = match admitted {
            Ok(Ok((hello, agreed))) => {
                let Ok(permit) = Arc::clone(&self.connections).try_acquire_owned() else {
                    let reason =
                        format!("{MAX_CONNECTIONS} extension connections are open already");
                    refuse(&mut writer, &reason).await;
                    self.refused(&arrivals, reason);
                    return;
                };
                let welcome = Welcome::new(&self.config.shell, &self.sessions.borrow(), agreed);
                if let Err(error) = send(&mut writer, &welcome).await {
                    format!("the native host went away before the welcome: {error}")
                } else {
                    let transport = transport::over_nul_stream(
                        reader,
                        writer,
                        "the native messaging host closed (Chrome closed the extension's port)",
                        protocol::MAX_MESSAGE_BYTES,
                    );
                    let _ = arrivals.send(Arrival::Admitted(Authenticated {
                        transport,
                        extension_version: hello.extension_version,
                        via: Via::Native,
                        permit,
                    }));
                    return;
                }
            }
            Ok(Err(reason)) => reason,
            Err(_) => format!(
                "the native host did not pass a hello on within {} s",
                HELLO_TIMEOUT.as_secs()
            ),
        };
        refuse(&mut writer, &reason).await;
        self.refused(&arrivals, reason);
    }

    fn refused(&self, arrivals: &mpsc::UnboundedSender<Arrival>, reason: String) {
        let via = "native messaging".to_owned();
        refused(&via, &reason);
        let _ = arrivals.send(Arrival::Refused { via, reason });
    }

    /// Reads and checks the hello; the protocol version agreed on.
    async fn hello<R: AsyncRead + Unpin>(
        &self,
        reader: &mut BufReader<R>,
    ) -> std::result::Result<(NativeHello, u32), String> {
        let mut bytes = Vec::new();
        let mut limited = (&mut *reader).take(MAX_HELLO_BYTES);
        limited
            .read_until(0, &mut bytes)
            .await
            .map_err(|e| format!("cannot read the hello: {e}"))?;
        if bytes.last() != Some(&0) {
            return Err(if bytes.is_empty() {
                "the native host closed before its hello".into()
            } else {
                format!("no hello within its first {MAX_HELLO_BYTES} bytes")
            });
        }
        bytes.pop();
        let hello: NativeHello = protocol::read_message(&bytes, "hello")
            .map_err(|e| format!("the first message is not a hello: {e}"))?;
        let id = hello
            .origin
            .strip_prefix("chrome-extension://")
            .map(|rest| rest.trim_end_matches('/'))
            .ok_or_else(|| format!("origin {:?} is not a browser extension", hello.origin))?;
        if !self
            .config
            .extension_ids
            .iter()
            .any(|allowed| allowed == id)
        {
            return Err(format!(
                "extension {id:?} is not the browser-shell extension"
            ));
        }
        let agreed = protocol::negotiate(hello.version, hello.min_version)?;
        Ok((hello, agreed))
    }
}

async fn send<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(0);
    writer.write_all(&bytes).await?;
    writer.flush().await
}

async fn refuse<W: AsyncWrite + Unpin>(writer: &mut W, reason: &str) {
    let _ = send(
        writer,
        &Refused {
            reason: reason.to_owned(),
        },
    )
    .await;
    let _ = writer.shutdown().await;
}

#[cfg(unix)]
mod imp {
    use std::path::Path;
    use std::sync::Arc;

    use tokio::net::UnixListener;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::{Admission, Arrival};

    /// Binds the socket (replacing one that nobody listens on any more)
    /// and accepts until `stop`.
    pub(super) fn serve(
        address: &Path,
        admission: Arc<Admission>,
        arrivals: mpsc::UnboundedSender<Arrival>,
        stop: CancellationToken,
    ) -> std::io::Result<()> {
        let listener = match UnixListener::bind(address) {
            Ok(listener) => listener,
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                if std::os::unix::net::UnixStream::connect(address).is_ok() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AddrInUse,
                        "another process listens there",
                    ));
                }
                // Left by a shell that died: nobody answers on it.
                std::fs::remove_file(address)?;
                UnixListener::bind(address)?
            }
            Err(error) => return Err(error),
        };
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(address, std::fs::Permissions::from_mode(0o600))?;
        }
        tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    () = stop.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(error) => {
                            tracing::debug!(%error, "native socket accept failed");
                            continue;
                        }
                    },
                };
                tokio::spawn(Arc::clone(&admission).run(stream, arrivals.clone()));
            }
        });
        Ok(())
    }
}

#[cfg(windows)]
mod imp {
    use std::path::Path;
    use std::sync::Arc;

    use tokio::net::windows::named_pipe::ServerOptions;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::{Admission, Arrival};
    use crate::platform::private_pipe::PipeSecurity;

    /// Creates the pipe's first instance (refused when another process
    /// has it) and accepts until `stop`, one new instance per client.
    /// Remote clients are refused, and every instance lets only this user
    /// (and SYSTEM) open it: the pipe's DACL is the credential, as the
    /// socket's mode is on Unix.
    pub(super) fn serve(
        address: &Path,
        admission: Arc<Admission>,
        arrivals: mpsc::UnboundedSender<Arrival>,
        stop: CancellationToken,
    ) -> std::io::Result<()> {
        let name = address.as_os_str().to_owned();
        let security = PipeSecurity::current_user()?;
        let mut server = security.create(
            ServerOptions::new()
                .first_pipe_instance(true)
                .reject_remote_clients(true),
            &name,
        )?;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    connected = server.connect() => if let Err(error) = connected {
                        tracing::debug!(%error, "native pipe connect failed");
                        continue;
                    },
                }
                let next = match security
                    .create(ServerOptions::new().reject_remote_clients(true), &name)
                {
                    Ok(next) => next,
                    Err(error) => {
                        tracing::warn!(%error, "cannot open the native pipe again");
                        return;
                    }
                };
                let client = std::mem::replace(&mut server, next);
                tokio::spawn(Arc::clone(&admission).run(client, arrivals.clone()));
            }
        });
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn listening() -> (
        tempfile::TempDir,
        NativeListener,
        mpsc::UnboundedReceiver<Arrival>,
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let (arrivals, received) = mpsc::unbounded_channel();
        let (_, sessions) = watch::channel(SessionList::default());
        let listener = listen(
            NativeConfig {
                address: dir.path().join("extension.sock"),
                extension_ids: vec![protocol::EXTENSION_ID.into()],
                shell: "test-shell".into(),
            },
            sessions,
            arrivals,
        )
        .expect("listen");
        (dir, listener, received)
    }

    async fn say(address: &std::path::Path, hello: &str) -> String {
        let mut stream = tokio::net::UnixStream::connect(address)
            .await
            .expect("connect");
        stream.write_all(hello.as_bytes()).await.expect("write");
        stream.write_all(&[0]).await.expect("write");
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read_exact(&mut byte).await.is_ok() && byte[0] != 0 {
            answer.push(byte[0]);
        }
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn the_named_extension_is_welcomed_and_others_refused() {
        let (_dir, listener, mut arrivals) = listening().await;
        let origin = format!("chrome-extension://{}/", protocol::EXTENSION_ID);
        let welcome = say(
            &listener.address,
            &format!(r#"{{"type":"hello","version":2,"minVersion":1,"extensionVersion":"t","origin":"{origin}"}}"#),
        )
        .await;
        assert!(
            welcome.contains(r#""type":"welcome""#) && welcome.contains(r#""version":2"#),
            "{welcome}"
        );
        assert!(
            matches!(arrivals.recv().await, Some(Arrival::Admitted(a)) if matches!(a.via, Via::Native))
        );

        for (hello, why) in [
            (r#"{"type":"hello","version":2,"origin":"chrome-extension://abcdefghijklmnopabcdefghijklmnop/"}"#.to_owned(), "is not the browser-shell extension"),
            (r#"{"type":"hello","version":2,"origin":"https://example.org/"}"#.to_owned(), "is not a browser extension"),
            (format!(r#"{{"type":"hello","version":9,"minVersion":8,"origin":"{origin}"}}"#), "this browser-shell is older"),
            ("garbage".to_owned(), "not a hello"),
            // Every field of a hello, but another type (it was let in).
            (format!(r#"{{"type":"proof","version":2,"origin":"{origin}"}}"#), "not a hello"),
        ] {
            let answer = say(&listener.address, &hello).await;
            assert!(answer.contains(r#""type":"refused""#) && answer.contains(why), "{hello}: {answer}");
            match arrivals.recv().await {
                Some(Arrival::Refused { reason, .. }) => assert!(reason.contains(why), "{reason}"),
                other => panic!("{hello}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_second_listener_is_refused_and_a_dead_one_s_socket_replaced() {
        let (_dir, first, _arrivals) = listening().await;
        let (arrivals, _received) = mpsc::unbounded_channel();
        let (_, sessions) = watch::channel(SessionList::default());
        let config = |address: PathBuf| NativeConfig {
            address,
            extension_ids: vec![],
            shell: "second".into(),
        };
        let refused = listen(
            config(first.address.clone()),
            sessions.clone(),
            arrivals.clone(),
        )
        .expect_err("someone listens there");
        assert_eq!(refused.code(), "NOT_CONNECTED");
        // A socket file nobody listens on any more (its shell died) is replaced.
        let dead = first.address.with_extension("dead");
        drop(std::os::unix::net::UnixListener::bind(&dead).expect("bind"));
        assert!(dead.exists());
        let second = listen(config(dead.clone()), sessions, arrivals).expect("replaced");
        assert!(
            tokio::net::UnixStream::connect(&second.address)
                .await
                .is_ok()
        );
        drop(second);
        assert!(!dead.exists(), "the socket goes with its listener");
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use std::os::windows::io::AsRawHandle;

    use super::*;
    use crate::platform::private_pipe::allowed_sids;

    #[tokio::test]
    async fn the_native_pipe_lets_in_only_its_user() {
        let (arrivals, _received) = mpsc::unbounded_channel();
        let (_, sessions) = watch::channel(SessionList::default());
        let name = format!(r"\\.\pipe\browser-shell-native-test-{}", std::process::id());
        let listener = listen(
            NativeConfig {
                address: name.clone().into(),
                extension_ids: vec![protocol::EXTENSION_ID.into()],
                shell: "test-shell".into(),
            },
            sessions,
            arrivals,
        )
        .expect("listen");
        // The descriptor is the pipe's, whichever end asks: the client's
        // handle (opened for reading, which includes READ_CONTROL) shows it.
        let client = tokio::net::windows::named_pipe::ClientOptions::new()
            .open(&name)
            .expect("the user opens the pipe");
        let allowed = allowed_sids(client.as_raw_handle().cast()).expect("the pipe has a DACL");
        assert!(
            !allowed
                .iter()
                .any(|sid| sid == "S-1-1-0" || sid == "S-1-5-7"),
            "Everyone or Anonymous may open it: {allowed:?}"
        );
        assert!(allowed.len() <= 2, "{allowed:?}");
        drop(client);
        drop(listener);
    }
}
