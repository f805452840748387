"""PyMySQL through obkv-proxy: random binary values (every byte 0x00-0xFF) written with
_binary literals (non-UTF-8 query text) and read back, then a large result streamed with the
unbuffered SSCursor. Prints one summary line; exits non-zero on any mismatch."""
import os
import random
import sys

import pymysql
import pymysql.cursors

host, port, rows_to_stream = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True, binary_prefix=True)
cur = conn.cursor()
cur.execute("CREATE DATABASE IF NOT EXISTS obkv_pymysql")
cur.execute("USE obkv_pymysql")
cur.execute("DROP TABLE IF EXISTS bin")
cur.execute("CREATE TABLE bin (k VARBINARY(64) PRIMARY KEY, v LONGBLOB NOT NULL)")

rng = random.Random(20261121)
values = {bytes([i]) + b"key": bytes(range(256)) for i in range(4)}
for i in range(300):
    k = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 48)))
    values[k] = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 4096)))
for k, v in values.items():
    cur.execute("REPLACE INTO bin (k, v) VALUES (%s, %s)", (k, v))

cur.execute("SELECT k, v FROM bin")
back = {bytes(k): bytes(v) for k, v in cur.fetchall()}
if back != values:
    missing = len(set(values) - set(back))
    wrong = sum(1 for k in values if k in back and back[k] != values[k])
    print(f"MISMATCH missing={missing} wrong={wrong}")
    sys.exit(1)
for k in list(values)[:50]:
    cur.execute("SELECT v FROM bin WHERE k = %s", (k,))
    (v,) = cur.fetchone()
    if bytes(v) != values[k]:
        print("MISMATCH on point read")
        sys.exit(1)

cur.execute("DROP TABLE IF EXISTS d10")
cur.execute("CREATE TABLE d10 (d INT PRIMARY KEY)")
cur.execute("INSERT INTO d10 VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
stream = conn.cursor(pymysql.cursors.SSCursor)
# a generated result (10^6 candidate rows), streamed row by row without buffering
stream.execute(
    "SELECT n, REPEAT('x', 100) FROM (SELECT a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d + 100000*g.d + 1 AS n "
    "FROM d10 a, d10 b, d10 c, d10 e, d10 f, d10 g) s WHERE n <= %d ORDER BY n" % rows_to_stream
)
count = 0
total = 0
expected = 1
for n, pad in stream:
    if int(n) != expected or len(pad) != 100:
        print(f"STREAM MISMATCH at {count}")
        sys.exit(1)
    expected += 1
    count += 1
    total += int(n)
stream.close()
if count != rows_to_stream:
    print(f"STREAM SHORT {count}")
    sys.exit(1)
print(f"OK values={len(values)} streamed={count} sum={total}")
