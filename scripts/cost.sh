#!/usr/bin/env bash
# What each hop spends per query in user space, counted rather than timed: the instructions
# obkv-proxy and HAProxy (TCP mode, the hop that understands nothing) execute for the same
# queries from one client on one connection, under valgrind's callgrind. The count repeats for
# the same binaries whatever else the machine does, so it shows what a change to the proxy
# costs or saves where QPS on a shared 2-core machine (scripts/bench.sh) drifts by more than
# the change. The kernel's share (the system calls, the same six per query for both hops:
# docs/PERFORMANCE.md) is not in it.
#
# Per workload and hop: the hop starts under callgrind; one run of 1 query and one of N+1 are
# counted (counters zeroed before each), and the difference divided by N is the cost per query,
# with the connection's own cost taken out.
#   COST_QUERIES (default 2000): N; COST_BACKEND (mariadb | seekdb, default mariadb);
#   COST_WORKLOADS (default all six): which workloads to count, e.g. "scan_text".
#   COST_PROXY_BIN (default target/release/obkv-proxy): another build to count, e.g. an
#   older commit's, for a before/after comparison in one run.
#   COST_PROXY_ARGS: more arguments for the counted proxy, e.g. `--config off.toml` with
#   `[admin] metrics = false` to count what the metrics cost (docs/PERFORMANCE.md).
#   COST_HAPROXY_RUNS (default 3): how many times HAProxy is counted for each workload; its
#   median is the one compared (HAProxy's own count moves by up to about 2% from run to run,
#   with its timers and event loop, where the proxy's repeats within a few instructions; one
#   run of it decided the verdict of a workload near its budget). Every run is printed.
#   COST_KEEP: a directory to keep each N-query callgrind dump in, to see where the
#   instructions went (`callgrind_annotate --inclusive=yes`; scripts/cg-self.py for each
#   function's and each source line's own count).
# Workloads: sysbench oltp_point_select and oltp_read_only (prepared, sysbench's default),
# the natural prefix scan `K LIKE 'p%'` of examples/prefix_bench.rs as text and prepared
# (HAProxy relays the hand-written `AND K_PREFIX = 'p'` statement: the same rows), and the
# HBase point get by K (prepared), a text INSERT of a new cell (put_text) and a text INSERT of
# 100 new cells (batch100_text). Everything runs on 127.0.0.1 and is stopped at the end.
#
# Each line ends with issue 42's budget: the proxy's count may be at most a multiple of
# HAProxy's (the median of its runs) for the same workload (point_select 1.0, read_only 1.1,
# scan_text 2.0, scan_prepared 1.4, get_prepared 1.4, put_text 2.5), and the 100-row INSERT at
# most HAProxy's count plus 1,500 a row; "met" or "OVER" says which.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${COST_QUERIES:-2000}
backend=${COST_BACKEND:-mariadb}
bin=${COST_PROXY_BIN:-target/release/obkv-proxy}

scripts/install-deps.sh test >/dev/null
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
cargo build --release --quiet
cargo build --release --quiet --example prefix_bench

work=$(mktemp -d /tmp/obkv-cost.XXXXXX)
source scripts/hop.sh
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/$backend" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

mport=$(free_port)
scripts/backend.sh start "$backend" "$work/$backend" "$mport" >/dev/null
# the tables, made through a proxy that is not counted
pport=$(free_port)
target/release/obkv-proxy --listen "127.0.0.1:$pport" --backend "127.0.0.1:$mport" --admin-listen "" >"$work/setup-proxy.log" 2>&1 &
setup_pid=$!; pids+=($setup_pid)
wait_port "$pport"
cells=20000
BENCH_DIRECT="127.0.0.1:$mport" BENCH_PROXY="127.0.0.1:$pport" BENCH_KIND="$backend" BENCH_CELLS=$cells \
  BENCH_SETUP_ONLY=1 target/release/examples/prefix_bench 2>/dev/null
sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-password= --mysql-db=sbtest --tables=4 --table-size=10000)
mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
sysbench oltp_read_only "${sb[@]}" --mysql-port="$mport" prepare >/dev/null
kill "$setup_pid"

# load WORKLOAD HOP PORT COUNT -> the number of queries it sent
load() {
  local w=$1 hop=$2 port=$3 count=$4 op
  case $w in
    point_select | read_only)
      # oltp_read_only sends 16 queries a transaction
      local events=$count
      [[ $w == read_only ]] && events=$(((count + 15) / 16))
      sysbench "oltp_$w" "${sb[@]}" --mysql-port="$port" --threads=1 --events="$events" --time=0 \
        --report-interval=0 run | awk '/queries:/ {print $2}'
      ;;
    *)
      case $w in
        scan_text | scan_prepared) op=natural ;;
        get_prepared) op=get ;;
        put_text) op=put ;;
        batch100_text) op=batch ;;
      esac
      [[ $hop == haproxy && $op == natural ]] && op=hand
      BENCH_PROXY="127.0.0.1:$port" BENCH_CELLS=$cells BENCH_COUNT="$count" BENCH_OP=$op \
        BENCH_PREPARED=$([[ $w == *_prepared ]] && echo 1 || echo 0) target/release/examples/prefix_bench
      echo "$count"
      ;;
  esac
}

