"""dpplan's Spark driver: runs the exact bounded aggregates that dpplan generated.

Run by `dpplan run --engine spark` through spark-submit (client deploy mode:
the result file is written where dpplan runs):

    spark-submit driver.py JOB.json RESULT.json

JOB.json holds a list of jobs, each: the dataset's name, its source (a table,
or a CSV, Parquet or ORC file), its declared columns and types, the SQL text
and its bound parameters. The driver

1. opens every source and checks every declared column's type against the
   plan's declaration, before any aggregation runs (a mismatch is an error
   naming the column and both types);
2. registers each source as the view `dpplan_source` and runs its SQL with
   the bound parameters (`spark.sql(sql, args=...)`);
3. writes one exact integer per cell, as decimal strings, to RESULT.json.

A windowed job first selects its windows' rows (its own statement, over the
views of the ledger's unit key and the units' windows so far, both from the
job file and never in a statement's text), keeps them as the view
`dpplan_windowed`, returns the units kept per window, then aggregates.

It never draws noise, and it never prints or writes a data value: an error is
written to RESULT.json as its kind, the dataset and column names, the types,
and Spark's error class (never Spark's message, which may quote a value).
"""

import json
import sys

# Spark types accepted per declared column type (typed sources: tables,
# Parquet, ORC). A CSV file is read with every column as a string, and its
# numbers are parsed by the SQL exactly as dpplan's embedded engine parses them.
INTEGRAL = ("tinyint", "smallint", "int", "bigint")
ACCEPTED = {
    "id": ("string",) + INTEGRAL,
    "category": ("string",) + INTEGRAL,
    "int": INTEGRAL,
    "float": INTEGRAL + ("float", "double"),
    # read by dpplan's time grammar: the driver first writes a timestamp
    # (floored to the second), a date (midnight UTC) or an integer as Unix
    # seconds, as the embedded engine reads a typed source
    "time": ("string", "timestamp", "timestamp_ntz", "date") + INTEGRAL,
}


class Refused(Exception):
    """An error whose message carries no data value."""

    def __init__(self, kind, dataset, message):
        super().__init__(message)
        self.kind = kind
        self.dataset = dataset
        self.message = message


def accepted(declared, spark_type):
    if spark_type in ACCEPTED[declared]:
        return True
    if spark_type.startswith("decimal("):
        scale = spark_type[len("decimal(") : -1].split(",")[1].strip()
        # an int must be integral: a decimal of scale 0
        return declared == "float" or (declared == "int" and scale == "0")
    return False


def error_class(e):
    for name in ("getCondition", "getErrorClass"):
        f = getattr(e, name, None)
        if f is not None:
            try:
                c = f()
            except Exception:  # noqa: BLE001 - any failure: no class
                c = None
            if c:
                return str(c)
    return type(e).__name__


def open_source(spark, job):
    src = job["source"]
    name = job["dataset"]
    try:
        if src["kind"] == "table":
            return spark.table(src["location"])
        reader = spark.read
        if src["format"] == "csv":
            # RFC 4180 as dpplan's CSV reader: doubled quotes escape a quote,
            # quoted fields may hold newlines, every column a string
            reader = (
                reader.option("header", "true")
                .option("inferSchema", "false")
                .option("quote", '"')
                .option("escape", '"')
                .option("multiLine", "true")
                .option("mode", "PERMISSIVE")
                .option("encoding", "UTF-8")
            )
        return reader.format(src["format"]).load(src["location"])
    except Exception as e:  # noqa: BLE001
        raise Refused(
            "source",
            name,
            "cannot read the source of dataset `%s` (Spark: %s)" % (name, error_class(e)),
        ) from None


def check_types(df, job):
    name = job["dataset"]
    fields = {}
    for f in df.schema.fields:
        # the first of equal names, as the embedded engine's header lookup
        fields.setdefault(f.name, f.dataType.simpleString())
    typed = job["source"]["format"] != "csv"
    for col in job["columns"]:
        if col["name"] not in fields:
            raise Refused(
                "schema",
                name,
                "column `%s` of dataset `%s` is missing from the source" % (col["name"], name),
            )
        t = fields[col["name"]]
        if typed and not accepted(col["type"], t):
            raise Refused(
                "schema",
                name,
                "column `%s` of dataset `%s` is `%s` in the source, but the plan declares it `%s`"
                " (Spark types accepted: %s)"
                % (col["name"], name, t, col["type"], ", ".join(ACCEPTED[col["type"]] + ("decimal",))),
            )


