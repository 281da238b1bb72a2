//! One viewer's WebSocket: frames out (with flow control), state and
//! activity out, input and control requests in.
//!
//! Flow control: a viewer holds at most two frames in flight; it sends an
//! `ack` for each frame it has drawn. A slow viewer simply skips frames
//! (latest wins) and never slows the browser or other viewers.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use browser_provider::TabHandle;
use browser_provider::browser::NavigationRequest;
use browser_provider::cdp::protocol::{
    InputDispatchKeyEvent, InputDispatchMouseEvent, InputImeSetComposition, InputInsertText,
};
use browser_provider::control::Holder;
use browser_provider::host::ViewHostExt;
use browser_provider::page::screencast::Frame;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;

use super::live::LiveView;
use super::timeline::Timeline;

/// Timeline entries a viewer gets when it connects.
const HISTORY: usize = 100;

/// Frames a viewer may have in flight before it acknowledges one.
const CREDITS: u32 = 2;

/// What a viewer sends.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum FromViewer {
    /// A frame was drawn.
    Ack,
    /// The viewer's picture area, in device pixels (frames are sized for
    /// it); with `fit` (the desktop window), pages are sized to it too, in
    /// CSS pixels.
    Viewport {
        width: u32,
        height: u32,
        #[serde(default)]
        fit: bool,
        #[serde(default, rename = "cssWidth")]
        css_width: u32,
        #[serde(default, rename = "cssHeight")]
        css_height: u32,
    },
    /// Show this tab.
    Show { tab: String },
    /// Take control (Take over / Stop).
    Takeover,
    /// Give control back to the agents (Return control / Done).
    Return,
    /// Mouse input at a position given as fractions of the picture.
    Mouse {
        kind: String,
        x: f64,
        y: f64,
        #[serde(default)]
        button: String,
        #[serde(default)]
        clicks: u32,
        #[serde(default)]
        dx: f64,
        #[serde(default)]
        dy: f64,
    },
    /// A key going down or up.
    Key {
        kind: String,
        key: String,
        code: String,
        #[serde(rename = "keyCode", default)]
        key_code: u32,
        #[serde(default)]
        text: String,
    },
    /// Text to insert (paste, an input method's committed text).
    Text { text: String },
    /// An input method's text being composed (not yet committed); empty
    /// cancels. The caret is at `caret` characters into it.
    Compose {
        text: String,
        #[serde(default)]
        caret: Option<u32>,
    },
    /// Open a tab for the person (it belongs to no agent) and show it.
    NewTab {
        #[serde(default)]
        url: String,
    },
    /// Close a tab (any: the person is in charge).
    CloseTab { tab: String },
    /// Hand one of the person's tabs to an agent session.
    Give { tab: String, session: String },
    /// The address bar: a URL, or back / forward / reload, for a tab.
    Navigate {
        tab: String,
        #[serde(default)]
        url: String,
        #[serde(default)]
        action: String,
    },
}

