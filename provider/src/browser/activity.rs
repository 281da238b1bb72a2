//! What people watching follow besides the picture: agents' calls, where
//! they act (gestures), and changes to the tab strip.

use tokio::sync::watch;

use super::{Browser, SessionId};

/// Something an agent did, for the person watching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// Which call this is, from [`Activity::next_call`]: a call's start and
    /// its end share it (two identical calls running at once stay apart).
    /// 0 for what is not a call (a dialog the page opened).
    pub call: u64,
    /// The agent session.
    pub session: SessionId,
    /// The tool, such as `browser_act`.
    pub tool: String,
    /// A short summary of the arguments.
    pub summary: String,
    /// The arguments as an audit log keeps them: typed text withheld,
    /// secrets' values hidden.
    pub arguments: String,
    /// `None` while running; then `Ok(())` or the error code.
    pub outcome: Option<std::result::Result<(), String>>,
    /// How long it took, once finished.
    pub millis: Option<u64>,
    /// Once finished, what came of it in a few words: "navigated",
    /// "+2 ~1 −0", "new tab t3", "dialog", the error code.
    pub headline: String,
    /// Once finished, the result as the agent read it (secrets hidden),
    /// cut to a few kilobytes.
    pub result: String,
}

impl Activity {
    /// A new call number, unique for the life of the process.
    pub fn next_call() -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Browser {
    /// Notifies whenever a tab opens, closes, changes hands (claimed, given,
    /// returned) or shows a new URL or title: what the tab strip shows.
    pub fn watch_tabs(&self) -> watch::Receiver<u64> {
        self.inner.tabs_changed.subscribe()
    }

    /// Reports what an agent is doing to people watching.
    pub fn record_activity(&self, activity: Activity) {
        let _ = self.inner.activity.send(activity);
    }

    /// Follows where agents act (pointer, target, drag), for the live view.
    pub fn watch_gestures(&self) -> tokio::sync::broadcast::Receiver<crate::page::hand::Gesture> {
        self.inner.hand.watch()
    }

    /// Follows agent activity.
    pub fn watch_activity(&self) -> tokio::sync::broadcast::Receiver<Activity> {
        self.inner.activity.subscribe()
    }
}
