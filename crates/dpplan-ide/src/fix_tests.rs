//! Every quick fix the editor offers fixes: applied, the plan no longer
//! reports what it claimed to fix, and no new error appears.

use dpplan_diagnostics::{Code, Diagnostic, Severity};

use crate::tests::every_example;
use crate::{actions, CodeAction, Document};

/// Every `tests/corpus/*.dpplan` and every example, sorted.
fn every_plan() -> Vec<std::path::PathBuf> {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut out: Vec<_> = std::fs::read_dir(corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "dpplan"))
        .collect();
    out.sort();
    out.extend(every_example());
    out
}

fn count(ds: &[Diagnostic], code: Code, errors_only: bool) -> usize {
    ds.iter()
        .filter(|d| d.code == code && (!errors_only || d.severity == Severity::Error))
        .map(|d| {
            if code == Code::FreshRerelease {
                1 + d.secondary.len().saturating_sub(1)
            } else {
                1
            }
        })
        .sum()
}

/// The fix applied to `text` and the plan checked again from scratch (a new
/// document, no cache): what `claimed` reports is less, and no error code is
/// reported more often.
fn assert_fixes(name: &str, text: &str, before: &[Diagnostic], a: &CodeAction) {
    let claimed = a.diagnostic.as_ref().expect("a fix names its diagnostic");
    assert!(!a.edits.is_empty(), "{name}: `{}` edits nothing", a.title);
    let fixed = actions::apply(text, &a.edits);
    let after = Document::new(fixed.clone());
    let after = after.diagnostics();
    assert!(
        count(after, claimed.code, false) < count(before, claimed.code, false),
        "{name}: `{}` leaves {}: {after:?}\n{fixed}",
        a.title,
        claimed.code
    );
    for d in after.iter().filter(|d| d.severity == Severity::Error) {
        assert!(
            count(after, d.code, true) <= count(before, d.code, true),
            "{name}: `{}` adds {} ({}):\n{fixed}",
            a.title,
            d.code,
            d.message
        );
    }
}

#[test]
fn every_fix_offered_on_the_corpus_fixes() {
    let mut applied = std::collections::BTreeMap::<String, usize>::new();
    for path in every_plan() {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = Document::new(text.clone());
        for d in doc.diagnostics() {
            for a in doc.code_actions_resolved(d.primary.span) {
                assert_fixes(&name, &text, doc.diagnostics(), &a);
                *applied
                    .entry(a.diagnostic.unwrap().code.to_string())
                    .or_default() += 1;
            }
        }
    }
    // the corpus has fixes for each kind of quick fix (not a vacuous pass)
    for code in ["DP000", "DP001", "DP002", "DP009", "DP011"] {
        assert!(
            applied.contains_key(code),
            "no {code} fix applied: {applied:?}"
        );
    }
}

/// A negative control: when no noise of one query alone fits the budget,
/// neither `auto` nor the solved value is offered (both would still be
/// over budget), though the same plan with a smaller second query gets both.
#[test]
fn a_calibration_that_cannot_fit_is_not_offered() {
    let plan = |other: &str| {
        format!("plan \"p\" {{\n  privacy {{\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }}\n  dataset d {{\n    column x : int in [0, 1]\n  }}\n  query small {{\n    count(d)\n    noise laplace scale 0.5\n    schedule every 1 day for 4 days\n  }}\n  query other {{\n    sum(d.x)\n    noise laplace scale {other}\n    schedule once\n  }}\n}}\n")
    };
    let titles = |text: &str| -> Vec<String> {
        let doc = Document::new(text.to_string());
        let d = doc
            .diagnostics()
            .iter()
            .find(|d| d.code == Code::OverBudget)
            .expect("over budget")
            .clone();
        doc.code_actions_resolved(d.primary.span)
            .into_iter()
            .filter(|a| a.title.contains("`small`"))
            .map(|a| a.title)
            .collect()
    };
    assert_eq!(titles(&plan("20")).len(), 2, "{:?}", titles(&plan("20")));
    // `other` alone spends ε = 2 > 1: calibrating `small` cannot fit
    assert_eq!(titles(&plan("0.5")), Vec::<String>::new());
}
