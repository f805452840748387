//! Multiplexing (`multiplex.mode = "transaction"`, issue 43): sessions of one backend user share
//! its backend connections, each seeing only its own state; a transaction keeps its connection;
//! state the proxy cannot carry pins the session (counted); a session that finds every
//! connection busy past the wait gets error 1040; both authentication modes; both backends.

use obkv_proxy::config::{Config, MultiplexMode};

use crate::auth_tls::proxy_auth_config;
use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{proxy_counter, shared, Kind, BOTH};

const DB: &str = "obkv_mux";
const DB2: &str = "obkv_mux_other";

fn databases(backend: &str) {
    let mut c = RawConn::connect(backend, "root", "", None).expect("direct");
    for db in [DB, DB2] {
        c.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
            .expect("database");
    }
}

fn multiplexed(mut cfg: Config, max: usize, wait_ms: u64) -> Config {
    cfg.multiplex.mode = MultiplexMode::Transaction;
    cfg.multiplex.max_backend_connections = max;
    cfg.multiplex.wait_timeout_ms = wait_ms;
    cfg
}

fn status(c: &mut RawConn) -> Vec<(String, String)> {
    c.rows("SHOW PROXY STATUS")
        .into_iter()
        .filter_map(|r| {
            let k = String::from_utf8_lossy(r.first()?.as_deref()?).into_owned();
            let v = String::from_utf8_lossy(r.get(1)?.as_deref()?).into_owned();
            Some((k, v))
        })
        .collect()
}

#[test]
fn sessions_share_one_backend_connection_and_each_sees_its_own_state() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let direct_tz = RawConn::connect(&backend.addr, "root", "", None)
            .expect("direct")
            .scalar("SELECT @@time_zone");
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        a.exec("SET time_zone = '+03:00', sql_mode = 'ANSI_QUOTES'")
            .expect("a's state");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB2)).expect("b");
        for round in 0..3 {
            let what = format!("{} round {round}", kind.name());
            assert_eq!(
                b.scalar("SELECT @@time_zone"),
                direct_tz,
                "{what}: b sees a's time zone"
            );
            assert!(
                !b.scalar("SELECT @@sql_mode").contains("ANSI_QUOTES"),
                "{what}"
            );
            assert_eq!(b.scalar("SELECT DATABASE()"), DB2, "{what}");
            assert_eq!(a.scalar("SELECT @@time_zone"), "+03:00", "{what}");
            assert!(
                a.scalar("SELECT @@sql_mode").contains("ANSI_QUOTES"),
                "{what}"
            );
            assert_eq!(a.scalar("SELECT DATABASE()"), DB, "{what}");
            a.exec(&format!("USE {DB2}")).expect("use");
            assert_eq!(a.scalar("SELECT DATABASE()"), DB2, "{what}");
            a.exec(&format!("USE {DB}")).expect("use");
        }
        // b sets its own time zone: each keeps its own, on the one connection
        b.exec("SET @@session.time_zone = '-02:00'")
            .expect("b's state");
        assert_eq!(a.scalar("SELECT @@time_zone"), "+03:00");
        assert_eq!(b.scalar("SELECT @@time_zone"), "-02:00");
        // back to the server's default
        b.exec("SET time_zone = DEFAULT").expect("default");
        assert_eq!(b.scalar("SELECT @@time_zone"), direct_tz);
        let s = status(&mut a);
        assert_eq!(
            proxy_counter(&s, "multiplex_sessions"),
            2,
            "{}",
            kind.name()
        );
        assert_eq!(
            proxy_counter(&s, "multiplex_backend_connections_open"),
            1,
            "{}: two sessions on one backend connection",
            kind.name()
        );
        assert!(
            proxy_counter(&s, "multiplex_state_restores") >= 6,
            "{}",
            kind.name()
        );
    }
}

