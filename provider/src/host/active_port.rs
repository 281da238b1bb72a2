//! Finding a Chrome, Chromium or Edge whose person turned remote debugging
//! on (`--browser auto-connect`).
//!
//! When remote debugging is on (Chrome 144+: the switch on
//! `chrome://inspect/#remote-debugging`; any version: started with
//! `--remote-debugging-port=N`), the browser writes a file
//! [`ACTIVE_PORT_FILE`] into its user data directory: the port on the
//! first line, the browser's WebSocket path (`/devtools/browser/<id>`) on
//! the second. The switch in `chrome://inspect` serves no HTTP
//! `/json/version`, so the WebSocket address is built from the file
//! alone: `ws://127.0.0.1:<port><path>`.
//!
//! [`discover`] looks in each candidate directory (the usual ones of this
//! operating system, or the ones a person named), reads and checks the
//! file, and checks that the port answers on loopback (a browser that
//! quit or was killed leaves a stale file behind). It returns the first
//! browser that answers and why every other candidate was passed over,
//! so `doctor` and the `NOT_CONNECTED` error can say what was searched.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::BrowserError;

/// The file a browser with remote debugging on writes into its user data
/// directory.
pub const ACTIVE_PORT_FILE: &str = "DevToolsActivePort";

/// Environment variable naming the user data directories to search
/// instead of the usual ones, separated like `PATH` (`:` on Unix, `;` on
/// Windows). For profiles in unusual places, and for tests.
pub const AUTO_CONNECT_DIRS_ENV: &str = "BROWSER_SHELL_AUTO_CONNECT_DIRS";

/// A real file is under 100 bytes; anything much larger is not one.
const MAX_FILE_BYTES: u64 = 4096;

/// How long a port on loopback may take to accept a connection. A live
/// browser accepts at once; a dead port refuses at once.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);

/// The start of the browser-level WebSocket path in the file.
const BROWSER_PATH_PREFIX: &str = "/devtools/browser/";

/// One place a browser may keep its user data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Which browser keeps it there ("Chrome Beta", "Edge"), or
    /// "given directory" for one a person named.
    pub browser: String,
    /// The user data directory (the one holding `Local State` and the
    /// profiles, not a profile such as `Default`).
    pub dir: PathBuf,
}

/// Where the candidates came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchOrigin {
    /// The usual directories of Chrome, Chromium and Edge on this system.
    Defaults,
    /// The directories in [`AUTO_CONNECT_DIRS_ENV`].
    Environment,
    /// Directories given by the caller (a configured profile directory).
    Given,
}

/// The directories [`discover`] searches, in order of preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPath {
    /// The candidates, in order.
    pub candidates: Vec<Candidate>,
    /// Where they came from.
    pub origin: SearchOrigin,
}

impl SearchPath {
    /// The directories in [`AUTO_CONNECT_DIRS_ENV`] when it is set and not
    /// empty, else the usual ones of this system ([`default_candidates`]).
    pub fn standard() -> Self {
        match std::env::var_os(AUTO_CONNECT_DIRS_ENV).filter(|v| !v.is_empty()) {
            Some(list) => Self {
                candidates: std::env::split_paths(&list)
                    .filter(|dir| !dir.as_os_str().is_empty())
                    .map(given)
                    .collect(),
                origin: SearchOrigin::Environment,
            },
            None => Self {
                candidates: default_candidates(),
                origin: SearchOrigin::Defaults,
            },
        }
    }

    /// Exactly these directories (a person's profile in an unusual place).
    pub fn dirs(dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            candidates: dirs.into_iter().map(given).collect(),
            origin: SearchOrigin::Given,
        }
    }
}

fn given(dir: PathBuf) -> Candidate {
    Candidate {
        browser: "given directory".into(),
        dir,
    }
}

/// A browser found with remote debugging on, answering on loopback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveBrowser {
    /// Which browser ("Chrome", "Edge Dev", "given directory").
    pub browser: String,
    /// Its user data directory.
    pub dir: PathBuf,
    /// The port it serves DevTools on (127.0.0.1).
    pub port: u16,
    /// Its browser-level WebSocket path (`/devtools/browser/<id>`).
    pub path: String,
}

