//! The compressed protocol (CLIENT_COMPRESS, zlib) through the proxy: offered when the backend
//! offers it, decoded and encoded on both legs, with the packets inside numbered as the backend
//! numbers them; broken frames end only their own session.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use mysql_async::{Row, Value};

use obkv_proxy::protocol::auth::native_scramble;
use obkv_proxy::protocol::constants::{cap, com};
use obkv_proxy::protocol::handshake::{build_handshake_response, parse_greeting};

use crate::auth_tls::proxy_auth_config;
use crate::common::raw::{read_frame_from, read_until_closed, RawConn, DEFAULT_CAPS};
use crate::common::{mariadb_cli, proxy, shared, Kind, BOTH};

fn opts(addr: &str, user: &str, password: &str) -> mysql_async::Opts {
    let (host, port) = addr.rsplit_once(':').expect("addr");
    mysql_async::OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port.parse().expect("port"))
        .user(Some(user))
        .pass(Some(password))
        .compression(Some(mysql_async::Compression::fast()))
        .into()
}

/// Every result set of a multi-statement text, as values.
async fn result_sets(conn: &mut mysql_async::Conn, sql: &str) -> Vec<Vec<Vec<Value>>> {
    use mysql_async::prelude::*;
    let mut r = conn.query_iter(sql).await.expect(sql);
    let mut sets = Vec::new();
    while !r.is_empty() {
        let rows: Vec<Row> = r.collect().await.expect("rows");
        sets.push(rows.into_iter().map(Row::unwrap).collect());
    }
    sets
}

/// What the test does on one connection; run directly and through the proxy, then compared.
async fn exercise(conn: &mut mysql_async::Conn) -> Vec<Vec<Vec<Value>>> {
    use mysql_async::prelude::*;
    let mut all = result_sets(
        conn,
        "SELECT 1; SELECT 'two', NULL; DO 3; SELECT REPEAT('z', 70000) AS z, 4",
    )
    .await;
    // a result crossing the 16 MiB packet boundary, and a command that does too
    all.extend(result_sets(conn, "SELECT REPEAT('ab', 9000000) AS big").await);
    let long = format!("SELECT LENGTH('{}') AS n", "q".repeat(17 << 20));
    all.extend(result_sets(conn, &long).await);
    // binary protocol: every byte value, in and out
    let bytes: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let stmt = conn.prep("SELECT ?, LENGTH(?)").await.expect("prepare");
    for _ in 0..3 {
        let rows: Vec<Row> = conn
            .exec(&stmt, (bytes.clone(), bytes.clone()))
            .await
            .expect("execute");
        all.push(rows.into_iter().map(Row::unwrap).collect());
    }
    conn.close(stmt).await.expect("close");
    // errors come back whole
    match conn
        .query_drop("SELECT * FROM mysql.no_such_table_here")
        .await
    {
        Err(mysql_async::Error::Server(e)) => {
            all.push(vec![vec![Value::from(e.code), Value::from(e.message)]]);
        }
        other => panic!("{other:?}"),
    }
    // and the session goes on afterwards
    all.extend(result_sets(conn, "SELECT 'after the error'").await);
    // COM_CHANGE_USER and COM_RESET_CONNECTION inside the compressed stream
    conn.change_user(
        mysql_async::ChangeUserOpts::new()
            .with_user(Some("root".into()))
            .with_pass(Some(String::new()))
            .with_db_name(Some("mysql".into())),
    )
    .await
    .expect("change user");
    all.extend(result_sets(conn, "SELECT DATABASE(), CURRENT_USER() LIKE 'root@%'").await);
    conn.reset().await.expect("reset");
    all.extend(result_sets(conn, "SELECT 'after the reset'").await);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_sessions_are_relayed_on_both_legs() {
    use mysql_async::prelude::*;
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        let mut direct = mysql_async::Conn::new(opts(&backend.addr, "root", ""))
            .await
            .expect("direct");
        let mut proxied = mysql_async::Conn::new(opts(&p.addr, "root", ""))
            .await
            .expect("through the proxy");
        let (d, q) = (exercise(&mut direct).await, exercise(&mut proxied).await);
        assert_eq!(d.len(), q.len(), "{}", kind.name());
        assert!(d == q, "{}: results differ through the proxy", kind.name());
        assert_eq!(q[4][0][0], Value::Bytes(b"ab".repeat(9_000_000)));
        // the backend leg is compressed too: its own status says so, as it does directly
        let status = "SHOW SESSION STATUS LIKE 'Compression'";
        let d: Vec<(String, String)> = direct.query(status).await.expect("direct status");
        let q: Vec<(String, String)> = proxied.query(status).await.expect("proxied status");
        assert_eq!(d, q, "{}", kind.name());
        if kind == Kind::MariaDb {
            assert_eq!(q, vec![("Compression".into(), "ON".into())]);
        }
        // the proxy itself read and answered the compressed commands
        let rows: Vec<(String, String)> = proxied.query("SHOW PROXY STATUS").await.expect("ours");
        let n = crate::common::proxy_counter(&rows, "compressed_sessions");
        assert!(n >= 1, "{}: {n}", kind.name());
        // and its rules apply: a K/Q/T/V table with a bad name is refused by the proxy
        let e = proxied
            .query_drop("CREATE TABLE `bad$` (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024), PRIMARY KEY (K, Q, T))")
            .await;
        assert!(matches!(e, Err(mysql_async::Error::Server(_))), "{e:?}");
        direct.disconnect().await.expect("bye");
        proxied.disconnect().await.expect("bye");
    }
}

