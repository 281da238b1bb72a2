//! Typed parameters and results for the CDP methods the provider uses.
//!
//! Only the fields we read or write are modelled; unknown fields are
//! ignored so newer browsers keep working. Names follow the protocol
//! (`Domain.method` → `DomainMethod`), documented at
//! <https://chromedevtools.github.io/devtools-protocol/>.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A CDP command: its method name, parameters (the struct itself) and result type.
pub trait Command: Serialize {
    /// The protocol method, such as `Page.navigate`.
    const METHOD: &'static str;
    /// What the browser answers.
    type Response: DeserializeOwned;
}

/// A result with no fields we care about.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Empty {}

macro_rules! command {
    ($name:ident => $method:literal, $response:ty) => {
        impl Command for $name {
            const METHOD: &'static str = $method;
            type Response = $response;
        }
    };
}

// ---- Browser ----------------------------------------------------------------

/// `Browser.getVersion`: used as the readiness probe after launch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BrowserGetVersion {}
command!(BrowserGetVersion => "Browser.getVersion", BrowserVersion);

/// Result of `Browser.getVersion`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserVersion {
    /// Such as `Chrome/156.0.8078.114` (or `HeadlessChrome/…`).
    pub product: String,
    /// The browser's user agent string.
    #[serde(default)]
    pub user_agent: String,
    /// The protocol version, such as `1.3`.
    #[serde(default)]
    pub protocol_version: String,
    /// The browser's source revision.
    #[serde(default)]
    pub revision: String,
    /// The V8 version.
    #[serde(default)]
    pub js_version: String,
}

/// `Browser.setDownloadBehavior`: we deny downloads.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSetDownloadBehavior {
    /// `deny`, `allow`, `allowAndName` or `default`.
    pub behavior: &'static str,
    /// Emit `Browser.downloadWillBegin` / progress events.
    pub events_enabled: bool,
}
command!(BrowserSetDownloadBehavior => "Browser.setDownloadBehavior", Empty);

/// `Browser.close`: asks the browser to exit gracefully.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BrowserClose {}
command!(BrowserClose => "Browser.close", Empty);

// ---- Target -----------------------------------------------------------------

/// `Target.setDiscoverTargets`: target created/changed/destroyed events.
#[derive(Debug, Clone, Serialize)]
pub struct TargetSetDiscoverTargets {
    /// Whether to discover.
    pub discover: bool,
}
command!(TargetSetDiscoverTargets => "Target.setDiscoverTargets", Empty);

/// `Target.setAutoAttach`: attach to related targets (iframes, workers) as flat sessions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetSetAutoAttach {
    /// Attach automatically.
    pub auto_attach: bool,
    /// Pause new targets until we resume them; we never do.
    pub wait_for_debugger_on_start: bool,
    /// Use flattened sessions on the same connection.
    pub flatten: bool,
}
command!(TargetSetAutoAttach => "Target.setAutoAttach", Empty);

/// `Target.createTarget`: opens a new page.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetCreateTarget {
    /// The initial URL (we use `about:blank` and navigate afterwards).
    pub url: String,
    /// The browser context to create it in; default context when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_context_id: Option<String>,
    /// Open in the background, without focusing.
    pub background: bool,
    /// Open in a window of its own. Every view gets one so that each page
    /// is visible and keeps rendering (animation frames) while others are in front.
    pub new_window: bool,
}
command!(TargetCreateTarget => "Target.createTarget", TargetCreated);

/// Result of `Target.createTarget`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetCreated {
    /// The new target's id.
    pub target_id: String,
}

/// `Target.attachToTarget` with `flatten: true`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetAttachToTarget {
    /// Which target.
    pub target_id: String,
    /// Always true: sessions share this connection.
    pub flatten: bool,
}
command!(TargetAttachToTarget => "Target.attachToTarget", TargetAttached);

/// Result of `Target.attachToTarget`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetAttached {
    /// The new flat session.
    pub session_id: String,
}

