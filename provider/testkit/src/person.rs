//! "The person's Chrome": Debian's full Chromium with the browser-shell
//! extension loaded and a profile of its own, and the person's hands on it
//! through that browser's own debugging port (opening tabs, pressing the
//! extension's buttons, stopping its service worker), through a CDP
//! client of the test's own ([`crate::cdp`]).
//!
//! Chromium is `/usr/bin/chromium` (or `BROWSER_SHELL_PERSON_CHROME`);
//! `BROWSER_SHELL_PERSON_HEADED=1` shows it on `DISPLAY`, and
//! `BROWSER_SHELL_PERSON_STDERR=1` shows what it says.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use crate::bounded::{self, wait_for};
use crate::cdp::{Cdp, SessionId};

/// The directory of the singleton socket Chrome links from `profile`.
fn singleton_dir(profile: &std::path::Path) -> Option<PathBuf> {
    std::fs::read_link(profile.join("SingletonSocket"))
        .ok()
        .and_then(|socket| socket.parent().map(std::path::Path::to_path_buf))
        .filter(|dir| {
            dir.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("org.chromium."))
        })
}

/// Where the unpacked extension is (`assets/extension`).
pub fn extension_dir() -> PathBuf {
    crate::repository().join("assets/extension")
}

/// The extension's id, as Chrome derives it from the manifest's `key`:
/// the first 128 bits of the key's SHA-256, each hex digit written as a
/// letter from `a` to `p`.
pub fn extension_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        use base64::Engine as _;
        use sha2::Digest as _;
        let manifest = std::fs::read_to_string(extension_dir().join("manifest.json"))
            .expect("the extension's manifest");
        let manifest: Value = serde_json::from_str(&manifest).expect("the manifest is JSON");
        let key = base64::engine::general_purpose::STANDARD
            .decode(manifest["key"].as_str().expect("the manifest has a key"))
            .expect("the key is base64");
        sha2::Sha256::digest(key)[..16]
            .iter()
            .flat_map(|byte| [byte >> 4, byte & 0x0f])
            .map(|nibble| char::from(b'a' + nibble))
            .collect()
    })
}

/// The person's browser and their hands on it.
#[derive(Debug)]
pub struct Person {
    process: tokio::process::Child,
    /// Chrome's process group: Chrome and every helper it started.
    group: u32,
    /// The profile, when this person owns it (a test that quits and
    /// restarts Chrome keeps its own).
    owned_profile: Option<tempfile::TempDir>,
    /// The profile Chrome runs with.
    profile: PathBuf,
    /// The browser's own CDP connection (the person's, not the agent's).
    pub cdp: Cdp,
    /// The extension's popup, open in a tab of its own.
    popup: SessionId,
}

