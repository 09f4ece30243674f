//! Fitting the human format to a terminal's width: every line longer than
//! the width is wrapped at spaces (a word longer than the width, such as a
//! long path, is broken), and its continuation lines hang under the text
//! they continue: a diagnostic's message under its first word, a label's
//! under the label, a `= help:` note under the note, a source line under
//! the gutter. The summary table is fitted before this (see
//! [`crate::human`]): it drops columns or turns into one block per query
//! rather than being wrapped here.
//!
//! Widths are display widths (`textwrap` counts East Asian wide characters
//! as two columns and skips ANSI colour sequences), so a coloured line
//! fits as its plain text does.

use textwrap::core::display_width;

/// The widest a line may be when no terminal says otherwise (output piped
/// to a file, CI logs): what `dpplan check --width 100` prints.
pub const DEFAULT_WIDTH: usize = 100;

/// Every line of `text` at most `width` columns wide; `width` 0 leaves the
/// text as it is. Lines already short enough are kept byte for byte.
pub fn fit_lines(text: &str, width: usize) -> String {
    if width == 0 {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if display_width(body) <= width {
            out.push_str(line);
            continue;
        }
        let lines = wrap_line(body, width);
        out.push_str(&lines.join("\n"));
        out.push_str(end);
    }
    out
}

/// One long line as several, each at most `width` wide.
fn wrap_line(line: &str, width: usize) -> Vec<String> {
    let (first, rest, hang) = split_hang(line);
    // A hang so deep that almost nothing fits beside it is no help.
    let hang = if display_width(&hang) + 20 > width {
        " ".repeat(width.min(4))
    } else {
        hang
    };
    let opts = textwrap::Options::new(width)
        .initial_indent(first)
        .subsequent_indent(&hang)
        .break_words(true)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    textwrap::wrap(rest, opts)
        .into_iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// A line cut into the part kept as it is at its start, the text to wrap,
/// and the indentation of the continuation lines.
fn split_hang(line: &str) -> (&str, &str, String) {
    let lead_len = line.len() - line.trim_start().len();
    let (lead, body) = line.split_at(lead_len);
    // `error[DP008]: message` (codespan-reporting's header)
    if let Some(close) = body.find("]: ") {
        let head = &body[..close];
        if ["error[", "warning[", "help[", "hint[", "note[", "bug["]
            .iter()
            .any(|p| head.starts_with(p))
            && !head.contains(' ')
        {
            let cut = lead_len + close + 3;
            return (&line[..cut], &line[cut..], spaces(&line[..cut]));
        }
    }
    // `   = help: text` / `   = text` (a note)
    if let Some(after) = body.strip_prefix("= ") {
        let label = ["help: ", "note: "]
            .iter()
            .find(|p| after.starts_with(**p))
            .map_or(0, |p| p.len());
        let cut = lead_len + 2 + label;
        return (&line[..cut], &line[cut..], spaces(&line[..cut]));
    }
    // `14 │     column …` / `   │   ^^^^ label`: the gutter repeats
    if let Some(bar) = gutter_end(line) {
        let gutter: String = line[..bar]
            .chars()
            .map(|c| if c == '│' || c == '·' { '│' } else { ' ' })
            .collect();
        let after = &line[bar..];
        // a label: the text after the marks (`^^^^` or `----`) hangs
        // under itself
        let marks = after.trim_start();
        let pad = after.len() - marks.len();
        let run = marks
            .find(|c: char| c != '^' && c != '-' && c != '│' && c != '─' && c != '┬')
            .unwrap_or(marks.len());
        if run > 0 && marks[run..].starts_with(' ') {
            let cut = bar + pad + run + 1;
            let hang = gutter + &spaces(&line[bar..cut]);
            return (&line[..cut], &line[cut..], hang);
        }
        return (&line[..bar], after, gutter + "    ");
    }
    // `  total: …`, `  unit: …` and prose: under the first word's text
    let hang = match body.find(": ") {
        Some(i) if i < 24 && !body[..i].contains(' ') => spaces(&line[..lead_len + i + 2]),
        _ => format!("{lead}  "),
    };
    (lead, body, hang)
}

/// The byte just after a codespan-reporting gutter (`NN │ ` or `   · `)
/// when the line has one.
fn gutter_end(line: &str) -> Option<usize> {
    let mut seen_bar = None;
    for (i, c) in line.char_indices() {
        match c {
            ' ' | '0'..='9' if seen_bar.is_none() => continue,
            '│' | '·' | '┌' | '└' if seen_bar.is_none() => seen_bar = Some(i + c.len_utf8()),
            _ => break,
        }
    }
    let end = seen_bar?;
    // the gutter ends after one space following the bar
    Some(if line[end..].starts_with(' ') {
        end + 1
    } else {
        end
    })
}

fn spaces(s: &str) -> String {
    " ".repeat(display_width(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(s: &str) -> usize {
        s.lines().map(display_width).max().unwrap_or(0)
    }

    #[test]
    fn short_lines_are_kept_and_width_0_keeps_everything() {
        let text = "short\n  also short\n";
        assert_eq!(fit_lines(text, 40), text);
        let long = "word ".repeat(40);
        assert_eq!(fit_lines(&long, 0), long);
        assert!(widest(&fit_lines(&long, 30)) <= 30);
    }

    #[test]
    fn a_diagnostic_header_hangs_under_its_message() {
        let line = format!(
            "warning[DP008]: {}",
            "the privacy unit is one event ".repeat(6)
        );
        let out = fit_lines(&line, 60);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines[0].starts_with("warning[DP008]: the privacy"));
        for l in &lines[1..] {
            assert!(l.starts_with(&" ".repeat(16)), "{l:?}");
            assert!(!l[16..].starts_with(' '), "{l:?}");
        }
        assert!(widest(&out) <= 60);
        // nothing is lost: the words are the line's
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&out), words(&line));
    }

    #[test]
    fn notes_labels_and_gutters_repeat_their_prefix() {
        let help = format!("   = help: {}", "protect persons with a bound ".repeat(5));
        for l in fit_lines(&help, 50).lines().skip(1) {
            assert!(l.starts_with("           "), "{l:?}");
        }
        let label = format!(
            "14 │     column device_id : id\n   │            ^^^^^^^^^ {}",
            "the guarantee protects one event ".repeat(4)
        );
        let out = fit_lines(&label, 60);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "14 │     column device_id : id");
        assert!(lines[1].starts_with("   │            ^^^^^^^^^ the"));
        for l in &lines[2..] {
            assert!(l.starts_with("   │                      "), "{l:?}");
        }
        assert!(widest(&out) <= 60);
    }

    #[test]
    fn a_long_path_is_broken_rather_than_left_wide() {
        let line = format!("policy: none (no dpplan.toml above {})", "a/".repeat(80));
        assert!(widest(&fit_lines(&line, 40)) <= 40);
    }

    #[test]
    fn numbers_and_names_are_not_split_at_their_hyphens() {
        let line = format!("{}δ = 1e-7 app-events", "total ".repeat(7));
        let out = fit_lines(&line, 44);
        assert!(out.contains("1e-7") && out.contains("app-events"), "{out}");
    }

    #[test]
    fn wide_characters_count_twice() {
        let line = "名前 ".repeat(30);
        let out = fit_lines(&line, 21);
        assert!(widest(&out) <= 21, "{out}");
    }
}
