//! The console: messages, uncaught exceptions and failed loads captured per
//! tab, read by level and by cursor, gone with the tab.

use std::time::Duration;

use browser_provider::page::console::Level;
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

/// Waits (bounded) until the tab's console has at least `count` entries.
async fn until_entries(ctx: &Ctx, session: &browser_provider::SessionId, count: u64) {
    let mut news = ctx.browser().watch_console(session).unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while *news.borrow_and_update() < count {
            news.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{count} console entries within 10 s"));
}

/// Waits (bounded) until some entry's text contains `part`.
async fn until_text(ctx: &Ctx, session: &browser_provider::SessionId, part: &str) {
    let browser = ctx.browser();
    let mut news = browser.watch_console(session).unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            news.borrow_and_update();
            let read = browser
                .console(session, 0, Level::Debug, usize::MAX)
                .unwrap();
            if read.entries.iter().any(|e| e.text.contains(part)) {
                return;
            }
            news.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("a console entry with {part:?} within 10 s"));
}

pub async fn console_messages_exceptions_and_failed_loads_are_read_by_cursor(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session_at("index.html").await;
    ctx.eval(
        &session,
        "console.log('hello', 42, {a: 1}); console.warn('careful'); console.error('bad thing'); \
         setTimeout(() => { throw new TypeError('boom'); }, 0); \
         const img = new Image(); img.src = '/status/404?missing.png'; document.body.append(img); 1",
    )
    .await;
    until_text(&ctx, &session, "TypeError: boom").await;
    until_text(&ctx, &session, "404").await;
    let all = browser.console(&session, 0, Level::Debug, 100).unwrap();
    let texts: Vec<String> = all
        .entries
        .iter()
        .map(|e| format!("{} {}", e.level.name(), e.text))
        .collect();
    assert!(
        texts.iter().any(|t| t.starts_with("info hello 42")),
        "{texts:?}"
    );
    assert!(texts.contains(&"warning careful".to_owned()), "{texts:?}");
    assert!(texts.contains(&"error bad thing".to_owned()), "{texts:?}");
    let thrown = all
        .entries
        .iter()
        .find(|e| e.text.contains("TypeError: boom"))
        .expect("the uncaught exception");
    assert_eq!(thrown.level, Level::Error);
    assert!(thrown.text.starts_with("Uncaught"), "{thrown:?}");
    assert!(
        all.entries
            .iter()
            .any(|e| e.level == Level::Error && e.text.contains("404")),
        "the failed load: {texts:?}"
    );
    assert!(all.entries.iter().all(|e| e.timestamp_ms > 0));

    // Errors only; then only what is new after the cursor.
    let errors = browser.console(&session, 0, Level::Error, 100).unwrap();
    assert!(errors.entries.iter().all(|e| e.level == Level::Error));
    let cursor = all.cursor;
    assert!(
        browser
            .console(&session, cursor, Level::Debug, 100)
            .unwrap()
            .entries
            .is_empty()
    );
    ctx.eval(&session, "console.info('later'); 1").await;
    until_text(&ctx, &session, "later").await;
    let new = browser
        .console(&session, cursor, Level::Debug, 100)
        .unwrap();
    // Nothing read before comes again, and the new message is there once
    // (the browser may report the failed load a second time meanwhile).
    assert!(
        new.entries.iter().all(|e| e.seq > cursor),
        "{:?}",
        new.entries
    );
    assert_eq!(
        new.entries.iter().filter(|e| e.text == "later").count(),
        1,
        "{:?}",
        new.entries
    );

    // A page that logs more than the cap: the oldest go, and are counted.
    ctx.eval(
        &session,
        "for (let i = 0; i < 1100; i++) console.log('line ' + i); 1",
    )
    .await;
    until_entries(&ctx, &session, new.cursor + 1100).await;
    let read = browser
        .console(&session, new.cursor, Level::Debug, 2000)
        .unwrap();
    assert_eq!(
        read.entries.len(),
        browser_provider::page::console::CONSOLE_CAP
    );
    assert_eq!(read.dropped, 100);
    assert_eq!(read.entries.last().unwrap().text, "line 1099");

    // The buffer goes with its tab.
    let tab = browser.active_tab(&session).unwrap();
    browser.close_tab(&session, &tab).await.unwrap();
    assert_eq!(
        browser
            .console(&session, 0, Level::Debug, 10)
            .unwrap_err()
            .code(),
        "TAB_NOT_FOUND"
    );
    let _ = CancellationToken::new();
    browser.close_session(&session).await.unwrap();
}
