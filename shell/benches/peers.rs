//! browser-shell next to the other agent browsers, side by side (issue 38).
//!
//! Run: `cargo bench -p browser-shell --bench peers` (`-- --help` for the
//! options). Every tool is spawned as an agent's MCP client spawns it and
//! driven over stdio with JSON-RPC lines: `browser-shell mcp`, Playwright
//! MCP, Chrome DevTools MCP and agent-browser's `mcp` server, the peers
//! pinned in `benches/peers/package.json` (installed there with `npm ci`,
//! which downloads no browser: every tool runs the same system Chromium,
//! Debian's headless shell when it is installed). Pages are `fixtures/`
//! (and Debian's `python3-doc` Sphinx page) served on 127.0.0.1.
//!
//! Per tool, `--rounds` rounds (10; `--quick`: 3; each measure after
//! [`WARM_UP_CALLS`] untimed calls) of:
//! * **cold start**: spawn → `initialize` answered → the form page loaded
//!   by the tool's navigate tool; then a snapshot and a screenshot (a warm
//!   session) and the PSS of every process the tool started (its server,
//!   any daemon it detaches, its browser). Rounds take turns between tools.
//! * in one warm session per tool: a **snapshot** of the form, app,
//!   frames, 1,500-row and Sphinx pages; **click** the form's "Add one"
//!   button by the tool's own ref from its own snapshot → result; **type**
//!   and **fill** a word into "Full name" → result; a **screenshot**;
//!   **navigate + snapshot** of the 1,500-row page (one call for
//!   browser-shell, whose navigate returns the snapshot; navigate, then
//!   snapshot for the others); after each of these measures, the PSS of
//!   everything the tool started, whose largest is the session's **peak**
//!   (the figure issue 38 sets its PSS goal on; the PSS after one page is
//!   printed beside it for reference).
//!   Each measure starts once the tool's processes are idle (at most 3 s:
//!   a browser just started still launches helpers).
//!
//! Prints p50/p95 in ms and the bytes of text each answer gives the model,
//! then a Markdown table of p50s and the ratios against the goals.
//!
//! # Layout
//! * [`Options`]: the command line.
//! * [`Peer`]: what differs between tools (how to start one, the name and
//!   arguments of its navigate, snapshot, click, type, fill, screenshot
//!   tools, how its snapshot writes a ref).
//! * [`Server`]: one running tool over stdio; every process it starts
//!   carries a marker in its environment, which is how its memory is
//!   counted and how it is killed (detached daemons included) when the
//!   server is stopped or dropped.
//! * [`cold_round`], [`warm_session`]: the measurements; [`report`]: the
//!   tables.

// `support` unwraps where a benchmark cannot go on (binding its server).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use browser_testkit::fixtures::{PYTHON_DOCS, serve_fixtures};
use browser_testkit::stats::{ms, percentile};
use support::pss_by_kind;

/// The environment variable every process of a measured tool inherits; its
/// value is `<this process's pid>-<server number>`.
const MARKER: &str = "BROWSER_SHELL_PEERS_BENCH";
/// How long one request may take before the tool counts as hung.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopped tool gets to exit by itself before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The longest a measure waits for the tool's processes to go idle.
const SETTLE_BOUND: Duration = Duration::from_secs(3);
/// The command that installs the pinned peers.
const INSTALL: &str =
    "cd shell/benches/peers && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci";
/// The word typed and filled.
const WORD: &str = "hello";

const HELP: &str = "\
browser-shell next to Playwright MCP, Chrome DevTools MCP and agent-browser, over MCP stdio

Usage: cargo bench -p browser-shell --bench peers [-- OPTIONS]

Options:
  --rounds N     rounds per measure (default 10), after 3 untimed calls
  --quick        3 rounds
  --only LIST    only these tools, comma-separated: shell, playwright, devtools, agent-browser
  -h, --help     this text

The peers come from shell/benches/peers (pinned in its package.json). Install them once with
  cd shell/benches/peers && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci
(a missing peer is skipped with that hint). Every tool runs the same Chromium:
/usr/bin/chromium-headless-shell, else /usr/bin/chromium in headless mode, or $BROWSER_SHELL_CHROMIUM.
The browser-shell measured is the one cargo built with the benchmark (or $BROWSER_SHELL_BIN).
The Sphinx page needs Debian's python3-doc (/usr/share/doc/python3/html).
Runs one tool at a time; on 2 cores, run nothing else heavy beside it.";

/// The command line.
struct Options {
    /// Rounds per measure.
    rounds: usize,
    /// The tools to measure, in the order of the tables.
    peers: Vec<Peer>,
}

impl Options {
    /// Parses the arguments after the program's name; `Ok(None)` for
    /// `--help`.
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Self>, String> {
        let mut options = Self {
            rounds: 10,
            peers: Peer::ALL.to_vec(),
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-h" | "--help" => return Ok(None),
                "--bench" => {} // what `cargo bench` passes to every bench
                "--quick" => options.rounds = 3,
                "--rounds" => {
                    options.rounds = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n| n > 0)
                        .ok_or("--rounds takes a number above 0, such as --rounds 10")?;
                }
                "--only" => {
                    let list = args
                        .next()
                        .ok_or("--only takes a list, such as --only shell,playwright")?;
                    options.peers = list
                        .split(',')
                        .map(|key| {
                            Peer::ALL.into_iter().find(|p| p.key() == key).ok_or_else(|| {
                                format!("--only: unknown tool {key:?}; the tools are shell, playwright, devtools, agent-browser")
                            })
                        })
                        .collect::<Result<_, _>>()?;
                }
                other => return Err(format!("unknown option {other:?}; see --help")),
            }
        }
        Ok(Some(options))
    }
}

