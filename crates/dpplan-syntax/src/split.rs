//! Splits a plan into its top-level items without the grammar, so that each
//! item can be parsed (and fail) on its own.
//!
//! It reads the text through the [lexer](crate::lexer): strings, comments,
//! line breaks, words and braces. An item starts at the first token after the
//! previous one ended; it ends at the brace that closes it, at the end of its
//! line if it opens no brace (a `publish`), or — when its braces never
//! balance — just before the next line that starts with an item keyword. A
//! stray `}` at item level closes the plan.

use dpplan_diagnostics::{Code, Diagnostic, Span};
use serde::Serialize;

use crate::lexer::{self, Token, TokenKind};
use crate::MAX_NESTING;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Header,
    Privacy,
    Dataset,
    Query,
    Publish,
    Unknown,
}

impl ItemKind {
    pub(crate) fn from_word(word: &str) -> Option<ItemKind> {
        Some(match word {
            "plan" => ItemKind::Header,
            "privacy" => ItemKind::Privacy,
            "dataset" => ItemKind::Dataset,
            "query" => ItemKind::Query,
            "publish" => ItemKind::Publish,
            _ => return None,
        })
    }
    pub fn describe(self) -> &'static str {
        match self {
            ItemKind::Header => "the plan header",
            ItemKind::Privacy => "the privacy block",
            ItemKind::Dataset => "this dataset",
            ItemKind::Query => "this query",
            ItemKind::Publish => "this publish statement",
            ItemKind::Unknown => "this item",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawItem {
    pub kind: ItemKind,
    pub span: Span,
    /// Its filters nest deeper than [`MAX_NESTING`] (parentheses and runs
    /// of `not`; a DP016 was reported): it is not parsed (the grammar's
    /// predicates recurse on them).
    pub too_deep: bool,
}

/// The name of a dataset, query or publish item, read from its first
/// tokens (`dataset visits {`, `publish copy =`) even when the rest of the
/// item does not parse; `None` for other items or when the second token is
/// not a name.
pub(crate) fn item_name(text: &str, item: &RawItem) -> Option<crate::ast::Ident> {
    if !matches!(
        item.kind,
        ItemKind::Dataset | ItemKind::Query | ItemKind::Publish
    ) {
        return None;
    }
    let mut words = lexer::lex(text.get(item.span.start..item.span.end)?)
        .filter(|t| !t.is_trivia())
        .take(2);
    let (_keyword, name) = (words.next()?, words.next()?);
    let word = name.text(&text[item.span.start..]);
    (name.kind == TokenKind::Ident && !lexer::is_keyword(word)).then(|| {
        crate::ast::Spanned::new(
            word.to_string(),
            Span::new(name.start, name.end).offset(item.span.start),
        )
    })
}

pub(crate) struct Split {
    pub items: Vec<RawItem>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A cursor over the text that reads it with the [lexer](crate::lexer).
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    /// Where a `/*` that is never closed starts, once the cursor skipped
    /// it (it runs to the end of the text, so there is at most one).
    unclosed_comment: Option<usize>,
    /// The last token lexed and where: the scan asks for the token at the
    /// cursor two or three times before moving on (at 10⁵ queries the
    /// lexing was most of the split's time).
    last: std::cell::Cell<Option<(usize, Option<Token>)>>,
}

impl<'a> Scanner<'a> {
    /// The token at the cursor.
    fn token(&self) -> Option<Token> {
        match self.last.get() {
            Some((at, token)) if at == self.pos => token,
            _ => {
                let token = lexer::token_at(self.text, self.pos);
                self.last.set(Some((self.pos, token)));
                token
            }
        }
    }
    /// Skips whitespace, line breaks and comments. Returns true when a `\n`
    /// was crossed (a lone `\r` does not start a new item's line).
    fn skip_trivia(&mut self) -> bool {
        let mut newline = false;
        while let Some(t) = self.token().filter(Token::is_trivia) {
            if t.kind == (TokenKind::BlockComment { terminated: false }) {
                self.unclosed_comment = Some(t.start);
            }
            newline |= match t.kind {
                TokenKind::Newline => t.text(self.text).ends_with('\n'),
                TokenKind::BlockComment { .. } => t.text(self.text).contains('\n'),
                _ => false,
            };
            self.pos = t.end;
        }
        newline
    }
    /// The identifier or number at the cursor, if any.
    fn word(&self) -> &'a str {
        match self.token() {
            Some(t) if matches!(t.kind, TokenKind::Ident | TokenKind::Number) => t.text(self.text),
            _ => "",
        }
    }
    /// Advances over one token that is not trivia (a string, a word, or one
    /// punctuation or other character).
    fn skip_token(&mut self) {
        if let Some(t) = self.token() {
            self.pos = t.end;
        }
    }
    /// Advances over the plan header (the cursor is on `plan`): up to and
    /// including its first `{`, or the `\n` that ends its line. Spaces, a
    /// lone `\r` and block comments (multi-line ones too) are skipped. A
    /// `//` comment is not skipped but read as code from its second `/` on,
    /// as this scanner always read it: a `{` in it ends the header, which
    /// then fails to parse (to the grammar that `{` is in the comment).
    fn skip_header(&mut self) {
        while let Some(t) = self.token() {
            match t.kind {
                TokenKind::Punct(b'{') => {
                    self.pos = t.end;
                    return;
                }
                TokenKind::Newline if t.text(self.text).ends_with('\n') => {
                    self.pos = t.end;
                    return;
                }
                TokenKind::LineComment => self.pos += 1,
                TokenKind::BlockComment { terminated: false } => {
                    // the header's parse does not name it
                    self.unclosed_comment = Some(t.start);
                    self.pos = t.end;
                }
                _ => self.pos = t.end,
            }
        }
    }

    /// Scans an item from its first token (at the cursor) to its end: the
    /// brace that closes it, the end of its line for a brace-less
    /// `publish`, or — braces never balanced — the line before the next
    /// item keyword. Returns where it ends and whether its parentheses
    /// nest deeper than [`MAX_NESTING`] (a DP016 is pushed; braces too
    /// deep are said once per file, `braces_reported`).
    fn scan_item(
        &mut self,
        kind: ItemKind,
        braces_reported: &mut bool,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> (usize, bool) {
        let mut depth: usize = 0;
        let (mut nesting, mut too_deep) = (Nesting::default(), false);
        let mut end;
        self.skip_token();
        loop {
            end = self.pos;
            let newline = self.skip_trivia();
            let Some(t) = self.token() else {
                if depth > 0 {
                    // The text ended inside the item's braces: its parse
                    // reads on to the end and reports the comment itself.
                    self.unclosed_comment = None;
                }
                break;
            };
            if newline {
                if ItemKind::from_word(self.word()).is_some() {
                    // A new item begins on this line: the current one ends
                    // before it (broken, if its braces are still open).
                    break;
                }
                if kind == ItemKind::Publish && depth == 0 {
                    // A brace-less item ends at its line's end.
                    break;
                }
            }
            match t.kind {
                TokenKind::Punct(b'{') => {
                    depth += 1;
                    if depth > MAX_NESTING && !*braces_reported {
                        *braces_reported = true;
                        diagnostics.push(
                            Diagnostic::new(
                                Code::Limit,
                                format!("braces nest deeper than {MAX_NESTING} levels"),
                                Span::new(self.pos, self.pos + 1),
                            )
                            .help(
                                "the grammar nests at most three levels: check for unclosed braces",
                            ),
                        );
                    }
                    self.pos = t.end;
                }
                TokenKind::Punct(b'(') => {
                    nesting.open();
                    self.pos = t.end;
                }
                TokenKind::Punct(b')') => {
                    nesting.close();
                    self.pos = t.end;
                }
                TokenKind::Punct(b'}') => {
                    if depth == 0 {
                        // The plan's closing brace: the item ends before it.
                        break;
                    }
                    depth -= 1;
                    self.pos = t.end;
                    if depth == 0 {
                        end = self.pos;
                        break;
                    }
                }
                TokenKind::Ident if t.text(self.text) == "not" => {
                    nesting.not();
                    self.pos = t.end;
                }
                _ => {
                    nesting.other();
                    self.pos = t.end;
                }
            }
            if nesting.depth() > MAX_NESTING && !too_deep {
                too_deep = true;
                diagnostics.push(nesting.too_deep(Span::new(t.start, t.end)));
            }
        }
        (end, too_deep)
    }
}

/// How deep the grammar's predicate rules recurse at the scanner's cursor:
/// `pred_group` once per open parenthesis, `pred_not` (`not ~ pred_not`)
/// once per `not` of a run of them (`not not x == 1`); the `not`s before a
/// parenthesis stay on the stack until it closes (`not (not (x == 1))` is
/// four levels). pest runs without its stack probe (ARCHITECTURE.md,
/// "Dependencies and why"), so an item nested deeper than [`MAX_NESTING`]
/// is refused before it is parsed (and lowered, and checked: each of them
/// recurses on the same nesting).
#[derive(Default)]
struct Nesting {
    parens: usize,
    /// The `not`s of the run at the cursor.
    run: usize,
    /// The open parentheses with `not`s before them: (how many
    /// parentheses were open before it, its run of `not`s). Empty, and
    /// never allocated, for the usual item.
    held: Vec<(usize, usize)>,
    held_total: usize,
}

impl Nesting {
    fn open(&mut self) {
        if self.run > 0 {
            self.held.push((self.parens, self.run));
            self.held_total += self.run;
        }
        self.run = 0;
        self.parens += 1;
    }
    fn close(&mut self) {
        // an unmatched `)` changes nothing (the grammar reports it)
        self.parens = self.parens.saturating_sub(1);
        if let Some(&(at, run)) = self.held.last() {
            if at == self.parens {
                self.held.pop();
                self.held_total -= run;
            }
        }
        self.run = 0;
    }
    fn not(&mut self) {
        self.run += 1;
    }
    fn other(&mut self) {
        self.run = 0;
    }
    fn depth(&self) -> usize {
        self.parens + self.held_total + self.run
    }
    fn too_deep(&self, span: Span) -> Diagnostic {
        if self.held_total + self.run == 0 {
            Diagnostic::new(
                Code::Limit,
                format!("parentheses nest deeper than {MAX_NESTING} levels"),
                span,
            )
            .help("a filter needs a few levels at most: check for unclosed parentheses")
        } else {
            Diagnostic::new(
                Code::Limit,
                format!(
                    "this filter nests deeper than {MAX_NESTING} levels of parentheses and `not`"
                ),
                span,
            )
            .help("`not not p` is `p`: simplify the filter")
        }
    }
}

/// The error for a `/*` at `start` that is never closed.
fn unclosed_comment(start: usize) -> Diagnostic {
    Diagnostic::new(
        Code::Syntax,
        "this comment is never closed",
        Span::new(start, start + 2),
    )
    .label("`/*` opens a comment that runs to the end of the file")
    .help("close the comment with `*/`, or write `//` for a comment to the end of the line")
}

pub(crate) fn split(text: &str) -> Split {
    let mut s = Scanner {
        text,
        pos: 0,
        unclosed_comment: None,
        last: Default::default(),
    };
    let mut items = Vec::new();
    let mut diagnostics = Vec::new();
    let mut has_header = false;
    let mut plan_closed = false;
    let mut too_deep_reported = false;

    s.skip_trivia();
    if s.token().is_none() {
        diagnostics.push(
            Diagnostic::new(Code::Missing, "the file declares no plan", Span::new(0, 0))
                .label("expected `plan \"name\" {`")
                .help("start the file with `plan \"my-plan\" {` and close it with `}`"),
        );
        diagnostics.extend(s.unclosed_comment.map(unclosed_comment));
        return Split { items, diagnostics };
    }

    loop {
        s.skip_trivia();
        let start = s.pos;
        let Some(first) = s.token() else { break };
        if first.kind == TokenKind::Punct(b'}') {
            s.pos = first.end;
            if plan_closed || !has_header {
                diagnostics.push(
                    Diagnostic::new(Code::Syntax, "unmatched `}`", Span::new(start, s.pos))
                        .label("nothing is open here")
                        .help("remove this brace"),
                );
            }
            plan_closed = true;
            continue;
        }
        if plan_closed {
            // Anything after the plan's closing brace.
            let end = text.len();
            let trimmed = text[start..end].trim_end();
            diagnostics.push(
                Diagnostic::new(
                    Code::Syntax,
                    "unexpected text after the end of the plan",
                    Span::new(start, start + trimmed.len()),
                )
                .label("the plan was closed by the `}` before this")
                .help("a file declares one plan: move this inside the plan's braces, or remove it"),
            );
            break;
        }
        let kind = ItemKind::from_word(s.word()).unwrap_or(ItemKind::Unknown);
        if kind == ItemKind::Header {
            // The header ends after its `{`, or at the end of its line.
            s.skip_header();
            if has_header {
                diagnostics.push(
                    Diagnostic::new(
                        Code::Duplicate,
                        "a file declares one plan, but this is a second `plan` header",
                        Span::new(start, s.pos),
                    )
                    .help("split the plans into separate files"),
                );
            } else {
                has_header = true;
                items.push(RawItem {
                    kind,
                    span: Span::new(start, s.pos),
                    too_deep: false,
                });
            }
            continue;
        }
        if !has_header && items.is_empty() {
            diagnostics.push(
                Diagnostic::new(
                    Code::Missing,
                    "the plan has no header",
                    Span::new(start, start + s.word().len().max(1)),
                )
                .label("expected `plan \"name\" {` before this")
                .help("start the file with `plan \"my-plan\" {` and close it with `}`"),
            );
            // Record a virtual header so that the missing-header error is said once.
            has_header = true;
        }
        let (end, too_deep) = s.scan_item(kind, &mut too_deep_reported, &mut diagnostics);
        items.push(RawItem {
            kind,
            span: Span::new(start, end),
            too_deep,
        });
        s.pos = s.pos.max(end);
    }
    // Skipped as trivia between items or after the plan, an unclosed
    // comment is in no item: no item's parse reports it, and the grammar
    // rejects the whole file at it.
    diagnostics.extend(s.unclosed_comment.map(unclosed_comment));
    if has_header && !plan_closed && items.iter().any(|i| i.kind == ItemKind::Header) {
        let end = text.trim_end().len();
        diagnostics.push(
            Diagnostic::new(Code::Syntax, "the plan is not closed", Span::new(end, end))
                .label("expected `}` here")
                .help("close the plan with `}` at the end of the file"),
        );
    }
    Split { items, diagnostics }
}
