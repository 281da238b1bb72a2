//! `browser_act`: one action on one element (or the page), typed text or
//! a secret, and what it changed.

use browser_provider::page::act::{Action, MouseButton, Target};
use browser_provider::snapshot::Ref;
use browser_provider::{BrowserError, Result, TabHandle};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, CommandLine, Effect, Offered, Stdin, ToolSpec, arguments_of, ref_arg};
use crate::call::ToolOutput;
use crate::render;

/// `browser_act`.
pub const ACT: ToolSpec = ToolSpec {
    name: "browser_act",
    title: "Act on an element",
    command: Some("act"),
    description: "Act on an element by ref (or exact role + name, which also finds what the snapshot shows \
        without a ref, such as a list item by its text, and rows of a virtualized grid further down): click, type, \
        fill, press, select, check, uncheck, hover, focus, scroll, drag. type presses a key per character (pages \
        that listen for keys react; for long text use fill); fill sets the whole text at once (in a code editor, exactly that text). \
        select works on native selects and on custom comboboxes and listboxes (opens them, clicks each option by \
        name). Targets inside scrolling boxes are scrolled to first. drag drops onto toRef, toRole + toName, or \
        the point toX, toY, and says where the element ended up; scroll says what came into view. For what has \
        no element (a canvas, a map, a chart), click, hover, scroll and drag take x, y instead: CSS pixels of \
        the viewport as the last screenshot shows them. Returns what changed since your last snapshot (a diff \
        with refs), or a full snapshot after a navigation. type and fill take text, or secret: the name of a secret the person gave (listed in the \
        instructions; its value is typed but never shown). Fails with STALE_REF (take a new snapshot) or \
        NOT_ACTIONABLE (with the reason).",
    effect: Effect::ACTS,
    offered: Offered::Always,
    own_timeout_ms: None,
    doing: "acting and watching the page settle",
    tab: true,
    summary: &["action", "ref", "role", "name", "key", "secret", "tab"],
    typed_text: Some("text"),
    schema: rmcp::handler::server::common::schema_for_type::<ActArgs>,
    output: None,
    run: |call| Box::pin(browser_act(call)),
};

/// The actions of `browser_act`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum ActionName {
    /// Click the element (`button`, `clickCount`, `modifiers` optional).
    Click,
    /// Type `text` key by key after the element's current content (in a code editor that has
    /// the focus: at its caret).
    Type,
    /// Replace the element's content with `text` at once (a code editor then holds exactly it).
    Fill,
    /// Press `key` (such as "Enter", "Tab", "Control+A") with the element focused.
    Press,
    /// Choose `values` (option values or labels) in a select, combobox or listbox.
    Select,
    /// Check a checkbox or radio.
    Check,
    /// Uncheck a checkbox.
    Uncheck,
    /// Move the mouse over the element.
    Hover,
    /// Give the element keyboard focus.
    Focus,
    /// Scroll the element into view, or by `dx`/`dy` pixels (the page when no target is given).
    Scroll,
    /// Drag the element onto `toRef` (or `toRole` + `toName`, or the point `toX`, `toY`).
    Drag,
}

/// Mouse buttons for `click`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum ButtonName {
    /// Primary.
    Left,
    /// Secondary (context menu).
    Right,
    /// Wheel.
    Middle,
}

