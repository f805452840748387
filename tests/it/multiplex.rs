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

/// A direct connection to the database `DB`, with table `name (columns)` made afresh.
fn fresh_table(backend: &str, name: &str, columns: &str) -> RawConn {
    let mut d = RawConn::connect(backend, "root", "", Some(DB)).expect("direct");
    d.exec(&format!("DROP TABLE IF EXISTS {name}"))
        .expect("drop");
    d.exec(&format!("CREATE TABLE {name} ({columns})"))
        .expect("create");
    d
}

fn multiplexed(mut cfg: Config, max: usize, wait_ms: u64) -> Config {
    cfg.multiplex.mode = MultiplexMode::Transaction;
    cfg.multiplex.max_backend_connections = max;
    cfg.multiplex.wait_timeout_ms = wait_ms;
    cfg
}

fn status(c: &mut RawConn) -> Vec<(String, String)> {
    crate::common::proxy_status(c)
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
        fresh_table(&backend.addr, "mux_txn", "id INT PRIMARY KEY, v INT");
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
        fresh_table(
            &backend.addr,
            "mux_ids",
            "id INT AUTO_INCREMENT PRIMARY KEY, v INT",
        );
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
            "{}: {s:?}",
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

/// A small deterministic generator (xorshift64*), so a failing interleaving can be run again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One client's script: statements, each answered by rows, an OK's insert id, or an error.
/// Prepared statements (binary protocol) are lines `#prepare NAME SQL`, `#execute NAME
/// TYPES VALUE` (TYPES 1: the parameter types are sent, 0: the ones bound before hold) and
/// `#close NAME`.
fn script(client: usize, pins: bool, temporary: bool, rng: &mut Rng) -> Vec<String> {
    let table = format!("mux_mix_{client}");
    let mut out = vec![format!("USE {DB}")];
    let zones = ["'+01:00'", "'-05:00'", "'+09:30'", "DEFAULT"];
    let modes = ["'ANSI_QUOTES'", "'PIPES_AS_CONCAT'", "''", "DEFAULT"];
    // (`cnt` names its table unqualified: it reads the database it was prepared in)
    let prepares = [
        ("sel", "SELECT ? + 1, DATABASE(), @@time_zone".to_string()),
        ("ins", format!("INSERT INTO {DB}.{table} (v) VALUES (?)")),
        (
            "cnt",
            format!("SELECT COUNT(*), MAX(v) FROM {table} WHERE v > ?"),
        ),
    ];
    let mut typed = [false; 3];
    for (name, sql) in &prepares {
        out.push(format!("#prepare {name} {sql}"));
    }
    for _ in 0..40 {
        let pick = rng.below(if pins { 15 } else { 12 });
        match pick {
            0 => out.push(format!("SET time_zone = {}", zones[rng.below(4) as usize])),
            1 => out.push(format!(
                "SET SESSION sql_mode = {}",
                modes[rng.below(4) as usize]
            )),
            2 => out.push(format!("USE {}", if rng.below(2) == 0 { DB } else { DB2 })),
            3 => out.push("SELECT @@time_zone, @@sql_mode, DATABASE()".into()),
            4 => out.push(format!(
                "INSERT INTO {DB}.{table} (v) VALUES ({})",
                rng.below(100)
            )),
            5 => {
                out.push("BEGIN".into());
                out.push(format!(
                    "INSERT INTO {DB}.{table} (v) VALUES ({})",
                    rng.below(100)
                ));
                out.push(format!("SELECT COUNT(*), SUM(v) FROM {DB}.{table}"));
                out.push(
                    if rng.below(2) == 0 {
                        "COMMIT"
                    } else {
                        "ROLLBACK"
                    }
                    .into(),
                );
            }
            6 => out.push(format!("SELECT COUNT(*), MAX(id) FROM {DB}.{table}")),
            7 => out.push(format!(
                "SET NAMES {}",
                if rng.below(2) == 0 { "utf8" } else { "utf8mb4" }
            )),
            8 => out.push("SELECT @@character_set_client, @@character_set_results".into()),
            // prepared statements: carried from connection to connection; each execution's
            // types sent the first time, then now and then
            9..=11 => {
                let i = (pick - 9) as usize;
                let name = prepares[i].0;
                if i == 2 && rng.below(4) == 0 {
                    // closed and prepared again (maybe in the other database: refused there)
                    out.push(format!("#close {name}"));
                    out.push(format!("#prepare {name} {}", prepares[i].1));
                    typed[i] = false;
                } else {
                    let types = u8::from(!typed[i] || rng.below(2) == 0);
                    typed[i] = true;
                    out.push(format!("#execute {name} {types} {}", rng.below(100)));
                }
            }
            // what pins: user variables, LAST_INSERT_ID(), SQL-level prepared statements,
            // temporary tables (MariaDB)
            12 => {
                out.push(format!("SET @mine = {}", rng.below(1000)));
                out.push("SELECT @mine".into());
            }
            13 => out.push("SELECT LAST_INSERT_ID()".into()),
            _ if temporary => {
                out.push("CREATE TEMPORARY TABLE IF NOT EXISTS mux_tmp (a INT)".into());
                out.push("INSERT INTO mux_tmp VALUES (1)".into());
                out.push("SELECT COUNT(*) FROM mux_tmp".into());
            }
            _ => {
                out.push("PREPARE s FROM 'SELECT ? + 1'".into());
                out.push(format!("EXECUTE s USING {}", rng.below(50)));
            }
        }
    }
    // (a client whose last statement changed rows or warned keeps its connection only until
    // another waits for one: no script needs to end with a statement that leaves nothing)
    out
}

/// What a statement answered, as comparable text (`stmts`: the client's prepared statements
/// by name).
fn answer(
    c: &mut RawConn,
    stmts: &mut std::collections::HashMap<String, u32>,
    sql: &str,
) -> String {
    use crate::common::raw::err_of;
    use crate::prefix::{execute_packet, prepare, result_of, P};
    use obkv_proxy::protocol::response::ResponseKind;
    if let Some(rest) = sql.strip_prefix("#prepare ") {
        let (name, text) = rest.split_once(' ').expect("name");
        return match prepare(c, text.as_bytes()) {
            Ok((id, params)) => {
                stmts.insert(name.to_string(), id);
                format!("prepared {params}")
            }
            Err((code, _)) => {
                stmts.remove(name);
                format!("error {code}")
            }
        };
    }
    if let Some(name) = sql.strip_prefix("#close ") {
        if let Some(id) = stmts.remove(name) {
            crate::prefix::stmt_close(c, id);
        }
        return "closed".into();
    }
    if let Some(rest) = sql.strip_prefix("#execute ") {
        let mut parts = rest.split(' ');
        let (name, types, v) = (
            parts.next().expect("name"),
            parts.next() == Some("1"),
            parts
                .next()
                .and_then(|v| v.parse::<i64>().ok())
                .expect("value"),
        );
        let Some(&id) = stmts.get(name) else {
            return "no statement".into();
        };
        let packet = execute_packet(id, false, &[P::Int(v)], types, &[]);
        let frames = c
            .command(&packet, ResponseKind::Execute)
            .expect("execute answered");
        let first = &frames[0].1;
        if first.first() == Some(&0x00) && frames.len() == 1 {
            if let Some(ok) = obkv_proxy::protocol::packets::parse_ok(first) {
                return format!("ok {} {}", ok.affected_rows, ok.last_insert_id);
            }
        }
        return match result_of(&frames) {
            Ok(rows) => format!("{rows:?}"),
            Err((code, _)) => format!("error {code}"),
        };
    }
    let frames = c.query(sql.as_bytes()).expect("answered");
    let first = &frames[0].1;
    if let Some((code, _)) = err_of(first) {
        return format!("error {code}");
    }
    if let Some(ok) = obkv_proxy::protocol::packets::parse_ok(first) {
        if first.first() == Some(&0x00) {
            return format!("ok {} {}", ok.affected_rows, ok.last_insert_id);
        }
    }
    format!("{:?}", c.rows(sql))
}

#[test]
fn interleaved_clients_on_four_connections_each_answer_as_alone_directly() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let clients = 8;
        let temporary = kind == Kind::MariaDb;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ kind as u64);
        // three clients pin (each keeps one of the four connections); five share the last
        let scripts: Vec<Vec<String>> = (0..clients)
            .map(|i| script(i, i < 3, temporary, &mut rng))
            .collect();
        let fresh = |addr: &str| {
            let mut d = RawConn::connect(addr, "root", "", Some(DB)).expect("direct");
            for i in 0..clients {
                d.exec(&format!("DROP TABLE IF EXISTS mux_mix_{i}"))
                    .expect("drop");
                d.exec(&format!(
                    "CREATE TABLE mux_mix_{i} (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
                ))
                .expect("create");
            }
        };
        // each client alone, directly
        fresh(&backend.addr);
        let alone: Vec<Vec<String>> = scripts
            .iter()
            .map(|s| {
                let mut c = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
                let mut stmts = Default::default();
                s.iter()
                    .map(|sql| answer(&mut c, &mut stmts, sql))
                    .collect()
            })
            .collect();
        // all of them at once through a proxy with four backend connections
        fresh(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 4, 3_000));
        // (the clients stay connected until the connections are counted)
        let done = std::sync::Barrier::new(clients + 1);
        let counted = std::sync::Barrier::new(clients + 1);
        // (nothing asserted inside the scope: a panic there leaves the clients at a barrier)
        let (together, open, s) = std::thread::scope(|scope| {
            let handles: Vec<_> = scripts
                .iter()
                .map(|s| {
                    let addr = p.addr.clone();
                    let (done, counted) = (&done, &counted);
                    scope.spawn(move || {
                        // (a client that fails still meets the others at the barriers)
                        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            let mut c =
                                RawConn::connect(&addr, "root", "", Some(DB)).expect("proxy");
                            let mut stmts = Default::default();
                            let answers = s
                                .iter()
                                .map(|sql| {
                                    std::thread::yield_now();
                                    answer(&mut c, &mut stmts, sql)
                                })
                                .collect::<Vec<String>>();
                            (c, answers)
                        }));
                        done.wait();
                        counted.wait();
                        match run {
                            Ok((_c, answers)) => answers,
                            Err(e) => std::panic::resume_unwind(e),
                        }
                    })
                })
                .collect();
            done.wait();
            let mut c = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("status");
            let s = status(&mut c);
            let open = proxy_counter(&s, "multiplex_backend_connections_open");
            counted.wait();
            let answers: Vec<Vec<String>> = handles
                .into_iter()
                .map(|h| h.join().expect("client ran"))
                .collect();
            (answers, open, s)
        });
        assert!(
            proxy_counter(&s, "multiplex_state_restores") > 0,
            "{}",
            kind.name()
        );
        // prepared statements were carried, not pinned: the five clients that only ran what
        // can be carried (prepared statements among it) and the status session are still
        // multiplexed
        assert_eq!(
            proxy_counter(&s, "multiplex_sessions"),
            6,
            "{}",
            kind.name()
        );
        assert!(
            proxy_counter(&s, "multiplex_statements_prepared_again") > 0,
            "{}",
            kind.name()
        );
        // the three pinned clients' connections, one the other five shared, and the status
        // session's own login
        assert!(
            open <= 5,
            "{}: {open} backend connections open",
            kind.name()
        );
        for (i, (a, t)) in alone.iter().zip(&together).enumerate() {
            for (j, (x, y)) in a.iter().zip(t).enumerate() {
                assert_eq!(
                    x,
                    y,
                    "{}: client {i}, statement {j} `{}`",
                    kind.name(),
                    scripts[i][j]
                );
            }
        }
    }
}

