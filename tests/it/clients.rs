//! Acceptance 2: real clients through the proxy — the mariadb CLI, a Rust client on the binary
//! protocol (mysql_async), and PyMySQL.

use std::process::Command;

use mysql_async::prelude::*;
use rand::{Rng, SeedableRng};

use crate::common::backends::project_root;
use crate::common::proxy;
use crate::common::{shared, BOTH};

fn mariadb_cli(addr: &str, args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut all = vec!["-uroot", "--batch", "--silent"];
    all.extend_from_slice(args);
    crate::common::mariadb_cli(addr, &all, stdin)
}

#[test]
fn mariadb_cli_use_show_source_and_status() {
    let dir = tempfile::tempdir().expect("tmp");
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "CREATE TABLE sourced (id INT PRIMARY KEY, name VARCHAR(20));\nINSERT INTO sourced VALUES (1, 'from'), (2, 'script');\n",
    )
    .expect("script");
    let session = format!(
        "DROP DATABASE IF EXISTS obkv_cli;\nCREATE DATABASE obkv_cli;\nUSE obkv_cli\nsource {}\nSHOW TABLES;\nSELECT id, name FROM sourced ORDER BY id;\nSHOW COLUMNS FROM sourced;\nSELECT DATABASE();\n",
        script.display()
    );
    for kind in BOTH {
        let backend = shared(kind);
        let (ok, direct, err) = mariadb_cli(&backend.addr, &[], &session);
        assert!(ok, "{}: direct run failed: {err}", kind.name());
        let p = proxy::start(proxy::config_for(&backend.addr));
        let (ok, proxied, err) = mariadb_cli(&p.addr, &[], &session);
        assert!(ok, "{}: proxied run failed: {err}", kind.name());
        assert_eq!(direct, proxied, "{}: CLI output differs", kind.name());
        assert!(
            proxied.contains("sourced")
                && proxied.contains("2\tscript")
                && proxied.contains("obkv_cli")
        );

        let (ok, status, err) = mariadb_cli(&p.addr, &[], "status\n");
        assert!(ok, "status failed: {err}");
        let (_, direct_status, _) = mariadb_cli(&backend.addr, &[], "status\n");
        let version_line = |s: &str| {
            s.lines()
                .find(|l| l.starts_with("Server version:"))
                .map(str::to_owned)
        };
        assert!(version_line(&status).is_some(), "status:\n{status}");
        assert_eq!(
            version_line(&status),
            version_line(&direct_status),
            "{}: server version differs",
            kind.name()
        );
        let port = p.addr.rsplit(':').next().expect("port");
        assert!(
            status.contains(&format!("TCP port:\t\t{port}")),
            "status:\n{status}"
        );
    }
}

#[test]
fn mariadb_cli_wrong_password_gets_backend_1045() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let (ok, _, err) = mariadb_cli(&p.addr, &["-pdefinitely-wrong"], "SELECT 1;\n");
        assert!(!ok);
        assert!(err.contains("ERROR 1045"), "{}: {err}", kind.name());
    }
}

#[test]
fn mariadb_cli_load_data_local_infile() {
    let dir = tempfile::tempdir().expect("tmp");
    let data = dir.path().join("rows.tsv");
    let mut text = String::new();
    for i in 0..5000 {
        text.push_str(&format!("{i}\tname-{i}\n"));
    }
    std::fs::write(&data, text).expect("data file");
    let backend = shared(crate::common::Kind::MariaDb);
    let p = proxy::start(proxy::config_for(&backend.addr));
    let script = format!(
        "DROP DATABASE IF EXISTS obkv_infile; CREATE DATABASE obkv_infile; USE obkv_infile;\nCREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20));\nLOAD DATA LOCAL INFILE '{}' INTO TABLE t;\nSELECT COUNT(*), SUM(id) FROM t;\n",
        data.display()
    );
    let (ok, out, err) = mariadb_cli(&p.addr, &["--local-infile=1"], &script);
    assert!(ok, "LOAD DATA LOCAL through proxy failed: {err}");
    assert_eq!(out.trim(), format!("5000\t{}", (0..5000).sum::<i64>()));
}

