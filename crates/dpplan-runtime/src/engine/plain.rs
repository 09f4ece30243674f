//! A plain, non-private aggregation, for comparisons in tests.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use super::layout::{header_index, Domain, OUT};
use super::number::parse_number;
use super::EngineError;

/// A plain, non-private aggregation of a CSV file (no bounding, no
/// clamping, no noise), to compare the bounded aggregates with. Returns the
/// row count, the sum of `sum_column` and the histogram of `by` over
/// `domain`. (The runtime benchmark has its own copy as its baseline.)
pub fn plain_aggregate(
    source: &Path,
    sum_column: &str,
    by: &str,
    domain: &[String],
) -> Result<(u64, f64, Vec<u64>), EngineError> {
    let file = File::open(source).map_err(|_| EngineError::Io("cannot open the file".into()))?;
    let io = |_: csv::Error| EngineError::Io("cannot read the CSV".into());
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let headers = rdr.byte_headers().map_err(io)?.clone();
    let si = header_index(&headers, "bench", sum_column)?;
    let bi = header_index(&headers, "bench", by)?;
    let dom = Domain::new(domain);
    let mut rec = csv::ByteRecord::new();
    let (mut n, mut sum, mut hist) = (0u64, 0f64, vec![0u64; domain.len()]);
    while rdr.read_byte_record(&mut rec).map_err(io)? {
        n += 1;
        if let Some(v) = parse_number(rec.get(si), false) {
            sum += v;
        }
        let g = rec.get(bi).map_or(OUT, |f| dom.index(f));
        if g != OUT {
            hist[g as usize] += 1;
        }
    }
    Ok((n, sum, hist))
}
