#!/usr/bin/env bash
# The TTL task under load (examples/ttl_bench.rs), per backend (BENCH_BACKENDS, default
# "mariadb seekdb"): a private backend, obkv-proxy with the TTL task on (ttl.rows_per_second
# TTL_RATE and ttl.batch_rows TTL_BATCH, default the proxy's 5000 and 256), a family of
# BENCH_CELLS cells x 4 versions with MaxVersions 1; a prepared point-get load on 4
# connections while one TTL run is suspended and resumed in turn (BENCH_ROUNDS rounds of
# BENCH_SECONDS, half each way). Prints ops/s, p50, p99 of both and the p99 ratio (target: at
# most 2).
# Everything runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${BENCH_SECONDS:-10}
cells=${BENCH_CELLS:-50000}
rate=${TTL_RATE:-5000}
batch=${TTL_BATCH:-256}
backends=${BENCH_BACKENDS:-mariadb seekdb}

scripts/install-deps.sh test >/dev/null
cargo build --release --quiet
cargo build --release --quiet --example ttl_bench

work=$(mktemp -d /tmp/obkv-ttlbench.XXXXXX)
source scripts/hop.sh
ppid=
cleanup() {
  [ -n "$ppid" ] && kill "$ppid" 2>/dev/null || true
  for b in $backends; do scripts/backend.sh stop "$work/$b" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "machine: $(nproc) cores; $secs s per phase; $cells cells; ttl.rows_per_second = $rate, ttl.batch_rows = $batch"
for backend in $backends; do
  mport=$(free_port); pport=$(free_port)
  scripts/backend.sh start "$backend" "$work/$backend" "$mport" >/dev/null
  cat >"$work/proxy.toml" <<CFG
[proxy]
socket = ""
[admin]
listen = ""
[hbase]
catalog_user = "root"
[ttl]
enabled = true
rows_per_second = $rate
batch_rows = $batch
CFG
  target/release/obkv-proxy --config "$work/proxy.toml" --listen "127.0.0.1:$pport" \
    --backend "127.0.0.1:$mport" >"$work/proxy-$backend.log" 2>&1 &
  ppid=$!
  wait_port "$pport"
  echo "== $backend: point gets without and during a TTL run =="
  BENCH_PROXY="127.0.0.1:$pport" BENCH_SECONDS="$secs" BENCH_CELLS="$cells" target/release/examples/ttl_bench
  { grep -h "TTL task run" "$work/proxy-$backend.log" || true; } | sed "s/^/  proxy log: /" | tail -3
  kill "$ppid"; wait "$ppid" 2>/dev/null || true; ppid=
  scripts/backend.sh stop "$work/$backend" >/dev/null
done