#[test]
fn mariadb_cli_load_data_local_into_an_hbase_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let good = dir.path().join("cells.tsv");
    let bad = dir.path().join("bad.tsv");
    let mut text = String::new();
    for i in 0..5000 {
        text.push_str(&format!("row{i:05}\tq\t-1700000000000\tv{i}\n"));
    }
    std::fs::write(&good, &text).expect("data file");
    text.push_str("\tq\t-1700000000000\tempty rowkey\n");
    std::fs::write(&bad, &text).expect("data file");
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let script = format!(
            "DROP DATABASE IF EXISTS obkv_ld; CREATE DATABASE obkv_ld; USE obkv_ld;\n\
             DROP TABLEGROUP IF EXISTS ld; CREATE TABLEGROUP ld;\n\
             CREATE TABLE ld$f (K varbinary(64), Q varbinary(64), T bigint, V varbinary(64) NOT NULL, \
             PRIMARY KEY (K, Q, T)) TABLEGROUP = ld PARTITION BY KEY(K) PARTITIONS 7;\n\
             LOAD DATA LOCAL INFILE '{}' INTO TABLE ld$f (K, Q, T, V);\n\
             SELECT COUNT(*) FROM ld$f;\n",
            good.display()
        );
        let (ok, out, err) = mariadb_cli(&p.addr, &["--local-infile=1"], &script);
        assert!(ok, "{}: {err}", kind.name());
        assert_eq!(out.trim(), "5000", "{}", kind.name());
        // one bad row in 5001: the whole file refused, nothing more loaded
        let script = format!(
            "USE obkv_ld;\nLOAD DATA LOCAL INFILE '{}' REPLACE INTO TABLE ld$f (K, Q, T, V);\n",
            bad.display()
        );
        let (ok, _, err) = mariadb_cli(&p.addr, &["--local-infile=1"], &script);
        assert!(
            !ok && err.contains("ERROR 1292") && err.contains("row 5001"),
            "{}: {err}",
            kind.name()
        );
        let (_, out, _) = mariadb_cli(&p.addr, &[], "SELECT COUNT(*) FROM obkv_ld.ld$f;\n");
        assert_eq!(out.trim(), "5000", "{}", kind.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_client_binary_protocol_round_trips_binary_values() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let (host, port) = p.addr.rsplit_once(':').expect("addr");
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(host)
            .tcp_port(port.parse().expect("port"))
            .user(Some("root"))
            .prefer_socket(false)
            .stmt_cache_size(0);
        let mut conn = mysql_async::Conn::new(opts)
            .await
            .expect("connect through proxy");
        conn.query_drop("CREATE DATABASE IF NOT EXISTS obkv_rust")
            .await
            .expect("db");
        conn.query_drop("USE obkv_rust").await.expect("use");
        conn.query_drop("DROP TABLE IF EXISTS kv")
            .await
            .expect("drop");
        conn.query_drop("CREATE TABLE kv (k VARBINARY(64) PRIMARY KEY, v LONGBLOB NOT NULL, d DECIMAL(20,4), t DATETIME(6))")
            .await
            .expect("create");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut expected = Vec::new();
        let insert = conn
            .prep("INSERT INTO kv (k, v, d, t) VALUES (?, ?, ?, ?)")
            .await
            .expect("prepare");
        for i in 0..200u32 {
            let mut k = i.to_be_bytes().to_vec();
            k.extend((0..rng.random_range(0..20)).map(|_| rng.random::<u8>()));
            let v: Vec<u8> = if i == 0 {
                (0..=255u8).collect()
            } else {
                (0..rng.random_range(0..3000))
                    .map(|_| rng.random())
                    .collect()
            };
            conn.exec_drop(
                &insert,
                (
                    k.clone(),
                    v.clone(),
                    "12345.6789",
                    "2024-02-29 01:02:03.456789",
                ),
            )
            .await
            .expect("insert");
            expected.push((k, v));
        }
        conn.close(insert).await.expect("close stmt");
        let select = conn
            .prep("SELECT v, d, t FROM kv WHERE k = ?")
            .await
            .expect("prepare select");
        for (k, v) in &expected {
            let row: Option<(Vec<u8>, String, mysql_async::Value)> = conn
                .exec_first(&select, (k.clone(),))
                .await
                .expect("select");
            let (got, d, t) = row.expect("row exists");
            assert_eq!(&got, v, "{}: value mismatch", kind.name());
            assert_eq!(d, "12345.6789");
            assert_eq!(t, mysql_async::Value::Date(2024, 2, 29, 1, 2, 3, 456789));
        }
        let n: Option<u64> = conn
            .exec_first("SELECT COUNT(*) FROM kv WHERE LENGTH(v) >= ?", (0,))
            .await
            .expect("count");
        assert_eq!(n, Some(200));
        // COM_RESET_CONNECTION (or change user) through the proxy leaves a clean session
        conn.query_drop("SET @leftover = 1").await.expect("set");
        conn.reset().await.expect("reset");
        let left: Option<Option<i64>> = conn
            .query_first("SELECT @leftover")
            .await
            .expect("read var");
        assert_eq!(
            left,
            Some(None),
            "{}: session state survived reset",
            kind.name()
        );
        conn.disconnect().await.expect("disconnect");
    }
}

