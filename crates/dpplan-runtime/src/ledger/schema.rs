//! The ledger's schema and its formats: the tables and append-only
//! triggers of each format, which format an open ledger has, and the
//! migration a first write makes to the current one.

use rusqlite::{params, Connection, OptionalExtension};

use super::LedgerError;

/// The format of a ledger created now: format 5 with `signoff` entries (a
/// reviewer's signature over a frozen report), intents that carry the
/// history composed so far ([`super::IntentValue::composed`]), which the
/// next intent adds its release to instead of re-reading every earlier
/// intent, an append-only trigger on INSERT (`APPEND_TRIGGER`) and an
/// index of the window state by intent. A format-5 reader refuses it (a
/// trigger it was not created with; an entry kind it cannot read).
pub const LEDGER_FORMAT: &str = "dpplan-ledger-6";
/// Format 5: format 4 with `skip` and `state` entries (the periods of an
/// `every` schedule that passed without a run; state bound to the chain),
/// which a format-4 reader cannot read. Still read and migrated.
pub const LEDGER_FORMAT_5: &str = "dpplan-ledger-5";
/// Format 4: format 3 whose intents may be a cumulative count's slots (a
/// mechanism record with `cumulative`, the nodes in the intent's value,
/// window-state rows bounded by the tree's `kept_slots`), which a format-3
/// reader would compose once per slot and call damaged. Still read and
/// migrated.
pub const LEDGER_FORMAT_4: &str = "dpplan-ledger-4";
/// Format 3 (no cumulative counts), still read and migrated.
pub const LEDGER_FORMAT_3: &str = "dpplan-ledger-3";
/// Format 2 (no window state), still read and migrated.
pub const LEDGER_FORMAT_2: &str = "dpplan-ledger-2";
/// The previous format (no frozen reports), still read and migrated.
pub const LEDGER_FORMAT_1: &str = "dpplan-ledger-1";
/// The `meta` key a migrated ledger of format 1 records its new format in.
pub(super) const MIGRATED_KEY: &str = "migrated_to";
/// The `meta` key a ledger migrated to format 3 records it in.
pub(super) const MIGRATED_3_KEY: &str = "migrated_to_3";
/// The `meta` key a ledger migrated to format 4 records it in.
pub(super) const MIGRATED_4_KEY: &str = "migrated_to_4";
/// The `meta` key a ledger migrated to format 5 records it in.
pub(super) const MIGRATED_5_KEY: &str = "migrated_to_5";
/// The `meta` key a ledger migrated to format 6 records it in.
pub(super) const MIGRATED_6_KEY: &str = "migrated_to_6";

