#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/bench-spark.sh: starts a Spark
# standalone master and WORKERS workers (default 1) on 127.0.0.1, from the
# PySpark of target/test-deps/spark-venv (scripts/test-deps.sh), so that the
# Spark engine's jobs cross process boundaries (driver, master, worker,
# executors are separate JVMs). Exports DPPLAN_SPARK_HOME,
# DPPLAN_SPARK_MASTER, SPARK_HOME and PYSPARK_PYTHON; `spark_cluster_stop`
# (set as an EXIT trap by spark_cluster_start) stops what it started, by pid.
spark_cluster_start() {
  local workers="${1:-1}" cores="${2:-1}" memory="${3:-1g}"
  local root
  root="$(pwd)/target/test-deps"
  export PYSPARK_PYTHON="$root/spark-venv/bin/python"
  SPARK_HOME="$("$PYSPARK_PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
  export SPARK_HOME DPPLAN_SPARK_HOME="$SPARK_HOME"
  SPARK_CLUSTER_DIR="$(mktemp -d /tmp/dpplan-spark-cluster.XXXXXX)"
  export SPARK_LOCAL_IP=127.0.0.1 SPARK_WORKER_DIR="$SPARK_CLUSTER_DIR/work"
  local ports
  ports=($("$PYSPARK_PYTHON" - <<'PY'
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
PY
))
  local port="${ports[0]}" ui="${ports[1]}"
  SPARK_CLUSTER_PIDS=()
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$port" --webui-port "$ui" \
    >"$SPARK_CLUSTER_DIR/master.log" 2>&1 &
  SPARK_CLUSTER_PIDS+=($!)
  trap spark_cluster_stop EXIT
  export DPPLAN_SPARK_MASTER="spark://127.0.0.1:$port"
  local i
  for i in $(seq 1 "$workers"); do
    "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host 127.0.0.1 --cores "$cores" --memory "$memory" --webui-port 0 \
      --work-dir "$SPARK_CLUSTER_DIR/work$i" "$DPPLAN_SPARK_MASTER" \
      >"$SPARK_CLUSTER_DIR/worker$i.log" 2>&1 &
    SPARK_CLUSTER_PIDS+=($!)
  done
  # wait (up to 90 s) until the master sees every worker alive
  local t alive
  for t in $(seq 1 90); do
    alive=$("$PYSPARK_PYTHON" -c 'import json, sys, urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1], timeout=5)).get("aliveworkers", 0))' "http://127.0.0.1:$ui/json/" 2>/dev/null || echo 0)
    [ "$alive" = "$workers" ] && break
    sleep 1
  done
  if [ "$alive" != "$workers" ]; then
    echo "the Spark standalone cluster did not start; logs in $SPARK_CLUSTER_DIR" >&2
    return 1
  fi
  echo "Spark standalone master $DPPLAN_SPARK_MASTER with $workers worker(s)" >&2
}

spark_cluster_stop() {
  local p
  for p in "${SPARK_CLUSTER_PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
  for p in "${SPARK_CLUSTER_PIDS[@]:-}"; do
    [ -n "$p" ] && wait "$p" 2>/dev/null || true
  done
  SPARK_CLUSTER_PIDS=()
  [ -n "${SPARK_CLUSTER_DIR:-}" ] && rm -rf "$SPARK_CLUSTER_DIR"
}
