//! Acceptance 1: a corpus of statements gives the same bytes through the proxy as direct —
//! result rows, column metadata, warning counts, affected rows, last insert id, errors — with the
//! text protocol and, for the statements that can be prepared, the binary protocol.

use obkv_proxy::protocol::constants::com;
use obkv_proxy::protocol::response::ResponseKind;

use crate::common::proxy;
use crate::common::raw::{Frame, RawConn};
use crate::common::{shared, Kind, BOTH};

fn all_bytes_literal() -> String {
    let mut s = String::from("x'");
    for b in 0u8..=255 {
        s.push_str(&format!("{b:02X}"));
    }
    s.push('\'');
    s
}

/// The corpus. Deterministic statements only (no clocks, ids or randomness), valid MySQL for
/// both backends or an error that both report consistently.
fn corpus() -> Vec<Vec<u8>> {
    let all = all_bytes_literal();
    let mut v: Vec<Vec<u8>> = [
        // DDL
        "CREATE TABLE t_types (id INT PRIMARY KEY AUTO_INCREMENT, i TINYINT, si SMALLINT, bi BIGINT, ubi BIGINT UNSIGNED, f FLOAT, d DOUBLE, dec1 DECIMAL(20,6), dec2 DECIMAL(38,10), dt DATETIME(6), dte DATE, tm TIME(6), yr YEAR, ch CHAR(10), vc VARCHAR(100), vb VARBINARY(300), bl BLOB, tx TEXT, js JSON, bt BIT(8), en ENUM('a','b'), st SET('x','y'))",
        "CREATE TABLE kv (k VARBINARY(64) PRIMARY KEY, v LONGBLOB)",
        "CREATE TABLE acc (id INT PRIMARY KEY, owner VARCHAR(20), balance DECIMAL(12,2) NOT NULL DEFAULT 0)",
        "CREATE INDEX idx_owner ON acc (owner)",
        "ALTER TABLE acc ADD COLUMN note VARCHAR(30) NULL",
        // DML with affected rows and last insert id
        "INSERT INTO t_types (i, si, bi, ubi, f, d, dec1, dec2, dt, dte, tm, yr, ch, vc, vb, bl, tx, js, bt, en, st) VALUES (-5, 300, 1099511627776, 18446744073709551615, 1.5, 2.25, 123.456, -1.5, '2024-02-29 12:34:56.789012', '2024-12-31', '-12:00:00.5', 2024, 'ab', 'h\u{e9}llo', x'00FF', x'0102', 'text', '{\"a\": [1, 2]}', b'1010', 'b', 'x,y')",
        "INSERT INTO t_types (i) VALUES (NULL)",
        "INSERT INTO t_types (i, vc) VALUES (1, 'one'), (2, 'two'), (3, NULL)",
        "SELECT LAST_INSERT_ID()",
        "INSERT INTO acc (id, owner, balance) VALUES (1, 'ann', 100.50), (2, 'bob', 0), (3, 'cy', 7.25)",
        "UPDATE acc SET balance = balance + 1 WHERE balance > 1",
        "UPDATE acc SET balance = balance WHERE id = 2",
        "INSERT INTO acc (id, owner) VALUES (1, 'dup') ON DUPLICATE KEY UPDATE owner = 'ann2'",
        "REPLACE INTO acc (id, owner, balance) VALUES (3, 'cy', 8)",
        "DELETE FROM acc WHERE id = 99",
        // SELECT of every common type, NULLs, empty results
        "SELECT * FROM t_types ORDER BY id",
        "SELECT id, dec1, dec2, dt, tm FROM t_types WHERE id = 1",
        "SELECT * FROM t_types WHERE 1 = 0",
        "SELECT NULL, '', 0, -0.0, 1e300, 18446744073709551615",
        "SELECT CAST(12.345 AS DECIMAL(10,2)), CAST('2020-01-02 03:04:05.123456' AS DATETIME(6)), CAST('10:11:12' AS TIME)",
        "SELECT JSON_OBJECT('k', 1, 'arr', JSON_ARRAY(1, 'two', NULL)), JSON_EXTRACT('{\"a\": {\"b\": 5}}', '$.a.b')",
        "SELECT HEX(vb), LENGTH(bl), js, en, st FROM t_types ORDER BY id",
        "SELECT owner, balance FROM acc ORDER BY id",
        "SELECT owner, SUM(balance) AS s, COUNT(*) AS n FROM acc GROUP BY owner ORDER BY owner",
        "SELECT a.id, b.owner FROM acc a JOIN acc b ON a.id = b.id WHERE a.id IN (SELECT id FROM acc WHERE balance >= 0) ORDER BY a.id",
        "SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 3 ORDER BY x DESC LIMIT 2",
        "SELECT REPEAT('a', 100000) AS big",
        "SELECT DATE_ADD('2020-02-28', INTERVAL 1 DAY), DATEDIFF('2024-03-01', '2024-02-01'), YEAR('2024-06-01')",
        "SELECT CONCAT('a', NULL), COALESCE(NULL, 'b'), UPPER('abc'), SUBSTRING('hello', 2, 3), LPAD('7', 3, '0')",
        "SELECT 7 DIV 2, 7 % 3, 1 / 3, ROUND(2.555, 2), POW(2, 10)",
        "SELECT id FROM t_types WHERE vc IS NULL ORDER BY id",
        "SELECT COUNT(*) FROM t_types",
        "SELECT * FROM acc WHERE owner LIKE 'a%' ORDER BY id",
        // BLOB with all 256 byte values, written and read back
        &format!("INSERT INTO kv VALUES ('all', {all})"),
        "SELECT k, v, LENGTH(v) FROM kv",
        "SELECT v FROM kv WHERE k = 'all'",
        // warnings
        "SELECT CAST('abc' AS SIGNED)",
        "SHOW WARNINGS",
        "SELECT 1 / 0",
        "SET SESSION sql_mode = ''",
        "INSERT INTO acc (id, owner, balance) VALUES (10, 'this owner name is far too long', 1)",
        "SHOW WARNINGS",
        "SET SESSION sql_mode = DEFAULT",
        // errors
        "INSERT INTO acc (id, owner) VALUES (1, 'again')",
        "SELECT * FROM no_such_table",
        "SELEC 1",
        "DROP TABLE no_such_table",
        "SELECT no_such_column FROM acc",
        "",
        // SHOW
        "SHOW TABLES",
        "SHOW COLUMNS FROM acc",
        "SHOW CREATE TABLE kv",
        "SHOW DATABASES LIKE 'information_schema'",
        "SHOW VARIABLES LIKE 'autocommit'",
        "SHOW INDEX FROM acc",
        // session variables
        "SET @a = 42, @b = 'x'",
        "SELECT @a, @b, @nope",
        // transactions
        "BEGIN",
        "INSERT INTO acc (id, owner) VALUES (20, 'tx')",
        "SELECT COUNT(*) FROM acc",
        "ROLLBACK",
        "SELECT COUNT(*) FROM acc",
        "START TRANSACTION",
        "UPDATE acc SET note = 'committed' WHERE id = 1",
        "COMMIT",
        "SELECT note FROM acc WHERE id = 1",
        "SET autocommit = 0",
        "DELETE FROM acc WHERE id = 2",
        "ROLLBACK",
        "SET autocommit = 1",
        // multi-statement text
        "SELECT 1; SELECT 2, 'two'; INSERT INTO acc (id, owner) VALUES (30, 'multi'); SELECT owner FROM acc WHERE id = 30",
        "SELECT 1; SELECT * FROM no_such_table; SELECT 3",
        // DDL tail
        "TRUNCATE TABLE kv",
        "SELECT COUNT(*) FROM kv",
        "DROP INDEX idx_owner ON acc",
        "DROP TABLE t_types",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // non-UTF-8 statement bytes: a raw binary literal, as drivers send bytes values
    let mut raw = b"INSERT INTO kv VALUES ('raw', _binary'".to_vec();
    raw.extend_from_slice(&[
        0x00, 0xff, 0xfe, 0x80, b'\\', b'\\', b'\\', b'\'', 0x01, 0xc3, 0x28,
    ]);
    raw.extend_from_slice(b"')");
    v.push(raw);
    v.push(b"SELECT HEX(v), v FROM kv WHERE k = 'raw'".to_vec());
    v
}

/// A fresh database for one run; the direct and the proxied run use the same name so that
/// names inside results (SHOW TABLES headers, error texts) match.
fn fresh_db(addr: &str, db: &str) -> RawConn {
    let mut c = RawConn::connect(addr, "root", "", None).expect("direct connection");
    c.must(&format!("DROP DATABASE IF EXISTS {db}"));
    c.must(&format!("CREATE DATABASE {db}"));
    c.quit();
    let mut c = RawConn::connect(addr, "root", "", None).expect("connect");
    let mut cmd = vec![com::INIT_DB];
    cmd.extend_from_slice(db.as_bytes());
    let r = c.command(&cmd, ResponseKind::Single).expect("init db");
    assert_eq!(r[0].1[0], 0x00, "USE {db} failed");
    c
}

fn run_text(addr: &str) -> Vec<Vec<Frame>> {
    let mut c = fresh_db(addr, "obkv_corpus_text");
    corpus()
        .iter()
        .map(|s| c.query(s).expect("answered"))
        .collect()
}

fn show(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|(s, p)| {
            format!(
                "  #{s} {:?}",
                String::from_utf8_lossy(&p[..p.len().min(120)])
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_same(
    kind: Kind,
    what: &str,
    stmts: &[Vec<u8>],
    direct: &[Vec<Frame>],
    proxied: &[Vec<Frame>],
) {
    assert_eq!(direct.len(), proxied.len());
    for (i, (d, p)) in direct.iter().zip(proxied).enumerate() {
        assert!(
            d == p,
            "{} {what}: statement {i} {:?} differs\ndirect:\n{}\nproxy:\n{}",
            kind.name(),
            String::from_utf8_lossy(&stmts[i]),
            show(d),
            show(p)
        );
    }
}

#[test]
fn text_protocol_corpus_is_byte_identical() {
    let stmts = corpus();
    assert!(stmts.len() >= 60, "corpus has {} statements", stmts.len());
    for kind in BOTH {
        let backend = shared(kind);
        let direct = run_text(&backend.addr);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let proxied = run_text(&p.addr);
        assert_same(kind, "text", &stmts, &direct, &proxied);
        // the corpus exercised what it claims to
        let flat: Vec<&Frame> = direct.iter().flatten().collect();
        assert!(
            flat.iter().any(|(_, f)| f.first() == Some(&0xff)),
            "no errors in corpus"
        );
        assert!(
            direct.iter().filter(|r| r.len() > 3).count() > 20,
            "too few result sets"
        );
    }
}

fn stmt_execute(id: u32) -> Vec<u8> {
    let mut p = vec![com::STMT_EXECUTE];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes());
    p
}

/// Prepares and executes every corpus statement that can be prepared; returns the frames of
/// both steps per statement.
fn run_binary(addr: &str) -> Vec<Vec<Frame>> {
    let mut c = fresh_db(addr, "obkv_corpus_binary");
    let mut out = Vec::new();
    for s in corpus() {
        let mut cmd = vec![com::STMT_PREPARE];
        cmd.extend_from_slice(&s);
        let prep = c
            .command(&cmd, ResponseKind::Prepare)
            .expect("prepare answered");
        let mut frames = prep.clone();
        if prep[0].1[0] == 0x00 {
            let id = u32::from_le_bytes([prep[0].1[1], prep[0].1[2], prep[0].1[3], prep[0].1[4]]);
            let params = u16::from_le_bytes([prep[0].1[7], prep[0].1[8]]);
            if params == 0 {
                frames.extend(
                    c.command(&stmt_execute(id), ResponseKind::Execute)
                        .expect("execute answered"),
                );
            }
            let mut close = vec![com::STMT_CLOSE];
            close.extend_from_slice(&id.to_le_bytes());
            c.write_frame(0, &close).expect("close sent");
            // the id is the backend's counter, which other sessions move: compare the rest
            frames[0].1[1..5].fill(0);
        }
        out.push(frames);
    }
    out
}

#[test]
fn binary_protocol_corpus_is_byte_identical() {
    let stmts = corpus();
    for kind in BOTH {
        let backend = shared(kind);
        let direct = run_binary(&backend.addr);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let proxied = run_binary(&p.addr);
        assert_same(kind, "binary", &stmts, &direct, &proxied);
        let executed = direct
            .iter()
            .filter(|f| f.len() > 1 && f[0].1[0] == 0)
            .count();
        assert!(
            executed >= 40,
            "{}: only {executed} statements were prepared",
            kind.name()
        );
    }
}
