//! Sign-offs through the real `dpplan` binary: a frozen report is only one
//! that dpplan derives again from the ledger's own plan; reviewers sign it
//! with ed25519 keys; a policy that requires k sign-offs holds every run
//! back until k of its reviewers signed a frozen report of that very plan;
//! a forged sign-off makes the ledger damaged.

use std::path::{Path, PathBuf};

use dpplan_runtime::ledger::Entry;

use crate::support::{dpplan, exported, ok, root, text};

const WEB: &str = "examples/web-analytics/web-analytics.dpplan";

/// Bytes dpplan never derives from a plan.
const NOT_A_REPORT: &[u8] = b"<html>\r\n<p>\xff\xfe claim ok</p>\r\n</html>";

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    /// The web-analytics example (plan and data) copied into a new folder,
    /// with `policy` as its `dpplan.toml` when given, and compiled there.
    fn new(policy: Option<&str>) -> Dir {
        let dir = tempfile::tempdir().unwrap();
        let src = root().join("examples/web-analytics");
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::copy(
            src.join("data/visits.csv"),
            dir.path().join("data/visits.csv"),
        )
        .unwrap();
        std::fs::copy(root().join(WEB), dir.path().join("web.dpplan")).unwrap();
        if let Some(p) = policy {
            std::fs::write(dir.path().join("dpplan.toml"), p).unwrap();
        }
        let d = Dir { dir };
        ok(&dpplan(&[
            "compile",
            &d.s("web.dpplan"),
            "-o",
            &d.s("web.json"),
        ]));
        d
    }

    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn s(&self, name: &str) -> String {
        self.p(name).to_str().unwrap().to_string()
    }

    /// `dpplan report web.dpplan --format md --start 2030-01-01 --out NAME`.
    fn report(&self, name: &str) -> Vec<u8> {
        ok(&dpplan(&[
            "report",
            &self.s("web.dpplan"),
            "--format",
            "md",
            "--start",
            "2030-01-01",
            "--out",
            &self.s(name),
        ]));
        std::fs::read(self.p(name)).unwrap()
    }

    fn freeze(&self, report: &str, plan: &Path, extra: &[&str]) -> std::process::Output {
        let mut args = vec![
            "ledger".to_string(),
            "freeze".into(),
            "--ledger".into(),
            self.s("l.db"),
            "--report".into(),
            self.s(report),
            "--plan".into(),
            plan.to_str().unwrap().into(),
            "--start".into(),
            "2030-01-01".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        dpplan(&refs)
    }

    /// A new reviewer key in NAME.pem; its public key.
    fn keygen(&self, name: &str) -> String {
        let o = dpplan(&["ledger", "keygen", "--out", &self.s(&format!("{name}.pem"))]);
        ok(&o);
        text(&o.stdout).trim().to_string()
    }

    fn sign(&self, hash: &str, key: &str, reviewer: &str) -> std::process::Output {
        dpplan(&[
            "ledger",
            "sign",
            "--ledger",
            &self.s("l.db"),
            "--report",
            hash,
            "--key",
            &self.s(&format!("{key}.pem")),
            "--reviewer",
            reviewer,
        ])
    }

    fn run(&self) -> std::process::Output {
        dpplan(&[
            "run",
            &self.s("web.json"),
            "--ledger",
            &self.s("l.db"),
            "--slot",
            "0",
        ])
    }
}

fn hash_of(o: &std::process::Output) -> String {
    let out = text(&o.stdout);
    out.split("froze report ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{out}{}", text(&o.stderr)))
        .to_string()
}

fn entries(ledger: &str) -> Vec<Entry> {
    exported(ledger)
}

fn intents(ledger: &str) -> usize {
    entries(ledger)
        .iter()
        .filter(|e| e.kind.as_str() == "intent")
        .count()
}

