//! The HTML report in a real browser (headless Chromium): a screenshot is
//! taken, every figure is drawn (not blank), and the page makes no network
//! request. The harness itself is checked first with pages built to fail.

use crate::browser;
use crate::support::root;

use std::path::Path;

fn page(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>t</title></head><body>{body}</body></html>"),
    )
    .unwrap();
    p
}

/// Negative controls for the harness: a page that requests a remote image
/// is caught, a blank page has no ink, a drawn figure has.
#[test]
fn the_harness_sees_requests_and_ink() {
    let dir = tempfile::tempdir().unwrap();
    let figure = "<svg width=\"400\" height=\"200\" role=\"img\" aria-label=\"a line\"><polyline points=\"0,200 100,100 400,0\" stroke=\"blue\" fill=\"none\" stroke-width=\"6\"/></svg>";
    let drawn = browser::render(&page(dir.path(), "drawn.html", figure), 600, 400);
    assert!(drawn.page_requests.is_empty(), "{:?}", drawn.page_requests);
    assert!(drawn.ink() > 0.002, "ink {}", drawn.ink());
    assert_eq!((drawn.width, drawn.height), (600, 400));

    let blank = browser::render(&page(dir.path(), "blank.html", ""), 600, 400);
    assert!(blank.ink() < 1e-4, "ink {}", blank.ink());

    let leaky = browser::render(
        &page(
            dir.path(),
            "leaky.html",
            "<img src=\"http://example.invalid/pixel.png\"><link rel=\"stylesheet\" href=\"https://example.invalid/s.css\">",
        ),
        600,
        400,
    );
    assert!(
        leaky
            .page_requests
            .iter()
            .any(|u| u == "http://example.invalid/pixel.png"),
        "{:?}",
        leaky.page_requests
    );
}

fn examples() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let dir = e.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                let p = f.unwrap().path();
                if p.extension().is_some_and(|x| x == "dpplan") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Every `<svg …>…</svg>` of a page, with its declared width and height.
fn figures(html: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let Some(len) = rest[start..].find("</svg>") else {
            break;
        };
        let svg = &rest[start..start + len + "</svg>".len()];
        let attr = |name: &str| -> u32 {
            let key = format!("{name}=\"");
            let head = &svg[..svg.find('>').unwrap_or(svg.len())];
            head.find(&key)
                .and_then(|i| {
                    let v = &head[i + key.len()..];
                    v[..v.find('"')?].trim_end_matches("px").parse::<f64>().ok()
                })
                .map_or(800, |v| v.ceil() as u32)
        };
        out.push((svg.to_string(), attr("width"), attr("height")));
        rest = &rest[start + len..];
    }
    out
}

/// The HTML report of every example, in a real browser: a screenshot is
/// taken (kept in target/report-screenshots/), the page makes no network
/// request, every figure is present and drawn, each on its own page too.
#[test]
fn the_html_report_renders_without_network_and_every_figure_is_drawn() {
    let shots = root().join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for plan in examples() {
        let name = plan.file_stem().unwrap().to_string_lossy().to_string();
        let html_path = dir.path().join(format!("{name}.html"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dpplan"))
            .args(["report", "--format", "html", "--out"])
            .arg(&html_path)
            .arg(&plan)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let html = std::fs::read_to_string(&html_path).unwrap();

        let shot = browser::render(&html_path, 1280, 4000);
        assert!(
            shot.page_requests.is_empty(),
            "{name}: the report requested {:?}",
            shot.page_requests
        );
        assert!(
            shot.ink() > 0.01,
            "{name}: the page is (nearly) blank: ink {}",
            shot.ink()
        );
        std::fs::write(shots.join(format!("{name}.png")), &shot.png).unwrap();

        let figs = figures(&html);
        assert!(figs.len() >= 2, "{name}: {} figure(s)", figs.len());
        for (i, (svg, w, h)) in figs.iter().enumerate() {
            assert!(svg.contains("<title"), "{name} figure {i} has no title");
            let alone = page(dir.path(), &format!("{name}-fig{i}.html"), svg);
            // headless Chromium with a fresh profile draws nothing in a window
            // under ~300 px high: never go below 800×300
            let drawn = browser::render(&alone, (w + 16).max(800), (h + 16).max(300));
            assert!(
                drawn.ink() > 0.002,
                "{name} figure {i} ({w}×{h}) is blank: ink {}",
                drawn.ink()
            );
        }
    }
}