#[test]
fn a_kill_reaches_the_session_it_names_and_never_another() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        let mut c = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("c");
        let a_id = a.greeting.connection_id;
        let c_id = c.greeting.connection_id;
        // every session gives back its login's connection: one connection serves them all
        for s in [&mut a, &mut b, &mut c] {
            assert_eq!(s.scalar("SELECT 1"), "1");
        }
        // a holds no connection: there is no statement of a's to end
        b.exec(&format!("KILL QUERY {a_id}")).expect("kill query");
        assert_eq!(a.scalar("SELECT 2"), "2", "{}: a lives on", kind.name());
        // so with noise before it that the backend skips (found by a review: these went to
        // the backend as they were, naming a backend thread)
        for noise in ["--\tx\n", "\x0b", "/*!99999 /* */ */ "] {
            b.exec(&format!("{noise}KILL QUERY {a_id}"))
                .unwrap_or_else(|e| panic!("{}: {noise:?}: {e:?}", kind.name()));
        }
        assert_eq!(a.scalar("SELECT 2"), "2", "{}: a lives on", kind.name());
        // a KILL of a ends a, and only a: b and c go on, on the connection a last used
        b.exec(&format!("KILL {a_id}")).expect("kill connection");
        let gone = a.query(b"SELECT 3");
        assert!(
            gone.is_err() || gone.is_ok_and(|f| crate::common::raw::err_of(&f[0].1).is_some()),
            "{}: a was not ended",
            kind.name()
        );
        assert_eq!(b.scalar("SELECT 4"), "4", "{}", kind.name());
        assert_eq!(c.scalar("SELECT 5"), "5", "{}", kind.name());
        // a session that kills itself ends, as directly
        let _ = c.query(format!("KILL {c_id}").as_bytes());
        let gone = c.query(b"SELECT 6");
        assert!(
            gone.is_err() || gone.is_ok_and(|f| crate::common::raw::err_of(&f[0].1).is_some()),
            "{}: c was not ended",
            kind.name()
        );
        assert_eq!(b.scalar("SELECT 7"), "7", "{}", kind.name());
    }
}