/// The review's bypass: `ledger freeze --report fake.md --plan P` stored any
/// bytes as a sign-off, into a ledger that runs another plan. Now only the
/// report dpplan derives from the plan, with the options it was made with,
/// into the plan's own ledger, is frozen.
#[test]
fn only_a_report_dpplan_derives_from_the_ledgers_plan_is_frozen() {
    let d = Dir::new(None);
    let plan = d.p("web.dpplan");
    // bytes dpplan never derives: refused, and no ledger created
    std::fs::write(d.p("fake.html"), NOT_A_REPORT).unwrap();
    let o = d.freeze("fake.html", &plan, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("not the one dpplan derives"),
        "{}",
        text(&o.stderr)
    );
    assert!(!d.p("l.db").exists());
    // a real report with one byte changed: refused, naming the line
    let mut bytes = d.report("r.md");
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'7' { b'8' } else { b'7' };
    std::fs::write(d.p("edited.md"), &bytes).unwrap();
    let o = d.freeze("edited.md", &plan, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("differ from line"),
        "{}",
        text(&o.stderr)
    );
    // a format dpplan does not derive
    std::fs::copy(d.p("r.md"), d.p("r.txt")).unwrap();
    let o = d.freeze("r.txt", &plan, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("format `txt`"),
        "{}",
        text(&o.stderr)
    );
    // made with another --start: refused under this one, frozen under its own
    ok(&dpplan(&[
        "report",
        &d.s("web.dpplan"),
        "--format",
        "md",
        "--start",
        "2031-06-01",
        "--out",
        &d.s("other-start.md"),
    ]));
    let o = d.freeze("other-start.md", &plan, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(!d.p("l.db").exists());
    // the real one is frozen (creating the ledger for the plan)
    let o = d.freeze("r.md", &plan, &[]);
    ok(&o);
    assert!(d.p("l.db").exists());
    // a true report of ANOTHER plan is not frozen into this plan's ledger
    let census = root().join("examples/census/census.dpplan");
    ok(&dpplan(&[
        "report",
        census.to_str().unwrap(),
        "--format",
        "md",
        "--start",
        "2030-01-01",
        "--out",
        &d.s("census.md"),
    ]));
    let o = d.freeze("census.md", &census, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("runs plan") && err.contains("census.dpplan"),
        "{err}"
    );
    let frozen = |l: &str| {
        entries(l)
            .iter()
            .filter(|e| e.kind.as_str() == "frozen_report")
            .count()
    };
    assert_eq!(frozen(&d.s("l.db")), 1);
    // … unless it is the plan the ledger is to be upgraded to
    ok(&d.freeze("census.md", &census, &["--upgrade"]));
    assert_eq!(frozen(&d.s("l.db")), 2);
    ok(&dpplan(&["ledger", "verify", &d.s("l.db")]));
}

fn policy(required: usize, reviewers: &[(&str, &str)]) -> String {
    let list: Vec<String> = reviewers
        .iter()
        .map(|(n, k)| format!("  {{ name = \"{n}\", public-key = \"{k}\" }},"))
        .collect();
    format!(
        "[signoff]\nrequired = {required}\nreviewers = [\n{}\n]\n",
        list.join("\n")
    )
}

/// A policy that requires two of its reviewers' sign-offs: no run releases
/// anything until two trusted keys signed a frozen report of this plan (an
/// untrusted key, the same key twice, or a report of another plan do not
/// count); each refused run writes nothing.
#[test]
fn a_policy_holds_every_run_back_until_its_reviewers_signed() {
    // the keys first (in a folder of their own), then the policy naming two
    let keys = Dir::new(None);
    let ana = keys.keygen("ana");
    let ben = keys.keygen("ben");
    let eve = keys.keygen("eve");
    assert_eq!(ana.len(), 64);
    assert!(ana != ben && ben != eve && ana != eve);
    let d = Dir::new(Some(&policy(
        2,
        &[("Ana Ruiz", &ana), ("Ben Okafor", &ben)],
    )));
    for k in ["ana", "ben", "eve"] {
        std::fs::copy(keys.p(&format!("{k}.pem")), d.p(&format!("{k}.pem"))).unwrap();
    }
    // a first run under the policy creates no ledger
    let o = d.run();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("requires 2 sign-off(s)"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !d.p("l.db").exists(),
        "a refused first run creates no ledger"
    );

    d.report("r.md");
    let hash = hash_of(&d.freeze("r.md", &d.p("web.dpplan"), &[]));
    let ledger = d.s("l.db");
    let refused = |why: &str| {
        let before = entries(&ledger).len();
        let o = d.run();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains(why), "{}", text(&o.stderr));
        assert!(o.stdout.is_empty(), "nothing released");
        assert_eq!(entries(&ledger).len(), before, "nothing written");
    };
    refused("none of its 1 frozen report(s) of this plan is signed");
    ok(&d.sign(&hash[..12], "ana", "Ana Ruiz"));
    refused("has 1 (Ana Ruiz)");
    // an untrusted key's signature is valid but does not count
    ok(&d.sign(&hash, "eve", "Eve"));
    refused("has 1 (Ana Ruiz)");
    // the same key twice is refused
    let again = d.sign(&hash, "ana", "Ana R.");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already signed"),
        "{}",
        text(&again.stderr)
    );
    ok(&d.sign(&hash, "ben", "Ben Okafor"));
    // two trusted sign-offs: the run releases
    assert_eq!(intents(&ledger), 0);
    let o = d.run();
    ok(&o);
    assert!(intents(&ledger) > 0);
    // every sign-off is shown, verified, with the report
    let o = dpplan(&["ledger", "frozen", &hash, "--ledger", &ledger]);
    ok(&o);
    let err = text(&o.stderr);
    for who in ["Ana Ruiz", "Ben Okafor", "Eve"] {
        assert!(err.contains(&format!("signed: by {who}")), "{err}");
    }
    ok(&dpplan(&["ledger", "verify", &ledger]));
}