pub(super) const TABLES: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entries (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    query TEXT,
    slot INTEGER,
    mechanism TEXT,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    total_epsilon REAL NOT NULL,
    total_delta REAL NOT NULL,
    value TEXT,
    refers_to INTEGER,
    time TEXT NOT NULL,
    version TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX entries_release ON entries (query, slot);
";

/// Format 5's indexes (not part of the chain: an index holds no entry):
/// the plan in force and the budget are the last `open` or `upgrade`
/// entry, found without scanning every entry back to the first; a value's
/// corrections and an intent's value by `refers_to`.
pub(super) const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS entries_kind ON entries (kind, seq);
CREATE INDEX IF NOT EXISTS entries_refers ON entries (refers_to);
";

/// Format 6's indexes: the window-state rows an intent added, found
/// without reading every row (a run checks the rows of the intents
/// appended since its checkpoint); and a query's entries of one kind with
/// their slot and the entry they refer to, read from the index alone (a
/// run's schedule reads every slot of a query charged so far, and an
/// intent counts the query's intents: without it each of those entries'
/// whole row is read).
pub(super) const WINDOW_INDEX: &str = "
CREATE INDEX IF NOT EXISTS window_units_seq ON window_units (seq);
CREATE INDEX IF NOT EXISTS entries_query_kind ON entries (query, kind, slot, refers_to);
";

/// Format 2: the bytes of the frozen reports, keyed by their hash; `seq` is
/// the `frozen_report` entry that records them.
pub(super) const FROZEN_TABLE: &str = "
CREATE TABLE frozen_reports (
    sha256 TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    format TEXT NOT NULL,
    bytes BLOB NOT NULL
);
";

/// The append-only triggers, by name, as SQLite stores them in
/// `sqlite_master.sql`. A ledger whose triggers differ from these (dropped,
/// altered or added) is refused at open.
pub(super) const TRIGGERS: [(&str, &str); 4] = [
    (
        "entries_no_delete",
        "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
    (
        "entries_no_update",
        "CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
    (
        "meta_no_delete",
        "CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
    (
        "meta_no_update",
        "CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
];

/// Format 6's append-only trigger of `entries`: an INSERT is an append,
/// never over an existing entry (`INSERT OR REPLACE` would replace a row
/// without firing the DELETE trigger) nor behind the tail. With it every
/// edit of an entry through SQL has to drop a trigger first, which changes
/// the schema cookie a run's checkpoint compares
/// ([`super::anchor::Checkpoint`]).
pub(super) const APPEND_TRIGGER: (&str, &str) = (
    "entries_append_only",
    "CREATE TRIGGER entries_append_only BEFORE INSERT ON entries WHEN NEW.seq <= (SELECT COALESCE(MAX(seq), 0) FROM entries) BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
);

/// The append-only triggers of the `frozen_reports` table (format 2).
pub(super) const FROZEN_TRIGGERS: [(&str, &str); 2] = [
    (
        "frozen_reports_no_delete",
        "CREATE TRIGGER frozen_reports_no_delete BEFORE DELETE ON frozen_reports BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
    (
        "frozen_reports_no_update",
        "CREATE TRIGGER frozen_reports_no_update BEFORE UPDATE ON frozen_reports BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
];

/// Format 3: the windows each unit of a windowed query was kept in, by
/// the keyed hash of its id; written in the transaction of the release's
/// intent (`seq`).
pub(super) const WINDOW_TABLE: &str = "
CREATE TABLE window_units (
    query TEXT NOT NULL,
    unit TEXT NOT NULL,
    slot INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (query, unit, slot)
);
";

/// The append-only triggers of the `window_units` table (format 3).
pub(super) const WINDOW_TRIGGERS: [(&str, &str); 2] = [
    (
        "window_units_no_delete",
        "CREATE TRIGGER window_units_no_delete BEFORE DELETE ON window_units BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
    (
        "window_units_no_update",
        "CREATE TRIGGER window_units_no_update BEFORE UPDATE ON window_units BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    ),
];

/// The triggers a ledger of `format` (1 to 6; 4 and 5 add none) must have,
/// exactly.
pub(super) fn triggers_of(format: u32) -> Vec<(&'static str, &'static str)> {
    let mut t = TRIGGERS.to_vec();
    if format >= 2 {
        t.extend(FROZEN_TRIGGERS);
    }
    if format >= 3 {
        t.extend(WINDOW_TRIGGERS);
    }
    if format >= 6 {
        t.push(APPEND_TRIGGER);
    }
    t
}

/// SQLite's schema cookie: changed by every CREATE, DROP or ALTER.
pub(super) fn schema_version(conn: &Connection) -> Result<i64, LedgerError> {
    Ok(conn.query_row("PRAGMA schema_version", [], |r| r.get(0))?)
}

/// The format of an open ledger: 6, 5, 4, 3 or 2 when created so or
/// migrated, else 1.
pub(super) fn format_version(conn: &Connection) -> Result<u32, LedgerError> {
    let get = |key: &str| -> Result<Option<String>, LedgerError> {
        Ok(conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    };
    Ok(match get("format")?.as_deref() {
        Some(LEDGER_FORMAT) => 6,
        _ if get(MIGRATED_6_KEY)?.as_deref() == Some(LEDGER_FORMAT) => 6,
        Some(LEDGER_FORMAT_5) => 5,
        _ if get(MIGRATED_5_KEY)?.as_deref() == Some(LEDGER_FORMAT_5) => 5,
        Some(LEDGER_FORMAT_4) => 4,
        _ if get(MIGRATED_4_KEY)?.as_deref() == Some(LEDGER_FORMAT_4) => 4,
        Some(LEDGER_FORMAT_3) => 3,
        _ if get(MIGRATED_3_KEY)?.as_deref() == Some(LEDGER_FORMAT_3) => 3,
        Some(LEDGER_FORMAT_2) => 2,
        _ if get(MIGRATED_KEY)?.as_deref() == Some(LEDGER_FORMAT_2) => 2,
        _ => 1,
    })
}

/// Migrates a ledger of format 1 to 5 to format 6 inside the caller's
/// write transaction (nothing for a ledger of format 6).
pub(super) fn migrate(conn: &Connection) -> Result<(), LedgerError> {
    let format = format_version(conn)?;
    if format < 2 {
        conn.execute_batch(FROZEN_TABLE)?;
        for (_, sql) in FROZEN_TRIGGERS {
            conn.execute_batch(&format!("{sql};"))?;
        }
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)",
            params![MIGRATED_KEY, LEDGER_FORMAT_2],
        )?;
    }
    if format < 3 {
        conn.execute_batch(WINDOW_TABLE)?;
        for (_, sql) in WINDOW_TRIGGERS {
            conn.execute_batch(&format!("{sql};"))?;
        }
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)",
            params![MIGRATED_3_KEY, LEDGER_FORMAT_3],
        )?;
    }
    if format < 4 {
        // no new table: the mark that cumulative intents may follow
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)",
            params![MIGRATED_4_KEY, LEDGER_FORMAT_4],
        )?;
    }
    if format < 5 {
        conn.execute_batch(INDEXES)?;
        // no new table: the mark that skip and state entries may follow
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)",
            params![MIGRATED_5_KEY, LEDGER_FORMAT_5],
        )?;
    }
    if format < 6 {
        conn.execute_batch(WINDOW_INDEX)?;
        conn.execute_batch(&format!("{};", APPEND_TRIGGER.1))?;
        // no new table: the mark that signoff entries and intents carrying
        // their composed history may follow (the first intent written after
        // it composes the whole history once and stores it)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)",
            params![MIGRATED_6_KEY, LEDGER_FORMAT],
        )?;
    }
    Ok(())
}

/// How many intents `query` has (its slots charged so far).
pub(super) fn intents_of(conn: &Connection, query: &str) -> Result<u64, LedgerError> {
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM entries WHERE kind = 'intent' AND query = ?1",
        params![query],
        |r| r.get(0),
    )?;
    Ok(n as u64)
}
