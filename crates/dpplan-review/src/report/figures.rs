//! The report's figures as inline SVG (plotters' SVG backend), each with a
//! `<title>`, a `<desc>` holding its numbers in words, and `role="img"`.

use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::{Averaging, Review, TradeOff};
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

/// The plotting area of a figure's chart: its data ranges and the pixels
/// they are drawn on.
struct Plot {
    size: (u32, u32),
    x: Range<f64>,
    y: Range<f64>,
    px: Range<i32>,
    py: Range<i32>,
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

type Root<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

/// How a figure's frame is laid out: one rule for all four figures. A
/// figure with a legend beside its plot is [`LEGEND_WIDTH`] wider than
/// one without, on the same plotting width.
struct Frame<'t> {
    /// The plotting width and the figure's height (without the legend).
    size: (u32, u32),
    caption: &'t str,
    caption_size: u32,
    /// The heights of the x labels' area and the widths of the y labels'.
    label_areas: (u32, u32),
    legend: bool,
}

impl Plot {
    /// Draws the frame of a figure (white ground, caption, label areas,
    /// then what `mesh` draws: axes, descriptions, ticks) and returns it
    /// with the plotting area it laid out.
    fn frame(
        f: &Frame<'_>,
        x: Range<f64>,
        y: Range<f64>,
        mesh: impl FnOnce(&mut Chart<'_, '_>, &Root<'_>) -> Result<(), String>,
    ) -> Result<(String, Plot), String> {
        let extra = if f.legend { LEGEND_WIDTH } else { 0 };
        let size = (f.size.0 + extra as u32, f.size.1);
        let mut svg = String::new();
        let plot = {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .margin_right(12 + if f.legend { extra + 12 } else { 0 })
                .caption(f.caption, (FONT, f.caption_size))
                .x_label_area_size(f.label_areas.0)
                .y_label_area_size(f.label_areas.1)
                .build_cartesian_2d(x.clone(), y.clone())
                .map_err(err)?;
            mesh(&mut chart, &root)?;
            Plot::of(&chart, size, x, y)
        };
        Ok((svg, plot))
    }

    /// The plotting area `chart` laid out.
    fn of(chart: &Chart<'_, '_>, size: (u32, u32), x: Range<f64>, y: Range<f64>) -> Plot {
        let (px, py) = chart.plotting_area().get_pixel_range();
        Plot { size, x, y, px, py }
    }

    /// Draws on the plotting area alone, in its data coordinates, and
    /// returns the SVG elements drawn (without the `<svg>` element itself).
    /// The chart is laid out on the same pixels as the frame's, so a point
    /// lands where the frame's axes say it is.
    fn layer(
        &self,
        draw: impl FnOnce(&mut Chart<'_, '_>) -> Result<(), String>,
    ) -> Result<String, String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            let (w, h) = (self.size.0 as i32, self.size.1 as i32);
            let area = root.margin(
                self.py.start,
                h - self.py.end,
                self.px.start,
                w - self.px.end,
            );
            let mut chart = ChartBuilder::on(&area)
                .build_cartesian_2d(self.x.clone(), self.y.clone())
                .map_err(err)?;
            draw(&mut chart)?;
            root.present().map_err(err)?;
        }
        Ok(svg_body(&svg).to_string())
    }

    /// The figure: the frame, then the marks (`<g class="marks">`: the
    /// data, and nothing else), then the key (legend, labels) on top. The
    /// root carries the plotting area's pixels as
    /// `data-plot="left top right bottom"`, which the browser test reads to
    /// check that the marks are drawn, and drawn inside the axes.
    fn assemble(&self, frame: &str, marks: &str, key: &str) -> String {
        let Some(close) = frame.rfind("</svg>") else {
            return frame.to_string();
        };
        let Some(open) = frame.find("<svg") else {
            return frame.to_string();
        };
        let head = open + 4;
        format!(
            "{} data-plot=\"{} {} {} {}\"{}<g class=\"marks\">{marks}</g>{key}</svg>\n",
            &frame[..head],
            self.px.start,
            self.py.start,
            self.px.end,
            self.py.end,
            &frame[head..close],
        )
    }
}

