//! Sign-offs: a reviewer's ed25519 signature over a frozen report, kept in
//! the ledger as a `signoff` entry (ledger format 6).
//!
//! The signed message ([`message`]) names the ledger (its first entry's
//! hash), the frozen report's entry (sequence number and hash, which chain
//! the report's hash, its accountant inputs and the plan's hashes), the
//! report's hash, the plan's body hash and the reviewer's name, under a
//! versioned domain tag: a signature cannot be moved to another report,
//! another ledger or another name. The entry records the reviewer's name,
//! the public key and the signature; [`Ledger::integrity`] verifies every
//! signature, so a forged one makes the ledger damaged.
//!
//! Whether a key is trusted is not the ledger's business: a policy names
//! its reviewers' public keys and how many of them must sign
//! ([`SignoffRule`]), and a run counts only valid sign-offs by those keys
//! of a frozen report of the plan it runs ([`Ledger::signed_by`]).
//!
//! Keys are PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the format
//! `openssl genpkey -algorithm ed25519` writes and `dpplan ledger keygen`
//! writes too; public keys are 64 hex digits or SPKI PEM (`openssl pkey
//! -pubout`).

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rusqlite::{params, Connection, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::{
    append, current_plan, format_version, frozen, migrate, read_entries, Entry, EntryKind, Ledger,
    LedgerError, NewEntry,
};

/// The domain tag of the signed message (its version).
pub const SIGNOFF_MESSAGE: &str = "dpplan-signoff-1";
/// The only signature scheme.
pub const SIGNOFF_SCHEME: &str = "ed25519";

/// The `value` of a `signoff` entry; the entry's `refers_to` is the frozen
/// report's entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignoffValue {
    /// `ed25519`.
    pub scheme: String,
    /// The version of the signed message ([`SIGNOFF_MESSAGE`]).
    pub message: String,
    pub reviewer: String,
    /// The reviewer's public key, 64 hex digits.
    pub public_key: String,
    /// SHA-256 of the signed report (the frozen entry's).
    pub report_sha256: String,
    /// The signature, 128 hex digits.
    pub signature: String,
}

/// A sign-off as the ledger holds it, verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Signoff {
    pub seq: i64,
    pub time: String,
    /// The frozen report's entry.
    pub frozen_seq: i64,
    pub value: SignoffValue,
}

/// A reviewer's signing key.
pub struct ReviewerKey(SigningKey);

