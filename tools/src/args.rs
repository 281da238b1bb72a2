//! The arguments of every `browser_*` tool, as strict typed structs.
//!
//! Field docs become the JSON Schema descriptions a model reads, so they are
//! written for a model: short, concrete, and teaching how refs work.
//! Unknown fields are refused, so a typo is an `INVALID_ARGUMENT` naming the
//! field instead of a silently ignored option.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `browser_open`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OpenArgs {
    /// The http(s) URL to open.
    pub url: String,
    /// Open in a new tab instead of the active one.
    #[serde(default)]
    pub new_tab: bool,
    /// Leave this tab open for the person when your session ends (a deliverable).
    #[serde(default)]
    pub keep: bool,
}

/// `browser_snapshot`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotArgs {
    /// Only the subtree of this ref (such as "e12").
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Only the subtree of the first element matching this CSS selector.
    pub selector: Option<String>,
    /// The tab to use (such as "t2"); default: the active tab. It becomes active.
    pub tab: Option<String>,
}

/// The actions of `browser_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ActionName {
    /// Click the element (`button`, `clickCount`, `modifiers` optional).
    Click,
    /// Type `text` after the element's current content.
    Type,
    /// Replace the element's content with `text`.
    Fill,
    /// Press `key` (such as "Enter", "Tab", "Control+A") with the element focused.
    Press,
    /// Choose `values` (option values or labels) in a select.
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
    /// Drag the element onto `toRef`.
    Drag,
}

/// Mouse buttons for `click`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ButtonName {
    /// Primary.
    Left,
    /// Secondary (context menu).
    Right,
    /// Wheel.
    Middle,
}

/// `browser_act`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActArgs {
    /// What to do.
    pub action: ActionName,
    /// The element's ref from the latest snapshot or diff (such as "e12").
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Instead of a ref: the element's role (such as "button"), with `name`.
    pub role: Option<String>,
    /// Instead of a ref: the element's exact accessible name, with `role`.
    pub name: Option<String>,
    /// Text for `type` and `fill`.
    pub text: Option<String>,
    /// Instead of `text`, for `type` and `fill`: the name of a secret the
    /// person gave (the server's instructions list them). Its value is
    /// typed and never shown: results say «secret:NAME» instead.
    pub secret: Option<String>,
    /// Press Enter after `type` or `fill`.
    #[serde(default)]
    pub submit: bool,
    /// Key or chord for `press`, such as "Enter", "Escape", "Shift+Tab", "Control+A".
    pub key: Option<String>,
    /// Option values or labels for `select`.
    pub values: Option<Vec<String>>,
    /// Mouse button for `click` (default left).
    pub button: Option<ButtonName>,
    /// Clicks in a row for `click` (2 = double-click).
    pub click_count: Option<u32>,
    /// Keys held during `click`: "Alt", "Control", "Meta", "Shift".
    pub modifiers: Option<Vec<String>>,
    /// Horizontal scroll distance in pixels for `scroll`.
    pub dx: Option<f64>,
    /// Vertical scroll distance in pixels for `scroll` (positive scrolls down).
    pub dy: Option<f64>,
    /// Drop target's ref for `drag`.
    pub to_ref: Option<String>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// History moves for `browser_navigate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HistoryMove {
    /// One page back.
    Back,
    /// One page forward.
    Forward,
    /// Reload the page.
    Reload,
}

/// `browser_navigate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NavigateArgs {
    /// An http(s) URL to go to (give this or `action`).
    pub url: Option<String>,
    /// "back", "forward" or "reload" (give this or `url`).
    pub action: Option<HistoryMove>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// `browser_execute`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecuteArgs {
    /// JavaScript: an expression (`document.title`) or a function body with `return`.
    /// Promises are awaited. Prefer `browser_act` for interaction.
    pub script: String,
    /// Values passed to the script as `arguments[0..n]`.
    #[serde(default)]
    pub args: Vec<Value>,
    /// Give up after this many milliseconds (default 30000).
    pub timeout_ms: Option<u64>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// Content formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FormatName {
    /// Reading view: headings, lists, links, tables, code.
    Markdown,
    /// Rendered text only.
    Txt,
    /// The DOM as HTML.
    Html,
    /// Title, url, language, description, headings, links, forms, tables, JSON-LD.
    Json,
}

/// `browser_content`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContentArgs {
    /// Output format (default markdown).
    pub format: Option<FormatName>,
    /// Only the first element matching this CSS selector.
    pub selector: Option<String>,
    /// Cut the content after this many characters.
    pub max_chars: Option<usize>,
    /// Give up after this many milliseconds (default 30000).
    pub timeout_ms: Option<u64>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// Image formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ImageName {
    /// Lossless.
    Png,
    /// Smaller; set `quality`.
    Jpeg,
}