/// What lies between `<svg …>` and `</svg>`.
fn svg_body(svg: &str) -> &str {
    let start = svg
        .find("<svg")
        .and_then(|o| svg[o..].find('>').map(|e| o + e + 1))
        .unwrap_or(0);
    let end = svg.rfind("</svg>").unwrap_or(svg.len()).max(start);
    &svg[start..end]
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Figure 1: cumulative ε over the calendar, one step line per accountant
/// (nothing is charged before the first release), the budget as a
/// horizontal line, and the dates each fraction of the budget is reached
/// (fractions reached by the same release share one marker).
pub fn cumulative(review: &Review) -> Result<String, String> {
    let c = &review.cumulative;
    let first_run = review.calendar.first_run.is_some();
    let g = CumulativeGeometry::of(review);
    let labels = review_labels(review);
    let (x, y) = (g.x0..g.x1, 0f64..g.top);
    let (frame, plot) = Plot::frame(
        &Frame {
            size: (W, H),
            caption: "Cumulative ε over the schedule",
            caption_size: 18,
            label_areas: (40, 56),
            legend: true,
        },
        x,
        y,
        |chart, root| {
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .x_desc(if first_run {
                    "date (UTC)"
                } else {
                    "days after the first run"
                })
                .y_desc("ε")
                .draw()
                .map_err(err)?;
            // the date ticks: whole days (or hours, months), placed by hand
            for &t in &g.ticks {
                chart
                    .draw_series([EmptyElement::at((t, 0.0))
                        + PathElement::new(vec![(0, 0), (0, 5)], BLACK)
                        + Text::new(
                            labels(t * DAY),
                            (0, 8),
                            (FONT, 11).into_font().into_text_style(root).pos(
                                plotters::style::text_anchor::Pos::new(
                                    plotters::style::text_anchor::HPos::Center,
                                    plotters::style::text_anchor::VPos::Top,
                                ),
                            ),
                        )])
                    .map_err(err)?;
            }
            Ok(())
        },
    )?;
    let marks = plot.layer(|chart| {
        // the budget first: a curve that reaches it is drawn over it
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(g.x0, c.budget_epsilon), (g.x1, c.budget_epsilon)],
                BLACK.stroke_width(2),
            )))
            .map_err(err)?;
        for (i, line) in g.lines.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                .map_err(err)?;
        }
        for m in &g.markers {
            chart
                .draw_series([Circle::new((m.t, m.epsilon), 4, BLACK.filled())])
                .map_err(err)?;
        }
        Ok(())
    })?;
    let key = plot.layer(|chart| {
        for (i, m) in g.markers.iter().enumerate() {
            // markers close together take turns above and below
            let dy = if i % 2 == 0 { -18 } else { 6 };
            chart
                .draw_series([EmptyElement::at((m.t, m.epsilon))
                    + Text::new(m.label.clone(), (6, dy), (FONT, 12).into_font())])
                .map_err(err)?;
        }
        for cut in &g.cuts {
            chart
                .draw_series([EmptyElement::at((cut.t, g.top))
                    + Text::new(
                        format!("↑ {} reaches ε = {}", cut.name, num(cut.epsilon)),
                        (-4, 4),
                        (FONT, 11).into_font(),
                    )])
                .map_err(err)?;
        }
        let mut entries: Vec<(String, RGBColor)> = c
            .curves
            .iter()
            .enumerate()
            .map(|(i, cv)| (cv.name.clone(), COLOURS[i % COLOURS.len()]))
            .collect();
        entries.push((format!("budget ε = {}", num(c.budget_epsilon)), BLACK));
        legend(chart, &plot, &entries)
    })?;
    let mut desc = format!(
        "ε accrued by each date, budget ε = {}; the vertical axis runs to {}. ",
        num(c.budget_epsilon),
        num(g.top)
    );
    for cv in &c.curves {
        if let Some(p) = cv.points.last() {
            desc.push_str(&format!("{} ends at ε = {}. ", cv.name, num(p.epsilon)));
        }
    }
    for cut in &g.cuts {
        desc.push_str(&format!(
            "{} leaves the chart (it reaches ε = {}). ",
            cut.name,
            num(cut.epsilon)
        ));
    }
    for f in &c.fractions {
        desc.push_str(&format!(
            "{:.0} % of the budget: {}. ",
            f.fraction * 100.0,
            f.at.as_deref().unwrap_or("never reached")
        ));
    }
    Ok(accessible(
        &plot.assemble(&frame, &marks, &key),
        "Cumulative ε over the schedule's calendar",
        desc.trim_end(),
    ))
}

const DAY: f64 = 86_400.0;

