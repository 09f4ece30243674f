use super::*;

fn kinds(text: &str) -> Vec<(TokenKind, &str)> {
    lex(text).map(|t| (t.kind, t.text(text))).collect()
}

/// Checks that the tokens of `text` (from `from` on) cover it exactly: in
/// order, contiguous, non-empty, on character boundaries, up to the end.
fn assert_total(text: &str, from: usize) {
    let mut pos = from;
    let mut joined = String::new();
    for t in Lexer::starting_at(text, from) {
        assert_eq!(t.start, pos, "{text:?}: a gap or an overlap at {pos}");
        assert!(t.end > t.start, "{text:?}: an empty token at {pos}");
        assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
        joined.push_str(t.text(text));
        pos = t.end;
    }
    assert_eq!(pos, text.len(), "{text:?}: the tokens stop at {pos}");
    assert_eq!(joined, text[from..], "{text:?}: the tokens' texts differ");
}

/// Every byte that is not whitespace, a line break or a form feed is in
/// exactly one lexeme, and the lexemes come in order.
fn assert_lexemes_cover(text: &str) {
    let lexemes = tokenize(text);
    let mut covered = vec![false; text.len()];
    let mut last_end = 0;
    for l in &lexemes {
        assert!(l.start >= last_end && l.end > l.start, "{text:?}: {l:?}");
        assert!(text.is_char_boundary(l.start) && text.is_char_boundary(l.end));
        covered[l.start..l.end].iter_mut().for_each(|c| *c = true);
        let gap = &text[last_end..l.start];
        assert_eq!(
            l.newlines_before,
            gap.matches('\n').count(),
            "{text:?}: {l:?}"
        );
        last_end = l.end;
    }
    for t in lex(text) {
        let space =
            matches!(t.kind, TokenKind::Whitespace | TokenKind::Newline) || t.text(text) == "\x0c";
        for (i, &c) in covered.iter().enumerate().take(t.end).skip(t.start) {
            assert_eq!(c, !space, "{text:?}: byte {i} in {t:?}");
        }
    }
}

fn plans() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut out = Vec::new();
    for dir in ["examples", "tests/corpus", "tests/lsp/fixtures"] {
        let mut stack = vec![std::path::PathBuf::from(root).join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "dpplan") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    out.push((p.display().to_string(), text));
                }
            }
        }
    }
    assert!(out.len() >= 40, "examples and corpus found: {}", out.len());
    out
}

#[test]
fn every_plan_lexes_totally_and_round_trips() {
    for (path, text) in plans() {
        assert_total(&text, 0);
        assert_lexemes_cover(&text);
        // A well-formed plan has no unknown character and every string and
        // comment is closed.
        if crate::parse_strict(&text).is_ok() {
            for t in lex(&text) {
                assert!(
                    !matches!(
                        t.kind,
                        TokenKind::Unknown
                            | TokenKind::Str { terminated: false }
                            | TokenKind::BlockComment { terminated: false }
                    ),
                    "{path}: {t:?} {:?}",
                    t.text(&text)
                );
            }
        }
    }
}

#[test]
fn random_bytes_lex_totally_from_any_offset() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // Arbitrary bytes (lossily decoded, as the fuzzer does) and text made of
    // the characters the rules are about.
    let alphabet: Vec<char> = "\"\\/*\r\n \t\x0c{}()[],:.+-=<>!_aZ09eé€😀\u{0}#;'"
        .chars()
        .collect();
    for round in 0..4000 {
        let len = (next() % 64) as usize;
        let text = if round % 2 == 0 {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        };
        assert_total(&text, 0);
        assert_lexemes_cover(&text);
        for from in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            assert_total(&text, from);
        }
    }
}

#[test]
fn offsets_outside_the_text_or_inside_a_character_give_no_token() {
    let text = "é";
    assert_eq!(token_at(text, 1), None);
    assert_eq!(token_at(text, 2), None);
    assert_eq!(token_at(text, 99), None);
    assert_eq!(Lexer::starting_at(text, 1).count(), 0);
    assert_eq!(Lexer::starting_at(text, 99).count(), 0);
    assert_eq!(
        token_at(text, 0).map(|t| (t.kind, t.end)),
        Some((TokenKind::Unknown, 2))
    );
}

