"""Spark engine benchmark (scripts/bench-spark.sh): in one Spark application,
dpplan's generated SQL (from `dpplan run --engine spark --explain`) against
Spark's own plain GROUP BY of the same Parquet table, alternating, best of N.

    spark-submit bench_spark.py EXPLAIN.sql DATA.parquet ROWS REPEATS
"""
import json
import os
import re
import sys
import time

from pyspark.sql import SparkSession


def main(explain_path, data, rows, repeats):
    spark = SparkSession.builder.appName("dpplan-bench").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    if not os.path.exists(data):
        # 10^6 users, rows spread over them; three pages; seconds in [0, 4000)
        t0 = time.time()
        (
            spark.range(rows)
            .selectExpr(
                "concat('u', CAST(pmod(xxhash64(id, 1), %d) AS STRING)) AS user_id" % max(rows // 10, 1),
                "element_at(array('home', 'search', 'checkout', 'other'), CAST(pmod(xxhash64(id, 2), 4) AS INT) + 1) AS page",
                "CAST(pmod(xxhash64(id, 3), 4000000) AS DOUBLE) / 1000.0 AS seconds",
            )
            .write.parquet(data)
        )
        print("generated %d rows in %.1f s" % (rows, time.time() - t0), file=sys.stderr)
    text = open(explain_path, encoding="utf-8").read()
    params_line = next(l for l in text.splitlines() if l.startswith("-- parameters:"))
    args = {"seed": 0x5EED}
    for name, value in re.findall(r":(\w+) = (\[[^\]]*\]|-?\d+)", params_line):
        args[name] = json.loads(value)
    if ":sample_ikey" in text:
        # a sampled dataset (SAMPLE=…): a fixed key, padded as the runner
        # pads it (HMAC's 0x36 and 0x5c over the key and 32 zero bytes)
        key = bytes(range(32)) + bytes(32)
        args["sample_ikey"] = bytes(b ^ 0x36 for b in key).hex()
        args["sample_okey"] = bytes(b ^ 0x5C for b in key).hex()
    # the first statement (a sampled plan has one per release)
    start = text.index("WITH typed")
    sql = text[start : text.index(";\n", start)]
    spark.read.parquet(data).createOrReplaceTempView("dpplan_source")
    plain = "SELECT page, count(*) AS n, sum(seconds) AS s FROM dpplan_source GROUP BY page"
    # the same shuffle of every row by user that bounding needs, no bounding
    per_user = (
        "SELECT page, count(*), sum(s) FROM (SELECT user_id, page, count(*) AS c, sum(seconds) AS s"
        " FROM dpplan_source GROUP BY user_id, page) GROUP BY page"
    )
    runs = [
        ("plain GROUP BY", plain, {}),
        ("GROUP BY user, page", per_user, {}),
        ("dpplan SQL", sql, args),
    ]
    if "FROM sampled" in sql:
        # the same statement reading every unit: the sample's own cost
        runs.append(("dpplan SQL, every unit", sql.replace("FROM sampled", "FROM cells"), args))
    best = {name: 1e9 for name, _, _ in runs}
    for _ in range(repeats):
        for name, q, a in runs:
            t0 = time.time()
            spark.sql(q, args=a).collect()
            best[name] = min(best[name], time.time() - t0)
    print(json.dumps(best))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
