//! Turns pest's errors into messages in words: "expected a duration such as
//! `1 day`", not "expected duration".

use dpplan_diagnostics::{Code, Diagnostic, Span};
use pest::error::{Error, ErrorVariant, InputLocation};
use pest::Parser as _;
use std::collections::BTreeMap;

use crate::{lexer, DpplanParser, ItemKind, RawItem, Rule, MAX_SYNTAX_ERRORS};

/// How a rule is named in an "expected …" message.
fn describe(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        ident => "a name",
        string | string_inner => "a string in double quotes",
        number => "a number",
        date => "a date such as `2026-01-01`",
        path => "a column such as `visits.seconds`",
        kw_plan => "`plan`",
        kw_privacy => "`privacy`",
        kw_unit => "`unit`",
        kw_by => "`by`",
        kw_user => "`user`",
        kw_adjacency => "`adjacency`",
        kw_budget => "`budget`",
        kw_epsilon => "`epsilon`",
        kw_delta => "`delta`",
        kw_accountant => "`accountant`",
        kw_population => "`population`",
        kw_dataset => "`dataset`",
        kw_source => "`source`",
        kw_column => "`column`",
        kw_id => "`id`",
        kw_category => "`category`",
        kw_int => "`int`",
        kw_float => "`float`",
        kw_in => "`in`",
        kw_from => "`from`",
        kw_until => "`until`",
        kw_contribution => "`contribution`",
        kw_invalid => "`invalid_rows`",
        kw_sample => "`sample`",
        kw_units => "`units`",
        kw_query => "`query`",
        kw_noise => "`noise`",
        kw_scale => "`scale`",
        kw_sigma => "`sigma`",
        kw_auto => "`auto`",
        kw_weight => "`weight`",
        kw_sensitivity => "`sensitivity`",
        kw_schedule => "`schedule`",
        kw_once => "`once`",
        kw_times => "`times`",
        kw_every => "`every`",
        kw_for => "`for`",
        kw_publish => "`publish`",
        kw_when => "`when`",
        kw_accuracy => "`accuracy`",
        kw_time => "`time`",
        kw_window => "`window`",
        kw_release => "`release`",
        kw_after => "`after`",
        agg_cumulative => "`cumulative`",
        plan_header => "`plan \"name\" {`",
        privacy => "`privacy { … }`",
        dataset => "`dataset name { … }`",
        query => "`query name { … }`",
        publish => "`publish name = query`",
        unit_stmt => "`unit`",
        unit_user => "`user by <id column>`",
        unit_event => "`event`",
        unit_row => "`row`",
        adjacency_stmt => "`adjacency`",
        adjacency => "an adjacency (`add_remove` or `replace`)",
        budget_stmt => "`budget epsilon <ε> delta <δ>`",
        accountant_stmt => "`accountant`",
        accountant => "an accountant (`best`, `basic`, `advanced`, `zcdp`, `rdp`, `gdp` or `pld`)",
        population_stmt => "`population`",
        source_stmt => "`source \"path\"`",
        column_stmt => "`column name : type`",
        type_id => "`id`",
        type_category => "`category { \"a\", \"b\" }`",
        type_int => "`int in [lo, hi]`",
        type_float => "`float in [lo, hi]`",
        type_time => "`time`",
        domain_list => "a list of values such as `{ \"a\", \"b\" }`",
        domain_expr => "`from …`",
        bounds => "public bounds such as `in [0, 100]`",
        bound => "a number",
        data_expr | data_call => "an expression",
        contribution => "`contribution { … }`",
        contribution_stmt | contribution_key => {
            "a contribution bound (`rows_per_unit`, `groups_per_unit`, `rows_per_group`, `windows_per_unit` or `rows_per_window`)"
        }
        invalid_stmt => "`invalid_rows drop` or `invalid_rows clamp`",
        invalid_rule => "`drop` or `clamp`",
        sample_stmt => "`sample units 1%`",
        percent => "`%`",
        aggregate => "an aggregation such as `count(visits)`",
        agg_kind => "an aggregation (`count`, `sum`, `mean`, `histogram`, `quantile`, `quantiles` or `top`)",
        level_list => "a list of levels such as `[0.25, 0.5, 0.9]`",
        candidates_stmt | kw_candidates => "`candidates [c1, c2, …]` or `candidates every <step>`",
        candidate_list => "a list of candidates such as `[0, 5, 10]`",
        candidate_step => "`every <step>`",
        keys_from_data | kw_keys | kw_data => "`keys from data`",
        threshold_clause | kw_threshold => "`threshold auto` or `threshold <τ>`",
        agg_target => "a dataset or a column such as `visits.seconds`",
        noise_stmt => "`noise`",
        noise_kind => {
            "a mechanism (`laplace`, `gaussian`, `discrete_laplace`, `discrete_gaussian` or `exponential`)"
        }
        noise_scale => "`scale <b>`",
        noise_sigma => "`sigma <σ>`",
        noise_epsilon => "`epsilon <ε>`",
        noise_auto => "`auto`",
        sensitivity_stmt => "`sensitivity`",
        sensitivity_item | norm => "a norm and its value such as `l1 5`",
        schedule_stmt => "`schedule`",
        sched_once => "`once`",
        sched_times => "a count such as `12 times`",
        sched_every => "`every <duration> for <duration>`",
        sched_for => "`for <duration>`",
        sched_range => "`from <date> until <date>`",
        duration => "a duration such as `1 day`",
        time_unit => "a time unit (`second`, `minute`, `hour`, `day` or `week`)",
        accuracy_stmt => "`accuracy ci95 <= <value>`",
        accuracy_measure => "`ci95` or `std`",
        window_stmt => "`window <duration>`",
        release_stmt => "`release after <duration>`",
        postprocess_stmt => "`postprocess nonnegative, round`",
        postprocess_step => "`nonnegative` or `round`",
        mechanism_stmt | kw_mechanism => "`mechanism tree` or `mechanism factorization`",
        mechanism_kind => "`tree` or `factorization`",
        publish_cond => "`when <value> <comparison> <number>`",
        operand => "a released value",
        cmp => "a comparison (`>`, `>=`, `<`, `<=`, `==` or `!=`)",
        EOI => "the end of the item",
        _ => return None,
    })
}

