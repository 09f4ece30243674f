//! Parsing time on ~1 MB inputs, intact and broken: error recovery should
//! cost about as much as parsing intact text.
//!
//! Run: `cargo bench -p dpplan-syntax --bench parse`.

use criterion::{criterion_group, criterion_main, Criterion};

const HEADER: &str = "plan \"generated\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n  }\n  dataset visits {\n    column uid : id\n    column secs : float in [0, 3600]\n    contribution {\n      rows_per_unit 5\n    }\n  }\n";

/// Repeats `item(i)` after the header until the text has `bytes` bytes.
fn fill(bytes: usize, item: impl Fn(usize) -> String) -> String {
    let mut s = String::from(HEADER);
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&item(i));
        i += 1;
    }
    s.push_str("}\n");
    s
}

const MB: usize = 1 << 20;

fn intact(i: usize) -> String {
    format!(
        "\n  // query number {i}\n  query q{i} {{\n    sum(visits.secs)\n    noise gaussian sigma {}\n    schedule every 1 day for {} days\n  }}\n",
        (20000 + i % 89) * 1000,
        1 + i % 365
    )
}

/// A deterministic junk line (xorshift over a small alphabet).
fn junk(i: usize) -> String {
    let alphabet = b"abcxyz_0123456789 (){}[],.:=<>\"+-*/#@!";
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let mut line = String::from("  ");
    for _ in 0..40 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        line.push(alphabet[(seed % alphabet.len() as u64) as usize] as char);
    }
    line.push('\n');
    line
}

fn inputs() -> Vec<(&'static str, String)> {
    vec![
        ("intact", fill(MB, intact)),
        ("query q {", fill(MB, |_| "query q {\n".to_string())),
        (
            "query q { count(",
            fill(MB, |_| "query q { count(\n".to_string()),
        ),
        (
            "unterminated strings",
            fill(MB, |i| {
                format!("  dataset d{i} {{\n    source \"data/{i}.csv\n  }}\n")
            }),
        ),
        ("junk lines", fill(MB, junk)),
        (
            "broken interleaved with intact",
            fill(MB, |i| {
                if i % 2 == 0 {
                    intact(i)
                } else {
                    format!("  query b{i} {{\n    count(visits\n    noise laplace scale\n  }}\n")
                }
            }),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse 1MB");
    g.sample_size(10);
    for (name, text) in inputs() {
        let p = dpplan_syntax::parse(&text);
        eprintln!(
            "{name}: {} bytes, {} items, {} diagnostics, {} broken",
            text.len(),
            p.items.len(),
            p.diagnostics.len(),
            p.plan.broken.len()
        );
        g.bench_function(name, |b| b.iter(|| dpplan_syntax::parse(&text)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
