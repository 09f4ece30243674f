//! The lexer of `.dpplan` text: the one place that decides where strings,
//! comments, words, punctuation and line breaks start and end. The item
//! splitter of [`parse`](crate::parse), the formatter (`dpplan-fmt`) and the
//! editor features (`dpplan-ide`) all read the text through it.
//!
//! [`lex`] is total: it never fails and never panics, and its tokens cover
//! every byte of the text exactly once, in order, each starting and ending on
//! a character boundary, so their texts concatenated give the text back. Its
//! rules follow the grammar's lexical rules (grammar/dpplan.pest):
//!
//! * a line break is the grammar's `NEWLINE`: `\n`, `\r\n` or a lone `\r`;
//! * whitespace is spaces and tabs (a form feed is not whitespace to the
//!   grammar: it is an [`TokenKind::Unknown`] character);
//! * a `//` comment runs up to the next line break, which it does not
//!   include; a `/* … */` comment up to the first `*/`, or to the end of the
//!   text when there is none;
//! * a string runs from `"` to the next `"` that no `\` escapes, or up to
//!   the next line break or the end of the text when it is not closed; a `\`
//!   skips the byte after it, whatever it is (the grammar, not the lexer,
//!   rejects an escape it does not know);
//! * a word is a run of ASCII letters, digits and `_`: an [`TokenKind::Ident`]
//!   when it starts with a letter or `_` (keywords among them, see
//!   [`KEYWORDS`]), a [`TokenKind::Number`] when it starts with a digit.
//!   The grammar reads numbers and dates out of these, `.`, `+`, `-` and `:`
//!   (`1e-6` is `1e`, `-`, `6`; `nan` and `inf` are identifiers).
//!
//! The formatter and the editor work on a coarser view of the same tokens,
//! [`tokenize`]: whitespace dropped and each run of adjacent word-like tokens
//! joined into one [`LexemeKind::Word`] (`visits.secs`, `-1.5e-6`).

/// What a token of [`lex`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// A run of spaces and tabs.
    Whitespace,
    /// One line break: `\n`, `\r\n`, or a lone `\r`.
    Newline,
    /// `// …`, up to the next line break (excluded).
    LineComment,
    /// `/* … */`; not `terminated` when the text ends first.
    BlockComment { terminated: bool },
    /// A string literal, quotes included; not `terminated` when a line
    /// break or the end of the text comes before its closing quote.
    Str { terminated: bool },
    /// `[A-Za-z_][A-Za-z0-9_]*`: a name or a keyword ([`is_keyword`]).
    Ident,
    /// `[0-9][A-Za-z0-9_]*`: a number's or a date's digits (`1_000`, `1e`,
    /// `2026`).
    Number,
    /// One of `{ } ( ) [ ] , : . + -`.
    Punct(u8),
    /// A run of `= < > !`: `=`, `>=`, `==`, `!=`, …
    Op,
    /// Any other character (one whole UTF-8 character): not part of the
    /// language outside strings and comments.
    Unknown,
}

/// A token of [`lex`]: its kind and its bytes `start..end` in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The token's text in `src` (the text it was lexed from).
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        src.get(self.start..self.end).unwrap_or("")
    }
    /// Whitespace, a line break or a comment: what the grammar skips.
    pub fn is_trivia(&self) -> bool {
        matches!(
            self.kind,
            TokenKind::Whitespace
                | TokenKind::Newline
                | TokenKind::LineComment
                | TokenKind::BlockComment { .. }
        )
    }
}

/// The tokens of a text, in order (see the [module docs](self) for the
/// rules).
pub fn lex(text: &str) -> Lexer<'_> {
    Lexer { text, pos: 0 }
}

