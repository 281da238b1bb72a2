//! `browser_network`: requests read by cursor, or one response's body.

use browser_provider::page::network::{
    Body, NETWORK_CAP, NetworkFilter, NetworkRead, RequestEntry, redacted_headers, redacted_url,
};
use browser_provider::{Browser, Result, SessionId, TabHandle};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{Call, Effect, Offered, ToolArgs, ToolSpec, is_zero};
use crate::call::ToolOutput;
use crate::render;
use crate::words::Surface;

/// `browser_network`.
pub const NETWORK: ToolSpec = ToolSpec {
    name: "browser_network",
    title: "Network requests",
    command: Some("network"),
    description: "Read the tab's requests (method, URL, status, type, MIME type, size, duration, why it failed), in \
        the order they ended. Filter with failed, url and type; pass the returned cursor as since next \
        time to get only what is new; headers: true adds headers (credentials redacted); body: <number> \
        shows one response's body.",
    effect: Effect::READS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "reading the network log",
    tab: true,
    summary: &["url", "tab"],
    typed_text: None,
    schema: rmcp::handler::server::common::schema_for_type::<NetworkArgs>,
    output: Some(super::schema::output_schema::<NetworkOutput>),
    run: |call| Box::pin(browser_network(call)),
};

/// `browser_network`; on the command line `network [--failed] [--url PART] …`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkArgs {
    /// Only failed requests: network errors, blocked or canceled ones, and HTTP 4xx/5xx.
    #[arg(long, num_args = 0, default_missing_value = "true")]
    pub failed: Option<bool>,
    /// Only requests whose URL contains this.
    #[arg(long)]
    pub url: Option<String>,
    /// Only this resource type: document, stylesheet, script, image, font, fetch, xhr, …
    #[serde(rename = "type")]
    #[arg(long = "type", value_name = "TYPE")]
    pub resource_type: Option<String>,
    /// Only requests after this cursor (the "next cursor" of your last read): read only what is new.
    #[arg(long, value_name = "CURSOR")]
    pub since: Option<u64>,
    /// At most this many requests (default 50).
    #[schemars(range(min = 1))]
    #[arg(long)]
    pub limit: Option<usize>,
    /// Include request and response headers (credentials and token-like values redacted).
    #[arg(long, num_args = 0, default_missing_value = "true")]
    pub headers: Option<bool>,
    /// Show the response body of this request, by its number from a read (such as 7).
    #[arg(long, value_name = "NUMBER")]
    pub body: Option<u64>,
    /// At most this many characters of body (default 20000).
    #[arg(long, value_name = "N")]
    pub body_max_chars: Option<usize>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

impl ToolArgs for NetworkArgs {
    const TOOL: &'static ToolSpec = &NETWORK;
}

async fn browser_network(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: NetworkArgs = call.args().await?;
    let (browser, session, cancel) = (call.browser, call.session, call.cancel);
    network(browser, session, &args, cancel, call.settings.surface).await
}

/// `browser_network`: one request's body, or the requests since a cursor.
async fn network(
    browser: &Browser,
    session: &SessionId,
    args: &NetworkArgs,
    cancel: &CancellationToken,
    surface: Surface,
) -> Result<ToolOutput> {
    let tab = browser.active_tab(session)?;
    let with_headers = args.headers.unwrap_or(false);
    if let Some(seq) = args.body {
        let max_chars = args.body_max_chars.unwrap_or(20_000).max(1);
        let (entry, body) = browser
            .network_body(session, seq, max_chars, cancel)
            .await?;
        return Ok(body_output(&tab, seq, &entry, &body, with_headers, surface));
    }
    let filter = NetworkFilter {
        failed_only: args.failed.unwrap_or(false),
        url_contains: args.url.clone(),
        resource_type: args.resource_type.clone(),
    };
    let limit = args.limit.unwrap_or(50).clamp(1, NETWORK_CAP);
    let read = browser.network(session, args.since.unwrap_or(0), &filter, limit)?;
    Ok(list_output(&tab, &read, with_headers, surface))
}