/// `Target.closeTarget`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetCloseTarget {
    /// Which target.
    pub target_id: String,
}
command!(TargetCloseTarget => "Target.closeTarget", Empty);

/// `Target.activateTarget`: brings a page to the front.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetActivateTarget {
    /// Which target.
    pub target_id: String,
}
command!(TargetActivateTarget => "Target.activateTarget", Empty);

/// `Target.getTargets`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TargetGetTargets {}
command!(TargetGetTargets => "Target.getTargets", TargetList);

/// Result of `Target.getTargets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetList {
    /// Every target the browser knows.
    pub target_infos: Vec<TargetInfo>,
}

/// Description of one target (also the payload of `Target.target*` events).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfo {
    /// The target id.
    pub target_id: String,
    /// `page`, `iframe`, `worker`, `browser`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Current title.
    #[serde(default)]
    pub title: String,
    /// Current URL.
    #[serde(default)]
    pub url: String,
    /// The target that opened this one (popups), if any.
    #[serde(default)]
    pub opener_id: Option<String>,
    /// Its browser context.
    #[serde(default)]
    pub browser_context_id: Option<String>,
}

/// Params of `Target.targetCreated` / `Target.targetInfoChanged`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfoEvent {
    /// The target.
    pub target_info: TargetInfo,
}

/// Params of `Target.targetDestroyed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetDestroyed {
    /// The target that went away.
    pub target_id: String,
}

/// `Target.createBrowserContext`: an isolated cookie/storage jar.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetCreateBrowserContext {
    /// Dispose the context when the connection closes.
    pub dispose_on_detach: bool,
}
command!(TargetCreateBrowserContext => "Target.createBrowserContext", BrowserContextCreated);

/// Result of `Target.createBrowserContext`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserContextCreated {
    /// The new context.
    pub browser_context_id: String,
}

/// `Target.disposeBrowserContext`: closes its pages and drops its data.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetDisposeBrowserContext {
    /// Which context.
    pub browser_context_id: String,
}
command!(TargetDisposeBrowserContext => "Target.disposeBrowserContext", Empty);

// ---- Page -------------------------------------------------------------------

/// `Page.enable`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageEnable {}
command!(PageEnable => "Page.enable", Empty);

/// `Page.setLifecycleEventsEnabled`: `Page.lifecycleEvent` with loader ids.
#[derive(Debug, Clone, Serialize)]
pub struct PageSetLifecycleEventsEnabled {
    /// On or off.
    pub enabled: bool,
}
command!(PageSetLifecycleEventsEnabled => "Page.setLifecycleEventsEnabled", Empty);

/// `Page.navigate`.
#[derive(Debug, Clone, Serialize)]
pub struct PageNavigate {
    /// Where to.
    pub url: String,
}
command!(PageNavigate => "Page.navigate", PageNavigated);

/// Result of `Page.navigate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageNavigated {
    /// The frame that navigates (the main frame).
    pub frame_id: String,
    /// Absent for same-document navigations.
    #[serde(default)]
    pub loader_id: Option<String>,
    /// Set when the navigation failed (`net::ERR_…`).
    #[serde(default)]
    pub error_text: Option<String>,
}

/// `Page.setDocumentContent`: replaces a frame's document with our own HTML.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageSetDocumentContent {
    /// The frame (a page's main frame id is its target id).
    pub frame_id: String,
    /// The new document.
    pub html: String,
}
command!(PageSetDocumentContent => "Page.setDocumentContent", Empty);

/// `Page.reload`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageReload {
    /// Bypass the cache.
    pub ignore_cache: bool,
}
command!(PageReload => "Page.reload", Empty);

/// `Page.stopLoading`: abandons a navigation still in progress (while one
/// is, the browser holds back commands for the page's renderer).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageStopLoading {}
command!(PageStopLoading => "Page.stopLoading", Empty);

/// `Page.getNavigationHistory`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageGetNavigationHistory {}
command!(PageGetNavigationHistory => "Page.getNavigationHistory", NavigationHistory);

