#!/usr/bin/env bash
# Installs what obkv-proxy's run and test commands need, skipping what is already there.
#   scripts/install-deps.sh run    -> seekdb (PyPI pylibseekdb) + a MySQL client
#   scripts/install-deps.sh test   -> also MariaDB, sysbench, HAProxy, PyMySQL, libmariadb-dev,
#                                     and the Java ring's JDK, Connector/J, JUnit 4, hamcrest, JNA
#   scripts/install-deps.sh docker -> Debian's docker.io, docker-compose and debootstrap, and
#                                     PyMySQL in .venv (its workflow test's client)
# Python packages go into a project-local virtualenv (.venv) so nothing system-wide is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-test}

need_apt=()
# installs need_apt's packages, if any
apt_install() {
  ((${#need_apt[@]})) || return 0
  echo "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the package's own service from starting: our scripts start private instances.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
}
# the project's virtualenv, made once
ensure_venv() {
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
}
if [[ $what == docker ]]; then
  # scripts/docker.sh: the engine, compose and the base-image maker
  [[ -x /usr/bin/docker ]] || need_apt+=(docker.io)
  command -v docker-compose >/dev/null 2>&1 || need_apt+=(docker-compose)
  command -v debootstrap >/dev/null 2>&1 || need_apt+=(debootstrap)
  python3 -c 'import venv' 2>/dev/null || need_apt+=(python3-venv)
  apt_install
  # its workflow test (tests/docker/workflow.py) is a PyMySQL client
  ensure_venv
  .venv/bin/python -c 'import pymysql' 2>/dev/null || .venv/bin/pip install -q pymysql
  exit 0
fi
command -v mariadb >/dev/null 2>&1 || need_apt+=(mariadb-client)
if [[ $what == test ]]; then
  command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]] || need_apt+=(mariadb-server)
  command -v sysbench >/dev/null 2>&1 || need_apt+=(sysbench)
  command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || need_apt+=(haproxy)
  # to build mysqlclient (the real-client ring runs its suite): libmariadb's headers
  command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
  [[ -e /usr/include/mariadb/mysql.h ]] || need_apt+=(libmariadb-dev)
  # MariaDB's mysql-test-run (scripts/mtr-suites.sh)
  [[ -x /usr/share/mysql/mysql-test/mtr ]] || need_apt+=(mariadb-test)
  # Prometheus's own checker of the metrics exposition, and its server (tests/it/operations.rs)
  command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
  # headless Chromium renders the advisor's page in a test (tests/it/advisor.rs)
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  # the Java ring (scripts/java-suite.sh): Connector/J's own suite, compiled against Debian's jar
  command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
  for pkg in libmariadb-java junit4 libhamcrest-java libjna-java libslf4j-java; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || need_apt+=("$pkg")
  done
fi
python3 -c 'import venv' 2>/dev/null || need_apt+=(python3-venv)
apt_install

ensure_venv
py_need=()
.venv/bin/python -c 'import pylibseekdb' 2>/dev/null || py_need+=(pylibseekdb)
if [[ $what == test ]]; then
  .venv/bin/python -c 'import pymysql' 2>/dev/null || py_need+=(pymysql)
  .venv/bin/python -c 'import sqlalchemy' 2>/dev/null || py_need+=(sqlalchemy)
fi
if ((${#py_need[@]})); then
  echo "installing Python packages into .venv: ${py_need[*]}"
  .venv/bin/pip install -q "${py_need[@]}"
fi
echo "dependencies ready"