/// What `browser_network` answers, as data: a read's cursor and requests,
/// or one request and its body's size (the body itself is in the text only).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkOutput {
    /// Pass as since to read only what is new.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<u64>,
    /// Requests still in flight (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub in_flight: usize,
    /// Earlier requests no longer kept (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: u64,
    /// The requests read, in the order they ended; for a body, its request.
    pub requests: Vec<RequestData>,
    /// For a body: its size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyData>,
}

/// One request, as data (its type, MIME type, size and duration are in the text).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestData {
    /// Its number, to pass as body.
    pub seq: u64,
    /// POST, PUT, …; absent for GET.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// HTTP status, when a response came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed (net::ERR_…), when it did not complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// URL (secrets redacted).
    pub url: String,
    /// With headers: [name, value] sent (secrets redacted; absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub request_headers: Vec<[String; 2]>,
    /// With headers: [name, value] received (secrets redacted; absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<[String; 2]>,
}

impl RequestData {
    fn of(entry: &RequestEntry, with_headers: bool) -> Self {
        let headers = |list: &[(String, String)]| {
            if !with_headers {
                return Vec::new();
            }
            redacted_headers(list)
                .into_iter()
                .map(|(name, value)| [name, value])
                .collect()
        };
        Self {
            seq: entry.seq,
            method: Some(entry.method.clone()).filter(|m| m != "GET"),
            status: entry.status,
            failure: entry.failure.clone(),
            url: redacted_url(&entry.url),
            request_headers: headers(&entry.request_headers),
            response_headers: headers(&entry.response_headers),
        }
    }
}

/// A response body's size, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BodyData {
    /// Text: characters shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars: Option<usize>,
    /// Text: characters left out (raise bodyMaxChars; absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted_chars: usize,
    /// Binary (not shown): bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary_bytes: Option<usize>,
}

/// The text and data of one request's body, request `seq` of `tab`.
fn body_output(
    tab: &TabHandle,
    seq: u64,
    entry: &RequestEntry,
    body: &Body,
    with_headers: bool,
    surface: Surface,
) -> ToolOutput {
    let mut text = format!(
        "Request {seq} of {tab}:\n{}",
        render::fenced("request", &render::request(entry, with_headers))
    );
    match body {
        Body::Text {
            text: body,
            omitted_chars,
        } => {
            text.push_str(&format!(
                "\nResponse body ({} characters",
                body.chars().count()
            ));
            if *omitted_chars > 0 {
                text.push_str(&format!(
                    "; {omitted_chars} more left out, raise {} to see them",
                    surface.argument("bodyMaxChars")
                ));
            }
            text.push_str("):\n");
            text.push_str(&render::fenced("body", body));
        }
        Body::Binary { bytes } => {
            text.push_str(&format!(
                "\nResponse body: {bytes} bytes of binary data, not shown."
            ));
        }
    }
    let data = NetworkOutput {
        requests: vec![RequestData::of(entry, with_headers)],
        body: Some(match body {
            Body::Text {
                text,
                omitted_chars,
            } => BodyData {
                chars: Some(text.chars().count()),
                omitted_chars: *omitted_chars,
                binary_bytes: None,
            },
            Body::Binary { bytes } => BodyData {
                chars: None,
                omitted_chars: 0,
                binary_bytes: Some(*bytes),
            },
        }),
        ..NetworkOutput::default()
    };
    ToolOutput::text(text).with_structured(&data)
}

