//! The OBKV-HBase model through the proxy, on both backends: table groups kept in the backend,
//! the rules (each refusing with nothing changed), the same DDL on every backend, SHOW CREATE
//! TABLE as written, warnings, the catalog shared by several proxies and reconciled, and rows
//! placed in exactly the partition the model predicts.

use std::collections::HashMap;

use obkv_proxy::config::Enforcement;
use obkv_proxy::hbase::partition::Partitioning;
use rand::{Rng, SeedableRng};

use crate::common::proxy::{self, InProcessProxy};
use crate::common::raw::RawConn;
use crate::common::{shared, Kind, BOTH};

/// Ok(warnings) or Err((code, message)).
fn run(c: &mut RawConn, sql: &str) -> Result<u16, (u16, String)> {
    c.warnings_or_error(sql)
}

fn ok(c: &mut RawConn, sql: &str) -> u16 {
    run(c, sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

fn session(p: &InProcessProxy, db: &str) -> RawConn {
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("connect through proxy");
    ok(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {db}"));
    ok(&mut c, &format!("USE {db}"));
    c
}

fn table_exists(backend: &str, db: &str, table: &str) -> bool {
    let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
    let sql = format!("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = '{table}'");
    d.scalar(&sql) == "1"
}

const COLS: &str = "K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL";

/// The definitions from the OBKV guide (the list), as a user writes them for OceanBase.
fn guide(group: &str) -> Vec<(String, String)> {
    vec![
        (format!("{group}a$f"), format!("CREATE TABLE {group}a$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group}a PARTITION BY KEY(K) PARTITIONS 97")),
        (format!("{group}b$f"), format!("CREATE TABLE {group}b$f (K varbinary(1024), Q varbinary(256), T bigint, V longblob NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group}b PARTITION BY KEY(K) PARTITIONS 97")),
        (format!("{group}c$f"), format!("CREATE TABLE {group}c$f ({COLS}, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) TABLEGROUP = {group}c PARTITION BY KEY(K_PREFIX) PARTITIONS 97")),
        (format!("{group}d$f"), format!("CREATE TABLE {group}d$f ({COLS}, K_PREFIX varbinary(64) GENERATED ALWAYS AS (substring(K, 1, 64)) STORED, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group}d PARTITION BY KEY(K_PREFIX) PARTITIONS 97")),
        (format!("{group}e$f"), format!("CREATE TABLE {group}e$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group}e PARTITION BY RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('a'), PARTITION p1 VALUES LESS THAN ('w'), PARTITION p2 VALUES LESS THAN (MAXVALUE))")),
    ]
}

fn show_create(c: &mut RawConn, sql: &str) -> String {
    let rows = c.rows(sql);
    String::from_utf8_lossy(rows[0][1].as_deref().unwrap_or_default()).into_owned()
}

/// The canonical multi-line form: one column per line, the key, the group, no translation.
fn assert_canonical(shown: &str, name: &str, group: &str, kind: Kind) {
    let ctx = format!("{}: {name}:\n{shown}", kind.name());
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], format!("CREATE TABLE `{name}` ("), "{ctx}");
    for col in [
        "`K` varbinary(1024) NOT NULL,",
        "`Q` varbinary(256) NOT NULL,",
        "`T` bigint(20) NOT NULL,",
    ] {
        assert!(lines.iter().any(|l| l.trim() == col), "{col} in {ctx}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.trim() == "PRIMARY KEY (`K`, `Q`, `T`)"),
        "{ctx}"
    );
    assert!(shown.contains(&format!("TABLEGROUP = '{group}'")), "{ctx}");
    for translation in ["CHECK", "mediumblob", "obkv_"] {
        assert!(!shown.contains(translation), "{translation} in {ctx}");
    }
}

#[test]
fn guide_definitions_work_unchanged_on_every_backend() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let mut c = session(&p, "hb_guide");
        for (name, ddl) in guide("gd") {
            let group = name.split('$').next().expect("group");
            let _ = run(&mut c, &format!("DROP TABLE IF EXISTS `{name}`"));
            let _ = run(&mut c, &format!("DROP TABLEGROUP IF EXISTS {group}"));
            ok(&mut c, &format!("CREATE TABLEGROUP {group}"));
            ok(&mut c, &ddl);
            assert!(
                table_exists(&backend.addr, "hb_guide", &name),
                "{}: {name} not created",
                kind.name()
            );
            // a cell with every byte value round-trips
            ok(&mut c, &format!("INSERT INTO `{name}` (K, Q, T, V) VALUES (X'00FF61626364', 'q', -1700000000000, X'{}')", (0..=255u8).map(|b| format!("{b:02X}")).collect::<String>()));
            let v = c.rows(&format!(
                "SELECT HEX(V) FROM `{name}` WHERE K = X'00FF61626364'"
            ));
            assert_eq!(
                v[0][0].as_deref().map(<[u8]>::len),
                Some(512),
                "{}: {name}",
                kind.name()
            );
            // SHOW CREATE TABLE shows the HBase table in OceanBase's canonical form, in any
            // way of naming it, and never the translation
            for form in [
                format!("SHOW CREATE TABLE `{name}`"),
                format!("show create table hb_guide.{name}"),
                format!("SHOW CREATE TABLE `hb_guide`.`{name}`"),
            ] {
                let shown = show_create(&mut c, &form);
                assert_canonical(&shown, &name, group, kind);
            }
        }
        if kind == Kind::MariaDb {
            // the translated prefix column keeps one-partition pruning
            let name = "gdc$f";
            ok(
                &mut c,
                &format!("INSERT INTO `{name}` (K, Q, T, V) VALUES ('abcdXYZ', 'q', -1700000000000, 'v')"),
            );
            let plan = c.rows(&format!("EXPLAIN PARTITIONS SELECT * FROM `{name}` WHERE K = 'abcdXYZ' AND K_PREFIX = 'abcd'"));
            let parts =
                String::from_utf8_lossy(plan[0][3].as_deref().unwrap_or_default()).into_owned();
            assert!(!parts.contains(','), "more than one partition: {parts}");
            assert_eq!(
                c.scalar(&format!(
                    "SELECT K_PREFIX FROM `{name}` WHERE K = 'abcdXYZ'"
                )),
                "abcd"
            );
        }
    }
}

