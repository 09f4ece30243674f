//! Typos, the way a person makes them: "did you mean …?" for a name that
//! is not declared, and no cascade from an item that did not parse (a
//! dataset with a typo is declared, only broken: the queries that read it
//! are not told that it does not exist).

use dpplan_diagnostics::Diagnostic;
use dpplan_syntax::ast;
use dpplan_syntax::ItemKind;

/// The names of the plan's items that did not parse, by kind.
#[derive(Debug, Default, Clone)]
pub(super) struct BrokenNames {
    names: Vec<(ItemKind, String)>,
}

impl BrokenNames {
    pub(super) fn of(plan: &ast::Plan) -> Self {
        BrokenNames {
            names: plan
                .broken_names
                .iter()
                .map(|b| (b.kind, b.name.value.clone()))
                .collect(),
        }
    }

    /// A dataset of this name is declared but did not parse: its syntax
    /// error is the one to fix, and what reads it cannot be checked yet.
    pub(super) fn dataset(&self, name: &str) -> bool {
        self.has(ItemKind::Dataset, name)
    }

    /// A query or publish of this name is declared but did not parse.
    pub(super) fn release(&self, name: &str) -> bool {
        self.has(ItemKind::Query, name) || self.has(ItemKind::Publish, name)
    }

    fn has(&self, kind: ItemKind, name: &str) -> bool {
        self.names.iter().any(|(k, n)| *k == kind && n == name)
    }
}

/// `d` with "did you mean `x`?" when one of the declared `names` is a
/// likely misspelling of `typed` (the closest, ties to the first in
/// alphabetical order, so the suggestion does not depend on hashing).
pub(super) fn suggest_name<'a>(
    d: Diagnostic,
    typed: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Diagnostic {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    match dpplan_diagnostics::did_you_mean(typed, names) {
        Some(meant) => d.suggest(meant),
        None => d,
    }
}