/// `browser_screenshot`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScreenshotArgs {
    /// The whole scrollable page instead of the viewport.
    #[serde(default)]
    pub full_page: bool,
    /// Only this element, by ref from the latest snapshot (such as "e12").
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Only the element matching this CSS selector.
    pub selector: Option<String>,
    /// png (default) or jpeg.
    pub format: Option<ImageName>,
    /// JPEG quality 1-100 (default 80).
    pub quality: Option<u8>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// `browser_switch_tab`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TabArgs {
    /// The tab handle from `browser_list_tabs`, such as "t2".
    pub tab: String,
}

/// Element states for `browser_wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StateName {
    /// On the page and visible (default).
    Visible,
    /// Gone or invisible.
    Hidden,
    /// Visible and not disabled.
    Enabled,
}

/// Load states for `browser_wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum LoadName {
    /// The `load` event.
    #[serde(rename = "load")]
    Load,
    /// The `DOMContentLoaded` event.
    #[serde(rename = "domcontentloaded")]
    DomContentLoaded,
    /// `load`, then no request in flight for 500 ms.
    #[serde(rename = "networkidle")]
    NetworkIdle,
}

/// `browser_wait`: give exactly one condition.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitArgs {
    /// Wait until this text is visible on the page.
    pub text: Option<String>,
    /// Wait until this text is no longer on the page.
    pub text_gone: Option<String>,
    /// Wait for the element with this ref to reach `state`.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Wait for an element with this role (and exact `name`) to reach `state`.
    pub role: Option<String>,
    /// The exact accessible name, with `role`.
    pub name: Option<String>,
    /// For `ref` or `role`: visible (default), hidden, or enabled.
    pub state: Option<StateName>,
    /// Wait until the page URL contains this text.
    pub url: Option<String>,
    /// Wait until the page has loaded this far: load, domcontentloaded, or networkidle (loaded, then no
    /// request in flight for 500 ms).
    pub load: Option<LoadName>,
    /// Wait until a request whose URL contains this text has ended (finished or failed) and none like it
    /// is still in flight; see it with browser_network.
    pub request: Option<String>,
    /// Wait until this JavaScript expression is truthy (it may read the page's variables).
    pub script: Option<String>,
    /// Wait until the page stops changing (no DOM change for 500 ms).
    #[serde(default)]
    pub stable: bool,
    /// Give up after this many milliseconds (default 10000); then TIMEOUT says what was last seen.
    pub timeout_ms: Option<u64>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// Console levels, least serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LevelName {
    /// Everything.
    Debug,
    /// Logs and above.
    Info,
    /// Warnings and errors.
    Warning,
    /// Errors and uncaught exceptions only.
    Error,
}

/// `browser_console`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConsoleArgs {
    /// Only this level and more serious: debug (default, everything), info, warning, error.
    pub level: Option<LevelName>,
    /// Only entries after this cursor (the "next cursor" of your last read): read only what is new.
    pub since: Option<u64>,
    /// At most this many entries (default 100).
    pub limit: Option<usize>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// `browser_inspect`: give exactly one of ref and selector.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InspectArgs {
    /// The element's ref from the latest snapshot (such as "e12").
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Or a CSS selector matching exactly one element of the page.
    pub selector: Option<String>,
    /// Computed style properties to report (such as ["background-color", "width"]); ["all"] for every
    /// property; default: a common set (display, visibility, colours, font, box, position …).
    pub styles: Option<Vec<String>>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// `browser_network`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkArgs {
    /// Only failed requests: network errors, blocked or canceled ones, and HTTP 4xx/5xx.
    pub failed: Option<bool>,
    /// Only requests whose URL contains this.
    pub url: Option<String>,
    /// Only this resource type: document, stylesheet, script, image, font, fetch, xhr, …
    #[serde(rename = "type")]
    pub resource_type: Option<String>,
    /// Only requests after this cursor (the "next cursor" of your last read): read only what is new.
    pub since: Option<u64>,
    /// At most this many requests (default 50).
    pub limit: Option<usize>,
    /// Include request and response headers (credentials and token-like values redacted).
    pub headers: Option<bool>,
    /// Show the response body of this request, by its number from a read (such as 7).
    pub body: Option<u64>,
    /// At most this many characters of body (default 20000).
    pub body_max_chars: Option<usize>,
    /// The tab to use (such as "t2"); default: the active tab.
    pub tab: Option<String>,
}

/// `browser_claim_tab`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimTabArgs {
    /// The handle of a tab a person opened, from `browser_list_tabs` (such as "t3").
    pub tab: String,
    /// Its URL exactly as listed; if it changed, the claim fails.
    pub url: String,
    /// Its title exactly as listed; if it changed, the claim fails.
    pub title: String,
}

/// `browser_close_tab`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseTabArgs {
    /// The tab handle from `browser_list_tabs`, such as "t2"; default: the active tab.
    pub tab: Option<String>,
}

/// `browser_handoff`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HandoffArgs {
    /// What the person should do, in a sentence (such as "Please sign in to your bank").
    pub reason: String,
    /// How long to wait for the person, in milliseconds (default 600000).
    pub timeout_ms: Option<u64>,
}

/// Tools without arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}
