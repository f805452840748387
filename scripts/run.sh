#!/usr/bin/env bash
# Command 1: install what is missing, start the embedded default backend (seekdb, the OceanBase
# kernel from PyPI pylibseekdb, data in .data/seekdb) and obkv-proxy in front of it, and print
# how to connect. Ctrl-C stops both.
#   OBKV_PROXY_LISTEN (default 127.0.0.1:2883) and OBKV_SEEKDB_PORT (default 2881) may be set.
# To run the proxy in front of an existing database instead:
#   cargo run --release -- --config config/obkv-proxy.toml --backend HOST:PORT
set -euo pipefail
cd "$(dirname "$0")/.."

listen=${OBKV_PROXY_LISTEN:-127.0.0.1:2883}
seekdb_port=${OBKV_SEEKDB_PORT:-2881}
data=.data/seekdb

scripts/install-deps.sh run
if ! command -v cargo >/dev/null 2>&1; then
  echo "obkv-proxy needs a Rust toolchain (cargo) to build; install one and run this again" >&2
  exit 1
fi
cargo build --release --quiet

seekdb_pid=""
proxy_pid=""
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "stopping obkv-proxy and seekdb..."
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null || true
  [[ -n $seekdb_pid ]] && scripts/backend.sh stop "$data"
  echo "stopped"
}
trap cleanup INT TERM EXIT

if mariadb --protocol=tcp -h127.0.0.1 -P"$seekdb_port" -uroot -N -e 'select 1' >/dev/null 2>&1; then
  echo "a database already answers on 127.0.0.1:$seekdb_port; using it"
else
  echo "starting seekdb on 127.0.0.1:$seekdb_port (data in $data)..."
  seekdb_pid=$(scripts/backend.sh start seekdb "$data" "$seekdb_port")
fi

target/release/obkv-proxy --config config/obkv-proxy.toml --listen "$listen" --backend "127.0.0.1:$seekdb_port" &
proxy_pid=$!
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null && break
  kill -0 "$proxy_pid" 2>/dev/null || { echo "obkv-proxy failed to start" >&2; exit 1; }
  sleep 0.1
done
cat <<MSG

obkv-proxy is listening on $listen in front of seekdb (127.0.0.1:$seekdb_port).
Connect with:
    mysql -h ${listen%:*} -P ${listen##*:} -u root
Press Ctrl-C to stop both.
MSG
wait "$proxy_pid"