/// Result of `Page.getNavigationHistory`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigationHistory {
    /// Index of the current entry.
    pub current_index: usize,
    /// All entries, oldest first.
    pub entries: Vec<NavigationEntry>,
}

/// One history entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigationEntry {
    /// Entry id for `Page.navigateToHistoryEntry`.
    pub id: i64,
    /// Its URL.
    pub url: String,
}

/// `Page.navigateToHistoryEntry`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageNavigateToHistoryEntry {
    /// Which entry.
    pub entry_id: i64,
}
command!(PageNavigateToHistoryEntry => "Page.navigateToHistoryEntry", Empty);

/// `Page.handleJavaScriptDialog`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageHandleJavaScriptDialog {
    /// Accept (OK) or dismiss (Cancel).
    pub accept: bool,
}
command!(PageHandleJavaScriptDialog => "Page.handleJavaScriptDialog", Empty);

/// `Page.captureScreenshot`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageCaptureScreenshot {
    /// `png` or `jpeg`.
    pub format: &'static str,
    /// JPEG quality 0–100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    /// The region in CSS pixels of the page, with an output scale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip: Option<Viewport>,
    /// Render beyond the viewport (full page, off-screen elements).
    pub capture_beyond_viewport: bool,
    /// Encode for speed rather than size (a PNG compressed less: quicker
    /// to make, larger on the wire).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optimize_for_speed: bool,
}
command!(PageCaptureScreenshot => "Page.captureScreenshot", ScreenshotData);

/// A clip rectangle for screenshots.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Viewport {
    /// Left, in CSS pixels from the document origin.
    pub x: f64,
    /// Top, in CSS pixels from the document origin.
    pub y: f64,
    /// Width in CSS pixels.
    pub width: f64,
    /// Height in CSS pixels.
    pub height: f64,
    /// Output scale (1 = one image pixel per CSS pixel).
    pub scale: f64,
}

/// Result of `Page.captureScreenshot`.
#[derive(Debug, Clone, Deserialize)]
pub struct ScreenshotData {
    /// Base64-encoded image.
    pub data: String,
}

/// `Emulation.setDeviceMetricsOverride`: the page's viewport size (the
/// desktop window sizes pages to its picture area).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmulationSetDeviceMetricsOverride {
    /// Viewport width in CSS pixels.
    pub width: u32,
    /// Viewport height in CSS pixels.
    pub height: u32,
    /// Device pixels per CSS pixel; 0 keeps the browser's own.
    pub device_scale_factor: f64,
    /// Emulate a mobile device (no).
    pub mobile: bool,
}
command!(EmulationSetDeviceMetricsOverride => "Emulation.setDeviceMetricsOverride", Empty);

/// `Page.getLayoutMetrics`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageGetLayoutMetrics {}
command!(PageGetLayoutMetrics => "Page.getLayoutMetrics", LayoutMetrics);

/// Result of `Page.getLayoutMetrics` (CSS-pixel variants only).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutMetrics {
    /// The layout viewport: scroll position and size.
    pub css_layout_viewport: LayoutViewport,
    /// The whole document's size.
    pub css_content_size: Rect,
}

/// Scroll position and size of the layout viewport.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutViewport {
    /// Horizontal scroll offset.
    pub page_x: f64,
    /// Vertical scroll offset.
    pub page_y: f64,
    /// Width.
    pub client_width: f64,
    /// Height.
    pub client_height: f64,
}

/// A rectangle.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// Params of `Page.lifecycleEvent`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleEvent {
    /// The frame.
    pub frame_id: String,
    /// The document load this event belongs to.
    pub loader_id: String,
    /// `init`, `DOMContentLoaded`, `load`, `networkIdle`, ...
    pub name: String,
}

/// Params of `Page.frameNavigated`.
#[derive(Debug, Clone, Deserialize)]
pub struct FrameNavigated {
    /// The frame after navigation.
    pub frame: Frame,
}

