//! `EXPLAIN OBKV <statement>`: what the proxy would do with a text, statement by statement,
//! without running it — the same decision `router::decide` makes, shown with the table, its
//! partitioning, the text as it would be sent and the partitions it reads; for a write
//! (INSERT, REPLACE, a LOAD DATA file the session reads for it), each row's rowkey, the
//! partition it goes to (the backend's and OceanBase's placement), what the cell rules find in
//! it, and the verdict of the rules and the transaction guard (`write_rows`, `write_verdict`).
//!
//! Pure, like the router.

use super::prefix_scan::{self, Need, Step};
use super::read::{read_executed, Read};
use super::router::{decide, Answer, Context, Decision, Origin, Refusal};
use super::write::{self, Checked, RowTrace, Txn, WriteRules};
use crate::hbase::rules::Enforcement;
use crate::hbase::schema::TableSchema;
use crate::sql::classify::Class;
use crate::sql::dml;
use crate::sql::scan::statements;
use crate::sql::splice::Splice;

/// One row of `EXPLAIN OBKV`: a statement of the text and what the proxy does with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// The statement as it will be sent.
    pub sent: Vec<u8>,
    /// The HBase table it reads or changes (`db`.`name`), if any.
    pub table: Option<String>,
    pub partitioning: Option<String>,
    /// The partitions the backend reads (its own placement).
    pub partitions: Option<String>,
    /// Where OceanBase places the same keys (the model's placement, on every backend).
    pub oceanbase_partitions: Option<String>,
    pub note: String,
    /// A `$` table (database, name) that the proxy does not handle as an HBase table: the
    /// session says why (it reads the table's definition).
    pub not_hbase: Option<(Vec<u8>, Vec<u8>)>,
    /// A LOAD DATA LOCAL whose file the session reads from the client to show its rows
    /// (nothing is written; `write_rows`).
    pub load: Option<Box<write::LoadPlan>>,
}

/// Rows of a write EXPLAIN OBKV lists one by one (then a count of the rest).
pub const ROWS_SHOWN: usize = 100;

