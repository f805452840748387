#!/usr/bin/env bash
# Many clients on few backend connections (issue 43; examples/mux_bench.rs): MUX_CLIENTS
# (default 10000) clients through obkv-proxy with multiplexing on (`[multiplex] mode =
# "transaction"`, at most MUX_MAX_BACKEND = 64 backend connections), then through the same
# proxy build with multiplexing off, on a private MariaDB (thread pool, max_connections raised).
# Each client logs in with a database and runs `SELECT 1`; MUX_ACTIVE_PCT (10) percent then run
# text point selects and HBase gets, one every MUX_INTERVAL_MS (200) each, for BENCH_SECONDS
# (20), while the rest stay idle; then every client runs `SELECT 1` again (all served).
# Prints per run: RSS of the proxy (before, idle, at most while busy), the active clients'
# rate and p50/p99 latency, errors, clients served, and the backend connections MariaDB counted
# (idle, busy) with clients per backend connection; then the proxy's own multiplexing counters.
# Targets (multiplexing on): all served, RSS < 1 GiB, p99 < 5 ms, <= 64 backend connections.
# With multiplexing off every client holds a backend connection and the proxy two descriptors,
# so that run has as many clients as the open-file hard limit allows (MUX_OFF_CLIENTS; at most
# MUX_CLIENTS).
#   MUX_CLIENTS, MUX_OFF_CLIENTS, MUX_ACTIVE_PCT, MUX_INTERVAL_MS, MUX_CONCURRENCY (connecting
#   at once, default 64), BENCH_SECONDS, MUX_MAX_BACKEND, MUX_ORDER (default "on off";
#   "direct" adds the active clients alone, straight to MariaDB, for the machine's own tail).
# Everything runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${MUX_CLIENTS:-10000}
max_backend=${MUX_MAX_BACKEND:-64}
order=${MUX_ORDER:-on off}

hard=$(ulimit -Hn)
[[ $hard == unlimited ]] && hard=1048576
ulimit -n "$hard"
# the bench holds one socket a client; the proxy with multiplexing on one a client plus its
# backend connections, with it off two a client
if ((n + 512 > hard)); then
  echo "open files: need $((n + 512)) (ulimit -Hn is $hard); lower MUX_CLIENTS" >&2
  exit 1
fi
off=${MUX_OFF_CLIENTS:-$(((hard - 512) / 2))}
((off > n)) && off=$n

scripts/install-deps.sh test >/dev/null
cargo build --release --quiet
cargo build --release --quiet --example mux_bench

work=$(mktemp -d /tmp/obkv-muxbench.XXXXXX)
source scripts/hop.sh
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/mariadb" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

mport=$(free_port); xport=$(free_port); pport=$(free_port)
# later options win over backend.sh's max_connections = 2000
mpid=$(scripts/backend.sh start mariadb "$work/mariadb" "$mport" --max-connections=$((off + 300)) \
  --thread-handling=pool-of-threads --open-files-limit=$((off + 1024)) | tail -1)
echo "MariaDB pid $mpid"
for mode in on off; do
  port=$xport; [[ $mode == off ]] && port=$pport
  {
    printf '[proxy]\nmax_connections = %s\nsocket = ""\n[admin]\nlisten = ""\n' $((n + 300))
    if [[ $mode == on ]]; then
      printf '[multiplex]\nmode = "transaction"\nmax_backend_connections = %s\n' "$max_backend"
    fi
  } >"$work/proxy-$mode.toml"
  target/release/obkv-proxy --config "$work/proxy-$mode.toml" --listen "127.0.0.1:$port" \
    --backend "127.0.0.1:$mport" >"$work/proxy-$mode.log" 2>&1 &
  pids+=($!)
  wait_port "$port" || { echo "obkv-proxy ($mode) did not start:" >&2; cat "$work/proxy-$mode.log" >&2; exit 1; }
  eval "pid_$mode=$!"
done

targets=()
for t in $order; do
  case $t in
    on) targets+=("on=127.0.0.1:$xport@$pid_on#$n") ;;
    off) targets+=("off=127.0.0.1:$pport@$pid_off#$off") ;;
    # the active clients alone, straight to MariaDB: what the machine gives without a hop
    direct) active=$((n * ${MUX_ACTIVE_PCT:-10} / 100))
      targets+=("direct=127.0.0.1:$mport@$mpid#$active+$active") ;;
    *) echo "unknown run $t (on, off, direct)" >&2; exit 2 ;;
  esac
done
echo "machine: $(nproc) cores; open files $hard; MariaDB $(mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -N -e 'select version()')"
MUX_TARGETS="${targets[*]}" MUX_DIRECT="127.0.0.1:$mport" MUX_CLIENTS=$n target/release/examples/mux_bench
echo
echo "multiplexing counters of the proxy with it on:"
mariadb --protocol=tcp -h127.0.0.1 -P"$xport" -uroot -N -e 'SHOW PROXY STATUS' |
  awk '$1 ~ /^multiplex_/ && $1 !~ /^multiplex_pins_/ || ($1 ~ /^multiplex_pins_/ && $2 > 0)' | sed 's/^/  /'
for mode in on off; do
  if grep -qiE "panicked|too many open" "$work/proxy-$mode.log"; then
    echo "proxy ($mode) log:"; grep -iE "panicked|too many open" "$work/proxy-$mode.log" | sort | uniq -c | head
  fi
done