impl ReviewerKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<ReviewerKey, String> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| format!("no random source: {e}"))?;
        Ok(ReviewerKey(SigningKey::from_bytes(&seed)))
    }

    /// A PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(text: &str) -> Result<ReviewerKey, String> {
        SigningKey::from_pkcs8_pem(text.trim())
            .map(ReviewerKey)
            .map_err(|e| format!("not an ed25519 private key in PKCS#8 PEM ({e})"))
    }

    /// The key as PKCS#8 PEM, to be kept secret.
    pub fn to_pem(&self) -> String {
        // Invariant: encoding a valid key in memory cannot fail.
        self.0
            .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .expect("a valid ed25519 key encodes")
            .to_string()
    }

    /// The public key, 64 hex digits.
    pub fn public_hex(&self) -> String {
        hex(&self.0.verifying_key().to_bytes())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.trim();
    if s.len() != 2 * N || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A public key given as 64 hex digits or as SPKI PEM, as 64 lower-case hex
/// digits; `Err` says why it is not one.
pub fn public_key(text: &str) -> Result<String, String> {
    let t = text.trim();
    let key = if t.starts_with("-----BEGIN") {
        VerifyingKey::from_public_key_pem(t)
            .map_err(|e| format!("not an ed25519 public key in SPKI PEM ({e})"))?
    } else {
        let bytes = unhex::<32>(t)
            .ok_or("an ed25519 public key is 64 hex digits (or SPKI PEM)".to_string())?;
        VerifyingKey::from_bytes(&bytes)
            .map_err(|e| format!("64 hex digits that are not an ed25519 public key ({e})"))?
    };
    Ok(hex(&key.to_bytes()))
}

/// The message a reviewer signs for the frozen report of entry `frozen`
/// in the ledger whose first entry's hash is `genesis`.
pub fn message(genesis: &str, frozen: &Entry, v: &frozen::FrozenValue, reviewer: &str) -> Vec<u8> {
    format!(
        "{SIGNOFF_MESSAGE}\nledger {genesis}\nentry {} {}\nreport {}\nplan {}\nreviewer {}\n",
        frozen.seq,
        frozen.hash,
        v.report_sha256,
        v.plan_sha256.as_deref().unwrap_or("-"),
        reviewer
    )
    .into_bytes()
}

/// Checks one sign-off's signature against its frozen report's entry.
fn check(genesis: &str, frozen: &Entry, s: &SignoffValue) -> Result<(), String> {
    let fv = frozen::frozen_value(frozen).ok_or("its frozen report's record is unreadable")?;
    if s.scheme != SIGNOFF_SCHEME || s.message != SIGNOFF_MESSAGE {
        return Err(format!(
            "an unknown signature scheme `{}`/`{}`",
            s.scheme.escape_default(),
            s.message.escape_default()
        ));
    }
    if s.report_sha256 != fv.report_sha256 {
        return Err("it names another report than the entry it refers to".into());
    }
    let key = unhex::<32>(&s.public_key)
        .and_then(|k| VerifyingKey::from_bytes(&k).ok())
        .ok_or("its public key is not an ed25519 key")?;
    let sig = unhex::<64>(&s.signature)
        .map(|b| Signature::from_bytes(&b))
        .ok_or("its signature is not 64 bytes of hex")?;
    key.verify_strict(&message(genesis, frozen, &fv, &s.reviewer), &sig)
        .map_err(|_| {
            format!(
                "the signature of `{}` does not verify with the key it names (forged, or the report's entry changed)",
                s.reviewer.escape_default()
            )
        })
}

fn signoff_value(e: &Entry) -> Option<SignoffValue> {
    serde_json::from_str(e.value.as_deref()?).ok()
}

/// Every sign-off of the history verified, and none in a ledger of a
/// format before 6 (part of [`Ledger::integrity`]).
pub(super) fn verify_all(conn: &Connection, entries: &[Entry]) -> Result<(), LedgerError> {
    if let Some(e) = entries.iter().find(|e| e.kind == EntryKind::Signoff) {
        if format_version(conn)? < 6 {
            return Err(LedgerError::Damaged {
                seq: Some(e.seq),
                why: "a sign-off in a ledger of a format before 6 (which has none)".into(),
            });
        }
    }
    verified(entries).map(|_| ())
}

/// The sign-offs among `entries` (which hold the first entry and the frozen
/// reports they refer to), each verified: it refers to an earlier frozen
/// report's entry, names its report and its signature verifies.
fn verified(entries: &[Entry]) -> Result<Vec<Signoff>, LedgerError> {
    let genesis = entries.first().map(|e| e.hash.as_str()).unwrap_or_default();
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| e.kind == EntryKind::Signoff) {
        let damaged = |why: String| LedgerError::Damaged {
            seq: Some(e.seq),
            why: format!("a sign-off: {why}"),
        };
        let v = signoff_value(e).ok_or_else(|| damaged("its record is unreadable".into()))?;
        let target = e
            .refers_to
            .filter(|r| *r < e.seq)
            .and_then(|r| entries.iter().find(|t| t.seq == r))
            .filter(|t| t.kind == EntryKind::FrozenReport)
            .ok_or_else(|| damaged("it refers to no earlier frozen report".into()))?;
        check(genesis, target, &v).map_err(damaged)?;
        out.push(Signoff {
            seq: e.seq,
            time: e.time.clone(),
            frozen_seq: target.seq,
            value: v,
        });
    }
    Ok(out)
}

/// What a policy requires before a run releases anything: `required`
/// valid sign-offs, by distinct keys among `reviewers`, of a frozen report
/// of the plan the run executes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SignoffRule {
    /// The policy file that requires it (for the messages).
    pub policy: String,
    pub required: usize,
    /// (name, public key as 64 hex digits).
    pub reviewers: Vec<(String, String)>,
}