/// A KILL the proxy cannot map to the session it names never reaches the backend: its id is a
/// backend thread's, which may serve another session now (found by a review: `SELECT 1;
/// KILL n` ended the statement of a third session that had been lent the connection n was).
#[test]
fn a_kill_the_proxy_cannot_map_is_refused_and_ends_nothing() {
    use obkv_proxy::protocol::response::ResponseKind;
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        // three connections: one each for d and f below, pinned; a, b and c share the other
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 3, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        let mut c = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("c");
        let a_id = a.greeting.connection_id;
        for s in [&mut a, &mut b, &mut c] {
            assert_eq!(s.scalar("SELECT 1"), "1");
        }
        // every one of these would name a backend thread: the connection the three share
        for sql in [
            format!("SELECT 1; KILL {a_id}"),
            format!("KILL {a_id}; SELECT 1"),
            format!("DO 1; KILL QUERY {a_id}"),
            format!("/*!32312 SELECT 1; */ KILL {a_id}"),
            format!("KILL ({a_id})"),
            format!("KILL {a_id} + 0"),
            "KILL USER root".to_string(),
        ] {
            let got = b.exec(&sql);
            assert_eq!(
                got.map_err(|(code, _)| code),
                Err(1235),
                "{}: {sql}",
                kind.name()
            );
        }
        // dynamic SQL pins its session to the connection it holds (a session of its own)
        let mut d = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("d");
        let sql = format!("EXECUTE IMMEDIATE 'KILL {a_id}'");
        assert_eq!(
            d.exec(&sql).map_err(|(code, _)| code),
            Err(1235),
            "{}: {sql}",
            kind.name()
        );
        // preparing a KILL runs nothing: prepared, as directly (MariaDB's own ps_1general
        // prepares ' KILL 0 ')
        d.exec("PREPARE s FROM ' KILL 0 '").expect("prepare");
        let frames = b
            .command(b"\x16KILL ?", ResponseKind::Prepare)
            .expect("prepare");
        assert_eq!(
            crate::common::raw::err_of(&frames[0].1),
            None,
            "{}",
            kind.name()
        );
        // an id no session goes by: answered as the backend answers one it does not know
        assert_eq!(
            b.exec("KILL 4000000000").map_err(|(code, _)| code),
            Err(1094),
            "{}",
            kind.name()
        );
        // a query id means the same through the proxy: the backend's own answer
        assert_eq!(
            b.exec("KILL QUERY ID 4000000000").map_err(|(code, _)| code),
            Err(if kind == Kind::MariaDb { 1957 } else { 1064 }),
            "{}",
            kind.name()
        );
        // the id CONNECTION_ID() gives a session (its connection's, pinned) names it too, as
        // a pool's own test KILLs it (mysql's should_fix_connectivity_errors_on_start_transaction)
        let mut f = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("f");
        let f_id = f.scalar("SELECT CONNECTION_ID()");
        b.exec(&format!("KILL {f_id}"))
            .expect("kill by CONNECTION_ID()");
        let gone = f.query(b"SELECT 13");
        assert!(
            gone.is_err() || gone.is_ok_and(|r| crate::common::raw::err_of(&r[0].1).is_some()),
            "{}: f was not ended",
            kind.name()
        );
        // nothing else was ended: the three go on, on the one connection
        assert_eq!(a.scalar("SELECT 2"), "2", "{}", kind.name());
        assert_eq!(b.scalar("SELECT 3"), "3", "{}", kind.name());
        assert_eq!(c.scalar("SELECT 4"), "4", "{}", kind.name());
        // a text that only mentions the word runs as usual, also where another reading
        // would take its data for a statement (`\'` without backslash escapes)
        assert_eq!(
            b.scalar("SELECT 'KILL 1; KILL 2'"),
            "KILL 1; KILL 2",
            "{}",
            kind.name()
        );
        assert_eq!(
            b.scalar("SELECT 'reset: don\\'t kill it'"),
            "reset: don't kill it",
            "{}",
            kind.name()
        );
        // another backend user's session: not this user's to end through the proxy (found by
        // a review: the KILL ended it, where the backend answers 1095 to a user without the
        // privilege)
        b.exec("DROP USER IF EXISTS kill_other@'%'").ok();
        b.exec("CREATE USER kill_other@'%' IDENTIFIED BY 'pw'")
            .expect("user");
        let mut other = RawConn::connect(&p.addr, "kill_other", "pw", None).expect("other");
        let other_id = other.greeting.connection_id;
        assert_eq!(other.scalar("SELECT 8"), "8");
        assert_eq!(
            b.exec(&format!("KILL {other_id}"))
                .map_err(|(code, _)| code),
            Err(1095),
            "{}",
            kind.name()
        );
        assert_eq!(other.scalar("SELECT 9"), "9", "{}", kind.name());
        // a session that changed its user is that user's: the other user's KILL of it is
        // answered 1095, its own user's reaches it (found by a review: the login's user was
        // kept)
        if kind == Kind::MariaDb {
            let mut e = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("e");
            let e_id = e.greeting.connection_id;
            let changed = e.change_user("kill_other", "pw", "");
            assert_eq!(changed.first(), Some(&0), "{changed:?}");
            assert_eq!(e.scalar("SELECT 10"), "10");
            assert_eq!(
                b.exec(&format!("KILL {e_id}")).map_err(|(code, _)| code),
                Err(1095)
            );
            assert_eq!(e.scalar("SELECT 11"), "11");
            other
                .exec(&format!("KILL QUERY {e_id}"))
                .expect("its own user's KILL QUERY");
            assert_eq!(e.scalar("SELECT 12"), "12");
        }
        other.quit();
        b.exec("DROP USER kill_other@'%'").expect("drop user");
    }
}