fn join_words(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// `rest` after the spaces, tabs and comments that start it (as the
/// grammar's `COMMENT`: `/* … */`, not nested, and `// …` up to its line's
/// end, which is kept). pest may report an error before them; "found …"
/// names what follows. An unclosed `/*` is kept: it is what was found.
fn skip_blanks(mut rest: &str) -> &str {
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if let Some(comment) = rest.strip_prefix("//") {
            return &comment[comment.find(['\r', '\n']).unwrap_or(comment.len())..];
        }
        match rest.strip_prefix("/*").and_then(|c| c.split_once("*/")) {
            Some((_, after)) => rest = after,
            None => return rest,
        }
    }
}

/// The token found at `offset`, for "found …".
fn found_at(text: &str, offset: usize) -> String {
    let rest = skip_blanks(&text[offset.min(text.len())..]);
    if rest.is_empty() {
        return "the end of the file".into();
    }
    if rest.starts_with('\n') || rest.starts_with("\r\n") {
        return "the end of the line".into();
    }
    if rest.starts_with("/*") {
        return "an unclosed comment `/*`".into();
    }
    let token: String = if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.') {
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
            .take(40)
            .collect()
    } else {
        rest.chars().take(1).collect()
    };
    format!("`{token}`")
}

/// One diagnostic for a pest error inside the item that starts at `base`.
pub(crate) fn from_pest(text: &str, base: usize, kind: ItemKind, err: &Error<Rule>) -> Diagnostic {
    let (pos, end) = match err.location {
        InputLocation::Pos(p) => (base + p, base + p),
        InputLocation::Span((a, b)) => (base + a, base + b),
    };
    let expected = match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let mut words: Vec<&str> = positives.iter().filter_map(|r| describe(*r)).collect();
            // Punctuation the grammar expects here (pest reports literal
            // tokens separately from rules).
            let punctuation: Vec<String> = err
                .parse_attempts()
                .map(|a| a.expected_tokens())
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.to_string())
                .filter(|t| {
                    matches!(
                        t.as_str(),
                        "(" | ")" | "," | "{" | "}" | "[" | "]" | "=" | ":"
                    )
                })
                .map(|t| format!("`{t}`"))
                .collect();
            words.extend(punctuation.iter().map(String::as_str));
            words.dedup();
            let mut seen = Vec::new();
            words.retain(|w| {
                if seen.contains(w) {
                    false
                } else {
                    seen.push(*w);
                    true
                }
            });
            join_words(&words)
        }
        ErrorVariant::CustomError { message } => message.clone(),
    };
    let found = found_at(text, pos);
    // Point at the offending token (at least one character).
    let token_len = {
        let rest = &text[pos.min(text.len())..];
        let t = skip_blanks(rest);
        let skipped = rest.len() - t.len();
        let len = t
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
            .map(char::len_utf8)
            .sum::<usize>();
        let len = if len == 0 {
            t.chars()
                .next()
                .map_or(0, |c| if c == '\n' { 0 } else { c.len_utf8() })
        } else {
            len
        };
        (skipped, len)
    };
    let start = pos + token_len.0;
    let span = Span::new(start, (start + token_len.1).max(end).min(text.len()));
    let message = if expected.is_empty() {
        format!("unexpected {found} in {}", kind.describe())
    } else {
        format!("expected {expected}, found {found}")
    };
    let mut d = Diagnostic::new(Code::Syntax, message, span).label(if expected.is_empty() {
        "unexpected here".to_string()
    } else {
        format!("expected {expected}")
    });
    d = d.help(format!(
        "{} could not be read, so it is left out of the checks until this is fixed",
        capitalize(kind.describe())
    ));
    let typed = text.get(span.start..span.end).unwrap_or("");
    match expected_rules(err).and_then(|rules| keyword_meant(typed, rules)) {
        Some(word) => d.suggest(word),
        None => d,
    }
}

