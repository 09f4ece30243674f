//! The plan's query table, as the terminal and the GitHub job summary show
//! it: one row per query, and one more per further part of a query with
//! several (a mean's sum and count, a quantile's levels), each labelled by
//! its role.
//!
//! In a terminal of a given width the table first leaves out the columns a
//! reader needs least (L2, L1, then the noise's standard deviation, which
//! the 95 % half-width restates), saying so under it; when even that does
//! not fit, every query becomes a block of short lines, which
//! [`crate::fit`] wraps.
//!
//! Numbers go through [`Numbers`]: six significant digits, privacy-loss
//! figures (ε, δ) and sensitivities rounded up, never down; a value that
//! is a short decimal but for floating-point rounding (within 10⁻¹²
//! relative: `7.500000000000001`) is shown as that decimal, and the
//! summary says so once; `--all-digits` prints every digit.

use std::cell::Cell;

use dpplan_check::{CheckedPlan, PartReport, QueryReport};
use textwrap::core::display_width;

/// How numbers are printed, and whether one was shown as the short decimal
/// it is within rounding of (the summary then says so).
#[derive(Debug, Default)]
pub struct Numbers {
    /// Every digit of each number (Rust's shortest round-trip form).
    pub all_digits: bool,
    /// Set when a number was printed as a nearby short decimal.
    pub snapped: Cell<bool>,
}

/// What the summary says once when [`Numbers::snapped`] is set.
pub const ROUNDING_NOTE: &str = "numbers: 6 significant digits, ε, δ and sensitivities rounded up; a value within 10⁻¹² (relative) of a shorter decimal, by floating-point rounding, is shown as that decimal (`--all-digits` prints every digit)";

impl Numbers {
    /// A number as the summary prints it.
    pub fn num(&self, x: f64) -> String {
        if self.all_digits {
            return format!("{x}");
        }
        if dpplan_diagnostics::short_decimal(x).is_some_and(|d| d != x) {
            self.snapped.set(true);
        }
        dpplan_diagnostics::num(x)
    }

    fn finite(&self, x: f64) -> String {
        if x.is_finite() {
            self.num(x)
        } else {
            "—".into()
        }
    }

    fn mechanism(&self, m: &dpplan_check::MechanismReport) -> String {
        let param = match (m.scale, m.sigma) {
            (Some(b), _) if b.is_finite() => format!(" b={}", self.num(b)),
            (_, Some(s)) if s.is_finite() => format!(" σ={}", self.num(s)),
            _ => String::new(),
        };
        let cal = match m.calibration {
            dpplan_check::Calibration::Auto => " (auto)",
            dpplan_check::Calibration::FromEpsilon => " (from ε)",
            dpplan_check::Calibration::Accuracy => " (accuracy)",
            dpplan_check::Calibration::Declared | dpplan_check::Calibration::None => "",
        };
        format!("{}{param}{cal}", m.kind_name())
    }

    fn accuracy(&self, a: Option<&dpplan_check::AccuracyReport>) -> String {
        match a {
            None => "—".into(),
            Some(a) => format!(
                "{} ≤ {}{}",
                a.measure,
                self.num(a.at_most),
                match a.met {
                    Some(true) => ": met",
                    Some(false) => ": MISSED",
                    None => "",
                }
            ),
        }
    }

    /// `ε=… δ=…` of a cost.
    pub fn cost(&self, c: &Option<dpplan_check::CostReport>) -> String {
        self.cost_with(c, None)
    }

    /// A cost; its ε alone when its δ is `common`, said once for the table.
    fn cost_with(&self, c: &Option<dpplan_check::CostReport>, common: Option<f64>) -> String {
        match c {
            Some(c) if common == Some(c.delta) => self.num(c.epsilon),
            Some(c) if c.delta > 0.0 => {
                format!("ε={} δ={}", self.num(c.epsilon), self.num(c.delta))
            }
            Some(c) => format!("ε={}", self.num(c.epsilon)),
            None => "—".into(),
        }
    }

    /// A query's cost per accounted release; a windowed query's or a
    /// cumulative count's schedule is one release, and says so.
    fn per_release(&self, q: &QueryReport, common: Option<f64>) -> String {
        let cost = self.cost_with(&q.per_release, common);
        match (&q.per_release, q.one_release()) {
            (Some(_), Some(dpplan_check::OneRelease::Windows)) => format!("{cost} (all windows)"),
            (Some(_), Some(dpplan_check::OneRelease::Tree)) => format!("{cost} (whole tree)"),
            (Some(_), Some(dpplan_check::OneRelease::Factorization)) => {
                format!("{cost} (all totals)")
            }
            _ => cost,
        }
    }

