//! The live view: which tab the people watching see, and its frames.
//!
//! One screencast runs for the shown tab, however many viewers there are;
//! frames go out latest-frame-wins, sized for the largest viewer (no
//! bigger than it can show, so small viewers cost the browser less). It
//! follows newly opened tabs; when the shown tab closes, the newest is
//! shown instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use browser_provider::cdp::protocol::EmulationSetDeviceMetricsOverride;
use browser_provider::host::{ViewHostExt, ViewId};
use browser_provider::page::screencast::{self, Frame, Screencast, ScreencastOptions};
use browser_provider::{Browser, LiveTab};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Pause before trying again to stream a tab that refused.
const RETRY: std::time::Duration = std::time::Duration::from_millis(250);

/// The shown tab and its frames, shared by every viewer.
#[derive(Debug)]
pub struct LiveView {
    browser: Browser,
    /// The tab people see; `None` until an agent opens one.
    shown: watch::Sender<Option<ViewId>>,
    /// The latest frame of the shown tab.
    frames: watch::Sender<Option<Arc<Frame>>>,
    /// Each viewer's picture, by viewer number.
    viewer_sizes: Mutex<HashMap<u64, Picture>>,
    /// The frames the screencast should send: the largest viewer's size,
    /// the sharpest viewer's pixel ratio.
    frame_size: watch::Sender<Picture>,
    /// Numbers for viewers.
    next_viewer: AtomicU64,
    /// Frames sent to viewers, all together (for `/status`).
    frames_sent: AtomicU64,
    /// Viewers connected now.
    viewers: AtomicUsize,
    /// The tab the latest frame shows (it lags the shown tab briefly).
    pictured: Mutex<Option<ViewId>>,
    /// The viewport every tab gets (CSS pixels) when the desktop window
    /// asks for pages sized to it; `None`: pages keep their own size.
    page_size: watch::Sender<Option<(u32, u32)>>,
    /// The tab list last read from the browser (see [`LiveView::tabs`]).
    last_tabs: Mutex<Vec<LiveTab>>,
    /// Bumped whenever something `/status` reports changes (viewers,
    /// frames sent, the pictured tab, tabs, control), for waiting on it.
    status: watch::Sender<u64>,
}

/// What a screencast was started for: the frames, and the page size the
/// desktop window asked for.
type StreamedAs = (Picture, Option<(u32, u32)>);

/// A viewer's picture area, or what frames must fill for all of them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Picture {
    /// Width in device pixels.
    width: u32,
    /// Height in device pixels.
    height: u32,
    /// Device pixels per CSS pixel of the viewer's screen.
    pixel_ratio: f64,
}

impl Picture {
    /// Room for both.
    fn fitting(self, other: Self) -> Self {
        Self {
            width: self.width.max(other.width),
            height: self.height.max(other.height),
            pixel_ratio: self.pixel_ratio.max(other.pixel_ratio),
        }
    }
}

/// Frames when no viewer said how big it is.
const DEFAULT_FRAME_SIZE: Picture = Picture {
    width: 1280,
    height: 1280,
    pixel_ratio: 1.0,
};
/// Bounds on the pixel ratio a viewer may ask for.
const LARGEST_PIXEL_RATIO: f64 = 3.0;
/// Bounds on the frame size a viewer may ask for.
const SMALLEST_FRAME: u32 = 320;
/// See [`SMALLEST_FRAME`].
const LARGEST_FRAME: u32 = 2560;

/// A viewer's place in the frame-size choice; leaves it when dropped.
#[derive(Debug)]
pub struct ViewerSlot {
    live: Arc<LiveView>,
    id: u64,
}

impl ViewerSlot {
    /// The viewer's picture is now `width` × `height` device pixels, on a
    /// screen of `pixel_ratio` device pixels per CSS pixel.
    pub fn resize(&self, width: u32, height: u32, pixel_ratio: f64) {
        let pixel_ratio = if pixel_ratio.is_finite() {
            pixel_ratio.clamp(1.0, LARGEST_PIXEL_RATIO)
        } else {
            1.0
        };
        let picture = Picture {
            width: width.clamp(SMALLEST_FRAME, LARGEST_FRAME),
            height: height.clamp(SMALLEST_FRAME, LARGEST_FRAME),
            pixel_ratio,
        };
        self.live.set_viewer_size(self.id, Some(picture));
    }
}

