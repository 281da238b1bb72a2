//! A ref back to what the tab knows of it, and what to say when its
//! element is gone.

use serde::Deserialize;
use serde_json::json;

use crate::error::{BrowserError, Result, StaleReason};
use crate::page::{Budget, Page};
use crate::snapshot::tree::Fingerprint;
use crate::snapshot::{Ref, RefRecord};

/// What the tab knows of `reference`, if its document is still there.
///
/// # Errors
/// `STALE_REF` (with a likely successor) when its document was replaced;
/// `INVALID_ARGUMENT` for a ref never issued in this tab.
pub(crate) async fn live_record(
    page: &Page,
    reference: &Ref,
    budget: &Budget,
) -> Result<RefRecord> {
    let (record, retired) = {
        let state = page.agent.lock().await;
        (
            state.record(reference).cloned(),
            state.retired(reference).cloned(),
        )
    };
    match (record, retired) {
        (Some(record), _) => Ok(record),
        // Its document is gone (the page navigated or reloaded).
        (None, Some(old)) => Err(stale(
            page,
            reference,
            old.frame.as_deref(),
            &old.fingerprint,
            StaleReason::DocumentReplaced,
            budget,
        )
        .await),
        (None, None) => Err(BrowserError::invalid(
            "ref",
            format!(
                "{reference} was not issued in this tab; take a snapshot and use a ref from it"
            ),
        )),
    }
}

/// Builds a `STALE_REF` error, with a suggestion when exactly one live
/// element now has the old fingerprint.
pub(crate) async fn stale(
    page: &Page,
    reference: &Ref,
    frame: Option<&str>,
    fingerprint: &Fingerprint,
    reason: StaleReason,
    budget: &Budget,
) -> BrowserError {
    let suggestion = suggest(page, frame, fingerprint, budget)
        .await
        .unwrap_or_else(|error| {
            tracing::debug!(%error, "could not look for a replacement ref");
            None
        });
    BrowserError::StaleRef {
        reference: reference.clone(),
        role: fingerprint.role.clone(),
        name: fingerprint.name.clone(),
        reason,
        suggestion,
    }
}

/// The one live element in `frame` that now has `fingerprint`, handed out
/// as a new ref and recorded; `None` when there is none or several.
async fn suggest(
    page: &Page,
    frame: Option<&str>,
    fingerprint: &Fingerprint,
    budget: &Budget,
) -> Result<Option<Ref>> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Suggestion {
        next_ref: u64,
        #[serde(rename = "ref")]
        reference: Option<Ref>,
        doc: Option<String>,
    }
    let mut state = page.agent.lock().await;
    let expression = format!(
        "Object.assign(__browserShell.suggest({}, {}), {{ doc: __browserShell.doc }})",
        json!(fingerprint),
        state.next_ref()
    );
    let value = page
        .world(frame)
        .evaluate(page, budget, &expression)
        .await?;
    let found: Suggestion =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("unexpected suggestion shape: {e}"),
        })?;
    state.advance(found.next_ref);
    if let (Some(reference), Some(doc)) = (&found.reference, found.doc) {
        state.remember(
            reference,
            frame.map(str::to_owned),
            doc,
            fingerprint.clone(),
        );
    }
    Ok(found.reference)
}
