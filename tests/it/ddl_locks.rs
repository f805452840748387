//! The per-group DDL lock: a waiter gets 1205 after `hbase.ddl_lock_timeout_ms` (never the
//! backend's own statement timeout: seekdb stops a statement after 10 s), and a lock left by a
//! session that is gone (a vanished client, a proxy killed mid-DDL, a backend restarted while
//! it was held: OceanBase keeps such locks for minutes) blocks the group no longer than that.

use std::time::{Duration, Instant};

use obkv_proxy::hbase::marker;

use crate::common::backends::Backend;
use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{shared, Kind, BOTH};

const DB: &str = "hb_locks";

fn ok(c: &mut RawConn, sql: &str) {
    if let Err(e) = c.warnings_or_error(sql) {
        panic!("{sql}: {e:?}");
    }
}

/// The name the proxy locks for `group` now (its epoch read from the catalog).
fn current_lock_name(direct: &mut RawConn, group: &str) -> String {
    let base = marker::lock_name("obkv_meta", group.as_bytes());
    let epoch = direct
        .rows(&format!(
            "SELECT epoch FROM obkv_meta.lock_epochs WHERE lock_name = '{base}'"
        ))
        .first()
        .and_then(|r| {
            r[0].as_deref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
        })
        .unwrap_or_else(|| "0".into());
    if epoch == "0" {
        base
    } else {
        format!("{base}:{epoch}")
    }
}

/// A direct session that takes the group's lock and keeps it.
fn hold(addr: &str, group: &str) -> RawConn {
    let mut d = RawConn::connect(addr, "root", "", None).expect("direct");
    let name = current_lock_name(&mut d, group);
    assert_eq!(d.scalar(&format!("SELECT GET_LOCK('{name}', 5)")), "1");
    d
}

fn table_ddl(group: &str) -> String {
    format!("CREATE TABLE {group}$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group} PARTITION BY KEY(K) PARTITIONS 3")
}

