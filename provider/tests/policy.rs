//! The host policy on the wire, against a real Chromium launched with an
//! allow list of `127.0.0.1`: the fixture server is also reachable as
//! `localhost`, which the policy refuses, so every way a page reaches
//! another host is tried against it. The server records the `Host` of
//! every request it gets: proof that nothing for `localhost` reached it.

#![allow(clippy::unwrap_used)]

use browser_testkit::provider::harness as support;

use std::time::{Duration, Instant};

use browser_provider::browser::NavigationRequest;
use browser_provider::error::BlockReason;
use browser_provider::page::act::{Action, Target};
use browser_provider::page::network::NetworkFilter;
use browser_provider::page::wait::Condition;
use browser_provider::policy::{HostRules, NavigationPolicy};
use browser_provider::snapshot::Scope;
use browser_provider::{BrowserConfig, BrowserError, SessionId};
use support::{Ctx, Env, TestFn};
use tokio_util::sync::CancellationToken;

macro_rules! trials {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), (|ctx| Box::pin($name(ctx))) as TestFn)),*]
    };
}

fn main() {
    let tests = trials![
        a_redirect_to_a_refused_host_is_blocked,
        links_scripts_popups_forms_and_refreshes_stay_on_allowed_hosts,
        every_kind_of_request_to_a_refused_host_fails_at_once_and_is_logged,
        allowed_pages_work_as_before,
        a_blocked_host_inside_an_allowed_domain_is_blocked_too,
        a_session_narrows_the_policy_for_its_own_tabs_only,
    ];
    let (_, conclusion) = support::run_on_one_browser(tests, || {
        let policy = allow_loopback_ip_only();
        let launch = browser_provider::host::LaunchOptions {
            host_resolver_rules: policy.host_resolver_rules(),
            ..support::launch_options()
        };
        let config = BrowserConfig {
            policy,
            ..BrowserConfig::default()
        };
        Env::start_with(launch, config)
    });
    conclusion.exit();
}

/// `127.0.0.1` and the `allowed.localhost` domain, except for
/// `secret.allowed.localhost` (Chromium resolves every `*.localhost` to
/// the loopback address, so these all reach the fixture server).
fn allow_loopback_ip_only() -> NavigationPolicy {
    NavigationPolicy {
        allowed_hosts: vec!["127.0.0.1".into(), "allowed.localhost".into()],
        blocked_hosts: vec!["secret.allowed.localhost".into()],
        ..NavigationPolicy::default()
    }
}

/// The same fixture server under the name the policy refuses.
fn refused_origin(ctx: &Ctx) -> String {
    ctx.env.base.replace("127.0.0.1", "localhost")
}

/// No request for the refused name ever reached the server.
fn assert_never_reached(ctx: &Ctx) {
    let refused = refused_origin(ctx).trim_start_matches("http://").to_owned();
    let seen = support::hosts_seen();
    assert!(
        !seen.contains(&refused),
        "{refused} reached the server: {seen:?}"
    );
}

