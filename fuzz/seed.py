#!/usr/bin/env python3
"""Writes the fuzz seed corpora from real statements and packets: the statement literals of
the byte-identical corpus and the HBase tests (tests/it/*.rs), the OBKV guide's DDL, and
protocol packets as MariaDB and seekdb send them. Run from the repository root:
    python3 fuzz/seed.py
"""
import hashlib, os, re, struct

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(root, "fuzz", "corpus")

def put(target, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)

# every string literal in the integration tests that looks like SQL
sql = set()
lit = re.compile(r'"((?:[^"\\]|\\.)*)"')
words = ("SELECT", "INSERT", "CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "SHOW", "UPDATE",
         "DELETE", "REPLACE", "PREPARE", "EXECUTE", "SET", "USE", "BEGIN", "/*")
for name in sorted(os.listdir(os.path.join(root, "tests", "it"))):
    if not name.endswith(".rs"):
        continue
    text = open(os.path.join(root, "tests", "it", name), encoding="utf-8").read()
    for m in lit.finditer(text):
        s = m.group(1).encode().decode("unicode_escape", errors="ignore")
        if s.lstrip().upper().startswith(words) and len(s) < 4000:
            sql.add(s.encode("utf-8", errors="surrogateescape"))
sql |= {
    b"CREATE TABLE htable1$family1 (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = htable1 PARTITION BY KEY(K) PARTITIONS 97",
    b"CREATE TABLE g$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)) VIRTUAL, PRIMARY KEY (K, Q, T)) TABLEGROUP = g KV_ATTRIBUTES = '{\"Hbase\": {\"TimeToLive\": 3600}}' PARTITION BY KEY(K_PREFIX) PARTITIONS 193",
    b"CREATE TABLE r$f (K varbinary(1024), Q varbinary(256), T bigint, V longblob NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = r PARTITION BY RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('m'), PARTITION p1 VALUES LESS THAN (MAXVALUE))",
    b"ALTER TABLE g$f KV_ATTRIBUTES='{}' PARTITION BY KEY(K) PARTITIONS 7",
    b"SELECT 1 /*!; ALTER TABLE g$f ADD COLUMN X int */",
    b"SELECT 1; /*M!100300 ALTER TABLE g$f ADD COLUMN X int */",
    b"PREPARE s FROM X'414C544552205441424C4520',",
    b"EXECUTE IMMEDIATE CONCAT('ALTER TABLE g', '$f ADD X int')",
    b"CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN DROP TABLE g$f; END",
    b"SELECT \"a\\\"; ALTER TABLE g$f ADD COLUMN X int -- \"",
    b"SELECT '\xbf\\'; CREATE TABLE g$f (K int) -- '",
    b"SHOW TABLEGROUPS LIKE '%a%a%a%a%c'",
    b"SELECT K, Q, T, V FROM g$f WHERE K LIKE 'abcd%' AND T > -1 ORDER BY K LIMIT 10",
}
sql |= {
    b"INSERT INTO g$f (K, Q, T, V) VALUES ('r1', 'q', -1700000000000, X'00FF'), (_binary'r\\'2', '', 5, NULL)",
    b"REPLACE g$f VALUES (?, CONCAT('a', ?), - -3, ?), (1.5, (SELECT 1), DEFAULT, 'x' 'y')",
    b"INSERT g$f SET K = 'a', Q = 'b', T = -1, V = LOWER('x') ON DUPLICATE KEY UPDATE V = 'y', g$f.T = 2",
    b"INSERT INTO g$f VALUES ('a','b',1,'v') AS new ON DUPLICATE KEY UPDATE V = new.V",
    b"INSERT INTO g$f PARTITION (p0) (K,Q,T,V) VALUES ROW('a','b',1,'v'), ()",
    b"INSERT g$f SET K := 'a', Q := 'b', T := -1, V := 'v' ON DUPLICATE KEY UPDATE V := NULL",
    b"INSERT INTO g$f SELECT * FROM (SELECT 1) x ON DUPLICATE KEY UPDATE K = 'z', V = ?",
    b"UPDATE (g$f a JOIN db.`g$h` AS b ON a.K = b.K), (SELECT 1) d SET a.V = ?, b.T := 1, db.b.Q = 'q'",
    b"WITH c (n) AS (SELECT 1) UPDATE g$f PARTITION (p0) x USE INDEX (PRIMARY) SET x.K = 'a' WHERE K IN (SELECT n FROM c)",
    b"SET STATEMENT max_statement_time = 1, sql_mode = (SELECT '') FOR ANALYZE FORMAT = JSON UPDATE g$f SET V = 'v'",
    b"SET STATEMENT a = ? FOR CREATE TABLE g$f (K int)",
    b"EXPLAIN ANALYZE FORMAT = TREE UPDATE g$f FOR SYSTEM_TIME ALL x, o SET x.T = 1",
    b"CREATE OR REPLACE ALGORITHM = TEMPTABLE DEFINER = `u`@`%` VIEW v (a) AS (SELECT COUNT(*) OVER () FROM g$f GROUP BY K)",
    b"SELECT @@max_allowed_packet,@@wait_timeout,@@socket",
    b"select @@GLOBAL.socket AS `s` , @@session.Socket t, @@port;",
    b"UPDATE g$f a JOIN g$h b ON a.K = b.K SET a.V = ?, b.V = ? WHERE a.K LIKE ?",
    b"UPDATE g$h, g$f SET V = ?, g$h.V = 'x' WHERE g$f.K = g$h.K",
}
# issue 31: texts whose reading depends on state the proxy is not told
sql |= {
    b"SELECT 1 AS \xe0`; UPDATE g$f SET T = 5 WHERE K = 'k1'; #`",
    b"SELECT `a\xe0`; UPDATE g$f SET T = 5 WHERE K = 'k1'; #`",
    b"SELECT @a\xe0`; INSERT INTO g$f VALUES ('k', 'q', 5, 'v'); #`",
    b"INSERT INTO g$f (K, Q, T, V) VALUES ('k2', 'q', /*!999999 - */ -1700000000000, 'v')",
    b"INSERT INTO g$f (K, Q, T, V) VALUES ('k2', 'q', /*!50726 - */ -1700000000000, 'v')",
    b"SELECT 1 /*!123 ; DROP TABLE g$f */",
    b"SELECT 1 --\x7f '\n; UPDATE g$f SET T = 5; -- '",
    b"SELECT 1 --\x0b '\n; UPDATE g$f SET T = 5; -- '",
    b"SET sql_mode = 'NO_BACKSLASH_ESCAPES'; INSERT INTO g$f (K, Q, T, V) VALUES ('abcd\\', 'q', 5, 'v')",
    b"SET NAMES gbk; SELECT * FROM g$f WHERE K LIKE '\xbf\\%'",
    b"INSERT INTO \"g$f\" VALUES (\"a\\\", 'q', 5, 'v') -- \"",
}
# issue 33: the advisor's commands
sql |= {
    b"SHOW OBKV ADVICE",
    b"SHOW OBKV ADVICE FOR g$f",
    b"show obkv advice for `db`.`g$f`;",
    b"SHOW OBKV PARTITIONS FOR db.g$f",
    b"SHOW OBKV PARTITIONS FOR /*!99999 x. */ g$f",
    b"SHOW OBKV ADVICE FOR g$f extra",
    b"SELECT K FROM g$f WHERE K >= 'user1|000' AND K < 'user1|999'",
    b"SELECT K FROM g$f WHERE K = 'abc' AND K LIKE 'a%'",
}
for s in sorted(sql):
    for flags in (0x20, 0x21, 0x22, 0x23, 0x07, 0x3C, 0x61):
        put("sql_router", bytes([flags]) + s)
    for flags in (0x00, 0x01, 0x02, 0x10, 0x11, 0x21, 0x48, 0x86):
        put("state_reading", bytes([flags]) + s)
    put("ddl_rules", s)
    if s.lstrip().upper().startswith((b"INSERT", b"REPLACE")):
        for flags in (0, 1, 2, 8):
            put("sql_insert", bytes([flags]) + s)