#[test]
fn a_session_that_set_wait_timeout_is_closed_when_idle_that_long() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 2, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        a.exec("SET SESSION wait_timeout = 1")
            .expect("wait_timeout");
        assert_eq!(a.scalar("SELECT 1"), "1");
        assert_eq!(b.scalar("SELECT 1"), "1");
        let started = std::time::Instant::now();
        let (closed, _) = crate::common::raw::read_until_closed(
            &mut a.stream,
            std::time::Duration::from_secs(10),
        );
        assert!(
            closed,
            "{}: a idled past its wait_timeout and stayed",
            kind.name()
        );
        assert!(started.elapsed() >= std::time::Duration::from_millis(900));
        // b did not set one: it stays
        assert_eq!(b.scalar("SELECT 2"), "2", "{}", kind.name());
    }
}

#[test]
fn a_session_that_ends_after_a_warning_leaves_it_to_no_other() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        // proxy auth with one connection: the next session would be lent the same one
        let p = proxy::start(multiplexed(proxy_auth_config(&backend.addr), 1, 5_000));
        let mut b = RawConn::connect(&p.addr, "reporting", "rep-pass", Some(DB)).expect("b");
        assert_eq!(b.scalar("SELECT 1"), "1");
        let mut a = RawConn::connect(&p.addr, "app", "app-pass", Some(DB)).expect("a");
        // a gives back its login's connection (one too many: closed), then is lent b's
        assert_eq!(a.scalar("SELECT 1"), "1");
        // (a warning on MariaDB, an error on seekdb: each leaves a condition)
        let w = a.warnings_or_error("DO CAST('x1' AS SIGNED)").unwrap_or(1);
        assert!(w >= 1, "{}", kind.name());
        a.quit();
        let shown = b.rows("SHOW WARNINGS");
        assert!(
            shown.is_empty(),
            "{}: b reads a's conditions: {shown:?}",
            kind.name()
        );
    }
}

/// COM_RESET_CONNECTION (what connection pools send when a connection comes back to them)
/// does not pin: the session is back in its login's state — variables at their defaults, its
/// database kept — exactly as directly, and the other session on the same
/// backend connection keeps its own state.
#[test]
fn a_reset_connection_puts_the_session_in_its_login_state_without_pinning() {
    use obkv_proxy::protocol::response::ResponseKind;
    const Q: &str = "SELECT CONCAT_WS('|', DATABASE(), @@time_zone, @@sql_mode)";
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let script = |c: &mut RawConn| -> (String, String) {
            let before = c.scalar(Q);
            c.exec(&format!("USE {DB2}")).expect("use");
            c.exec("SET time_zone = '+03:00', sql_mode = 'ANSI_QUOTES'")
                .expect("set");
            let frames = c
                .command(&[0x1f], ResponseKind::Single)
                .expect("reset connection");
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].1.first(), Some(&0), "{:?}", frames[0].1);
            let after = c.scalar(Q);
            (before, after)
        };
        let mut d = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
        let direct = script(&mut d);
        assert!(direct.1.starts_with(DB2), "{}: {direct:?}", kind.name());
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut other = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("other");
        other
            .exec("SET time_zone = '-05:00'")
            .expect("other's state");
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let through = script(&mut a);
        assert_eq!(through, direct, "{}", kind.name());
        assert_eq!(
            other.scalar("SELECT @@time_zone"),
            "-05:00",
            "{}",
            kind.name()
        );
        assert_eq!(a.scalar(Q), direct.1, "{}: again", kind.name());
        // the reset keeps the database: the session gives the connection back without asking
        // the backend for it (MariaDB's reset zeroes the connection's statement counters, and
        // a SHOW is not a SELECT)
        if kind == Kind::MariaDb {
            a.command(&[0x1f], ResponseKind::Single)
                .expect("reset again");
            let counted = a.rows("SHOW SESSION STATUS LIKE 'Com_select'");
            let want = vec![vec![Some(b"Com_select".to_vec()), Some(b"0".to_vec())]];
            assert_eq!(
                counted, want,
                "a SELECT ran on the connection after the reset"
            );
        }
        let s = status(&mut a);
        assert_eq!(
            proxy_counter(&s, "multiplex_pins_session_command"),
            0,
            "{}",
            kind.name()
        );
        assert_eq!(
            proxy_counter(&s, "multiplex_sessions"),
            2,
            "{}",
            kind.name()
        );
        assert_eq!(
            proxy_counter(&s, "multiplex_backend_connections_open"),
            1,
            "{}",
            kind.name()
        );
    }
}

