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

use url::Url;

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
        let url = Url::parse(url.trim()).ok()?;
        let host = url.host_str()?;
        if self
            .blocked_hosts
            .iter()
            .any(|rule| host_matches(host, rule))
        {
            return Some(BlockReason::HostDenied);
        }
        if !self.allowed_hosts.is_empty()
            && !self
                .allowed_hosts
                .iter()
                .any(|rule| host_matches(host, rule))
        {
            return Some(BlockReason::HostNotAllowed);
        }
        None
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
        for blocked in self.blocked_hosts.iter().filter_map(|r| normalized_rule(r)) {
            let inside_allowed = self
                .allowed_hosts
                .iter()
                .filter_map(|r| normalized_rule(r))
                .any(|allowed| allowed != blocked && host_matches(&blocked, &allowed));
            if inside_allowed {
                for host in [blocked.clone(), format!("*.{blocked}")] {
                    patterns.push(format!("*://{host}/*"));
                    patterns.push(format!("*://{host}:*"));
                }
            }
        }
        patterns
    }
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
    fn http_only_off_allows_other_schemes() {
        let policy = NavigationPolicy {
            http_only: false,
            ..NavigationPolicy::default()
        };
        assert_eq!(code(&policy, "data:text/html,hi"), "OK");
    }
}
