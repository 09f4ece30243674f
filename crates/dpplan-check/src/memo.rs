//! The accountants' results, remembered across the analyses of successive
//! versions of one document (the language server's): a keystroke that does
//! not change the plan's releases (a comment, whitespace, a rename) does
//! not run the privacy-loss distributions again.
//!
//! [`crate::analyze_cached`] installs an [`AccountingCache`] for the
//! duration of one analysis (on the analysing thread); every call the
//! checker makes to an accountant goes through the functions here, which
//! look the exact input up first. The key is the whole input, not a digest
//! of it: each release's mechanism kind, scale, ℓ1, ℓ2, ℓ∞, coordinates and
//! count (their exact bits), δ and the accountant asked. A hash only picks
//! the bucket; two inputs share a result only when they are equal, and the
//! accountants are deterministic functions of their input, so a cached
//! result is the one a new run would compute: the cache cannot change any
//! number (tests: `memo_tests.rs`). Without an installed cache (`dpplan
//! check`), these functions call the accountants directly.

use foldhash::HashMap;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use dpplan_accounting as acct;
use dpplan_accounting::{AccountingError, Bound, Release};

/// At most this many releases are held in all the cache's keys; past it
/// the cache is emptied (it refills from the next analysis). About 64 bytes
/// each: a few MiB at most.
const MAX_RELEASES: usize = 1 << 16;

/// Which accountant call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Call {
    Epsilon(acct::Accountant),
    Best,
    FastBest,
    All,
    /// [`acct::attack_risk`] at [`acct::FPRS`], with the bits of the δ
    /// added to every ε
    AttackRisk(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    call: Call,
    delta: u64,
    releases: Vec<[u64; 7]>,
}

impl Key {
    fn new(call: Call, releases: &[Release], delta: f64) -> Key {
        Key {
            call,
            delta: delta.to_bits(),
            releases: releases
                .iter()
                .map(|r| {
                    let m = &r.mechanism;
                    [
                        m.kind as u64,
                        m.scale.to_bits(),
                        m.sensitivity.l1.to_bits(),
                        m.sensitivity.l2.to_bits(),
                        m.sensitivity.linf.to_bits(),
                        m.sensitivity.coords,
                        r.count,
                    ]
                })
                .collect(),
        }
    }
}

type One = Result<Bound, AccountingError>;
type Many = Vec<(acct::Accountant, One)>;

#[derive(Debug, Clone)]
enum Value {
    One(One),
    Many(Many),
    Risk(Option<acct::AttackRisk>),
}

#[derive(Default)]
struct State {
    results: HashMap<Key, Value>,
    releases: usize,
    hits: u64,
    misses: u64,
}

/// Results of the accountants by their exact input, shared by the
/// analyses of one document's versions.
#[derive(Default)]
pub struct AccountingCache {
    state: Mutex<State>,
}

/// How often the cache answered and how often an accountant ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

impl AccountingCache {
    pub fn new() -> Arc<AccountingCache> {
        Arc::new(AccountingCache::default())
    }

    pub fn stats(&self) -> CacheStats {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        CacheStats {
            hits: s.hits,
            misses: s.misses,
        }
    }

    fn get(&self, key: &Key) -> Option<Value> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let found = s.results.get(key).cloned();
        match found {
            Some(_) => s.hits += 1,
            None => s.misses += 1,
        }
        found
    }

    fn put(&self, key: Key, value: Value) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if key.releases.len() > MAX_RELEASES {
            return;
        }
        if s.releases + key.releases.len() > MAX_RELEASES {
            s.results.clear();
            s.releases = 0;
        }
        s.releases += key.releases.len();
        s.results.insert(key, value);
    }
}

thread_local! {
    /// The cache of the analysis running on this thread, if any.
    static CURRENT: RefCell<Option<Arc<AccountingCache>>> = const { RefCell::new(None) };
}

/// The cache installed on this thread, to install on a thread that works
/// for the same analysis ([`in_same_analysis`]).
pub(crate) fn current() -> Option<Arc<AccountingCache>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// `f`, on this thread, with `cache` (from [`current`] on the thread that
/// spawned it) installed while it runs.
pub(crate) fn in_same_analysis<T>(cache: Option<Arc<AccountingCache>>, f: impl FnOnce() -> T) -> T {
    let _installed = cache.as_ref().map(install);
    f()
}

/// Installs `cache` on this thread until the guard is dropped.
pub(crate) struct Installed {
    before: Option<Arc<AccountingCache>>,
}

pub(crate) fn install(cache: &Arc<AccountingCache>) -> Installed {
    let before = CURRENT.with(|c| c.replace(Some(Arc::clone(cache))));
    Installed { before }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let before = self.before.take();
        CURRENT.with(|c| *c.borrow_mut() = before);
    }
}

/// `compute()`, or the result remembered for the same input.
fn remembered(key: impl FnOnce() -> Key, compute: impl FnOnce() -> Value) -> Value {
    let Some(cache) = CURRENT.with(|c| c.borrow().clone()) else {
        return compute();
    };
    let key = key();
    if let Some(v) = cache.get(&key) {
        return v;
    }
    let v = compute();
    cache.put(key, v.clone());
    v
}

fn one(call: Call, releases: &[Release], delta: f64, f: impl Fn() -> One) -> One {
    match remembered(|| Key::new(call, releases, delta), || Value::One(f())) {
        Value::One(r) => r,
        // a key's call decides its value's shape: not reached, but
        // computing is always right
        Value::Many(_) | Value::Risk(_) => f(),
    }
}

/// [`acct::epsilon`], remembered.
pub(crate) fn epsilon(releases: &[Release], delta: f64, a: acct::Accountant) -> One {
    one(Call::Epsilon(a), releases, delta, || {
        acct::epsilon(releases, delta, a)
    })
}

/// [`acct::best`], remembered.
pub(crate) fn best(releases: &[Release], delta: f64) -> One {
    one(Call::Best, releases, delta, || acct::best(releases, delta))
}

/// [`acct::fast_best`], remembered.
pub(crate) fn fast_best(releases: &[Release], delta: f64) -> One {
    one(Call::FastBest, releases, delta, || {
        acct::fast_best(releases, delta)
    })
}

/// [`acct::all`], remembered.
pub(crate) fn all(releases: &[Release], delta: f64) -> Many {
    match remembered(
        || Key::new(Call::All, releases, delta),
        || Value::Many(acct::all(releases, delta)),
    ) {
        Value::Many(r) => r,
        Value::One(_) | Value::Risk(_) => acct::all(releases, delta),
    }
}

/// [`acct::attack_risk`] at [`acct::FPRS`], remembered; `None` when it
/// cannot be computed (then none is shown).
pub(crate) fn attack_risk(
    releases: &[Release],
    delta: f64,
    extra_delta: f64,
) -> Option<acct::AttackRisk> {
    let compute = || acct::attack_risk(releases, delta, extra_delta, &acct::FPRS).ok();
    match remembered(
        || Key::new(Call::AttackRisk(extra_delta.to_bits()), releases, delta),
        || Value::Risk(compute()),
    ) {
        Value::Risk(r) => r,
        Value::One(_) | Value::Many(_) => compute(),
    }
}