#[test]
fn pymysql_binary_values_and_unbuffered_stream() {
    let python = project_root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "PyMySQL's virtualenv is missing: run scripts/install-deps.sh"
    );
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let (host, port) = p.addr.rsplit_once(':').expect("addr");
        let out = Command::new(&python)
            .arg(project_root().join("tests/clients/pymysql_check.py"))
            .args([host, port, "200000"])
            .output()
            .expect("python ran");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.starts_with("OK"),
            "{}: {stdout}\n{}",
            kind.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("streamed=200000"), "{stdout}");
    }
}

/// SQLAlchemy reflection (which parses SHOW CREATE TABLE line by line, as Alembic does) finds an
/// HBase table's columns, types and primary key through the proxy, on both backends.
#[test]
fn sqlalchemy_reflects_hbase_tables_through_the_proxy() {
    let python = project_root().join(".venv/bin/python");
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let mut c = crate::common::raw::RawConn::connect(&p.addr, "root", "", None).expect("login");
        for sql in [
            "CREATE DATABASE IF NOT EXISTS obkv_reflect",
            "USE obkv_reflect",
            "DROP TABLE IF EXISTS rf$f",
            "DROP TABLEGROUP IF EXISTS rf",
            "CREATE TABLEGROUP rf",
            "CREATE TABLE rf$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)) VIRTUAL, PRIMARY KEY (K, Q, T)) TABLEGROUP = rf PARTITION BY KEY(K_PREFIX) PARTITIONS 97",
        ] {
            c.exec(sql).unwrap_or_else(|e| panic!("{}: {sql}: {e:?}", kind.name()));
        }
        let url = format!("mysql+pymysql://root@{}/obkv_reflect", p.addr);
        let out = Command::new(&python)
            .arg(project_root().join("tests/clients/sqlalchemy_reflect.py"))
            .args([url.as_str(), "rf$f"])
            .output()
            .expect("python ran");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {stdout}\n{}",
            kind.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        let found: serde_json::Value = serde_json::from_str(stdout.trim()).expect("json");
        let columns: Vec<String> = found["columns"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| {
                format!(
                    "{} {}",
                    c[0].as_str().unwrap_or(""),
                    c[1].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            columns,
            [
                "K VARBINARY(1024)",
                "Q VARBINARY(256)",
                "T BIGINT",
                "V VARBINARY(1048576)",
                "K_PREFIX VARBINARY(1024)"
            ],
            "{}: {stdout}",
            kind.name()
        );
        assert_eq!(
            found["primary_key"],
            serde_json::json!(["K", "Q", "T"]),
            "{}",
            kind.name()
        );
        c.exec("DROP TABLE rf$f").expect("drop");
        c.exec("DROP TABLEGROUP rf").expect("drop group");
    }
}

/// Drivers that prefer the Unix socket (mysql_async's default `prefer_socket`) ask for
/// `@@socket` after logging in over loopback TCP and reconnect to it when the path exists; the
/// backend's path would take them past the proxy. Through the proxy the probe answers an empty
/// path (the rest of the result as the backend sent it), so such a client stays on the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_preferring_the_unix_socket_stays_on_the_proxy() {
    const PROBE: &str = "SELECT @@max_allowed_packet,@@wait_timeout,@@socket";
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let opts = |addr: &str| {
            let (host, port) = addr.rsplit_once(':').expect("addr");
            // prefer_socket is left at the driver's default (true)
            mysql_async::OptsBuilder::default()
                .ip_or_hostname(host)
                .tcp_port(port.parse().expect("port"))
                .user(Some("root"))
        };
        // the backend has a socket on this host: a direct driver does move to it
        let mut direct = mysql_async::Conn::new(opts(&backend.addr))
            .await
            .expect("direct");
        let row: (u64, u64, Option<String>) = direct
            .query_first(PROBE)
            .await
            .expect("direct probe")
            .expect("row");
        let path = row.2.clone().expect("the backend reports a socket");
        assert!(
            std::path::Path::new(&path).exists(),
            "{}: {path}",
            kind.name()
        );

        let mut conn = mysql_async::Conn::new(opts(&p.addr))
            .await
            .expect("through the proxy");
        // only the proxy answers this: the connection did not move to the backend's socket
        let status: Vec<(String, String)> = conn
            .query("SHOW PROXY STATUS")
            .await
            .expect("still on the proxy");
        let answered = crate::common::proxy_counter(&status, "socket_probes_answered");
        assert!(answered >= 1, "{}: {answered}", kind.name());
        let mut result = conn.query_iter(PROBE).await.expect("probe");
        let columns: Vec<(String, mysql_async::consts::ColumnType)> = result
            .columns_ref()
            .iter()
            .map(|c| (c.name_str().into_owned(), c.column_type()))
            .collect();
        let rows: Vec<(u64, u64, Option<String>)> = result.collect().await.expect("rows");
        assert_eq!(
            rows,
            vec![(row.0, row.1, Some(String::new()))],
            "{}: only the socket is the proxy's",
            kind.name()
        );
        assert_eq!(
            columns,
            vec![
                (
                    "@@max_allowed_packet".to_string(),
                    mysql_async::consts::ColumnType::MYSQL_TYPE_LONGLONG
                ),
                (
                    "@@wait_timeout".to_string(),
                    mysql_async::consts::ColumnType::MYSQL_TYPE_LONGLONG
                ),
                (
                    "@@socket".to_string(),
                    mysql_async::consts::ColumnType::MYSQL_TYPE_VAR_STRING
                ),
            ],
            "{}",
            kind.name()
        );
        // any other use of the variable is the backend's answer, unchanged
        let concat: Option<String> = conn
            .query_first("SELECT CONCAT(@@socket, '')")
            .await
            .expect("concat");
        assert_eq!(concat.as_deref(), Some(path.as_str()), "{}", kind.name());
        conn.disconnect().await.expect("disconnect");
        direct.disconnect().await.expect("disconnect");
    }
}