#[test]
fn a_transaction_keeps_its_connection_and_a_session_that_cannot_have_one_gets_1040() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        {
            let mut d = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
            d.exec("DROP TABLE IF EXISTS mux_txn").expect("drop");
            d.exec("CREATE TABLE mux_txn (id INT PRIMARY KEY, v INT)")
                .expect("create");
        }
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 300));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        assert_eq!(b.scalar("SELECT 1"), "1");
        a.exec("BEGIN").expect("begin");
        a.exec("INSERT INTO mux_txn VALUES (1, 1)").expect("insert");
        // a holds the only connection: b waits, then is told
        let err = b
            .rows_or_error("SELECT 2")
            .expect_err("no connection for b");
        assert_eq!(err.0, 1040, "{}: {err:?}", kind.name());
        // a's transaction is whole: what it wrote it sees, on its connection
        assert_eq!(a.scalar("SELECT COUNT(*) FROM mux_txn"), "1");
        a.exec("ROLLBACK").expect("rollback");
        assert_eq!(
            b.scalar("SELECT COUNT(*) FROM mux_txn"),
            "0",
            "{}",
            kind.name()
        );
        let s = status(&mut b);
        assert_eq!(proxy_counter(&s, "multiplex_wait_timeouts"), 1);
    }
}

#[test]
fn state_that_cannot_be_carried_pins_the_session_and_is_counted() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 2, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        a.exec("SET @mine = 41").expect("user variable");
        // (seekdb has no temporary tables)
        let temporary = kind == Kind::MariaDb;
        if temporary {
            a.exec("CREATE TEMPORARY TABLE mux_tmp (a INT)")
                .expect("temporary table");
        }
        for _ in 0..3 {
            assert_eq!(
                b.scalar("SELECT @mine"),
                "NULL",
                "{}: b sees a's variable",
                kind.name()
            );
            assert_eq!(a.scalar("SELECT @mine + 1"), "42");
            assert!(
                !temporary || a.query_ok("SELECT * FROM mux_tmp"),
                "{}",
                kind.name()
            );
        }
        let s = status(&mut a);
        assert_eq!(proxy_counter(&s, "multiplex_pins_user_variable"), 2);
        // b's SELECT @mine pinned b too (a user variable read)
        assert_eq!(
            proxy_counter(&s, "multiplex_sessions"),
            0,
            "{}",
            kind.name()
        );
    }
}

#[test]
fn last_insert_id_and_warnings_are_the_sessions_own() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        {
            let mut d = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
            d.exec("DROP TABLE IF EXISTS mux_ids").expect("drop");
            d.exec("CREATE TABLE mux_ids (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
                .expect("create");
        }
        // (two: a session that reads LAST_INSERT_ID() keeps its connection from then on)
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 2, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        a.exec("INSERT INTO mux_ids (v) VALUES (1)")
            .expect("a's insert");
        let a_id = RawConn::connect(&backend.addr, "root", "", Some(DB))
            .expect("direct")
            .scalar("SELECT MAX(id) FROM mux_ids");
        assert_eq!(a.scalar("SELECT 1"), "1");
        b.exec("INSERT INTO mux_ids (v) VALUES (2), (3)")
            .expect("b's insert");
        assert_eq!(b.scalar("SELECT 1"), "1");
        assert_eq!(a.scalar("SELECT LAST_INSERT_ID()"), a_id, "{}", kind.name());
        assert_ne!(b.scalar("SELECT LAST_INSERT_ID()"), a_id, "{}", kind.name());
        // a statement's warnings are read by its own session, and no other's
        // (a warning on MariaDB, an error on seekdb's strict mode: each leaves a condition)
        let w = a.warnings_or_error("DO CAST('x1' AS SIGNED)").unwrap_or(1);
        assert!(w >= 1, "{}", kind.name());
        assert_eq!(b.warnings_or_error("DO 1"), Ok(0));
        assert_eq!(b.rows("SHOW WARNINGS").len(), 0, "{}", kind.name());
        let shown = a.rows("SHOW WARNINGS");
        assert_eq!(shown.len(), usize::from(w), "{}", kind.name());
    }
}