/// What the proxy would do with `sql` (the text after `EXPLAIN OBKV`), statement by statement,
/// without running it; Err when the rewriter needs facts first (as `decide`).
pub fn explain_obkv(sql: &[u8], ctx: &Context) -> Result<Vec<Explained>, Need> {
    // an explanation counts nothing
    let mut quiet = ctx.clone();
    if let Some(t) = quiet.tables.as_mut() {
        t.counters = Default::default();
    }
    let ctx = &quiet;
    let (class, decision) = decide(sql, Origin::Text, ctx);
    if let (Class::ServerProbe, Some(text)) = (class, decision.rewritten()) {
        return Ok(vec![Explained {
            sent: text.trim_ascii_start().to_vec(),
            table: None,
            partitioning: None,
            partitions: None,
            oceanbase_partitions: None,
            not_hbase: None,
            load: None,
            note: "a driver's probe for the server's Unix socket: @@socket is answered empty \
                   (the proxy has none, and the backend's would take the client past the proxy)"
                .into(),
        }]);
    }
    let overall = match &decision {
        Decision::Need(n) if n.variables.is_empty() => return Err(n.clone()),
        Decision::Need(_) => "dynamic SQL: the text its variables (or expression) give is read \
            and checked before it runs"
            .into(),
        Decision::Send(w) if w.checked => {
            let mut n = match w.refused.as_deref().map(Refusal::to_error) {
                Some(e) => format!(
                    "the statements before the refused one run, then: refused: {} ({})",
                    e.message, e.code
                ),
                None => "writes checked against the cell rules and the transaction guard".into(),
            };
            for note in &w.notes {
                n.push_str(&format!("; {}: {}", note.level.name(), note.message));
            }
            n
        }
        Decision::Send(w) if !w.read_catalog.is_empty() => {
            "LOCK TABLES on HBase tables: forwarded".into()
        }
        Decision::Send(_) if class == Class::Plain => {
            "forwarded unchanged (the pre-check found nothing to read)".to_string()
        }
        // the rewriter's note, if any
        Decision::Send(w) => w
            .notes
            .first()
            .map(|n| n.message.clone())
            .unwrap_or_default(),
        Decision::Ddl(_) => {
            "HBase DDL: checked against the rules and carried out by the proxy".into()
        }
        Decision::Dynamic(_) => "dynamic SQL: its text is checked before it is prepared, and \
            each execution with the values it binds"
            .into(),
        Decision::Answer(Answer::Refuse(r)) => {
            let e = r.to_error();
            format!("refused: {} ({})", e.message, e.code)
        }
        Decision::Answer(_) => "answered by the proxy".into(),
    };
    let rewritten = decision.rewritten().is_some();
    let d = ctx.dialect;
    let Ok((pieces, _)) = statements(sql, d) else {
        return Ok(vec![Explained {
            sent: sql.to_vec(),
            table: None,
            partitioning: None,
            partitions: None,
            oceanbase_partitions: None,
            not_hbase: None,
            load: None,
            note: overall,
        }]);
    };
    let mut out = Vec::with_capacity(pieces.len());
    for p in &pieces {
        let piece = &sql[p.start..p.end];
        let mut row = Explained {
            sent: piece.trim_ascii_start().to_vec(),
            table: None,
            partitioning: None,
            partitions: None,
            oceanbase_partitions: None,
            not_hbase: None,
            load: None,
            note: overall.clone(),
        };
        let (read, run) = read_executed(sql, *p, d, &ctx.scope, ctx.tables.is_some(), None);
        match (&read, &ctx.tables) {
            (Read::Insert(head), Some(view)) => {
                let part = sql.get(run.start..run.end).unwrap_or_default();
                let Some(schema) = prefix_scan::table_named(&head.insert.table, view)? else {
                    out.push(row);
                    continue;
                };
                let before = run.start.saturating_sub(p.start);
                let rows = explain_insert(part, &schema, view, ctx, &mut row, piece, before)?;
                out.push(row);
                out.extend(rows);
                continue;
            }
            (Read::Load(l), Some(view)) => {
                let Some(schema) = prefix_scan::table_named(&l.table, view)? else {
                    out.push(row);
                    continue;
                };
                describe_table(&mut row, &schema);
                let readable = l.local && l.format.unreadable().is_none() && pieces.len() == 1;
                if readable {
                    row.partitions = Some("the file's rows follow".into());
                    row.note = "LOAD DATA LOCAL: the file is read from the client and checked as \
                        it would be, nothing is written"
                        .into();
                    row.load = Some(Box::new(write::LoadPlan {
                        load: (**l).clone(),
                        schema,
                    }));
                } else if !l.local {
                    row.note = "the server reads the file itself: its rows never pass the proxy \
                        (not checked; refused inside a transaction)"
                        .into();
                }
                out.push(row);
                continue;
            }
            _ => {}
        }
        if let (Read::DmlUnreadable(why), true) = (&read, row.note.is_empty()) {
            row.note = format!("forwarded unchanged: the rewriter does not read {why}");
        }
        let (Read::Dml(x), Some(view)) = (&read, &ctx.tables) else {
            out.push(row);
            continue;
        };
        let Ok(Some(schema)) = prefix_scan::table(x, view) else {
            let db = match (&x.table.raw_schema, &view.current_db) {
                (Some(db), _) => Some(db.clone()),
                (None, Some(Some(db))) => Some(db.to_vec()),
                _ => None,
            };
            if let (Some(db), true) = (db, x.table.is_hbase_name()) {
                row.table = Some(format!(
                    "`{}`.`{}`",
                    String::from_utf8_lossy(&db),
                    x.table.name
                ));
                row.not_hbase = Some((db, x.table.raw_name.to_vec()));
            }
            out.push(row);
            continue;
        };
        describe_table(&mut row, &schema);
        let count = schema.partitioning.partition_count();
        let hbase_read = ctx.hbase_reads.is_some()
            && x.verb == dml::Verb::Select
            && !x.locking
            && (schema.attrs.time_to_live.is_some() || schema.attrs.max_versions.is_some());
        let step = prefix_scan::plan(x, view, d.reported_backslash_escape());
        let step = if hbase_read {
            if let (Some(text), 1) = (decision.rewritten(), pieces.len()) {
                row.sent = text.trim_ascii_start().to_vec();
            }
            let mut what = Vec::new();
            if let Some(t) = schema.attrs.time_to_live {
                what.push(format!("within TimeToLive {t} s by the backend's clock"));
            }
            if let Some(m) = schema.attrs.max_versions {
                what.push(format!("the newest {m} versions of each (K, Q)"));
            }
            let pinned = matches!(step, Step::Splice { .. });
            row.note = format!(
                "HBase reads: the table is read as the cells {}{}",
                what.join(" and "),
                if pinned {
                    "; the prefix predicate inside prunes to the partitions shown"
                } else {
                    ""
                }
            );
            // the partitions are shown below as for the rewrite, not its text
            match step {
                Step::Splice { pinned, .. } => Step::Splice {
                    text: Vec::new(),
                    pinned,
                },
                other => other,
            }
        } else {
            step
        };
        let all = || format!("all {count}");
        match step {
            Step::Splice { text, pinned } if rewritten => {
                let prefixes = pinned.prefixes();
                if let (Some(end), false) = (x.where_end, hbase_read) {
                    let mut s = Splice::new();
                    s.insert(run.start - p.start + end, text);
                    row.sent = s.apply(piece).trim_ascii_start().to_vec();
                }
                row.partitions = Some(names(
                    prefixes.iter().filter_map(|k| schema.partition_of(k)),
                ));
                row.oceanbase_partitions = Some(names(
                    prefixes
                        .iter()
                        .filter_map(|k| schema.partitioning.partition_of(k)),
                ));
                if row.note.is_empty() {
                    row.note =
                        "rewritten: the prefix column's predicate prunes to the partitions shown"
                            .into();
                }
            }
            Step::Splice { .. } => {
                row.partitions = Some(all());
                if row.note.is_empty() {
                    row.note = "forwarded unchanged: the text reads two ways".into();
                }
            }
            Step::Declined(why) => {
                row.partitions = Some(all());
                row.note = format!("forwarded unchanged: {why}");
            }
            Step::Prepared(_) => {
                row.partitions = Some("decided at each execution".into());
                row.note = "placeholders: each execution is decided with its values".into();
            }
            Step::Note(n) => {
                row.partitions = Some(all());
                row.note = n;
            }
            Step::Untouched | Step::Need(_) => {
                // KEY(K) prunes K = literal itself (RANGE prunes ranges too: not shown)
                let mut keys: Option<Vec<Vec<u8>>> = None;
                for p in &x.preds {
                    let lits: Vec<&dml::Operand> = match p {
                        dml::Pred::Eq(v) => vec![v],
                        dml::Pred::In(vs) => vs.iter().collect(),
                        _ => continue,
                    };
                    let found: Option<Vec<Vec<u8>>> = lits
                        .iter()
                        .map(|o| match o {
                            dml::Operand::Lit { bytes, charset }
                                if prefix_scan::certain(bytes, *charset, view.charset)
                                    == Some(true) =>
                            {
                                Some(bytes.clone())
                            }
                            _ => None,
                        })
                        .collect();
                    if keys.is_none() {
                        keys = found;
                    }
                }
                match keys {
                    Some(k) => {
                        row.partitions =
                            Some(names(k.iter().filter_map(|k| schema.partition_of(k))));
                        row.oceanbase_partitions = Some(names(
                            k.iter().filter_map(|k| schema.partitioning.partition_of(k)),
                        ));
                    }
                    None => row.partitions = Some(all()),
                }
                if row.note.is_empty() {
                    row.note =
                        "forwarded unchanged: the backend prunes this partitioning itself".into();
                }
            }
        }
        out.push(row);
    }
    Ok(out)
}