#[test]
fn each_rule_refuses_and_changes_nothing() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let mut c = session(&p, "hb_rules");
        let _ = run(&mut c, "DROP TABLE IF EXISTS `gr$f`");
        let _ = run(&mut c, "DROP TABLEGROUP IF EXISTS gr");
        ok(&mut c, "CREATE TABLEGROUP gr");
        let good = format!("CREATE TABLE gr$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gr PARTITION BY KEY(K) PARTITIONS 97");
        let cases: Vec<(&str, u16, String)> = vec![
            ("R1 name", 1103, good.replace("gr$f", "gr$")),
            (
                "R1 group option",
                1235,
                good.replace("TABLEGROUP = gr", "TABLEGROUP = other"),
            ),
            (
                "R1 group missing",
                1146,
                good.replace("gr$f", "nosuchgroup$f")
                    .replace("TABLEGROUP = gr", "TABLEGROUP = nosuchgroup"),
            ),
            (
                "R2 order",
                1166,
                good.replace("Q varbinary(256), T bigint", "T bigint, Q varbinary(256)"),
            ),
            (
                "R2 extra",
                1166,
                good.replace("NOT NULL,", "NOT NULL, extra int,"),
            ),
            (
                "R3 length",
                1074,
                good.replace("K varbinary(1024)", "K varbinary(2000)"),
            ),
            ("R3 type", 1235, good.replace("T bigint", "T int")),
            (
                "R4",
                1235,
                good.replace("PRIMARY KEY (K, Q, T)", "PRIMARY KEY (K, T, Q)"),
            ),
            (
                "R5",
                1235,
                good.replace("KEY(K) PARTITIONS 97", "HASH(T) PARTITIONS 97"),
            ),
            ("R6", 1235, good.replace("PARTITIONS 97", "PARTITIONS 96")),
            (
                "R7",
                1235,
                good.replace("PRIMARY KEY (K, Q, T)", "PRIMARY KEY (K, Q, T), KEY iq (Q)"),
            ),
            (
                "R9",
                1210,
                good.replace(
                    "TABLEGROUP = gr",
                    "TABLEGROUP = gr KV_ATTRIBUTES = '{\"Hbase\": {\"TimeToLive\": 0}}'",
                ),
            ),
        ];
        for (rule, code, sql) in &cases {
            match run(&mut c, sql) {
                Err((got, msg)) => {
                    assert_eq!(got, *code, "{} {rule}: {msg}", kind.name());
                    assert!(
                        msg.contains(&rule[..2]),
                        "{rule}: message names the rule: {msg}"
                    );
                }
                Ok(_) => panic!("{} {rule} accepted: {sql}", kind.name()),
            }
            assert!(
                !table_exists(&backend.addr, "hb_rules", "gr$f"),
                "{rule}: a refused statement changed the database"
            );
        }
        // the same statement without the fault is accepted, with valid KV_ATTRIBUTES (R9), which
        // the catalog keeps where the backend lacks the option
        let with_kv = good.replace("TABLEGROUP = gr", "TABLEGROUP = gr KV_ATTRIBUTES = '{\"Hbase\": {\"TimeToLive\": 86400, \"MaxVersions\": 3}}'");
        ok(&mut c, &with_kv);
        let shown = show_create(&mut c, "SHOW CREATE TABLE `gr$f`");
        assert!(
            shown.contains(
                "KV_ATTRIBUTES = '{\"Hbase\": {\"TimeToLive\": 86400, \"MaxVersions\": 3}}'"
            ),
            "{}: {shown}",
            kind.name()
        );
        assert_canonical(&shown, "gr$f", "gr", kind);
        // R8: a second family in the group
        let second = good.replace("gr$f", "gr$g");
        assert_eq!(run(&mut c, &second).err().map(|e| e.0), Some(1235));
        // after creation: no column changes, no indexes, no moving groups
        for sql in [
            "ALTER TABLE `gr$f` ADD COLUMN x int",
            "ALTER TABLE `gr$f` MODIFY V longblob",
            "CREATE INDEX iq ON `gr$f` (Q)",
            "RENAME TABLE `gr$f` TO `other$f`",
            "RENAME TABLE `gr$f` TO `grf`",
        ] {
            assert!(run(&mut c, sql).is_err(), "{} accepted: {sql}", kind.name());
        }
        // repartitioning that obeys rules 5 and 6 is allowed, and the catalog follows it
        ok(
            &mut c,
            "ALTER TABLE `gr$f` PARTITION BY KEY(K) PARTITIONS 193",
        );
        let shown = show_create(&mut c, "SHOW CREATE TABLE `gr$f`");
        // MariaDB shows the kept definition; seekdb its own list of 193 partitions
        assert!(
            shown.ends_with("partitions 193") || shown.contains("`p192`"),
            "{}: {shown}",
            kind.name()
        );
        assert!(run(
            &mut c,
            "ALTER TABLE `gr$f` PARTITION BY KEY(K) PARTITIONS 10"
        )
        .is_err());
        // rename within the group, truncate and drop keep the catalog right
        ok(&mut c, "RENAME TABLE `gr$f` TO `gr$h`");
        let groups = c.rows("SHOW TABLEGROUPS LIKE 'gr'");
        assert_eq!(groups[0][1].as_deref(), Some(&b"gr$h"[..]));
        ok(&mut c, "TRUNCATE TABLE `gr$h`");
        assert!(
            run(&mut c, "DROP TABLEGROUP gr").is_err(),
            "non-empty group dropped"
        );
        ok(&mut c, "DROP TABLE `gr$h`");
        ok(&mut c, "DROP TABLEGROUP gr");
        assert!(c.rows("SHOW TABLEGROUPS LIKE 'gr'").is_empty());
    }
}

