//! Inline suppressions: `// dpplan: allow DP009 reason "…"`.
//!
//! A comment of that form, alone on its line, applies to the next line that
//! holds anything but whitespace and comments; at the end of a line of
//! code, it applies to that line. A diagnostic whose primary span starts on
//! that line and whose code the comment names is moved from the
//! diagnostics to [`Analysis::suppressed`](crate::Analysis::suppressed),
//! with the reason; it no longer counts (exit code, SARIF `suppressions`,
//! JSON `suppressed`). A reason is required.
//!
//! Errors of the checker (DP000–DP019 at their default severity) cannot be
//! suppressed: each means no sound guarantee can be claimed. Naming one is
//! reported (DP020) and the error stays. The policy's own errors (DP1xx) are
//! organisational: they can be suppressed with a reason only where the
//! policy allows it (`[suppressions] allow`; dpplan-policy refuses the
//! others, DP020 as an error).

use dpplan_diagnostics::{Code, Diagnostic, Severity, Span};
use dpplan_syntax::lexer::{lex, TokenKind};
use serde::Serialize;

/// One `dpplan: allow` comment, parsed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Allow {
    /// The codes it suppresses (those it may).
    pub codes: Vec<Code>,
    pub reason: String,
    /// The comment.
    pub comment: Span,
    /// The bytes of the line it applies to (line break excluded).
    pub line: Span,
    /// Whether it suppressed a diagnostic.
    pub used: bool,
}

/// A diagnostic an `allow` suppressed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suppressed {
    pub diagnostic: Diagnostic,
    pub reason: String,
    /// The comment that suppressed it.
    pub comment: Span,
}

/// Whether a diagnostic may be suppressed: not an error of the checker.
pub fn suppressible(d: &Diagnostic) -> bool {
    !(d.code.is_checker_error() && d.severity == Severity::Error)
}

/// The `allow` comments of a text, and a DP020 for each malformed one (or
/// one that names an error of the checker).
pub fn parse(text: &str) -> (Vec<Allow>, Vec<Diagnostic>) {
    let mut allows = Vec::new();
    let mut problems = Vec::new();
    // Every directive contains `dpplan:`; a text without it has none, and
    // is not lexed a second time (a 9 MB plan: 30 ms saved).
    if !text.contains("dpplan:") {
        return (allows, problems);
    }
    for t in lex(text) {
        if t.kind != TokenKind::LineComment {
            continue;
        }
        let body = t.text(text)[2..].trim_start();
        let Some(rest) = body.strip_prefix("dpplan:") else {
            continue;
        };
        // the directive ends where another `//` comment starts
        let rest = rest.split("//").next().unwrap_or_default();
        let comment = Span::new(t.start, t.end);
        match parse_allow(rest.trim()) {
            Err(message) => problems.push(
                Diagnostic::new(Code::Suppression, message, comment)
                    .label("not applied")
                    .help("write `// dpplan: allow DP009 reason \"why this is fine\"`"),
            ),
            Ok((codes, reason)) => {
                let mut kept = Vec::new();
                for c in codes {
                    let probe = Diagnostic::new(c, "", comment);
                    if suppressible(&probe) {
                        kept.push(c);
                    } else {
                        problems.push(
                            Diagnostic::new(
                                Code::Suppression,
                                format!(
                                    "{} ({}) cannot be suppressed: an error of the checker means the plan's guarantee cannot be claimed soundly",
                                    c.as_str(),
                                    c.name()
                                ),
                                comment,
                            )
                            .label("not suppressible")
                            .help("fix the error; `dpplan rule` explains it"),
                        );
                    }
                }
                if !kept.is_empty() {
                    allows.push(Allow {
                        codes: kept,
                        reason,
                        comment,
                        line: target_line(text, t.start),
                        used: false,
                    });
                }
            }
        }
    }
    (allows, problems)
}

/// `allow CODE[, CODE…] reason "…"` → the codes and the reason.
fn parse_allow(s: &str) -> Result<(Vec<Code>, String), String> {
    let rest = s
        .strip_prefix("allow")
        .filter(|r| r.starts_with(char::is_whitespace))
        .ok_or_else(|| {
            format!(
                "`dpplan: {s}` is not a suppression: expected `dpplan: allow CODE reason \"…\"`"
            )
        })?;
    let (codes_part, reason_part) = match rest.find("reason") {
        Some(i) => (&rest[..i], Some(rest[i + "reason".len()..].trim())),
        None => (rest, None),
    };
    let mut codes = Vec::new();
    for word in codes_part.split([',', ' ', '\t']).filter(|w| !w.is_empty()) {
        let code = Code::parse(word)
            .ok_or_else(|| format!("`{word}` is not a dpplan diagnostic code or name"))?;
        codes.push(code);
    }
    if codes.is_empty() {
        return Err("the suppression names no code".into());
    }
    let reason = reason_part
        .and_then(|r| r.strip_prefix('"'))
        .and_then(|r| r.rfind('"').map(|end| r[..end].trim().to_string()))
        .filter(|r| !r.is_empty())
        .ok_or_else(|| "a suppression needs a reason: `reason \"…\"`".to_string())?;
    Ok((codes, reason))
}

