//! The prefix-scan rewrite as text: the prefix-column predicate spliced after the last token
//! of the WHERE clause. Every other byte of the statement stays as the client sent it.
//!
//! The reader (`sql::dml`) reports predicates only when the WHERE clause is a conjunction at
//! its top level (no OR/XOR, nothing of lower precedence than AND), so ` AND <column> = …`
//! appended to it needs no parentheses: `a AND b` + ` AND c` reads as `(a AND b) AND c`.

use crate::sql::dml::Dml;
use crate::sql::splice::Splice;

/// The predicate text: `` AND `col` = X'…' `` or `` AND `col` IN (X'…', …) `` (written in one
/// buffer sized up front).
pub fn predicate(column: &str, prefixes: &[&[u8]]) -> Vec<u8> {
    let size = 16 + 2 * column.len() + prefixes.iter().map(|p| 2 * p.len() + 11).sum::<usize>();
    let mut out = Vec::with_capacity(size);
    push_column(&mut out, column);
    if let [one] = prefixes {
        out.extend_from_slice(b" = ");
        push_hex_literal(&mut out, one);
    } else {
        out.extend_from_slice(b" IN (");
        for (i, p) in prefixes.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            push_hex_literal(&mut out, p);
        }
        out.push(b')');
    }
    out
}

/// `` AND `col` `` (a backquote inside the name doubled).
fn push_column(out: &mut Vec<u8>, column: &str) {
    out.extend_from_slice(b" AND `");
    for &c in column.as_bytes() {
        out.push(c);
        if c == b'`' {
            out.push(c);
        }
    }
    out.push(b'`');
}

/// The variant's predicate for a prepared statement: `` AND `col` = ? `` or `IN (?, …)` with
/// `k` placeholders.
pub fn placeholder_predicate(column: &str, k: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + 2 * column.len() + 3 * k);
    push_column(&mut out, column);
    if k == 1 {
        out.extend_from_slice(b" = ?");
    } else {
        out.extend_from_slice(b" IN (");
        for i in 0..k {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            out.push(b'?');
        }
        out.push(b')');
    }
    out
}

fn push_hex_literal(out: &mut Vec<u8>, b: &[u8]) {
    if b.is_empty() {
        // seekdb 1.4 misreads `IN (X'', X'61')` (an empty hex literal first): no rows
        out.extend_from_slice(b"_binary''");
        return;
    }
    crate::hbase::catalog::push_hex(out, b);
}

/// Adds the predicate to the statement `dml` was read from; `offset` is where that statement
/// starts in the text (a multi-statement text is spliced as a whole). False without a WHERE.
pub fn add_prefix_predicate(
    splice: &mut Splice,
    offset: usize,
    dml: &Dml,
    predicate: Vec<u8>,
) -> bool {
    match dml.where_end {
        Some(end) => {
            splice.insert(offset + end, predicate);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dml::{read, Read};
    use crate::sql::scan::Dialect;

    fn rewrite(sql: &str, prefixes: &[&[u8]]) -> String {
        let Read::Dml(d) = read(sql.as_bytes(), Dialect::default()) else {
            panic!("not read: {sql}");
        };
        let mut s = Splice::new();
        assert!(add_prefix_predicate(
            &mut s,
            0,
            &d,
            predicate("K_PREFIX", prefixes)
        ));
        String::from_utf8(s.apply(sql.as_bytes())).unwrap()
    }

    #[test]
    fn the_predicate_goes_after_the_where_clause() {
        assert_eq!(
            rewrite(
                "SELECT * FROM g$f WHERE K LIKE 'ab%' ORDER BY K LIMIT 10",
                &[b"ab\xff"]
            ),
            "SELECT * FROM g$f WHERE K LIKE 'ab%' AND `K_PREFIX` = X'6162FF' ORDER BY K LIMIT 10"
        );
        assert_eq!(
            rewrite(
                "DELETE FROM g$f WHERE K IN ('a1','b1') -- c\n",
                &[b"a", b"b"]
            ),
            "DELETE FROM g$f WHERE K IN ('a1','b1') AND `K_PREFIX` IN (X'61', X'62') -- c\n"
        );
        assert_eq!(
            rewrite("SELECT V FROM g$f WHERE K = '' FOR UPDATE", &[b""]),
            "SELECT V FROM g$f WHERE K = '' AND `K_PREFIX` = _binary'' FOR UPDATE"
        );
        assert_eq!(
            predicate("a`b", &[b"x", b""]),
            b" AND `a``b` IN (X'78', _binary'')"
        );
        assert_eq!(placeholder_predicate("a`b", 2), b" AND `a``b` IN (?, ?)");
    }
}