/// A frame as described by `Page` events.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    /// Frame id (the main frame's id equals its target id).
    pub id: String,
    /// Parent frame; absent for the main frame.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The loader of the committed document.
    pub loader_id: String,
    /// The committed URL.
    #[serde(default)]
    pub url: String,
}

/// Params of `Page.navigatedWithinDocument`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigatedWithinDocument {
    /// The frame.
    pub frame_id: String,
}

/// Params of `Page.javascriptDialogOpening`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogOpening {
    /// The page that opened it.
    #[serde(default)]
    pub url: String,
    /// The dialog's message.
    #[serde(default)]
    pub message: String,
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
}

// ---- Log --------------------------------------------------------------------

/// `Log.enable`: browser messages for the page (failed loads, violations).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LogEnable {}
command!(LogEnable => "Log.enable", Empty);

/// `Inspector.enable`: tells us when the page's renderer crashes
/// (`Inspector.targetCrashed`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct InspectorEnable {}
command!(InspectorEnable => "Inspector.enable", Empty);

/// `Network.enable`: request events for the tab's network log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NetworkEnable {}
command!(NetworkEnable => "Network.enable", Empty);

/// `Network.loadNetworkResource`: the browser loads a URL for us in a
/// frame's context (its network stack and policy), without the page
/// seeing a request.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkLoadNetworkResource {
    /// The frame whose context loads it.
    pub frame_id: String,
    /// What to load.
    pub url: String,
    /// Cache and credentials.
    pub options: LoadNetworkResourceOptions,
}
command!(NetworkLoadNetworkResource => "Network.loadNetworkResource", LoadedNetworkResource);

/// Options of [`NetworkLoadNetworkResource`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadNetworkResourceOptions {
    /// Skip the cache.
    pub disable_cache: bool,
    /// Send cookies.
    pub include_credentials: bool,
}

/// Result of [`NetworkLoadNetworkResource`].
#[derive(Debug, Clone, Deserialize)]
pub struct LoadedNetworkResource {
    /// How it went.
    pub resource: LoadedResource,
}

/// One loaded resource.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedResource {
    /// Whether it loaded.
    pub success: bool,
    /// The HTTP status, when one came.
    #[serde(default)]
    pub http_status_code: Option<f64>,
    /// Where to read the body from (with `IO.read`).
    #[serde(default)]
    pub stream: Option<String>,
}

/// `IO.read`: the next chunk of a stream.
#[derive(Debug, Clone, Serialize)]
pub struct IoRead {
    /// The stream.
    pub handle: String,
    /// At most this many bytes.
    pub size: u32,
}
command!(IoRead => "IO.read", IoChunk);

/// Result of [`IoRead`].
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IoChunk {
    /// Whether `data` is base64.
    #[serde(default)]
    pub base64_encoded: bool,
    /// The chunk.
    pub data: String,
    /// Whether the stream has ended.
    pub eof: bool,
}

/// `IO.close`: lets go of a stream.
#[derive(Debug, Clone, Serialize)]
pub struct IoClose {
    /// The stream.
    pub handle: String,
}
command!(IoClose => "IO.close", Empty);

/// `Network.setBlockedURLs`: requests of the page matching these patterns
/// fail as blocked (`net::ERR_BLOCKED_BY_CLIENT`). Each call replaces
/// what the page refused before.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSetBlockedUrls {
    /// Patterns with `*` wildcards, every one blocking.
    pub urls: Vec<String>,
    /// URL patterns in order, the first match deciding; they take
    /// precedence over `urls`. Left out when empty, for browsers that
    /// predate them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub url_patterns: Vec<BlockPattern>,
}

/// `Network.BlockPattern`: one URL pattern (URLPattern syntax) and whether
/// a request it matches is blocked or let through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockPattern {
    /// Such as `*://*.example.org:*/*`.
    pub url_pattern: String,
    /// Block (`true`) or let through (`false`).
    pub block: bool,
}

impl BlockPattern {
    /// A pattern that blocks (`block`) or lets through what it matches.
    pub fn new(url_pattern: String, block: bool) -> Self {
        Self { url_pattern, block }
    }
}
command!(NetworkSetBlockedUrls => "Network.setBlockedURLs", Empty);

