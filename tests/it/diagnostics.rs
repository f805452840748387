//! The diagnostics area after the proxy's own answers (issue 39): for each kind of answer the
//! proxy makes itself — a rule's refusal, HBase DDL not alone, an unreadable text, a note on a
//! forwarded write, a warning on a forwarded DDL — `SHOW WARNINGS`, `SHOW ERRORS`, `SHOW
//! COUNT(*) …`, `@@warning_count`, `@@error_count` and `GET DIAGNOSTICS` give through the proxy
//! what the backend gives after a reference statement that raises the same condition itself
//! (`SIGNAL` with the same code, state and text; for the proxy's notes, the backend's own
//! conditions of the same statement run directly, the proxy's listed before them), and one
//! plain statement after it keeps or clears them exactly as the backend does. Both backends.

use crate::common::proxy::{self, InProcessProxy};
use crate::common::raw::{err_of, RawConn, Rows};
use crate::common::{mariadb_cli, shared, Kind, BOTH};

/// What each probe reads, after the condition was raised again (`trigger`): the last
/// statement's rows, or its error.
const PROBES: &[&[&str]] = &[
    &["SHOW WARNINGS"],
    &["SHOW ERRORS"],
    &["SHOW WARNINGS LIMIT 1"],
    &["SHOW COUNT(*) WARNINGS"],
    &["SHOW COUNT(*) ERRORS"],
    &["SELECT @@warning_count, @@error_count"],
    &["GET DIAGNOSTICS @n = NUMBER", "SELECT @n"],
    &[
        "GET DIAGNOSTICS CONDITION 1 @e = MYSQL_ERRNO, @m = MESSAGE_TEXT, @s = RETURNED_SQLSTATE, @o = CLASS_ORIGIN, @t = TABLE_NAME",
        "SELECT @e, @m, @s, @o, @t",
    ],
    // then one plain statement: without tables (MariaDB keeps its area), with tables (clears)
    &["SELECT 1", "SHOW WARNINGS"],
    &[
        "SELECT COUNT(*) FROM information_schema.COLLATIONS WHERE 1 = 0",
        "SHOW WARNINGS",
    ],
];

const SHOW: usize = 0;
const ERRORS: usize = 1;
const LIMIT: usize = 2;
const COUNT_W: usize = 3;
const COUNT_E: usize = 4;
const COUNTERS: usize = 5;
const NUMBER: usize = 6;
const CONDITION: usize = 7;
const KEPT: usize = 8;
const CLEARED: usize = 9;

type Seen = Vec<Result<Rows, (u16, String)>>;