/// What the cumulative figure draws, in days and ε: worked out apart from
/// the drawing, so that its rules are tested on their own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CumulativeGeometry {
    x0: f64,
    x1: f64,
    top: f64,
    /// Date ticks, in days from the first run.
    ticks: Vec<f64>,
    /// Each curve as a step line: 0 until its first release, then its ε,
    /// held to the right edge; cut where it leaves the top.
    lines: Vec<Vec<(f64, f64)>>,
    cuts: Vec<Cut>,
    markers: Vec<Marker>,
}

#[derive(Debug, Clone, PartialEq)]
struct Cut {
    name: String,
    t: f64,
    epsilon: f64,
}

#[derive(Debug, Clone, PartialEq)]
struct Marker {
    t: f64,
    epsilon: f64,
    label: String,
}

/// Curves up to this many times the budget (or the claim) are drawn whole;
/// a curve above is cut at the top and labelled with its value.
const HEADROOM: f64 = 3.0;

impl CumulativeGeometry {
    pub(crate) fn of(review: &Review) -> CumulativeGeometry {
        let c = &review.cumulative;
        let ts = c
            .curves
            .iter()
            .flat_map(|cv| cv.points.iter().map(|p| p.t / DAY));
        let first = ts.clone().fold(f64::INFINITY, f64::min);
        let last = ts
            .fold(f64::NEG_INFINITY, f64::max)
            .max(c.horizon_seconds / DAY);
        let (first, last) = if first.is_finite() {
            (first, last.max(first))
        } else {
            (0.0, 0.0)
        };
        // a one-off plan: half a day either side of its release
        let pad = if last > first {
            (last - first) * 0.04
        } else {
            0.5
        };
        let (x0, x1) = (first - pad, last + pad);
        let base = c.budget_epsilon.max(review.contract.total.epsilon);
        let highest = c
            .curves
            .iter()
            .flat_map(|cv| cv.points.iter().map(|p| p.epsilon))
            .filter(|e| e.is_finite())
            .fold(0.0, f64::max);
        let top = if highest <= HEADROOM * base {
            base.max(highest) * 1.15
        } else {
            HEADROOM * base
        };
        let top = if top > 0.0 { top } else { 1.0 };
        let mut cuts = Vec::new();
        let lines = c
            .curves
            .iter()
            .map(|cv| {
                let mut steps = vec![(x0, 0.0)];
                for (i, p) in cv.points.iter().enumerate() {
                    let t = p.t / DAY;
                    // a staircase between release times; between sampled
                    // dates, after the first, a segment
                    if c.steps || i == 0 {
                        let before = steps.last().map_or(0.0, |s| s.1);
                        steps.push((t, before));
                    }
                    steps.push((t, p.epsilon));
                }
                let end = steps.last().map_or(0.0, |s| s.1);
                steps.push((x1, end));
                let (line, cut) = cut_at(&steps, top);
                if let Some(t) = cut {
                    cuts.push(Cut {
                        name: cv.name.clone(),
                        t,
                        epsilon: cv.points.iter().map(|p| p.epsilon).fold(0.0, f64::max),
                    });
                }
                line
            })
            .collect();
        let mut markers: Vec<(f64, f64, Vec<f64>)> = Vec::new();
        for f in &c.fractions {
            if let (Some(t), Some(e)) = (f.offset_seconds, f.epsilon) {
                let t = t / DAY;
                match markers.last_mut() {
                    Some(m) if m.0 == t => m.2.push(f.fraction),
                    _ => markers.push((t, e.min(top), vec![f.fraction])),
                }
            }
        }
        let markers = markers
            .into_iter()
            .map(|(t, epsilon, fr)| Marker {
                t,
                epsilon,
                label: match fr.as_slice() {
                    [one] => format!("{:.0} %", one * 100.0),
                    [a, .., b] => format!("{:.0}–{:.0} %", a * 100.0, b * 100.0),
                    [] => String::new(),
                },
            })
            .collect();
        CumulativeGeometry {
            x0,
            x1,
            top,
            ticks: ticks(x0, x1),
            lines,
            cuts,
            markers,
        }
    }
}

