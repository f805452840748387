//! The same bytes under every state the backend may read them in (issue 31): backslash escapes
//! or NO_BACKSLASH_ESCAPES, ANSI_QUOTES or not, a multibyte character set (gbk, big5, sjis) or
//! not, MariaDB's or OceanBase's executable comments, and OceanBase's reading of them as plain
//! comments where its code does not parse.
//!
//! 1. Under each state, the scanner finds the same statement ends (`;`) and quoted runs as a
//!    reference reader written apart from it, byte by byte as the servers' lexers go.
//! 2. The proxy, which knows the backend's family and NO_BACKSLASH_ESCAPES but not the rest,
//!    either refuses the text or decides as it would if it knew the state.
//!
//! First byte: the backend family (low two bits: MariaDB, OceanBase, not yet told apart),
//! NO_BACKSLASH_ESCAPES, and the state the proxy does not know (ANSI_QUOTES, a multibyte
//! character set, OceanBase's plain-comment reading); the rest is the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod tables;

use obkv_proxy::engine::decision::{Answer, Decision};
use obkv_proxy::engine::prefix_scan::ConnCharset;
use obkv_proxy::engine::router::{decide, decide_as_read, Context, Origin};
use obkv_proxy::engine::write::{Txn, WriteRules};
use obkv_proxy::sql::classify::Class;
use obkv_proxy::sql::scan::{Dialect, Flavor, Scanner, Tok};

/// What the reading of a text must agree on: where statements may end and what is quoted.
#[derive(Debug, PartialEq, Eq)]
enum Mark {
    Semi(usize),
    Quoted(usize, usize),
}

fn lead(c: u8) -> bool {
    (0x81..=0xFE).contains(&c)
}

fn trail(c: u8) -> bool {
    (0x40..=0x7E).contains(&c) || (0x80..=0xFE).contains(&c)
}

fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// The reference: one pass over the bytes with the servers' rules written out plainly.
struct Reference<'a> {
    sql: &'a [u8],
    d: Dialect,
}

