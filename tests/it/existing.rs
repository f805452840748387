//! HBase tables the proxy did not create (made directly on the backend, in the OBKV guide's
//! forms) are HBase tables to it: every cell rule refuses with the table unchanged, the prefix
//! scan is rewritten to one partition, the transaction guard refuses a second partition,
//! EXPLAIN OBKV and SHOW OBKV TABLES show them, and ALTER TABLE … TABLEGROUP = g adopts one
//! under the group rules. A `$` table that breaks a rule is listed with its findings.

use obkv_proxy::hbase::partition::Partitioning;

use crate::common::proxy::{self, InProcessProxy};
use crate::common::raw::RawConn;
use crate::common::{shared, Kind, BOTH};

const DB: &str = "hb_existing";

fn ok(c: &mut RawConn, sql: &str) {
    if let Err(e) = c.warnings_or_error(sql) {
        panic!("{sql}: {e:?}");
    }
}

fn refused(c: &mut RawConn, sql: &str) -> (u16, String) {
    match c.warnings_or_error(sql) {
        Ok(_) => panic!("accepted: {sql}"),
        Err(e) => e,
    }
}

fn text(v: &Option<Vec<u8>>) -> String {
    String::from_utf8_lossy(v.as_deref().unwrap_or(b"NULL")).into_owned()
}

/// One form of the guide: (table, DDL run directly on the backend, the model's partitioning,
/// the prefix column's length).
struct Form {
    table: String,
    ddl: Vec<String>,
    partitioning: Partitioning,
}

/// The guide's five forms, as each backend holds them when a user makes them directly: seekdb
/// takes the guide's DDL (without TABLEGROUP, which it lacks); MariaDB holds a blob V and a
/// plain prefix column kept by a CHECK and triggers (it cannot partition by a generated column
/// in the primary key).
fn forms(kind: Kind, tag: &str) -> Vec<Form> {
    let key = |n| Partitioning::Key {
        prefix_len: n,
        partitions: 97,
    };
    let range = Partitioning::RangeK {
        bounds: Vec::new(), // compared by kind only
    };
    let cols = "K varbinary(1024), Q varbinary(256), T bigint";
    match kind {
        Kind::SeekDb => {
            let v = "V varbinary(1048576) NOT NULL";
            vec![
                Form { table: format!("{tag}a$f"), ddl: vec![format!("CREATE TABLE {tag}a$f ({cols}, {v}, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 97")], partitioning: key(None) },
                Form { table: format!("{tag}b$f"), ddl: vec![format!("CREATE TABLE {tag}b$f ({cols}, V longblob NOT NULL, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 97")], partitioning: key(None) },
                Form { table: format!("{tag}c$f"), ddl: vec![format!("CREATE TABLE {tag}c$f ({cols}, {v}, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K_PREFIX) PARTITIONS 97")], partitioning: key(Some(4)) },
                Form { table: format!("{tag}d$f"), ddl: vec![format!("CREATE TABLE {tag}d$f ({cols}, {v}, K_PREFIX varbinary(64) GENERATED ALWAYS AS (substring(K, 1, 6)) STORED, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K_PREFIX) PARTITIONS 97")], partitioning: key(Some(6)) },
                Form { table: format!("{tag}e$f"), ddl: vec![format!("CREATE TABLE {tag}e$f ({cols}, {v}, PRIMARY KEY (K, Q, T)) PARTITION BY RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('a'), PARTITION p1 VALUES LESS THAN ('w'), PARTITION p2 VALUES LESS THAN (MAXVALUE))")], partitioning: range },
            ]
        }
        Kind::MariaDb => {
            let prefixed = |t: &str, n: usize| {
                vec![
                    format!("CREATE TABLE {t} ({cols}, V mediumblob NOT NULL, K_PREFIX varbinary({n}) NOT NULL DEFAULT '', CONSTRAINT CHECK (length(V) <= 1048576), CONSTRAINT CHECK (K_PREFIX = substring(K, 1, {n})), PRIMARY KEY (K, Q, T, K_PREFIX)) PARTITION BY KEY(K_PREFIX) PARTITIONS 97"),
                    format!("CREATE TRIGGER `{t}_bi` BEFORE INSERT ON `{t}` FOR EACH ROW SET NEW.K_PREFIX = substring(NEW.K, 1, {n})"),
                    format!("CREATE TRIGGER `{t}_bu` BEFORE UPDATE ON `{t}` FOR EACH ROW SET NEW.K_PREFIX = substring(NEW.K, 1, {n})"),
                ]
            };
            vec![
                Form { table: format!("{tag}a$f"), ddl: vec![format!("CREATE TABLE {tag}a$f ({cols}, V longblob NOT NULL, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 97")], partitioning: key(None) },
                Form { table: format!("{tag}b$f"), ddl: vec![format!("CREATE TABLE {tag}b$f ({cols}, V mediumblob NOT NULL, CHECK (length(V) <= 1048576), PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 97")], partitioning: key(None) },
                Form { table: format!("{tag}c$f"), ddl: prefixed(&format!("{tag}c$f"), 4), partitioning: key(Some(4)) },
                Form { table: format!("{tag}d$f"), ddl: prefixed(&format!("{tag}d$f"), 6), partitioning: key(Some(6)) },
                Form { table: format!("{tag}e$f"), ddl: vec![format!("CREATE TABLE {tag}e$f ({cols}, V longblob NOT NULL, PRIMARY KEY (K, Q, T)) PARTITION BY RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('a'), PARTITION p1 VALUES LESS THAN ('w'), PARTITION p2 VALUES LESS THAN (MAXVALUE))")], partitioning: range },
            ]
        }
    }
}