/// An iterator over the tokens of a text from a byte offset on.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    /// The tokens of `text` from byte `pos` on, lexed as if the text started
    /// there; none when `pos` is past the end or inside a character.
    pub fn starting_at(text: &'a str, pos: usize) -> Lexer<'a> {
        let pos = if text.is_char_boundary(pos) {
            pos
        } else {
            text.len()
        };
        Lexer { text, pos }
    }
    /// Where the next token starts.
    pub fn pos(&self) -> usize {
        self.pos
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;
    fn next(&mut self) -> Option<Token> {
        let token = token_at(self.text, self.pos)?;
        self.pos = token.end;
        Some(token)
    }
}

/// The token that starts at byte `pos` of `text`, lexed as if the text
/// started there; `None` at the end of the text or inside a character.
pub fn token_at(text: &str, pos: usize) -> Option<Token> {
    let bytes = text.as_bytes();
    let &first = bytes.get(pos)?;
    if !text.is_char_boundary(pos) {
        return None;
    }
    let at = |i: usize| bytes.get(i).copied();
    let (kind, end) = match first {
        b' ' | b'\t' => (
            TokenKind::Whitespace,
            run(bytes, pos + 1, |b| b == b' ' || b == b'\t'),
        ),
        b'\n' => (TokenKind::Newline, pos + 1),
        b'\r' if at(pos + 1) == Some(b'\n') => (TokenKind::Newline, pos + 2),
        b'\r' => (TokenKind::Newline, pos + 1),
        b'/' if at(pos + 1) == Some(b'/') => (
            TokenKind::LineComment,
            run(bytes, pos + 2, |b| b != b'\n' && b != b'\r'),
        ),
        b'/' if at(pos + 1) == Some(b'*') => {
            let mut end = pos + 2;
            loop {
                match at(end) {
                    None => break (TokenKind::BlockComment { terminated: false }, end),
                    Some(b'*') if at(end + 1) == Some(b'/') => {
                        break (TokenKind::BlockComment { terminated: true }, end + 2)
                    }
                    Some(_) => end += 1,
                }
            }
        }
        b'"' => {
            let mut end = pos + 1;
            let terminated = loop {
                match at(end) {
                    None | Some(b'\n' | b'\r') => break false,
                    Some(b'\\') => end += 2,
                    Some(b'"') => {
                        end += 1;
                        break true;
                    }
                    Some(_) => end += 1,
                }
            };
            (TokenKind::Str { terminated }, end.min(bytes.len()))
        }
        b'{' | b'}' | b'(' | b')' | b'[' | b']' | b',' | b':' | b'.' | b'+' | b'-' | b'%' => {
            (TokenKind::Punct(first), pos + 1)
        }
        b'=' | b'<' | b'>' | b'!' => (
            TokenKind::Op,
            run(bytes, pos + 1, |b| matches!(b, b'=' | b'<' | b'>' | b'!')),
        ),
        b if b.is_ascii_alphabetic() || b == b'_' => {
            (TokenKind::Ident, run(bytes, pos + 1, is_word_byte))
        }
        b if b.is_ascii_digit() => (TokenKind::Number, run(bytes, pos + 1, is_word_byte)),
        _ => (TokenKind::Unknown, pos + 1),
    };
    // Never split a character (an escape before a multi-byte character, or
    // an unknown multi-byte character).
    let mut end = end;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    Some(Token {
        kind,
        start: pos,
        end,
    })
}

/// The end of the run of bytes from `end` on that are `part`.
#[inline(always)]
fn run(bytes: &[u8], mut end: usize, part: impl Fn(u8) -> bool) -> usize {
    while bytes.get(end).is_some_and(|&b| part(b)) {
        end += 1;
    }
    end
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `name` is one identifier (one [`TokenKind::Ident`] token and
/// nothing else), keyword or not.
pub fn is_ident(name: &str) -> bool {
    let mut tokens = lex(name);
    matches!(tokens.next(), Some(t) if t.kind == TokenKind::Ident && t.end == name.len())
}

/// Every keyword of the grammar: the words of its `kw_*` rules and of its
/// atomic rules made of fixed alternatives (units, adjacencies, accountants,
/// aggregations, noise kinds, norms, time units, contribution keys, …). A
/// test reads grammar/dpplan.pest and checks this list against it in both
/// directions.
pub const KEYWORDS: &[&str] = &[
    // kw_* rules
    "plan",
    "privacy",
    "unit",
    "by",
    "user",
    "adjacency",
    "budget",
    "epsilon",
    "delta",
    "accountant",
    "population",
    "dataset",
    "source",
    "column",
    "id",
    "category",
    "int",
    "float",
    "in",
    "from",
    "until",
    "contribution",
    "invalid_rows",
    "sample",
    "units",
    "query",
    "noise",
    "scale",
    "sigma",
    "auto",
    "weight",
    "sensitivity",
    "schedule",
    "once",
    "times",
    "every",
    "for",
    "publish",
    "when",
    "accuracy",
    "time",
    "window",
    "release",
    "after",
    "cumulative",
    "where",
    "and",
    "or",
    "not",
    "bins",
    "outside",
    "distinct",
    "keys",
    "data",
    "threshold",
    "with",
    "total",
    "mechanism",
    // fixed-alternative atomic rules
    "event",
    "row",
    "add_remove",
    "replace",
    "best",
    "basic",
    "advanced",
    "classical",
    "zcdp",
    "rdp",
    "gdp",
    "pld",
    "rows_per_unit",
    "groups_per_unit",
    "rows_per_group",
    "windows_per_unit",
    "rows_per_window",
    "drop",
    "clamp",
    "count",
    "sum",
    "mean",
    "histogram",
    "quantile",
    "quantiles",
    "top",
    "candidates",
    "postprocess",
    "nonnegative",
    "round",
    "consistent",
    "tree",
    "factorization",
    "exponential",
    "permute_and_flip",
    "discrete_laplace",
    "discrete_gaussian",
    "laplace",
    "gaussian",
    "l1",
    "l2",
    "seconds",
    "second",
    "minutes",
    "minute",
    "hours",
    "hour",
    "days",
    "day",
    "weeks",
    "week",
    "ci95",
    "std",
];

/// Whether `word` is one of the grammar's [`KEYWORDS`].
pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

/// What a [`Lexeme`] of [`tokenize`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LexemeKind {
    /// A run of adjacent identifiers, numbers, `.`, `+`, `-` and unknown
    /// characters with nothing between them: a name, keyword, number, date
    /// part or `dataset.column` path. `number` when it reads as a number: an
    /// optional sign, then a digit, or then exactly `nan`, `inf` or
    /// `infinity` in any case (as the grammar's `number` starts).
    Word { number: bool },
    /// A string literal, quotes included (possibly unterminated).
    Str,
    /// `// …` up to the end of its line (the line break excluded).
    LineComment,
    /// `/* … */` (possibly unterminated).
    BlockComment,
    /// One of `{ } ( ) [ ] , :`.
    Punct(u8),
    /// A run of `= < > !`: `=`, `==`, `>=`, …
    Op,
}

/// A token of the formatter's and the editor's view of a text ([`tokenize`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lexeme {
    pub kind: LexemeKind,
    pub start: usize,
    pub end: usize,
    /// How many line breaks that hold a `\n` separate this lexeme from the
    /// previous one (or from the start of the text).
    pub newlines_before: usize,
}

impl Lexeme {
    /// The lexeme's text in `src` (the text it was lexed from).
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        src.get(self.start..self.end).unwrap_or("")
    }
    pub fn is_comment(&self) -> bool {
        matches!(
            self.kind,
            LexemeKind::LineComment | LexemeKind::BlockComment
        )
    }
    pub fn is_word(&self) -> bool {
        matches!(self.kind, LexemeKind::Word { .. })
    }
}

