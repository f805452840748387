//! Session fidelity (issue 7, part 2): the client cannot tell the proxy is there by how its
//! session lives and ends.

use std::time::{Duration, Instant};

use crate::common::proxy;
use crate::common::raw::{err_of, read_until_closed, whole_packets, RawConn};
use crate::common::{shared, Kind};

/// A refused COM_CHANGE_USER: MariaDB keeps the connection with the previous user, database
/// and character set. Through the proxy the same session goes on.
#[test]
fn a_refused_change_user_keeps_the_session() {
    let backend = shared(Kind::MariaDb);
    let mut admin = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
    let _ = admin.query_ok("DROP USER fid");
    admin.must("CREATE USER fid IDENTIFIED BY 'right'");
    admin.must("CREATE DATABASE IF NOT EXISTS obkv_fid");
    let p = proxy::start(proxy::config_for(&backend.addr));
    let mut seen = Vec::new();
    for addr in [&backend.addr, &p.addr] {
        let mut c = RawConn::connect(addr, "root", "", Some("obkv_fid")).expect("login");
        c.must("SET @kept = 'yes'");
        let refused = c.change_user("fid", "wrong", "");
        let code = err_of(&refused).map(|e| e.0);
        // the same connection answers, as the previous user, in the previous database
        let after = (
            code,
            c.scalar("SELECT CURRENT_USER()"),
            c.scalar("SELECT DATABASE()"),
        );
        seen.push(after);
    }
    assert_eq!(seen[0].0, Some(1045), "{seen:?}");
    assert_eq!(seen[0], seen[1], "direct vs through the proxy");
    admin.must("DROP USER fid");
}

#[test]
fn a_refused_change_user_keeps_the_session_in_proxy_auth_mode() {
    let backend = shared(Kind::MariaDb);
    let p = proxy::start(crate::auth_tls::proxy_auth_config(&backend.addr));
    let mut c = RawConn::connect(&p.addr, "app", "app-pass", None).expect("login");
    c.must("SET @kept = 'yes'");
    let refused = c.change_user("reporting", "nope", "");
    assert_eq!(err_of(&refused).map(|e| e.0), Some(1045));
    assert_eq!(
        c.scalar("SELECT @kept"),
        "yes",
        "the previous session goes on"
    );
}

/// The backend ends an idle session (KILL): what it says reaches the client and the client's
/// socket closes at once, not at its next statement with an invented 2013.
#[test]
fn a_killed_backend_session_closes_the_client_socket_at_once() {
    let backend = shared(Kind::MariaDb);
    let p = proxy::start(proxy::config_for(&backend.addr));
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("login");
    // the greeting is relayed, so this is the backend's own thread id
    let id = c.scalar("SELECT CONNECTION_ID()");
    let mut admin = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
    admin.must(&format!("KILL {id}"));
    let killed = Instant::now();
    let (closed, got) = read_until_closed(&mut c.stream, Duration::from_secs(5));
    let took = killed.elapsed();
    assert!(closed, "the client's socket was not closed");
    assert!(
        took < Duration::from_millis(100),
        "closed {took:?} after the KILL"
    );
    // whatever the backend said on its way out was whole packets
    assert!(
        whole_packets(&got).is_some(),
        "partial packet relayed: {got:?}"
    );
}

/// A command that reaches the proxy together with the backend's close (the client pinged
/// right after a KILL, before the proxy saw the close): the client reads what it would read
/// directly — the backend's goodbye as the backend sent it, then the close — not that goodbye
/// relayed as the answer to its command (MariaDB Connector/Python's `test_ping` read it as a
/// malformed packet). The proxy is stopped while the two arrive, so both are there when it
/// runs again.
#[test]
fn a_command_racing_a_kill_meets_the_close_as_it_would_directly() {
    let backend = shared(Kind::MariaDb);
    let p = proxy::spawn_binary(&backend.addr, &[]);
    let mut admin = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
    let mut seen = Vec::new();
    for (addr, stop) in [(&backend.addr, false), (&p.addr, true)] {
        let mut c = RawConn::connect(addr, "root", "", None).expect("login");
        let id = c.scalar("SELECT CONNECTION_ID()");
        let signal = |s| {
            // SAFETY: a signal to the proxy process this test started
            assert_eq!(unsafe { libc::kill(p.pid as libc::pid_t, s) }, 0);
        };
        if stop {
            signal(libc::SIGSTOP);
        }
        admin.must(&format!("KILL {id}"));
        // the backend has closed that connection once its thread is gone
        let gone = Instant::now() + Duration::from_secs(10);
        while admin.scalar(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {id}"
        )) != "0"
        {
            assert!(Instant::now() < gone, "the killed thread did not end");
        }
        c.write_frame(0, &[0x0e]).expect("COM_PING sent");
        if stop {
            signal(libc::SIGCONT);
        }
        let (closed, got) = read_until_closed(&mut c.stream, Duration::from_secs(10));
        assert!(closed, "{addr}: the socket was not closed");
        seen.push(got);
    }
    let codes: Vec<_> = seen
        .iter()
        .map(|g| whole_packets(g).map(|ps| ps.iter().map(|p| err_of(p)).collect::<Vec<_>>()))
        .collect();
    assert_eq!(seen[0], seen[1], "direct vs through the proxy: {codes:?}");
    assert!(p.alive());
}
