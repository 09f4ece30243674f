//! Short documentation of every keyword, shown on hover and in completion.

/// Markdown documentation of a keyword, or `None` for other words.
pub fn keyword_doc(word: &str) -> Option<&'static str> {
    Some(match word {
        "plan" => "`plan \"name\" { … }` — one release plan: its privacy block, datasets, queries and re-publications. A file declares exactly one plan.",
        "privacy" => "`privacy { … }` — who is protected and how much: `unit`, `adjacency`, `budget`, and optionally `accountant` and `population`.",
        "unit" => "`unit user by <id column>` | `unit row` | `unit event` — the privacy unit: what one neighbouring dataset adds, removes or changes. A user-level unit protects all of one person's rows, up to the contribution bounds.",
        "by" => "In `unit user by <col>`: the id column that identifies a person. In an aggregation, `by k1, k2, …`: group by public category columns or `bins(…)`; the cells are the product of their categories, the first key varying slowest.",
        "user" => "`unit user by <id>`: every statistic protects all rows of one user (bounded by `contribution { rows_per_unit N }`).",
        "event" => "`unit event`: each event (row) is protected, not each person: a person with many events is protected less.",
        "row" => "`unit row`: each row is protected; right when every person has exactly one row.",
        "adjacency" => "`adjacency add_remove | replace` — neighbouring datasets differ by adding/removing one unit (unbounded DP) or replacing one unit's data (bounded DP; sensitivities double for counts).",
        "add_remove" => "Neighbouring datasets differ by the presence of one unit (unbounded DP).",
        "replace" => "Neighbouring datasets differ by replacing one unit's data (bounded DP).",
        "budget" => "`budget epsilon ε [delta δ]` — the most the whole plan may spend, composed over every release of every query.",
        "epsilon" => "ε — the privacy-loss bound. In a budget: the plan's total. In `noise … epsilon ε [delta δ]`: the per-release ε the noise is calibrated to.",
        "delta" => "δ — the additive slack in Pr[M(D) ∈ A] ≤ e^ε·Pr[M(D′) ∈ A] + δ, for every event A and neighbouring D, D′; not the probability that everything leaks. Keep it well below 1/population.",
        "accountant" => "`accountant best | basic | advanced | classical | zcdp | rdp | gdp | pld` — how releases compose. `best` uses the tightest accountant that applies.",
        "best" => "Pick the accountant giving the smallest ε for this plan.",
        "basic" => "Basic composition: ε and δ add up.",
        "advanced" => "Advanced composition (Dwork–Rothblum–Vadhan): ε grows with √k for k releases.",
        "classical" => "The classical RDP closed form ε = a + 2√(a ln(1/δ)), a = Σ kΔ²/(2σ²): valid and loose, as textbooks print it; `best` never picks it.",
        "zcdp" => "Zero-concentrated DP: ρ adds up, converted to (ε, δ) at the end.",
        "rdp" => "Rényi DP: composes per order α, converted to (ε, δ) at the end.",
        "gdp" => "Gaussian DP (μ-GDP): exact for Gaussian mechanisms.",
        "pld" => "Privacy-loss distributions composed numerically (FFT): the tightest, and the slowest.",
        "population" => "`population N` — how many units the data may hold; used to warn when δ is not small next to 1/N (DP010).",
        "dataset" => "`dataset name { … }` — a private table: its `source`, `column`s, `contribution` bounds and `invalid_rows` rule.",
        "source" => "`source \"path\"` — where the runtime reads the dataset from.",
        "column" => "`column name : id | category {…} | int in [lo, hi] | float in [lo, hi]` — a column and its public type; bounds and domains must be public, fixed in advance.",
        "id" => "`id` — a column identifying the privacy unit; never aggregated.",
        "category" => "`category { \"a\", \"b\" }` — a column with a public domain of values; groups and histograms take their keys from it.",
        "int" => "`int in [lo, hi]` — an integer column clamped to public bounds.",
        "float" => "`float in [lo, hi]` — a real column clamped to public bounds.",
        "in" => "`in [lo, hi]` — public clamp bounds: values outside are clamped, so one row moves a sum by at most max(|lo|, |hi|).",
        "from" => "`from <date>` in a schedule's date range; `category from …` would read the domain from private data (rejected, DP006).",
        "until" => "`until <date>` — the end of a schedule's date range.",
        "contribution" => "`contribution { rows_per_unit N  groups_per_unit G  rows_per_group R }` — how much one unit may contribute; the runtime enforces these bounds by sampling.",
        "rows_per_unit" => "`rows_per_unit N` — at most N rows per unit are kept: the sensitivity of a count under a user-level unit.",
        "groups_per_unit" => "`groups_per_unit G` — a unit touches at most G groups of a grouped query or histogram.",
        "rows_per_group" => "`rows_per_group R` — at most R rows of one unit in any one group.",
        "windows_per_unit" => "`windows_per_unit W` — over the whole schedule of a windowed query, a unit is kept in at most W windows (its first W; the runtime keeps this state across runs, next to the ledger). With `rows_per_window` it bounds the L2 of the schedule's one vector release: r·√W for a count.",
        "rows_per_window" => "`rows_per_window R` — at most R rows of one unit in one window of a windowed query (also at most rows_per_unit); the runtime keeps R random rows.",
        "time" => "`time` — a UTC timestamp column (ISO 8601 `2026-03-02T14:05:00Z`, or unix seconds): the column a query's `window` cuts the rows by.",
        "window" => "`window <duration>` — each release of an `every` schedule reads only the rows whose time falls in its own slot [start, start + period); the window must equal the schedule's period (DP024). The whole schedule is then composed as ONE release over disjoint windows, bounded by `windows_per_unit` and `rows_per_window`.",
        "release" | "after" => "`release after <duration>` — with a `window` or a `cumulative` count: slot s is released once its window [start + s·period, start + (s+1)·period) has closed and the delay has passed, at start + (s+1)·period + delay (without it: when the window closes). Rows that arrive within the delay are counted; a row later than that is never counted (its window was read once, when released). Zero or more whole seconds (DP007); no window and no tree: DP024. It changes no ε.",
        "invalid_rows" => "`invalid_rows drop | clamp` — what the runtime does with rows outside a column's declared type.",
        "drop" => "Rows with invalid values are dropped.",
        "clamp" => "Invalid values are clamped into the declared bounds.",
        "query" => "`query name { aggregation  noise …  schedule … }` — one noisy statistic and how often it is released.",
        "count" => "`count(dataset)` — the number of rows (sensitivity: rows per unit).",
        "sum" => "`sum(dataset.column [by group])` — a clamped sum (sensitivity: rows per unit × max |bound|).",
        "mean" => "`mean(dataset.column)` — released as a noisy sum and a noisy count, each with its share of the noise.",
        "histogram" => "`histogram(dataset [where …] by key, …)` — a count per cell: per public category value, per bin (`bins(col, [edges])`), or per cell of the product of several keys (groups_per_unit and rows_per_group count cells; DP023 warns when most cells would be noise).",
        "quantile" => "`quantile(dataset.column, q)` — the level-q quantile of a bounded column, chosen from a public candidate grid (`candidates …`) by the exponential mechanism (`noise exponential`); ε = Δ/b with Δ = rows_per_unit·max(q, 1 − q) (add/remove) or rows_per_unit (replace).",
        "keys" | "data" => "`histogram(dataset by column keys from data [threshold auto | threshold τ])` — the keys are the column's values seen in the data; a key is released only when its noisy count is above τ (partition selection), so a key only one unit has almost never appears. The δ this costs is part of the plan's δ (half the budget's δ is kept for thresholds).",
        "threshold" => "`threshold auto` (default) derives τ from the δ kept for thresholds; `threshold τ` sets it, and the checker derives its δ (DP032 when it does not fit). A key only one unit brings passes with probability ≤ ½·e^{−(τ−C)/b} (Laplace), C = rows_per_group.",
        "quantiles" => "`quantiles(dataset.column, [q1, q2, …])` — one quantile per level, each by its own exponential mechanism; `epsilon ε` is split evenly between the levels.",
        "top" => "`top(dataset [where …] by key, …, k)` or `top(distinct dataset.unit_id by key, k)` — the keys of the k cells with the largest counts (rows, or units per cell), in order, without their counts: k selections by the exponential mechanism (`noise exponential`), each among the cells not chosen before; `epsilon ε` is split evenly between the ranks. ε = Δ/b per rank with Δ the counts' ℓ∞ sensitivity (rows_per_group, or 1 for units per cell), whatever the number of cells; under add_remove a cell is drawn ∝ exp(count/b), under replace ∝ exp(count/(2b)).",
        "cumulative" => "`cumulative count(d)` with `schedule every <period> for …` — the running total at every slot (rows whose time lies in the first t slots), by the binary tree mechanism: the ⌊T/2ˡ⌋ dyadic nodes of each of the ⌊log₂ T⌋ + 1 levels are ONE release (a row is in one node per level), instead of T fresh counts of the whole history; each total is read from the nodes closed by its slot (Honaker's online estimator), with an error that grows with the number of set bits of t (DP041).",
        "postprocess" => "`postprocess nonnegative, round` — steps applied, in order, to each value the query releases, after its noise: `nonnegative` (max(x, 0); the 95 % interval is clipped at 0 too) and `round` (the nearest integer, ties to even). They read only the released value, so they are post-processing and cost nothing; the ledger keeps the value before them (`raw_value`).",
        "nonnegative" => "`postprocess nonnegative`: a released value below 0 is published as 0 (free: post-processing of the released value).",
        "round" => "`postprocess round`: a released value is published as the nearest integer, ties to even (free: post-processing of the released value).",
        "candidates" => "`candidates [c1, c2, …]` | `candidates every <step>` — a quantile's public candidate grid: finite, strictly increasing, within the column's bounds (DP030); `every` steps from the lower bound to the upper one.",
        "exponential" => "The exponential mechanism (quantiles and top-k only): candidate c with probability ∝ exp(score(c)/(2b)) — a quantile's score(c) = −|#{x < c} − q·n|, a top-k's the cell's count (∝ exp(count/b) under add_remove, where every count moves the same way); pure ε-DP with ε = Δ/b, and ε-bounded-range (ε²/8-zCDP). Sampled exactly (rejection with exact Bernoulli(exp(−γ)) coins). Its accuracy is a score error: within 2b·ln(20m) of the best of m candidates at 95 % (b·ln(20m) for a top-k under add_remove).",
        "noise" => "`noise laplace|gaussian|discrete_laplace|discrete_gaussian|exponential  scale b | sigma σ | epsilon ε [delta δ] | auto [weight w]` — the mechanism and its noise level.",
        "laplace" => "Laplace noise with scale b: pure ε-DP, ε = L1 / b per release.",
        "gaussian" => "Gaussian noise with standard deviation σ: (ε, δ)-DP, calibrated to the L2 sensitivity.",
        "discrete_laplace" => "Discrete Laplace (geometric) noise on integers: exact, pure ε-DP.",
        "discrete_gaussian" => "Discrete Gaussian noise on integers (Canonne–Kamath–Steinke): exact sampling, (ε, δ)-DP.",
        "scale" => "`scale b` — the Laplace scale; standard deviation b√2.",
        "sigma" => "`sigma σ` — the Gaussian standard deviation.",
        "auto" => "`auto [weight w]` — the checker solves the noise level so that the whole plan fits its budget; `auto` queries share what the others leave, by weight.",
        "weight" => "`weight w` — an `auto` query's share of the remaining budget, relative to the other `auto` queries.",
        "accuracy" => "`accuracy ci95 <= t` | `accuracy std <= s` — the most noise each value the query releases may carry: the half-width of its central 95 % interval, or its standard deviation. Checked (DP019); with `noise … auto` the noise is solved from it (the largest that meets it) instead of from the budget.",
        "ci95" => "`ci95` — the half-width t of the noise's central 95 % interval: P(|noise| ≤ t) ≥ 0.95 (Laplace: b·ln 20; Gaussian: 1.959964·σ).",
        "std" => "`std` — the noise's standard deviation (Laplace: b·√2; Gaussian: σ).",
        "sensitivity" => "`sensitivity l1 x [l2 y]` — a declared sensitivity: must not be below the derived one (DP003).",
        "l1" => "The L1 sensitivity: how much one unit moves the sum of the absolute values of the outputs (Laplace noise).",
        "l2" => "The L2 sensitivity: how much one unit moves the outputs in Euclidean norm (Gaussian noise).",
        "schedule" => "`schedule once | N times | every <duration> for <duration> | every <duration> from <date> until <date>` — how many fresh releases are made; each one is charged.",
        "once" => "One release.",
        "times" => "`N times` — N fresh releases on the same data: each is charged; consider re-publishing instead (DP009).",
        "every" => "`every <n> <unit>` — a periodic release.",
        "for" => "`for <n> <unit>` — how long a periodic schedule lasts.",
        "second" | "seconds" | "minute" | "minutes" | "hour" | "hours" | "day" | "days" | "week" | "weeks" => {
            "A time unit of a schedule's period or length."
        }
        "where" => "`count(trips where city == \"Madrid\" and fare > 10)` — aggregate only the rows a public predicate holds for: declared columns compared with literals (`==`, `!=`, `<`, `<=`, `>`, `>=`; a category only `==`, `!=`, `in { … }`), joined by `and`, `or`, `not` and parentheses. Decided per row before bounding. Under `replace` adjacency a replaced row can enter or leave the filter: a row-level count then has sensitivity 1 (0 without the filter).",
        "and" => "`p and q` — both predicates hold (in a `where` filter).",
        "or" => "`p or q` — either predicate holds (in a `where` filter).",
        "not" => "`not p` — the predicate does not hold (in a `where` filter).",
        "bins" => "`bins(column, [e0, e1, …, en] [outside drop|clamp])` — a group key that cuts a number at public, strictly increasing edges into the bins [e0, e1), …, [e(n-1), en] (DP022). A value outside [e0, en] is dropped (`outside drop`, the default) or put into the first or last bin (`outside clamp`). Bins are categories for every purpose: groups_per_unit, rows_per_group, the release's keys (`[0, 1)`, …).",
        "outside" => "`outside drop | clamp` — in `bins(…)`: what happens to a value outside the edges: dropped (default) or put into the end bin.",
        "distinct" => "`count(distinct dataset.id_column)` — the number of distinct ids (e.g. daily active users). Under `unit user by` that column, sensitivity 1 whatever the rows per unit; under a row or event unit, 1 under both adjacencies (each row adds or removes at most one id). Counted exactly, on keyed hashes of the ids. Grouped, `count(distinct d.unit_id by k)` is users per cell: a unit adds 1 to each of at most groups_per_unit cells (L1 = m, L2 = √m).",
        "publish" => "`publish name = released [when released > x]` — re-publishes an already released value: post-processing, it costs nothing.",
        "when" => "`when <released value> <cmp> <number>` — a condition on a released value (free); a condition on private data is rejected (DP006).",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_keyword_is_documented() {
        for kw in dpplan_syntax::lexer::KEYWORDS {
            assert!(
                super::keyword_doc(kw).is_some(),
                "no documentation for `{kw}`"
            );
        }
    }
}