async fn a_redirect_to_a_refused_host_is_blocked(ctx: Ctx) {
    let browser = ctx.browser();
    let session = ctx.session().await;
    let secret = format!("{}/article.html", refused_origin(&ctx));
    let url = ctx.url(&format!("redirect-to?url={secret}"));
    let started = Instant::now();
    let error = browser
        .open(&session, &url, false, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    match &error {
        BrowserError::NavigationBlocked { url, .. } => assert_eq!(url, &secret, "{error}"),
        other => panic!("{other:?}"),
    }
    let text = browser
        .snapshot(&session, &Scope::Page, &CancellationToken::new())
        .await
        .map(|s| s.text)
        .unwrap_or_default();
    assert!(!text.contains("Barn owl"), "{text}");
    assert_never_reached(&ctx);
}

async fn links_scripts_popups_forms_and_refreshes_stay_on_allowed_hosts(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let probe = format!("policy.html?other={}", refused_origin(&ctx));
    let session = ctx.session_at(&probe).await;
    let text = browser
        .snapshot(&session, &Scope::Page, &cancel)
        .await
        .unwrap()
        .text;
    // The other host's frame is there, empty: its text never loaded.
    assert!(text.contains("The other host's frame"), "{text}");
    assert!(!text.contains("Child frame"), "{text}");
    let article = format!("{}/article.html", refused_origin(&ctx));
    for (button, goes_to) in [
        ("The other host's article", article.clone()),
        ("Go there by script", article.clone()),
        (
            "Post the form there",
            format!("{}/form.html", refused_origin(&ctx)),
        ),
        ("Refresh to it", article.clone()),
        ("Open it in a popup", article.clone()),
    ] {
        browser
            .navigate(&session, NavigationRequest::Url(&ctx.url(&probe)), &cancel)
            .await
            .unwrap();
        let text = browser
            .snapshot(&session, &Scope::Page, &cancel)
            .await
            .unwrap()
            .text;
        let report = browser
            .act(
                &session,
                &Target::Ref(ref_of(&text, button)),
                &Action::Click {
                    button: Default::default(),
                    count: 1,
                    modifiers: vec![],
                },
                &cancel,
            )
            .await
            .unwrap();
        if report.blocked.is_empty() && button == "Refresh to it" {
            // A refresh may start after the click has settled: then it is
            // not the click's outcome, but it is blocked and logged all
            // the same.
            browser
                .wait(
                    &session,
                    &Condition::Request(goes_to.clone()),
                    Duration::from_secs(5),
                    &cancel,
                )
                .await
                .unwrap();
            let log = browser
                .network(&session, 0, &NetworkFilter::default(), 100)
                .unwrap();
            let entry = log
                .entries
                .iter()
                .find(|e| e.url == goes_to)
                .unwrap_or_else(|| panic!("{log:#?}"));
            let failure = entry.failure.as_deref().unwrap_or_default();
            assert!(
                failure.starts_with("blocked by policy: localhost"),
                "{failure}"
            );
            continue;
        }
        let [blocked] = report.blocked.as_slice() else {
            panic!("{button}: {report:?}");
        };
        assert_eq!(blocked.url, goes_to, "{button}");
        assert_eq!(blocked.reason, BlockReason::HostNotAllowed, "{button}");
    }
    assert_never_reached(&ctx);
}

async fn every_kind_of_request_to_a_refused_host_fails_at_once_and_is_logged(ctx: Ctx) {
    let browser = ctx.browser();
    let probe = format!("policy.html?other={}", refused_origin(&ctx));
    let session = ctx.session_at(&probe).await;
    let results = ctx.eval(&session, "window.probe()").await;
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 6, "{results:?}");
    for result in results {
        let how = result["how"].as_str().unwrap();
        assert!(how.starts_with("failed"), "{result}");
        // At once: no hanging request (the bound is generous for 2 cores).
        assert!(result["ms"].as_u64().unwrap() < 1500, "{result}");
    }
    // What the page's own session sees is logged as blocked by policy.
    let log = browser
        .network(&session, 0, &NetworkFilter::default(), 100)
        .unwrap();
    let host = refused_origin(&ctx)
        .trim_start_matches("http://")
        .split(':')
        .next()
        .unwrap()
        .to_owned();
    for kind in ["Document", "Image", "Fetch", "XHR", "EventSource"] {
        let entry = log
            .entries
            .iter()
            .find(|e| e.resource_type == kind && e.url.starts_with(&refused_origin(&ctx)))
            .unwrap_or_else(|| panic!("no {kind} request in {log:#?}"));
        let failure = entry.failure.as_deref().unwrap_or_default();
        assert!(
            failure.starts_with(&format!("blocked by policy: {host}")),
            "{kind}: {failure}"
        );
    }
    assert_never_reached(&ctx);
}

async fn allowed_pages_work_as_before(ctx: Ctx) {
    let browser = ctx.browser();
    let session: SessionId = ctx.session_at("article.html").await;
    let text = browser
        .snapshot(&session, &Scope::Page, &CancellationToken::new())
        .await
        .unwrap()
        .text;
    assert!(text.contains("Barn owl"), "{text}");
    // A subdomain of an allowed domain is allowed.
    let sub = ctx.env.base.replace("127.0.0.1", "www.allowed.localhost");
    let (_, outcome) = browser
        .open(
            &session,
            &format!("{sub}/article.html"),
            false,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.title, "Field Guide to Owls");
}

/// Chromium's resolver rules cannot refuse a host inside an allowed domain
/// (their exclusions win), so such a host is refused per page: the page's
/// own requests and navigations, not its out-of-process frames, workers
/// or WebSockets (the README says so).
async fn a_blocked_host_inside_an_allowed_domain_is_blocked_too(ctx: Ctx) {
    let browser = ctx.browser();
    let secret = ctx
        .env
        .base
        .replace("127.0.0.1", "secret.allowed.localhost");
    let probe = format!("policy.html?other={secret}");
    let session = ctx.session_at(&probe).await;
    let _ = ctx.eval(&session, "window.probe()").await;
    let log = browser
        .network(&session, 0, &NetworkFilter::default(), 100)
        .unwrap();
    for kind in ["Image", "Fetch", "XHR", "EventSource"] {
        let entry = log
            .entries
            .iter()
            .find(|e| e.resource_type == kind && e.url.starts_with(&secret))
            .unwrap_or_else(|| panic!("no {kind} in {log:#?}"));
        assert_eq!(
            entry.failure.as_deref(),
            Some(
                "blocked by policy: secret.allowed.localhost (the host is on the blocked-hosts list)"
            ),
            "{kind}"
        );
    }
    let seen = support::requests_seen();
    assert!(
        !seen.iter().any(|(host, path)| host.starts_with("secret.")
            && (path == "/favicon.svg" || path == "/events")),
        "{seen:?}"
    );
    // An agent cannot go there either.
    let error = browser
        .navigate(
            &session,
            NavigationRequest::Url(&format!("{secret}/article.html")),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "NAVIGATION_BLOCKED");
}