impl Reference<'_> {
    fn at(&self, i: usize) -> Option<u8> {
        self.sql.get(i).copied()
    }

    /// A two-byte character of a multibyte character set starts at `i`.
    fn pair(&self, i: usize) -> bool {
        self.d.multibyte_backslash
            && self.at(i).is_some_and(lead)
            && self.at(i + 1).is_some_and(trail)
    }

    /// The end of a quoted run opened at `i`, None when it does not end.
    fn quoted(&self, i: usize, q: u8, escapes: bool) -> Option<usize> {
        let mut j = i + 1;
        loop {
            let c = self.at(j)?;
            if self.pair(j) {
                j += 2;
            } else if c == b'\\' && escapes {
                self.at(j + 1)?;
                j += 2;
            } else if c == q {
                if self.at(j + 1) == Some(q) {
                    j += 2;
                } else {
                    return Some(j + 1);
                }
            } else {
                j += 1;
            }
        }
    }

    /// Where the code of an executable comment whose body starts at `body` begins, if the
    /// server runs it (MariaDB 10.11.19 and OceanBase 4.3 / seekdb 1.4, as measured).
    fn code_at(&self, body: usize) -> Option<usize> {
        let (start, maria_only) = match (self.at(body), self.at(body + 1)) {
            (Some(b'!'), _) => (body + 1, false),
            (Some(b'M'), Some(b'!')) => (body + 2, true),
            _ => return None,
        };
        if self.d.plain_comments {
            return None;
        }
        let digits = self.sql[start..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let number = |n: usize| -> u32 {
            std::str::from_utf8(&self.sql[start..start + n])
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(u32::MAX)
        };
        match self.d.flavor {
            Flavor::MariaDb => match digits {
                0..=4 => Some(start),
                n => {
                    let n = n.min(6);
                    let v = number(n);
                    (v <= 101119 && (maria_only || v < 50700 || v > 99999)).then_some(start + n)
                }
            },
            _ if maria_only => None,
            Flavor::OceanBase => Some(if digits < 5 { start } else { start + 5 }),
            _ => match digits {
                0..=4 => Some(start),
                5 => (number(5) <= 50725).then_some(start + 5),
                _ => (number(6) <= 50725).then_some(start + 6),
            },
        }
    }

    /// Whether the comment whose body starts at `body` is a version comment (five or more
    /// digits) the server skips: MariaDB and MySQL skip it with one level of comment allowed
    /// inside (their `consume_comment(lip, 1)`).
    fn skipped_version(&self, body: usize) -> bool {
        let start = match (self.at(body), self.at(body + 1)) {
            (Some(b'!'), _) => body + 1,
            (Some(b'M'), Some(b'!')) if self.d.flavor == Flavor::MariaDb => body + 2,
            _ => return false,
        };
        let five = (start..start + 5).all(|k| self.at(k).is_some_and(|c| c.is_ascii_digit()));
        !self.d.plain_comments
            && self.d.flavor != Flavor::OceanBase
            && five
            && self.code_at(body).is_none()
    }

    /// The end of a skipped version comment from `from` (after its `/*`): a `/*` inside opens
    /// a comment that the next `*/` closes; the first `*/` outside one closes it.
    fn skipped_end(&self, from: usize) -> usize {
        let mut inner = false;
        let mut k = from;
        while k < self.sql.len() {
            let pair = (self.at(k), self.at(k + 1));
            if pair == (Some(b'*'), Some(b'/')) {
                if !inner {
                    return k + 2;
                }
                inner = false;
                k += 2;
            } else if !inner && pair == (Some(b'/'), Some(b'*')) {
                inner = true;
                k += 2;
            } else {
                k += 1;
            }
        }
        self.sql.len()
    }

    fn dash_comment(&self, c: Option<u8>) -> bool {
        match (self.d.flavor, c) {
            (_, None) => true,
            (Flavor::OceanBase, Some(c)) => matches!(c, b' ' | b'\t' | b'\n' | b'\r'),
            (_, Some(c)) => (1..=b' ').contains(&c) || c == 0x7F,
        }
    }

    /// After the end of a line comment: LF, or on OceanBase CR too.
    fn to_line_end(&self, i: usize) -> usize {
        let ob = self.d.flavor == Flavor::OceanBase;
        self.sql[i..]
            .iter()
            .position(|&c| c == b'\n' || (ob && c == b'\r'))
            .map_or(self.sql.len(), |j| i + j + 1)
    }

    /// A run of a word or a variable's name from `i`.
    fn run(&self, mut i: usize, part: impl Fn(u8) -> bool) -> usize {
        loop {
            if self.pair(i) {
                i += 2;
            } else if self.at(i).is_some_and(&part) {
                i += 1;
            } else {
                return i;
            }
        }
    }

    fn marks(&self) -> Option<Vec<Mark>> {
        let escapes = !self.d.no_backslash_escapes;
        let mut out = Vec::new();
        let mut in_code = false;
        let mut i = 0;
        while let Some(c) = self.at(i) {
            let next = self.at(i + 1);
            if c == b'#' || (c == b'-' && next == Some(b'-') && self.dash_comment(self.at(i + 2))) {
                i = self.to_line_end(i);
            } else if c == b'*' && in_code && next == Some(b'/') {
                in_code = false;
                i += 2;
            } else if c == b'/' && next == Some(b'*') {
                // inside code MariaDB takes a `/*!` for a version comment again
                let versioned = !in_code || self.d.flavor == Flavor::MariaDb;
                match versioned.then(|| self.code_at(i + 2)).flatten() {
                    Some(code) => {
                        in_code = true;
                        i = code;
                    }
                    None if versioned && self.skipped_version(i + 2) => {
                        i = self.skipped_end(i + 2);
                    }
                    None => {
                        i = self.sql[i + 2..]
                            .windows(2)
                            .position(|w| w == b"*/")
                            .map_or(self.sql.len(), |j| i + 2 + j + 2);
                    }
                }
            } else if (c == b'x' || c == b'X') && next == Some(b'\'') {
                let end = self.sql[i + 2..].iter().position(|&c| c == b'\'')?;
                i += 2 + end + 1;
            } else if c == b'\'' || c == b'"' || c == b'`' {
                let name = c == b'`' || (c == b'"' && self.d.ansi_quotes);
                let end = self.quoted(i, c, escapes && !name)?;
                out.push(Mark::Quoted(i, end));
                i = end;
            } else if c == b'@' {
                let mut j = i + 1;
                if self.at(j) == Some(b'@') {
                    j += 1;
                }
                match self.at(j) {
                    Some(q @ (b'\'' | b'"')) => {
                        let end = self.quoted(j, q, escapes)?;
                        out.push(Mark::Quoted(j, end));
                        i = end;
                    }
                    Some(b'`') => {
                        let end = self.quoted(j, b'`', false)?;
                        out.push(Mark::Quoted(j, end));
                        i = end;
                    }
                    _ => {
                        i = self.run(j, |c| {
                            c.is_ascii_alphanumeric() || b"_$.".contains(&c) || c >= 0x80
                        })
                    }
                }
            } else if c == b';' {
                out.push(Mark::Semi(i));
                i += 1;
            } else if c == b'0' && next == Some(b'x') {
                // 0x…: digits, or a word (`0x1g`): no quote or `;` either way
                i = self.run(i, word_byte);
            } else if c.is_ascii_digit() {
                // digits and dots, then what follows them as a word
                while self.at(i).is_some_and(|c| c.is_ascii_digit() || c == b'.') {
                    i += 1;
                }
                if matches!(self.at(i), Some(b'e' | b'E'))
                    && self
                        .at(i + 1)
                        .is_some_and(|c| c.is_ascii_digit() || c == b'+' || c == b'-')
                {
                    i += 2;
                    while self.at(i).is_some_and(|c| c.is_ascii_digit()) {
                        i += 1;
                    }
                }
                i = self.run(i, word_byte);
            } else if word_byte(c) {
                i = self.run(i, word_byte);
            } else {
                i += 1;
            }
        }
        Some(out)
    }
}

