//! The network log of a tab: every request from the moment the tab was
//! prepared (method, URL, status, type, MIME type, size, timing, why it
//! failed), in a ring buffer with a cap.
//!
//! A request enters the log when it is over (finished, failed, or
//! redirected), and only then gets its sequence number, so a reader that
//! passes its cursor back gets every request exactly once; requests still
//! in flight are only counted. Headers are kept as sent and redacted when
//! read (credentials and token-like values never leave); response bodies
//! are fetched from the browser only when asked for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;

use crate::cdp::EventStream;
use crate::cdp::protocol::NetworkGetResponseBody;
use crate::error::{BrowserError, Result};

use super::ring::Ring;
use super::{Budget, Page};

/// Requests a tab keeps; older ones are dropped (and counted).
pub const NETWORK_CAP: usize = 1000;

/// Requests in flight a tab follows at most (long polls and streams that
/// never end must not grow without bound).
const IN_FLIGHT_CAP: usize = 1000;

/// Shown instead of a redacted value.
pub const REDACTED: &str = "[redacted]";

/// One request that is over.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestEntry {
    /// Its number in this tab (1, 2, …), for cursors and for asking for its body.
    pub seq: u64,
    /// The browser's id for it (to fetch the body).
    pub request_id: String,
    /// `GET`, `POST`, …
    pub method: String,
    /// The URL as requested.
    pub url: String,
    /// `Document`, `Stylesheet`, `Script`, `Image`, `Fetch`, `XHR`, …
    pub resource_type: String,
    /// The frame it was made for (for a `Document`, the frame it was to
    /// load in), when a frame made it.
    pub frame_id: Option<String>,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// The response's MIME type.
    pub mime_type: Option<String>,
    /// Bytes received over the network (encoded), when known.
    pub encoded_bytes: Option<u64>,
    /// From sending the request to its end, in milliseconds.
    pub duration_ms: Option<f64>,
    /// Why it failed (`net::ERR_…`, `canceled`, a blocked reason).
    pub failure: Option<String>,
    /// Request headers as sent.
    pub request_headers: Vec<(String, String)>,
    /// Response headers as received.
    pub response_headers: Vec<(String, String)>,
    /// When it started, milliseconds since the Unix epoch.
    pub started_ms: u64,
}

impl RequestEntry {
    /// A failure: the request did not complete, or the server answered 4xx / 5xx.
    pub fn failed(&self) -> bool {
        self.failure.is_some() || self.status.is_some_and(|s| s >= 400)
    }
}

/// Which requests a read returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkFilter {
    /// Only failures (see [`RequestEntry::failed`]).
    pub failed_only: bool,
    /// Only URLs containing this.
    pub url_contains: Option<String>,
    /// Only this resource type (case-insensitive), such as `fetch` or `script`.
    pub resource_type: Option<String>,
}