def time_as_text(df, job):
    """A windowed job's time column as text: a typed time as Unix seconds
    (floored), a string as it is (read by the time grammar in the SQL)."""
    from pyspark.sql import functions as F

    name = job["window"]["time"]
    types = {}
    for f in df.schema.fields:
        types.setdefault(f.name, f.dataType.simpleString())
    t = types.get(name)
    q = "`%s`" % name
    if t == "timestamp_ntz":
        q, t = "CAST(%s AS TIMESTAMP)" % q, "timestamp"
    if t == "timestamp":
        micros = "unix_micros(%s)" % q
        expr = "CAST((%s - pmod(%s, 1000000)) DIV 1000000 AS STRING)" % (micros, micros)
    elif t == "date":
        expr = "CAST(CAST(unix_date(%s) AS BIGINT) * 86400 AS STRING)" % q
    else:
        expr = "CAST(%s AS STRING)" % q
    return df.withColumn(name, F.expr(expr))


def window_views(spark, df, job):
    """Registers the source, the unit key and the units' windows so far, runs
    the window's selection, keeps it as `dpplan_windowed`; the units kept
    per slot."""
    w = job["window"]
    df = time_as_text(df, job)
    df.createOrReplaceTempView("dpplan_source")
    if w["key"] is not None:
        spark.createDataFrame([(bytearray.fromhex(w["key"]),)], "`#key` BINARY").createOrReplaceTempView(
            "dpplan_unit_key"
        )
        state = [(h, int(n)) for h, n in w["state"]]
        spark.createDataFrame(state, "`#su` STRING, `#sn` BIGINT").createOrReplaceTempView("dpplan_window_state")
    # computed once and cut from its plan: the units and the aggregates read
    # it without running the selection again, planned over a plain scan
    selected = spark.sql(w["sql"], args=w["args"]).localCheckpoint(eager=True)
    selected.createOrReplaceTempView("dpplan_windowed")
    if not w["units_sql"]:
        return selected, []
    units = [[cell(v) for v in row] for row in spark.sql(w["units_sql"]).collect()]
    return selected, units


def cell(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    # a key from the data (a string): as it is
    if isinstance(v, str):
        return v
    # Decimal(38,0): its exact integer
    return format(v, "f")


def main(job_path, out_path):
    with open(job_path, encoding="utf-8") as f:
        jobs = json.load(f)["jobs"]
    out = {}
    current = "(none)"
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("dpplan").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        # overflow is an error, never a wrong or NULL sum
        spark.conf.set("spark.sql.ansi.enabled", "true")
        # inferring filters from the statements' long CASE expressions costs
        # Spark's optimizer about ten seconds per statement and changes no
        # result (it only adds redundant filters)
        spark.conf.set("spark.sql.constraintPropagation.enabled", "false")
        # a timestamp without a time zone is a UTC instant, as in dpplan
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        # 1. every source opened and checked before anything runs
        frames = []
        for job in jobs:
            current = job["dataset"]
            df = open_source(spark, job)
            check_types(df, job)
            frames.append(df)
        # 2. the aggregates
        results = []
        units = []
        for job, df in zip(jobs, frames):
            current = job["dataset"]
            selected = None
            if job.get("window"):
                selected, kept = window_views(spark, df, job)
                units.append(kept)
            else:
                df.createOrReplaceTempView("dpplan_source")
                units.append(None)
            rows = spark.sql(job["sql"], args=job["args"]).collect()
            results.append([[cell(v) for v in row] for row in rows])
            if selected is not None:
                selected.unpersist()
                spark.catalog.dropTempView("dpplan_windowed")
        out = {"results": results, "units": units}
        code = 0
    except Refused as e:
        out = {"error": {"kind": e.kind, "dataset": e.dataset, "message": e.message}}
        code = 3
    except Exception as e:  # noqa: BLE001
        out = {
            "error": {
                "kind": "job",
                "dataset": current,
                "message": "the Spark job of dataset `%s` failed (Spark: %s)" % (current, error_class(e)),
            }
        }
        code = 4
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