# a text split after the thread's last shape: a text A, 0xFF, bytes B (other literals)
for s in sorted(sql):
    for flags in (0x00, 0x01, 0x10, 0x40, 0x84, 0xC2):
        put("shape_apply", bytes([flags]) + s + b"\xff" + b"xyz'\\123;\xe9 ")
        put("shape_apply", bytes([flags]) + s + b"\xff" + s)
        put("shape_reading", bytes([flags]) + s + b"\xff" + b"xyz'\\123;\xe9 ")
        put("shape_reading", bytes([flags]) + s + b"\xff" + s)

# a text that repeats the kept one but for its literal's body: dialect, form, session, then
# parts cut at 0xFF (bytes added to the head, the kept body, the new body, bytes added to the
# tail)
for flags in (0x00, 0x01, 0x12, 0x40, 0x64, 0xA0, 0xC0):
    for form in range(0, 0x80, 0x11):
        for session in (0x00, 0x03, 0x0C, 0x11):
            for old, new in ((b"abcd%", b"wxyz%"), (b"!", b"a"), (b"a_c%", b""), (b"user1|", b"a'b")):
                put("repeat_reading", bytes([flags, form, session]) + b"\xff" + old + b"\xff" + new + b"\xff")

# what a text does to the session (multiplexing)
for s in sorted(sql) + [
    b"SET sql_mode = 'ANSI_QUOTES', @@session.time_zone = '+00:00', LOCAL wait_timeout = -1",
    b"/*!40101 SET NAMES utf8mb4 COLLATE utf8mb4_bin */",
    b"SET @@sql_mode := DEFAULT; SELECT 1",
    b"SET @a = 1", b"SELECT LAST_INSERT_ID()", b"CREATE TEMPORARY TABLE t (a int)",
    b"KILL 42", b"kill hard query 7;", b"SELECT 1; KILL 5", b"EXECUTE IMMEDIATE 'KILL 5'", b"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    b"SET character_set_results = NULL, GLOBAL max_connections = 10",
    # (reported variables, one name=value a line)
    b"time_zone=+04:00\nsql_select_limit=9223372036854775807\nsql_mode=\nlc_time_names=de_DE",
    b"autocommit=OFF\n_nlj_batching_enabled=ON\ntx_isolation=READ-COMMITTED\ndefault=1",
]:
    for flags in (0x00, 0x01, 0x02, 0x08):
        put("session_state", bytes([flags]) + s)