#[test]
fn token_kinds() {
    use TokenKind::*;
    let text = "plan \"a // b\" { /* c */ d.x>=-1e-6 // e\r\n\t_f2 [0,1] }\n\"open";
    assert_eq!(
        kinds(text),
        vec![
            (Ident, "plan"),
            (Whitespace, " "),
            (Str { terminated: true }, "\"a // b\""),
            (Whitespace, " "),
            (Punct(b'{'), "{"),
            (Whitespace, " "),
            (BlockComment { terminated: true }, "/* c */"),
            (Whitespace, " "),
            (Ident, "d"),
            (Punct(b'.'), "."),
            (Ident, "x"),
            (Op, ">="),
            (Punct(b'-'), "-"),
            (Number, "1e"),
            (Punct(b'-'), "-"),
            (Number, "6"),
            (Whitespace, " "),
            (LineComment, "// e"),
            (Newline, "\r\n"),
            (Whitespace, "\t"),
            (Ident, "_f2"),
            (Whitespace, " "),
            (Punct(b'['), "["),
            (Number, "0"),
            (Punct(b','), ","),
            (Number, "1"),
            (Punct(b']'), "]"),
            (Whitespace, " "),
            (Punct(b'}'), "}"),
            (Newline, "\n"),
            (Str { terminated: false }, "\"open"),
        ]
    );
}

#[test]
fn line_breaks_end_comments_and_strings_as_the_grammar_says() {
    use TokenKind::*;
    // A lone `\r` is a line break (pest's NEWLINE): it ends a `//` comment
    // and an unclosed string, and `\r\n` is one line break.
    assert_eq!(
        kinds("// a\rb"),
        vec![(LineComment, "// a"), (Newline, "\r"), (Ident, "b")]
    );
    assert_eq!(
        kinds("\"a\rb\""),
        vec![
            (Str { terminated: false }, "\"a"),
            (Newline, "\r"),
            (Ident, "b"),
            (Str { terminated: false }, "\""),
        ]
    );
    assert_eq!(
        kinds("\"a\r\n"),
        vec![(Str { terminated: false }, "\"a"), (Newline, "\r\n")]
    );
    assert_eq!(
        kinds("\r\r\n\n"),
        vec![(Newline, "\r"), (Newline, "\r\n"), (Newline, "\n")]
    );
    // A block comment runs over lines, to its `*/` or to the end.
    assert_eq!(
        kinds("/* a\n*/b/*/"),
        vec![
            (BlockComment { terminated: true }, "/* a\n*/"),
            (Ident, "b"),
            (BlockComment { terminated: false }, "/*/"),
        ]
    );
    // An escape skips the next byte, a line break or a quote included.
    assert_eq!(
        kinds("\"a\\\"b\\\nc\" \"\\"),
        vec![
            (Str { terminated: true }, "\"a\\\"b\\\nc\""),
            (Whitespace, " "),
            (Str { terminated: false }, "\"\\"),
        ]
    );
}

#[test]
fn what_the_grammar_does_not_know_is_unknown() {
    use TokenKind::*;
    assert_eq!(
        kinds("\x0c;é*/"),
        vec![
            (Unknown, "\x0c"),
            (Unknown, ";"),
            (Unknown, "é"),
            (Unknown, "*"),
            (Unknown, "/"),
        ]
    );
}

#[test]
fn never_splits_a_character() {
    for text in ["\"\\é\"", "é€😀", "/*é", "\"😀", "x\\", "\"\\😀", "//é\r"] {
        assert_total(text, 0);
        for t in tokenize(text) {
            assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
        }
    }
}

#[test]
fn lexemes_join_words_and_drop_whitespace() {
    let text = "plan \"a // b\" { /* c */ x.y>=3 // d\r\n  in [0,1] }\n\"open";
    let lexemes: Vec<_> = tokenize(text)
        .iter()
        .map(|t| (t.kind, t.text(text)))
        .collect();
    let word = LexemeKind::Word { number: false };
    let number = LexemeKind::Word { number: true };
    assert_eq!(
        lexemes,
        vec![
            (word, "plan"),
            (LexemeKind::Str, "\"a // b\""),
            (LexemeKind::Punct(b'{'), "{"),
            (LexemeKind::BlockComment, "/* c */"),
            (word, "x.y"),
            (LexemeKind::Op, ">="),
            (number, "3"),
            (LexemeKind::LineComment, "// d"),
            (word, "in"),
            (LexemeKind::Punct(b'['), "["),
            (number, "0"),
            (LexemeKind::Punct(b','), ","),
            (number, "1"),
            (LexemeKind::Punct(b']'), "]"),
            (LexemeKind::Punct(b'}'), "}"),
            (LexemeKind::Str, "\"open"),
        ]
    );
    assert_eq!(tokenize(text)[8].newlines_before, 1);
    // a form feed separates words; a lone `\r` is not counted as a new line
    let text = "a\x0cb\rc\r\n\nd";
    let lexemes = tokenize(text);
    let words: Vec<_> = lexemes
        .iter()
        .map(|t| (t.text(text), t.newlines_before))
        .collect();
    assert_eq!(words, vec![("a", 0), ("b", 0), ("c", 0), ("d", 2)]);
}