/// One of the measured tools.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Peer {
    Shell,
    Playwright,
    DevTools,
    AgentBrowser,
}

impl Peer {
    const ALL: [Self; 4] = [
        Self::Shell,
        Self::Playwright,
        Self::DevTools,
        Self::AgentBrowser,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Shell => "browser-shell",
            Self::Playwright => "Playwright MCP",
            Self::DevTools => "Chrome DevTools MCP",
            Self::AgentBrowser => "agent-browser",
        }
    }

    /// Its name for `--only`.
    fn key(self) -> &'static str {
        match self {
            Self::Shell => "shell",
            Self::Playwright => "playwright",
            Self::DevTools => "devtools",
            Self::AgentBrowser => "agent-browser",
        }
    }

    /// How to start it with `browser`, or why it cannot be.
    fn command(self, browser: &Browser, home: &Path) -> Result<tokio::process::Command, String> {
        let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/node_modules");
        let exe = browser.path.to_string_lossy().into_owned();
        let installed = |path: PathBuf| {
            if path.exists() {
                Ok(path)
            } else {
                Err(format!(
                    "{} is not installed ({} is missing): run\n  {INSTALL}",
                    self.name(),
                    path.display()
                ))
            }
        };
        let node = |script: PathBuf| {
            let mut command = tokio::process::Command::new("node");
            command.arg(script);
            command
        };
        let mut command = match self {
            Self::Shell => {
                // The binary cargo built with this benchmark, or another.
                let binary = std::env::var_os("BROWSER_SHELL_BIN").map_or_else(
                    || PathBuf::from(env!("CARGO_BIN_EXE_browser-shell")),
                    PathBuf::from,
                );
                let binary = installed(binary).map_err(|_| {
                    "the browser-shell binary is missing: run cargo bench -p browser-shell --bench peers, which builds it (or set BROWSER_SHELL_BIN)".to_owned()
                })?;
                let mut command = tokio::process::Command::new(binary);
                command.args(["mcp", "--browser", &exe]);
                command.env("BROWSER_SHELL_RUNTIME_DIR", home.join("runtime"));
                command
            }
            Self::Playwright => {
                let mut command = node(installed(peers.join("@playwright/mcp/cli.js"))?);
                command.args([
                    "--headless",
                    "--isolated",
                    "--no-sandbox",
                    "--executable-path",
                    &exe,
                ]);
                command.arg("--output-dir").arg(home.join("out"));
                command
            }
            Self::DevTools => {
                let mut command = node(installed(
                    peers.join("chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"),
                )?);
                command.args([
                    "--headless",
                    "--isolated",
                    "--executablePath",
                    &exe,
                    "--chrome-arg=--no-sandbox",
                    "--no-usage-statistics",
                    // Only 127.0.0.1 traffic: no trace URLs to the CrUX API.
                    "--no-performance-crux",
                ]);
                command.env("CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS", "1");
                command
            }
            Self::AgentBrowser => {
                let platform = match (std::env::consts::OS, std::env::consts::ARCH) {
                    ("linux", "x86_64") => "linux-x64",
                    ("linux", "aarch64") => "linux-arm64",
                    ("macos", "aarch64") => "darwin-arm64",
                    ("macos", "x86_64") => "darwin-x64",
                    (os, arch) => {
                        return Err(format!("agent-browser: no native binary for {os}-{arch}"));
                    }
                };
                let mut command = tokio::process::Command::new(installed(
                    peers.join(format!("agent-browser/bin/agent-browser-{platform}")),
                )?);
                command.arg("mcp");
                command.env("AGENT_BROWSER_EXECUTABLE_PATH", &exe);
                command.env("AGENT_BROWSER_ARGS", "--no-sandbox");
                command.env("AGENT_BROWSER_NO_VERSION_CHECK", "1");
                command.env("AGENT_BROWSER_SCREENSHOT_DIR", home.join("out"));
                command
            }
        };
        // Everything a tool keeps (profiles, caches, daemons' sockets,
        // files it writes) goes to its own directory, removed after it.
        command
            .current_dir(home)
            .env("HOME", home)
            .env("TMPDIR", home)
            .env("XDG_RUNTIME_DIR", home.join("runtime"));
        Ok(command)
    }

    /// Its navigate tool.
    fn navigate(self, url: &str, first: bool) -> (&'static str, Value) {
        match self {
            // `browser_open` makes the agent's tab; later ones navigate it.
            Self::Shell if first => ("browser_open", json!({"url": url})),
            Self::Shell => ("browser_navigate", json!({"url": url})),
            Self::Playwright => ("browser_navigate", json!({"url": url})),
            Self::DevTools => ("navigate_page", json!({"pageId": 1, "url": url})),
            Self::AgentBrowser => ("agent_browser_open", json!({"url": url})),
        }
    }

    /// Whether its navigate answers with the new page's snapshot.
    fn navigate_snapshots(self) -> bool {
        self == Self::Shell
    }

    fn snapshot(self) -> (&'static str, Value) {
        match self {
            Self::Shell => ("browser_snapshot", json!({})),
            Self::Playwright => ("browser_snapshot", json!({})),
            Self::DevTools => ("take_snapshot", json!({"pageId": 1})),
            Self::AgentBrowser => ("agent_browser_snapshot", json!({})),
        }
    }

    fn screenshot(self) -> (&'static str, Value) {
        match self {
            Self::Shell => ("browser_screenshot", json!({})),
            Self::Playwright => (
                "browser_take_screenshot",
                json!({"type": "png", "scale": "css"}),
            ),
            Self::DevTools => ("take_screenshot", json!({"pageId": 1})),
            Self::AgentBrowser => ("agent_browser_screenshot", json!({})),
        }
    }

    fn click(self, target: &str) -> (&'static str, Value) {
        match self {
            Self::Shell => ("browser_act", json!({"action": "click", "ref": target})),
            Self::Playwright => ("browser_click", json!({"target": target})),
            Self::DevTools => ("click", json!({"pageId": 1, "uid": target})),
            Self::AgentBrowser => ("agent_browser_click", json!({"selector": target})),
        }
    }

    /// Its tool that types into an element. Playwright MCP's
    /// `browser_type` fills the text at once unless `slowly`; Chrome
    /// DevTools MCP types only into the focused element (`type_text`), so
    /// its `fill` stands in.
    fn type_text(self, target: &str) -> (&'static str, Value) {
        match self {
            Self::Shell => (
                "browser_act",
                json!({"action": "type", "ref": target, "text": WORD}),
            ),
            Self::Playwright => ("browser_type", json!({"target": target, "text": WORD})),
            Self::DevTools => self.fill(target),
            Self::AgentBrowser => (
                "agent_browser_type",
                json!({"selector": target, "text": WORD}),
            ),
        }
    }

    fn fill(self, target: &str) -> (&'static str, Value) {
        match self {
            Self::Shell => (
                "browser_act",
                json!({"action": "fill", "ref": target, "text": WORD}),
            ),
            Self::Playwright => (
                "browser_fill_form",
                json!({"fields": [{"target": target, "name": "Full name", "type": "textbox", "value": WORD}]}),
            ),
            Self::DevTools => ("fill", json!({"pageId": 1, "uid": target, "value": WORD})),
            Self::AgentBrowser => (
                "agent_browser_fill",
                json!({"selector": target, "text": WORD}),
            ),
        }
    }

    /// The tool's tools for type and fill, for the printout.
    fn typing_tools(self) -> &'static str {
        match self {
            Self::Shell => "browser_act type (key by key) / fill",
            Self::Playwright => "browser_type (fills at once) / browser_fill_form",
            Self::DevTools => "fill / fill (no tool types into an element)",
            Self::AgentBrowser => "agent_browser_type / agent_browser_fill",
        }
    }

    /// The ref of the first element in `snapshot` whose line contains
    /// `needle` (such as `button "Add one"`), as its click tool takes it.
    fn find_ref(self, snapshot: &str, needle: &str) -> Option<String> {
        let line = snapshot.lines().find(|line| line.contains(needle))?;
        let after = |key: &str| {
            let rest = &line[line.find(key)? + key.len()..];
            let end = rest
                .find(|c: char| c == ']' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            Some(rest[..end].to_owned())
        };
        match self {
            Self::DevTools => after("uid="),
            Self::AgentBrowser => after("ref=").map(|r| format!("@{r}")),
            Self::Shell | Self::Playwright => after("ref="),
        }
    }
}

