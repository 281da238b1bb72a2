//! What an external CDP client may see and do (`--cdp-endpoint-scope`).
//!
//! In the default scope, `own`, the agents' tabs do not exist for a
//! client: they are left out of discovery, `Target.getTargets` and target
//! events, an auto-attach to one is undone before the client hears of it,
//! and a command naming one is refused. The client sees and drives its
//! own targets and the person's tabs. Commands that reach past its own
//! targets into what the agents share with it (the default browser
//! context's downloads, permissions, cookies and storage) are refused,
//! or, where clients send them unasked on connecting
//! (`Browser.setDownloadBehavior`), acknowledged without effect. In scope
//! `full` a client sees and drives everything but the browser itself.
//!
//! Whose a target is comes from the shell's registry
//! ([`Browser::target_owner`]); a new page is announced by the browser a
//! moment before anyone can know whose it is, so the proxy holds the
//! client's stream until it is known (see [`Visibility::decide`]).

use std::collections::HashSet;

use browser_provider::{Browser, TargetOwner};
use serde::Deserialize;
use serde_json::{Map, Value};

/// What a CDP endpoint client may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Scope {
    /// Its own targets and the person's tabs; agents' tabs are invisible.
    #[default]
    Own,
    /// Every target, the agents' tabs included.
    Full,
}

/// What to do with a client's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Send it to the browser.
    Forward,
    /// Answer with this error instead.
    Refuse(String),
    /// Answer with an empty result without sending it (it would reach
    /// past the client's own targets; clients send it unasked).
    Acknowledge,
}

/// The fields of a `TargetInfo` that decide whether a client sees it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetFacts {
    /// The target's id.
    pub target_id: String,
    /// `page`, `iframe`, `worker`, `service_worker`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The target that opened it (a popup's opener).
    #[serde(default)]
    pub opener_id: Option<String>,
    /// The frame an out-of-process frame or a worker belongs to (a page's
    /// main frame has its page's target id).
    #[serde(default)]
    pub parent_frame_id: Option<String>,
    /// Its browser context.
    #[serde(default)]
    pub browser_context_id: Option<String>,
}

/// Commands that reach into the default browser context as a whole:
/// refused unless they name a context the client created.
fn shared_context_command(method: &str) -> bool {
    method.starts_with("Storage.")
        || matches!(
            method,
            "Browser.setPermission"
                | "Browser.grantPermissions"
                | "Browser.resetPermissions"
                | "Network.clearBrowserCookies"
                | "Network.clearBrowserCache"
                | "Network.getAllCookies"
                | "Target.disposeBrowserContext"
        )
}

/// One client's view of the browser's targets.
pub struct Visibility {
    scope: Scope,
    browser: Browser,
    /// Targets this client created.
    own_targets: HashSet<String>,
    /// Browser contexts this client created.
    own_contexts: HashSet<String>,
    /// Targets decided hidden (agents' tabs and what they opened).
    hidden: HashSet<String>,
    /// Targets decided visible.
    shown: HashSet<String>,
}

impl Visibility {
    /// A new client's view under `scope`.
    pub fn new(scope: Scope, browser: Browser) -> Self {
        Self {
            scope,
            browser,
            own_targets: HashSet::new(),
            own_contexts: HashSet::new(),
            hidden: HashSet::new(),
            shown: HashSet::new(),
        }
    }

    /// Whether the client may see the target `facts` describe; `None`
    /// while nobody knows yet whose it is (a page just created).
    pub fn decide(&mut self, facts: &TargetFacts) -> Option<bool> {
        if self.scope == Scope::Full {
            return Some(true);
        }
        let id = facts.target_id.as_str();
        if self.hidden.contains(id) {
            return Some(false);
        }
        if self.shown.contains(id) || self.own_targets.contains(id) {
            return Some(true);
        }
        let agents = self.browser.agent_contexts();
        let hidden = facts
            .browser_context_id
            .as_ref()
            .is_some_and(|context| agents.contains(context))
            || [&facts.opener_id, &facts.parent_frame_id]
                .into_iter()
                .flatten()
                .any(|parent| self.is_hidden(parent));
        let verdict = if hidden {
            Some(false)
        } else if facts.kind != "page" {
            // Frames and workers of a page that is not hidden.
            Some(true)
        } else {
            match self.browser.target_owner(id) {
                TargetOwner::Agent(_) => Some(false),
                TargetOwner::Person => Some(true),
                TargetOwner::Unknown => None,
            }
        };
        if let Some(visible) = verdict {
            self.remember(id, visible);
        }
        verdict
    }

