//! One statement of a text: INSERT / REPLACE (the cell rules row by row, T filled in where it
//! is left out), UPDATE / DELETE / a locking SELECT, and an UPDATE in any shape.

use super::checked::{
    check_assigned_v, col_is, plain_seen, rowkey, seen, seen_fast, unchecked, where_rows, Checked,
    NeedCharset, RowTrace, Rows, Touch, WriteRules, MAX_FINDINGS,
};
use std::ops::ControlFlow;
use std::sync::Arc;

use crate::engine::prefix_scan::ConnCharset;
use crate::hbase::cells::{self, Cell, Convention, Seen};
use crate::hbase::rules::{Enforcement, Finding, Level, Rule};
use crate::hbase::schema::TableSchema;
use crate::protocol::constants::er;
use crate::sql::dml::{Dml, Verb};
use crate::sql::insert::{self, Source, Value};
use crate::sql::scan::Dialect;
use crate::sql::splice::Splice;

/// How an INSERT that leaves T out gets one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillT {
    /// The statement's time as a literal (a text statement runs once).
    Literal,
    /// An expression the backend evaluates at each execution (a prepared statement).
    Expression,
}

/// T = now in `convention`, computed by the backend (the same for every row of a statement).
fn now_expression(convention: Convention) -> &'static [u8] {
    match convention {
        Convention::NegatedMs => b"-CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
        Convention::Ms => b"CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    }
}

/// A rowkey's first `n` bytes (all of it when shorter): what the prefix column holds.
fn prefix_of(k: &[u8], n: usize) -> &[u8] {
    k.get(..n).unwrap_or(k)
}

/// INSERT / REPLACE of `piece` on `schema`'s table: the cell rules for every row, the T it
/// leaves out spliced in (`splice`, offsets relative to `base`), and where its rows are.
/// Err when a literal's bytes depend on a character set the session has not read yet.
#[allow(clippy::too_many_arguments)]
pub fn check_insert(
    piece: &[u8],
    d: Dialect,
    schema: &TableSchema,
    rules: &WriteRules,
    conn: Option<ConnCharset>,
    settled: bool,
    splice: &mut Splice,
    base: usize,
    fill: FillT,
    trace: Option<&mut RowTrace>,
) -> Result<Checked, NeedCharset> {
    let at = (splice, base, fill);
    check_insert_lexed(
        piece,
        (None, None),
        d,
        schema,
        rules,
        conn,
        settled,
        at,
        trace,
    )
}

/// Where K, Q, T and V are among `names` (the first of each, as ASCII case-insensitive
/// names): one pass over them.
fn kqtv_at<'n>(names: impl Iterator<Item = &'n [u8]>) -> [Option<usize>; 4] {
    let mut at = [None; 4];
    for (i, name) in names.enumerate() {
        let j = match name {
            [b'K' | b'k'] => 0,
            [b'Q' | b'q'] => 1,
            [b'T' | b't'] => 2,
            [b'V' | b'v'] => 3,
            _ => continue,
        };
        if let Some(slot @ None) = at.get_mut(j) {
            *slot = Some(i);
        }
    }
    at
}

/// Where K, Q, T and V are among the values an INSERT's rows give (by its column list, else
/// the table's columns), and where the prefix column is, with the prefix's length and K's
/// place (None: the rows do not give it).
#[allow(clippy::type_complexity)]
fn columns_at(
    head: &insert::Insert,
    schema: &TableSchema,
) -> ([Option<usize>; 4], Option<(usize, usize, Option<usize>)>) {
    let limits = &schema.limits;
    let position = |name: &str| match &head.columns {
        Some(c) => c.iter().position(|c| col_is(c, name)),
        None => limits
            .columns
            .iter()
            .position(|c| col_is(c.as_bytes(), name)),
    };
    let at = match &head.columns {
        Some(c) => kqtv_at(c.iter().map(|c| &c[..])),
        None => kqtv_at(limits.columns.iter().map(|c| c.as_bytes())),
    };
    let prefix = schema
        .prefix_column
        .as_ref()
        .and_then(|(p, n)| position(p).map(|i| (i, *n, at[0])));
    (at, prefix)
}