/// The scanner's marks under the same state.
fn scanned(sql: &[u8], d: Dialect) -> Option<Vec<Mark>> {
    let mut out = Vec::new();
    for t in Scanner::new(sql, d) {
        let t = t.ok()?;
        match t.kind {
            Tok::Punct(b';') => out.push(Mark::Semi(t.start)),
            Tok::Str | Tok::QuotedIdent => out.push(Mark::Quoted(t.start, t.end)),
            Tok::Var => {
                let raw = &sql[t.start..t.end];
                let name = t.start + raw.iter().position(|&c| c != b'@').unwrap_or(raw.len());
                if matches!(sql.get(name), Some(b'\'' | b'"' | b'`')) {
                    out.push(Mark::Quoted(name, t.end));
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// What a decision does, as far as the rules are concerned: sent whole (and the transaction's
/// partition after it) or cut short by a refusal (and where), refused, answered, DDL, dynamic
/// SQL.
fn effect(d: &Decision) -> (u8, String) {
    match d {
        // cut short: the statements before the refused one run, so the bytes sent must be
        // the same (which statement is refused, and why, may differ)
        Decision::Send(w) if w.refused.is_some() => (1, format!("{:?}", w.text)),
        Decision::Send(w) => (0, format!("{:?}", w.txn_after)),
        Decision::Answer(Answer::Refuse(_)) => (2, String::new()),
        Decision::Answer(a) => (3, format!("{a:?}")),
        Decision::Ddl(_) => (4, String::new()),
        Decision::Need(_) => (5, String::new()),
        Decision::Dynamic(_) => (6, String::new()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, sql)) = data.split_first() else {
        return;
    };
    let (flavor, version) = match flags & 3 {
        0 => (Flavor::MariaDb, 101119),
        1 => (Flavor::OceanBase, 50725),
        _ => (Flavor::MySqlOrOceanBase, 50725),
    };
    let known = Dialect {
        flavor,
        version,
        no_backslash_escapes: flags & 4 != 0,
        ..Dialect::default()
    };
    // the state the backend is in, which the proxy is not told
    let truth = Dialect {
        // a backend not yet told apart is one of the two
        flavor: match flavor {
            Flavor::MySqlOrOceanBase if flags & 64 != 0 => Flavor::OceanBase,
            Flavor::MySqlOrOceanBase => Flavor::MySql,
            f => f,
        },
        ansi_quotes: flags & 8 != 0,
        multibyte_backslash: flags & 16 != 0,
        plain_comments: false,
        ..known
    };
    // OceanBase's other reading: its executable comments as plain comments
    let truth = Dialect {
        plain_comments: flags & 32 != 0 && truth.flavor == Flavor::OceanBase,
        ..truth
    };
    // 1. the scanner reads as the reference reads, under the true state
    let reference = Reference { sql, d: truth }.marks();
    assert_eq!(scanned(sql, truth), reference, "{truth:?}");

    // 2. the proxy refuses, or does what it would do knowing the state
    // the connection's character set as the session knows it: one that may have two-byte
    // characters when the backend reads them so, else that or UTF-8
    let charset = if truth.multibyte_backslash || flags & 32 != 0 {
        ConnCharset::Other
    } else {
        ConnCharset::Utf8
    };
    let ctx = Context {
        dialect: known,
        strict: true,
        scope: tables::scope(),
        tables: Some(tables::view(Some(charset), true)),
        rewrite: true,
        writes: Some(WriteRules {
            now_ms: 1_763_700_000_000,
            ..WriteRules::default()
        }),
        txn: Txn {
            active: flags & 128 != 0,
            pinned: None,
        },
        ..Context::default()
    };
    let (class, got) = decide(sql, Origin::Text, &ctx);
    if class != Class::MaybeHbase || matches!(got, Decision::Answer(Answer::Refuse(_))) {
        return;
    }
    let Some(truly) = decide_as_read(sql, Origin::Text, &ctx, truth) else {
        return; // the backend runs nothing of the text in that state
    };
    if matches!(got, Decision::Need(_)) || matches!(truly, Decision::Need(_)) {
        return;
    }
    assert_eq!(
        effect(&got),
        effect(&truly),
        "{truth:?}: {got:?} / {truly:?}"
    );
});