    /// Settles a target nobody claimed in time: not an agent's.
    pub fn settle_unclaimed(&mut self, target: &str) {
        self.remember(target, true);
    }

    fn remember(&mut self, target: &str, visible: bool) {
        if visible {
            self.shown.insert(target.to_owned());
        } else {
            self.hidden.insert(target.to_owned());
        }
    }

    /// Whether the target is one the client must not see.
    pub fn is_hidden(&self, target: &str) -> bool {
        self.scope == Scope::Own
            && (self.hidden.contains(target)
                || matches!(self.browser.target_owner(target), TargetOwner::Agent(_)))
    }

    /// What to do with a command `method` with `params`.
    pub fn check(&self, method: &str, params: &Value) -> Verdict {
        if self.scope == Scope::Full {
            return Verdict::Forward;
        }
        if let Some(target) = params.get("targetId").and_then(Value::as_str)
            && self.is_hidden(target)
        {
            return Verdict::Refuse(format!(
                "No target with given id found: {target} (agents' tabs are not visible through \
                 this endpoint; the shell was started with --cdp-endpoint-scope own)"
            ));
        }
        let context = params.get("browserContextId").and_then(Value::as_str);
        if let Some(context) = context
            && self.browser.agent_contexts().iter().any(|c| c == context)
        {
            return Verdict::Refuse(format!(
                "browser context {context} belongs to an agent session (--cdp-endpoint-scope own)"
            ));
        }
        let own_context = context.is_some_and(|c| self.own_contexts.contains(c));
        if method == "Browser.setDownloadBehavior" && !own_context {
            return Verdict::Acknowledge;
        }
        if shared_context_command(method) && !own_context {
            return Verdict::Refuse(format!(
                "{method} on the browser context the agents share is not allowed through this \
                 endpoint (--cdp-endpoint-scope own); create a browser context of your own \
                 (Target.createBrowserContext) and name it"
            ));
        }
        Verdict::Forward
    }

    /// Learns from the browser's answer to the client's `method`: the
    /// targets and contexts it creates are its own.
    pub fn learn(&mut self, method: &str, body: &Map<String, Value>) {
        let result = body.get("result");
        let field = |name: &str| result.and_then(|r| r.get(name)).and_then(Value::as_str);
        match method {
            "Target.createTarget" => {
                if let Some(target) = field("targetId") {
                    self.own_targets.insert(target.to_owned());
                    self.shown.insert(target.to_owned());
                }
            }
            "Target.createBrowserContext" => {
                if let Some(context) = field("browserContextId") {
                    self.own_contexts.insert(context.to_owned());
                }
            }
            _ => {}
        }
    }

    /// The browser's answer to `method` with what the client may not see
    /// left out.
    pub fn filter_answer(&mut self, method: &str, body: &mut Map<String, Value>) {
        if self.scope == Scope::Full || method != "Target.getTargets" {
            return;
        }
        let Some(infos) = body
            .get_mut("result")
            .and_then(|r| r.get_mut("targetInfos"))
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        let mut kept = Vec::new();
        for info in infos.drain(..) {
            let visible = match serde_json::from_value::<TargetFacts>(info.clone()) {
                // Listed targets exist already: nobody claiming one is an answer.
                Ok(facts) => self.decide(&facts).unwrap_or(true),
                Err(_) => true,
            };
            if visible {
                kept.push(info);
            }
        }
        *infos = kept;
    }
}