/// The table and its partitioning, on a row.
fn describe_table(row: &mut Explained, schema: &TableSchema) {
    row.table = Some(format!("`{}`.`{}`", schema.schema, schema.name));
    row.partitioning = Some(match &schema.prefix_column {
        Some((c, n)) => format!(
            "KEY({c}) PARTITIONS {}, {c} = substring(K, 1, {n})",
            schema.partitioning.partition_count()
        ),
        None => schema.partitioning.describe(),
    });
}

/// An INSERT / REPLACE (`part`, the statement as it runs; `piece` the whole statement, `part`
/// starting `before` bytes into it): the statement row (`row`: the table, the text as sent
/// with T filled in, every row's partitions, the verdict) and a row for each of its rows.
fn explain_insert(
    part: &[u8],
    schema: &TableSchema,
    view: &prefix_scan::TableView,
    ctx: &Context,
    row: &mut Explained,
    piece: &[u8],
    before: usize,
) -> Result<Vec<Explained>, Need> {
    describe_table(row, schema);
    // every row is read (as under warn mode), and judged by the rules in force
    let reading = WriteRules {
        cells: Enforcement::Warn,
        ..ctx.writes.unwrap_or_default()
    };
    let mut splice = crate::sql::splice::Splice::new();
    let mut trace = RowTrace::new(ROWS_SHOWN);
    let checked = write::check_insert(
        part,
        ctx.dialect,
        schema,
        &reading,
        view.charset,
        true,
        &mut splice,
        before,
        write::FillT::Literal,
        Some(&mut trace),
    )
    .map_err(|_| Need {
        charset: true,
        ..Need::default()
    })?;
    row.sent = splice.apply(piece).trim_ascii_start().to_vec();
    let unknown = matches!(checked.touch, Some(write::Touch::Unknown { .. }));
    row.note = write_verdict(checked, ctx.writes.as_ref(), &ctx.txn);
    let (backend, oceanbase) = placed(&trace);
    if unknown {
        row.partitions = Some("not known before it runs (rows the proxy cannot read)".into());
    } else {
        row.partitions = Some(backend);
        row.oceanbase_partitions = Some(oceanbase);
    }
    Ok(write_rows(&trace))
}

