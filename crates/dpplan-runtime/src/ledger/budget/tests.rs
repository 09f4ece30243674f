//! The budget ledger's unit tests: composition across processes, windows,
//! refusals, the calendar blocks against jiff's calendar, and the cost.

use super::*;

const COUNTS: &str = r#"plan "counts" {
  privacy { unit user by user_id adjacency add_remove budget epsilon 1000000 delta 1e-6 }
  dataset d { column user_id : id contribution { rows_per_unit 1 } }
  query q { count(d) noise laplace scale 2 schedule 200000 times }
}"#;

const WINDOWS: &str = r#"plan "windows" {
  privacy { unit user by user_id adjacency add_remove budget epsilon 100 delta 1e-6 }
  dataset d {
column user_id : id
column t : time
contribution { rows_per_unit 20 windows_per_unit 3 rows_per_window 2 }
  }
  query w { count(d) noise laplace scale 10 schedule every 1 day for 30 days window 1 day }
}"#;

fn budget(dir: &Path, epsilon: f64) -> SharedBudget {
    SharedBudget {
        source: "d.csv".into(),
        path: dir.join("d.csv"),
        epsilon,
        delta: 1e-6,
        ledger: dir.join("budget.db"),
        policy: dir.join("dpplan.toml"),
        per: None,
    }
}

/// The plan of [`COUNTS`] and a shared budget of ε = 2.5 in `dir`.
fn counts(dir: &Path) -> (ExecutablePlan, SharedBudget) {
    (dpplan_compile::compile(COUNTS).unwrap(), budget(dir, 2.5))
}

fn eps(b: &BudgetLedger) -> f64 {
    b.summary().unwrap().total_epsilon
}

/// Two handles on one budget ledger (two processes): each charge
/// composes the other's, identical mechanisms are counted together,
/// and the total equals the accountant on the grouped releases read
/// afresh (k Laplace releases of ε = 0.5: at most k · 0.5).
#[test]
fn charges_of_two_processes_are_composed_together() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, b) = counts(dir.path());
    let r = plan.body.release("q").unwrap();
    let g = plan.body.guarantee();
    let mut x = BudgetLedger::open_for(&b, &g).unwrap();
    let mut y = BudgetLedger::open_for(&b, &g).unwrap();
    for slot in 0..5 {
        let l = if slot % 2 == 0 { &mut x } else { &mut y };
        let c = l
            .charge(&plan, "ledger-1", r, (slot, Reads::UpTo(0)))
            .unwrap();
        let k = slot as f64 + 1.0;
        assert!(c.total_epsilon <= k * 0.5 && c.total_epsilon > (k - 1.0) * 0.5);
    }
    // the sixth is refused, by either handle, and appends nothing
    for l in [&mut x, &mut y] {
        let e = l
            .charge(&plan, "ledger-1", r, (5, Reads::UpTo(0)))
            .unwrap_err();
        assert!(matches!(e, LedgerError::OverBudget(_)), "{e}");
    }
    let fresh = BudgetLedger::open(&b.ledger).unwrap();
    assert_eq!(fresh.composed.releases.len(), 1);
    assert_eq!(fresh.composed.releases[0].count, 5);
    assert_eq!(fresh.summary().unwrap().entries, 6);
    assert_eq!(eps(&fresh), eps(&x));
}

/// A charge commits, then anchors: a process that opens the ledger in
/// between meets two entries and the anchor the ledger got when it was
/// first opened (entry 1), which verifies. Before, a fresh ledger had no
/// anchor until its first charge, so two runs at once on a new budget
/// could refuse the second as a cut-off tail (a missing anchor).
#[test]
fn opening_between_a_charge_and_its_anchor_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, b) = counts(dir.path());
    let r = plan.body.release("q").unwrap();
    let g = plan.body.guarantee();
    let mut x = BudgetLedger::open_for(&b, &g).unwrap();
    let head = read_head(&b.ledger)
        .unwrap()
        .expect("a new budget ledger is anchored when it is opened");
    assert_eq!(head.entries, 1);
    // x's charge, committed and not anchored yet
    let mechanism = serde_json::to_string(&MechanismRecord::of(r)).unwrap();
    x.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    x.charge_locked(&plan, "ledger-1", r, (0, Reads::UpTo(0)), &mechanism)
        .unwrap();
    x.conn.execute_batch("COMMIT").unwrap();
    let y = BudgetLedger::open_for(&b, &g).expect("opened between a charge and its anchor");
    assert_eq!(y.summary().unwrap().entries, 2);
    // negative control: no anchor at all under two entries is refused
    let head = crate::ledger::anchor::head_path(&b.ledger);
    std::fs::remove_file(&head).unwrap();
    let e = BudgetLedger::open(&b.ledger).map(|_| ()).unwrap_err();
    assert!(e.to_string().contains("anchor"), "{e}");
}

