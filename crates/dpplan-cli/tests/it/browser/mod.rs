//! A real browser for the HTML report's tests: headless Chromium (Debian's
//! `chromium`, installed by scripts/test-deps.sh) renders a page to a PNG
//! screenshot and records a network log, from which the requests the page
//! itself made are read.
//!
//! The browser makes background requests of its own (updates, accounts)
//! even with background networking disabled; they are told apart from the
//! page's by their network isolation key: a request made for a `file://`
//! page carries `file://` in its key, the browser's own do not. Host
//! resolution is mapped to nothing, so no request can leave the machine
//! either way.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the browser saw of one page.
pub struct Rendered {
    /// The screenshot's pixels, RGBA8, row-major.
    pub rgba: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// Every URL the page requested over the network.
    pub page_requests: Vec<String>,
    /// The screenshot as Chromium wrote it (PNG).
    pub png: Vec<u8>,
}

impl Rendered {
    /// The share of pixels that are not (near) white.
    pub fn ink(&self) -> f64 {
        let px = self.rgba.chunks_exact(4);
        let n = px.len().max(1);
        let inked = self
            .rgba
            .chunks_exact(4)
            .filter(|p| p[0] < 235 || p[1] < 235 || p[2] < 235)
            .count();
        inked as f64 / n as f64
    }

    /// The inked pixels inside the rectangle `[x0, x1) × [y0, y1)` and
    /// outside it.
    pub fn ink_inside_outside(&self, x0: i64, y0: i64, x1: i64, y1: i64) -> (usize, usize) {
        let (mut inside, mut outside) = (0, 0);
        for (i, p) in self.rgba.chunks_exact(4).enumerate() {
            if p[0] < 235 || p[1] < 235 || p[2] < 235 {
                let (x, y) = (
                    (i as u32 % self.width) as i64,
                    (i as u32 / self.width) as i64,
                );
                if (x0..x1).contains(&x) && (y0..y1).contains(&y) {
                    inside += 1;
                } else {
                    outside += 1;
                }
            }
        }
        (inside, outside)
    }
}

/// The Chromium binary: `DPPLAN_CHROMIUM`, else `chromium` on the PATH.
/// Panics with the fix when there is none: the browser test never skips.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("DPPLAN_CHROMIUM") {
        return PathBuf::from(p);
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "no headless browser: install Debian's `chromium` (scripts/test-deps.sh does) or set DPPLAN_CHROMIUM"
        )
    })
}

/// Opens `page` (an HTML file) in headless Chromium at `width`×`height`.
pub fn render(page: &Path, width: u32, height: u32) -> Rendered {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    let netlog = dir.path().join("net.json");
    let profile = dir.path().join("profile");
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = Command::new(chromium())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(&url)
        .output()
        .expect("headless chromium runs");
    assert!(
        shot.is_file(),
        "chromium took no screenshot of {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png_bytes = std::fs::read(&shot).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes.clone()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    Rendered {
        rgba,
        width: info.width,
        height: info.height,
        page_requests: page_requests(&netlog),
        png: png_bytes,
    }
}

/// The URLs of the network requests made on behalf of a `file://` page.
fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).expect("chromium wrote a network log");
    // Chromium may stop before closing the JSON array: close it.
    let log: serde_json::Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("the network log is JSON");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("the network log names its event types");
    let mut urls: Vec<String> = log["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"].as_u64() == Some(start))
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.contains("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .collect();
    urls.sort();
    urls.dedup();
    urls
}