/// The first sign-off's value rewritten with `edit`, re-chained with the
/// anchor: only the signature tells the forgery.
fn forge_signoff(ledger: &str, edit: impl Fn(&mut serde_json::Value)) {
    crate::support::forge_value(ledger, "signoff", edit);
}

/// A sign-off whose signature does not verify, re-chained so that the hash
/// chain and the anchor hold: `ledger verify`, `ledger frozen` and the run
/// refuse it; the untouched copy passes (the control).
#[test]
fn a_forged_signoff_makes_the_ledger_damaged() {
    let keys = Dir::new(None);
    let ana = keys.keygen("ana");
    let d = Dir::new(Some(&policy(1, &[("Ana Ruiz", &ana)])));
    std::fs::copy(keys.p("ana.pem"), d.p("ana.pem")).unwrap();
    d.report("r.md");
    let hash = hash_of(&d.freeze("r.md", &d.p("web.dpplan"), &[]));
    ok(&d.sign(&hash, "ana", "Ana Ruiz"));
    let ledger = d.s("l.db");
    ok(&dpplan(&["ledger", "verify", &ledger]));
    type Forgery = Box<dyn Fn(&mut serde_json::Value)>;
    let forgeries: Vec<(&str, Forgery)> = vec![
        (
            "a flipped signature",
            Box::new(|v| {
                let s = v["signature"].as_str().unwrap().to_string();
                let flipped = if s.starts_with('0') { "1" } else { "0" };
                v["signature"] = format!("{flipped}{}", &s[1..]).into();
            }),
        ),
        (
            "another reviewer's name",
            Box::new(|v| v["reviewer"] = "Mallory".into()),
        ),
        (
            "another key (the signature stays)",
            Box::new(move |v| {
                v["public_key"] =
                    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a".into()
            }),
        ),
    ];
    for (what, edit) in forgeries {
        let copy = d.s(&format!("forged-{}.db", what.len()));
        std::fs::copy(&ledger, &copy).unwrap();
        std::fs::copy(format!("{ledger}.head"), format!("{copy}.head")).unwrap();
        ok(&dpplan(&["ledger", "verify", &copy]));
        forge_signoff(&copy, edit);
        let v = dpplan(&["ledger", "verify", &copy]);
        assert_eq!(v.status.code(), Some(1), "{what}: {}", text(&v.stdout));
        let out = format!("{}{}", text(&v.stdout), text(&v.stderr));
        assert!(out.contains("sign-off"), "{what}: {out}");
        let f = dpplan(&["ledger", "frozen", &hash, "--ledger", &copy]);
        assert_eq!(f.status.code(), Some(1), "{what}");
        let r = dpplan(&["run", &d.s("web.json"), "--ledger", &copy, "--slot", "0"]);
        assert_eq!(r.status.code(), Some(1), "{what}");
        assert_eq!(intents(&copy), 0, "{what}: nothing charged");
    }
    // the control: the real ledger still runs
    ok(&d.run());
}