    /// A part's mechanism, with its role when the query has several parts.
    fn part_mechanism(&self, q: &QueryReport, p: &PartReport) -> String {
        if q.parts.len() > 1 {
            format!("{}: {}", p.role, self.mechanism(&p.mechanism))
        } else {
            self.mechanism(&p.mechanism)
        }
    }
}

/// The columns, in order; the right-aligned ones are numbers.
const HEADER: [&str; 9] = [
    "query",
    "releases",
    "mechanism",
    "L1",
    "L2",
    "noise std",
    "95% ±",
    "per release",
    "total (alone)",
];
const RIGHT: [bool; 10] = [
    false, true, false, true, true, true, true, false, false, false,
];
/// The columns left out first when the table is too wide, in order.
const DROPPED_FIRST: [usize; 3] = [4, 3, 5];

/// The table's header and rows (a query's first part on its row, each
/// further part on a row of its own under it, then one row per `publish`).
/// The accuracy column only when a query states a requirement.
pub fn summary_rows(r: &CheckedPlan) -> (Vec<String>, Vec<Vec<String>>) {
    rows_with(r, &Numbers::default(), None)
}

/// The δ of every query's cost, per release and alone, when it is one
/// (then the table says it once); `None` when they differ or are 0.
fn common_delta(r: &CheckedPlan) -> Option<f64> {
    let mut deltas = r
        .queries
        .iter()
        .flat_map(|q| [&q.per_release, &q.total])
        .map(|c| c.as_ref().map(|c| c.delta));
    let first = deltas.next()??;
    (first > 0.0 && deltas.all(|d| d == Some(first))).then_some(first)
}

