#!/usr/bin/env bash
# Command 1: install what is missing, start the embedded default backend (seekdb, the OceanBase
# kernel from PyPI pylibseekdb, data in .data/seekdb) and obkv-proxy in front of it, and print
# how to connect. Ctrl-C stops both. seekdb listens on 127.0.0.1 only (scripts/backend.sh).
# Every address it will use is checked before anything starts, and named when taken:
#   OBKV_PROXY_LISTEN        the proxy's MySQL port (default 127.0.0.1:2883)
#   OBKV_PROXY_ADMIN_LISTEN  its admin listener, /metrics /livez /readyz (default 127.0.0.1:9883;
#                            "" for none)
#   OBKV_SEEKDB_PORT         seekdb's port on 127.0.0.1 (default 2881)
# To run the proxy in front of an existing database instead:
#   cargo run --release -- --config config/obkv-proxy.toml --backend HOST:PORT
set -euo pipefail
cd "$(dirname "$0")/.."

listen=${OBKV_PROXY_LISTEN:-127.0.0.1:2883}
admin=${OBKV_PROXY_ADMIN_LISTEN-127.0.0.1:9883}
seekdb_port=${OBKV_SEEKDB_PORT:-2881}
data=.data/seekdb
listen_host=${listen%:*}
listen_port=${listen##*:}
# where to reach the proxy: a wildcard listen address is reached on loopback
connect_host=$listen_host
[[ $connect_host == 0.0.0.0 || $connect_host == "[::]" || -z $connect_host ]] && connect_host=127.0.0.1
connect_host=${connect_host#[}
connect_host=${connect_host%]}
# the same for the admin listener
admin_host=${admin%:*}
admin_port=${admin##*:}
[[ $admin_host == 0.0.0.0 || $admin_host == "[::]" || -z $admin_host ]] && admin_host=127.0.0.1
admin_host=${admin_host#[}
admin_host=${admin_host%]}

# True when something accepts TCP connections on HOST PORT.
answers() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# True when a database answers SQL on 127.0.0.1:PORT as root.
database_answers() {
  mariadb --protocol=tcp --connect-timeout=5 -h127.0.0.1 -P"$1" -uroot -N -e 'select 1' >/dev/null 2>&1
}

# The inode of the socket listening on PORT (from /proc/net/tcp{,6}; state 0A is LISTEN).
listener_inodes() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# True when process PID holds the socket listening on PORT: the listener is ours.
owns_listener() { # PORT PID
  local inode
  for inode in $(listener_inodes "$1"); do
    if find "/proc/$2/fd" -lname "socket:\[$inode\]" 2>/dev/null | grep -q .; then return 0; fi
  done
  return 1
}

scripts/install-deps.sh run
if ! command -v cargo >/dev/null 2>&1; then
  echo "obkv-proxy needs a Rust toolchain (cargo) to build; install one and run this again" >&2
  exit 1
fi

# Both ports before anything starts: the proxy's must be free; on seekdb's, a database that
# answers is used as it is, anything else stops us.
if answers "$connect_host" "$listen_port"; then
  cat >&2 <<MSG
the proxy's port $listen_port is taken: something already listens on $listen (another
obkv-proxy?). Stop it, or give the proxy another address with OBKV_PROXY_LISTEN, e.g.:
    OBKV_PROXY_LISTEN=127.0.0.1:2884 scripts/run.sh
MSG
  exit 1
fi
if [[ -n $admin ]] && answers "$admin_host" "$admin_port"; then
  cat >&2 <<MSG
the admin listener's port $admin_port is taken: something already listens on $admin (another
obkv-proxy?), and /readyz and /metrics there would answer for it. Stop it, or give the admin
listener another address with OBKV_PROXY_ADMIN_LISTEN ("" for none), e.g.:
    OBKV_PROXY_ADMIN_LISTEN=127.0.0.1:9884 scripts/run.sh
MSG
  exit 1
fi
if [[ $admin_port == "$listen_port" && -n $admin ]]; then
  echo "OBKV_PROXY_LISTEN and OBKV_PROXY_ADMIN_LISTEN name the same port $listen_port; give them two" >&2
  exit 1
fi
if [[ $seekdb_port == "$listen_port" || ( -n $admin && $seekdb_port == "$admin_port" ) ]]; then
  echo "OBKV_SEEKDB_PORT $seekdb_port is also the proxy's port; give seekdb another" >&2
  exit 1
fi
seekdb_running=no
if database_answers "$seekdb_port"; then
  seekdb_running=yes
elif answers 127.0.0.1 "$seekdb_port"; then
  cat >&2 <<MSG
seekdb's port $seekdb_port is taken by something that does not answer as a database. Stop
it, or give seekdb another port with OBKV_SEEKDB_PORT, e.g.:
    OBKV_SEEKDB_PORT=2891 scripts/run.sh
MSG
  exit 1
fi

echo "building obkv-proxy (cargo build --release; the first build takes a few minutes)..."
cargo build --release

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

if [[ $seekdb_running == yes ]]; then
  echo "a database already answers on 127.0.0.1:$seekdb_port; using it"
  if scripts/backend.sh check-loopback "$seekdb_port" 2>/dev/null; then :; else
    echo "warning: that database listens beyond 127.0.0.1 (not started by this script)" >&2
  fi
else
  echo "starting seekdb on 127.0.0.1:$seekdb_port (data in $data)..."
  seekdb_pid=$(scripts/backend.sh start seekdb "$data" "$seekdb_port")
fi

target/release/obkv-proxy --config config/obkv-proxy.toml --listen "$listen" --admin-listen "$admin" \
  --backend "127.0.0.1:$seekdb_port" &
proxy_pid=$!
# ready: our own process is alive, holds the listening socket, and greets a connection
ready=no
for _ in $(seq 1 100); do
  if ! kill -0 "$proxy_pid" 2>/dev/null; then
    wait "$proxy_pid" 2>/dev/null || true
    proxy_pid=""
    echo "obkv-proxy failed to start on $listen (its error is above)" >&2
    exit 1
  fi
  if owns_listener "$listen_port" "$proxy_pid" &&
    timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2" && head -c 4 <&3 >/dev/null' _ "$connect_host" "$listen_port" 2>/dev/null; then
    ready=yes
    break
  fi
  sleep 0.1
done
if [[ $ready != yes ]]; then
  echo "obkv-proxy (pid $proxy_pid) did not accept a connection on $listen within 10 s" >&2
  exit 1
fi
cat <<MSG

obkv-proxy is listening on $listen in front of seekdb (127.0.0.1:$seekdb_port);
its admin listener (/metrics, /livez, /readyz): ${admin:-none}.
Connect with:
    mysql -h $connect_host -P $listen_port -u root
Press Ctrl-C to stop both.
MSG
wait "$proxy_pid"
