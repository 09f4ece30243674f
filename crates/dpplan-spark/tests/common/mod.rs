//! What the real-Spark tests share: the cluster scripts/test.sh started,
//! and Parquet files written by PySpark.

use std::path::Path;

use dpplan_spark::SparkEngine;

/// The engine on the cluster the test script started, or `None` (skip)
/// outside CI.
pub fn spark() -> Option<SparkEngine> {
    let home = std::env::var_os("DPPLAN_SPARK_HOME").filter(|h| !h.is_empty());
    let master = std::env::var("DPPLAN_SPARK_MASTER")
        .ok()
        .filter(|m| !m.is_empty());
    match (home, master) {
        (Some(h), Some(m)) => Some(SparkEngine {
            submit: Path::new(&h).join("bin").join("spark-submit"),
            master: Some(m),
            conf: vec![
                ("spark.executor.memory".into(), "1g".into()),
                ("spark.sql.shuffle.partitions".into(), "8".into()),
            ],
        }),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "DPPLAN_SPARK_HOME and DPPLAN_SPARK_MASTER are not set: run the Spark tests through scripts/test.sh"
        ),
        _ => {
            eprintln!("skipped: set DPPLAN_SPARK_HOME and DPPLAN_SPARK_MASTER (scripts/test.sh does)");
            None
        }
    }
}

/// A CSV converted to Parquet by PySpark (local mode, PYSPARK_PYTHON), with
/// the given schema (a typed source for the engine).
pub fn to_parquet(csv: &Path, out: &Path, schema: &str) {
    let python = std::env::var("PYSPARK_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import sys\nfrom pyspark.sql import SparkSession\n\
        spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n\
        spark.read.option('header', 'true').schema(sys.argv[3]).csv(sys.argv[1]).write.parquet(sys.argv[2])\n";
    let o = std::process::Command::new(python)
        .args(["-c", script])
        .arg(csv)
        .arg(out)
        .arg(schema)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The first 60 bits of HMAC-SHA256(`key`, `id`), as the statement reads
/// them (its hex digest's first 15 digits).
fn coin(key: &[u8; 32], id: &[u8]) -> u64 {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(id);
    let d = mac.finalize().into_bytes();
    u64::from_be_bytes(d[..8].try_into().unwrap()) >> 4
}

/// The rows of `csv` whose unit (column `id`) has a coin below `below`,
/// written next to it; and the number of units kept and seen.
pub fn sampled_csv(csv: &Path, id: &str, key: &[u8; 32], below: u64, out: &Path) -> (usize, usize) {
    let mut r = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(csv)
        .unwrap();
    let headers = r.byte_headers().unwrap().clone();
    let at = headers.iter().position(|h| h == id.as_bytes()).unwrap();
    let mut w = csv::WriterBuilder::new()
        .flexible(true)
        .from_path(out)
        .unwrap();
    w.write_byte_record(&headers).unwrap();
    let (mut kept, mut seen) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for rec in r.byte_records() {
        let rec = rec.unwrap();
        let Some(u) = rec.get(at) else { continue };
        seen.insert(u.to_vec());
        if coin(key, u) < below {
            kept.insert(u.to_vec());
            w.write_byte_record(&rec).unwrap();
        }
    }
    w.flush().unwrap();
    (kept.len(), seen.len())
}
