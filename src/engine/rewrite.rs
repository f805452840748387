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
    let mut out = crate::sql::splice::spare(size);
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
    let name = column.as_bytes();
    // (a name without a backquote, as nearly every one is, copied at once)
    if !name.contains(&b'`') {
        out.extend_from_slice(name);
    } else {
        for &c in name {
            out.push(c);
            if c == b'`' {
                out.push(c);
            }
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

/// Reads as HBase sees them (`SET OBKV HBASE_READS = ON`): the text that replaces the table
/// reference of a single-table SELECT, a derived table of the cells within the family's
/// `TimeToLive` (by the backend's clock when the statement runs) and among the newest
/// `MaxVersions` of each (K, Q) (a window over (K, Q) ordered newest first). Inside it go the
/// statement's own K predicates (copied as written, when they hold no placeholder) and the
/// prefix predicate (`pin`), so the backend still prunes to one partition; whole cells pass
/// or fail them, so the versions are counted as without them. Keeps the table's name as the
/// derived table's alias unless the statement gave one. None: a column name the proxy cannot
/// write in the client's character set (not ASCII).
pub fn hbase_read_table(
    piece: &[u8],
    dml: &Dml,
    schema: &crate::hbase::schema::TableSchema,
    convention: crate::hbase::cells::Convention,
    pin: Option<&[u8]>,
) -> Option<Vec<u8>> {
    use crate::hbase::cells::Convention;
    let attrs = schema.attrs;
    let columns = &schema.limits.columns;
    if columns.is_empty() || !columns.iter().all(|c| c.is_ascii()) {
        return None;
    }
    let table = piece.get(dml.table_span.0..dml.table_span.1)?;
    // the inner table takes the statement's alias: K terms copied as written (`a.K`) resolve
    let alias = match dml.alias {
        Some((a, b)) => piece.get(a..b)?.to_vec(),
        None => crate::hbase::catalog::ident_bytes(&dml.table.raw_name),
    };
    let mut cols = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            cols.extend_from_slice(b", ");
        }
        cols.extend_from_slice(crate::hbase::catalog::ident(c).as_bytes());
    }
    // the inner WHERE: within the TTL by the backend's clock, the K terms, the prefix
    let mut filter = Vec::new();
    if let Some(s) = attrs.time_to_live {
        let ttl_ms = s.saturating_mul(1000).min(i64::MAX as u64 / 2);
        let now = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";
        filter.extend_from_slice(
            match convention {
                Convention::NegatedMs => format!("`T` <= -({now} - {ttl_ms})"),
                Convention::Ms => format!("`T` >= {now} - {ttl_ms}"),
            }
            .as_bytes(),
        );
    } else {
        filter.extend_from_slice(b"TRUE");
    }
    for (p, &(a, b)) in dml.preds.iter().zip(&dml.pred_spans) {
        if pred_has_param(p) {
            continue;
        }
        let Some(term) = piece.get(a..b) else {
            continue;
        };
        filter.extend_from_slice(b" AND (");
        filter.extend_from_slice(term);
        filter.push(b')');
    }
    if let Some(pin) = pin {
        filter.extend_from_slice(pin);
    }
    let mut out = Vec::with_capacity(2 * cols.len() + filter.len() + table.len() + 160);
    out.push(b'(');
    match attrs.max_versions {
        Some(m) => {
            let order = match convention {
                Convention::NegatedMs => "",
                Convention::Ms => " DESC",
            };
            out.extend_from_slice(b"SELECT ");
            out.extend_from_slice(&cols);
            out.extend_from_slice(b" FROM (SELECT ");
            out.extend_from_slice(&cols);
            out.extend_from_slice(
                format!(", ROW_NUMBER() OVER (PARTITION BY `K`, `Q` ORDER BY `T`{order}) AS `obkv_version` FROM ")
                    .as_bytes(),
            );
            out.extend_from_slice(table);
            out.extend_from_slice(b" AS ");
            out.extend_from_slice(&alias);
            out.extend_from_slice(b" WHERE ");
            out.extend_from_slice(&filter);
            out.extend_from_slice(
                format!(") AS `obkv_cells` WHERE `obkv_version` <= {m}").as_bytes(),
            );
        }
        None => {
            out.extend_from_slice(b"SELECT ");
            out.extend_from_slice(&cols);
            out.extend_from_slice(b" FROM ");
            out.extend_from_slice(table);
            out.extend_from_slice(b" AS ");
            out.extend_from_slice(&alias);
            out.extend_from_slice(b" WHERE ");
            out.extend_from_slice(&filter);
        }
    }
    out.push(b')');
    if dml.alias.is_none() {
        out.extend_from_slice(b" AS ");
        out.extend_from_slice(&alias);
    }
    Some(out)
}

fn pred_has_param(p: &crate::sql::dml::Pred) -> bool {
    use crate::sql::dml::{Operand, Pred};
    let param = |o: &Operand| matches!(o, Operand::Param(_));
    match p {
        Pred::Eq(o) => param(o),
        Pred::In(v) => v.iter().any(param),
        Pred::Like { pattern, .. } => param(pattern),
        Pred::Lower { bound, .. } | Pred::Upper { bound, .. } => param(bound),
        Pred::Between(a, b) => param(a) || param(b),
        Pred::Left { value, .. } => param(value),
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
        assert_eq!(placeholder_predicate("``x`", 1), b" AND `````x``` = ?");
    }
}
