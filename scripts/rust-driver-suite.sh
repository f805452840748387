#!/usr/bin/env bash
# A second real-client ring: the published test suites of Rust's two MySQL drivers, run directly
# against a private MariaDB, through obkv-proxy, and through a second obkv-proxy multiplexing
# its clients on at most 8 backend connections (issue 43), with the drivers' defaults — their
# `prefer_socket` included, which moves a connection to the server's Unix socket when the
# server says where it is (docs/DESIGN.md, "A driver's socket probe"):
#   - mysql_async, at the version in Cargo.lock (the source cargo fetched for this project's
#     own tests; never vendored);
#   - mysql (the synchronous driver), at $MYSQL_CRATE_VERSION (default 26.0.1), fetched from
#     crates.io into a throwaway manifest.
# The pass-sets are compared; exits non-zero when a test that passes directly fails through the
# proxy. A test that loses is run once more, alone, both ways, and counts as lost only if it
# passes directly and fails through the proxy again (the suites have timing races of their own:
# mysql_async's `should_reconnect` failed 2 of 25 direct runs here; the tests on the `racy`
# list below get four more runs alone through the proxy). Each suite runs twice: with
# the driver's defaults, and compressed (the compressed protocol on both legs, docs/DESIGN.md).
#   scripts/rust-driver-suite.sh [TEST FILTER]
# Environment: SUITE_KEEP=1 keeps the work folder; SUITE_CRATES="mysql_async mysql" chooses.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/hop.sh
root=$(pwd)
filter=${1:-}

cargo fetch --locked --quiet
cargo build --release --quiet
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src

