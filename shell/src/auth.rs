//! Who may talk to the shell's network surfaces: a random per-launch token
//! on every request, and no foreign web page (`Origin`) or host (`Host`).

use axum::http::{HeaderMap, header};
use browser_provider::{BrowserError, Result};

/// A random token: 32 bytes from the operating system, as hex.
pub fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| BrowserError::invalid("token", format!("no randomness available: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares two secrets in constant time.
pub fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The `token` query parameter.
pub fn query_token(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(key, _)| key == "token")
        .map(|(_, value)| value.into_owned())
}

/// No `Origin` (a non-browser client), or a loopback one.
pub fn origin_is_loopback(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
}

/// The `Host` names a loopback address (DNS-rebinding protection).
pub fn host_is_loopback(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    matches!(name, "127.0.0.1" | "localhost" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_do_what_they_say() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
        assert_eq!(query_token(Some("a=1&token=x%20y")), Some("x y".into()));
        assert_eq!(query_token(None), None);
        let mut headers = HeaderMap::new();
        assert!(origin_is_loopback(&headers));
        headers.insert(header::ORIGIN, "https://evil.test".parse().unwrap());
        assert!(!origin_is_loopback(&headers));
        headers.insert(header::HOST, "127.0.0.1:9000".parse().unwrap());
        assert!(host_is_loopback(&headers));
        headers.insert(header::HOST, "attacker.test:9000".parse().unwrap());
        assert!(!host_is_loopback(&headers));
        assert_eq!(random_token().unwrap().len(), 64);
    }
}
