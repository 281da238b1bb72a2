//! Navigation policy: which URLs an agent may open, and which hosts the
//! browser may reach at all.
//!
//! Checked before every navigation we start. By default only `http(s)` and
//! `about:blank` pass; `file:`, `data:`, `javascript:`, `chrome:`,
//! `view-source:` and every other scheme are refused with
//! `NAVIGATION_BLOCKED`. Optional host lists narrow it further.
//!
//! The host lists hold on the wire too: a browser the shell launches gets
//! them as resolver rules ([`NavigationPolicy::host_resolver_rules`]), so
//! its network stack cannot reach a refused host whoever asks — a
//! redirect, a link, a script, a frame, a worker, a WebSocket. Such a
//! request fails at once as if the name did not exist;
//! [`NavigationPolicy::refuses_host`] tells that failure apart from a real
//! one. Out of reach of resolver rules is a blocked host inside an allowed
//! domain (allow `example.org`, block `ads.example.org`): Chromium's
//! exclusions win over its mappings, so those hosts are blocked per page
//! instead ([`NavigationPolicy::nested_blocked_patterns`]).
//!
//! A session may narrow the browser's policy with host lists of its own
//! ([`HostRules`], the command line's `--block-host` on a running
//! instance): they are checked before its navigations and held per page
//! with `Network.setBlockedURLs` ([`SessionPolicy::page_blocking`]), which
//! refuses the page's own requests and navigations but not its workers',
//! WebSockets' and out-of-process frames' (the browser-wide lists, fixed
//! when it starts, hold for those too).

use serde::{Deserialize, Serialize};
use url::Url;

use crate::cdp::protocol::BlockPattern;
use crate::error::{BlockReason, BrowserError, Result};

/// The rules for opening URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NavigationPolicy {
    /// Only http(s) and `about:blank` (the default). When off, any scheme
    /// Chromium accepts may be opened — only for trusted local use.
    pub http_only: bool,
    /// When non-empty, only these hosts (and their subdomains) may be opened.
    pub allowed_hosts: Vec<String>,
    /// These hosts (and their subdomains) may never be opened. Wins over the allow list.
    pub blocked_hosts: Vec<String>,
}

impl Default for NavigationPolicy {
    fn default() -> Self {
        Self {
            http_only: true,
            allowed_hosts: Vec::new(),
            blocked_hosts: Vec::new(),
        }
    }
}

impl NavigationPolicy {
    /// Checks `raw` and returns the parsed URL to navigate to.
    ///
    /// # Errors
    /// `NAVIGATION_BLOCKED` with the rule that refused it.
    pub fn check(&self, raw: &str) -> Result<Url> {
        let blocked = |reason| BrowserError::NavigationBlocked {
            url: raw.to_owned(),
            reason,
        };
        let url = Url::parse(raw.trim()).map_err(|_| blocked(BlockReason::Unparsable))?;
        let is_web = matches!(url.scheme(), "http" | "https");
        if url.as_str() == "about:blank" {
            return Ok(url);
        }
        if self.http_only && !is_web {
            return Err(blocked(BlockReason::Scheme));
        }
        if let Some(host) = url.host_str() {
            if self
                .blocked_hosts
                .iter()
                .any(|rule| host_matches(host, rule))
            {
                return Err(blocked(BlockReason::HostDenied));
            }
            if !self.allowed_hosts.is_empty()
                && !self
                    .allowed_hosts
                    .iter()
                    .any(|rule| host_matches(host, rule))
            {
                return Err(blocked(BlockReason::HostNotAllowed));
            }
        } else if is_web || !self.allowed_hosts.is_empty() {
            return Err(blocked(BlockReason::Unparsable));
        }
        Ok(url)
    }
}

impl NavigationPolicy {
    /// Why a request to `url` is refused by the host lists, if it is: for
    /// explaining a request the browser's network stack refused.
    pub fn refuses_host(&self, url: &str) -> Option<BlockReason> {
        lists_refuse(url, &self.allowed_hosts, &self.blocked_hosts)
    }

