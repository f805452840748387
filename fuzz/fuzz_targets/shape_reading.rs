//! A statement of a text taken from the thread's last shape is read by the DML reader, and
//! as an INSERT's head, from the frame the shape keeps of it (`dml::Frame`,
//! `insert::HeadFrame`: only what the literals decide is read again), and each reading is
//! the one reading its tokens in full gives.
//!
//! Input as `shape_apply`'s: the first byte the dialect and whether the replacements are
//! kept to what a shape takes; then a text A up to the first 0xFF byte, and bytes B after it.
//! A is split and read (it becomes the shape and leaves its frames); then A with its literals'
//! bodies replaced by bytes of B, a second such text after that one, A after both, and B are
//! read and compared, statement by statement (and the part a wrapper runs).
#![no_main]

use libfuzzer_sys::fuzz_target;

use obkv_proxy::sql::framed::reads_after_shape;
use obkv_proxy::sql::scan::{statements_keeping_unsettled, Dialect, Flavor, Kept, Tok};

const MAX: usize = 4097;

fn check(earlier: &[&[u8]], sql: &[u8], d: Dialect) {
    let (reads, from_shape) = reads_after_shape(earlier, sql, d, MAX);
    for r in &reads {
        assert!(r.same(), "{r:?} {:?}", String::from_utf8_lossy(sql));
        // a text taken from the shape reads a SELECT, a DELETE and an INSERT's head from the
        // frame an earlier text of the shape left, when the frames' bounds leave room for all
        // of them: at most 16 statements of two parts each (a shape has no more), and 4,608
        // tokens in all (a text of at most 2,304 bytes has at most that many, parts counted
        // twice)
        if from_shape && r.framed_kind() && sql.len() <= 2304 {
            assert!(r.from_frame(), "{r:?} {:?}", String::from_utf8_lossy(sql));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (flavor, version) = match flags >> 6 {
        0 => (Flavor::MariaDb, 101119),
        1 => (Flavor::OceanBase, 50725),
        2 => (Flavor::MySql, 80030),
        _ => (Flavor::MySqlOrOceanBase, 50725),
    };
    let d = Dialect {
        flavor,
        version,
        no_backslash_escapes: flags & 1 != 0,
        ansi_quotes: flags & 2 != 0,
        multibyte_backslash: flags & 4 != 0,
        plain_comments: flags & 8 != 0,
    };
    let cut = rest.iter().position(|&b| b == 0xFF).unwrap_or(rest.len());
    let a = &rest[..cut];
    let b = rest.get(cut + 1..).unwrap_or_default();
    let mut kept = Kept::new(MAX);
    if statements_keeping_unsettled(a, d, &mut kept).is_err() {
        check(&[a], b, d);
        return;
    }
    let whole = obkv_proxy::sql::scan::Piece {
        start: 0,
        end: a.len(),
        program: false,
    };
    let Some(tokens) = kept.of(&whole).map(|t| t.into_owned()) else {
        return;
    };
    let made = refill(a, &tokens, b, 3, flags);
    let again = refill(a, &tokens, b, 7, flags);
    check(&[a], &made, d);
    check(&[a, &made], &again, d);
    check(&[a, &made, &again], a, d);
    check(&[a], b, d);
});

/// A with its literals' bodies replaced by bytes of B, `n` at a time (as `shape_apply`'s).
fn refill(
    a: &[u8],
    tokens: &[obkv_proxy::sql::scan::Token],
    b: &[u8],
    n: usize,
    flags: u8,
) -> Vec<u8> {
    let mut made = Vec::with_capacity(a.len() + b.len());
    let mut from = 0;
    let mut fill = b.chunks(n).cycle();
    for t in tokens {
        let (s, e) = match t.kind {
            Tok::Str if t.end >= t.start + 2 => (t.start + 1, t.end - 1),
            Tok::Number => (t.start, t.end),
            _ => continue,
        };
        made.extend_from_slice(&a[from..s]);
        let body = if b.is_empty() {
            &b"7"[..]
        } else {
            fill.next().unwrap_or_default()
        };
        // mostly what the shape takes: digits for digits, a string body without its quote
        let body: Vec<u8> = if flags & 16 == 0 {
            body.iter()
                .map(|&c| {
                    if t.kind == Tok::Number {
                        b'0' + c % 10
                    } else if c == b'\'' || c == b'\\' || c >= 0x80 {
                        b'a' + c % 26
                    } else {
                        c
                    }
                })
                .collect()
        } else {
            body.to_vec()
        };
        made.extend_from_slice(&body);
        from = e;
    }
    made.extend_from_slice(&a[from..]);
    made
}