#[test]
fn the_cli_compresses_through_tls_and_in_proxy_auth_mode() {
    for kind in BOTH {
        let backend = shared(kind);
        let cert = crate::auth_tls::self_signed();
        let mut cfg = proxy::config_for(&backend.addr);
        cfg.tls.cert = Some(cert.cert.clone());
        cfg.tls.key = Some(cert.key.clone());
        let tp = proxy::start(cfg);
        let (ok, out, err) = mariadb_cli(&tp.addr, &["-uroot", "--ssl", "--compress"], "status");
        assert!(ok, "{}: {err}", kind.name());
        assert!(
            out.contains("Cipher in use is TLS") && out.contains("Protocol:\t\tCompressed"),
            "{}: {out}",
            kind.name()
        );
        // LOAD DATA LOCAL: the file goes through the compressed legs as well
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("rows.tsv");
        let rows: String = (0..5000).map(|i| format!("{i}\tvalue {i}\n")).collect();
        std::fs::write(&file, &rows).expect("file");
        let sql = format!(
            "CREATE DATABASE IF NOT EXISTS compress_db; USE compress_db;\n\
             DROP TABLE IF EXISTS ld; CREATE TABLE ld (a int primary key, b varchar(40));\n\
             LOAD DATA LOCAL INFILE '{}' INTO TABLE ld;\n\
             SELECT COUNT(*), SUM(a), MAX(b) FROM ld; DROP TABLE ld;",
            file.display()
        );
        let (ok, out, err) = mariadb_cli(
            &tp.addr,
            &[
                "-uroot",
                "--compress",
                "--local-infile=1",
                "--batch",
                "--silent",
            ],
            &sql,
        );
        assert!(ok, "{}: {err}", kind.name());
        assert_eq!(out.trim(), "5000\t12497500\tvalue 999", "{}", kind.name());

        // proxy-auth mode: the proxy's own backend login is compressed for such a client, and a
        // pooled connection is reused only by a client that asked for the same
        let p = proxy::start(proxy_auth_config(&backend.addr));
        for args in [
            &["-uapp", "-papp-pass", "--compress"][..],
            &["-uapp", "-papp-pass"][..],
            &["-uapp", "-papp-pass", "--compress"][..],
        ] {
            let (ok, out, err) = mariadb_cli(
                &p.addr,
                args,
                "status; SHOW SESSION STATUS LIKE 'Compression'; SELECT LENGTH(REPEAT('c', 200000))",
            );
            assert!(ok, "{}: {err}", kind.name());
            let compressed = args.contains(&"--compress");
            assert_eq!(
                out.contains("Protocol:\t\tCompressed"),
                compressed,
                "{}: {out}",
                kind.name()
            );
            assert!(out.contains("200000"), "{out}");
            if kind == Kind::MariaDb {
                let on = if compressed { "ON" } else { "OFF" };
                assert!(out.contains(&format!("Compression\t{on}")), "{out}");
            }
        }
    }
}

