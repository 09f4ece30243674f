//! The exact bounded count per key of a histogram over keys taken from the
//! data (`keys from data`, partition selection): the keys are the values
//! of one category column seen in the rows that pass the dataset's
//! validity rules and the query's filter, exactly as [`Layout::parse`]
//! decides for every other statistic.
//!
//! Bounding, the same steps as the other statistics (`bounding.rs`):
//! under a user-level unit each unit keeps a uniformly random subset of at
//! most `rows_per_unit` of its rows, then at most `groups_per_unit` of the
//! keys among them (a uniformly random subset), then at most
//! `rows_per_group` rows in each kept key. A row-level unit is one row in
//! one key. A row whose key field is missing or empty is dropped (an empty
//! key is no category value).
//!
//! Memory: the key of every valid row is kept (as a 4-byte index into the
//! keys seen) until the end of the file, grouped by unit; a streaming
//! reservoir per unit, as the other statistics have, is left for later.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use dpplan_plan::{Bounding, Dataset};
use dpplan_vocab::rows::Filter;

use super::layout::{header_index, Fields, Layout};
use super::{EngineError, Records, StatKind, Statistic};
use crate::rng::SecureRng;

/// Keys seen so far: each distinct key's bytes once, and its index.
#[derive(Default)]
struct Interned {
    index: HashMap<Vec<u8>, u32>,
    names: Vec<Vec<u8>>,
}

impl Interned {
    fn id(&mut self, key: &[u8]) -> Result<u32, EngineError> {
        if let Some(&i) = self.index.get(key) {
            return Ok(i);
        }
        let i = u32::try_from(self.names.len())
            .map_err(|_| EngineError::Overflow("more than 2³² distinct keys".into()))?;
        self.names.push(key.to_vec());
        self.index.insert(key.to_vec(), i);
        Ok(i)
    }
}

/// The bounded count of every key with at least one kept row, by key
/// (byte order). The keys themselves are what the caller must never
/// reveal unless they pass the threshold.
pub(super) fn count_keys<R: Read>(
    dataset: &Dataset,
    reader: R,
    column: &str,
    filter: Option<&Filter>,
    rng: &mut SecureRng,
) -> Result<BTreeMap<Vec<u8>, i128>, EngineError> {
    let mut records = Records::new(&dataset.name, reader);
    let headers = records.headers()?;
    let kind = match filter {
        Some(f) => StatKind::Where {
            filter: f.clone(),
            of: Box::new(StatKind::Count),
        },
        None => StatKind::Count,
    };
    let (layout, _) = Layout::resolve(dataset, &headers, &[Statistic { kind, grid: 0 }])?;
    let key_index = header_index(&headers, &dataset.name, column)?;
    let mut keys = Interned::default();
    // each unit's rows (their keys), the units in the order first seen: the
    // bounding below draws for them in that order, so the same rows in the
    // same order make the same random choices for the same generator (a
    // map's iteration order would vary from run to run)
    let mut unit_index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut units: Vec<Vec<u32>> = Vec::new();
    let mut counts: Vec<i128> = Vec::new();
    let mut rec = csv::ByteRecord::new();
    // the numbers a filter reads are parsed into these slots
    let (mut vals, mut cats) = layout.row_buffers();
    while records.read(&mut rec)? {
        if !layout.parse(&rec, &mut vals, &mut cats) {
            continue;
        }
        let Some(key) = rec.field(key_index).filter(|k| !k.is_empty()) else {
            continue;
        };
        let k = keys.id(key)?;
        match layout.id.and_then(|i| rec.field(i)) {
            Some(id) => {
                let i = match unit_index.get(id) {
                    Some(&i) => i,
                    None => {
                        unit_index.insert(id.to_vec(), units.len());
                        units.push(Vec::new());
                        units.len() - 1
                    }
                };
                units[i].push(k);
            }
            None => {
                counts.resize(counts.len().max(k as usize + 1), 0);
                counts[k as usize] += 1;
            }
        }
    }
    drop(unit_index);
    for rows in &mut units {
        for (k, n) in bound_unit(rows, &dataset.bounding, rng) {
            counts.resize(counts.len().max(k as usize + 1), 0);
            counts[k as usize] += n as i128;
        }
    }
    Ok(counts
        .into_iter()
        .enumerate()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| (keys.names[k].clone(), n))
        .collect())
}

/// One unit's kept rows per key: a random subset of `rows_per_unit` rows,
/// of them a random subset of `groups_per_unit` keys, of each at most
/// `rows_per_group` rows.
fn bound_unit(rows: &mut Vec<u32>, b: &Bounding, rng: &mut SecureRng) -> Vec<(u32, u64)> {
    let cap = |x: Option<u64>| x.map_or(usize::MAX, |v| usize::try_from(v).unwrap_or(usize::MAX));
    let rows_cap = cap(b.rows_per_unit);
    if rows.len() > rows_cap {
        shuffle_prefix(rows, rows_cap, rng);
        rows.truncate(rows_cap);
    }
    rows.sort_unstable();
    let mut groups: Vec<(u32, u64)> = Vec::new();
    for &k in rows.iter() {
        match groups.last_mut() {
            Some((last, n)) if *last == k => *n += 1,
            _ => groups.push((k, 1)),
        }
    }
    let groups_cap = cap(b.groups_per_unit);
    if groups.len() > groups_cap {
        shuffle_prefix(&mut groups, groups_cap, rng);
        groups.truncate(groups_cap);
    }
    let per_group = b.rows_per_group.unwrap_or(u64::MAX);
    for g in &mut groups {
        g.1 = g.1.min(per_group);
    }
    groups
}

/// The first `m` entries become a uniformly random m-subset (partial
/// Fisher–Yates with exact uniform draws).
fn shuffle_prefix<T>(v: &mut [T], m: usize, rng: &mut SecureRng) {
    for i in 0..m.min(v.len()) {
        let j = i + rng.below_u64((v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounding(rows: u64, groups: u64, per_group: u64) -> Bounding {
        Bounding {
            per_unit: true,
            id_column: Some("id".into()),
            rows_per_unit: Some(rows),
            groups_per_unit: Some(groups),
            rows_per_group: Some(per_group),
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_unit_keeps_at_most_its_bounds() {
        let mut rng = SecureRng::from_seed_for_tests(3);
        for _ in 0..200 {
            // 12 rows over 5 keys; keep 6 rows, 2 keys, 2 rows per key
            let mut rows: Vec<u32> = vec![0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4];
            let kept = bound_unit(&mut rows, &bounding(6, 2, 2), &mut rng);
            assert!(kept.len() <= 2);
            assert!(kept.iter().all(|&(_, n)| (1..=2).contains(&n)));
            assert!(kept.iter().map(|&(_, n)| n).sum::<u64>() <= 6);
        }
    }

    #[test]
    fn the_kept_keys_are_uniform() {
        // one row in each of 4 keys, one key kept: each about 1/4
        let mut rng = SecureRng::from_seed_for_tests(5);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            let mut rows = vec![0, 1, 2, 3];
            let kept = bound_unit(&mut rows, &bounding(10, 1, 10), &mut rng);
            seen[kept[0].0 as usize] += 1;
        }
        // 4000/4 = 1000 each, σ ≈ 27: ±150 is over 5σ
        assert!(seen.iter().all(|&n| (850..=1150).contains(&n)), "{seen:?}");
    }
}