    /// The host lists as Chromium's `--host-resolver-rules`: every refused
    /// host resolves to nothing (`~NOTFOUND`), IP literals included.
    /// `None` when there are no lists.
    pub fn host_resolver_rules(&self) -> Option<String> {
        let mut rules = Vec::new();
        for rule in self.blocked_hosts.iter().filter_map(|r| normalized_rule(r)) {
            rules.push(format!("MAP {rule} ~NOTFOUND"));
            if !is_ip(&rule) {
                rules.push(format!("MAP *.{rule} ~NOTFOUND"));
            }
        }
        if !self.allowed_hosts.is_empty() {
            rules.push("MAP * ~NOTFOUND".to_owned());
            for rule in self.allowed_hosts.iter().filter_map(|r| normalized_rule(r)) {
                // A blocked host that is the allowed one stays blocked: an
                // exclusion would let it through.
                if self.blocked_hosts.iter().any(|b| host_matches(&rule, b)) {
                    continue;
                }
                rules.push(format!("EXCLUDE {rule}"));
                if !is_ip(&rule) {
                    rules.push(format!("EXCLUDE *.{rule}"));
                }
            }
        }
        (!rules.is_empty()).then(|| rules.join(", "))
    }

    /// URL patterns (for `Network.setBlockedURLs`) of blocked hosts that lie
    /// inside an allowed domain, which resolver rules cannot refuse.
    pub fn nested_blocked_patterns(&self) -> Vec<String> {
        let mut patterns = Vec::new();
        for blocked in self.nested_blocked_hosts() {
            for host in [blocked.clone(), format!("*.{blocked}")] {
                patterns.push(format!("*://{host}/*"));
                patterns.push(format!("*://{host}:*"));
            }
        }
        patterns
    }

    /// The blocked hosts (normalized) that lie inside an allowed domain.
    fn nested_blocked_hosts(&self) -> Vec<String> {
        self.blocked_hosts
            .iter()
            .filter_map(|r| normalized_rule(r))
            .filter(|blocked| {
                self.allowed_hosts
                    .iter()
                    .filter_map(|r| normalized_rule(r))
                    .any(|allowed| &allowed != blocked && host_matches(blocked, &allowed))
            })
            .collect()
    }
}

/// Why `url`'s host is refused by an allow list and a block list (a
/// block wins; an empty allow list allows every host), if it is.
fn lists_refuse(url: &str, allowed: &[String], blocked: &[String]) -> Option<BlockReason> {
    let url = Url::parse(url.trim()).ok()?;
    let host = url.host_str()?;
    if blocked.iter().any(|rule| host_matches(host, rule)) {
        return Some(BlockReason::HostDenied);
    }
    if !allowed.is_empty() && !allowed.iter().any(|rule| host_matches(host, rule)) {
        return Some(BlockReason::HostNotAllowed);
    }
    None
}

/// Host lists one session adds to the browser's policy. They only narrow
/// it: a host the browser refuses stays refused whatever they say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostRules {
    /// When non-empty, the session may only reach these hosts (and their
    /// subdomains), among those the browser allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// The session may never reach these hosts (and their subdomains).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_hosts: Vec<String>,
}

impl HostRules {
    /// Whether the session adds nothing to the browser's policy.
    pub fn is_empty(&self) -> bool {
        self.allowed_hosts.is_empty() && self.blocked_hosts.is_empty()
    }

    /// Checks every rule is a host name or address.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the list and the rule.
    pub fn validated(self) -> Result<Self> {
        for (list, rules) in [
            ("allowedHosts", &self.allowed_hosts),
            ("blockedHosts", &self.blocked_hosts),
        ] {
            for rule in rules {
                let Some(host) = normalized_rule(rule) else {
                    return Err(BrowserError::invalid(
                        list,
                        format!("{rule:?} is not a host name (give one such as example.org)"),
                    ));
                };
                if !host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
                {
                    return Err(BrowserError::invalid(
                        list,
                        format!(
                            "{rule:?} is not a host name (letters, digits, dots and dashes, \
                             or an IP address)"
                        ),
                    ));
                }
            }
        }
        Ok(self)
    }
}

