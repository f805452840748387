//! The binary's configuration: file < environment variable < flag, and a config check command.

use std::process::Command;

fn check(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_obkv-proxy"));
    cmd.arg("check-config")
        .args(args)
        .env_remove("OBKV_PROXY_LISTEN")
        .env_remove("OBKV_PROXY_BACKEND");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("binary runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn flag_beats_environment_beats_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[proxy]\nlisten = \"127.0.0.1:1111\"\n[backend]\naddress = \"127.0.0.1:2222\"\n",
    )
    .expect("config");
    let f = file.to_str().expect("path");

    let (ok, out) = check(&["--config", f], &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("\"127.0.0.1:1111\"") && out.contains("\"127.0.0.1:2222\""),
        "{out}"
    );

    let (ok, out) = check(
        &["--config", f],
        &[
            ("OBKV_PROXY_LISTEN", "127.0.0.1:3333"),
            ("OBKV_PROXY_BACKEND", "127.0.0.1:4444"),
        ],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("\"127.0.0.1:3333\"")
            && out.contains("\"127.0.0.1:4444\"")
            && !out.contains("1111"),
        "{out}"
    );

    let (ok, out) = check(
        &[
            "--config",
            f,
            "--listen",
            "127.0.0.1:5555",
            "--backend",
            "127.0.0.1:6666",
        ],
        &[("OBKV_PROXY_LISTEN", "127.0.0.1:3333")],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("\"127.0.0.1:5555\"")
            && out.contains("\"127.0.0.1:6666\"")
            && !out.contains("3333"),
        "{out}"
    );
}

#[test]
fn bad_configuration_is_reported_not_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[proxy]\nlisten = \"nowhere\"\n").expect("config");
    let (ok, out) = check(&["--config", file.to_str().expect("path")], &[]);
    assert!(!ok);
    assert!(out.contains("proxy.listen"), "{out}");
    let (ok, out) = check(&["--config", "/nonexistent/obkv.toml"], &[]);
    assert!(!ok && out.contains("cannot read config file"), "{out}");
    // the documented example configuration is valid as shipped
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config/obkv-proxy.toml");
    let (ok, out) = check(&["--config", example], &[]);
    assert!(ok, "{out}");
}

#[test]
fn sigterm_drains_sessions_and_exits() {
    use crate::common::backends::process_alive;
    use crate::common::raw::RawConn;
    use std::time::{Duration, Instant};

    let backend = crate::common::shared(crate::common::Kind::MariaDb);
    let p = crate::common::proxy::spawn_binary(&backend.addr, &[]);
    let mut idle = RawConn::connect(&p.addr, "root", "", None).expect("login");
    assert_eq!(idle.scalar("SELECT 1"), "1");
    // a session past its first commands waits for its next one in the busy loop (until the
    // watcher finds it idle for a tick, 200 ms), which reads the shutdown its own way
    let mut busy = RawConn::connect(&p.addr, "root", "", None).expect("login");
    for _ in 0..12 {
        assert_eq!(busy.scalar("SELECT 1"), "1");
    }
    unsafe {
        libc::kill(p.pid as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while process_alive(p.pid) {
        assert!(
            Instant::now() < deadline,
            "proxy did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // the idle session was closed, and nothing listens any more
    assert!(idle.query(b"SELECT 1").is_err());
    assert!(busy.query(b"SELECT 1").is_err());
    // both ended of themselves, not at the end of the grace period
    assert!(
        !p.log_text().contains("grace period over"),
        "{}",
        p.log_text()
    );
    assert!(std::net::TcpStream::connect(&p.addr).is_err());
    assert!(p.log_text().contains("shutting down"), "{}", p.log_text());
}

#[test]
fn partition_subcommand_places_keys_and_reports_skew() {
    let bin = env!("CARGO_BIN_EXE_obkv-proxy");
    let ddl = "CREATE TABLE h$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = h PARTITION BY KEY(K) PARTITIONS 97";
    // vectors read back from OceanBase (shared/testdata): 1BC6… → p0, 2BB9… → p1, 00 → p7
    let out = Command::new(bin)
        .args([
            "partition",
            "--ddl",
            ddl,
            "--hex",
            "1BC62C5271CF64F25D6F15",
            "2BB94E9BC51D2BA647B007056B24",
            "00",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1BC62C5271CF64F25D6F15\tp0"), "{text}");
    assert!(text.contains("2BB94E9BC51D2BA647B007056B24\tp1"), "{text}");
    assert!(text.contains("00\tp7"), "{text}");
    // a low-cardinality 4-byte prefix puts every key in one partition: reported as skewed
    let dir = tempfile::tempdir().expect("tmp");
    let keys = dir.path().join("keys.txt");
    std::fs::write(
        &keys,
        (0..2000).map(|i| format!("user{i}\n")).collect::<String>(),
    )
    .expect("keys");
    let prefix_ddl = ddl
        .replace(
            "NOT NULL,",
            "NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)),",
        )
        .replace("KEY(K)", "KEY(K_PREFIX)");
    let out = Command::new(bin)
        .args([
            "partition",
            "--ddl",
            &prefix_ddl,
            "--keys-file",
            keys.to_str().expect("path"),
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("empty_partitions\t96") && text.contains("SKEWED"),
        "{text}"
    );
    let out = Command::new(bin)
        .args([
            "partition",
            "--ddl",
            ddl,
            "--keys-file",
            keys.to_str().expect("path"),
        ])
        .output()
        .expect("runs");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ok: keys spread as evenly as chance allows")
    );
    // a definition that is not an HBase partitioning is refused with a clear message
    let out = Command::new(bin)
        .args([
            "partition",
            "--ddl",
            &ddl.replace("KEY(K)", "HASH(T)"),
            "abc",
        ])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an HBase partitioning"));
}
