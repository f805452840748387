#!/usr/bin/env bash
# Idle clients (issue 42; examples/idle_bench.rs): IDLE_CLIENTS (default 10000) authenticated
# clients that log in, run one `SELECT 1` and stay idle, through obkv-proxy, through HAProxy in
# TCP mode (scripts/hop.sh's configuration, maxconn raised) and directly, in turn, on a private
# MariaDB with max_connections raised (and its thread pool, so 10,000 idle connections are not
# 10,000 threads). Prints each hop's RSS before and after (VmRSS), KiB per idle client, and the
# p50/p99 of a busy client's prepared point selects on another connection alone, while the
# clients connect and while they are idle (target: proxy <= 8 KiB a client, idle p99 < 1 ms).
#   IDLE_CLIENTS, IDLE_CONCURRENCY (connecting at once, default 64), IDLE_SETTLE (seconds
#   before the RSS is read, default 3), BENCH_SECONDS (per phase, default 5),
#   IDLE_ORDER (default "proxy haproxy direct"), IDLE_PROXY_BIN (default target/release/obkv-proxy).
# Needs a hard limit on open files of about 2 x IDLE_CLIENTS + 1024 (or root to raise it): the
# proxy holds two sockets an idle client (the watcher's duplicates of both are closed once the
# client rests, src/watch.rs), as HAProxy does, and up to four for each of the IDLE_CONCURRENCY
# clients still logging in (with 256 to spare, 10 of 9,800 logins found the proxy out of
# descriptors for its backend connection and were tried again); a client that finds it out of
# descriptors at accept waits in the listen backlog until others rest.
# Everything runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${IDLE_CLIENTS:-10000}
order=${IDLE_ORDER:-proxy haproxy direct}
bin=${IDLE_PROXY_BIN:-target/release/obkv-proxy}

files=$((2 * n + 1024))
if (($(ulimit -Hn) < files)); then
  ulimit -Hn "$files" 2>/dev/null || { echo "open files: need $files (ulimit -Hn is $(ulimit -Hn)); run as root or lower IDLE_CLIENTS" >&2; exit 1; }
fi
ulimit -n "$files"

scripts/install-deps.sh test >/dev/null
cargo build --release --quiet
cargo build --release --quiet --example idle_bench

work=$(mktemp -d /tmp/obkv-idlebench.XXXXXX)
source scripts/hop.sh
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/mariadb" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

mport=$(free_port); hport=$(free_port); pport=$(free_port)
# later options win over backend.sh's max_connections = 2000
mpid=$(scripts/backend.sh start mariadb "$work/mariadb" "$mport" --max-connections=$((n + 200)) \
  --thread-handling=pool-of-threads --open-files-limit=$((n + 1024)) | tail -1)
# (HAProxy reserves two descriptors for each of maxconn at start: just above the clients)
haproxy_config "$hport" "$mport" $((n + 16)) >"$work/haproxy.cfg"
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
hpid=$!; pids+=($hpid)
cat >"$work/proxy.toml" <<CFG
[proxy]
max_connections = $((n + 200))
socket = ""
[admin]
listen = ""
CFG
"$bin" --config "$work/proxy.toml" --listen "127.0.0.1:$pport" --backend "127.0.0.1:$mport" >"$work/proxy.log" 2>&1 &
ppid=$!; pids+=($ppid)
wait_port "$hport" || { echo "HAProxy did not start:" >&2; cat "$work/haproxy.log" >&2; exit 1; }
wait_port "$pport" || { echo "obkv-proxy did not start:" >&2; cat "$work/proxy.log" >&2; exit 1; }

targets=()
for t in $order; do
  case $t in
    proxy) targets+=("proxy=127.0.0.1:$pport@$ppid") ;;
    haproxy) targets+=("haproxy=127.0.0.1:$hport@$hpid") ;;
    direct) targets+=("direct=127.0.0.1:$mport@$mpid") ;;
    *) echo "unknown target $t (proxy, haproxy, direct)" >&2; exit 2 ;;
  esac
done
echo "machine: $(nproc) cores; $n idle clients; MariaDB $(mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -N -e 'select version()'); proxy $bin"
IDLE_TARGETS="${targets[*]}" IDLE_SETUP="127.0.0.1:$mport" IDLE_CLIENTS=$n target/release/examples/idle_bench
if grep -qiE "panicked|too many|error" "$work/proxy.log"; then
  echo "proxy log:"; grep -iE "panicked|too many|error" "$work/proxy.log" | sort | uniq -c | head
fi
