//! What the steps of the act pipeline share: what to act on, the actions,
//! and the element that passed every check. Depends on nothing else of
//! `act`, so every step can use it and the pipeline (`act/mod.rs`) sits
//! on top of them all.

use crate::error::{BrowserError, Result};
use crate::page::{Budget, Page};
use crate::snapshot::Ref;

/// What to act on.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A ref from a snapshot of this tab.
    Ref(Ref),
    /// The page itself (for `scroll` and `press` without an element).
    Page,
    /// Exactly one element with this role and accessible name.
    Role {
        /// The role, such as `button`.
        role: String,
        /// The exact accessible name.
        name: String,
    },
    /// A point of the page's viewport in CSS pixels (as the last
    /// screenshot shows it), for what has no element to name: a canvas, a
    /// map tile, a chart. Click, hover, scroll and drag (from or to) only.
    Point {
        /// Pixels from the viewport's left edge.
        x: f64,
        /// Pixels from the viewport's top edge.
        y: f64,
    },
}

/// Mouse buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MouseButton {
    /// The primary button.
    #[default]
    Left,
    /// The secondary button (context menu).
    Right,
    /// The wheel button.
    Middle,
}

/// The actions.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Click (or double-click with `count: 2`) with optional held modifiers.
    Click {
        /// Which button.
        button: MouseButton,
        /// Clicks in a row.
        count: u32,
        /// Held modifiers, such as `Shift`.
        modifiers: Vec<String>,
    },
    /// Move the mouse over the element.
    Hover,
    /// Give the element keyboard focus.
    Focus,
    /// Append text to an editable element; `submit` presses Enter after.
    Type {
        /// The text.
        text: String,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// Replace an editable element's content; `submit` presses Enter after.
    Fill {
        /// The new content.
        text: String,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// Press keys or chords in order, such as `["Control+A", "Delete"]`.
    Press {
        /// The keys.
        keys: Vec<String>,
    },
    /// Choose options of a select by value or label.
    Select {
        /// Values or labels.
        values: Vec<String>,
    },
    /// Make a checkbox or radio checked.
    Check,
    /// Make a checkbox unchecked.
    Uncheck,
    /// Scroll the element into view.
    ScrollIntoView,
    /// Scroll by a distance in CSS pixels (mouse wheel over the element, or
    /// over the middle of the page for [`Target::Page`]).
    Scroll {
        /// Rightwards distance.
        dx: f64,
        /// Downwards distance.
        dy: f64,
    },
    /// Drag the element onto another.
    Drag {
        /// Where to drop it.
        to: Target,
    },
}

impl Action {
    /// The action's name, as errors and the page-side checks use it.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::Click { .. } => "click",
            Self::Hover => "hover",
            Self::Focus => "focus",
            Self::Type { .. } => "type",
            Self::Fill { .. } => "fill",
            Self::Press { .. } => "press",
            Self::Select { .. } => "select",
            Self::Check => "check",
            Self::Uncheck => "uncheck",
            Self::ScrollIntoView | Self::Scroll { .. } => "scroll",
            Self::Drag { .. } => "drag",
        }
    }

    /// Whether the page answers this action in its next frame (scroll
    /// events are fired there, and keys and drags may scroll): the look
    /// after it then waits for that frame even on a page that asked for none.
    pub(super) fn comes_with_a_frame(&self) -> bool {
        matches!(
            self,
            Self::Scroll { .. } | Self::ScrollIntoView | Self::Press { .. } | Self::Drag { .. }
        )
    }

    /// The word the people watching see for the action's gesture (see
    /// [`Gesture::kind`](crate::page::hand::Gesture::kind)).
    pub(super) fn gesture(&self) -> &'static str {
        match self {
            Self::Click {
                button: MouseButton::Right,
                ..
            } => "right-click",
            Self::Click { count, .. } if *count >= 2 => "double-click",
            // Every other gesture is the action's own name.
            other => other.name(),
        }
    }
}

/// An element that passed every check: where it lives and where to act.
#[derive(Debug)]
pub(super) struct Ready {
    /// Its ref; `None` for the page itself.
    pub(super) reference: Option<Ref>,
    /// Its out-of-process frame, if any.
    pub(super) frame: Option<String>,
    /// The action point in the page's viewport (CSS pixels).
    pub(super) x: f64,
    /// The action point in the page's viewport (CSS pixels).
    pub(super) y: f64,
    /// The element's box size (CSS pixels); zero for the page itself.
    pub(super) width: f64,
    /// The element's box size (CSS pixels); zero for the page itself.
    pub(super) height: f64,
    /// For `type` and `fill` on a code editor: which kind (`monaco`,
    /// `codemirror5`, …) and whether it had the focus before (then typing
    /// goes to its caret; otherwise at the end of its text).
    pub(super) editor: Option<EditorFocus>,
}

/// A code editor whose hidden input took the focus for typing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EditorFocus {
    /// The editor library, as the page-side script recognised it.
    pub(super) kind: String,
    /// Whether the editor already had the focus (its caret is where the
    /// agent or a person left it).
    pub(super) was_focused: bool,
}

/// Evaluates `expression` in our isolated world in `frame` (the main
/// frame with `None`), where the element's ref is known.
pub(super) async fn world_call(
    page: &Page,
    frame: Option<&str>,
    budget: &Budget,
    expression: &str,
) -> Result<serde_json::Value> {
    page.world(frame).evaluate(page, budget, expression).await
}

impl Ready {
    /// The element's ref, for the steps that act on an element (every
    /// action but a scroll or key press on the page itself).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for the page itself.
    pub(super) fn element(&self) -> Result<&Ref> {
        self.reference
            .as_ref()
            .ok_or_else(|| BrowserError::invalid("ref", "this action needs an element"))
    }
}
