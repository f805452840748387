//! The prefix-scan rewriter against both real backends: the same rows and column metadata as
//! the unrewritten statement run directly (a differential test of generated statements), one
//! partition proven by the backend's own EXPLAIN and equal to the model's prediction, UPDATE
//! and DELETE with the same effect as on an untouched copy, and statements it must leave alone.

use obkv_proxy::hbase::partition::{key_partition, mariadb_key_partition};
use rand::{Rng, SeedableRng};

use crate::common::proxy::{self, InProcessProxy};
use crate::common::raw::{err_of, RawConn};
use crate::common::{shared, Kind, BOTH};
use obkv_proxy::protocol::response::ResponseKind;

const N: usize = 4;
const PARTS: u32 = 13;

fn ok(c: &mut RawConn, sql: &str) {
    c.exec(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

fn ddl(name: &str, group: &str) -> String {
    format!(
        "CREATE TABLE {name} (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, \
         K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, {N})), PRIMARY KEY (K, Q, T)) \
         TABLEGROUP = {group} PARTITION BY KEY(K_PREFIX) PARTITIONS {PARTS}"
    )
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// Bytes that make prefixes interesting: NUL, 0xFF runs, LIKE wildcards, escapes, quotes.
const ALPHABET: &[u8] = b"\x00\xff\xffab%_\\'\x80c";

fn random_key(rng: &mut impl Rng, max: usize) -> Vec<u8> {
    let len = rng.random_range(0..=max);
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
        .collect()
}

/// A literal for `b`, in one of the forms drivers send.
fn literal(rng: &mut impl Rng, b: &[u8], nbe: bool) -> String {
    match rng.random_range(0..4) {
        0 => format!("X'{}'", hex(b)),
        1 if !b.is_empty() => format!("0x{}", hex(b)),
        2 => format!("_binary{}", quoted(b, nbe)),
        _ => quoted(b, nbe),
    }
}

/// A quoted string as a client library writes it (raw bytes kept, including non-UTF-8).
fn quoted(b: &[u8], nbe: bool) -> String {
    // the test's statements are built as Latin-1-in-String and sent as bytes (see `bytes`)
    let mut s = String::from("'");
    for &c in b {
        match (c, nbe) {
            (b'\'', _) => s.push_str("''"),
            (b'\\', false) => s.push_str("\\\\"),
            (0, false) => s.push_str("\\0"),
            _ => s.push(char::from(c)),
        }
    }
    s.push('\'');
    s
}

/// The statement's bytes: every char below 256 is one byte (so raw non-UTF-8 bytes survive).
fn bytes(s: &str) -> Vec<u8> {
    s.chars().map(|c| c as u32 as u8).collect()
}

fn like_pattern(rng: &mut impl Rng, key: &[u8], nbe: bool) -> (Vec<u8>, Option<u8>) {
    let take = rng.random_range(0..=key.len().min(N + 3));
    let mut p = Vec::new();
    let escape = if rng.random_bool(0.3) {
        Some(b'!')
    } else {
        None
    };
    let esc = escape.unwrap_or(b'\\');
    for &c in &key[..take] {
        if (c == b'%' || c == b'_' || c == esc) && (escape.is_some() || !nbe) {
            p.push(esc);
        }
        p.push(c);
    }
    match rng.random_range(0..4) {
        0 => p.push(b'%'),
        1 => p.extend_from_slice(b"_%"),
        2 => {}
        _ => p.extend_from_slice(b"%x"),
    }
    (p, escape)
}

fn random_statement(rng: &mut impl Rng, table: &str, keys: &[Vec<u8>], nbe: bool) -> String {
    let key = |rng: &mut _| -> Vec<u8> {
        if rng_bool(rng, 0.7) && !keys.is_empty() {
            keys[rng_range(rng, keys.len())].clone()
        } else {
            random_key(rng, 7)
        }
    };
    let k = key(rng);
    let pred = match rng.random_range(0..8) {
        0 => format!("K = {}", literal(rng, &k, nbe)),
        1 => {
            let n = rng.random_range(1..4);
            let items: Vec<String> = (0..n)
                .map(|_| {
                    let k = key(rng);
                    literal(rng, &k, nbe)
                })
                .collect();
            format!("K IN ({})", items.join(", "))
        }
        2 | 3 => {
            let (p, escape) = like_pattern(rng, &k, nbe);
            match escape {
                Some(e) => format!("K LIKE {} ESCAPE '{}'", quoted(&p, nbe), char::from(e)),
                None => format!("K LIKE {}", quoted(&p, nbe)),
            }
        }
        4 => {
            // [start, stop): inside one prefix when stop is the prefix's successor
            let start = k.clone();
            let stop = if rng.random_bool(0.6) && start.len() >= N {
                obkv_proxy::hbase::prefix::upper_bound(&start[..N]).unwrap_or_else(|| vec![0xff; 9])
            } else {
                let mut s = key(rng);
                if s < start {
                    s = start.clone();
                }
                s
            };
            format!(
                "K >= {} AND K < {}",
                literal(rng, &start, nbe),
                literal(rng, &stop, nbe)
            )
        }
        5 => {
            let a = k.clone();
            let mut b = a.clone();
            b.push(ALPHABET[rng.random_range(0..ALPHABET.len())]);
            format!(
                "K BETWEEN {} AND {}",
                literal(rng, &a, nbe),
                literal(rng, &b, nbe)
            )
        }
        6 => {
            let m = rng.random_range(N - 1..N + 3);
            let v = &k[..k.len().min(m)];
            if rng.random_bool(0.5) {
                format!("LEFT(K, {m}) = {}", literal(rng, v, nbe))
            } else {
                format!("SUBSTRING(K, 1, {m}) = {}", literal(rng, v, nbe))
            }
        }
        _ => format!(
            "{} < K AND K <= {}",
            literal(rng, &k, nbe),
            literal(rng, &k, nbe)
        ),
    };
    match rng.random_range(0..5) {
        0 => format!("SELECT K, Q, T, V FROM {table} WHERE {pred} ORDER BY K, Q, T"),
        1 => format!("SELECT * FROM {table} x WHERE T >= 0 AND ({pred}) ORDER BY K, Q, T LIMIT 50"),
        2 => format!("SELECT COUNT(*), MAX(V) FROM {table} WHERE {pred}"),
        3 => format!("SELECT K FROM {table} AS t1 WHERE {pred} AND t1.Q = 'q' ORDER BY K, T DESC"),
        _ => format!("SELECT /* c */ V FROM {table} WHERE {pred} ORDER BY K, Q, T FOR UPDATE"),
    }
}

fn rng_bool(rng: &mut impl Rng, p: f64) -> bool {
    rng.random_bool(p)
}

fn rng_range(rng: &mut impl Rng, n: usize) -> usize {
    rng.random_range(0..n)
}

/// Column definitions and rows of a response (the final status flags are the plan's, and may
/// differ: the backend sets "no index used" by plan).
pub(crate) fn result_of(frames: &[(u8, Vec<u8>)]) -> Result<Vec<Vec<u8>>, (u16, String)> {
    if let Some(e) = frames.iter().find_map(|(_, p)| err_of(p)) {
        return Err(e);
    }
    let n = frames.len().saturating_sub(1);
    Ok(frames[..n]
        .iter()
        .filter(|(_, p)| !(p.first() == Some(&0xfe) && p.len() < 9))
        .map(|(_, p)| p.clone())
        .collect())
}

/// Affected rows, or the error code.
fn affected(c: &mut RawConn, sql: &str) -> Result<u64, u16> {
    let frames = c.query(sql.as_bytes()).expect("answered");
    if let Some((code, _)) = err_of(&frames[0].1) {
        return Err(code);
    }
    Ok(obkv_proxy::protocol::packets::parse_ok(&frames[0].1).map_or(u64::MAX, |o| o.affected_rows))
}

fn counter(c: &mut RawConn, name: &str) -> u64 {
    c.rows("SHOW PROXY STATUS")
        .iter()
        .find(|r| r[0].as_deref() == Some(name.as_bytes()))
        .and_then(|r| r[1].as_deref())
        .map(|v| String::from_utf8_lossy(v).parse().unwrap_or(0))
        .unwrap_or(0)
}

struct Fixture {
    proxy: InProcessProxy,
    backend: String,
    db: String,
    keys: Vec<Vec<u8>>,
}

fn fixture(kind: Kind, tag: &str, tables: &[&str]) -> Fixture {
    let backend = shared(kind).addr.clone();
    let proxy = proxy::start(proxy::config_for(&backend));
    let db = format!("px_{tag}");
    let mut c = RawConn::connect(&proxy.addr, "root", "", None).expect("proxy");
    ok(&mut c, &format!("DROP DATABASE IF EXISTS {db}"));
    ok(&mut c, &format!("CREATE DATABASE {db}"));
    ok(&mut c, &format!("USE {db}"));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut keys: Vec<Vec<u8>> = (0..600).map(|_| random_key(&mut rng, 8)).collect();
    keys.sort();
    keys.dedup();
    for t in tables {
        let group = format!("{tag}{t}");
        ok(&mut c, &format!("DROP TABLEGROUP IF EXISTS {group}"));
        ok(&mut c, &format!("CREATE TABLEGROUP {group}"));
        ok(&mut c, &ddl(&format!("{group}$f"), &group));
        // loaded directly: the keys include the empty one (its own prefix, which the rewriter
        // must handle), which the proxy's cell rules refuse to write
        let mut direct = RawConn::connect(&backend, "root", "", Some(&db)).expect("direct");
        for chunk in keys.chunks(200) {
            let values: Vec<String> = chunk
                .iter()
                .enumerate()
                .map(|(i, k)| format!("(X'{}', 'q', {i}, X'{}')", hex(k), hex(k)))
                .collect();
            ok(
                &mut direct,
                &format!(
                    "INSERT INTO {group}$f (K, Q, T, V) VALUES {}",
                    values.join(", ")
                ),
            );
        }
    }
    Fixture {
        proxy,
        backend,
        db,
        keys,
    }
}

/// A fixture with one HBase table `<letter><backend>a$f` and a connection through the proxy to
/// its database: (fixture, tag, table, connection).
fn one_table(kind: Kind, letter: &str) -> (Fixture, String, String, RawConn) {
    let tag = format!("{letter}{}", kind.name());
    let f = fixture(kind, &tag, &["a"]);
    let table = format!("{tag}a$f");
    let via = RawConn::connect(&f.proxy.addr, "root", "", Some(&f.db)).expect("proxy");
    (f, tag, table, via)
}

#[test]
fn rewritten_scans_return_what_the_backend_returns() {
    for kind in BOTH {
        let f = fixture(kind, &format!("d{}", kind.name()), &["a"]);
        let table = format!("d{}a$f", kind.name());
        let mut via = RawConn::connect(&f.proxy.addr, "root", "", Some(&f.db)).expect("proxy");
        let mut direct = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        let before = counter(&mut via, "prefix_rewrites");
        let mut rng = rand::rngs::StdRng::seed_from_u64(kind as u64 + 11);
        let total = 5_000;
        let mut nonempty = 0;
        let mut unstable = 0;
        for i in 0..total {
            let nbe = (i / 500) % 2 == 1;
            if i % 500 == 0 {
                let mode = if nbe { "NO_BACKSLASH_ESCAPES" } else { "" };
                ok(&mut via, &format!("SET sql_mode = '{mode}'"));
                ok(&mut direct, &format!("SET sql_mode = '{mode}'"));
            }
            let sql = random_statement(&mut rng, &table, &f.keys, nbe);
            let b = bytes(&sql);
            let mut a = result_of(&via.query(&b).expect("proxy answered"));
            let mut d = result_of(&direct.query(&b).expect("backend answered"));
            if a != d {
                // seekdb 1.4 can answer the first run of a text with the empty string in an IN
                // list differently from later runs (measured directly, without the proxy): such
                // a statement is run again on both sides; a rewrite error would repeat
                unstable += 1;
                a = result_of(&via.query(&b).expect("proxy answered"));
                d = result_of(&direct.query(&b).expect("backend answered"));
            }
            if a != d {
                let rows = |r: &Result<Vec<Vec<u8>>, (u16, String)>| match r {
                    Ok(v) => v
                        .iter()
                        .filter(|p| !p.starts_with(&[3, 100, 101, 102]))
                        .map(|p| hex(p))
                        .collect::<Vec<_>>()
                        .join(" "),
                    Err(e) => format!("{e:?}"),
                };
                panic!(
                    "{} statement {i}: {sql:?}\nproxy:  {}\ndirect: {}",
                    kind.name(),
                    rows(&a),
                    rows(&d)
                );
            }
            if a.as_ref().is_ok_and(|r| r.len() > 3) {
                nonempty += 1;
            }
        }
        let rewritten = counter(&mut via, "prefix_rewrites") - before;
        eprintln!(
            "{}: {total} statements, {rewritten} rewritten, {nonempty} with rows: identical \
             ({unstable} answered differently by the backend itself from one run to the next)",
            kind.name()
        );
        assert!(
            unstable < total / 100,
            "{}: {unstable} unstable answers",
            kind.name()
        );
        // OceanBase prunes equalities on K itself: those are not rewritten there
        let share = if kind == Kind::SeekDb { 8 } else { 4 };
        assert!(
            rewritten > total / share,
            "{}: only {rewritten} rewritten",
            kind.name()
        );
        assert!(
            nonempty > total / 4,
            "{}: too few statements found rows",
            kind.name()
        );
    }
}

/// The partition the backend places a prefix in (its own placement).
fn backend_partition(kind: Kind, p: &[u8]) -> u32 {
    match kind {
        Kind::MariaDb => mariadb_key_partition(p, Some(N), PARTS),
        Kind::SeekDb => key_partition(p, Some(N), PARTS),
    }
}

/// The partitions the backend's plan reads.
fn explained_partitions(c: &mut RawConn, kind: Kind, sql: &str) -> String {
    match kind {
        Kind::MariaDb => {
            let rows = c.rows(&format!("EXPLAIN PARTITIONS {sql}"));
            String::from_utf8_lossy(rows[0][3].as_deref().unwrap_or_default()).into_owned()
        }
        Kind::SeekDb => {
            let rows = c.rows(&format!("EXPLAIN {sql}"));
            let plan: String = rows
                .iter()
                .map(|r| String::from_utf8_lossy(r[0].as_deref().unwrap_or_default()).into_owned())
                .collect::<Vec<_>>()
                .join("\n");
            let at = plan.find("partitions(").expect("a partitions(...) line");
            let rest = &plan[at + 11..];
            rest[..rest.find(')').expect("closed")].to_string()
        }
    }
}

/// The natural prefix scan, unrewritten, reads more than one partition.
fn assert_reads_every_partition(c: &mut RawConn, kind: Kind, table: &str) {
    let sql = format!("SELECT * FROM {table} WHERE K LIKE 'abcd%'");
    let all = explained_partitions(c, kind, &sql);
    assert!(
        all.contains(',') || all.contains('['),
        "{}: {all}",
        kind.name()
    );
}

#[test]
fn each_form_reads_the_one_partition_the_model_predicts() {
    for kind in BOTH {
        let f = fixture(kind, &format!("e{}", kind.name()), &["a"]);
        let table = format!("e{}a$f", kind.name());
        let mut via = RawConn::connect(&f.proxy.addr, "root", "", Some(&f.db)).expect("proxy");
        let predict = |p: &[u8]| backend_partition(kind, p);
        for (prefix, pred) in [
            // outside LIKE, `\%` keeps its backslash
            (&b"ab\\%"[..], "K = 'ab\\%cdef'"),
            (b"ab%c", "K = X'61622563'"),
            (b"abcd", "K IN ('abcd1', _binary'abcd2')"),
            (b"ab%c", "K LIKE 'ab\\%c%'"),
            (b"ab!c", "K LIKE 'ab!!c_%' ESCAPE '!'"),
            (b"abcd", "K >= 'abcd' AND K < 'abce'"),
            (b"ab\xff\xff", "K >= X'6162FFFF00' AND K < X'6163'"),
            (b"abcd", "K BETWEEN 'abcd' AND 'abcdzzz'"),
            (b"abcd", "K > 'abcd' AND K <= 'abcdz'"),
            (b"\xff\xff\xff\xff", "K >= X'FFFFFFFF'"),
            (b"abcd", "LEFT(K, 4) = 'abcd'"),
            (b"abcd", "SUBSTRING(K, 1, 6) = 'abcdef'"),
            (b"abcd", "SUBSTR(K FROM 1 FOR 5) = 'abcde'"),
            (b"ab", "K LIKE 'ab'"),
        ] {
            if kind == Kind::SeekDb && pred.contains('\\') {
                // OceanBase does not report NO_BACKSLASH_ESCAPES: such literals are not rewritten
                continue;
            }
            for stmt in [
                format!("SELECT * FROM {table} WHERE {pred}"),
                format!(
                    "SELECT V FROM {}.{table} t WHERE t.Q = 'q' AND {pred} ORDER BY K LIMIT 5",
                    f.db
                ),
                format!("UPDATE {table} SET V = V WHERE {pred}"),
                format!("DELETE FROM {table} WHERE {pred} AND T < 0"),
            ] {
                let got = explained_partitions(&mut via, kind, &stmt);
                let want = format!("p{}", predict(prefix));
                assert_eq!(got, want, "{}: {stmt}", kind.name());
            }
        }
        // without the proxy the same statement reads every partition
        let mut direct = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        assert_reads_every_partition(&mut direct, kind, &table);
    }
}

#[test]
fn updates_and_deletes_change_what_the_unrewritten_statement_changes() {
    for kind in BOTH {
        let tag = format!("u{}", kind.name());
        let f = fixture(kind, &tag, &["a", "b"]);
        let (rewritten, plain) = (format!("{tag}a$f"), format!("{tag}b$f"));
        let mut via = RawConn::connect(&f.proxy.addr, "root", "", Some(&f.db)).expect("proxy");
        let mut direct = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        let before = counter(&mut via, "prefix_rewrites");
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for i in 0..200 {
            let k = f.keys[rng.random_range(0..f.keys.len())].clone();
            let (p, escape) = like_pattern(&mut rng, &k, false);
            let pred = match (i % 4, escape) {
                (0, _) => format!("K = X'{}'", hex(&k)),
                (1, Some(e)) => format!("K LIKE {} ESCAPE '{}'", quoted(&p, false), char::from(e)),
                (1, None) => format!("K LIKE {}", quoted(&p, false)),
                (2, _) if k.len() >= N => format!(
                    "K >= X'{}' AND K < X'{}'",
                    hex(&k[..N]),
                    hex(&obkv_proxy::hbase::prefix::upper_bound(&k[..N])
                        .unwrap_or_else(|| vec![0xff; 8]))
                ),
                _ => format!("LEFT(K, 5) = X'{}'", hex(&k[..k.len().min(5)])),
            };
            let stmt = |t: &str| match i % 3 {
                0 => format!("UPDATE {t} SET V = CONCAT(V, X'{i:02X}') WHERE {pred}"),
                1 => format!("DELETE FROM {t} WHERE {pred} ORDER BY K LIMIT 2"),
                // (T is a cell's address: the write rules refuse to change it)
                _ => format!("UPDATE {t} SET V = CONCAT(X'{i:02X}', V) WHERE {pred} AND T < 100"),
            };
            let a = affected(&mut via, &stmt(&rewritten));
            let d = affected(&mut direct, &stmt(&plain));
            assert_eq!(a, d, "{}: {}", kind.name(), stmt(&rewritten));
        }
        assert!(counter(&mut via, "prefix_rewrites") - before > 100);
        let contents = |c: &mut RawConn, t: &str| {
            c.rows(&format!(
                "SELECT HEX(K), Q, T, HEX(V) FROM {t} ORDER BY K, Q, T"
            ))
        };
        let a = contents(&mut direct, &rewritten);
        let b = contents(&mut direct, &plain);
        assert_eq!(a.len(), b.len(), "{}", kind.name());
        assert_eq!(a, b, "{}: contents differ", kind.name());
        assert!(
            a.len() < f.keys.len(),
            "{}: the deletes deleted nothing",
            kind.name()
        );
    }
}

/// A connection character set that does not keep ASCII as it is (utf16: two bytes a
/// character) turns `'abcd%'` into other bytes: such a literal is not taken as its bytes, so
/// the scan is not pinned to the partition of `abcd` (found by a review: the pinned scan
/// returned no row where the backend returns the row). After the change, the proxy reads the
/// character set again before it decides.
#[test]
fn a_wide_connection_character_set_is_not_taken_for_ascii() {
    for kind in BOTH {
        let (f, _tag, table, mut via) = one_table(kind, "w");
        let mut direct = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        ok(
            &mut direct,
            &format!("INSERT INTO {table} (K, Q, T, V) VALUES ('abcd1', 'q', -1, 'v'), ('abcd2', 'q', -1, 'v')"),
        );
        let scan = format!("SELECT K FROM {table} WHERE K LIKE 'abcd%' ORDER BY K");
        // the usual session: rewritten, the same rows
        let before = counter(&mut via, "prefix_rewrites");
        let plain = result_of(&via.query(scan.as_bytes()).expect("answered"));
        assert_eq!(
            counter(&mut via, "prefix_rewrites"),
            before + 1,
            "{}",
            kind.name()
        );
        assert_eq!(
            plain,
            result_of(&direct.query(scan.as_bytes()).expect("answered"))
        );
        let set = "SET character_set_connection = utf16";
        if let Err(e) = direct.exec(set) {
            // (MariaDB has utf16; a backend without it refuses the change, as it does through
            // the proxy, and there is nothing more to see)
            assert!(kind != Kind::MariaDb, "{e:?}");
            assert!(via.exec(set).is_err(), "{}", kind.name());
            continue;
        }
        ok(&mut via, set);
        let before = counter(&mut via, "prefix_rewrites");
        let wide = result_of(&via.query(scan.as_bytes()).expect("answered"));
        assert_eq!(
            wide,
            result_of(&direct.query(scan.as_bytes()).expect("answered")),
            "{}",
            kind.name()
        );
        assert_eq!(
            counter(&mut via, "prefix_rewrites"),
            before,
            "{}",
            kind.name()
        );
        // the change made in a text that also reads the table (deciding it read the old
        // character set), or by a prepared statement: the next scan is not pinned either
        // (found by the review of the fix above)
        let qualified = format!(
            "SELECT K FROM {}.{table} WHERE K LIKE 'abcd%' ORDER BY K",
            f.db
        );
        for how in ["text", "prepared"] {
            let mut c = RawConn::connect(&f.proxy.addr, "root", "", Some(&f.db)).expect("proxy");
            // (DDL through the proxy drops the schemas it keeps: the text below reads the
            // table's again, and the session's facts with it, before it runs)
            ok(
                &mut c,
                &format!("CREATE TABLE IF NOT EXISTS {}.wide_{how} (a int)", f.db),
            );
            if how == "text" {
                let text = format!("{set}; SELECT K FROM {}.{table} WHERE K = 'zz'", f.db);
                let frames = c.query(text.as_bytes()).expect("answered");
                assert!(
                    frames.iter().all(|(_, p)| err_of(p).is_none()),
                    "{frames:?}"
                );
            } else {
                let (id, _) = prepare(&mut c, set.as_bytes()).expect("prepared");
                run_execute(&mut c, id, &execute_packet(id, false, &[], false, &[]))
                    .expect("executed");
            }
            let got = result_of(&c.query(qualified.as_bytes()).expect("answered"));
            assert_eq!(
                got,
                result_of(&direct.query(qualified.as_bytes()).expect("answered")),
                "{}: {how}",
                kind.name()
            );
        }
    }
}

#[test]
fn statements_the_rewriter_must_not_touch_are_forwarded_as_they_are() {
    for kind in BOTH {
        let (f, tag, table, mut via) = one_table(kind, "n");
        ok(
            &mut via,
            &format!("CREATE TABLE {tag}plain (K varbinary(64), V int)"),
        );
        ok(&mut via, &format!("DROP TABLEGROUP IF EXISTS {tag}k"));
        ok(&mut via, &format!("CREATE TABLEGROUP {tag}k"));
        ok(
            &mut via,
            &format!(
                "CREATE TABLE {tag}k$f (K varbinary(1024), Q varbinary(256), T bigint, \
                 V varbinary(1048576) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = {tag}k PARTITION BY KEY(K) PARTITIONS 7"
            ),
        );
        let before = counter(&mut via, "prefix_rewrites");
        for sql in [
            format!("SELECT * FROM {tag}plain WHERE K LIKE 'abcd%'"),
            format!("SELECT * FROM {tag}k$f WHERE K LIKE 'abcd%'"),
            format!("SELECT * FROM {table} WHERE K LIKE 'abcd%' OR K = 'x'"),
            format!("SELECT * FROM {table} WHERE NOT K LIKE 'abcd%'"),
            format!("SELECT * FROM {table} WHERE K = Q"),
            format!("SELECT * FROM {table} WHERE K = CONCAT('abcd', 'e')"),
            format!("SELECT * FROM {table} WHERE K LIKE 'ab%'"),
            format!("SELECT * FROM {table} WHERE K >= 'abcd' AND K < 'abcf'"),
            format!("SELECT * FROM {table} WHERE K LIKE 'abcd%' AND K_PREFIX = 'abcd'"),
            format!(
                "SELECT * FROM {table} a JOIN {tag}plain b ON a.K = b.K WHERE a.K LIKE 'abcd%'"
            ),
            format!(
                "SELECT * FROM {table} WHERE K IN (SELECT K FROM {tag}plain) AND K LIKE 'abcd%'"
            ),
        ] {
            via.must(&sql);
        }
        assert_eq!(
            counter(&mut via, "prefix_rewrites"),
            before,
            "{}: a statement was rewritten",
            kind.name()
        );
        // a prefix scan on a KEY(K) table earns a note
        ok(
            &mut via,
            &format!("SELECT * FROM {tag}k$f WHERE K LIKE 'abcd%'"),
        );
        let warnings = via.rows("SHOW WARNINGS");
        assert!(
            warnings.iter().any(
                |r| String::from_utf8_lossy(r[2].as_deref().unwrap_or_default()).contains("KEY(K)")
            ),
            "{}: {warnings:?}",
            kind.name()
        );
        // no catalog account: a definition not yet cached is not read inside the user's
        // transaction (that read would join it); the statement goes unchanged, then after
        // COMMIT it is rewritten
        let fresh = proxy::start(proxy::config_for(&f.backend));
        let mut t = RawConn::connect(&fresh.addr, "root", "", Some(&f.db)).expect("proxy");
        let scan = format!("SELECT * FROM {table} WHERE K LIKE 'abcd%'");
        ok(&mut t, "BEGIN");
        ok(&mut t, &scan);
        assert_eq!(counter(&mut t, "prefix_rewrites"), 0, "{}", kind.name());
        ok(&mut t, "COMMIT");
        ok(&mut t, &scan);
        assert_eq!(counter(&mut t, "prefix_rewrites"), 1, "{}", kind.name());
        // and the switch turns the rewriter off
        let mut cfg = proxy::config_for(&f.backend);
        cfg.hbase.rewrite = obkv_proxy::config::Switch::Off;
        let off = proxy::start(cfg);
        let mut c = RawConn::connect(&off.addr, "root", "", Some(&f.db)).expect("proxy");
        assert_reads_every_partition(&mut c, kind, &table);
    }
}

// ---- the binary protocol: prepared statements decided at each execution ----------------------

/// A bound value as the test sends it.
#[derive(Clone, Debug)]
pub(crate) enum P {
    Null,
    /// MYSQL_TYPE_BLOB: binary.
    Blob(Vec<u8>),
    /// MYSQL_TYPE_VAR_STRING: a string in the client's character set (what mysql_async sends).
    Str(Vec<u8>),
    Int(i64),
}

impl P {
    pub(crate) fn ty(&self) -> [u8; 2] {
        match self {
            P::Null => [0x06, 0],
            P::Blob(_) => [0xfc, 0],
            P::Str(_) => [0xfd, 0],
            P::Int(_) => [0x08, 0],
        }
    }
}

pub(crate) fn prepare(c: &mut RawConn, sql: &[u8]) -> Result<(u32, u16), (u16, String)> {
    let mut cmd = vec![0x16];
    cmd.extend_from_slice(sql);
    let frames = c
        .command(&cmd, ResponseKind::Prepare)
        .expect("prepare answered");
    let p = &frames[0].1;
    if let Some(e) = err_of(p) {
        return Err(e);
    }
    Ok((
        u32::from_le_bytes([p[1], p[2], p[3], p[4]]),
        u16::from_le_bytes([p[7], p[8]]),
    ))
}

/// A COM_STMT_EXECUTE; `types`: send the parameter types (else the ones sent before hold);
/// `long`: parameters whose value went with COM_STMT_SEND_LONG_DATA (not in the packet).
pub(crate) fn execute_packet(
    id: u32,
    cursor: bool,
    params: &[P],
    types: bool,
    long: &[usize],
) -> Vec<u8> {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(u8::from(cursor));
    p.extend_from_slice(&1u32.to_le_bytes());
    let mut nulls = vec![0u8; params.len().div_ceil(8)];
    for (i, v) in params.iter().enumerate() {
        if matches!(v, P::Null) {
            nulls[i / 8] |= 1 << (i % 8);
        }
    }
    p.extend_from_slice(&nulls);
    p.push(u8::from(types));
    if types {
        for v in params {
            p.extend_from_slice(&v.ty());
        }
    }
    for (i, v) in params.iter().enumerate() {
        if long.contains(&i) {
            continue;
        }
        match v {
            P::Null => {}
            P::Blob(b) | P::Str(b) => {
                let mut lenenc = Vec::new();
                obkv_proxy::protocol::wire::put_lenenc_bytes(&mut lenenc, b);
                p.extend_from_slice(&lenenc);
            }
            P::Int(n) => p.extend_from_slice(&n.to_le_bytes()),
        }
    }
    p
}

/// Runs an execution (fetching a cursor's rows two at a time): the column definitions and
/// rows, or the error.
fn run_execute(c: &mut RawConn, id: u32, packet: &[u8]) -> Result<Vec<Vec<u8>>, (u16, String)> {
    let frames = c
        .command(packet, ResponseKind::Execute)
        .expect("execute answered");
    let mut out = result_of(&frames)?;
    let last = &frames[frames.len() - 1].1;
    let cursor = last.first() == Some(&0xfe) && last.len() >= 5 && last[3] & 0x40 != 0;
    if cursor {
        for _ in 0..10_000 {
            let mut fetch = vec![0x1c];
            fetch.extend_from_slice(&id.to_le_bytes());
            fetch.extend_from_slice(&2u32.to_le_bytes());
            let frames = c
                .command(&fetch, ResponseKind::Fetch)
                .expect("fetch answered");
            out.extend(result_of(&frames)?);
            let end = &frames[frames.len() - 1].1;
            if end.len() >= 5 && end[3] & 0x80 != 0 {
                break; // SERVER_STATUS_LAST_ROW_SENT
            }
        }
    }
    Ok(out)
}

pub(crate) fn send_long_data(c: &mut RawConn, id: u32, param: u16, data: &[u8]) {
    let mut p = vec![0x18];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&param.to_le_bytes());
    p.extend_from_slice(data);
    c.write_frame(0, &p).expect("long data sent");
}

fn stmt_reset(c: &mut RawConn, id: u32) -> Result<Vec<Vec<u8>>, (u16, String)> {
    let mut p = vec![0x1a];
    p.extend_from_slice(&id.to_le_bytes());
    let frames = c.command(&p, ResponseKind::Single).expect("reset answered");
    match err_of(&frames[0].1) {
        Some(e) => Err(e),
        None => Ok(vec![]),
    }
}

pub(crate) fn stmt_close(c: &mut RawConn, id: u32) {
    let mut p = vec![0x19];
    p.extend_from_slice(&id.to_le_bytes());
    c.write_frame(0, &p).expect("close sent");
}

/// A key value as a driver binds it: BLOB, or a string (mysql_async's type for bytes).
fn bind_key(rng: &mut impl Rng, k: Vec<u8>) -> P {
    match rng.random_range(0..10) {
        0 => P::Null,
        1..=5 => P::Blob(k),
        _ => P::Str(k),
    }
}

/// The prepared statements of the test and a generator of values for each.
fn prepared_templates(table: &str) -> Vec<String> {
    vec![
        format!("SELECT K, Q, T, V FROM {table} WHERE K LIKE ?"),
        format!("SELECT K, V FROM {table} WHERE K LIKE ? ESCAPE '!'"),
        format!("SELECT V FROM {table} WHERE K = ?"),
        format!("SELECT K FROM {table} WHERE K IN (?, ?, ?)"),
        format!("SELECT K FROM {table} WHERE K >= ? AND K < ? ORDER BY K LIMIT ?"),
        format!("SELECT K FROM {table} WHERE K BETWEEN ? AND ?"),
        format!("SELECT K, T FROM {table} x WHERE x.T >= ? AND LEFT(K, 4) = ?"),
        format!("SELECT K FROM {table} WHERE SUBSTRING(K, 1, 5) = ? AND Q = ?"),
    ]
}

fn prepared_values(rng: &mut impl Rng, template: usize, keys: &[Vec<u8>], nbe: bool) -> Vec<P> {
    let mut key = || -> Vec<u8> {
        if rng_bool(rng, 0.8) {
            keys[rng_range(rng, keys.len())].clone()
        } else {
            random_key(rng, 7)
        }
    };
    let k = key();
    let k2 = key();
    let k3 = key();
    match template {
        0 => {
            let (p, _) = like_pattern(rng, &k, nbe);
            vec![bind_key(rng, p)]
        }
        1 => {
            let mut p = Vec::new();
            for &c in &k[..rng_range(rng, k.len() + 1)] {
                if c == b'%' || c == b'_' || c == b'!' {
                    p.push(b'!');
                }
                p.push(c);
            }
            p.push(b'%');
            vec![bind_key(rng, p)]
        }
        2 => vec![bind_key(rng, k)],
        3 => vec![bind_key(rng, k), bind_key(rng, k2), bind_key(rng, k3)],
        4 => {
            let hi = if rng_bool(rng, 0.6) {
                // the end of the key's prefix: inside one prefix
                let pre = &k[..k.len().min(N)];
                obkv_proxy::hbase::prefix::upper_bound(pre).unwrap_or_else(|| k2.clone())
            } else {
                k2
            };
            vec![
                bind_key(rng, k),
                bind_key(rng, hi),
                P::Int(rng.random_range(1..20)),
            ]
        }
        5 => {
            let mut hi = k.clone();
            hi.extend_from_slice(b"\xff");
            let hi = if rng_bool(rng, 0.6) { hi } else { k2 };
            vec![bind_key(rng, k), bind_key(rng, hi)]
        }
        6 => vec![
            P::Int(rng.random_range(0..100)),
            bind_key(rng, k[..k.len().min(4)].to_vec()),
        ],
        _ => vec![
            bind_key(rng, k[..k.len().min(5)].to_vec()),
            bind_key(rng, b"q".to_vec()),
        ],
    }
}

#[test]
fn prepared_statements_return_what_the_backend_returns() {
    for kind in BOTH {
        let (f, _tag, table, mut via) = one_table(kind, "b");
        let mut direct = RawConn::connect(&f.backend, "root", "", Some(&f.db)).expect("direct");
        let before = counter(&mut via, "prefix_rewrites");
        let templates = prepared_templates(&table);
        let mut ids: Vec<(u32, u32)> = Vec::new();
        for t in &templates {
            let a = prepare(&mut via, t.as_bytes()).expect("prepared through the proxy");
            let d = prepare(&mut direct, t.as_bytes()).expect("prepared directly");
            assert_eq!(a.1, d.1, "{}: parameter count of {t}", kind.name());
            ids.push((a.0, d.0));
        }
        // the types each statement was last bound with (executions may then send none)
        let mut last_types: Vec<Option<Vec<[u8; 2]>>> = vec![None; templates.len()];
        let mut rng = rand::rngs::StdRng::seed_from_u64(kind as u64 + 101);
        let total = 2_500;
        let (mut nonempty, mut cursors, mut long, mut resets, mut reprepared) = (0, 0, 0, 0, 0);
        for i in 0..total {
            // NO_BACKSLASH_ESCAPES changes LIKE's default escape between executions
            let nbe = (i / 500) % 2 == 1;
            if i % 500 == 0 {
                let mode = if nbe { "NO_BACKSLASH_ESCAPES" } else { "" };
                ok(&mut via, &format!("SET sql_mode = '{mode}'"));
                ok(&mut direct, &format!("SET sql_mode = '{mode}'"));
            }
            let t = rng_range(&mut rng, templates.len());
            let (a_id, d_id) = ids[t];
            let mut values = prepared_values(&mut rng, t, &f.keys, nbe);
            // without types the values must have the types bound last (NULL goes anywhere)
            let send_types = match &last_types[t] {
                Some(prev) if rng_bool(&mut rng, 0.4) => {
                    for (v, ty) in values.iter_mut().zip(prev) {
                        *v = match (ty[0], std::mem::replace(v, P::Null)) {
                            (0xfc, P::Blob(b) | P::Str(b)) => P::Blob(b),
                            (0xfd, P::Blob(b) | P::Str(b)) => P::Str(b),
                            (0x08, x @ P::Int(_)) => x,
                            _ => P::Null,
                        };
                    }
                    false
                }
                _ => true,
            };
            if send_types {
                last_types[t] = Some(values.iter().map(P::ty).collect());
            }
            // now and then the first value goes with COM_STMT_SEND_LONG_DATA
            let mut long_params = vec![];
            if send_types && rng_bool(&mut rng, 0.05) {
                if let P::Blob(b) | P::Str(b) = &values[0] {
                    let (x, y) = b.split_at(b.len() / 2);
                    for (c, id) in [(&mut via, a_id), (&mut direct, d_id)] {
                        send_long_data(c, id, 0, x);
                        send_long_data(c, id, 0, y);
                    }
                    long_params.push(0);
                    long += 1;
                }
            }
            let cursor = rng_bool(&mut rng, 0.1);
            cursors += usize::from(cursor);
            let a = run_execute(
                &mut via,
                a_id,
                &execute_packet(a_id, cursor, &values, send_types, &long_params),
            );
            let d = run_execute(
                &mut direct,
                d_id,
                &execute_packet(d_id, cursor, &values, send_types, &long_params),
            );
            assert_eq!(
                a,
                d,
                "{} execution {i}: {} with {values:?} (types sent: {send_types})",
                kind.name(),
                templates[t]
            );
            // binary rows begin with 0x00 (column definitions with their catalog, "def")
            if a.as_ref()
                .is_ok_and(|r| r.iter().any(|p| p.first() == Some(&0)))
            {
                nonempty += 1;
            }
            // a reset, or a close and a new prepare, between executions
            if rng_bool(&mut rng, 0.02) {
                assert_eq!(stmt_reset(&mut via, a_id), stmt_reset(&mut direct, d_id));
                resets += 1;
            } else if rng_bool(&mut rng, 0.01) {
                stmt_close(&mut via, a_id);
                stmt_close(&mut direct, d_id);
                // the closed statement is gone on both sides
                let pk = execute_packet(a_id, false, &values, true, &[]);
                let gone = run_execute(&mut via, a_id, &pk).map(drop);
                assert!(matches!(gone, Err((1243, _))), "{}: {gone:?}", kind.name());
                let a = prepare(&mut via, templates[t].as_bytes()).expect("prepared again");
                let d = prepare(&mut direct, templates[t].as_bytes()).expect("prepared again");
                ids[t] = (a.0, d.0);
                last_types[t] = None;
                reprepared += 1;
            }
        }
        let rewritten = counter(&mut via, "prefix_rewrites") - before;
        eprintln!(
            "{}: {total} executions, {rewritten} rewritten, {nonempty} with rows, {cursors} with a \
             cursor, {long} with long data, {resets} resets, {reprepared} closed and prepared again: identical",
            kind.name()
        );
        // OceanBase prunes equalities on K itself: those are not rewritten there
        let share = if kind == Kind::SeekDb { 8 } else { 4 };
        assert!(
            rewritten > total as u64 / share,
            "{}: only {rewritten} rewritten",
            kind.name()
        );
        assert!(nonempty > total / 4, "{}: too few rows", kind.name());
    }
}

/// Binary result rows (values as bytes; integers as decimal text), from the response's column
/// definitions.
fn binary_rows(frames: &[(u8, Vec<u8>)]) -> Vec<Vec<Option<Vec<u8>>>> {
    use obkv_proxy::protocol::wire::Reader;
    let mut r = Reader::new(&frames[0].1);
    let n = r.lenenc_int().expect("column count") as usize;
    let types: Vec<u8> = frames[1..=n]
        .iter()
        .map(|(_, p)| {
            let mut r = Reader::new(p);
            for _ in 0..6 {
                r.lenenc_bytes().expect("name");
            }
            r.lenenc_int();
            r.take(6);
            r.u8().expect("type")
        })
        .collect();
    let mut rows = Vec::new();
    for (_, p) in &frames[n + 1..] {
        if p.first() != Some(&0) {
            continue;
        }
        let nulls = &p[1..1 + (n + 9) / 8];
        let mut r = Reader::new(&p[1 + (n + 9) / 8..]);
        let mut row = Vec::new();
        for (i, ty) in types.iter().enumerate() {
            let bit = i + 2;
            if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
                row.push(None);
                continue;
            }
            let v = match ty {
                0x08 => i64::from_le_bytes(r.take(8).unwrap().try_into().unwrap())
                    .to_string()
                    .into_bytes(),
                0x03 => i32::from_le_bytes(r.take(4).unwrap().try_into().unwrap())
                    .to_string()
                    .into_bytes(),
                _ => r.lenenc_bytes().expect("value").to_vec(),
            };
            row.push(Some(v));
        }
        rows.push(row);
    }
    rows
}

#[test]
fn prepared_executions_read_the_one_partition_the_model_predicts() {
    for kind in BOTH {
        let (_f, _tag, table, mut via) = one_table(kind, "x");
        let predict = |p: &[u8]| backend_partition(kind, p);
        let explain = match kind {
            Kind::MariaDb => "EXPLAIN PARTITIONS",
            Kind::SeekDb => "EXPLAIN",
        };
        for (prefix, pred, values) in [
            (
                &b"ab%c"[..],
                "K LIKE ?",
                vec![P::Blob(b"ab\\%cd%".to_vec())],
            ),
            (
                b"a\xff\x00c",
                "K = ?",
                vec![P::Blob(b"a\xff\x00c\x01".to_vec())],
            ),
            (b"abcd", "K LIKE ?", vec![P::Str(b"abcd_%".to_vec())]),
            (
                b"abcd",
                "K >= ? AND K < ?",
                vec![P::Blob(b"abcd".to_vec()), P::Blob(b"abce".to_vec())],
            ),
            (
                b"abcd",
                "K IN (?, ?)",
                vec![P::Str(b"abcd1".to_vec()), P::Blob(b"abcd2".to_vec())],
            ),
            (b"abcd", "LEFT(K, 4) = ?", vec![P::Str(b"abcd".to_vec())]),
            (
                b"abcd",
                "K BETWEEN ? AND ?",
                vec![P::Blob(b"abcd".to_vec()), P::Blob(b"abcd\xff".to_vec())],
            ),
        ] {
            if kind == Kind::SeekDb
                && values
                    .iter()
                    .any(|v| matches!(v, P::Blob(b) if b.contains(&b'\\')))
            {
                // OceanBase does not report NO_BACKSLASH_ESCAPES: LIKE's default escape is unknown
                continue;
            }
            let sql = format!("{explain} SELECT * FROM {table} WHERE {pred}");
            if kind == Kind::SeekDb {
                // OceanBase's EXPLAIN of a prepared statement plans without the bound values
                // (every partition, even for `K_PREFIX = ?` sent directly), so the proof there
                // is the plan cache: the variant, with the prefix column, is what ran
                let sql = format!("SELECT * FROM {table} WHERE {pred}");
                let (id, _) = prepare(&mut via, sql.as_bytes()).expect("prepared");
                let packet = execute_packet(id, false, &values, true, &[]);
                run_execute(&mut via, id, &packet).expect("executed");
                // an equality on K OceanBase prunes by itself: the statement runs unchanged
                let equality = pred.starts_with("K = ") || pred.starts_with("K IN ");
                let ran = via.rows(&if equality {
                    format!(
                        "SELECT executions FROM oceanbase.V$OB_PLAN_CACHE_PLAN_STAT \
                         WHERE query_sql = '{sql}'"
                    )
                } else {
                    format!(
                        "SELECT executions FROM oceanbase.V$OB_PLAN_CACHE_PLAN_STAT \
                         WHERE query_sql = '{sql} AND `K_PREFIX` = ?' OR query_sql = '{sql} AND `K_PREFIX` IN (?, ?)'"
                    )
                });
                assert!(
                    !ran.is_empty(),
                    "{}: the {} of {sql} did not run",
                    kind.name(),
                    if equality { "statement" } else { "variant" }
                );
                stmt_close(&mut via, id);
                continue;
            }
            let (id, _) = prepare(&mut via, sql.as_bytes()).expect("EXPLAIN prepared");
            let frames = via
                .command(
                    &execute_packet(id, false, &values, true, &[]),
                    ResponseKind::Execute,
                )
                .expect("answered");
            if let Some(e) = frames.iter().find_map(|(_, p)| err_of(p)) {
                panic!("{}: {sql}: {e:?}", kind.name());
            }
            let rows = binary_rows(&frames);
            let got =
                String::from_utf8_lossy(rows[0][3].as_deref().unwrap_or_default()).into_owned();
            assert_eq!(
                got,
                format!("p{}", predict(prefix)),
                "{}: {sql} {values:?}",
                kind.name()
            );
            stmt_close(&mut via, id);
        }
    }
}

/// A driver's own prepared statements (mysql_async, binary protocol): a statement executed
/// with a value that pins a prefix, then with one that does not, many times over, then closed;
/// the same rows as directly, and the prefix-pinning executions rewritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_prepares_and_reexecutes_through_the_rewriter() {
    use mysql_async::prelude::*;
    // plain, and over the compressed protocol (variants' STMT_CLOSE queued ahead of the
    // client's command: each starts its own frame sequence)
    for (kind, compress) in BOTH.into_iter().flat_map(|k| [(k, false), (k, true)]) {
        let tag = format!("m{}{}", kind.name(), if compress { "z" } else { "" });
        let f = tokio::task::block_in_place(|| fixture(kind, &tag, &["a"]));
        let table = format!("{tag}a$f");
        let opts = |addr: &str| {
            let (host, port) = addr.rsplit_once(':').expect("addr");
            mysql_async::OptsBuilder::default()
                .ip_or_hostname(host.to_string())
                .tcp_port(port.parse().expect("port"))
                .user(Some("root"))
                .db_name(Some(f.db.clone()))
                .prefer_socket(false)
                .compression(compress.then(mysql_async::Compression::fast))
        };
        let mut via = mysql_async::Conn::new(opts(&f.proxy.addr))
            .await
            .expect("proxy");
        let mut direct = mysql_async::Conn::new(opts(&f.backend))
            .await
            .expect("direct");
        let before: Vec<(String, String)> = via.query("SHOW PROXY STATUS").await.expect("status");
        let count = |rows: &[(String, String)]| -> u64 {
            rows.iter()
                .find(|(k, _)| k == "prefix_rewrites")
                .map_or(0, |(_, v)| v.parse().unwrap_or(0))
        };
        let sql = format!("SELECT K, Q, T, V FROM {table} WHERE K LIKE ? ORDER BY K, Q, T");
        let (s_via, s_direct) = (
            via.prep(sql.as_str()).await.expect("prepare via"),
            direct.prep(sql.as_str()).await.expect("prepare direct"),
        );
        // ASCII keys and patterns (mysql_async binds bytes as strings): long enough to pin a
        // prefix, then too short
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        for i in 0..30 {
            let key = format!("{}{:02}x_%{i}", ["r", "%", "_"][i % 3], i);
            direct
                .exec_drop(
                    format!("INSERT INTO {table} (K, Q, T, V) VALUES (?, 'q', 1, 'v')").as_str(),
                    (key.clone(),),
                )
                .await
                .expect("insert");
            let mut p: Vec<u8> = key.as_bytes()[..N]
                .iter()
                .flat_map(|&c| {
                    if c == b'%' || c == b'_' {
                        vec![b'\\', c]
                    } else {
                        vec![c]
                    }
                })
                .collect();
            p.push(b'%');
            patterns.push(p);
        }
        assert!(patterns.len() >= 10, "{}: too few ASCII keys", kind.name());
        let mut pinned = 0u64;
        for round in 0..5 {
            for p in &patterns {
                for value in [p.clone(), p[..1].iter().copied().chain(*b"%").collect()] {
                    type Row = (Vec<u8>, Vec<u8>, i64, Vec<u8>);
                    let a: Vec<Row> = via.exec(&s_via, (value.clone(),)).await.expect("via");
                    let d: Vec<Row> = direct
                        .exec(&s_direct, (value.clone(),))
                        .await
                        .expect("direct");
                    assert_eq!(a, d, "{} round {round}: {value:?}", kind.name());
                    // OceanBase does not report NO_BACKSLASH_ESCAPES: a pattern with a
                    // backslash has no certain escape there
                    let certain = kind == Kind::MariaDb || !value.contains(&b'\\');
                    pinned += u64::from(value.len() > N && certain);
                }
            }
        }
        // a prepared UPDATE through the variant changes what it changes directly
        let upd = format!("UPDATE {table} SET V = CONCAT(V, 'x') WHERE K LIKE ?");
        let s = via.prep(upd.as_str()).await.expect("prepare update");
        via.exec_drop(&s, (patterns[0].clone(),))
            .await
            .expect("update");
        let changed = via.affected_rows();
        let probe = format!("SELECT COUNT(*) FROM {table} WHERE K LIKE ? AND V LIKE '%x'");
        let n: Option<u64> = direct
            .exec_first(probe.as_str(), (patterns[0].clone(),))
            .await
            .expect("count");
        assert_eq!(n, Some(changed), "{}", kind.name());
        via.close(s).await.expect("close update");
        via.close(s_via).await.expect("close");
        direct.close(s_direct).await.expect("close");
        let after: Vec<(String, String)> = via.query("SHOW PROXY STATUS").await.expect("status");
        assert!(
            pinned > 0 && count(&after) - count(&before) > pinned,
            "{}: {} rewritten, {pinned} pinning executions",
            kind.name(),
            count(&after) - count(&before)
        );
        via.disconnect().await.expect("disconnect");
        direct.disconnect().await.expect("disconnect");
    }
}

