//! The agent's side of the person's Chrome: an [`ExtensionHost`] of the
//! test's own, paired with the extension in [`Person`]'s Chrome as a
//! person pairs it, and waits on who holds control.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use browser_provider::browser::{Browser, BrowserConfig};
use browser_provider::control::{ControlState, Holder};
use browser_provider::host::extension::bridge::BridgeConfig;
use browser_provider::host::extension::pairing::Pairing;
use browser_provider::host::{ExtensionHost, ExtensionOptions};
use tokio::sync::watch;

use crate::person::{Person, extension_id};

/// A host and browser of their own on a free port, paired with `person`'s
/// extension through its pairing page, once the extension connected.
pub async fn paired(person: &Person) -> (Arc<ExtensionHost>, Browser, Pairing) {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let pairing = Pairing::generate(port).unwrap();
    let host = Arc::new(
        ExtensionHost::start(ExtensionOptions {
            bridge: Some(BridgeConfig {
                address: SocketAddr::from(([127, 0, 0, 1], port)),
                pairing: pairing.clone(),
                extension_ids: vec![extension_id().into()],
                shell: format!("test-shell-{port}"),
            }),
            native: None,
            setup: Some(format!("paired on 127.0.0.1:{port}")),
            command_timeout: Duration::from_secs(10),
        })
        .await
        .expect("start the extension host"),
    );
    person.pair(&pairing.link()).await;
    if host.connected(Duration::from_secs(15)).await.is_err() {
        let targets = person
            .cdp
            .send(None, "Target.getTargets", serde_json::json!({}))
            .await;
        let storage = person
            .in_popup("chrome.storage.local.get().then(x => JSON.stringify(x))")
            .await;
        let status = person
            .in_popup("chrome.runtime.sendMessage({type:'status'}).then(x => JSON.stringify(x))")
            .await;
        panic!("the extension did not connect once paired:\n{targets:?}\n{storage}\n{status}");
    }
    let browser = Browser::new(host.clone(), BrowserConfig::default());
    (host, browser, pairing)
}

/// Waits (5 s) until `holder` holds control; `what` names what should have
/// moved it, for the failure message.
pub async fn control_goes_to(
    control: &mut watch::Receiver<ControlState>,
    holder: Holder,
    what: &str,
) {
    tokio::time::timeout(
        Duration::from_secs(5),
        control.wait_for(|c| c.holder == holder),
    )
    .await
    .unwrap_or_else(|_| panic!("{what}: control did not go to {holder:?} within 5 s"))
    .expect("the control state is still watched");
}

/// The person presses "Let agents go on" in the popup; waits until the
/// agent holds control again.
pub async fn let_agents_go_on(person: &Person, control: &mut watch::Receiver<ControlState>) {
    person.press_in_popup(None, "#resume").await;
    control_goes_to(control, Holder::Agent, "Let agents go on").await;
}

#[cfg(test)]
mod tests {
    /// The id the kit derives from the manifest's key is the one the
    /// provider expects the extension to have.
    #[test]
    fn the_extension_id_is_the_provider_s() {
        assert_eq!(
            crate::person::extension_id(),
            browser_provider::host::extension::protocol::EXTENSION_ID
        );
    }
}
