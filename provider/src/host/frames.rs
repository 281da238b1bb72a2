//! Out-of-process frames as flat child sessions: which frame lives under
//! which session. Hosts that follow such frames (Chromium's own, the
//! extension's child sessions) record their attach and detach events here
//! and answer [`super::ViewHost::frames`] from it.

use std::collections::HashMap;

use super::FrameInfo;
use crate::cdp::protocol::TargetInfo;
use crate::cdp::{CdpEvent, SessionId};

/// One attached out-of-process frame.
#[derive(Debug, Clone)]
pub(crate) struct FrameSession {
    /// Its flat session.
    pub(crate) session: SessionId,
    /// The session it was attached under (a page's or another frame's).
    pub(crate) parent_session: SessionId,
    /// Its URL when it attached.
    pub(crate) url: String,
}

/// Attached frames by frame id (a frame's target id is its frame id).
#[derive(Debug, Default)]
pub(crate) struct FrameSessions(HashMap<String, FrameSession>);

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachedToTarget {
    session_id: String,
    target_info: TargetInfo,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DetachedFromTarget {
    session_id: String,
}

impl FrameSessions {
    /// Notes a `Target.attachedToTarget` or `Target.detachedFromTarget`
    /// event. Returns the session of a newly attached frame (whose own
    /// frames the host should follow too).
    pub(crate) fn note(&mut self, event: &CdpEvent) -> Option<SessionId> {
        match event.method.as_str() {
            "Target.attachedToTarget" => {
                let parent = event.session_id.clone()?;
                let attached = event.decode::<AttachedToTarget>()?;
                if attached.target_info.kind != "iframe" {
                    return None;
                }
                let session = SessionId(attached.session_id);
                self.0.insert(
                    attached.target_info.target_id,
                    FrameSession {
                        session: session.clone(),
                        parent_session: parent,
                        url: attached.target_info.url,
                    },
                );
                Some(session)
            }
            "Target.detachedFromTarget" => {
                let detached = event.decode::<DetachedFromTarget>()?;
                self.0
                    .retain(|_, frame| frame.session.0 != detached.session_id);
                None
            }
            _ => None,
        }
    }

    /// The session of frame `id`.
    pub(crate) fn session_of(&self, id: &str) -> Option<SessionId> {
        self.0.get(id).map(|frame| frame.session.clone())
    }

    /// Forgets every frame under `root` (its view went away).
    pub(crate) fn forget_under(&mut self, root: &SessionId) {
        let mut gone = vec![root.clone()];
        while let Some(parent) = gone.pop() {
            let children: Vec<String> = self
                .0
                .iter()
                .filter(|(_, frame)| frame.parent_session == parent)
                .map(|(id, _)| id.clone())
                .collect();
            for id in children {
                if let Some(frame) = self.0.remove(&id) {
                    gone.push(frame.session);
                }
            }
        }
    }

    /// How many frames are attached (for the census).
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The frames under the view whose session is `root`, parents before
    /// their children.
    pub(crate) fn tree(&self, root: &SessionId) -> Vec<FrameInfo> {
        let id_of_session = |session: &SessionId| {
            self.0
                .iter()
                .find(|(_, f)| &f.session == session)
                .map(|(id, _)| id.clone())
        };
        let mut found = Vec::new();
        let mut parents = vec![(root.clone(), None::<String>)];
        while let Some((parent_session, parent_id)) = parents.pop() {
            let mut children: Vec<(&String, &FrameSession)> = self
                .0
                .iter()
                .filter(|(_, f)| f.parent_session == parent_session)
                .collect();
            children.sort_by(|a, b| a.0.cmp(b.0));
            for (id, frame) in children {
                found.push(FrameInfo {
                    id: id.clone(),
                    parent: parent_id.clone(),
                    url: frame.url.clone(),
                });
                parents.insert(0, (frame.session.clone(), id_of_session(&frame.session)));
            }
        }
        found
    }
}