/// The proxy's own Unix socket (`proxy.socket`): a driver that prefers sockets is told its path
/// and moves there, staying on the proxy; the CLI reaches it with `--socket`; the file goes away
/// with the proxy, a stale one is replaced, and a file that is not a socket is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxys_unix_socket_serves_drivers_that_prefer_one() {
    let dir = tempfile::tempdir().expect("tmp");
    for kind in BOTH {
        let backend = shared(kind);
        let path = dir.path().join(format!("{}.sock", kind.name()));
        // a stale socket file from a proxy that died: replaced
        drop(std::os::unix::net::UnixListener::bind(&path).expect("stale socket"));
        assert!(path.exists());
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.proxy.socket = path.to_str().expect("utf-8 path").to_string();
        let p = proxy::start(cfg);
        let (host, port) = p.addr.rsplit_once(':').expect("addr");
        // the driver's defaults: prefer_socket on
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(host)
            .tcp_port(port.parse().expect("port"))
            .user(Some("root"));
        let mut conn = mysql_async::Conn::new(opts)
            .await
            .expect("through the proxy");
        let rows: Vec<(String, String)> = conn.query("SHOW PROXY STATUS").await.expect("ours");
        assert!(
            crate::common::proxy_counter(&rows, "socket_connections") >= 1,
            "{}: the driver moved to the proxy's socket: {rows:?}",
            kind.name()
        );
        let socket: Option<String> = conn.query_first("SELECT @@socket").await.expect("probe");
        assert_eq!(socket.as_deref(), path.to_str(), "{}", kind.name());
        let v: Option<String> = conn.query_first("SELECT VERSION()").await.expect("version");
        assert!(v.is_some_and(|v| !v.is_empty()));
        conn.disconnect().await.expect("bye");
        // the CLI, plain and compressed
        for extra in [None, Some("--compress")] {
            let mut args = vec!["-uroot", "--socket", path.to_str().expect("path")];
            args.extend(extra);
            let (ok, out, err) = crate::common::mariadb_cli(
                "localhost:0",
                &args,
                "status; SELECT CONCAT('via ', 'socket');",
            );
            assert!(ok, "{}: {err}", kind.name());
            assert!(
                out.contains("via UNIX socket") && out.contains("via socket"),
                "{out}"
            );
        }
        drop(p);
        assert!(
            !path.exists(),
            "{}: the socket file is removed",
            kind.name()
        );
    }
    // a path that is not a socket, or another process's live socket, is never taken over;
    // the proxy serves TCP without a socket of its own
    let backend = shared(crate::common::Kind::MariaDb);
    let file = dir.path().join("not-a-socket");
    std::fs::write(&file, b"keep me").expect("file");
    let live_path = dir.path().join("live.sock");
    let _live = std::os::unix::net::UnixListener::bind(&live_path).expect("live socket");
    for taken in [&file, &live_path] {
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.proxy.socket = taken.to_str().expect("path").to_string();
        let p = proxy::start(cfg);
        let mut c = crate::common::raw::RawConn::connect(&p.addr, "root", "", None).expect("tcp");
        assert_eq!(
            c.scalar("SELECT @@socket"),
            "",
            "{taken:?}: no socket to offer"
        );
        drop(p);
    }
    assert_eq!(std::fs::read(&file).expect("still there"), b"keep me");
    assert!(live_path.exists(), "the other listener's socket stays");
    // proxy-auth mode over the socket: the proxy names a socket client's host as a server
    // does, `localhost`
    let path = dir.path().join("auth.sock");
    let mut cfg = crate::auth_tls::proxy_auth_config(&backend.addr);
    cfg.proxy.socket = path.to_str().expect("path").to_string();
    let p = proxy::start(cfg);
    let socket = ["--socket", path.to_str().expect("path")];
    let (ok, out, err) = crate::common::mariadb_cli(
        "localhost:0",
        &[&["-uapp", "-papp-pass"][..], &socket[..]].concat(),
        "SELECT CONCAT('as ', 'app')",
    );
    assert!(ok && out.contains("as app"), "{err}");
    let (ok, _, err) = crate::common::mariadb_cli(
        "localhost:0",
        &[&["-uapp", "-pwrong"][..], &socket[..]].concat(),
        "SELECT 1",
    );
    assert!(
        !ok && err.contains("1045") && err.contains("'app'@'localhost'"),
        "{err}"
    );
    let (ok, _, err) = crate::common::mariadb_cli(&p.addr, &["-uapp", "-pwrong"], "SELECT 1");
    assert!(!ok && err.contains("'app'@'127.0.0.1'"), "{err}");
}