/// `Network.getResponseBody`: a finished response's body, while the
/// browser still holds it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkGetResponseBody {
    /// The request, by the browser's id.
    pub request_id: String,
}
command!(NetworkGetResponseBody => "Network.getResponseBody", ResponseBody);

/// Result of `Network.getResponseBody`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseBody {
    /// The body: text, or base64 when `base64_encoded`.
    pub body: String,
    /// Whether `body` is base64 (binary content).
    pub base64_encoded: bool,
}

// ---- Runtime ----------------------------------------------------------------

/// `Runtime.enable`: execution context and console events.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RuntimeEnable {}
command!(RuntimeEnable => "Runtime.enable", Empty);

/// `Runtime.evaluate`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeEvaluate {
    /// The expression.
    pub expression: String,
    /// The execution context (an isolated world); the page's main world when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<i64>,
    /// Return the value as JSON instead of a remote object.
    pub return_by_value: bool,
    /// Wait for a returned promise.
    pub await_promise: bool,
    /// Treat the call as a user gesture (lets scripts open popups, play media).
    pub user_gesture: bool,
    /// Terminate the script after this many milliseconds (V8 interrupt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}
command!(RuntimeEvaluate => "Runtime.evaluate", EvaluateResult);

/// Result of `Runtime.evaluate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateResult {
    /// The value (by value when asked).
    pub result: RemoteObject,
    /// Present when the script threw.
    #[serde(default)]
    pub exception_details: Option<ExceptionDetails>,
}

/// A JavaScript value as CDP describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct RemoteObject {
    /// `object`, `string`, `undefined`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The value, for primitives and by-value results.
    #[serde(default)]
    pub value: Option<Value>,
    /// A printable description (for errors: the stack).
    #[serde(default)]
    pub description: Option<String>,
    /// Handle of the object, when not returned by value.
    #[serde(default, rename = "objectId")]
    pub object_id: Option<String>,
}

/// Details of a thrown exception.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionDetails {
    /// Short text, such as `Uncaught`.
    pub text: String,
    /// 0-based line.
    pub line_number: i64,
    /// 0-based column.
    pub column_number: i64,
    /// The thrown value.
    #[serde(default)]
    pub exception: Option<RemoteObject>,
}

/// `Page.createIsolatedWorld`: a JavaScript world of our own in a frame,
/// sharing the DOM but not the page's globals.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageCreateIsolatedWorld {
    /// The frame.
    pub frame_id: String,
    /// A name for the world (shows in DevTools).
    pub world_name: String,
}
command!(PageCreateIsolatedWorld => "Page.createIsolatedWorld", IsolatedWorld);

/// Result of `Page.createIsolatedWorld`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IsolatedWorld {
    /// The new world's execution context.
    pub execution_context_id: i64,
}

/// `Runtime.callFunctionOn`: calls a function with `this` bound to an object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeCallFunctionOn {
    /// The object (`this`).
    pub object_id: String,
    /// The function's source.
    pub function_declaration: String,
    /// Return the value as JSON.
    pub return_by_value: bool,
    /// Wait for a returned promise.
    pub await_promise: bool,
}
command!(RuntimeCallFunctionOn => "Runtime.callFunctionOn", EvaluateResult);

/// `DOM.getFrameOwner`: the iframe element that owns a frame.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomGetFrameOwner {
    /// The owned frame.
    pub frame_id: String,
}
command!(DomGetFrameOwner => "DOM.getFrameOwner", FrameOwner);

/// Result of `DOM.getFrameOwner`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameOwner {
    /// The iframe element.
    pub backend_node_id: i64,
}

/// `DOM.describeNode` with `pierce`: a node with its shadow roots, closed ones included.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomDescribeNode {
    /// The node, as a JavaScript object.
    pub object_id: String,
    /// How deep to describe children (0: the node only).
    pub depth: i32,
    /// Describe shadow roots and frame documents too.
    pub pierce: bool,
}
command!(DomDescribeNode => "DOM.describeNode", DescribedNode);

