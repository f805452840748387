//! Driver probes the proxy answers for itself: today one, `@@socket`.
//!
//! Several drivers (Rust's `mysql_async` and `mysql`, `zero-mysql`) ask a server reached over
//! loopback TCP for `@@socket` right after logging in (`SELECT @@max_allowed_packet,
//! @@wait_timeout, @@socket`) and, when the path exists on their host, reconnect to it. Through
//! the proxy that path is the backend's Unix socket: a client on the backend's host would leave
//! the proxy silently, and every rule, rewrite and guard with it. So the item is spliced to the
//! proxy's own socket (`proxy.socket`), where such a driver reconnects and stays on the proxy,
//! or, when the proxy listens on TCP only, to an empty string (what drivers take for "no
//! socket"; the `mysql` crate cannot take a NULL there) — `NULLIF('<path>', '-')`, typed as the
//! variable is, a nullable string, and named as the client wrote it, so the column keeps its
//! name, its type and its nullability on both backends and only the value is the proxy's. Every other item, and every other byte of the statement,
//! is sent as it came.
//!
//! Only the probe's shape is read: `SELECT` and a list of system variables (`@@name`,
//! `@@scope.name`, each optionally aliased), an optional `;`, white space — no comment, string,
//! expression or clause. Anything else is forwarded unchanged (the rule is for drivers' probes,
//! not for a user reading the variable in a larger query).

use super::splice::Splice;

/// Longest text read as a probe (drivers' probes are under 100 bytes).
const MAX_PROBE: usize = 1024;

/// The proxy's `@@socket` as a nullable string (a bare `'…'` would be NOT NULL): its own socket's
/// path, or empty. A path that would need escaping is not offered (empty: no socket).
fn socket_value(socket: Option<&str>) -> Vec<u8> {
    let path = socket
        .filter(|p| {
            p.bytes()
                .all(|b| (0x20..0x7f).contains(&b) && b != b'\'' && b != b'\\')
        })
        .unwrap_or("");
    format!("NULLIF('{path}', '-')").into_bytes()
}

/// The text to send instead of `sql` when it is a probe of system variables that reads
/// `@@socket` (answered `socket`, the proxy's own Unix socket, or empty); None when it is
/// anything else (forward unchanged).
pub fn hide_socket(sql: &[u8], socket: Option<&str>) -> Option<Vec<u8>> {
    if sql.len() > MAX_PROBE {
        return None;
    }
    let mut r = Reader { s: sql, at: 0 };
    r.space();
    if !r.word()?.eq_ignore_ascii_case(b"SELECT") {
        return None;
    }
    let mut splice = Splice::new();
    loop {
        r.space();
        let start = r.at;
        if !r.s.get(r.at..)?.starts_with(b"@@") {
            return None;
        }
        r.at += 2;
        let mut name = r.word()?;
        if r.s.get(r.at) == Some(&b'.') {
            let scope = name;
            if !(scope.eq_ignore_ascii_case(b"session")
                || scope.eq_ignore_ascii_case(b"global")
                || scope.eq_ignore_ascii_case(b"local"))
            {
                return None;
            }
            r.at += 1;
            name = r.word()?;
        }
        let end = r.at;
        r.space();
        // an alias (`AS x`, or a bare word) names the column already
        let mut aliased = false;
        if let Some(w) = r.peek_word() {
            if w.eq_ignore_ascii_case(b"AS") {
                r.word()?;
                r.space();
            }
            if !r.peek_word().is_some_and(is_clause_word) {
                r.alias()?;
                aliased = true;
                r.space();
            }
        } else if r.s.get(r.at) == Some(&b'`') {
            r.alias()?;
            aliased = true;
            r.space();
        }
        if name.eq_ignore_ascii_case(b"socket") {
            let item = sql.get(start..end)?;
            let mut with = socket_value(socket);
            if !aliased {
                // the name the backend gives the column: the item as written (only
                // `@`, `.`, letters, digits and `_`, so no quoting is needed inside)
                with.extend_from_slice(b" AS `");
                with.extend_from_slice(item);
                with.push(b'`');
            }
            splice.replace(start, end, with);
        }
        match r.s.get(r.at) {
            Some(b',') => r.at += 1,
            _ => break,
        }
    }
    if r.s.get(r.at) == Some(&b';') {
        r.at += 1;
        r.space();
    }
    if r.at != sql.len() || splice.is_empty() {
        return None;
    }
    Some(splice.apply(sql))
}

