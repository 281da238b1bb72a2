//! The network log: requests captured per tab with status, type, size,
//! timing and failure, read by filter and by cursor, headers redacted on
//! the way out, bodies on request, gone with the tab.

use std::time::Duration;

use browser_provider::SessionId;
use browser_provider::page::network::{
    Body, NETWORK_CAP, NetworkFilter, REDACTED, RequestEntry, redacted_headers, redacted_url,
};
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

/// Waits (bounded) until the log has a request whose URL ends with each of `ends`.
async fn until_requests(ctx: &Ctx, session: &SessionId, ends: &[&str]) -> Vec<RequestEntry> {
    let browser = ctx.browser();
    let mut news = browser.watch_network(session).unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            news.borrow_and_update();
            let read = browser
                .network(session, 0, &NetworkFilter::default(), usize::MAX)
                .unwrap();
            if ends
                .iter()
                .all(|end| read.entries.iter().any(|e| e.url.ends_with(end)))
            {
                return read.entries;
            }
            news.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("requests {ends:?} within 20 s"))
}

pub async fn requests_are_logged_filtered_redacted_and_read_by_cursor(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("index.html").await;
    // A port nobody listens on (bound, then released).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    ctx.eval(
        &session,
        &format!(
            "fetch('/article.html?access_token=abc123', {{headers: {{Authorization: 'Bearer s3cret', 'X-Trace': 'plain'}}}}); \
             fetch('/status/404'); \
             fetch('http://127.0.0.1:{closed}/refused').catch(() => {{}}); 1"
        ),
    )
    .await;
    let entries = until_requests(
        &ctx,
        &session,
        &[
            "/index.html",
            "access_token=abc123",
            "/status/404",
            "/refused",
        ],
    )
    .await;
    let find = |end: &str| entries.iter().find(|e| e.url.ends_with(end)).unwrap();

    let page = find("/index.html");
    assert_eq!(
        (
            page.method.as_str(),
            page.status,
            page.resource_type.as_str()
        ),
        ("GET", Some(200), "Document")
    );
    let article = find("access_token=abc123");
    assert_eq!(article.status, Some(200));
    assert_eq!(article.resource_type, "Fetch");
    assert_eq!(article.mime_type.as_deref(), Some("text/html"));
    assert!(article.encoded_bytes.unwrap() > 1000, "{article:?}");
    assert!(article.duration_ms.is_some() && article.started_ms > 0);
    assert!(!article.failed());
    let missing = find("/status/404");
    assert_eq!(missing.status, Some(404));
    assert!(missing.failed());
    let refused = find("/refused");
    assert!(
        refused
            .failure
            .as_deref()
            .unwrap()
            .contains("ERR_CONNECTION_REFUSED"),
        "{refused:?}"
    );

    // Credentials are kept as sent, and never shown.
    assert!(
        article
            .request_headers
            .iter()
            .any(|(n, v)| n == "Authorization" && v == "Bearer s3cret")
    );
    let shown = redacted_headers(&article.request_headers);
    assert!(
        shown
            .iter()
            .any(|(n, v)| n == "Authorization" && v == REDACTED)
    );
    assert!(shown.iter().any(|(n, v)| n == "X-Trace" && v == "plain"));
    assert!(!redacted_url(&article.url).contains("abc123"));

    // Filters: failures only, a URL part, a type.
    let filtered = |filter: NetworkFilter| {
        browser
            .network(&session, 0, &filter, 100)
            .unwrap()
            .entries
            .into_iter()
            .map(|e| e.url)
            .collect::<Vec<_>>()
    };
    let failed = filtered(NetworkFilter {
        failed_only: true,
        ..NetworkFilter::default()
    });
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        filtered(NetworkFilter {
            url_contains: Some("status/".into()),
            ..NetworkFilter::default()
        })
        .iter()
        .all(|u| u.contains("status/"))
    );
    let documents = filtered(NetworkFilter {
        resource_type: Some("document".into()),
        ..NetworkFilter::default()
    });
    assert_eq!(documents.len(), 1, "{documents:?}");

    // A body on request, cut where asked.
    let (entry, body) = browser
        .network_body(&session, article.seq, 100_000, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(entry.seq, article.seq);
    let Body::Text {
        text,
        omitted_chars,
    } = body
    else {
        panic!("text expected")
    };
    assert!(text.contains("Field Guide to Owls") && omitted_chars == 0);
    let (_, short) = browser
        .network_body(&session, article.seq, 10, &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        matches!(short, Body::Text { ref text, omitted_chars } if text.chars().count() == 10 && omitted_chars > 0),
        "{short:?}"
    );
    let failed_body = browser
        .network_body(&session, refused.seq, 100, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(failed_body.code(), "INVALID_ARGUMENT");

    // Only what is new after the cursor, each request once.
    let cursor = browser
        .network(&session, 0, &NetworkFilter::default(), usize::MAX)
        .unwrap()
        .cursor;
    ctx.eval(&session, "fetch('/article.html?later'); 1").await;
    until_requests(&ctx, &session, &["?later"]).await;
    let new = browser
        .network(&session, cursor, &NetworkFilter::default(), 100)
        .unwrap();
    assert_eq!(new.entries.len(), 1, "{:?}", new.entries);
    assert!(new.entries[0].url.ends_with("?later"));
    assert!(
        browser
            .network(&session, new.cursor, &NetworkFilter::default(), 100)
            .unwrap()
            .entries
            .is_empty()
    );

    // More requests than the cap: the oldest go, and are counted.
    ctx.eval(
        &session,
        "(async () => { for (let i = 0; i < 1100; i += 50) await Promise.all(Array.from({length: 50}, (_, j) => fetch('/status/404?n=' + (i + j)))); })(); 1",
    )
    .await;
    let mut news = browser.watch_network(&session).unwrap();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            news.borrow_and_update();
            let read = browser
                .network(&session, new.cursor, &NetworkFilter::default(), 2000)
                .unwrap();
            if read.entries.len() as u64 + read.dropped >= 1100 {
                return read;
            }
            news.changed().await.unwrap();
        }
    })
    .await
    .expect("1100 requests end within 30 s");
    assert_eq!(read.entries.len() as u64 + read.dropped, 1100);
    assert_eq!(read.entries.len(), NETWORK_CAP);
    assert_eq!(read.dropped, 100);

    // The log goes with its tab.
    let tab = browser.active_tab(&session).unwrap();
    browser.close_tab(&session, &tab).await.unwrap();
    assert_eq!(
        browser
            .network(&session, 0, &NetworkFilter::default(), 10)
            .unwrap_err()
            .code(),
        "TAB_NOT_FOUND"
    );
    browser.close_session(&session).await.unwrap();
}