/// `browser_act`. On the command line the flags are these fields; the
/// ref, text, key, values and drop ref are words placed by action (see
/// [`ActCommand`]).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActArgs {
    /// What to do.
    pub action: ActionName,
    /// The element's ref from the latest snapshot or diff (such as "e12").
    #[serde(rename = "ref")]
    #[arg(skip)]
    pub reference: Option<String>,
    /// Instead of a ref: the element's role (such as "button"), with `name`.
    #[arg(long, requires = "name")]
    pub role: Option<String>,
    /// Instead of a ref: the element's exact accessible name, with `role`.
    #[arg(long, requires = "role")]
    pub name: Option<String>,
    /// Text for `type` and `fill`.
    #[arg(skip)]
    pub text: Option<String>,
    /// Instead of `text`, for `type` and `fill`: the name of a secret the
    /// person gave (the server's instructions list them). Its value is
    /// typed and never shown: results say «secret:NAME» instead.
    #[arg(
        long,
        value_name = "NAME",
        help = "Instead of text, for type and fill: the name of a secret given to the shell \
                (--secrets); its value is typed and never printed"
    )]
    pub secret: Option<String>,
    /// Press Enter after `type` or `fill`.
    #[serde(default)]
    #[arg(long)]
    pub submit: bool,
    /// Key or chord for `press`, such as "Enter", "Escape", "Shift+Tab", "Control+A".
    #[arg(skip)]
    pub key: Option<String>,
    /// Option values or labels for `select`.
    #[arg(skip)]
    pub values: Option<Vec<String>>,
    /// Mouse button for `click` (default left).
    #[arg(long)]
    pub button: Option<ButtonName>,
    /// Clicks in a row for `click`: 1 to 3 (2 = double-click, 3 = triple-click).
    #[schemars(range(min = 1, max = 3))]
    #[arg(long = "count", value_name = "N")]
    pub click_count: Option<u32>,
    /// Keys held during `click`: "Alt", "Control", "Meta", "Shift".
    #[arg(
        long = "modifier",
        value_name = "KEY",
        help = "A key held during click: Alt, Control, Meta or Shift (repeatable)"
    )]
    pub modifiers: Option<Vec<String>>,
    /// Horizontal scroll distance in pixels for `scroll`.
    #[arg(long, allow_negative_numbers = true)]
    pub dx: Option<f64>,
    /// Vertical scroll distance in pixels for `scroll` (positive scrolls down).
    #[arg(long, allow_negative_numbers = true)]
    pub dy: Option<f64>,
    /// Drop target's ref for `drag`.
    #[arg(skip)]
    pub to_ref: Option<String>,
    /// Instead of `toRef`: the drop target's role (such as "list"), with `toName`.
    #[arg(long, requires = "to_name")]
    pub to_role: Option<String>,
    /// Instead of `toRef`: the drop target's name (or, unnamed, its text as the snapshot shows it), with `toRole`.
    #[arg(long, requires = "to_role")]
    pub to_name: Option<String>,
    /// Instead of a ref: act at this point of the viewport (CSS pixels from the left edge, as the
    /// last screenshot shows it), with `y`: for what has no element (a canvas, a map, a chart).
    /// click, hover, scroll and drag only.
    #[arg(long, requires = "y", allow_negative_numbers = true)]
    pub x: Option<f64>,
    /// Instead of a ref: pixels from the viewport's top edge, with `x`.
    #[arg(long, requires = "x", allow_negative_numbers = true)]
    pub y: Option<f64>,
    /// Instead of `toRef`: drop at this point of the viewport (CSS pixels), with `toY`.
    #[arg(long, requires = "to_y", allow_negative_numbers = true)]
    pub to_x: Option<f64>,
    /// Instead of `toRef`: the drop point's pixels from the top, with `toX`.
    #[arg(long, requires = "to_x", allow_negative_numbers = true)]
    pub to_y: Option<f64>,
    /// The tab to use (such as "t2"); default: the active tab.
    #[arg(long)]
    pub tab: Option<String>,
}

async fn browser_act(mut call: Call<'_>) -> Result<ToolOutput> {
    let args: ActArgs = call.args().await?;
    let (browser, session, settings, cancel) =
        (call.browser, call.session, call.settings, call.cancel);
    let secret = match &args.secret {
        Some(name) => Some(settings.secrets.get(name)?),
        None => None,
    };
    if let Some(secret) = secret {
        // Only on the pages it is for: a look-alike gets nothing.
        let tabs = browser.list_tabs(session).await?;
        let url = tabs
            .iter()
            .find(|t| t.active)
            .map_or("", |t| t.url.as_str());
        secret.check_page(url)?;
    }
    let (target, action) = action_of(&args, secret.map(|s| s.value()))?;
    let report = browser.act(session, &target, &action, cancel).await?;
    let tab = browser.active_tab(session)?;
    let action = args.action.name();
    let acted_on = report
        .outcome
        .reference
        .as_ref()
        .map_or("page", Ref::as_str);
    let mut text = match (&args.x, &args.y, &report.outcome.at_point) {
        (Some(x), Some(y), Some(found)) => {
            format!("Done: {action} at ({x}, {y}) on {found} [ref={acted_on}].")
        }
        (Some(x), Some(y), None) => format!("Done: {action} at ({x}, {y}), on nothing there."),
        _ => format!("Done: {action} on {acted_on}."),
    };
    if let Some(aftermath) = &report.outcome.aftermath {
        text.push(' ');
        text.push_str(&aftermath.to_string());
    }
    if report.outcome.navigated {
        text.push_str(" The page navigated.");
    }
    if !report.new_tabs.is_empty() {
        let handles: Vec<&str> = report.new_tabs.iter().map(TabHandle::as_str).collect();
        text.push_str(&format!(
            " Opened new tab(s): {} (use {}).",
            handles.join(", "),
            call.settings.surface.tool(&super::tabs::SWITCH_TAB, "")
        ));
    }
    for dialog in &report.dialogs {
        let answer = if dialog.accepted {
            "accepted"
        } else {
            "dismissed"
        };
        text.push_str(&format!(
            " A {} dialog appeared and was {answer}: {}",
            dialog.kind,
            render::fenced("dialog", &dialog.message)
        ));
    }
    for download in &report.downloads_refused {
        text.push_str(&format!(" A download was refused: {download}."));
    }
    for blocked in &report.blocked {
        text.push_str(&format!(
            " NAVIGATION_BLOCKED: the navigation to {} in tab {} was stopped by the \
             host policy ({}); that tab shows the browser's error page.",
            blocked.url, blocked.tab, blocked.reason
        ));
    }
    text.push('\n');
    text.push_str(&render::observation(
        tab.as_str(),
        &report.outcome.observation,
    ));
    Ok(ToolOutput::text(text).with_headline(headline(&report)))
}

