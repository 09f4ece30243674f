//! The report's figures as inline SVG (plotters' SVG backend), each with a
//! `<title>`, a `<desc>` holding its numbers in words, and `role="img"`.

use plotters::prelude::*;

use super::{Averaging, Review};
use dpplan_diagnostics::num;

const W: u32 = 760;
const H: u32 = 380;
const FONT: &str = "sans-serif";

/// The line colours (colour-blind safe, Okabe–Ito).
const COLOURS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

/// XML text escaping.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Puts a title and a text alternative into the SVG's root element.
fn accessible(svg: &str, title: &str, desc: &str) -> String {
    let Some(open) = svg.find("<svg") else {
        return svg.to_string();
    };
    let Some(end) = svg[open..].find('>').map(|e| open + e) else {
        return svg.to_string();
    };
    let (head, tail) = svg.split_at(end);
    // inline SVG in HTML needs no namespace: the report names no URL at all
    let head = head
        .trim_end_matches('/')
        .replace(" xmlns=\"http://www.w3.org/2000/svg\"", "");
    format!(
        "{head} role=\"img\" aria-label=\"{}\"><title>{}</title><desc>{}</desc>{}",
        escape(title),
        escape(title),
        escape(desc),
        &tail[1..]
    )
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Figure 1: cumulative ε over the calendar, one line per accountant, the
/// budget as a horizontal line, and the dates each fraction is reached.
pub fn cumulative(review: &Review) -> Result<String, String> {
    let c = &review.cumulative;
    let first_run = review.calendar.first_run.is_some();
    let day = 86_400.0;
    let x0 = c
        .curves
        .iter()
        .flat_map(|cv| cv.points.first())
        .map(|p| p.t / day)
        .fold(0.0, f64::min);
    let x1 = (c.horizon_seconds / day).max(x0 + 1.0);
    let top = (c.budget_epsilon * 1.5).max(review.contract.total.epsilon * 1.2);
    let labels = review_labels(review);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .caption("Cumulative ε over the schedule", (FONT, 18))
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, 0f64..top)
            .map_err(err)?;
        let fmt_x = |x: &f64| labels(x * day);
        chart
            .configure_mesh()
            .x_labels(6)
            .x_label_formatter(&fmt_x)
            .x_desc(if first_run {
                "date (UTC)"
            } else {
                "days after the first run"
            })
            .y_desc("ε")
            .draw()
            .map_err(err)?;
        for (i, cv) in c.curves.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    cv.points.iter().map(|p| (p.t / day, p.epsilon.min(top))),
                    colour.stroke_width(2),
                ))
                .map_err(err)?
                .label(cv.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour));
        }
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x0, c.budget_epsilon), (x1, c.budget_epsilon)],
                BLACK.stroke_width(2),
            )))
            .map_err(err)?
            .label(format!("budget ε = {}", num(c.budget_epsilon)))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(2)));
        for f in &c.fractions {
            if let (Some(t), Some(e)) = (f.offset_seconds, f.epsilon) {
                let p = (t / day, e.min(top));
                chart
                    .draw_series([
                        Circle::new(p, 4, BLACK.filled()).into_dyn(),
                        Text::new(
                            format!("{:.0} %", f.fraction * 100.0),
                            p,
                            (FONT, 12).into_font(),
                        )
                        .into_dyn(),
                    ])
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 12))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    let mut desc = format!(
        "ε accrued by each date, budget ε = {}; curves above {} are cut at the top. ",
        num(c.budget_epsilon),
        num(top)
    );
    for cv in &c.curves {
        if let Some(p) = cv.points.last() {
            desc.push_str(&format!("{} ends at ε = {}. ", cv.name, num(p.epsilon)));
        }
    }
    for f in &c.fractions {
        desc.push_str(&format!(
            "{:.0} % of the budget: {}. ",
            f.fraction * 100.0,
            f.at.as_deref().unwrap_or("never reached")
        ));
    }
    Ok(accessible(
        &svg,
        "Cumulative ε over the schedule's calendar",
        desc.trim_end(),
    ))
}

fn review_labels(review: &Review) -> impl Fn(f64) -> String + '_ {
    move |t: f64| super::timeline::label(review.calendar.first_run_unix, t)
}

/// Figure 2: the std of the average of r fresh releases against their ε.
pub fn averaging(a: &Averaging) -> Result<String, String> {
    let xmax = a.points.iter().map(|p| p.epsilon).fold(0.0, f64::max) * 1.05;
    let ymax = a.points.iter().map(|p| p.std_of_mean).fold(0.0, f64::max) * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H * 3 / 4)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .caption(format!("Averaging `{}`", a.query), (FONT, 16))
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..xmax.max(1e-9), 0f64..ymax.max(1e-9))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("ε of r releases alone")
            .y_desc("std of the average")
            .draw()
            .map_err(err)?;
        let pts: Vec<(f64, f64)> = a
            .points
            .iter()
            .map(|p| (p.epsilon, p.std_of_mean))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), COLOURS[0].stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(a.points.iter().map(|p| {
                EmptyElement::at((p.epsilon, p.std_of_mean))
                    + Circle::new((0, 0), 3, COLOURS[0].filled())
                    + Text::new(format!("r={}", p.r), (5, -12), (FONT, 11).into_font())
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    let desc = a
        .points
        .iter()
        .map(|p| {
            format!(
                "r = {}: std {} at ε = {}",
                p.r,
                num(p.std_of_mean),
                num(p.epsilon)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok(accessible(
        &svg,
        &format!("Averaging r fresh releases of {}", a.query),
        &desc,
    ))
}

/// Figure 3: each query's share of the plan's ρ.
pub fn shares(review: &Review) -> Result<String, String> {
    let n = review.queries.len().max(1);
    let mut svg = String::new();
    {
        let h = 60 + 36 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .caption(
                "Each query's share of the budget (of the plan's ρ)",
                (FONT, 16),
            )
            .x_label_area_size(30)
            .y_label_area_size(10)
            .build_cartesian_2d(0f64..100f64, 0f64..n as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("%")
            .draw()
            .map_err(err)?;
        for (i, q) in review.queries.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let s = 100.0 * q.share;
            chart
                .draw_series([
                    Rectangle::new(
                        [(0.0, y + 0.15), (s, y + 0.85)],
                        COLOURS[i % COLOURS.len()].filled(),
                    )
                    .into_dyn(),
                    Text::new(
                        format!("{} {}", q.name, super::percent(q.share)),
                        ((s + 1.0).min(70.0), y + 0.75),
                        (FONT, 12).into_font(),
                    )
                    .into_dyn(),
                ])
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    let desc = review
        .queries
        .iter()
        .map(|q| format!("{}: {}", q.name, super::percent(q.share)))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(accessible(
        &svg,
        "Each query's share of the plan's ρ",
        &desc,
    ))
}
