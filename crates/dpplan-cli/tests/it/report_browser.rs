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

/// The plotting area a figure declares (`data-plot="left top right bottom"`,
/// in its own pixels).
fn plot_area(svg: &str) -> Option<[i64; 4]> {
    let head = &svg[..svg.find('>')?];
    let v = &head[head.find("data-plot=\"")? + "data-plot=\"".len()..];
    let v: Vec<i64> = v[..v.find('"')?]
        .split(' ')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    v.try_into().ok()
}

/// How far a mark may reach past the axes: half a stroke, a marker's radius.
const MARK_OVERHANG: i64 = 5;

/// A figure's marks (`<g class="marks">`: the data alone, the frame and the
/// key hidden) drawn in a real browser: some ink inside the plotting area,
/// and none outside it. `Err` says what is wrong.
fn marks_inside_axes(dir: &Path, name: &str, svg: &str, w: u32, h: u32) -> Result<(), String> {
    let [l, t, r, b] = plot_area(svg).ok_or(format!("{name}: no data-plot area"))?;
    if !svg.contains("<g class=\"marks\">") {
        return Err(format!("{name}: no marks group"));
    }
    let only_marks =
        format!("<style>body{{margin:0}} svg > :not(g.marks){{visibility:hidden}}</style>{svg}");
    let alone = page(dir, &format!("{name}-marks.html"), &only_marks);
    let drawn = browser::render(&alone, (w + 16).max(800), (h + 16).max(300));
    let o = MARK_OVERHANG;
    let (inside, outside) = drawn.ink_inside_outside(l - o, t - o, r + o, b + o);
    let area = ((r - l) * (b - t)).max(1) as usize;
    // a line across the plot inks at least its width in pixels
    if inside < (r - l).max(1) as usize / 4 {
        return Err(format!(
            "{name}: {inside} inked pixels inside its plotting area ({l},{t})–({r},{b}) of {area}: nothing is drawn where the axes are"
        ));
    }
    if outside > 0 {
        return Err(format!(
            "{name}: {outside} inked pixels of its marks outside its plotting area ({l},{t})–({r},{b})"
        ));
    }
    Ok(())
}

/// Negative controls for the marks check: a figure whose marks are all off
/// its axes, one with no marks, and one with a mark poking out fail; a
/// figure with a line inside its axes passes.
#[test]
fn the_marks_check_fails_figures_drawn_off_their_axes() {
    let dir = tempfile::tempdir().unwrap();
    let fig = |marks: &str| {
        format!(
            "<svg width=\"400\" height=\"300\" data-plot=\"50 20 380 260\"><rect x=\"0\" y=\"0\" width=\"400\" height=\"300\" fill=\"#FFFFFF\"/><line x1=\"50\" y1=\"260\" x2=\"380\" y2=\"260\" stroke=\"#000000\"/><text x=\"5\" y=\"290\">axis label</text><g class=\"marks\">{marks}</g></svg>"
        )
    };
    let inside = fig("<polyline points=\"50,260 200,100 380,30\" stroke=\"#0072B2\" stroke-width=\"2\" fill=\"none\"/>");
    marks_inside_axes(dir.path(), "inside", &inside, 400, 300).unwrap();
    // a one-off plan's curve drawn as a single point: nothing to see
    let nothing =
        fig("<polyline points=\"200,100\" stroke=\"#0072B2\" stroke-width=\"2\" fill=\"none\"/>");
    let e = marks_inside_axes(dir.path(), "nothing", &nothing, 400, 300).unwrap_err();
    assert!(e.contains("nothing is drawn"), "{e}");
    // a curve above the axis maximum, drawn where the caption is
    let above = fig(
        "<polyline points=\"50,10 380,10\" stroke=\"#0072B2\" stroke-width=\"2\" fill=\"none\"/>",
    );
    let e = marks_inside_axes(dir.path(), "above", &above, 400, 300).unwrap_err();
    assert!(e.contains("inked pixels inside"), "{e}");
    let poking = fig("<polyline points=\"50,260 200,100 390,290\" stroke=\"#0072B2\" stroke-width=\"2\" fill=\"none\"/>");
    let e = marks_inside_axes(dir.path(), "poking", &poking, 400, 300).unwrap_err();
    assert!(e.contains("outside its plotting area"), "{e}");
    let e = marks_inside_axes(
        dir.path(),
        "bare",
        &fig("").replace(" data-plot=\"50 20 380 260\"", ""),
        400,
        300,
    )
    .unwrap_err();
    assert!(e.contains("no data-plot"), "{e}");
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
        let out = crate::support::command()
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
            marks_inside_axes(dir.path(), &format!("{name} figure {i}"), svg, *w, *h)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