#[test]
fn compression_can_be_turned_off() {
    let backend = shared(Kind::MariaDb);
    let mut cfg = proxy::config_for(&backend.addr);
    cfg.proxy.compression = false;
    let p = proxy::start(cfg);
    let c = RawConn::connect_with(&p.addr, "root", "", None, DEFAULT_CAPS | cap::COMPRESS)
        .expect("login");
    assert_eq!(c.greeting.capabilities & cap::COMPRESS, 0);
    assert_eq!(c.caps & cap::COMPRESS, 0);
    let (ok, out, _) = mariadb_cli(&p.addr, &["-uroot", "--compress"], "status");
    assert!(ok && !out.contains("Compressed"), "{out}");
}

/// One compressed frame holding `plain`, deflated.
fn frame(seq: u8, plain: &[u8]) -> Vec<u8> {
    let mut z = Compress::new(Compression::default(), true);
    let mut body = vec![0u8; plain.len() + 64];
    z.compress(plain, &mut body, FlushCompress::Finish)
        .expect("deflate");
    body.truncate(z.total_out() as usize);
    let mut f = (body.len() as u32).to_le_bytes()[..3].to_vec();
    f.push(seq);
    f.extend_from_slice(&(plain.len() as u32).to_le_bytes()[..3]);
    f.extend_from_slice(&body);
    f
}

/// One frame holding `plain` stored, not deflated (uncompressed length 0).
fn stored(seq: u8, plain: &[u8]) -> Vec<u8> {
    let mut f = (plain.len() as u32).to_le_bytes()[..3].to_vec();
    f.push(seq);
    f.extend_from_slice(&[0, 0, 0]);
    f.extend_from_slice(plain);
    f
}

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    p.push(seq);
    p.extend_from_slice(payload);
    p
}

/// Reads one compressed frame: its sequence id and its plain bytes (None when the stream ends
/// or the frame does not inflate to the length it declares).
fn read_one_frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 7];
    s.read_exact(&mut h).ok()?;
    let clen = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
    let ulen = usize::from(h[4]) | usize::from(h[5]) << 8 | usize::from(h[6]) << 16;
    let mut body = vec![0u8; clen];
    s.read_exact(&mut body).ok()?;
    if ulen == 0 {
        return Some((h[3], body));
    }
    let mut out = vec![0u8; ulen];
    let mut z = Decompress::new(true);
    z.decompress(&body, &mut out, FlushDecompress::Finish)
        .ok()?;
    (z.total_out() as usize == ulen).then_some((h[3], out))
}

/// Reads compressed frames until the plain bytes hold a whole response ending in a packet that
/// starts with one of `last` (checked only on packets after the first); returns the frames'
/// sequence ids and the plain packets (sequence id, payload).
fn read_compressed(s: &mut TcpStream, packets_wanted: usize) -> (Vec<u8>, Vec<(u8, Vec<u8>)>) {
    let mut frame_ids = Vec::new();
    let mut plain = Vec::new();
    let mut packets = Vec::new();
    while packets.len() < packets_wanted {
        let (id, bytes) = read_one_frame(s).expect("a whole frame");
        frame_ids.push(id);
        plain.extend_from_slice(&bytes);
        while plain.len() >= 4 {
            let len =
                usize::from(plain[0]) | usize::from(plain[1]) << 8 | usize::from(plain[2]) << 16;
            if plain.len() < 4 + len {
                break;
            }
            packets.push((plain[3], plain[4..4 + len].to_vec()));
            plain.drain(..4 + len);
        }
    }
    (frame_ids, packets)
}