# counted HOP WORKLOAD -> instructions per query
counted() {
  local hop=$1 w=$2 port pid out q1 qn i1 in
  port=$(free_port)
  out="$work/cg.$hop.$w"
  if [[ $hop == proxy ]]; then
    # COST_PROXY_ARGS is a list of arguments: split on purpose. (The admin listener on a
    # port of its own: another proxy on this machine may hold the default one; it stays on,
    # as by default.)
    # shellcheck disable=SC2086
    valgrind --tool=callgrind ${COST_VALGRIND_ARGS:-} --callgrind-out-file="$out.%p" \
      "$bin" --listen "127.0.0.1:$port" --backend "127.0.0.1:$mport" \
        --admin-listen "127.0.0.1:$(free_port)" ${COST_PROXY_ARGS:-} >"$work/$hop.log" 2>&1 &
  else
    haproxy_config "$port" "$mport" >"$work/haproxy.$port.cfg"
    valgrind --tool=callgrind --callgrind-out-file="$out.%p" haproxy -f "$work/haproxy.$port.cfg" -db >"$work/$hop.log" 2>&1 &
  fi
  pid=$!; pids+=($pid)
  wait_port "$port"
  total() { # dump the counters of PID and print the newest dump's total
    callgrind_control -d "$pid" >/dev/null 2>&1
    local f
    f=$(ls -t "$out.$pid".* 2>/dev/null | head -1)
    awk '/^(summary|totals):/ {print $2; exit}' "$f"
  }
  callgrind_control -z "$pid" >/dev/null 2>&1
  q1=$(load "$w" "$hop" "$port" 1)
  i1=$(total)
  callgrind_control -z "$pid" >/dev/null 2>&1
  # (a tenth as many 100-row statements: 200 of them are 20,000 rows)
  local count=$n
  [[ $w == batch100_text ]] && count=$((n / 10))
  qn=$(load "$w" "$hop" "$port" $((count + 1)))
  in=$(total)
  if [[ -n ${COST_KEEP:-} ]]; then
    mkdir -p "$COST_KEEP"
    cp "$(ls -t "$out.$pid".* | head -1)" "$COST_KEEP/$hop.$w.callgrind"
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "scale=0; ($in - $i1) / ($qn - $q1)" | bc
}

# median of the numbers given
median() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# budget WORKLOAD HAPROXY_COUNT -> the most instructions a query the proxy may spend
budget() {
  case $1 in
    point_select) echo "$2" ;;
    read_only) echo "$2 * 1.1" | bc ;;
    scan_text) echo "$2 * 2" | bc ;;
    scan_prepared | get_prepared) echo "$2 * 1.4" | bc ;;
    put_text) echo "$2 * 2.5" | bc ;;
    batch100_text) echo "$2 + 100 * 1500" | bc ;;
    *) echo 0 ;;
  esac
}

echo "instructions per query in user space (callgrind), $n queries, one connection, $backend, $bin"
printf '%-14s %12s %12s %9s %12s %s\n' workload obkv-proxy haproxy prx/hap budget ""
failed=0
for w in ${COST_WORKLOADS:-point_select read_only scan_text scan_prepared get_prepared put_text batch100_text}; do
  p=$(counted proxy "$w") || p=""
  hs=()
  for _ in $(seq "${COST_HAPROXY_RUNS:-3}"); do
    c=$(counted haproxy "$w") || c=""
    [[ $c =~ ^[0-9]+$ ]] && hs+=("$c")
  done
  h=""
  (( ${#hs[@]} == ${COST_HAPROXY_RUNS:-3} )) && h=$(median "${hs[@]}")
  if [[ ! $p =~ ^[0-9]+$ || ! $h =~ ^[0-9]+$ ]]; then
    printf '%-14s not counted (a run failed: see above)\n' "$w"
    failed=1
    continue
  fi
  b=$(budget "$w" "$h")
  verdict=met
  [[ $(echo "$p > $b" | bc) == 1 ]] && verdict=OVER
  extra=""
  [[ $w == batch100_text ]] && extra=" ($(((p - h) / 100)) a row beyond HAProxy's statement)"
  (( ${#hs[@]} > 1 )) && extra+=" (HAProxy: ${hs[*]})"
  printf '%-14s %12s %12s %9.3f %12.0f %s%s\n' "$w" "$p" "$h" "$(echo "$p / $h" | bc -l)" "$b" "$verdict" "$extra"
done
exit "$failed"
