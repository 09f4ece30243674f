//! The ledger's anchor: a small file next to the SQLite file that records
//! the latest entry count and hash, written (atomically, fsynced) after
//! every commit.
//!
//! A hash chain proves that no entry *inside* it was changed, but a chain
//! cut short is still a valid chain: losing the WAL file after a commit, or
//! the last pages of the database, silently forgets the newest intents, and
//! a forgotten intent is a slot the runtime would draw again. The anchor
//! makes the cut visible without the operator having kept a hash: at open,
//! the ledger must contain the anchored entry with the anchored hash.
//!
//! The anchor may *lag* the ledger (a crash between a commit and the anchor
//! write leaves it one write behind) but never lead it: an anchor that
//! records more entries than the ledger holds means entries were lost.
//!
//! It also keeps the **checkpoint** of the last successful verification
//! ([`Checkpoint`]): the entry it reached and that entry's hash, so that
//! the next run verifies only the entries appended since, plus the
//! checkpoint's binding to the chain ([`super::Ledger::integrity_for_run`]).
//! An earlier dpplan ignores the field (and drops it when it rewrites the
//! anchor: the next run then verifies the whole ledger once).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{IoError, LedgerError, ANCHOR_FORMAT};

/// What the anchor file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub format: String,
    /// The hash of entry 1: ties the anchor to one ledger.
    pub genesis_hash: String,
    /// The number of entries (= the latest sequence number) when written.
    pub entries: i64,
    pub latest_hash: String,
    /// What the last successful verification vouched for (absent in an
    /// anchor written by an earlier dpplan, or before any verification).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

/// The last successful verification: the whole chain and the state beside
/// it held up to entry `entries`, whose hash was `hash`; and what a run
/// compares cheaply to know that nothing behind it changed since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub entries: i64,
    pub hash: String,
    /// SQLite's schema cookie (`PRAGMA schema_version`) then: dropping,
    /// altering or creating a trigger, a table or an index changes it, and
    /// every edit of an entry through SQL has to drop a trigger first (the
    /// append-only triggers refuse UPDATE, DELETE and an INSERT over an
    /// existing entry).
    pub schema_version: i64,
    /// The rows of the window state then.
    pub window_units: i64,
    /// The unit key's fingerprint the chain recorded first, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units_key_sha256: Option<String>,
}

impl Head {
    pub fn new(genesis_hash: &str, entries: i64, latest_hash: &str) -> Head {
        Head {
            format: ANCHOR_FORMAT.into(),
            genesis_hash: genesis_hash.into(),
            entries,
            latest_hash: latest_hash.into(),
            checkpoint: None,
        }
    }
}

/// `LEDGER.head` next to `LEDGER`.
pub fn head_path(ledger: &Path) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(".head");
    PathBuf::from(p)
}

/// Reads the anchor; `None` when there is no anchor file.
pub fn read_head(ledger: &Path) -> Result<Option<Head>, LedgerError> {
    let path = head_path(ledger);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let message = format!("cannot read the ledger's anchor `{}`: {e}", path.display());
            return Err(LedgerError::Io(IoError::new(message).with_source(e)));
        }
    };
    let head: Head = serde_json::from_slice(&text).map_err(|_| LedgerError::Damaged {
        seq: None,
        why: format!(
            "the anchor `{}` is unreadable (it was damaged or replaced)",
            path.display()
        ),
    })?;
    if head.format != ANCHOR_FORMAT {
        return Err(LedgerError::Damaged {
            seq: None,
            why: format!(
                "the anchor `{}` has format `{}`, expected `{ANCHOR_FORMAT}`",
                path.display(),
                head.format
            ),
        });
    }
    Ok(Some(head))
}

/// Replaces the anchor atomically ([`replace_file`]).
pub fn write_head(ledger: &Path, head: &Head) -> Result<(), LedgerError> {
    let path = head_path(ledger);
    let mut body = serde_json::to_vec(head).map_err(|e| {
        LedgerError::Io(
            IoError::new(format!(
                "cannot serialise the ledger's anchor `{}`: {e}",
                path.display()
            ))
            .with_source(e),
        )
    })?;
    body.push(b'\n');
    replace_file(&path, &body, false, "the ledger's anchor")
}

