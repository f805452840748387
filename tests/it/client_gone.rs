//! A client that goes while its statement runs (issue 40): it holds a row lock in a
//! transaction and runs `SELECT SLEEP(30)`, then closes its connection — or is killed with
//! SIGKILL. A second client waits for the row. Directly, the backend notices its client gone,
//! ends the statement and rolls the transaction back; through the proxy the second client must
//! get the row no later than 1 s after it does directly (measured in the same test, both
//! backends), the gone client's write undone, the ended statement counted. With a catalog
//! account the proxy also KILLs the backend connection. And a client that stops reading a
//! large result loses its session after `proxy.net_write_timeout_ms`, its statement ended.

use std::time::{Duration, Instant};

use obkv_proxy::protocol::constants::com;

use crate::common::backends::{process_alive, spawn_owned};
use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{shared, BOTH};

/// How the holding client goes.
#[derive(Clone, Copy, Debug)]
enum Goes {
    /// It closes its socket mid-statement (a driver's socket timeout).
    Closes,
    /// Its process is killed (the mariadb client, SIGKILL).
    Killed,
}

/// Where a client connects, as whom (user, password).
#[derive(Clone, Copy)]
struct Via<'a>(&'a str, &'a str, &'a str);

/// The tests' own database (a fresh backend has no `test` database).
const DB: &str = "obkv_gone";

/// A table with one row, made directly in [`DB`]; its name is the test's own.
fn table(backend: &str, name: &str) {
    let mut c = RawConn::connect(backend, "root", "", None).expect("direct");
    c.exec(&format!("CREATE DATABASE IF NOT EXISTS {DB}"))
        .expect("database");
    drop(c);
    let mut d = RawConn::connect(backend, "root", "", Some(DB)).expect("direct");
    d.exec(&format!("DROP TABLE IF EXISTS {name}"))
        .expect("drop");
    d.exec(&format!("CREATE TABLE {name} (id INT PRIMARY KEY, v INT)"))
        .expect("create");
    d.exec(&format!("INSERT INTO {name} VALUES (1, 0)"))
        .expect("row");
}

/// Waits until the backend runs the holder's SLEEP (its processlist shows it).
fn wait_running(backend: &str, marker: &str) {
    let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
    let q = format!(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(30) AS {marker}%'"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while d.scalar(&q) != "1" {
        assert!(Instant::now() < deadline, "the holder's SLEEP never ran");
    }
}

/// One round through `via` (the backend directly, or a proxy): a holder locks the row and
/// sleeps, then goes; returns how long after it went the second client (also through `via`)
/// got the row. The holder's +1 must be rolled back, the waiter's +10 in.
fn round(backend: &str, via: Via, name: &str, goes: Goes, marker: &str) -> Duration {
    round_after(backend, via, name, goes, marker, |_| {})
}

/// `round`, with `before` run between the holder's lock and its statement (a closing holder).
fn round_after(
    backend: &str,
    via: Via,
    name: &str,
    goes: Goes,
    marker: &str,
    before: impl FnOnce(Via),
) -> Duration {
    let whole = via;
    let Via(via, user, pass) = via;
    let sleep = format!("SELECT SLEEP(30) AS {marker}");
    let update = format!("UPDATE {name} SET v = v + 1 WHERE id = 1");
    let went = match goes {
        Goes::Closes => {
            let mut h = RawConn::connect(via, user, pass, Some(DB)).expect("holder");
            h.exec("BEGIN").expect("begin");
            h.exec(&update).expect("lock");
            before(whole);
            let mut q = vec![com::QUERY];
            q.extend_from_slice(sleep.as_bytes());
            h.write_frame(0, &q).expect("sleep sent");
            wait_running(backend, marker);
            drop(h);
            Instant::now()
        }
        Goes::Killed => {
            let (host, port) = via.rsplit_once(':').expect("HOST:PORT");
            let mut cmd = std::process::Command::new("mariadb");
            cmd.args(["--protocol=tcp", "-h", host, "-P", port, "-u", user, DB])
                .arg(format!("--password={pass}"))
                .arg("-e")
                .arg(format!("BEGIN; {update}; {sleep}"))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let pid = spawn_owned(cmd);
            wait_running(backend, marker);
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while process_alive(pid) {
                assert!(Instant::now() < deadline, "the holder outlived SIGKILL");
            }
            Instant::now()
        }
    };
    let mut w = RawConn::connect(via, user, pass, Some(DB)).expect("waiter");
    w.exec(&format!("UPDATE {name} SET v = v + 10 WHERE id = 1"))
        .expect("the waiter's update");
    let waited = went.elapsed();
    let v = w.scalar(&format!("SELECT v FROM {name} WHERE id = 1"));
    w.exec(&format!("UPDATE {name} SET v = 0 WHERE id = 1"))
        .expect("reset");
    assert_eq!(
        v, "10",
        "{via} {goes:?}: the gone client's write was not undone"
    );
    waited
}

