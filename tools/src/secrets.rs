//! Secrets the model never sees.
//!
//! A person gives the shell secrets by name (a file, or environment
//! variables); an agent asks for one by name (`browser_act` `type` /
//! `fill` with `secret`), and the value is typed like any text. From then
//! on the value is replaced by `«secret:NAME»` wherever it would reach
//! the agent or the activity timeline: every tool result (snapshots,
//! diffs, content, script results, console and network output) and every
//! summary of arguments. A secret bound to hosts is typed only on pages
//! of those hosts, so a look-alike page cannot get it.
//!
//! Replacing is by value, in the forms pages and results spell it (as is,
//! JSON-escaped, HTML-escaped, URL-encoded): a script that transforms the
//! value (splits it, encodes it otherwise) gets past it. Where that
//! matters, turn `browser_execute` off.

use std::borrow::Cow;
use std::sync::Arc;

use browser_provider::BrowserError;
use browser_provider::policy::host_matches;

/// Shortest value accepted: shorter ones would black out ordinary text.
pub const MIN_VALUE_CHARS: usize = 4;

/// One secret.
#[derive(Clone)]
pub struct Secret {
    /// What agents call it.
    pub name: String,
    /// What is typed.
    value: String,
    /// The hosts (and their subdomains) it may be typed on; empty: any.
    pub hosts: Vec<String>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

impl Secret {
    /// A secret named `name` with `value`, for `hosts` (empty: any host).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for an empty or odd name, or a value shorter
    /// than [`MIN_VALUE_CHARS`].
    pub fn new(name: &str, value: String, hosts: Vec<String>) -> Result<Self, BrowserError> {
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid_name {
            return Err(BrowserError::invalid(
                "secrets",
                format!("{name:?} is not a usable name: use letters, digits, _ - ."),
            ));
        }
        if value.chars().count() < MIN_VALUE_CHARS {
            return Err(BrowserError::invalid(
                "secrets",
                format!(
                    "the value of {name} is shorter than {MIN_VALUE_CHARS} characters; \
                     hiding it would black out ordinary text"
                ),
            ));
        }
        Ok(Self {
            name: name.to_owned(),
            value,
            hosts,
        })
    }

    /// The value, to type.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What stands in for the value.
    pub fn placeholder(&self) -> String {
        format!("«secret:{}»", self.name)
    }

    /// Whether it may be typed on a page at `url`.
    ///
    /// # Errors
    /// `SECRET_NOT_ALLOWED` naming the page's host.
    pub fn check_page(&self, url: &str) -> Result<(), BrowserError> {
        if self.hosts.is_empty() {
            return Ok(());
        }
        let host = url::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .and_then(|u| u.host_str().map(str::to_owned));
        match host {
            Some(host) if self.hosts.iter().any(|rule| host_matches(&host, rule)) => Ok(()),
            host => Err(BrowserError::SecretNotAllowed {
                name: self.name.clone(),
                host: host.unwrap_or_else(|| format!("a page without a web host ({url})")),
            }),
        }
    }

    /// The ways the value can be spelled in text that reaches the agent.
    fn spellings(&self) -> Vec<String> {
        let value = &self.value;
        let json = serde_json::to_string(value).unwrap_or_default();
        let json = json.trim_matches('"').to_owned();
        let html = value
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        let url: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
        let path = url.replace('+', "%20");
        let mut spellings = vec![value.clone(), json, html, url, path];
        spellings.sort();
        spellings.dedup();
        spellings
    }
}

/// The secrets a shell was given. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    entries: Arc<Vec<Secret>>,
    /// Every spelling of every value with its placeholder, longest first
    /// (so a value inside another is not cut up).
    replacements: Arc<Vec<(String, String)>>,
}

impl PartialEq for Secrets {
    fn eq(&self, other: &Self) -> bool {
        let key = |s: &Secret| (s.name.clone(), s.value.clone(), s.hosts.clone());
        self.entries
            .iter()
            .map(key)
            .eq(other.entries.iter().map(key))
    }
}

impl Secrets {
    /// These secrets; a later one of the same name wins.
    pub fn new(entries: Vec<Secret>) -> Self {
        let mut unique: Vec<Secret> = Vec::new();
        for secret in entries {
            unique.retain(|s| s.name != secret.name);
            unique.push(secret);
        }
        unique.sort_by(|a, b| a.name.cmp(&b.name));
        let mut replacements: Vec<(String, String)> = unique
            .iter()
            .flat_map(|secret| {
                let placeholder = secret.placeholder();
                secret
                    .spellings()
                    .into_iter()
                    .map(move |spelling| (spelling, placeholder.clone()))
            })
            .collect();
        replacements.sort_by_key(|(spelling, _)| std::cmp::Reverse(spelling.len()));
        Self {
            entries: Arc::new(unique),
            replacements: Arc::new(replacements),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The names (never the values), sorted.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|s| s.name.as_str()).collect()
    }