#[test]
fn a_first_command_right_behind_the_login_and_broken_frames() {
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        // the login and a compressed COM_QUERY in one write, before the OK arrives
        let mut s = TcpStream::connect(&p.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let (_, g) = read_frame_from(&mut s).expect("greeting");
        let greeting = parse_greeting(&g).expect("greeting parses");
        assert_ne!(greeting.capabilities & cap::COMPRESS, 0, "{}", kind.name());
        let caps = (DEFAULT_CAPS | cap::COMPRESS) & greeting.capabilities;
        let login = build_handshake_response(
            (caps, 0),
            45,
            b"root",
            &native_scramble(b"", &greeting.scramble),
            None,
            b"mysql_native_password",
        );
        let mut wire = packet(1, &login);
        let mut q = vec![com::QUERY];
        q.extend_from_slice(b"SELECT 'pipelined' AS p");
        wire.extend_from_slice(&frame(0, &packet(0, &q)));
        s.write_all(&wire).expect("write");
        let (_, ok) = read_frame_from(&mut s).expect("login answer");
        assert_eq!(ok.first(), Some(&0), "{}: {ok:?}", kind.name());
        // column count, column, (EOF,) row, end: the row holds the value
        let wanted = if caps & cap::DEPRECATE_EOF != 0 { 4 } else { 5 };
        let (frames, packets) = read_compressed(&mut s, wanted);
        assert_eq!(
            frames.first(),
            Some(&1),
            "{}: frame ids {frames:?}",
            kind.name()
        );
        let ids: Vec<u8> = packets.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            ids,
            (1..=wanted as u8).collect::<Vec<_>>(),
            "{}",
            kind.name()
        );
        assert!(packets.iter().any(|(_, p)| p.ends_with(b"pipelined")));
        // a second command starts again at frame 0 and is answered from frame 1 on
        let mut q = vec![com::QUERY];
        q.extend_from_slice(b"DO 1");
        s.write_all(&frame(0, &packet(0, &q))).expect("write");
        let (frames, packets) = read_compressed(&mut s, 1);
        assert_eq!((frames[0], packets[0].0, packets[0].1[0]), (1, 1, 0));

        // frames that lie end their own session, nothing else
        let lies: [(&str, Vec<u8>); 3] = [
            ("not zlib", {
                let mut f = frame(0, &packet(0, &q));
                let n = f.len();
                f[n - 6..].copy_from_slice(b"garbag");
                f
            }),
            ("longer than it inflates", {
                let mut f = frame(0, &packet(0, &q));
                f[4] = f[4].wrapping_add(1);
                f
            }),
            ("empty frame declaring data", vec![0, 0, 0, 0, 9, 0, 0]),
        ];
        for (what, bad) in lies {
            let mut c =
                RawConn::connect_with(&p.addr, "root", "", None, DEFAULT_CAPS | cap::COMPRESS)
                    .expect("login");
            assert_ne!(c.caps & cap::COMPRESS, 0);
            c.stream.write_all(&bad).expect("write");
            let (closed, _) = read_until_closed(&mut c.stream, Duration::from_secs(20));
            assert!(
                closed,
                "{}: {what}: the proxy closed the session",
                kind.name()
            );
            // everyone else goes on
            let mut other = RawConn::connect(&p.addr, "root", "", None).expect("login");
            assert_eq!(other.scalar("SELECT 'still here'"), "still here", "{what}");
        }
    }
}

/// The code of an ERR packet, if `p` is one.
fn err_code(p: &[u8]) -> Option<u16> {
    (p.first() == Some(&0xff) && p.len() >= 3).then(|| u16::from_le_bytes([p[1], p[2]]))
}

