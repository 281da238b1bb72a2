//! The agent's hand: where an action is about to act, for the people
//! watching. The browser column draws it over the live picture (a pointer,
//! a ripple, the target's outline, a drag path); nothing is injected into
//! the page, so pages, snapshots and screenshots never see it.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::host::ViewId;

/// One movement of the agent's hand, in the tab's viewport (CSS pixels).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gesture {
    /// The tab's view (the column draws only on the tab it shows).
    #[serde(skip)]
    pub view: ViewId,
    /// What the hand does: `click`, `double-click`, `right-click`, `hover`,
    /// `focus`, `type`, `fill`, `press`, `select`, `check`, `uncheck`,
    /// `scroll` or `drag`.
    pub kind: &'static str,
    /// Where the pointer goes.
    pub x: f64,
    /// Where the pointer goes.
    pub y: f64,
    /// The element acted on; `None` for the page itself.
    pub target: Option<ElementBox>,
    /// Where a drag ends.
    pub to: Option<Point>,
}

/// An element's box in the page's viewport (CSS pixels), after scrolling
/// it into view: what the hand outlines, and where a screenshot of that
/// element is taken.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ElementBox {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// A point in the viewport (CSS pixels).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    /// From the left edge.
    pub x: f64,
    /// From the top edge.
    pub y: f64,
}

impl Gesture {
    /// A gesture of `kind` (see [`Gesture::kind`]) at the centre of an
    /// element of `width` × `height` (zero for the page itself) around
    /// (`x`, `y`).
    pub(crate) fn of(view: &ViewId, kind: &'static str, x: f64, y: f64, size: (f64, f64)) -> Self {
        let (width, height) = size;
        let target = (width > 0.0 && height > 0.0).then(|| ElementBox {
            x: x - width / 2.0,
            y: y - height / 2.0,
            width,
            height,
        });
        Self {
            view: view.clone(),
            kind,
            x,
            y,
            target,
            to: None,
        }
    }
}

/// Where a browser's pages announce their gestures; cheap to clone.
#[derive(Debug, Clone)]
pub struct Hand {
    gestures: broadcast::Sender<Gesture>,
}

impl Default for Hand {
    fn default() -> Self {
        Self {
            gestures: broadcast::Sender::new(64),
        }
    }
}

impl Hand {
    /// Tells whoever watches (nobody, most of the time: then it costs a
    /// failed send).
    pub fn show(&self, gesture: Gesture) {
        let _ = self.gestures.send(gesture);
    }

    /// Follows the gestures of every tab.
    pub fn watch(&self) -> broadcast::Receiver<Gesture> {
        self.gestures.subscribe()
    }
}