impl NetworkFilter {
    fn accepts(&self, entry: &RequestEntry) -> bool {
        (!self.failed_only || entry.failed())
            && self
                .url_contains
                .as_deref()
                .is_none_or(|part| entry.url.contains(part))
            && self
                .resource_type
                .as_deref()
                .is_none_or(|kind| entry.resource_type.eq_ignore_ascii_case(kind))
    }
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkRead {
    /// Matching requests after the cursor, in the order they ended.
    pub entries: Vec<RequestEntry>,
    /// The cursor for the next read.
    pub cursor: u64,
    /// Requests after the cursor that the cap dropped before this read.
    pub dropped: u64,
    /// Requests not over yet (they come in a later read).
    pub in_flight: usize,
}

/// A tab's network log.
#[derive(Debug)]
pub struct NetworkLog {
    /// Requests not over yet, by the browser's id, with when they started
    /// (the browser's monotonic seconds).
    in_flight: HashMap<String, (RequestEntry, f64)>,
    /// Requests that are over, numbered in the order they ended.
    done: Ring<RequestEntry>,
    /// Requests in flight, for waits on a quiet network.
    busy: tokio::sync::watch::Sender<usize>,
}

impl Default for NetworkLog {
    fn default() -> Self {
        Self {
            in_flight: HashMap::new(),
            done: Ring::new(NETWORK_CAP),
            busy: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl NetworkLog {
    /// Follows how many requests are in flight.
    pub fn watch_in_flight(&self) -> tokio::sync::watch::Receiver<usize> {
        self.busy.subscribe()
    }

    /// Requests after `since` that `filter` accepts, at most `limit`.
    pub fn read(&self, since: u64, filter: &NetworkFilter, limit: usize) -> NetworkRead {
        let read = self.done.read(since, limit, |entry| filter.accepts(entry));
        NetworkRead {
            entries: read
                .entries
                .into_iter()
                .map(|(seq, entry)| RequestEntry { seq, ..entry })
                .collect(),
            cursor: read.cursor,
            dropped: read.dropped,
            in_flight: self.in_flight.len(),
        }
    }

    /// For requests whose URL contains `part`: whether one has ended (and
    /// is still kept), and whether one is in flight.
    pub fn settled(&self, part: &str) -> (bool, bool) {
        (
            self.done.iter().any(|e| e.url.contains(part)),
            self.in_flight.values().any(|(e, _)| e.url.contains(part)),
        )
    }

    /// The sequence number of the last request that ended: reads after it
    /// see only what ends from now on.
    pub fn cursor(&self) -> u64 {
        self.done.last_seq()
    }

    /// The finished request with this sequence number, if still kept.
    pub fn entry(&self, seq: u64) -> Option<RequestEntry> {
        self.done.get(seq).map(|entry| RequestEntry {
            seq,
            ..entry.clone()
        })
    }

    fn start(&mut self, id: String, entry: RequestEntry, at: f64) {
        if self.in_flight.len() >= IN_FLIGHT_CAP
            && let Some(oldest) = self
                .in_flight
                .iter()
                .min_by(|a, b| a.1.1.total_cmp(&b.1.1))
                .map(|(id, _)| id.clone())
        {
            self.in_flight.remove(&oldest);
        }
        self.in_flight.insert(id, (entry, at));
        self.busy.send_replace(self.in_flight.len());
    }

    /// Ends request `id` at browser time `at`, filled in by `finish`.
    fn end(&mut self, id: &str, at: f64, finish: impl FnOnce(&mut RequestEntry)) {
        let Some((mut entry, started)) = self.in_flight.remove(id) else {
            return;
        };
        entry.duration_ms = Some(((at - started) * 1000.0).max(0.0));
        finish(&mut entry);
        self.done.push(entry);
        self.busy.send_replace(self.in_flight.len());
    }
}

/// Fills `log` from a page's events until the page goes away.
pub async fn collect(mut events: EventStream, log: Arc<Mutex<NetworkLog>>) {
    while let Some(event) = events.recv().await {
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        match event.method.as_str() {
            "Network.requestWillBeSent" => {
                let Some(sent) = event.decode::<RequestWillBeSent>() else {
                    continue;
                };
                // A redirect ends the request it continues.
                if let Some(redirect) = &sent.redirect_response {
                    log.end(&sent.request_id, sent.timestamp, |entry| {
                        entry.status = Some(redirect.status);
                        entry.mime_type = Some(redirect.mime_type.clone());
                        entry.response_headers = headers(&redirect.headers);
                    });
                }
                // The browser's own favicon fetch is not the page's doing
                // (and a missing one is not the page's failure).
                let resource_type = sent.kind.unwrap_or_else(|| "Other".into());
                if resource_type == "Other" && is_favicon(&sent.request.url) {
                    continue;
                }
                let entry = RequestEntry {
                    seq: 0,
                    request_id: sent.request_id.clone(),
                    method: sent.request.method,
                    url: sent.request.url,
                    resource_type,
                    frame_id: sent.frame_id,
                    status: None,
                    mime_type: None,
                    encoded_bytes: None,
                    duration_ms: None,
                    failure: None,
                    request_headers: headers(&sent.request.headers),
                    response_headers: Vec::new(),
                    started_ms: (sent.wall_time * 1000.0) as u64,
                };
                log.start(sent.request_id, entry, sent.timestamp);
            }
            "Network.responseReceived" => {
                let Some(received) = event.decode::<ResponseReceived>() else {
                    continue;
                };
                if let Some((entry, _)) = log.in_flight.get_mut(&received.request_id) {
                    entry.status = Some(received.response.status);
                    entry.mime_type = Some(received.response.mime_type);
                    entry.response_headers = headers(&received.response.headers);
                }
            }
            "Network.loadingFinished" => {
                let Some(finished) = event.decode::<LoadingFinished>() else {
                    continue;
                };
                log.end(&finished.request_id, finished.timestamp, |entry| {
                    entry.encoded_bytes = Some(finished.encoded_data_length.max(0.0) as u64);
                });
            }
            "Network.loadingFailed" => {
                let Some(failed) = event.decode::<LoadingFailed>() else {
                    continue;
                };
                log.end(&failed.request_id, failed.timestamp, |entry| {
                    entry.failure = Some(if failed.canceled {
                        "canceled".into()
                    } else if let Some(reason) = failed.blocked_reason {
                        format!("blocked: {reason}")
                    } else {
                        failed.error_text
                    });
                });
            }
            _ => {}
        }
    }
}

/// Whether `url` is a site's `/favicon.ico`.
fn is_favicon(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| u.path() == "/favicon.ico")
}

/// Headers as name/value pairs, in the browser's order.
fn headers(object: &serde_json::Map<String, Value>) -> Vec<(String, String)> {
    object
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (name.clone(), value)
        })
        .collect()
}

/// Headers safe to show: credentials and token-like values replaced.
pub fn redacted_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let secret = is_secret_header(name) || looks_like_token(value);
            let value = if secret {
                REDACTED.to_owned()
            } else {
                value.clone()
            };
            (name.clone(), value)
        })
        .collect()
}

