//! The HTML report in a real browser (headless Chromium): a screenshot is
//! taken, every figure is drawn (not blank), and the page makes no network
//! request. The harness itself is checked first with pages built to fail.

mod browser;

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
