//! A team's surroundings for the shell's tests and the benchmark that
//! serve one (`shell/tests/team.rs`, `shell/benches/team.rs`): browserless
//! as the browser pool (the pinned package in `shell/tests/pool`, with
//! Debian's Chromium) and HAProxy with the shipped configuration
//! (`assets/team/haproxy.cfg`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::bounded;

/// The pool's token (a test value: the pool listens on loopback only).
pub const POOL_TOKEN: &str = "pool-test-token";

/// browserless started from the pinned package, with Debian's Chromium
/// behind the path Playwright would look for its own, and stopped (with
/// every browser it started) when dropped.
#[derive(Debug)]
pub struct Browserless {
    child: std::process::Child,
    port: u16,
    /// Where it keeps its browsers' profiles (and so how they are found).
    data: PathBuf,
    _files: TempDir,
}

/// A directory removed when dropped.
#[derive(Debug)]
pub struct TempDir(
    /// The directory.
    pub PathBuf,
);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browserless {
    /// Starts it with at most `concurrent` browsers and `queued` waiting
    /// connections, its files in `dir` (removed when it is dropped) and on
    /// `port` (0: a free one); returns once it says it is ready (within 60 s).
    pub async fn start(dir: PathBuf, port: u16, concurrent: u32, queued: u32) -> Self {
        let install = crate::repository().join("shell/tests/pool");
        assert!(
            install
                .join("node_modules/@browserless.io/browserless")
                .is_dir(),
            "browserless is not installed: run .ci/setup (npm ci in shell/tests/pool)"
        );
        let files = TempDir(dir);
        let browsers = files.0.join("playwright-browsers");
        let data = files.0.join("data");
        std::fs::create_dir_all(&data).unwrap();
        // Where Playwright (inside browserless) looks for its Chromium: a
        // link to Debian's, so that nothing downloads a browser.
        let expected = std::process::Command::new("node")
            .args([
                "-e",
                "process.stdout.write(require('playwright-core').chromium.executablePath())",
            ])
            .current_dir(&install)
            .env("PLAYWRIGHT_BROWSERS_PATH", &browsers)
            .output()
            .unwrap();
        let expected = PathBuf::from(String::from_utf8(expected.stdout).unwrap());
        std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("/usr/bin/chromium", &expected).unwrap();
        let port = if port == 0 { free_port() } else { port };
        let mut command = std::process::Command::new("node");
        command
            .arg(crate::repository().join("assets/team/browserless.mjs"))
            .current_dir(&install)
            .env("PLAYWRIGHT_BROWSERS_PATH", &browsers)
            // Nothing of it outside this test's directory.
            .env("DATA_DIR", &data)
            .env("DOWNLOAD_DIR", files.0.join("downloads"))
            .env("METRICS_JSON_PATH", files.0.join("metrics.json"))
            .env("TOKEN", POOL_TOKEN)
            .env("PORT", port.to_string())
            .env("HOST", "127.0.0.1")
            .env("CONCURRENT", concurrent.to_string())
            .env("QUEUED", queued.to_string())
            // No limit on a session's length: a shell gives its browsers back.
            .env("TIMEOUT", "0")
            .env("DEBUG", "-*")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // Its own process group: dropping it ends every browser it started.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().unwrap();
        let stdout = tokio::process::ChildStdout::from_std(child.stdout.take().unwrap()).unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("browserless is ready") {
                    return;
                }
            }
            panic!("browserless ended before it was ready");
        })
        .await
        .expect("browserless is ready within 60 s");
        // Its output is not read any more: a closed pipe would not stop it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            port,
            data,
            _files: files,
        }
    }

    /// Its process (the root of its browsers' processes).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The port it listens on (to start it again there).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The endpoint shells take browsers from.
    pub fn endpoint(&self) -> String {
        format!("ws://127.0.0.1:{}/chromium?token={POOL_TOKEN}", self.port)
    }

    /// How many browsers it runs now (its `/pressure`).
    pub async fn running(&self) -> u64 {
        self.pressure("running").await
    }

    /// How many connections wait in its queue now (its `/pressure`).
    pub async fn queued(&self) -> u64 {
        self.pressure("queued").await
    }

    async fn pressure(&self, field: &str) -> u64 {
        let body = http_get(self.port, &format!("/pressure?token={POOL_TOKEN}")).await;
        let json = &body[body.find('{').unwrap()..=body.rfind('}').unwrap()];
        serde_json::from_str::<serde_json::Value>(json).unwrap()["pressure"][field]
            .as_u64()
            .unwrap()
    }

    /// Kills the pool browser that shows a page whose URL contains
    /// `marker` (as a crash would), found through its debugging port.
    pub async fn kill_browser_showing(&self, marker: &str) {
        let pid = bounded::first_some(Duration::from_secs(10), || async {
            for (pid, port) in browsers_with_profile_in(&self.data) {
                if http_get(port, "/json/list").await.contains(marker) {
                    return Some(pid);
                }
            }
            None
        })
        .await
        .unwrap_or_else(|| panic!("no pool browser shows {marker}"));
        // SAFETY: killing a browser process this test's pool started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

impl Drop for Browserless {
    fn drop(&mut self) {
        // Stopped as a service manager would: it closes its browsers. They
        // run in process groups of their own, so any left are ended too.
        // SAFETY: signalling the process this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        if !bounded::has_ended_within(self.child.id() as i32, Duration::from_secs(10)) {
            bounded::end_process_group(self.child.id(), Duration::from_secs(5));
        }
        let _ = self.child.wait();
        for (pid, _) in browsers_with_profile_in(&self.data) {
            bounded::end_process_group(pid, Duration::from_secs(5));
        }
    }
}

