//! Acceptance 6: hostile or broken clients get an error or lose their own connection; the proxy
//! keeps serving everyone else and never panics.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use obkv_proxy::protocol::constants::MAX_FRAME;
use obkv_proxy::protocol::response::ResponseKind;

use crate::common::proxy::{self, ProxyProcess};
use crate::common::raw::{err_of, RawConn};
use crate::common::{shared, Kind, BOTH};

fn login(addr: &str) -> RawConn {
    RawConn::connect(addr, "root", "", None).expect("login through proxy")
}

fn assert_serving(p: &ProxyProcess) {
    assert!(p.alive(), "proxy process died:\n{}", p.log_text());
    let mut c = login(&p.addr);
    assert_eq!(c.scalar("SELECT 'still serving'"), "still serving");
}

/// Reads until the peer closes or errors; true when an ERR packet came first.
fn got_error_or_close(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return buf.get(4) == Some(&0xff);
            }
            Err(_) => return true,
        }
    }
}

fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len() as u32;
    let mut f = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
    f.extend_from_slice(payload);
    f
}

#[test]
fn truncated_garbage_and_out_of_order_packets() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::spawn_binary(&backend.addr, &[]);

        // truncated login packet, then the client goes away
        let mut s = TcpStream::connect(&p.addr).expect("connect");
        let _ = crate::common::raw::read_frame_from(&mut s).expect("greeting");
        s.write_all(&[100, 0, 0, 1, 1, 2, 3]).expect("partial");
        drop(s);

        // garbage instead of a login
        let mut s = TcpStream::connect(&p.addr).expect("connect");
        let _ = crate::common::raw::read_frame_from(&mut s).expect("greeting");
        s.write_all(&[40, 0, 0, 1]).expect("header");
        s.write_all(&[0x5a; 40]).expect("garbage");
        assert!(
            got_error_or_close(&mut s),
            "{}: garbage login not refused",
            kind.name()
        );

        // a login packet claiming more than the login limit
        let mut s = TcpStream::connect(&p.addr).expect("connect");
        let _ = crate::common::raw::read_frame_from(&mut s).expect("greeting");
        s.write_all(&[0xff, 0xff, 0xff, 1]).expect("huge header");
        assert!(got_error_or_close(&mut s));

        // wrong sequence id on a command: error 1156, connection closed
        let mut c = login(&p.addr);
        c.write_frame(5, b"\x03SELECT 1").expect("sent");
        let (_, e) = c.read_frame().expect("an answer");
        assert_eq!(err_of(&e).map(|x| x.0), Some(1156), "{}", kind.name());

        // an unknown command byte: error 1047, the session lives on
        let mut c = login(&p.addr);
        let r = c
            .command(&[0x7f, 1, 2, 3], ResponseKind::Single)
            .expect("answer");
        assert_eq!(err_of(&r[0].1).map(|x| x.0), Some(1047));
        assert_eq!(c.scalar("SELECT 'alive'"), "alive");
        // an empty command
        let r = c.command(&[], ResponseKind::Single).expect("answer");
        assert!(err_of(&r[0].1).is_some());
        assert_eq!(c.scalar("SELECT 'alive'"), "alive");

        // truncated command after login, then close
        let mut c = login(&p.addr);
        c.stream
            .write_all(&[50, 0, 0, 0, 3, b'S'])
            .expect("partial");
        c.stream.shutdown(Shutdown::Write).expect("half close");
        assert!(got_error_or_close(&mut c.stream));

        // random garbage after login
        let mut c = login(&p.addr);
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let _ = c.stream.write_all(&garbage);
        let _ = c.stream.shutdown(Shutdown::Write);
        assert!(got_error_or_close(&mut c.stream));

        assert_serving(&p);
        assert!(!p.log_text().contains("panicked"), "{}", p.log_text());
    }
}

