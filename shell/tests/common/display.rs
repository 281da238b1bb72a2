//! A virtual X display (Xvfb) for tests that look at windows: the shell's
//! own, or Chrome's UI in the person's browser.

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt, ImageFormat};
use x11rb::rust_connection::RustConnection;

/// A private X display; the server stops when this is dropped.
pub struct VirtualDisplay {
    server: std::process::Child,
    /// Its name, such as `:5` (for DISPLAY).
    pub name: String,
}

impl VirtualDisplay {
    /// Starts Xvfb on a free display number (it picks one and tells us).
    pub fn start() -> Self {
        use std::io::BufRead;
        let mut server = std::process::Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1400x900x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("Xvfb is installed (apt install xvfb)");
        let mut number = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut number)
            .unwrap();
        let name = format!(":{}", number.trim());
        assert!(name.len() > 1, "Xvfb names its display");
        Self { server, name }
    }
}

impl Drop for VirtualDisplay {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl VirtualDisplay {
    /// A connection to it.
    pub fn connect(&self) -> RustConnection {
        RustConnection::connect(Some(&self.name))
            .expect("connect to Xvfb")
            .0
    }
}

/// The whole screen as an image.
pub fn screenshot(x: &RustConnection) -> image::RgbImage {
    let screen = &x.setup().roots[0];
    let (width, height) = (screen.width_in_pixels, screen.height_in_pixels);
    let shot = x
        .get_image(ImageFormat::Z_PIXMAP, screen.root, 0, 0, width, height, !0)
        .unwrap()
        .reply()
        .unwrap();
    // 24-bit depth comes as 32 bits per pixel, blue first.
    let pixels = shot
        .data
        .chunks_exact(4)
        .flat_map(|p| [p[2], p[1], p[0]])
        .collect();
    image::RgbImage::from_raw(u32::from(width), u32::from(height), pixels).unwrap()
}

/// Clicks the left mouse button at (`x`, `y`) on the screen, through the
/// XTEST extension (as a mouse would).
pub fn click_at(x: &RustConnection, at: (i16, i16)) {
    use x11rb::protocol::xtest::ConnectionExt as _;
    let root = x.setup().roots[0].root;
    // Motion (6) to the point, then press (4) and release (5) button 1.
    x.xtest_fake_input(6, 0, 0, root, at.0, at.1, 0).unwrap();
    x.xtest_fake_input(4, 1, 0, root, 0, 0, 0).unwrap();
    x.xtest_fake_input(5, 1, 0, root, 0, 0, 0).unwrap();
    x.flush().unwrap();
}
