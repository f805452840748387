#!/usr/bin/env bash
# The Java ring: MariaDB Connector/J's own published test suite, run directly against a private
# MariaDB and through obkv-proxy, test by test, in three variants — plain, the compressed
# protocol (useCompression=true) and server-side prepared statements (useServerPrepStmts=true).
# The driver is Debian's `libmariadb-java` jar; the tests are the `src/test` of Debian's source
# archive of the same version (`mariadb-connector-java_<version>.orig.tar.xz`, fetched from the
# Debian archive at run time, checked against its SHA-256, never vendored), compiled with javac
# against that jar, JUnit 4, hamcrest and JNA from Debian, and run by tests/java/Ring.java.
# The suite's long tests run too (runLongTest: million-row batches, 20 MB bulk executes).
# Exits non-zero when a test that passes directly does not pass through the proxy (after
# running its class again alone on both sides, so a timing flake on either side is told apart
# from a loss), when too few tests pass directly (the suite did not run), or when the
# compressed variant did not reach the proxy compressed.
#   scripts/java-suite.sh [VARIANT...]   (plain compressed serverprep; default all three)
# Environment: SUITE_KEEP=1 keeps the work folder (each run's per-test output is there).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
version=2.7.6
sha256=6f735e004962a0a7f119e948a96f8aa63466b84eab5da130228de4291c2b2290
archive="mariadb-connector-java_$version.orig.tar.xz"
url="http://deb.debian.org/debian/pool/main/m/mariadb-connector-java/$archive"
variants=("$@")
((${#variants[@]})) || variants=(plain compressed serverprep)

scripts/install-deps.sh test >/dev/null
jar_version=$(dpkg-query -W -f='${Version}' libmariadb-java)
if [[ $jar_version != "$version"-* ]]; then
  echo "libmariadb-java is $jar_version; the tests are those of $version" >&2
  exit 2
fi
cargo build --release --quiet

cache=target/java-suite
mkdir -p "$cache"
if [[ ! -f $cache/$archive ]]; then
  curl -sSf -o "$cache/$archive.part" "$url"
  mv "$cache/$archive.part" "$cache/$archive"
fi
echo "$sha256  $cache/$archive" | sha256sum -c --quiet

work=$(mktemp -d /tmp/obkv-java.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  scripts/backend.sh stop "$work/mariadb-direct" >/dev/null 2>&1 || true
  scripts/backend.sh stop "$work/mariadb-proxy" >/dev/null 2>&1 || true
  [[ ${SUITE_KEEP:-} == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

tar xJf "$cache/$archive" -C "$work"
src="$work/mariadb-connector-j-$version"
jars=(mariadb-java-client junit4 hamcrest-all jna slf4j-api)
cp=$(printf '/usr/share/java/%s.jar:' "${jars[@]}")
cp=${cp%:}
find "$src/src/test/java" -name '*.java' >"$work/sources"
echo "$root/tests/java/Ring.java" >>"$work/sources"
mkdir -p "$work/classes"
javac -nowarn -encoding UTF-8 -cp "$cp" -d "$work/classes" @"$work/sources" 2>"$work/javac.log" || {
  cat "$work/javac.log" >&2
  exit 2
}
# every class with tests, the abstract bases (which JUnit cannot run alone) left out
while read -r f; do
  grep -q '@Test' "$f" || continue
  grep -qE '^public abstract class|^abstract class' "$f" && continue
  f=${f#"$src/src/test/java/"}
  f=${f%.java}
  echo "${f//\//.}"
done < <(sort "$work/sources" | grep "$src/") >"$work/test-classes"
echo "== Connector/J $version suite: $(wc -l <"$work/test-classes") test classes, $(grep -c . "$work/sources") sources"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# one MariaDB for the direct runs and one behind the proxy, so the two run side by side
dport=$(free_port)
bport=$(free_port)
pport=$(free_port)
scripts/backend.sh start mariadb "$work/mariadb-direct" "$dport" >/dev/null
scripts/backend.sh start mariadb "$work/mariadb-proxy" "$bport" >/dev/null
for port in "$dport" "$bport"; do
  mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uroot -e 'CREATE DATABASE IF NOT EXISTS testj'
done
target/release/obkv-proxy --listen "127.0.0.1:$pport" --backend "127.0.0.1:$bport" \
  --admin-listen "" 2>"$work/proxy.log" &
pids+=($!)
for _ in $(seq 100); do
  mariadb --protocol=tcp -h127.0.0.1 -P"$pport" -uroot -e 'select 1' >/dev/null 2>&1 && break
  sleep 0.1
done

options() { # VARIANT -> the URL's options
  case $1 in
    plain) echo "" ;;
    compressed) echo "&useCompression=true" ;;
    serverprep) echo "&useServerPrepStmts=true" ;;
    *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}
suite() { # PORT VARIANT OUT CLASSES...
  local port=$1 variant=$2 out=$3
  shift 3
  # The heap: BigQueryTest#sendBigBlobPreparedQuery reads back a row of two 64 MB blobs while
  # holding the two it sent, about 520 MB at once. Out of heap in the driver's read, the test
  # fails and leaves the connection in the middle of that row, and the suite's next query
  # waits for ever (seen in CI through the proxy at -Xmx512m; at -Xmx300m it does so directly
  # too, every time). 1.5 GB leaves room on both sides.
  (cd "$src" && timeout 1200 java -Xmx1536m \
    -cp "$work/classes:$src/src/test/resources:$cp" \
    -DdbUrl="jdbc:mariadb://127.0.0.1:$port/testj?user=root$(options "$variant")" \
    -Dring.sources="$src/src/test/java" -DrunLongTest=true \
    Ring "$@" >"$out" 2>"$out.err") || echo "   (the run ended with status $?)" >>"$out"
}

compare() { # VARIANT
  python3 - "$work" "$1" <<'PY'
import re, sys
work, variant = sys.argv[1], sys.argv[2]

def outcomes(path):
    out, why, last = {}, {}, None
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except FileNotFoundError:
        return out, why
    for line in lines:
        m = re.match(r"(PASS|FAIL|SKIP) (\S+)$", line)
        if m:
            last = m.group(2)
            out[last] = m.group(1)
        elif line.startswith("    ") and last:
            why.setdefault(last, line.strip())
    return out, why

direct, dwhy = outcomes(f"{work}/direct-{variant}.txt")
proxy, pwhy = outcomes(f"{work}/proxy-{variant}.txt")
count = lambda o, k: sum(1 for v in o.values() if v == k)
print(f"   direct: {count(direct, 'PASS')} passed, {count(direct, 'FAIL')} failed, {count(direct, 'SKIP')} skipped")
print(f"   proxy:  {count(proxy, 'PASS')} passed, {count(proxy, 'FAIL')} failed, {count(proxy, 'SKIP')} skipped")
lost = sorted(t for t, o in direct.items() if o == "PASS" and proxy.get(t) != "PASS")
gained = sorted(t for t, o in proxy.items() if o == "PASS" and direct.get(t) != "PASS")
for t in gained:
    print(f"   passes only through the proxy: {t} (directly: {direct.get(t, 'missing')} {dwhy.get(t, '')})")
with open(f"{work}/lost-{variant}", "w") as f:
    for t in lost:
        f.write(t + "\n")
        print(f"   not passed through the proxy: {t} ({proxy.get(t, 'missing')}: {pwhy.get(t, '')})")
if count(direct, "PASS") < 1000:
    print("   too few tests passed directly: the suite did not run properly")
    sys.exit(2)
PY
}

# whether a lost test is lost: its class alone, directly and through the proxy, one after the
# other (the side-by-side runs share two cores; a test on a 1 s socket timeout can miss it)
confirm() { # VARIANT
  local variant=$1 lost="$work/lost-$variant" n=0
  [[ -s $lost ]] || return 0
  for class in $(cut -d'#' -f1 "$lost" | sort -u); do
    suite "$dport" "$variant" "$work/again-direct-$variant-$class.txt" "$class"
    suite "$pport" "$variant" "$work/again-proxy-$variant-$class.txt" "$class"
  done
  while read -r t; do
    class=${t%%#*}
    d=$(grep -m1 -E "^(PASS|FAIL|SKIP) $t\$" "$work/again-direct-$variant-$class.txt" | cut -d' ' -f1 || true)
    p=$(grep -m1 -E "^(PASS|FAIL|SKIP) $t\$" "$work/again-proxy-$variant-$class.txt" | cut -d' ' -f1 || true)
    if [[ $d == PASS && $p != PASS ]]; then
      echo "   LOST through the proxy ($variant): $t (again alone: ${p:-missing})"
      grep -A1 -E "^FAIL $t\$" "$work/again-proxy-$variant-$class.txt" | tail -1 || true
      n=$((n + 1))
    else
      echo "   $t: again alone, directly ${d:-missing}, through the proxy ${p:-missing}: not a loss"
    fi
  done <"$lost"
  ((n == 0))
}

status=0
mapfile -t classes <"$work/test-classes"
for variant in "${variants[@]}"; do
  opts=$(options "$variant")
  echo "== Connector/J $version suite, $variant${opts:+ (${opts#&})}: directly (port $dport) and through the proxy (port $pport), side by side"
  start=$SECONDS
  suite "$dport" "$variant" "$work/direct-$variant.txt" "${classes[@]}" &
  d=$!
  suite "$pport" "$variant" "$work/proxy-$variant.txt" "${classes[@]}" &
  p=$!
  wait "$d" "$p"
  echo "   ($((SECONDS - start)) s)"
  compare "$variant" || status=$?
  confirm "$variant" || status=1
done

# what the suite leaves out here, with its reason: the tests it skips itself (they need other
# hosts and ports — replication, Galera, Aurora clusters, a TLS server — or server settings
# this machine's MariaDB does not have), the same directly and through the proxy
first=${variants[0]}
echo "== tests the suite skipped ($first, directly), by reason"
python3 - "$work/direct-$first.txt" <<'PY'
import collections, re, sys
lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
by = collections.defaultdict(list)
for i, line in enumerate(lines):
    m = re.match(r"SKIP (\S+)$", line)
    if m:
        why = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("    ") else ""
        # grouped by the assumption's text, each test with where it is
        at = re.search(r" \((\w+\.java:\d+)\)$", why)
        key = why[: at.start()] if at else why
        by[key].append(m.group(1) + (f" ({at.group(1)})" if at else ""))
for why, tests in sorted(by.items(), key=lambda kv: -len(kv[1])):
    print(f"   {len(tests):3d}  {why}")
    for t in tests:
        print(f"          {t}")
PY
echo "== tests that fail directly too (not counted), $first"
grep -A1 '^FAIL ' "$work/direct-$first.txt" | grep -v '^--' | sed 's/^/   /' || true

if [[ " ${variants[*]} " == *" compressed "* ]]; then
  compressed=$(mariadb --protocol=tcp -h127.0.0.1 -P"$pport" -uroot -N -e 'SHOW PROXY STATUS' |
    awk '$1 == "compressed_sessions" { print $2 }')
  echo "compressed sessions through the proxy: ${compressed:-none}"
  if [[ -z $compressed || $compressed -lt 100 ]]; then
    echo "the compressed variant did not reach the proxy compressed"
    status=2
  fi
fi
((status == 0)) && echo "Connector/J ring: nothing lost through the proxy (${variants[*]})"
exit $status