/// COM_SET_OPTION (multiple statements off and on; mysqlclient sends it at connect) does not
/// pin: it is carried, and set again on the connection when the session that holds it next has
/// it otherwise — a session with multiple statements off gets the backend's own refusal of a
/// multi-statement text, while another on the same connection runs one.
#[test]
fn multiple_statements_turned_off_are_the_sessions_own_without_pinning() {
    use obkv_proxy::protocol::response::ResponseKind;
    const MULTI: &str = "SELECT 1; SELECT 2";
    let set_option = |c: &mut RawConn, on: bool| {
        let frames = c
            .command(&[0x1b, u8::from(!on), 0], ResponseKind::Single)
            .expect("set option");
        assert!(
            matches!(frames.first().and_then(|f| f.1.first()), Some(0xfe | 0x00)),
            "{frames:?}"
        );
    };
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let mut d = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
        set_option(&mut d, false);
        let refused = d.exec(MULTI).expect_err("one statement a text");
        set_option(&mut d, true);
        d.exec(MULTI).expect("multiple statements again");

        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        // (a session keeps its login's connection until its first command ends)
        assert_eq!(b.scalar("SELECT 1"), "1");
        set_option(&mut a, false);
        for round in 0..2 {
            let what = format!("{} round {round}", kind.name());
            assert_eq!(a.exec(MULTI).expect_err(&what).0, refused.0, "{what}");
            // (the error ties a's connection until its next statement, which may read it)
            assert_eq!(a.scalar("SELECT 1"), "1", "{what}");
            b.exec(MULTI).expect(&what);
        }
        set_option(&mut a, true);
        a.exec(MULTI).expect("multiple statements again");
        b.exec(MULTI).expect("b");
        let s = status(&mut a);
        assert_eq!(
            proxy_counter(&s, "multiplex_pins_session_command"),
            0,
            "{}",
            kind.name()
        );
        assert_eq!(
            proxy_counter(&s, "multiplex_backend_connections_open"),
            1,
            "{}",
            kind.name()
        );
    }
}

/// The test command runs the HBase rule tests a second time with OBKV_TEST_MULTIPLEX=1: every
/// proxy they start then multiplexes (this is what makes that run mean something).
#[test]
fn the_test_switch_multiplexes_every_proxy_a_test_starts() {
    let backend = shared(Kind::MariaDb);
    databases(&backend.addr);
    let p = proxy::start(proxy::config_for(&backend.addr));
    let mut c = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("client");
    let mode = status(&mut c)
        .into_iter()
        .find(|(k, _)| k == "multiplex_mode")
        .map(|(_, v)| v);
    let switched = std::env::var("OBKV_TEST_MULTIPLEX").is_ok_and(|v| v == "1");
    assert_eq!(
        mode.as_deref(),
        Some(if switched { "transaction" } else { "off" })
    );
}

/// One execution of statement `id` with one integer (or no) parameter: its columns and rows,
/// or the error.
fn run_stmt(
    c: &mut RawConn,
    id: u32,
    value: Option<i64>,
    types: bool,
) -> Result<Vec<Vec<u8>>, (u16, String)> {
    use crate::prefix::{execute_packet, result_of, P};
    let params: Vec<P> = value.map(P::Int).into_iter().collect();
    let packet = execute_packet(id, false, &params, types, &[]);
    let frames = c
        .command(
            &packet,
            obkv_proxy::protocol::response::ResponseKind::Execute,
        )
        .expect("execute answered");
    result_of(&frames)
}

#[test]
fn prepared_statements_follow_their_session_to_another_connection_without_pinning() {
    use crate::prefix::prepare;
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let mut d = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
        for (db, rows) in [(DB, 3), (DB2, 5)] {
            d.exec(&format!("DROP TABLE IF EXISTS {db}.mux_ps"))
                .expect("drop");
            d.exec(&format!("CREATE TABLE {db}.mux_ps (v INT)"))
                .expect("create");
            for v in 0..rows {
                d.exec(&format!("INSERT INTO {db}.mux_ps VALUES ({v})"))
                    .expect("insert");
            }
        }
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 2, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        let (add, _) = prepare(&mut a, b"SELECT ? + 1").expect("prepare add");
        let (count, _) = prepare(&mut a, b"SELECT COUNT(*) FROM mux_ps").expect("prepare count");
        let added = run_stmt(&mut a, add, Some(41), true).expect("add");
        // what the count reads after a USE of the other database, directly: MariaDB's
        // statement keeps the table it was prepared with, seekdb's reads the current database's
        let counted = {
            let mut c = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
            let (id, _) = prepare(&mut c, b"SELECT COUNT(*) FROM mux_ps").expect("prepare");
            run_stmt(&mut c, id, None, false).expect("count");
            c.exec(&format!("USE {DB2}")).expect("use");
            run_stmt(&mut c, id, None, false).expect("count after")
        };
        run_stmt(&mut a, count, None, false).expect("count");
        assert_eq!(b.scalar("SELECT 1"), "1");
        // a moves to the other database, and its connection goes: the other one serves it, its
        // statements prepared there, each in the database it was prepared in, and the
        // parameter types bound before sent with an execution that sends none
        a.exec(&format!("USE {DB2}")).expect("use");
        // (lost inside a transaction, the one command told of it is known: 2013)
        a.exec("BEGIN").expect("begin");
        let id = a.greeting.connection_id;
        d.exec(&format!("KILL {id}")).expect("kill a's connection");
        let list = format!("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = {id}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !d.rows(&list).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{id} stayed");
        }
        let lost = a
            .rows_or_error("SELECT 1")
            .expect_err("its connection went");
        assert_eq!(lost.0, 2013, "{}: {lost:?}", kind.name());
        assert_eq!(
            run_stmt(&mut a, add, Some(41), false),
            Ok(added),
            "{}",
            kind.name()
        );
        assert_eq!(
            run_stmt(&mut a, count, None, false),
            Ok(counted),
            "{}: the count after the USE",
            kind.name()
        );
        assert_eq!(a.scalar("SELECT COUNT(*) FROM mux_ps"), "5");
        let s = status(&mut b);
        assert!(
            proxy_counter(&s, "multiplex_statements_prepared_again") >= 2,
            "{}",
            kind.name()
        );
        assert_eq!(
            proxy_counter(&s, "multiplex_sessions"),
            2,
            "{}",
            kind.name()
        );
        // an execution that opens a cursor pins (its rows stay on the connection)
        let packet =
            crate::prefix::execute_packet(add, true, &[crate::prefix::P::Int(1)], true, &[]);
        a.command(
            &packet,
            obkv_proxy::protocol::response::ResponseKind::Execute,
        )
        .expect("cursor");
        // (a keeps the one connection left: a new login brings its own)
        let mut c = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("c");
        let s = status(&mut c);
        assert_eq!(
            proxy_counter(&s, "multiplex_pins_cursor"),
            1,
            "{}",
            kind.name()
        );
    }
}

