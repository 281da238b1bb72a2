//! Prints a snapshot of a URL (a quick look at what the model sees).
//! Usage: cargo run -p browser-provider --example snap -- URL [CSS-selector]

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Arc;

use browser_provider::host::{ChromiumHost, LaunchOptions};
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserConfig};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: snap URL [selector]");
    let scope = args.next().map_or(Scope::Page, Scope::Selector);
    let host = Arc::new(
        ChromiumHost::launch(LaunchOptions::default())
            .await
            .unwrap(),
    );
    let browser = Browser::new(host.clone(), BrowserConfig::default());
    let cancel = CancellationToken::new();
    let session = browser.open_session(Default::default()).await.unwrap();
    browser.open(&session, &url, false, &cancel).await.unwrap();
    let snapshot = browser.snapshot(&session, &scope, &cancel).await.unwrap();
    println!(
        "{} — {} (generation {}, {} bytes, {} omitted)",
        snapshot.title,
        snapshot.url,
        snapshot.generation,
        snapshot.text.len(),
        snapshot.omitted
    );
    print!("{}", snapshot.text);
    host.shutdown().await;
}