/// `DOMDebugger.getEventListeners`: the listeners on a node (and, with
/// `depth`, on its descendants), which page scripts cannot see.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomDebuggerGetEventListeners {
    /// The node, as a JavaScript object.
    pub object_id: String,
    /// How deep to look below it (0: the node only; -1: the whole subtree).
    pub depth: i32,
    /// Look into shadow roots too.
    pub pierce: bool,
}
command!(DomDebuggerGetEventListeners => "DOMDebugger.getEventListeners", EventListeners);

/// Result of `DOMDebugger.getEventListeners`.
#[derive(Debug, Clone, Deserialize)]
pub struct EventListeners {
    /// The listeners found.
    pub listeners: Vec<EventListener>,
}

/// One event listener (only what we read).
#[derive(Debug, Clone, Deserialize)]
pub struct EventListener {
    /// The event type, such as `pointerdown`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// Result of `DOM.describeNode`.
#[derive(Debug, Clone, Deserialize)]
pub struct DescribedNode {
    /// The node.
    pub node: DomNode,
}

/// A DOM node as CDP describes it (only what we read).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomNode {
    /// Stable id of the node in the browser.
    pub backend_node_id: i64,
    /// Its shadow roots, open and closed.
    #[serde(default)]
    pub shadow_roots: Vec<DomNode>,
}

/// `DOM.resolveNode`: a DOM node as a JavaScript object in a given context.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomResolveNode {
    /// The node.
    pub backend_node_id: i64,
    /// The context (our isolated world) the object should live in.
    pub execution_context_id: i64,
}
command!(DomResolveNode => "DOM.resolveNode", ResolvedNode);

/// `DOM.resolveNode` in the page's own (main) world: what the page's
/// scripts see of a node, such as the listeners they put on it
/// (`DOMDebugger.getEventListeners` reports those of the object's world).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomResolveNodeInPageWorld {
    /// The node.
    pub backend_node_id: i64,
}
command!(DomResolveNodeInPageWorld => "DOM.resolveNode", ResolvedNode);

/// Result of `DOM.resolveNode`.
#[derive(Debug, Clone, Deserialize)]
pub struct ResolvedNode {
    /// The object.
    pub object: RemoteObjectId,
}

/// Just the id of a remote object.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteObjectId {
    /// Absent for primitives.
    #[serde(default)]
    pub object_id: Option<String>,
}

/// `Runtime.compileScript`: syntax check without running.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeCompileScript {
    /// The source.
    pub expression: String,
    /// Required by the protocol; empty is fine.
    #[serde(rename = "sourceURL")]
    pub source_url: String,
    /// Keep the compiled script (we never do).
    pub persist_script: bool,
}
command!(RuntimeCompileScript => "Runtime.compileScript", CompileResult);

/// Result of `Runtime.compileScript`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompileResult {
    /// Present when the source does not compile.
    #[serde(default)]
    pub exception_details: Option<ExceptionDetails>,
}

/// `Runtime.terminateExecution`: stops a runaway script.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RuntimeTerminateExecution {}
command!(RuntimeTerminateExecution => "Runtime.terminateExecution", Empty);

// ---- Network ----------------------------------------------------------------

/// `Network.getCookies`: cookies that would be sent to these URLs.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkGetCookies {
    /// The URLs.
    pub urls: Vec<String>,
}
command!(NetworkGetCookies => "Network.getCookies", Cookies);

/// Result of `Network.getCookies`.
#[derive(Debug, Clone, Deserialize)]
pub struct Cookies {
    /// The cookies.
    pub cookies: Vec<Cookie>,
}

