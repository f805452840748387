//! No false alarms (issue 7, part 3): a `$` in a string or a JSON path is not an HBase name,
//! DDL naming no HBase table is forwarded, and the HBase rules can be limited to databases.

use crate::common::proxy;
use crate::common::raw::{Frame, RawConn};
use crate::common::{shared, Kind, BOTH};

const STATEMENTS: &[&str] = &[
    "CREATE TABLE t9 AS SELECT json_value('{\"a\":1}','$.a') x",
    "SELECT * FROM t9",
    "CREATE TABLE en (e ENUM('a$b', '$', 'c$$d') NOT NULL, s SET('x$', 'y'))",
    "INSERT INTO en VALUES ('a$b', 'x$')",
    "SELECT e, s FROM en",
    "SELECT * FROM JSON_TABLE('[{\"a\":1},{\"a\":2}]', '$[*]' COLUMNS (a INT PATH '$.a')) AS jt",
    "CREATE TABLE js (j JSON, v INT AS (JSON_VALUE(j, '$.v')) VIRTUAL)",
    "ALTER TABLE js ADD COLUMN w VARCHAR(10) DEFAULT '$w'",
    "CREATE VIEW vw AS SELECT '$x$' AS c",
    "SELECT c FROM vw",
    "DROP VIEW vw",
    "SELECT 'PREPARE and IMMEDIATE in a string', 'tablegroup' AS x",
];

fn run(addr: &str, db: &str) -> Vec<Vec<Frame>> {
    let mut c = RawConn::connect(addr, "root", "", None).expect("login");
    c.must(&format!("DROP DATABASE IF EXISTS {db}"));
    c.must(&format!("CREATE DATABASE {db}"));
    c.must(&format!("USE {db}"));
    STATEMENTS
        .iter()
        .map(|s| c.query(s.as_bytes()).expect("answered"))
        .collect()
}

#[test]
fn dollars_in_literals_behave_exactly_as_direct() {
    for kind in BOTH {
        let backend = shared(kind);
        let direct = run(&backend.addr, "obkv_fa");
        let p = proxy::start(proxy::config_for(&backend.addr));
        let proxied = run(&p.addr, "obkv_fa");
        for (i, (d, q)) in direct.iter().zip(&proxied).enumerate() {
            assert!(
                d == q,
                "{}: {:?}\ndirect: {d:?}\nproxy:  {q:?}",
                kind.name(),
                STATEMENTS[i]
            );
        }
        // the first statement works directly on both backends (it is the example)
        assert_eq!(direct[0][0].1[0], 0x00, "{}: {:?}", kind.name(), direct[0]);
    }
}

#[test]
fn hbase_rules_can_be_limited_to_configured_databases() {
    let backend = shared(Kind::MariaDb);
    let mut cfg = proxy::config_for(&backend.addr);
    cfg.hbase.databases = vec!["obkv_hb_ns".into()];
    let p = proxy::start(cfg);
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("login");
    for db in ["obkv_hb_ns", "obkv_shop"] {
        c.must(&format!("DROP DATABASE IF EXISTS {db}"));
        c.must(&format!("CREATE DATABASE {db}"));
    }
    // a legacy `$` table outside the HBase databases is an ordinary table
    c.must("USE obkv_shop");
    c.exec("CREATE TABLE order$items (id INT PRIMARY KEY, qty INT)")
        .expect("legacy table outside the HBase databases");
    c.exec("ALTER TABLE order$items ADD COLUMN note VARCHAR(10)")
        .expect("altered like any table");
    // the same name inside an HBase database is checked by the rules
    let refused = c
        .exec("CREATE TABLE obkv_hb_ns.order$items (id INT PRIMARY KEY, qty INT)")
        .expect_err("an HBase namespace");
    assert!(refused.1.contains("OBKV-HBase rule"), "{refused:?}");
    c.must("USE obkv_hb_ns");
    let refused = c
        .exec("CREATE TABLE order$items (id INT PRIMARY KEY, qty INT)")
        .expect_err("current database is an HBase namespace");
    assert!(refused.1.contains("OBKV-HBase rule"), "{refused:?}");
}