impl ActiveBrowser {
    /// The browser's WebSocket address, `ws://127.0.0.1:<port><path>`.
    pub fn endpoint(&self) -> String {
        format!("ws://{}:{}{}", Ipv4Addr::LOCALHOST, self.port, self.path)
    }
}

impl fmt::Display for ActiveBrowser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in {} (port {})",
            self.browser,
            self.dir.display(),
            self.port
        )
    }
}

/// What is wrong with the contents of a [`ACTIVE_PORT_FILE`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PortFileError {
    /// Larger than any real one.
    TooLarge,
    /// Not UTF-8 text.
    NotText,
    /// No port on the first line (empty file).
    NoPort,
    /// The first line is not a port number (1 to 65535).
    BadPort(String),
    /// Port 0: not a port anything listens on.
    PortZero,
    /// No second line: half-written (the browser is starting) or not a
    /// DevTools file.
    NoPath,
    /// The second line is not a browser WebSocket path.
    BadPath(String),
}

impl fmt::Display for PortFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge => write!(f, "it is larger than {MAX_FILE_BYTES} bytes"),
            Self::NotText => f.write_str("it is not text"),
            Self::NoPort => f.write_str("it is empty"),
            Self::BadPort(line) => write!(f, "{line:?} is not a port number"),
            Self::PortZero => f.write_str("it names port 0"),
            Self::NoPath => f.write_str(
                "it has no WebSocket path on its second line (half-written, or not the browser's)",
            ),
            Self::BadPath(line) => write!(
                f,
                "{line:?} is not a browser WebSocket path ({BROWSER_PATH_PREFIX}<id>)"
            ),
        }
    }
}

/// Why a candidate was passed over.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// The directory does not exist (that browser is not installed or
    /// never ran for this user).
    NoDirectory,
    /// The directory exists but has no port file: remote debugging is off
    /// (or the browser is not running and removed it on exit).
    NoPortFile,
    /// The port file could not be read.
    Unreadable(String),
    /// The port file's contents are wrong.
    Malformed(PortFileError),
    /// Nothing answers on the port: the file is stale (the browser quit
    /// or was killed).
    NotAnswering {
        /// The port the file names.
        port: u16,
        /// What connecting said.
        error: String,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoDirectory => f.write_str("no such directory"),
            Self::NoPortFile => write!(f, "no {ACTIVE_PORT_FILE}: remote debugging is off"),
            Self::Unreadable(error) => write!(f, "{ACTIVE_PORT_FILE} cannot be read: {error}"),
            Self::Malformed(problem) => write!(f, "{ACTIVE_PORT_FILE} is not usable: {problem}"),
            Self::NotAnswering { port, error } => write!(
                f,
                "{ACTIVE_PORT_FILE} names port {port}, where nothing answers ({error}): \
                 left behind by a browser that is gone"
            ),
        }
    }
}

/// A candidate passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The candidate.
    pub candidate: Candidate,
    /// Why.
    pub reason: SkipReason,
}

/// What [`discover`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The first candidate whose browser answers, if any.
    pub found: Option<ActiveBrowser>,
    /// Every candidate searched before the one found (all of them when
    /// none was found), with why it was passed over.
    pub skipped: Vec<Skipped>,
    /// Where the candidates came from.
    pub origin: SearchOrigin,
}

impl Discovery {
    /// What was searched and why nothing was usable, in one line: every
    /// directory that exists with its reason, then the absent ones.
    pub fn searched(&self) -> String {
        let mut parts: Vec<String> = self
            .skipped
            .iter()
            .filter(|s| s.reason != SkipReason::NoDirectory)
            .map(|s| {
                format!(
                    "{} ({}): {}",
                    s.candidate.dir.display(),
                    s.candidate.browser,
                    s.reason
                )
            })
            .collect();
        let absent: Vec<String> = self
            .skipped
            .iter()
            .filter(|s| s.reason == SkipReason::NoDirectory)
            .map(|s| s.candidate.dir.display().to_string())
            .collect();
        if !absent.is_empty() {
            parts.push(format!("not present: {}", absent.join(", ")));
        }
        if parts.is_empty() {
            parts.push("no directories to search".into());
        }
        let origin = match self.origin {
            SearchOrigin::Defaults => "the usual user data directories",
            SearchOrigin::Environment => AUTO_CONNECT_DIRS_ENV,
            SearchOrigin::Given => "the configured profile directory",
        };
        format!("searched {origin}: {}", parts.join("; "))
    }