#[test]
fn table_groups_are_shared_by_several_proxies() {
    for kind in BOTH {
        let backend = shared(kind);
        let a = proxy::start(proxy::config_for(&backend.addr));
        let b = proxy::start(proxy::config_for(&backend.addr));
        let mut ca = session(&a, "hb_shared");
        let mut cb = session(&b, "hb_shared");
        let _ = run(&mut ca, "DROP TABLE IF EXISTS `gs$f`");
        let _ = run(&mut ca, "DROP TABLEGROUP IF EXISTS gs");
        ok(&mut ca, "CREATE TABLEGROUP gs");
        assert_eq!(
            run(&mut cb, "CREATE TABLEGROUP gs").err().map(|e| e.0),
            Some(1050),
            "{}: proxy B does not see A's group",
            kind.name()
        );
        assert_eq!(ok(&mut cb, "CREATE TABLEGROUP IF NOT EXISTS gs"), 1);
        ok(&mut cb, &format!("CREATE TABLE gs$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gs PARTITION BY KEY(K) PARTITIONS 23"));
        let seen = ca.rows("SHOW TABLEGROUPS LIKE 'gs'");
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0][1].as_deref(), Some(&b"gs$f"[..]));
        assert_eq!(seen[0][2].as_deref(), Some(&b"hb_shared"[..]));
        // a restarted proxy loses nothing
        drop(a);
        let a2 = proxy::start(proxy::config_for(&backend.addr));
        let mut c2 = session(&a2, "hb_shared");
        assert_eq!(c2.rows("SHOW TABLEGROUPS LIKE 'gs'").len(), 1);
        assert!(String::from_utf8_lossy(
            c2.rows("SHOW CREATE TABLE `gs$f`")[0][1]
                .as_deref()
                .unwrap_or_default()
        )
        .contains("TABLEGROUP = 'gs'"));
    }
}