#[test]
fn proxy_authentication_opens_connections_up_to_the_limit() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let mut cfg = proxy_auth_config(&backend.addr);
        cfg = multiplexed(cfg, 2, 5_000);
        let p = proxy::start(cfg);
        let mut clients: Vec<RawConn> = (0..6)
            .map(|_| RawConn::connect(&p.addr, "app", "app-pass", Some(DB)).expect("app"))
            .collect();
        for (i, c) in clients.iter_mut().enumerate() {
            c.exec(&format!("SET time_zone = '+0{i}:00'")).expect("tz");
        }
        for _ in 0..2 {
            for (i, c) in clients.iter_mut().enumerate() {
                assert_eq!(c.scalar("SELECT @@time_zone"), format!("+0{i}:00"));
            }
        }
        let s = status(&mut clients[0]);
        assert_eq!(
            proxy_counter(&s, "multiplex_sessions"),
            6,
            "{}",
            kind.name()
        );
        assert!(
            proxy_counter(&s, "multiplex_backend_connections_open") <= 2,
            "{}: {s:?}",
            kind.name()
        );
    }
}

/// Kills every backend connection of `user`, directly, and waits until the backend lists none.
fn kill_all(backend: &str, user: &str) {
    let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
    let list = format!("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '{user}'");
    let ids: Vec<String> = d
        .rows(&list)
        .into_iter()
        .filter_map(|r| Some(String::from_utf8_lossy(r.first()?.as_deref()?).into_owned()))
        .collect();
    assert!(!ids.is_empty(), "no connection of {user} to kill");
    for id in ids {
        let _ = d.exec(&format!("KILL {id}"));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !d.rows(&list).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "{user}'s connections stayed"
        );
    }
}

#[test]
fn a_lost_backend_connection_is_replaced_between_transactions_and_reported_inside_one() {
    use obkv_proxy::config::{AuthMode, ProxyUser};
    use obkv_proxy::protocol::auth::native_hash;
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        {
            let mut d = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
            d.exec("CREATE USER IF NOT EXISTS 'obkv_mux'@'%' IDENTIFIED BY 'mux-pass'")
                .expect("user");
            d.exec("GRANT ALL ON *.* TO 'obkv_mux'@'%'").expect("grant");
        }
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.auth.mode = AuthMode::Proxy;
        cfg.auth.users = vec![ProxyUser {
            name: "muxapp".into(),
            password_hash: native_hash(b"app-pass"),
            backend_user: "obkv_mux".into(),
            backend_password: "mux-pass".into(),
        }];
        let p = proxy::start(multiplexed(cfg, 2, 5_000));
        let mut c = RawConn::connect(&p.addr, "muxapp", "app-pass", Some(DB)).expect("client");
        c.exec("SET time_zone = '+05:00'").expect("tz");
        assert_eq!(c.scalar("SELECT 1"), "1");
        // between transactions: another connection serves it, in its state
        kill_all(&backend.addr, "obkv_mux");
        assert_eq!(c.scalar("SELECT @@time_zone"), "+05:00", "{}", kind.name());
        assert_eq!(c.scalar("SELECT DATABASE()"), DB, "{}", kind.name());
        // inside one: the client is told, and its next transaction works
        c.exec("BEGIN").expect("begin");
        assert_eq!(c.scalar("SELECT 2"), "2");
        kill_all(&backend.addr, "obkv_mux");
        let err = c
            .rows_or_error("SELECT 3")
            .expect_err("the transaction's connection is gone");
        assert_eq!(err.0, 2013, "{}: {err:?}", kind.name());
        c.exec("BEGIN").expect("begin again");
        assert_eq!(c.scalar("SELECT 4"), "4", "{}", kind.name());
        c.exec("COMMIT").expect("commit");
        assert_eq!(c.scalar("SELECT @@time_zone"), "+05:00", "{}", kind.name());
    }
}
