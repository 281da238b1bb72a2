//! The command line's tool commands: `browser-shell open|snapshot|act|…`.
//!
//! Each command is one `browser_*` tool call with the same arguments an
//! agent would send over MCP, so people, shell-using agents and MCP agents
//! see the same behaviour and the same text. This module only lists the
//! commands: each one's words are its tool's argument type, defined with
//! the tool in [`crate::catalog`], which also says the call they stand for
//! ([`CommandLine`]); where it runs is the caller's business.

use std::path::PathBuf;

use browser_provider::BrowserError;
use serde_json::Value;

use crate::catalog::{
    CommandLine, act, console, content, execute, inspect, navigation, network, screenshot,
    snapshot, tabs, wait,
};

/// A command that becomes one tool call.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ToolCommand {
    /// Open a URL in the active tab (or a new one) and print its snapshot.
    ///
    /// Examples:
    ///   browser-shell open https://example.org
    ///   browser-shell open https://example.org/docs --new-tab
    #[command(verbatim_doc_comment)]
    Open(navigation::OpenArgs),
    /// Go to a URL, or back, forward or reload, and print the snapshot.
    ///
    /// Examples:
    ///   browser-shell navigate back
    ///   browser-shell navigate https://example.org/next
    #[command(verbatim_doc_comment)]
    Navigate(navigation::NavigateCommand),
    /// Print the page as a tree with element refs (e1, e2, …) to act on.
    ///
    /// Examples:
    ///   browser-shell snapshot
    ///   browser-shell snapshot --selector main
    #[command(verbatim_doc_comment)]
    Snapshot(snapshot::SnapshotArgs),
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
    Act(Box<act::ActCommand>),
    /// Run JavaScript in the page and print the result as JSON.
    ///
    /// Examples:
    ///   browser-shell execute "document.title"
    ///   browser-shell execute "return arguments[0] * 2" --arg 21
    ///   browser-shell execute - < script.js
    #[command(verbatim_doc_comment)]
    Execute(execute::ExecuteArgs),
    /// Print the page's content: markdown (default), txt, html or json.
    ///
    /// Examples:
    ///   browser-shell content
    ///   browser-shell content --format json --selector article
    #[command(verbatim_doc_comment)]
    Content(content::ContentArgs),
    /// Save a screenshot of the viewport, the whole page or one element.
    ///
    /// Examples:
    ///   browser-shell screenshot -o page.png
    ///   browser-shell screenshot --full-page -o page.jpg --format jpeg --quality 70
    ///   browser-shell screenshot --ref e12 -o button.png
    #[command(verbatim_doc_comment)]
    Screenshot(screenshot::ScreenshotCommand),
    /// Wait (bounded) for one condition; fails with TIMEOUT saying what it saw.
    ///
    /// Examples:
    ///   browser-shell wait --text "Saved"
    ///   browser-shell wait --ref e12 --state hidden
    ///   browser-shell wait --url /checkout --timeout-ms 20000
    ///   browser-shell wait --stable
    #[command(verbatim_doc_comment)]
    Wait(wait::WaitArgs),
    /// Inspect one element: role, name, style, box, visibility, form
    /// state and a CSS selector that matches only it (printed as JSON).
    ///
    /// Examples:
    ///   browser-shell inspect e12
    ///   browser-shell inspect --selector "#save" --style background-color --style width
    #[command(verbatim_doc_comment)]
    Inspect(inspect::InspectArgs),
    /// Print the tab's console messages and uncaught exceptions.
    ///
    /// Examples:
    ///   browser-shell console --level error
    ///   browser-shell console --since 17
    #[command(verbatim_doc_comment)]
    Console(console::ConsoleArgs),
    /// Print the tab's requests (status, type, size, timing, failures), or one response body.
    ///
    /// Examples:
    ///   browser-shell network --failed
    ///   browser-shell network --url /api/ --headers
    ///   browser-shell network --body 7
    #[command(verbatim_doc_comment)]
    Network(network::NetworkArgs),
    /// List the session's tabs.
    Tabs(tabs::ListTabsArgs),
    /// Make a tab active and print its snapshot.
    ///
    /// Example: browser-shell tab t2
    Tab(tabs::TabArgs),
    /// Close a tab (default: the active one).
    ///
    /// Example: browser-shell close t2
    Close(tabs::CloseTabArgs),
    /// Close every tab of the session.
    Reset(tabs::ResetArgs),
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
        let mut stdin = Some(stdin);
        let mut read = || match stdin.take() {
            Some(read) => read(),
            None => Err(std::io::Error::other("standard input was read already")),
        };
        self.words().to_call(&mut read)
    }

    /// This command's words.
    fn words(&self) -> &dyn CommandLine {
        match self {
            Self::Open(words) => words,
            Self::Navigate(words) => words,
            Self::Snapshot(words) => words,
            Self::Act(words) => &**words,
            Self::Execute(words) => words,
            Self::Content(words) => words,
            Self::Screenshot(words) => words,
            Self::Wait(words) => words,
            Self::Inspect(words) => words,
            Self::Console(words) => words,
            Self::Network(words) => words,
            Self::Tabs(words) => words,
            Self::Tab(words) => words,
            Self::Close(words) => words,
            Self::Reset(words) => words,
        }
    }

    /// Where `screenshot` writes its image.
    pub fn screenshot_file(&self) -> Option<PathBuf> {
        match self {
            Self::Screenshot(screenshot) => Some(screenshot.file()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(subcommand)]
        command: ToolCommand,
    }

    /// The call `words` stand for; its arguments are checked against the
    /// tool's schema, as a model's would be.
    fn call(words: &[&str]) -> Result<(&'static str, Value), BrowserError> {
        let line =
            Line::try_parse_from(std::iter::once("browser-shell").chain(words.iter().copied()))
                .unwrap_or_else(|e| panic!("{words:?}: {e}"));
        let call = line.command.to_call(|| Ok("document.title".into()))?;
        let spec = crate::catalog::find(call.0).unwrap_or_else(|| panic!("{words:?}"));
        let schema = Value::Object((*spec.input_schema()).clone());
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        let errors: Vec<String> = validator
            .iter_errors(&call.1)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{words:?}: {errors:?}\n{}", call.1);
        Ok(call)
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
            call(&["act", "fill", "e7", "--secret", "bank"]).unwrap().1,
            json!({"action": "fill", "ref": "e7", "secret": "bank"})
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
        assert_eq!(
            call(&["open", "https://example.org", "--new-tab"]).unwrap(),
            (
                "browser_open",
                json!({"url": "https://example.org", "newTab": true})
            )
        );
        assert_eq!(
            call(&["navigate", "https://example.org/next", "--tab", "t2"]).unwrap(),
            (
                "browser_navigate",
                json!({"url": "https://example.org/next", "tab": "t2"})
            )
        );
        assert_eq!(
            call(&["snapshot", "--ref", "e3"]).unwrap(),
            ("browser_snapshot", json!({"ref": "e3"}))
        );
        assert_eq!(
            call(&["content", "-f", "json", "-s", "article"]).unwrap(),
            (
                "browser_content",
                json!({"format": "json", "selector": "article"})
            )
        );
        assert_eq!(
            call(&["wait", "--load", "domcontentloaded", "--stable"])
                .unwrap()
                .1,
            json!({"load": "domcontentloaded", "stable": true})
        );
        assert_eq!(
            call(&["screenshot", "-o", "page.jpg", "--full-page"]).unwrap(),
            (
                "browser_screenshot",
                json!({"fullPage": true, "format": "jpeg"})
            )
        );
        assert_eq!(
            call(&["network", "--headers", "--type", "fetch"])
                .unwrap()
                .1,
            json!({"headers": true, "type": "fetch"})
        );
        assert_eq!(
            call(&[
                "act",
                "click",
                "e2",
                "--modifier",
                "Shift",
                "--button",
                "right"
            ])
            .unwrap()
            .1,
            json!({"action": "click", "ref": "e2", "modifiers": ["Shift"], "button": "right"})
        );
        assert_eq!(
            call(&["execute", "document.title"]).unwrap().1,
            json!({"script": "document.title", "args": []})
        );
        assert_eq!(
            call(&["tab", "t2"]).unwrap(),
            ("browser_switch_tab", json!({"tab": "t2"}))
        );
        assert_eq!(call(&["tabs"]).unwrap(), ("browser_list_tabs", json!({})));
        assert_eq!(call(&["reset"]).unwrap(), ("browser_reset", json!({})));
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
        let error = call(&["screenshot", "-o", "page.png", "--format", "jpeg"]).unwrap_err();
        assert!(error.to_string().contains("named for png"), "{error}");
    }
}