/// What came of an action in a few words, for people watching: "+2 ~1 −0",
/// "navigated", "new tab t3", "dialog"…
fn headline(report: &browser_provider::browser::ActionReport) -> String {
    let mut parts = Vec::new();
    if report.outcome.navigated {
        parts.push("navigated".to_owned());
    }
    for tab in &report.new_tabs {
        parts.push(format!("new tab {tab}"));
    }
    if !report.dialogs.is_empty() {
        parts.push("dialog".to_owned());
    }
    if !report.downloads_refused.is_empty() {
        parts.push("download refused".to_owned());
    }
    if !report.blocked.is_empty() {
        parts.push("NAVIGATION_BLOCKED".to_owned());
    }
    if !report.outcome.navigated {
        parts.push(render::change_counts(&report.outcome.observation));
    }
    parts.join(", ")
}

/// Turns `browser_act` arguments into a target and an action, naming the
/// missing or conflicting field when they do not fit.
fn action_of(args: &ActArgs, secret: Option<&str>) -> Result<(Target, Action)> {
    let at = point("x", args.x, "y", args.y)?;
    let target = match (&args.reference, &args.role, &args.name, at) {
        (None, None, None, Some(point)) => point,
        (_, _, _, Some(_)) => {
            return Err(BrowserError::invalid(
                "x",
                "give a ref, a role and name, or x and y: one of them",
            ));
        }
        (Some(_), Some(_), _, None) | (Some(_), _, Some(_), None) => {
            return Err(BrowserError::invalid(
                "ref",
                "give ref, or role and name, not both",
            ));
        }
        (Some(reference), None, None, None) => Target::Ref(ref_arg("ref", reference)?),
        (None, Some(role), Some(name), None) => Target::Role {
            role: role.clone(),
            name: name.clone(),
        },
        (None, Some(_), None, None) => {
            return Err(BrowserError::invalid("name", "role needs name"));
        }
        (None, None, Some(_), None) => {
            return Err(BrowserError::invalid("role", "name needs role"));
        }
        (None, None, None, None)
            if matches!(args.action, ActionName::Scroll | ActionName::Press) =>
        {
            Target::Page
        }
        (None, None, None, None) => {
            return Err(BrowserError::invalid(
                "ref",
                "give the element's ref (or role and name, or x and y)",
            ));
        }
    };
    let text = || match (&args.text, secret) {
        (Some(_), Some(_)) => Err(BrowserError::invalid(
            "secret",
            "give text or secret, not both",
        )),
        (Some(text), None) => Ok(text.clone()),
        (None, Some(value)) => Ok(value.to_owned()),
        (None, None) => Err(BrowserError::invalid(
            "text",
            "type and fill need text (or secret)",
        )),
    };
    if secret.is_some() && !matches!(args.action, ActionName::Type | ActionName::Fill) {
        return Err(BrowserError::invalid(
            "secret",
            "only type and fill take a secret",
        ));
    }
    let action =
        match args.action {
            ActionName::Click => Action::Click {
                button: match args.button {
                    None | Some(ButtonName::Left) => MouseButton::Left,
                    Some(ButtonName::Right) => MouseButton::Right,
                    Some(ButtonName::Middle) => MouseButton::Middle,
                },
                count: match args.click_count {
                    None => 1,
                    Some(count @ 1..=3) => count,
                    Some(other) => {
                        return Err(BrowserError::invalid(
                            "clickCount",
                            format!("{other} is not 1, 2 or 3"),
                        ));
                    }
                },
                modifiers: args.modifiers.clone().unwrap_or_default(),
            },
            ActionName::Type => Action::Type {
                text: text()?,
                submit: args.submit,
            },
            ActionName::Fill => Action::Fill {
                text: text()?,
                submit: args.submit,
            },
            ActionName::Press => Action::Press {
                keys: vec![args.key.clone().ok_or_else(|| {
                    BrowserError::invalid("key", "press needs a key, such as Enter")
                })?],
            },
            ActionName::Select => Action::Select {
                values: args
                    .values
                    .clone()
                    .ok_or_else(|| BrowserError::invalid("values", "select needs values"))?,
            },
            ActionName::Check => Action::Check,
            ActionName::Uncheck => Action::Uncheck,
            ActionName::Hover => Action::Hover,
            ActionName::Focus => Action::Focus,
            ActionName::Scroll => match (args.dx, args.dy) {
                (None, None) => Action::ScrollIntoView,
                (dx, dy) => Action::Scroll {
                    dx: dx.unwrap_or(0.0),
                    dy: dy.unwrap_or(0.0),
                },
            },
            ActionName::Drag => Action::Drag {
                to: drop_target(args)?,
            },
        };
    Ok((target, action))
}