work=$(mktemp -d /tmp/obkv-rust-suite.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/mariadb" || true
  [[ ${SUITE_KEEP:-} == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT INT TERM
export CARGO_TARGET_DIR="$root/target/rust-driver-suite"

# CRATE VERSION -> the crate's source copied to $work/CRATE, its tests built
prepare() {
  local crate=$1 version=$2 src
  src=$(ls -d "$registry"/*/"$crate-$version" 2>/dev/null | head -1 || true)
  if [[ -z $src ]]; then
    mkdir -p "$work/fetch-$crate/src"
    : >"$work/fetch-$crate/src/lib.rs"
    printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = "=%s"\n' \
      "$crate" "$version" >"$work/fetch-$crate/Cargo.toml"
    cargo fetch --quiet --manifest-path "$work/fetch-$crate/Cargo.toml"
    src=$(ls -d "$registry"/*/"$crate-$version" 2>/dev/null | head -1 || true)
  fi
  [[ -n $src ]] || { echo "$crate $version source not found in the cargo registry" >&2; exit 2; }
  cp -r "$src" "$work/$crate"
  (cd "$work/$crate" && cargo test $test_kind --no-run --quiet 2>"$work/build.log") || {
    cat "$work/build.log" >&2; exit 2; }
}

mport=$(free_port); pport=$(free_port); xport=$(free_port)
scripts/backend.sh start mariadb "$work/mariadb" "$mport" >/dev/null
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

run() { # PORT OUT [FILTER ARGS...]
  local port=$1 out=$2
  shift 2
  (cd "$work/$crate" && DATABASE_URL="mysql://root@127.0.0.1:$port/mysql$url_opts" \
    COMPRESS=$compress_env cargo test $test_kind --no-fail-fast -- --test-threads=2 "$@" \
    >"$out" 2>&1) || true
}
outcomes() { # FILE -> "name outcome" lines (ok / FAILED / ignored); `#[should_panic]` tests
  # print their name with " - should panic" after it
  sed -n -E 's/^test (.+) \.\.\. (ok|FAILED|ignored)$/\1 \2/p' "$1" |
    sed -E 's/ - should panic / /' | sort -u
}
proxy_status() { # NAME [PORT] -> its value in SHOW PROXY STATUS
  mariadb --protocol=tcp -h127.0.0.1 -P"${2:-$pport}" -uroot -N -e 'SHOW PROXY STATUS' |
    awk -v n="$1" '$1 == n { print $2 }'
}
# Multiplexed losses known: these tests count the statements their connection closed in the
# backend's session status (`SHOW SESSION STATUS LIKE 'Com_stmt_close'`). A backend connection's
# status counters are its whole life's, and with multiplexing a client is served by connections
# other clients used (and closed statements on) before: the count is theirs too. Printed as
# KNOWN LOSS, not counted; any other loss fails the ring.
mux_known="mysql_async conn::test::should_not_cache_statements_if_stmt_cache_size_is_zero
mysql_async conn::test::should_hold_stmt_cache_size_bound
mysql conn::test::my_conn::should_not_cache_statements_if_stmt_cache_size_is_zero
mysql conn::test::my_conn::should_hold_stmt_cache_size_bounds"
# Races of the suites' own: a test here that fails again alone through the proxy is run alone
# up to four more times, and counts as lost only if it never passes (a proxy defect that breaks
# it fails every time). mysql_async's `should_reconnect` drops a pooled connection (which the
# pool resets, COM_RESET_CONNECTION, on its way back) and KILLs the five pooled connections at
# once, in the order it opened them; it expects the reset one back in the pool by then. The
# pool lends the connection whose reset ended last; directly that is nearly always the one
# opened last (one server answers five resets in the order they came), through any hop the
# five answers come back in whatever order its threads relay them, and when the last is the
# connection opened first, the first KILL reaches it before its reset (traced here with a
# log of every command: the KILL arrives, then the reset, of a session already ended). It
# fails 2 of 25 runs directly, 1 of 25 through the proxy and about 1 in 6 multiplexed.
racy="mysql_async conn::pool::test::should_reconnect"
status=0
for crate in ${SUITE_CRATES:-mysql_async mysql}; do
  case $crate in
    mysql_async)
      version=$(awk '$0 == "name = \"mysql_async\"" { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
      test_kind=--tests min_passed=50
      # MODE|URL OPTIONS|COMPRESS (the mysql crate's own switch for its suite)
      modes=("defaults||" "compressed|?compression=fast|") ;;
    mysql)
      version=${MYSQL_CRATE_VERSION:-26.0.1}
      test_kind=--lib min_passed=40
      modes=("defaults||" "compressed||1") ;;
    *) echo "unknown crate $crate" >&2; exit 2 ;;
  esac
  prepare "$crate" "$version"
  for m in "${modes[@]}"; do
    IFS='|' read -r mode url_opts compress_env <<<"$m"
    echo "== $crate $version suite ($mode), direct (port $mport)"
    run "$mport" "$work/direct.out" ${filter:+"$filter"}
    outcomes "$work/direct.out" >"$work/direct.txt"
    passed_direct=$(awk '$2 == "ok"' "$work/direct.txt" | wc -l)
    echo "not passing directly: $(awk '$2 != "ok" { printf "%s ", $1 }' "$work/direct.txt")"
    if [[ -z $filter ]] && ((passed_direct < min_passed)); then
      echo "too few tests passed directly: the suite did not run properly"
      exit 2
    fi
    for side in proxy mux; do
      port=$pport; [[ $side == mux ]] && port=$xport
      compressed_before=$(proxy_status compressed_sessions "$port")
      probes_before=$(proxy_status socket_probes_answered "$port")
      echo "== $crate $version suite ($mode), through the proxy, $side (port $port)"
      run "$port" "$work/$side.out" ${filter:+"$filter"}
      # the suite ran through the proxy: its connections' socket probes were answered there
      probes=$(( $(proxy_status socket_probes_answered "$port") - probes_before ))
      compressed=$(( $(proxy_status compressed_sessions "$port") - compressed_before ))
      outcomes "$work/$side.out" >"$work/$side.txt"
      passed_proxy=$(awk '$2 == "ok"' "$work/$side.txt" | wc -l)
      echo "tests: $(wc -l <"$work/direct.txt") direct, $(wc -l <"$work/$side.txt") through the proxy ($side)"
      echo "passed: $passed_direct direct, $passed_proxy through the proxy ($side); socket probes answered by the proxy: $probes; compressed sessions: $compressed"
      lost=0 known=0
      while read -r name; do
        # once more, alone, both ways
        run "$mport" "$work/again-direct.out" "$name" --exact
        run "$port" "$work/again-proxy.out" "$name" --exact
        d=$(outcomes "$work/again-direct.out" | awk '{ print $2 }')
        p=$(outcomes "$work/again-proxy.out" | awk '{ print $2 }')
        if [[ $d == ok && $p != ok ]] && grep -qxF "$crate $name" <<<"$racy"; then
          for attempt in 3 4 5 6; do
            run "$port" "$work/again-proxy.out" "$name" --exact
            p=$(outcomes "$work/again-proxy.out" | awk '{ print $2 }')
            if [[ $p == ok ]]; then
              echo "race of the suite's own, passed alone at attempt $attempt: $name"
              break
            fi
          done
        fi
        if [[ $d == ok && $p != ok && $side == mux ]] && grep -qxF "$crate $name" <<<"$mux_known"; then
          echo "KNOWN LOSS multiplexed (a connection's session status counters are every client's it served): $name"
          known=$((known + 1))
        elif [[ $d == ok && $p != ok ]]; then
          echo "LOST through the proxy ($side): $name (again: direct $d, proxy ${p:-missing})"
          lost=$((lost + 1))
        else
          echo "lost once, not again (direct ${d:-missing}, proxy ${p:-missing}): $name"
        fi
      done < <(join -j1 <(awk '$2 == "ok" { print $1 }' "$work/direct.txt") \
        <(awk '$2 != "ok" { print $1 }' "$work/$side.txt"); \
        comm -23 <(awk '$2 == "ok" { print $1 }' "$work/direct.txt") <(awk '{ print $1 }' "$work/$side.txt"))
      if [[ -z $filter ]] && ((probes < 1)); then
        echo "the proxy ($side) answered no socket probe: the suite did not run through it"
        exit 2
      fi
      if [[ -z $filter && $mode == compressed ]] && ((compressed < 1)); then
        echo "no compressed session reached the proxy ($side): the suite did not use compression"
        exit 2
      fi
      echo "$crate $mode ($side): $((passed_direct - lost - known)) of $passed_direct passed both ways, $lost lost, $known known"
      ((lost == 0)) || status=1
    done
  done
done
# what multiplexing reached over these suites
mux_ratio "$xport"
exit $status
