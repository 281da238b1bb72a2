//! Navigation policy: which URLs an agent may open.
//!
//! Checked before every navigation we start. By default only `http(s)` and
//! `about:blank` pass; `file:`, `data:`, `javascript:`, `chrome:`,
//! `view-source:` and every other scheme are refused with
//! `NAVIGATION_BLOCKED`. Optional host lists narrow it further.

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

/// `rule` matches the host itself and every subdomain of it, case-insensitively.
fn host_matches(host: &str, rule: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let rule = rule
        .trim()
        .trim_start_matches("*.")
        .trim_end_matches('.')
        .to_ascii_lowercase();
    !rule.is_empty() && (host == rule || host.ends_with(&format!(".{rule}")))
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
    fn http_only_off_allows_other_schemes() {
        let policy = NavigationPolicy {
            http_only: false,
            ..NavigationPolicy::default()
        };
        assert_eq!(code(&policy, "data:text/html,hi"), "OK");
    }
}
