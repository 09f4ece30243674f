//! "Did you mean …?": the allowed word closest to a misspelt one.

/// The candidate closest to `typed` by optimal-string-alignment distance
/// (one edit: a letter inserted, deleted, replaced, or two adjacent letters
/// swapped), when it is close enough to be a slip: at most one edit for
/// words of up to four letters, then one more per three letters (`laplce`
/// → `laplace`), and always fewer edits than the shorter word has letters.
/// Case differences count as edits only when the words differ otherwise
/// (`Laplace` → `laplace`). `None` when nothing is that close, or when
/// `typed` is itself a candidate. The first candidate wins a tie.
pub fn did_you_mean<'a, I>(typed: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = typed.to_lowercase();
    let limit = 1 + typed.chars().count().saturating_sub(4) / 3;
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == typed {
            return None;
        }
        let distance = if candidate.to_lowercase() == lower {
            0
        } else {
            strsim::osa_distance(&lower, &candidate.to_lowercase())
        };
        let shorter = typed.chars().count().min(candidate.chars().count());
        if distance <= limit && distance < shorter && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    const NOISE: [&str; 4] = [
        "laplace",
        "gaussian",
        "discrete_laplace",
        "discrete_gaussian",
    ];

    #[test]
    fn a_slip_finds_the_word() {
        assert_eq!(did_you_mean("laplce", NOISE), Some("laplace"));
        assert_eq!(did_you_mean("lpalace", NOISE), Some("laplace"));
        assert_eq!(did_you_mean("Gaussian", NOISE), Some("gaussian"));
        assert_eq!(
            did_you_mean("discrete_gausian", NOISE),
            Some("discrete_gaussian")
        );
        assert_eq!(
            did_you_mean("rows_per_unt", ["rows_per_unit", "rows_per_group"]),
            Some("rows_per_unit")
        );
    }

    #[test]
    fn a_word_far_from_every_candidate_gets_nothing() {
        assert_eq!(did_you_mean("poisson", NOISE), None);
        assert_eq!(did_you_mean("lap", NOISE), None);
        assert_eq!(did_you_mean("x", ["id", "l1"]), None);
        // two edits on a four-letter word is a different word
        assert_eq!(did_you_mean("bset", ["best"]), Some("best"));
        assert_eq!(did_you_mean("bxsx", ["best"]), None);
        // an exact match is not a typo
        assert_eq!(did_you_mean("laplace", NOISE), None);
        assert_eq!(did_you_mean("anything", std::iter::empty()), None);
    }
}
