//! Client TLS (the mariadb CLI with --ssl) and the proxy-auth mode: users declared in the config,
//! password hashes only, backend connections pooled and reset between sessions.

use obkv_proxy::config::{AuthMode, Config, ProxyUser};
use obkv_proxy::session::auth::native_hash;

use crate::common::proxy;
use crate::common::raw::{err_of, ConnectError, RawConn};
use crate::common::{shared, Kind, BOTH};

fn cli(addr: &str, user: &str, password: &str, extra: &[&str], sql: &str) -> (bool, String) {
    let mut args = vec!["-u", user, "--batch"];
    let password = format!("--password={password}");
    args.push(&password);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-e", sql]);
    let (ok, out, err) = crate::common::mariadb_cli(addr, &args, "");
    (ok, format!("{out}{err}"))
}

struct Cert {
    _dir: tempfile::TempDir,
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
}

fn self_signed() -> Cert {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("certificate");
    let dir = tempfile::tempdir().expect("tmp");
    let cert = dir.path().join("server.crt");
    let key = dir.path().join("server.key");
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write key");
    Cert {
        _dir: dir,
        cert,
        key,
    }
}

#[test]
fn mysql_cli_with_ssl_through_the_proxy() {
    let cert = self_signed();
    for kind in BOTH {
        let backend = shared(kind);
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.tls.cert = Some(cert.cert.clone());
        cfg.tls.key = Some(cert.key.clone());
        let p = proxy::start(cfg);
        let (ok, out) = cli(
            &p.addr,
            "root",
            "",
            &["--ssl"],
            "status; SELECT 'over tls' AS v;",
        );
        assert!(ok, "{}: {out}", kind.name());
        assert!(
            out.contains("Cipher in use is TLS"),
            "{}: no TLS in status:\n{out}",
            kind.name()
        );
        assert!(out.contains("over tls"));
        // plain clients are still served by the same proxy
        let (ok, out) = cli(&p.addr, "root", "", &["--skip-ssl"], "status;");
        assert!(ok, "{out}");
        assert!(out.contains("SSL:\t\t\tNot in use"), "{out}");
        // wrong password over TLS: the backend's 1045
        let (ok, out) = cli(&p.addr, "root", "nope", &["--ssl"], "SELECT 1");
        assert!(!ok && out.contains("1045"), "{out}");
    }
}

fn proxy_auth_config(backend: &str) -> Config {
    let mut cfg = proxy::config_for(backend);
    cfg.auth.mode = AuthMode::Proxy;
    cfg.auth.users = vec![
        ProxyUser {
            name: "app".into(),
            password_hash: native_hash(b"app-pass"),
            backend_user: "root".into(),
            backend_password: String::new(),
        },
        ProxyUser {
            name: "reporting".into(),
            password_hash: native_hash(b"rep-pass"),
            backend_user: "root".into(),
            backend_password: String::new(),
        },
    ];
    cfg
}

#[test]
fn proxy_auth_checks_users_itself() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy_auth_config(&backend.addr));
        let (ok, out) = cli(
            &p.addr,
            "app",
            "app-pass",
            &[],
            "SELECT CURRENT_USER() AS u",
        );
        assert!(ok, "{}: {out}", kind.name());
        assert!(
            out.contains("root@"),
            "{}: mapped to the backend user: {out}",
            kind.name()
        );
        let (ok, out) = cli(&p.addr, "app", "wrong", &[], "SELECT 1");
        assert!(
            !ok && out.contains("ERROR 1045") && out.contains("'app'@'127.0.0.1'"),
            "{out}"
        );
        let (ok, out) = cli(&p.addr, "root", "", &[], "SELECT 1");
        assert!(
            !ok && out.contains("ERROR 1045"),
            "backend users are not proxy users: {out}"
        );
        // a fresh random salt per connection
        let a = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login");
        let b = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login");
        assert_ne!(a.greeting.scramble, b.greeting.scramble);
        // TLS works in this mode too
        let cert = self_signed();
        let mut cfg = proxy_auth_config(&backend.addr);
        cfg.tls.cert = Some(cert.cert.clone());
        cfg.tls.key = Some(cert.key.clone());
        let tp = proxy::start(cfg);
        let (ok, out) = cli(&tp.addr, "app", "app-pass", &["--ssl"], "status");
        assert!(ok && out.contains("Cipher in use is TLS"), "{out}");
    }
}

