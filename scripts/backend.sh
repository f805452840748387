#!/usr/bin/env bash
# Starts or stops a private database instance for tests, benchmarks and the run command.
#   scripts/backend.sh start mariadb|seekdb DIR PORT [SERVER OPTION...] -> prints the server pid when ready
#   scripts/backend.sh exec mariadb|seekdb DIR PORT [SERVER OPTION...]  -> same, but becomes the server process
# Extra options go to the server as they are (e.g. MariaDB's --ssl-cert/--ssl-key for TLS tests).
#   scripts/backend.sh stop DIR                         -> stops the instance whose data is in DIR
# Each instance keeps all its files in DIR and listens on 127.0.0.1:PORT only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

seekdb_dir() {
  local d
  d=$("$root/.venv/bin/python" -c 'import os, pylibseekdb; print(os.path.dirname(pylibseekdb.__file__))' 2>/dev/null) || {
    echo "seekdb is not installed: run scripts/install-deps.sh" >&2; exit 1; }
  echo "$d"
}

wait_ready() { # PORT PID LOG SECONDS
  local port=$1 pid=$2 log=$3 secs=$4 i
  for ((i = 0; i < secs * 10; i++)); do
    if mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uroot -N -e 'select 1' >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then echo "server exited during start-up; see $log" >&2; tail -20 "$log" >&2; return 1; fi
    sleep 0.1
  done
  echo "server on port $port not ready after ${secs}s; see $log" >&2
  return 1
}

start() {
  local kind=$1 dir=$2 port=$3 mode=${4:-background}
  shift 4
  local extra=("$@")
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  case $kind in
    mariadb)
      local bin
      bin=$(command -v mariadbd || echo /usr/sbin/mariadbd)
      [[ -x $bin ]] || { echo "mariadbd is not installed: run scripts/install-deps.sh" >&2; exit 1; }
      if [[ ! -d $dir/data/mysql ]]; then
        mariadb-install-db --no-defaults --datadir="$dir/data" --user=root \
          --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
      fi
      local args=(--no-defaults --datadir="$dir/data" --socket="$dir/mariadb.sock" --port="$port" \
        --bind-address=127.0.0.1 --user=root --pid-file="$dir/mariadb.pid" --log-error="$dir/error.log" \
        --skip-log-bin --character-set-server=utf8mb4 --max-connections=2000 --max-allowed-packet=64M \
        --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 "${extra[@]}")
      [[ $mode == exec ]] && exec "$bin" "${args[@]}" </dev/null >/dev/null 2>&1
      "$bin" "${args[@]}" </dev/null >/dev/null 2>&1 &
      local pid=$!
      echo "$pid" >"$dir/server.pid"
      wait_ready "$port" "$pid" "$dir/error.log" 60
      ;;
    seekdb)
      local sd
      sd=$(seekdb_dir)
      export LD_LIBRARY_PATH="$sd${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      local args=(--nodaemon --port "$port" --base-dir "$dir" --parameter datafile_size=2G
        --parameter log_disk_size=2G --parameter memory_limit=4G --parameter cpu_count=2 "${extra[@]}")
      [[ $mode == exec ]] && exec "$sd/seekdb" "${args[@]}" </dev/null >"$dir/stdout.log" 2>&1
      "$sd/seekdb" "${args[@]}" </dev/null >"$dir/stdout.log" 2>&1 &
      local pid=$!
      echo "$pid" >"$dir/server.pid"
      wait_ready "$port" "$pid" "$dir/stdout.log" 120
      ;;
    *) echo "unknown backend kind: $kind (mariadb or seekdb)" >&2; exit 2 ;;
  esac
  echo "$pid"
}

stop() {
  local dir=$1 pid i
  [[ -f $dir/server.pid ]] || return 0
  pid=$(cat "$dir/server.pid")
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/server.pid"
}

case ${1:-} in
  start) start "$2" "$3" "$4" background "${@:5}" ;;
  # exec: prepare, then become the server in the foreground (the caller owns the pid and waits)
  exec) start "$2" "$3" "$4" exec "${@:5}" ;;
  stop) stop "$2" ;;
  *) echo "usage: $0 start mariadb|seekdb DIR PORT | stop DIR" >&2; exit 2 ;;
esac
