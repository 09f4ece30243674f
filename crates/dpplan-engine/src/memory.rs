//! Arrow tables held in memory by the calling process, read as a source.
//!
//! A front end that holds the data itself (the Python module, handed a
//! DataFrame) registers its record batches here and passes the returned
//! name as the dataset's source, instead of writing the rows to a file: no
//! copy of private rows on disk, and none in memory when the batches were
//! imported without one (the Arrow C stream interface). The name,
//! `arrow-memory:<n>`, is read as an Arrow source by every path of the
//! engine ([`crate::SourceFormat::ArrowMemory`]): the same schema check,
//! projection, bridge and native reading as an Arrow IPC file's batches,
//! so the same semantics. A name lives as long as its [`MemorySource`];
//! the binary never registers one, so its `--data` naming one finds
//! nothing and is refused, and the runtime refuses a plan's `source` that
//! names one (a plan must not read a table given to another run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

/// What every in-memory source's name starts with.
pub const PREFIX: &str = "arrow-memory:";

/// A table's schema and batches.
pub(crate) type Table = Arc<(SchemaRef, Vec<RecordBatch>)>;

static TABLES: Mutex<BTreeMap<u64, Table>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A registered table: its name is a source while this lives.
#[derive(Debug)]
pub struct MemorySource {
    id: u64,
    path: PathBuf,
}

impl MemorySource {
    /// Registers `batches` (all of `schema`) under a new name.
    pub fn register(schema: SchemaRef, batches: Vec<RecordBatch>) -> MemorySource {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        TABLES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::new((schema, batches)));
        MemorySource {
            id,
            path: PathBuf::from(format!("{PREFIX}{id}")),
        }
    }

    /// The name to pass as the dataset's source.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MemorySource {
    fn drop(&mut self) {
        TABLES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

/// Whether `source` names an in-memory table (registered or not).
pub(crate) fn is_memory(source: &Path) -> bool {
    source.to_str().is_some_and(|s| s.starts_with(PREFIX))
}

/// A source as messages name it: `` `path` ``, or, for an in-memory
/// table, what it is (its name means nothing to the user who gave it).
pub(crate) fn shown(source: &Path) -> String {
    if is_memory(source) {
        format!("the table given in memory ({})", source.display())
    } else {
        format!("`{}`", source.display())
    }
}

/// The table `source` names, if it is registered.
pub(crate) fn table(source: &Path) -> Option<Table> {
    let id: u64 = source.to_str()?.strip_prefix(PREFIX)?.parse().ok()?;
    TABLES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Schema;

    #[test]
    fn a_name_lives_as_long_as_its_source() {
        let s = MemorySource::register(Arc::new(Schema::empty()), Vec::new());
        let path = s.path().to_path_buf();
        assert!(is_memory(&path) && table(&path).is_some());
        drop(s);
        assert!(is_memory(&path) && table(&path).is_none());
        assert!(!is_memory(Path::new("data/arrow-memory:1")));
        assert!(table(Path::new("arrow-memory:x")).is_none());
    }
}