/// The formatter's and the editor's view of a text: the tokens of [`lex`]
/// without whitespace and line breaks (counted in
/// [`Lexeme::newlines_before`]), with each run of adjacent word-like tokens
/// (identifiers, numbers, `.`, `+`, `-`, unknown characters) joined into one
/// [`LexemeKind::Word`]. A form feed separates words like a space. Every
/// byte that is not whitespace, a line break or a form feed belongs to
/// exactly one lexeme, in order.
pub fn tokenize(text: &str) -> Vec<Lexeme> {
    let mut out = Vec::new();
    let mut newlines = 0;
    let mut word = WordRun::default();
    for t in lex(text) {
        if word_like(&t, text) {
            word.push(t, text);
            continue;
        }
        if let Some(lexeme) = word.take(newlines) {
            out.push(lexeme);
            newlines = 0;
        }
        let kind = match t.kind {
            TokenKind::Newline => {
                if t.text(text).ends_with('\n') {
                    newlines += 1;
                }
                continue;
            }
            TokenKind::Whitespace | TokenKind::Unknown => continue,
            TokenKind::LineComment => LexemeKind::LineComment,
            TokenKind::BlockComment { .. } => LexemeKind::BlockComment,
            TokenKind::Str { .. } => LexemeKind::Str,
            TokenKind::Punct(b) => LexemeKind::Punct(b),
            TokenKind::Op => LexemeKind::Op,
            TokenKind::Ident | TokenKind::Number => continue,
        };
        out.push(Lexeme {
            kind,
            start: t.start,
            end: t.end,
            newlines_before: newlines,
        });
        newlines = 0;
    }
    if let Some(lexeme) = word.take(newlines) {
        out.push(lexeme);
    }
    out
}

/// Whether a token of [`lex`] is part of a [`LexemeKind::Word`].
fn word_like(t: &Token, text: &str) -> bool {
    match t.kind {
        TokenKind::Ident | TokenKind::Number | TokenKind::Punct(b'.' | b'+' | b'-') => true,
        TokenKind::Unknown => t.text(text) != "\x0c",
        _ => false,
    }
}

/// The word being joined by [`tokenize`], and what its first tokens say
/// about whether it reads as a number.
#[derive(Default)]
struct WordRun {
    start: usize,
    end: usize,
    tokens: usize,
    /// The first token is a sign.
    signed: bool,
    /// The first token after the optional sign is a number.
    digits: bool,
    /// The first token after the optional sign is `nan`, `inf` or
    /// `infinity` (in any case).
    special: bool,
}

impl WordRun {
    fn push(&mut self, t: Token, text: &str) {
        if self.tokens == 0 {
            self.start = t.start;
            self.signed = t.kind == TokenKind::Punct(b'+') || t.kind == TokenKind::Punct(b'-');
        }
        let after_sign = usize::from(self.signed);
        if self.tokens == after_sign {
            self.digits = t.kind == TokenKind::Number;
            self.special = t.kind == TokenKind::Ident
                && ["nan", "inf", "infinity"]
                    .iter()
                    .any(|s| t.text(text).eq_ignore_ascii_case(s));
        }
        self.tokens += 1;
        self.end = t.end;
    }
    fn take(&mut self, newlines_before: usize) -> Option<Lexeme> {
        if self.tokens == 0 {
            return None;
        }
        let after_sign = usize::from(self.signed);
        let number = self.digits || (self.special && self.tokens == after_sign + 1);
        let lexeme = Lexeme {
            kind: LexemeKind::Word { number },
            start: self.start,
            end: self.end,
            newlines_before,
        };
        *self = WordRun::default();
        Some(lexeme)
    }
}

#[cfg(test)]
mod tests;
