//! The VS Code highlighting grammar (editors/vscode/syntaxes/) names every
//! keyword the pest grammar has: a word added to the language and forgotten
//! there would be shown as a plain identifier in the editor.

use dpplan_syntax::lexer::KEYWORDS;

/// The words of every `\b(a|b|c?)\b` alternation in the file (`c?` gives
/// `c` and the word without its last letter).
fn highlighted_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split("\\\\b(").skip(1) {
        let Some(end) = chunk.find(')') else { continue };
        for alt in chunk[..end].split('|') {
            if let Some(stem) = alt.strip_suffix('?') {
                words.push(stem.to_string());
                words.push(stem[..stem.len() - 1].to_string());
            } else if alt.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                words.push(alt.to_string());
            }
        }
    }
    words
}

#[test]
fn every_keyword_is_highlighted_in_vscode() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../editors/vscode/syntaxes/dpplan.tmLanguage.json"
    );
    let text = std::fs::read_to_string(path).expect("the VS Code grammar");
    let words = highlighted_words(&text);
    let missing: Vec<&str> = KEYWORDS
        .iter()
        .copied()
        .filter(|k| !words.iter().any(|w| w == k))
        .collect();
    assert!(
        missing.is_empty(),
        "keywords not highlighted by {path}: {missing:?}"
    );
    // the parse of the file itself is checked: a word that is surely there
    assert!(words.iter().any(|w| w == "minute") && words.iter().any(|w| w == "plan"));
}
