//! Issue 31: the proxy reads comments as each real backend reads them. Every form below is run
//! directly on the backend and read by the proxy's scanner under the backend's dialect; the
//! scanner's tokens must give the value the backend computed. A backend version that changes
//! its rules fails here, not in production.

use obkv_proxy::sql::scan::{Dialect, Flavor, Scanner, Tok};

use crate::common::raw::RawConn;
use crate::common::{shared, Kind, BOTH};

fn dialect(kind: Kind, c: &RawConn) -> Dialect {
    let d = Dialect::from_server_version(&c.greeting.server_version);
    match kind {
        Kind::MariaDb => {
            assert_eq!(d.flavor, Flavor::MariaDb);
            d
        }
        Kind::SeekDb => Dialect {
            flavor: Flavor::OceanBase,
            ..d
        },
    }
}

fn tokens(sql: &[u8], d: Dialect) -> Vec<String> {
    lexed(sql, d).expect("lexes")
}

/// The scanner's tokens, as text (quoted ones in `<…>`); None where it cannot lex the text.
fn lexed(sql: &[u8], d: Dialect) -> Option<Vec<String>> {
    Scanner::new(sql, d)
        .map(|t| {
            let t = t.ok()?;
            let text = String::from_utf8_lossy(t.text(sql)).into_owned();
            Some(match t.kind {
                Tok::Punct(_) | Tok::Word | Tok::Number => text,
                _ => format!("<{text}>"),
            })
        })
        .collect()
}

/// What the backend answers to a one-value SELECT: its value, or None for an error.
fn value(c: &mut RawConn, sql: &[u8]) -> Option<String> {
    let sql = std::str::from_utf8(sql).expect("ASCII");
    c.rows_or_error(sql)
        .ok()
        .map(|r| String::from_utf8_lossy(r[0][0].as_deref().unwrap_or(b"NULL")).into_owned())
}

#[test]
fn executable_comments_run_as_each_backend_runs_them() {
    let digits = [
        "", "0", "1", "12", "123", "1234", "00000", "12345", "40000", "50700", "50725", "50726",
        "99999", "000000", "100000", "101119", "101120", "999999", "1234567", "12345678",
    ];
    for kind in BOTH {
        let mut c = RawConn::connect(&shared(kind).addr, "root", "", None).expect("direct");
        let d = dialect(kind, &c);
        let plain = Dialect {
            plain_comments: true,
            ..d
        };
        for opener in ["/*!", "/*M!"] {
            for n in digits {
                // every reading parses: `SELECT 10`, `SELECT - 10` or `SELECT <digits> - 10`
                let sql = format!("SELECT {opener}{n} - */ 10");
                let got = value(&mut c, sql.as_bytes());
                let t = tokens(sql.as_bytes(), d);
                let want = match t.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                    ["SELECT", "10"] => 10,
                    ["SELECT", "-", "10"] => -10,
                    ["SELECT", n, "-", "10"] => n.parse::<i64>().expect("a number") - 10,
                    ref other => panic!("{sql}: read as {other:?}"),
                };
                assert_eq!(got, Some(want.to_string()), "{}: {sql}: {t:?}", kind.name());
                // where the code does not parse, OceanBase reads the comment as a comment
                // (`Dialect::plain_comments`); MariaDB has no such reading
                let sql = format!("SELECT 1 {opener}{n} +1 */");
                let got = value(&mut c, sql.as_bytes());
                let code = tokens(sql.as_bytes(), d);
                let want = if code == ["SELECT", "1", "+", "1"] {
                    "2"
                } else if kind == Kind::SeekDb {
                    assert_eq!(tokens(sql.as_bytes(), plain), ["SELECT", "1"], "{sql}");
                    "1"
                } else if code == ["SELECT", "1"] {
                    "1"
                } else {
                    // MariaDB runs code that does not parse: its syntax error
                    assert_eq!(got, None, "{sql}: {code:?}");
                    continue;
                };
                assert_eq!(
                    got.as_deref(),
                    Some(want),
                    "{}: {sql}: {code:?}",
                    kind.name()
                );
            }
        }
    }
}

/// Line comments end where each backend ends them: at LF, and on OceanBase at CR too.
#[test]
fn line_comments_end_where_each_backend_ends_them() {
    for kind in BOTH {
        let mut c = RawConn::connect(&shared(kind).addr, "root", "", None).expect("direct");
        let d = dialect(kind, &c);
        for opener in ["#", "-- ", "--\t"] {
            for end in ["\n", "\r", "\r\n"] {
                let sql = format!("SELECT 1 {opener}x{end}+7");
                let got = value(&mut c, sql.as_bytes()).expect("runs");
                let want = match &tokens(sql.as_bytes(), d)[..] {
                    [s, one] if s == "SELECT" && one == "1" => "1",
                    [s, one, plus, seven]
                        if s == "SELECT" && one == "1" && plus == "+" && seven == "7" =>
                    {
                        "8"
                    }
                    other => panic!("{sql:?}: read as {other:?}"),
                };
                assert_eq!(got, want, "{}: {sql:?}", kind.name());
            }
        }
    }
}

#[test]
fn dash_comments_open_on_the_bytes_each_backend_opens_them_on() {
    for kind in BOTH {
        let mut c = RawConn::connect(&shared(kind).addr, "root", "", None).expect("direct");
        let d = dialect(kind, &c);
        let mut opened = Vec::new();
        for b in 0u8..0x80 {
            if b == b'\n' {
                continue; // ends the comment it opens: `SELECT 1 \n7` reads either way
            }
            // a comment leaves `SELECT 1`; as code it is `1 - - <b><tail>`, which the same
            // text with a space between the dashes shows (a tail for which that is not 1:
            // `1 - -!7` is 1)
            let form = |dashes: &[u8], tail: &[u8]| {
                let mut sql = b"SELECT 1 ".to_vec();
                sql.extend_from_slice(dashes);
                sql.push(b);
                sql.extend_from_slice(tail);
                sql
            };
            let tail: &[u8] = [&b"7"[..], b"0+5"]
                .into_iter()
                .find(|tail| value(&mut c, &form(b"- -", tail)).as_deref() != Some("1"))
                .expect("a tail that tells them apart");
            let sql = form(b"--", tail);
            let backend = value(&mut c, &sql).as_deref() == Some("1");
            // (a quote after the dashes that does not end: neither reads it)
            let scanner = lexed(&sql, d).is_some_and(|t| t == ["SELECT", "1"]);
            assert_eq!(scanner, backend, "{}: byte {b:#04x}", kind.name());
            if backend {
                opened.push(b);
            }
        }
        // what was measured when the rule was written (on seekdb CR opens a comment too, and
        // ends it at once: `SELECT 1 --\r7` is `SELECT 1 7`)
        let want: Vec<u8> = match kind {
            Kind::MariaDb => (1..=b' ').chain([0x7F]).filter(|&b| b != b'\n').collect(),
            Kind::SeekDb => vec![b'\t', b' '],
        };
        assert_eq!(opened, want, "{}", kind.name());
    }
}