/// Waits until `done` holds (the proxy's counters are updated by other tasks), failing with
/// `what` after 20 s.
fn within_20s(mut done: impl FnMut() -> bool, what: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{}", what());
        std::thread::yield_now();
    }
}

fn status(via: Via) -> Vec<(String, String)> {
    let mut c = RawConn::connect(via.0, via.1, via.2, None).expect("proxy");
    crate::common::proxy_status(&mut c)
}

#[test]
fn a_client_that_goes_mid_statement_frees_its_locks_as_directly() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let name = format!("gone_{}", kind.name());
        table(backend, &name);
        let plain = proxy::start(proxy::config_for(backend));
        // with an account that may KILL the statement's connection
        let mut cfg = proxy::config_for(backend);
        cfg.hbase.catalog_user = "root".into();
        let killing = proxy::start(cfg);
        // proxy auth: the pooled login's own account KILLs its connection
        let pooled = proxy::start(crate::auth_tls::proxy_auth_config(backend));
        let ways = [
            (Via(&plain.addr, "root", ""), "closed"),
            (Via(&killing.addr, "root", ""), "killed"),
            (Via(&pooled.addr, "app", "app-pass"), "killed"),
        ];
        for goes in [Goes::Closes, Goes::Killed] {
            let direct = round(
                backend,
                Via(backend, "root", ""),
                &name,
                goes,
                "gone_direct",
            );
            for (i, (p, how)) in ways.into_iter().enumerate() {
                // seekdb may end the session on the proxy's shutdown before its KILL arrives
                // (1094, no such thread): then the statement is counted as closed
                let either = kind.name() == "seekdb" && how == "killed";
                let count = |p: Via| {
                    let rows = status(p);
                    let mut n =
                        crate::common::proxy_counter(&rows, &format!("statements_ended_{how}"));
                    if either {
                        n += crate::common::proxy_counter(&rows, "statements_ended_closed");
                    }
                    n
                };
                let before = count(p);
                let through = round(backend, p, &name, goes, &format!("gone_{i}"));
                eprintln!(
                    "{} {goes:?}: the row came {:.2} s after the client went directly, {:.2} s through the proxy ({}, {how})",
                    kind.name(),
                    direct.as_secs_f64(),
                    through.as_secs_f64(),
                    p.1
                );
                assert!(
                    through <= direct + Duration::from_secs(1),
                    "{} {goes:?} ({how}): {through:?} through the proxy, {direct:?} directly",
                    kind.name()
                );
                // counted once the ended statement's KILL (or its closing) is done
                within_20s(
                    || count(p) > before,
                    || {
                        format!(
                            "{} {goes:?}: statements_ended_{how} stayed {before}",
                            kind.name()
                        )
                    },
                );
            }
        }
    }
}