/// A rising line up to where it first crosses `top`, cut there, and that
/// day.
fn cut_at(line: &[(f64, f64)], top: f64) -> (Vec<(f64, f64)>, Option<f64>) {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(line.len());
    for &(t, e) in line {
        if e > top {
            let t = match out.last() {
                // where the segment from the last point crosses the top
                Some(&(t0, e0)) if e > e0 => t0 + (t - t0) * (top - e0) / (e - e0),
                _ => t,
            };
            out.push((t, top));
            return (out, Some(t));
        }
        out.push((t, e));
    }
    (out, None)
}

/// Date ticks between `x0` and `x1` days: multiples of the smallest step
/// (an hour … a year) that gives at most six, counted from the first run.
fn ticks(x0: f64, x1: f64) -> Vec<f64> {
    const STEPS: [f64; 14] = [
        1.0 / 24.0,
        2.0 / 24.0,
        3.0 / 24.0,
        6.0 / 24.0,
        12.0 / 24.0,
        1.0,
        2.0,
        7.0,
        14.0,
        30.0,
        91.0,
        182.0,
        365.0,
        3650.0,
    ];
    let span = (x1 - x0).max(1e-9);
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 6.0)
        .unwrap_or_else(|| (span / 6.0).ceil());
    // nothing is released before the first run: no tick before it
    let first = (x0.max(0.0) / step).ceil() as i64;
    let last = (x1 / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// The room right of a plotting area that its legend takes.
const LEGEND_WIDTH: i32 = 250;

/// A legend right of the plotting area, at its top.
fn legend(
    chart: &mut Chart<'_, '_>,
    plot: &Plot,
    entries: &[(String, RGBColor)],
) -> Result<(), String> {
    let width = entries
        .iter()
        .map(|(s, _)| s.chars().count())
        .max()
        .unwrap_or(0) as i32
        * 7
        + 34;
    let width = width.min(LEGEND_WIDTH - 8);
    let height = entries.len() as i32 * 18 + 8;
    let corner = (plot.x.end, plot.y.end);
    chart
        .draw_series([EmptyElement::at(corner)
            + Rectangle::new([(6, 6), (6 + width, 6 + height)], WHITE.mix(0.9).filled())
            + Rectangle::new([(6, 6), (6 + width, 6 + height)], BLACK)])
        .map_err(err)?;
    for (i, (name, colour)) in entries.iter().enumerate() {
        let y = 6 + 13 + 18 * i as i32;
        chart
            .draw_series([EmptyElement::at(corner)
                + PathElement::new(vec![(12, y), (30, y)], colour.stroke_width(2))
                + Text::new(name.clone(), (36, y - 6), (FONT, 12).into_font())])
            .map_err(err)?;
    }
    Ok(())
}

fn review_labels(review: &Review) -> impl Fn(f64) -> String + '_ {
    move |t: f64| super::timeline::label(review.calendar.first_run_unix, t)
}

/// Figure 2: the std of the average of r fresh releases against their ε.
pub fn averaging(a: &Averaging) -> Result<String, String> {
    let xmax = a.points.iter().map(|p| p.epsilon).fold(0.0, f64::max) * 1.05;
    let ymax = a.points.iter().map(|p| p.std_of_mean).fold(0.0, f64::max) * 1.05;
    let size = (W, H * 3 / 4);
    let (x, y) = (0f64..xmax.max(1e-9), 0f64..ymax.max(1e-9));
    let (frame, plot) = Plot::frame(
        &Frame {
            size,
            caption: &format!("Averaging `{}`", a.query),
            caption_size: 16,
            label_areas: (40, 64),
            legend: false,
        },
        x,
        y,
        |chart, _root| {
            chart
                .configure_mesh()
                .x_desc("ε of r releases alone")
                .y_desc("std of the average")
                .draw()
                .map_err(err)?;
            Ok(())
        },
    )?;
    let pts: Vec<(f64, f64)> = a
        .points
        .iter()
        .map(|p| (p.epsilon, p.std_of_mean))
        .collect();
    let marks = plot.layer(|chart| {
        chart
            .draw_series(LineSeries::new(pts.clone(), COLOURS[0].stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, COLOURS[0].filled())))
            .map_err(err)?;
        Ok(())
    })?;
    let key = plot.layer(|chart| {
        chart
            .draw_series(a.points.iter().map(|p| {
                EmptyElement::at((p.epsilon, p.std_of_mean))
                    + Text::new(format!("r={}", p.r), (5, -12), (FONT, 11).into_font())
            }))
            .map_err(err)?;
        Ok(())
    })?;
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
        &plot.assemble(&frame, &marks, &key),
        &format!("Averaging r fresh releases of {}", a.query),
        &desc,
    ))
}

