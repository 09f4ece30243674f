use serde::{Serialize, Serializer};

use crate::Severity;

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $num:literal, $name:literal, $sev:ident, $title:literal; )*) => {
        /// Every diagnostic dpplan can emit has one stable code, documented in
        /// docs/diagnostics.md under the same anchor (`#dp001`, ...).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable code, e.g. `DP001`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => concat!("DP", $num),)* }
            }
            /// A short kebab-case name, e.g. `unbounded-contribution`.
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }
            /// A one-line title for documentation and rule tables (SARIF).
            pub fn title(self) -> &'static str {
                match self { $(Code::$variant => $title,)* }
            }
            pub fn default_severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$sev,)* }
            }
            pub fn from_str_code(s: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.as_str().eq_ignore_ascii_case(s))
            }
            /// The code a person typed: `DP009`, `dp009`, `dp9`, `009`, `9`
            /// or the name `fresh-rerelease` (`dpplan rule`, policy files,
            /// `dpplan: allow` comments).
            pub fn parse(typed: &str) -> Option<Code> {
                let t = typed.trim();
                if let Some(c) = Code::from_str_code(t) {
                    return Some(c);
                }
                let digits = t.strip_prefix("DP").or_else(|| t.strip_prefix("dp")).unwrap_or(t);
                if let Ok(n) = digits.parse::<u32>() {
                    return Code::from_str_code(&format!("DP{n:03}"));
                }
                Code::ALL.iter().copied().find(|c| c.name() == t)
            }
            /// The policy's own codes (DP100 and up): organisational, not
            /// about the soundness of the plan's guarantee.
            pub fn is_policy(self) -> bool {
                self.as_str()[2..].parse::<u32>().is_ok_and(|n| n >= 100)
            }
            /// An error of the checker (not the policy's): it means no sound
            /// guarantee can be claimed, so it can be neither lowered by a
            /// policy nor suppressed.
            pub fn is_checker_error(self) -> bool {
                self.default_severity() == Severity::Error && !self.is_policy()
            }
        }
    };
}