/// A session idle for a watcher tick rests: it gives back its buffers and the watcher's copies
/// of its sockets (an idle client holds two descriptors). Its next statement is watched again:
/// a holder that rested, then runs SLEEP and closes, frees its lock as directly.
#[test]
fn a_client_that_rested_before_its_statement_is_still_watched() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let name = format!("gone_rested_{}", kind.name());
        table(backend, &name);
        let p = proxy::start(proxy::config_for(backend));
        let via = Via(&p.addr, "root", "");
        let direct = round(
            backend,
            Via(backend, "root", ""),
            &name,
            Goes::Closes,
            "rested_direct",
        );
        let rested = |v: Via| crate::common::proxy_counter(&status(v), "sessions_rested");
        let closed = |v: Via| crate::common::proxy_counter(&status(v), "statements_ended_closed");
        let (rests_before, closed_before) = (rested(via), closed(via));
        let through = round_after(backend, via, &name, Goes::Closes, "rested_via", |v| {
            // the holder, idle after its lock, rests within two ticks of the watcher
            within_20s(
                || rested(v) > rests_before,
                || "the idle holder never rested".into(),
            );
        });
        eprintln!(
            "{}: the row came {:.2} s after a rested client went directly, {:.2} s through the proxy",
            kind.name(),
            direct.as_secs_f64(),
            through.as_secs_f64()
        );
        assert!(
            through <= direct + Duration::from_secs(1),
            "{}: {through:?} through the proxy, {direct:?} directly",
            kind.name()
        );
        within_20s(
            || closed(via) > closed_before,
            || "the ended statement was not counted".into(),
        );
    }
}

#[test]
fn a_client_that_stops_reading_a_large_result_loses_its_statement() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let name = format!("gone_reader_{}", kind.name());
        table(backend, &name);
        let mut d = RawConn::connect(backend, "root", "", Some(DB)).expect("direct");
        let rows = format!("{name}_rows");
        d.exec(&format!("DROP TABLE IF EXISTS {rows}"))
            .expect("drop");
        d.exec(&format!("CREATE TABLE {rows} (n INT PRIMARY KEY)"))
            .expect("create");
        let values: Vec<String> = (0..60).map(|i| format!("({i})")).collect();
        d.exec(&format!("INSERT INTO {rows} VALUES {}", values.join(",")))
            .expect("rows");
        let mut cfg = proxy::config_for(backend);
        cfg.proxy.net_write_timeout_ms = 1000;
        let p = proxy::start(cfg);
        let mut h = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("holder");
        h.exec("BEGIN").expect("begin");
        h.exec(&format!("UPDATE {name} SET v = v + 1 WHERE id = 1"))
            .expect("lock");
        // 216,000 rows of 1 KB, far more than the sockets between them hold: it is never read
        let mut q = vec![com::QUERY];
        q.extend_from_slice(
            format!("SELECT REPEAT('x', 1024) FROM {rows} a, {rows} b, {rows} c").as_bytes(),
        );
        h.write_frame(0, &q).expect("sent");
        let sent = Instant::now();
        let mut w = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("waiter");
        w.exec(&format!("UPDATE {name} SET v = v + 10 WHERE id = 1"))
            .expect("the waiter's update");
        let waited = sent.elapsed();
        eprintln!(
            "{}: the row came {:.2} s after the client stopped reading (net_write_timeout_ms = 1000)",
            kind.name(),
            waited.as_secs_f64()
        );
        // the backend's own net_write_timeout is 60 s: the proxy's 1 s ended it
        assert!(waited < Duration::from_secs(20), "{waited:?}");
        assert_eq!(
            w.scalar(&format!("SELECT v FROM {name} WHERE id = 1")),
            "10",
            "the holder's write was not undone"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let st = status(Via(&p.addr, "root", ""));
            let ended = crate::common::proxy_counter(&st, "statements_ended_closed")
                + crate::common::proxy_counter(&st, "statements_ended_killed");
            if ended >= 1 {
                break;
            }
            assert!(Instant::now() < deadline, "not counted: {st:?}");
            std::thread::yield_now();
        }
        drop(h);
    }
}