/// The Chromium every tool runs.
struct Browser {
    path: PathBuf,
}

impl Browser {
    fn find() -> Result<Self, String> {
        let candidates = std::env::var_os("BROWSER_SHELL_CHROMIUM")
            .map(PathBuf::from)
            .into_iter()
            .chain(["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"].map(PathBuf::from));
        candidates
            .into_iter()
            .find(|path| path.exists())
            .map(|path| Self { path })
            .ok_or_else(|| "no Chromium: install Debian's chromium-headless-shell (apt-get install chromium-headless-shell) or set BROWSER_SHELL_CHROMIUM".to_owned())
    }
}

/// A JSON-RPC request.
#[derive(Serialize)]
struct Request<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: Value,
}

/// A JSON-RPC message from the server: an answer, a request or a
/// notification.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    message: String,
}

/// What `initialize` answers, the part read here.
#[derive(Deserialize)]
struct InitializeResult {
    #[serde(rename = "serverInfo")]
    server_info: ServerInfo,
}

#[derive(Deserialize)]
struct ServerInfo {
    name: String,
    #[serde(default)]
    version: String,
}

/// What `tools/call` answers.
#[derive(Deserialize)]
struct CallToolResult {
    #[serde(default)]
    content: Vec<Content>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    text: Option<String>,
}

/// One running tool over stdio.
struct Server {
    peer: Peer,
    child: Child,
    /// `None` once closed (the tool then exits).
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// This server's value of [`MARKER`].
    marker: String,
    /// Its `HOME` and `TMPDIR`; removed when the server is dropped.
    home: tempfile::TempDir,
    /// `name version` from `initialize`.
    server_info: String,
    /// The bytes of the last answer's JSON-RPC line.
    last_wire: usize,
}

