//! Every `browser_*` tool, defined once: one module per tool or family,
//! each holding the tool's argument type, its [`ToolSpec`] and how it runs
//! and reads. The argument type is one struct that is three things: the
//! JSON Schema a model reads (its docs), the MCP arguments (`serde`), and
//! the command-line form (`clap`: the same fields as flags or words; see
//! [`CommandLine`]). The spec says the rest: title, description,
//! annotations, when it is offered, its bound, whether it acts on a tab,
//! what the timeline shows of a call. A result reads as text, and, for a
//! tool whose answers are data, as data its output schema describes (never
//! larger than the text: a unit test per tool measures both).
//! [`crate::call::call_tool`] runs them all the same way, and
//! [`crate::agent::Agent`] wraps every call once (bound, timeline, secrets
//! hidden, audit), knowing no tool by name. Adding a tool is one module
//! here, listed in [`ALL`] and, for its command, in
//! [`crate::commands::ToolCommand`].
//!
//! Arguments are strict: unknown fields are refused, so a typo is an
//! `INVALID_ARGUMENT` naming the field instead of an option silently
//! ignored.

pub mod act;
pub mod console;
pub mod content;
pub mod execute;
pub mod handoff;
pub mod inspect;
pub mod navigation;
pub mod network;
pub mod schema;
pub mod screenshot;
pub mod snapshot;
pub mod tabs;
pub mod wait;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use browser_provider::snapshot::{NotARef, Ref};
use browser_provider::{Browser, BrowserError, Result, SessionId, TabHandle};
use rmcp::model::JsonObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::call::{ToolOutput, ToolSettings};

/// Every tool, in the order they are listed to a model.
pub const ALL: &[ToolSpec] = &[
    navigation::OPEN,
    snapshot::SNAPSHOT,
    act::ACT,
    navigation::NAVIGATE,
    content::CONTENT,
    screenshot::SCREENSHOT,
    handoff::HANDOFF,
    wait::WAIT,
    console::CONSOLE,
    inspect::INSPECT,
    network::NETWORK,
    tabs::RESET,
    execute::EXECUTE,
    tabs::LIST_TABS,
    tabs::SWITCH_TAB,
    tabs::CLAIM_TAB,
    tabs::CLOSE_TAB,
];

/// The tool called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    ALL.iter().find(|spec| spec.name == name)
}

/// When a tool is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Always.
    Always,
    /// When `browser_execute` is enabled (`executeEnabled`).
    Execute,
    /// When the tab tools are enabled (`tabTools`).
    TabTools,
}

/// What a tool does to the browser and the world beyond it, as MCP's
/// annotation hints say it: a host may ask the person before a destructive
/// tool, and skip asking for one that only reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    /// It changes nothing: it reads the page, the tabs or the logs.
    pub read_only: bool,
    /// It may destroy what the person has (submit a form, run a script,
    /// close tabs); only said of a tool that is not read-only.
    pub destructive: bool,
    /// The same call again does nothing more.
    pub idempotent: bool,
    /// It reaches the open web (loads pages, sends requests), not only
    /// this browser's own state.
    pub open_world: bool,
}

impl Effect {
    /// Reads the page, the tabs or the logs.
    pub const READS: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Loads pages (open, back, forward, reload): leaves the page it was
    /// on, destroys nothing the person has.
    pub const BROWSES: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: true,
    };
    /// Acts in the page as a person would (clicks, types, runs a script):
    /// a click can submit, buy or delete.
    pub const ACTS: Self = Self {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };
    /// Hands the browser to the person and waits: they may do anything.
    pub const ASKS: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: true,
    };
    /// Chooses which of the session's tabs the next calls use.
    pub const SELECTS: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Closes tabs (what is in them is gone).
    pub const CLOSES: Self = Self {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    };

    /// The MCP annotations for a tool with this effect and `title`.
    pub fn annotations(self, title: &str) -> rmcp::model::ToolAnnotations {
        let mut annotations = rmcp::model::ToolAnnotations::with_title(title)
            .read_only(self.read_only)
            .open_world(self.open_world);
        if !self.read_only {
            annotations = annotations
                .destructive(self.destructive)
                .idempotent(self.idempotent);
        }
        annotations
    }
}

/// What a tool's `run` gets: the session it acts for and the call.
#[derive(Debug)]
pub struct Call<'a> {
    /// The tool called.
    pub spec: &'static ToolSpec,
    /// The browser.
    pub browser: &'a Browser,
    /// The agent's session.
    pub session: &'a SessionId,
    /// The arguments as the client sent them (parsed strictly by the tool).
    pub arguments: Value,
    /// Settings that shape results (output directory, secrets).
    pub settings: &'a ToolSettings,
    /// Stops the work.
    pub cancel: &'a CancellationToken,
}