/// A point from two optional coordinates, named `x_name` and `y_name` in
/// what the caller sent.
fn point(x_name: &str, x: Option<f64>, y_name: &str, y: Option<f64>) -> Result<Option<Target>> {
    match (x, y) {
        (None, None) => Ok(None),
        (Some(x), Some(y)) => Ok(Some(Target::Point { x, y })),
        (Some(_), None) => Err(BrowserError::invalid(
            y_name,
            format!("{x_name} needs {y_name}"),
        )),
        (None, Some(_)) => Err(BrowserError::invalid(
            x_name,
            format!("{y_name} needs {x_name}"),
        )),
    }
}

/// Where a drag drops: `toRef`, `toRole` + `toName`, or `toX` + `toY`.
fn drop_target(args: &ActArgs) -> Result<Target> {
    let at = point("toX", args.to_x, "toY", args.to_y)?;
    match (&args.to_ref, &args.to_role, &args.to_name, at) {
        (Some(reference), None, None, None) => Ok(Target::Ref(ref_arg("toRef", reference)?)),
        (None, Some(role), Some(name), None) => Ok(Target::Role {
            role: role.clone(),
            name: name.clone(),
        }),
        (None, None, None, Some(point)) => Ok(point),
        (None, Some(_), None, None) => Err(BrowserError::invalid("toName", "toRole needs toName")),
        (None, None, Some(_), None) => Err(BrowserError::invalid("toRole", "toName needs toRole")),
        (None, None, None, None) => Err(BrowserError::invalid(
            "toRef",
            "drag needs where to drop: toRef, toRole and toName, or toX and toY",
        )),
        _ => Err(BrowserError::invalid(
            "toRef",
            "give one drop target: toRef, toRole and toName, or toX and toY",
        )),
    }
}

/// `browser-shell act ACTION [TARGET] [VALUES]…`: the flags are
/// [`ActArgs`]; the words after the action are placed by action.
#[derive(Debug, Clone, clap::Args)]
pub struct ActCommand {
    /// The action and the flags.
    #[command(flatten)]
    pub args: ActArgs,
    /// The element's ref (such as e12); leave out with --role/--name, or
    /// for press and scroll on the page itself.
    pub target: Option<String>,
    /// Text (type, fill), key (press), options (select) or drop ref (drag;
    /// or --to-role/--to-name, or --to-x/--to-y).
    pub values: Vec<String>,
}

