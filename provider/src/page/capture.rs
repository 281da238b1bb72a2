//! One picture at a time per tab.
//!
//! Chromium renders a scaled capture (`Page.captureScreenshot` with a clip
//! scale) by emulating a larger device while it lasts, and two captures at
//! once on one tab see each other's: measured on Chromium 156, a capture
//! without a clip taken during a 2× one came back at 2×, and the page read
//! `innerWidth` doubled meanwhile. So our captures of a tab (an agent's
//! screenshot, the live view's first and sharp pictures) take turns.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use crate::host::ViewId;

/// Each tab's turn, held while one of its captures runs. Entries of tabs
/// nobody captures any more are dropped on the next look-up.
static TURNS: LazyLock<Mutex<HashMap<ViewId, Weak<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Runs `capture` of `view` once no other capture of that tab runs.
pub async fn in_turn<T>(view: &ViewId, capture: impl Future<Output = T>) -> T {
    let turn = turn_of(view);
    let _held = turn.lock().await;
    capture.await
}

fn turn_of(view: &ViewId) -> Arc<tokio::sync::Mutex<()>> {
    let mut turns = TURNS.lock().unwrap_or_else(|p| p.into_inner());
    turns.retain(|_, turn| turn.strong_count() > 0);
    if let Some(turn) = turns.get(view).and_then(Weak::upgrade) {
        return turn;
    }
    let turn = Arc::new(tokio::sync::Mutex::new(()));
    turns.insert(view.clone(), Arc::downgrade(&turn));
    turn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn captures_of_one_tab_take_turns_and_others_do_not_wait() {
        let tab = ViewId("one".into());
        let other = ViewId("other".into());
        let turn = turn_of(&tab);
        let held = turn.lock().await;
        // Another tab's capture runs while this tab's turn is held.
        assert_eq!(in_turn(&other, async { 7 }).await, 7);
        let waiting =
            tokio::spawn(async move { in_turn(&ViewId("one".into()), async { 8 }).await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the second capture of a tab waits");
        drop(held);
        assert_eq!(waiting.await.unwrap(), 8);
        drop(turn);
        assert_eq!(turn_of(&tab).try_lock().map(|_| ()).ok(), Some(()));
    }
}