    /// The secret called `name`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming it (and the names there are).
    pub fn get(&self, name: &str) -> Result<&Secret, BrowserError> {
        self.entries.iter().find(|s| s.name == name).ok_or_else(|| {
            let known = if self.entries.is_empty() {
                "none were given (--secrets FILE or BROWSER_SHELL_SECRET_<NAME>)".to_owned()
            } else {
                format!("known: {}", self.names().join(", "))
            };
            BrowserError::invalid("secret", format!("there is no secret {name:?}; {known}"))
        })
    }

    /// `text` with every spelling of every value replaced by its
    /// placeholder; borrowed as it is when none occurs.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for (spelling, placeholder) in self.replacements.iter() {
            if text.contains(spelling.as_str()) {
                text = Cow::Owned(text.replace(spelling.as_str(), placeholder));
            }
        }
        text
    }

    /// Hides every value in `data` (a result's `structuredContent`) as
    /// [`Self::redact`] does in text: in every string, and every key. A
    /// number that spells a value (a PIN a script read as a number)
    /// becomes the placeholder, a string.
    pub fn redact_data(&self, data: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match data {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            Value::Number(number) => {
                if let Cow::Owned(redacted) = self.redact(&number.to_string()) {
                    *data = Value::String(redacted);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.redact_data(item);
                }
            }
            Value::Object(map) => {
                let redacted_keys = map
                    .keys()
                    .any(|key| matches!(self.redact(key), Cow::Owned(_)));
                if redacted_keys {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(key, value)| (self.redact(&key).into_owned(), value))
                        .collect();
                }
                for value in map.values_mut() {
                    self.redact_data(value);
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        Secrets::new(vec![
            Secret::new("bank", "pa ss&\"wörd".into(), vec!["bank.example".into()]).unwrap(),
            Secret::new("token", "tok-12345".into(), vec![]).unwrap(),
        ])
    }

    #[test]
    fn every_spelling_of_a_value_is_replaced() {
        let secrets = secrets();
        let text = "typed pa ss&\"wörd; json \"pa ss&\\\"wörd\"; html pa ss&amp;&quot;wörd; \
                    url q=pa+ss%26%22w%C3%B6rd; path /pa%20ss%26%22w%C3%B6rd; and tok-12345.";
        let redacted = secrets.redact(text).into_owned();
        assert_eq!(
            secrets.redact("nothing to hide"),
            Cow::Borrowed("nothing to hide")
        );
        assert!(!redacted.contains("ss&"), "{redacted}");
        assert!(!redacted.contains("pa+ss"), "{redacted}");
        assert!(!redacted.contains("pa%20ss"), "{redacted}");
        assert!(!redacted.contains("tok-12345"), "{redacted}");
        assert_eq!(redacted.matches("«secret:bank»").count(), 5, "{redacted}");
        assert!(redacted.contains("«secret:token»"), "{redacted}");
    }

    #[test]
    fn data_hides_values_in_strings_keys_and_numbers() {
        let secrets = Secrets::new(vec![
            Secret::new("bank", "pa ss&\"wörd".into(), vec![]).unwrap(),
            Secret::new("card", "4111111111111111".into(), vec![]).unwrap(),
        ]);
        let mut data = serde_json::json!({
            "value": {"typed": "pa ss&\"wörd", "pa ss&\"wörd": 1, "number": 4111111111111111u64,
                      "list": ["before pa ss&\"wörd after", true, null, 42]},
            "waitedMs": 212,
        });
        secrets.redact_data(&mut data);
        assert_eq!(
            data,
            serde_json::json!({
                "value": {"typed": "«secret:bank»", "«secret:bank»": 1, "number": "«secret:card»",
                          "list": ["before «secret:bank» after", true, null, 42]},
                "waitedMs": 212,
            })
        );
    }

    #[test]
    fn hosts_bind_a_secret_and_names_are_checked() {
        let secrets = secrets();
        let bank = secrets.get("bank").unwrap();
        assert!(bank.check_page("https://login.bank.example/x").is_ok());
        let refused = bank
            .check_page("https://bank.example.evil.test/")
            .unwrap_err();
        assert_eq!(refused.code(), "SECRET_NOT_ALLOWED");
        assert!(refused.to_string().contains("bank.example.evil.test"));
        assert!(!refused.to_string().contains("wörd"));
        assert!(
            secrets
                .get("token")
                .unwrap()
                .check_page("about:blank")
                .is_ok()
        );
        let unknown = secrets.get("nope").unwrap_err();
        assert_eq!(unknown.code(), "INVALID_ARGUMENT");
        assert!(unknown.to_string().contains("bank, token"), "{unknown}");
        assert!(Secret::new("short", "abc".into(), vec![]).is_err());
        assert!(Secret::new("bad name", "abcdef".into(), vec![]).is_err());
        assert!(!format!("{bank:?}").contains("wörd"));
    }
}
