//! Drag and drop as libraries build it.
//!
//! A person presses on the element, moves past the threshold at which
//! libraries (and Chrome) take the press for a drag, carries it over to the
//! target and lets go. Pages build that in one of two ways, and the drag
//! serves both:
//! - **pointer and mouse events** (boards, sortable lists, sliders, maps):
//!   the mouse moves in steps, with animation frames between some of them,
//!   since libraries that animate or throttle look once a frame;
//! - **HTML5 drag and drop** (`draggable`, `dragstart`/`dragover`/`drop`
//!   with a `DataTransfer`): once the page starts such a drag, Chrome would
//!   hand it to the operating system, where no further CDP mouse event
//!   reaches it. The drag is intercepted instead (`Input.setInterceptDrags`)
//!   and carried on with `Input.dispatchDragEvent` (enter, over, drop) with
//!   the data the page put in, as Playwright does.

use std::time::Duration;

use super::kinds::{Action, Ready, Target, world_call};
use super::pointer::mouse;
use super::resolve::{element_at, prepare, resolve_target};
use crate::cdp::EventStream;
use crate::cdp::protocol::{DragData, InputDispatchDragEvent, InputSetInterceptDrags};
use crate::error::Result;
use crate::page::hand::{Gesture, Point};
use crate::page::{Budget, Page};
use crate::snapshot::{Ref, SnapshotLimits};

/// Distances (CSS pixels, each axis) of the first moves after the press:
/// past Chrome's drag threshold (4 px) and the activation distance pointer
/// libraries commonly ask for (5–10 px).
const THRESHOLD_MOVES: [f64; 2] = [5.0, 10.0];

/// Moves from the threshold to the target, a frame apart.
const STEPS: u32 = 6;

/// Frames the drag is held over the target before it is let go.
const HOLD_FRAMES: u32 = 3;

/// How long the page may take to hand Chrome the data of a drag it started.
const INTERCEPT_BOUND: Duration = Duration::from_millis(1_000);

/// The left button, as `Input.dispatchMouseEvent`'s `buttons` mask says it.
const LEFT_HELD: u32 = 1;

/// Where a drag goes.
enum Drop {
    /// Onto an element (its action point, once it is in view).
    On(Ref),
    /// At a point of the viewport.
    Point(f64, f64),
}

/// Presses on the element, moves past the drag threshold, carries it onto
/// `to` (prepared once the press is down, as a person finds the target
/// while holding) and lets go there.
pub(super) async fn drag(
    page: &Page,
    ready: &Ready,
    action: &Action,
    to: &Target,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<()> {
    let (x, y) = (ready.x, ready.y);
    // A point to drop at is checked before the press (it must be in the
    // viewport); an element is found now and prepared once the press is down.
    let destination = match to {
        Target::Point { x, y } => {
            element_at(page, *x, *y, budget).await?;
            Drop::Point(*x, *y)
        }
        _ => Drop::On(resolve_target(page, to, limits, budget).await?),
    };
    let mut events = page.events().await?;
    mouse(page, "mouseMoved", x, y, "none", 0, budget).await?;
    mouse(page, "mousePressed", x, y, "left", LEFT_HELD, budget).await?;
    world_call(page, None, budget, "__browserShell.watchDragStart()").await?;
    page.call(budget, &InputSetInterceptDrags { enabled: true })
        .await?;
    let intercepted = threshold_moves(page, &mut events, x, y, budget).await;
    page.call(budget, &InputSetInterceptDrags { enabled: false })
        .await?;
    let html5 = intercepted?;
    tracing::debug!(html5 = html5.is_some(), "drag past the threshold");

    let (to_x, to_y) = match &destination {
        Drop::Point(x, y) => (*x, *y),
        Drop::On(reference) => {
            let drop_at = prepare(page, reference, "drag", budget).await?;
            (drop_at.x, drop_at.y)
        }
    };
    page.show_gesture(Gesture {
        to: Some(Point { x: to_x, y: to_y }),
        ..Gesture::of(
            page.view(),
            action.gesture(),
            x,
            y,
            (ready.width, ready.height),
        )
    });
    let (from_x, from_y) = (x + THRESHOLD_MOVES[1], y + THRESHOLD_MOVES[1]);
    let along = |step: u32| {
        let t = f64::from(step) / f64::from(STEPS);
        (from_x + (to_x - from_x) * t, from_y + (to_y - from_y) * t)
    };
    match html5 {
        Some(data) => {
            let drag_event = |kind: &'static str, (x, y): (f64, f64)| InputDispatchDragEvent {
                kind,
                x,
                y,
                data: data.clone(),
                modifiers: 0,
            };
            page.call(budget, &drag_event("dragEnter", (from_x, from_y)))
                .await?;
            for step in 1..=STEPS {
                page.call(budget, &drag_event("dragOver", along(step)))
                    .await?;
                next_frame(page, budget).await?;
            }
            // Held over the target a little, as a hand is: lists that move
            // items out of the way ignore the next events for a moment
            // (SortableJS: 30 ms) and place the dragged one on a later one.
            for _ in 0..HOLD_FRAMES {
                page.call(budget, &drag_event("dragOver", (to_x, to_y)))
                    .await?;
                next_frame(page, budget).await?;
            }
            page.call(budget, &drag_event("drop", (to_x, to_y))).await?;
            Ok(())
        }
        None => {
            for step in 1..=STEPS {
                let (step_x, step_y) = along(step);
                mouse(
                    page,
                    "mouseMoved",
                    step_x,
                    step_y,
                    "left",
                    LEFT_HELD,
                    budget,
                )
                .await?;
                next_frame(page, budget).await?;
            }
            for _ in 0..HOLD_FRAMES {
                mouse(page, "mouseMoved", to_x, to_y, "left", LEFT_HELD, budget).await?;
                next_frame(page, budget).await?;
            }
            mouse(page, "mouseReleased", to_x, to_y, "left", 0, budget).await
        }
    }
}

/// Waits for the page's next animation frame: libraries that animate or
/// throttle a drag look once a frame, and a person's hand moves no faster.
async fn next_frame(page: &Page, budget: &Budget) -> Result<()> {
    world_call(page, None, budget, "__browserShell.frames(1)").await?;
    Ok(())
}

/// The first moves while the button is held; if the page started an HTML5
/// drag with them, the drag's data (which Chrome gave us instead of the
/// operating system).
async fn threshold_moves(
    page: &Page,
    events: &mut EventStream,
    x: f64,
    y: f64,
    budget: &Budget,
) -> Result<Option<DragData>> {
    for distance in THRESHOLD_MOVES {
        mouse(
            page,
            "mouseMoved",
            x + distance,
            y + distance,
            "left",
            LEFT_HELD,
            budget,
        )
        .await?;
    }
    let started = world_call(page, None, budget, "__browserShell.dragStarted()").await?;
    if started.as_bool() != Some(true) {
        return Ok(None);
    }
    let wait = async {
        while let Some(event) = events.recv().await {
            if event.method == "Input.dragIntercepted" {
                // (Data Chrome cannot describe is no drag we can carry.)
                return serde_json::from_value(event.params["data"].clone()).ok();
            }
        }
        None
    };
    Ok(
        tokio::time::timeout(INTERCEPT_BOUND.min(budget.remaining()), wait)
            .await
            .ok()
            .flatten(),
    )
}