/// Serves one viewer until it disconnects.
pub async fn run(socket: WebSocket, live: Arc<LiveView>, timeline: Arc<Timeline>, view_only: bool) {
    let (mut outgoing, mut incoming) = socket.split();
    let browser = live.browser().clone();
    let mut frames = live.watch_frames();
    let mut control = browser.watch_control();
    let mut tabs = browser.watch_tabs();
    let mut shown = live.watch_shown();
    let mut activity = timeline.watch();
    let mut gestures = browser.watch_gestures();
    let mut handoff = browser.watch_handoff();
    let mut lifecycle = browser.watch_browser();
    let slot = live.join();
    let mut credits = CREDITS;
    let mut pending = frames.borrow().is_some();
    let mut last_frame: Option<Arc<Frame>> = None;
    // Whether the last state named a shown tab. The column clears its
    // picture when none is shown (a restart, the last tab closed); when one
    // is shown again, the latest frame goes out again, or a still page
    // would leave the picture empty.
    let Ok(mut showing) = send_state(&mut outgoing, &live, view_only).await else {
        return;
    };
    // What happened before this viewer came, for a person who was away.
    let history = timeline.entries();
    for entry in history.iter().skip(history.len().saturating_sub(HISTORY)) {
        let message = entry.to_message().to_string();
        if outgoing.send(Message::Text(message.into())).await.is_err() {
            return;
        }
    }
    loop {
        if pending && credits > 0 {
            let frame = frames.borrow_and_update().clone();
            pending = false;
            if let Some(frame) = frame {
                credits -= 1;
                let meta = json!({"type": "frame", "cssWidth": frame.css_width, "cssHeight": frame.css_height, "sequence": frame.sequence});
                if outgoing
                    .send(Message::Text(meta.to_string().into()))
                    .await
                    .is_err()
                    || outgoing
                        .send(Message::Binary(frame.jpeg.clone().into()))
                        .await
                        .is_err()
                {
                    return;
                }
                live.count_frame_sent();
                last_frame = Some(frame);
            }
        }
        let mut state_changed = false;
        tokio::select! {
            message = incoming.next() => {
                let Some(Ok(message)) = message else { return };
                let Message::Text(text) = message else { continue };
                let Ok(request) = serde_json::from_str::<FromViewer>(text.as_str()) else {
                    tracing::debug!("ignoring a malformed viewer message");
                    continue;
                };
                match request {
                    FromViewer::Ack => credits = (credits + 1).min(CREDITS),
                    FromViewer::Viewport { width, height, fit, css_width, css_height } => {
                        // Device pixels per CSS pixel; 1 when the viewer did not say.
                        let pixel_ratio = if css_width == 0 { 1.0 } else { f64::from(width) / f64::from(css_width) };
                        slot.resize(width, height, pixel_ratio);
                        if fit && !view_only {
                            live.fit_pages(css_width, css_height);
                        }
                    }
                    // Watching only: nothing that changes what others see or the page.
                    _ if view_only => {}
                    FromViewer::Show { tab } => live.show(&tab).await,
                    FromViewer::Takeover => {
                        browser.take_control();
                    }
                    FromViewer::Return => {
                        browser.return_control();
                    }
                    FromViewer::NewTab { .. }
                    | FromViewer::CloseTab { .. }
                    | FromViewer::Give { .. }
                    | FromViewer::Navigate { .. } => {
                        let reply = manage_tabs(&live, request).await;
                        if let Err(error) = reply {
                            let message = json!({"type": "error", "code": error.code(), "message": error.to_string()});
                            if outgoing.send(Message::Text(message.to_string().into())).await.is_err() { return; }
                        }
                    }
                    input => forward_input(&live, last_frame.as_deref(), input).await,
                }
            }
            changed = frames.changed() => {
                if changed.is_err() { return; }
                pending = true;
            }
            _ = control.changed() => state_changed = true,
            _ = tabs.changed() => state_changed = true,
            _ = shown.changed() => state_changed = true,
            _ = handoff.changed() => state_changed = true,
            changed = async {
                match lifecycle.as_mut() {
                    Some(state) => state.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            } => {
                if !changed { return; }
                state_changed = true;
            }
            gesture = gestures.recv() => {
                // Only the shown tab's: the column draws over its picture.
                let gesture = match gesture {
                    Ok(gesture) => gesture,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    // The browser this viewer holds is gone: nothing more comes.
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                if live.shown().as_ref() != Some(&gesture.view) { continue }
                let mut message = json!(gesture);
                message["type"] = json!("hand");
                if outgoing.send(Message::Text(message.to_string().into())).await.is_err() { return; }
            }
            entry = activity.recv() => {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let message = entry.to_message().to_string();
                if outgoing.send(Message::Text(message.into())).await.is_err() { return; }
            }
        }
        if state_changed {
            let Ok(now) = send_state(&mut outgoing, &live, view_only).await else {
                return;
            };
            pending |= now && !showing;
            showing = now;
        }
    }
}

/// Sends the column's state; answers whether it names a shown tab.
async fn send_state<S>(
    outgoing: &mut S,
    live: &LiveView,
    view_only: bool,
) -> Result<bool, axum::Error>
where
    S: SinkExt<Message, Error = axum::Error> + Unpin,
{
    let shown = live.shown();
    let tabs = live.tabs().await;
    let showing = tabs.iter().any(|t| Some(&t.view) == shown.as_ref());
    let tabs: Vec<serde_json::Value> = tabs
        .into_iter()
        .map(|t| json!({"handle": t.handle.as_str(), "session": t.session.as_ref().map(|s| s.as_str()), "title": t.title, "url": t.url, "icon": t.icon, "external": t.external, "crashed": t.crashed, "shown": Some(&t.view) == shown.as_ref()}))
        .collect();
    let control = live.browser().control();
    let holder = match control.holder {
        Holder::Agent => "agent",
        Holder::Human => "human",
    };
    let handoff = live
        .browser()
        .watch_handoff()
        .borrow()
        .as_ref()
        .map(|request| request.reason.clone());
    let sessions: Vec<String> = live
        .browser()
        .sessions()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    let state = json!({"type": "state", "holder": holder, "epoch": control.epoch, "viewOnly": view_only, "tabs": tabs, "sessions": sessions, "handoff": handoff, "browser": live.browser_status()});
    outgoing
        .send(Message::Text(state.to_string().into()))
        .await?;
    Ok(showing)
}

/// The tab strip and address bar: the person opens, closes, hands over
/// and navigates tabs. Navigating the shown tab is input to it, so it
/// takes control like any other input.
async fn manage_tabs(live: &LiveView, request: FromViewer) -> browser_provider::Result<()> {
    let browser = live.browser();
    match request {
        FromViewer::NewTab { url } => {
            if !browser.host().opens_person_tabs() {
                return Err(browser_provider::BrowserError::invalid(
                    "tab",
                    "in your own Chrome, open tabs in Chrome itself (and share them in the extension)",
                ));
            }
            let url = if url.trim().is_empty() {
                "about:blank"
            } else {
                url.trim()
            };
            // Refused URLs are reported now; loading must not hold up this
            // viewer's input (the live view shows the new tab at once).
            browser.config().policy.check(url)?;
            let browser = browser.clone();
            let url = url.to_owned();
            tokio::spawn(async move {
                if let Err(error) = browser.open_person_tab(&url).await {
                    tracing::debug!(%error, "the person's new tab did not load");
                }
            });
        }
        FromViewer::CloseTab { tab } => {
            browser.close_any_tab(&TabHandle::parse(&tab)?).await?;
        }
        FromViewer::Give { tab, session } => {
            let session = browser
                .sessions()
                .into_iter()
                .find(|s| s.as_str() == session)
                .ok_or(browser_provider::BrowserError::SessionNotFound { session })?;
            browser.give_tab(&TabHandle::parse(&tab)?, &session)?;
        }
        FromViewer::Navigate { tab, url, action } => {
            let target = match action.as_str() {
                "back" => NavigationRequest::Back,
                "forward" => NavigationRequest::Forward,
                "reload" => NavigationRequest::Reload,
                _ => NavigationRequest::Url(url.trim()),
            };
            if browser.control().holder == Holder::Agent {
                browser.take_control();
            }
            browser
                .person_navigate(&TabHandle::parse(&tab)?, target)
                .await?;
        }
        _ => {}
    }
    Ok(())
}

/// Human input: it takes control first, then goes to the shown tab as
/// trusted input events, positions scaled from the picture to CSS pixels.
async fn forward_input(live: &LiveView, frame: Option<&Frame>, input: FromViewer) {
    let Some(view) = live.shown() else { return };
    let browser = live.browser();
    if browser.control().holder == Holder::Agent {
        browser.take_control();
    }
    let host = browser.host();
    let result = match input {
        FromViewer::Mouse {
            kind,
            x,
            y,
            button,
            clicks,
            dx,
            dy,
        } => {
            let Some(frame) = frame else { return };
            let kind = match kind.as_str() {
                "down" => "mousePressed",
                "up" => "mouseReleased",
                "wheel" => "mouseWheel",
                _ => "mouseMoved",
            };
            let button = match button.as_str() {
                "left" => "left",
                "right" => "right",
                "middle" => "middle",
                _ => "none",
            };
            let wheel = kind == "mouseWheel";
            host.call(
                &view,
                &InputDispatchMouseEvent {
                    kind,
                    x: x.clamp(0.0, 1.0) * frame.css_width,
                    y: y.clamp(0.0, 1.0) * frame.css_height,
                    button,
                    click_count: clicks,
                    delta_x: wheel.then_some(dx),
                    delta_y: wheel.then_some(dy),
                    ..InputDispatchMouseEvent::default()
                },
            )
            .await
            .map(|_| ())
        }
        FromViewer::Key {
            kind,
            key,
            code,
            key_code,
            text,
        } => {
            let down = kind == "down";
            let text = (down && !text.is_empty()).then_some(text);
            let kind = match (down, text.is_some()) {
                (true, true) => "keyDown",
                (true, false) => "rawKeyDown",
                (false, _) => "keyUp",
            };
            host.call(
                &view,
                &InputDispatchKeyEvent {
                    kind,
                    key,
                    code,
                    windows_virtual_key_code: key_code,
                    text,
                    ..InputDispatchKeyEvent::default()
                },
            )
            .await
            .map(|_| ())
        }
        FromViewer::Text { text } => host
            .call(&view, &InputInsertText { text })
            .await
            .map(|_| ()),
        FromViewer::Compose { text, caret } => {
            // Offsets count UTF-16 code units, as the page's own do.
            let length = u32::try_from(text.encode_utf16().count()).unwrap_or(u32::MAX);
            let caret = caret.unwrap_or(length).min(length);
            host.call(
                &view,
                &InputImeSetComposition {
                    text,
                    selection_start: caret,
                    selection_end: caret,
                },
            )
            .await
            .map(|_| ())
        }
        _ => Ok(()),
    };
    if let Err(error) = result {
        tracing::debug!(%error, "viewer input was not delivered");
    }
}