/// Every partition a write's rows go to: the backend's and OceanBase's, as `p1,p7`.
pub fn placed(trace: &RowTrace) -> (String, String) {
    let backend = trace
        .rows
        .iter()
        .filter_map(|r| r.backend)
        .chain(trace.more_backend.iter().copied());
    let oceanbase = trace
        .rows
        .iter()
        .filter_map(|r| r.oceanbase)
        .chain(trace.more_oceanbase.iter().copied());
    (names(backend), names(oceanbase))
}

/// A rowkey as EXPLAIN OBKV shows it: quoted text when it is printable UTF-8, else hex; cut
/// at 64 bytes.
fn shown_key(k: &[u8]) -> String {
    let (cut, more) = match k.get(..64) {
        Some(c) if k.len() > 64 => (c, "…"),
        _ => (k, ""),
    };
    match std::str::from_utf8(cut) {
        Ok(s) if !s.chars().any(char::is_control) => {
            format!("'{}'{more}", s.replace('\'', "''"))
        }
        _ => format!(
            "X'{}'{more}",
            cut.iter().map(|b| format!("{b:02X}")).collect::<String>()
        ),
    }
}

/// The rows of a write (an INSERT's, a LOAD file's), one EXPLAIN OBKV row each: its rowkey,
/// the partition the backend and OceanBase place it in, what the cell rules found in it; then
/// one row for those past `ROWS_SHOWN`.
pub fn write_rows(trace: &RowTrace) -> Vec<Explained> {
    let part = |p: Option<u32>| Some(p.map_or_else(|| "none".to_string(), |p| format!("p{p}")));
    let mut out: Vec<Explained> = trace
        .rows
        .iter()
        .map(|r| Explained {
            sent: match &r.key {
                Some(k) => format!("row {}: K = {}", r.index, shown_key(k)).into_bytes(),
                None => format!("row {}: K is not a value the proxy reads", r.index).into_bytes(),
            },
            table: None,
            partitioning: None,
            partitions: part(r.backend).filter(|_| r.key.is_some()),
            oceanbase_partitions: part(r.oceanbase).filter(|_| r.key.is_some()),
            note: if r.findings.is_empty() {
                "ok".into()
            } else {
                r.findings
                    .iter()
                    .map(|f| format!("{} {}: {}", f.level.name(), f.code, f.message))
                    .collect::<Vec<_>>()
                    .join("; ")
            },
            not_hbase: None,
            load: None,
        })
        .collect();
    if trace.more > 0 {
        let first = trace.rows.len() as u64 + 1;
        out.push(Explained {
            sent: format!(
                "rows {first} to {} ({} more)",
                first + trace.more - 1,
                trace.more
            )
            .into_bytes(),
            table: None,
            partitioning: None,
            partitions: Some(names(trace.more_backend.iter().copied())),
            oceanbase_partitions: Some(names(trace.more_oceanbase.iter().copied())),
            note: "checked as the rows above; counted, not listed".into(),
            not_hbase: None,
            load: None,
        });
    }
    out
}

/// What the rules in force (`rules`: None when they are off) and the transaction guard say of
/// a write whose rows were read: refused (and why), or runs (with its warnings, and the
/// partition it fixes inside the transaction).
pub fn write_verdict(checked: Checked, rules: Option<&WriteRules>, txn: &Txn) -> String {
    let Some(rules) = rules else {
        return "the write rules are off (hbase.enforcement and hbase.transactions): forwarded \
                unchecked"
            .into();
    };
    let out = write::verdict(checked, rules, txn);
    if let Some(f) = out.refuse {
        return format!("refused: {} ({}); nothing is written", f.message, f.code);
    }
    let mut note = String::from("runs: its cells pass the rules");
    if !out.warnings.is_empty() {
        note = "runs, with warnings".into();
        for w in &out.warnings {
            note.push_str(&format!("; {} {}: {}", w.level.name(), w.code, w.message));
        }
    }
    if let Some(pin) = out.pin {
        note.push_str(&format!(
            "; inside the transaction: it fixes partition p{} of table group {}.{}",
            pin.partition, pin.schema, pin.group
        ));
    }
    note
}

/// `p1,p7` from partition indexes (sorted, each once).
fn names(parts: impl Iterator<Item = u32>) -> String {
    let mut v: Vec<u32> = parts.collect();
    v.sort_unstable();
    v.dedup();
    v.iter()
        .map(|n| format!("p{n}"))
        .collect::<Vec<_>>()
        .join(",")
}
