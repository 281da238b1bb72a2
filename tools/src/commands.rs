//! The command line's tool commands: `browser-shell open|snapshot|act|…`.
//!
//! Each command is one `browser_*` tool call with the same arguments an
//! agent would send over MCP, so people, shell-using agents and MCP agents
//! see the same behaviour and the same text. This module only turns
//! command-line words into that call; where it runs is the caller's
//! business.

use std::path::PathBuf;

use browser_provider::BrowserError;
use serde_json::{Map, Value, json};

/// A command that becomes one tool call.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ToolCommand {
    /// Open a URL in the active tab (or a new one) and print its snapshot.
    ///
    /// Examples:
    ///   browser-shell open https://example.org
    ///   browser-shell open https://example.org/docs --new-tab
    #[command(verbatim_doc_comment)]
    Open {
        /// The http(s) URL.
        url: String,
        /// Open in a new tab.
        #[arg(long)]
        new_tab: bool,
        /// Leave the tab open for the person when the session ends.
        #[arg(long)]
        keep: bool,
    },
    /// Go to a URL, or back, forward or reload, and print the snapshot.
    ///
    /// Examples:
    ///   browser-shell navigate back
    ///   browser-shell navigate https://example.org/next
    #[command(verbatim_doc_comment)]
    Navigate {
        /// A URL, or one of: back, forward, reload.
        target: String,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Print the page as a tree with element refs (e1, e2, …) to act on.
    ///
    /// Examples:
    ///   browser-shell snapshot
    ///   browser-shell snapshot --selector main
    #[command(verbatim_doc_comment)]
    Snapshot {
        /// Only this ref's subtree.
        #[arg(long = "ref", value_name = "REF", conflicts_with = "selector")]
        reference: Option<String>,
        /// Only the first element matching this CSS selector.
        #[arg(long)]
        selector: Option<String>,
        /// The tab (such as t2); default: the active tab. It becomes active.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Act on an element by ref and print what changed.
    ///
    /// ACTION is one of click, type, fill, press, select, check, uncheck,
    /// hover, focus, scroll, drag. VALUES are the text for type and fill,
    /// the key for press, the options for select, the drop ref for drag.
    ///
    /// Examples:
    ///   browser-shell act click e12
    ///   browser-shell act fill e7 "ada@example.test" --submit
    ///   browser-shell act press e7 Control+A
    ///   browser-shell act press Escape
    ///   browser-shell act select e9 Large
    ///   browser-shell act drag e3 e8
    ///   browser-shell act scroll --dy 600
    ///   browser-shell act click --role button --name "Add item"
    #[command(verbatim_doc_comment)]
    Act(ActCommand),
    /// Run JavaScript in the page and print the result as JSON.
    ///
    /// Examples:
    ///   browser-shell execute "document.title"
    ///   browser-shell execute "return arguments[0] * 2" --arg 21
    ///   browser-shell execute - < script.js
    #[command(verbatim_doc_comment)]
    Execute {
        /// An expression or a function body with `return`; `-` reads standard input.
        script: String,
        /// A JSON value passed as arguments[0], arguments[1], … (repeatable).
        #[arg(long = "arg", value_name = "JSON", value_parser = parse_json)]
        args: Vec<Value>,
        /// Give up after this many milliseconds.
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Print the page's content: markdown (default), txt, html or json.
    ///
    /// Examples:
    ///   browser-shell content
    ///   browser-shell content --format json --selector article
    #[command(verbatim_doc_comment)]
    Content {
        /// markdown, txt, html or json.
        #[arg(long, short, value_parser = ["markdown", "txt", "html", "json"])]
        format: Option<String>,
        /// Only the first element matching this CSS selector.
        #[arg(long, short)]
        selector: Option<String>,
        /// Cut after this many characters.
        #[arg(long, value_name = "N")]
        max_chars: Option<usize>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Save a screenshot of the viewport, the whole page or one element.
    ///
    /// Examples:
    ///   browser-shell screenshot -o page.png
    ///   browser-shell screenshot --full-page -o page.jpg --format jpeg --quality 70
    ///   browser-shell screenshot --ref e12 -o button.png
    #[command(verbatim_doc_comment)]
    Screenshot {
        /// The file to write (default: screenshot.png or screenshot.jpg).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The whole scrollable page.
        #[arg(long)]
        full_page: bool,
        /// Only this ref's element.
        #[arg(long = "ref", value_name = "REF", conflicts_with = "selector")]
        reference: Option<String>,
        /// Only the element matching this CSS selector.
        #[arg(long)]
        selector: Option<String>,
        /// png (default) or jpeg.
        #[arg(long, value_parser = ["png", "jpeg"])]
        format: Option<String>,
        /// JPEG quality 1-100.
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
        quality: Option<u8>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Wait (bounded) for one condition; fails with TIMEOUT saying what it saw.
    ///
    /// Examples:
    ///   browser-shell wait --text "Saved"
    ///   browser-shell wait --ref e12 --state hidden
    ///   browser-shell wait --url /checkout --timeout-ms 20000
    ///   browser-shell wait --stable
    #[command(verbatim_doc_comment)]
    Wait {
        /// Until this text is visible on the page.
        #[arg(long)]
        text: Option<String>,
        /// Until this text is gone from the page.
        #[arg(long)]
        text_gone: Option<String>,
        /// Until the element with this ref reaches --state.
        #[arg(long = "ref", value_name = "REF")]
        reference: Option<String>,
        /// Until an element with this role (and --name) reaches --state.
        #[arg(long, requires = "name")]
        role: Option<String>,
        /// The exact accessible name, with --role.
        #[arg(long, requires = "role")]
        name: Option<String>,
        /// visible (default), hidden or enabled.
        #[arg(long, value_parser = ["visible", "hidden", "enabled"])]
        state: Option<String>,
        /// Until the URL contains this text.
        #[arg(long)]
        url: Option<String>,
        /// Until the page has loaded this far: load, domcontentloaded, or
        /// networkidle (loaded, then no request for 500 ms).
        #[arg(long, value_parser = ["load", "domcontentloaded", "networkidle"])]
        load: Option<String>,
        /// Until a request whose URL contains this has ended (and none like it is in flight).
        #[arg(long)]
        request: Option<String>,
        /// Until this JavaScript expression is truthy.
        #[arg(long)]
        script: Option<String>,
        /// Until the page stops changing for 500 ms.
        #[arg(long)]
        stable: bool,
        /// Give up after this many milliseconds (default 10000).
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Inspect one element: role, name, style, box, visibility, form
    /// state and a CSS selector that matches only it (printed as JSON).
    ///
    /// Examples:
    ///   browser-shell inspect e12
    ///   browser-shell inspect --selector "#save" --style background-color --style width
    #[command(verbatim_doc_comment)]
    Inspect {
        /// The element's ref from the latest snapshot.
        #[arg(value_name = "REF", required_unless_present = "selector")]
        reference: Option<String>,
        /// Or a CSS selector matching exactly one element.
        #[arg(long, conflicts_with = "reference")]
        selector: Option<String>,
        /// A computed style property to report (repeatable; "all" for every one).
        #[arg(long = "style", value_name = "PROPERTY")]
        styles: Vec<String>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Print the tab's console messages and uncaught exceptions.
    ///
    /// Examples:
    ///   browser-shell console --level error
    ///   browser-shell console --since 17
    #[command(verbatim_doc_comment)]
    Console {
        /// Only this level and above: debug, info, warning, error.
        #[arg(long, value_parser = ["debug", "info", "warning", "error"])]
        level: Option<String>,
        /// Only entries after this cursor (printed by the last read).
        #[arg(long, value_name = "CURSOR")]
        since: Option<u64>,
        /// At most this many entries (default 100).
        #[arg(long)]
        limit: Option<usize>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// Print the tab's requests (status, type, size, timing, failures), or one response body.
    ///
    /// Examples:
    ///   browser-shell network --failed
    ///   browser-shell network --url /api/ --headers
    ///   browser-shell network --body 7
    #[command(verbatim_doc_comment)]
    Network {
        /// Only failed requests (network errors, HTTP 4xx/5xx).
        #[arg(long)]
        failed: bool,
        /// Only URLs containing this.
        #[arg(long)]
        url: Option<String>,
        /// Only this resource type: document, stylesheet, script, image, fetch, xhr, …
        #[arg(long = "type", value_name = "TYPE")]
        resource_type: Option<String>,
        /// Only requests after this cursor (printed by the last read).
        #[arg(long, value_name = "CURSOR")]
        since: Option<u64>,
        /// At most this many requests (default 50).
        #[arg(long)]
        limit: Option<usize>,
        /// Include headers (credentials redacted).
        #[arg(long)]
        headers: bool,
        /// Print the response body of this request (its number in a listing).
        #[arg(long, value_name = "NUMBER")]
        body: Option<u64>,
        /// The tab (such as t2); default: the active tab.
        #[arg(long)]
        tab: Option<String>,
    },
    /// List the session's tabs.
    Tabs,
    /// Make a tab active and print its snapshot.
    ///
    /// Example: browser-shell tab t2
    Tab {
        /// The tab, such as t2.
        tab: String,
    },
    /// Close a tab (default: the active one).
    ///
    /// Example: browser-shell close t2
    Close {
        /// The tab, such as t2.
        tab: Option<String>,
    },
    /// Close every tab of the session.
    Reset,
}

/// `act`: an action, its target and its values.
#[derive(Debug, Clone, clap::Args)]
pub struct ActCommand {
    /// click, type, fill, press, select, check, uncheck, hover, focus, scroll or drag.
    #[arg(value_parser = [
        "click", "type", "fill", "press", "select", "check", "uncheck", "hover", "focus", "scroll", "drag",
    ])]
    pub action: String,
    /// The element's ref (such as e12); leave out with --role/--name, or
    /// for press and scroll on the page itself.
    pub target: Option<String>,
    /// Text (type, fill), key (press), options (select) or drop ref (drag).
    pub values: Vec<String>,
    /// Instead of a ref: the element's role, with --name.
    #[arg(long, requires = "name")]
    pub role: Option<String>,
    /// Instead of a ref: the element's exact accessible name, with --role.
    #[arg(long, requires = "role")]
    pub name: Option<String>,
    /// Press Enter after type or fill.
    #[arg(long)]
    pub submit: bool,
    /// Mouse button for click: left, right or middle.
    #[arg(long, value_parser = ["left", "right", "middle"])]
    pub button: Option<String>,
    /// Clicks in a row (2 = double-click).
    #[arg(long, value_name = "N")]
    pub count: Option<u32>,
    /// A key held during click: Alt, Control, Meta or Shift (repeatable).
    #[arg(long = "modifier", value_name = "KEY")]
    pub modifiers: Vec<String>,
    /// Horizontal scroll distance in pixels.
    #[arg(long, allow_negative_numbers = true)]
    pub dx: Option<f64>,
    /// Vertical scroll distance in pixels (positive scrolls down).
    #[arg(long, allow_negative_numbers = true)]
    pub dy: Option<f64>,
    /// The tab (such as t2); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("not JSON ({e}); quote strings like '\"text\"'"))
}

/// Whether a word is a ref such as `e12`.
fn is_ref(word: &str) -> bool {
    word.strip_prefix('e')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// An object without the `null` members.
fn object(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

impl ToolCommand {
    /// The tool and arguments this command stands for. `stdin` supplies the
    /// script for `execute -`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the word that does not fit.
    pub fn to_call(
        &self,
        stdin: impl FnOnce() -> std::io::Result<String>,
    ) -> Result<(&'static str, Value), BrowserError> {
        Ok(match self {
            Self::Open { url, new_tab, keep } => (
                "browser_open",
                json!({ "url": url, "newTab": new_tab, "keep": keep }),
            ),
            Self::Navigate { target, tab } => {
                let arguments = match target.as_str() {
                    "back" | "forward" | "reload" => json!({ "action": target, "tab": tab }),
                    url => json!({ "url": url, "tab": tab }),
                };
                ("browser_navigate", object(arguments))
            }
            Self::Snapshot {
                reference,
                selector,
                tab,
            } => (
                "browser_snapshot",
                object(json!({ "ref": reference, "selector": selector, "tab": tab })),
            ),
            Self::Act(act) => ("browser_act", act.arguments()?),
            Self::Execute {
                script,
                args,
                timeout_ms,
                tab,
            } => {
                let script = if script == "-" {
                    stdin().map_err(|e| {
                        BrowserError::invalid("script", format!("cannot read standard input: {e}"))
                    })?
                } else {
                    script.clone()
                };
                (
                    "browser_execute",
                    object(
                        json!({ "script": script, "args": args, "timeoutMs": timeout_ms, "tab": tab }),
                    ),
                )
            }
            Self::Content {
                format,
                selector,
                max_chars,
                tab,
            } => (
                "browser_content",
                object(json!({
                    "format": format, "selector": selector, "maxChars": max_chars, "tab": tab,
                })),
            ),
            Self::Screenshot {
                full_page,
                reference,
                selector,
                format,
                quality,
                tab,
                output: _,
            } => (
                "browser_screenshot",
                object(json!({
                    "fullPage": full_page, "ref": reference, "selector": selector,
                    "format": format, "quality": quality, "tab": tab,
                })),
            ),
            Self::Wait {
                text,
                text_gone,
                reference,
                role,
                name,
                state,
                url,
                load,
                request,
                script,
                stable,
                timeout_ms,
                tab,
            } => (
                "browser_wait",
                object(json!({
                    "text": text, "textGone": text_gone, "ref": reference, "role": role,
                    "name": name, "state": state, "url": url, "load": load, "request": request,
                    "script": script,
                    "stable": stable.then_some(true), "timeoutMs": timeout_ms, "tab": tab,
                })),
            ),
            Self::Inspect {
                reference,
                selector,
                styles,
                tab,
            } => (
                "browser_inspect",
                object(json!({
                    "ref": reference, "selector": selector,
                    "styles": (!styles.is_empty()).then_some(styles), "tab": tab,
                })),
            ),
            Self::Console {
                level,
                since,
                limit,
                tab,
            } => (
                "browser_console",
                object(json!({ "level": level, "since": since, "limit": limit, "tab": tab })),
            ),
            Self::Network {
                failed,
                url,
                resource_type,
                since,
                limit,
                headers,
                body,
                tab,
            } => (
                "browser_network",
                object(json!({
                    "failed": failed.then_some(true), "url": url, "type": resource_type,
                    "since": since, "limit": limit, "headers": headers.then_some(true),
                    "body": body, "tab": tab,
                })),
            ),
            Self::Tabs => ("browser_list_tabs", json!({})),
            Self::Tab { tab } => ("browser_switch_tab", json!({ "tab": tab })),
            Self::Close { tab } => ("browser_close_tab", object(json!({ "tab": tab }))),
            Self::Reset => ("browser_reset", json!({})),
        })
    }

    /// Where `screenshot` writes its image.
    pub fn screenshot_file(&self) -> Option<PathBuf> {
        match self {
            Self::Screenshot { output, format, .. } => {
                Some(output.clone().unwrap_or_else(|| match format.as_deref() {
                    Some("jpeg") => "screenshot.jpg".into(),
                    _ => "screenshot.png".into(),
                }))
            }
            _ => None,
        }
    }
}

impl ActCommand {
    /// The `browser_act` arguments: positional words are placed by action.
    fn arguments(&self) -> Result<Value, BrowserError> {
        let mut words: Vec<&str> = Vec::new();
        let mut reference = None;
        match self.target.as_deref() {
            Some(word) if is_ref(word) => reference = Some(word),
            Some(word) => words.push(word),
            None => {}
        }
        words.extend(self.values.iter().map(String::as_str));
        if reference.is_some() && self.role.is_some() {
            return Err(BrowserError::invalid(
                "ref",
                "give a ref or --role/--name, not both",
            ));
        }
        let one = |what: &str| -> Result<Option<String>, BrowserError> {
            match words.as_slice() {
                [] => Ok(None),
                [word] => Ok(Some((*word).to_owned())),
                _ => Err(BrowserError::invalid(
                    what,
                    format!("{} takes one {what}; quote text with spaces", self.action),
                )),
            }
        };
        let none = || -> Result<(), BrowserError> {
            match words.first() {
                None => Ok(()),
                Some(word) if !is_ref(word) && reference.is_none() => Err(BrowserError::invalid(
                    "ref",
                    format!("{word:?} is not a ref (refs look like e12)"),
                )),
                Some(word) => Err(BrowserError::invalid(
                    "values",
                    format!("{} takes no value, got {word:?}", self.action),
                )),
            }
        };
        let mut arguments = json!({
            "action": self.action,
            "ref": reference,
            "role": self.role,
            "name": self.name,
            "tab": self.tab,
        });
        let extra = match self.action.as_str() {
            "type" | "fill" => json!({ "text": one("text")?, "submit": self.submit }),
            "press" => json!({ "key": one("key")? }),
            "select" => json!({ "values": words }),
            "drag" => {
                let to = one("drop ref")?;
                if let Some(to) = &to
                    && !is_ref(to)
                {
                    return Err(BrowserError::invalid(
                        "toRef",
                        format!("{to:?} is not a ref (refs look like e12)"),
                    ));
                }
                json!({ "toRef": to })
            }
            "click" => {
                none()?;
                json!({
                    "button": self.button,
                    "clickCount": self.count,
                    "modifiers": (!self.modifiers.is_empty()).then_some(&self.modifiers),
                })
            }
            "scroll" => {
                none()?;
                json!({ "dx": self.dx, "dy": self.dy })
            }
            _ => {
                none()?;
                json!({})
            }
        };
        if let (Value::Object(all), Value::Object(extra)) = (&mut arguments, extra) {
            all.extend(extra);
        }
        Ok(object(arguments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(subcommand)]
        command: ToolCommand,
    }

    fn call(words: &[&str]) -> Result<(&'static str, Value), BrowserError> {
        let line =
            Line::try_parse_from(std::iter::once("browser-shell").chain(words.iter().copied()))
                .unwrap_or_else(|e| panic!("{words:?}: {e}"));
        line.command.to_call(|| Ok("document.title".into()))
    }

    #[test]
    fn words_become_the_same_arguments_an_agent_sends() {
        assert_eq!(
            call(&["act", "fill", "e7", "ada@example.test", "--submit"]).unwrap(),
            (
                "browser_act",
                json!({"action": "fill", "ref": "e7", "text": "ada@example.test", "submit": true})
            )
        );
        assert_eq!(
            call(&["act", "press", "Escape"]).unwrap().1,
            json!({"action": "press", "key": "Escape"})
        );
        assert_eq!(
            call(&["act", "select", "e9", "Large", "Small"]).unwrap().1,
            json!({"action": "select", "ref": "e9", "values": ["Large", "Small"]})
        );
        assert_eq!(
            call(&[
                "act", "click", "--role", "button", "--name", "Add item", "--count", "2"
            ])
            .unwrap()
            .1,
            json!({"action": "click", "role": "button", "name": "Add item", "clickCount": 2})
        );
        assert_eq!(
            call(&["act", "scroll", "--dy", "-300"]).unwrap().1,
            json!({"action": "scroll", "dy": -300.0})
        );
        assert_eq!(
            call(&["navigate", "back"]).unwrap(),
            ("browser_navigate", json!({"action": "back"}))
        );
        assert_eq!(
            call(&["execute", "-", "--arg", "21"]).unwrap().1,
            json!({"script": "document.title", "args": [21]})
        );
        assert_eq!(call(&["close"]).unwrap(), ("browser_close_tab", json!({})));
        assert_eq!(
            call(&["wait", "--ref", "e4", "--state", "hidden"]).unwrap(),
            ("browser_wait", json!({"ref": "e4", "state": "hidden"}))
        );
        assert_eq!(
            call(&["inspect", "--selector", "#save", "--style", "color"]).unwrap(),
            (
                "browser_inspect",
                json!({"selector": "#save", "styles": ["color"]})
            )
        );
        assert_eq!(call(&["inspect", "e5"]).unwrap().1, json!({"ref": "e5"}));
        assert_eq!(
            call(&["network", "--failed", "--url", "/api/"]).unwrap(),
            ("browser_network", json!({"failed": true, "url": "/api/"}))
        );
        assert_eq!(
            call(&["console", "--level", "error", "--since", "3"]).unwrap(),
            ("browser_console", json!({"level": "error", "since": 3}))
        );
    }

    #[test]
    fn words_that_do_not_fit_are_named() {
        let error = call(&["act", "click", "Submit"]).unwrap_err();
        assert!(
            error.to_string().contains("\"Submit\" is not a ref"),
            "{error}"
        );
        let error = call(&["act", "type", "e3", "two", "words"]).unwrap_err();
        assert!(
            error.to_string().contains("quote text with spaces"),
            "{error}"
        );
        let error = call(&["act", "drag", "e3", "there"]).unwrap_err();
        assert!(error.to_string().contains("toRef"), "{error}");
    }
}
