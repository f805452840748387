#!/usr/bin/env bash
# The real-client ring: SQLAlchemy's own published test suite, mysqlclient's (the C driver on
# libmariadb, plain and with the compressed protocol) and MariaDB Connector/Python's (binary
# protocol, bulk executes) — sdists from PyPI, downloaded at run
# time, never vendored — run directly against a private MariaDB and through obkv-proxy; the
# pass-sets are compared. Exits non-zero when a test that passes directly fails (or errors)
# through the proxy.
#   scripts/client-suites.sh [PYTEST SELECTION...]
# Default selection: SQLAlchemy's MySQL dialect tests and its core SQL/type/reflection suites.
# Environment: SUITE_SQLALCHEMY_VERSION (default 2.0.36), SUITE_MYSQLCLIENT_VERSION (2.3.1),
# SUITE_MARIADB_PY_VERSION (1.1.14), SUITE_KEEP=1 keeps the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/hop.sh
root=$(pwd)
version=${SUITE_SQLALCHEMY_VERSION:-2.0.36}
selection=("$@")
((${#selection[@]})) || selection=(test/dialect/mysql test/sql/test_types.py
  test/sql/test_query.py test/sql/test_resultset.py test/engine/test_reflection.py
  test/sql/test_insert_exec.py test/dialect/test_suite.py)

scripts/install-deps.sh test >/dev/null
.venv/bin/python -c 'import pytest, typing_extensions' 2>/dev/null ||
  .venv/bin/pip install -q pytest typing_extensions
cargo build --release --quiet

work=$(mktemp -d /tmp/obkv-suites.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/mariadb" || true
  [[ ${SUITE_KEEP:-} == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

.venv/bin/pip download -q --no-deps --no-binary :all: "sqlalchemy==$version" -d "$work" >/dev/null
tar xzf "$work"/sqlalchemy-"$version".tar.gz -C "$work"
src="$work/sqlalchemy-$version"

mport=$(free_port); pport=$(free_port); xport=$(free_port)
scripts/backend.sh start mariadb "$work/mariadb" "$mport" >/dev/null
for db in test test_schema test_schema_2; do
  mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -e "CREATE DATABASE IF NOT EXISTS $db"
done
target/release/obkv-proxy --listen "127.0.0.1:$pport" --backend "127.0.0.1:$mport" \
  2>"$work/proxy.log" &
pids+=($!)
# a second proxy multiplexing its clients (issue 43): at most 8 backend connections a user
mux_proxy "$xport" "$mport" "$work"
pids+=($!)
for port in "$pport" "$xport"; do
  for _ in $(seq 100); do
    mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uroot -e 'select 1' >/dev/null 2>&1 && break
    sleep 0.1
  done
done

run() { # NAME PORT
  echo "== SQLAlchemy $version suite, $1 (port $2)"
  (cd "$src" && PYTHONPATH=lib DISABLE_SQLALCHEMY_CEXT_RUNTIME=1 "$root/.venv/bin/python" -m pytest \
    -p no:cacheprovider -q --tb=no -o addopts= \
    --dburi "mysql+pymysql://root@127.0.0.1:$2/test?charset=utf8mb4" \
    --junitxml="$work/$1.xml" "${selection[@]}" >"$work/$1.out" 2>&1) || true
  tail -1 "$work/$1.out"
}
run direct "$mport"
run proxy "$pport"
run mux "$xport"

compare() { # DIRECT.xml PROXY.xml MIN_PASSED_DIRECTLY
  .venv/bin/python - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET

def outcomes(path):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("classname", "") + "::" + case.get("name", "")
        kinds = {child.tag for child in case}
        out[name] = ("failed" if kinds & {"failure", "error"} else
                     "skipped" if "skipped" in kinds else "passed")
    return out

direct, proxy = outcomes(sys.argv[1]), outcomes(sys.argv[2])
passed_direct = {t for t, o in direct.items() if o == "passed"}
passed_proxy = {t for t, o in proxy.items() if o == "passed"}
lost = sorted(passed_direct - passed_proxy)
gained = sorted(passed_proxy - passed_direct)
print(f"tests: {len(direct)} direct, {len(proxy)} through the proxy")
print(f"passed: {len(passed_direct)} direct, {len(passed_proxy)} through the proxy")
for t in lost:
    print(f"LOST through the proxy: {t} ({proxy.get(t, 'missing')})")
for t in gained:
    print(f"passes only through the proxy: {t} (direct: {direct.get(t)})")
if len(passed_direct) < int(sys.argv[3]):
    print("too few tests passed directly: the suite did not run properly")
    sys.exit(2)
print(f"{len(passed_proxy & passed_direct)} passed, {len(lost)} failed")
sys.exit(1 if lost else 0)
PY
}
status=0
compare "$work/direct.xml" "$work/proxy.xml" 100 || status=$?
echo "-- multiplexed:"
compare "$work/direct.xml" "$work/mux.xml" 100 || status=$?

# mysqlclient: its suite reads the connection from an option file; `compress` turns on the
# compressed protocol, which the proxy must relay on both legs
mc_version=${SUITE_MYSQLCLIENT_VERSION:-2.3.1}
.venv/bin/pip download -q --no-deps --no-binary :all: "mysqlclient==$mc_version" -d "$work" >/dev/null
tar xzf "$work/mysqlclient-$mc_version.tar.gz" -C "$work"
mc="$work/mysqlclient-$mc_version"
.venv/bin/pip install -q "$work/mysqlclient-$mc_version.tar.gz"
mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -e "CREATE DATABASE IF NOT EXISTS mysqldb_test"
# (its test_result_concurrent_use_raises races a streaming fetch against a 10 ms poll and
# fails about one run in five, directly too: a pass that loses a test runs once more, all three
# ways, and only a loss that repeats counts)
for mode in plain compress; do
  for attempt in 1 2; do
    for side in direct proxy mux; do
      port=$mport; [[ $side == proxy ]] && port=$pport; [[ $side == mux ]] && port=$xport
      cnf="$mc/tests/$side-$mode.cnf"
      printf '[MySQLdb-tests]\nhost = 127.0.0.1\nport = %s\nuser = root\ndatabase = mysqldb_test\ndefault-character-set = utf8mb4\n' \
        "$port" >"$cnf"
      [[ $mode == compress ]] && echo "compress = 1" >>"$cnf"
      echo "== mysqlclient $mc_version suite ($mode), $side (port $port)"
      (cd "$mc" && TESTDB="$side-$mode.cnf" "$root/.venv/bin/python" -m pytest -p no:cacheprovider \
        -q --tb=no -o addopts= --junitxml="$work/mc-$side-$mode.xml" tests -k "not sqlalchemy" \
        >"$work/mc-$side-$mode.out" 2>&1) || true
      tail -1 "$work/mc-$side-$mode.out"
    done
    mc_status=0
    compare "$work/mc-direct-$mode.xml" "$work/mc-proxy-$mode.xml" 100 || mc_status=$?
    echo "-- multiplexed:"
    compare "$work/mc-direct-$mode.xml" "$work/mc-mux-$mode.xml" 100 || mc_status=$?
    ((mc_status == 1 && attempt == 1)) && { echo "-- a loss: once more, all three ways"; continue; }
    ((mc_status == 0)) || status=$mc_status
    break
  done
done
# MariaDB Connector/Python: the binary protocol throughout (its cursors prepare every statement
# with parameters) and MariaDB's bulk execute (executemany), XA, pooling; its suite reads the
# server from TEST_DB_* variables
mp_version=${SUITE_MARIADB_PY_VERSION:-1.1.14}
.venv/bin/pip download -q --no-deps --no-binary :all: "mariadb==$mp_version" -d "$work" >/dev/null
tar xzf "$work/mariadb-$mp_version.tar.gz" -C "$work"
.venv/bin/pip install -q "$work/mariadb-$mp_version.tar.gz"
mariadb --protocol=tcp -h127.0.0.1 -P"$mport" -uroot -e "CREATE DATABASE IF NOT EXISTS testp"
for side in direct proxy mux; do
  port=$mport; [[ $side == proxy ]] && port=$pport; [[ $side == mux ]] && port=$xport
  echo "== MariaDB Connector/Python $mp_version suite, $side (port $port)"
  (cd "$work/mariadb-$mp_version/testing" && TEST_DB_HOST=127.0.0.1 TEST_DB_PORT=$port \
    TEST_DB_DATABASE=testp LOCAL_DB=local "$root/.venv/bin/python" -m pytest -p no:cacheprovider \
    -q --tb=no -o addopts= --junitxml="$work/mp-$side.xml" test >"$work/mp-$side.out" 2>&1) || true
  tail -1 "$work/mp-$side.out"
done
compare "$work/mp-direct.xml" "$work/mp-proxy.xml" 150 || status=$?
echo "-- multiplexed:"
compare "$work/mp-direct.xml" "$work/mp-mux.xml" 150 || status=$?

# what multiplexing reached over these suites: client sessions per backend connection at the
# most open at once, and why sessions were pinned
mux_ratio "$xport"

compressed=$(mariadb --protocol=tcp -h127.0.0.1 -P"$pport" -uroot -N -e 'SHOW PROXY STATUS' |
  awk '$1 == "compressed_sessions" { print $2 }')
echo "compressed sessions through the proxy: ${compressed:-none}"
if [[ -z $compressed || $compressed -lt 1 ]]; then
  echo "no compressed session reached the proxy: mysqlclient did not use compression"
  status=2
fi
exit $status