impl Call<'_> {
    /// The call's arguments, parsed strictly (the error names the field).
    /// For a tool that acts on a tab ([`ToolSpec::tab`]), the tab they name
    /// is made active once they are known to be good, before the tool does
    /// anything else.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for arguments that do not fit; the browser's
    /// error when the tab cannot be made active.
    pub async fn args<T: DeserializeOwned>(&mut self) -> Result<T> {
        let arguments = std::mem::take(&mut self.arguments);
        let tab = arguments
            .get("tab")
            .and_then(Value::as_str)
            .filter(|_| self.spec.tab)
            .map(TabHandle::parse);
        let args = parse(arguments)?;
        if let Some(tab) = tab {
            self.browser.switch_tab(self.session, &tab?).await?;
        }
        Ok(args)
    }
}

/// How a tool runs: its arguments in, model text (or an error) out.
pub type Run =
    for<'a> fn(Call<'a>) -> Pin<Box<dyn Future<Output = Result<ToolOutput>> + Send + 'a>>;

/// One tool: everything about it but the calling.
pub struct ToolSpec {
    /// `browser_…`.
    pub name: &'static str,
    /// A short title for people (MCP `title` and `annotations.title`).
    pub title: &'static str,
    /// Its command on the command line, with what it takes (`open URL`,
    /// `tab TAB`); `None` when the command line has none (a handoff asks
    /// a person, who is the one at the command line).
    pub command: Option<&'static str>,
    /// What a model reads to choose it.
    pub description: &'static str,
    /// What it does to the browser and beyond (MCP's annotation hints).
    pub effect: Effect,
    /// When it is offered.
    pub offered: Offered,
    /// It takes `timeoutMs` (this is its default, in milliseconds): its
    /// call is bounded by what it asks for (plus a margin to answer in),
    /// not by the per-call bound, which would cut a longer wait or script.
    pub own_timeout_ms: Option<u64>,
    /// What it is doing while it runs, in a few words, for progress
    /// notifications ("loading the page", "waiting for the person").
    pub doing: &'static str,
    /// It acts on one of the session's tabs, named by its optional `tab`
    /// argument (default: the active one), which [`Call::args`] makes
    /// active before the tool runs.
    pub tab: bool,
    /// The arguments the activity timeline shows of a call, in this order:
    /// what it acts on or waits for; never text the agent types.
    pub summary: &'static [&'static str],
    /// The argument holding text the agent types (it may be a password):
    /// results people watching read show it replaced.
    pub typed_text: Option<&'static str>,
    /// The JSON Schema of its arguments.
    pub schema: fn() -> Arc<JsonObject>,
    /// For a tool whose answers are data: the JSON Schema of that data (its
    /// results then carry it as `structuredContent`, see
    /// [`schema::output_schema`]).
    pub output: Option<fn() -> Arc<JsonObject>>,
    /// Runs it.
    pub run: Run,
}

impl ToolSpec {
    /// The JSON Schema of its arguments as every client takes it (see
    /// [`schema::portable`]).
    pub fn input_schema(&self) -> Arc<JsonObject> {
        Arc::new(schema::portable(&(self.schema)()))
    }
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A tool's command-line form: the words of one command
/// (`browser-shell open …`) as the call they stand for.
pub trait CommandLine {
    /// The tool and the arguments these words stand for: the same an agent
    /// would send. `stdin` reads standard input, for the words that name
    /// it (`execute -`).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the word that does not fit.
    fn to_call(&self, stdin: Stdin<'_>) -> Result<(&'static str, Value)>;
}

/// Reads standard input, for [`CommandLine::to_call`].
pub type Stdin<'a> = &'a mut dyn FnMut() -> std::io::Result<String>;

/// A tool's argument type that is its command line as it is, field for
/// field: the call's arguments are it, serialized (unset options left out).
pub trait ToolArgs: Serialize {
    /// The tool it is the arguments of.
    const TOOL: &'static ToolSpec;
}

impl<T: ToolArgs> CommandLine for T {
    fn to_call(&self, _: Stdin<'_>) -> Result<(&'static str, Value)> {
        Ok((T::TOOL.name, arguments_of(self)))
    }
}

/// `args` as a call's arguments: serialized, with what a command line
/// leaves unset left out: options not given (`null`) and flags not given
/// (`false`; a command line has no other way to say false).
fn arguments_of<T: Serialize>(args: &T) -> Value {
    match serde_json::to_value(args).unwrap_or_default() {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null() && *v != Value::Bool(false))
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

/// Parses arguments strictly; the error names the offending field.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T> {
    let arguments = if arguments.is_null() {
        Value::Object(Default::default())
    } else {
        arguments
    };
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let message = e.inner().to_string();
        // A bad value is named by its path (`format`, `args[2]`); a missing
        // or unknown field by the name serde quotes.
        let path = e.path().to_string();
        let field = if path != "." {
            path
        } else {
            message
                .split('`')
                .nth(1)
                .filter(|_| message.contains("field"))
                .unwrap_or("arguments")
                .to_owned()
        };
        BrowserError::invalid(field, message)
    })
}