/// The policy one session's pages live under: the browser's, narrowed by
/// the session's own [`HostRules`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPolicy {
    /// The browser's policy, for every session.
    pub browser: NavigationPolicy,
    /// The session's own narrowing.
    pub own: HostRules,
}

/// What a page is told to refuse (`Network.setBlockedURLs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageBlocking {
    /// Wildcard patterns (the browser's blocked hosts inside allowed
    /// domains), understood by every Chromium.
    pub urls: Vec<String>,
    /// URL patterns in order, the first that matches deciding (a
    /// session's own lists); empty when the session has none.
    pub patterns: Vec<BlockPattern>,
}

impl PageBlocking {
    /// Whether the page refuses nothing.
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty() && self.patterns.is_empty()
    }
}

impl SessionPolicy {
    /// Checks `raw` against the browser's policy, then the session's lists.
    ///
    /// # Errors
    /// `NAVIGATION_BLOCKED` with the rule that refused it.
    pub fn check(&self, raw: &str) -> Result<Url> {
        let url = self.browser.check(raw)?;
        match lists_refuse(
            url.as_str(),
            &self.own.allowed_hosts,
            &self.own.blocked_hosts,
        ) {
            Some(reason) => Err(BrowserError::NavigationBlocked {
                url: raw.to_owned(),
                reason,
            }),
            None => Ok(url),
        }
    }

    /// Why a request to `url` is refused by either's host lists, if it is.
    pub fn refuses_host(&self, url: &str) -> Option<BlockReason> {
        self.browser
            .refuses_host(url)
            .or_else(|| lists_refuse(url, &self.own.allowed_hosts, &self.own.blocked_hosts))
    }

    /// Whether any host list applies (without one nothing is refused on
    /// the wire).
    pub fn has_host_lists(&self) -> bool {
        !self.browser.allowed_hosts.is_empty()
            || !self.browser.blocked_hosts.is_empty()
            || !self.own.is_empty()
    }

    /// What the session's pages refuse themselves: the browser's nested
    /// blocked hosts, and the session's lists as URL patterns — its
    /// blocked hosts first (a block wins), then its allowed hosts, then
    /// every other web URL when it has an allow list.
    pub fn page_blocking(&self) -> PageBlocking {
        let urls = self.browser.nested_blocked_patterns();
        if self.own.is_empty() {
            return PageBlocking {
                urls,
                patterns: Vec::new(),
            };
        }
        let mut patterns = Vec::new();
        let hosts = |rules: &[String], block: bool, patterns: &mut Vec<BlockPattern>| {
            for rule in rules.iter().filter_map(|r| normalized_rule(r)) {
                let escaped = escaped_for_url_pattern(&rule);
                patterns.push(BlockPattern::new(format!("*://{escaped}:*/*"), block));
                if !is_ip(&rule) {
                    patterns.push(BlockPattern::new(format!("*://*.{escaped}:*/*"), block));
                }
            }
        };
        // The browser's nested blocks first: an allowed pattern that came
        // before them would win over them.
        hosts(&self.browser.nested_blocked_hosts(), true, &mut patterns);
        hosts(&self.own.blocked_hosts, true, &mut patterns);
        if !self.own.allowed_hosts.is_empty() {
            hosts(&self.own.allowed_hosts, false, &mut patterns);
            for scheme in ["http", "https", "ws", "wss"] {
                patterns.push(BlockPattern::new(format!("{scheme}://*:*/*"), true));
            }
        }
        PageBlocking { urls, patterns }
    }
}

