#!/usr/bin/env bash
# Builds the fuzz targets and runs each for SECONDS (default 600), two at a time.
#   fuzz/run.sh [SECONDS] [TARGET...]
# Seeds come from real statements and packets (fuzz/seed.py); what libFuzzer finds is kept in
# target/fuzz-corpus/TARGET, crashes in fuzz/artifacts/TARGET. The stable toolchain runs
# cargo-fuzz with RUSTC_BOOTSTRAP=1. Needs `cargo install cargo-fuzz`.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(sql_router state_reading ddl_rules client_packets backend_responses sql_insert sql_load compressed_frames advisor diagnostics session_state shape_apply shape_reading repeat_reading)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
python3 fuzz/seed.py
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
run() {
  local t=$1
  mkdir -p "target/fuzz-corpus/$t"
  cargo fuzz run -O "$t" "target/fuzz-corpus/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
    >"target/fuzz-$t.log" 2>&1
  local rc=$?
  echo "$t: exit $rc, $(grep -E 'stat::number_of_executed_units' "target/fuzz-$t.log" | tail -1)"
  return $rc
}
status=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  run "${targets[i]}" & a=$!
  if ((i + 1 < ${#targets[@]})); then run "${targets[i+1]}" & b=$!; else b=; fi
  wait "$a" || status=1
  [[ -z $b ]] || wait "$b" || status=1
done
exit $status
