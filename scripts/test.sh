#!/usr/bin/env bash
# Command 2: install what the tests need (MariaDB, seekdb, sysbench, HAProxy, the mariadb client,
# PyMySQL) when missing, then run every test. The integration tests start private MariaDB and
# seekdb instances on free loopback ports (scripts/backend.sh) and stop them when they finish.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
# A machine-wide config could point tests elsewhere; make sure they use their own instances.
unset OBKV_TEST_MARIADB OBKV_TEST_SEEKDB
status=0
cargo test --all-targets --locked --no-fail-fast -- --test-threads=2 || status=$?
# the HBase rules hold unchanged with multiplexing on (issue 43): the rule, write, guard,
# prefix-scan, lock and hostile-input tests again, every proxy they start multiplexing its
# clients on at most 8 backend connections a user
OBKV_TEST_MULTIPLEX=1 cargo test --test it --locked --no-fail-fast -- --test-threads=2 \
  hbase:: writes:: prefix:: false_alarms:: bad_input:: ddl_locks:: hardening:: \
  multiplex::the_test_switch || status=$?
# a backend that crashed under the tests (MariaDB once did, signal 11): its own account of it,
# before its folder goes
for f in target/obkv-test/*/error.log target/obkv-test/*/log/seekdb.log; do
  [[ -f $f ]] && grep -q -E 'got signal|Assertion|CRASH' "$f" && { echo "== $f"; tail -n 80 "$f"; }
done
# the data folders the integration tests' shared instances leave (their servers end with the
# test process; a seekdb folder holds over a GB): the suites and the containers below need the disk
rm -rf target/obkv-test
# the fuzz targets (run by fuzz/run.sh, not here) must keep compiling against the crate
cargo check --manifest-path fuzz/Cargo.toml --bins --locked --target-dir target/fuzz-check || status=$?
# the real-client ring: SQLAlchemy's own published suite, directly and through the proxy
scripts/client-suites.sh || status=$?
# the Java ring: MariaDB Connector/J's own suite (Debian's jar and the same version's tests),
# plain, compressed and with server-side prepared statements, directly and through the proxy
scripts/java-suite.sh || status=$?
# and Rust's two drivers': mysql_async's and mysql's own suites, with their defaults
# (prefer_socket on) and compressed
scripts/rust-driver-suite.sh || status=$?
# (its build, a few GB: SUITE_KEEP=1 keeps it for the next run)
[[ ${SUITE_KEEP:-} == 1 ]] || rm -rf target/rust-driver-suite
# MariaDB's own mysql-test-run suites that use dynamic SQL, directly and through the proxy
scripts/mtr-suites.sh || status=$?
# the container images built from the Dockerfiles users build, and the compose workflow: the
# guide's statements through the front, both proxies scraped, a proxy stopped under a client
# loop with no committed write lost, down/up keeping seekdb's data (dockerd started and
# stopped by the script; base images made from Debian's packages where no registry is reached)
scripts/docker.sh test || status=$?
exit $status
