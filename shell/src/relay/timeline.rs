//! The activity timeline people read: every agent call (what it was
//! asked, what came of it, the live picture before and after) and the
//! person's own steps (took over, returned control, handoff done). The
//! column shows it; a session report is made from it.
//!
//! Pictures are small copies of live frames, shared between entries that
//! saw the same frame, so an hour of work stays a few megabytes. The
//! timeline keeps the latest [`KEPT_ENTRIES`] entries.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use browser_provider::browser::Activity;
use browser_provider::control::Holder;
use browser_provider::page::screencast::Frame;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::live::LiveView;

/// Entries kept; older ones are dropped with their pictures.
const KEPT_ENTRIES: usize = 1500;
/// Width of the timeline's pictures (CSS pixels of the column's timeline
/// are fewer; the detail view and the report show them at this size).
const PICTURE_WIDTH: u32 = 320;
/// JPEG quality of the pictures.
const PICTURE_QUALITY: u8 = 60;
/// How long the picture after a call waits for the page to repaint.
const AFTER_PICTURE_WAIT: Duration = Duration::from_millis(600);

/// A small copy of a live frame.
#[derive(Debug)]
pub struct Picture {
    /// The live frame it was made from (equal sequences: equal pictures).
    pub sequence: u64,
    /// The JPEG as a `data:` URL, encoded once: every viewer and every
    /// report uses it as it is.
    pub data_url: String,
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
}

impl Picture {
    /// A downscaled copy of `frame`; `None` when it does not decode.
    fn of(frame: &Frame) -> Option<Self> {
        let image =
            image::load_from_memory_with_format(&frame.jpeg, image::ImageFormat::Jpeg).ok()?;
        let width = PICTURE_WIDTH.min(image.width()).max(1);
        let height = (u64::from(image.height()) * u64::from(width) / u64::from(image.width()))
            .clamp(1, u64::from(u32::MAX)) as u32;
        let small = image::imageops::thumbnail(&image.into_rgb8(), width, height);
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, PICTURE_QUALITY)
            .encode_image(&small)
            .ok()?;
        Some(Self {
            sequence: frame.sequence,
            data_url: format!(
                "data:image/jpeg;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&jpeg)
            ),
            width,
            height,
        })
    }
}

/// Who did something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "session")]
pub enum Actor {
    /// An agent session.
    Agent(String),
    /// The person at the column.
    Person,
}

/// One line of the timeline.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Its number, in order of starting.
    pub id: u64,
    /// When it started, in milliseconds since the Unix epoch.
    pub at: u64,
    /// Who.
    pub actor: Actor,
    /// The tool, or what the person did ("took over", "returned control",
    /// "finished the handoff").
    pub what: String,
    /// What it acted on or waited for, in short.
    pub summary: String,
    /// The arguments (typed text withheld, secrets hidden).
    pub arguments: String,
    /// `None` while running; "ok" or the error code.
    pub outcome: Option<String>,
    /// How long it took.
    pub millis: Option<u64>,
    /// What came of it in a few words.
    pub headline: String,
    /// The result as the agent read it (secrets hidden, cut short).
    pub result: String,
    /// The live picture when it started.
    #[serde(skip)]
    pub before: Option<Arc<Picture>>,
    /// The live picture once it was done.
    #[serde(skip)]
    pub after: Option<Arc<Picture>>,
}

impl Entry {
    /// The entry as the column gets it: pictures as `data:` URLs.
    pub fn to_message(&self) -> serde_json::Value {
        let mut message = serde_json::json!(self);
        message["type"] = "activity".into();
        message["before"] = self.before.as_ref().map(|p| p.data_url.as_str()).into();
        message["after"] = self.after.as_ref().map(|p| p.data_url.as_str()).into();
        message
    }
}

#[derive(Default)]
struct State {
    entries: VecDeque<Arc<Entry>>,
    next_id: u64,
    /// Calls running: call number → entry id.
    running: HashMap<u64, u64>,
}

/// The timeline: entries, and a feed of each new or updated one.
pub struct Timeline {
    state: Mutex<State>,
    updates: broadcast::Sender<Arc<Entry>>,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("entries", &self.lock().entries.len())
            .finish_non_exhaustive()
    }
}