/// `EXPLAIN OBKV <statement>`: the table, its partitioning, the statement as it will be sent and
/// the partitions (the backend's and OceanBase's), without running it or counting it.
#[test]
fn explain_obkv_tells_what_the_proxy_does_without_running_it() {
    for kind in BOTH {
        let (_f, _tag, table, mut via) = one_table(kind, "o");
        let predict = |p: &[u8]| backend_partition(kind, p);
        let count = |c: &mut RawConn| c.scalar(&format!("SELECT COUNT(*) FROM {table}"));
        let cells = count(&mut via);
        let before = counter(&mut via, "prefix_rewrites");
        let rows = via.rows(&format!(
            "EXPLAIN OBKV DELETE FROM {table} WHERE K LIKE 'abcd%'; SELECT * FROM {table} WHERE K LIKE 'ab%'"
        ));
        let text = |r: &Vec<Option<Vec<u8>>>, i: usize| {
            String::from_utf8_lossy(r[i].as_deref().unwrap_or(b"NULL")).into_owned()
        };
        assert_eq!(rows.len(), 2, "{}: {rows:?}", kind.name());
        assert!(text(&rows[0], 0).contains(&table), "{}", kind.name());
        assert!(
            text(&rows[0], 1).starts_with(&format!("KEY(K_PREFIX) PARTITIONS {PARTS}")),
            "{}",
            kind.name()
        );
        assert_eq!(
            text(&rows[0], 2),
            format!("DELETE FROM {table} WHERE K LIKE 'abcd%' AND `K_PREFIX` = X'61626364'")
        );
        assert_eq!(text(&rows[0], 3), format!("p{}", predict(b"abcd")));
        assert_eq!(
            text(&rows[0], 4),
            format!("p{}", key_partition(b"abcd", Some(N), PARTS))
        );
        assert_eq!(text(&rows[1], 3), format!("all {PARTS}"));
        assert!(text(&rows[1], 5).contains("no predicate pins one prefix"));
        // nothing ran, nothing counted
        assert_eq!(count(&mut via), cells, "{}", kind.name());
        assert_eq!(counter(&mut via, "prefix_rewrites"), before);
        // what it says is sent is what EXPLAIN through the proxy plans
        let explained = explained_partitions(
            &mut via,
            kind,
            &format!("SELECT * FROM {table} WHERE K LIKE 'abcd%'"),
        );
        assert_eq!(explained, text(&rows[0], 3), "{}", kind.name());
    }
}