/// A `[signoff]` that cannot be used is an error located in the policy file.
#[test]
fn a_signoff_policy_that_cannot_be_used_is_located() {
    let keys = Dir::new(None);
    let ana = keys.keygen("ana");
    let cases = [
        (
            policy(2, &[("Ana", &ana)]),
            "between 1 and the 1 reviewer(s)",
        ),
        (policy(1, &[("Ana", "00ff")]), "not an ed25519 public key"),
        (
            policy(1, &[("Ana", &ana), ("Ana B", &ana)]),
            "repeats the reviewer",
        ),
    ];
    for (text_, want) in cases {
        let d = Dir::new(None);
        std::fs::write(d.p("dpplan.toml"), &text_).unwrap();
        let o = dpplan(&["check", &d.s("web.dpplan")]);
        assert_eq!(o.status.code(), Some(2), "{text_}");
        let err = format!("{}{}", text(&o.stdout), text(&o.stderr));
        assert!(err.contains(want) && err.contains("dpplan.toml"), "{err}");
        // a run under it stops too, before anything is written
        let r = d.run();
        assert_eq!(r.status.code(), Some(2), "{}", text(&r.stderr));
        assert!(!d.p("l.db").exists());
    }
}

fn openssl(args: &[&str]) -> std::process::Output {
    std::process::Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl (Debian's `openssl` package) runs")
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// dpplan's sign-offs are ed25519 as OpenSSL knows it, over the message
/// docs/executable-plan.md gives: a key made by `openssl genpkey` signs
/// with `dpplan ledger sign`, the entry's public key is OpenSSL's, and the
/// signature verifies with `openssl pkeyutl -verify` over the documented
/// message, not over the message with another reviewer's name.
#[test]
fn signoffs_are_ed25519_as_openssl_verifies_them() {
    let d = Dir::new(None);
    let key = d.s("olu.pem");
    let o = openssl(&["genpkey", "-algorithm", "ed25519", "-out", &key]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let pubpem = d.s("olu.pub.pem");
    assert!(openssl(&["pkey", "-in", &key, "-pubout", "-out", &pubpem])
        .status
        .success());
    let der = openssl(&["pkey", "-in", &key, "-pubout", "-outform", "DER"]);
    assert!(der.status.success());
    let raw: String = der.stdout[der.stdout.len() - 32..]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();

    d.report("r.md");
    let hash = hash_of(&d.freeze("r.md", &d.p("web.dpplan"), &[]));
    ok(&d.sign(&hash, "olu", "Olu Adé"));
    let all = entries(&d.s("l.db"));
    let s = all.iter().find(|e| e.kind.as_str() == "signoff").unwrap();
    let f = all.iter().find(|e| Some(e.seq) == s.refers_to).unwrap();
    assert_eq!(f.kind.as_str(), "frozen_report");
    let v: serde_json::Value = serde_json::from_str(s.value.as_deref().unwrap()).unwrap();
    let fv: serde_json::Value = serde_json::from_str(f.value.as_deref().unwrap()).unwrap();
    assert_eq!(v["public_key"], raw.as_str(), "OpenSSL's public key");
    std::fs::write(d.p("sig.bin"), unhex(v["signature"].as_str().unwrap())).unwrap();
    let verify = |reviewer: &str| {
        let msg = format!(
            "dpplan-signoff-1\nledger {}\nentry {} {}\nreport {}\nplan {}\nreviewer {}\n",
            all[0].hash,
            f.seq,
            f.hash,
            hash,
            fv["plan_sha256"].as_str().unwrap(),
            reviewer
        );
        std::fs::write(d.p("msg"), msg).unwrap();
        openssl(&[
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            &pubpem,
            "-rawin",
            "-in",
            &d.s("msg"),
            "-sigfile",
            &d.s("sig.bin"),
        ])
    };
    let good = verify("Olu Adé");
    assert!(
        good.status.success() && text(&good.stdout).contains("Signature Verified Successfully"),
        "{}{}",
        text(&good.stdout),
        text(&good.stderr)
    );
    assert!(
        !verify("Olu Ade").status.success(),
        "another name does not verify"
    );
}

/// A nested `dpplan.toml` extends its parent: its own `[signoff]` (another
/// reviewer, one signature) does not lift the parent's; both must hold.
#[test]
fn a_nested_policy_cannot_lower_its_parents_signoff() {
    let keys = Dir::new(None);
    let ana = keys.keygen("ana");
    let eve = keys.keygen("eve");
    let d = Dir::new(Some(&policy(1, &[("Ana Ruiz", &ana)])));
    let team = d.p("team");
    std::fs::create_dir_all(team.join("data")).unwrap();
    std::fs::copy(d.p("data/visits.csv"), team.join("data/visits.csv")).unwrap();
    std::fs::copy(d.p("web.dpplan"), team.join("web.dpplan")).unwrap();
    std::fs::write(team.join("dpplan.toml"), policy(1, &[("Eve", &eve)])).unwrap();
    for k in ["ana", "eve"] {
        std::fs::copy(keys.p(&format!("{k}.pem")), d.p(&format!("{k}.pem"))).unwrap();
    }
    let s = |p: PathBuf| p.to_str().unwrap().to_string();
    let (plan, json, ledger) = (
        s(team.join("web.dpplan")),
        s(team.join("web.json")),
        s(team.join("l.db")),
    );
    ok(&dpplan(&["compile", &plan, "-o", &json]));
    ok(&dpplan(&[
        "report",
        &plan,
        "--format",
        "md",
        "--start",
        "2030-01-01",
        "--out",
        &d.s("r.md"),
    ]));
    let o = dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        &ledger,
        "--report",
        &d.s("r.md"),
        "--plan",
        &plan,
        "--start",
        "2030-01-01",
    ]);
    let hash = hash_of(&o);
    let sign = |key: &str, who: &str| {
        dpplan(&[
            "ledger",
            "sign",
            "--ledger",
            &ledger,
            "--report",
            &hash,
            "--key",
            &d.s(&format!("{key}.pem")),
            "--reviewer",
            who,
        ])
    };
    let run = || dpplan(&["run", &json, "--ledger", &ledger, "--slot", "0"]);
    ok(&sign("eve", "Eve"));
    let r = run();
    assert_eq!(r.status.code(), Some(1), "{}", text(&r.stderr));
    let err = text(&r.stderr);
    assert!(
        err.contains(&format!("{}", d.p("dpplan.toml").display())) && err.contains("requires 1"),
        "the parent's requirement, named by its file: {err}"
    );
    assert_eq!(intents(&ledger), 0);
    ok(&sign("ana", "Ana Ruiz"));
    ok(&run());
    assert!(intents(&ledger) > 0);
}