struct Fixture {
    backend: String,
    proxy: InProcessProxy,
}

impl Fixture {
    fn new(kind: Kind, configure: impl FnOnce(&mut obkv_proxy::config::Config)) -> Fixture {
        let backend = shared(kind).addr.clone();
        let mut config = proxy::config_for(&backend);
        configure(&mut config);
        let proxy = proxy::start(config);
        let mut d = RawConn::connect(&backend, "root", "", None).expect("direct");
        ok(&mut d, &format!("CREATE DATABASE IF NOT EXISTS {DB}"));
        Fixture { backend, proxy }
    }
    fn direct(&self) -> RawConn {
        RawConn::connect(&self.backend, "root", "", Some(DB)).expect("direct")
    }
    fn via(&self) -> RawConn {
        RawConn::connect(&self.proxy.addr, "root", "", Some(DB)).expect("through the proxy")
    }
    fn count(&self, table: &str) -> String {
        self.direct()
            .scalar(&format!("SELECT COUNT(*) FROM `{table}`"))
    }
    fn make(&self, ddl: &[String], table: &str) {
        let mut d = self.direct();
        ok(&mut d, &format!("DROP TABLE IF EXISTS `{table}`"));
        for s in ddl {
            ok(&mut d, s);
        }
    }
}

/// Two rowkeys in different partitions of `p` (the model's placement, which the guard uses).
fn two_partitions(p: &Partitioning) -> (Vec<u8>, Vec<u8>) {
    if let Partitioning::RangeK { .. } = p {
        return (b"Aaaaaa1".to_vec(), b"baaaaa1".to_vec());
    }
    let a = b"aaaaaa1".to_vec();
    let b = (b'b'..=b'z')
        .map(|c| vec![c, c, c, c, c, c, b'1'])
        .find(|k| p.partition_of(k) != p.partition_of(&a))
        .expect("another partition");
    (a, b)
}