    /// The error for a search that found nothing (`NOT_CONNECTED`, with
    /// the hint to turn remote debugging on).
    pub fn not_found(&self) -> BrowserError {
        BrowserError::RemoteDebuggingOff {
            searched: self.searched(),
        }
    }
}

/// Reads the contents of a [`ACTIVE_PORT_FILE`]: the port and the
/// browser's WebSocket path.
///
/// # Errors
/// A [`PortFileError`] saying what is wrong; never panics, whatever the bytes.
pub fn parse_active_port(bytes: &[u8]) -> Result<(u16, String), PortFileError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(PortFileError::TooLarge);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| PortFileError::NotText)?;
    let mut lines = text.lines().map(str::trim);
    let port = match lines.next() {
        None | Some("") => return Err(PortFileError::NoPort),
        Some(line) => line,
    };
    let short = |line: &str| line.chars().take(40).collect::<String>();
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PortFileError::BadPort(short(port)));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| PortFileError::BadPort(short(port)))?;
    if port == 0 {
        return Err(PortFileError::PortZero);
    }
    let path = match lines.next() {
        None | Some("") => return Err(PortFileError::NoPath),
        Some(line) => line,
    };
    let id = path
        .strip_prefix(BROWSER_PATH_PREFIX)
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if id.is_none() {
        return Err(PortFileError::BadPath(short(path)));
    }
    Ok((port, path.to_owned()))
}

/// Searches `search`'s directories in order and returns the first browser
/// whose port file is valid and whose port answers on loopback, with why
/// each candidate before it was passed over.
pub async fn discover(search: &SearchPath) -> Discovery {
    let mut skipped = Vec::new();
    for candidate in &search.candidates {
        match inspect(candidate).await {
            Ok(found) => {
                tracing::debug!(browser = %found.browser, dir = %found.dir.display(), port = found.port, "found a browser with remote debugging on");
                return Discovery {
                    found: Some(found),
                    skipped,
                    origin: search.origin,
                };
            }
            Err(reason) => {
                tracing::trace!(dir = %candidate.dir.display(), %reason, "passed over");
                skipped.push(Skipped {
                    candidate: candidate.clone(),
                    reason,
                });
            }
        }
    }
    Discovery {
        found: None,
        skipped,
        origin: search.origin,
    }
}

/// One candidate: its file, read and checked, and its port, probed.
async fn inspect(candidate: &Candidate) -> Result<ActiveBrowser, SkipReason> {
    if !candidate.dir.is_dir() {
        return Err(SkipReason::NoDirectory);
    }
    let bytes = read_bounded(&candidate.dir.join(ACTIVE_PORT_FILE))?;
    let (port, path) = parse_active_port(&bytes).map_err(SkipReason::Malformed)?;
    probe(port).await?;
    Ok(ActiveBrowser {
        browser: candidate.browser.clone(),
        dir: candidate.dir.clone(),
        port,
        path,
    })
}

/// The file's bytes, at most one more than [`MAX_FILE_BYTES`] (enough to
/// tell that it is too large).
fn read_bounded(file: &Path) -> Result<Vec<u8>, SkipReason> {
    use std::io::Read;
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(SkipReason::NoPortFile);
        }
        Err(error) => return Err(SkipReason::Unreadable(error.to_string())),
    };
    let mut bytes = Vec::new();
    opened
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| SkipReason::Unreadable(e.to_string()))?;
    Ok(bytes)
}

/// Whether something accepts connections on the port on loopback.
async fn probe(port: u16) -> Result<(), SkipReason> {
    let connect = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port));
    match tokio::time::timeout(PROBE_TIMEOUT, connect).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(SkipReason::NotAnswering {
            port,
            error: error.to_string(),
        }),
        Err(_) => Err(SkipReason::NotAnswering {
            port,
            error: format!("no answer within {} ms", PROBE_TIMEOUT.as_millis()),
        }),
    }
}