#[test]
fn pooled_backend_connections_are_reset_before_reuse() {
    for kind in BOTH {
        pool_reuse_is_clean(kind);
    }
}

fn pool_reuse_is_clean(kind: Kind) {
    let backend = shared(kind);
    let mut admin = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
    assert!(admin.query_ok("CREATE DATABASE IF NOT EXISTS obkv_pool"));
    let p = proxy::start(proxy_auth_config(&backend.addr));
    let db = Some("obkv_pool");
    let mut first = RawConn::connect(&p.addr, "app", "app-pass", db).expect("login");
    let first_id = first.scalar("SELECT CONNECTION_ID()");
    assert!(first.query_ok("SET @secret = 'left behind'"));
    // seekdb has no temporary tables (error 1235); MariaDB does
    let has_temp_table = first.query_ok("CREATE TEMPORARY TABLE tmp_left (x INT)");
    assert_eq!(has_temp_table, kind == Kind::MariaDb);
    assert!(first.query_ok("SET SESSION sql_mode = 'ANSI_QUOTES'"));
    first.quit();
    // sessions that did not get the released connection stay open, so the next login must
    // eventually be handed the pooled one (the reset happens in the background)
    let mut held = Vec::new();
    let reused = loop {
        let mut c = RawConn::connect(&p.addr, "app", "app-pass", db).expect("login");
        if c.scalar("SELECT CONNECTION_ID()") == first_id {
            break c;
        }
        held.push(c);
        assert!(
            held.len() < 200,
            "{}: the released backend connection was never reused",
            kind.name()
        );
    };
    let mut reused = reused;
    assert_eq!(
        reused.scalar("SELECT @secret"),
        "NULL",
        "{}: user variable survived",
        kind.name()
    );
    assert_eq!(reused.scalar("SELECT DATABASE()"), "obkv_pool");
    if has_temp_table {
        assert!(
            !reused.query_ok("SELECT * FROM tmp_left"),
            "temporary table survived"
        );
    }
    assert!(
        !reused
            .scalar("SELECT @@SESSION.sql_mode")
            .contains("ANSI_QUOTES"),
        "{}: sql_mode survived",
        kind.name()
    );
}

#[test]
fn proxy_auth_change_user() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy_auth_config(&backend.addr));
        let mut c = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login");
        assert!(c.query_ok("SET @v = 1"));
        let ok = c.change_user("reporting", "rep-pass", "");
        assert_eq!(ok[0], 0, "{}: {:?}", kind.name(), err_of(&ok));
        assert_eq!(
            c.scalar("SELECT @v"),
            "NULL",
            "clean session after change user"
        );
        let bad = c.change_user("reporting", "nope", "");
        assert_eq!(err_of(&bad).map(|e| e.0), Some(1045));
        assert!(matches!(
            RawConn::connect(&p.addr, "app", "x", None),
            Err(ConnectError::Server(1045, _))
        ));
    }
}

#[test]
fn pooled_connection_closed_by_the_backend_is_not_handed_out() {
    let backend = shared(Kind::MariaDb);
    let p = proxy::start(proxy_auth_config(&backend.addr));
    let mut first = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login");
    let first_id = first.scalar("SELECT CONNECTION_ID()");
    first.quit();
    // wait until the released connection sits in the pool (a reset happens first)
    let mut held = Vec::new();
    loop {
        let mut c = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login");
        if c.scalar("SELECT CONNECTION_ID()") == first_id {
            c.quit();
            break;
        }
        held.push(c);
        assert!(held.len() < 200, "never pooled");
    }
    // the pooled connection is released again; kill it behind the proxy's back once it is idle
    let mut admin = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !admin.query_ok(&format!("KILL {first_id}")) {
        assert!(
            std::time::Instant::now() < deadline,
            "could not kill {first_id}"
        );
    }
    // every later login works: the dead connection is dropped at checkout
    for _ in 0..3 {
        let mut c = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login after kill");
        assert_eq!(c.scalar("SELECT 'fresh'"), "fresh");
        assert_ne!(c.scalar("SELECT CONNECTION_ID()"), first_id);
        held.push(c);
    }
}
