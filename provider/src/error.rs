//! The one error type of the provider, with stable machine-readable codes.
//!
//! Every failure a caller can see maps to a code from DESIGN.md §7 (`code()`)
//! and a one-line recovery hint (`hint()`). The code is the contract: the MCP
//! tools, the CLI exit status and the tests all match on it, never on the
//! message text.

use std::time::Duration;

use crate::snapshot::Ref;

/// Result alias used throughout the provider.
pub type Result<T, E = BrowserError> = std::result::Result<T, E>;

/// Why a navigation was refused by policy before it reached the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockReason {
    /// The URL could not be parsed at all.
    Unparsable,
    /// The scheme is not http(s) (or `about:blank`) and `httpOnly` is on.
    Scheme,
    /// The host is on the configured deny list.
    HostDenied,
    /// An allow list is configured and the host is not on it.
    HostNotAllowed,
}

impl std::fmt::Display for BlockReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unparsable => "the URL cannot be parsed",
            Self::Scheme => "only http(s) URLs and about:blank may be opened",
            Self::HostDenied => "the host is on the blocked-hosts list",
            Self::HostNotAllowed => "the host is not on the allowed-hosts list",
        })
    }
}

/// Why a ref is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StaleReason {
    /// The page navigated or reloaded: the document the ref was seen in is gone.
    DocumentReplaced,
    /// The element was removed from the page.
    Detached,
    /// The element is still there but is no longer what it was (role, name, type or link changed).
    Changed,
}

impl std::fmt::Display for StaleReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::DocumentReplaced => "the page navigated since it was seen",
            Self::Detached => "the element left the page",
            Self::Changed => "the element changed (role, name, type or link)",
        })
    }
}

/// Why the person's Chrome is not connected to the extension bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Absence {
    /// Neither native messaging is installed nor a pairing made: the
    /// extension has no way to reach this shell.
    NotSetUp,
    /// Set up, but no attempt from the extension was seen since the shell
    /// started: Chrome is not running, or the extension is not loaded.
    NeverSeen,
    /// The person pressed Disconnect in the extension.
    DisconnectedByPerson,
    /// The extension tried and was refused (a proof or version failed).
    Refused,
    /// It was connected and dropped, and has not come back yet.
    Dropped,
    /// Another browser-shell holds the bridge.
    HeldElsewhere,
}

impl Absence {
    /// The one thing to do about it.
    pub fn hint(self) -> &'static str {
        match self {
            Self::NotSetUp => {
                "run `browser-shell extension install` (native messaging), or `browser-shell extension pair` and open its link in that Chrome"
            }
            Self::NeverSeen => {
                "start Chrome with the browser-shell extension loaded (`browser-shell extension path` says where it is)"
            }
            Self::DisconnectedByPerson => {
                "ask the person to press Connect in the browser-shell extension's popup"
            }
            Self::Refused => {
                "pair again: run `browser-shell extension pair` and open its link in that Chrome"
            }
            Self::Dropped => {
                "call again in a moment; if it stays away, ask the person whether Chrome still runs"
            }
            Self::HeldElsewhere => {
                "stop the other browser-shell that holds the bridge, or join it with `browser-shell mcp --browser extension`"
            }
        }
    }
}

