//! The write rules against both real backends (text protocol): each cell rule refuses with its
//! code and leaves the table as it was, and accepts the corrected statement; T filled in where
//! an INSERT leaves it out; the one-partition transaction guard with two interleaving sessions;
//! a refused statement ends a multi-statement text exactly where the backend's own error would.

use std::time::{SystemTime, UNIX_EPOCH};

use obkv_proxy::hbase::partition::Partitioning;

use obkv_proxy::protocol::response::ResponseKind;

use crate::common::proxy::{self, InProcessProxy};
use crate::common::raw::{err_of, RawConn};
use crate::common::{shared, Kind, BOTH};
use crate::prefix::{execute_packet, prepare, send_long_data, P};

const N: usize = 4;
const PARTS: u32 = 13;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

fn ok(c: &mut RawConn, sql: &str) -> u16 {
    c.warnings_or_error(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

fn refused(c: &mut RawConn, sql: &str) -> (u16, String) {
    match c.warnings_or_error(sql) {
        Err(e) => e,
        Ok(w) => panic!("{sql}: accepted ({w} warnings)"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

struct Fixture {
    proxy: InProcessProxy,
    backend: String,
    db: String,
    /// `{tag}$f` and `{tag}$g`: two families of one group, KEY(K_PREFIX) n = 4, 13 partitions.
    table: String,
    sibling: String,
    /// `{tag}b$f`: V is a longblob (bounded by hbase.cell_limit_bytes).
    blob: String,
}

const CELL_LIMIT: u64 = 1000;

fn fixture(kind: Kind, tag: &str) -> Fixture {
    fixture_with(kind, tag, |_| {})
}

fn fixture_with(
    kind: Kind,
    tag: &str,
    tweak: impl FnOnce(&mut obkv_proxy::config::Config),
) -> Fixture {
    let backend = shared(kind).addr.clone();
    let mut cfg = proxy::config_for(&backend);
    cfg.hbase.multiple_families = true;
    cfg.hbase.cell_limit_bytes = CELL_LIMIT;
    tweak(&mut cfg);
    let proxy = proxy::start(cfg);
    let db = format!("wr_{tag}");
    let mut c = RawConn::connect(&proxy.addr, "root", "", None).expect("proxy");
    ok(&mut c, &format!("DROP DATABASE IF EXISTS {db}"));
    ok(&mut c, &format!("CREATE DATABASE {db}"));
    ok(&mut c, &format!("USE {db}"));
    let def = |name: &str, group: &str, v: &str| {
        format!(
            "CREATE TABLE {name} (K varbinary(16), Q varbinary(8), T bigint, V {v} NOT NULL, \
             K_PREFIX varbinary(16) GENERATED ALWAYS AS (substring(K, 1, {N})), PRIMARY KEY (K, Q, T)) \
             TABLEGROUP = {group} PARTITION BY KEY(K_PREFIX) PARTITIONS {PARTS}"
        )
    };
    for group in [tag.to_string(), format!("{tag}b")] {
        ok(&mut c, &format!("DROP TABLEGROUP IF EXISTS {group}"));
        ok(&mut c, &format!("CREATE TABLEGROUP {group}"));
    }
    ok(&mut c, &def(&format!("{tag}$f"), tag, "varbinary(32)"));
    ok(&mut c, &def(&format!("{tag}$g"), tag, "varbinary(32)"));
    ok(
        &mut c,
        &def(&format!("{tag}b$f"), &format!("{tag}b"), "longblob"),
    );
    Fixture {
        proxy,
        backend,
        table: format!("{tag}$f"),
        sibling: format!("{tag}$g"),
        blob: format!("{tag}b$f"),
        db,
    }
}

impl Fixture {
    fn via(&self) -> RawConn {
        RawConn::connect(&self.proxy.addr, "root", "", Some(&self.db)).expect("proxy")
    }

    /// The table's rowkeys in order, read directly on the backend.
    fn rowkeys(&self, table: &str) -> Vec<Vec<u8>> {
        self.cells(table)
            .into_iter()
            .map(|r| r[0].clone().unwrap_or_default())
            .collect()
    }

    /// The table's cells, read directly on the backend.
    fn cells(&self, table: &str) -> Vec<Vec<Option<Vec<u8>>>> {
        self.direct(&format!("SELECT K, Q, T, V FROM {table} ORDER BY K, Q, T"))
    }

    /// A query's rows, read directly on the backend.
    fn direct(&self, sql: &str) -> Vec<Vec<Option<Vec<u8>>>> {
        let mut d = RawConn::connect(&self.backend, "root", "", Some(&self.db)).expect("direct");
        d.rows(sql)
    }
}

/// The model's partition of a rowkey (OceanBase's placement, which the guard uses everywhere).
fn partition(k: &[u8]) -> u32 {
    Partitioning::Key {
        prefix_len: Some(N),
        partitions: PARTS,
    }
    .partition_of(k)
    .expect("KEY places every key")
}

/// Two 5-byte rowkeys of different partitions, and a second key of the first one's prefix.
fn keys() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let a = b"aaaa1".to_vec();
    let b = (b'b'..=b'z')
        .map(|c| vec![c, c, c, c, b'1'])
        .find(|k| partition(k) != partition(&a))
        .expect("another partition");
    (a, b, b"aaaa2".to_vec())
}

#[test]
fn each_cell_rule_refuses_and_accepts() {
    for kind in BOTH {
        let tag = format!("c{}", kind.name());
        let f = fixture(kind, &tag);
        let mut c = f.via();
        let t = f.table.clone();
        let now = -now_ms();
        // (rule, refused statement, its code, the corrected statement)
        let cases: Vec<(&str, String, u16, String)> = vec![
            ("C1 empty K", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {now}, 'v')"), 1292,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v')")),
            ("C1 NULL K", format!("INSERT INTO {t} (K, Q, T, V) VALUES (NULL, 'q', {now}, 'v')"), 1048,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k2', 'q', {now}, 'v')")),
            ("C2 K", format!("INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v')", hex(&[7; 17])), 1406,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v')", hex(&[7; 16]))),
            ("C2 Q", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k3', '123456789', {now}, 'v')"), 1406,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k3', '12345678', {now}, 'v')")),
            ("C2 V", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k4', 'q', {now}, '{}')", "v".repeat(33)), 1406,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k4', 'q', {now}, '{}')", "v".repeat(32))),
            ("C2 blob V", format!("INSERT INTO {} (K, Q, T, V) VALUES ('k5', 'q', {now}, X'{}')", f.blob, hex(&vec![1; CELL_LIMIT as usize + 1])), 1406,
             format!("INSERT INTO {} (K, Q, T, V) VALUES ('k5', 'q', {now}, X'{}')", f.blob, hex(&vec![1; CELL_LIMIT as usize]))),
            ("C3 NULL V", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k6', 'q', {now}, NULL)"), 1048,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k6', 'q', {now}, '')")),
            ("C4 T sign", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k7', 'q', {}, 'v')", -now), 1292,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k7', 'q', {now}, 'v')")),
            // T as a string of digits: read as the integer the backend stores (issue 31)
            ("C4 T sign as a string", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k7s', 'q', '{}', 'v')", -now), 1292,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k7s', 'q', '{now}', 'v')")),
            // the prefix column given another value than the rowkey's prefix; the rowkey's own
            // prefix (what a backup carries) is left to the backend
            ("C6 prefix column", format!("INSERT INTO {t} (K, Q, T, V, K_PREFIX) VALUES ('k8', 'q', {now}, 'v', 'zz')"), 3105,
             format!("INSERT INTO {t} (K, Q, T, V, K_PREFIX) VALUES ('k8', 'q', {now}, 'v', 'k8')")),
            ("C7 UPDATE of T", format!("UPDATE {t} SET T = T - 1 WHERE K = 'k1'"), 1235,
             format!("UPDATE {t} SET V = 'w' WHERE K = 'k1'")),
            ("C7 UPDATE of K", format!("UPDATE {t} SET K = 'k9' WHERE K = 'k1'"), 1235,
             format!("UPDATE {t} SET V = 'x' WHERE K = 'k1'")),
            ("C3 UPDATE to NULL", format!("UPDATE {t} SET V = NULL WHERE K = 'k1'"), 1048,
             format!("UPDATE {t} SET V = 'y' WHERE K = 'k1'")),
            ("C7 ON DUPLICATE KEY UPDATE T", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v') ON DUPLICATE KEY UPDATE T = {now} - 1"), 1235,
             format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v') ON DUPLICATE KEY UPDATE V = 'z'")),
        ];
        for (rule, bad, code, good) in &cases {
            let table = if rule.contains("blob") { &f.blob } else { &t };
            let before = f.cells(table);
            let (got, message) = refused(&mut c, bad);
            assert_eq!(got, *code, "{}: {rule}: {message}", kind.name());
            assert!(message.contains("OBKV-HBase rule"), "{rule}: {message}");
            if rule.starts_with("C4") {
                // both ways out: the value in the default convention, or the other convention
                assert!(
                    message.contains(&format!("write T = -epoch_ms (here {now})"))
                        && message.contains(r#"set hbase.timestamp = "ms""#),
                    "{message}"
                );
            }
            assert_eq!(
                f.cells(table),
                before,
                "{}: {rule}: refused yet changed",
                kind.name()
            );
            ok(&mut c, good);
        }
        // every corrected statement wrote: 9 distinct rows in t, 1 in the blob table
        assert_eq!(f.cells(&t).len(), 9, "{}", kind.name());
        assert_eq!(f.cells(&f.blob).len(), 1);
        // a T in seconds is accepted with a warning the client can read
        ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('s1', 'q', -1763700000, 'v')"),
        );
        let warnings = c.rows("SHOW WARNINGS");
        assert!(
            warnings.iter().any(|w| {
                String::from_utf8_lossy(w[2].as_deref().unwrap_or_default())
                    .contains("looks like seconds")
            }),
            "{}: {warnings:?}",
            kind.name()
        );
        // a value the proxy cannot see is forwarded with a note
        ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('e1', 'q', {now}, CONCAT('a', 'b'))"),
        );
        let notes = c.rows("SHOW WARNINGS");
        assert!(
            notes.iter().any(
                |w| String::from_utf8_lossy(w[2].as_deref().unwrap_or_default())
                    .contains("not checked")
            ),
            "{notes:?}"
        );
    }
}

/// The proxy's own warnings and notes about a write (C5, C8, X3) are counted in the OK packet
/// the client gets, with the backend's: drivers read the count there, and the mariadb CLI
/// prints it ("1 row affected, 1 warning").
#[test]
fn the_proxys_warnings_are_counted_in_the_ok_packet() {
    let (a, b, _) = keys();
    for kind in BOTH {
        let name = kind.name();
        let tag = format!("w{name}");
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        // a clean write: nothing added
        let w = ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('ok1', 'q', {now}, 'v')"),
        );
        assert_eq!(w, 0, "{name}");
        // C5: a T in seconds
        let w = ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('s1', 'q', -1763700000, 'v')"),
        );
        assert!(w >= 1, "{name}: C5 counted {w}");
        assert_eq!(c.rows("SHOW WARNINGS").len(), usize::from(w), "{name}");
        // C8: a value the proxy cannot see (a note)
        let w = ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('e1', 'q', {now}, CONCAT('a', 'b'))"),
        );
        assert!(w >= 1, "{name}: C8 counted {w}");
        assert_eq!(c.rows("SHOW WARNINGS").len(), usize::from(w), "{name}");
        // X3: one statement's rows in two partitions, and a C5 in it
        let w = ok(
            &mut c,
            &format!(
                "INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v'), (X'{}', 'q', -1763700000, 'v')",
                hex(&a),
                hex(&b)
            ),
        );
        assert!(w >= 2, "{name}: X3 and C5 counted {w}");
        assert_eq!(c.rows("SHOW WARNINGS").len(), usize::from(w), "{name}");
        // prepared: the execution's OK counts the C5 of the values it binds
        let (id, _) = prepare(
            &mut c,
            format!("INSERT INTO {t} (K, Q, T, V) VALUES (?, 'q', ?, 'v')").as_bytes(),
        )
        .expect("prepared");
        let frames = c
            .command(
                &execute_packet(
                    id,
                    false,
                    &[P::Str(b"p1".to_vec()), P::Int(-1_763_700_000)],
                    true,
                    &[],
                ),
                ResponseKind::Execute,
            )
            .expect("executed");
        let w = obkv_proxy::protocol::packets::parse_ok(&frames[0].1)
            .unwrap_or_else(|| panic!("{name}: not an OK: {frames:?}"))
            .warnings;
        assert!(w >= 1, "{name}: prepared C5 counted {w}");
        // the mariadb CLI reads the count from the OK packet
        let (done, out, err) = crate::common::mariadb_cli(
            &f.proxy.addr,
            &["-uroot", "-vvv", &f.db],
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('cli1', 'q', -1763700000, 'v');\n"),
        );
        assert!(done, "{name}: {err}");
        let counted = out
            .lines()
            .find_map(|l| l.strip_prefix("Query OK, 1 row affected, "))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse::<u32>().ok());
        assert!(
            counted >= Some(1),
            "{name}: the CLI shows no warning: {out}"
        );
    }
}