# the advisor: a partitioning byte, then rowkeys separated by newlines
for keys in (b"ord|1\npay|2\nlog|3\nmsg|4", b"1750000000000|1\n1750000000001|2", b"\x00\xff\n\n" + b"k" * 300):
    for flags in (0, 1, 2, 3):
        put("advisor", bytes([flags]) + keys)

# issue 39: diagnostics statements, MariaDB's clearing rule, Basic credentials (a flags byte
# first: flavor, escapes, quotes, how much the proxy holds)
for st in (b"SHOW WARNINGS", b"show errors limit 2, 3;", b"SHOW COUNT(*) WARNINGS",
           b"SELECT @@warning_count, @@session.error_count AS e", b"GET DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT",
           b"GET CURRENT DIAGNOSTICS CONDITION 2 @e = MYSQL_ERRNO, @m = MESSAGE_TEXT, @t = TABLE_NAME",
           b"SELECT 1", b"SET @x = (SELECT a FROM t)", b"BEGIN; SHOW WARNINGS",
           b"GET / HTTP/1.1\r\nAuthorization: Basic cm9vdDo=\r\n\r\n"):
    for flags in (0x00, 0x22, 0x61, 0xe3, 0x05):
        put("diagnostics", bytes([flags]) + st)

# LOAD DATA: statement \0 format byte + file
loads = [
    b"LOAD DATA LOCAL INFILE '/tmp/x.csv' REPLACE INTO TABLE db.`g$f` CHARACTER SET binary FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' LINES STARTING BY 'x' TERMINATED BY '\\r\\n' IGNORE 1 LINES (K, @q, T, V) SET Q = UNHEX(@q)",
    b"LOAD DATA INFILE 'f' INTO TABLE g$f",
    b"LOAD DATA LOCAL INFILE 'f' INTO TABLE g$f (K, Q, V)",
]
files = [
    b"k1\tq\\tx\t\\N\nk2\t\\\\\tv\n\nk3",
    b"K,Q,V\r\n\"a,b\",\"say \"\"hi\"\"\",NULL\r\n\"x\ny\",\"NULL\",extra\r\nz",
    b"junk\nxxa,b\nno prefix\nyyxxc,d\n",
]
for st in loads:
    for i, fl in enumerate(files):
        for sel in (0x00, 0x19, 0x61, 0x39, 0x91):
            put("sql_load", st + b"\0" + bytes([sel]) + fl)

# client packets: a HandshakeResponse41, an SSLRequest, a COM_CHANGE_USER, framed streams
caps = 0x000FA68D | (1 << 24)
login = struct.pack("<IIB23x", caps, 1 << 24, 45) + b"root\0" + bytes([20]) + b"\x01" * 20 + b"db1\0" + b"mysql_native_password\0" + bytes([12, 3]) + b"_os" + bytes([5]) + b"Linux" + b"\x00" * 3
put("client_packets", login)
put("client_packets", struct.pack("<IIB23x", caps | 0x800, 1 << 24, 45))
put("client_packets", b"app\0" + bytes([20]) + b"\x02" * 20 + b"obkv\0" + struct.pack("<H", 45) + b"mysql_native_password\0")
put("client_packets", struct.pack("<I", len(login))[:3] + b"\x01" + login)
put("client_packets", b"\xfemysql_native_password\0" + b"0123456789abcdefghij\0")