fn rows_with(r: &CheckedPlan, n: &Numbers, common: Option<f64>) -> (Vec<String>, Vec<Vec<String>>) {
    let with_accuracy = r.queries.iter().any(|q| q.accuracy.is_some());
    let mut header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    if common.is_some() {
        header[7] = "ε per release".into();
        header[8] = "ε alone".into();
    }
    if with_accuracy {
        header.push("accuracy".into());
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for q in &r.queries {
        let part_cells = |p: &PartReport| {
            vec![
                n.part_mechanism(q, p),
                n.num(p.l1),
                n.num(p.l2),
                n.finite(p.noise_std),
                n.finite(p.ci95_half_width),
            ]
        };
        let mut parts = q.parts.iter();
        let first = parts
            .next()
            .map_or_else(|| vec!["—".to_string(); 5], part_cells);
        let mut row = vec![q.name.clone(), q.releases.to_string()];
        row.extend(first);
        row.push(n.per_release(q, common));
        row.push(n.cost_with(&q.total, common));
        if with_accuracy {
            row.push(n.accuracy(q.accuracy.as_deref()));
        }
        rows.push(row);
        for p in parts {
            let mut row = vec![String::new(), String::new()];
            row.extend(part_cells(p));
            row.resize(header.len(), String::new());
            rows.push(row);
        }
    }
    let zero = if common.is_some() { "0" } else { "ε=0" }.to_string();
    for p in &r.publishes {
        let mut row = vec![
            p.name.clone(),
            "0".into(),
            format!("re-publishes {}", p.source),
            "—".into(),
            "—".into(),
            "—".into(),
            "—".into(),
            zero.clone(),
            zero.clone(),
        ];
        if with_accuracy {
            row.push(String::new());
        }
        rows.push(row);
    }
    (header, rows)
}

/// The table as the terminal shows it, at most `width` columns wide
/// (`0`: as wide as it is), opening with a blank line; empty without rows.
pub(crate) fn table_text(r: &CheckedPlan, width: usize, n: &Numbers) -> String {
    let common = common_delta(r);
    let (header, rows) = rows_with(r, n, common);
    if rows.is_empty() {
        return String::new();
    }
    let mut widths: Vec<usize> = header.iter().map(|h| display_width(h)).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(display_width(cell));
        }
    }
    let mut shown: Vec<bool> = vec![true; header.len()];
    let total = |shown: &[bool]| {
        let cols: Vec<usize> = (0..widths.len()).filter(|&i| shown[i]).collect();
        2 + cols.iter().map(|&i| widths[i]).sum::<usize>() + 2 * cols.len().saturating_sub(1)
    };
    let mut dropped: Vec<&str> = Vec::new();
    for &i in &DROPPED_FIRST {
        if width == 0 || total(&shown) <= width {
            break;
        }
        shown[i] = false;
        dropped.push(HEADER[i]);
    }
    if width != 0 && total(&shown) > width {
        return blocks(r, n);
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("  ");
        let mut first = true;
        for (i, cell) in cells.iter().enumerate().filter(|(i, _)| shown[*i]) {
            if !first {
                s.push_str("  ");
            }
            first = false;
            let pad = " ".repeat(widths[i].saturating_sub(display_width(cell)));
            if RIGHT[i] {
                s.push_str(&pad);
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&pad);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = String::from("\n");
    out.push_str(&line(&header));
    out.push_str(&format!("  {}\n", "─".repeat(total(&shown) - 2)));
    for row in &rows {
        out.push_str(&line(row));
    }
    if let Some(d) = common {
        out.push_str(&format!(
            "  (every query's δ is {}, per release and alone)\n",
            n.num(d)
        ));
    }
    let post: Vec<String> = r
        .queries
        .iter()
        .filter_map(|q| Some(format!("{} {}", q.name, postprocess_of(q)?)))
        .collect();
    if !post.is_empty() {
        out.push_str(&format!("  (post-processed, free: {})\n", post.join("; ")));
    }
    if let Some(line) = sampled_line(r, n) {
        out.push_str(&line);
    }
    if !dropped.is_empty() {
        dropped.reverse();
        out.push_str(&format!(
            "  ({} left out to fit {width} columns: `--width 0` or the JSON show them)\n",
            dropped.join(", ")
        ));
    }
    out
}

/// A query's `postprocess` steps in words (`nonnegative, round`), if any.
fn postprocess_of(q: &QueryReport) -> Option<String> {
    let steps = q.postprocess();
    (!steps.is_empty()).then(|| {
        steps
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Every query as a block of short lines, for a terminal too narrow for
/// the table.
fn blocks(r: &CheckedPlan, n: &Numbers) -> String {
    let common = common_delta(r);
    let mut out = String::new();
    for q in &r.queries {
        out.push_str(&format!(
            "\n  {} — {} release{}\n",
            q.name,
            q.releases,
            if q.releases == 1 { "" } else { "s" }
        ));
        for p in &q.parts {
            let role = if q.parts.len() > 1 {
                format!(" for {}", p.role)
            } else {
                String::new()
            };
            // a selection has no additive noise: its figures are a score
            // error (a quantile's in ranks, a top-k's in counts)
            let spread = match p.statistic {
                dpplan_check::Statistic::Quantile => "rank error rms",
                dpplan_check::Statistic::TopK => "count error rms",
                _ => "noise std",
            };
            out.push_str(&format!(
                "    {}{role}: L1 {}, L2 {}, {spread} {}, 95% ± {}\n",
                n.mechanism(&p.mechanism),
                n.num(p.l1),
                n.num(p.l2),
                n.finite(p.noise_std),
                n.finite(p.ci95_half_width),
            ));
        }
        let eps = |s: String| {
            if common.is_some() {
                format!("ε={s}")
            } else {
                s
            }
        };
        out.push_str(&format!(
            "    per release {}; alone {}\n",
            eps(n.per_release(q, common)),
            eps(n.cost_with(&q.total, common))
        ));
        if q.accuracy.is_some() {
            out.push_str(&format!(
                "    accuracy {}\n",
                n.accuracy(q.accuracy.as_deref())
            ));
        }
        if let Some(steps) = postprocess_of(q) {
            out.push_str(&format!(
                "    post-processed: {steps} (free: reads only the released values)\n"
            ));
        }
        if let Some(q) = q.sampled() {
            out.push_str(&format!(
                "    each release on a fresh Poisson sample of {} % of the units: ε amplified\n",
                n.num(q * 100.0)
            ));
        }
    }
    for p in &r.publishes {
        out.push_str(&format!(
            "\n  {} — re-publishes {}: ε=0 (post-processing)\n",
            p.name, p.source
        ));
    }
    if let Some(d) = common {
        out.push_str(&format!(
            "\n  (every query's δ is {}, per release and alone)\n",
            n.num(d)
        ));
    }
    out
}

/// The queries on sampled datasets, by rate: their ε per release is the
/// amplified one (`sample units`).
fn sampled_line(r: &CheckedPlan, n: &Numbers) -> Option<String> {
    let mut by_rate: Vec<(f64, Vec<&str>)> = Vec::new();
    for q in &r.queries {
        let Some(rate) = q.sampled() else { continue };
        match by_rate.iter_mut().find(|(x, _)| *x == rate) {
            Some((_, names)) => names.push(&q.name),
            None => by_rate.push((rate, vec![&q.name])),
        }
    }
    if by_rate.is_empty() {
        return None;
    }
    let parts: Vec<String> = by_rate
        .iter()
        .map(|(rate, names)| format!("{} on {} %", names.join(", "), n.num(rate * 100.0)))
        .collect();
    Some(format!(
        "  (on a fresh Poisson sample of the units each release, ε amplified: {})\n",
        parts.join("; ")
    ))
}
