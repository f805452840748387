//! `EXPLAIN OBKV <statement>`: what the proxy would do with a text, statement by statement,
//! without running it — the same decision `router::decide` makes, shown with the table, its
//! partitioning, the text as it would be sent and the partitions it reads.
//!
//! Pure, like the router.

use super::prefix_scan::{self, Need, Step};
use super::read::{read_executed, Read};
use super::router::{decide, Answer, Context, Decision, Origin, Refusal};
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
}

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
            note: overall.clone(),
        };
        let (read, run) = read_executed(sql, *p, d, &ctx.scope, ctx.tables.is_some(), None);
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
                row.not_hbase = Some((db, x.table.raw_name.clone()));
            }
            out.push(row);
            continue;
        };
        row.table = Some(format!("`{}`.`{}`", schema.schema, schema.name));
        row.partitioning = Some(match &schema.prefix_column {
            Some((c, n)) => format!(
                "KEY({c}) PARTITIONS {}, {c} = substring(K, 1, {n})",
                schema.partitioning.partition_count()
            ),
            None => schema.partitioning.describe(),
        });
        let count = schema.partitioning.partition_count();
        let step = prefix_scan::plan(x, view, d.reported_backslash_escape());
        let all = || format!("all {count}");
        match step {
            Step::Splice { text, pinned } if rewritten => {
                let prefixes = pinned.prefixes();
                if let Some(end) = x.where_end {
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