/// One cookie (what we compare).
#[derive(Debug, Clone, Deserialize)]
pub struct Cookie {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

// ---- Input ------------------------------------------------------------------

/// `Input.dispatchMouseEvent`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputDispatchMouseEvent {
    /// `mousePressed`, `mouseReleased`, `mouseMoved`, `mouseWheel`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Viewport x in CSS pixels.
    pub x: f64,
    /// Viewport y in CSS pixels.
    pub y: f64,
    /// `none`, `left`, `middle`, `right`.
    pub button: &'static str,
    /// Number of clicks so far (1 for a single click).
    pub click_count: u32,
    /// Held modifiers: Alt=1, Control=2, Meta=4, Shift=8.
    pub modifiers: u8,
    /// Horizontal wheel delta (for `mouseWheel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_x: Option<f64>,
    /// Vertical wheel delta (for `mouseWheel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_y: Option<f64>,
    /// The buttons held during the event (left=1, right=2, middle=4), so
    /// that moves in a drag say the button is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buttons: Option<u32>,
}
command!(InputDispatchMouseEvent => "Input.dispatchMouseEvent", Empty);

/// `Input.setInterceptDrags`: while enabled, an HTML5 drag the page starts
/// is handed to us (`Input.dragIntercepted`) instead of the operating system.
#[derive(Debug, Clone, Serialize)]
pub struct InputSetInterceptDrags {
    /// Whether to intercept.
    pub enabled: bool,
}
command!(InputSetInterceptDrags => "Input.setInterceptDrags", Empty);

/// The data of an HTML5 drag (`Input.DragData`), as the page put it in its
/// `DataTransfer`: handed to us by `Input.dragIntercepted`, given back with
/// every `Input.dispatchDragEvent`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DragData {
    /// The items: a MIME type and its data each.
    #[serde(default)]
    pub items: Vec<DragDataItem>,
    /// Paths of dragged files, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The operations the source allows (copy=1, link=2, move=16).
    #[serde(default)]
    pub drag_operations_mask: i64,
}

/// One item of [`DragData`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DragDataItem {
    /// Its MIME type, such as `text/plain`.
    pub mime_type: String,
    /// Its data.
    pub data: String,
    /// A link's title, for `text/uri-list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The base URL of `text/html` data.
    #[serde(default, rename = "baseURL", skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// `Input.dispatchDragEvent`: one step of an intercepted HTML5 drag.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputDispatchDragEvent {
    /// `dragEnter`, `dragOver`, `drop` or `dragCancel`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Viewport x in CSS pixels.
    pub x: f64,
    /// Viewport y in CSS pixels.
    pub y: f64,
    /// What is dragged.
    pub data: DragData,
    /// Held modifiers: Alt=1, Control=2, Meta=4, Shift=8.
    pub modifiers: u8,
}
command!(InputDispatchDragEvent => "Input.dispatchDragEvent", Empty);

/// `Input.dispatchKeyEvent`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputDispatchKeyEvent {
    /// `keyDown`, `rawKeyDown`, `char` or `keyUp`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Held modifiers: Alt=1, Control=2, Meta=4, Shift=8.
    pub modifiers: u8,
    /// The DOM `key` value, such as `Enter` or `a`.
    pub key: String,
    /// The DOM `code` value, such as `Enter` or `KeyA`.
    pub code: String,
    /// Windows virtual key code (what makes Enter submit and Tab move focus).
    pub windows_virtual_key_code: u32,
    /// Text the key produces, for printable keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Editing commands to run (`selectAll`, …), as Chromium's keyboard shortcuts do.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<&'static str>,
}
command!(InputDispatchKeyEvent => "Input.dispatchKeyEvent", Empty);

/// `Input.insertText`: inserts text as an IME commit would.
#[derive(Debug, Clone, Serialize)]
pub struct InputInsertText {
    /// The text.
    pub text: String,
}
command!(InputInsertText => "Input.insertText", Empty);

/// `Input.imeSetComposition`: shows text an input method is composing
/// (underlined, not yet committed); empty text cancels the composition.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputImeSetComposition {
    /// The text being composed.
    pub text: String,
    /// Where the caret selection starts within `text`.
    pub selection_start: u32,
    /// Where it ends.
    pub selection_end: u32,
}
command!(InputImeSetComposition => "Input.imeSetComposition", Empty);