# backend: greetings of MariaDB and seekdb, and responses as tracked packet lists
def greeting(version, caps_low, caps_high, ext=b"\0" * 4):
    return (b"\x0a" + version + b"\0" + struct.pack("<I", 7) + b"abcdefgh\0" + struct.pack("<H", caps_low)
            + b"\x2d" + struct.pack("<H", 2) + struct.pack("<H", caps_high) + b"\x15" + b"\0" * 6 + ext
            + b"ijklmnopqrst\0" + b"mysql_native_password\0")
put("backend_responses", greeting(b"5.5.5-10.11.19-MariaDB-0+deb12u1", 0xF7FE, 0x81FF, b"\x1d\x00\x00\x00"))
put("backend_responses", greeting(b"5.7.25", 0xF7FF, 0x00FF))
def packets(kind, *ps):
    out = bytes([kind])
    for p in ps:
        out += bytes([len(p)]) + p
    return out
ok = b"\x00\x01\x00\x02\x00\x00\x00"
eof = b"\xfe\x00\x00\x02\x00"
col = b"\x03def\x00\x00\x00\x01a\x00\x0c\x3f\x00\x01\x00\x00\x00\x08\x81\x00\x00\x00"
put("backend_responses", packets(0, ok))
put("backend_responses", packets(0, b"\x01", col, eof, b"\x011", b"\x012", eof))
put("backend_responses", packets(0x80, b"\x01", col, b"\x011", b"\xfe\x00\x00\x02\x00\x00\x00"))
put("backend_responses", packets(2, b"\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00", col, eof, col, eof))
put("backend_responses", packets(0, b"\xff\x15\x04#42000Access denied"))
put("backend_responses", packets(0, b"\xfb/tmp/file"))
# MariaDB: progress reports before an OK, and an execute whose metadata is cached (flags bits:
# 0x08 PROGRESS, 0x10 CACHE_METADATA, 0x80 DEPRECATE_EOF, low three the response kind)
progress = b"\xff\xff\xff\x01\x02\x10\x27\x00\x04copy"
put("backend_responses", packets(0x18, progress, progress, ok))
put("backend_responses", packets(0x99, b"\x02\x00", b"\x00\x00\x01", b"\xfe\x00\x00\x02\x00\x00\x00"))
put("backend_responses", packets(0x19, b"\x01\x00", eof, b"\x00\x00\x01", eof))
# session-state reports (flags bit 0x20 SESSION_TRACK), as MariaDB and seekdb send them: an OK
# after SET NAMES and USE, and a multi-statement text's end-of-rows OK (0xFE) with variables
names = (b"\x00\x00\x00\x02\x40\x00\x00\x00\x62\x00\x21\x18character_set_connection\x07utf8mb4"
         b"\x00\x1d\x14character_set_client\x07utf8mb4\x00\x1e\x15character_set_results\x07utf8mb4")
use = b"\x00\x00\x00\x02\x40\x00\x00\x00\x0b\x01\x09\x08probe_st"
put("backend_responses", packets(0x20, names))
put("backend_responses", packets(0x20, use))
put("backend_responses", packets(0xa0, b"\x01", col, b"\x011",
    b"\xfe\x00\x00\x22\x40\x00\x00\x00\x23\x00\x11\x09time_zone\x06+01:00\x00\x0a\x08sql_mode\x00\x02\x02\x011"))
# compressed frames: a knob byte (limit, split point, server leg), then frames as a peer sends them
import zlib
def cframe(seq, plain, stored=False):
    body = plain if stored else zlib.compress(plain)
    return struct.pack("<I", len(body))[:3] + bytes([seq]) + struct.pack("<I", 0 if stored else len(plain))[:3] + body
query = struct.pack("<I", 9)[:3] + b"\x00\x03SELECT 1"
put("compressed_frames", b"\x85" + cframe(0, query) + cframe(1, b"x" * 300) + cframe(2, query, True))
put("compressed_frames", b"\x07" + cframe(0, b"\x00" * 4000))
put("compressed_frames", b"\x10" + cframe(9, query, True) + b"\x00\x00\x00\x01\x00\x00\x00")
print("seeds written to", corpus)