#[test]
fn warnings_and_enforcement_modes() {
    for kind in BOTH {
        let backend = shared(kind);
        let strict = proxy::start(proxy::config_for(&backend.addr));
        let mut c = session(&strict, "hb_modes");
        for g in ["gw1", "gw2", "gw3", "gw4"] {
            let _ = run(&mut c, &format!("DROP TABLE IF EXISTS `{g}$f`"));
            let _ = run(&mut c, &format!("DROP TABLE IF EXISTS `{g}$g`"));
            let _ = run(&mut c, &format!("DROP TABLEGROUP IF EXISTS {g}"));
            ok(&mut c, &format!("CREATE TABLEGROUP {g}"));
        }
        // a warning (not prime, V nullable) in the OK packet and in SHOW WARNINGS
        let w = ok(&mut c, "CREATE TABLE gw1$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024), PRIMARY KEY (K, Q, T)) TABLEGROUP = gw1 PARTITION BY KEY(K) PARTITIONS 99");
        assert!(w >= 2, "{}: warning count {w}", kind.name());
        let shown = c.rows("SHOW WARNINGS");
        let text: Vec<String> = shown
            .iter()
            .map(|r| String::from_utf8_lossy(r[2].as_deref().unwrap_or_default()).into_owned())
            .collect();
        assert!(
            text.iter()
                .any(|m| m.contains("R6") && m.contains("not prime")),
            "{text:?}"
        );
        assert!(text.iter().any(|m| m.contains("NOT NULL")), "{text:?}");
        assert_eq!(shown.len(), usize::from(w));
        // a K/Q/T/V table without '$' runs, with a warning
        let _ = run(&mut c, "DROP TABLE IF EXISTS plainkqtv");
        assert_eq!(ok(&mut c, "CREATE TABLE plainkqtv (K varbinary(1024), Q varbinary(256), T bigint, V longblob NOT NULL, PRIMARY KEY (K, Q, T))"), 1);
        // warn mode: a rule breach is created, with the finding as a warning
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.hbase.enforcement = Enforcement::Warn;
        let warn = proxy::start(cfg);
        let mut cw = session(&warn, "hb_modes");
        let w = ok(&mut cw, &format!("CREATE TABLE gw2$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gw2 PARTITION BY KEY(K) PARTITIONS 96"));
        assert!(w >= 1);
        assert!(cw
            .rows("SHOW WARNINGS")
            .iter()
            .any(|r| String::from_utf8_lossy(r[2].as_deref().unwrap_or_default()).contains("R6")));
        // off: no findings at all
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.hbase.enforcement = Enforcement::Off;
        let off = proxy::start(cfg);
        let mut co = session(&off, "hb_modes");
        assert_eq!(ok(&mut co, &format!("CREATE TABLE gw3$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gw3 PARTITION BY KEY(K) PARTITIONS 96")), 0);
        // several families when configured, with identical partitioning
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.hbase.multiple_families = true;
        let multi = proxy::start(cfg);
        let mut cm = session(&multi, "hb_modes");
        let _ = run(&mut cm, "DROP TABLE IF EXISTS `gw4$g`");
        ok(&mut cm, &format!("CREATE TABLE gw4$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gw4 PARTITION BY KEY(K) PARTITIONS 97"));
        let differs = run(&mut cm, &format!("CREATE TABLE gw4$g ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gw4 PARTITION BY KEY(K) PARTITIONS 193"));
        assert!(
            differs.is_err_and(|e| e.1.contains("R8")),
            "different partitioning accepted"
        );
        ok(&mut cm, &format!("CREATE TABLE gw4$g ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gw4 PARTITION BY KEY(K) PARTITIONS 97"));
    }
}