/// `host` with URLPattern's special characters escaped (an IPv6
/// address's colons and brackets).
fn escaped_for_url_pattern(host: &str) -> String {
    let mut escaped = String::with_capacity(host.len());
    if host.contains(':') {
        escaped.push_str("\\[");
    }
    for c in host.chars() {
        if !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    if host.contains(':') {
        escaped.push_str("\\]");
    }
    escaped
}

/// A host rule as resolver rules spell it: lower case, without the `*.`
/// prefix, a trailing dot or IPv6 brackets; `None` when nothing is left.
fn normalized_rule(rule: &str) -> Option<String> {
    let rule = rule
        .trim()
        .trim_start_matches("*.")
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    // Separators of the rules' own syntax cannot be part of a host.
    (!rule.is_empty() && !rule.contains([',', ' ', '\t'])).then_some(rule)
}

/// An IP address has no subdomains.
fn is_ip(rule: &str) -> bool {
    rule.parse::<std::net::IpAddr>().is_ok()
}

/// `rule` matches the host itself and every subdomain of it, case-insensitively.
pub fn host_matches(host: &str, rule: &str) -> bool {
    let host = host
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let Some(rule) = normalized_rule(rule) else {
        return false;
    };
    host == rule || host.ends_with(&format!(".{rule}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(policy: &NavigationPolicy, url: &str) -> &'static str {
        match policy.check(url) {
            Ok(_) => "OK",
            Err(e) => e.code(),
        }
    }

    #[test]
    fn default_allows_only_web_and_blank() {
        let policy = NavigationPolicy::default();
        assert_eq!(code(&policy, "http://127.0.0.1:8080/a"), "OK");
        assert_eq!(code(&policy, "https://example.test/"), "OK");
        assert_eq!(code(&policy, "about:blank"), "OK");
        for url in [
            "file:///etc/passwd",
            "data:text/html,<b>x</b>",
            "javascript:alert(1)",
            "chrome://settings",
            "view-source:http://example.test/",
            "about:config",
            "ftp://example.test/",
            "not a url",
            "",
        ] {
            assert_eq!(code(&policy, url), "NAVIGATION_BLOCKED", "{url}");
        }
    }

    #[test]
    fn host_lists_match_subdomains_and_deny_wins() {
        let policy = NavigationPolicy {
            http_only: true,
            allowed_hosts: vec!["example.test".into(), "127.0.0.1".into()],
            blocked_hosts: vec!["ads.example.test".into()],
        };
        assert_eq!(code(&policy, "http://example.test/"), "OK");
        assert_eq!(code(&policy, "http://www.Example.test/"), "OK");
        assert_eq!(code(&policy, "http://127.0.0.1:9/"), "OK");
        assert_eq!(
            code(&policy, "http://badexample.test/"),
            "NAVIGATION_BLOCKED"
        );
        assert_eq!(
            code(&policy, "http://x.ads.example.test/"),
            "NAVIGATION_BLOCKED"
        );
        let error = policy.check("http://other.test/").err();
        assert!(matches!(
            error,
            Some(BrowserError::NavigationBlocked {
                reason: BlockReason::HostNotAllowed,
                ..
            })
        ));
    }

    #[test]
    fn host_lists_become_resolver_rules() {
        assert_eq!(NavigationPolicy::default().host_resolver_rules(), None);
        let policy = NavigationPolicy {
            http_only: true,
            allowed_hosts: vec!["Example.test".into(), "[::1]".into(), "ads.test".into()],
            blocked_hosts: vec!["*.ads.test".into(), "x.example.test".into()],
        };
        assert_eq!(
            policy.host_resolver_rules().as_deref(),
            Some(
                "MAP ads.test ~NOTFOUND, MAP *.ads.test ~NOTFOUND, \
                 MAP x.example.test ~NOTFOUND, MAP *.x.example.test ~NOTFOUND, \
                 MAP * ~NOTFOUND, EXCLUDE example.test, EXCLUDE *.example.test, \
                 EXCLUDE ::1"
            )
        );
        // The exclusion of example.test would let x.example.test through.
        assert_eq!(
            policy.nested_blocked_patterns(),
            [
                "*://x.example.test/*",
                "*://x.example.test:*",
                "*://*.x.example.test/*",
                "*://*.x.example.test:*"
            ]
        );
        assert_eq!(policy.refuses_host("http://example.test:8/a"), None);
        assert_eq!(policy.refuses_host("ws://[::1]:9/"), None);
        assert_eq!(
            policy.refuses_host("https://a.x.example.test/"),
            Some(BlockReason::HostDenied)
        );
        assert_eq!(
            policy.refuses_host("http://localhost/"),
            Some(BlockReason::HostNotAllowed)
        );
        assert_eq!(policy.refuses_host("data:text/plain,hi"), None);
    }

    #[test]
    fn a_session_narrows_the_browser_policy_and_never_widens_it() {
        let session = SessionPolicy {
            browser: NavigationPolicy {
                http_only: true,
                allowed_hosts: vec!["example.test".into(), "127.0.0.1".into()],
                blocked_hosts: vec!["ads.example.test".into()],
            },
            own: HostRules {
                allowed_hosts: vec!["example.test".into(), "other.test".into()],
                blocked_hosts: vec!["Tracker.Example.test".into()],
            },
        };
        let code = |url: &str| match session.check(url) {
            Ok(_) => "OK",
            Err(e) => e.code(),
        };
        assert_eq!(code("http://www.example.test/"), "OK");
        // The session's own lists.
        assert_eq!(code("http://a.tracker.example.test/"), "NAVIGATION_BLOCKED");
        assert_eq!(code("http://127.0.0.1:9/"), "NAVIGATION_BLOCKED");
        // The session's allow list cannot let in what the browser refuses.
        assert_eq!(code("http://other.test/"), "NAVIGATION_BLOCKED");
        assert_eq!(code("http://ads.example.test/"), "NAVIGATION_BLOCKED");
        assert_eq!(code("file:///etc/passwd"), "NAVIGATION_BLOCKED");
        assert_eq!(
            session.refuses_host("http://127.0.0.1:9/"),
            Some(BlockReason::HostNotAllowed)
        );
        assert_eq!(
            session.refuses_host("ws://tracker.example.test/"),
            Some(BlockReason::HostDenied)
        );
        assert_eq!(session.refuses_host("http://example.test/"), None);
    }

    #[test]
    fn a_session_policy_becomes_ordered_page_patterns() {
        let browser = NavigationPolicy {
            http_only: true,
            allowed_hosts: vec!["example.test".into()],
            blocked_hosts: vec!["ads.example.test".into()],
        };
        let alone = SessionPolicy {
            browser: browser.clone(),
            own: HostRules::default(),
        };
        assert_eq!(
            alone.page_blocking(),
            PageBlocking {
                urls: browser.nested_blocked_patterns(),
                patterns: Vec::new(),
            }
        );
        let narrowed = SessionPolicy {
            browser,
            own: HostRules {
                allowed_hosts: vec!["www.example.test".into()],
                blocked_hosts: vec!["::1".into()],
            },
        };
        let patterns: Vec<(String, bool)> = narrowed
            .page_blocking()
            .patterns
            .into_iter()
            .map(|p| (p.url_pattern, p.block))
            .collect();
        let expected: Vec<(String, bool)> = [
            ("*://ads.example.test:*/*", true),
            ("*://*.ads.example.test:*/*", true),
            (r"*://\[\:\:1\]:*/*", true),
            ("*://www.example.test:*/*", false),
            ("*://*.www.example.test:*/*", false),
            ("http://*:*/*", true),
            ("https://*:*/*", true),
            ("ws://*:*/*", true),
            ("wss://*:*/*", true),
        ]
        .into_iter()
        .map(|(p, b)| (p.to_owned(), b))
        .collect();
        assert_eq!(patterns, expected);
    }

    #[test]
    fn session_rules_must_be_hosts() {
        for bad in ["", "*.", "a b", "example.test/path", "x(y)"] {
            let rules = HostRules {
                allowed_hosts: Vec::new(),
                blocked_hosts: vec![bad.into()],
            };
            let error = rules.validated().err();
            assert_eq!(
                error.as_ref().map(BrowserError::code),
                Some("INVALID_ARGUMENT"),
                "{bad:?}"
            );
        }
        let fine = HostRules {
            allowed_hosts: vec!["[::1]".into(), "*.example.test".into()],
            blocked_hosts: vec!["127.0.0.1".into()],
        };
        assert_eq!(fine.clone().validated().ok(), Some(fine));
    }

    #[test]
    fn http_only_off_allows_other_schemes() {
        let policy = NavigationPolicy {
            http_only: false,
            ..NavigationPolicy::default()
        };
        assert_eq!(code(&policy, "data:text/html,hi"), "OK");
    }
}
