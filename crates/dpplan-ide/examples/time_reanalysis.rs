//! Times the language server's re-analysis of a plan after an edit that
//! keeps its releases (a comment), with and without the accounting cache:
//! `cargo run --release -p dpplan-ide --example time_reanalysis -- FILE [N]`.
//! Each round analyses a new text (the comment changes every time) as the
//! server does per version: the document, then the per-query costs that
//! hover and inlay hints read. The rounds alternate between the two ways so
//! that a change of load hits both.
use std::time::{Duration, Instant};

use dpplan_ide::dpplan_check::memo::AccountingCache;
use dpplan_ide::{Context, Document};

fn analyse(text: String, context: Context) -> Duration {
    let t = Instant::now();
    let doc = Document::with_context(text, context);
    std::hint::black_box(doc.analysis());
    t.elapsed()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a plan file");
    let rounds: usize = args.next().map_or(10, |n| n.parse().expect("a count"));
    let text = std::fs::read_to_string(&path).unwrap();
    let cache = AccountingCache::new();
    let cached = Context {
        policy: None,
        cache: Some(cache.clone()),
    };
    analyse(text.clone(), cached.clone()); // the version before the edit
    let (mut plain, mut warm) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let edited = format!("// edit {i}\n{text}");
        plain.push(analyse(edited.clone(), Context::default()));
        let misses = cache.stats().misses;
        warm.push(analyse(edited, cached.clone()));
        assert_eq!(cache.stats().misses, misses, "an accountant ran again");
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    println!(
        "{path}: re-analysis after a comment edit, median of {rounds}: without the cache {:?} (min {:?}), with it {:?} (min {:?})",
        median(&mut plain),
        plain[0],
        median(&mut warm),
        warm[0]
    );
}
