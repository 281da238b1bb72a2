//! TLS for a relay reached from other machines: the certificate and key
//! read before anything listens, and the server that speaks TLS.
//!
//! The TLS stack (rustls with `ring`) is the shell's `tls` feature, on by
//! default. Without it (a build for a target whose C toolchain is missing,
//! such as a macOS type check on Linux) a relay that is asked for TLS
//! refuses to start, and the plain-HTTP relay works as before.

use std::path::Path;

use axum::Router;
use tokio_util::sync::CancellationToken;

use browser_provider::{BrowserError, Result};

/// A relay's certificate and private key, ready to serve.
#[cfg(feature = "tls")]
#[derive(Clone)]
pub struct TlsConfig(axum_server::tls_rustls::RustlsConfig);

/// A relay's certificate and private key, ready to serve (none can exist
/// in a build without the `tls` feature).
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub enum TlsConfig {}

/// Reads a PEM certificate chain and private key.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the files when they cannot be used, or when
/// the shell was built without TLS.
pub async fn load(cert: &Path, key: &Path) -> Result<TlsConfig> {
    #[cfg(feature = "tls")]
    {
        axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
            .await
            .map(TlsConfig)
            .map_err(|e| {
                BrowserError::invalid(
                    "tls",
                    format!("cannot use {} and {}: {e}", cert.display(), key.display()),
                )
            })
    }
    #[cfg(not(feature = "tls"))]
    {
        Err(BrowserError::invalid(
            "tls",
            format!(
                "this browser-shell was built without TLS (the `tls` feature), so it cannot serve {} and {}; \
                 build it with the default features, or put the relay behind a TLS proxy or an SSH tunnel",
                cert.display(),
                key.display()
            ),
        ))
    }
}

/// Serves `app` over TLS on `listener` until `stop`, then lets open
/// connections end for up to 5 s.
///
/// # Errors
/// The listener's I/O error when it cannot serve.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: TlsConfig,
    app: Router,
    stop: CancellationToken,
) -> std::io::Result<()> {
    #[cfg(feature = "tls")]
    {
        let handle = axum_server::Handle::new();
        let shutdown = handle.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            shutdown.graceful_shutdown(Some(std::time::Duration::from_secs(5)));
        });
        // No Nagle delay: a frame's small header must not wait for an ACK
        // before its picture goes out.
        axum_server::from_tcp(listener.into_std()?)?
            .acceptor(
                axum_server::tls_rustls::RustlsAcceptor::new(config.0)
                    .acceptor(axum_server::accept::NoDelayAcceptor::new()),
            )
            .handle(handle)
            .serve(app.into_make_service_with_connect_info::<std::net::SocketAddr>())
            .await
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (listener, app, stop);
        match config {}
    }
}
