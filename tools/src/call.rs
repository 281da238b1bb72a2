//! Running one `browser_*` tool call: parse the arguments strictly, call
//! the provider, and turn the result (or the error) into model text.

use std::time::Duration;

use base64::Engine;
use browser_provider::browser::NavigationRequest;
use browser_provider::page::act::{Action, MouseButton, Target};
use browser_provider::page::console::{CONSOLE_CAP, Level};
use browser_provider::page::content::{ContentFormat, ContentRequest};
use browser_provider::page::execute::ExecuteResult;
use browser_provider::page::inspect::{InspectOptions, InspectTarget};
use browser_provider::page::navigate::NavigationOutcome;
use browser_provider::page::network::{Body, NETWORK_CAP, NetworkFilter};
use browser_provider::page::screenshot::{ImageKind, ScreenshotRequest};
use browser_provider::page::wait::{Condition, ElementState, LoadState};
use browser_provider::snapshot::Scope;
use browser_provider::{Browser, BrowserError, Result, SessionId, TabHandle};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{
    ActArgs, ActionName, ButtonName, ClaimTabArgs, CloseTabArgs, ConsoleArgs, ContentArgs,
    ExecuteArgs, FormatName, HandoffArgs, HistoryMove, ImageName, InspectArgs, LevelName, LoadName,
    NavigateArgs, NetworkArgs, NoArgs, OpenArgs, ScreenshotArgs, SnapshotArgs, StateName, TabArgs,
    WaitArgs,
};
use crate::render;
use crate::secrets::Secrets;

/// What a tool call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the model.
    pub text: String,
    /// An image (base64 data and MIME type), for screenshots.
    pub image: Option<(String, &'static str)>,
    /// True when the call failed; `text` then starts with the error code.
    pub is_error: bool,
    /// The error's stable code, when the call failed with one.
    pub code: Option<&'static str>,
}

impl ToolOutput {
    fn text(text: String) -> Self {
        Self {
            text,
            image: None,
            is_error: false,
            code: None,
        }
    }

    /// A failed call, carrying the error's code and hint.
    pub fn error(error: &BrowserError) -> Self {
        Self {
            text: render::error(error),
            image: None,
            is_error: true,
            code: Some(error.code()),
        }
    }
}

/// How long `browser_wait` waits unless told otherwise.
pub const WAIT_DEFAULT_MS: u64 = 10_000;

/// The one condition a `browser_wait` call names.
fn wait_condition(args: WaitArgs) -> Result<Condition> {
    let state = match args.state {
        None | Some(StateName::Visible) => ElementState::Visible,
        Some(StateName::Hidden) => ElementState::Hidden,
        Some(StateName::Enabled) => ElementState::Enabled,
    };
    let mut conditions = Vec::new();
    if let Some(text) = args.text {
        conditions.push(Condition::Text { text, gone: false });
    }
    if let Some(text) = args.text_gone {
        conditions.push(Condition::Text { text, gone: true });
    }
    if let Some(reference) = args.reference {
        conditions.push(Condition::Ref { reference, state });
    }
    match (args.role, args.name) {
        (Some(role), Some(name)) => conditions.push(Condition::Role { role, name, state }),
        (Some(_), None) => return Err(BrowserError::invalid("name", "give name with role")),
        (None, Some(_)) => return Err(BrowserError::invalid("role", "give role with name")),
        (None, None) => {}
    }
    if let Some(url) = args.url {
        conditions.push(Condition::Url(url));
    }
    if let Some(load) = args.load {
        conditions.push(Condition::Load(match load {
            LoadName::Load => LoadState::Load,
            LoadName::DomContentLoaded => LoadState::DomContentLoaded,
            LoadName::NetworkIdle => LoadState::NetworkIdle,
        }));
    }
    if let Some(script) = args.script {
        conditions.push(Condition::Script(script));
    }
    if let Some(part) = args.request {
        conditions.push(Condition::Request(part));
    }
    if args.stable {
        conditions.push(Condition::Stable);
    }
    match conditions.len() {
        1 => Ok(conditions.remove(0)),
        0 => Err(BrowserError::invalid(
            "arguments",
            "give one condition: text, textGone, ref, role+name, url, load, request, script or stable",
        )),
        _ => Err(BrowserError::invalid(
            "arguments",
            "give only one condition per wait",
        )),
    }
}

