//! Client TLS (the mariadb CLI with --ssl) and the proxy-auth mode: users declared in the config,
//! password hashes only, backend connections pooled and reset between sessions.

use obkv_proxy::config::{AuthMode, Config, ProxyUser};
use obkv_proxy::protocol::auth::native_hash;

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

pub(crate) struct Cert {
    _dir: tempfile::TempDir,
    pub(crate) cert: std::path::PathBuf,
    pub(crate) key: std::path::PathBuf,
}

pub(crate) fn self_signed() -> Cert {
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

pub(crate) fn proxy_auth_config(backend: &str) -> Config {
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
    admin.must("CREATE DATABASE IF NOT EXISTS obkv_pool");
    admin.must("CREATE DATABASE IF NOT EXISTS obkv_pool_secret");
    for d in ["obkv_pool", "obkv_pool_secret"] {
        admin.must(&format!("CREATE TABLE IF NOT EXISTS {d}.t (x INT)"));
        admin.must(&format!("DELETE FROM {d}.t"));
    }
    let p = proxy::start(proxy_auth_config(&backend.addr));
    let db = Some("obkv_pool");
    let mut first = RawConn::connect(&p.addr, "app", "app-pass", db).expect("login");
    let first_id = first.scalar("SELECT CONNECTION_ID()");
    first.must("SET @secret = 'left behind'");
    // the next user of this connection must not inherit the database chosen here
    first.must("USE obkv_pool_secret");
    if let Err(e) = first.exec("SET NAMES binary") {
        panic!("{}: {e:?}", kind.name());
    }
    // seekdb has no temporary tables (error 1235); MariaDB does
    let has_temp_table = first.query_ok("CREATE TEMPORARY TABLE tmp_left (x INT)");
    assert_eq!(has_temp_table, kind == Kind::MariaDb);
    first.must("SET SESSION sql_mode = 'ANSI_QUOTES'");
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
    reused.must("INSERT INTO t VALUES (1)");
    assert_eq!(admin.scalar("SELECT COUNT(*) FROM obkv_pool.t"), "1");
    assert_eq!(
        admin.scalar("SELECT COUNT(*) FROM obkv_pool_secret.t"),
        "0",
        "{}: an unqualified INSERT went into the previous user's database",
        kind.name()
    );
    assert_ne!(reused.scalar("SELECT @@character_set_client"), "binary");
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
        c.must("SET @v = 1");
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

/// A CA and a backend certificate it signed (for 127.0.0.1 and localhost).
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let dir = tempfile::tempdir().expect("tmp");
        let write =
            |name: &str, text: String| std::fs::write(dir.path().join(name), text).expect("write");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca =
            CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("key")).expect("ca");
        write("ca.pem", ca.pem());
        let server_key = KeyPair::generate().expect("key");
        let server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("params")
            .signed_by(&server_key, &ca)
            .expect("signed");
        write("server.crt", server.pem());
        write("server.key", server_key.serialize_pem());
        // a CA that signed nothing here
        let mut other = CertificateParams::new(Vec::<String>::new()).expect("params");
        other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let other = CertifiedIssuer::self_signed(other, KeyPair::generate().expect("key"))
            .expect("other ca");
        write("other-ca.pem", other.pem());
        Pki { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn mariadb_options(&self) -> Vec<String> {
        let p = |n: &str| self.path(n).display().to_string();
        vec![
            format!("--ssl-ca={}", p("ca.pem")),
            format!("--ssl-cert={}", p("server.crt")),
            format!("--ssl-key={}", p("server.key")),
        ]
    }
}

fn tls_proxy_config(
    backend: &str,
    proxy_cert: &Cert,
    mode: &str,
    ca: Option<&std::path::Path>,
) -> Config {
    let mut cfg = proxy::config_for(backend);
    cfg.tls.cert = Some(proxy_cert.cert.clone());
    cfg.tls.key = Some(proxy_cert.key.clone());
    let mut toml = format!("[backend.tls]\nmode = \"{mode}\"\n");
    if let Some(ca) = ca {
        toml.push_str(&format!("ca = \"{}\"\n", ca.display()));
    }
    cfg.backend.tls = Config::from_toml(&toml).expect("tls config").backend.tls;
    cfg
}

#[test]
fn require_ssl_accounts_log_in_through_a_tls_proxy_with_backend_tls() {
    let pki = Pki::new();
    let proxy_cert = self_signed();
    let backend = crate::common::backends::Backend::start_private_with(
        Kind::MariaDb,
        "tls",
        &pki.mariadb_options(),
    );
    let mut direct = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
    direct.must("CREATE USER sec@'%' IDENTIFIED BY 'pw' REQUIRE SSL");
    direct.must("GRANT SELECT ON *.* TO sec@'%'");
    // the backend link's own cipher (SHOW STATUS describes the client's connection to the
    // proxy: issue 32)
    let cipher_sql = "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'";

    // auto (the default): TLS to the backend because the client used TLS to the proxy, with
    // the backend's certificate verified against the CA
    let ca = pki.path("ca.pem");
    let p = proxy::start(tls_proxy_config(
        &backend.addr,
        &proxy_cert,
        "auto",
        Some(&ca),
    ));
    let (ok, out) = cli(&p.addr, "sec", "pw", &["--ssl"], cipher_sql);
    assert!(ok, "REQUIRE SSL account through a TLS proxy: {out}");
    let cipher = out
        .lines()
        .last()
        .unwrap_or_default()
        .trim_start_matches("SSL_CIPHER")
        .trim();
    assert!(
        !cipher.is_empty(),
        "the backend session is not encrypted: {out}"
    );
    // a plain client gets a plain backend connection, which the account refuses
    match RawConn::connect(&p.addr, "sec", "pw", None) {
        Err(ConnectError::Server(code, _)) => assert_eq!(code, 1045),
        other => panic!("plain login of a REQUIRE SSL account: {:?}", other.is_ok()),
    }
    drop(p);

    // required: every backend connection is encrypted, even for plain clients
    let p = proxy::start(tls_proxy_config(
        &backend.addr,
        &proxy_cert,
        "required",
        Some(&ca),
    ));
    let mut c = RawConn::connect(&p.addr, "sec", "pw", None).expect("TLS to the backend");
    assert!(c.rows(cipher_sql)[0][1]
        .as_deref()
        .is_some_and(|v| !v.is_empty()));
    // while the client's own connection is plain, and SHOW STATUS says so
    for sql in [
        "SHOW STATUS LIKE 'Ssl_cipher'",
        "SHOW SESSION STATUS LIKE 'Ssl_version'",
    ] {
        let rows = c.rows(sql);
        assert_eq!(rows.len(), 1, "{sql}");
        assert_eq!(rows[0][1].as_deref(), Some(&b""[..]), "{sql}");
    }
    drop(p);

    // a backend certificate the configured CA did not sign is refused, with an error packet
    let other = pki.path("other-ca.pem");
    let p = proxy::start(tls_proxy_config(
        &backend.addr,
        &proxy_cert,
        "required",
        Some(&other),
    ));
    match RawConn::connect(&p.addr, "sec", "pw", None) {
        Err(ConnectError::Server(code, msg)) => assert_eq!(code, 2026, "{msg}"),
        other => panic!("unverifiable backend accepted: {:?}", other.is_ok()),
    }
    drop(p);

    // a backend without TLS (seekdb): required fails clearly, auto falls back to plain
    let seekdb = shared(Kind::SeekDb);
    let p = proxy::start(tls_proxy_config(
        &seekdb.addr,
        &proxy_cert,
        "required",
        None,
    ));
    match RawConn::connect(&p.addr, "root", "", None) {
        Err(ConnectError::Server(code, msg)) => {
            assert_eq!(code, 2026);
            assert!(msg.contains("does not offer TLS"), "{msg}");
        }
        other => panic!("required TLS without TLS: {:?}", other.is_ok()),
    }
    let p = proxy::start(tls_proxy_config(&seekdb.addr, &proxy_cert, "auto", None));
    let (ok, out) = cli(&p.addr, "root", "", &["--ssl"], "SELECT 'plain backend'");
    assert!(ok && out.contains("plain backend"), "{out}");
    // a TLS client reads its own connection's cipher, though the backend link is plain (Go's
    // driver's TLS test asks exactly this)
    for sql in [
        "SHOW STATUS LIKE 'Ssl_cipher'",
        "SHOW STATUS LIKE 'Ssl_version'",
    ] {
        let (ok, out) = cli(&p.addr, "root", "", &["--ssl"], sql);
        let value = out
            .lines()
            .last()
            .unwrap_or_default()
            .split('\t')
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_string();
        assert!(ok && !value.is_empty(), "{sql}: {out}");
        assert!(value.starts_with("TLS"), "{sql}: {value}");
    }
}