/// Sends `frames` on a fresh compressed session to `addr` and reads what comes back: the first
/// packet of the answer, or None when the server closed without one.
fn answer_to_frames(addr: &str, frames: &[Vec<u8>]) -> Option<Vec<u8>> {
    let mut c =
        RawConn::connect_with(addr, "root", "", None, DEFAULT_CAPS | cap::COMPRESS).expect("login");
    assert_ne!(c.caps & cap::COMPRESS, 0);
    c.stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    for f in frames {
        c.stream.write_all(f).expect("write");
    }
    let (_, plain) = read_one_frame(&mut c.stream)?;
    plain.get(4..).map(<[u8]>::to_vec)
}

#[test]
fn compressed_frames_out_of_order_are_refused_as_the_server_refuses_them() {
    let mut q = vec![com::QUERY];
    q.extend_from_slice(b"SELECT 'in order' AS answer");
    let whole = packet(0, &q);
    let (head, tail) = whole.split_at(10);
    // (what, the frames, the error code wanted or None for an answer)
    type Case<'a> = (&'a str, Vec<Vec<u8>>, Option<u16>);
    // Connector/J 2.7 numbers a command's packet 1 inside its frame when it tried to deflate
    // it and sent it stored (its CompressPacketOutputStream counts the attempt): MariaDB does
    // not check the packets' own ids inside frames, and runs it
    let numbered_1 = packet(1, &q);
    let cases: [Case; 6] = [
        (
            "a stored frame holding a packet numbered 1 (Connector/J)",
            vec![stored(0, &numbered_1)],
            None,
        ),
        (
            "a deflated frame holding a packet numbered 1",
            vec![frame(0, &numbered_1)],
            None,
        ),
        (
            "a command's first frame numbered 5",
            vec![frame(5, &whole)],
            Some(1156),
        ),
        (
            "a packet in two frames, counted on",
            vec![frame(0, head), frame(1, tail)],
            None,
        ),
        (
            "a packet's second frame numbered 0 again",
            vec![frame(0, head), frame(0, tail)],
            Some(1156),
        ),
        (
            "a packet's second frame skipping one",
            vec![frame(0, head), frame(2, tail)],
            Some(1156),
        ),
    ];
    for kind in BOTH {
        let backend = shared(kind);
        let p = proxy::start(proxy::config_for(&backend.addr));
        for (what, frames, want) in &cases {
            let through = answer_to_frames(&p.addr, frames);
            match want {
                Some(code) => assert_eq!(
                    through.as_deref().and_then(err_code),
                    Some(*code),
                    "{}: {what}: {through:?}",
                    kind.name()
                ),
                None => assert!(
                    through.as_deref().is_some_and(|a| err_code(a).is_none()),
                    "{}: {what}: {through:?}",
                    kind.name()
                ),
            }
            // MariaDB itself answers the same (seekdb does not check frame ids: its answer is
            // printed, not compared)
            let direct = answer_to_frames(&backend.addr, frames);
            if kind == Kind::MariaDb {
                assert_eq!(
                    direct.as_deref().and_then(err_code),
                    through.as_deref().and_then(err_code),
                    "{what}: MariaDB directly {direct:?}"
                );
            } else {
                eprintln!("{}: {what}: directly {direct:?}", kind.name());
            }
        }
        // a second command after an answered one starts again at 0; 1 is out of order
        let mut c = RawConn::connect_with(&p.addr, "root", "", None, DEFAULT_CAPS | cap::COMPRESS)
            .expect("login");
        c.stream.write_all(&frame(0, &whole)).expect("write");
        let wanted = if c.caps & cap::DEPRECATE_EOF != 0 {
            4
        } else {
            5
        };
        let (_, packets) = read_compressed(&mut c.stream, wanted);
        assert!(packets.iter().any(|(_, p)| p.ends_with(b"in order")));
        c.stream.write_all(&frame(1, &whole)).expect("write");
        let (_, packets) = read_compressed(&mut c.stream, 1);
        assert_eq!(err_code(&packets[0].1), Some(1156), "{}", kind.name());
        let (closed, _) = read_until_closed(&mut c.stream, Duration::from_secs(20));
        assert!(closed, "{}: the session ends after 1156", kind.name());
    }
}