/// Every probe, each after `trigger` raised the condition again on `c`.
fn observe(c: &mut RawConn, trigger: &mut dyn FnMut(&mut RawConn)) -> Seen {
    PROBES
        .iter()
        .map(|probe| {
            assert!(
                c.query_ok("SET @n = NULL, @e = NULL, @m = NULL, @s = NULL, @o = NULL, @t = NULL")
            );
            trigger(c);
            let mut last = Ok(Vec::new());
            for sql in *probe {
                last = c.rows_or_error(sql);
            }
            last
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// A refusal: (code, SQLSTATE, message) of the ERR the statement got.
fn refusal(c: &mut RawConn, sql: &str) -> (u16, String, String) {
    let frames = c.query(sql.as_bytes()).expect("answered");
    let p = &frames.last().expect("a packet").1;
    let (code, message) = err_of(p).unwrap_or_else(|| panic!("{sql}: not refused"));
    let state = String::from_utf8_lossy(&p[4..9]).into_owned();
    (code, state, message)
}

fn signal(code: u16, state: &str, message: &str) -> String {
    format!(
        "SIGNAL SQLSTATE '{state}' SET MYSQL_ERRNO = {code}, MESSAGE_TEXT = X'{}'",
        hex(message.as_bytes())
    )
}

/// `message` as the backend's SIGNAL keeps it, read back from the backend (seekdb cuts at 128
/// bytes; the proxy keeps the whole message where the backend cannot).
fn as_signal_keeps(direct: &mut RawConn, code: u16, state: &str, message: &str) -> String {
    assert_eq!(refusal(direct, &signal(code, state, message)).0, code);
    let rows = direct.rows("SHOW WARNINGS");
    String::from_utf8_lossy(rows[0][2].as_deref().unwrap_or_default()).into_owned()
}

/// The mariadb CLI's output without the statements it echoes before an error (`-----`
/// blocks), which differ between a statement and the SIGNAL that stands for it.
fn without_echo(out: &str) -> String {
    let mut kept = Vec::new();
    let mut inside = false;
    for line in out.lines() {
        if line == "--------------" {
            inside = !inside;
            continue;
        }
        if !inside {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// The proxy's answers with `full` replaced by what the backend's SIGNAL keeps of it.
fn cut_messages(seen: &Seen, full: &str, kept: &str) -> Seen {
    seen.iter()
        .map(|r| match r {
            Ok(rows) => Ok(rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|v| match v {
                            Some(b) if b == full.as_bytes() => Some(kept.as_bytes().to_vec()),
                            v => v.clone(),
                        })
                        .collect()
                })
                .collect()),
            Err(e) => Err(e.clone()),
        })
        .collect()
}

struct Fixture {
    proxy: InProcessProxy,
    backend: String,
    db: String,
}

/// `tag` names the test's own database (tests run side by side).
fn fixture(kind: Kind, warn: bool, tag: &str) -> Fixture {
    let backend = shared(kind).addr.clone();
    let mut cfg = proxy::config_for(&backend);
    if warn {
        cfg.hbase.enforcement = obkv_proxy::config::Enforcement::Warn;
    }
    let proxy = proxy::start(cfg);
    let db = format!("diag_{}_{tag}", kind.name());
    let mut c = RawConn::connect(&proxy.addr, "root", "", None).expect("proxy");
    for sql in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
        format!("USE {db}"),
        format!("DROP TABLEGROUP IF EXISTS {db}g"),
        format!("CREATE TABLEGROUP {db}g"),
        format!("CREATE TABLE {db}g$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = {db}g PARTITION BY KEY(K) PARTITIONS 97"),
        "CREATE TABLE plain (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(64) NOT NULL, PRIMARY KEY (K, Q, T))".to_string(),
    ] {
        assert!(c.query_ok(&sql), "{sql}");
    }
    Fixture { proxy, backend, db }
}

impl Fixture {
    fn via(&self) -> RawConn {
        RawConn::connect(&self.proxy.addr, "root", "", Some(&self.db)).expect("proxy")
    }
    fn direct(&self) -> RawConn {
        RawConn::connect(&self.backend, "root", "", Some(&self.db)).expect("direct")
    }
}

/// A refusal's diagnostics through the proxy equal a SIGNAL of the same condition directly.
fn check_refusal(kind: Kind, f: &Fixture, what: &str, sql: &str) {
    let mut via = f.via();
    let (code, state, message) = refusal(&mut via, sql);
    let seen = observe(&mut via, &mut |c| {
        assert_eq!(refusal(c, sql).0, code, "{what}");
    });
    let mut direct = f.direct();
    let reference = signal(code, &state, &message);
    let expected = observe(&mut direct, &mut |c| {
        assert_eq!(refusal(c, &reference).0, code, "{what}: reference");
    });
    let kept = as_signal_keeps(&mut f.direct(), code, &state, &message);
    assert_eq!(
        cut_messages(&seen, &message, &kept),
        expected,
        "{}: {what}: through the proxy vs a SIGNAL directly",
        kind.name()
    );
    // the error is the statement's own (not the previous statement's)
    let shown = seen[SHOW].as_ref().expect("SHOW WARNINGS");
    assert_eq!(shown.len(), 1, "{what}: {shown:?}");
    assert_eq!(shown[0][0].as_deref(), Some(&b"Error"[..]), "{what}");
    assert_eq!(
        shown[0][1].as_deref(),
        Some(code.to_string().as_bytes()),
        "{what}"
    );
    assert_eq!(
        shown[0][2].as_deref(),
        Some(message.as_bytes()),
        "{what}: the whole message"
    );
}

fn rows_of(s: &Result<Rows, (u16, String)>) -> Rows {
    s.clone().unwrap_or_else(|e| panic!("{e:?}"))
}

fn number(s: &Result<Rows, (u16, String)>, col: usize) -> i64 {
    let rows = rows_of(s);
    String::from_utf8_lossy(rows[0][col].as_deref().unwrap_or(b"NULL"))
        .parse()
        .unwrap_or(-99)
}

/// A statement the proxy forwards with its own note or warning (`level`, `code`, message
/// starting `prefix`): its diagnostics are the proxy's condition, then what the backend gives
/// for the same statement run directly (`direct_sql`, after `reset` each time).
fn check_annotated(
    kind: Kind,
    f: &Fixture,
    what: &str,
    (reset, via_sql): (&str, &str),
    (direct_reset, direct_sql): (&str, &str),
    (level, code, prefix): (&str, u16, &str),
) {
    let mut via = f.via();
    // set-up statements run directly (the proxy may refuse them on an HBase table)
    let mut setup = f.direct();
    let seen = observe(&mut via, &mut |c| {
        let _ = setup.warnings_or_error(reset);
        let w = c
            .warnings_or_error(via_sql)
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert!(w >= 1, "{what}: the proxy's condition counted");
    });
    let mut direct = f.direct();
    let reference = observe(&mut direct, &mut |c| {
        let _ = c.warnings_or_error(direct_reset);
        c.warnings_or_error(direct_sql)
            .unwrap_or_else(|e| panic!("{what}: direct: {e:?}"));
    });
    let ctx = format!("{}: {what}", kind.name());
    // the proxy's row: its level, code and message, listed first
    let shown = rows_of(&seen[SHOW]);
    let own = shown.first().cloned().unwrap_or_default();
    assert_eq!(
        own.first().cloned().flatten().as_deref(),
        Some(level.as_bytes()),
        "{ctx}: {shown:?}"
    );
    assert_eq!(
        own.get(1).cloned().flatten(),
        Some(code.to_string().into_bytes()),
        "{ctx}"
    );
    let message = own.get(2).cloned().flatten().unwrap_or_default();
    assert!(
        message.starts_with(prefix.as_bytes()),
        "{ctx}: {}",
        String::from_utf8_lossy(&message)
    );
    let mut with_own = vec![own.clone()];
    with_own.extend(rows_of(&reference[SHOW]));
    assert_eq!(shown, with_own, "{ctx}: SHOW WARNINGS");
    assert_eq!(
        rows_of(&seen[ERRORS]),
        rows_of(&reference[ERRORS]),
        "{ctx}: SHOW ERRORS"
    );
    assert_eq!(rows_of(&seen[LIMIT]), vec![own.clone()], "{ctx}: LIMIT 1");
    assert_eq!(
        number(&seen[COUNT_W], 0),
        number(&reference[COUNT_W], 0) + 1,
        "{ctx}: COUNT WARNINGS"
    );
    assert_eq!(
        rows_of(&seen[COUNT_E]),
        rows_of(&reference[COUNT_E]),
        "{ctx}: COUNT ERRORS"
    );
    let counted = match kind {
        // MariaDB counts every condition
        Kind::MariaDb => 1,
        // seekdb's @@warning_count reads 0 after any statement (its SELECT clears the area)
        Kind::SeekDb => 0,
    };
    assert_eq!(
        number(&seen[COUNTERS], 0),
        number(&reference[COUNTERS], 0) + counted,
        "{ctx}: @@warning_count"
    );
    assert_eq!(
        number(&seen[COUNTERS], 1),
        number(&reference[COUNTERS], 1),
        "{ctx}: @@error_count"
    );
    assert_eq!(
        number(&seen[NUMBER], 0),
        number(&reference[NUMBER], 0) + 1,
        "{ctx}: NUMBER"
    );
    // CONDITION 1 is the proxy's: its code, text and SQLSTATE, and the other items as a
    // SIGNAL of it gives them on this backend
    let mut d = f.direct();
    let sig = format!(
        "SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = {code}, MESSAGE_TEXT = X'{}'",
        hex(&message)
    );
    let signalled = observe(&mut d, &mut |c| {
        c.warnings_or_error(&sig).expect("a warning SIGNAL");
    });
    let cond = rows_of(&seen[CONDITION]);
    let sig_cond = rows_of(&signalled[CONDITION]);
    assert_eq!(
        cond[0][0],
        Some(code.to_string().into_bytes()),
        "{ctx}: MYSQL_ERRNO"
    );
    assert_eq!(cond[0][1], Some(message.clone()), "{ctx}: MESSAGE_TEXT");
    assert_eq!(
        cond[0][2].as_ref().map(Vec::len),
        Some(5),
        "{ctx}: RETURNED_SQLSTATE"
    );
    assert_eq!(
        cond[0][3..],
        sig_cond[0][3..],
        "{ctx}: CLASS_ORIGIN, TABLE_NAME as a SIGNAL's"
    );
    // a statement without tables: MariaDB keeps its area (and the proxy its note), seekdb not
    let kept = match kind {
        Kind::MariaDb => with_own,
        Kind::SeekDb => rows_of(&reference[KEPT]),
    };
    assert_eq!(rows_of(&seen[KEPT]), kept, "{ctx}: after SELECT 1");
    assert_eq!(
        rows_of(&seen[CLEARED]),
        rows_of(&reference[CLEARED]),
        "{ctx}: after a statement with tables"
    );
    assert_eq!(
        rows_of(&seen[CLEARED]),
        Vec::<Vec<Option<Vec<u8>>>>::new(),
        "{ctx}"
    );
}

#[test]
fn the_diagnostics_area_holds_the_proxys_own_answers() {
    std::thread::scope(|s| {
        for kind in BOTH {
            s.spawn(move || {
                let f = fixture(kind, false, "area");
                let t = format!("{}g$f", f.db);
                // a rule's refusal (C4)
                check_refusal(kind, &f, "rule C4", &format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k', 'q', 5, 'v')"));
                // HBase DDL not alone
                check_refusal(kind, &f, "DDL not alone", &format!("CREATE TABLEGROUP {}x; SELECT 1", f.db));
                // an unreadable text ("…" is a name under ANSI_QUOTES, a string otherwise)
                check_refusal(kind, &f, "unreadable", &format!("UPDATE \"{t}\" SET \"T\" = 1 WHERE K = 'k1'"));
                // a note on a forwarded write (C8: a T the proxy cannot read), with the
                // backend's own warning (a duplicate row ignored)
                let ins = format!("INSERT IGNORE INTO {t} (K, Q, T, V) VALUES ('dup', 'q', -1700000000000, 'v'), ('dup', 'q', -1700000000000 + 0, 'v')");
                let del = format!("DELETE FROM {t} WHERE K = 'dup'");
                check_annotated(kind, &f, "note on a write", (&del, &ins), (&del, &ins), ("Note", 1292, "OBKV-HBase rule C8"));
            });
        }
    });
}

#[test]
fn a_warning_on_a_forwarded_ddl_is_listed_with_the_backends() {
    std::thread::scope(|s| {
        for kind in BOTH {
            s.spawn(move || {
                let f = fixture(kind, true, "ddl");
                let t = format!("{}g$f", f.db);
                // warn mode: the index is made, with the rule's warning (dropped directly
                // before each run)
                let create = format!("CREATE INDEX ix ON {t} (Q)");
                let drop = format!("DROP INDEX ix ON {t}");
                let (direct_create, direct_drop) =
                    ("CREATE INDEX ix ON plain (Q)", "DROP INDEX ix ON plain");
                check_annotated(
                    kind,
                    &f,
                    "warning on a DDL",
                    (&drop, &create),
                    (direct_drop, direct_create),
                    ("Warning", 1235, "OBKV-HBase rule R7"),
                );
            });
        }
    });
}

/// The mariadb CLI with --show-warnings prints under each refusal its own condition, as under
/// a SIGNAL of it directly (not the previous statement's).
#[test]
fn the_cli_shows_each_refusals_own_condition() {
    for kind in BOTH {
        let f = fixture(kind, false, "cli");
        let t = format!("{}g$f", f.db);
        let refused = [
            format!("INSERT INTO {t} (K, Q, T, V) VALUES ('k', 'q', 5, 'v')"),
            format!("UPDATE \"{t}\" SET \"T\" = 1 WHERE K = 'k1'"),
        ];
        let mut via = f.via();
        let errors: Vec<(u16, String, String)> =
            refused.iter().map(|s| refusal(&mut via, s)).collect();
        let script = |refusals: &[String]| {
            format!(
                "SELECT CAST('1x' AS SIGNED);\n{};\nSELECT * FROM nosuch;\n{};\nSELECT CAST('2y' AS SIGNED);\n",
                refusals[0], refusals[1]
            )
        };
        let through = script(&refused);
        let signals: Vec<String> = errors.iter().map(|(c, s, m)| signal(*c, s, m)).collect();
        let reference = script(&signals);
        let args = ["-uroot", "--show-warnings", "--force", "-D", &f.db];
        let (_, out_via, err_via) = mariadb_cli(&f.proxy.addr, &args, &through);
        let (_, out_ref, err_ref) = mariadb_cli(&f.backend, &args, &reference);
        let (mut out_via, mut err_via) = (without_echo(&out_via), without_echo(&err_via));
        let (out_ref, err_ref) = (without_echo(&out_ref), without_echo(&err_ref));
        let mut d = f.direct();
        for (c, s, m) in &errors {
            let kept = as_signal_keeps(&mut d, *c, s, m);
            err_via = err_via.replace(m.as_str(), &kept);
            out_via = out_via.replace(m.as_str(), &kept);
        }
        assert_eq!(out_via, out_ref, "{}", kind.name());
        assert_eq!(err_via, err_ref, "{}", kind.name());
        // the warnings printed are the statements' own
        assert!(
            out_via.contains("Truncated incorrect INTEGER value: '2y'"),
            "{out_via}"
        );
        assert_eq!(
            out_via
                .matches("Truncated incorrect INTEGER value: '1x'")
                .count(),
            1,
            "{out_via}"
        );
    }
}