#[test]
fn sessions_on_one_connection_keep_their_own_statements_through_a_reset_and_close_them() {
    use crate::prefix::prepare;
    use obkv_proxy::protocol::response::ResponseKind;
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        // what a statement the session does not have gets, directly, on a connection with
        // statements (seekdb answers 4201 on one without any, 1243 else)
        let mut d = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
        prepare(&mut d, b"SELECT 1").expect("direct prepare");
        let unknown = run_stmt(&mut d, 999_999, None, false)
            .expect_err("unknown")
            .0;
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        let (double, _) = prepare(&mut a, b"SELECT ? * 2").expect("a's");
        let (triple, _) = prepare(&mut b, b"SELECT ? * 3").expect("b's");
        let ten = run_stmt(&mut a, double, Some(5), true).expect("a's ran");
        let fifteen = run_stmt(&mut b, triple, Some(5), true).expect("b's ran");
        assert_ne!(ten, fifteen);
        assert_eq!(run_stmt(&mut a, double, Some(5), false), Ok(ten.clone()));
        assert_eq!(run_stmt(&mut b, triple, Some(5), false), Ok(fifteen));
        // pieces of a long value stay with the connection until their statement runs, even
        // when another statement runs between
        {
            use crate::prefix::{execute_packet, send_long_data, P};
            let (echo, _) = prepare(&mut a, b"SELECT ?").expect("echo");
            let (one, _) = prepare(&mut a, b"SELECT 1").expect("one");
            send_long_data(&mut a, echo, 0, b"long ");
            send_long_data(&mut a, echo, 0, b"value");
            assert!(run_stmt(&mut a, one, None, false).is_ok());
            let packet =
                execute_packet(echo, false, &[P::Blob(b"long value".to_vec())], true, &[0]);
            let frames = a
                .command(&packet, ResponseKind::Execute)
                .expect("execute answered");
            let rows = crate::prefix::result_of(&frames).expect("echoed");
            assert!(
                rows.last().is_some_and(|r| r.ends_with(b"long value")),
                "{}: {rows:?}",
                kind.name()
            );
        }
        // b's reset closes b's statements, as directly, and the connection's others too,
        // which a's session prepares again
        let ok = b
            .command(&[0x1f], ResponseKind::Single)
            .expect("reset answered");
        assert_eq!(ok[0].1.first(), Some(&0x00), "{}", kind.name());
        assert_eq!(
            run_stmt(&mut b, triple, Some(5), true).map_err(|e| e.0),
            Err(unknown),
            "{}",
            kind.name()
        );
        // (a session whose last statement failed keeps the connection until its next one)
        assert_eq!(b.scalar("SELECT 1"), "1");
        assert_eq!(
            run_stmt(&mut a, double, Some(5), false),
            Ok(ten),
            "{}",
            kind.name()
        );
        if kind == Kind::MariaDb {
            // a's statements are closed on the connection (the one b uses too): one a closes
            // while it holds no connection, and the rest when a ends
            let closes = |b: &mut RawConn| -> u64 {
                let r = b.rows("SHOW SESSION STATUS LIKE 'Com_stmt_close'");
                String::from_utf8_lossy(r[0][1].as_deref().expect("value"))
                    .parse()
                    .expect("count")
            };
            let (other, _) = prepare(&mut a, b"SELECT ? - 1").expect("a's third");
            assert!(run_stmt(&mut a, other, Some(1), true).is_ok());
            let before = closes(&mut b);
            crate::prefix::stmt_close(&mut a, other);
            a.quit();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut now = closes(&mut b);
            while now < before + 2 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{now} statement closes, {before} before"
                );
                now = closes(&mut b);
            }
            assert_eq!(now, before + 2);
        }
    }
}

/// A session that keeps its connection only for what its last statement left (rows it
/// changed, a warning or an error) and then idles gives it up to a session that waits for one,
/// instead of leaving that one to time out with 1040; what it left stays its own: ROW_COUNT()
/// read next has the count and the column a direct connection gives (byte for byte), SHOW
/// WARNINGS lists its conditions, and the session served next reads none of them.
#[test]
fn an_idle_session_gives_its_connection_to_a_waiting_one_and_keeps_what_it_left() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let mut d = fresh_table(&backend.addr, "mux_give", "id INT PRIMARY KEY, v INT");
        d.exec("INSERT INTO mux_give VALUES (1, 1), (2, 2), (3, 3)")
            .expect("rows");
        // what a direct connection answers
        d.exec("UPDATE mux_give SET v = v + 1 WHERE id < 3")
            .expect("update");
        let direct_count = d.query(b"SELECT ROW_COUNT()").expect("count");
        let direct_w = d.warnings_or_error("DO CAST('x1' AS SIGNED)").unwrap_or(1);
        let direct_shown = d.rows("SHOW WARNINGS");
        assert!(!direct_shown.is_empty(), "{}", kind.name());

        // one connection, opened by the proxy (proxy authentication: a session that pins
        // later has it made again)
        let p = proxy::start(multiplexed(proxy_auth_config(&backend.addr), 1, 10_000));
        let mut a = RawConn::connect(&p.addr, "app", "app-pass", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "app", "app-pass", Some(DB)).expect("b");
        assert_eq!(b.scalar("SELECT 1"), "1");
        // a changed rows: it keeps the connection for a ROW_COUNT() … until b waits
        a.exec("UPDATE mux_give SET v = v + 1 WHERE id < 3")
            .expect("a's update");
        assert_eq!(b.scalar("SELECT 2"), "2", "{}: b is served", kind.name());
        let count = a.query(b"SELECT ROW_COUNT()").expect("a's count");
        assert_eq!(count.len(), direct_count.len(), "{}", kind.name());
        for (got, want) in count.iter().zip(&direct_count) {
            assert_eq!(got.1, want.1, "{}: ROW_COUNT() as directly", kind.name());
        }
        // a's condition: kept by the proxy when a gives the connection up to b
        let w = a.warnings_or_error("DO CAST('x1' AS SIGNED)").unwrap_or(1);
        assert_eq!(w, direct_w, "{}", kind.name());
        assert_eq!(b.scalar("SELECT 3"), "3", "{}: b is served", kind.name());
        let s = status(&mut b);
        // (a, idle, gave its connection up twice; b, which then kept it though nothing tied
        // it, gave it up once more for a's ROW_COUNT() — or gave it back as its command ended,
        // when a's command came first: a race of the two clients, not counted as a hand-over)
        let given_up = proxy_counter(&s, "multiplex_given_up");
        assert!((2..=3).contains(&given_up), "{}: {given_up}", kind.name());
        assert_eq!(proxy_counter(&s, "multiplex_wait_timeouts"), 0);
        // (b reads the area of the connection a gave up: nothing of a's)
        assert_eq!(
            b.rows("SHOW WARNINGS"),
            Vec::<Vec<Option<Vec<u8>>>>::new(),
            "{}",
            kind.name()
        );
        b.quit();
        assert_eq!(a.rows("SHOW WARNINGS"), direct_shown, "{}", kind.name());
    }
}