/// Everything that can go wrong while driving a browser.
///
/// Variants carry structured fields rather than free text so callers can
/// render them for a model, a person or a log without parsing strings.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// There is no live connection to a browser (never made, or closed by us).
    #[error("not connected to a browser: {reason}")]
    NotConnected {
        /// What the connection attempt or the closed connection reported.
        reason: String,
    },
    /// The connection to the browser dropped while a call was in flight
    /// (the extension's worker stopped, or the person's Chrome quit): what
    /// the call did is unknown, and it is not repeated. Its code is
    /// `NOT_CONNECTED`; reads are run again once the connection is back.
    #[error("the connection to the browser dropped during the call; it was not repeated: {detail}")]
    CallCut {
        /// What dropped, and why when known.
        detail: String,
    },
    /// The person's own Chrome is not connected to the extension bridge,
    /// and why (its code is `NOT_CONNECTED`; its hint names the one thing
    /// to do for that reason).
    #[error("the person's Chrome is not connected: {detail}")]
    ChromeAbsent {
        /// Why, in general terms (it chooses the hint).
        absence: Absence,
        /// What was seen, and when.
        detail: String,
    },
    /// `auto-connect` found no browser with remote debugging on: no user
    /// data directory searched has a live `DevToolsActivePort`. Its code
    /// is `NOT_CONNECTED`; its hint says how a person turns remote
    /// debugging on.
    #[error("no Chrome, Chromium or Edge with remote debugging on was found ({searched})")]
    RemoteDebuggingOff {
        /// What was searched and why each directory was passed over.
        searched: String,
    },
    /// The browser process or its connection died unexpectedly.
    #[error("the browser went away: {detail}")]
    BrowserCrashed {
        /// What was observed (pipe closed, exit status, socket error).
        detail: String,
    },
    /// The browser went away while this call ran; it was restarted (or is
    /// being restarted) and the call was not completed.
    #[error(
        "the browser stopped during this call ({cause}) and was restarted; the call did not complete"
    )]
    BrowserRestarted {
        /// Why it stopped ("killed by signal 9 (SIGKILL)").
        cause: String,
    },
    /// A browser pool had no browser free for this session within the
    /// wait it was given (`--pool`): every browser is in use by other
    /// sessions. Nothing of the call happened.
    #[error("the browser pool has no free browser ({detail}){}", retry_after_secs.map(|s| format!("; try again in {s} s")).unwrap_or_default())]
    Busy {
        /// What the pool said (its refusal, or how long we waited in its queue).
        detail: String,
        /// When the pool suggests trying again, in seconds, if it said.
        retry_after_secs: Option<u64>,
    },
    /// The tab's page crashed (its renderer died or was killed).
    #[error("the page in tab {tab} crashed{}", if *in_flight { " during this call" } else { "" })]
    PageCrashed {
        /// The tab's handle.
        tab: String,
        /// Whether the call was running when it crashed.
        in_flight: bool,
    },
    /// No Chromium executable could be found.
    #[error("no Chromium browser found (tried: {})", tried.join(", "))]
    BrowserNotFound {
        /// Every path and program name that was tried, in order.
        tried: Vec<String>,
    },
    /// Chromium was found but did not start or did not answer.
    #[error("Chromium failed to start: {detail}")]
    LaunchFailed {
        /// The launch error and, when available, the browser's last stderr lines.
        detail: String,
    },
    /// The tab handle does not name a live tab of this session.
    #[error("tab {tab} not found")]
    TabNotFound {
        /// The handle that was asked for (`t3`), or a description.
        tab: String,
    },
    /// The tab exists but is not this session's: another session's, or
    /// the person's (until the session claims it).
    #[error("tab {tab} is not this session's (another session's or the person's)")]
    TabNotOwned {
        /// The handle that was asked for.
        tab: String,
    },
    /// The session id is unknown or was closed.
    #[error("browser session {session} not found")]
    SessionNotFound {
        /// The session id that was asked for.
        session: String,
    },
    /// A navigation was refused by the navigation policy.
    #[error("navigation to {url} blocked: {reason}")]
    NavigationBlocked {
        /// The URL as requested.
        url: String,
        /// Which rule refused it.
        reason: BlockReason,
    },
    /// A secret bound to certain hosts was asked to be typed on another.
    #[error("the secret {name} may not be typed on {host}")]
    SecretNotAllowed {
        /// The secret's name (never its value).
        name: String,
        /// The host of the page it was to be typed on.
        host: String,
    },
    /// The browser tried the navigation and it failed (DNS, refused, ...).
    #[error("navigation to {url} failed: {error_text}")]
    NavigationFailed {
        /// The URL as requested.
        url: String,
        /// Chromium's network error text, such as `net::ERR_CONNECTION_REFUSED`.
        error_text: String,
    },
    /// An operation ran past its time bound.
    #[error("{operation} timed out after {} ms", after.as_millis())]
    Timeout {
        /// What was being waited for.
        operation: String,
        /// The bound that expired.
        after: Duration,
    },
    /// The caller cancelled the operation.
    #[error("operation cancelled")]
    Aborted,
    /// A person has taken control of the browser: agent actions stop until
    /// they return it. Observation still works.
    #[error("a person has taken control of the browser")]
    HumanIntervened,
    /// The tab is one of the person's that is not shared with this agent
    /// (never shared, the share ended, or the tab left the site it was
    /// shared on): only the person can share it, from the extension.
    #[error("this tab is not shared with you: {detail}")]
    NotShared {
        /// What the person's browser said.
        detail: String,
    },
    /// The debugger the agent drives a tab through was taken away (DevTools
    /// or another debugger opened on it, or the person cancelled it).
    #[error("the tab's debugger was detached: {detail}")]
    DebuggerDetached {
        /// Why, as the browser said it.
        detail: String,
    },
    /// A page the browser lets no extension drive (its own pages, the web store).
    #[error("the page is protected: {detail}")]
    PageProtected {
        /// Which page and why.
        detail: String,
    },
    /// Script execution could not run (not an exception thrown by the script).
    #[error("script execution failed: {message}")]
    ExecuteFailed {
        /// Why it could not run.
        message: String,
    },
    /// An element or region named by a selector does not exist.
    #[error("no element matches selector {selector:?}")]
    ElementNotFound {
        /// The CSS selector that matched nothing.
        selector: String,
    },
    /// A ref no longer names the element it was issued for. The action was
    /// not attempted; nothing else was touched instead.
    #[error("ref {reference} ({role} {name:?}) is stale: {reason}{}", suggestion.as_ref().map(|s| format!("; {s} now matches it")).unwrap_or_default())]
    StaleRef {
        /// The ref the caller used.
        reference: Ref,
        /// The element's role when the ref was issued.
        role: String,
        /// The element's name when the ref was issued.
        name: String,
        /// What happened to it.
        reason: StaleReason,
        /// A fresh ref for the one live element with the same fingerprint, if exactly one exists.
        suggestion: Option<Ref>,
    },
    /// The element exists but cannot take the action now.
    #[error("{role} {name:?} [ref={reference}] is not actionable: {reason}")]
    NotActionable {
        /// The ref.
        reference: Ref,
        /// Its role.
        role: String,
        /// Its name.
        name: String,
        /// Why: hidden, disabled, zero-size, still moving, or covered by another element.
        reason: String,
    },
    /// A role and name matched more than one element.
    #[error("{count} elements match {role} {name:?} ({})", refs.iter().map(Ref::as_str).collect::<Vec<_>>().join(", "))]
    TargetAmbiguous {
        /// The role asked for.
        role: String,
        /// The name asked for.
        name: String,
        /// How many matched.
        count: usize,
        /// Their refs (the first few).
        refs: Vec<Ref>,
    },
    /// The browser answered a command with an error, or sent something we
    /// could not understand.
    #[error("protocol error in {method}: {message}")]
    Protocol {
        /// The CDP method involved (or `<frame>` for unreadable messages).
        method: String,
        /// The browser's error message or what was wrong with the message.
        message: String,
    },
    /// A caller passed an argument that is not valid.
    #[error("invalid argument {field}: {problem}")]
    InvalidArgument {
        /// The argument's name as the caller spelled it.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// No usable browser provider is registered.
    #[error("no usable browser provider is registered")]
    ProviderUnavailable,
    /// Several usable providers are registered and none is configured.
    #[error("several usable browser providers are registered ({}); configure one", ids.join(", "))]
    ProviderAmbiguous {
        /// The ids of the usable providers.
        ids: Vec<String>,
    },
    /// The configured provider id is not registered.
    #[error("configured browser provider {id:?} is not registered")]
    ProviderConfiguredMissing {
        /// The configured id.
        id: String,
    },
    /// The configured provider is registered but not usable now.
    #[error("configured browser provider {id:?} is registered but unavailable")]
    ProviderConfiguredUnavailable {
        /// The configured id.
        id: String,
    },
    /// A provider with this id is already registered.
    #[error("a browser provider with id {id:?} is already registered")]
    ProviderDuplicate {
        /// The duplicated id.
        id: String,
    },
}

