//! Acceptance 5: the backend stops and restarts under connected clients — no proxy crash, a
//! 2013-style error for sessions that lose their backend, a first-packet error naming the backend
//! for new clients while it is down, and recovery as soon as it is back.

use crate::common::backends::Backend;
use crate::common::proxy;
use crate::common::raw::{err_of, ConnectError, RawConn};
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

        backend.stop();

        for c in &mut clients {
            let frames = c
                .query(b"SELECT 1")
                .expect("the proxy answers with an error packet");
            let (code, msg) = err_of(&frames[0].1).expect("an ERR packet");
            assert_eq!(code, 2013, "{}: {msg}", kind.name());
            assert!(
                msg.contains(&backend.addr),
                "{}: message should name the backend: {msg}",
                kind.name()
            );
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
            log.contains("lost backend connection"),
            "log should say what happened:\n{log}"
        );
        assert!(
            log.contains("cannot reach backend"),
            "log should say what happened:\n{log}"
        );
        assert!(!log.contains("panicked"), "{log}");
    }
}
