#!/usr/bin/env bash
# Starts or stops a private database instance for tests, benchmarks and the run command.
#   scripts/backend.sh start mariadb|seekdb DIR PORT [SERVER OPTION...] -> prints the server pid when ready
#   scripts/backend.sh exec mariadb|seekdb DIR PORT [SERVER OPTION...]  -> same, but becomes the server process
# Extra options go to the server as they are (e.g. MariaDB's --ssl-cert/--ssl-key for TLS tests).
#   scripts/backend.sh stop DIR                         -> stops the instance whose data is in DIR
# Each instance keeps all its files in DIR and listens on 127.0.0.1:PORT only: MariaDB by its
# --bind-address; seekdb, which has no option for the address (its SQL listener binds 0.0.0.0,
# with a root account without password), by scripts/loopback-bind.c preloaded into it (every
# bind() to 0.0.0.0 or :: goes to 127.0.0.1 or ::1). `start` checks that nothing of the new
# server listens beyond loopback, and stops it if something does.
#   scripts/backend.sh check-loopback PORT     -> fails when a socket listens on PORT beyond loopback
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

seekdb_dir() {
  local d
  d=$("$root/.venv/bin/python" -c 'import os, pylibseekdb; print(os.path.dirname(pylibseekdb.__file__))' 2>/dev/null) || {
    echo "seekdb is not installed: run scripts/install-deps.sh" >&2; exit 1; }
  echo "$d"
}

# The bind() shim that keeps seekdb on loopback, built once (again when its source changes) with
# the C compiler the Rust toolchain links with; prints its path.
loopback_shim() {
  local src=$root/scripts/loopback-bind.c out=$root/target/loopback-bind.so tmp
  if [[ ! -f $out || $src -nt $out ]]; then
    command -v cc >/dev/null 2>&1 || {
      echo "seekdb is kept on 127.0.0.1 by $src, which needs a C compiler (cc) to build" >&2; exit 1; }
    mkdir -p "$root/target"
    tmp=$(mktemp "$root/target/loopback-bind.XXXXXX")
    # built aside and renamed: instances started at once never load a half-written file
    if ! cc -shared -fPIC -O2 -o "$tmp" "$src" -ldl; then
      rm -f "$tmp"; echo "building $src failed" >&2; exit 1
    fi
    chmod 755 "$tmp"
    mv -f "$tmp" "$out"
  fi
  echo "$out"
}

# True when a TCP socket listens on PORT at an address other than loopback (127.0.0.0/8, ::1,
# ::ffff:127.x): 0.0.0.0, ::, or a network interface's address. /proc/net/tcp{,6} write
# addresses as little-endian hex words and the state LISTEN as 0A.
listens_beyond_loopback() { # PORT
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v p="$hex" '
    $4 == "0A" && substr($2, length($2) - 4) == p {
      a = substr($2, 1, length($2) - 5)
      if (length(a) == 8 && substr(a, 7, 2) == "7F") next
      if (a == "00000000000000000000000001000000") next
      if (substr(a, 1, 24) == "0000000000000000FFFF0000" && substr(a, 31, 2) == "7F") next
      found = 1
    }
    END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# The pid of the server whose data is in DIR when it runs (server.pid names a live seekdb or
# mariadbd, not a process that took over a stale pid).
server_of() { # DIR
  local pid exe
  [[ -f $1/server.pid ]] || return 1
  pid=$(cat "$1/server.pid")
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [[ $exe == */seekdb || $exe == */mariadbd ]] || return 1
  echo "$pid"
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
  # one server per folder: a second one would fail on the files, and take over server.pid
  local running
  running=$(server_of "$dir") && {
    echo "a server already runs with its data in $dir (pid $running); stop it first: $0 stop $dir" >&2
    exit 1
  }
  case $kind in
    mariadb)
      local bin
      bin=$(command -v mariadbd || echo /usr/sbin/mariadbd)
      [[ -x $bin ]] || { echo "mariadbd is not installed: run scripts/install-deps.sh" >&2; exit 1; }
      # each instance has a tmpdir of its own: MariaDB deletes every #sql* file in its tmpdir
      # when it starts (its own leftovers, it assumes), so a second instance sharing /tmp
      # deletes the first one's live internal temporary tables, and the first then crashes
      # (signal 11 in ha_maria::drop_table) when it ends the query that used one — seen in
      # this project's tests whenever a test started a private backend beside the shared one
      mkdir -p "$dir/tmp"
      if [[ ! -d $dir/data/mysql ]]; then
        mariadb-install-db --no-defaults --datadir="$dir/data" --user=root --tmpdir="$dir/tmp" \
          --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
      fi
      local args=(--no-defaults --datadir="$dir/data" --tmpdir="$dir/tmp" --socket="$dir/mariadb.sock" --port="$port" \
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
      local sd shim
      sd=$(seekdb_dir)
      shim=$(loopback_shim)
      export LD_LIBRARY_PATH="$sd${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      local preload="$shim${LD_PRELOAD:+:$LD_PRELOAD}"
      local args=(--nodaemon --port "$port" --base-dir "$dir" --parameter datafile_size=1G
        --parameter datafile_next=1G --parameter datafile_maxsize=16G
        --parameter log_disk_size=2G --parameter memory_limit=4G --parameter cpu_count=2 "${extra[@]}")
      if [[ $mode == exec ]]; then
        export LD_PRELOAD=$preload
        exec "$sd/seekdb" "${args[@]}" </dev/null >"$dir/stdout.log" 2>&1
      fi
      LD_PRELOAD=$preload "$sd/seekdb" "${args[@]}" </dev/null >"$dir/stdout.log" 2>&1 &
      local pid=$!
      echo "$pid" >"$dir/server.pid"
      wait_ready "$port" "$pid" "$dir/stdout.log" 120
      if listens_beyond_loopback "$port"; then
        echo "seekdb on port $port listens beyond 127.0.0.1 (the bind() shim $shim did not take): stopped" >&2
        stop "$dir"
        exit 1
      fi
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
  check-loopback)
    if listens_beyond_loopback "$2"; then
      echo "port $2 listens beyond loopback:" >&2
      ss -ltnp "( sport = :$2 )" >&2 2>/dev/null || true
      exit 1
    fi
    ;;
  *) echo "usage: $0 start mariadb|seekdb DIR PORT | exec ... | stop DIR | check-loopback PORT" >&2; exit 2 ;;
esac