/// The line a comment at `start..end` applies to: its own line when code
/// precedes it there, else the next line with anything but whitespace and
/// comments (the comment's own line when there is none).
fn target_line(text: &str, start: usize) -> Span {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let own = Span::new(line_start, line_end(text, start));
    if !text[line_start..start].trim().is_empty() {
        return own;
    }
    let mut next = own.end + 1;
    while next <= text.len() {
        let e = line_end(text, next);
        let content = text[next..e].trim();
        if !content.is_empty() && !content.starts_with("//") {
            return Span::new(next, e);
        }
        if e >= text.len() {
            break;
        }
        next = e + 1;
    }
    own
}

fn line_end(text: &str, from: usize) -> usize {
    let from = from.min(text.len());
    text[from..].find('\n').map_or(text.len(), |i| from + i)
}

/// Moves every diagnostic an allow covers into `suppressed`, and reports
/// (DP020) each allow that suppresses nothing. Idempotent: run again after
/// diagnostics were added (the policy's), it re-derives the unused ones.
pub fn apply(
    allows: &mut [Allow],
    diagnostics: &mut Vec<Diagnostic>,
    suppressed: &mut Vec<Suppressed>,
) {
    // the unused-allow warnings of an earlier pass are derived again
    diagnostics.retain(|d| {
        !(d.code == Code::Suppression
            && allows
                .iter()
                .any(|a| a.comment == d.primary.span && d.message.contains("suppresses nothing")))
    });
    let mut kept = Vec::with_capacity(diagnostics.len());
    for d in diagnostics.drain(..) {
        let start = d.primary.span.start;
        let cover = allows
            .iter_mut()
            .find(|a| a.codes.contains(&d.code) && a.line.start <= start && start <= a.line.end);
        match cover {
            Some(a) if suppressible(&d) => {
                a.used = true;
                suppressed.push(Suppressed {
                    diagnostic: d,
                    reason: a.reason.clone(),
                    comment: a.comment,
                });
            }
            _ => kept.push(d),
        }
    }
    *diagnostics = kept;
    for a in allows.iter().filter(|a| !a.used) {
        let names: Vec<&str> = a.codes.iter().map(|c| c.as_str()).collect();
        diagnostics.push(
            Diagnostic::new(
                Code::Suppression,
                format!(
                    "this `allow {}` suppresses nothing: no such diagnostic starts on the line it applies to",
                    names.join(", ")
                ),
                a.comment,
            )
            .label("unused")
            .help("remove it, or move it to the line before the one the diagnostic points at"),
        );
    }
    dpplan_diagnostics::sort(diagnostics);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_codes_names_and_reasons() {
        let (codes, reason) = parse_allow("allow DP009, large-delta reason \"reviewed\"").unwrap();
        assert_eq!(codes, vec![Code::FreshRerelease, Code::LargeDelta]);
        assert_eq!(reason, "reviewed");
        assert!(parse_allow("allow DP009")
            .unwrap_err()
            .contains("needs a reason"));
        assert!(parse_allow("allow DP009 reason \"\"").is_err());
        assert!(parse_allow("allow reason \"x\"")
            .unwrap_err()
            .contains("names no code"));
        assert!(parse_allow("allow DP999 reason \"x\"")
            .unwrap_err()
            .contains("`DP999`"));
        assert!(parse_allow("deny DP009").is_err());
    }

    #[test]
    fn a_comment_alone_applies_to_the_next_line_with_code() {
        let text = "a\n  // dpplan: allow DP009 reason \"r\"\n\n  // other\n  query x\nb";
        let (allows, problems) = parse(text);
        assert!(problems.is_empty());
        assert_eq!(&text[allows[0].line.start..allows[0].line.end], "  query x");
        let text = "query x   // dpplan: allow DP009 reason \"r\"\nnext";
        let (allows, _) = parse(text);
        assert_eq!(
            &text[allows[0].line.start..allows[0].line.end],
            "query x   // dpplan: allow DP009 reason \"r\""
        );
    }

    #[test]
    fn checker_errors_are_not_suppressible() {
        let (allows, problems) = parse("x // dpplan: allow DP001, DP009 reason \"r\"\n");
        assert_eq!(allows[0].codes, vec![Code::FreshRerelease]);
        assert_eq!(problems.len(), 1);
        assert!(problems[0]
            .message
            .contains("DP001 (unbounded-contribution) cannot be suppressed"));
    }
}
