//! Row-level shapes shared by the checked plan, the executable plan and the
//! engines: a query's public row filter ([`Filter`]) and its group keys
//! ([`GroupKey`]), resolved against the dataset's declared columns. Each is
//! serialised in the executable plan exactly as defined here.

use serde::{Deserialize, Serialize};

use crate::{Comparison, InvalidRule};

/// A public predicate on one row (`where …`), normalised by the checker:
/// every comparison has the column on the left and a literal on the right;
/// a category is only tested for membership (`==` is a one-value `in`,
/// `!=` its negation); a numeric `in { … }` is an `or` of `==`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Filter {
    /// Every item holds.
    And {
        items: Vec<Filter>,
    },
    /// Some item holds.
    Or {
        items: Vec<Filter>,
    },
    Not {
        inner: Box<Filter>,
    },
    /// A declared `int`/`float` column against a number. The value the
    /// predicate reads is the row's number as parsed (before clamping); a
    /// number that does not parse follows `invalid_rows` (the row is
    /// dropped, or the imputed value is compared).
    Compare {
        column: String,
        cmp: Comparison,
        value: f64,
    },
    /// A declared category column's value is one of `values` (a subset of
    /// its public domain).
    In {
        column: String,
        values: Vec<String>,
    },
}

impl Filter {
    /// The columns the filter reads, each once, in order of first use.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.visit(&mut |c| {
            if !out.contains(&c) {
                out.push(c);
            }
        });
        out
    }

    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        match self {
            Filter::And { items } | Filter::Or { items } => {
                items.iter().for_each(|i| i.visit(f));
            }
            Filter::Not { inner } => inner.visit(f),
            Filter::Compare { column, .. } | Filter::In { column, .. } => f(column),
        }
    }
}

impl Comparison {
    /// `x <cmp> y`; every comparison with NaN is false.
    #[inline]
    pub fn holds(self, x: f64, y: f64) -> bool {
        match self {
            Comparison::Lt => x < y,
            Comparison::Le => x <= y,
            Comparison::Gt => x > y,
            Comparison::Ge => x >= y,
            Comparison::Eq => x == y,
            Comparison::Ne => x != y,
        }
    }
}

/// One key of a grouped query, resolved: its column and its public
/// categories; the cells of the query are the product of its keys'
/// categories, the first key varying slowest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum GroupKey {
    /// A category column: its public domain, in declared order.
    Category { column: String, domain: Vec<String> },
    /// A numeric column cut at public, strictly increasing, finite edges
    /// e0 < e1 < … < en: bin i is [e_i, e_(i+1)), the last one closed
    /// [e_(n-1), e_n]. A value outside [e0, en] is dropped (`drop`) or
    /// put into the first or last bin (`clamp`).
    Bins {
        column: String,
        edges: Vec<f64>,
        outside: InvalidRule,
    },
}

impl GroupKey {
    pub fn column(&self) -> &str {
        match self {
            GroupKey::Category { column, .. } | GroupKey::Bins { column, .. } => column,
        }
    }

    /// The number of categories.
    pub fn len(&self) -> usize {
        match self {
            GroupKey::Category { domain, .. } => domain.len(),
            GroupKey::Bins { edges, .. } => edges.len().saturating_sub(1),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The categories' labels: the domain, or the bins as intervals
    /// (`[0, 1)`, …, `[10, 20]`).
    pub fn labels(&self) -> Vec<String> {
        match self {
            GroupKey::Category { domain, .. } => domain.clone(),
            GroupKey::Bins { edges, .. } => {
                let n = edges.len().saturating_sub(1);
                (0..n)
                    .map(|i| {
                        let close = if i + 1 == n { "]" } else { ")" };
                        format!("[{}, {}{close}", edges[i], edges[i + 1])
                    })
                    .collect()
            }
        }
    }

    /// The bin of `x`: `None` outside the edges under `drop` (and for NaN).
    /// Panics never; a key that is not `Bins` has no bin.
    pub fn bin(&self, x: f64) -> Option<usize> {
        let GroupKey::Bins { edges, outside, .. } = self else {
            return None;
        };
        let n = edges.len().checked_sub(1).filter(|&n| n > 0)?;
        let (first, last) = (edges[0], edges[n]);
        if x.is_nan() {
            return None;
        }
        if x < first || x > last {
            return match outside {
                InvalidRule::Clamp if x < first => Some(0),
                InvalidRule::Clamp => Some(n - 1),
                InvalidRule::Drop => None,
            };
        }
        // the number of edges e1..e(n-1) that are ≤ x
        Some(edges[1..n].partition_point(|&e| e <= x))
    }
}

/// The labels of the cells of `keys`: the product of their labels, the
/// first key varying slowest, joined by `", "`.
pub fn cell_labels(keys: &[GroupKey]) -> Vec<String> {
    let mut out = vec![String::new()];
    for (k, key) in keys.iter().enumerate() {
        let labels = key.labels();
        out = out
            .iter()
            .flat_map(|prefix| {
                labels.iter().map(move |l| {
                    if k == 0 {
                        l.clone()
                    } else {
                        format!("{prefix}, {l}")
                    }
                })
            })
            .collect();
    }
    out
}

/// Bytes from outside the plan as dpplan prints them — a key taken from
/// the data (its published label), a data path: the bytes, with each
/// backslash written `\\` and each byte that is not part of a printable
/// UTF-8 character — bytes of invalid UTF-8, and the bytes of control
/// characters (C0, DEL, C1) — written `\xNN` (two lowercase hex digits).
/// The escaping can be undone, so distinct values get distinct labels, and
/// the text holds no control character (a terminal or a CSV reader that
/// shows it receives none from the data).
pub fn escape_bytes(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len());
    fn hex(out: &mut String, b: u8) {
        // writing to a String cannot fail
        let _ = write!(out, "\\x{b:02x}");
    }
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if c.is_control() {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    hex(&mut out, b);
                }
            } else {
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            hex(&mut out, b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`escape_bytes`] undone: `\\` is a backslash, `\xNN` the byte NN.
    fn unlabel(label: &str) -> Vec<u8> {
        let b = label.as_bytes();
        let (mut out, mut i) = (Vec::new(), 0);
        while i < b.len() {
            match (b[i], b.get(i + 1)) {
                (b'\\', Some(b'\\')) => {
                    out.push(b'\\');
                    i += 2;
                }
                (b'\\', Some(b'x')) => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 4;
                }
                (b'\\', _) => panic!("a lone backslash in {label:?}"),
                (x, _) => {
                    out.push(x);
                    i += 1;
                }
            }
        }
        out
    }