/// Headers that carry credentials by their name.
fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || [
        "token", "secret", "api-key", "apikey", "session", "csrf", "xsrf", "password", "auth",
    ]
    .iter()
    .any(|part| name.contains(part))
}

/// A value that looks like a credential: `Bearer …`/`Basic …`, or one long
/// unbroken run of letters and digits mixed (keys, JWTs, session ids).
pub fn looks_like_token(value: &str) -> bool {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    if lower.starts_with("bearer ") || lower.starts_with("basic ") {
        return true;
    }
    value.len() >= 24
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '=' | '+' | '/'))
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
}

/// The URL with the values of credential-like query parameters redacted.
pub fn redacted_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return url.to_owned();
    };
    if parsed.query().is_none() {
        return url.to_owned();
    }
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(name, value)| {
            let lower = name.to_ascii_lowercase();
            let secret = [
                "token", "key", "secret", "password", "passwd", "sig", "auth", "session", "code",
            ]
            .iter()
            .any(|part| lower.contains(part))
                || looks_like_token(&value);
            let value = if secret {
                REDACTED.to_owned()
            } else {
                value.into_owned()
            };
            (name.into_owned(), value)
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.into()
}

/// A response body, as far as it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text, cut to the asked length.
    Text {
        /// The text shown.
        text: String,
        /// Characters left out at the end.
        omitted_chars: usize,
    },
    /// Binary content, not shown.
    Binary {
        /// Its size in bytes.
        bytes: usize,
    },
}

/// The body of request `entry`, at most `max_chars` characters of text.
///
/// # Errors
/// `INVALID_ARGUMENT` when the browser no longer has it (a request that
/// failed, was redirected, or whose page navigated away), and what the
/// browser reports.
pub async fn response_body(
    page: &Page,
    entry: &RequestEntry,
    max_chars: usize,
    budget: &Budget,
) -> Result<Body> {
    let fetched = page
        .call(
            budget,
            &NetworkGetResponseBody {
                request_id: entry.request_id.clone(),
            },
        )
        .await
        .map_err(|error| match error {
            BrowserError::Protocol { message, .. } => BrowserError::invalid(
                "body",
                format!(
                    "request {} has no body to show ({message}); bodies are kept only for finished responses of the current page",
                    entry.seq
                ),
            ),
            other => other,
        })?;
    if fetched.base64_encoded {
        // Four base64 characters carry three bytes.
        let padding = fetched.body.chars().rev().take_while(|&c| c == '=').count();
        return Ok(Body::Binary {
            bytes: (fetched.body.len() / 4 * 3).saturating_sub(padding),
        });
    }
    let total = fetched.body.chars().count();
    let text: String = fetched.body.chars().take(max_chars).collect();
    Ok(Body::Text {
        text,
        omitted_chars: total.saturating_sub(max_chars),
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestWillBeSent {
    request_id: String,
    request: Request,
    timestamp: f64,
    #[serde(default)]
    wall_time: f64,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    redirect_response: Option<Response>,
    #[serde(default)]
    frame_id: Option<String>,
}

#[derive(Deserialize)]
struct Request {
    url: String,
    method: String,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    status: u16,
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponseReceived {
    request_id: String,
    response: Response,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadingFinished {
    request_id: String,
    timestamp: f64,
    #[serde(default)]
    encoded_data_length: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadingFailed {
    request_id: String,
    timestamp: f64,
    #[serde(default)]
    error_text: String,
    #[serde(default)]
    canceled: bool,
    #[serde(default)]
    blocked_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_token_like_values_are_redacted() {
        let headers = vec![
            ("Authorization".to_owned(), "Bearer abc".to_owned()),
            ("Cookie".to_owned(), "sid=1".to_owned()),
            ("X-Api-Key".to_owned(), "short".to_owned()),
            (
                "X-Request".to_owned(),
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl".to_owned(),
            ),
            ("Accept".to_owned(), "text/html".to_owned()),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        let shown = redacted_headers(&headers);
        let value = |name: &str| &shown.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(value("Authorization"), REDACTED);
        assert_eq!(value("Cookie"), REDACTED);
        assert_eq!(value("X-Api-Key"), REDACTED);
        assert_eq!(value("X-Request"), REDACTED);
        assert_eq!(value("Accept"), "text/html");
        assert_eq!(value("Content-Type"), "application/json");
        assert_eq!(
            redacted_url("https://a.test/p?q=owls&access_token=abc&page=2"),
            "https://a.test/p?q=owls&access_token=%5Bredacted%5D&page=2"
        );
        assert_eq!(redacted_url("https://a.test/p"), "https://a.test/p");
    }
}