/// Only a process that opens a budget ledger to charge it anchors a new
/// one: inspecting it (`ledger show`, `ledger verify`) writes nothing.
#[test]
fn inspecting_a_new_budget_ledger_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, b) = counts(dir.path());
    create(&b.ledger, &opening(&b, &plan.body.guarantee()).unwrap()).unwrap();
    let head = crate::ledger::anchor::head_path(&b.ledger);
    BudgetLedger::open(&b.ledger).unwrap();
    assert!(!head.exists(), "inspection wrote an anchor");
    BudgetLedger::open_to_charge(&b.ledger).unwrap();
    assert!(head.exists(), "a process that charges anchors first");
}

/// A windowed query's windows are one release per plan ledger, as the
/// plan ledger composes them; the same query in another plan ledger is
/// another release (negative control).
#[test]
fn a_windowed_query_is_composed_once_per_plan_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dpplan_compile::compile(WINDOWS).unwrap();
    let r = plan.body.release("w").unwrap();
    let b = budget(dir.path(), 100.0);
    let mut l = BudgetLedger::open_for(&b, &plan.body.guarantee()).unwrap();
    let one = l
        .charge(&plan, "ledger-1", r, (0, Reads::UpTo(0)))
        .unwrap()
        .total_epsilon;
    for slot in 1..10 {
        let c = l
            .charge(&plan, "ledger-1", r, (slot, Reads::UpTo(0)))
            .unwrap();
        assert_eq!(c.total_epsilon, one);
        assert!(!c.entry.charge_value().unwrap().composed);
    }
    let two = l
        .charge(&plan, "ledger-2", r, (0, Reads::UpTo(0)))
        .unwrap()
        .total_epsilon;
    assert!(two > one, "{two} {one}");
    // and what was appended verifies, `composed` flags included
    let fresh = BudgetLedger::open(&b.ledger).unwrap();
    assert_eq!(eps(&fresh), two);
    assert_eq!(fresh.summary().unwrap().plans[0].charges, 11);
    assert_eq!(fresh.summary().unwrap().plans[0].releases, 2);
}

/// A budget ledger whose opening entry records another budget than
/// the policy's is refused (the budget it was made for stays).
#[test]
fn a_changed_budget_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dpplan_compile::compile(COUNTS).unwrap();
    let b = budget(dir.path(), 2.5);
    BudgetLedger::open_for(&b, &plan.body.guarantee()).unwrap();
    let raised = SharedBudget {
        epsilon: 5.0,
        ..b.clone()
    };
    let e = match BudgetLedger::open_for(&raised, &plan.body.guarantee()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a raised budget was accepted"),
    };
    assert!(e.contains("holds the budget ε = 2.5"), "{e}");
}

/// A budget ledger in a directory that does not exist is not created,
/// and the error names the directory.
#[test]
fn a_missing_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dpplan_compile::compile(COUNTS).unwrap();
    let b = SharedBudget {
        ledger: dir.path().join("nowhere/budget.db"),
        ..budget(dir.path(), 1.0)
    };
    let e = match BudgetLedger::open_for(&b, &plan.body.guarantee()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("created in a missing directory"),
    };
    assert!(e.contains("nowhere` does not exist"), "{e}");
    assert!(!dir.path().join("nowhere").exists());
}

