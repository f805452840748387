//! The lexical pre-check: a few byte scans that decide whether a statement could concern an
//! OBKV-HBase table or a proxy command. Only statements it flags may pay for a full SQL parse;
//! plain traffic costs one pass of `memchr` over the text.

use memchr::{memchr, memchr2};

/// What the pre-check saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Nothing the proxy has business with: forward unchanged.
    Plain,
    /// Mentions `$` (HBase table names are `group$family`), TABLEGROUP, PREPARE or IMMEDIATE,
    /// or is a CREATE TABLE: the router reads it.
    MaybeHbase,
    /// `SHOW PROXY ...`, `SHOW OBKV ...`, `EXPLAIN OBKV <statement>`: answered by the proxy
    /// itself; `ALTER SYSTEM ...`: OceanBase's TTL statements are answered where the backend
    /// has no TTL task (`crate::ttl`), the rest forwarded.
    ProxyCommand,
    /// A SELECT naming `@@…` and `socket`: maybe a driver's probe for the server's Unix socket,
    /// which the proxy answers for itself (`sql::probe`).
    ServerProbe,
}

pub fn classify(sql: &[u8]) -> Class {
    let start = skip_noise(sql);
    if is_proxy_command(start) {
        return Class::ProxyCommand;
    }
    // CREATE TABLE is flagged too: a K/Q/T/V table without '$' in its name earns a warning;
    // so is SQL-level dynamic SQL, whose text may be hex or sit in a variable
    if memchr(b'$', sql).is_some()
        || contains_ignore_case(sql, b"tablegroup")
        || starts_with_create_table(start)
        || contains_ignore_case(sql, b"prepare")
        || contains_ignore_case(sql, b"immediate")
    {
        return Class::MaybeHbase;
    }
    // cheapest test first: most plain traffic is not a SELECT naming `@@`
    if start
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"select"))
        && memchr::memmem::find(sql, b"@@").is_some()
        && contains_ignore_case(sql, b"socket")
    {
        return Class::ServerProbe;
    }
    Class::Plain
}

/// Skips leading white space and comments (`/* */`, `-- `, `#`).
pub fn skip_noise(mut s: &[u8]) -> &[u8] {
    loop {
        let before = s.len();
        while let Some((c, rest)) = s.split_first() {
            if c.is_ascii_whitespace() {
                s = rest;
            } else {
                break;
            }
        }
        if let Some(rest) = s.strip_prefix(b"/*") {
            s = match memchr::memmem::find(rest, b"*/") {
                Some(i) => &rest[i + 2..],
                None => &[],
            };
        } else if s.starts_with(b"-- ") || s.starts_with(b"#") {
            s = match memchr(b'\n', s) {
                Some(i) => &s[i + 1..],
                None => &[],
            };
        }
        if s.len() == before {
            return s;
        }
    }
}

fn take_word(s: &[u8]) -> (&[u8], &[u8]) {
    let end = s
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// The statement's words after leading noise, upper-cased, at most `n` of them.
pub fn leading_words(sql: &[u8], n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    let mut s = sql;
    while out.len() < n {
        s = skip_noise(s);
        let (w, rest) = take_word(s);
        if w.is_empty() {
            break;
        }
        out.push(String::from_utf8_lossy(w).to_ascii_uppercase());
        s = rest;
    }
    out
}

/// `s` starts after leading noise.
fn starts_with_create_table(s: &[u8]) -> bool {
    s.len() > 12
        && s[..6].eq_ignore_ascii_case(b"create")
        && leading_words(s, 2).get(1).is_some_and(|w| w == "TABLE")
}

/// `s` starts after leading noise.
fn is_proxy_command(s: &[u8]) -> bool {
    let second = |w: &str| leading_words(s, 2).get(1).is_some_and(|x| x == w);
    if s.len() >= 10 && s[..4].eq_ignore_ascii_case(b"show") {
        return second("PROXY") || second("OBKV");
    }
    if s.len() >= 12 && s[..5].eq_ignore_ascii_case(b"alter") {
        return second("SYSTEM");
    }
    if s.len() >= 8 && s[..3].eq_ignore_ascii_case(b"set") {
        // `SET OBKV …`: no allocation for the many other SETs
        let (w, _) = take_word(skip_noise(&s[3..]));
        return s
            .get(3)
            .is_some_and(|c| !c.is_ascii_alphanumeric() && *c != b'_')
            && w.eq_ignore_ascii_case(b"obkv");
    }
    s.len() >= 12 && s[..7].eq_ignore_ascii_case(b"explain") && second("OBKV")
}

/// The text after the first `n` words (and the noise before them).
pub fn after_words(sql: &[u8], n: usize) -> &[u8] {
    let mut s = sql;
    for _ in 0..n {
        s = skip_noise(s);
        s = take_word(s).1;
    }
    s
}

fn contains_ignore_case(hay: &[u8], needle_lower: &[u8]) -> bool {
    let first_lower = needle_lower[0];
    let first_upper = first_lower.to_ascii_uppercase();
    let mut start = 0;
    while let Some(i) = memchr2(first_lower, first_upper, &hay[start..]) {
        let at = start + i;
        if hay
            .get(at..at + needle_lower.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle_lower))
        {
            return true;
        }
        start = at + 1;
    }
    false
}