/// How long `browser_handoff` waits for the person unless told otherwise.
pub const HANDOFF_DEFAULT_MS: u64 = 600_000;

/// Settings that shape tool results.
#[derive(Debug, Clone, Default)]
pub struct ToolSettings {
    /// Also save screenshots as files here.
    pub output_dir: Option<std::path::PathBuf>,
    /// Secrets `browser_act` may type by name.
    pub secrets: Secrets,
}

/// Runs tool `name` with `arguments` for `session`. Never fails: errors
/// become outputs flagged as errors so the model can read and recover.
pub async fn call_tool(
    browser: &Browser,
    session: &SessionId,
    name: &str,
    arguments: Value,
    settings: &ToolSettings,
    cancel: &CancellationToken,
) -> ToolOutput {
    let control_notice = browser.control_returned_since_last_call(session).then_some(
        "Note: a person had control of the browser since your last call; the page may have changed. \
         Take a snapshot before using earlier refs.\n",
    );
    let mut output = match run(browser, session, name, arguments, settings, cancel).await {
        Ok(output) => output,
        Err(error) => ToolOutput::error(&error),
    };
    // Taken after the call: a restart it waited for is news to the agent.
    let mut notices = String::new();
    for notice in browser.take_notices(session) {
        notices.push_str(&notice);
        notices.push('\n');
    }
    if let Some(notice) = control_notice {
        notices.push_str(notice);
    }
    output.text.insert_str(0, &notices);
    output
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

/// How long the snapshot after a navigation that did not finish loading
/// may take: the page may be stuck, and the navigation used its bound.
const BUSY_PAGE_SNAPSHOT: Duration = Duration::from_secs(2);

/// The snapshot that follows a navigation, as text. A page that did not
/// finish loading gets a short try; when its main thread is busy, the
/// result says so instead of waiting.
async fn page_after(
    browser: &Browser,
    session: &SessionId,
    outcome: &NavigationOutcome,
    cancel: &CancellationToken,
) -> Result<String> {
    let tab = browser.active_tab(session)?;
    let snapshot = browser.snapshot(session, &Scope::Page, cancel);
    if outcome.loaded {
        return Ok(render::snapshot(tab.as_str(), &snapshot.await?));
    }
    match tokio::time::timeout(BUSY_PAGE_SNAPSHOT, snapshot).await {
        Ok(snapshot) => Ok(render::snapshot(tab.as_str(), &snapshot?)),
        Err(_) => Ok(format!(
            "Tab {tab}: the page's main thread is busy (a script that does not return?); \
             no snapshot now. Try browser_snapshot later, or navigate away."
        )),
    }
}

async fn use_tab(browser: &Browser, session: &SessionId, tab: Option<&str>) -> Result<()> {
    if let Some(tab) = tab {
        browser.switch_tab(session, &TabHandle::parse(tab)?).await?;
    }
    Ok(())
}

async fn run(
    browser: &Browser,
    session: &SessionId,
    name: &str,
    arguments: Value,
    settings: &ToolSettings,
    cancel: &CancellationToken,
) -> Result<ToolOutput> {
    match name {
        "browser_open" => {
            let args: OpenArgs = parse(arguments)?;
            let (tab, outcome) = browser
                .open(session, &args.url, args.new_tab, cancel)
                .await?;
            let page = page_after(browser, session, &outcome, cancel).await?;
            Ok(ToolOutput::text(format!(
                "Opened {} in tab {tab} ({}).{}\n{page}",
                outcome.url,
                render::load_state(&outcome),
                render::dialogs_seen(&outcome),
            )))
        }
        "browser_snapshot" => {
            let args: SnapshotArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let scope = match (args.reference, args.selector) {
                (Some(_), Some(_)) => {
                    return Err(BrowserError::invalid(
                        "ref",
                        "give ref or selector, not both",
                    ));
                }
                (Some(reference), None) => Scope::Ref(reference),
                (None, Some(selector)) => Scope::Selector(selector),
                (None, None) => Scope::Page,
            };
            let snapshot = browser.snapshot(session, &scope, cancel).await?;
            let tab = browser.active_tab(session)?;
            Ok(ToolOutput::text(render::snapshot(tab.as_str(), &snapshot)))
        }
        "browser_act" => {
            let args: ActArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
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
            let action = format!("{:?}", args.action).to_lowercase();
            let mut text = format!("Done: {action} on {}.", report.outcome.reference);
            if report.outcome.navigated {
                text.push_str(" The page navigated.");
            }
            if !report.new_tabs.is_empty() {
                let handles: Vec<&str> = report.new_tabs.iter().map(TabHandle::as_str).collect();
                text.push_str(&format!(
                    " Opened new tab(s): {} (use browser_switch_tab).",
                    handles.join(", ")
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
            Ok(ToolOutput::text(text))
        }
        "browser_navigate" => {
            let args: NavigateArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let request = match (&args.url, args.action) {
                (Some(url), None) => NavigationRequest::Url(url),
                (None, Some(HistoryMove::Back)) => NavigationRequest::Back,
                (None, Some(HistoryMove::Forward)) => NavigationRequest::Forward,
                (None, Some(HistoryMove::Reload)) => NavigationRequest::Reload,
                _ => {
                    return Err(BrowserError::invalid(
                        "url",
                        "give either url or action (back, forward, reload)",
                    ));
                }
            };
            let outcome = browser.navigate(session, request, cancel).await?;
            let page = page_after(browser, session, &outcome, cancel).await?;
            Ok(ToolOutput::text(format!(
                "Now at {} ({}).{}\n{page}",
                outcome.url,
                render::load_state(&outcome),
                render::dialogs_seen(&outcome),
            )))
        }
        "browser_execute" => {
            let args: ExecuteArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let timeout = args.timeout_ms.map(Duration::from_millis);
            match browser
                .execute(session, &args.script, args.args, timeout, cancel)
                .await?
            {
                ExecuteResult::Value {
                    value,
                    truncated,
                    unserializable,
                } => {
                    let json = serde_json::to_string_pretty(&value).unwrap_or_default();
                    let mut text = format!("Result:\n{}", render::fenced("value", &json));
                    if truncated {
                        text.push_str("\nThe value was cut at the size limit; return less data.");
                    }
                    if unserializable {
                        text.push_str("\nThe value is not JSON (a DOM node, a function or a cycle); this is its description.");
                    }
                    Ok(ToolOutput::text(text))
                }
                ExecuteResult::Exception {
                    message,
                    line,
                    column,
                    ..
                } => {
                    let place = match (line, column) {
                        (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
                        (Some(line), None) => format!(" at line {line}"),
                        _ => String::new(),
                    };
                    Ok(ToolOutput {
                        text: format!(
                            "The script threw{place}:\n{}",
                            render::fenced("exception", &message)
                        ),
                        image: None,
                        is_error: true,
                        code: Some("SCRIPT_THREW"),
                    })
                }
            }
        }
        "browser_content" => {
            let args: ContentArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let format = match args.format.unwrap_or(FormatName::Markdown) {
                FormatName::Markdown => ContentFormat::Markdown,
                FormatName::Txt => ContentFormat::Txt,
                FormatName::Html => ContentFormat::Html,
                FormatName::Json => ContentFormat::Json,
            };
            let request = ContentRequest {
                format,
                selector: args.selector,
                max_chars: args.max_chars.unwrap_or(0),
            };
            let timeout = args.timeout_ms.map(Duration::from_millis);
            let content = browser.content(session, request, timeout, cancel).await?;
            let mut text = render::fenced("content", &content.content);
            if content.truncated {
                text.push_str("\nTruncated at maxChars; raise maxChars or narrow with selector.");
            }
            Ok(ToolOutput::text(text))
        }
        "browser_screenshot" => {
            let args: ScreenshotArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let request = ScreenshotRequest {
                format: match args.format.unwrap_or(ImageName::Png) {
                    ImageName::Png => ImageKind::Png,
                    ImageName::Jpeg => ImageKind::Jpeg,
                },
                quality: args.quality.unwrap_or(80),
                full_page: args.full_page,
                selector: args.selector,
                reference: args.reference,
                ..ScreenshotRequest::default()
            };
            let shot = browser.screenshot(session, request, cancel).await?;
            let mut text = format!(
                "Screenshot {}x{} {}, {} bytes",
                shot.width,
                shot.height,
                shot.format.mime(),
                shot.data.len()
            );
            if shot.downscaled {
                text.push_str(" (downscaled to fit the size limit)");
            }
            if let Some(dir) = &settings.output_dir {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or_default();
                let extension = if shot.format == ImageKind::Png {
                    "png"
                } else {
                    "jpg"
                };
                let path = dir.join(format!("screenshot-{session}-{stamp}.{extension}"));
                std::fs::write(&path, &shot.data).map_err(|e| {
                    BrowserError::invalid(
                        "outputDir",
                        format!("cannot write {}: {e}", path.display()),
                    )
                })?;
                text.push_str(&format!("; saved as {}", path.display()));
            }
            Ok(ToolOutput {
                text,
                image: Some((
                    base64::engine::general_purpose::STANDARD.encode(&shot.data),
                    shot.format.mime(),
                )),
                is_error: false,
                code: None,
            })
        }
        "browser_list_tabs" => {
            let _: NoArgs = parse(arguments)?;
            let tabs = browser.list_tabs(session).await?;
            let unowned = browser.unowned_tabs().await?;
            let mut text = if tabs.is_empty() {
                "No tabs. Open one with browser_open.".to_owned()
            } else {
                let lines: Vec<String> = tabs
                    .iter()
                    .map(|t| {
                        let marker = if t.active { " (active)" } else { "" };
                        format!("{}{marker}: {} | {}", t.handle, t.url, t.title)
                    })
                    .collect();
                format!("Tabs:\n{}", render::fenced("tabs", &lines.join("\n")))
            };
            if !unowned.is_empty() {
                let lines: Vec<String> = unowned
                    .iter()
                    .map(|t| format!("{}: {} | {}", t.handle, t.url, t.title))
                    .collect();
                text.push_str(&format!(
                    "\nThe person's tabs (take one with browser_claim_tab, giving its tab, url and title exactly as shown):\n{}",
                    render::fenced("person-tabs", &lines.join("\n"))
                ));
            }
            Ok(ToolOutput::text(text))
        }
        "browser_wait" => {
            let args: WaitArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let timeout = Duration::from_millis(args.timeout_ms.unwrap_or(WAIT_DEFAULT_MS));
            let condition = wait_condition(args)?;
            let waited = browser.wait(session, &condition, timeout, cancel).await?;
            Ok(ToolOutput::text(format!(
                "Waited {} ms: {}.",
                waited.elapsed.as_millis(),
                render::fenced("wait", &waited.detail)
            )))
        }
        "browser_console" => {
            let args: ConsoleArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let level = match args.level.unwrap_or(LevelName::Debug) {
                LevelName::Debug => Level::Debug,
                LevelName::Info => Level::Info,
                LevelName::Warning => Level::Warning,
                LevelName::Error => Level::Error,
            };
            let limit = args.limit.unwrap_or(100).clamp(1, CONSOLE_CAP);
            let read = browser.console(session, args.since.unwrap_or(0), level, limit)?;
            let tab = browser.active_tab(session)?;
            let mut text = format!(
                "Console of {tab}: {} entr{} (next cursor: {}; pass it as since to read only what is new).",
                read.entries.len(),
                if read.entries.len() == 1 { "y" } else { "ies" },
                read.cursor
            );
            if read.dropped > 0 {
                text.push_str(&format!(
                    " {} earlier entries were dropped (a tab keeps the last {CONSOLE_CAP}).",
                    read.dropped
                ));
            }
            if !read.entries.is_empty() {
                let lines: Vec<String> = read
                    .entries
                    .iter()
                    .map(|e| {
                        let mut line = format!("[{}] {} {}", e.seq, e.level.name(), e.text);
                        if let Some(source) = &e.source {
                            line.push_str(&format!(" ({source})"));
                        }
                        if let Some(stack) = &e.stack {
                            line.push('\n');
                            line.push_str(stack);
                        }
                        line
                    })
                    .collect();
                text.push('\n');
                text.push_str(&render::fenced("console", &lines.join("\n")));
            }
            Ok(ToolOutput::text(text))
        }
        "browser_inspect" => {
            let args: InspectArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            let target = match (args.reference, args.selector) {
                (Some(reference), None) => InspectTarget::Ref(reference),
                (None, Some(selector)) => InspectTarget::Selector(selector),
                _ => {
                    return Err(BrowserError::invalid(
                        "ref",
                        "give exactly one of ref (from a snapshot) and selector (CSS)",
                    ));
                }
            };
            let options = InspectOptions {
                styles: args.styles,
            };
            let inspection = browser.inspect(session, &target, &options, cancel).await?;
            let tab = browser.active_tab(session)?;
            let described = match &target {
                InspectTarget::Ref(reference) => reference.clone(),
                InspectTarget::Selector(selector) => format!("{selector:?}"),
            };
            let json = serde_json::to_string_pretty(&inspection).unwrap_or_default();
            Ok(ToolOutput::text(format!(
                "Inspected {described} in {tab} (CSS pixels of the viewport; selector: one that matched only this element just now):\n{}",
                render::fenced("inspection", &json)
            )))
        }
        "browser_network" => {
            let args: NetworkArgs = parse(arguments)?;
            use_tab(browser, session, args.tab.as_deref()).await?;
            network(browser, session, &args, cancel).await
        }
        "browser_claim_tab" => {
            let args: ClaimTabArgs = parse(arguments)?;
            let tab = TabHandle::parse(&args.tab)?;
            browser
                .claim_tab(session, &tab, &args.url, &args.title)
                .await?;
            let snapshot = browser.snapshot(session, &Scope::Page, cancel).await?;
            Ok(ToolOutput::text(format!(
                "Claimed {tab}; it is your active tab and goes back to the person when your session ends.\n{}",
                render::snapshot(tab.as_str(), &snapshot)
            )))
        }
        "browser_switch_tab" => {
            let args: TabArgs = parse(arguments)?;
            let tab = TabHandle::parse(&args.tab)?;
            browser.switch_tab(session, &tab).await?;
            let snapshot = browser.snapshot(session, &Scope::Page, cancel).await?;
            Ok(ToolOutput::text(format!(
                "Switched to {tab}.\n{}",
                render::snapshot(tab.as_str(), &snapshot)
            )))
        }
        "browser_close_tab" => {
            let args: CloseTabArgs = parse(arguments)?;
            let tab = match args.tab {
                Some(tab) => TabHandle::parse(&tab)?,
                None => browser.active_tab(session)?,
            };
            browser.close_tab(session, &tab).await?;
            let now = browser
                .active_tab(session)
                .map(|t| format!(" The active tab is now {t}."))
                .unwrap_or_else(|_| " No tabs are left.".into());
            Ok(ToolOutput::text(format!("Closed {tab}.{now}")))
        }
        "browser_handoff" => {
            let args: HandoffArgs = parse(arguments)?;
            let timeout =
                Duration::from_millis(args.timeout_ms.unwrap_or(HANDOFF_DEFAULT_MS).max(1));
            let report = browser
                .handoff(session, &args.reason, timeout, cancel)
                .await?;
            let tab = browser.active_tab(session)?;
            let mut text = String::from("The person returned control.");
            if report.url_after != report.url_before {
                text.push_str(&format!(
                    " The page moved from {} to {}.",
                    report.url_before, report.url_after
                ));
            }
            let list = |tabs: &[TabHandle]| {
                tabs.iter()
                    .map(TabHandle::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if !report.tabs_opened.is_empty() {
                text.push_str(&format!(" Tabs opened: {}.", list(&report.tabs_opened)));
            }
            if !report.tabs_closed.is_empty() {
                text.push_str(&format!(" Tabs closed: {}.", list(&report.tabs_closed)));
            }
            text.push_str(match report.cookies_changed {
                Some(true) => " The site's cookies changed (a sign-in may have happened).",
                Some(false) => " The site's cookies did not change.",
                None => "",
            });
            text.push('\n');
            text.push_str(&render::snapshot(tab.as_str(), &report.snapshot));
            Ok(ToolOutput::text(text))
        }
        "browser_reset" => {
            let _: NoArgs = parse(arguments)?;
            browser.reset(session).await?;
            Ok(ToolOutput::text("Closed every tab of this session.".into()))
        }
        other => Err(BrowserError::invalid(
            "name",
            format!("there is no tool {other:?}"),
        )),
    }
}

/// Turns `browser_act` arguments into a target and an action, naming the
/// missing or conflicting field when they do not fit.
fn action_of(args: &ActArgs, secret: Option<&str>) -> Result<(Target, Action)> {
    let target = match (&args.reference, &args.role, &args.name) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(BrowserError::invalid(
                "ref",
                "give ref, or role and name, not both",
            ));
        }
        (Some(reference), None, None) => Target::Ref(reference.clone()),
        (None, Some(role), Some(name)) => Target::Role {
            role: role.clone(),
            name: name.clone(),
        },
        (None, Some(_), None) => return Err(BrowserError::invalid("name", "role needs name")),
        (None, None, Some(_)) => return Err(BrowserError::invalid("role", "name needs role")),
        (None, None, None) if matches!(args.action, ActionName::Scroll | ActionName::Press) => {
            Target::Page
        }
        (None, None, None) => {
            return Err(BrowserError::invalid(
                "ref",
                "give the element's ref (or role and name)",
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
                count: args.click_count.unwrap_or(1),
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
                to: Target::Ref(
                    args.to_ref
                        .clone()
                        .ok_or_else(|| BrowserError::invalid("toRef", "drag needs toRef"))?,
                ),
            },
        };
    Ok((target, action))
}

/// `browser_network`: one request's body, or the requests since a cursor.
async fn network(
    browser: &Browser,
    session: &SessionId,
    args: &NetworkArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput> {
    let tab = browser.active_tab(session)?;
    let with_headers = args.headers.unwrap_or(false);
    if let Some(seq) = args.body {
        let max_chars = args.body_max_chars.unwrap_or(20_000).max(1);
        let (entry, body) = browser
            .network_body(session, seq, max_chars, cancel)
            .await?;
        let mut text = format!(
            "Request {seq} of {tab}:\n{}",
            render::fenced("request", &render::request(&entry, with_headers))
        );
        match body {
            Body::Text {
                text: body,
                omitted_chars,
            } => {
                text.push_str(&format!(
                    "\nResponse body ({} characters",
                    body.chars().count()
                ));
                if omitted_chars > 0 {
                    text.push_str(&format!(
                        "; {omitted_chars} more left out, raise bodyMaxChars to see them"
                    ));
                }
                text.push_str("):\n");
                text.push_str(&render::fenced("body", &body));
            }
            Body::Binary { bytes } => {
                text.push_str(&format!(
                    "\nResponse body: {bytes} bytes of binary data, not shown."
                ));
            }
        }
        return Ok(ToolOutput::text(text));
    }
    let filter = NetworkFilter {
        failed_only: args.failed.unwrap_or(false),
        url_contains: args.url.clone(),
        resource_type: args.resource_type.clone(),
    };
    let limit = args.limit.unwrap_or(50).clamp(1, NETWORK_CAP);
    let read = browser.network(session, args.since.unwrap_or(0), &filter, limit)?;
    let mut text = format!(
        "Network of {tab}: {} request{} (next cursor: {}; pass it as since to read only what is new).",
        read.entries.len(),
        if read.entries.len() == 1 { "" } else { "s" },
        read.cursor
    );
    if read.in_flight > 0 {
        text.push_str(&format!(
            " {} still in flight (listed once they end).",
            read.in_flight
        ));
    }
    if read.dropped > 0 {
        text.push_str(&format!(
            " {} earlier requests were dropped (a tab keeps the last {NETWORK_CAP}).",
            read.dropped
        ));
    }
    if !read.entries.is_empty() {
        let lines: Vec<String> = read
            .entries
            .iter()
            .map(|entry| render::request(entry, with_headers))
            .collect();
        text.push('\n');
        text.push_str(&render::fenced("network", &lines.join("\n")));
        text.push_str("\nAsk for a body with body: <number>.");
    }
    Ok(ToolOutput::text(text))
}

#[cfg(test)]
mod tests {
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
}