const OTHER: &str = "SELECT k, v FROM other ORDER BY k";

/// Writes in shapes beyond the single-table statement: joins, subqueries, WITH, explicit
/// partitions, index hints, `:=`, INSERT … SELECT … ON DUPLICATE KEY UPDATE, and the wrappers
/// that run another statement (MariaDB's ANALYZE and SET STATEMENT … FOR). Each refused one
/// leaves every table as it was; the same shapes writing what the rules allow run.
#[test]
fn every_shape_of_a_write_is_checked() {
    for kind in BOTH {
        let tag = format!("s{}", kind.name());
        let f = fixture(kind, &tag);
        let mut c = f.via();
        let t = f.table.clone();
        let now = -now_ms();
        let long = "v".repeat(33);
        ok(
            &mut c,
            "CREATE TABLE other (k varbinary(16), v varbinary(32))",
        );
        ok(&mut c, "INSERT INTO other VALUES ('k1', 'from other')");
        for k in ["k1", "k2"] {
            ok(
                &mut c,
                &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('{k}', 'q', {now}, 'v')"),
            );
        }
        let mariadb = kind == Kind::MariaDb;
        // (what, refused statement, its code, on this backend)
        let cases: Vec<(&str, String, u16, bool)> = vec![
            ("join sets K", format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.K = 'zz'"), 1235, true),
            ("comma join sets T", format!("UPDATE {t} a, other b SET a.T = 5 WHERE a.K = b.k"), 1235, true),
            ("unqualified K in a join", format!("UPDATE other b JOIN {t} a ON a.K = b.k SET K = 'zz'"), 1235, true),
            ("join sets V NULL", format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.V = NULL"), 1048, true),
            ("join sets V too long", format!("UPDATE {t} AS a INNER JOIN other AS b ON a.K = b.k SET b.v = 'x', a.V = '{long}'"), 1406, true),
            ("join sets the prefix column", format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.K_PREFIX = 'x'"), 3105, true),
            ("subquery sets K", format!("UPDATE {t} SET K = 'yy' WHERE K IN (SELECT k FROM other)"), 1235, true),
            ("subquery sets V NULL", format!("UPDATE {t} SET V = NULL WHERE K IN (SELECT k FROM other)"), 1048, true),
            ("partitions named", format!("UPDATE {t} PARTITION (p0, p1) SET T = 9"), 1235, true),
            ("index hint", format!("UPDATE {t} USE INDEX (PRIMARY) SET Q = 'x' WHERE K = 'k1'"), 1235, true),
            ("`:=` in UPDATE", format!("UPDATE {t} SET K := 'w' WHERE K = 'k1'"), 1235, true),
            ("`:=` in INSERT SET", format!("INSERT INTO {t} SET K := '', Q := 'q', T := {now}, V := 'v'"), 1292, true),
            ("`:=` in ON DUPLICATE KEY UPDATE", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v') ON DUPLICATE KEY UPDATE K := 'dup'"), 1235, true),
            ("ON DUPLICATE KEY UPDATE V NULL", format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v') ON DUPLICATE KEY UPDATE V = NULL"), 1048, true),
            ("INSERT … SELECT … ON DUPLICATE KEY UPDATE K", format!("INSERT INTO {t} (K, Q, T, V) SELECT k, 'q', {now}, v FROM other ON DUPLICATE KEY UPDATE K = 'dupk'"), 1235, true),
            ("ANALYZE UPDATE", format!("ANALYZE UPDATE {t} SET K = 'an' WHERE K = 'k1'"), 1235, mariadb),
            ("ANALYZE INSERT", format!("ANALYZE INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {now}, 'v')"), 1292, mariadb),
            ("ANALYZE FORMAT=JSON REPLACE", format!("ANALYZE FORMAT=JSON REPLACE INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {}, 'v')", -now), 1292, mariadb),
            ("SET STATEMENT … FOR INSERT", format!("SET STATEMENT sql_mode = '' FOR INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, '{long}')"), 1406, mariadb),
            ("SET STATEMENT … FOR ANALYZE UPDATE … JOIN", format!("SET STATEMENT max_statement_time = 0 FOR ANALYZE UPDATE {t} a JOIN other b ON a.K = b.k SET a.T = 1"), 1235, mariadb),
            ("SET STATEMENT … FOR CREATE TABLE", format!("SET STATEMENT max_statement_time = 0 FOR CREATE TABLE {tag}$bad (a int)"), 1235, mariadb),
            ("LOAD XML", format!("LOAD XML LOCAL INFILE '/nonexistent/cells.xml' INTO TABLE {t}"), 1064, mariadb),
            ("WITH … UPDATE", format!("WITH c AS (SELECT 'k1' AS k) UPDATE {t} SET K = 'cte' WHERE K IN (SELECT k FROM c)"), 1235, !mariadb),
        ];
        for (what, bad, code, here) in &cases {
            if !here {
                continue;
            }
            let before = (f.cells(&t), f.direct(OTHER));
            let (got, message) = refused(&mut c, bad);
            assert_eq!(got, *code, "{}: {what}: {message}", kind.name());
            assert!(
                message.contains("OBKV-HBase rule")
                    || message.contains("statement of its own")
                    || message.contains("cannot read"),
                "{what}: {message}"
            );
            assert_eq!(
                (f.cells(&t), f.direct(OTHER)),
                before,
                "{}: {what}: refused yet changed",
                kind.name()
            );
        }
        let tables = c.rows(&format!("SHOW TABLES LIKE '{tag}$bad'"));
        assert!(tables.is_empty(), "{}: {tables:?}", kind.name());
        // a view that could take writes on the HBase table is not made; a read-only one is,
        // and the backend itself refuses writes through it
        let (code, message) = refused(
            &mut c,
            &format!("CREATE ALGORITHM = TEMPTABLE VIEW {tag}_v AS SELECT * FROM {t}"),
        );
        assert_eq!(code, 1235, "{message}");
        assert!(c.rows(&format!("SHOW TABLES LIKE '{tag}_v'")).is_empty());
        ok(
            &mut c,
            &format!("CREATE VIEW {tag}_r AS SELECT K, COUNT(*) AS n FROM {t} GROUP BY K"),
        );
        let (code, _) = refused(&mut c, &format!("DELETE FROM {tag}_r"));
        assert_eq!(code, 1288, "{}", kind.name());
        // the same shapes writing what the rules allow run
        let mut allowed = vec![
            format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.V = b.v"),
            format!("UPDATE other b JOIN {t} a ON a.K = b.k SET b.v = a.Q"),
            // OceanBase reads `:=` only in expressions; MariaDB in a SET list too
            format!(
                "UPDATE {t} SET V {} 'sub' WHERE K IN (SELECT 'k2')",
                if mariadb { ":=" } else { "=" }
            ),
            format!("INSERT INTO {t} (K, Q, T, V) SELECT k, 'q2', {now}, v FROM other ON DUPLICATE KEY UPDATE V = 'dup'"),
        ];
        if mariadb {
            allowed.push(format!("ANALYZE UPDATE {t} SET V = 'an' WHERE K = 'k2'"));
            allowed.push(format!("SET STATEMENT max_statement_time = 0 FOR INSERT INTO {t} (K, Q, T, V) VALUES ('k3', 'q', {now}, 'ss')"));
        } else {
            allowed.push(format!("WITH c AS (SELECT 'k2' AS k) UPDATE {t} SET V = 'cte' WHERE K IN (SELECT k FROM c)"));
        }
        for sql in &allowed {
            ok(&mut c, sql);
        }
        let cells = f.cells(&t);
        let v_of = |k: &[u8], q: &[u8]| {
            cells
                .iter()
                .find(|r| r[0].as_deref() == Some(k) && r[1].as_deref() == Some(q))
                .and_then(|r| r[3].clone())
        };
        assert_eq!(v_of(b"k1", b"q").as_deref(), Some(b"from other".as_slice()));
        // other.v was set from the HBase table's Q before the INSERT … SELECT read it
        assert_eq!(v_of(b"k1", b"q2").as_deref(), Some(b"q".as_slice()));
        let k2 = if mariadb { b"an".as_slice() } else { b"cte" };
        assert_eq!(v_of(b"k2", b"q").as_deref(), Some(k2), "{}", kind.name());
        assert_eq!(f.direct(OTHER)[0][1].as_deref(), Some(b"q".as_slice()));
        if mariadb {
            assert_eq!(v_of(b"k3", b"q").as_deref(), Some(b"ss".as_slice()));
        }
        // under ANSI_QUOTES (which the backend does not report) "…" is a name: checked too
        let mut q = f.via();
        ok(
            &mut q,
            "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')",
        );
        for sql in [
            format!("INSERT INTO \"{t}\" (K, Q, T, V) VALUES ('', 'q', {now}, 'v')"),
            format!("UPDATE \"{t}\" SET \"T\" = 1 WHERE K = 'k1'"),
        ] {
            let before = f.cells(&t);
            let (code, message) = refused(&mut q, &sql);
            assert_eq!(code, 1064, "{}: {sql}: {message}", kind.name());
            assert_eq!(f.cells(&t), before, "{sql}");
        }
        ok(
            &mut q,
            &format!("INSERT INTO \"{t}\" (K, Q, T, V) VALUES ('k4', 'q', {now}, 'ansi')"),
        );
        assert_eq!(
            f.cells(&t)
                .iter()
                .filter(|r| r[3].as_deref() == Some(b"ansi"))
                .count(),
            1
        );
        // inside a transaction such a statement cannot be placed: X2, nothing changed
        ok(&mut c, "BEGIN");
        let before = f.cells(&t);
        let (code, message) = refused(
            &mut c,
            &format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.V = 'tx'"),
        );
        assert_eq!(code, 1235, "{message}");
        assert!(message.contains("X2"), "{message}");
        ok(&mut c, "ROLLBACK");
        assert_eq!(f.cells(&t), before);
        // prepared: the V a join assigns from a placeholder is checked at each execution
        let (id, params) = prepare(
            &mut c,
            format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.V = ?").as_bytes(),
        )
        .expect("prepared");
        assert_eq!(params, 1);
        let (code, message) =
            execute(&mut c, &execute_packet(id, false, &[P::Null], true, &[])).expect_err("NULL V");
        assert_eq!(code, 1048, "{}: {message}", kind.name());
        assert!(message.contains("OBKV-HBase rule C3"), "{message}");
        assert_eq!(f.cells(&t), before);
        execute(
            &mut c,
            &execute_packet(id, false, &[P::Str(b"bound".to_vec())], true, &[]),
        )
        .expect("a good V");
        let cells = f.cells(&t);
        assert!(
            cells
                .iter()
                .any(|r| r[0].as_deref() == Some(b"k1") && r[3].as_deref() == Some(b"bound")),
            "{cells:?}"
        );
        // a prepared join that updates two HBase tables: each V against its own table's limit
        // (the blob table's is the proxy's cell limit, which the backend does not know)
        let blob = &f.blob;
        ok(
            &mut c,
            &format!("INSERT INTO {blob} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'b')"),
        );
        let (id, params) = prepare(
            &mut c,
            format!("UPDATE {t} a JOIN {blob} b ON a.K = b.K SET a.V = ?, b.V = ?").as_bytes(),
        )
        .expect("prepared");
        assert_eq!(params, 2);
        let (before, before_blob) = (f.cells(&t), f.cells(blob));
        let too_long = vec![7u8; CELL_LIMIT as usize + 1];
        let (code, message) = execute(
            &mut c,
            &execute_packet(
                id,
                false,
                &[P::Str(b"a".to_vec()), P::Str(too_long.clone())],
                true,
                &[],
            ),
        )
        .expect_err("a blob V past the cell limit");
        assert_eq!(code, 1406, "{}: {message}", kind.name());
        assert!(message.contains("OBKV-HBase rule C2"), "{message}");
        assert_eq!((f.cells(&t), f.cells(blob)), (before, before_blob));
        let fits = vec![7u8; CELL_LIMIT as usize];
        execute(
            &mut c,
            &execute_packet(
                id,
                false,
                &[P::Str(b"a".to_vec()), P::Str(fits.clone())],
                true,
                &[],
            ),
        )
        .expect("both within their limits");
        assert!(f
            .cells(blob)
            .iter()
            .any(|r| r[0].as_deref() == Some(b"k1") && r[3].as_deref() == Some(&fits[..])));
        // a prepared ON DUPLICATE KEY UPDATE V = ?: the V bound is checked at each execution
        let (id, _) = prepare(
            &mut c,
            format!(
                "INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v') ON DUPLICATE KEY UPDATE V = ?"
            )
            .as_bytes(),
        )
        .expect("prepared");
        let before = f.cells(&t);
        let (code, message) = execute(&mut c, &execute_packet(id, false, &[P::Null], true, &[]))
            .expect_err("NULL V on a duplicate");
        assert_eq!(code, 1048, "{}: {message}", kind.name());
        assert!(message.contains("OBKV-HBase rule C3"), "{message}");
        assert_eq!(f.cells(&t), before);
        execute(
            &mut c,
            &execute_packet(id, false, &[P::Str(b"odku".to_vec())], true, &[]),
        )
        .expect("a good V");
        // and a prepared join assigning K is refused at its prepare
        let e = prepare(
            &mut c,
            format!("UPDATE {t} a JOIN other b ON a.K = b.k SET a.K = ?").as_bytes(),
        )
        .expect_err("C7 at prepare");
        assert_eq!(e.0, 1235, "{e:?}");
    }
}

/// A proxy that has not read an HBase table's definition does not read it inside the user's
/// transaction (its state never joins one): a write there is refused, not taken for a write
/// to a plain table; once the definition is known the rules apply as always.
#[test]
fn a_cold_proxy_refuses_what_it_cannot_check_inside_a_transaction() {
    for kind in BOTH {
        let tag = format!("k{}", kind.name());
        let f = fixture(kind, &tag);
        let t = f.table.clone();
        let now = -now_ms();
        // a second proxy in front of the same backend: nothing cached
        let cold = proxy::start(proxy::config_for(&f.backend));
        let mut c = RawConn::connect(&cold.addr, "root", "", Some(&f.db)).expect("cold proxy");
        ok(&mut c, "BEGIN");
        let (code, message) = refused(
            &mut c,
            &format!(
                "INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {}, 'v')",
                -now
            ),
        );
        assert_eq!(code, 1235, "{}: {message}", kind.name());
        assert!(message.contains("definition"), "{message}");
        // a read is forwarded (not rewritten)
        assert_eq!(
            c.rows(&format!("SELECT COUNT(*) FROM {t} WHERE K LIKE 'abcd%'"))
                .len(),
            1
        );
        ok(&mut c, "ROLLBACK");
        assert!(f.cells(&t).is_empty(), "{}", kind.name());
        // outside a transaction the definition is read; then the rules apply inside one too
        ok(&mut c, &format!("SELECT COUNT(*) FROM {t} WHERE K = 'x'"));
        ok(&mut c, "BEGIN");
        let (code, message) = refused(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {now}, 'v')"),
        );
        assert_eq!(code, 1292, "{}: {message}", kind.name());
        ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v')"),
        );
        ok(&mut c, "COMMIT");
        assert_eq!(f.cells(&t).len(), 1, "{}", kind.name());
    }
}

#[test]
fn t_is_filled_in_the_convention() {
    for kind in BOTH {
        let tag = format!("t{}", kind.name());
        let f = fixture(kind, &tag);
        let mut c = f.via();
        let before = now_ms();
        ok(
            &mut c,
            &format!(
                "INSERT INTO {} (K, Q, V) VALUES ('r1', 'a', 'v'), ('r1', 'b', 'w')",
                f.table
            ),
        );
        ok(
            &mut c,
            &format!("INSERT INTO {} SET K = 'r2', Q = 'a', V = 'v'", f.table),
        );
        let after = now_ms();
        let rows = f.cells(&f.table);
        assert_eq!(rows.len(), 3, "{}", kind.name());
        let ts: Vec<i64> = rows
            .iter()
            .map(|r| {
                String::from_utf8_lossy(r[2].as_deref().unwrap_or_default())
                    .parse()
                    .expect("T")
            })
            .collect();
        for t in &ts {
            // negated-ms: T = -epoch_ms
            assert!(
                (-after..=-before).contains(t),
                "{}: T = {t} not in [{}, {}]",
                kind.name(),
                -after,
                -before
            );
        }
        // one value per statement
        assert_eq!(ts[0], ts[1], "{}", kind.name());
    }
}

#[test]
fn a_transaction_stays_in_one_partition() {
    transaction_in_one_partition(false);
}

/// The same with multiplexing on (issue 43): the guard's partition ties the transaction to
/// one backend connection, and every refusal holds.
#[test]
fn a_transaction_stays_in_one_partition_multiplexed() {
    transaction_in_one_partition(true);
}

fn transaction_in_one_partition(multiplexed: bool) {
    let (a, b, a2) = keys();
    for kind in BOTH {
        let tag = format!("{}{}", if multiplexed { "mx" } else { "x" }, kind.name());
        let f = fixture_with(kind, &tag, |cfg| {
            if multiplexed {
                cfg.multiplex.mode = obkv_proxy::config::MultiplexMode::Transaction;
                cfg.multiplex.max_backend_connections = 2;
            }
        });
        let t = &f.table;
        let now = -now_ms();
        let ins = |k: &[u8], q: &str| {
            format!(
                "INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', '{q}', {now}, 'v')",
                hex(k)
            )
        };
        let (mut s1, mut s2) = (f.via(), f.via());
        ok(&mut s1, "BEGIN");
        ok(&mut s2, "START TRANSACTION");
        ok(&mut s1, &ins(&a, "s1"));
        ok(&mut s2, &ins(&b, "s2"));
        // a second partition: refused before the backend sees it, naming both
        let (code, msg) = refused(&mut s1, &ins(&b, "s1"));
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        assert!(
            msg.contains(&format!("p{}", partition(&a)))
                && msg.contains(&format!("p{}", partition(&b))),
            "{msg}"
        );
        assert!(msg.contains("'aaaa1'"), "{msg}");
        // a write whose partition cannot be told, and a locking read elsewhere: refused too
        let (code, _) = refused(&mut s1, &format!("DELETE FROM {t} WHERE V = 'v'"));
        assert_eq!(code, 1235);
        let (code, _) = refused(
            &mut s1,
            &format!("SELECT * FROM {t} WHERE K = X'{}' FOR UPDATE", hex(&b)),
        );
        assert_eq!(code, 1235);
        // a locking read inside another statement (issue 31): refused, nothing locked
        for hidden in [
            format!(
                "SET @x = (SELECT V FROM {t} WHERE K = X'{}' FOR UPDATE)",
                hex(&b)
            ),
            format!(
                "DO (SELECT 1 FROM {t} WHERE K = X'{}' LOCK IN SHARE MODE)",
                hex(&b)
            ),
        ] {
            let (code, msg) = refused(&mut s1, &hidden);
            assert_eq!(code, 1235, "{}: {hidden}: {msg}", kind.name());
            assert!(msg.contains("X2"), "{msg}");
        }
        // the transaction is still open and still in its partition
        ok(&mut s1, &ins(&a2, "s1"));
        ok(
            &mut s1,
            &format!("UPDATE {t} SET V = 'w' WHERE K = X'{}'", hex(&a)),
        );
        ok(&mut s1, "COMMIT");
        ok(&mut s2, "ROLLBACK");
        let rows = f.cells(t);
        let got: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .map(|r| {
                (
                    r[0].clone().unwrap_or_default(),
                    r[1].clone().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [(a.clone(), b"s1".to_vec()), (a2.clone(), b"s1".to_vec())],
            "{}",
            kind.name()
        );
        // after COMMIT the next transaction may choose another partition
        ok(&mut s1, "BEGIN");
        ok(&mut s1, &ins(&b, "n1"));
        ok(&mut s1, "ROLLBACK");
        // two families of one group under one rowkey: one partition, allowed
        ok(&mut s1, "BEGIN");
        ok(&mut s1, &ins(&a, "f1"));
        ok(
            &mut s1,
            &format!(
                "INSERT INTO {} (K, Q, T, V) VALUES (X'{}', 'f2', {now}, 'v')",
                f.sibling,
                hex(&a)
            ),
        );
        ok(&mut s1, "COMMIT");
        assert_eq!(f.cells(&f.sibling).len(), 1);
        // autocommit off: the first write opens the transaction and fixes its partition
        ok(&mut s1, "SET autocommit = 0");
        ok(&mut s1, &ins(&a, "ac"));
        assert_eq!(refused(&mut s1, &ins(&b, "ac")).0, 1235);
        ok(&mut s1, "COMMIT");
        ok(&mut s1, &ins(&b, "ac"));
        ok(&mut s1, "ROLLBACK");
        ok(&mut s1, "SET autocommit = 1");
        // an XA transaction in statements of their own (MariaDB; seekdb has no XA): the
        // backend reports it in its status (IN_TRANS from XA START to XA COMMIT, measured)
        if kind == Kind::MariaDb {
            // (XIDs are the server's: each variant of the test has its own)
            let xid = if multiplexed { "'obkvm1'" } else { "'obkv1'" };
            ok(&mut s1, &format!("XA START {xid}"));
            ok(&mut s1, &ins(&a, "xa"));
            let (code, msg) = refused(&mut s1, &ins(&b, "xa"));
            assert_eq!(code, 1235, "{msg}");
            ok(&mut s1, &format!("XA END {xid}"));
            ok(&mut s1, &format!("XA COMMIT {xid} ONE PHASE"));
            // after it, another partition is another transaction's
            ok(&mut s1, &ins(&b, "xa"));
            let xa: Vec<Vec<u8>> = f
                .direct(&format!("SELECT K FROM {t} WHERE Q = 'xa' ORDER BY K"))
                .into_iter()
                .map(|r| r[0].clone().unwrap_or_default())
                .collect();
            let mut want = vec![a.clone(), b.clone()];
            want.sort();
            assert_eq!(xa, want);
        }
        // a statement of its own across partitions: a warning, not an error
        ok(&mut s1, &format!("INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'm', {now}, 'v'), (X'{}', 'm', {now}, 'v')", hex(&a), hex(&b)));
        let warnings = s1.rows("SHOW WARNINGS");
        assert!(
            warnings.iter().any(
                |r| String::from_utf8_lossy(r[2].as_deref().unwrap_or_default())
                    .contains("2 partitions")
            ),
            "{}: {warnings:?}",
            kind.name()
        );
    }
}

#[test]
fn a_refused_statement_ends_a_multi_statement_text() {
    let (a, b, a2) = keys();
    for kind in BOTH {
        let tag = format!("m{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        // the second statement breaks a cell rule: the first ran, the third did not
        let text = format!(
            "INSERT INTO {t} (K, Q, T, V) VALUES ('one', 'q', {now}, 'v'); \
             INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {now}, 'v'); \
             INSERT INTO {t} (K, Q, T, V) VALUES ('three', 'q', {now}, 'v')"
        );
        let frames = c.query(text.as_bytes()).expect("answered");
        let last = &frames.last().expect("frames").1;
        let (code, _) = err_of(last).expect("ends with the refusal");
        assert_eq!(code, 1292, "{}", kind.name());
        assert_eq!(
            frames.len(),
            2,
            "{}: one OK then the error: {frames:?}",
            kind.name()
        );
        assert_eq!(f.rowkeys(t), [b"one".to_vec()], "{}", kind.name());
        // the session goes on normally
        assert_eq!(c.scalar("SELECT 1"), "1");
        // inside a transaction in one text: the statement leaving the partition stops it
        let text = format!(
            "BEGIN; INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v'); \
             SELECT COUNT(*) FROM {t}; \
             INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v'); \
             INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v'); COMMIT",
            hex(&a),
            hex(&b),
            hex(&a2)
        );
        let frames = c.query(text.as_bytes()).expect("answered");
        let (code, msg) = err_of(&frames.last().expect("frames").1).expect("refused");
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        // BEGIN and the first INSERT ran, the transaction is open: the client decides
        assert_eq!(
            c.scalar(&format!(
                "SELECT COUNT(*) FROM {t} WHERE K = X'{}'",
                hex(&a)
            )),
            "1"
        );
        ok(&mut c, "ROLLBACK");
        assert_eq!(f.rowkeys(t), [b"one".to_vec()], "{}", kind.name());
        // autocommit turned off in the same text: the writes after it are one transaction, and
        // the one leaving the partition stops the text (issue 31)
        let text = format!(
            "SET autocommit = 0; INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v'); \
             INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v'); COMMIT",
            hex(&a),
            hex(&b)
        );
        let frames = c.query(text.as_bytes()).expect("answered");
        let (code, msg) = err_of(&frames.last().expect("frames").1).expect("refused");
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        assert!(msg.contains("X1"), "{msg}");
        ok(&mut c, "ROLLBACK");
        ok(&mut c, "SET autocommit = 1");
        assert_eq!(f.rowkeys(t), [b"one".to_vec()], "{}", kind.name());
        // a backend error before the refused statement ends the text by itself
        let text = format!(
            "INSERT INTO no_such_table VALUES (1); INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {now}, 'v')"
        );
        let frames = c.query(text.as_bytes()).expect("answered");
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(err_of(&frames[0].1).expect("error").0, 1146);
        assert_eq!(c.scalar("SELECT 1"), "1");
    }
}

/// Runs an execution: Ok, or the error (code, message).
fn execute(c: &mut RawConn, packet: &[u8]) -> Result<(), (u16, String)> {
    let frames = c
        .command(packet, ResponseKind::Execute)
        .expect("execute answered");
    match frames.iter().find_map(|(_, p)| err_of(p)) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What the proxy keeps of a prepared write's execution state changes only as the backend's
/// does: types sent with a refused execution are not the statement's (the backend never saw
/// them), and pieces sent with SEND_LONG_DATA before an execution the proxy cannot read are
/// not forgotten on one side only (found by a review: either let a later execution be read
/// one way by the proxy and another by the backend).
#[test]
fn a_refused_or_unreadable_execution_leaves_the_proxy_and_the_backend_agreeing() {
    for kind in BOTH {
        let tag = format!("q{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        let (id, _) = prepare(
            &mut c,
            format!("INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)").as_bytes(),
        )
        .expect("prepared");
        let cell = |k: &[u8], t: P| {
            vec![
                P::Str(k.to_vec()),
                P::Str(b"q".to_vec()),
                t,
                P::Blob(b"v".to_vec()),
            ]
        };
        // bound with T an integer
        execute(
            &mut c,
            &execute_packet(id, false, &cell(b"t1", P::Int(now)), true, &[]),
        )
        .expect("a good cell");
        // refused, with T a string this time: the backend keeps the integer type
        let (code, _) = execute(
            &mut c,
            &execute_packet(
                id,
                false,
                &cell(b"t2", P::Str((-now).to_string().into_bytes())),
                true,
                &[],
            ),
        )
        .expect_err("T of the wrong sign");
        assert_eq!(code, 1292, "{}", kind.name());
        // no types sent: read with the integer type, as the backend reads it
        let before = f.cells(t);
        let (code, msg) = execute(
            &mut c,
            &execute_packet(id, false, &cell(b"t3", P::Int(-now)), false, &[]),
        )
        .expect_err("T of the wrong sign, read with the types in force");
        assert_eq!(code, 1292, "{}: {msg}", kind.name());
        assert_eq!(f.cells(t), before, "{}", kind.name());
        execute(
            &mut c,
            &execute_packet(id, false, &cell(b"t4", P::Int(now)), false, &[]),
        )
        .expect("a good cell, read with the types in force");

        // pieces of V, then an execution the proxy cannot read: refused, the pieces dropped
        // on both sides
        let (lid, _) = prepare(
            &mut c,
            format!("INSERT INTO {} (K, Q, T, V) VALUES (?, ?, ?, ?)", f.blob).as_bytes(),
        )
        .expect("prepared");
        send_long_data(&mut c, lid, 3, &vec![9; CELL_LIMIT as usize + 1]);
        let mut short = vec![0x17];
        short.extend_from_slice(&lid.to_le_bytes());
        let (code, _) = execute(&mut c, &short).expect_err("a malformed execution");
        assert_eq!(code, 1835, "{}", kind.name());
        execute(
            &mut c,
            &execute_packet(lid, false, &cell(b"l1", P::Int(now)), true, &[]),
        )
        .expect("V from the packet, no piece left");
        let rows = f.cells(&f.blob);
        assert_eq!(rows.len(), 1, "{}", kind.name());
        assert_eq!(rows[0][3].as_deref(), Some(&b"v"[..]), "{}", kind.name());
        // a statement never bound: refused as the backend refuses it, nothing written
        let (nid, _) = prepare(
            &mut c,
            format!("INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)").as_bytes(),
        )
        .expect("prepared");
        let before = f.cells(t);
        let (code, _) = execute(
            &mut c,
            &execute_packet(nid, false, &cell(b"n1", P::Int(now)), false, &[]),
        )
        .expect_err("no types bound");
        assert_eq!(code, 1210, "{}", kind.name());
        assert_eq!(f.cells(t), before, "{}", kind.name());
    }
}

#[test]
fn prepared_writes_are_checked_with_their_values() {
    let (a, b, _) = keys();
    for kind in BOTH {
        let tag = format!("p{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        let (id, params) = prepare(
            &mut c,
            format!("INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)").as_bytes(),
        )
        .expect("prepared");
        assert_eq!(params, 4);
        let cell = |k: &[u8], t: i64, v: Option<&[u8]>| {
            vec![
                P::Str(k.to_vec()),
                P::Str(b"q".to_vec()),
                P::Int(t),
                v.map_or(P::Null, |v| P::Blob(v.to_vec())),
            ]
        };
        execute(
            &mut c,
            &execute_packet(id, false, &cell(b"good", now, Some(b"v")), true, &[]),
        )
        .expect("a good cell");
        for (why, values, code) in [
            ("empty K", cell(b"", now, Some(b"v")), 1292),
            ("K too long", cell(&[7; 17], now, Some(b"v")), 1406),
            ("T of the wrong sign", cell(b"k2", -now, Some(b"v")), 1292),
            (
                "T of the wrong sign as a string",
                vec![
                    P::Str(b"k2".to_vec()),
                    P::Str(b"q".to_vec()),
                    P::Str((-now).to_string().into_bytes()),
                    P::Blob(b"v".to_vec()),
                ],
                1292,
            ),
            ("NULL V", cell(b"k3", now, None), 1048),
            ("V too long", cell(b"k4", now, Some(&[1; 33])), 1406),
        ] {
            let before = f.cells(t);
            let (got, msg) =
                execute(&mut c, &execute_packet(id, false, &values, true, &[])).expect_err(why);
            assert_eq!(got, code, "{}: {why}: {msg}", kind.name());
            assert_eq!(
                f.cells(t),
                before,
                "{}: {why}: refused yet changed",
                kind.name()
            );
        }
        // the statement still works after refusals
        execute(
            &mut c,
            &execute_packet(id, false, &cell(b"good2", now, Some(b"v")), false, &[]),
        )
        .expect("types kept");
        assert_eq!(f.cells(t).len(), 2);

        // a long V sent in pieces is counted as it passes
        let (lid, _) = prepare(
            &mut c,
            format!("INSERT INTO {} (K, Q, T, V) VALUES (?, ?, ?, ?)", f.blob).as_bytes(),
        )
        .expect("prepared");
        let half = CELL_LIMIT as usize / 2;
        send_long_data(&mut c, lid, 3, &vec![1; half]);
        send_long_data(&mut c, lid, 3, &vec![2; half + 1]);
        let values = cell(b"long", now, Some(b""));
        let (code, _) = execute(&mut c, &execute_packet(lid, false, &values, true, &[3]))
            .expect_err("over the cell limit");
        assert_eq!(code, 1406, "{}", kind.name());
        assert!(f.cells(&f.blob).is_empty());
        // at the limit: accepted, and the refused pieces are not part of it
        send_long_data(&mut c, lid, 3, &vec![3; CELL_LIMIT as usize]);
        execute(&mut c, &execute_packet(lid, false, &values, true, &[3])).expect("at the limit");
        let rows = f.cells(&f.blob);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0][3].as_deref(),
            Some(vec![3u8; CELL_LIMIT as usize].as_slice()),
            "{}",
            kind.name()
        );

        // T left out of a prepared INSERT: each execution gets the server's time
        let (tid, n) = prepare(
            &mut c,
            format!("INSERT INTO {t} (K, Q, V) VALUES (?, 'auto', ?)").as_bytes(),
        )
        .expect("prepared without T");
        assert_eq!(n, 2, "the client's parameters only");
        let before = now_ms();
        execute(
            &mut c,
            &execute_packet(
                tid,
                false,
                &[P::Str(b"auto".to_vec()), P::Blob(b"v".to_vec())],
                true,
                &[],
            ),
        )
        .expect("T filled in");
        let after = now_ms();
        let ts = c.scalar(&format!("SELECT T FROM {t} WHERE K = 'auto'"));
        let ts: i64 = ts.parse().expect("T");
        assert!(
            (-after - 1000..=-before + 1000).contains(&ts),
            "{}: T = {ts}, [{before}, {after}]",
            kind.name()
        );

        // the guard at each execution
        let (did, _) =
            prepare(&mut c, format!("DELETE FROM {t} WHERE K = ?").as_bytes()).expect("prepared");
        ok(&mut c, "BEGIN");
        execute(
            &mut c,
            &execute_packet(did, false, &[P::Blob(a.clone())], true, &[]),
        )
        .expect("first partition");
        let (code, msg) = execute(
            &mut c,
            &execute_packet(did, false, &[P::Blob(b.clone())], true, &[]),
        )
        .expect_err("second partition");
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        // a prepared INSERT of literals only is placed at each execution too
        let (lit, n) = prepare(
            &mut c,
            format!(
                "INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'lit', {now}, 'v')",
                hex(&b)
            )
            .as_bytes(),
        )
        .expect("prepared");
        assert_eq!(n, 0);
        let mut no_params = vec![0x17];
        no_params.extend_from_slice(&lit.to_le_bytes());
        no_params.extend_from_slice(&[0, 1, 0, 0, 0]);
        let (code, msg) = execute(&mut c, &no_params).expect_err("literals elsewhere");
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        let (del, _) = prepare(
            &mut c,
            format!("DELETE FROM {t} WHERE K = X'{}'", hex(&b)).as_bytes(),
        )
        .expect("prepared");
        let mut no_params_del = vec![0x17];
        no_params_del.extend_from_slice(&del.to_le_bytes());
        no_params_del.extend_from_slice(&[0, 1, 0, 0, 0]);
        let (code, msg) = execute(&mut c, &no_params_del).expect_err("a delete elsewhere");
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        ok(&mut c, "COMMIT");
        assert!(
            !f.rowkeys(t).contains(&b),
            "{}: refused yet written",
            kind.name()
        );
        // outside a transaction the same execution runs
        execute(&mut c, &no_params).expect("autocommit");
        assert!(f.rowkeys(t).contains(&b), "{}", kind.name());

        // an UPDATE of T is refused when it is prepared
        let e = prepare(
            &mut c,
            format!("UPDATE {t} SET T = ? WHERE K = ?").as_bytes(),
        )
        .expect_err("refused");
        assert_eq!(e.0, 1235, "{}", kind.name());
    }
}

/// A COM_STMT_BULK_EXECUTE (MariaDB) of rows of (string, string, integer, blob-or-NULL).
fn bulk_packet(id: u32, rows: &[Vec<P>]) -> Vec<u8> {
    let mut p = vec![obkv_proxy::protocol::constants::com::STMT_BULK_EXECUTE];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&128u16.to_le_bytes()); // SEND_TYPES_TO_SERVER
    for v in &rows[0] {
        // the first row's types, with a NULL typed as the blob it stands for
        let ty = if matches!(v, P::Null) {
            [0xfc, 0]
        } else {
            v.ty()
        };
        p.extend_from_slice(&ty);
    }
    for row in rows {
        for v in row {
            match v {
                P::Null => p.push(1),
                P::Blob(b) | P::Str(b) => {
                    p.push(0);
                    obkv_proxy::protocol::wire::put_lenenc_bytes(&mut p, b);
                }
                P::Int(n) => {
                    p.push(0);
                    p.extend_from_slice(&n.to_le_bytes());
                }
            }
        }
    }
    p
}

#[test]
fn bulk_executes_are_checked_row_by_row() {
    // MariaDB's extension; OceanBase's MySQL mode does not offer it
    let kind = Kind::MariaDb;
    let (a, b, a2) = keys();
    let f = fixture(kind, "bulk");
    let t = &f.table;
    let now = -now_ms();
    let mut c = RawConn::connect_ext(
        &f.proxy.addr,
        "root",
        "",
        Some(&f.db),
        crate::common::raw::DEFAULT_CAPS,
        obkv_proxy::protocol::constants::ext::STMT_BULK_OPERATIONS,
    )
    .expect("login");
    assert_ne!(c.ext, 0, "bulk operations offered");
    let (id, _) = prepare(
        &mut c,
        format!("INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)").as_bytes(),
    )
    .expect("prepared");
    let cell = |k: &[u8], q: &[u8], t: i64, v: Option<&[u8]>| {
        vec![
            P::Str(k.to_vec()),
            P::Str(q.to_vec()),
            P::Int(t),
            v.map_or(P::Null, |v| P::Blob(v.to_vec())),
        ]
    };
    // good rows in one partition: written
    let good = [
        cell(&a, b"q1", now, Some(b"v")),
        cell(&a, b"q2", now, Some(b"v")),
        cell(&a2, b"q1", now, Some(b"v")),
    ];
    execute(&mut c, &bulk_packet(id, &good)).expect("good rows");
    assert_eq!(f.cells(t).len(), 3);
    // a bad row anywhere refuses the whole execution, naming its row
    for (why, bad, code) in [
        ("empty K", cell(b"", b"q", now, Some(b"v")), 1292),
        ("NULL V", cell(b"kk", b"q", now, None), 1048),
        (
            "T of the wrong sign",
            cell(b"kk", b"q", -now, Some(b"v")),
            1292,
        ),
        ("Q too long", cell(b"kk", &[b'q'; 9], now, Some(b"v")), 1406),
    ] {
        let rows = [
            cell(b"k1", b"q", now, Some(b"v")),
            cell(b"k2", b"q", now, Some(b"v")),
            bad,
        ];
        let before = f.cells(t);
        let (got, msg) = execute(&mut c, &bulk_packet(id, &rows)).expect_err(why);
        assert_eq!(got, code, "{why}: {msg}");
        assert!(msg.contains("row 3"), "{why}: {msg}");
        assert_eq!(f.cells(t), before, "{why}: refused yet changed");
    }
    // inside a transaction: the rows' partitions are the statement's
    ok(&mut c, "BEGIN");
    let (code, msg) = execute(
        &mut c,
        &bulk_packet(
            id,
            &[
                cell(&a, b"q3", now, Some(b"v")),
                cell(&b, b"q3", now, Some(b"v")),
            ],
        ),
    )
    .expect_err("two partitions in a transaction");
    assert_eq!(code, 1235, "{msg}");
    execute(
        &mut c,
        &bulk_packet(id, &[cell(&a2, b"q3", now, Some(b"v"))]),
    )
    .expect("the first partition");
    let (code, _) = execute(
        &mut c,
        &bulk_packet(id, &[cell(&b, b"q4", now, Some(b"v"))]),
    )
    .expect_err("another partition later");
    assert_eq!(code, 1235);
    ok(&mut c, "COMMIT");
    let keys: Vec<Vec<u8>> = f.rowkeys(t);
    assert_eq!(keys.len(), 4, "the first partition's write only");
    assert!(!keys.contains(&b), "nothing of the refused partition");
    // a bulk DELETE by K is placed row by row too
    let (did, _) =
        prepare(&mut c, format!("DELETE FROM {t} WHERE K = ?").as_bytes()).expect("prepared");
    ok(&mut c, "BEGIN");
    let (code, _) = execute(
        &mut c,
        &bulk_packet(did, &[vec![P::Blob(a.clone())], vec![P::Blob(b.clone())]]),
    )
    .expect_err("a bulk DELETE over two partitions");
    assert_eq!(code, 1235);
    execute(
        &mut c,
        &bulk_packet(did, &[vec![P::Blob(a.clone())], vec![P::Blob(a2.clone())]]),
    )
    .expect("one partition");
    ok(&mut c, "COMMIT");
    assert!(f.cells(t).is_empty());
    // issue 31: K sent as MariaDB's DEFAULT (2) or IGNORE (3) indicator is a rowkey the
    // backend fills with its default — empty under a non-strict sql_mode: C1
    ok(&mut c, "SET SESSION sql_mode = ''");
    for indicator in [2u8, 3] {
        let mut p = bulk_packet(id, &[cell(&a, b"qd", now, Some(b"v"))]);
        // command, id, flags and four types; then K's indicator and value
        let k_at = 1 + 4 + 2 + 8;
        assert_eq!(p[k_at], 0);
        let k_len = 1 + a.len();
        p.splice(k_at..k_at + 1 + k_len, [indicator]);
        let (code, msg) = execute(&mut c, &p).expect_err("K left to its default");
        assert!(msg.contains("C1"), "indicator {indicator}: {code} {msg}");
        assert!(f.cells(t).is_empty(), "indicator {indicator}");
    }
}

/// LOAD DATA LOCAL INFILE over the wire: the statement, then the file (in pieces of `chunk`
/// bytes) when asked for it. Ok(the OK packet), or the error.
pub fn load_local(
    c: &mut RawConn,
    sql: &str,
    file: &[u8],
    chunk: usize,
) -> Result<Vec<u8>, (u16, String)> {
    let mut q = vec![0x03];
    q.extend_from_slice(sql.as_bytes());
    c.write_frame(0, &q).expect("sent");
    let (seq, p) = c.read_frame().expect("answered");
    if let Some(e) = err_of(&p) {
        return Err(e);
    }
    assert_eq!(p.first(), Some(&0xfb), "{sql}: a LOCAL INFILE request");
    assert_eq!(seq, 1);
    let mut seq = seq + 1;
    for piece in file.chunks(chunk.max(1)) {
        c.write_frame(seq, piece).expect("file sent");
        seq += 1;
    }
    c.write_frame(seq, &[]).expect("end sent");
    let (rseq, p) = c.read_frame().expect("answered");
    assert_eq!(rseq, seq + 1, "{sql}: the answer's sequence id");
    match err_of(&p) {
        Some(e) => Err(e),
        None => Ok(p),
    }
}

#[test]
fn load_data_files_are_checked_before_they_run() {
    let (a, b, a2) = keys();
    for kind in BOTH {
        let tag = format!("l{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        let mut d = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        let ok_direct = d.exec("SET GLOBAL local_infile = 1").is_ok();
        let _ = ok_direct; // MariaDB allows it by default; OceanBase has no such variable
        let load = |c: &mut RawConn, cols: &str, file: &[u8]| {
            let sql = format!("LOAD DATA LOCAL INFILE '/tmp/cells.tsv' INTO TABLE {t} {cols}");
            load_local(c, &sql, file, 7)
        };
        // good rows, T given: loaded as they are
        let file = [
            format!("{}\tq1\t{now}\tv1\n", hex_free(&a)),
            format!("{}\tq1\t{now}\tv2\n", hex_free(&a2)),
        ]
        .concat();
        load(&mut c, "(K, Q, T, V)", file.as_bytes()).expect("good rows");
        assert_eq!(f.cells(t).len(), 2, "{}", kind.name());
        // each rule refuses the whole file, naming the row; nothing is loaded
        for (why, row, code) in [
            ("empty K", format!("\tq\t{now}\tv\n"), 1292),
            ("T of the wrong sign", format!("kk\tq\t{}\tv\n", -now), 1292),
            ("NULL V", format!("kk\tq\t{now}\t\\N\n"), 1048),
            (
                "V too long",
                format!("kk\tq\t{now}\t{}\n", "x".repeat(33)),
                1406,
            ),
        ] {
            let file = [
                format!("k1\tq\t{now}\tv\n"),
                format!("k2\tq\t{now}\tv\n"),
                row,
            ]
            .concat();
            let before = f.cells(t);
            let (got, msg) = load(&mut c, "(K, Q, T, V)", file.as_bytes()).expect_err(why);
            assert_eq!(got, code, "{}: {why}: {msg}", kind.name());
            assert!(msg.contains("row 3"), "{why}: {msg}");
            assert_eq!(
                f.cells(t),
                before,
                "{}: {why}: refused yet changed",
                kind.name()
            );
        }
        // the session goes on after a refusal
        assert_eq!(c.scalar("SELECT 1"), "1");
        // T left out: filled in by the proxy, in the convention
        let before = now_ms();
        load(&mut c, "(K, Q, V)", b"autoT\tq\tv\n").expect("T filled in");
        let after = now_ms();
        let ts: i64 = c
            .scalar(&format!("SELECT T FROM {t} WHERE K = 'autoT'"))
            .parse()
            .expect("T");
        assert!(
            (-after..=-before).contains(&ts),
            "{}: T = {ts}",
            kind.name()
        );
        // a CSV with a header, enclosures and escapes: the same cells as loading it directly
        let csv = format!(
            "K,Q,T,V\r\n\"c,1\",\"q\"\"x\",{now},\"line\nbreak\"\r\nc\\\\2,q,{now},\\0\\t\r\n"
        );
        let opts =
            "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' \
                    IGNORE 1 LINES (K, Q, T, V)";
        load(&mut c, opts, csv.as_bytes()).expect("csv");
        // a plain table of the same columns, loaded directly: how the backend reads the file
        ok(
            &mut d,
            &format!(
                "CREATE TABLE copy_{tag} (K varbinary(16), Q varbinary(8), T bigint, V varbinary(32))"
            ),
        );
        let direct = format!("LOAD DATA LOCAL INFILE '/tmp/c.csv' INTO TABLE copy_{tag} {opts}");
        load_local(&mut d, &direct, csv.as_bytes(), 5).expect("direct csv");
        let mine: Vec<_> = f
            .cells(t)
            .into_iter()
            .filter(|r| r[0].as_deref().is_some_and(|k| k.starts_with(b"c")))
            .collect();
        assert_eq!(mine.len(), 2, "{}", kind.name());
        assert_eq!(
            f.cells(&format!("copy_{tag}")),
            mine,
            "{}: read as the backend reads it",
            kind.name()
        );

        // in a transaction: the file's partitions are the statement's
        ok(&mut c, "BEGIN");
        // a file the server reads is not seen: its partition is not known inside a transaction
        let (code, _) = refused(
            &mut c,
            &format!("LOAD DATA INFILE '/nonexistent' INTO TABLE {t} (K, Q, T, V)"),
        );
        assert_eq!(code, 1235, "{}", kind.name());
        let two = format!(
            "{}\tq9\t{now}\tv\n{}\tq9\t{now}\tv\n",
            hex_free(&a),
            hex_free(&b)
        );
        let before = f.cells(t);
        let (code, msg) = load(&mut c, "(K, Q, T, V)", two.as_bytes()).expect_err("two partitions");
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        // (OceanBase commits a LOAD DATA of its own: the transaction may end with it)
        load(
            &mut c,
            "(K, Q, T, V)",
            format!("{}\tq9\t{now}\tv\n", hex_free(&a)).as_bytes(),
        )
        .expect("one partition");
        ok(&mut c, "COMMIT");
        assert_eq!(f.cells(t).len(), before.len() + 1, "{}", kind.name());
        // a client that does not send files: its rows are never seen, so not inside a
        // transaction
        let mut n = RawConn::connect_with(
            &f.proxy.addr,
            "root",
            "",
            Some(&f.db),
            crate::common::raw::DEFAULT_CAPS & !obkv_proxy::protocol::constants::cap::LOCAL_FILES,
        )
        .expect("login");
        ok(&mut n, "BEGIN");
        let (code, _) = refused(
            &mut n,
            &format!("LOAD DATA LOCAL INFILE '/tmp/x' INTO TABLE {t} (K, Q, T, V)"),
        );
        assert_eq!(code, 1235, "{}", kind.name());
        ok(&mut n, "ROLLBACK");
        // a file past hbase.load_data_max_bytes: refused after it, nothing loaded
        let mut cfg = proxy::config_for(&f.backend);
        cfg.hbase.multiple_families = true;
        cfg.hbase.load_data_max_bytes = 64;
        let small = proxy::start(cfg);
        let mut s = RawConn::connect(&small.addr, "root", "", Some(&f.db)).expect("proxy");
        let before = f.cells(t);
        let big = format!("{}\tqz\t{now}\tv\n", hex_free(&a)).repeat(10);
        let sql = format!("LOAD DATA LOCAL INFILE '/tmp/big' INTO TABLE {t} (K, Q, T, V)");
        let (code, msg) = load_local(&mut s, &sql, big.as_bytes(), 16).expect_err("too large");
        assert_eq!(code, 1153, "{}: {msg}", kind.name());
        assert_eq!(f.cells(t), before, "{}", kind.name());
        assert_eq!(s.scalar("SELECT 1"), "1", "the session goes on");
    }
}

/// The keys of `keys()` are printable: written into a file as they are.
fn hex_free(k: &[u8]) -> String {
    String::from_utf8(k.to_vec()).expect("printable")
}

/// SQL-level dynamic SQL: `PREPARE name FROM …` is checked like a COM_STMT_PREPARE of its
/// text, each `EXECUTE name USING @v, …` (and MariaDB's `EXECUTE IMMEDIATE … USING …`) with
/// the values it binds, and the transaction guard places it; a refused execution changes
/// nothing.
#[test]
fn sql_level_prepared_writes_are_checked_with_their_values() {
    let (a, b, _) = keys();
    for kind in BOTH {
        let tag = format!("d{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        let name = kind.name();
        ok(
            &mut c,
            &format!("PREPARE ins FROM 'INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)'"),
        );
        ok(
            &mut c,
            &format!("SET @k = 'dk1', @q = 'q', @t = {now}, @v = 'v'"),
        );
        ok(&mut c, "EXECUTE ins USING @k, @q, @t, @v");
        assert_eq!(f.rowkeys(t), [b"dk1".to_vec()], "{name}");
        for (why, set, code) in [
            ("empty K", "SET @k = ''".to_string(), 1292),
            ("K too long", "SET @k = REPEAT('k', 17)".to_string(), 1406),
            (
                "T of the wrong sign",
                format!("SET @k = 'dk2', @t = {}", -now),
                1292,
            ),
            (
                "T as a string of digits",
                format!("SET @t = '{}'", -now),
                1292,
            ),
            ("NULL V", format!("SET @t = {now}, @v = NULL"), 1048),
            ("V too long", "SET @v = REPEAT('v', 33)".to_string(), 1406),
        ] {
            ok(&mut c, &set);
            let before = f.cells(t);
            let (got, msg) = refused(&mut c, "EXECUTE ins USING @k, @q, @t, @v");
            assert_eq!(got, code, "{name}: {why}: {msg}");
            assert_eq!(f.cells(t), before, "{name}: {why}: refused yet changed");
        }
        // a value binary and exact: 16 bytes of 0xFF fit, a 17th does not
        ok(
            &mut c,
            "SET @k = X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF', @v = 'v'",
        );
        ok(&mut c, "EXECUTE ins USING @k, @q, @t, @v");
        ok(&mut c, "SET @k = X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF'");
        assert_eq!(refused(&mut c, "EXECUTE ins USING @k, @q, @t, @v").0, 1406);

        // the text's literals are checked at the PREPARE; a T left out cannot be filled in
        let (code, msg) = refused(
            &mut c,
            &format!(
                "PREPARE bad FROM 'INSERT INTO {t} (K, Q, T, V) VALUES (?, ''q'', {}, ?)'",
                -now
            ),
        );
        assert_eq!(code, 1292, "{name}: {msg}");
        let (code, msg) = refused(
            &mut c,
            &format!("PREPARE bad FROM 'INSERT INTO {t} (K, Q, V) VALUES (?, ''q'', ?)'"),
        );
        assert_eq!(code, 1364, "{name}: {msg}");
        // a text in a user variable too
        ok(
            &mut c,
            &format!("SET @s = 'UPDATE {t} SET V = ? WHERE K = ?'"),
        );
        ok(&mut c, "PREPARE up FROM @s");
        ok(&mut c, "SET @k = 'dk1', @v = REPEAT('v', 33)");
        assert_eq!(refused(&mut c, "EXECUTE up USING @v, @k").0, 1406, "{name}");
        ok(&mut c, "SET @v = 'w'");
        ok(&mut c, "EXECUTE up USING @v, @k");
        assert_eq!(
            c.scalar(&format!("SELECT V FROM {t} WHERE K = 'dk1'")),
            "w",
            "{name}"
        );

        // the guard: a second partition inside a transaction is refused
        ok(&mut c, "BEGIN");
        ok(
            &mut c,
            &format!(
                "INSERT INTO {t} (K, Q, T, V) VALUES (X'{}', 'q', {now}, 'v')",
                hex(&a)
            ),
        );
        ok(&mut c, &format!("SET @k = X'{}', @v = 'v'", hex(&b)));
        let (code, msg) = refused(&mut c, "EXECUTE ins USING @k, @q, @t, @v");
        assert_eq!(code, 1235, "{name}: {msg}");
        ok(&mut c, "ROLLBACK");
        assert!(!f.rowkeys(t).contains(&b), "{name}");
        // the same execution outside a transaction runs
        ok(&mut c, "EXECUTE ins USING @k, @q, @t, @v");
        assert!(f.rowkeys(t).contains(&b), "{name}");

        // inside a multi-statement text an execution of a checked write is refused whole
        let (code, _) = refused(&mut c, "SET @k = ''; EXECUTE ins USING @k, @q, @t, @v");
        assert_eq!(code, 1235, "{name}");
        assert_eq!(c.scalar("SELECT HEX(@k)"), hex(&b), "{name}: nothing ran");

        // what did not reach the backend leaves the name's plan in force: a refused PREPARE
        // of the name, and a DEALLOCATE after a refused statement of a multi-statement text
        ok(&mut c, "SET @k = ''");
        let (code, _) = refused(
            &mut c,
            &format!("PREPARE ins FROM 'INSERT INTO {t} (K, Q, V) VALUES (?, ?, ?)'"),
        );
        assert_eq!(code, 1364, "{name}");
        assert_eq!(
            refused(&mut c, "EXECUTE ins USING @k, @q, @t, @v").0,
            1292,
            "{name}"
        );
        let frames = c
            .query(
                format!(
                    "SELECT 1; INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', {now}, 'v'); \
                     DEALLOCATE PREPARE ins"
                )
                .as_bytes(),
            )
            .expect("answered");
        let (code, _) = err_of(&frames.last().expect("frames").1).expect("refused");
        assert_eq!(code, 1292, "{name}");
        assert_eq!(
            refused(&mut c, "EXECUTE ins USING @k, @q, @t, @v").0,
            1292,
            "{name}"
        );
        // values too many to read are not taken on trust
        let long = format!(
            "EXECUTE ins USING @k, @q, @t, ({}'v')",
            "'' || ".repeat(2500)
        );
        assert_eq!(refused(&mut c, &long).0, 1235, "{name}");
        assert!(!f.rowkeys(t).contains(&Vec::new()), "{name}");

        // a name deallocated or prepared anew keeps no plan: the new statement runs as it is
        ok(&mut c, "DEALLOCATE PREPARE ins");
        ok(&mut c, "PREPARE ins FROM 'SELECT ?, ?, ?, ?'");
        ok(&mut c, "SET @k = ''");
        ok(&mut c, "EXECUTE ins USING @k, @q, @t, @v");

        // a stored program writing an HBase table would write cells no one checks: refused,
        // and nothing is created
        let (code, msg) = refused(
            &mut c,
            &format!(
                "CREATE PROCEDURE wr_p() INSERT INTO {t} (K, Q, T, V) VALUES ('', 'q', 1, NULL)"
            ),
        );
        assert_eq!(code, 1235, "{name}: {msg}");
        assert_eq!(
            c.scalar(&format!(
                "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{}'",
                f.db
            )),
            "0",
            "{name}"
        );

        if kind == Kind::MariaDb {
            // literals in USING, and EXECUTE IMMEDIATE
            ok(
                &mut c,
                &format!("PREPARE lit FROM 'INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)'"),
            );
            let (code, _) = refused(&mut c, &format!("EXECUTE lit USING '', 'q', {now}, 'v'"));
            assert_eq!(code, 1292);
            ok(
                &mut c,
                &format!("EXECUTE lit USING 'lit1', 'q', {now}, _binary'v'"),
            );
            let immediate =
                format!("EXECUTE IMMEDIATE 'INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)'");
            let (code, _) = refused(&mut c, &format!("{immediate} USING @k, @q, @t, @v"));
            assert_eq!(code, 1292, "empty K");
            ok(&mut c, "SET @k = 'imm1'");
            ok(&mut c, &format!("{immediate} USING @k, @q, @t, @v"));
            // values the proxy would have to compute are refused under strict enforcement
            let (code, _) = refused(
                &mut c,
                &format!("{immediate} USING CONCAT('a', 'b'), @q, @t, @v"),
            );
            assert_eq!(code, 1235);
            let keys = f.rowkeys(t);
            assert!(
                keys.contains(&b"lit1".to_vec()) && keys.contains(&b"imm1".to_vec()),
                "{keys:?}"
            );
            assert!(!keys.contains(&b"ab".to_vec()));

            // the plans a session keeps are bounded: past 1,024 a new name is refused, an old
            // name may be prepared anew, and a deallocated one makes room
            let text = format!("'INSERT INTO {t} (K, Q, T, V) VALUES (?, ?, ?, ?)'");
            ok(&mut c, "DEALLOCATE PREPARE up");
            ok(&mut c, "DEALLOCATE PREPARE lit");
            for i in 0..1024 {
                ok(&mut c, &format!("PREPARE p{i} FROM {text}"));
            }
            let (code, msg) = refused(&mut c, &format!("PREPARE p1024 FROM {text}"));
            assert_eq!(code, 1461, "{msg}");
            ok(&mut c, &format!("PREPARE p7 FROM {text}"));
            ok(&mut c, "DEALLOCATE PREPARE p7");
            ok(&mut c, &format!("PREPARE p1024 FROM {text}"));
            ok(&mut c, "SET @k = ''");
            assert_eq!(
                refused(&mut c, "EXECUTE p1024 USING @k, @q, @t, @v").0,
                1292
            );
        }
    }
}

/// The LOAD DATA spool is bounded for the whole proxy: a file that would take more than
/// `hbase.load_data_spool_total_bytes` while another session's file is held is refused (1041)
/// and loads nothing; once the other file is done, the budget is back.
#[test]
fn load_data_files_share_one_spool_budget() {
    for kind in BOTH {
        let tag = format!("a{}", kind.name());
        let f = fixture_with(kind, &tag, |cfg| {
            cfg.hbase.load_data_spool_total_bytes = 1000;
        });
        let t = &f.table;
        let now = -now_ms();
        let name = kind.name();
        let rows = |prefix: &str, n: usize| -> Vec<u8> {
            (0..n)
                .map(|i| format!("{prefix}{i:03}\tq\t{now}\tv\n"))
                .collect::<String>()
                .into_bytes()
        };
        let sql = format!("LOAD DATA LOCAL INFILE '/tmp/cells.tsv' INTO TABLE {t} (K, Q, T, V)");
        let mut status = f.via();
        let spooled = |c: &mut RawConn| -> u64 {
            c.rows("SHOW PROXY STATUS")
                .into_iter()
                .find(|r| r[0].as_deref() == Some(b"load_data_spool_bytes".as_slice()))
                .and_then(|r| r[1].clone())
                .map(|v| String::from_utf8_lossy(&v).parse().expect("a number"))
                .expect("load_data_spool_bytes")
        };
        // session A sends 600-800 bytes of its file and holds them
        let mut a = f.via();
        let mut q = vec![0x03];
        q.extend_from_slice(sql.as_bytes());
        a.write_frame(0, &q).expect("sent");
        let (_, p) = a.read_frame().expect("answered");
        assert_eq!(p.first(), Some(&0xfb), "{name}");
        let held = rows("a", 28);
        let n = held.len() as u64;
        assert!((600..=800).contains(&n), "{n}");
        a.write_frame(2, &held).expect("file sent");
        let mut seen = 0;
        for _ in 0..2000 {
            seen = spooled(&mut status);
            if seen == n {
                break;
            }
        }
        assert_eq!(seen, n, "{name}: A's bytes are held");
        // session B's ~500 bytes would pass the budget: refused, nothing loaded
        let mut b = f.via();
        let (code, msg) = load_local(&mut b, &sql, &rows("b", 20), 100).expect_err("over budget");
        assert_eq!(code, 1041, "{name}: {msg}");
        assert!(msg.contains("load_data_spool_total_bytes"), "{msg}");
        assert_eq!(spooled(&mut status), n, "{name}: B's bytes are given back");
        // A finishes and loads; the budget is free again and B's file goes through
        a.write_frame(3, &[]).expect("end sent");
        let (_, p) = a.read_frame().expect("answered");
        assert!(err_of(&p).is_none(), "{name}: {:?}", err_of(&p));
        assert_eq!(spooled(&mut status), 0, "{name}");
        load_local(&mut b, &sql, &rows("b", 20), 100).expect("within the budget");
        assert_eq!(f.rowkeys(t).len(), 48, "{name}");
        assert_eq!(spooled(&mut status), 0, "{name}");
    }
}

/// Issue 31: objects that would rewrite checked writes or hide an HBase table are refused, on
/// both backends, and leave the table as it was: a trigger on an HBase table, and a plain or
/// temporary table renamed to an HBase table's name.
#[test]
fn nothing_changes_a_cell_after_its_check() {
    for kind in BOTH {
        let tag = format!("o{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let now = -now_ms();
        let mut c = f.via();
        ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v')"),
        );
        let before = f.cells(t);
        // a trigger that would make every later T positive
        let (code, msg) = refused(
            &mut c,
            &format!("CREATE TRIGGER {tag}_t BEFORE INSERT ON {t} FOR EACH ROW SET NEW.T = 5"),
        );
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        assert!(msg.contains("trigger"), "{msg}");
        let triggers = f.direct(&format!(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_NAME = '{tag}_t'"
        ));
        assert_eq!(
            triggers[0][0].as_deref(),
            Some(&b"0"[..]),
            "{}",
            kind.name()
        );
        // a temporary table renamed over the HBase table's name (it would hide it for the
        // session, and the rules would answer for the wrong table)
        // (seekdb has no temporary tables: a plain table there, which the rule covers too)
        let temporary = if kind == Kind::MariaDb {
            "TEMPORARY "
        } else {
            ""
        };
        ok(
            &mut c,
            &format!("CREATE {temporary}TABLE tmp (K varbinary(16), Q varbinary(8), T bigint, V varbinary(32))"),
        );
        for rename in [
            format!("ALTER TABLE tmp RENAME TO {t}"),
            format!("RENAME TABLE tmp TO {tag}$h"),
        ] {
            let (code, msg) = refused(&mut c, &rename);
            assert_eq!(code, 1235, "{}: {rename}: {msg}", kind.name());
            assert!(msg.contains("R1"), "{msg}");
        }
        // the temporary table is still itself, and the HBase table unchanged
        assert_eq!(c.scalar("SELECT COUNT(*) FROM tmp"), "0");
        ok(&mut c, &format!("DROP {temporary}TABLE tmp"));
        assert_eq!(f.cells(t), before, "{}", kind.name());
        // MariaDB: the proxy's own prefix triggers are not dropped, and a restore's CREATE
        // TRIGGER of one makes it again, in the proxy's definition
        if kind == Kind::MariaDb {
            let count = |f: &Fixture| {
                f.direct(&format!(
                    "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{}' AND TRIGGER_NAME LIKE 'obkv\\_{tag}$f\\_%'",
                    f.db
                ))[0][0]
                    .clone()
                    .unwrap_or_default()
            };
            assert_eq!(count(&f), b"2".to_vec());
            let (code, msg) = refused(&mut c, &format!("DROP TRIGGER `obkv_{t}_bi`"));
            assert_eq!(code, 1235, "{msg}");
            assert_eq!(count(&f), b"2".to_vec());
            // dropped behind the proxy's back: the dump's CREATE TRIGGER makes it again (its
            // body is not the one run: a body that set T is ignored)
            f.direct(&format!("DROP TRIGGER `obkv_{t}_bi`"));
            assert_eq!(count(&f), b"1".to_vec());
            ok(
                &mut c,
                &format!("CREATE TRIGGER `obkv_{t}_bi` BEFORE INSERT ON `{t}` FOR EACH ROW SET NEW.T = 5"),
            );
            assert_eq!(count(&f), b"2".to_vec());
            ok(
                &mut c,
                &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k2', 'q', {now}, 'v')"),
            );
            let t_of_k2 = f.direct(&format!("SELECT T, K_PREFIX FROM {t} WHERE K = 'k2'"));
            assert_eq!(t_of_k2[0][0], Some(now.to_string().into_bytes()));
            assert_eq!(t_of_k2[0][1], Some(b"k2".to_vec()));
        }
        // a plain name to a plain name is the backend's business
        ok(&mut c, "CREATE TABLE plain1 (a int)");
        ok(&mut c, "RENAME TABLE plain1 TO plain2");
        ok(&mut c, "DROP TABLE plain2");
    }
}

/// Issue 31: a statement is read with the state the backend reads it with: NO_BACKSLASH_ESCAPES
/// set by a statement of its own (which OceanBase reports in no status flag: the proxy asks),
/// or earlier in the same text.
#[test]
fn statements_are_read_in_the_sessions_sql_mode() {
    for kind in BOTH {
        let tag = format!("q{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let mut c = f.via();
        // under NO_BACKSLASH_ESCAPES 'abcd\' is a string, and T is 5
        let smuggle = format!("INSERT INTO {t} (K, Q, T, V) VALUES ('abcd\\', 'q', 5, 'v')");
        let before = f.cells(t);
        // earlier in the same text: read under every state, refused
        let text = format!("SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES'); {smuggle}");
        let frames = c.query(text.as_bytes()).expect("answered");
        let (code, msg) = err_of(&frames.last().expect("frames").1)
            .unwrap_or_else(|| panic!("{}: not refused: {frames:?}", kind.name()));
        assert_eq!(code, 1064, "{}: {msg}", kind.name());
        assert_eq!(f.cells(t), before, "{}", kind.name());
        // by a statement of its own: the next statement is read without escapes, C4 refused
        ok(
            &mut c,
            "SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')",
        );
        let (code, msg) = refused(&mut c, &smuggle);
        assert_eq!(code, 1292, "{}: {msg}", kind.name());
        assert!(msg.contains("C4"), "{msg}");
        assert_eq!(f.cells(t), before, "{}", kind.name());
        // and a correct row goes in, its backslash kept
        let now = -now_ms();
        ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('abcd\\', 'q', {now}, 'v')"),
        );
        assert_eq!(f.rowkeys(t), [b"abcd\\".to_vec()], "{}", kind.name());
    }
}

/// The answer to the last statement a text ran: its error, if it was refused.
fn last_error(c: &mut RawConn, text: &[u8]) -> Option<(u16, String)> {
    let frames = c.query(text).expect("answered");
    err_of(&frames.last().expect("frames").1)
}

/// Issue 31: what a character set or an executable comment could hide from the rules. Under
/// gbk, big5 and sjis a byte of 0x80 or more and a backquote are one character (MariaDB;
/// seekdb has none of these character sets): what reads as one SELECT in UTF-8 runs a second
/// statement there. seekdb runs `/*!999999 - */` as `9 -` (its own rule: five digits are the
/// version, whatever it says) and reads the comment as a comment where the code does not parse.
/// Each is shown to work directly on a plain table, then refused through the proxy with the
/// HBase table unchanged.
#[test]
fn what_a_character_set_or_a_comment_could_hide_is_refused() {
    for kind in BOTH {
        let tag = format!("h{}", kind.name());
        let f = fixture(kind, &tag);
        let t = &f.table;
        let mut c = f.via();
        let now = -now_ms();
        ok(
            &mut c,
            &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k1', 'q', {now}, 'v')"),
        );
        ok(&mut c, "CREATE TABLE plain (a bigint)");
        ok(&mut c, "INSERT INTO plain VALUES (1)");
        let before = f.cells(t);
        let mut direct = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        if kind == Kind::MariaDb {
            for cs in ["gbk", "big5", "sjis"] {
                // 0xE0 leads a two-byte character in all three
                let hide = |target: &str| -> Vec<u8> {
                    let mut v = b"SELECT 1 AS \xE0`; ".to_vec();
                    v.extend_from_slice(target.as_bytes());
                    v.extend_from_slice(b"; #`");
                    v
                };
                direct
                    .warnings_or_error(&format!("SET NAMES {cs}"))
                    .expect("set names");
                direct
                    .query(&hide("UPDATE plain SET a = 5"))
                    .expect("direct");
                assert_eq!(
                    direct.scalar("SELECT a FROM plain"),
                    "5",
                    "{cs}: the hidden UPDATE ran"
                );
                direct
                    .warnings_or_error("UPDATE plain SET a = 1")
                    .expect("reset");
                ok(&mut c, &format!("SET NAMES {cs}"));
                // refused as a whole (the readings disagree), the table as it was
                let mut refused_whole = |text: &[u8]| {
                    let (code, msg) =
                        last_error(&mut c, text).unwrap_or_else(|| panic!("{cs}: not refused"));
                    assert_eq!(code, 1064, "{cs}: {msg}");
                    assert_eq!(f.cells(t), before, "{cs}");
                };
                refused_whole(&hide(&format!("UPDATE {t} SET T = 5 WHERE K = 'k1'")));
                // inside a name: the name goes on under {cs} (the UPDATE is part of it there),
                // and ends in UTF-8: refused where one reading breaks a rule
                let mut in_name = b"SELECT `a\xE0`; ".to_vec();
                in_name.extend_from_slice(
                    format!("UPDATE {t} SET T = 5 WHERE K = 'k1'; #`").as_bytes(),
                );
                refused_whole(&in_name);
                // where both readings keep the rules, the text goes to the backend as it is
                let mut harmless = b"SELECT `a\xE0`; ".to_vec();
                harmless.extend_from_slice(
                    format!("UPDATE {t} SET V = 'w' WHERE K = 'k1'; #`").as_bytes(),
                );
                let (code, _) = last_error(&mut c, &harmless).expect("the backend's error");
                assert_eq!(code, 1054, "{cs}: one unknown column under {cs}");
                ok(&mut c, "SET NAMES utf8mb4");
            }
        }
        // a line comment opens and ends on the bytes the backend opens and ends it on: DEL
        // after `--` opens one on MariaDB; CR ends one on OceanBase
        let hide = |target: &str| -> Vec<u8> {
            let mut v = if kind == Kind::MariaDb {
                b"SELECT 1 --\x7F '\n; ".to_vec()
            } else {
                b"SELECT 1 # '\r; ".to_vec()
            };
            v.extend_from_slice(target.as_bytes());
            v.extend_from_slice(b"; -- '");
            v
        };
        direct
            .query(&hide("UPDATE plain SET a = 5"))
            .expect("direct");
        assert_eq!(
            direct.scalar("SELECT a FROM plain"),
            "5",
            "{}: the hidden UPDATE ran",
            kind.name()
        );
        let (code, msg) = last_error(
            &mut c,
            &hide(&format!("UPDATE {t} SET T = 5 WHERE K = 'k1'")),
        )
        .unwrap_or_else(|| panic!("{}: not refused", kind.name()));
        assert_eq!(code, 1235, "{}: {msg}", kind.name());
        assert!(msg.contains("C7"), "{msg}");
        assert_eq!(f.cells(t), before, "{}", kind.name());
        if kind == Kind::SeekDb {
            let hide = |target: &str, digits: &str| -> String {
                format!("INSERT INTO {target} VALUES (/*!{digits} - */ {now})")
            };
            for digits in ["999999", "50726", "123"] {
                direct
                    .warnings_or_error("DELETE FROM plain")
                    .expect("reset");
                direct
                    .warnings_or_error(&hide("plain", digits))
                    .expect("direct");
                assert_ne!(
                    direct.scalar("SELECT a FROM plain"),
                    now.to_string(),
                    "{digits}: the comment ran"
                );
                let sql = format!(
                    "INSERT INTO {t} (K, Q, T, V) VALUES ('k2', 'q', /*!{digits} - */ {now}, 'v')"
                );
                let (code, msg) = refused(&mut c, &sql);
                assert!([1064, 1292].contains(&code), "{digits}: {code} {msg}");
                assert_eq!(f.cells(t), before, "{digits}");
            }
            // a comment that leaves the HBase statement as it is is read as it is
            ok(
                &mut c,
                &format!("SELECT /*!50726 SQL_NO_CACHE */ K FROM {t} WHERE K = 'k1'"),
            );
        }
        ok(&mut c, "DROP TABLE plain");
    }
}