/// A test that ends without [`Person::quit`] (or panics) still leaves
/// nothing behind: Chrome is killed, its singleton directory removed.
impl Drop for Person {
    fn drop(&mut self) {
        if matches!(self.process.try_wait(), Ok(None)) {
            let singleton = singleton_dir(&self.profile);
            bounded::end_process_group(self.group, Duration::from_secs(5));
            if let Some(dir) = singleton {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

impl Person {
    /// Starts Chromium with the extension and a fresh profile, and opens
    /// the extension's popup in a tab.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// [`Self::start`] with more command-line switches.
    pub async fn start_with(extra: &[&str]) -> Self {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut person = Self::launch_in(profile.path(), extra, None, &[]).await;
        person.owned_profile = Some(profile);
        person
    }

    /// [`Self::start`] with `prepare` run on the fresh profile first (a
    /// native messaging host manifest put in it) and `env` for Chrome (and
    /// so for the native host it starts).
    pub async fn start_prepared(
        prepare: impl FnOnce(&std::path::Path),
        env: &[(&str, &std::path::Path)],
    ) -> Self {
        let profile = tempfile::tempdir().expect("profile dir");
        prepare(profile.path());
        let mut person = Self::launch_in(profile.path(), &[], None, env).await;
        person.owned_profile = Some(profile);
        person
    }

    /// [`Self::launch`] with `env` for Chrome (and the native host it starts).
    pub async fn launch_with_env(
        profile: &std::path::Path,
        env: &[(&str, &std::path::Path)],
    ) -> Self {
        Self::launch_in(profile, &[], None, env).await
    }

    /// [`Self::start`] with a window, on X display `display` (such as
    /// Xvfb's): Chrome's own UI, such as its debugging bar, is there.
    pub async fn start_shown(display: &str) -> Self {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut person = Self::launch_in(profile.path(), &[], Some(display), &[]).await;
        person.owned_profile = Some(profile);
        person
    }

    /// Starts Chromium with the extension on the profile in `profile`
    /// (again, after it quit: what the extension stored is still there).
    pub async fn launch(profile: &std::path::Path) -> Self {
        Self::launch_with(profile, &[]).await
    }

    /// [`Self::launch`] with more command-line switches (a benchmark gives
    /// the person's Chrome the shell's own feature switches, to compare
    /// like with like).
    pub async fn launch_with(profile: &std::path::Path, extra: &[&str]) -> Self {
        // `BROWSER_SHELL_PERSON_HEADED=1` shows the person's Chrome on the
        // display in DISPLAY, to look at what a person sees by hand.
        let shown = std::env::var_os("BROWSER_SHELL_PERSON_HEADED")
            .and_then(|_| std::env::var("DISPLAY").ok());
        Self::launch_in(profile, extra, shown.as_deref(), &[]).await
    }

    /// Starts Chromium with the extension on `profile`: headless, or with a
    /// window on X display `shown`.
    async fn launch_in(
        profile: &std::path::Path,
        extra: &[&str],
        shown: Option<&str>,
        env: &[(&str, &std::path::Path)],
    ) -> Self {
        let extension = extension_dir().canonicalize().expect("extension dir");
        let port_file = profile.join("DevToolsActivePort");
        // A file left by the last run names a port nobody listens on.
        let _ = std::fs::remove_file(&port_file);
        let process = tokio::process::Command::new(
            std::env::var("BROWSER_SHELL_PERSON_CHROME")
                .unwrap_or_else(|_| "/usr/bin/chromium".into()),
        )
        .args(shown.is_none().then_some("--headless=new"))
        .args([
            "--no-sandbox",
            "--remote-debugging-port=0",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--password-store=basic",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--load-extension={}", extension.display()))
        .arg(format!(
            "--disable-extensions-except={}",
            extension.display()
        ))
        .args(
            shown
                .map(|_| ["--window-position=0,0", "--window-size=1200,800"])
                .into_iter()
                .flatten(),
        )
        .envs(shown.map(|display| ("DISPLAY", display)))
        .envs(env.iter().map(|(name, value)| (*name, *value)))
        .arg("about:blank")
        .stdout(Stdio::null())
        // `BROWSER_SHELL_PERSON_STDERR=1` shows what Chrome (and the native
        // messaging host it starts) says, to see why a connection fails.
        .stderr(
            if std::env::var_os("BROWSER_SHELL_PERSON_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            },
        )
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .expect("start chromium");
        let group = process.id().expect("chromium's pid");
        let text = wait_for(Duration::from_secs(20), "DevToolsActivePort", || {
            std::fs::read_to_string(&port_file)
                .ok()
                .filter(|t| t.lines().count() >= 2)
        })
        .await;
        let mut lines = text.lines();
        let port = lines.next().expect("port");
        let path = lines.next().expect("path");
        let cdp = Cdp::connect(
            &format!("ws://127.0.0.1:{port}{path}"),
            Duration::from_secs(10),
        )
        .await
        .expect("the person's CDP");
        let popup_url = format!("chrome-extension://{}/popup.html", extension_id());
        let mut person = Self {
            process,
            group,
            owned_profile: None,
            profile: profile.to_path_buf(),
            cdp,
            popup: SessionId(String::new()),
        };
        let (_, popup) = person.open_tab(&popup_url).await;
        person.popup = popup;
        person
    }

    /// Chrome quits as when the person closes it (killed if it has not
    /// within 5 s); then its profile is removed.
    pub async fn quit(mut self) {
        let _ = self.cdp.send(None, "Browser.close", json!({})).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.process.wait()).await;
        // Killed if it has not quit; helpers still ending after it are
        // ended too: none writes into the profile once it is removed.
        self.kill_now().await;
    }

    /// Chrome goes away at once, as when it crashes or is killed.
    pub async fn kill(mut self) {
        self.kill_now().await;
    }

    /// Kills Chrome and every helper it started, then removes the directory
    /// of its singleton socket, which only a Chrome that exits by itself
    /// removes (the profile links it as `SingletonSocket`; see the shell's
    /// own launcher).
    async fn kill_now(&mut self) {
        let singleton = singleton_dir(&self.profile);
        assert!(
            bounded::end_process_group(self.group, Duration::from_secs(5)),
            "chromium ends within 5 s of SIGKILL"
        );
        self.process.wait().await.expect("reap chromium");
        if let Some(dir) = singleton {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// Opens a tab the way the person would; its target and a CDP session on it.
    pub async fn open_tab(&self, url: &str) -> (String, SessionId) {
        let created = self
            .cdp
            .send(None, "Target.createTarget", json!({"url": url}))
            .await
            .expect("create a tab");
        let target = created["targetId"].as_str().expect("target id").to_owned();
        let attached = self
            .cdp
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .await
            .expect("attach");
        let session = SessionId(attached["sessionId"].as_str().expect("session").to_owned());
        (target, session)
    }

    /// Evaluates an expression (promises awaited) in a page the person has open.
    /// A page still loading (its first document replaced) is asked again.
    pub async fn eval(&self, session: &SessionId, expression: &str) -> Value {
        let result = bounded::first_some(Duration::from_secs(10), || async {
            let sent = self
                .cdp
                .send(
                    Some(session),
                    "Runtime.evaluate",
                    json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
                )
                .await;
            match sent {
                Err(error) if error.to_string().contains("context was destroyed") => None,
                other => Some(other.expect("evaluate")),
            }
        })
        .await
        .unwrap_or_else(|| panic!("{expression}: the page kept replacing its document for 10 s"));
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression} threw: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Evaluates in the extension's popup (the person's view of the extension).
    pub async fn in_popup(&self, expression: &str) -> Value {
        self.eval(&self.popup, expression).await
    }

    /// One part of the extension's status as its popup reads it (the
    /// `status` message): `field` is such as "bridge", "stopped" or "control".
    pub async fn status(&self, field: &str) -> Value {
        let expression = format!(
            "chrome.runtime.sendMessage({{type: 'status'}}).then(r => r.status[{field:?}])"
        );
        self.in_popup(&expression).await
    }

    /// The extension's popup as the person sees it, as PNG.
    pub async fn popup_png(&self) -> Vec<u8> {
        use base64::Engine as _;
        let shot = self
            .cdp
            .send(
                Some(&self.popup),
                "Page.captureScreenshot",
                json!({"format": "png"}),
            )
            .await
            .expect("capture the popup");
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("image data"))
            .expect("base64")
    }

    /// Chrome's tab id of the first tab showing `url`.
    pub async fn tab_id(&self, url: &str) -> i64 {
        let expression = format!(
            "chrome.tabs.query({{}}).then(tabs => (tabs.find(t => t.url === {url:?}) || {{}}).id ?? null)"
        );
        bounded::first_some(Duration::from_secs(10), || async {
            self.in_popup(&expression).await.as_i64()
        })
        .await
        .unwrap_or_else(|| panic!("no tab shows {url}"))
    }

    /// Where the centre of `selector` (in the tab row that shows `row`, or
    /// anywhere) is in the popup now, in CSS pixels; `None` when it is not shown.
    pub async fn spot_in_popup(&self, row: Option<&str>, selector: &str) -> Option<(f64, f64)> {
        let expression = format!(
            r#"(() => {{
                const row = {row};
                const scope = row === null ? document
                    : [...document.querySelectorAll('#tabs li:not(.closed)')].find(li => li.textContent.includes(row));
                const button = document.body.dataset.ready && scope && scope.querySelector({selector:?});
                if (!button || button.offsetParent === null || button.disabled) return null;
                // A person scrolls a row into sight before aiming at it.
                button.scrollIntoView({{ block: "nearest" }});
                const box = button.getBoundingClientRect();
                return [box.x + box.width / 2, box.y + box.height / 2];
            }})()"#,
            row = serde_json::to_string(&row).unwrap_or_default(),
        );
        let spot = self.in_popup(&expression).await;
        Some((spot.get(0)?.as_f64()?, spot.get(1)?.as_f64()?))
    }

    /// A real click (trusted mouse events) at `x`, `y` in the popup, as a
    /// person's hand lands there.
    pub async fn click_popup_at(&self, x: f64, y: f64) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.cdp
                .send(
                    Some(&self.popup),
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                )
                .await
                .expect("a click in the popup");
        }
    }

    /// Presses a button in the popup, waiting (bounded) for it to be there.
    /// `row` picks a tab row by the text it shows; `selector` the button in it.
    pub async fn press_in_popup(&self, row: Option<&str>, selector: &str) {
        let expression = format!(
            r#"new Promise((resolve, reject) => {{
                const started = Date.now();
                const attempt = () => {{
                    const row = {row};
                    const scope = row === null ? document
                        : [...document.querySelectorAll('#tabs li:not(.closed)')].find(li => li.textContent.includes(row));
                    const button = document.body.dataset.ready && scope && scope.querySelector({selector:?});
                    if (button && button.offsetParent !== null) {{ button.click(); resolve(true); return; }}
                    if (Date.now() - started > 8000) {{ reject(new Error('no ' + {selector:?} + ' in the popup: ' + document.body.innerText)); return; }}
                    setTimeout(attempt, 25);
                }};
                attempt();
            }})"#,
            row = serde_json::to_string(&row).unwrap_or_default(),
        );
        self.in_popup(&expression).await;
    }

    /// Opens the pairing link and presses Allow, as the person would.
    pub async fn pair(&self, link: &str) {
        let (_, page) = self.open_tab(link).await;
        let expression = r#"new Promise((resolve, reject) => {
            const started = Date.now();
            const attempt = () => {
                const allow = document.getElementById('allow');
                if (allow && !allow.disabled) { allow.click(); resolve(true); return; }
                if (Date.now() - started > 10000) { reject(new Error('no Allow button')); return; }
                setTimeout(attempt, 25);
            };
            attempt();
        })"#;
        self.eval(&page, expression).await;
    }

    /// Evaluates in the extension's service worker (promises awaited), as
    /// if from its own DevTools.
    pub async fn in_service_worker(&self, expression: &str) -> Value {
        let worker = self
            .service_worker()
            .await
            .expect("the extension's worker runs");
        let attached = self
            .cdp
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": worker, "flatten": true}),
            )
            .await
            .expect("attach to the worker");
        let session = SessionId(attached["sessionId"].as_str().expect("session").to_owned());
        let value = self.eval(&session, expression).await;
        let _ = self
            .cdp
            .send(
                None,
                "Target.detachFromTarget",
                json!({"sessionId": session.0}),
            )
            .await;
        value
    }

    /// The extension's service worker target, when it runs.
    pub async fn service_worker(&self) -> Option<String> {
        let targets = self
            .cdp
            .send(None, "Target.getTargets", json!({}))
            .await
            .expect("targets");
        targets["targetInfos"]
            .as_array()?
            .iter()
            .find(|t| {
                t["type"] == "service_worker"
                    && t["url"].as_str().is_some_and(|u| {
                        u.starts_with(&format!("chrome-extension://{}/", extension_id()))
                    })
            })
            .and_then(|t| t["targetId"].as_str().map(str::to_owned))
    }
}