/// A session that runs alone keeps its connection from command to command: no borrow, no
/// restore, no hand-over for each (what a multiplexed statement costs then is what it costs
/// unmultiplexed, nearly: docs/PERFORMANCE.md); it still changes nothing another sees.
#[test]
fn a_session_alone_keeps_its_connection_from_command_to_command() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 2, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        assert_eq!(a.scalar("SELECT 1"), "1");
        let before = status(&mut a);
        for i in 0..20 {
            assert_eq!(a.scalar(&format!("SELECT {i}")), i.to_string());
        }
        a.exec("SET time_zone = '+02:00'").expect("set");
        let after = status(&mut a);
        for counter in [
            "multiplex_borrows",
            "multiplex_state_restores",
            "multiplex_given_up",
        ] {
            assert_eq!(
                proxy_counter(&after, counter),
                proxy_counter(&before, counter),
                "{}: {counter}",
                kind.name()
            );
        }
        // another session has its own state on its own connection
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        assert_ne!(b.scalar("SELECT @@time_zone"), "+02:00", "{}", kind.name());
        assert_eq!(a.scalar("SELECT @@time_zone"), "+02:00", "{}", kind.name());
    }
}

/// What the backend reports a statement changed (CLIENT_SESSION_TRACK), though its text set
/// nothing the proxy reads — here a stored function's SET — is the session's and carried:
/// another session on the connection does not see it, and the session finds it on the next
/// connection. A change that cannot be made again on another connection pins (counted).
#[test]
fn a_variable_the_backend_reports_changed_is_carried_though_the_text_set_nothing() {
    use crate::common::raw::DEFAULT_CAPS;
    use obkv_proxy::protocol::constants::cap;
    let caps = DEFAULT_CAPS | cap::SESSION_TRACK;
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let mut d = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("direct");
        let direct_tz = d.scalar("SELECT @@time_zone");
        for (name, body) in [
            ("mux_tz", "SET SESSION time_zone = '+04:00'"),
            ("mux_cs", "SET SESSION character_set_results = 'binary'"),
        ] {
            d.exec(&format!("DROP FUNCTION IF EXISTS {name}"))
                .expect("drop");
            d.exec(&format!(
                "CREATE FUNCTION {name}() RETURNS INT BEGIN {body}; RETURN 1; END"
            ))
            .expect("function");
        }
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect_with(&p.addr, "root", "", Some(DB), caps).expect("a");
        let mut b = RawConn::connect_with(&p.addr, "root", "", Some(DB), caps).expect("b");
        a.exec("DO mux_tz()").expect("a's function");
        for round in 0..2 {
            let what = format!("{} round {round}", kind.name());
            assert_eq!(
                b.scalar("SELECT @@time_zone"),
                direct_tz,
                "{what}: b sees a's"
            );
            assert_eq!(a.scalar("SELECT @@time_zone"), "+04:00", "{what}: a's own");
        }
        if kind == Kind::MariaDb {
            // (MariaDB reports it in the OK that ends the rows; seekdb only in a later OK)
            a.exec("SET time_zone = DEFAULT").expect("default");
            assert_eq!(a.scalar("SELECT mux_tz()"), "1");
            assert_eq!(b.scalar("SELECT @@time_zone"), direct_tz, "b sees a's");
            assert_eq!(a.scalar("SELECT @@time_zone"), "+04:00", "a's own");
        }
        let s = status(&mut b);
        assert_eq!(proxy_counter(&s, "multiplex_pins_set_not_carried"), 0);
        assert_eq!(proxy_counter(&s, "multiplex_sessions"), 2);
        // the character set, changed so, is not made again elsewhere: a keeps its connection
        b.quit();
        a.exec("DO mux_cs()").expect("a's function");
        assert_eq!(a.scalar("SELECT @@character_set_results"), "binary");
        let s = status(&mut a);
        assert_eq!(
            proxy_counter(&s, "multiplex_pins_set_not_carried"),
            1,
            "{}",
            kind.name()
        );
        assert_eq!(a.scalar("SELECT @@time_zone"), "+04:00");
    }
}