/// A statement of exactly 16 MiB - 1 bytes (one full frame plus an empty one) and one above
/// 16 MiB (two frames) give the same answer through the proxy as direct; a command above the
/// proxy's limit gets error 1153.
#[test]
fn packets_at_and_above_16_mib() {
    for kind in BOTH {
        // both backends take 64 MiB packets (`common::backends::shared` sets seekdb's)
        let backend = shared(kind);
        let p = proxy::spawn_binary(&backend.addr, &[]);
        for total in [MAX_FRAME, MAX_FRAME + 3_000_000] {
            let prefix = b"\x03SELECT LENGTH('";
            let suffix = b"')";
            let mut cmd = prefix.to_vec();
            cmd.resize(total - suffix.len(), b'z');
            cmd.extend_from_slice(suffix);
            assert_eq!(cmd.len(), total);
            let mut direct = login(&backend.addr);
            let mut proxied = login(&p.addr);
            let d = direct
                .command(&cmd, ResponseKind::Query)
                .expect("direct answer");
            let q = proxied
                .command(&cmd, ResponseKind::Query)
                .expect("proxy answer");
            assert_eq!(
                d,
                q,
                "{}: {total}-byte statement answered differently",
                kind.name()
            );
            assert!(
                err_of(&d[0].1).is_none(),
                "{}: backend refused {total} bytes: {:?}",
                kind.name(),
                err_of(&d[0].1)
            );
        }
        // a result row above 16 MiB comes back in several frames, relayed as they are
        let mut direct = login(&backend.addr);
        let mut proxied = login(&p.addr);
        let sql = b"SELECT REPEAT('q', 20000000) AS big";
        let d = direct.query(sql).expect("direct");
        let q = proxied.query(sql).expect("proxied");
        assert!(
            d.iter().any(|(_, f)| f.len() == MAX_FRAME),
            "{}: no multi-frame row in the direct answer",
            kind.name()
        );
        assert_eq!(d.len(), q.len());
        assert!(d == q, "{}: multi-frame row differs", kind.name());
        assert_eq!(proxied.scalar("SELECT 'after big row'"), "after big row");

        // above the proxy's own limit (64 MiB): 1153 and the connection closes
        let mut c = login(&p.addr);
        let writer = {
            let mut s = c.stream.try_clone().expect("clone");
            std::thread::spawn(move || {
                let chunk = vec![b'a'; MAX_FRAME];
                for seq in 0..5u8 {
                    let mut f = frame(seq, &chunk);
                    if seq == 0 {
                        f[4] = 3;
                    }
                    if s.write_all(&f).is_err() {
                        return;
                    }
                }
            })
        };
        let (_, e) = c.read_frame().expect("an error packet before the close");
        assert_eq!(err_of(&e).map(|x| x.0), Some(1153), "{}", kind.name());
        let _ = writer.join();
        assert_serving(&p);
        assert!(!p.log_text().contains("panicked"));
    }
}

/// 1,000 connections opened and dropped mid-handshake at various points; the proxy keeps
/// serving and leaks no backend connections.
#[test]
fn a_thousand_connections_dropped_mid_handshake() {
    let backend = shared(Kind::MariaDb);
    let p = proxy::spawn_binary(&backend.addr, &[]);
    let mut admin = login(&backend.addr);
    let threads_before: u64 = admin.rows("SHOW STATUS LIKE 'Threads_connected'")[0][1]
        .as_deref()
        .map(|v| String::from_utf8_lossy(v).parse().expect("number"))
        .expect("value");
    let workers: Vec<_> = (0..10)
        .map(|w| {
            let addr = p.addr.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let Ok(mut s) = TcpStream::connect(&addr) else {
                        continue;
                    };
                    match (w + i) % 4 {
                        0 => {} // before the greeting
                        1 => {
                            let _ = crate::common::raw::read_frame_from(&mut s);
                        }
                        2 => {
                            let _ = crate::common::raw::read_frame_from(&mut s);
                            let _ = s.write_all(&[60, 0, 0, 1, 0x85, 0xa6]);
                        }
                        _ => {
                            let _ = s.write_all(b"GET / HTTP/1.0\r\n\r\n");
                        }
                    }
                    drop(s);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    assert_serving(&p);
    // every dropped client's backend connection is closed again
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now: u64 = admin.rows("SHOW STATUS LIKE 'Threads_connected'")[0][1]
            .as_deref()
            .map(|v| String::from_utf8_lossy(v).parse().expect("number"))
            .expect("value");
        if now <= threads_before + 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "backend connections leaked: {threads_before} before, {now} now"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!p.log_text().contains("panicked"));
}
