//! Turning a user-given endpoint (`ws://…` or `http://host:port`) into the
//! browser's WebSocket URL.

use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{BrowserError, Result};

/// Largest `/json/version` answer we read; the real one is under 1 KB.
const MAX_VERSION_RESPONSE: u64 = 64 * 1024;

#[derive(Deserialize)]
struct VersionInfo {
    #[serde(rename = "webSocketDebuggerUrl")]
    web_socket_debugger_url: String,
}

/// Resolves `endpoint` to a browser WebSocket URL.
///
/// `ws://` and `wss://` URLs are returned as they are; `http://host:port`
/// is asked for `/json/version` and its `webSocketDebuggerUrl` is returned.
///
/// # Errors
/// `INVALID_ARGUMENT` for other schemes, `NOT_CONNECTED` when the endpoint
/// does not answer or answers something that is not a DevTools endpoint.
pub async fn resolve_endpoint(endpoint: &str, timeout: Duration) -> Result<String> {
    let url = url::Url::parse(endpoint).map_err(|e| {
        BrowserError::invalid("endpoint", format!("{endpoint:?} is not a URL: {e}"))
    })?;
    match url.scheme() {
        "ws" | "wss" => return Ok(endpoint.to_owned()),
        "http" => {}
        other => {
            return Err(BrowserError::invalid(
                "endpoint",
                format!("scheme {other:?} is not supported; use ws://… or http://host:port"),
            ));
        }
    }
    let host = url
        .host_str()
        .ok_or_else(|| BrowserError::invalid("endpoint", "the URL has no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let not_connected = |reason: String| BrowserError::NotConnected {
        reason: format!("{endpoint}: {reason}"),
    };
    let body = tokio::time::timeout(timeout, http_get(host, port, "/json/version"))
        .await
        .map_err(|_| not_connected(format!("no answer within {} ms", timeout.as_millis())))?
        .map_err(|e| not_connected(e.to_string()))?;
    let info: VersionInfo = serde_json::from_str(&body)
        .map_err(|e| not_connected(format!("/json/version is not a DevTools answer: {e}")))?;
    Ok(info.web_socket_debugger_url)
}

/// A minimal HTTP/1.1 GET returning the body of a 200 response. Reads
/// exactly `Content-Length` bytes: DevTools keeps the connection open.
async fn http_get(host: &str, port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect((host, port)).await?;
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head, body) = loop {
        let read = stream.read(&mut chunk).await?;
        response.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&response).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(usize::MAX);
            if body.len() >= length || read == 0 {
                break (head.to_owned(), body.to_owned());
            }
        } else if read == 0 {
            return Err(std::io::Error::other("malformed HTTP response"));
        }
        if response.len() as u64 > MAX_VERSION_RESPONSE {
            return Err(std::io::Error::other("the response is too large"));
        }
    };
    let status_ok = head
        .lines()
        .next()
        .is_some_and(|status| status.split_whitespace().nth(1) == Some("200"));
    if !status_ok {
        return Err(std::io::Error::other(format!(
            "unexpected HTTP status: {}",
            head.lines().next().unwrap_or_default()
        )));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn websocket_urls_pass_through() {
        let url = "ws://127.0.0.1:9/devtools/browser/x";
        assert_eq!(
            resolve_endpoint(url, Duration::from_secs(1))
                .await
                .ok()
                .as_deref(),
            Some(url)
        );
    }

    #[tokio::test]
    async fn other_schemes_are_invalid() {
        let error = resolve_endpoint("ftp://example.test", Duration::from_secs(1))
            .await
            .err();
        assert_eq!(error.map(|e| e.code()), Some("INVALID_ARGUMENT"));
    }
}
