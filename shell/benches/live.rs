//! Live-view benchmark: the real relay, a WebSocket viewer that draws
//! (decodes and acknowledges) every frame, and `fixtures/live.html`.
//!
//! Run: `cargo bench -p browser-shell --bench live` (add `-- --quick` for
//! fewer rounds). Prints frames per second and bytes per frame on an
//! animated page, and input → first changed frame latency p50/p95 (a
//! press through the live view flips the page's colour; the clock stops
//! at the first frame whose pixels show it), next to the floor: the same
//! press and screencast over raw CDP from this process, no relay.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use browser_testkit::fixtures::serve_fixtures;
use browser_testkit::stats::percentile;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One drawn frame.
struct Drawn {
    bytes: usize,
    picture: image::RgbImage,
    /// When its bytes arrived (before decoding).
    arrived: Instant,
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (seconds, rounds) = if quick { (3, 10) } else { (8, 30) };
    let base = serve_fixtures().await;
    let runtime = std::env::temp_dir().join(format!("browser-shell-bench-{}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .unwrap();
    }
    let mut relay = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .arg("relay")
        .env("BROWSER_SHELL_RUNTIME_DIR", &runtime)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(relay.stdout.take().unwrap()).lines();
    let viewer_url = lines.next_line().await.unwrap().expect("the viewer link");
    let host = viewer_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let token = viewer_url.split("token=").nth(1).unwrap().to_owned();

    println!("# browser-shell live-view benchmark");
    println!(
        "relay on loopback, one viewer drawing every frame (JPEG decode + ack), release build"
    );

    // Frames per second and bytes per frame on a page that animates every frame.
    open(&runtime, &format!("{base}/live.html?animate")).await;
    let mut socket = connect(&host, &token).await;
    let first = next_frame(&mut socket).await; // the stream is running
    let started = Instant::now();
    let mut sizes = vec![first.bytes as f64];
    while started.elapsed() < Duration::from_secs(seconds) {
        sizes.push(next_frame(&mut socket).await.bytes as f64);
    }
    let fps = (sizes.len() - 1) as f64 / started.elapsed().as_secs_f64();
    println!("\n## Animated page ({seconds} s)");
    println!(
        "frames per second {fps:.1}; bytes per frame p50 {:.0} p95 {:.0}; {}x{} px",
        percentile(&mut sizes, 0.5),
        percentile(&mut sizes, 0.95),
        first.picture.width(),
        first.picture.height()
    );
    drop(socket);

    // Input → first changed frame, on a still page.
    open(&runtime, &format!("{base}/live.html")).await;
    let mut socket = connect(&host, &token).await;
    let mut current = next_frame(&mut socket).await;
    let mut latencies = Vec::new();
    let mut arrivals = Vec::new();
    for _ in 0..rounds {
        let before = center(&current.picture);
        let started = Instant::now();
        for kind in ["down", "up"] {
            send(
                &mut socket,
                json!({"type": "mouse", "kind": kind, "x": 0.7, "y": 0.7, "button": "left", "clicks": 1}),
            )
            .await;
        }
        loop {
            current = next_frame(&mut socket).await;
            if differs(center(&current.picture), before) {
                break;
            }
        }
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        arrivals.push((current.arrived - started).as_secs_f64() * 1000.0);
    }
    let (mut floor_arrivals, mut floor_latencies) =
        floor(&format!("{base}/live.html"), rounds).await;
    println!("\n## Input → first changed frame ({rounds} presses; ms)");
    println!("{:<44} {:>8} {:>8}", "", "p50", "p95");
    for (label, samples) in [
        ("relay: frame arrived", &mut arrivals),
        ("relay: frame arrived and decoded", &mut latencies),
        ("floor (raw CDP): frame arrived", &mut floor_arrivals),
        ("floor (raw CDP): arrived and decoded", &mut floor_latencies),
    ] {
        println!(
            "{label:<44} {:>8.1} {:>8.1}",
            percentile(samples, 0.5),
            percentile(samples, 0.95)
        );
    }
    send(&mut socket, json!({"type": "return"})).await;
    drop(socket);
    // SAFETY: signalling the child we started, so it shuts down in order.
    unsafe { libc::kill(relay.id().unwrap() as i32, libc::SIGTERM) };
    let _ = tokio::time::timeout(Duration::from_secs(30), relay.wait()).await;
    let _ = std::fs::remove_dir_all(&runtime);
}

/// The floor of input → changed frame: Chromium launched from here, the
/// page screencast with the relay's settings (JPEG, quality 70, at most
/// 1280 px), a press by `Input.dispatchMouseEvent` at the same point, every
/// frame acknowledged at once. Returns (arrived, arrived and decoded) in ms.
async fn floor(url: &str, rounds: usize) -> (Vec<f64>, Vec<f64>) {
    use base64::Engine as _;
    use browser_provider::host::{ChromiumHost, CreateViewOptions, LaunchOptions, ViewHost};
    let host = ChromiumHost::launch(LaunchOptions::default())
        .await
        .unwrap();
    let view = host
        .create_view(CreateViewOptions::default())
        .await
        .unwrap();
    let bound = Duration::from_secs(30);
    let command = async |method: &str, params: Value| {
        host.send_command(&view, method, params, bound)
            .await
            .unwrap()
    };
    let mut events = host.subscribe(&view).await.unwrap();
    command("Page.enable", json!({})).await;
    command("Page.navigate", json!({ "url": url })).await;
    while events.recv().await.unwrap().method != "Page.loadEventFired" {}
    command(
        "Page.startScreencast",
        json!({"format": "jpeg", "quality": 70, "maxWidth": 1280, "maxHeight": 1280}),
    )
    .await;
    // The next frame: (its picture, when it arrived).
    let mut next = async || loop {
        let event = tokio::time::timeout(bound, events.recv())
            .await
            .expect("a frame within 30 s")
            .unwrap();
        if event.method != "Page.screencastFrame" {
            continue;
        }
        let arrived = Instant::now();
        host.send_command(
            &view,
            "Page.screencastFrameAck",
            json!({ "sessionId": event.params["sessionId"] }),
            bound,
        )
        .await
        .unwrap();
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(event.params["data"].as_str().unwrap())
            .unwrap();
        let picture = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        return (picture, arrived);
    };
    // A press needs a picture to click in: make the page paint once.
    command(
        "Runtime.evaluate",
        json!({"expression": "document.body.classList.toggle('flipped')"}),
    )
    .await;
    let (mut current, _) = next().await;
    let (mut arrivals, mut latencies) = (Vec::new(), Vec::new());
    let (x, y) = (
        f64::from(current.width()) * 0.7,
        f64::from(current.height()) * 0.7,
    );
    for _ in 0..rounds {
        let before = center(&current);
        let started = Instant::now();
        for kind in ["mousePressed", "mouseReleased"] {
            command(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await;
        }
        loop {
            let (picture, arrived) = next().await;
            current = picture;
            if differs(center(&current), before) {
                arrivals.push((arrived - started).as_secs_f64() * 1000.0);
                break;
            }
        }
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    host.shutdown().await;
    (arrivals, latencies)
}

/// Opens `url` in the command line's session of the relay (a tool command).
async fn open(runtime: &Path, url: &str) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-shell"))
        .args(["open", url])
        .env("BROWSER_SHELL_RUNTIME_DIR", runtime)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn connect(host: &str, token: &str) -> Socket {
    // No Nagle: a browser's WebSocket sends at once too. (With it, the
    // press after an ack waited for the relay's delayed ACK: 40 ms.)
    let (socket, _) = tokio_tungstenite::connect_async_with_config(
        format!("ws://{host}/ws?token={token}"),
        None,
        true,
    )
    .await
    .unwrap();
    socket
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

/// The next frame, decoded and acknowledged (as the browser column does).
async fn next_frame(socket: &mut Socket) -> Drawn {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("a frame within 30 s")
            .unwrap()
            .unwrap();
        let Message::Binary(jpeg) = message else {
            continue;
        };
        let arrived = Instant::now();
        let picture = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        send(socket, json!({"type": "ack"})).await;
        return Drawn {
            bytes: jpeg.len(),
            picture,
            arrived,
        };
    }
}

/// The colour at 70 % / 70 % of the picture (background, away from the text).
fn center(picture: &image::RgbImage) -> [u8; 3] {
    let x = picture.width() * 7 / 10;
    let y = picture.height() * 7 / 10;
    picture.get_pixel(x, y).0
}

fn differs(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter().zip(b).any(|(x, y)| x.abs_diff(y) > 40)
}