/// The pool's browsers (main processes with a debugging port) whose
/// profiles are in `data`, with their ports.
fn browsers_with_profile_in(data: &Path) -> Vec<(u32, u16)> {
    let profile = format!("--user-data-dir={}", data.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a.starts_with("--type="))
            || !args.iter().any(|a| a.starts_with(&profile))
        {
            continue;
        }
        if let Some(port) = args
            .iter()
            .find_map(|a| a.strip_prefix("--remote-debugging-port="))
            .and_then(|p| p.parse().ok())
        {
            found.push((pid, port));
        }
    }
    found
}

/// The answer to a GET of `path` on 127.0.0.1:`port`, read by its
/// `Content-Length` (DevTools keeps the connection open after answering).
/// Empty when it does not answer within 2 s.
pub async fn http_get(port: u16, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut received = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                break;
            }
            received.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&received);
            // Without a length, the answer ends when the connection does.
            if let Some((head, body)) = text.split_once("\r\n\r\n")
                && let Some(length) = head
                    .lines()
                    .find_map(|line| {
                        line.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_owned())
                    })
                    .and_then(|value| value.parse::<usize>().ok())
                && body.len() >= length
            {
                break;
            }
        }
        Some(String::from_utf8_lossy(&received).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(2), read)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A port free now on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The shipped HAProxy configuration for the shells on `ports` (one to
/// three: shell1, shell2, shell3), its frontend on `front`.
pub fn haproxy_config(front: u16, ports: &[u16]) -> String {
    let shipped =
        std::fs::read_to_string(crate::repository().join("assets/team/haproxy.cfg")).unwrap();
    let mut config = shipped.replace("127.0.0.1:8900", &format!("127.0.0.1:{front}"));
    for (number, shipped_port) in ["8911", "8921", "8931"].iter().enumerate() {
        match ports.get(number) {
            Some(port) => {
                config = config.replace(
                    &format!("127.0.0.1:{shipped_port}"),
                    &format!("127.0.0.1:{port}"),
                );
            }
            None => {
                let name = format!("shell{}", number + 1);
                config = config
                    .lines()
                    .filter(|line| !line.contains(&name))
                    .collect::<Vec<_>>()
                    .join("\n")
                    + "\n";
            }
        }
    }
    config
}

/// HAProxy with the shipped configuration, stopped when dropped (with
/// the directory of its configuration).
#[derive(Debug)]
pub struct Haproxy {
    process: std::process::Child,
    _config: TempDir,
}

impl Haproxy {
    /// Starts it in front of the shells on `ports`, listening on `front`,
    /// its configuration in `dir`; returns once it takes connections and
    /// finds a ready shell (within 20 s).
    pub async fn start(dir: PathBuf, front: u16, ports: &[u16]) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, haproxy_config(front, ports)).unwrap();
        let haproxy = Self {
            process: std::process::Command::new("haproxy")
                .args(["-db", "-f"])
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("haproxy is installed (.ci/setup)"),
            _config: TempDir(dir),
        };
        bounded::first_some(Duration::from_secs(20), || async {
            http_get(front, "/readyz")
                .await
                .contains("ready\n")
                .then_some(())
        })
        .await
        .expect("HAProxy takes connections and finds a ready shell within 20 s");
        haproxy
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A value of `name` in Prometheus text `metrics` (the first sample).
pub fn metric(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find(|line| line.starts_with(name) && line[name.len()..].starts_with([' ', '{']))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
}