/// The usual user data directories of Chrome (stable, beta, dev, canary),
/// Chromium and Edge on this system, stable channels first. Empty when
/// the base directory (home, `LOCALAPPDATA`) is unknown.
pub fn default_candidates() -> Vec<Candidate> {
    platform::candidates()
}

/// Linux and the other free Unixes: `$XDG_CONFIG_HOME` (else
/// `~/.config`), plus the Snap and Flatpak homes.
#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    use super::Candidate;
    use std::path::PathBuf;

    /// Browser, directory under `$XDG_CONFIG_HOME`.
    const CONFIG_TABLE: &[(&str, &str)] = &[
        ("Chrome", "google-chrome"),
        ("Chromium", "chromium"),
        ("Edge", "microsoft-edge"),
        ("Chrome Beta", "google-chrome-beta"),
        ("Chrome Dev", "google-chrome-unstable"),
        ("Chrome Canary", "google-chrome-canary"),
        ("Edge Beta", "microsoft-edge-beta"),
        ("Edge Dev", "microsoft-edge-dev"),
    ];

    /// Browser, directory under the home directory (sandboxed packages).
    const HOME_TABLE: &[(&str, &str)] = &[
        ("Chromium (Snap)", "snap/chromium/common/chromium"),
        (
            "Chrome (Flatpak)",
            ".var/app/com.google.Chrome/config/google-chrome",
        ),
        (
            "Chromium (Flatpak)",
            ".var/app/org.chromium.Chromium/config/chromium",
        ),
        (
            "Edge (Flatpak)",
            ".var/app/com.microsoft.Edge/config/microsoft-edge",
        ),
    ];

    pub(super) fn candidates() -> Vec<Candidate> {
        candidates_under(std::env::home_dir(), std::env::var_os("XDG_CONFIG_HOME"))
    }

    /// The candidates for this home directory and `XDG_CONFIG_HOME` value.
    pub(super) fn candidates_under(
        home: Option<PathBuf>,
        xdg_config_home: Option<std::ffi::OsString>,
    ) -> Vec<Candidate> {
        let home = home.filter(|h| !h.as_os_str().is_empty());
        let config = xdg_config_home
            .map(PathBuf::from)
            // The XDG spec: a relative value is to be ignored.
            .filter(|dir| dir.is_absolute())
            .or_else(|| home.as_ref().map(|home| home.join(".config")));
        let mut found = Vec::new();
        if let Some(config) = config {
            found.extend(CONFIG_TABLE.iter().map(|(browser, dir)| Candidate {
                browser: (*browser).into(),
                dir: config.join(dir),
            }));
        }
        if let Some(home) = home {
            found.extend(HOME_TABLE.iter().map(|(browser, dir)| Candidate {
                browser: (*browser).into(),
                dir: home.join(dir),
            }));
        }
        found
    }
}

/// macOS: `~/Library/Application Support`.
#[cfg(target_os = "macos")]
mod platform {
    use super::Candidate;

    /// Browser, directory under `~/Library/Application Support`.
    const TABLE: &[(&str, &str)] = &[
        ("Chrome", "Google/Chrome"),
        ("Chromium", "Chromium"),
        ("Edge", "Microsoft Edge"),
        ("Chrome Beta", "Google/Chrome Beta"),
        ("Chrome Dev", "Google/Chrome Dev"),
        ("Chrome Canary", "Google/Chrome Canary"),
        ("Edge Beta", "Microsoft Edge Beta"),
        ("Edge Dev", "Microsoft Edge Dev"),
        ("Edge Canary", "Microsoft Edge Canary"),
    ];

    pub(super) fn candidates() -> Vec<Candidate> {
        let Some(home) = std::env::home_dir().filter(|h| !h.as_os_str().is_empty()) else {
            return Vec::new();
        };
        let base = home.join("Library/Application Support");
        TABLE
            .iter()
            .map(|(browser, dir)| Candidate {
                browser: (*browser).into(),
                dir: base.join(dir),
            })
            .collect()
    }
}

/// Windows: `%LOCALAPPDATA%`.
#[cfg(windows)]
mod platform {
    use super::Candidate;
    use std::path::PathBuf;

