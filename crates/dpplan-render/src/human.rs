use codespan_reporting::diagnostic::{
    Diagnostic as CsDiagnostic, Label as CsLabel, LabelStyle, Severity as CsSeverity,
};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor, Config, Styles, StylesWriter};
use dpplan_check::CheckedPlan;
use dpplan_diagnostics::{Diagnostic, Severity};

use crate::{num, FileResult};

fn to_codespan(d: &Diagnostic, text_len: usize) -> CsDiagnostic<()> {
    let clamp = |s: dpplan_diagnostics::Span| {
        s.start.min(text_len)..s.end.min(text_len).max(s.start.min(text_len))
    };
    let severity = match d.severity {
        Severity::Error => CsSeverity::Error,
        Severity::Warning => CsSeverity::Warning,
        Severity::Hint => CsSeverity::Help,
    };
    let mut labels = vec![CsLabel::new(LabelStyle::Primary, (), clamp(d.primary.span))
        .with_message(&d.primary.message)];
    labels.extend(
        d.secondary.iter().map(|l| {
            CsLabel::new(LabelStyle::Secondary, (), clamp(l.span)).with_message(&l.message)
        }),
    );
    let mut notes: Vec<String> = d.notes.clone();
    if let Some(h) = &d.help {
        notes.push(format!("help: {h}"));
    }
    CsDiagnostic::new(severity)
        .with_code(d.code.as_str())
        .with_message(&d.message)
        .with_labels(labels)
        .with_notes(notes)
}

/// Renders one file's diagnostics rustc-style, then its summary table.
pub fn human(file: &FileResult, color: bool) -> String {
    let files = SimpleFile::new(file.path, file.text);
    let config = Config::default();
    let mut out = String::new();
    if color {
        let mut buffer = termcolor::Buffer::ansi();
        let styles = Styles::default();
        for d in &file.analysis.diagnostics {
            let cs = to_codespan(d, file.text.len());
            let mut writer = StylesWriter::new(&mut buffer, &styles);
            // Rendering into memory cannot fail for an in-range span; a
            // failure falls back to the plain message.
            if term::emit_to_write_style(&mut writer, &config, &files, &cs).is_err() {
                out.push_str(&format!(
                    "{}[{}]: {}\n",
                    d.severity.as_str(),
                    d.code,
                    d.message
                ));
            }
        }
        out.push_str(&String::from_utf8_lossy(buffer.as_slice()));
    } else {
        for d in &file.analysis.diagnostics {
            let cs = to_codespan(d, file.text.len());
            match term::emit_into_string(&config, &files, &cs) {
                Ok(s) => out.push_str(&s),
                Err(_) => out.push_str(&format!(
                    "{}[{}]: {}\n",
                    d.severity.as_str(),
                    d.code,
                    d.message
                )),
            }
        }
    }
    if let Some(report) = &file.analysis.report {
        out.push_str(&summary_table(file.path, report));
    }
    out
}

fn pad(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(n)))
}

fn pad_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{}{s}", " ".repeat(width.saturating_sub(n)))
}

fn mechanism_text(m: &dpplan_check::MechanismReport) -> String {
    let param = match (m.scale, m.sigma) {
        (Some(b), _) if b.is_finite() => format!(" b={}", num(b)),
        (_, Some(s)) if s.is_finite() => format!(" σ={}", num(s)),
        _ => String::new(),
    };
    let cal = match m.calibration {
        dpplan_check::Calibration::Auto => " (auto)",
        dpplan_check::Calibration::FromEpsilon => " (from ε)",
        dpplan_check::Calibration::Declared | dpplan_check::Calibration::None => "",
    };
    format!("{}{param}{cal}", m.kind_name())
}

fn cost_text(c: &Option<dpplan_check::CostReport>) -> String {
    match c {
        Some(c) if c.delta > 0.0 => format!("ε={} δ={}", num(c.epsilon), num(c.delta)),
        Some(c) => format!("ε={}", num(c.epsilon)),
        None => "—".into(),
    }
}

/// The per-plan summary: unit, adjacency, bounds, every query's cost and the
/// composed total with the accountant that produced it.
pub fn summary_table(path: &str, r: &CheckedPlan) -> String {
    let mut out = String::new();
    let name = r.name.as_deref().unwrap_or("(unnamed)");
    out.push_str(&format!("\nplan \"{name}\" ({path})\n"));
    out.push_str(&format!(
        "  unit: {} — {}\n",
        r.unit.kind, r.unit.description
    ));
    out.push_str(&format!("  adjacency: {}\n", r.adjacency));
    let header = [
        "query",
        "releases",
        "mechanism",
        "L1",
        "L2",
        "per release",
        "total (alone)",
    ];
    let mut rows: Vec<[String; 7]> = Vec::new();
    for q in &r.queries {
        let mech = q
            .parts
            .iter()
            .map(|p| mechanism_text(&p.mechanism))
            .collect::<Vec<_>>()
            .join(" + ");
        let l1 = q
            .parts
            .iter()
            .map(|p| num(p.l1))
            .collect::<Vec<_>>()
            .join(" + ");
        let l2 = q
            .parts
            .iter()
            .map(|p| num(p.l2))
            .collect::<Vec<_>>()
            .join(" + ");
        rows.push([
            q.name.clone(),
            q.releases.to_string(),
            if mech.is_empty() { "—".into() } else { mech },
            if l1.is_empty() { "—".into() } else { l1 },
            if l2.is_empty() { "—".into() } else { l2 },
            cost_text(&q.per_release),
            cost_text(&q.total),
        ]);
    }
    for p in &r.publishes {
        rows.push([
            p.name.clone(),
            "0".into(),
            format!("re-publishes {}", p.source),
            "—".into(),
            "—".into(),
            "ε=0".into(),
            "ε=0".into(),
        ]);
    }
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("  ");
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == 1 || i == 3 || i == 4 {
                s.push_str(&pad_left(cell, widths[i]));
            } else {
                s.push_str(&pad(cell, widths[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(&line(&header.map(String::from)));
        out.push_str(&format!(
            "  {}\n",
            "─".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
        ));
        for row in &rows {
            out.push_str(&line(row));
        }
    }
    out.push('\n');
    let budget = if r.budget.delta > 0.0 {
        format!("ε = {}, δ = {}", num(r.budget.epsilon), num(r.budget.delta))
    } else {
        format!("ε = {} (pure)", num(r.budget.epsilon))
    };
    match &r.total {
        Some(t) => {
            let verdict = match r.within_budget {
                Some(true) => "within budget",
                Some(false) => "OVER BUDGET",
                None => "",
            };
            let delta = if t.delta > 0.0 {
                format!(", δ = {}", num(t.delta))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "  total: ε = {}{delta} over {} releases  [{}]  budget {budget}: {verdict}\n",
                num(t.epsilon),
                r.releases,
                t.accountant_name
            ));
            out.push_str(&format!(
                "  accountant: {} ({}), requested `{}`\n",
                t.accountant_name, t.detail, r.accountant_requested
            ));
        }
        None => {
            out.push_str(&format!(
                "  total: not established — {}  budget {budget}\n",
                r.total_missing.as_deref().unwrap_or("no releases")
            ));
        }
    }
    if r.total.as_ref().is_some_and(|t| t.delta > 0.0) {
        out.push_str(
            "  δ is the slack of the (ε, δ) guarantee: for every outcome set S, P[M(D) ∈ S] ≤ e^ε·P[M(D′) ∈ S] + δ; it is not the probability that everything leaks.\n",
        );
    }
    out
}