/// The text and data of a read of `tab`'s requests.
fn list_output(
    tab: &TabHandle,
    read: &NetworkRead,
    with_headers: bool,
    surface: Surface,
) -> ToolOutput {
    let mut text = format!(
        "Network of {tab}: {} request{} (next cursor: {}; pass it as {} to read only what is new).",
        read.entries.len(),
        if read.entries.len() == 1 { "" } else { "s" },
        read.cursor,
        surface.argument("since")
    );
    if read.in_flight > 0 {
        text.push_str(&format!(
            " {} still in flight (listed once they end).",
            read.in_flight
        ));
    }
    if read.dropped > 0 {
        text.push_str(&format!(
            " {} earlier requests were dropped (a tab keeps the last {NETWORK_CAP}).",
            read.dropped
        ));
    }
    if !read.entries.is_empty() {
        let lines: Vec<String> = read
            .entries
            .iter()
            .map(|entry| render::request(entry, with_headers))
            .collect();
        text.push('\n');
        text.push_str(&render::fenced("network", &lines.join("\n")));
        text.push_str(&match surface {
            Surface::Mcp => "\nAsk for a body with body: <number>.".to_owned(),
            Surface::CommandLine => "\nAsk for a body with --body NUMBER.".to_owned(),
        });
    }
    let data = NetworkOutput {
        cursor: Some(read.cursor),
        in_flight: read.in_flight,
        dropped: read.dropped,
        requests: read
            .entries
            .iter()
            .map(|entry| RequestData::of(entry, with_headers))
            .collect(),
        ..NetworkOutput::default()
    };
    ToolOutput::text(text).with_structured(&data)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::check_data;
    use super::*;

    fn request(seq: u64, method: &str, status: Option<u16>, kind: &str, url: &str) -> RequestEntry {
        RequestEntry {
            seq,
            request_id: format!("1000.{seq}"),
            method: method.into(),
            url: url.into(),
            resource_type: kind.into(),
            frame_id: None,
            status,
            mime_type: Some(match kind {
                "Document" => "text/html".into(),
                "Script" => "text/javascript".into(),
                "Stylesheet" => "text/css".into(),
                _ => "application/json".into(),
            }),
            encoded_bytes: Some(4_812),
            duration_ms: Some(23.4),
            failure: None,
            request_headers: vec![
                ("Accept".into(), "*/*".into()),
                ("Authorization".into(), "Bearer abc.def.ghi".into()),
            ],
            response_headers: vec![("Content-Type".into(), "application/json".into())],
            started_ms: 1_765_000_000_000,
        }
    }

    fn tab() -> TabHandle {
        TabHandle::parse("t2").unwrap_or_else(|e| panic!("{e}"))
    }

    fn page_load() -> NetworkRead {
        let mut failed = request(
            6,
            "GET",
            None,
            "Fetch",
            "http://127.0.0.1:4173/api/notifications?since=1765000000",
        );
        failed.failure = Some("net::ERR_CONNECTION_REFUSED".into());
        failed.mime_type = None;
        failed.encoded_bytes = None;
        NetworkRead {
            entries: vec![
                request(
                    1,
                    "GET",
                    Some(200),
                    "Document",
                    "http://127.0.0.1:4173/app/",
                ),
                request(
                    2,
                    "GET",
                    Some(200),
                    "Stylesheet",
                    "http://127.0.0.1:4173/assets/index-7c1e.css",
                ),
                request(
                    3,
                    "GET",
                    Some(200),
                    "Script",
                    "http://127.0.0.1:4173/assets/index-3f9a2c.js",
                ),
                request(
                    4,
                    "GET",
                    Some(200),
                    "Fetch",
                    "http://127.0.0.1:4173/api/settings",
                ),
                request(
                    5,
                    "POST",
                    Some(404),
                    "Fetch",
                    "http://127.0.0.1:4173/api/session/refresh",
                ),
                failed,
            ],
            cursor: 6,
            dropped: 0,
            in_flight: 1,
        }
    }

    #[test]
    fn a_read_is_data_no_larger_than_its_text() {
        let output = list_output(&tab(), &page_load(), false, Surface::Mcp);
        assert!(
            output
                .text
                .contains("[5] POST 404 FAILED Fetch application/json 4.7 KB 23 ms"),
            "{}",
            output.text
        );
        let data = output.structured.clone().unwrap_or_default();
        assert_eq!(data["cursor"], 6);
        assert_eq!(data["inFlight"], 1);
        assert_eq!(
            data["requests"][4],
            json!({"seq": 5, "method": "POST", "status": 404, "url": "http://127.0.0.1:4173/api/session/refresh"})
        );
        assert_eq!(
            data["requests"][5]["failure"],
            "net::ERR_CONNECTION_REFUSED"
        );
        assert_eq!(data["requests"][5].get("status"), None);
        check_data(&NETWORK, &output);

        let with_headers = list_output(&tab(), &page_load(), true, Surface::Mcp);
        let data = with_headers.structured.clone().unwrap_or_default();
        assert_eq!(
            data["requests"][0]["requestHeaders"][0],
            json!(["Accept", "*/*"])
        );
        assert!(
            !data.to_string().contains("abc.def.ghi"),
            "credentials are redacted: {data}"
        );
        check_data(&NETWORK, &with_headers);

        let empty = NetworkRead {
            entries: Vec::new(),
            cursor: 6,
            dropped: 0,
            in_flight: 0,
        };
        let output = list_output(&tab(), &empty, false, Surface::Mcp);
        assert_eq!(
            output.structured,
            Some(json!({"cursor": 6, "requests": []}))
        );
        check_data(&NETWORK, &output);
    }

    #[test]
    fn a_body_is_described_not_repeated() {
        let entry = request(
            4,
            "GET",
            Some(200),
            "Fetch",
            "http://127.0.0.1:4173/api/settings",
        );
        let body = Body::Text {
            text: "{\"theme\":\"dark\",\"locale\":\"en\"}".into(),
            omitted_chars: 120,
        };
        let output = body_output(&tab(), 4, &entry, &body, false, Surface::Mcp);
        assert_eq!(
            output.structured,
            Some(json!({
                "requests": [{"seq": 4, "status": 200, "url": "http://127.0.0.1:4173/api/settings"}],
                "body": {"chars": 30, "omittedChars": 120},
            }))
        );
        check_data(&NETWORK, &output);
        let image = body_output(
            &tab(),
            4,
            &entry,
            &Body::Binary { bytes: 5_120 },
            true,
            Surface::Mcp,
        );
        let data = image.structured.clone().unwrap_or_default();
        assert_eq!(data["body"], json!({"binaryBytes": 5120}));
        check_data(&NETWORK, &image);
    }

    /// A page's hundred requests and more (the most a read returns): most
    /// GETs that succeed, some 404s, POSTs, failures; with and without
    /// headers. The data stays smaller than the text.
    #[test]
    fn a_long_read_is_data_no_larger_than_its_text() {
        let entries: Vec<RequestEntry> = (1..=NETWORK_CAP as u64)
            .map(|seq| match seq % 10 {
                0 => request(seq, "POST", Some(405), "Fetch", "http://127.0.0.1:4173/api/save"),
                4 => request(
                    seq,
                    "GET",
                    Some(404),
                    "Fetch",
                    &format!("http://127.0.0.1:4173/api/items-{seq}.json"),
                ),
                7 => {
                    let mut refused = request(
                        seq,
                        "GET",
                        None,
                        "Fetch",
                        &format!("http://127.0.0.1:9/metrics?n={seq}"),
                    );
                    refused.failure = Some("net::ERR_CONNECTION_REFUSED".into());
                    refused.mime_type = None;
                    refused.encoded_bytes = None;
                    refused
                }
                _ => request(
                    seq,
                    "GET",
                    Some(200),
                    "Image",
                    &format!("http://127.0.0.1:4173/favicon.svg?v={seq}"),
                ),
            })
            .map(|mut entry| {
                // What Chromium reports of a fetch's headers.
                entry.request_headers = [
                    ("Accept", "*/*"),
                    ("Referer", "http://127.0.0.1:4173/app/"),
                    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36"),
                    ("sec-ch-ua", "\"Chromium\";v=\"140\", \"Not=A?Brand\";v=\"24\""),
                    ("sec-ch-ua-mobile", "?0"),
                    ("sec-ch-ua-platform", "\"Linux\""),
                ]
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .to_vec();
                if entry.failure.is_some() {
                    entry.response_headers.clear();
                } else {
                    entry.response_headers.extend(
                        [
                            ("Content-Length", "4812"),
                            ("Date", "Mon, 08 Dec 2025 10:00:00 GMT"),
                            ("Last-Modified", "Mon, 01 Dec 2025 09:00:00 GMT"),
                        ]
                        .map(|(name, value)| (name.to_owned(), value.to_owned())),
                    );
                }
                entry
            })
            .collect();
        let read = NetworkRead {
            cursor: NETWORK_CAP as u64,
            dropped: 0,
            in_flight: 0,
            entries,
        };
        let (text, data) = check_data(&NETWORK, &list_output(&tab(), &read, false, Surface::Mcp));
        assert!(data < text, "{data} ≥ {text}");
        check_data(&NETWORK, &list_output(&tab(), &read, true, Surface::Mcp));
    }
}