#[test]
fn a_waiter_gets_1205_after_the_configured_wait_not_the_backends_timeout() {
    for kind in BOTH {
        let backend = shared(kind).addr.clone();
        let mut config = proxy::config_for(&backend);
        // longer than seekdb's own 10 s statement timeout
        config.hbase.ddl_lock_timeout_ms = 11_500;
        let p = proxy::start(config);
        let group = "lkwait";
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("through the proxy");
        ok(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {DB}"));
        ok(&mut c, &format!("USE {DB}"));
        let _ = c.warnings_or_error(&format!("DROP TABLE IF EXISTS {group}$f"));
        ok(&mut c, &format!("CREATE TABLEGROUP IF NOT EXISTS {group}"));
        let holder = hold(&backend, group);
        if kind == Kind::SeekDb {
            // seekdb's default, which the shared instance raises for every session
            // (common::backends): the wait below must outlast the backend's timeout (only
            // for it: the other DDL here may wait behind other tests' DDL)
            ok(&mut c, "SET SESSION ob_query_timeout = 10000000");
        }
        let started = Instant::now();
        let err = c
            .warnings_or_error(&table_ddl(group))
            .expect_err("the group is locked");
        let waited = started.elapsed();
        if kind == Kind::SeekDb {
            ok(&mut c, "SET SESSION ob_query_timeout = DEFAULT");
        }
        assert_eq!(err.0, 1205, "{}: {err:?}", kind.name());
        assert!(
            waited >= Duration::from_millis(11_000) && waited < Duration::from_secs(25),
            "{}: waited {waited:?}",
            kind.name()
        );
        drop(holder);
        // once the holder is gone the DDL runs
        ok(&mut c, &table_ddl(group));
        ok(&mut c, &format!("DROP TABLE {group}$f"));
        ok(&mut c, &format!("DROP TABLEGROUP {group}"));
    }
}

/// The DDL runs within the configured wait although a gone session holds the lock.
fn ddl_gets_through(addr: &str, proxy_addr: &str, group: &str, timeout_ms: u64) {
    let mut c = RawConn::connect(proxy_addr, "root", "", None).expect("through the proxy");
    ok(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {DB}"));
    ok(&mut c, &format!("USE {DB}"));
    let started = Instant::now();
    // an error or no answer (the read times out after 120 s) fails with the time it took
    c.exec(&table_ddl(group))
        .unwrap_or_else(|e| panic!("{addr}: after {:?}: {e:?}", started.elapsed()));
    assert!(
        started.elapsed() < Duration::from_millis(timeout_ms),
        "{addr}: took {:?}",
        started.elapsed()
    );
    ok(&mut c, &format!("DROP TABLE {group}$f"));
}

/// Whether a restarted backend runs DDL itself within two minutes: `SELECT 1` answers before a
/// loaded OceanBase-family server's DDL service is ready, and in two CI runs a restarted backend
/// answered no `CREATE TABLE` sent directly for over ten minutes (the proxy's own waits are
/// bounded: each `GET_LOCK` by the lock timeout, other statements by the backend's).
fn backend_runs_ddl(addr: &str) -> Result<(), String> {
    let mut d = RawConn::connect(addr, "root", "", None).map_err(|e| format!("{e:?}"))?;
    d.set_read_timeout(Duration::from_secs(120));
    let started = Instant::now();
    for sql in [
        format!("CREATE DATABASE IF NOT EXISTS {DB}"),
        format!("CREATE TABLE IF NOT EXISTS {DB}.ready_for_ddl (a int PRIMARY KEY)"),
        format!("DROP TABLE {DB}.ready_for_ddl"),
    ] {
        d.exec(&sql)
            .map_err(|e| format!("`{sql}` after {:?}: {e:?}", started.elapsed()))?;
    }
    Ok(())
}

#[test]
fn a_lock_left_by_a_gone_session_or_a_restarted_backend_does_not_block_the_group() {
    for kind in BOTH {
        let mut backend = Backend::start_private(kind, "locks");
        let mut config = proxy::config_for(&backend.addr);
        let timeout_ms = 8_000;
        config.hbase.ddl_lock_timeout_ms = timeout_ms;
        let group = "lkgone";
        {
            let p = proxy::start(config.clone());
            let mut c = RawConn::connect(&p.addr, "root", "", None).expect("through the proxy");
            ok(&mut c, &format!("CREATE TABLEGROUP {group}"));
        }
        // a client that held the lock and vanished (as a proxy killed mid-DDL: its backend
        // connections close)
        let holder = hold(&backend.addr, group);
        let name = current_lock_name(
            &mut RawConn::connect(&backend.addr, "root", "", None).expect("direct"),
            group,
        );
        drop(holder);
        if kind == Kind::SeekDb {
            // the scenario is real: OceanBase keeps the lock of a session that is gone
            let mut d = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
            assert_ne!(
                d.scalar(&format!("SELECT IS_USED_LOCK('{name}')")),
                "NULL",
                "{name}"
            );
        }
        {
            let p = proxy::start(config.clone());
            ddl_gets_through(&backend.addr, &p.addr, group, timeout_ms);
        }
        // held when the backend is killed and restarted
        let holder = hold(&backend.addr, group);
        let pid = backend.pid.take().expect("running");
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
        while crate::common::backends::process_alive(pid) {
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(holder);
        backend.start();
        // a restarted backend that runs no DDL is stopped and started again (the lock the
        // killed session held stays as the kill left it), at most twice, and said so
        let mut restarts = 0;
        while let Err(why) = backend_runs_ddl(&backend.addr) {
            restarts += 1;
            assert!(
                restarts <= 2,
                "{}: the restarted backend itself runs no DDL after {restarts} restarts: {why}",
                kind.name()
            );
            eprintln!(
                "{}: the restarted backend runs no DDL ({why}); restarting it again",
                kind.name()
            );
            backend.stop();
            backend.start();
        }
        let p = proxy::start(config.clone());
        ddl_gets_through(&backend.addr, &p.addr, group, timeout_ms);
        // and a live holder is still waited for: exclusion holds after the lock moved
        let holder = hold(&backend.addr, group);
        let mut c = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("through the proxy");
        let err = c.warnings_or_error(&table_ddl(group)).expect_err("locked");
        assert_eq!(err.0, 1205, "{}: {err:?}", kind.name());
        drop(holder);
    }
}

#[test]
fn a_proxy_killed_in_the_middle_of_a_create_table_leaves_no_lock_behind() {
    for kind in BOTH {
        let backend = shared(kind).addr.clone();
        let group = "lkkill";
        let timeout_ms = 8_000u64;
        let conf = crate::common::backends::project_root().join(format!(
            "target/obkv-test/ddl-locks-{}.toml",
            std::process::id()
        ));
        std::fs::write(
            &conf,
            format!("[hbase]\nddl_lock_timeout_ms = {timeout_ms}\n"),
        )
        .expect("config written");
        let conf = conf.to_string_lossy().into_owned();
        let first = proxy::spawn_binary(&backend, &["--config", &conf]);
        let mut c = RawConn::connect(&first.addr, "root", "", None).expect("through the proxy");
        ok(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {DB}"));
        ok(&mut c, &format!("USE {DB}"));
        let _ = c.warnings_or_error(&format!("DROP TABLE IF EXISTS {group}$f"));
        ok(&mut c, &format!("CREATE TABLEGROUP IF NOT EXISTS {group}"));
        // the CREATE TABLE stops half-way: its definition's catalog row is held by a direct
        // transaction, so the proxy waits on it while it holds the group's lock
        let sql = table_ddl(group);
        let id = marker::ddl_id(sql.as_bytes());
        let mut d = RawConn::connect(&backend, "root", "", None).expect("direct");
        let _ = d.warnings_or_error(&format!(
            "DELETE FROM obkv_meta.hbase_ddl WHERE id = '{id}'"
        ));
        ok(&mut d, "BEGIN");
        ok(
            &mut d,
            &format!("INSERT INTO obkv_meta.hbase_ddl (id, ddl) VALUES ('{id}', 'held')"),
        );
        let addr = first.addr.clone();
        let stmt = sql.clone();
        let client = std::thread::spawn(move || {
            let mut c = RawConn::connect(&addr, "root", "", Some(DB)).expect("through the proxy");
            // the connection is lost with the proxy: an error, not an answer
            c.query(stmt.as_bytes()).map(|frames| frames.len())
        });
        // wait until the proxy holds the lock (observed, not slept on)
        let name = current_lock_name(
            &mut RawConn::connect(&backend, "root", "", None).expect("direct"),
            group,
        );
        let mut probe = RawConn::connect(&backend, "root", "", None).expect("direct");
        let deadline = Instant::now() + Duration::from_secs(20);
        while probe.scalar(&format!("SELECT IS_USED_LOCK('{name}') IS NOT NULL")) != "1" {
            assert!(
                Instant::now() < deadline,
                "{}: the proxy never took the lock",
                kind.name()
            );
            std::thread::yield_now();
        }
        unsafe {
            libc::kill(first.pid as i32, libc::SIGKILL);
        }
        while first.alive() {
            std::thread::yield_now();
        }
        ok(&mut d, "ROLLBACK");
        let killed = client.join().expect("client thread");
        assert!(
            killed.is_err(),
            "{}: the CREATE finished before the kill: {killed:?}",
            kind.name()
        );
        if kind == Kind::SeekDb {
            // OceanBase keeps the killed proxy's lock: the scenario is real
            assert_ne!(
                probe.scalar(&format!("SELECT IS_USED_LOCK('{name}')")),
                "NULL"
            );
        }
        // a new proxy gets the group within the configured wait
        let second = proxy::spawn_binary(&backend, &["--config", &conf]);
        ddl_gets_through(&backend, &second.addr, group, timeout_ms);
    }
}