#[test]
fn refused_by_the_backend_means_not_in_the_catalog_and_direct_drops_show_at_once() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let mut c = session(&p, "hb_recon");
        let _ = run(&mut c, "DROP TABLE IF EXISTS `gx$f`");
        let _ = run(&mut c, "DROP TABLEGROUP IF EXISTS gx");
        ok(&mut c, "CREATE TABLEGROUP gx");
        // the backend refuses (no such database; MariaDB says error 1, seekdb 1049): its error
        // reaches the client and nothing is recorded
        let e = run(&mut c, &format!("CREATE TABLE no_such_db_x.gx$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gx PARTITION BY KEY(K) PARTITIONS 97"));
        assert!(e.is_err(), "{}: accepted", kind.name());
        assert_eq!(
            c.rows("SHOW TABLEGROUPS LIKE 'gx'")[0][1],
            None,
            "catalog changed by a refused DDL"
        );
        // a table dropped behind the proxy's back is gone from the group at once (membership
        // is read from the backend), through this proxy and a fresh one
        ok(&mut c, &format!("CREATE TABLE gx$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = gx PARTITION BY KEY(K) PARTITIONS 97"));
        assert_eq!(
            c.rows("SHOW TABLEGROUPS LIKE 'gx'")[0][1].as_deref(),
            Some(&b"gx$f"[..])
        );
        let mut direct =
            RawConn::connect(&backend.addr, "root", "", Some("hb_recon")).expect("direct");
        direct.must("DROP TABLE `gx$f`");
        assert_eq!(
            c.rows("SHOW TABLEGROUPS LIKE 'gx'")[0][1],
            None,
            "{}: dropped table still listed",
            kind.name()
        );
        let fresh = proxy::start(proxy::config_for(&backend.addr));
        let mut cf = session(&fresh, "hb_recon");
        assert_eq!(cf.rows("SHOW TABLEGROUPS LIKE 'gx'")[0][1], None);
        ok(&mut cf, "DROP TABLEGROUP gx");
    }
}

/// 10,000 random binary rowkeys in KEY(K) and KEY(prefix) tables on seekdb: every row sits in
/// the partition the model predicts.
#[test]
fn rows_sit_in_the_partition_the_model_predicts() {
    let backend = shared(Kind::SeekDb);
    let p = proxy::start(proxy::config_for(&backend.addr));
    let mut c = session(&p, "hb_place");
    let tables = [
        (
            "gpk$f",
            "PARTITION BY KEY(K) PARTITIONS 97",
            Partitioning::Key {
                prefix_len: None,
                partitions: 97,
            },
            "",
        ),
        (
            "gpp$f",
            "PARTITION BY KEY(K_PREFIX) PARTITIONS 193",
            Partitioning::Key {
                prefix_len: Some(4),
                partitions: 193,
            },
            ", K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4))",
        ),
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(20261121);
    let keys: Vec<Vec<u8>> = (0..10_000)
        .map(|i| {
            let len = if i < 50 {
                i % 6
            } else {
                rng.random_range(1..40)
            };
            let mut k: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            k.extend_from_slice(&(i as u32).to_be_bytes()); // unique
            k
        })
        .collect();
    for (name, part, model, extra) in &tables {
        let group = name.split('$').next().expect("group");
        let _ = run(&mut c, &format!("DROP TABLE IF EXISTS `{name}`"));
        let _ = run(&mut c, &format!("DROP TABLEGROUP IF EXISTS {group}"));
        ok(&mut c, &format!("CREATE TABLEGROUP {group}"));
        ok(&mut c, &format!("CREATE TABLE {name} ({COLS}{extra}, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group} {part}"));
        for chunk in keys.chunks(500) {
            let values: Vec<String> = chunk
                .iter()
                .map(|k| {
                    format!(
                        "(X'{}', 'q', -1700000000000, 'v')",
                        k.iter().map(|b| format!("{b:02X}")).collect::<String>()
                    )
                })
                .collect();
            ok(
                &mut c,
                &format!(
                    "INSERT INTO `{name}` (K, Q, T, V) VALUES {}",
                    values.join(",")
                ),
            );
        }
        let mut seen: HashMap<Vec<u8>, u32> = HashMap::new();
        for i in 0..model.partition_count() {
            for row in c.rows(&format!("SELECT K FROM `{name}` PARTITION (p{i})")) {
                let k = row[0].clone().expect("K");
                assert!(
                    seen.insert(k, i).is_none(),
                    "a key appears in two partitions"
                );
            }
        }
        assert_eq!(seen.len(), keys.len(), "{name}: rows missing");
        let wrong = keys
            .iter()
            .filter(|k| model.partition_of(k) != seen.get(*k).copied())
            .count();
        assert_eq!(
            wrong,
            0,
            "{name}: {wrong} of {} rows are not where the model predicts",
            keys.len()
        );
    }
}
