//! The input of the shape targets (`shape_apply`, `shape_reading`): the first byte the
//! dialect (NO_BACKSLASH_ESCAPES, ANSI_QUOTES, a multibyte character set, plain comments; the
//! top two bits: MariaDB, OceanBase, MySQL, MySQL or OceanBase) and whether the replacements
//! are kept to what a shape takes; then a text A up to the first 0xFF byte, and bytes B after
//! it. `run` hands `check` the texts to split after earlier ones: A with the body of each of
//! its `'…'` strings and runs of digits replaced by bytes of B (any bytes: quotes,
//! backslashes, bytes >= 0x80, an empty run, so that the shape must also refuse), a second
//! such text after that one (the tokens moved twice), A after both, B, and A again.

use obkv_proxy::sql::scan::{statements_keeping_unsettled, Dialect, Kept, Tok};

pub const MAX: usize = 4097;

pub fn run(data: &[u8], check: impl Fn(&[&[u8]], &[u8], Dialect)) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let d = crate::dialects::from_flags(flags);
    let cut = rest.iter().position(|&b| b == 0xFF).unwrap_or(rest.len());
    let a = &rest[..cut];
    let b = rest.get(cut + 1..).unwrap_or_default();
    // A's literals, from its own split
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
    // A with its literals' bodies replaced by bytes of B, a few at a time (and again, a
    // different few)
    let made = refill(a, &tokens, b, 3, flags);
    let again = refill(a, &tokens, b, 7, flags);
    check(&[a], &made, d);
    check(&[a, &made], &again, d);
    check(&[a, &made, &again], a, d);
    check(&[a], b, d);
    check(&[a], a, d);
}

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