/// A tool's answer to a call.
struct Reply {
    /// Its text content: what the model reads.
    text: String,
    /// From the request to the parsed answer.
    ms: f64,
    /// The bytes of its JSON-RPC line (structured content and images too).
    wire: usize,
}

/// Numbers the servers of this run.
static SERVERS: AtomicU64 = AtomicU64::new(0);

impl Server {
    /// Spawns the tool and completes the MCP handshake.
    async fn start(peer: Peer, browser: &Browser) -> Result<Self, String> {
        let home = tempfile::Builder::new()
            .prefix("browser-shell-peers-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        for dir in ["runtime", "out"] {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(home.path().join(dir))
                .map_err(|e| format!("cannot make {dir} in {}: {e}", home.path().display()))?;
        }
        let marker = format!(
            "{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::Relaxed)
        );
        let stderr = std::fs::File::create(home.path().join("stderr.log"))
            .map_err(|e| format!("cannot make the stderr log: {e}"))?;
        let mut child = peer
            .command(browser, home.path())?
            .env(MARKER, &marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start {}: {e} (is Node.js 20+ on PATH?)",
                    peer.name()
                )
            })?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            return Err("no stdout".into());
        };
        let mut server = Self {
            peer,
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
            marker,
            home,
            server_info: String::new(),
            last_wire: 0,
        };
        let init = server
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "browser-shell-peers-bench", "version": "1"}}),
            )
            .await?;
        let info: InitializeResult = serde_json::from_value(init)
            .map_err(|e| server.failure(&format!("initialize answered without serverInfo: {e}")))?;
        server.server_info = format!("{} {}", info.server_info.name, info.server_info.version);
        server
            .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(server)
    }

    async fn write(&mut self, message: &Value) -> Result<(), String> {
        let line = format!("{message}\n");
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("stdin closed".into());
        };
        match stdin.write_all(line.as_bytes()).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure(&format!("cannot write to it: {e}"))),
        }
    }

    /// Sends a request and waits (at most [`CALL_TIMEOUT`]) for its answer.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let request = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        let request = serde_json::to_value(&request).map_err(|e| e.to_string())?;
        self.write(&request).await?;
        let deadline = tokio::time::Instant::now() + CALL_TIMEOUT;
        loop {
            let line = match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
                Err(_) => {
                    return Err(
                        self.failure(&format!("no answer to {method} within {CALL_TIMEOUT:?}"))
                    );
                }
                Ok(Err(e)) => return Err(self.failure(&format!("cannot read its stdout: {e}"))),
                Ok(Ok(None)) => {
                    return Err(self.failure(&format!("it exited while answering {method}")));
                }
                Ok(Ok(Some(line))) => line,
            };
            let Ok(message) = serde_json::from_str::<Incoming>(&line) else {
                continue; // not JSON-RPC: a tool's stray output
            };
            match (message.method, message.id) {
                (Some(_), Some(their_id)) => {
                    // A request from the server (such as roots/list): this
                    // client offers no capabilities.
                    let refusal = json!({"jsonrpc": "2.0", "id": their_id,
                        "error": {"code": -32601, "message": "not supported by the benchmark"}});
                    self.write(&refusal).await?;
                }
                (None, Some(their_id)) if their_id == json!(id) => {
                    self.last_wire = line.len();
                    if let Some(error) = message.error {
                        return Err(self.failure(&format!(
                            "{method} failed: {} {}",
                            error.code, error.message
                        )));
                    }
                    return Ok(message.result.unwrap_or(Value::Null));
                }
                _ => {} // a notification, or an answer to nothing
            }
        }
    }

    /// Calls a tool; an answer that says the tool failed is an error.
    async fn call(&mut self, (tool, arguments): (&str, Value)) -> Result<Reply, String> {
        let started = Instant::now();
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        let result: CallToolResult = serde_json::from_value(result).map_err(|e| {
            self.failure(&format!(
                "{tool} answered something that is not a tool result: {e}"
            ))
        })?;
        let elapsed = ms(started.elapsed());
        let text: String = result
            .content
            .into_iter()
            .filter_map(|c| c.text)
            .collect::<Vec<_>>()
            .join("\n");
        if result.is_error {
            return Err(self.failure(&format!("{tool} failed: {}", cut(&text, 400))));
        }
        Ok(Reply {
            text,
            ms: elapsed,
            wire: self.last_wire,
        })
    }

    /// An error that says which tool and shows the end of its stderr.
    fn failure(&self, what: &str) -> String {
        let log = std::fs::read_to_string(self.home.path().join("stderr.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "{}: {what}{}",
            self.peer.name(),
            if tail.is_empty() {
                String::new()
            } else {
                format!("\n  its stderr ends:\n    {}", tail.join("\n    "))
            }
        )
    }

    /// Waits, at most [`SETTLE_BOUND`], until the processes the tool started
    /// spend no more than a clock tick (10 ms) of CPU in 100 ms. A browser
    /// still starting its helpers (a spare renderer, the GPU process) or
    /// collecting the last page's garbage would take the two cores from
    /// the first rounds of a measure; every tool gets the same wait.
    async fn settle(&self) {
        let deadline = Instant::now() + SETTLE_BOUND;
        let mut before = cpu_ticks(&self.pids());
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = cpu_ticks(&self.pids());
            if now.saturating_sub(before) <= 1 {
                return;
            }
            before = now;
        }
    }

    /// Every live process this server started, itself included.
    fn pids(&self) -> Vec<u32> {
        marked(&self.marker)
    }

    /// The browser executable its main process runs.
    fn browser_executable(&self) -> Option<PathBuf> {
        self.pids().into_iter().find_map(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let is_browser = exe.to_string_lossy().contains("chrom")
                && !String::from_utf8_lossy(&cmdline).contains("--type=");
            is_browser.then_some(exe)
        })
    }

    /// Closes its input (an MCP server's cue to exit), gives it
    /// [`EXIT_GRACE`], then kills whatever it started that is still there.
    async fn stop(mut self) {
        self.stdin = None;
        let _ = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await;
        kill_marked(&self.marker);
        let _ = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await;
        let deadline = Instant::now() + EXIT_GRACE;
        // Detached daemons are no children of ours to wait on: watch /proc.
        while !marked(&self.marker).is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Server {
    /// Kills what is left of the tool (on an error path, all of it), and
    /// lets it die before its directory is removed: a browser still
    /// running would write its profile back into it.
    fn drop(&mut self) {
        kill_marked(&self.marker);
        let deadline = Instant::now() + EXIT_GRACE;
        while !marked(&self.marker).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Live processes whose environment holds [`MARKER`]`=marker` (a prefix
/// ending in `-` matches every server of this run), and every process
/// below them: Chromium's child processes write their title over their
/// environment, so the marker is read from their ancestors.
fn marked(marker: &str) -> Vec<u32> {
    let wanted = format!("{MARKER}={marker}");
    let carries = |pid: u32| {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ.split(|&b| b == 0).any(|var| {
                let var = String::from_utf8_lossy(var);
                if marker.ends_with('-') {
                    var.starts_with(&wanted)
                } else {
                    var == wanted
                }
            })
        })
    };
    let parents = support::parents();
    let mut verdicts: BTreeMap<u32, bool> = BTreeMap::new();
    let mut found = Vec::new();
    for &pid in parents.keys() {
        // Up the chain until a process known either way, or init.
        let mut chain = Vec::new();
        let mut at = pid;
        let verdict = loop {
            if let Some(&known) = verdicts.get(&at) {
                break known;
            }
            chain.push(at);
            if carries(at) {
                break true;
            }
            match parents.get(&at) {
                Some(&parent) if parent > 1 => at = parent,
                _ => break false,
            }
        };
        for link in chain {
            verdicts.insert(link, verdict);
        }
        if verdict {
            found.push(pid);
        }
    }
    found
}

/// The CPU time (user and system, in clock ticks) the processes `pids`
/// have spent so far; a process gone meanwhile counts nothing.
fn cpu_ticks(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| {
            // After the command name in brackets: state is field 3, utime
            // and stime are fields 14 and 15.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        })
        .sum()
}

/// Kills every process [`marked`] `marker`.
fn kill_marked(marker: &str) {
    for pid in marked(marker) {
        let Ok(pid) = i32::try_from(pid) else {
            continue;
        };
        // SAFETY: kill(2) with a pid read from /proc and a valid signal.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// The measures, in the order of the tables.
const STEPS: [&str; 13] = [
    "cold start: spawn → first page loaded",
    "snapshot, form.html",
    "snapshot, spa.html (app)",
    "snapshot, frames.html",
    "snapshot, large.html (1,500 rows)",
    "snapshot, Sphinx functions.html",
    "click → result (form)",
    "type → result (form)",
    "fill → result (form)",
    "screenshot (viewport)",
    "navigate + snapshot, large.html",
    "PSS after one page, cold start (MB)",
    "peak PSS of a warm session (MB)",
];

/// The measures' names in one word or two, for the trace of the PSS.
const SHORT: [&str; 11] = [
    "cold start",
    "form",
    "app",
    "frames",
    "1,500 rows",
    "Sphinx",
    "click",
    "type",
    "fill",
    "screenshot",
    "navigate + snapshot",
];

/// The step of the PSS after a cold start's first page, snapshot and
/// screenshot, and the step of the peak over the warm measures.
const PSS_STEPS: [usize; 2] = [11, 12];

/// The PSS figure issue 38's goal is set on: the peak of a warm session.
/// The figure after one page is printed beside it for reference.
const PSS_GOAL_STEP: usize = 12;

/// The pages whose snapshots are timed (the steps 1–5), relative to the
/// fixtures' base URL.
const PAGES: [&str; 5] = [
    "form.html",
    "spa.html",
    "frames.html",
    "large.html",
    "python-docs/library/functions.html",
];

/// What the issue measured for browser-shell "today", p50 ms, by step
/// (PSS in MB): the reference of the "+10 %" goal of each snapshot.
const TODAY: [(usize, f64); 8] = [
    (0, 239.0),
    (1, 2.0),
    (2, 2.0),
    (3, 2.0),
    (4, 19.0),
    (5, 84.0),
    (6, 9.0),
    (10, 239.0),
];

/// One tool's samples of one step: ms (MB for PSS) and the bytes of the
/// last answer.
#[derive(Default)]
struct Series {
    samples: Vec<f64>,
    /// Its text content.
    bytes: usize,
    /// Its JSON-RPC line.
    wire: usize,
}

impl Series {
    fn p50(&self) -> Option<f64> {
        (!self.samples.is_empty()).then(|| percentile(&mut self.samples.clone(), 0.5))
    }
    fn p95(&self) -> Option<f64> {
        (!self.samples.is_empty()).then(|| percentile(&mut self.samples.clone(), 0.95))
    }
}

/// Everything measured, by tool then step.
type Results = BTreeMap<Peer, BTreeMap<usize, Series>>;

/// PSS (kB) and process count by kind.
type ByKind = BTreeMap<String, (usize, u64)>;

/// The PSS of all the kinds together, in MB.
fn total_mb(kinds: &ByKind) -> f64 {
    kinds.values().map(|(_, kb)| kb).sum::<u64>() as f64 / 1024.0
}

/// How many processes outside `pids` run `exe`. PSS divides a page shared
/// by several processes between them, so other browsers of the same binary
/// on the machine (other work's) lower every tool's PSS alike.
fn same_binary_elsewhere(exe: &Path, pids: &[u32]) -> usize {
    support::parents()
        .keys()
        .filter(|pid| !pids.contains(pid))
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == exe))
        .count()
}

/// One cold round of `peer`: spawn → initialize → first page; a snapshot
/// and a screenshot; the PSS of all it started, by kind, and how many
/// processes beside them ran the same browser binary.
async fn cold_round(
    peer: Peer,
    browser: &Browser,
    url: &str,
) -> Result<(f64, ByKind, usize), String> {
    let started = Instant::now();
    let mut server = Server::start(peer, browser).await?;
    server.call(peer.navigate(url, true)).await?;
    let loaded = ms(started.elapsed());
    server.call(peer.snapshot()).await?;
    server.call(peer.screenshot()).await?;
    let pids = server.pids();
    let pss = pss_by_kind(&pids);
    let strangers = server
        .browser_executable()
        .map_or(0, |exe| same_binary_elsewhere(&exe, &pids));
    server.stop().await;
    Ok((loaded, pss, strangers))
}

/// Untimed calls before a measure's rounds. The page's scripts (ours, and
/// the accessibility code the peers call) run their first few calls
/// unoptimized: a snapshot takes 2–3 ms for its first five calls on a new
/// document and 1.0–1.5 ms after, so a warm figure starts after them.
const WARM_UP_CALLS: usize = 3;

/// `rounds` timed calls after [`WARM_UP_CALLS`] untimed ones; the samples
/// and the text bytes of the last answer.
async fn repeat(
    server: &mut Server,
    rounds: usize,
    mut call: impl FnMut(usize) -> (&'static str, Value),
) -> Result<Series, String> {
    for _ in 0..WARM_UP_CALLS {
        server.call(call(0)).await?;
    }
    server.settle().await;
    let mut series = Series::default();
    for round in 1..=rounds {
        let reply = server.call(call(round)).await?;
        series.samples.push(reply.ms);
        series.bytes = reply.text.len();
        series.wire = reply.wire;
    }
    Ok(series)
}

/// The warm measures of `peer` in one session, into `results`; returns
/// the PSS by kind at the largest of its samples.
async fn warm_session(
    peer: Peer,
    browser: &Browser,
    base: &str,
    rounds: usize,
    results: &mut BTreeMap<usize, Series>,
) -> Result<ByKind, String> {
    let mut server = Server::start(peer, browser).await?;
    // The PSS of everything the tool started, after each measure: the
    // largest is the session's peak as far as a client can see it.
    let mut peak = ByKind::new();
    let mut trace = Vec::new();
    let mut sample = |server: &Server, step: usize| {
        let now = pss_by_kind(&server.pids());
        trace.push(format!("{} {:.0}", SHORT[step], total_mb(&now)));
        if total_mb(&now) > total_mb(&peak) {
            peak = now;
        }
    };
    println!("\n## {} ({})", peer.name(), server.server_info);
    let form = format!("{base}/form.html");
    server.call(peer.navigate(&form, true)).await?;
    println!(
        "browser: {} (running {})",
        browser.path.display(),
        server
            .browser_executable()
            .map_or("?".into(), |p| p.display().to_string())
    );
    println!("type / fill: {}", peer.typing_tools());
    for (index, page) in PAGES.iter().enumerate() {
        if page.starts_with("python-docs") && !Path::new(PYTHON_DOCS).is_dir() {
            println!("(no {PYTHON_DOCS}: apt-get install python3-doc for the Sphinx page)");
            continue;
        }
        server
            .call(peer.navigate(&format!("{base}/{page}"), false))
            .await?;
        let series = repeat(&mut server, rounds, |_| peer.snapshot()).await?;
        sample(&server, index + 1);
        results.insert(index + 1, series);
    }

    // Refs from the tool's own snapshot of a freshly loaded form.
    server.call(peer.navigate(&form, false)).await?;
    let snapshot = server.call(peer.snapshot()).await?.text;
    let button = peer
        .find_ref(&snapshot, "button \"Add one\"")
        .ok_or_else(|| {
            server.failure(&format!(
                "no ref for the \"Add one\" button in its snapshot:\n{}",
                cut(&snapshot, 2000)
            ))
        })?;
    let field = peer
        .find_ref(&snapshot, "textbox \"Full name\"")
        .ok_or_else(|| server.failure("no ref for the \"Full name\" field in its snapshot"))?;
    results.insert(
        6,
        repeat(&mut server, rounds, |_| peer.click(&button)).await?,
    );
    sample(&server, 6);
    results.insert(
        7,
        repeat(&mut server, rounds, |_| peer.type_text(&field)).await?,
    );
    sample(&server, 7);
    results.insert(8, repeat(&mut server, rounds, |_| peer.fill(&field)).await?);
    sample(&server, 8);
    results.insert(9, repeat(&mut server, rounds, |_| peer.screenshot()).await?);
    sample(&server, 9);

    // Navigate + snapshot: a new URL each round (the same page).
    server.settle().await;
    let mut series = Series::default();
    for round in 0..=rounds {
        let url = format!("{base}/large.html?round={round}");
        let started = Instant::now();
        let mut reply = server.call(peer.navigate(&url, false)).await?;
        if !peer.navigate_snapshots() {
            reply = server.call(peer.snapshot()).await?;
        }
        if round > 0 {
            series.samples.push(ms(started.elapsed()));
            series.bytes = reply.text.len();
            series.wire = reply.wire;
        }
    }
    results.insert(10, series);
    sample(&server, 10);
    results.insert(
        12,
        Series {
            samples: vec![total_mb(&peak)],
            ..Series::default()
        },
    );
    println!("PSS after each measure (MB): {}", trace.join(" · "));
    server.stop().await;
    Ok(peak)
}

fn fmt_ms(value: Option<f64>) -> String {
    value.map_or("—".into(), |v| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    })
}

/// The per-tool lines and the side-by-side table with the goals.
fn report(results: &Results, peers: &[Peer], split: &BTreeMap<Peer, (f64, f64)>) {
    println!(
        "\n## Per tool: p50 / p95 ms; bytes of the answer's text (what the model reads) / of its JSON-RPC line"
    );
    for (&peer, steps) in results {
        println!("\n{}", peer.name());
        for (&step, series) in steps {
            let unit = if PSS_STEPS.contains(&step) {
                "MB"
            } else {
                "ms"
            };
            let bytes = if series.bytes == 0 {
                String::new()
            } else {
                format!("{:>9} B / {:>9} B", series.bytes, series.wire)
            };
            println!(
                "  {:<46} p50 {:>8} {unit}  p95 {:>8} {unit}  {bytes}",
                STEPS[step],
                fmt_ms(series.p50()),
                fmt_ms(series.p95()),
            );
        }
    }
    let p50 = |peer: Peer, step: usize| results.get(&peer)?.get(&step)?.p50();
    let others: Vec<Peer> = peers
        .iter()
        .copied()
        .filter(|&p| p != Peer::Shell)
        .collect();
    let best = |step: usize| {
        others
            .iter()
            .filter_map(|&p| Some((p50(p, step)?, p)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    println!("\n## Side by side (p50; ms, PSS in MB)\n");
    let mut header = String::from("| step | browser-shell |");
    let mut rule = String::from("|---|---|");
    for peer in &others {
        header += &format!(" {} |", peer.name());
        rule += "---|";
    }
    println!("{header} best peer | ours / best |\n{rule}---|---|");
    for (step, label) in STEPS.iter().enumerate() {
        let mut row = format!("| {label} | {} |", fmt_ms(p50(Peer::Shell, step)));
        for &peer in &others {
            row += &format!(" {} |", fmt_ms(p50(peer, step)));
        }
        let ratio = match (p50(Peer::Shell, step), best(step)) {
            (Some(ours), Some((theirs, _))) => format!("{:.2}×", ours / theirs),
            _ => "—".into(),
        };
        println!("{row} {} | {ratio} |", fmt_ms(best(step).map(|(v, _)| v)));
    }

    println!("\n## Goals (issue 38)");
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    // Text entry: our type against the best of every peer's type and fill.
    let best_entry = [7, 8]
        .into_iter()
        .filter_map(best)
        .min_by(|a, b| a.0.total_cmp(&b.0));
    match (p50(Peer::Shell, 7), best_entry) {
        (Some(ours), Some((theirs, peer))) => println!(
            "type ≤ 0.5× the best peer: {ours:.1} ms vs {theirs:.1} ms ({}) = {:.2}× — {}",
            peer.name(),
            ours / theirs,
            verdict(ours <= 0.5 * theirs)
        ),
        _ => println!("type ≤ 0.5× the best peer: not measured"),
    }
    for step in PSS_STEPS {
        let goal = |ours: f64, theirs: f64| {
            if step == PSS_GOAL_STEP {
                verdict(ours <= 0.9 * theirs)
            } else {
                "for reference (the goal is on the peak)"
            }
        };
        match (p50(Peer::Shell, step), best(step)) {
            (Some(ours), Some((theirs, peer))) => println!(
                "PSS ≤ 0.9× the best peer, {}: {ours:.0} MB vs {theirs:.0} MB ({}) = {:.2}× — {}",
                STEPS[step],
                peer.name(),
                ours / theirs,
                goal(ours, theirs)
            ),
            _ => println!("PSS ≤ 0.9× the best peer, {}: not measured", STEPS[step]),
        }
    }
    // What no tool on the same Chromium can go below: the best peer's
    // browser alone (the median round of each).
    if let Some((theirs, peer)) = best(11)
        && let (Some((_, browser)), Some((own, ours_browser))) =
            (split.get(&peer), split.get(&Peer::Shell))
    {
        println!(
            "  its Chromium alone: {browser:.0} MB = {:.2}× its total; ours: {own:.0} MB of our own + {ours_browser:.0} MB of Chromium",
            browser / theirs
        );
    }
    for (step, today) in TODAY {
        let Some(ours) = p50(Peer::Shell, step) else {
            continue;
        };
        let goal = match step {
            1..=5 | 10 => verdict(ours <= today * 1.1),
            _ => "for reference",
        };
        println!(
            "{:<46} {ours:>7.1} ms vs {today:.0} ms in the issue ({:+.0} %) — {goal}",
            STEPS[step],
            (ours / today - 1.0) * 100.0
        );
    }
}

/// Whether a kind of process (see `support::pss_by_kind`) is the
/// browser's: its main process, its child processes (they have a type),
/// Debian's wrapper script in front of it.
fn is_browser_kind(kind: &str) -> bool {
    !kind.ends_with("(main)")
        || kind.starts_with("chromium")
        || kind == "chrome (main)"
        || kind == "sh (main)"
}

/// The median of `rounds` (samples of the PSS by kind), one line per kind;
/// returns the MB of the tool's own processes and of its browser's.
fn breakdown(peer: Peer, rounds: &mut [ByKind]) -> Option<(f64, f64)> {
    if rounds.is_empty() {
        return None;
    }
    rounds.sort_by_key(|kinds| kinds.values().map(|(_, kb)| kb).sum::<u64>());
    let median = &rounds[rounds.len() / 2];
    println!("{}", peer.name());
    let (mut own, mut browser) = (0.0, 0.0);
    for (kind, (count, kb)) in median {
        let mb = *kb as f64 / 1024.0;
        println!("  {kind:<52} {count:>2} × → {mb:>6.1} MB");
        if is_browser_kind(kind) {
            browser += mb;
        } else {
            own += mb;
        }
    }
    println!("  = the tool's own processes {own:.1} MB + its Chromium {browser:.1} MB");
    Some((own, browser))
}

async fn run(options: Options) -> Result<(), String> {
    let browser = Browser::find()?;
    let base = serve_fixtures().await;
    println!(
        "# browser-shell next to its peers over MCP stdio ({} rounds each, after a warm-up)",
        options.rounds
    );
    println!("browser for every tool: {}", browser.path.display());
    let mut peers = Vec::new();
    for &peer in &options.peers {
        // A tool that cannot start (not installed) is skipped with its hint.
        match peer.command(&browser, Path::new("/")) {
            Ok(_) => peers.push(peer),
            Err(why) => println!("skipping {}: {why}", peer.name()),
        }
    }
    let mut results = Results::new();
    let mut kinds: BTreeMap<Peer, Vec<ByKind>> = BTreeMap::new();
    let mut peaks: BTreeMap<Peer, ByKind> = BTreeMap::new();
    let mut failed = Vec::new();
    let mut strangers = 0;

    // Cold starts, rounds taking turns between the tools.
    let form = format!("{base}/form.html");
    for round in 0..=options.rounds {
        for &peer in &peers {
            if failed.contains(&peer) {
                continue;
            }
            match cold_round(peer, &browser, &form).await {
                Ok(_) if round == 0 => {} // warm-up: disk caches
                Ok((loaded, pss, others)) => {
                    strangers = strangers.max(others);
                    let steps = results.entry(peer).or_default();
                    steps.entry(0).or_default().samples.push(loaded);
                    steps.entry(11).or_default().samples.push(total_mb(&pss));
                    kinds.entry(peer).or_default().push(pss);
                }
                Err(why) => {
                    println!("{why}\n(skipping {} from here on)", peer.name());
                    failed.push(peer);
                }
            }
        }
    }
    for &peer in &peers {
        if failed.contains(&peer) {
            continue;
        }
        let steps = results.entry(peer).or_default();
        match warm_session(peer, &browser, &base, options.rounds, steps).await {
            Ok(peak) => {
                peaks.insert(peer, peak);
            }
            Err(why) => println!("{why}\n(its warm measures stop there)"),
        }
    }
    println!("\n## PSS by kind of process after one page (the median cold round)");
    if strangers > 0 {
        println!(
            "(up to {strangers} processes of other work ran the same browser binary meanwhile: \
             the pages they share lower every tool's PSS; compare tools within one run)"
        );
    }
    let mut split = BTreeMap::new();
    for (&peer, rounds) in &mut kinds {
        if let Some(parts) = breakdown(peer, rounds) {
            split.insert(peer, parts);
        }
    }
    println!("\n## PSS by kind of process at the peak of the warm measures");
    for (&peer, peak) in &peaks {
        breakdown(peer, &mut [peak.clone()]);
    }
    if results.values().all(BTreeMap::is_empty) {
        return Err("no tool could be measured: see the errors above".into());
    }
    report(&results, &peers, &split);
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("{why}");
            return ExitCode::from(2);
        }
    };
    let outcome = tokio::select! {
        outcome = run(options) => outcome,
        _ = tokio::signal::ctrl_c() => Err("interrupted".into()),
    };
    // Whatever any tool of this run left behind.
    kill_marked(&format!("{}-", std::process::id()));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("{why}");
            ExitCode::FAILURE
        }
    }
}
