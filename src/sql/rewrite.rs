//! The prefix-scan rewrite as text: the prefix-column predicate spliced after the last token
//! of the WHERE clause. Every other byte of the statement stays as the client sent it.
//!
//! The reader (`sql::dml`) reports predicates only when the WHERE clause is a conjunction at
//! its top level (no OR/XOR, nothing of lower precedence than AND), so ` AND <column> = …`
//! appended to it needs no parentheses: `a AND b` + ` AND c` reads as `(a AND b) AND c`.

use super::dml::Dml;
use super::splice::Splice;

/// What the spliced predicate compares the prefix column with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Values<'a> {
    /// Literal prefixes, written as `X'…'` (no character set or escape can misread them).
    Literals(&'a [&'a [u8]]),
    /// `count` placeholders (a prepared variant; the values are bound at each execution).
    Params(usize),
}

/// The predicate text: `` `col` = X'…' `` or `` `col` IN (X'…', …) ``.
pub fn predicate(column: &str, values: &Values) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(b" AND `");
    out.extend_from_slice(column.replace('`', "``").as_bytes());
    out.push(b'`');
    let items: Vec<Vec<u8>> = match values {
        Values::Literals(v) => v.iter().map(|b| hex_literal(b)).collect(),
        Values::Params(n) => (0..*n).map(|_| b"?".to_vec()).collect(),
    };
    if items.len() == 1 {
        out.extend_from_slice(b" = ");
        out.extend_from_slice(&items[0]);
    } else {
        out.extend_from_slice(b" IN (");
        out.extend_from_slice(&items.join(&b", "[..]));
        out.push(b')');
    }
    out
}

fn hex_literal(b: &[u8]) -> Vec<u8> {
    if b.is_empty() {
        // seekdb 1.4 misreads `IN (X'', X'61')` (an empty hex literal first): no rows
        return b"_binary''".to_vec();
    }
    crate::hbase::catalog::hex(b).into_bytes()
}

/// The statement `sql` (one statement, `dml` read from it) with the predicate added; `offset` is
/// where the statement starts in `text` (a multi-statement text is spliced as a whole).
pub fn add_prefix_predicate(splice: &mut Splice, offset: usize, dml: &Dml, predicate: Vec<u8>) {
    if let Some(end) = dml.where_end {
        splice.insert(offset + end, predicate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dml::{read, Read};
    use crate::sql::scan::Dialect;

    fn rewrite(sql: &str, values: Values) -> String {
        let Read::Dml(d) = read(sql.as_bytes(), Dialect::default()) else {
            panic!("not read: {sql}");
        };
        let mut s = Splice::new();
        add_prefix_predicate(&mut s, 0, &d, predicate("K_PREFIX", &values));
        String::from_utf8(s.apply(sql.as_bytes())).unwrap()
    }

    #[test]
    fn the_predicate_goes_after_the_where_clause() {
        let one: &[&[u8]] = &[b"ab\xff"];
        assert_eq!(
            rewrite(
                "SELECT * FROM g$f WHERE K LIKE 'ab%' ORDER BY K LIMIT 10",
                Values::Literals(one)
            ),
            "SELECT * FROM g$f WHERE K LIKE 'ab%' AND `K_PREFIX` = X'6162FF' ORDER BY K LIMIT 10"
        );
        let two: &[&[u8]] = &[b"a", b"b"];
        assert_eq!(
            rewrite(
                "DELETE FROM g$f WHERE K IN ('a1','b1') -- c\n",
                Values::Literals(two)
            ),
            "DELETE FROM g$f WHERE K IN ('a1','b1') AND `K_PREFIX` IN (X'61', X'62') -- c\n"
        );
        assert_eq!(
            rewrite(
                "SELECT V FROM g$f WHERE K >= ? AND K < ? FOR UPDATE",
                Values::Params(1)
            ),
            "SELECT V FROM g$f WHERE K >= ? AND K < ? AND `K_PREFIX` = ? FOR UPDATE"
        );
    }
}