#[test]
fn numbers_among_words() {
    for (word, number) in [
        ("1e-6", true),
        ("-1.5", true),
        ("+2026-01-01T10", true),
        ("1_000", true),
        ("NaN", true),
        ("-inf", true),
        ("+Infinity", true),
        ("nan.x", false),
        ("-infx", false),
        ("+-1", false),
        ("-", false),
        ("x1", false),
        ("_1", false),
        ("é1", false),
        ("d.x", false),
    ] {
        let lexemes = tokenize(word);
        assert_eq!(lexemes.len(), 1, "{word}");
        assert_eq!(lexemes[0].kind, LexemeKind::Word { number }, "{word}");
        assert_eq!(lexemes[0].text(word), word);
    }
}

#[test]
fn identifiers() {
    for name in ["a", "_", "_a1", "visits", "query", "Z9_"] {
        assert!(is_ident(name), "{name}");
    }
    for name in ["", "1a", "a.b", "a b", "é", "a-b", "a\n", " a"] {
        assert!(!is_ident(name), "{name:?}");
    }
}

/// The string literals of a pest grammar: (text, case-insensitive), with
/// comments skipped.
fn grammar_literals(grammar: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut chars = grammar.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' | '\'' => {
                let mut lit = String::new();
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => lit.extend(chars.next()),
                        d if d == c => break,
                        d => lit.push(d),
                    }
                }
                if c == '"' {
                    out.push((lit, prev == '^'));
                }
            }
            _ => {}
        }
        prev = c;
    }
    out
}

/// The grammar's words that are not keywords, and why.
const NOT_KEYWORDS: &[(&str, &str)] = &[
    ("nan", "`^\"nan\"`: a spelling of a number, in any case"),
    ("inf", "`^\"inf\"`: a spelling of a number, in any case"),
    (
        "infinity",
        "`^\"infinity\"`: a spelling of a number, in any case",
    ),
    ("e", "`^\"e\"`: a number's exponent, inside the number"),
    ("_", "a number's digit separator, inside the number"),
    ("n", "the escape `\\n`, inside a string"),
    ("t", "the escape `\\t`, inside a string"),
    ("r", "the escape `\\r`, a carriage return in WHITESPACE"),
    ("T", "a date's time separator, inside the date"),
    ("Z", "a date's UTC suffix, inside the date"),
];

/// A keyword literal of the grammar is a string literal that reads as an
/// identifier (a letter or `_`, then letters, digits and `_`): `"plan"` in
/// `kw_plan`, `"add_remove"` in `adjacency`, `"laplace"` in `noise_kind`,
/// `"l1"` in `norm`, … Identifier-shaped literals that are parts of another
/// literal — the case-insensitive spellings of numbers (`^"nan"`, `^"e"`),
/// a number's `"_"`, a date's `"T"` and `"Z"`, a string's escapes `"n"` and
/// `"t"` — are not keywords: they are listed in `NOT_KEYWORDS` with the
/// reason. Every identifier-shaped
/// literal must be in exactly one of the two lists, and every entry of
/// either list must be a literal of the grammar.
#[test]
fn keywords_are_the_grammars_in_both_directions() {
    let grammar = include_str!("../../../../grammar/dpplan.pest");
    let literals = grammar_literals(grammar);
    // The extraction itself works: punctuation and keywords are found.
    assert!(literals.iter().any(|(l, _)| l == "{"));
    assert!(literals.iter().any(|(l, _)| l == ">="));
    assert!(literals.iter().any(|(l, ci)| l == "nan" && *ci));
    assert!(literals.iter().any(|(l, ci)| l == "plan" && !*ci));
    let words: Vec<&(String, bool)> = literals.iter().filter(|(l, _)| is_ident(l)).collect();
    for (word, case_insensitive) in &words {
        let keyword = is_keyword(word);
        let other = NOT_KEYWORDS.iter().any(|(w, _)| w == word);
        assert!(
            keyword != other,
            "grammar word `{word}`: in KEYWORDS: {keyword}, in NOT_KEYWORDS: {other} (it must be in exactly one)"
        );
        assert!(
            !(keyword && *case_insensitive),
            "keyword `{word}` is matched in any case by the grammar"
        );
    }
    for kw in KEYWORDS {
        assert!(
            words.iter().any(|(w, ci)| w == kw && !ci),
            "KEYWORDS lists `{kw}`, which the grammar does not have"
        );
    }
    for (word, _) in NOT_KEYWORDS {
        assert!(
            words.iter().any(|(w, _)| w == word),
            "NOT_KEYWORDS lists `{word}`, which the grammar does not have"
        );
    }
    let mut unique = KEYWORDS.to_vec();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), KEYWORDS.len(), "KEYWORDS lists a word twice");
}

#[test]
fn the_literal_reader_skips_comments_and_escapes() {
    let lits = grammar_literals("a = { \"x\" ~ ^\"Y\" } // \"not\"\nb = { \"\\\"\" | 'c' }");
    assert_eq!(
        lits,
        vec![
            ("x".to_string(), false),
            ("Y".to_string(), true),
            ("\"".to_string(), false)
        ]
    );
}
