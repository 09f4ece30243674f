//! Reading a statement's result rows back: the exact integers per
//! statistic, or the counts per key from the data.

use dpplan_engine::EngineError;

use super::{Query, Value};

impl Query {
    /// Reads the rows of a [`generate_keys`](super::generate_keys) statement back: every key with
    /// a positive bounded count, in byte order of the key.
    pub fn decode_keys(
        &self,
        rows: &[Vec<Option<String>>],
    ) -> Result<Vec<(Vec<u8>, i128)>, EngineError> {
        let bad = || EngineError::Schema("the Spark job returned a malformed result".into());
        let mut out = std::collections::BTreeMap::new();
        for row in rows {
            if row.len() != self.width() || self.groupings != 1 {
                return Err(bad());
            }
            // the ungrouped row (a0 = 1) is the total: not a key
            if row[0].as_deref() != Some("0") {
                continue;
            }
            let (Some(key), Some(n)) = (&row[1], &row[2]) else {
                continue; // rows not kept for the grouping
            };
            let n: i128 = n.parse().map_err(|_| bad())?;
            if n > 0 && out.insert(key.as_bytes().to_vec(), n).is_some() {
                return Err(bad());
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Reads a windowed statement's rows (each led by its slot) back: per
    /// slot of `slots`, what [`Query::decode`] reads of its rows (a slot
    /// without rows: zeros).
    pub fn decode_slots(
        &self,
        rows: &[Vec<Option<String>>],
        slots: &[u64],
    ) -> Result<Vec<Vec<Vec<i128>>>, EngineError> {
        let bad = || EngineError::Schema("the Spark job returned a malformed result".into());
        if !self.slotted {
            return Err(bad());
        }
        let mut by: std::collections::BTreeMap<u64, Vec<Vec<Option<String>>>> =
            slots.iter().map(|&s| (s, Vec::new())).collect();
        for row in rows {
            let (Some(Some(first)), rest) = (row.first(), row.get(1..).unwrap_or(&[])) else {
                return Err(bad());
            };
            let slot: u64 = first.parse().map_err(|_| bad())?;
            by.get_mut(&slot).ok_or_else(bad)?.push(rest.to_vec());
        }
        slots
            .iter()
            .map(|s| self.decode(by.get(s).map_or(&[][..], Vec::as_slice)))
            .collect()
    }

    /// The number of columns of a result row.
    pub fn width(&self) -> usize {
        2 * self.groupings + 1 + self.fields + self.distincts
    }

    /// Reads the statement's result rows (each cell a decimal integer or
    /// null) back into one vector per statistic, as the `Engine` trait
    /// returns them (counts shifted onto the grid as the embedded engine
    /// does).
    pub fn decode(&self, rows: &[Vec<Option<String>>]) -> Result<Vec<Vec<i128>>, EngineError> {
        let m = self.groupings;
        let bad = || EngineError::Schema("the Spark job returned a malformed result".into());
        let int = |v: &Option<String>| -> Result<i128, EngineError> {
            match v {
                None => Ok(0),
                Some(s) => s.parse::<i128>().map_err(|_| bad()),
            }
        };
        // per set (0 = ungrouped, j + 1 = grouping j): per coordinate, the
        // count, the sums and the distinct counts
        let width = 1 + self.fields + self.distincts;
        let mut sets: Vec<Vec<Vec<i128>>> = vec![vec![vec![0; width]]];
        for c in &self.cells {
            if let Some(j) = c.set {
                while sets.len() <= j + 1 {
                    sets.push(Vec::new());
                }
                sets[j + 1] = vec![vec![0; width]; c.coords];
            }
        }
        for row in rows {
            if row.len() != self.width() {
                return Err(bad());
            }
            let flags: Vec<i128> = row[..m].iter().map(int).collect::<Result<_, _>>()?;
            let set = match flags.iter().filter(|&&a| a == 0).count() {
                0 => 0,
                1 => 1 + flags.iter().position(|&a| a == 0).unwrap_or(0),
                _ => return Err(bad()),
            };
            let coord = if set == 0 {
                0
            } else {
                match &row[m + set - 1] {
                    // rows not kept for this grouping column, or outside
                    // its domain
                    None => continue,
                    Some(s) => s.parse::<usize>().map_err(|_| bad())?,
                }
            };
            let Some(slot) = sets.get_mut(set).and_then(|s| s.get_mut(coord)) else {
                if set < sets.len() {
                    return Err(bad());
                }
                continue; // a grouping no statistic reads
            };
            for (x, v) in slot.iter_mut().zip(&row[2 * m..]) {
                *x = int(v)?;
            }
        }
        let mut out = Vec::with_capacity(self.cells.len());
        for c in &self.cells {
            let set = c.set.map_or(0, |j| j + 1);
            let mut v = Vec::with_capacity(c.coords);
            for coord in &sets[set] {
                let shifted = |n: i128| {
                    n.checked_shl(c.count_shift as u32)
                        .filter(|y| (y >> c.count_shift) == n)
                        .ok_or_else(|| EngineError::Overflow("a count overflowed 128 bits".into()))
                };
                v.push(match c.value {
                    Value::Sum(f) => coord[1 + f],
                    Value::Distinct(q) => shifted(coord[1 + self.fields + q])?,
                    Value::Count => {
                        let n = coord[0];
                        n.checked_shl(c.count_shift as u32)
                            .filter(|y| (y >> c.count_shift) == n)
                            .ok_or_else(|| {
                                EngineError::Overflow("a count overflowed 128 bits".into())
                            })?
                    }
                });
            }
            out.push(v);
        }
        Ok(out)
    }
}