impl CommandLine for ActCommand {
    fn to_call(&self, _: Stdin<'_>) -> Result<(&'static str, Value)> {
        let mut args = self.args.clone();
        let action = args.action.name();
        let mut words: Vec<&str> = Vec::new();
        match self.target.as_deref() {
            Some(word) if is_ref(word) => args.reference = Some(word.to_owned()),
            Some(word) => words.push(word),
            None => {}
        }
        words.extend(self.values.iter().map(String::as_str));
        if args.reference.is_some() && args.role.is_some() {
            return Err(BrowserError::invalid(
                "ref",
                "give a ref or --role/--name, not both",
            ));
        }
        let one = |what: &str| -> Result<Option<String>> {
            match words.as_slice() {
                [] => Ok(None),
                [word] => Ok(Some((*word).to_owned())),
                _ => Err(BrowserError::invalid(
                    what,
                    format!("{action} takes one {what}; quote text with spaces"),
                )),
            }
        };
        let none = || -> Result<()> {
            match words.first() {
                None => Ok(()),
                Some(word) if !is_ref(word) && args.reference.is_none() => {
                    Err(BrowserError::invalid(
                        "ref",
                        format!("{word:?} is not a ref (refs look like e12)"),
                    ))
                }
                Some(word) => Err(BrowserError::invalid(
                    "values",
                    format!("{action} takes no value, got {word:?}"),
                )),
            }
        };
        match args.action {
            ActionName::Type | ActionName::Fill if args.secret.is_some() => none()?,
            ActionName::Type | ActionName::Fill => args.text = one("text")?,
            ActionName::Press => args.key = one("key")?,
            ActionName::Select => {
                args.values = Some(words.iter().map(|w| (*w).to_owned()).collect())
            }
            ActionName::Drag => {
                let to = one("drop ref")?;
                if let Some(to) = &to
                    && !is_ref(to)
                {
                    return Err(BrowserError::invalid(
                        "toRef",
                        format!("{to:?} is not a ref (refs look like e12)"),
                    ));
                }
                args.to_ref = to;
            }
            _ => none()?,
        }
        Ok((ACT.name, arguments_of(&args)))
    }
}

impl ActionName {
    /// Its name, as a call gives it (`click`, `type`, …).
    fn name(self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

/// Whether a word is a ref such as `e12`.
fn is_ref(word: &str) -> bool {
    word.parse::<Ref>().is_ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::parse;
    use super::*;

    #[test]
    fn act_arguments_are_checked() {
        let args: ActArgs = parse(serde_json::json!({"action": "fill", "ref": "e1"})).unwrap();
        assert_eq!(
            action_of(&args, None).err().map(|e| e.to_string()),
            Some("invalid argument text: type and fill need text (or secret)".into())
        );
        let args: ActArgs = parse(serde_json::json!({"action": "scroll", "dy": 300})).unwrap();
        assert_eq!(action_of(&args, None).unwrap().0, Target::Page);
        let args: ActArgs =
            parse(serde_json::json!({"action": "click", "role": "button"})).unwrap();
        assert!(action_of(&args, None).is_err());
    }

    fn refused(arguments: Value) -> String {
        let args: ActArgs = parse(arguments).unwrap();
        action_of(&args, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn drops_and_points_are_one_of_their_kinds() {
        let args: ActArgs = parse(
            json!({"action": "drag", "role": "listitem", "name": "Inspect hull",
            "toRole": "list", "toName": "Done"}),
        )
        .unwrap();
        let (_, action) = action_of(&args, None).unwrap();
        assert_eq!(
            action,
            Action::Drag {
                to: Target::Role {
                    role: "list".into(),
                    name: "Done".into()
                }
            }
        );
        let args: ActArgs =
            parse(json!({"action": "drag", "x": 10, "y": 20, "toX": 30, "toY": 40})).unwrap();
        let (target, action) = action_of(&args, None).unwrap();
        assert_eq!(target, Target::Point { x: 10.0, y: 20.0 });
        assert_eq!(
            action,
            Action::Drag {
                to: Target::Point { x: 30.0, y: 40.0 }
            }
        );
        assert_eq!(
            refused(json!({"action": "click", "x": 10})),
            "invalid argument y: x needs y"
        );
        assert_eq!(
            refused(json!({"action": "click", "ref": "e1", "x": 10, "y": 2})),
            "invalid argument x: give a ref, a role and name, or x and y: one of them"
        );
        assert_eq!(
            refused(json!({"action": "drag", "ref": "e1", "toRole": "list"})),
            "invalid argument toName: toRole needs toName"
        );
        assert_eq!(
            refused(json!({"action": "drag", "ref": "e1", "toRef": "e2", "toX": 1, "toY": 2})),
            "invalid argument toRef: give one drop target: toRef, toRole and toName, or toX and toY"
        );
        assert_eq!(
            refused(json!({"action": "drag", "ref": "e1"})),
            "invalid argument toRef: drag needs where to drop: toRef, toRole and toName, or toX and toY"
        );
    }
}
