//! Acceptance 5: the backend stops and restarts under connected clients — no proxy crash, idle
//! sessions closed at once with what the backend said (issue 7), a first-packet error naming the
//! backend for new clients while it is down, a session in the middle of a statement told with an
//! error packet, and recovery as soon as it is back.

use crate::common::backends::Backend;
use crate::common::proxy;
use std::time::Duration;

use crate::common::raw::{err_of, read_until_closed, whole_packets, ConnectError, RawConn};
use crate::common::BOTH;

#[test]
fn backend_restart_under_connected_clients() {
    for kind in BOTH {
        let mut backend = Backend::start_private(kind, "restart");
        let p = proxy::spawn_binary(&backend.addr, &[]);
        let mut clients: Vec<RawConn> = (0..3)
            .map(|_| RawConn::connect(&p.addr, "root", "", None).expect("connect through proxy"))
            .collect();
        for c in &mut clients {
            assert_eq!(c.scalar("SELECT 1 + 1"), "2");
        }
        // a session that is idle through the outage, and one that is not touched at all
        let bystander = RawConn::connect(&p.addr, "root", "", None).expect("connect");
        // and one in the middle of a statement: it gets an error packet (the backend's, or
        // 2013 from the proxy when the backend just goes away), never a silent close
        let mut busy = RawConn::connect(&p.addr, "root", "", None).expect("connect");
        let id = busy.scalar("SELECT CONNECTION_ID()");
        let in_flight = std::thread::spawn(move || busy.query(b"SELECT SLEEP(60)"));
        let mut watcher = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
        // the statement is running when the processlist shows it (no sleep as synchronisation)
        let running = format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {id} AND INFO LIKE 'SELECT SLEEP%'"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while watcher.scalar(&running) != "1" {
            assert!(
                std::time::Instant::now() < deadline,
                "{}: never ran",
                kind.name()
            );
        }
        drop(watcher);

        backend.stop();

        let answer = in_flight
            .join()
            .expect("thread")
            .expect("an answer, not a silent close");
        let (code, msg) = err_of(&answer[0].1).expect("an ERR packet");
        assert!(code != 0, "{}: {code} {msg}", kind.name());

        // idle sessions are closed at once (issue 7), with whatever the backend said on its
        // way out relayed as whole packets, not left open for an invented 2013 later
        for c in &mut clients {
            let (closed, got) = read_until_closed(&mut c.stream, Duration::from_secs(20));
            assert!(
                closed,
                "{}: the idle client's socket stayed open",
                kind.name()
            );
            let packets = whole_packets(&got).expect("only whole packets relayed");
            for p in packets {
                let (code, msg) = err_of(p).expect("only error packets");
                assert!(code != 2013, "{}: an invented error: {msg}", kind.name());
            }
        }
        match RawConn::connect(&p.addr, "root", "", None) {
            Err(ConnectError::Server(code, msg)) => {
                assert_eq!(code, 2003, "{msg}");
                assert!(msg.contains(&backend.addr), "{msg}");
            }
            Err(ConnectError::Io(e)) => panic!(
                "{}: connection closed instead of an error packet: {e}",
                kind.name()
            ),
            Ok(_) => panic!("{}: connected while the backend is down", kind.name()),
        }
        assert!(p.alive(), "proxy died");

        backend.start();

        let mut fresh =
            RawConn::connect(&p.addr, "root", "", None).expect("new session after recovery");
        assert_eq!(fresh.scalar("SELECT 6 * 7"), "42");
        drop(bystander);
        assert!(p.alive());
        let log = p.log_text();
        assert!(
            log.contains("backend closed the idle connection"),
            "log should say what happened:\n{log}"
        );
        assert!(
            log.contains("cannot reach backend"),
            "log should say what happened:\n{log}"
        );
        assert!(!log.contains("panicked"), "{log}");
    }
}
