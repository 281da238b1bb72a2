//! How an answer names tools and arguments for whoever reads it: a model
//! over MCP (`browser_open`, `since`) or a person on the command line
//! (`browser-shell open URL`, `--since`).
//!
//! Every text that mentions a tool or an argument asks its [`Surface`] for
//! the words, so nothing of MCP's vocabulary reaches the command line and
//! a new message cannot forget to be translated: there is no table of
//! phrases to keep in step. The provider's hints name no tool; the few
//! that should are worded here ([`Surface::hint`]).

use std::borrow::Cow;

use browser_provider::BrowserError;

use crate::catalog::ToolSpec;
use crate::catalog::navigation::NAVIGATE;

/// Who reads a tool's answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Surface {
    /// A model calling `browser_*` tools over MCP.
    #[default]
    Mcp,
    /// A person (or an agent using the shell) typing `browser-shell …`.
    CommandLine,
}

impl Surface {
    /// How to name `tool` called with `words` (such as `reload`, or nothing):
    /// `browser_navigate reload` over MCP, `` `browser-shell navigate reload` ``
    /// on the command line (with the command's own usage when `words` is
    /// empty: `` `browser-shell open URL` ``). A tool the command line does
    /// not have keeps its MCP name.
    pub fn tool(self, tool: &ToolSpec, words: &str) -> String {
        let mcp = || {
            if words.is_empty() {
                tool.name.to_owned()
            } else {
                format!("{} {words}", tool.name)
            }
        };
        match (self, tool.command) {
            (Self::Mcp, _) | (Self::CommandLine, None) => mcp(),
            (Self::CommandLine, Some(usage)) if words.is_empty() => {
                format!("`browser-shell {usage}`")
            }
            (Self::CommandLine, Some(usage)) => {
                let command = usage.split(' ').next().unwrap_or(usage);
                format!("`browser-shell {command} {words}`")
            }
        }
    }

    /// How to name the argument `name` (as MCP spells it): `timeoutMs`
    /// over MCP, `--timeout-ms` on the command line.
    pub fn argument(self, name: &str) -> String {
        match self {
            Self::Mcp => name.to_owned(),
            Self::CommandLine => {
                let mut flag = String::from("--");
                for c in name.chars() {
                    if c.is_ascii_uppercase() {
                        flag.push('-');
                        flag.push(c.to_ascii_lowercase());
                    } else {
                        flag.push(c);
                    }
                }
                flag
            }
        }
    }

    /// The one thing to do about `error`, in this surface's words.
    pub fn hint(self, error: &BrowserError) -> Cow<'static, str> {
        match error {
            BrowserError::PageCrashed { .. } => format!(
                "reload the tab ({}) or open a URL in it; other tabs are fine",
                self.tool(&NAVIGATE, "reload")
            )
            .into(),
            BrowserError::Timeout { .. } => format!(
                "the page is slow or stuck; take a snapshot to see its state, or raise {}",
                self.argument("timeoutMs")
            )
            .into(),
            BrowserError::HumanIntervened => match self {
                Self::Mcp => {
                    "a person is using the browser: you may take snapshots, but do not act until \
                     they return control (or ask with browser_handoff)"
                }
                Self::CommandLine => {
                    "a person is using the browser: you may take snapshots, but do not act until \
                     they return control"
                }
            }
            .into(),
            BrowserError::NotShared { .. } => match self {
                Self::Mcp => {
                    "only the person can share their tabs: ask them (browser_handoff) to share \
                     it again from the browser-shell extension, or open a tab of your own"
                }
                Self::CommandLine => {
                    "only the person can share their tabs: ask them to share it again from the \
                     browser-shell extension, or open a tab of your own"
                }
            }
            .into(),
            other => other.hint().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{self, tabs};
    use crate::commands::ToolCommand;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Line {
        #[command(subcommand)]
        command: ToolCommand,
    }

    #[test]
    fn tools_are_named_as_each_surface_calls_them() {
        let open = catalog::find("browser_open").unwrap();
        assert_eq!(Surface::Mcp.tool(open, ""), "browser_open");
        assert_eq!(
            Surface::CommandLine.tool(open, ""),
            "`browser-shell open URL`"
        );
        assert_eq!(
            Surface::Mcp.tool(&NAVIGATE, "reload"),
            "browser_navigate reload"
        );
        assert_eq!(
            Surface::CommandLine.tool(&NAVIGATE, "reload"),
            "`browser-shell navigate reload`"
        );
        assert_eq!(
            Surface::CommandLine.tool(&tabs::CLAIM_TAB, ""),
            "browser_claim_tab"
        );
        assert_eq!(Surface::CommandLine.argument("timeoutMs"), "--timeout-ms");
        assert_eq!(Surface::Mcp.argument("timeoutMs"), "timeoutMs");
    }

    /// Every tool's command is a command of the command line, and every
    /// command of the command line is some tool's: the names a surface
    /// gives exist.
    #[test]
    fn every_command_a_tool_names_exists() {
        let line = Line::command();
        let commands: Vec<&str> = line.get_subcommands().map(|c| c.get_name()).collect();
        let mut named = Vec::new();
        for spec in catalog::ALL {
            if let Some(usage) = spec.command {
                let command = usage.split(' ').next().unwrap();
                assert!(commands.contains(&command), "{}: {usage}", spec.name);
                named.push(command);
            }
        }
        for command in commands {
            assert!(named.contains(&command), "no tool names {command}");
        }
    }

    /// The arguments answers mention exist as flags of their commands.
    #[test]
    fn every_argument_an_answer_names_is_a_flag() {
        let line = Line::command();
        for (command, argument) in [
            ("console", "since"),
            ("network", "since"),
            ("network", "body"),
            ("network", "bodyMaxChars"),
            ("content", "maxChars"),
            ("content", "selector"),
            ("wait", "timeoutMs"),
        ] {
            let flag = Surface::CommandLine.argument(argument);
            let sub = line.find_subcommand(command).unwrap();
            assert!(
                sub.get_arguments()
                    .any(|a| a.get_long() == Some(flag.trim_start_matches("--"))),
                "{command} has no {flag}"
            );
        }
    }

    /// On the command line, no hint names an MCP tool or argument.
    #[test]
    fn command_line_hints_speak_its_words() {
        let errors = [
            BrowserError::PageCrashed {
                tab: "t1".into(),
                in_flight: false,
            },
            BrowserError::timeout("wait", std::time::Duration::from_secs(1)),
            BrowserError::HumanIntervened,
            BrowserError::NotShared {
                detail: "closed".into(),
            },
        ];
        for error in &errors {
            let hint = Surface::CommandLine.hint(error);
            assert!(
                !hint.contains("browser_") && !hint.contains("timeoutMs"),
                "{hint}"
            );
            assert!(!error.hint().contains("browser_"), "{}", error.hint());
        }
        assert!(
            Surface::Mcp
                .hint(&errors[0])
                .contains("browser_navigate reload")
        );
        assert!(Surface::Mcp.hint(&errors[1]).contains("timeoutMs"));
    }
}