/// `w` appears in `sql` (ASCII case-insensitive), anywhere: a look, not a reading.
pub fn contains_ci(sql: &[u8], w: &[u8]) -> bool {
    !w.is_empty() && sql.windows(w.len()).any(|x| x.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_statements_stay_plain() {
        for s in [
            &b"SELECT 1"[..],
            b"insert into t values (1, 'abc')",
            b"SELECT * FROM sbtest1 WHERE id=?",
            b"\xff\xfe binary \x00 bytes",
            b"SELECT @@max_allowed_packet, @@wait_timeout",
            b"SET @s = @@socket",
            b"",
        ] {
            assert_eq!(
                classify(s),
                Class::Plain,
                "{:?}",
                String::from_utf8_lossy(s)
            );
        }
    }

    #[test]
    fn hbase_candidates_are_flagged() {
        assert_eq!(
            classify(b"create table h$f (K varbinary(1024))"),
            Class::MaybeHbase
        );
        assert_eq!(classify(b"CREATE TableGroup g1"), Class::MaybeHbase);
        assert_eq!(
            classify(b"select * from `ns`.`t$cf` where K = 'a'"),
            Class::MaybeHbase
        );
    }

    #[test]
    fn socket_probes_are_flagged() {
        for s in [
            &b"SELECT @@max_allowed_packet,@@wait_timeout,@@socket"[..],
            b"select @@global.SOCKET",
            b"/* c */ SELECT @@socket FROM dual",
        ] {
            assert_eq!(classify(s), Class::ServerProbe);
        }
    }

    #[test]
    fn proxy_commands_after_comments() {
        assert_eq!(classify(b"SHOW PROXY STATUS"), Class::ProxyCommand);
        assert_eq!(classify(b"alter system trigger ttl"), Class::ProxyCommand);
        assert_eq!(classify(b"ALTER TABLE t ADD c INT"), Class::Plain);
        assert_eq!(classify(b"ALTER SYSTEMS"), Class::Plain);
        assert_eq!(classify(b"SET OBKV HBASE_READS = ON"), Class::ProxyCommand);
        assert_eq!(
            classify(b"set /* x */ obkv hbase_reads=off"),
            Class::ProxyCommand
        );
        assert_eq!(classify(b"SET NAMES utf8mb4"), Class::Plain);
        assert_eq!(classify(b"SETOBKV x = 1"), Class::Plain);
        assert_eq!(classify(b"SET obkvx = 1"), Class::Plain);
        assert_eq!(
            classify(b"/* hi */ show   proxy status"),
            Class::ProxyCommand
        );
        assert_eq!(classify(b"-- x\nshow proxy status"), Class::ProxyCommand);
        assert_eq!(classify(b"SHOW PROXYX"), Class::Plain);
        assert_eq!(
            classify(b"explain obkv SELECT * FROM t"),
            Class::ProxyCommand
        );
        assert_eq!(classify(b"EXPLAIN OBKVX SELECT 1"), Class::Plain);
        assert_eq!(
            after_words(b" EXPLAIN /* c */ OBKV SELECT 1", 2),
            b" SELECT 1"
        );
        assert_eq!(classify(b"SHOW PROCESSLIST"), Class::Plain);
        assert_eq!(
            leading_words(b"  show proxy   status;", 5),
            vec!["SHOW", "PROXY", "STATUS"]
        );
    }
}
