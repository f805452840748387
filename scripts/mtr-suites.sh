#!/usr/bin/env bash
# MariaDB's own mysql-test-run suites (Debian package mariadb-test) run against a private
# MariaDB configured as mtr configures its own servers, directly, through obkv-proxy and
# through a second obkv-proxy multiplexing its clients on at most 8 backend connections; the
# pass-sets are compared. Exits non-zero when a test that passes directly does not pass
# through the proxy (or when none passes directly).
#   scripts/mtr-suites.sh [TEST...]
# Default tests: ps_1general ps_11bugs ctype_utf8mb4 sp-error subselect_exists2in (main suite;
# any name mtr takes, e.g. main.ps or a suite's test).
# Environment: MTR_DIR (default /usr/share/mysql/mysql-test), MTR_KEEP=1 keeps the work folder,
# MTR_PARALLEL (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/hop.sh
root=$(pwd)
tests=("$@")
((${#tests[@]})) || tests=(ps_1general ps_11bugs ctype_utf8mb4 sp-error subselect_exists2in)
mtr_dir=${MTR_DIR:-/usr/share/mysql/mysql-test}

if [[ ! -x $mtr_dir/mtr ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-test >/dev/null
  fi
  [[ -x $mtr_dir/mtr ]] || { echo "mysql-test-run is not installed (Debian: apt-get install mariadb-test)" >&2; exit 1; }
fi
cargo build --release --quiet

# Each pass gets a fresh server (with --extern mtr cannot restart one, so what a failed test
# leaves behind stays for the tests after it: the passes must not share it). One folder per
# pass holds the server, mtr's var folder and the links the tests' relative paths need: the
# server's data is PASS/srv/data, so '../../tmp' and '../../std_data' (how the tests name
# mtr's files, relative to the data folder) are PASS/tmp and PASS/std_data, which point into
# mtr's var folder; secure_file_priv is the pass's folder.
work=$(mktemp -d /tmp/obkv-mtr.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for pass in direct proxy mux; do
    scripts/backend.sh stop "$work/$pass/srv" >/dev/null 2>&1 || true
  done
  [[ ${MTR_KEEP:-} == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

sql() { local port=$1; shift; mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uroot "$@"; }

server() { # PASS PORT: start (or start again) the pass's server
  # the options of mtr's include/default_mysqld.cnf that the results depend on
  scripts/backend.sh start mariadb "$work/$1/srv" "$2" \
    --character-set-server=latin1 --collation-server=latin1_swedish_ci --local-infile \
    --log-bin-trust-function-creators=1 --max-heap-table-size=1M --sort-buffer-size=256K \
    --key-buffer-size=1M --default-storage-engine=myisam --use-stat-tables=preferably \
    --histogram-type=json_hb --secure-file-priv="$work/$1" --open-files-limit=1024 >/dev/null
}

prepare() { # PASS PORT
  mkdir -p "$work/$1"
  ln -s var/tmp "$work/$1/tmp"
  ln -s var/std_data "$work/$1/std_data"
  server "$1" "$2"
  sql "$2" -e "CREATE DATABASE test; CREATE DATABASE mtr CHARSET=latin1"
  # mtr's own warning tables and check procedures, as its bootstrap installs them (its
  # sql_to_bootstrap: mysqltest's delimiter command, `--` lines dropped, @HOSTNAME@)
  for f in mtr_warnings.sql mtr_check.sql; do
    sed -e 's/^delimiter ||;$/DELIMITER ||/' -e '/^[[:space:]]*--/d' \
      -e "s/'@HOSTNAME@'/localhost/" "$mtr_dir/include/$f" | sql "$2" mtr
  done
}

run() { # PASS PORT SOCKET SERVER_PORT
  echo "== mysql-test-run ${tests[*]}, $1 (port $2)"
  local t0=$SECONDS
  # `connect c,localhost,…` in a test uses the socket: the server's, or the proxy's own
  (cd "$mtr_dir" && ./mtr --extern host=127.0.0.1 --extern port="$2" --extern socket="$3" \
    --extern user=root --vardir="$work/$1/var" --force --max-test-fail=0 \
    --parallel="${MTR_PARALLEL:-1}" --retry=0 "${tests[@]}" >"$work/$1.log" 2>&1) || true
  { grep -E '\[ (pass|fail|skipped|disabled) \]' "$work/$1.log" || true; } |
    sed -E 's/^([^ ]+) .*\[ (pass|fail|skipped|disabled) \].*/\1 \2/' | sort >"$work/$1.outcomes"
  echo "   $(grep -c ' pass$' "$work/$1.outcomes" || true) passed," \
    "$(grep -c ' fail$' "$work/$1.outcomes" || true) failed," \
    "$(grep -cE ' (skipped|disabled)$' "$work/$1.outcomes" || true) skipped ($((SECONDS - t0)) s)"
  # a test that restarts the server (restart_mysqld.inc) cannot with --extern: it stays down
  sql "$4" -e 'select 1' >/dev/null 2>&1 || echo "   (a test stopped the server: the tests after it failed)"
}

dport=$(free_port); mport=$(free_port); pport=$(free_port); xmport=$(free_port); xport=$(free_port)
prepare direct "$dport"
prepare proxy "$mport"
prepare mux "$xmport"
target/release/obkv-proxy --listen "127.0.0.1:$pport" --backend "127.0.0.1:$mport" \
  2>"$work/obkv-proxy.log" &
pids+=($!)
# the third pass multiplexes its clients (issue 43): at most 8 backend connections a user
mux_proxy "$xport" "$xmport" "$work"
pids+=($!)
for port in "$pport" "$xport"; do
  for _ in $(seq 100); do
    mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uroot -e 'select 1' >/dev/null 2>&1 && break
    sleep 0.1
  done
done

run direct "$dport" "$work/direct/srv/mariadb.sock" "$dport"
run proxy "$pport" "/tmp/obkv-proxy-$pport.sock" "$mport"
run mux "$xport" "/tmp/obkv-proxy-$xport.sock" "$xmport"

passed() { awk '$2 == "pass" {print $1}' "$work/$1.outcomes"; }
failed=0
for pass in proxy mux; do
  lost=$(comm -23 <(passed direct) <(passed $pass))
  if [[ -n $lost ]]; then
    echo "passed directly, not through obkv-proxy ($pass):"
    for t in $lost; do
      echo "  $t"
      # what mtr said about it: the lines after its result line, up to the next test's
      awk -v t="$t" '$1 == t && / \[ /{p=1; next} p && / \[ (pass|fail|skipped|disabled) \]/{exit} p' \
        "$work/$pass.log" | head -30 | sed 's/^/    /'
    done
    failed=1
  fi
done
# what multiplexing reached over these tests
mux_ratio "$xport"
if ((failed)); then
  MTR_KEEP=1
  echo "logs kept in $work"
  exit 1
fi
if [[ -z $(passed direct) ]]; then
  echo "no test passed directly: the setup is broken (see $work/direct.log)" >&2
  MTR_KEEP=1
  exit 1
fi
echo "every test that passes directly passes through obkv-proxy"
