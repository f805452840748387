//! Backup and restore through the proxy (issue 7, part 4): `SHOW PROXY CREATE TABLEGROUPS`
//! plus mariadb-dump, both through the proxy, restored through the proxy into an empty database,
//! give the same tables, groups, rows and SHOW CREATE TABLE.

use std::io::Write;
use std::process::Command;

use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{mariadb_cli, shared, Kind, BOTH};

const DB: &str = "obkv_dump_src";

type Rows = Vec<Vec<Option<Vec<u8>>>>;

/// Everything a restore must bring back: HBase rows, plain rows, the group, SHOW CREATE TABLE.
fn state(c: &mut RawConn) -> (Rows, Rows, Rows, String) {
    let rows = c.rows("SELECT HEX(K), Q, T, HEX(V) FROM `obkv_dump_src`.`dmp$f` ORDER BY K, Q, T");
    let plain = c.rows("SELECT id, note FROM `obkv_dump_src`.`plain` ORDER BY id");
    let groups = c.rows("SHOW TABLEGROUPS LIKE 'dmp'");
    let shown = c.rows("SHOW CREATE TABLE `obkv_dump_src`.`dmp$f`");
    let ddl = String::from_utf8_lossy(shown[0][1].as_deref().unwrap_or_default()).into_owned();
    (rows, plain, groups, ddl)
}

/// On both backends: on seekdb the dump carries the generated prefix column's values, which
/// seekdb itself refuses (3105); the proxy checks each against its rowkey and leaves it to the
/// backend.
#[test]
fn a_dump_made_through_the_proxy_restores_through_the_proxy() {
    for kind in BOTH {
        dump_and_restore(kind);
    }
}

fn dump_and_restore(kind: Kind) {
    let backend = shared(kind);
    let setup = proxy::start(proxy::config_for(&backend.addr));
    let mut c = RawConn::connect(&setup.addr, "root", "", None).expect("login");
    for sql in [
        "DROP TABLE IF EXISTS `obkv_dump_src`.`dmp$f`",
        "DROP DATABASE IF EXISTS obkv_dump_src",
        "DROP TABLEGROUP IF EXISTS dmp",
        "CREATE DATABASE obkv_dump_src",
        "USE obkv_dump_src",
        "CREATE TABLEGROUP dmp",
        "CREATE TABLE dmp$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)) VIRTUAL, PRIMARY KEY (K, Q, T)) TABLEGROUP = dmp PARTITION BY KEY(K_PREFIX) PARTITIONS 7",
        "INSERT INTO dmp$f (K, Q, T, V) VALUES (X'00FF616263', 'q', -1700000000000, X'000127FF5C'), ('row2', 'q2', -2, 'v2'), ('ab', '', -3, '')",
        "CREATE TABLE plain (id INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO plain VALUES (1, 'a$b'), (2, NULL)",
    ] {
        c.exec(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    let before = state(&mut c);
    drop(setup);

    // a fresh proxy process takes the backup: nothing of the catalog is cached
    let p = proxy::start(proxy::config_for(&backend.addr));
    let (ok, groups, err) = mariadb_cli(
        &p.addr,
        &["-uroot", "-N", "-e", "SHOW PROXY CREATE TABLEGROUPS"],
        "",
    );
    assert!(
        ok && groups.contains("CREATE TABLEGROUP IF NOT EXISTS `dmp`;"),
        "{groups}{err}"
    );
    let (host, port) = p.addr.rsplit_once(':').expect("addr");
    let dump = Command::new("mariadb-dump")
        .args([
            "--protocol=tcp",
            "-h",
            host,
            "-P",
            port,
            "-uroot",
            "--databases",
            DB,
        ])
        .output()
        .expect("mariadb-dump ran");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dumped = String::from_utf8_lossy(&dump.stdout).into_owned();
    // the dump holds the HBase table, not its translation
    assert!(dumped.contains("TABLEGROUP = 'dmp'"), "{dumped}");
    assert!(
        !dumped.contains("CONSTRAINT `obkv_"),
        "translation in the dump:\n{dumped}"
    );

    // an empty database: the tables, the group, the catalog entry are gone
    for sql in [
        "DROP TABLE `obkv_dump_src`.`dmp$f`",
        "DROP DATABASE obkv_dump_src",
        "DROP TABLEGROUP dmp",
    ] {
        c = RawConn::connect(&p.addr, "root", "", None).expect("login");
        c.exec(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    // (the listing has every group on the backend; the restore makes this test's only, not
    // again one another test dropped meanwhile)
    let mut backup = groups
        .lines()
        .filter(|l| l.contains("`dmp`"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes();
    backup.extend_from_slice(&dump.stdout);
    // the dump holds binary bytes: fed to the client as they are
    let mut restore = Command::new("mariadb")
        .args(["--protocol=tcp", "-h", host, "-P", port, "-uroot"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mariadb ran");
    restore
        .stdin
        .take()
        .expect("stdin")
        .write_all(&backup)
        .expect("backup fed");
    let out = restore.wait_with_output().expect("restore finished");
    assert!(
        out.status.success(),
        "{}: restore failed: {}",
        kind.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("login");
    let after = state(&mut c);
    let k = kind.name();
    assert_eq!(before.0, after.0, "{k}: HBase rows");
    assert_eq!(before.1, after.1, "{k}: plain rows");
    assert_eq!(before.2, after.2, "{k}: table group");
    assert_eq!(before.3, after.3, "{k}: SHOW CREATE TABLE");
    // the restored table is a working HBase table: its prefix column follows K
    c.exec("INSERT INTO `obkv_dump_src`.`dmp$f` (K, Q, T, V) VALUES ('wxyz1', 'q', -9, 'v')")
        .expect("insert after restore");
    assert_eq!(
        c.scalar("SELECT K_PREFIX FROM `obkv_dump_src`.`dmp$f` WHERE K = 'wxyz1'"),
        "wxyz"
    );
}