/// A ref given as the argument `field`, in the form snapshots hand out.
///
/// # Errors
/// `INVALID_ARGUMENT` naming `field` when the text does not look like a
/// ref (whether it was issued in the tab is the browser's to say).
fn ref_arg(field: &str, text: &str) -> Result<Ref> {
    text.parse()
        .map_err(|e: NotARef| BrowserError::invalid(field, e.to_string()))
}

/// Zero, so left out of a result's data (`skip_serializing_if`).
fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// Checks the data of `output`, a result of `spec`, as a client would: it
/// matches the tool's output schema, and it is no larger than the text
/// beside it (the data is for programs; it must not double what a model
/// reads). Returns the text's and the data's bytes.
#[cfg(test)]
pub(crate) fn check_data(spec: &ToolSpec, output: &ToolOutput) -> (usize, usize) {
    let data = output.structured.as_ref().expect("data beside the text");
    check_schema(spec, data);
    let (text, data) = (output.text.len(), data.to_string().len());
    assert!(
        data <= text,
        "{}: the data ({data} bytes) outweighs the text ({text} bytes):\n{}\n{}",
        spec.name,
        output.text,
        output
            .structured
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default()
    );
    (text, data)
}

/// Checks that `data` matches the output schema of `spec`, as the
/// TypeScript SDK's client checks every result's `structuredContent`.
#[cfg(test)]
pub(crate) fn check_schema(spec: &ToolSpec, data: &Value) {
    let schema = Value::Object((*(spec.output.expect("an output schema"))()).clone());
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(data).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{}: {errors:?}\n{data}", spec.name);
}

#[cfg(test)]
mod tests {
    use super::navigation::OpenArgs;
    use super::*;

    #[test]
    fn bad_arguments_name_the_field() {
        let error = parse::<OpenArgs>(serde_json::json!({"newTab": true})).err();
        assert!(
            matches!(error, Some(BrowserError::InvalidArgument { ref field, .. }) if field == "url"),
            "{error:?}"
        );
        let error =
            parse::<OpenArgs>(serde_json::json!({"url": "http://a.test", "colour": 1})).err();
        assert!(
            matches!(error, Some(BrowserError::InvalidArgument { ref field, .. }) if field == "colour"),
            "{error:?}"
        );
    }

    #[test]
    fn every_tool_says_what_it_does() {
        for spec in ALL {
            assert!(
                !spec.title.is_empty() && spec.title.len() <= 30,
                "{}: {:?}",
                spec.name,
                spec.title
            );
        }
        let effect = |name: &str| find(name).map(|spec| spec.effect);
        // A tab switch is no destructive act; closing tabs is.
        assert_eq!(effect("browser_switch_tab"), Some(Effect::SELECTS));
        assert!(effect("browser_close_tab").is_some_and(|e| e.destructive));
        assert!(effect("browser_reset").is_some_and(|e| e.destructive));
        assert!(effect("browser_snapshot").is_some_and(|e| e.read_only));
    }

    #[test]
    fn what_a_spec_says_of_its_arguments_is_in_its_schema() {
        for spec in ALL {
            let schema = spec.input_schema();
            let properties = schema
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let keys = spec.summary.iter().chain(spec.typed_text.iter());
            for key in keys {
                assert!(properties.contains_key(*key), "{}: {key}", spec.name);
            }
            // A tool that acts on a tab takes `tab` as an optional string.
            if spec.tab {
                assert_eq!(properties["tab"]["type"], "string", "{}", spec.name);
                let required = schema.get("required").and_then(Value::as_array);
                assert!(
                    !required.is_some_and(|r| r.contains(&Value::from("tab"))),
                    "{}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn every_schema_is_portable() {
        for spec in ALL {
            let problems = schema::problems(&spec.input_schema());
            assert!(problems.is_empty(), "{}: {problems:#?}", spec.name);
            if let Some(output) = spec.output {
                let problems = schema::problems(&output());
                assert!(problems.is_empty(), "{} output: {problems:#?}", spec.name);
            }
        }
    }

    #[test]
    fn an_error_is_data_every_output_schema_takes() {
        let error = ToolOutput::error(&BrowserError::invalid(
            "ref",
            "give exactly one of ref (from a snapshot), role and name, and selector (CSS)",
        ));
        let data = error.structured.clone().unwrap_or_default();
        for spec in ALL.iter().filter(|spec| spec.output.is_some()) {
            check_schema(spec, &data);
        }
        // The text's three parts and nothing else: the data outweighs the
        // text only by its keys (`{"error":{"code","message","hint"}}`
        // against `Error …: …\nHint: …`).
        let report = &data["error"];
        let parts = ["code", "message", "hint"].map(|key| report[key].as_str().unwrap_or_default());
        assert_eq!(
            error.text,
            format!("Error {}: {}\nHint: {}", parts[0], parts[1], parts[2])
        );
        assert_eq!(data.to_string().len(), error.text.len() + 29);
    }

    #[test]
    fn every_tool_is_listed_once_with_a_description() {
        let mut names: Vec<&str> = ALL.iter().map(|spec| spec.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(
            ALL.iter()
                .all(|spec| spec.name.starts_with("browser_") && !spec.description.is_empty())
        );
    }
}