    #[test]
    fn escaped_bytes_are_unambiguous_and_free_of_control_characters() {
        let values: Vec<&[u8]> = vec![
            b"ES",
            "Espa\u{f1}a".as_bytes(),
            b"\xff",
            b"\xfe",
            b"\\xff",
            b"\\\\xff",
            b"\x1b[31mred",
            b"a\nb",
            b"\x7f",
            "\u{9b}".as_bytes(),
            b"\xc3",
            "\u{c3}".as_bytes(),
            b"",
        ];
        assert_eq!(escape_bytes(b"ES"), "ES");
        assert_eq!(escape_bytes("Espa\u{f1}a".as_bytes()), "Espa\u{f1}a");
        assert_eq!(escape_bytes(b"\xff"), "\\xff");
        assert_eq!(escape_bytes(b"\\xff"), "\\\\xff");
        assert_eq!(escape_bytes(b"\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(escape_bytes("\u{9b}".as_bytes()), "\\xc2\\x9b");
        let labels: std::collections::BTreeSet<String> =
            values.iter().map(|v| escape_bytes(v)).collect();
        assert_eq!(labels.len(), values.len(), "{labels:?}");
        for v in &values {
            let l = escape_bytes(v);
            assert_eq!(unlabel(&l), *v, "{l}");
            assert!(!l.chars().any(char::is_control), "{l:?}");
        }
        // every single byte and every pair round-trips
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let l = escape_bytes(&[a, b]);
                assert_eq!(unlabel(&l), [a, b]);
                assert!(!l.chars().any(char::is_control), "{l:?}");
            }
        }
        // negative control: the lossy decoding merges two keys
        assert_eq!(
            String::from_utf8_lossy(b"\xff"),
            String::from_utf8_lossy(b"\xfe")
        );
    }

    fn bins(edges: &[f64], outside: InvalidRule) -> GroupKey {
        GroupKey::Bins {
            column: "x".into(),
            edges: edges.to_vec(),
            outside,
        }
    }

    #[test]
    fn bins_are_half_open_and_the_last_is_closed() {
        let b = bins(&[0.0, 1.0, 2.0, 5.0], InvalidRule::Drop);
        let got: Vec<_> = [-0.5, 0.0, 0.99, 1.0, 4.99, 5.0, 5.01, f64::NAN]
            .iter()
            .map(|&x| b.bin(x))
            .collect();
        assert_eq!(
            got,
            [
                None,
                Some(0),
                Some(0),
                Some(1),
                Some(2),
                Some(2),
                None,
                None
            ]
        );
        let c = bins(&[0.0, 1.0, 2.0, 5.0], InvalidRule::Clamp);
        assert_eq!(c.bin(-3.0), Some(0));
        assert_eq!(c.bin(f64::INFINITY), Some(2));
        assert_eq!(c.bin(f64::NAN), None);
        assert_eq!(b.labels(), ["[0, 1)", "[1, 2)", "[2, 5]"]);
    }

    #[test]
    fn cells_are_the_product_first_key_slowest() {
        let keys = [
            GroupKey::Category {
                column: "d".into(),
                domain: vec!["a".into(), "b".into()],
            },
            bins(&[0.0, 1.0, 2.0], InvalidRule::Drop),
        ];
        assert_eq!(
            cell_labels(&keys),
            ["a, [0, 1)", "a, [1, 2]", "b, [0, 1)", "b, [1, 2]"]
        );
    }

    #[test]
    fn filter_columns_once() {
        let f = Filter::And {
            items: vec![
                Filter::In {
                    column: "city".into(),
                    values: vec!["M".into()],
                },
                Filter::Not {
                    inner: Box::new(Filter::Compare {
                        column: "fare".into(),
                        cmp: Comparison::Gt,
                        value: 1.0,
                    }),
                },
                Filter::In {
                    column: "city".into(),
                    values: vec![],
                },
            ],
        };
        assert_eq!(f.columns(), ["city", "fare"]);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Filter>(&json).unwrap(), f);
    }
}