/// Words that would start a clause where an alias could stand (`SELECT @@socket FROM …`,
/// `… LIMIT 1`): such a statement is not a probe.
fn is_clause_word(w: &[u8]) -> bool {
    [
        &b"FROM"[..],
        b"WHERE",
        b"LIMIT",
        b"INTO",
        b"UNION",
        b"GROUP",
        b"HAVING",
        b"ORDER",
        b"FOR",
        b"LOCK",
        b"WINDOW",
        b"EXCEPT",
        b"INTERSECT",
        b"PROCEDURE",
    ]
    .iter()
    .any(|c| c.eq_ignore_ascii_case(w))
}

struct Reader<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// White space only: a comment could hide an executable part, so it ends the probe.
    fn space(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn peek_word(&self) -> Option<&'a [u8]> {
        let rest = self.s.get(self.at..)?;
        let n = rest
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .unwrap_or(rest.len());
        (n > 0).then(|| &rest[..n])
    }

    fn word(&mut self) -> Option<&'a [u8]> {
        let w = self.peek_word()?;
        self.at += w.len();
        Some(w)
    }

    /// A bare word or a backquoted name (no doubled backquote inside: not a probe's shape).
    fn alias(&mut self) -> Option<()> {
        if self.s.get(self.at) == Some(&b'`') {
            let rest = self.s.get(self.at + 1..)?;
            let close = memchr::memchr(b'`', rest)?;
            if rest.get(close + 1) == Some(&b'`') {
                return None;
            }
            self.at += close + 2;
        } else {
            self.word()?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::hide_socket;

    fn hidden(sql: &str) -> Option<String> {
        hide_socket(sql.as_bytes(), None).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn the_proxys_own_socket_is_the_answer_when_it_has_one() {
        let answer = |socket| {
            hide_socket(b"SELECT @@wait_timeout, @@socket", Some(socket))
                .map(|v| String::from_utf8(v).unwrap())
        };
        assert_eq!(
            answer("/tmp/obkv-proxy-2883.sock").as_deref(),
            Some("SELECT @@wait_timeout, NULLIF('/tmp/obkv-proxy-2883.sock', '-') AS `@@socket`")
        );
        // a path that would need escaping is not offered
        for odd in ["/tmp/it's.sock", "/tmp/a\\b.sock", "/tmp/\u{e9}.sock"] {
            assert_eq!(
                answer(odd).as_deref(),
                Some("SELECT @@wait_timeout, NULLIF('', '-') AS `@@socket`"),
                "{odd}"
            );
        }
    }

    #[test]
    fn drivers_probes_get_no_socket() {
        assert_eq!(
            hidden("SELECT @@max_allowed_packet,@@wait_timeout,@@socket").as_deref(),
            Some("SELECT @@max_allowed_packet,@@wait_timeout,NULLIF('', '-') AS `@@socket`")
        );
        assert_eq!(
            hidden("select @@socket;").as_deref(),
            Some("select NULLIF('', '-') AS `@@socket`;")
        );
        assert_eq!(
            hidden(" SELECT @@GLOBAL.Socket , @@port\n").as_deref(),
            Some(" SELECT NULLIF('', '-') AS `@@GLOBAL.Socket` , @@port\n")
        );
        assert_eq!(
            hidden("SELECT @@socket AS s, @@session.socket `t`, @@socket u").as_deref(),
            Some("SELECT NULLIF('', '-') AS s, NULLIF('', '-') `t`, NULLIF('', '-') u")
        );
    }

    #[test]
    fn anything_but_a_probe_is_forwarded() {
        for sql in [
            "SELECT @@port",
            "SELECT @@max_allowed_packet, @@wait_timeout",
            "SELECT @@socket FROM dual",
            "SELECT @@socket LIMIT 1",
            "SELECT CONCAT(@@socket, 'x')",
            "SELECT @@socket, 1",
            "SELECT /*!@@socket*/",
            "SELECT @@socket /* c */",
            "SELECT @@socket; SELECT 1",
            "SELECT @@socketx",
            "SELECT @@other.socket",
            "SELECT @@socket AS",
            "SELECT @@socket AS `a``b`",
            "SELECT @@socket `unterminated",
            "SET @s = @@socket",
            "SHOW VARIABLES LIKE 'socket'",
            "SELECT @@socket,",
            "SELECT",
            "",
        ] {
            assert_eq!(hidden(sql), None, "{sql}");
        }
        let long = format!("SELECT @@socket{}", " ".repeat(2000));
        assert_eq!(hidden(&long), None);
    }
}

/// What a `SHOW [SESSION | LOCAL] STATUS [LIKE '…' | WHERE …]` asks about the connection's
/// TLS: the proxy answers `Ssl_cipher` and `Ssl_version` of the client's own connection to it
/// (the backend would describe its link to the proxy). `pattern`: the LIKE pattern, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslStatus {
    pub pattern: Option<String>,
}

/// The variables a client's own connection decides.
pub const SSL_VARIABLES: [&str; 2] = ["Ssl_cipher", "Ssl_version"];

/// Reads `sql` as a SHOW STATUS that can list `Ssl_*` variables of the session; None for
/// anything else (GLOBAL status is the server's, forwarded). Costs plain traffic one look at its
/// first non-blank bytes.
pub fn ssl_status(sql: &[u8], d: super::scan::Dialect) -> Option<SslStatus> {
    let start = sql.iter().position(|c| !c.is_ascii_whitespace())?;
    if !sql.get(start..start + 4)?.eq_ignore_ascii_case(b"show") || sql.len() > MAX_PROBE {
        return None;
    }
    let words: Vec<super::scan::Token> = super::scan::Scanner::new(sql, d)
        .map_while(Result::ok)
        .take(8)
        .collect();
    let w = |i: usize, s: &str| words.get(i).is_some_and(|t| t.is_word(sql, s));
    let mut i = 1;
    if w(i, "SESSION") || w(i, "LOCAL") {
        i += 1;
    }
    if !w(i, "STATUS") {
        return None;
    }
    let pattern = if w(i + 1, "LIKE") {
        let t = words
            .get(i + 2)
            .filter(|t| t.kind == super::scan::Tok::Str)?;
        let p = String::from_utf8(super::scan::string_value(sql, t, d)).ok()?;
        // one statement: a LIKE pattern and nothing after it but a `;`
        match words.get(i + 3) {
            None => {}
            Some(t) if t.is_punct(b';') && words.get(i + 4).is_none() => {}
            _ => return None,
        }
        Some(p)
    } else if words.get(i + 1).is_none_or(|t| t.is_punct(b';')) && words.len() <= i + 2 {
        None
    } else {
        return None; // WHERE …: the backend's
    };
    Some(SslStatus { pattern })
}

#[cfg(test)]
mod ssl_tests {
    use super::*;
    use crate::sql::scan::Dialect;

    #[test]
    fn show_status_about_tls_is_recognised() {
        let d = Dialect::default();
        let p = |s: &str| ssl_status(s.as_bytes(), d);
        assert_eq!(
            p("SHOW STATUS LIKE 'Ssl_cipher'"),
            Some(SslStatus {
                pattern: Some("Ssl_cipher".into())
            })
        );
        assert!(p("  show session status like 'ssl%';").is_some());
        assert_eq!(p("SHOW STATUS"), Some(SslStatus { pattern: None }));
        assert_eq!(p("SHOW GLOBAL STATUS LIKE 'Ssl_cipher'"), None);
        assert_eq!(p("SHOW STATUS WHERE Variable_name = 'Ssl_cipher'"), None);
        assert_eq!(p("SHOW STATUS LIKE 'Ssl_cipher'; SELECT 1"), None);
        assert_eq!(p("SELECT 1"), None);
        assert_eq!(p("SHOW TABLES"), None);
    }
}
