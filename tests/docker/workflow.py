#!/usr/bin/env python3
"""The container acceptance workflow (issue 32), run by `scripts/docker.sh test` once the images
are built: docker/compose.yaml up with the front on a free loopback port; the OBKV guide's
workflow through the front; both proxies scraped; the proxy a client loop is connected to stopped
under it — the loop reconnects through the front and goes on, and every write it saw committed is
in the table — and started again; `down` and `up` keep seekdb's data. Prints what it checks;
exits 1 on the first failure. Stops nothing it did not start (scripts/docker.sh runs `down -v`).
"""
import os
import socket
import subprocess
import sys
import threading
import time

import pymysql

COMPOSE = ["docker-compose", "-f", "docker/compose.yaml", "-p", "obkv"]
DEADLINE = 300  # seconds for the stack to come up (seekdb's first start, health checks)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


PORT = free_port()
ENV = dict(os.environ, OBKV_FRONT_PORT=str(PORT))


def compose(*args, check=True):
    r = subprocess.run(COMPOSE + list(args), env=ENV, capture_output=True, text=True)
    if check and r.returncode != 0:
        fail(f"docker-compose {' '.join(args)}: {r.stdout}{r.stderr}")
    return r.stdout


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    print(compose("ps", check=False))
    print(compose("logs", "--tail=40", check=False)[-8000:])
    # seekdb writes why it stopped to its own log, in its volume, not to stdout; and what it
    # checks at start (disk for its data and log files, memory) is the host's here
    seekdb_log = subprocess.run(
        ["docker", "run", "--rm", "-v", "obkv_seekdb-data:/data", "--entrypoint", "sh",
         "obkv-seekdb", "-c",
         "grep -h -E 'ERROR|WDIAG|fail' /data/log/*.log 2>/dev/null | tail -n 40"],
        capture_output=True, text=True)
    print("seekdb's own log (errors):\n" + (seekdb_log.stdout + seekdb_log.stderr)[-8000:])
    host = subprocess.run("df -h / /var/lib/docker 2>&1; free -m 2>&1; dmesg 2>/dev/null | tail -n 5",
                          shell=True, capture_output=True, text=True)
    print("host:\n" + host.stdout)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def connect(db=None):
    return pymysql.connect(host="127.0.0.1", port=PORT, user="root", password="", database=db,
                           autocommit=True, connect_timeout=5, read_timeout=30, write_timeout=30)


def wait_front():
    until = time.time() + DEADLINE
    last = None
    while time.time() < until:
        try:
            c = connect()
            with c.cursor() as cur:
                cur.execute("SELECT 1")
                if cur.fetchone() == (1,):
                    c.close()
                    return
        except Exception as e:  # not up yet
            last = e
        time.sleep(1)
    fail(f"the front did not answer within {DEADLINE} s: {last}")


def scrape(service):
    out = compose("exec", "-T", service, "obkv-proxy", "probe", "/metrics")
    samples = {}
    for line in out.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            samples[k] = float(v)
    return samples