/// Month and week blocks against jiff's calendar (every 7 hours
/// 13 minutes across 1969–2031), and known dates.
#[test]
fn calendar_blocks() {
    let mut t: i64 = -31_536_000;
    while t < 1_950_000_000 {
        let z = jiff::tz::Offset::UTC.to_datetime(jiff::Timestamp::from_second(t).unwrap());
        let want = (i64::from(z.year()) - 1970) * 12 + i64::from(z.month()) - 1;
        assert_eq!(Per::Month.block(t), want, "{t}");
        let monday = z.date().iso_week_date().first_of_week().unwrap().date();
        assert_eq!(
            Per::Week.label(Per::Week.block(t)),
            format!("week of {monday}"),
            "{t}"
        );
        t += 7 * 3600 + 13 * 60;
    }
    assert_eq!(Per::Month.label(Per::Month.block(1_767_225_600)), "2026-01");
    assert_eq!(Per::Month.label(Per::Month.block(1_767_225_599)), "2025-12");
    assert_eq!(Per::Month.label(Per::Month.block(1_709_164_800)), "2024-02");
    assert_eq!(Per::Month.label(Per::Month.block(-1)), "1969-12");
    // a window [lo, hi) ending at midnight lies in its own month only
    let jan31 = 1_767_225_600 + 30 * 86_400;
    assert_eq!(
        Blocks::of(Per::Month, Reads::Window(jan31, jan31 + 86_400)),
        Blocks {
            first: Some(672),
            last: 672
        }
    );
    assert_eq!(
        Blocks::of(Per::Month, Reads::Window(jan31 + 1, jan31 + 86_401)),
        Blocks {
            first: Some(672),
            last: 673
        }
    );
}

/// Appends `n` charges of `r` after the tail in one transaction, as
/// [`BudgetLedger::charge`] writes them (a large history, fast).
fn bulk(l: &mut BudgetLedger, plan: &ExecutablePlan, r: &Release, n: u64) {
    let mechanism = serde_json::to_string(&MechanismRecord::of(r)).unwrap();
    l.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (mut seq, mut prev) = l.composed.tail.clone();
    for slot in 0..n {
        let mut e = BudgetEntry {
            seq: seq + 1,
            kind: BudgetKind::Charge,
            plan: Some(plan.body.name.clone()),
            plan_hash: Some(plan.body_sha256.clone()),
            plan_ledger: Some("ledger-1".into()),
            query: Some(r.name.clone()),
            slot: Some(slot as i64),
            mechanism: Some(mechanism.clone()),
            epsilon: r.cost_per_release.epsilon,
            delta: r.cost_per_release.delta,
            value: serde_json::to_string(&ChargeValue {
                composed: true,
                total_epsilon: 0.0,
                accountant: Accountant::Basic,
                at_delta: 1e-6,
                blocks: None,
            })
            .unwrap(),
            time: now_rfc3339(),
            version: dpplan_plan::COMPILER.into(),
            prev_hash: prev.clone(),
            hash: String::new(),
        };
        e.hash = e.compute_hash();
        insert(&l.conn, &e).unwrap();
        seq = e.seq;
        prev = e.hash;
    }
    l.conn.execute_batch("COMMIT").unwrap();
    l.anchor().unwrap();
}

/// The cost of a charge against a large budget ledger: the history is
/// verified and grouped once at open (linear), then each charge reads
/// only what was appended since and composes the grouped releases
/// (one mechanism counted n times), whatever n. `DPPLAN_BUDGET_N`
/// entries (default 2 000; docs/policy.md records 10⁵).
#[test]
fn the_cost_of_a_charge_does_not_grow_with_the_history() {
    let n: u64 = std::env::var("DPPLAN_BUDGET_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let dir = tempfile::tempdir().unwrap();
    let plan = dpplan_compile::compile(COUNTS).unwrap();
    let r = plan.body.release("q").unwrap();
    let b = budget(dir.path(), 1e9);
    let mut l = BudgetLedger::open_for(&b, &plan.body.guarantee()).unwrap();
    bulk(&mut l, &plan, r, n);
    let t = std::time::Instant::now();
    let mut l = BudgetLedger::open(&b.ledger).unwrap();
    let open = t.elapsed();
    assert_eq!(l.composed.releases[0].count, n);
    let t = std::time::Instant::now();
    let runs = 20;
    for slot in 0..runs {
        let c = l
            .charge(&plan, "ledger-1", r, (n + slot, Reads::UpTo(0)))
            .unwrap();
        assert!(c.total_epsilon <= (n + slot + 1) as f64 * 0.5);
    }
    let charge = t.elapsed() / runs as u32;
    println!(
        "budget ledger with {} entries: open (verify and group) {:.1} ms, one charge {:.2} ms",
        n + 1,
        open.as_secs_f64() * 1e3,
        charge.as_secs_f64() * 1e3
    );
}