impl BrowserError {
    /// The stable code of this error (DESIGN.md §7). Never changes meaning.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotConnected { .. }
            | Self::ChromeAbsent { .. }
            | Self::RemoteDebuggingOff { .. }
            | Self::CallCut { .. } => "NOT_CONNECTED",
            Self::BrowserCrashed { .. } => "BROWSER_CRASHED",
            Self::BrowserRestarted { .. } => "BROWSER_RESTARTED",
            Self::Busy { .. } => "BUSY",
            Self::PageCrashed { .. } => "PAGE_CRASHED",
            Self::BrowserNotFound { .. } => "BROWSER_NOT_FOUND",
            Self::LaunchFailed { .. } => "LAUNCH_FAILED",
            Self::TabNotFound { .. } => "TAB_NOT_FOUND",
            Self::TabNotOwned { .. } => "TAB_NOT_OWNED",
            Self::SessionNotFound { .. } => "SESSION_NOT_FOUND",
            Self::NavigationBlocked { .. } => "NAVIGATION_BLOCKED",
            Self::NavigationFailed { .. } => "NAVIGATION_FAILED",
            Self::SecretNotAllowed { .. } => "SECRET_NOT_ALLOWED",
            Self::Timeout { .. } => "TIMEOUT",
            Self::Aborted => "ABORTED",
            Self::HumanIntervened => "HUMAN_INTERVENED",
            Self::NotShared { .. } => "NOT_SHARED",
            Self::DebuggerDetached { .. } => "DEBUGGER_DETACHED",
            Self::PageProtected { .. } => "PAGE_PROTECTED",
            Self::ExecuteFailed { .. } => "EXECUTE_FAILED",
            Self::ElementNotFound { .. } => "ELEMENT_NOT_FOUND",
            Self::StaleRef { .. } => "STALE_REF",
            Self::NotActionable { .. } => "NOT_ACTIONABLE",
            Self::TargetAmbiguous { .. } => "TARGET_AMBIGUOUS",
            Self::Protocol { .. } => "PROTOCOL_ERROR",
            Self::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Self::ProviderUnavailable => "PROVIDER_UNAVAILABLE",
            Self::ProviderAmbiguous { .. } => "PROVIDER_AMBIGUOUS",
            Self::ProviderConfiguredMissing { .. } => "PROVIDER_CONFIGURED_MISSING",
            Self::ProviderConfiguredUnavailable { .. } => "PROVIDER_CONFIGURED_UNAVAILABLE",
            Self::ProviderDuplicate { .. } => "PROVIDER_DUPLICATE",
        }
    }

    /// A one-line hint telling the caller what to do next. It names no
    /// tool or argument of the caller's: the tools word those hints for
    /// whoever reads them (a model, or the command line).
    pub fn hint(&self) -> &'static str {
        match self {
            Self::NotConnected { .. } => {
                "the browser is not reachable now: if it is restarting or reconnecting, call again in a moment; otherwise check the endpoint address"
            }
            Self::ChromeAbsent { absence, .. } => absence.hint(),
            Self::CallCut { .. } => {
                "the step may or may not have happened: take a snapshot to see where the page is, then redo it if needed"
            }
            Self::RemoteDebuggingOff { .. } => {
                "turn remote debugging on in your browser: open chrome://inspect/#remote-debugging in Chrome 144+ (or Edge) and switch it on, or start the browser with --remote-debugging-port=0; allow the connection when the browser asks; a profile in another place: --profile DIR or BROWSER_SHELL_AUTO_CONNECT_DIRS"
            }
            Self::BrowserCrashed { .. } => {
                "the browser exited and could not be brought back; restart browser-shell"
            }
            Self::BrowserRestarted { .. } => {
                "your tabs were reopened at their last URLs; take a snapshot (old refs are gone), then redo the step if it is still needed"
            }
            Self::Busy { .. } => {
                "every browser of the pool is in use by other sessions: nothing of this call happened; call again after the time the message says (or a few seconds)"
            }
            Self::PageCrashed { .. } => "reload the tab or open a URL in it; other tabs are fine",
            Self::BrowserNotFound { .. } => {
                "install Chromium (Debian/Ubuntu: apt-get install chromium) or set BROWSER_SHELL_CHROMIUM to its path"
            }
            Self::LaunchFailed { .. } => {
                "check the browser path and that it runs on this machine (run it with --version)"
            }
            Self::TabNotFound { .. } => {
                "list the session's tabs and use one of their handles, or open a URL first"
            }
            Self::TabNotOwned { .. } => {
                "use a tab this session opened (list your tabs to see them); a tab the person opened is theirs until you claim it"
            }
            Self::SessionNotFound { .. } => "open a new session",
            Self::NavigationBlocked { .. } => {
                "open an http(s) URL on an allowed host; other schemes are refused by policy"
            }
            Self::NavigationFailed { .. } => {
                "check the URL and that the server is reachable, then try again"
            }
            Self::SecretNotAllowed { .. } => {
                "this secret is only for the sites it was given for: check that the page is the real site (not a look-alike) before typing it"
            }
            Self::Timeout { .. } => {
                "the page is slow or stuck; take a snapshot to see its state, or give it more time"
            }
            Self::Aborted => "the caller cancelled; nothing more to do",
            Self::HumanIntervened => {
                "a person is using the browser: you may take snapshots, but do not act until they return control"
            }
            Self::NotShared { .. } => {
                "only the person can share their tabs: ask them to share it again from the browser-shell extension, or open a tab of your own"
            }
            Self::DebuggerDetached { .. } => {
                "DevTools or another debugger holds the tab: call again once it is closed; nothing was done"
            }
            Self::PageProtected { .. } => {
                "open an http(s) page instead; the browser's own pages cannot be driven"
            }
            Self::ExecuteFailed { .. } => {
                "check the script; it must be an expression or a function body"
            }
            Self::ElementNotFound { .. } => {
                "check the selector against the page (take a snapshot or fetch html)"
            }
            Self::StaleRef { .. } => {
                "take a new snapshot and use the ref it shows (or the suggested one after checking it)"
            }
            Self::NotActionable { .. } => {
                "deal with what blocks it first (close the overlay, wait for it to enable), or pick another element"
            }
            Self::TargetAmbiguous { .. } => "use one of the listed refs instead of role and name",
            Self::Protocol { .. } => {
                "the browser refused the command; take a snapshot and try a different approach"
            }
            Self::InvalidArgument { .. } => "fix the named argument and call again",
            Self::ProviderUnavailable => "start or register a browser provider",
            Self::ProviderAmbiguous { .. } => "set browserProvider to one of the listed ids",
            Self::ProviderConfiguredMissing { .. } => {
                "register that provider or change the configured browserProvider id"
            }
            Self::ProviderConfiguredUnavailable { .. } => {
                "wait for the configured provider to become available or configure another"
            }
            Self::ProviderDuplicate { .. } => "give each provider a unique id",
        }
    }

    /// Shorthand for an [`BrowserError::InvalidArgument`].
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// Shorthand for a [`BrowserError::NotConnected`].
    pub fn not_connected(reason: impl Into<String>) -> Self {
        Self::NotConnected {
            reason: reason.into(),
        }
    }

    /// Shorthand for a [`BrowserError::Timeout`].
    pub fn timeout(operation: impl Into<String>, after: Duration) -> Self {
        Self::Timeout {
            operation: operation.into(),
            after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_upper_snake_case_with_a_hint() {
        let samples = [
            BrowserError::Aborted,
            BrowserError::ProviderUnavailable,
            BrowserError::invalid("url", "empty"),
            BrowserError::timeout("navigate", Duration::from_millis(5)),
            BrowserError::NavigationBlocked {
                url: "file:///etc/passwd".into(),
                reason: BlockReason::Scheme,
            },
        ];
        for error in samples {
            let code = error.code();
            assert!(
                code.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                "{code}"
            );
            assert!(!error.hint().is_empty());
        }
    }

    #[test]
    fn messages_name_the_details() {
        let error = BrowserError::timeout("navigate", Duration::from_millis(1500));
        assert_eq!(error.to_string(), "navigate timed out after 1500 ms");
        let error = BrowserError::BrowserNotFound {
            tried: vec!["/a".into(), "chromium".into()],
        };
        assert!(error.to_string().contains("/a, chromium"));
    }
}
