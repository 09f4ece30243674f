//! The executable-plan loader (`dpplan run`'s only way in) on any text.
//!
//! docs/executable-plan.md: `load` refuses anything that is not exactly what
//! `dpplan compile` produces from the embedded source, and compiling is
//! deterministic (byte-identical files). So:
//!
//! * `dpplan_compile::load` never panics, whatever the text;
//! * a plan that loads re-serialises (`to_json`) to exactly the compiler's
//!   output for its source, and that text loads back to the same plan;
//! * the attacker of check 5 ("someone can edit the body and recompute the
//!   hash"): a text that deserialises as a plan gets its source and body
//!   hashes recomputed and is loaded again, which reaches the recompilation
//!   check; it never panics, and only the compiler's own output passes;
//! * a text that is not JSON is taken as a plan source: if it compiles, the
//!   compiled file loads (what `dpplan compile` writes, `dpplan run` reads).
#![no_main]

use dpplan_compile::{compile, load};
use dpplan_plan::{body_hash, sha256_hex, to_json, ExecutablePlan};
use libfuzzer_sys::fuzz_target;

/// A loaded plan is the compiler's output for its source, and round-trips.
/// A file of an earlier format the loader still reads (version 5: a
/// version-6 body without a policy, docs/executable-plan.md) keeps its
/// version; it is otherwise the compiler's output.
/// `read_from`: the text `plan` was loaded from, if any (loading the same
/// text again would only repeat that load, which recompiles the source).
fn assert_canonical(plan: &ExecutablePlan, read_from: Option<&str>) {
    let json = to_json(plan);
    let mut again = compile(&plan.body.source.text)
        .unwrap_or_else(|e| panic!("a loaded plan's source does not compile: {e}"));
    assert!(
        plan.format_version <= again.format_version,
        "a loaded plan claims a later format than the compiler's"
    );
    again.format_version = plan.format_version;
    assert_eq!(
        json,
        to_json(&again),
        "a loaded plan is not the compiler's output"
    );
    if read_from == Some(json.as_str()) {
        return;
    }
    match load(&json) {
        Ok(back) => assert_eq!(&back, plan, "load(to_json(plan)) != plan"),
        Err(e) => panic!("a loaded plan's own serialisation is refused: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        // serde_json takes a &str here; the CLI reads the file as UTF-8.
        return;
    };
    if text.trim_start().starts_with('{') {
        let first = load(text).ok();
        if let Some(plan) = &first {
            assert_canonical(plan, Some(text));
        }
        // Recompute both hashes, as an attacker who edits the body would.
        if let Ok(mut plan) = serde_json::from_str::<ExecutablePlan>(text) {
            plan.body.source.sha256 = sha256_hex(plan.body.source.text.as_bytes());
            plan.body_sha256 = body_hash(&plan.body);
            // the text loaded as this very plan: `assert_canonical` above
            // already loaded `to_json(&plan)` and checked it (each load
            // recompiles the source: a shipped example's seed would
            // otherwise be compiled six times)
            if first.as_ref() == Some(&plan) {
                return;
            }
            let edited = to_json(&plan);
            if let Ok(loaded) = load(&edited) {
                assert_canonical(&loaded, Some(&edited));
            }
        }
    } else if let Ok(plan) = compile(text) {
        let json = to_json(&plan);
        match load(&json) {
            Ok(loaded) => assert_eq!(loaded, plan, "load(compile(source)) != compile(source)"),
            Err(e) => panic!("the compiler's output is refused by the loader: {e}"),
        }
    }
});