/// A client that has its login's OK is a session of its set already: its connection is
/// counted (and can be asked for) before the client can send anything. (The OK went before
/// the session joined its set once; a statement another session sent right after that login
/// could then find the set under its limit and keep a connection that the new login's made
/// one too many, so that nobody ever waited.)
#[test]
fn a_login_is_counted_in_its_set_before_its_client_has_the_ok() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut others = Vec::new();
        for n in 1..=20u64 {
            others.push(RawConn::connect(&p.addr, "root", "", Some(DB)).expect("other"));
            let s = status(&mut a);
            assert_eq!(
                proxy_counter(&s, "multiplex_sessions"),
                n + 1,
                "{}: login {n}",
                kind.name()
            );
        }
        // and each of them is served, one after the other, on the set's connections
        for (i, o) in others.iter_mut().enumerate() {
            assert_eq!(o.scalar(&format!("SELECT {i}")), i.to_string());
        }
    }
}

/// A session that has sent nothing since its login keeps its login's connection only until
/// another session waits (relayed authentication: the set holds the connections its logins
/// made; over the limit, the busy session's is closed when it comes back, and the idle one's
/// is the only one left).
#[test]
fn a_session_idle_since_its_login_gives_its_connection_to_one_that_waits() {
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let p = proxy::start(multiplexed(proxy::config_for(&backend.addr), 1, 5_000));
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut idle = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("idle");
        for i in 0..5 {
            assert_eq!(
                a.scalar(&format!("SELECT {i}")),
                i.to_string(),
                "{}",
                kind.name()
            );
        }
        let s = status(&mut a);
        assert_eq!(
            proxy_counter(&s, "multiplex_wait_timeouts"),
            0,
            "{}",
            kind.name()
        );
        assert_eq!(
            proxy_counter(&s, "multiplex_given_up"),
            1,
            "{}: the idle session's connection, once",
            kind.name()
        );
        assert_eq!(proxy_counter(&s, "multiplex_backend_connections_open"), 1);
        // what the idle session reads of its login's statement count is what a login leaves
        // (0 on both backends, measured), though its connection went to another session
        assert_eq!(idle.scalar("SELECT ROW_COUNT()"), "0", "{}", kind.name());
    }
}

/// A session whose statement left nothing to hold gives its connection back as the statement
/// ends when another session waits for one; its next text that reads ROW_COUNT() is given the
/// count its own statement left, not the count of what the connection ran since for another.
#[test]
fn a_session_whose_connection_went_to_a_waiter_reads_its_own_row_count() {
    use crate::common::backends::free_port;
    use crate::operations::{http_get, samples};
    for kind in BOTH {
        let backend = shared(kind);
        databases(&backend.addr);
        let mut d = fresh_table(&backend.addr, "mux_rc", "id INT PRIMARY KEY, v INT");
        d.exec("INSERT INTO mux_rc VALUES (1, 1), (2, 2), (3, 3)")
            .expect("rows");
        // what a direct connection reads after the locking read
        d.rows("SELECT v AS a_waits FROM mux_rc WHERE id = 1 FOR UPDATE");
        let direct = d.scalar("SELECT ROW_COUNT()");

        let mut cfg = multiplexed(proxy::config_for(&backend.addr), 1, 10_000);
        let admin = format!("127.0.0.1:{}", free_port());
        cfg.admin.listen = admin.clone();
        let p = proxy::start(cfg);
        let mut a = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("a");
        let mut b = RawConn::connect(&p.addr, "root", "", Some(DB)).expect("b");
        // a has the one connection (b, idle since its login, gave it up)
        assert_eq!(a.scalar("SELECT 1"), "1");
        // a's locking read waits for a lock held directly
        let mut l = RawConn::connect(&backend.addr, "root", "", Some(DB)).expect("locker");
        l.exec("BEGIN").expect("begin");
        l.rows("SELECT v FROM mux_rc WHERE id = 1 FOR UPDATE");
        let a_reads = std::thread::spawn(move || {
            let rows = a.rows("SELECT v AS a_waits FROM mux_rc WHERE id = 1 FOR UPDATE");
            (a, rows)
        });
        // (the poll's own text holds the marker only split in two)
        let running = "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                       WHERE INFO LIKE CONCAT('%a_', 'waits FROM%')";
        // (each wait bounded: a run that never gets there fails saying what it saw)
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
        while d.scalar(running) == "0" {
            assert!(
                std::time::Instant::now() < deadline,
                "{}: a's locking read never reached the backend",
                kind.name()
            );
            std::thread::yield_now();
        }
        // b waits for the connection a's read holds
        let b_writes = std::thread::spawn(move || {
            let r = b.exec("UPDATE mux_rc SET v = v + 1 WHERE id > 1");
            (b, r)
        });
        let waiting = |admin: &str| {
            let (_, body) = http_get(admin, "/metrics");
            samples(&body)
                .get("obkv_proxy_multiplex_waiting_sessions{user=\"root\"}")
                .copied()
                .unwrap_or(0.0)
        };
        // (b's wait is at most 10 s, a's read's lock wait 50: a run past both is reported)
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
        while waiting(&admin) < 1.0 {
            if std::time::Instant::now() >= deadline {
                let (_, body) = http_get(&admin, "/metrics");
                let lines: Vec<&str> = body
                    .lines()
                    .filter(|l| l.starts_with("obkv_proxy_multiplex_"))
                    .collect();
                panic!(
                    "{}: b was never seen waiting for the connection a's read holds \
                     (a's read finished: {}, b's update finished: {}); {lines:#?}",
                    kind.name(),
                    a_reads.is_finished(),
                    b_writes.is_finished()
                );
            }
            std::thread::yield_now();
        }
        l.exec("COMMIT").expect("commit");
        let (mut a, rows) = a_reads.join().expect("a");
        assert_eq!(rows.len(), 1, "{}", kind.name());
        let (mut b, r) = b_writes.join().expect("b");
        r.expect("b's update");
        // the connection last ran b's UPDATE (2 rows); a reads what its read left
        assert_eq!(
            a.scalar("SELECT ROW_COUNT()"),
            direct,
            "{}: a's own ROW_COUNT()",
            kind.name()
        );
        assert_eq!(b.scalar("SELECT 2"), "2");
        let s = status(&mut b);
        assert_eq!(proxy_counter(&s, "multiplex_wait_timeouts"), 0);
        assert_eq!(proxy_counter(&s, "multiplex_backend_connections_open"), 1);
    }
}