/// Figure 3: each query's share of the plan's ρ.
pub fn shares(review: &Review) -> Result<String, String> {
    let n = review.queries.len().max(1);
    let size = (W, 60 + 36 * n as u32);
    let (x, y) = (0f64..100f64, 0f64..n as f64);
    let (frame, plot) = Plot::frame(
        &Frame {
            size,
            caption: "Each query's share of the budget (of the plan's ρ)",
            caption_size: 16,
            label_areas: (30, 10),
            legend: false,
        },
        x,
        y,
        |chart, _root| {
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_desc("%")
                .draw()
                .map_err(err)?;
            Ok(())
        },
    )?;
    let marks = plot.layer(|chart| {
        for (i, q) in review.queries.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let s = (100.0 * q.share).clamp(0.0, 100.0);
            chart
                .draw_series([Rectangle::new(
                    [(0.0, y + 0.15), (s, y + 0.85)],
                    COLOURS[i % COLOURS.len()].filled(),
                )])
                .map_err(err)?;
        }
        Ok(())
    })?;
    let key = plot.layer(|chart| {
        for (i, q) in review.queries.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let s = 100.0 * q.share;
            chart
                .draw_series([Text::new(
                    format!("{} {}", q.name, super::percent(q.share)),
                    ((s + 1.0).clamp(1.0, 70.0), y + 0.75),
                    (FONT, 12).into_font(),
                )])
                .map_err(err)?;
        }
        Ok(())
    })?;
    let desc = review
        .queries
        .iter()
        .map(|q| format!("{}: {}", q.name, super::percent(q.share)))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(accessible(
        &plot.assemble(&frame, &marks, &key),
        "Each query's share of the plan's ρ",
        &desc,
    ))
}

/// Figure 4: the trade-off curve — the largest true-positive rate of any
/// membership test against the plan at each false-positive rate (upper
/// bounds), beside the diagonal of a test that learns nothing.
pub fn tradeoff(t: &TradeOff) -> Result<String, String> {
    let (x, y) = (0f64..1f64, 0f64..1f64);
    let (frame, plot) = Plot::frame(
        &Frame {
            size: (W, H),
            caption: "An attacker's best membership test",
            caption_size: 18,
            label_areas: (40, 56),
            legend: true,
        },
        x,
        y,
        |chart, _root| {
            chart
                .configure_mesh()
                .x_desc("false-positive rate")
                .y_desc("true-positive rate (at most)")
                .draw()
                .map_err(err)?;
            Ok(())
        },
    )?;
    let pts: Vec<(f64, f64)> = t
        .points
        .iter()
        .map(|p| (p.fpr.clamp(0.0, 1.0), p.tpr.clamp(0.0, 1.0)))
        .collect();
    let marks = plot.layer(|chart| {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), (1.0, 1.0)],
                RGBColor(150, 150, 150).stroke_width(1),
            )))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(pts.clone(), COLOURS[0].stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 2, COLOURS[0].filled())))
            .map_err(err)?;
        Ok(())
    })?;
    let key = plot.layer(|chart| {
        legend(
            chart,
            &plot,
            &[
                ("this plan (an upper bound)".to_string(), COLOURS[0]),
                (
                    "a test that learns nothing".to_string(),
                    RGBColor(150, 150, 150),
                ),
            ],
        )
    })?;
    let at = |fpr: f64| {
        t.points
            .iter()
            .find(|p| p.fpr == fpr)
            .map_or("—".to_string(), |p| dpplan_diagnostics::percent_up(p.tpr))
    };
    let desc = format!(
        "The largest true-positive rate of any membership test against the plan, at each false-positive rate (from the {} curve): at most {} at a 1 % false-positive rate, {} at 0.1 %; a test that learns nothing lies on the diagonal.",
        curve_name(&t.curve),
        at(0.01),
        at(0.001)
    );
    Ok(accessible(
        &plot.assemble(&frame, &marks, &key),
        "An attacker's best membership test: the plan's trade-off curve",
        &desc,
    ))
}

/// The name of the curve a trade-off is read from, in words.
pub fn curve_name(curve: &str) -> &str {
    match curve {
        "gdp" => "exact μ-GDP",
        "pld" => "privacy-loss distribution's",
        "fast" => "fast accountants'",
        other => other,
    }
}
