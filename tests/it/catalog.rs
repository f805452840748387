//! The table-group catalog agrees with the database on every path, on both backends: under
//! concurrent DDL through two proxy processes, after DROP DATABASE, RENAME across databases and
//! DDL run directly on the backend, inside users' transactions, with names in other character
//! sets and case variants, and against users without rights.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::common::backends::project_root;
use crate::common::proxy::{self, InProcessProxy};
use crate::common::raw::RawConn;
use crate::common::{shared, Kind, BOTH};

const COLS: &str = "(K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, PRIMARY KEY (K, Q, T))";

fn run(c: &mut RawConn, sql: &str) -> Result<u16, (u16, String)> {
    c.warnings_or_error(sql)
}

fn ok(c: &mut RawConn, sql: &str) -> u16 {
    run(c, sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

fn root(addr: &str) -> RawConn {
    RawConn::connect(addr, "root", "", None).expect("root login")
}

/// The catalog account and an application user with no rights on the catalog schema (made
/// idempotently: tests running at once share them), and `obkv_fb`, an application user for the
/// fallback without a catalog account, with rights on the catalog schema.
fn accounts(backend: &str, dbs: &[&str]) {
    let mut d = root(backend);
    d.must("CREATE USER IF NOT EXISTS obkv_cat IDENTIFIED BY 'catpw'");
    d.must("GRANT ALL ON obkv_meta.* TO obkv_cat");
    // to see every table when deciding whether a table group is empty
    d.must("GRANT SELECT ON *.* TO obkv_cat");
    d.must("CREATE USER IF NOT EXISTS obkv_app IDENTIFIED BY 'apppw'");
    d.must("CREATE USER IF NOT EXISTS obkv_fb IDENTIFIED BY 'fbpw'");
    d.must("GRANT ALL ON obkv_meta.* TO obkv_fb");
    for db in dbs {
        d.must(&format!("CREATE DATABASE IF NOT EXISTS {db}"));
        d.must(&format!("GRANT ALL ON {db}.* TO obkv_app"));
        d.must(&format!("GRANT ALL ON {db}.* TO obkv_fb"));
    }
}

fn with_catalog_account(backend: &str) -> obkv_proxy::config::Config {
    let mut cfg = proxy::config_for(backend);
    cfg.hbase.catalog_user = "obkv_cat".into();
    cfg.hbase.catalog_password = "catpw".into();
    cfg
}

fn app(addr: &str, db: &str) -> RawConn {
    RawConn::connect(addr, "obkv_app", "apppw", Some(db)).expect("app login")
}

type Listing = BTreeSet<(String, Option<String>, Option<String>)>;

fn listing(c: &mut RawConn, pattern: &str) -> Listing {
    let s = |v: &Option<Vec<u8>>| {
        v.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    c.rows(&format!("SHOW TABLEGROUPS LIKE '{pattern}'"))
        .iter()
        .map(|r| (s(&r[0]).unwrap_or_default(), s(&r[1]), s(&r[2])))
        .collect()
}

/// What exists, read directly from the backend: the catalog's groups and the tables of `db`
/// named like the pattern. Panics if a table's group does not exist (the race the issue saw).
fn truth(backend: &str, db: &str, prefix: &str) -> Listing {
    let mut d = root(backend);
    let groups: BTreeSet<String> = d
        .rows(&format!(
            "SELECT CAST(name AS CHAR) FROM obkv_meta.table_groups WHERE name LIKE '{prefix}%'"
        ))
        .iter()
        .map(|r| String::from_utf8_lossy(r[0].as_deref().unwrap_or_default()).into_owned())
        .collect();
    let tables: Vec<String> = d
        .rows(&format!("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME LIKE '{prefix}%'"))
        .iter()
        .map(|r| String::from_utf8_lossy(r[0].as_deref().unwrap_or_default()).into_owned())
        .collect();
    let mut out = Listing::new();
    for t in &tables {
        let g = t.split('$').next().unwrap_or_default().to_string();
        assert!(
            groups.contains(&g),
            "table {t} exists but its table group {g} does not"
        );
        out.insert((g, Some(t.clone()), Some(db.to_string())));
    }
    for g in groups {
        if !tables
            .iter()
            .any(|t| t.split('$').next() == Some(g.as_str()))
        {
            out.insert((g, None, None));
        }
    }
    out
}

/// 10 clients on 2 proxy processes create and drop the same groups and tables in rounds; after
/// every round both proxies list exactly what exists, and no client saw an undocumented error.
#[test]
fn concurrent_ddl_through_two_proxies_never_drifts() {
    for kind in BOTH {
        let backend = shared(kind);
        let db = "cat_conc";
        accounts(&backend.addr, &[db]);
        let mut d = root(&backend.addr);
        for n in 0..3 {
            let _ = d.query_ok(&format!("DROP TABLE IF EXISTS {db}.`cg{n}$f`"));
        }
        let conf = project_root().join(format!(
            "target/obkv-test/catalog-{}.toml",
            std::process::id()
        ));
        std::fs::write(
            &conf,
            // seekdb's DDL is slow under a parallel test run: a generous wait for the group lock
            "[hbase]\ncatalog_user = \"obkv_cat\"\ncatalog_password = \"catpw\"\nddl_lock_timeout_ms = 120000\n",
        )
        .expect("config written");
        let conf = conf.to_string_lossy().into_owned();
        let proxies = [
            proxy::spawn_binary(&backend.addr, &["--config", &conf]),
            proxy::spawn_binary(&backend.addr, &["--config", &conf]),
        ];
        let mut seen_codes = std::collections::BTreeMap::<u16, usize>::new();
        let mut statements = 0usize;
        for round in 0..5 {
            let handles: Vec<_> = (0..10)
                .map(|i| {
                    let addr = proxies[i % 2].addr.clone();
                    std::thread::spawn(move || {
                        let mut rng = rand::rngs::StdRng::seed_from_u64((round * 100 + i) as u64);
                        let mut c = app(&addr, db);
                        if kind == Kind::SeekDb {
                            // seekdb ends a statement after ob_query_timeout (10 s by default)
                            // with 1317; a CREATE TABLE waiting behind the other tests' DDL
                            // took longer than that once in a parallel run. The wait allowed
                            // here is past the proxy's group lock (ddl_lock_timeout_ms above),
                            // so a GET_LOCK that waits its whole 120 s answers 1205, not 1317.
                            c.must("SET SESSION ob_query_timeout = 300000000");
                        }
                        let mut codes = Vec::new();
                        let end = Instant::now() + Duration::from_millis(1200);
                        let mut n_stmts = 0;
                        while Instant::now() < end {
                            let g = format!("cg{}", rng.random_range(0..3));
                            let sql = match rng.random_range(0..6) {
                                0 => format!("CREATE TABLEGROUP {g}"),
                                1 => format!("CREATE TABLEGROUP IF NOT EXISTS {g}"),
                                2 => format!("DROP TABLEGROUP {g}"),
                                3 => format!("CREATE TABLE `{g}$f` {COLS} TABLEGROUP = {g} PARTITION BY KEY(K) PARTITIONS 3"),
                                4 => format!("CREATE TABLE IF NOT EXISTS `{g}$f` {COLS} TABLEGROUP = {g} PARTITION BY KEY(K) PARTITIONS 3"),
                                _ => format!("DROP TABLE IF EXISTS `{g}$f`"),
                            };
                            n_stmts += 1;
                            if let Err((code, msg)) = c.warnings_or_error(&sql) {
                                codes.push((code, format!("{sql}: {msg}")));
                            }
                        }
                        (codes, n_stmts)
                    })
                })
                .collect();
            for h in handles {
                let (codes, n) = h.join().expect("client thread");
                statements += n;
                for (code, what) in codes {
                    // documented: exists (1050), unknown table (1051), unknown table group
                    // (1146), group still has tables (1235); and on seekdb, whose DDL takes
                    // tens of seconds while the other tests run beside this one, the group
                    // lock's own timeout (1205, RULES.md) once ten clients queue on it
                    let lock_wait = code == 1205
                        && kind == Kind::SeekDb
                        && what.contains("hbase.ddl_lock_timeout_ms");
                    // seekdb's own "Internal error" (OB_ERR_UNEXPECTED) among concurrent DDL of
                    // other groups under load (seen once on a CREATE TABLE, once on a DROP
                    // TABLEGROUP's catalog statements, in full runs; never alone): the kernel's
                    // answer, relayed; the checkpoint below still holds the proxy to what exists
                    let kernel = code == 4016
                        && kind == Kind::SeekDb
                        && (what.starts_with("CREATE TABLE")
                            || what.starts_with("DROP TABLEGROUP"))
                        && what.ends_with("Internal error");
                    if kernel {
                        eprintln!("seekdb kernel error, relayed: {what}");
                    }
                    assert!(
                        matches!(code, 1050 | 1051 | 1146 | 1235) || lock_wait || kernel,
                        "{}: undocumented error {code}: {what}",
                        kind.name()
                    );
                    *seen_codes.entry(code).or_default() += 1;
                }
            }
            // the checkpoint: both proxies list what exists
            let want = truth(&backend.addr, db, "cg");
            for p in &proxies {
                let mut c = app(&p.addr, db);
                assert_eq!(
                    listing(&mut c, "cg%"),
                    want,
                    "{}: round {round}: SHOW TABLEGROUPS through {} differs from the database",
                    kind.name(),
                    p.addr
                );
            }
        }
        eprintln!(
            "{}: {statements} statements in 5 rounds, errors by code {seen_codes:?}",
            kind.name()
        );
        assert!(statements > 100, "too little work to mean anything");
        assert!(
            seen_codes.contains_key(&1235) || seen_codes.contains_key(&1050),
            "the clients never collided"
        );
        for n in 0..3 {
            let _ = d.query_ok(&format!("DROP TABLE IF EXISTS {db}.`cg{n}$f`"));
        }
        let mut c = app(&proxies[0].addr, db);
        for n in 0..3 {
            let _ = run(&mut c, &format!("DROP TABLEGROUP IF EXISTS cg{n}"));
        }
    }
}

/// DROP DATABASE takes its tables out of their groups; RENAME across databases carries a table
/// along; DDL run directly on the backend shows through the proxy at once.
#[test]
fn drop_database_rename_and_direct_ddl_keep_groups_true() {
    for kind in BOTH {
        let backend = shared(kind);
        let (a, b) = ("cat_move_a", "cat_move_b");
        accounts(&backend.addr, &[a, b]);
        let p = proxy::start(with_catalog_account(&backend.addr));
        let mut c = app(&p.addr, a);
        let mut d = root(&backend.addr);
        for db in [a, b] {
            d.must(&format!("DROP DATABASE IF EXISTS {db}"));
            d.must(&format!("CREATE DATABASE {db}"));
        }
        ok(&mut c, &format!("USE {a}"));
        let _ = run(&mut c, "DROP TABLEGROUP IF EXISTS mv");
        ok(&mut c, "CREATE TABLEGROUP mv");
        ok(
            &mut c,
            &format!("CREATE TABLE mv$f {COLS} TABLEGROUP = mv PARTITION BY KEY(K) PARTITIONS 3"),
        );
        let row = |db: &str, t: &str| ("mv".to_string(), Some(t.to_string()), Some(db.to_string()));
        assert_eq!(listing(&mut c, "mv"), BTreeSet::from([row(a, "mv$f")]));
        // the group's catalog row deleted by hand: the group still shows (its table says it
        // exists), and the proxy records it again
        d.must("DELETE FROM obkv_meta.table_groups WHERE name = 'mv'");
        assert_eq!(listing(&mut c, "mv"), BTreeSet::from([row(a, "mv$f")]));
        assert_eq!(
            d.scalar("SELECT COUNT(*) FROM obkv_meta.table_groups WHERE name = 'mv'"),
            "1",
            "{}: not repaired",
            kind.name()
        );
        // RENAME across databases (through the proxy): the table keeps its group
        ok(&mut c, &format!("RENAME TABLE {a}.`mv$f` TO {b}.`mv$f`"));
        assert_eq!(
            listing(&mut c, "mv"),
            BTreeSet::from([row(b, "mv$f")]),
            "{}",
            kind.name()
        );
        let shown = c.rows(&format!("SHOW CREATE TABLE {b}.`mv$f`"));
        let text = String::from_utf8_lossy(shown[0][1].as_deref().unwrap_or_default()).into_owned();
        assert!(
            text.contains("TABLEGROUP = 'mv'"),
            "{}: {text}",
            kind.name()
        );
        assert!(
            !text.contains("obkv-hbase"),
            "{}: marker shown: {text}",
            kind.name()
        );
        // refused while the table exists
        assert_eq!(
            run(&mut c, "DROP TABLEGROUP mv").expect_err("refused").0,
            1235
        );
        // DROP DATABASE (the backend's own statement, forwarded): the group is empty at once
        ok(&mut c, &format!("DROP DATABASE {b}"));
        assert_eq!(
            listing(&mut c, "mv"),
            BTreeSet::from([("mv".to_string(), None, None)])
        );
        ok(&mut c, "DROP TABLEGROUP mv");
        assert!(listing(&mut c, "mv").is_empty());
        // DDL straight on the backend, behind the proxy's back
        d.must(&format!("CREATE DATABASE {b}"));
        ok(&mut c, "CREATE TABLEGROUP mv");
        ok(
            &mut c,
            &format!(
                "CREATE TABLE {a}.mv$f {COLS} TABLEGROUP = mv PARTITION BY KEY(K) PARTITIONS 3"
            ),
        );
        d.must(&format!("RENAME TABLE {a}.`mv$f` TO {b}.`mv$g`"));
        assert_eq!(
            listing(&mut c, "mv"),
            BTreeSet::from([row(b, "mv$g")]),
            "{}",
            kind.name()
        );
        d.must(&format!("DROP TABLE {b}.`mv$g`"));
        assert_eq!(
            listing(&mut c, "mv"),
            BTreeSet::from([("mv".to_string(), None, None)])
        );
        ok(
            &mut c,
            &format!(
                "CREATE TABLE {a}.mv$f {COLS} TABLEGROUP = mv PARTITION BY KEY(K) PARTITIONS 3"
            ),
        );
        d.must(&format!("DROP DATABASE {a}"));
        assert_eq!(
            listing(&mut c, "mv"),
            BTreeSet::from([("mv".to_string(), None, None)])
        );
        ok(&mut c, "DROP TABLEGROUP mv");
        // a table copied with CREATE TABLE ... LIKE through the proxy is an HBase table of the
        // same group, with the rules applied to it: a second family where the configuration
        // allows several, refused where it does not, and never a non-HBase name
        ok(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {a}"));
        ok(&mut c, &format!("USE {a}"));
        ok(&mut c, "CREATE TABLEGROUP mv");
        ok(
            &mut c,
            &format!("CREATE TABLE mv$f {COLS} TABLEGROUP = mv PARTITION BY KEY(K) PARTITIONS 3"),
        );
        assert_eq!(
            run(&mut c, &format!("CREATE TABLE {b}.`mv$g` LIKE {a}.`mv$f`"))
                .expect_err("one family")
                .0,
            1235
        );
        let mut several = with_catalog_account(&backend.addr);
        several.hbase.multiple_families = true;
        let p2 = proxy::start(several);
        let mut c2 = app(&p2.addr, a);
        ok(&mut c2, &format!("CREATE TABLE {b}.`mv$g` LIKE {a}.`mv$f`"));
        assert_eq!(
            listing(&mut c, "mv"),
            BTreeSet::from([row(a, "mv$f"), row(b, "mv$g")])
        );
        assert_eq!(
            run(&mut c2, "CREATE TABLE plaincopy LIKE mv$f")
                .expect_err("refused")
                .0,
            1103,
            "{}",
            kind.name()
        );
        ok(&mut c, "DROP TABLE mv$f");
        ok(&mut c, &format!("DROP TABLE {b}.`mv$g`"));
        ok(&mut c, "DROP TABLEGROUP mv");
    }
}

/// HBase DDL inside a user's open transaction with autocommit off, then a disconnect: the
/// catalog matches the database, and another client is never blocked by catalog locks. With
/// the catalog account and without it (catalog work on the user's connection).
#[test]
fn transactions_around_hbase_ddl_leave_no_catalog_locks() {
    for kind in BOTH {
        let backend = shared(kind);
        let db = "cat_txn";
        accounts(&backend.addr, &[db]);
        let mut d = root(&backend.addr);
        for own in [true, false] {
            let cfg = if own {
                with_catalog_account(&backend.addr)
            } else {
                proxy::config_for(&backend.addr)
            };
            let p = proxy::start(cfg);
            // without a catalog account, a user with rights on the catalog schema
            let user = |addr: &str| {
                if own {
                    app(addr, db)
                } else {
                    RawConn::connect(addr, "obkv_fb", "fbpw", Some(db)).expect("login")
                }
            };
            let mut a = user(&p.addr);
            let _ = run(&mut a, "DROP TABLE IF EXISTS tx$f");
            let _ = run(&mut a, "DROP TABLEGROUP IF EXISTS tx");
            ok(
                &mut a,
                "CREATE TABLE IF NOT EXISTS plain_rows (id int PRIMARY KEY)",
            );
            ok(&mut a, "SET autocommit = 0");
            ok(&mut a, "INSERT INTO plain_rows VALUES (1)");
            ok(&mut a, "CREATE TABLEGROUP tx");
            // another client, at once: not blocked by anything the first left behind
            let mut b = user(&p.addr);
            let started = Instant::now();
            assert_eq!(
                run(&mut b, "CREATE TABLEGROUP tx").expect_err("exists").0,
                1050,
                "{} own={own}",
                kind.name()
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{} own={own}: blocked",
                kind.name()
            );
            ok(&mut a, "INSERT INTO plain_rows VALUES (2)");
            ok(
                &mut a,
                &format!(
                    "CREATE TABLE tx$f {COLS} TABLEGROUP = tx PARTITION BY KEY(K) PARTITIONS 3"
                ),
            );
            ok(&mut a, "INSERT INTO plain_rows VALUES (3)");
            // the first client goes away with a transaction open
            drop(a);
            let started = Instant::now();
            assert_eq!(
                run(&mut b, "DROP TABLEGROUP tx")
                    .expect_err("has a table")
                    .0,
                1235,
                "{} own={own}",
                kind.name()
            );
            assert!(started.elapsed() < Duration::from_secs(5));
            assert_eq!(
                listing(&mut b, "tx"),
                truth(&backend.addr, db, "tx"),
                "{} own={own}",
                kind.name()
            );
            assert_eq!(
                listing(&mut b, "tx").len(),
                1,
                "{} own={own}: the table is listed",
                kind.name()
            );
            // DDL committed what came before it, as DDL does; the last insert was rolled back
            let ids = d.rows(&format!("SELECT id FROM {db}.plain_rows ORDER BY id"));
            assert_eq!(ids.len(), 2, "{} own={own}: {ids:?}", kind.name());
            ok(&mut b, "SET autocommit = 0");
            ok(&mut b, "DROP TABLE tx$f");
            ok(&mut b, "DROP TABLEGROUP tx");
            drop(b);
            assert!(truth(&backend.addr, db, "tx").is_empty());
            let mut c = user(&p.addr);
            assert!(
                listing(&mut c, "tx").is_empty(),
                "{} own={own}",
                kind.name()
            );
            ok(&mut c, "DROP TABLE plain_rows");
        }
    }
}

/// The half-done cases: a name in another character set, IF NOT EXISTS with a warning, case
/// variants — each leaves the database and the catalog agreeing.
#[test]
fn charsets_warnings_and_case_variants_leave_nothing_half_done() {
    for kind in BOTH {
        let backend = shared(kind);
        let db = "cat_half";
        accounts(&backend.addr, &[db]);
        let p = proxy::start(with_catalog_account(&backend.addr));
        let mut c = app(&p.addr, db);
        let mut d = root(&backend.addr);
        // a name that is not UTF-8 in the client's character set (MariaDB: latin1 0xE9; seekdb
        // knows only utf8mb4 and binary, and refuses latin1 itself)
        let latin1 = c.query_ok("SET NAMES latin1");
        assert_eq!(latin1, kind == Kind::MariaDb, "{}", kind.name());
        let e_acute: &[u8] = if latin1 { &[0xE9] } else { "é".as_bytes() };
        let q = |pre: &str, post: &str| [pre.as_bytes(), e_acute, post.as_bytes()].concat();
        let exec = |c: &mut RawConn, sql: &[u8]| {
            let frames = c.query(sql).expect("sent");
            crate::common::raw::err_of(&frames[0].1)
        };
        let _ = exec(&mut c, &q("DROP TABLE IF EXISTS `", "$f`"));
        let _ = exec(&mut c, &q("DROP TABLEGROUP IF EXISTS `", "`"));
        assert_eq!(exec(&mut c, &q("CREATE TABLEGROUP `", "`")), None);
        let create = q(
            "CREATE TABLE `",
            "$f` (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, K_PREFIX varbinary(4) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) TABLEGROUP = `x` PARTITION BY KEY(K_PREFIX) PARTITIONS 3",
        );
        // the TABLEGROUP option names the same group in the same bytes
        let create = {
            let s = create;
            let at = s.windows(3).position(|w| w == b"`x`").expect("placeholder");
            [&s[..at + 1], e_acute, &s[at + 2..]].concat()
        };
        assert_eq!(exec(&mut c, &create), None, "{}", kind.name());
        // stored under the UTF-8 name the backend gave it, with its triggers (MariaDB)
        let names = d.rows(&format!("SELECT HEX(TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME LIKE '%$f'"));
        assert_eq!(names.len(), 1);
        assert_eq!(names[0][0].as_deref(), Some(&b"C3A92466"[..]));
        if kind == Kind::MariaDb {
            let n = d.scalar(&format!("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = '{db}' AND HEX(EVENT_OBJECT_TABLE) = 'C3A92466'"));
            assert_eq!(n, "2");
        }
        // listed, in the client's own character set
        let rows = c.rows("SHOW TABLEGROUPS");
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r[2].as_deref() == Some(db.as_bytes()))
            .collect();
        assert_eq!(mine.len(), 1, "{rows:?}");
        assert_eq!(mine[0][0].as_deref(), Some(e_acute));
        assert_eq!(mine[0][1].as_deref(), Some(&q("", "$f")[..]));
        assert_eq!(
            exec(&mut c, &q("DROP TABLEGROUP `", "`")).map(|e| e.0),
            Some(1235)
        );
        assert_eq!(exec(&mut c, &q("DROP TABLE `", "$f`")), None);
        assert_eq!(exec(&mut c, &q("DROP TABLEGROUP `", "`")), None);
        ok(&mut c, "SET NAMES utf8mb4");

        // IF NOT EXISTS on a new table whose creation warns: created in full, not taken as
        // "already existed"
        let _ = run(&mut c, "DROP TABLE IF EXISTS wn$f");
        let _ = run(&mut c, "DROP TABLEGROUP IF EXISTS wn");
        ok(&mut c, "CREATE TABLEGROUP wn");
        let engine = if kind == Kind::MariaDb {
            ok(&mut c, "SET SESSION sql_mode = ''");
            "ENGINE = nosuch"
        } else {
            "ENGINE = MyISAM"
        };
        let warned = ok(&mut c, &format!("CREATE TABLE IF NOT EXISTS wn$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, K_PREFIX varbinary(4) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) {engine} TABLEGROUP = wn PARTITION BY KEY(K_PREFIX) PARTITIONS 3"));
        assert!(warned > 0, "{}: the backend did not warn", kind.name());
        assert_eq!(listing(&mut c, "wn").len(), 1);
        assert!(listing(&mut c, "wn")
            .iter()
            .all(|r| r.1.as_deref() == Some("wn$f")));
        // its first insert works (MariaDB: the triggers are there)
        ok(
            &mut c,
            "INSERT INTO wn$f (K, Q, T, V) VALUES ('row1', 'q', -1, 'v')",
        );
        // and IF NOT EXISTS on the existing table is a note, nothing else
        let n = ok(&mut c, "CREATE TABLE IF NOT EXISTS wn$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = wn PARTITION BY KEY(K) PARTITIONS 3");
        assert!(n > 0);
        ok(&mut c, "SET SESSION sql_mode = DEFAULT");

        // case variants: g$F after g$f is the same table where names are case-insensitive
        // (seekdb), a second family where they are not (MariaDB, refused by the one-family
        // rule); either way DROP TABLEGROUP stays refused while g$f exists
        let _ = run(&mut c, "DROP TABLE IF EXISTS cv$f");
        let _ = run(&mut c, "DROP TABLEGROUP IF EXISTS cv");
        ok(&mut c, "CREATE TABLEGROUP cv");
        ok(
            &mut c,
            &format!("CREATE TABLE cv$f {COLS} TABLEGROUP = cv PARTITION BY KEY(K) PARTITIONS 3"),
        );
        let again = run(
            &mut c,
            &format!("CREATE TABLE cv$F {COLS} TABLEGROUP = cv PARTITION BY KEY(K) PARTITIONS 3"),
        );
        let code = again.expect_err("refused").0;
        assert_eq!(
            code,
            if kind == Kind::MariaDb { 1235 } else { 1050 },
            "{}",
            kind.name()
        );
        if kind == Kind::SeekDb {
            // and the group name too
            assert_eq!(
                run(&mut c, "CREATE TABLEGROUP CV").expect_err("exists").0,
                1050
            );
        }
        assert_eq!(
            run(&mut c, "DROP TABLEGROUP cv").expect_err("refused").0,
            1235
        );
        assert_eq!(listing(&mut c, "cv").len(), 1);
        ok(&mut c, "DROP TABLE cv$f");
        ok(&mut c, "DROP TABLEGROUP cv");
        ok(&mut c, "DROP TABLE wn$f");
        ok(&mut c, "DROP TABLEGROUP wn");
    }
}

/// A user without rights on a table can neither read nor change its catalog entry through the
/// proxy; with the catalog account, applications need no rights on the catalog at all; and a
/// definition forged in the catalog schema is not believed.
#[test]
fn catalog_entries_follow_the_backends_grants_and_cannot_be_forged() {
    for kind in BOTH {
        let backend = shared(kind);
        let db = "cat_grants";
        accounts(&backend.addr, &[db]);
        let mut d = root(&backend.addr);
        let _ = d.query_ok("DROP USER obkv_nosy");
        d.must("CREATE USER obkv_nosy IDENTIFIED BY 'pw'");
        let p = proxy::start(with_catalog_account(&backend.addr));
        let mut owner = app(&p.addr, db);
        let _ = run(&mut owner, "DROP TABLE IF EXISTS sg$f");
        let _ = run(&mut owner, "DROP TABLEGROUP IF EXISTS sg");
        ok(&mut owner, "CREATE TABLEGROUP sg");
        ok(&mut owner, &format!("CREATE TABLE sg$f {COLS} TABLEGROUP = sg KV_ATTRIBUTES = '{{\"Hbase\": {{\"MaxVersions\": 3}}}}' PARTITION BY KEY(K) PARTITIONS 3"));
        // the application user has no rights on obkv_meta, yet everything works
        let denied = RawConn::connect(&backend.addr, "obkv_app", "apppw", None)
            .expect("direct")
            .warnings_or_error("SELECT * FROM obkv_meta.hbase_ddl");
        assert!(denied.is_err(), "{}", kind.name());
        let mut nosy = RawConn::connect(&p.addr, "obkv_nosy", "pw", None).expect("login");
        let read = run(&mut nosy, &format!("SHOW CREATE TABLE {db}.`sg$f`"));
        assert!(read.is_err(), "{}: read another's definition", kind.name());
        let alter = run(
            &mut nosy,
            &format!(
                "ALTER TABLE {db}.`sg$f` KV_ATTRIBUTES = '{{\"Hbase\": {{\"MaxVersions\": 9}}}}'"
            ),
        );
        assert!(
            alter.is_err(),
            "{}: altered another's definition",
            kind.name()
        );
        assert!(listing(&mut nosy, "sg").iter().all(|r| r.1.is_none()));
        let shown = |c: &mut RawConn| {
            let r = c.rows(&format!("SHOW CREATE TABLE {db}.`sg$f`"));
            String::from_utf8_lossy(r[0][1].as_deref().unwrap_or_default()).into_owned()
        };
        let before = shown(&mut owner);
        assert!(before.contains("\"MaxVersions\": 3"), "{before}");
        // forging the stored definition (as anyone with write access to the catalog schema
        // could; this table's only, other tests store theirs beside it): a fresh proxy does
        // not believe a text that does not hash to its id
        d.must("UPDATE obkv_meta.hbase_ddl SET ddl = REPLACE(ddl, 'MaxVersions\": 3', 'MaxVersions\": 7') WHERE ddl LIKE '%sg$f%'");
        assert_eq!(
            d.scalar("SELECT COUNT(*) FROM obkv_meta.hbase_ddl WHERE ddl LIKE '%sg$f%' AND ddl LIKE '%MaxVersions\": 7%'"),
            "1",
            "{}: the stored definition forged",
            kind.name()
        );
        let fresh = proxy::start(with_catalog_account(&backend.addr));
        let mut o2 = app(&fresh.addr, db);
        let after = shown(&mut o2);
        assert!(
            !after.contains("\"MaxVersions\": 7"),
            "{}: forged text shown: {after}",
            kind.name()
        );
        // put right, the definition is believed again (by another fresh proxy)
        d.must("UPDATE obkv_meta.hbase_ddl SET ddl = REPLACE(ddl, 'MaxVersions\": 7', 'MaxVersions\": 3') WHERE ddl LIKE '%sg$f%'");
        let third = proxy::start(with_catalog_account(&backend.addr));
        let mut o3 = app(&third.addr, db);
        let now = shown(&mut o3);
        assert!(now.contains("\"MaxVersions\": 3"), "{}: {now}", kind.name());
        // the owner's own change goes through, stored under a new id
        ok(
            &mut o3,
            "ALTER TABLE sg$f KV_ATTRIBUTES = '{\"Hbase\": {\"MaxVersions\": 5}}'",
        );
        let by_third = shown(&mut o3);
        assert!(
            by_third.contains("\"MaxVersions\": 5"),
            "{}: {by_third}",
            kind.name()
        );
        let by_owner = shown(&mut owner);
        assert!(
            by_owner.contains("\"MaxVersions\": 5"),
            "{}: another proxy's session sees the old definition: {by_owner}",
            kind.name()
        );
        ok(&mut o3, "DROP TABLE sg$f");
        ok(&mut o3, "DROP TABLEGROUP sg");
        d.must("DROP USER obkv_nosy");
        drop::<Vec<InProcessProxy>>(vec![p, fresh, third]);
    }
}