impl Drop for ViewerSlot {
    fn drop(&mut self) {
        self.live.viewers.fetch_sub(1, Ordering::Relaxed);
        self.live.status_changed();
        self.live.set_viewer_size(self.id, None);
    }
}

impl LiveView {
    /// Starts following the agents' tabs; stops with `cancel`.
    pub fn start(browser: Browser, cancel: CancellationToken) -> Arc<Self> {
        browser.follow_pages_for_people();
        let live = Arc::new(Self {
            browser,
            shown: watch::Sender::new(None),
            frames: watch::Sender::new(None),
            viewer_sizes: Mutex::new(HashMap::new()),
            frame_size: watch::Sender::new(DEFAULT_FRAME_SIZE),
            next_viewer: AtomicU64::new(1),
            frames_sent: AtomicU64::new(0),
            viewers: AtomicUsize::new(0),
            pictured: Mutex::new(None),
            status: watch::Sender::new(0),
            last_tabs: Mutex::new(Vec::new()),
            page_size: watch::Sender::new(None),
        });
        tokio::spawn(Arc::clone(&live).follow(cancel.clone()));
        tokio::spawn(Arc::clone(&live).follow_status(cancel));
        live
    }

    /// Follows what the browser reports (tabs, control) into the status generation.
    async fn follow_status(self: Arc<Self>, cancel: CancellationToken) {
        let mut tabs = self.browser.watch_tabs();
        let mut control = self.browser.watch_control();
        let mut lifecycle = self.browser.watch_browser();
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                changed = tabs.changed() => if changed.is_err() { return },
                changed = control.changed() => if changed.is_err() { return },
                changed = async {
                    match lifecycle.as_mut() {
                        Some(state) => state.changed().await.is_ok(),
                        None => std::future::pending().await,
                    }
                } => if !changed { return },
            }
            self.status_changed();
        }
    }

    fn status_changed(&self) {
        self.status.send_modify(|generation| *generation += 1);
    }

    /// Follows the status generation (see [`LiveView::status_generation`]).
    pub fn watch_status(&self) -> watch::Receiver<u64> {
        self.status.subscribe()
    }

    /// A number that grows whenever something `/status` reports changes.
    pub fn status_generation(&self) -> u64 {
        *self.status.borrow()
    }

    /// A new viewer's slot in the frame-size choice.
    pub fn join(self: &Arc<Self>) -> ViewerSlot {
        self.viewers.fetch_add(1, Ordering::Relaxed);
        self.status_changed();
        ViewerSlot {
            live: Arc::clone(self),
            id: self.next_viewer.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn set_viewer_size(&self, viewer: u64, size: Option<Picture>) {
        let wanted = {
            let mut sizes = self.viewer_sizes.lock().unwrap_or_else(|p| p.into_inner());
            match size {
                Some(size) => sizes.insert(viewer, size),
                None => sizes.remove(&viewer),
            };
            sizes
                .values()
                .copied()
                .reduce(Picture::fitting)
                .unwrap_or(DEFAULT_FRAME_SIZE)
        };
        self.frame_size.send_if_modified(|current| {
            let changed = *current != wanted;
            *current = wanted;
            changed
        });
    }

    /// Sizes every tab's viewport to `width` × `height` CSS pixels (bounded
    /// to what a page can sensibly use), as a browser window would.
    pub fn fit_pages(&self, width: u32, height: u32) {
        let size = (width.clamp(200, 4096), height.clamp(150, 4096));
        self.page_size.send_if_modified(|current| {
            let changed = *current != Some(size);
            *current = Some(size);
            changed
        });
        self.status_changed();
    }

    /// The viewport tabs are sized to, if the desktop window asked for one.
    pub fn page_size(&self) -> Option<(u32, u32)> {
        *self.page_size.borrow()
    }

    /// Gives tabs that do not have it yet the page size asked for.
    async fn size_pages(&self, tabs: &[LiveTab], sized: &mut HashMap<ViewId, (u32, u32)>) {
        let Some((width, height)) = self.page_size() else {
            return;
        };
        sized.retain(|view, _| tabs.iter().any(|t| &t.view == view));
        // A CDP client's pages keep the viewport the client gave them.
        for tab in tabs.iter().filter(|t| !t.external) {
            if sized.get(&tab.view) == Some(&(width, height)) {
                continue;
            }
            let resized = self
                .browser
                .host()
                .call(
                    &tab.view,
                    &EmulationSetDeviceMetricsOverride {
                        width,
                        height,
                        device_scale_factor: 0.0,
                        mobile: false,
                    },
                )
                .await;
            match resized {
                Ok(_) => {
                    sized.insert(tab.view.clone(), (width, height));
                }
                Err(error) => tracing::debug!(%error, "cannot size a tab to the window"),
            }
        }
    }

    /// How many viewers are connected.
    pub fn viewers(&self) -> usize {
        self.viewers.load(Ordering::Relaxed)
    }

    /// Counts a frame sent to a viewer.
    pub fn count_frame_sent(&self) {
        self.frames_sent.fetch_add(1, Ordering::Relaxed);
        self.status_changed();
    }

    /// Frames sent to viewers since the start.
    pub fn frames_sent(&self) -> u64 {
        self.frames_sent.load(Ordering::Relaxed)
    }

    /// The tab the latest frame shows.
    pub fn pictured(&self) -> Option<ViewId> {
        self.pictured
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Publishes `frame`, a picture of `view`, to every viewer.
    fn publish(&self, view: Option<&ViewId>, frame: Option<Arc<Frame>>) {
        *self.pictured.lock().unwrap_or_else(|p| p.into_inner()) = view.cloned();
        self.frames.send_replace(frame);
        self.status_changed();
    }

    /// The browser behind the view.
    pub fn browser(&self) -> &Browser {
        &self.browser
    }

    /// The tab an agent's call acts on, as a view: the tab it names (its
    /// `tab` argument), else its session's active tab.
    pub fn acting_view(&self, activity: &browser_provider::browser::Activity) -> Option<ViewId> {
        let named = serde_json::from_str::<serde_json::Value>(&activity.arguments)
            .ok()
            .and_then(|arguments| {
                let tab = arguments.get("tab")?.as_str()?.to_owned();
                browser_provider::TabHandle::parse(&tab).ok()
            });
        let handle = match named {
            Some(handle) => handle,
            None => self.browser.active_tab(&activity.session).ok()?,
        };
        self.browser.view_of(&activity.session, &handle).ok()
    }

    /// Shows the tab an agent's call acts on, so people watch what it does
    /// (not while a person holds control: they show what they choose).
    fn follow_agent(&self, activity: &browser_provider::browser::Activity) -> bool {
        let person_drives = self.browser.watch_control().borrow().holder
            == browser_provider::control::Holder::Human;
        if person_drives {
            return false;
        }
        match self.acting_view(activity) {
            Some(view) if Some(&view) != self.shown().as_ref() => {
                self.shown.send_replace(Some(view));
                true
            }
            _ => false,
        }
    }

    /// The browser's lifecycle for people: `{"state": "running" |
    /// "restarting" | "failed" | "stopped", "cause", "since", "restartedAt",
    /// "pid"}`
    /// (times as `10:42:07 UTC`), what the column's banner says.
    pub fn browser_status(&self) -> serde_json::Value {
        use browser_provider::host::BrowserState;
        let person_tabs = self.browser.host().opens_person_tabs();
        let Some(state) = self.browser.watch_browser() else {
            return serde_json::json!({"state": "running", "personTabs": person_tabs});
        };
        let clock = browser_provider::browser::clock;
        match &*state.borrow() {
            BrowserState::Running {
                restarted, host, ..
            } => serde_json::json!({
                "state": "running",
                "pid": host.pid(),
                "executable": host.executable(),
                "headlessShell": host.executable().is_some_and(browser_provider::host::is_headless_shell),
                "cause": restarted.as_ref().map(|r| r.cause.clone()),
                "restartedAt": restarted.as_ref().map(|r| clock(r.at)),
                "personTabs": person_tabs,
            }),
            BrowserState::Restarting {
                cause,
                since,
                attempt,
                reconnecting,
            } => serde_json::json!({
                "state": "restarting",
                "cause": cause,
                "since": clock(*since),
                "attempt": attempt,
                "reconnecting": reconnecting,
            }),
            BrowserState::Failed { cause, at } => serde_json::json!({
                "state": "failed",
                "cause": cause,
                "since": clock(*at),
            }),
            BrowserState::Stopped => serde_json::json!({"state": "stopped"}),
        }
    }

    /// Follows the shown tab.
    pub fn watch_shown(&self) -> watch::Receiver<Option<ViewId>> {
        self.shown.subscribe()
    }

    /// Follows frames of the shown tab.
    pub fn watch_frames(&self) -> watch::Receiver<Option<Arc<Frame>>> {
        self.frames.subscribe()
    }

    /// The tab shown now.
    pub fn shown(&self) -> Option<ViewId> {
        self.shown.borrow().clone()
    }

    /// Shows the tab with this handle, if it exists.
    pub async fn show(&self, handle: &str) {
        let tabs = self.browser.live_tabs().await.unwrap_or_default();
        if let Some(tab) = tabs.iter().find(|t| t.handle.as_str() == handle) {
            self.shown.send_replace(Some(tab.view.clone()));
        }
    }

    /// Every tab (agents' and the person's), for the tab strip. While the
    /// browser is away (restarting), the tabs it had, so the strip and the
    /// last picture stay until the tabs are back.
    pub async fn tabs(&self) -> Vec<LiveTab> {
        let read = self.browser.live_tabs().await;
        let mut last = self.last_tabs.lock().unwrap_or_else(|p| p.into_inner());
        match read {
            Ok(tabs) => {
                last.clone_from(&tabs);
                tabs
            }
            Err(_) => last.clone(),
        }
    }

    async fn follow(self: Arc<Self>, cancel: CancellationToken) {
        let mut tabs_changed = self.browser.watch_tabs();
        let mut shown_changed = self.shown.subscribe();
        // The agents' calls: the column follows each to the tab it acts on.
        let mut activity = Some(self.browser.watch_activity());
        let mut size_changed = self.frame_size.subscribe();
        let mut page_size_changed = self.page_size.subscribe();
        let mut sized: HashMap<ViewId, (u32, u32)> = HashMap::new();
        // The tab streamed, its stream, and the frame size and page size it
        // started with (a change of either starts it again, so the new
        // picture comes at once even on a still page).
        let mut cast: Option<(ViewId, Screencast, StreamedAs)> = None;
        let mut cast_frames: Option<watch::Receiver<Option<Arc<Frame>>>> = None;
        // The highest tab number seen: a higher one is a tab that just opened.
        let mut highest_seen = 0u64;
        // The shown tab's handle: it outlives the tab's view across restarts.
        let mut shown_handle: Option<browser_provider::TabHandle> = None;
        let number = |tab: &LiveTab| tab.handle.number();
        loop {
            // Follow the action: show a tab that just opened (the start page
            // gives way to the agent's first page), and keep showing a live
            // tab when the shown one closes.
            let tabs = match self.browser.live_tabs().await {
                Ok(tabs) => tabs,
                Err(error) => {
                    // No browser (it is restarting): keep the last picture
                    // until its tabs are back.
                    tracing::debug!(%error, "no tabs to show now");
                    cast = None;
                    cast_frames = None;
                    tokio::select! {
                        () = cancel.cancelled() => return,
                        _ = tabs_changed.changed() => continue,
                    }
                }
            };
            page_size_changed.borrow_and_update();
            self.size_pages(&tabs, &mut sized).await;
            let shown = self.shown();
            if let Some(tab) = shown
                .as_ref()
                .and_then(|view| tabs.iter().find(|t| &t.view == view))
            {
                shown_handle = Some(tab.handle.clone());
            }
            let newest = tabs.iter().max_by_key(|t| number(t));
            let opened = newest.is_some_and(|t| number(t) > highest_seen);
            highest_seen = highest_seen.max(newest.map_or(0, number));
            let gone = shown
                .as_ref()
                .is_none_or(|view| !tabs.iter().any(|t| &t.view == view));
            // A tab reopened after a restart has a new view but is the same
            // tab; while it is being reopened, keep waiting for it.
            let reopening = gone
                && shown_handle.as_ref().is_some_and(|handle| {
                    self.browser.knows_tab(handle) && !tabs.iter().any(|t| &t.handle == handle)
                });
            if reopening {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = tabs_changed.changed() => continue,
                }
            }
            let reopened = shown_handle
                .as_ref()
                .and_then(|handle| tabs.iter().find(|t| &t.handle == handle))
                .filter(|_| gone && !opened)
                .map(|t| t.view.clone());
            let next = reopened.or_else(|| newest.map(|t| t.view.clone()));
            if (opened || gone) && next != shown {
                self.shown.send_replace(next);
            }
            let want = self.shown();
            let size = *size_changed.borrow_and_update();
            let streamed_as = (size, self.page_size());
            if cast.as_ref().map(|(view, _, streamed)| (view, *streamed))
                != want.as_ref().map(|v| (v, streamed_as))
            {
                if let Some((_, old, _)) = cast.take() {
                    old.stop().await;
                }
                cast_frames = None;
                if let Some(view) = want.clone() {
                    // A CDP client's page is not captured behind its back:
                    // its own screenshots would share the capture's scale.
                    let external = tabs.iter().any(|t| t.view == view && t.external);
                    match screencast::start(
                        self.browser.host().clone(),
                        view.clone(),
                        ScreencastOptions {
                            max_width: size.width,
                            max_height: size.height,
                            pixel_ratio: if external { 1.0 } else { size.pixel_ratio },
                            ..ScreencastOptions::default()
                        },
                    )
                    .await
                    {
                        Ok(started) => {
                            let frames = started.frames();
                            // The picture taken at start: viewers need not wait
                            // for the page to change to see the new tab or size.
                            let first = frames.borrow().clone();
                            if first.is_some() {
                                self.publish(Some(&view), first);
                            }
                            cast_frames = Some(frames);
                            cast = Some((view, started, streamed_as));
                        }
                        Err(error) => {
                            // Usually a tab between documents; try again shortly.
                            tracing::debug!(%error, "cannot stream the shown tab yet");
                            tokio::select! {
                                () = cancel.cancelled() => return,
                                () = tokio::time::sleep(RETRY) => continue,
                            }
                        }
                    }
                } else {
                    self.publish(None, None);
                }
            }
            // Relay frames until something else changes: the tab list is
            // looked at again only then, not for every frame.
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = tabs_changed.changed() => break,
                    _ = shown_changed.changed() => break,
                    _ = size_changed.changed() => break,
                    _ = page_size_changed.changed() => break,
                    event = async {
                        match activity.as_mut() {
                            Some(activity) => activity.recv().await,
                            None => std::future::pending().await,
                        }
                    } => match event {
                        Ok(event) => {
                            if self.follow_agent(&event) {
                                break;
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => activity = None,
                    },
                    changed = async {
                        match cast_frames.as_mut() {
                            Some(frames) => frames.changed().await.is_ok(),
                            None => std::future::pending().await,
                        }
                    } => {
                        if !changed {
                            cast = None;
                            cast_frames = None;
                            break;
                        }
                        if let (Some(frames), Some((view, ..))) = (cast_frames.as_mut(), cast.as_ref()) {
                            let frame = frames.borrow_and_update().clone();
                            self.publish(Some(view), frame);
                        }
                    }
                }
            }
        }
    }
}