/// Replaces `path` atomically with `body`: a temporary sibling, written
/// and fsynced, renamed over the old file, then the directory fsynced so
/// the rename itself is durable. `owner_only`: the file is created
/// readable by its owner only (Unix). `what` names the file in errors.
pub fn replace_file(
    path: &Path,
    body: &[u8],
    owner_only: bool,
    what: &str,
) -> Result<(), LedgerError> {
    let io = |verb: &str, e: std::io::Error| {
        let message = format!("cannot {verb} {what} `{}`: {e}", path.display());
        LedgerError::Io(IoError::new(message).with_source(e))
    };
    let tmp = temp_sibling(path, "tmp")?;
    let dir = parent_dir(path);
    let written = (|| {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        if owner_only {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = owner_only;
        let mut f = o.open(&tmp)?;
        f.write_all(body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("write", e));
    }
    // The rename is durable once the directory is; some filesystems cannot
    // open a directory for syncing, and there the rename is as durable as
    // they make it.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The directory a file is in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A fresh hidden name next to `path`, `.NAME.<random>.<suffix>`, for a
/// file that is written whole and then moved into place.
pub fn temp_sibling(path: &Path, suffix: &str) -> Result<PathBuf, LedgerError> {
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed)
        .map_err(|e| LedgerError::Io(IoError::new("no OS randomness").with_source(e)))?;
    Ok(parent_dir(path).join(format!(
        ".{}.{:016x}.{suffix}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        u64::from_le_bytes(seed)
    )))
}

/// Removes leftovers of interrupted writes next to `ledger`: temporary
/// ledgers (`.NAME.*.creating` with their `-wal`/`-shm`) and temporary
/// anchors (`.NAME.head.*.tmp`) older than `min_age`, so that a creation or
/// an anchor write still under way in another process is never touched.
pub fn remove_leftovers(ledger: &Path, min_age: std::time::Duration) {
    remove_temp_siblings(
        ledger,
        &["creating", "creating-wal", "creating-shm"],
        min_age,
    );
    remove_temp_siblings(&head_path(ledger), &["tmp"], min_age);
}

/// Removes the temporary siblings of `path` (`temp_sibling`:
/// `.NAME.<hex digits>.<suffix>`, with one of `suffixes`) older than
/// `min_age`: what writes of `path` interrupted by a crash left behind
/// (a [`replace_file`] killed before its rename). A caller that holds
/// every writer of `path` off (a lock) may pass a zero age.
pub fn remove_temp_siblings(path: &Path, suffixes: &[&str], min_age: std::time::Duration) {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Ok(listing) = std::fs::read_dir(parent_dir(path)) else {
        return;
    };
    let prefix = format!(".{name}.");
    let ours = |f: &str| {
        let Some((random, suffix)) = f.strip_prefix(&prefix).and_then(|r| r.split_once('.')) else {
            return false;
        };
        !random.is_empty()
            && random.bytes().all(|b| b.is_ascii_hexdigit())
            && suffixes.contains(&suffix)
    };
    for e in listing.flatten() {
        if !ours(&e.file_name().to_string_lossy()) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= min_age);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Publishes the ledger built at `tmp` as `path` atomically (a hard link,
/// then `tmp` and its WAL files removed): `Ok(true)` when this process
/// created it, `Ok(false)` when another process won the race (its ledger
/// is the one at `path`).
pub(super) fn publish_created(tmp: &Path, path: &Path) -> Result<bool, super::LedgerError> {
    let linked = std::fs::hard_link(tmp, path);
    let _ = std::fs::remove_file(tmp);
    for suffix in ["-wal", "-shm"] {
        let mut p = tmp.as_os_str().to_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
    match linked {
        Ok(()) => Ok(true),
        Err(_) if path.exists() => Ok(false),
        Err(source) => Err(super::LedgerError::Create {
            path: path.to_path_buf(),
            source,
        }),
    }
}