/// The rules pest expected where it failed.
fn expected_rules(err: &Error<Rule>) -> Option<&[Rule]> {
    match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => Some(positives),
        ErrorVariant::CustomError { .. } => None,
    }
}

/// The keyword that `typed` most likely meant where one of `rules` was
/// expected: the candidates are the lexer's [`lexer::KEYWORDS`] that one of
/// those rules accepts as a whole (so the grammar decides which words fit
/// here, e.g. only the mechanisms after `noise`). A rule that accepts any
/// name (`ident`) offers no keyword.
fn keyword_meant(typed: &str, rules: &[Rule]) -> Option<&'static str> {
    if typed.is_empty() || !typed.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let mut fitting: Vec<&'static str> = Vec::new();
    for &rule in rules {
        fitting.extend(keywords_of(rule));
    }
    // in the lexer's order, whichever rule accepts them
    fitting.sort_by_key(|w| lexer::KEYWORDS.iter().position(|k| k == w));
    fitting.dedup();
    dpplan_diagnostics::did_you_mean(typed, fitting)
}

/// The keywords that `rule` accepts as a whole word; none for a rule that
/// accepts any name. Computed once per rule (a few hundred tiny parses).
fn keywords_of(rule: Rule) -> Vec<&'static str> {
    static KNOWN: std::sync::Mutex<BTreeMap<Rule, Vec<&'static str>>> =
        std::sync::Mutex::new(BTreeMap::new());
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    known
        .entry(rule)
        .or_insert_with(|| {
            let whole = |word: &str| {
                DpplanParser::parse(rule, word)
                    .ok()
                    .and_then(|pairs| pairs.last())
                    .is_some_and(|pair| pair.as_span().end() == word.len())
            };
            if whole("not_a_keyword_at_all") {
                return Vec::new();
            }
            lexer::KEYWORDS
                .iter()
                .copied()
                .filter(|w| whole(w))
                .collect()
        })
        .clone()
}

pub(crate) fn unknown_item(text: &str, span: Span) -> Diagnostic {
    let word = found_at(text, span.start);
    let first = first_token(text, span);
    let typed = text.get(first.start..first.end).unwrap_or("");
    let items = lexer::KEYWORDS
        .iter()
        .copied()
        .filter(|w| ItemKind::from_word(w).is_some_and(|k| k != ItemKind::Header));
    let meant = dpplan_diagnostics::did_you_mean(typed, items);
    let d = Diagnostic::new(
        Code::Syntax,
        format!("expected `privacy`, `dataset`, `query` or `publish`, found {word}"),
        first_token(text, span),
    )
    .label("not a plan item")
    .help("a plan holds a `privacy { … }` block, `dataset`s, `query`s and `publish` statements");
    match meant {
        Some(word) => d.suggest(word),
        None => d,
    }
}

/// The item's text up to its first whitespace (its keyword, usually).
pub(crate) fn first_token(text: &str, span: Span) -> Span {
    let len = text
        .get(span.start..span.end)
        .and_then(|item| item.find(char::is_whitespace))
        .unwrap_or(span.len());
    Span::new(span.start, span.start + len)
}

/// The fallback for an item that failed to parse once and then parsed.
pub(crate) fn unreadable_item(text: &str, item: &RawItem) -> Diagnostic {
    Diagnostic::new(
        Code::Syntax,
        format!("{} could not be read", item.kind.describe()),
        first_token(text, item.span),
    )
    .help(format!(
        "{} is left out of the checks until this is fixed",
        capitalize(item.kind.describe())
    ))
}

/// The last syntax diagnostic of a file with more than
/// [`MAX_SYNTAX_ERRORS`]: how many were left out, at the first of them.
pub(crate) fn more_errors(hidden: usize, first: Span) -> Diagnostic {
    let errors = if hidden == 1 {
        "syntax error"
    } else {
        "syntax errors"
    };
    Diagnostic::new(
        Code::Syntax,
        format!("{hidden} more {errors} not shown"),
        first,
    )
    .label("the first one not shown is here")
    .help(format!(
        "dpplan shows the first {MAX_SYNTAX_ERRORS} syntax errors of a file; fix those and check again to see the rest"
    ))
    .note(
        "every item that could not be read, shown or not, is left out of the checks, and no guarantee is claimed until all are fixed",
    )
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
