#!/usr/bin/env bash
# Benchmark: sysbench oltp_point_select and oltp_read_only at 1 and 8 threads, in one run,
# against MariaDB directly, through HAProxy in TCP mode (a hop that understands nothing) and
# through obkv-proxy. Prints QPS and p95 latency per target and the ratios.
#   BENCH_SECONDS (default 20) per measurement; BENCH_ROUNDS (default 1) repeats and takes medians.
# Everything runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${BENCH_SECONDS:-20}
rounds=${BENCH_ROUNDS:-1}

scripts/install-deps.sh test >/dev/null
cargo build --release --quiet

work=$(mktemp -d /tmp/obkv-bench.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(free_port); hport=$(free_port); pport=$(free_port)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/mariadb" || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

scripts/backend.sh start mariadb "$work/mariadb" "$mport" >/dev/null
cat >"$work/haproxy.cfg" <<CFG
global
  maxconn 4096
defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h
frontend mysql
  bind 127.0.0.1:$hport
  default_backend db
backend db
  server db1 127.0.0.1:$mport
CFG
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
pids+=($!)
target/release/obkv-proxy --listen "127.0.0.1:$pport" --backend "127.0.0.1:$mport" >"$work/proxy.log" 2>&1 &
pids+=($!)
for port in $hport $pport; do
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
done

common=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-password= --mysql-db=sbtest --tables=4 --table-size=10000)
mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -e 'CREATE DATABASE sbtest'
sysbench oltp_read_only "${common[@]}" --mysql-port="$mport" prepare >/dev/null

run() { # WORKLOAD THREADS PORT -> "qps p95"
  sysbench "$1" "${common[@]}" --mysql-port="$3" --threads="$2" --time="$secs" --report-interval=0 run |
    awk '/queries:/ {gsub(/\(/,"",$3); q=$3} /95th percentile:/ {p=$3} END {print q, p}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(uname -r); sysbench $(sysbench --version | awk '{print $2}'); $secs s per run, $rounds round(s)"
printf '%-18s %7s | %10s %8s | %10s %8s | %10s %8s | %9s %9s %9s\n' workload threads direct_qps p95_ms haproxy_qps p95_ms proxy_qps p95_ms qps/hap p95/hap qps/direct
for workload in oltp_point_select oltp_read_only; do
  for threads in 1 8; do
    declare -A q=() l=()
    for ((r = 0; r < rounds; r++)); do
      # interleaved, so drift on a shared machine hits all three alike
      for target in direct haproxy proxy; do
        case $target in direct) port=$mport ;; haproxy) port=$hport ;; proxy) port=$pport ;; esac
        read -r qps p95 < <(run "$workload" "$threads" "$port")
        q[$target]+="$qps "; l[$target]+="$p95 "
      done
    done
    for t in direct haproxy proxy; do
      q[$t]=$(tr ' ' '\n' <<<"${q[$t]}" | grep . | median); l[$t]=$(tr ' ' '\n' <<<"${l[$t]}" | grep . | median)
    done
    printf '%-18s %7s | %10.0f %8.2f | %10.0f %8.2f | %10.0f %8.2f | %9.3f %9.3f %9.3f\n' "$workload" "$threads" \
      "${q[direct]}" "${l[direct]}" "${q[haproxy]}" "${l[haproxy]}" "${q[proxy]}" "${l[proxy]}" \
      "$(echo "${q[proxy]} / ${q[haproxy]}" | bc -l)" "$(echo "${l[proxy]} / ${l[haproxy]}" | bc -l)" \
      "$(echo "${q[proxy]} / ${q[direct]}" | bc -l)"
    unset q l
  done
done