codes! {
    /// The text does not follow the grammar.
    Syntax = "000", "syntax", Error, "The plan does not follow the dpplan grammar";
    /// A user-level unit without a rows-per-unit bound.
    UnboundedContribution = "001", "unbounded-contribution", Error, "A user-level unit needs a rows_per_unit bound";
    /// A value aggregate over a column without public bounds.
    MissingBounds = "002", "missing-bounds", Error, "A sum or mean needs public bounds on its column";
    /// A declared sensitivity below the derived one.
    SensitivityTooLow = "003", "sensitivity-too-low", Error, "The declared sensitivity is below the derived one";
    /// A grouped query without a groups-per-unit bound.
    UnboundedGroups = "004", "unbounded-groups", Error, "A grouped query under a user-level unit needs groups_per_unit";
    /// A declared sensitivity in the norm the mechanism does not use.
    WrongNorm = "005", "wrong-norm", Error, "The mechanism is calibrated to a norm the plan does not bound";
    /// A parameter computed from private data.
    DataDependent = "006", "data-dependent-parameter", Error, "A parameter computed from private data is not accounted";
    /// An invalid numeric parameter.
    InvalidParameter = "007", "invalid-parameter", Error, "A parameter is out of its valid range";
    /// An event or row unit on a dataset with an id column.
    WeakUnit = "008", "per-person-guarantee", Warning, "An event- or row-level unit on data about persons";
    /// A statistic re-released with fresh noise.
    FreshRerelease = "009", "fresh-rerelease", Hint, "A statistic is re-released with fresh noise";
    /// δ not small next to the population.
    LargeDelta = "010", "large-delta", Warning, "δ is not small next to 1/population";
    /// The composed plan exceeds its budget.
    OverBudget = "011", "over-budget", Error, "The composed plan exceeds its budget";
    /// A name that is not defined.
    Undefined = "012", "undefined-name", Error, "A name is used but not defined";
    /// A name defined twice.
    Duplicate = "013", "duplicate-name", Error, "A name or setting is defined twice";
    /// Syntax reserved for a later version.
    Unsupported = "014", "unsupported", Error, "The construct is reserved but not supported yet";
    /// A required declaration is missing.
    Missing = "015", "missing-declaration", Error, "A required declaration is missing";
    /// The input exceeds a safety limit.
    Limit = "016", "limit-exceeded", Error, "The input exceeds a safety limit";
    /// An aggregation applied to a column of the wrong type.
    TypeMismatch = "017", "type-mismatch", Error, "An aggregation is applied to a column of the wrong type";
    /// The accounting engine could not produce a bound.
    Accounting = "018", "accounting", Error, "The accounting engine could not bound the plan";
    /// A query's noise does not meet its `accuracy` requirement, or the
    /// requirement and the budget cannot both hold.
    AccuracyTarget = "019", "accuracy-target", Error, "A query's noise does not meet its accuracy requirement";
    /// A `// dpplan: allow` comment that is malformed, suppresses nothing,
    /// or names an error that cannot be suppressed.
    Suppression = "020", "suppression", Warning, "A `dpplan: allow` comment is malformed, unused or not allowed";
    /// A filter names a category outside its column's public domain.
    UnknownCategory = "021", "unknown-category", Error, "A filter names a category outside the column's public domain";
    /// Bin edges that are not public, finite and strictly increasing.
    InvalidBins = "022", "invalid-bins", Error, "Bin edges must be at least two finite, strictly increasing numbers";
    /// A grouped query with so many cells that most will be pure noise.
    SparseCells = "023", "sparse-cells", Warning, "Most cells of a grouped query will be pure noise";
    /// A `window` whose length, schedule, time column or horizon bound is
    /// missing or does not fit.
    Window = "024", "window", Error, "A time window needs a time column, a matching schedule and a windows_per_unit bound";
    /// A quantile's candidate grid is missing, unordered, out of bounds
    /// or too large.
    InvalidCandidates = "030", "invalid-candidates", Error, "A quantile needs a public grid of finite, strictly increasing candidates within the column's bounds";
    /// `keys from data` where partition selection does not apply.
    KeysFromData = "031", "keys-from-data", Error, "Keys from the data need a histogram over one category column, additive noise and a budget δ";
    /// A declared threshold whose δ does not fit the plan's share for it.
    ThresholdTooLow = "032", "threshold-too-low", Error, "The threshold lets a key that only one unit has through with more probability than the budget's δ allows";
    /// A `cumulative` query that is not a plain count, has no `every`
    /// schedule or time column, or asks for what its tree cannot give.
    Cumulative = "041", "cumulative", Error, "A cumulative count needs a plain count, an `every` schedule, a time column and Laplace or Gaussian noise";
    /// The plan claims more than the policy's largest ε or δ.
    PolicyBudget = "100", "policy-budget", Error, "The plan claims more ε or δ than the policy allows";
    /// δ is not below 1/population^k, or the population is missing.
    PolicyDelta = "101", "policy-delta", Error, "δ is not small enough next to the population the policy asks for";
    /// A unit or adjacency the policy does not allow.
    PolicyUnit = "102", "policy-unit", Error, "The privacy unit or adjacency is not one the policy allows";
    /// A mechanism or accountant the policy does not allow.
    PolicyMechanism = "103", "policy-mechanism", Error, "A mechanism or accountant the policy does not allow";
    /// More releases than the policy allows.
    PolicyReleases = "104", "policy-releases", Error, "More releases than the policy allows";
    /// Less noise, relative to the sensitivity, than the policy asks for.
    PolicyNoise = "105", "policy-noise", Error, "Less noise relative to the sensitivity than the policy asks for";
    /// A query without the accuracy requirement the policy asks for.
    PolicyAccuracy = "106", "policy-accuracy", Error, "A query states no accuracy requirement, which the policy asks for";
    /// The plans reading one data source spend more than its shared budget.
    SharedBudget = "107", "shared-budget", Error, "The plans reading one data source together exceed its shared budget";
    /// The policy file that governs the plan cannot be used (the language
    /// server's; `dpplan check` refuses to run instead).
    PolicyFile = "108", "policy-file", Error, "The dpplan.toml that governs the plan cannot be read or is invalid";
    /// A membership test could do better than the policy's cap on its
    /// true-positive rate at a false-positive rate.
    PolicyAttackRisk = "109", "policy-attack-risk", Error, "A membership test's true-positive rate could exceed the policy's cap";
}

impl Code {
    /// Where the code is documented, relative to the repository root.
    pub fn doc_path(self) -> String {
        format!("docs/diagnostics.md#{}", self.as_str().to_ascii_lowercase())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