#[test]
fn tables_made_on_the_backend_follow_every_rule() {
    for kind in BOTH {
        let f = Fixture::new(kind, |_| {});
        let now = -1_700_000_000_000i64;
        for form in forms(kind, "ex") {
            let t = &form.table;
            let ctx = format!("{}: {t}", kind.name());
            f.make(&form.ddl, t);
            let mut c = f.via();
            // the cell rules, each refusing with the table unchanged
            for (sql, rule) in [
                (
                    format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('', 'q', {now}, 'v')"),
                    "C1",
                ),
                (
                    format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('k1', 'q', 5, 'v')"),
                    "C4",
                ),
                (
                    format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('k1', 'q', {now}, NULL)"),
                    "C3",
                ),
            ] {
                let (code, message) = refused(&mut c, &sql);
                assert!(message.contains(rule), "{ctx}: {sql}: {code} {message}");
                assert_eq!(f.count(t), "0", "{ctx}: {sql}");
            }
            ok(
                &mut c,
                &format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('aaaaaa1', 'q', {now}, 'v')"),
            );
            assert_eq!(f.count(t), "1", "{ctx}");
            let (code, message) = refused(
                &mut c,
                &format!("UPDATE `{t}` SET K = 'zz' WHERE K = 'aaaaaa1'"),
            );
            assert_eq!(code, 1235, "{ctx}: {message}");
            assert!(message.contains("C7"), "{ctx}: {message}");
            assert_eq!(
                f.direct()
                    .scalar(&format!("SELECT COUNT(*) FROM `{t}` WHERE K = 'aaaaaa1'")),
                "1",
                "{ctx}"
            );
            // EXPLAIN OBKV: an HBase table; prefix forms rewritten to one partition
            let rows = c.rows(&format!(
                "EXPLAIN OBKV SELECT * FROM `{t}` WHERE K LIKE 'aaaaaa%'"
            ));
            let row = &rows[0];
            assert_eq!(text(&row[0]), format!("`{DB}`.`{t}`"), "{ctx}");
            if let Partitioning::Key {
                prefix_len: Some(_),
                ..
            } = form.partitioning
            {
                assert!(
                    text(&row[2]).contains("K_PREFIX"),
                    "{ctx}: {}",
                    text(&row[2])
                );
                assert!(
                    !text(&row[3]).starts_with("all"),
                    "{ctx}: {}",
                    text(&row[3])
                );
                assert!(
                    !text(&row[3]).contains(','),
                    "{ctx}: one partition: {}",
                    text(&row[3])
                );
                // and the rewritten scan finds the row
                let found = c.rows(&format!("SELECT V FROM `{t}` WHERE K LIKE 'aaaaaa%'"));
                assert_eq!(found.len(), 1, "{ctx}");
            }
            // the guard: a transaction stays in one partition (a table in no group is its own)
            let (a, b) = two_partitions(&form.partitioning);
            let (a, b) = (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
            ok(&mut c, "BEGIN");
            ok(
                &mut c,
                &format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('{a}', 'q2', {now}, 'v')"),
            );
            let (code, message) = refused(
                &mut c,
                &format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('{b}', 'q2', {now}, 'v')"),
            );
            assert_eq!(code, 1235, "{ctx}: {message}");
            assert!(message.contains("X"), "{ctx}: {message}");
            ok(&mut c, "ROLLBACK");
            assert_eq!(f.count(t), "1", "{ctx}");
            // the listing
            let listed = c.rows("SHOW OBKV TABLES");
            let mine = listed
                .iter()
                .find(|r| text(&r[0]) == DB && text(&r[1]) == *t)
                .unwrap_or_else(|| panic!("{ctx}: not listed"));
            assert_eq!(text(&mine[5]), "YES", "{ctx}");
            assert_eq!(text(&mine[6]), "backend", "{ctx}");
            let prefix = match form.partitioning {
                Partitioning::Key {
                    prefix_len: Some(n),
                    ..
                } => n.to_string(),
                _ => "NULL".into(),
            };
            assert_eq!(text(&mine[4]), prefix, "{ctx}");
        }
    }
}

#[test]
fn a_dollar_table_that_breaks_a_rule_is_reported_and_plain_ones_explained() {
    for kind in BOTH {
        let f = Fixture::new(kind, |_| {});
        let ctx = kind.name();
        let v = if kind == Kind::MariaDb {
            "varbinary(100)"
        } else {
            "varbinary(1048576)"
        };
        f.make(
            &[format!("CREATE TABLE `exbad$f` (K varbinary(1024), Q varbinary(256), T bigint, V {v} NOT NULL, PRIMARY KEY (K, Q, T), KEY iv (T)) PARTITION BY KEY(K) PARTITIONS 3")],
            "exbad$f",
        );
        f.make(
            &["CREATE TABLE `order$items` (id int PRIMARY KEY, sku varchar(10))".into()],
            "order$items",
        );
        let mut c = f.via();
        let listed = c.rows("SHOW OBKV TABLES");
        let bad = listed
            .iter()
            .find(|r| text(&r[0]) == DB && text(&r[1]) == "exbad$f")
            .unwrap_or_else(|| panic!("{ctx}: the broken table is listed"));
        assert_eq!(text(&bad[5]), "NO", "{ctx}");
        assert!(text(&bad[7]).contains("R7"), "{ctx}: {}", text(&bad[7]));
        assert!(
            !listed.iter().any(|r| text(&r[1]) == "order$items"),
            "{ctx}: a plain $ table is not an HBase table"
        );
        let why = c.rows("EXPLAIN OBKV SELECT * FROM `exbad$f` WHERE K = 'a'");
        assert!(
            text(&why[0][5]).contains("R7"),
            "{ctx}: {}",
            text(&why[0][5])
        );
        let why = c.rows("EXPLAIN OBKV SELECT * FROM `order$items` WHERE id = 1");
        assert!(
            text(&why[0][5]).contains("not K, Q, T, V"),
            "{ctx}: {}",
            text(&why[0][5])
        );
        // and plain writes to it run as directly
        ok(&mut c, "INSERT INTO `order$items` VALUES (1, '')");
    }
}

#[test]
fn alter_tablegroup_adopts_an_existing_table_under_the_group_rules() {
    for kind in BOTH {
        for multiple_families in [false, true] {
            let f = Fixture::new(kind, |c| c.hbase.multiple_families = multiple_families);
            let ctx = format!("{} multiple_families={multiple_families}", kind.name());
            let g = if multiple_families { "exg2" } else { "exg1" };
            let all = forms(kind, g);
            // the prefix form (c) as g$f1, the KEY(K) form (a) as g$f2 and g$f3
            let rename = |form: &Form, to: &str| -> Vec<String> {
                form.ddl
                    .iter()
                    .map(|s| s.replace(&form.table, to))
                    .collect()
            };
            let (f1, f2, f3) = (format!("{g}$f1"), format!("{g}$f2"), format!("{g}$f3"));
            f.make(&rename(&all[2], &f1), &f1);
            f.make(&rename(&all[0], &f2), &f2);
            f.make(&rename(&all[2], &f3), &f3);
            let mut c = f.via();
            let _ = c.warnings_or_error(&format!("DROP TABLEGROUP IF EXISTS {g}"));
            // the group must exist first
            let (code, message) = refused(&mut c, &format!("ALTER TABLE `{f1}` TABLEGROUP = {g}"));
            assert_eq!(code, 1146, "{ctx}: {message}");
            ok(&mut c, &format!("CREATE TABLEGROUP {g}"));
            // a group name that is not the table's
            let (code, message) =
                refused(&mut c, &format!("ALTER TABLE `{f1}` TABLEGROUP = other"));
            assert_eq!(code, 1235, "{ctx}: {message}");
            ok(&mut c, &format!("ALTER TABLE `{f1}` TABLEGROUP = {g}"));
            let groups = c.rows(&format!("SHOW TABLEGROUPS LIKE '{g}'"));
            assert!(
                groups.iter().any(|r| text(&r[1]) == f1),
                "{ctx}: {groups:?}"
            );
            let listed = c.rows("SHOW OBKV TABLES");
            let row = listed.iter().find(|r| text(&r[1]) == f1).expect("listed");
            assert_eq!(
                (text(&row[2]), text(&row[6])),
                (g.to_string(), "obkv-proxy".to_string()),
                "{ctx}"
            );
            // SHOW CREATE TABLE names the group, as for a table made through the proxy
            let shown = c.rows(&format!("SHOW CREATE TABLE `{f1}`"));
            assert!(
                text(&shown[0][1]).contains(&format!("TABLEGROUP = '{g}'")),
                "{ctx}: {}",
                text(&shown[0][1])
            );
            // a second family: refused by R8 (one family), or for its other partitioning
            let before = f.direct().scalar(&format!("SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = '{f2}'"));
            let (code, message) = refused(&mut c, &format!("ALTER TABLE `{f2}` TABLEGROUP = {g}"));
            assert_eq!(code, 1235, "{ctx}: {message}");
            assert!(message.contains("R8"), "{ctx}: {message}");
            let after = f.direct().scalar(&format!("SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = '{f2}'"));
            assert_eq!(before, after, "{ctx}: nothing changed");
            // the same partitioning joins when several families are allowed
            let same = c.warnings_or_error(&format!("ALTER TABLE `{f3}` TABLEGROUP = {g}"));
            if multiple_families {
                assert!(same.is_ok(), "{ctx}: {same:?}");
            } else {
                assert!(same.is_err_and(|(_, m)| m.contains("R8")), "{ctx}");
            }
            // the adopted prefix table keeps working: the rule, the rewrite
            let (_, message) = refused(
                &mut c,
                &format!("INSERT INTO `{f1}` (K, Q, T, V) VALUES ('', 'q', -1, 'v')"),
            );
            assert!(message.contains("C1"), "{ctx}: {message}");
            ok(
                &mut c,
                &format!("INSERT INTO `{f1}` (K, Q, T, V) VALUES ('abcd1', 'q', -1, 'v')"),
            );
            assert_eq!(
                c.rows(&format!("SELECT V FROM `{f1}` WHERE K LIKE 'abcd%'"))
                    .len(),
                1,
                "{ctx}"
            );
            for t in [&f1, &f2, &f3] {
                ok(&mut c, &format!("DROP TABLE `{t}`"));
            }
            ok(&mut c, &format!("DROP TABLEGROUP {g}"));
        }
    }
}

#[test]
fn adoption_creates_the_prefix_triggers_mariadb_needs() {
    let f = Fixture::new(Kind::MariaDb, |_| {});
    // the prefix table without its triggers: rows could not be written (the CHECK refuses)
    let t = "extrig$f";
    f.make(
        &[format!("CREATE TABLE `{t}` (K varbinary(1024), Q varbinary(256), T bigint, V longblob NOT NULL, K_PREFIX varbinary(4) NOT NULL DEFAULT '', CHECK (K_PREFIX = substr(K, 1, 4)), PRIMARY KEY (K, Q, T, K_PREFIX)) PARTITION BY KEY(K_PREFIX) PARTITIONS 7")],
        t,
    );
    let mut c = f.via();
    let _ = c.warnings_or_error("DROP TABLEGROUP IF EXISTS extrig");
    ok(&mut c, "CREATE TABLEGROUP extrig");
    ok(&mut c, &format!("ALTER TABLE `{t}` TABLEGROUP = extrig"));
    ok(
        &mut c,
        &format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('wxyz1', 'q', -1, 'v')"),
    );
    assert_eq!(
        f.direct()
            .scalar(&format!("SELECT K_PREFIX FROM `{t}` WHERE K = 'wxyz1'")),
        "wxyz"
    );
    ok(&mut c, &format!("DROP TABLE `{t}`"));
    ok(&mut c, "DROP TABLEGROUP extrig");
}

#[test]
fn a_table_made_on_the_backend_right_after_the_proxy_missed_it_is_checked_at_once() {
    for kind in BOTH {
        let f = Fixture::new(kind, |_| {});
        let t = "exlate$f";
        let mut d = f.direct();
        ok(&mut d, &format!("DROP TABLE IF EXISTS `{t}`"));
        let mut c = f.via();
        // the proxy looks the name up and finds no table
        let (code, _) = refused(
            &mut c,
            &format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('', 'q', -1, 'v')"),
        );
        assert_eq!(code, 1146, "{}", kind.name());
        let v = if kind == Kind::MariaDb {
            "longblob"
        } else {
            "varbinary(1024)"
        };
        ok(&mut d, &format!("CREATE TABLE `{t}` (K varbinary(1024), Q varbinary(256), T bigint, V {v} NOT NULL, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 3"));
        let (_, message) = refused(
            &mut c,
            &format!("INSERT INTO `{t}` (K, Q, T, V) VALUES ('', 'q', -1, 'v')"),
        );
        assert!(message.contains("C1"), "{}: {message}", kind.name());
        assert_eq!(f.count(t), "0");
    }
}

#[test]
fn a_rowkey_left_to_its_default_is_refused_on_every_path() {
    for kind in BOTH {
        let f = Fixture::new(kind, |_| {});
        let t = "exdef$f";
        let v = if kind == Kind::MariaDb {
            "longblob"
        } else {
            "varbinary(1024)"
        };
        f.make(
            &[format!("CREATE TABLE `{t}` (K varbinary(1024), Q varbinary(256), T bigint, V {v} NOT NULL, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 3")],
            t,
        );
        let mut c = f.via();
        // non-strict: the backend itself would store an empty rowkey
        ok(&mut c, "SET SESSION sql_mode = ''");
        for sql in [
            format!("INSERT INTO `{t}` (Q, T, V) VALUES ('q', -1700000000000, 'v')"),
            format!("INSERT INTO `{t}` (K, Q, T, V) VALUES (DEFAULT, 'q', -1700000000000, 'v')"),
            format!("INSERT INTO `{t}` SET Q = 'q', T = -1700000000000, V = 'v'"),
            format!("REPLACE INTO `{t}` (Q, T, V) VALUES ('q', -1700000000000, 'v')"),
        ] {
            let (_, message) = refused(&mut c, &sql);
            assert!(message.contains("C1"), "{}: {sql}: {message}", kind.name());
            assert_eq!(f.count(t), "0", "{}: {sql}", kind.name());
        }
    }
}

#[test]
fn create_table_like_an_existing_hbase_table_copies_its_definition() {
    for kind in BOTH {
        let f = Fixture::new(kind, |_| {});
        let form = &forms(kind, "exlk")[2]; // the prefix form
        f.make(&form.ddl, &form.table);
        let mut c = f.via();
        let _ = c.warnings_or_error("DROP TABLE IF EXISTS `exlkcopy$f`");
        let _ = c.warnings_or_error("DROP TABLEGROUP IF EXISTS exlkcopy");
        ok(&mut c, "CREATE TABLEGROUP exlkcopy");
        ok(
            &mut c,
            &format!("CREATE TABLE `exlkcopy$f` LIKE `{}`", form.table),
        );
        let listed = c.rows("SHOW OBKV TABLES");
        let row = listed
            .iter()
            .find(|r| text(&r[1]) == "exlkcopy$f")
            .unwrap_or_else(|| panic!("{}: the copy is listed", kind.name()));
        assert_eq!(
            (text(&row[2]), text(&row[4]), text(&row[6])),
            (
                "exlkcopy".to_string(),
                "4".to_string(),
                "obkv-proxy".to_string()
            ),
            "{}",
            kind.name()
        );
        // a working HBase table: its rules and its prefix column
        let (_, message) = refused(
            &mut c,
            "INSERT INTO `exlkcopy$f` (K, Q, T, V) VALUES ('', 'q', -1, 'v')",
        );
        assert!(message.contains("C1"), "{message}");
        ok(
            &mut c,
            "INSERT INTO `exlkcopy$f` (K, Q, T, V) VALUES ('abcd1', 'q', -1, 'v')",
        );
        assert_eq!(
            c.rows("SELECT V FROM `exlkcopy$f` WHERE K LIKE 'abcd%'")
                .len(),
            1
        );
        ok(&mut c, "DROP TABLE `exlkcopy$f`");
        ok(&mut c, "DROP TABLEGROUP exlkcopy");
    }
}
