//! Who may talk to the shell's network surfaces: a random per-launch token
//! on every request, and no foreign web page (`Origin`) or host (`Host`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
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

/// The environment variable that sets the full-access token of every
/// shell of a team (several shells behind one balancer let the same
/// clients in); unset: a random token per launch.
pub const TOKEN_ENV: &str = "BROWSER_SHELL_TOKEN";

/// The environment variable that sets the relay's view-only token the
/// same way (see [`TOKEN_ENV`]).
pub const VIEW_TOKEN_ENV: &str = "BROWSER_SHELL_VIEW_TOKEN";

/// The shortest token a team may configure: as hard to guess as a
/// random one should be.
const SHORTEST_TOKEN: usize = 32;

/// The token in `variable` when one is set, else a random one.
///
/// # Errors
/// `INVALID_ARGUMENT` for a configured token shorter than 32 characters,
/// or with characters other than printable ASCII (it travels in headers
/// and URLs); as [`random_token`].
pub fn configured_or_random(variable: &str) -> Result<String> {
    let Some(given) = std::env::var_os(variable) else {
        return random_token();
    };
    let given = given.into_string().map_err(|_| {
        BrowserError::invalid(variable, "is not Unicode; use letters, digits and - _ .")
    })?;
    let usable = given
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b));
    if given.len() < SHORTEST_TOKEN || !usable {
        return Err(BrowserError::invalid(
            variable,
            format!(
                "needs at least {SHORTEST_TOKEN} characters of letters, digits and - _ . ~ \
                 (for example the output of `openssl rand -hex 32`)"
            ),
        ));
    }
    Ok(given)
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

/// Wrong tokens an address may send before its answers are slowed down.
const FREE_FAILURES: u32 = 5;

/// How much slower each wrong token beyond the free ones makes the answers.
const DELAY_STEP: Duration = Duration::from_millis(250);

/// The slowest an answer gets.
const MAX_DELAY: Duration = Duration::from_secs(5);

/// How long an address's wrong tokens are remembered.
const FAILURE_MEMORY: Duration = Duration::from_secs(600);

/// Addresses remembered at most (the oldest are forgotten first).
const MAX_ADDRESSES: usize = 4096;

/// Slows down whoever guesses tokens: once an address has sent more than
/// a few wrong ones, every answer to it waits a little longer (up to a few
/// seconds), until it sends a right one or ten minutes pass.
#[derive(Debug, Clone, Default)]
pub struct Throttle {
    failures: Arc<Mutex<HashMap<IpAddr, (u32, Instant)>>>,
}

impl Throttle {
    /// How long an answer to `address` waits now.
    fn delay(&self, address: IpAddr) -> Duration {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        match failures.get(&address) {
            Some((count, last)) if last.elapsed() < FAILURE_MEMORY && *count > FREE_FAILURES => {
                (DELAY_STEP * (*count - FREE_FAILURES)).min(MAX_DELAY)
            }
            _ => Duration::ZERO,
        }
    }

    /// Notes how a request from `address` went.
    fn note(&self, address: IpAddr, status: StatusCode) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if status == StatusCode::UNAUTHORIZED {
            if failures.len() >= MAX_ADDRESSES && !failures.contains_key(&address) {
                failures.retain(|_, (_, last)| last.elapsed() < FAILURE_MEMORY);
                if failures.len() >= MAX_ADDRESSES
                    && let Some(oldest) = failures.iter().min_by_key(|(_, (_, last))| *last)
                {
                    let oldest = *oldest.0;
                    failures.remove(&oldest);
                }
            }
            let entry = failures.entry(address).or_insert((0, Instant::now()));
            if entry.1.elapsed() >= FAILURE_MEMORY {
                entry.0 = 0;
            }
            entry.0 = entry.0.saturating_add(1);
            entry.1 = Instant::now();
            if entry.0 == FREE_FAILURES + 1 {
                tracing::warn!(%address, "repeated wrong tokens; slowing this address down");
            }
        } else if status.is_success() || status == StatusCode::SWITCHING_PROTOCOLS {
            failures.remove(&address);
        }
    }

    /// The middleware: waits as [`Throttle`] says before answering, and
    /// learns from the answer.
    pub async fn layer(self, request: Request, next: Next) -> Response {
        let address = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0.ip());
        let Some(address) = address else {
            return next.run(request).await;
        };
        let delay = self.delay(address);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let response = next.run(request).await;
        self.note(address, response.status());
        response
    }
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

    #[test]
    fn wrong_tokens_slow_an_address_down_until_a_right_one() {
        let throttle = Throttle::default();
        let guesser: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        for _ in 0..FREE_FAILURES {
            throttle.note(guesser, StatusCode::UNAUTHORIZED);
        }
        assert_eq!(throttle.delay(guesser), Duration::ZERO);
        throttle.note(guesser, StatusCode::UNAUTHORIZED);
        throttle.note(guesser, StatusCode::UNAUTHORIZED);
        assert_eq!(throttle.delay(guesser), DELAY_STEP * 2);
        for _ in 0..100 {
            throttle.note(guesser, StatusCode::UNAUTHORIZED);
        }
        assert_eq!(throttle.delay(guesser), MAX_DELAY);
        assert_eq!(throttle.delay(other), Duration::ZERO);
        throttle.note(guesser, StatusCode::OK);
        assert_eq!(throttle.delay(guesser), Duration::ZERO);
    }
}