def main():
    compose("up", "-d")
    wait_front()
    ok(f"compose up: the front answers on 127.0.0.1:{PORT}")

    # the guide's workflow through the front
    c = connect()
    cur = c.cursor()
    for sql in ["DROP DATABASE IF EXISTS obkv_guide", "CREATE DATABASE obkv_guide", "USE obkv_guide",
                "DROP TABLEGROUP IF EXISTS htable1", "CREATE TABLEGROUP htable1",
                "CREATE TABLE htable1$family1 (K varbinary(1024), Q varbinary(256), T bigint, "
                "V varbinary(1048576) NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS "
                "(substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) TABLEGROUP = htable1 "
                "PARTITION BY KEY(K_PREFIX) PARTITIONS 3"]:
        cur.execute(sql)
    now = int(time.time() * 1000)
    for i in range(20):
        cur.execute("INSERT INTO htable1$family1 (K, Q, T, V) VALUES (%s, 'q', %s, 'v')",
                    (f"user{i:03d}", -now))
    try:
        cur.execute("INSERT INTO htable1$family1 (K, Q, T, V) VALUES ('user', 'q', 5, 'v')")
        fail("a positive T was accepted")
    except pymysql.MySQLError as e:
        if "C4" not in str(e):
            fail(f"a positive T: {e}")
    cur.execute("SELECT K FROM htable1$family1 WHERE K LIKE 'user01%'")
    if len(cur.fetchall()) != 10:
        fail("the prefix scan did not return its 10 rows")
    c.close()
    ok("the guide's workflow through the front: DDL, writes, a C4 refusal, a prefix scan")

    # both proxies scraped; the refusal counted by one of them
    m1, m2 = scrape("proxy1"), scrape("proxy2")
    c4 = sum(m.get('obkv_proxy_refusals_total{rule="C4"}', 0) for m in (m1, m2))
    if c4 != 1:
        fail(f"the C4 refusal is counted {c4} times over the two proxies")
    for name, m in (("proxy1", m1), ("proxy2", m2)):
        if "obkv_proxy_statement_duration_seconds_count{class=\"plain\"}" not in m:
            fail(f"{name}: no latency histogram in its metrics")
    ok("both proxies scraped (/metrics); the C4 refusal counted once")

    # the image's admin listener (open to the container network) shows no rowkey: the
    # advisor's page hides them and its sample is refused (OBKV_PROXY_ADMIN_ROWKEYS=off)
    keys = [f"user{i:03d}" for i in range(20)]
    hexes = [k.encode().hex() for k in keys]
    for name in ("proxy1", "proxy2"):
        for path in ("/advisor", "/advisor?table=obkv_guide.htable1%24family1",
                     "/advisor/sample?table=obkv_guide.htable1%24family1", "/metrics"):
            r = subprocess.run(COMPOSE + ["exec", "-T", name, "obkv-proxy", "probe", path],
                               env=ENV, capture_output=True, text=True)
            body = r.stdout.lower()
            shown = [k for k, h in zip(keys, hexes) if k in body or h in body]
            if shown:
                fail(f"{name}: {path} shows rowkeys {shown}")
            if "sample" in path and r.returncode == 0:
                fail(f"{name}: {path} answered 200 without credentials")
    ok("the containers' admin listeners show no rowkey (page, sample, metrics)")

    # a client loop through the front; the proxy it is on is stopped under it
    committed, errors, stop = [], [], threading.Event()
    hosts = []  # the proxy each of the loop's connections landed on, in order

    def loop():
        conn, i = None, 0
        while not stop.is_set():
            try:
                if conn is None:
                    conn = connect("obkv_guide")
                    with conn.cursor() as k:
                        k.execute("SHOW PROXY STATUS")
                        hosts.append(dict(k.fetchall()).get("proxy_host", ""))
                with conn.cursor() as k:
                    k.execute("INSERT INTO htable1$family1 (K, Q, T, V) VALUES (%s, 'q', %s, 'v')",
                              (f"loop{i:06d}", -now))
                committed.append(f"loop{i:06d}")
            except pymysql.MySQLError as e:
                errors.append(str(e))
                conn = None
                time.sleep(0.1)  # a retry pace, not a synchronisation
            i += 1

    worker = threading.Thread(target=loop)
    worker.start()

    def wait_more(n, what):
        until, start = time.time() + 120, len(committed)
        while len(committed) < start + n:
            if time.time() > until or not worker.is_alive():
                stop.set()
                fail(f"{what}: the loop stalled at {len(committed)} writes ({errors[-3:]})")
            time.sleep(0.05)

    wait_more(30, "before the stop")
    # the proxy the loop's connection is on (a container's host name is its id's start) is
    # stopped under it
    ids = {s: compose("ps", "-q", s).strip() for s in ("proxy1", "proxy2")}
    host = hosts[-1]
    victim = next((s for s, cid in ids.items() if host and cid.startswith(host)), None)
    if victim is None:
        fail(f"the loop's proxy {host!r} is none of {ids}")
    compose("stop", victim)
    wait_more(60, f"after stopping {victim}")
    if len(hosts) < 2 or hosts[-1] == host or not errors:
        stop.set()
        fail(f"the loop did not move to the other proxy: {hosts}, {errors[-3:]}")
    compose("start", victim)
    wait_more(30, f"after starting {victim} again")
    stop.set()
    worker.join()
    c = connect("obkv_guide")
    with c.cursor() as k:
        k.execute("SELECT K FROM htable1$family1 WHERE K LIKE 'loop%'")
        stored = {r[0].decode() for r in k.fetchall()}
    lost = [k for k in committed if k not in stored]
    if lost:
        fail(f"{len(lost)} committed writes lost: {lost[:5]}")
    c.close()
    ok(f"{victim} (the loop's proxy) stopped and started under a client loop: "
       f"{len(committed)} committed writes, none lost, {len(errors)} errors on the way, "
       f"reconnected through the front to the other proxy")

    # down and up keep seekdb's data
    c = connect("obkv_guide")
    with c.cursor() as k:
        k.execute("SELECT COUNT(*) FROM htable1$family1")
        before = k.fetchone()[0]
    c.close()
    compose("down")
    compose("up", "-d")
    wait_front()
    c = connect("obkv_guide")
    with c.cursor() as k:
        k.execute("SELECT COUNT(*) FROM htable1$family1")
        after = k.fetchone()[0]
    c.close()
    if after != before:
        fail(f"down/up: {before} cells before, {after} after")
    ok(f"compose down and up keep seekdb's data ({after} cells)")
    print("docker: 5 passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
