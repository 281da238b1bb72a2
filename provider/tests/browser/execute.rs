//! Running agent JavaScript: arguments, promises, exceptions, bounds, cancellation.

use std::time::{Duration, Instant};

use browser_provider::page::execute::ExecuteResult;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

async fn run(
    ctx: &Ctx,
    session: &browser_provider::SessionId,
    script: &str,
    args: Vec<serde_json::Value>,
) -> ExecuteResult {
    ctx.browser()
        .execute(
            session,
            script,
            args,
            Some(Duration::from_secs(10)),
            &CancellationToken::new(),
        )
        .await
        .unwrap()
}

fn value(result: ExecuteResult) -> serde_json::Value {
    match result {
        ExecuteResult::Value { value, .. } => value,
        other => panic!("expected a value, got {other:?}"),
    }
}

pub async fn expressions_and_function_bodies_with_arguments(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    assert_eq!(
        value(run(&ctx, &session, "document.title", vec![]).await),
        "Field Guide to Owls"
    );
    assert_eq!(
        value(
            run(
                &ctx,
                &session,
                "arguments[0] + arguments[1]",
                vec![json!(2), json!(3)]
            )
            .await
        ),
        5
    );
    let body = "const rows = document.querySelectorAll(arguments[0]);\nreturn { count: rows.length, first: rows[0].cells[0].textContent, extra: arguments[1] };";
    assert_eq!(
        value(
            run(
                &ctx,
                &session,
                body,
                vec![json!("#species tbody tr"), json!({"nested": [1, "two"]})]
            )
            .await
        ),
        json!({"count": 2, "first": "Barn owl", "extra": {"nested": [1, "two"]}})
    );
    assert_eq!(
        value(run(&ctx, &session, "void 0", vec![]).await),
        serde_json::Value::Null
    );
}

pub async fn promises_are_awaited(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let script = "new Promise(resolve => setTimeout(() => resolve(arguments[0] * 2), 30))";
    assert_eq!(
        value(run(&ctx, &session, script, vec![json!(21)]).await),
        42
    );
    let awaiting = "const v = await Promise.resolve('done');\nreturn v + '!';";
    assert_eq!(value(run(&ctx, &session, awaiting, vec![]).await), "done!");
}

pub async fn exceptions_come_back_with_message_and_line(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let script = "const a = 1;\nconst b = 2;\nthrow new TypeError('owls are missing');";
    match run(&ctx, &session, script, vec![]).await {
        ExecuteResult::Exception {
            message,
            line,
            stack,
            ..
        } => {
            assert_eq!(message, "TypeError: owls are missing");
            assert_eq!(line, Some(3));
            assert!(stack.unwrap_or_default().contains("owls are missing"));
        }
        other => panic!("expected an exception, got {other:?}"),
    }
    match run(
        &ctx,
        &session,
        "Promise.reject(new Error('rejected'))",
        vec![],
    )
    .await
    {
        ExecuteResult::Exception { message, .. } => assert_eq!(message, "Error: rejected"),
        other => panic!("expected an exception, got {other:?}"),
    }
    match run(&ctx, &session, "throw 'plain string'", vec![]).await {
        ExecuteResult::Exception { message, .. } => assert_eq!(message, "plain string"),
        other => panic!("expected an exception, got {other:?}"),
    }
    match run(&ctx, &session, "this is not javascript", vec![]).await {
        ExecuteResult::Exception { message, .. } => {
            assert!(message.contains("SyntaxError"), "{message}")
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

pub async fn runaway_scripts_time_out_and_the_tab_recovers(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let started = Instant::now();
    let error = ctx
        .browser()
        .execute(
            &session,
            "while (true) {}",
            vec![],
            Some(Duration::from_millis(500)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TIMEOUT");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded: {:?}",
        started.elapsed()
    );
    assert_eq!(
        value(run(&ctx, &session, "1 + 1", vec![]).await),
        2,
        "the tab is usable again"
    );
}

pub async fn a_promise_that_never_settles_times_out(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let error = ctx
        .browser()
        .execute(
            &session,
            "new Promise(() => {})",
            vec![],
            Some(Duration::from_millis(300)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "TIMEOUT");
    assert_eq!(
        value(run(&ctx, &session, "'still here'", vec![]).await),
        "still here"
    );
}

/// Starts a call that waits on a promise that never settles, until
/// `cancel`; returns once the call has reached the browser (proven by a
/// round trip on the same tab).
async fn wait_forever(
    ctx: &Ctx,
    session: &browser_provider::SessionId,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Result<ExecuteResult, browser_provider::BrowserError>> {
    let browser = ctx.browser().clone();
    let running = {
        let cancel = cancel.clone();
        let session = session.clone();
        tokio::spawn(async move {
            browser
                .execute(
                    &session,
                    "new Promise(() => {})",
                    vec![],
                    Some(Duration::from_secs(60)),
                    &cancel,
                )
                .await
        })
    };
    assert_eq!(value(run(ctx, session, "'ping'", vec![]).await), "ping");
    running
}

pub async fn cancellation_aborts_at_once(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let cancel = CancellationToken::new();
    let running = wait_forever(&ctx, &session, &cancel).await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("cancellation is prompt");
    assert_eq!(result.unwrap().unwrap_err().code(), "ABORTED");
}

/// A cancelled call that waits on a promise runs no script, so nothing is
/// terminated: the page's own script, busy at that moment, runs to its
/// end (a termination sent then stopped the page's script instead, or the
/// agent's next one).
pub async fn a_cancelled_wait_leaves_the_page_s_scripts_alone(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let cancel = CancellationToken::new();
    let waiting = wait_forever(&ctx, &session, &cancel).await;
    let busy = "setTimeout(() => { const until = Date.now() + 400; \
                while (Date.now() < until) {} window.finished = true; }, 0); return 'busy'";
    assert_eq!(value(run(&ctx, &session, busy, vec![]).await), "busy");
    cancel.cancel();
    assert_eq!(waiting.await.unwrap().unwrap_err().code(), "ABORTED");
    assert_eq!(
        value(run(&ctx, &session, "window.finished === true", vec![]).await),
        true,
        "the page's script ran to its end"
    );
}

pub async fn results_are_capped_and_odd_values_described(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    match run(&ctx, &session, "'x'.repeat(2 * 1024 * 1024)", vec![]).await {
        ExecuteResult::Value {
            value, truncated, ..
        } => {
            assert!(truncated);
            assert!(value.as_str().unwrap().len() <= 256 * 1024);
        }
        other => panic!("{other:?}"),
    }
    match run(&ctx, &session, "document.querySelector('#species')", vec![]).await {
        ExecuteResult::Value {
            value,
            unserializable,
            ..
        } => {
            assert!(unserializable);
            assert_eq!(value, "DOM node <table#species>");
        }
        other => panic!("{other:?}"),
    }
    match run(
        &ctx,
        &session,
        "const a = {}; a.self = a; return a;",
        vec![],
    )
    .await
    {
        ExecuteResult::Value { unserializable, .. } => assert!(unserializable),
        other => panic!("{other:?}"),
    }
}

pub async fn bad_input_is_an_invalid_argument(ctx: Ctx) {
    let session = ctx.session_at("index.html").await;
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let error = browser
        .execute(&session, "   ", vec![], None, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
    let huge = vec![json!("y".repeat(2 * 1024 * 1024))];
    let error = browser
        .execute(&session, "arguments[0].length", huge, None, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
    assert!(error.to_string().contains("args"));
    let error = browser
        .execute(&session, "1", vec![], Some(Duration::ZERO), &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT");
}
