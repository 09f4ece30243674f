//! DataFrames and tables handed to `dpplan.run`, imported through the Arrow
//! C stream interface (the PyCapsule protocol: `__arrow_c_stream__`, which
//! pyarrow, Polars and pandas' Arrow-backed frames speak) and registered
//! as in-memory sources of the embedded engine (`dpplan_engine::memory`).
//! The batches keep pointing at the producer's buffers: no copy of the
//! rows in memory, and none on disk (the rows of a private dataset are never
//! written to a temporary file). The engine then reads them exactly as an
//! Arrow IPC file's batches (the same schema check, projection and
//! semantics).
//!
//! This is the one `unsafe` block of the workspace (whose other crates
//! `forbid` it): taking ownership of the stream a capsule holds is a raw
//! pointer hand-over by the protocol's definition, and no maintained safe
//! wrapper exists for this arrow version (pyo3-arrow 0.20 builds on arrow
//! 59; dpplan is on 60).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use std::collections::BTreeMap;
use std::path::PathBuf;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchReader};
use dpplan_engine::memory::MemorySource;

/// The table `table` (anything with `__arrow_c_stream__`) for dataset
/// `name`, registered as an in-memory source for as long as the returned
/// value lives. Reads the stream to its end with the GIL held (each batch
/// is a hand-over of pointers, not a copy of the rows).
pub(crate) fn import(name: &str, table: &Bound<'_, PyAny>) -> PyResult<MemorySource> {
    let not_arrow = |why: String| {
        PyTypeError::new_err(format!(
            "data[{name:?}]: {why}: give a pandas or Polars DataFrame, a pyarrow Table, or a file path"
        ))
    };
    let capsule = table
        .call_method0("__arrow_c_stream__")
        .map_err(|e| not_arrow(format!("it exports no Arrow stream ({e})")))?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| not_arrow("`__arrow_c_stream__` did not return a capsule".into()))?;
    let stream = capsule
        .pointer_checked(Some(c"arrow_array_stream"))
        .map_err(|e| not_arrow(format!("not an Arrow stream capsule ({e})")))?;
    #[allow(unsafe_code)]
    // SAFETY: a capsule named "arrow_array_stream" holds a valid
    // `struct ArrowArrayStream` (the Arrow PyCapsule interface). `from_raw`
    // moves it out and leaves a released (empty) stream behind, which is
    // how the protocol hands ownership to the consumer: the capsule's
    // destructor then does nothing, and the reader releases the stream when
    // dropped. The capsule is not touched again.
    let reader = unsafe {
        RecordBatchStreamReader::from_raw(stream.cast::<FFI_ArrowArrayStream>().as_ptr())
    }
    .map_err(|e| not_arrow(format!("its Arrow stream cannot be read ({e})")))?;
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .map_err(|e| not_arrow(format!("a batch of its Arrow stream cannot be read ({e})")))?;
    Ok(MemorySource::register(schema, batches))
}

/// A run's data: each dataset's file path (a `str`), or its frame imported
/// as an in-memory source, which stays a source while the returned sources
/// live.
pub(crate) fn sources(
    data: BTreeMap<String, Bound<'_, PyAny>>,
) -> PyResult<(BTreeMap<String, PathBuf>, Vec<MemorySource>)> {
    let mut paths = BTreeMap::new();
    let mut held = Vec::new();
    for (name, value) in data {
        let path = match value.extract::<String>() {
            Ok(p) => PathBuf::from(p),
            Err(_) => {
                let source = import(&name, &value)?;
                let p = source.path().to_path_buf();
                held.push(source);
                p
            }
        };
        paths.insert(name, path);
    }
    Ok((paths, held))
}