/// `check_insert`, over the statement's tokens when the text's split kept them
/// (`scan::Kept::of`; None: the statement is lexed), going on after the head the router read
/// over them when there is one (`insert::read_lexed_after`).
#[allow(clippy::too_many_arguments)]
pub fn check_insert_lexed(
    piece: &[u8],
    (lexed, read_head): (Option<&[crate::sql::scan::Token]>, Option<insert::Head>),
    d: Dialect,
    schema: &TableSchema,
    rules: &WriteRules,
    conn: Option<ConnCharset>,
    settled: bool,
    (splice, base, fill): (&mut Splice, usize, FillT),
    mut trace: Option<&mut RowTrace>,
) -> Result<Checked, NeedCharset> {
    let limits = &schema.limits;
    let strict = rules.cells == Enforcement::Strict;
    let mut findings: Vec<Finding> = Vec::new();
    // (each statement of a text draws its own sample: the seed is the text's, mixed with
    // where the statement starts, so a text of one-row INSERTs is not all taken or none)
    let mut rows = Rows::new(schema).observing(rules.observe.part(base));
    let mut need_charset = false;
    let mut auto_t: Option<Vec<u8>> = None;
    let mut positions: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut head_checked = false;
    // where K, Q, T and V are among the values a row gives (read once from the head)
    let mut at_kqtv: [Option<usize>; 4] = [None; 4];
    // where a row's prefix column value is, and the prefix length
    // (the prefix column's index, n, K's index) among the columns the rows give
    let mut prefix_at: Option<(usize, usize, Option<usize>)> = None;
    let mut defaults: Vec<(usize, usize)> = Vec::new();
    // a row laid out after the head the router read is handed with K, Q, T and V in their
    // plain form when they are plain strings and integers (`insert::Plain`): no `Value` and
    // no `Seen` conversion for them. Not where the rows carry the prefix column (checked
    // against K from the row's values), nor on a connection whose character set does not
    // keep ASCII (there a string is not its bytes).
    // (the head given, held until the first row so that the reading's head is known to be
    // it when it is the same one, and where its columns are: worked out once, for the pick
    // and for the rows; let go then, so a tail that adds to the head does not copy it)
    let mut given = match &read_head {
        Some(h) if h.insert.source == Source::Values => {
            Some((Arc::clone(&h.insert), columns_at(&h.insert, schema)))
        }
        _ => None,
    };
    // the rows the head's frame counted plain are as many keyed rows for the advisor at least:
    // their list is made that long at once, not grown row by row
    if let Some(h) = &read_head {
        rows.expect_rows(h.plain_rows() as usize);
    }
    let pick = match &given {
        Some((_, (at, None))) if conn != Some(ConnCharset::Wide) => Some(*at),
        _ => None,
    };
    let read = insert::read_lexed_picking(piece, d, lexed, read_head, pick, |head, row| {
        if !head_checked {
            head_checked = true;
            (at_kqtv, prefix_at) = match given.take() {
                Some((h, at)) if std::ptr::eq(head, Arc::as_ptr(&h)) => at,
                _ => columns_at(head, schema),
            };
            // a VALUES row may carry the prefix column's value (a backup restores it): checked
            // row by row below; any other source or form writes it unchecked
            if head.source != Source::Values {
                findings.extend(cells::check_prefix_column_written(
                    head.columns.as_deref().unwrap_or_default(),
                    limits,
                ));
            }
            let has_t = at_kqtv[2].is_some();
            if !has_t && head.columns.is_some() {
                let t = match fill {
                    FillT::Literal => rules
                        .convention
                        .encode(rules.now_ms)
                        .to_string()
                        .into_bytes(),
                    FillT::Expression => now_expression(rules.convention).to_vec(),
                };
                if head.source == Source::Values {
                    if let Some(close) = head.columns_close {
                        positions.push((close, b", T".to_vec()));
                    }
                }
                auto_t = Some(t);
            }
        }
        // K, Q, T and V (0 to 3) as the row gives them
        let cell = match row.plain {
            // (what `seen_fast` makes of their `Value`s: `Plain::Ascii` is an ASCII string of
            // the connection's character set, which is not a wide one here)
            Some(p) => Cell {
                k: rowkey(plain_seen(p[0])),
                q: plain_seen(p[1]),
                t: plain_seen(p[2]),
                v: plain_seen(p[3]),
            },
            None => {
                let mut need = false;
                let mut get = |c: usize| -> Seen<'_> {
                    let Some(i) = at_kqtv.get(c).copied().flatten() else {
                        return Seen::Absent;
                    };
                    match row.values.get(i).unwrap_or(&Value::Unknown) {
                        // a hex or _binary literal for T: the backend reads X'…' as a number
                        // and _binary'…' as a string; the proxy does not guess which (noted, C8)
                        Value::Bytes {
                            charset: crate::sql::insert::LitCharset::Binary,
                            ..
                        } if c == 2 => Seen::Unknown,
                        v => seen_fast(v, conn, &mut need),
                    }
                };
                let cell = Cell {
                    k: rowkey(get(0)),
                    q: get(1),
                    t: get(2),
                    v: get(3),
                };
                need_charset |= need;
                cell
            }
        };
        let before = findings.len();
        if findings.len() < MAX_FINDINGS {
            cells::check_cell(
                &cell,
                limits,
                rules.convention,
                rules.window,
                row.index + 1,
                &mut findings,
            );
        }
        // (a row handed in its plain form has no values to compare: it is one only where
        // the rows do not give the prefix column)
        debug_assert!(row.plain.is_none() || prefix_at.is_none());
        if let Some((i, n, k_at)) = prefix_at {
            let named = head.columns.is_some();
            let given = row.values.get(i).map(|v| seen(v, conn, &mut need_charset));
            // both literals in the same uncertain form (bytes that are not valid in the
            // connection's character set, as a backup of binary keys has them): whatever the
            // backend makes of them it makes of both alike, and the value is left to the
            // backend anyway, so their bytes as written are compared
            let same_form = match (row.values.get(i), k_at.and_then(|k| row.values.get(k))) {
                (
                    Some(Value::Bytes {
                        bytes: p,
                        charset: pc,
                    }),
                    Some(Value::Bytes {
                        bytes: k,
                        charset: kc,
                    }),
                ) if pc == kc => Some(p.as_ref() == prefix_of(k, n)),
                _ => None,
            };
            let matches = match (given, cell.k) {
                (Some(Seen::Bytes(p)), Seen::Bytes(k)) => Some(p == prefix_of(k, n)),
                _ => same_form,
            };
            match (given, matches) {
                (None | Some(Seen::Absent), _) => {}
                // the value the backend would derive: it derives it (DEFAULT), so a restore
                // of a backup that carries it works where the column is generated
                (_, Some(true)) => {
                    if let Some(span) = row.spans.get(i) {
                        defaults.push(*span);
                    }
                }
                // a placeholder or expression in a row without a column list: the backend
                // derives the column (a trigger or the generation), as before
                (Some(Seen::Unknown), None) if !named => {}
                (Some(_), _) if findings.len() < MAX_FINDINGS => {
                    findings.push(cells::prefix_value_mismatch(
                        limits.prefix_column.as_deref().unwrap_or("K_PREFIX"),
                        n,
                        row.index + 1,
                    ));
                }
                _ => {}
            }
        }
        if let Some(t) = trace.as_deref_mut() {
            let row_findings = findings.get(before..).unwrap_or_default();
            t.row(schema, row.index as u64 + 1, &cell.k, row_findings);
        }
        rows.row(cell.k);
        if let Some(t) = &auto_t {
            let text = if head.source == Source::Set {
                [b", T = ".as_slice(), t].concat()
            } else {
                [b", ".as_slice(), t].concat()
            };
            positions.push((row.close, text));
        }
        let stop = strict && findings.iter().any(|f| f.level == Level::Error);
        if stop {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if need_charset && !settled {
        return Err(NeedCharset);
    }
    let head = match read {
        insert::Read::Insert { head, .. } => head,
        insert::Read::NotInsert => return Ok(Checked::default()),
        insert::Read::Unreadable(why) => {
            // not a value the proxy cannot see but a statement it cannot read: unsure, so
            // refused in strict mode (a warning otherwise)
            findings.push(unreadable_write("INSERT", why));
            return Ok(Checked {
                rows: Default::default(),
                findings,
                touch: Some(Touch::Unknown {
                    table: schema.name.clone(),
                    why: "an INSERT the proxy cannot read",
                }),
            });
        }
    };
    if head.source == Source::Query {
        findings.extend(cells::check_prefix_column_written(
            head.columns.as_deref().unwrap_or_default(),
            limits,
        ));
        findings.push(unchecked(
            "INSERT … SELECT: the rows come from a query the proxy does not run; their cells were not checked".into(),
        ));
        rows.not_known("INSERT … SELECT");
    }
    // ON DUPLICATE KEY UPDATE: an UPDATE of the row already there
    findings.extend(cells::check_prefix_column_written(
        &head.on_duplicate,
        limits,
    ));
    findings.extend(cells::check_cell_address_changed(&head.on_duplicate));
    for (c, v) in head.on_duplicate.iter().zip(&head.on_duplicate_values) {
        if col_is(c, "V") {
            let mut need = false;
            check_assigned_v(seen(v, conn, &mut need), limits, rules, &mut findings);
            if need && !settled {
                return Err(NeedCharset);
            }
        }
    }
    for (at, text) in positions {
        splice.insert(base + at, text);
    }
    for (a, b) in defaults {
        splice.replace(base + a, base + b, "DEFAULT");
    }
    let (touch, rows) = rows.finish_seen();
    Ok(Checked {
        findings,
        touch: Some(touch),
        rows,
    })
}

/// UPDATE / DELETE, and a locking SELECT: the cell rules for what an UPDATE assigns, and where
/// the statement's rows are.
pub fn check_dml(
    dml: &Dml,
    schema: &TableSchema,
    rules: &WriteRules,
    conn: Option<ConnCharset>,
    backslash_escape: Option<bool>,
    settled: bool,
) -> Result<Checked, NeedCharset> {
    let limits = &schema.limits;
    let mut findings = Vec::new();
    let mut need = false;
    if dml.verb == Verb::Update {
        let targets: Vec<Vec<u8>> = dml.assignments.iter().map(|(c, _)| c.clone()).collect();
        findings.extend(cells::check_prefix_column_written(&targets, limits));
        findings.extend(cells::check_cell_address_changed(&targets));
        for (c, v) in &dml.assignments {
            if col_is(c, "V") {
                check_assigned_v(seen(v, conn, &mut need), limits, rules, &mut findings);
            }
        }
    }
    if dml.verb == Verb::Select && !dml.locking {
        return Ok(Checked {
            rows: Default::default(),
            findings,
            touch: None,
        });
    }
    let touch = where_rows(dml, schema, conn, backslash_escape, &mut need);
    if need && !settled {
        return Err(NeedCharset);
    }
    Ok(Checked {
        rows: Default::default(),
        findings,
        touch: Some(touch),
    })
}

/// C9: a write on an HBase table in a form obkv-proxy cannot read; refused in strict mode (a
/// warning otherwise), since the cells it writes cannot be checked.
pub fn unreadable_write(what: &str, why: &str) -> Finding {
    Finding::error(
        Rule::C9,
        er::PARSE_ERROR,
        "42000",
        format!("obkv-proxy cannot read this {what} on an HBase table ({why}), so it cannot check its cells"),
    )
}

/// The cell rules on what an UPDATE in any shape assigns (`sql::assign`), each target against
/// the HBase tables it may belong to (`schemas`, by the index of `update.tables`; None: not an
/// HBase table). The rows' partition is not known: inside a transaction that is X2.
pub fn check_assigned(
    update: &crate::sql::assign::Update,
    schemas: &[Option<std::sync::Arc<TableSchema>>],
    rules: &WriteRules,
    conn: Option<ConnCharset>,
    settled: bool,
) -> Result<Checked, NeedCharset> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut need = false;
    // the rows it reads of an HBase table are locked too: its partition is not known
    let first: Option<&TableSchema> = schemas.iter().find_map(|s| s.as_deref());
    for a in &update.assignments {
        for r in update.targets_of(a) {
            let at = update.tables.iter().position(|t| std::ptr::eq(t, r));
            let Some(schema) = at.and_then(|i| schemas.get(i)).and_then(|s| s.as_deref()) else {
                continue;
            };
            let target = std::slice::from_ref(&a.column);
            let mut add = |f: Option<Finding>| {
                if let Some(f) = f {
                    if findings.len() < MAX_FINDINGS
                        && !findings.iter().any(|g| g.message == f.message)
                    {
                        findings.push(f);
                    }
                }
            };
            add(cells::check_prefix_column_written(target, &schema.limits));
            add(cells::check_cell_address_changed(target));
            if col_is(&a.column, "V") {
                let mut out = Vec::new();
                check_assigned_v(
                    seen(&a.value, conn, &mut need),
                    &schema.limits,
                    rules,
                    &mut out,
                );
                out.into_iter().for_each(|f| add(Some(f)));
            }
        }
    }
    if need && !settled {
        return Err(NeedCharset);
    }
    Ok(Checked {
        rows: Default::default(),
        findings,
        touch: first.map(|s| Touch::Unknown {
            table: s.name.clone(),
            why: "an UPDATE with a join, a subquery or another shape the reader does not place",
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one pass finds what a search for each name finds: the first column that is the
    /// name, in either case, and nothing for a longer name that begins with it.
    #[test]
    fn kqtv_found_in_one_pass_as_by_name() {
        let lists: [&[&str]; 6] = [
            &["K", "Q", "T", "V"],
            &["v", "t", "q", "k"],
            &["K", "k", "KK", "Q", "q", "x"],
            &["KQ", "TV", "", "Kq"],
            &[],
            &["a", "T", "b", "V", "T", "K"],
        ];
        for names in lists {
            let by_name =
                ["K", "Q", "T", "V"].map(|n| names.iter().position(|c| col_is(c.as_bytes(), n)));
            assert_eq!(
                kqtv_at(names.iter().map(|c| c.as_bytes())),
                by_name,
                "{names:?}"
            );
        }
    }
}