impl Ledger {
    /// Signs the frozen report whose hash is `sha256` (or a unique prefix of
    /// at least 8 hex digits) as `reviewer` with `key`: verifies it first
    /// (its bytes and its claim), refuses a second sign-off by the same
    /// key, and appends a `signoff` entry. Migrates an older ledger first.
    pub fn sign(
        &mut self,
        sha256: &str,
        key: &ReviewerKey,
        reviewer: &str,
    ) -> Result<Signoff, LedgerError> {
        let reviewer = reviewer.trim();
        if reviewer.is_empty() || reviewer.chars().any(char::is_control) {
            return Err(LedgerError::Signoff(
                "a reviewer's name is needed (one line of text)".into(),
            ));
        }
        let f = self.frozen(sha256)?;
        let public_key = key.public_hex();
        if let Some(s) = f.signoffs.iter().find(|s| s.value.public_key == public_key) {
            return Err(LedgerError::Signoff(format!(
                "this key already signed report {} (ledger entry {}, as `{}`)",
                &f.value.report_sha256[..16],
                s.seq,
                s.value.reviewer.escape_default()
            )));
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        migrate(&tx)?;
        let genesis: String =
            tx.query_row("SELECT hash FROM entries WHERE seq = 1", [], |r| r.get(0))?;
        let signature = key
            .0
            .sign(&message(&genesis, &f.entry, &f.value, reviewer))
            .to_bytes();
        let value = SignoffValue {
            scheme: SIGNOFF_SCHEME.into(),
            message: SIGNOFF_MESSAGE.into(),
            reviewer: reviewer.into(),
            public_key,
            report_sha256: f.value.report_sha256.clone(),
            signature: hex(&signature),
        };
        let plan_hash = current_plan(&tx)?;
        let e = append(
            &tx,
            NewEntry {
                // Invariant: plain strings; cannot fail.
                value: Some(serde_json::to_string(&value).expect("serialises")),
                refers_to: Some(f.entry.seq),
                ..NewEntry::new(EntryKind::Signoff, &plan_hash)
            },
        )?;
        tx.commit()?;
        self.anchor()?;
        Ok(Signoff {
            seq: e.seq,
            time: e.time,
            frozen_seq: f.entry.seq,
            value,
        })
    }

    /// Every sign-off of the ledger, verified, in order.
    pub fn signoffs(&self) -> Result<Vec<Signoff>, LedgerError> {
        let entries = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE seq = 1 OR kind IN ('frozen_report', 'signoff') ORDER BY seq",
            [],
        )?;
        verified(&entries)
    }

    /// The sign-offs of `frozen_seq`'s report, verified.
    pub(super) fn signoffs_of(&self, frozen_seq: i64) -> Result<Vec<Signoff>, LedgerError> {
        let entries = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE seq = 1 OR seq = ?1 OR (kind = 'signoff' AND refers_to = ?1) ORDER BY seq",
            params![frozen_seq],
        )?;
        verified(&entries)
    }

    /// Checks `rule` for a run of the plan whose body hash is `plan_sha256`:
    /// the trusted reviewers (by name) whose valid sign-off of one frozen
    /// report of that plan the ledger holds, when they are at least
    /// `rule.required`; otherwise why not. Verify the ledger
    /// ([`Ledger::integrity`]) first.
    pub fn signed_by(
        &self,
        rule: &SignoffRule,
        plan_sha256: &str,
    ) -> Result<Vec<String>, LedgerError> {
        let frozen = self.frozen_entries()?;
        let signoffs = self.signoffs()?;
        let mut best: Vec<String> = Vec::new();
        for (e, _) in frozen
            .iter()
            .filter(|(_, v)| v.plan_sha256.as_deref() == Some(plan_sha256))
        {
            let mut names: Vec<String> = Vec::new();
            let mut keys: Vec<&str> = Vec::new();
            for s in signoffs.iter().filter(|s| s.frozen_seq == e.seq) {
                let trusted = rule
                    .reviewers
                    .iter()
                    .find(|(_, k)| *k == s.value.public_key);
                if let Some((name, k)) = trusted {
                    if !keys.contains(&k.as_str()) {
                        keys.push(k);
                        names.push(name.clone());
                    }
                }
            }
            if names.len() > best.len() {
                best = names;
            }
        }
        if best.len() >= rule.required {
            return Ok(best);
        }
        let of_plan = frozen
            .iter()
            .filter(|(_, v)| v.plan_sha256.as_deref() == Some(plan_sha256))
            .count();
        let have = if of_plan == 0 {
            format!(
                "the ledger holds no frozen report of this plan ({})",
                &plan_sha256[..plan_sha256.len().min(16)]
            )
        } else if best.is_empty() {
            format!("none of its {of_plan} frozen report(s) of this plan is signed by a reviewer the policy names")
        } else {
            format!(
                "the best-signed frozen report of this plan has {} ({})",
                best.len(),
                best.join(", ")
            )
        };
        Err(LedgerError::Signoff(format!(
            "the policy `{}` requires {} sign-off(s) by its reviewers of a frozen report of this plan before anything is released; {have}",
            rule.policy, rule.required
        )))
    }
}
