//! The command line's tool commands: `browser-shell open|snapshot|act|…`.
//!
//! Each command is one `browser_*` tool call with the same arguments an
//! agent would send over MCP, so people, shell-using agents and MCP agents
//! see the same behaviour and the same text. This module only turns
//! command-line words into that call (each tool's words are defined with
//! the tool, in [`crate::catalog`]); where it runs is the caller's
//! business.

use std::path::PathBuf;

use browser_provider::BrowserError;
use serde_json::{Value, json};

use crate::catalog::{
    act, console, content, execute, inspect, navigation, network, screenshot, snapshot, tabs, wait,
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
    Open(navigation::OpenCommand),
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
    Snapshot(snapshot::SnapshotCommand),
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
    Act(act::ActCommand),
    /// Run JavaScript in the page and print the result as JSON.
    ///
    /// Examples:
    ///   browser-shell execute "document.title"
    ///   browser-shell execute "return arguments[0] * 2" --arg 21
    ///   browser-shell execute - < script.js
    #[command(verbatim_doc_comment)]
    Execute(execute::ExecuteCommand),
    /// Print the page's content: markdown (default), txt, html or json.
    ///
    /// Examples:
    ///   browser-shell content
    ///   browser-shell content --format json --selector article
    #[command(verbatim_doc_comment)]
    Content(content::ContentCommand),
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
    Wait(wait::WaitCommand),
    /// Inspect one element: role, name, style, box, visibility, form
    /// state and a CSS selector that matches only it (printed as JSON).
    ///
    /// Examples:
    ///   browser-shell inspect e12
    ///   browser-shell inspect --selector "#save" --style background-color --style width
    #[command(verbatim_doc_comment)]
    Inspect(inspect::InspectCommand),
    /// Print the tab's console messages and uncaught exceptions.
    ///
    /// Examples:
    ///   browser-shell console --level error
    ///   browser-shell console --since 17
    #[command(verbatim_doc_comment)]
    Console(console::ConsoleCommand),
    /// Print the tab's requests (status, type, size, timing, failures), or one response body.
    ///
    /// Examples:
    ///   browser-shell network --failed
    ///   browser-shell network --url /api/ --headers
    ///   browser-shell network --body 7
    #[command(verbatim_doc_comment)]
    Network(network::NetworkCommand),
    /// List the session's tabs.
    Tabs,
    /// Make a tab active and print its snapshot.
    ///
    /// Example: browser-shell tab t2
    Tab(tabs::SwitchTabCommand),
    /// Close a tab (default: the active one).
    ///
    /// Example: browser-shell close t2
    Close(tabs::CloseTabCommand),
    /// Close every tab of the session.
    Reset,
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
        match self {
            Self::Open(open) => open.call(),
            Self::Navigate(navigate) => navigate.call(),
            Self::Snapshot(snapshot) => snapshot.call(),
            Self::Act(act) => act.call(),
            Self::Execute(execute) => execute.call(stdin),
            Self::Content(content) => content.call(),
            Self::Screenshot(screenshot) => screenshot.call(),
            Self::Wait(wait) => wait.call(),
            Self::Inspect(inspect) => inspect.call(),
            Self::Console(console) => console.call(),
            Self::Network(network) => network.call(),
            Self::Tabs => Ok((tabs::LIST_TABS.name, json!({}))),
            Self::Tab(tab) => tab.call(),
            Self::Close(close) => close.call(),
            Self::Reset => Ok((tabs::RESET.name, json!({}))),
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
            call(&["act", "fill", "e7", "--secret", "bank"]).unwrap().1,
            json!({"action": "fill", "ref": "e7", "secret": "bank", "submit": false})
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