impl Default for Timeline {
    fn default() -> Self {
        Self {
            state: Mutex::new(State::default()),
            updates: broadcast::Sender::new(256),
        }
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Timeline {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every entry kept, oldest first.
    pub fn entries(&self) -> Vec<Arc<Entry>> {
        self.lock().entries.iter().cloned().collect()
    }

    /// Follows new and updated entries.
    pub fn watch(&self) -> broadcast::Receiver<Arc<Entry>> {
        self.updates.subscribe()
    }

    /// Adds an entry; answers its id.
    fn push(&self, make: impl FnOnce(u64) -> Entry) -> u64 {
        let entry = {
            let mut state = self.lock();
            state.next_id += 1;
            let entry = Arc::new(make(state.next_id));
            state.entries.push_back(Arc::clone(&entry));
            let mut dropped = false;
            while state.entries.len() > KEPT_ENTRIES {
                state.entries.pop_front();
                dropped = true;
            }
            if dropped && let Some(oldest) = state.entries.front().map(|e| e.id) {
                // A call whose entry is gone is no longer followed.
                state.running.retain(|_, id| *id >= oldest);
            }
            entry
        };
        let id = entry.id;
        let _ = self.updates.send(entry);
        id
    }

    /// Changes entry `id` (when it is still kept).
    fn update(&self, id: u64, change: impl FnOnce(&mut Entry)) {
        let entry = {
            let mut state = self.lock();
            let Some(slot) = state.entries.iter_mut().find(|e| e.id == id) else {
                return;
            };
            let mut entry = Entry::clone(slot);
            change(&mut entry);
            *slot = Arc::new(entry);
            Arc::clone(slot)
        };
        let _ = self.updates.send(entry);
    }

    /// Records an agent's call starting or ending; answers the entry's id
    /// and whether it ended.
    fn record_activity(&self, event: Activity) -> (u64, bool) {
        let key = event.call;
        let outcome = event.outcome.as_ref().map(|outcome| match outcome {
            Ok(()) => "ok".to_owned(),
            Err(code) => code.clone(),
        });
        let ended = outcome.is_some();
        let started = if ended {
            self.lock().running.remove(&key)
        } else {
            None
        };
        if let Some(id) = started {
            self.update(id, |entry| {
                entry.outcome = outcome;
                entry.millis = event.millis;
                entry.headline = event.headline;
                entry.result = event.result;
            });
            return (id, true);
        }
        let id = self.push(|id| Entry {
            id,
            at: now_millis(),
            actor: Actor::Agent(event.session.as_str().to_owned()),
            what: event.tool,
            summary: event.summary,
            arguments: event.arguments,
            outcome,
            millis: event.millis,
            headline: event.headline,
            result: event.result,
            before: None,
            after: None,
        });
        if !ended {
            self.lock().running.insert(key, id);
        }
        (id, ended)
    }

    /// Records something the person did; answers the entry's id.
    fn record_person(&self, what: &str, summary: String) -> u64 {
        self.push(|id| Entry {
            id,
            at: now_millis(),
            actor: Actor::Person,
            what: what.to_owned(),
            summary,
            arguments: String::new(),
            outcome: Some("ok".to_owned()),
            millis: None,
            headline: String::new(),
            result: String::new(),
            before: None,
            after: None,
        })
    }
}

/// Makes pictures of live frames, one per frame however often asked.
#[derive(Default)]
struct Camera {
    last: Option<Arc<Picture>>,
}

impl Camera {
    /// A picture of `frame`.
    async fn picture(&mut self, frame: Arc<Frame>) -> Option<Arc<Picture>> {
        if let Some(last) = &self.last
            && last.sequence == frame.sequence
        {
            return Some(Arc::clone(last));
        }
        let picture = tokio::task::spawn_blocking(move || Picture::of(&frame))
            .await
            .ok()??;
        let picture = Arc::new(picture);
        self.last = Some(Arc::clone(&picture));
        Some(picture)
    }
}

/// Records the browser's activity and the person's steps into `timeline`
/// until `cancel`. Entries go in at once, in order; their pictures follow
/// (making one takes a few milliseconds, and must never hold up the next
/// entry).
pub async fn record(live: Arc<LiveView>, timeline: Arc<Timeline>, cancel: CancellationToken) {
    let browser = live.browser().clone();
    let mut activity = browser.watch_activity();
    let mut control = browser.watch_control();
    let mut holder = control.borrow().holder;
    let mut handoff = browser.watch_handoff();
    // The request of the latest handoff, until control goes back to the
    // agents (then the person is done with it).
    let mut asked: Option<String> = None;
    let camera = Arc::new(tokio::sync::Mutex::new(Camera::default()));
    // Pictures into entry `id` the latest frame: now, as its "before"
    // picture, or as its "after" one once the page has repainted (or a
    // moment passed, for a call that changed nothing). With `of`, only a
    // frame of that tab (the one the call acts on, which the column turns
    // to): the picture of another tab says nothing about the call.
    let picture = |id: u64, after: bool, of: Option<browser_provider::host::ViewId>| {
        let (live, timeline, camera) = (
            Arc::clone(&live),
            Arc::clone(&timeline),
            Arc::clone(&camera),
        );
        let mut frames = live.watch_frames();
        let now = frames.borrow_and_update().clone();
        let now_of = live.pictured();
        tokio::spawn(async move {
            let frame = match (after, &of) {
                (false, None) => now,
                (false, Some(view)) if now_of.as_ref() == Some(view) => now,
                (_, wanted) => {
                    let of_it = || wanted.is_none() || live.pictured().as_ref() == wanted.as_ref();
                    let wait = async {
                        loop {
                            if frames.changed().await.is_err() {
                                return;
                            }
                            if of_it() {
                                return;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(AFTER_PICTURE_WAIT, wait).await;
                    if !of_it() {
                        return;
                    }
                    frames.borrow().clone()
                }
            };
            let Some(frame) = frame else { return };
            let Some(picture) = camera.lock().await.picture(frame).await else {
                return;
            };
            timeline.update(id, |entry| {
                if after {
                    entry.after = Some(picture)
                } else {
                    entry.before = Some(picture)
                }
            });
        });
    };
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            event = activity.recv() => {
                let event = match event {
                    Ok(event) => event,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let acted_on = live.acting_view(&event);
                let (id, ended) = timeline.record_activity(event);
                picture(id, ended, acted_on);
            }
            changed = handoff.changed() => {
                if changed.is_err() { return; }
                if let Some(request) = handoff.borrow_and_update().as_ref() {
                    asked = Some(request.reason.clone());
                }
            }
            changed = control.changed() => {
                if changed.is_err() { return; }
                let now = control.borrow_and_update().holder;
                if now == holder { continue; }
                holder = now;
                if let Some(request) = handoff.borrow().as_ref() {
                    asked = Some(request.reason.clone());
                }
                let id = match now {
                    // A handoff gives the person control; its entry is the agent's call.
                    Holder::Human if asked.is_some() => continue,
                    Holder::Human => timeline.record_person("took over", String::new()),
                    Holder::Agent => match asked.take() {
                        Some(reason) => timeline.record_person("finished the handoff", reason),
                        None => timeline.record_person("returned control", String::new()),
                    },
                };
                picture(id, false, None);
            }
        }
    }
}