    /// Browser, directory under `%LOCALAPPDATA%` (canaries are "SxS").
    const TABLE: &[(&str, &str)] = &[
        ("Chrome", r"Google\Chrome\User Data"),
        ("Chromium", r"Chromium\User Data"),
        ("Edge", r"Microsoft\Edge\User Data"),
        ("Chrome Beta", r"Google\Chrome Beta\User Data"),
        ("Chrome Dev", r"Google\Chrome Dev\User Data"),
        ("Chrome Canary", r"Google\Chrome SxS\User Data"),
        ("Edge Beta", r"Microsoft\Edge Beta\User Data"),
        ("Edge Dev", r"Microsoft\Edge Dev\User Data"),
        ("Edge Canary", r"Microsoft\Edge SxS\User Data"),
    ];

    pub(super) fn candidates() -> Vec<Candidate> {
        let Some(base) = std::env::var_os("LOCALAPPDATA")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
        else {
            return Vec::new();
        };
        TABLE
            .iter()
            .map(|(browser, dir)| Candidate {
                browser: (*browser).into(),
                dir: base.join(dir),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_file_gives_port_and_path() {
        let parsed = parse_active_port(b"9222\n/devtools/browser/1a2b-3c\n");
        assert_eq!(parsed, Ok((9222, "/devtools/browser/1a2b-3c".to_owned())));
        // Windows line ends and no final newline are fine.
        let parsed = parse_active_port(b"65535\r\n/devtools/browser/x");
        assert_eq!(parsed, Ok((65535, "/devtools/browser/x".to_owned())));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases: &[(&[u8], PortFileError)] = &[
            (b"", PortFileError::NoPort),
            (b"\n\n", PortFileError::NoPort),
            (b"9222", PortFileError::NoPath),
            (b"9222\n", PortFileError::NoPath),
            (b"0\n/devtools/browser/x\n", PortFileError::PortZero),
            (b"00000\n/devtools/browser/x\n", PortFileError::PortZero),
            (
                b"65536\n/devtools/browser/x\n",
                PortFileError::BadPort("65536".into()),
            ),
            (
                b"99999999999999999999999999\n/devtools/browser/x\n",
                PortFileError::BadPort("99999999999999999999999999".into()),
            ),
            (
                b"-1\n/devtools/browser/x\n",
                PortFileError::BadPort("-1".into()),
            ),
            (
                b"+80\n/devtools/browser/x\n",
                PortFileError::BadPort("+80".into()),
            ),
            (
                b"garbage\nmore garbage\n",
                PortFileError::BadPort("garbage".into()),
            ),
            (
                b"9222\n/devtools/page/x\n",
                PortFileError::BadPath("/devtools/page/x".into()),
            ),
            (
                b"9222\n/devtools/browser/\n",
                PortFileError::BadPath("/devtools/browser/".into()),
            ),
            (
                b"9222\n/devtools/browser/x?y=1\n",
                PortFileError::BadPath("/devtools/browser/x?y=1".into()),
            ),
            (
                b"9222\n/devtools/browser/../../etc\n",
                PortFileError::BadPath("/devtools/browser/../../etc".into()),
            ),
            (b"\xff\xfe9\x00\n/devtools\n", PortFileError::NotText),
        ];
        for (bytes, expected) in cases {
            assert_eq!(
                parse_active_port(bytes).as_ref().err(),
                Some(expected),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
            // Every reason reads as a sentence.
            assert!(!expected.to_string().is_empty());
        }
        let huge = vec![b'1'; 1 << 20];
        assert_eq!(parse_active_port(&huge), Err(PortFileError::TooLarge));
        // A long garbage line is quoted only in part.
        let long = [vec![b'x'; 1000], b"\n/devtools/browser/x".to_vec()].concat();
        let Err(PortFileError::BadPort(quoted)) = parse_active_port(&long) else {
            panic!("expected BadPort");
        };
        assert_eq!(quoted.len(), 40);
    }

    #[tokio::test]
    async fn each_candidate_says_why_it_was_passed_over() {
        let root = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let dir = root.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            dir
        };
        let missing = root.path().join("missing");
        let off = dir("off");
        let garbage = dir("garbage");
        std::fs::write(garbage.join(ACTIVE_PORT_FILE), b"\xff\xfegarbage").unwrap();
        let half = dir("half");
        std::fs::write(half.join(ACTIVE_PORT_FILE), b"9222\n").unwrap();
        // A port nothing listens on: bound, then released.
        let dead_port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let stale = dir("stale");
        std::fs::write(
            stale.join(ACTIVE_PORT_FILE),
            format!("{dead_port}\n/devtools/browser/gone\n"),
        )
        .unwrap();
        let unreadable = dir("unreadable");
        std::fs::create_dir(unreadable.join(ACTIVE_PORT_FILE)).unwrap();
        // One that answers: a listener of ours plays the browser.
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap();
        let live_port = listener.local_addr().unwrap().port();
        let live = dir("live");
        std::fs::write(
            live.join(ACTIVE_PORT_FILE),
            format!("{live_port}\n/devtools/browser/abc-123\n"),
        )
        .unwrap();

        let search = SearchPath::dirs([
            missing.clone(),
            off.clone(),
            garbage,
            half,
            stale,
            unreadable,
            live.clone(),
        ]);
        let discovery = discover(&search).await;
        let found = discovery.found.clone().expect("the live one");
        assert_eq!(found.dir, live);
        assert_eq!(
            found.endpoint(),
            format!("ws://127.0.0.1:{live_port}/devtools/browser/abc-123")
        );
        let reasons: Vec<&SkipReason> = discovery.skipped.iter().map(|s| &s.reason).collect();
        assert!(
            matches!(
                reasons.as_slice(),
                [
                    SkipReason::NoDirectory,
                    SkipReason::NoPortFile,
                    SkipReason::Malformed(PortFileError::NotText),
                    SkipReason::Malformed(PortFileError::NoPath),
                    SkipReason::NotAnswering { .. },
                    SkipReason::Unreadable(_),
                ]
            ),
            "{reasons:?}"
        );

        // Without the live one: nothing found, and the error says what was searched.
        let nothing = discover(&SearchPath::dirs([missing.clone(), off.clone()])).await;
        assert!(nothing.found.is_none());
        let error = nothing.not_found();
        assert_eq!(error.code(), "NOT_CONNECTED");
        let message = error.to_string();
        assert!(message.contains(&off.display().to_string()), "{message}");
        assert!(message.contains("remote debugging is off"), "{message}");
        assert!(
            message.contains(&format!("not present: {}", missing.display())),
            "{message}"
        );
        assert!(error.hint().contains("chrome://inspect/#remote-debugging"));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn xdg_config_home_is_honoured_and_a_relative_one_ignored() {
        let dirs = |xdg: Option<&str>| -> Vec<PathBuf> {
            platform::candidates_under(Some("/home/p".into()), xdg.map(Into::into))
                .into_iter()
                .map(|c| c.dir)
                .collect()
        };
        let custom = dirs(Some("/xdg"));
        assert_eq!(custom[0], Path::new("/xdg/google-chrome"));
        assert!(custom.contains(&PathBuf::from("/xdg/google-chrome-beta")));
        assert!(custom.contains(&PathBuf::from("/xdg/google-chrome-unstable")));
        assert!(custom.contains(&PathBuf::from("/xdg/microsoft-edge")));
        assert!(custom.contains(&PathBuf::from("/home/p/snap/chromium/common/chromium")));
        assert_eq!(
            dirs(Some("relative"))[0],
            Path::new("/home/p/.config/google-chrome")
        );
        assert_eq!(dirs(None)[1], Path::new("/home/p/.config/chromium"));
        assert!(platform::candidates_under(None, None).is_empty());
    }

    #[test]
    fn the_usual_directories_are_known_for_this_system() {
        let candidates = default_candidates();
        if std::env::home_dir().is_some() {
            assert!(candidates.iter().any(|c| c.browser == "Chrome"));
            assert!(candidates.iter().any(|c| c.browser == "Edge"));
            assert!(candidates.iter().any(|c| c.browser == "Chromium"));
            assert!(candidates.iter().all(|c| c.dir.is_absolute()));
        }
    }
}