/// A session's own host lists (the command line's `--block-host` on a
/// running instance) refuse its navigations and its pages' own requests,
/// explained like the browser's; other sessions do not notice; dropping
/// them frees the session again; they cannot let in what the browser
/// refuses.
async fn a_session_narrows_the_policy_for_its_own_tabs_only(ctx: Ctx) {
    let browser = ctx.browser();
    let cancel = CancellationToken::new();
    let www = ctx.env.base.replace("127.0.0.1", "www.allowed.localhost");
    let probe = format!("policy.html?other={www}");
    let narrowed = ctx.session_at(&probe).await;
    let other = ctx.session_at(&probe).await;
    let rules = HostRules {
        allowed_hosts: Vec::new(),
        blocked_hosts: vec!["www.allowed.localhost".into()],
    };
    browser.set_host_rules(&narrowed, rules).await.unwrap();

    let fetch = format!(
        "fetch({:?}, {{mode: 'no-cors'}}).then(() => 'reached', () => 'refused')",
        format!("{www}/article.html")
    );
    assert_eq!(ctx.eval(&narrowed, &fetch).await, "refused", "narrowed");
    assert_eq!(
        ctx.eval(&other, &fetch).await,
        "reached",
        "the other session"
    );
    let log = browser
        .network(&narrowed, 0, &NetworkFilter::default(), 100)
        .unwrap();
    // (The page's image from there loaded before the rules came.)
    let entry = log
        .entries
        .iter()
        .rev()
        .find(|e| e.url == format!("{www}/article.html"))
        .unwrap_or_else(|| panic!("no fetch of {www} in {log:#?}"));
    assert_eq!(
        entry.failure.as_deref(),
        Some("blocked by policy: www.allowed.localhost (the host is on the blocked-hosts list)")
    );
    let article = format!("{www}/article.html");
    let error = browser
        .navigate(&narrowed, NavigationRequest::Url(&article), &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "NAVIGATION_BLOCKED", "{error}");
    // A tab the session opens later is narrowed from its first request.
    let (_, outcome) = browser
        .open(&narrowed, &ctx.url(&probe), true, &cancel)
        .await
        .unwrap();
    assert_eq!(outcome.title, "Policy probe");
    assert_eq!(ctx.eval(&narrowed, &fetch).await, "refused", "a new tab");
    browser
        .navigate(&other, NavigationRequest::Url(&article), &cancel)
        .await
        .unwrap();

    // An allow list of its own cannot let in a host the browser refuses.
    let widening = HostRules {
        allowed_hosts: vec!["localhost".into()],
        blocked_hosts: Vec::new(),
    };
    browser.set_host_rules(&narrowed, widening).await.unwrap();
    let refused = format!("{}/article.html", refused_origin(&ctx));
    let error = browser
        .navigate(&narrowed, NavigationRequest::Url(&refused), &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "NAVIGATION_BLOCKED", "{error}");
    // ... and refuses the browser's allowed hosts it does not name (the
    // page's own, 127.0.0.1), while those it names (www.allowed.localhost
    // lies in localhost) stay reachable.
    let own_host = format!(
        "fetch({:?}).then(() => 'reached', () => 'refused')",
        ctx.url("article.html")
    );
    assert_eq!(ctx.eval(&narrowed, &own_host).await, "refused");
    assert_eq!(ctx.eval(&narrowed, &fetch).await, "reached");

    // Dropped: the session is as free as the browser allows.
    browser
        .set_host_rules(&narrowed, HostRules::default())
        .await
        .unwrap();
    assert_eq!(ctx.eval(&narrowed, &fetch).await, "reached", "dropped");
    assert_eq!(ctx.eval(&narrowed, &own_host).await, "reached", "dropped");
    browser
        .navigate(&narrowed, NavigationRequest::Url(&article), &cancel)
        .await
        .unwrap();

    let bad = HostRules {
        allowed_hosts: Vec::new(),
        blocked_hosts: vec!["not a host".into()],
    };
    let error = browser.set_host_rules(&narrowed, bad).await.unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENT", "{error}");
    assert_never_reached(&ctx);
}

fn ref_of(snapshot: &str, needle: &str) -> browser_provider::snapshot::Ref {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{snapshot}"));
    let start = line.find("[ref=").unwrap() + 5;
    line[start..].split(']').next().unwrap().parse().unwrap()
}
