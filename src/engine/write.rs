//! The write stage of the router (issue 10), pure: for one statement on an HBase table it
//! checks the cells an INSERT / REPLACE / UPDATE writes against the cell rules
//! (`hbase::cells`), fills in T where an INSERT leaves it out (one value per statement, in the
//! timestamp convention), and says where the statement's rows are (`Touch`) so that
//! `guard` can keep a transaction inside one partition of one table group.
//!
//! Placement is always OceanBase's (the model's `Partitioning::partition_of`), on every backend:
//! an application that passes here stays inside one partition when it moves to OceanBase.

use crate::protocol::constants::er;
use std::ops::ControlFlow;

use super::prefix_scan::{certain, key_preds, literal_bytes, ConnCharset};
use crate::config::Transactions;
use crate::hbase::cells::{self, Cell, Convention, Seen, Window};
use crate::hbase::partition::Partitioning;
use crate::hbase::prefix::{pin, KeyPreds};
use crate::hbase::rules::{Enforcement, Finding, Level, ER_NOT_SUPPORTED};
use crate::hbase::schema::TableSchema;
use crate::sql::dml::{Dml, LitCharset, Operand, Verb};
use crate::sql::insert::{self, Source, Value};
use crate::sql::scan::Dialect;
use crate::sql::splice::Splice;

/// The write rules in force for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRules {
    /// The cell rules (`hbase.enforcement`).
    pub cells: Enforcement,
    pub convention: Convention,
    pub window: Window,
    pub transactions: Transactions,
    /// The time an INSERT without T is written at, in epoch milliseconds (one per statement).
    pub now_ms: i64,
}

impl Default for WriteRules {
    fn default() -> Self {
        WriteRules {
            cells: Enforcement::Strict,
            convention: Convention::NegatedMs,
            window: Window::default(),
            transactions: Transactions::SinglePartition,
            now_ms: 0,
        }
    }
}

/// One partition of one table group, and the rowkey (or prefix) that put a statement there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub schema: String,
    pub group: String,
    pub table: String,
    pub partition: u32,
    pub rowkey: Vec<u8>,
}

impl Place {
    fn same_partition(&self, o: &Place) -> bool {
        self.schema == o.schema && self.group == o.group && self.partition == o.partition
    }

    fn describe(&self) -> String {
        format!(
            "partition p{} of table group {}.{} (table {}, rowkey {})",
            self.partition,
            self.schema,
            self.group,
            self.table,
            show_key(&self.rowkey)
        )
    }
}

/// A rowkey for a message: printable ASCII as a quoted string, anything else as hex.
fn show_key(k: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = &k[..k.len().min(MAX)];
    let more = if k.len() > MAX { "…" } else { "" };
    if cut.iter().all(|b| (0x20..0x7f).contains(b) && *b != b'\'') {
        format!("'{}'{more}", String::from_utf8_lossy(cut))
    } else {
        let hex: String = cut.iter().map(|b| format!("{b:02X}")).collect();
        format!("X'{hex}'{more}")
    }
}

/// Where a statement's rows are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touch {
    /// Not a write or locking read on an HBase table.
    Nothing,
    /// The distinct partitions, each with the first rowkey that put the statement there.
    At(Vec<Place>),
    /// Cannot be told from the text (no K predicate, a rowkey the proxy cannot read).
    Unknown { table: String, why: &'static str },
}

/// Where the rows of one statement are, collected row by row: each partition once, found in a
/// set (a million-row INSERT costs a million lookups, not rows × partitions). `S` is how the
/// schema is held: borrowed for one statement, shared for a LOAD DATA file read over time.
struct Rows<S> {
    schema: S,
    places: Vec<Place>,
    seen: std::collections::HashSet<u32>,
    unknown: Option<&'static str>,
}

impl<S: std::ops::Deref<Target = TableSchema>> Rows<S> {
    fn new(schema: S) -> Self {
        Rows {
            schema,
            places: Vec::new(),
            seen: std::collections::HashSet::new(),
            unknown: None,
        }
    }

    /// A row (or prefix) with rowkey `k`.
    fn key(&mut self, k: &[u8]) {
        match self.schema.partitioning.partition_of(k) {
            Some(p) if self.seen.insert(p) => self.places.push(place(&self.schema, p, k)),
            Some(_) => {}
            None => self.not_known("a rowkey beyond the last RANGE partition"),
        }
    }

    /// A row written with rowkey `k` as the proxy sees it.
    fn row(&mut self, k: Seen<'_>) {
        match k {
            Seen::Bytes(k) => self.key(k),
            // the backend stores the column's default: an empty rowkey
            Seen::DefaultK => self.key(b""),
            _ => self.not_known("a rowkey the proxy cannot read"),
        }
    }

    fn not_known(&mut self, why: &'static str) {
        self.unknown = Some(why);
    }

    fn finish(self) -> Touch {
        match self.unknown {
            Some(why) => Touch::Unknown {
                table: self.schema.name.clone(),
                why,
            },
            None => Touch::At(self.places),
        }
    }
}

/// The session's transaction as the guard sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    /// Inside an explicit transaction (SERVER_STATUS_IN_TRANS, or autocommit off).
    pub active: bool,
    /// Fixed by the transaction's first write (or locking read) on an HBase table.
    pub pinned: Option<Place>,
}

/// What one statement of a text gets from the write stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub touch: Option<Touch>,
}

/// At most this many findings per statement (a bulk INSERT of bad rows is not a bulk of
/// warnings).
const MAX_FINDINGS: usize = 32;

/// How a literal's bytes are known: certain, not certain, or dependent on the session's
/// character set, which is not known yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedCharset;

fn seen<'a>(v: &'a Value, conn: Option<ConnCharset>, need: &mut bool) -> Seen<'a> {
    match v {
        Value::Bytes { bytes, charset } => match certain(bytes, *charset, conn) {
            Some(true) => Seen::Bytes(bytes),
            Some(false) => Seen::Unknown,
            None => {
                *need = true;
                Seen::Unknown
            }
        },
        Value::Int(i) => Seen::Int(*i),
        Value::Null => Seen::Null,
        Value::Default => Seen::Absent,
        Value::Param(_) | Value::Unknown => Seen::Unknown,
    }
}

/// A rowkey's first `n` bytes (all of it when shorter): what the prefix column holds.
fn prefix_of(k: &[u8], n: usize) -> &[u8] {
    k.get(..n).unwrap_or(k)
}

/// The K an INSERT row writes: one it leaves to the column's default is `DefaultK` (C1).
fn rowkey(k: Seen<'_>) -> Seen<'_> {
    match k {
        Seen::Absent => Seen::DefaultK,
        other => other,
    }
}

fn col_is(c: &[u8], name: &str) -> bool {
    c.eq_ignore_ascii_case(name.as_bytes())
}

fn place(schema: &TableSchema, partition: u32, rowkey: &[u8]) -> Place {
    Place {
        schema: schema.schema.clone(),
        group: schema.group().to_string(),
        table: schema.name.clone(),
        partition,
        rowkey: rowkey.to_vec(),
    }
}

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
) -> Result<Checked, NeedCharset> {
    let limits = &schema.limits;
    let strict = rules.cells == Enforcement::Strict;
    let mut findings: Vec<Finding> = Vec::new();
    let mut rows = Rows::new(schema);
    let mut need_charset = false;
    let mut auto_t: Option<Vec<u8>> = None;
    let mut positions: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut head_checked = false;
    let mut columns: Vec<Vec<u8>> = Vec::new();
    // where a row's prefix column value is, and the prefix length
    // (the prefix column's index, n, K's index) among the columns the rows give
    let mut prefix_at: Option<(usize, usize, Option<usize>)> = None;
    let mut defaults: Vec<(usize, usize)> = Vec::new();
    let read = insert::read(piece, d, |head, row| {
        if !head_checked {
            head_checked = true;
            columns = match &head.columns {
                Some(c) => c.clone(),
                None => limits
                    .columns
                    .iter()
                    .map(|c| c.as_bytes().to_vec())
                    .collect(),
            };
            // a VALUES row may carry the prefix column's value (a backup restores it): checked
            // row by row below; any other source or form writes it unchecked
            if head.source != Source::Values {
                findings.extend(cells::check_prefix_column_written(
                    head.columns.as_deref().unwrap_or_default(),
                    limits,
                ));
            }
            prefix_at = schema.prefix_column.as_ref().and_then(|(p, n)| {
                columns
                    .iter()
                    .position(|c| c.eq_ignore_ascii_case(p.as_bytes()))
                    .map(|i| (i, *n, columns.iter().position(|c| col_is(c, "K"))))
            });
            let has_t = columns.iter().any(|c| col_is(c, "T"));
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
        let value = |name: &str| -> Option<&Value> {
            columns
                .iter()
                .position(|c| col_is(c, name))
                .map(|i| row.values.get(i).unwrap_or(&Value::Unknown))
        };
        let mut need = false;
        let mut get = |name: &str| match value(name) {
            Some(v) => seen(v, conn, &mut need),
            None => Seen::Absent,
        };
        let cell = Cell {
            k: rowkey(get("K")),
            q: get("Q"),
            t: get("T"),
            v: get("V"),
        };
        need_charset |= need;
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
                ) if pc == kc => Some(p.as_slice() == prefix_of(k, n)),
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
    Ok(Checked {
        findings,
        touch: Some(rows.finish()),
    })
}

fn unchecked(message: String) -> Finding {
    Finding {
        level: Level::Note,
        ..Finding::error("C8", cells::ER_WRONG_VALUE, "22007", message)
    }
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
            findings,
            touch: None,
        });
    }
    let touch = where_rows(dml, schema, conn, backslash_escape, &mut need);
    if need && !settled {
        return Err(NeedCharset);
    }
    Ok(Checked {
        findings,
        touch: Some(touch),
    })
}

/// C9: a write on an HBase table in a form obkv-proxy cannot read; refused in strict mode (a
/// warning otherwise), since the cells it writes cannot be checked.
pub fn unreadable_write(what: &str, why: &str) -> Finding {
    Finding::error(
        "C9",
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
        findings,
        touch: first.map(|s| Touch::Unknown {
            table: s.name.clone(),
            why: "an UPDATE with a join, a subquery or another shape the reader does not place",
        }),
    })
}

/// The plan a prepared UPDATE of `sql::assign`'s shapes keeps for its executions: the V it
/// assigns from placeholders, checked with the bound values against the table each target may
/// belong to (an unqualified V in a join of two HBase tables, against both); the rows'
/// partition stays unknown.
pub fn plan_assigned(
    update: &crate::sql::assign::Update,
    schemas: &[Option<std::sync::Arc<TableSchema>>],
) -> Option<WritePlan> {
    // each V with the HBase table it goes to, and the first HBase table targeted
    let mut each: Vec<(std::sync::Arc<TableSchema>, Value)> = Vec::new();
    let mut first: Option<usize> = None;
    for a in &update.assignments {
        for r in update.targets_of(a) {
            let i = update.tables.iter().position(|t| std::ptr::eq(t, r))?;
            let Some(s) = schemas.get(i).and_then(|s| s.as_ref()) else {
                continue;
            };
            first.get_or_insert(i);
            if col_is(&a.column, "V") {
                each.push((s.clone(), a.value.clone()));
            }
        }
    }
    let at = first?;
    let schema = schemas.get(at)?.as_ref()?.clone();
    let table = update.tables.get(at)?;
    let one_table = each
        .iter()
        .all(|(s, _)| s.schema == schema.schema && s.name == schema.name);
    if !one_table {
        return Some(WritePlan {
            schema,
            shape: Shape::Assigned(each),
        });
    }
    Some(WritePlan {
        schema,
        shape: Shape::Dml(Box::new(Dml {
            verb: Verb::Update,
            explain: false,
            table: table.table.clone(),
            where_end: None,
            preds: Vec::new(),
            where_idents: Default::default(),
            backslash_literal: false,
            params_before_where_end: 0,
            assignments: each.into_iter().map(|(_, v)| (b"V".to_vec(), v)).collect(),
            locking: false,
        })),
    })
}

/// C2 / C3 on the V an UPDATE assigns.
fn check_assigned_v(
    v: Seen<'_>,
    limits: &cells::CellLimits,
    rules: &WriteRules,
    out: &mut Vec<Finding>,
) {
    let cell = Cell {
        k: Seen::Absent,
        q: Seen::Absent,
        t: Seen::Absent,
        v,
    };
    cells::check_cell(&cell, limits, rules.convention, rules.window, 1, out);
}

/// A length past any rowkey: pinning with it pins whole keys (for KEY(K) and RANGE tables).
const WHOLE_KEY: usize = 1 << 24;

/// The partitions the K predicates of a WHERE clause confine the rows to.
fn where_rows(
    dml: &Dml,
    schema: &TableSchema,
    conn: Option<ConnCharset>,
    backslash_escape: Option<bool>,
    need: &mut bool,
) -> Touch {
    let unknown = |why| Touch::Unknown {
        table: schema.name.clone(),
        why,
    };
    if schema.partitioning == Partitioning::None {
        return Touch::At(vec![place(schema, 0, b"")]);
    }
    let escape = match backslash_escape {
        Some(b) => b,
        None if dml.backslash_literal => {
            return unknown(
                "a backslash in a literal, and the backend does not say how it reads it",
            )
        }
        None => true,
    };
    let n = match &schema.partitioning {
        Partitioning::Key {
            prefix_len: Some(n),
            ..
        } => *n,
        _ => WHOLE_KEY,
    };
    let mut known = KeyPreds::new();
    for p in &dml.preds {
        let mut value = |op: &Operand| literal_bytes(op, conn, need);
        key_preds(p, escape, &mut value, &mut known);
    }
    let Some(pinned) = pin(&known, n) else {
        return unknown("no K predicate pins the rows to one rowkey or prefix");
    };
    let mut rows = Rows::new(schema);
    for k in pinned.prefixes() {
        rows.key(k);
    }
    rows.finish()
}

/// What each execution of a prepared write needs: the table as it was prepared and the
/// statement's shape, with its `?` by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePlan {
    pub schema: std::sync::Arc<TableSchema>,
    pub shape: Shape,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    Insert {
        /// The columns each row's values go to.
        columns: Vec<Vec<u8>>,
        rows: Vec<Vec<Value>>,
        /// The values ON DUPLICATE KEY UPDATE gives V (checked like an UPDATE's).
        on_duplicate_v: Vec<Value>,
    },
    /// UPDATE / DELETE / a locking SELECT.
    Dml(Box<Dml>),
    /// An UPDATE whose targets belong to several HBase tables (a join): each V it assigns with
    /// the table it goes to. Its rows' partition is not known.
    Assigned(Vec<(std::sync::Arc<TableSchema>, Value)>),
}

/// Most values a prepared INSERT's plan keeps (a larger statement is checked at prepare only).
const MAX_PLAN_VALUES: usize = 65_536;

/// The plan of a prepared INSERT, checked at each execution: its placeholders' values, and
/// where its rows are for the transaction guard, literals included (None: too large to keep).
pub fn plan_insert(
    piece: &[u8],
    d: Dialect,
    schema: std::sync::Arc<TableSchema>,
) -> Option<WritePlan> {
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut kept = 0usize;
    let mut columns: Option<Vec<Vec<u8>>> = None;
    let mut too_large = false;
    let read = insert::read(piece, d, |head, row| {
        if columns.is_none() {
            columns = Some(match &head.columns {
                Some(c) => c.clone(),
                None => schema
                    .limits
                    .columns
                    .iter()
                    .map(|c| c.as_bytes().to_vec())
                    .collect(),
            });
        }
        kept += row.values.len();
        if kept > MAX_PLAN_VALUES {
            too_large = true;
            return ControlFlow::Break(());
        }
        rows.push(row.values.to_vec());
        ControlFlow::Continue(())
    });
    let insert::Read::Insert { head, .. } = read else {
        return None;
    };
    let on_duplicate_v = head
        .on_duplicate
        .iter()
        .zip(&head.on_duplicate_values)
        .filter(|(c, _)| col_is(c, "V"))
        .map(|(_, v)| v.clone())
        .collect();
    (!too_large).then(|| WritePlan {
        schema,
        shape: Shape::Insert {
            columns: columns.unwrap_or_default(),
            rows,
            on_duplicate_v,
        },
    })
}

/// Whether a prepared INSERT leaves T out (the proxy fills it in by changing the text).
pub fn leaves_t_out(plan: &WritePlan) -> bool {
    match &plan.shape {
        Shape::Insert { columns, .. } => !columns.iter().any(|c| col_is(c, "T")),
        Shape::Dml(_) | Shape::Assigned(_) => false,
    }
}

/// A bound parameter of an execution, as the write rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound<'a> {
    /// A string-like value: its bytes, and whether it is BLOB-typed (binary everywhere).
    Bytes(&'a [u8], bool),
    /// A value of SQL-level `EXECUTE … USING` as `CAST(v AS BINARY)` gave it: the bytes a
    /// binary column receives; an integer column (T) receives the integer these digits read
    /// as, and anything else is not read.
    Text(&'a [u8]),
    Int(i128),
    Null,
    /// Sent with COM_STMT_SEND_LONG_DATA: only its length is known.
    Length(u64),
    /// A bulk execute's DEFAULT or IGNORE indicator: the column's default, as if left out.
    Default,
    /// Another type.
    Other,
}

fn seen_bound(b: Bound<'_>, conn: Option<ConnCharset>) -> Seen<'_> {
    match b {
        Bound::Bytes(v, true) => Seen::Bytes(v),
        Bound::Bytes(v, false) => match certain(v, LitCharset::Connection, conn) {
            Some(true) => Seen::Bytes(v),
            _ => Seen::Unknown,
        },
        Bound::Text(v) => Seen::Bytes(v),
        Bound::Int(i) => Seen::Int(i),
        Bound::Null => Seen::Null,
        Bound::Length(n) => Seen::Length(n),
        Bound::Default => Seen::Absent,
        Bound::Other => Seen::Unknown,
    }
}

/// An integer column's reading of a value's text: plain decimal digits with an optional sign
/// (what the backend converts exactly); anything else is not read.
fn int_text(b: &[u8]) -> Seen<'static> {
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    if digits.is_empty() || digits.len() > 30 || !digits.iter().all(u8::is_ascii_digit) {
        return Seen::Unknown;
    }
    std::str::from_utf8(b)
        .ok()
        .and_then(|t| t.parse::<i128>().ok())
        .map_or(Seen::Unknown, Seen::Int)
}

/// One execution of a prepared write: the cell rules on its bound values and where its rows
/// are. `bound(i)` is the value of the i-th `?`; the rows it writes are numbered from
/// `first_row + 1` in messages (a bulk execute's rows follow one another).
pub fn check_execution<'a>(
    plan: &WritePlan,
    bound: &dyn Fn(u32) -> Bound<'a>,
    rules: &WriteRules,
    conn: Option<ConnCharset>,
    backslash_escape: Option<bool>,
    first_row: usize,
) -> Checked {
    let schema = &plan.schema;
    match &plan.shape {
        Shape::Insert {
            columns,
            rows,
            on_duplicate_v,
        } => {
            let mut findings = Vec::new();
            // ON DUPLICATE KEY UPDATE V = ?: the V an existing cell would get
            for v in on_duplicate_v {
                let v = match v {
                    Value::Param(n) => seen_bound(bound(*n), conn),
                    v => seen(v, conn, &mut false),
                };
                check_assigned_v(v, &schema.limits, rules, &mut findings);
            }
            let mut touched = Rows::new(&**schema);
            let mut ignored = false;
            for (i, row) in rows.iter().enumerate() {
                let mut get = |name: &str| -> Seen<'_> {
                    let Some(v) = columns
                        .iter()
                        .position(|c| col_is(c, name))
                        .map(|i| row.get(i))
                    else {
                        return Seen::Absent;
                    };
                    match v {
                        Some(Value::Param(n)) => match bound(*n) {
                            Bound::Text(b) if col_is(name.as_bytes(), "T") => int_text(b),
                            b => seen_bound(b, conn),
                        },
                        Some(v) => seen(v, conn, &mut ignored),
                        None => Seen::Unknown,
                    }
                };
                let cell = Cell {
                    k: rowkey(get("K")),
                    q: get("Q"),
                    t: get("T"),
                    v: get("V"),
                };
                if findings.len() < MAX_FINDINGS {
                    cells::check_cell(
                        &cell,
                        &schema.limits,
                        rules.convention,
                        rules.window,
                        first_row + i + 1,
                        &mut findings,
                    );
                }
                touched.row(cell.k);
            }
            Checked {
                findings,
                touch: Some(touched.finish()),
            }
        }
        Shape::Assigned(each) => {
            let mut findings = Vec::new();
            for (s, v) in each {
                let v = match v {
                    Value::Param(n) => seen_bound(bound(*n), conn),
                    v => seen(v, conn, &mut false),
                };
                check_assigned_v(v, &s.limits, rules, &mut findings);
            }
            findings.truncate(MAX_FINDINGS);
            Checked {
                findings,
                touch: Some(Touch::Unknown {
                    table: schema.name.clone(),
                    why: "an UPDATE with a join, a subquery or another shape the reader does not place",
                }),
            }
        }
        Shape::Dml(dml) => {
            // the statement with its `?` replaced by what the execution bound
            let lit = |b: Bound<'_>| -> Option<Operand> {
                match b {
                    Bound::Text(v) => Some(Operand::Lit {
                        bytes: v.to_vec(),
                        charset: LitCharset::Binary,
                    }),
                    Bound::Bytes(v, binary) => Some(Operand::Lit {
                        bytes: v.to_vec(),
                        charset: if binary {
                            LitCharset::Binary
                        } else {
                            LitCharset::Connection
                        },
                    }),
                    _ => None,
                }
            };
            let mut bound_dml = (**dml).clone();
            let bind = |o: &mut Operand| {
                if let Operand::Param(n) = o {
                    if let Some(l) = lit(bound(*n)) {
                        *o = l;
                    }
                }
            };
            for p in bound_dml.preds.iter_mut() {
                match p {
                    crate::sql::dml::Pred::Eq(v)
                    | crate::sql::dml::Pred::Lower { bound: v, .. }
                    | crate::sql::dml::Pred::Upper { bound: v, .. } => bind(v),
                    crate::sql::dml::Pred::Left { value, .. } => bind(value),
                    crate::sql::dml::Pred::Like { pattern, .. } => bind(pattern),
                    crate::sql::dml::Pred::In(vs) => vs.iter_mut().for_each(bind),
                    crate::sql::dml::Pred::Between(a, b) => {
                        bind(a);
                        bind(b);
                    }
                }
            }
            let mut findings = Vec::new();
            let mut need = false;
            if bound_dml.verb == Verb::Update {
                for (c, v) in &bound_dml.assignments {
                    if col_is(c, "V") {
                        let v = match v {
                            Value::Param(n) => seen_bound(bound(*n), conn),
                            v => seen(v, conn, &mut need),
                        };
                        check_assigned_v(v, &schema.limits, rules, &mut findings);
                    }
                }
            }
            let touch = if bound_dml.verb == Verb::Select && !bound_dml.locking {
                None
            } else {
                Some(where_rows(
                    &bound_dml,
                    schema,
                    conn,
                    backslash_escape,
                    &mut need,
                ))
            };
            Checked { findings, touch }
        }
    }
}

/// The checks of a bulk execute's rows (MariaDB's COM_STMT_BULK_EXECUTE), gathered into one
/// statement's: findings up to the cap, each partition once, unknown if any row's is.
pub struct Gathered {
    findings: Vec<Finding>,
    places: Vec<Place>,
    seen: std::collections::HashSet<u32>,
    unknown: Option<Touch>,
    touched: bool,
}

impl Default for Gathered {
    fn default() -> Self {
        Self::new()
    }
}

impl Gathered {
    pub fn new() -> Self {
        Gathered {
            findings: Vec::new(),
            places: Vec::new(),
            seen: std::collections::HashSet::new(),
            unknown: None,
            touched: false,
        }
    }

    /// One row's checks.
    pub fn add(&mut self, c: Checked) {
        let room = MAX_FINDINGS.saturating_sub(self.findings.len());
        self.findings.extend(c.findings.into_iter().take(room));
        match c.touch {
            None | Some(Touch::Nothing) => {}
            Some(Touch::At(places)) => {
                self.touched = true;
                for p in places {
                    if self.seen.insert(p.partition) {
                        self.places.push(p);
                    }
                }
            }
            Some(u @ Touch::Unknown { .. }) => {
                self.touched = true;
                self.unknown.get_or_insert(u);
            }
        }
    }

    /// Under strict cell rules, an error already refuses the whole execution: the rest of the
    /// rows need not be read.
    pub fn refused(&self, rules: &WriteRules) -> bool {
        rules.cells == Enforcement::Strict && self.findings.iter().any(|f| f.level == Level::Error)
    }

    /// `unreadable`: a row could not be read (its cells and partition are not known).
    pub fn finish(mut self, table: &str, unreadable: bool) -> Checked {
        if unreadable {
            self.findings.push(unchecked(
                "a row of this bulk execute is not in a form obkv-proxy reads; the rows from it on were not checked"
                    .to_string(),
            ));
            self.touched = true;
            self.unknown.get_or_insert(Touch::Unknown {
                table: table.to_string(),
                why: "a bulk execute row the proxy cannot read",
            });
        }
        let touch = match (self.touched, self.unknown) {
            (false, _) => None,
            (true, Some(u)) => Some(u),
            (true, None) => Some(Touch::At(self.places)),
        };
        Checked {
            findings: self.findings,
            touch,
        }
    }
}

/// A LOAD DATA LOCAL on an HBase table: the statement and the table, for checking its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPlan {
    pub load: crate::sql::load::Load,
    pub schema: std::sync::Arc<TableSchema>,
}

/// Where a cell's column comes from in a LOAD DATA row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The i-th field of the row.
    Field(usize),
    /// An expression of the SET clause (or a field that goes through a user variable).
    Expression,
    /// Not written: the column's default (T: filled in by the proxy).
    Absent,
}

/// The rows of a LOAD DATA LOCAL file, checked as the file passes: the cell rules per row and
/// the partitions of all rows (each once), as for a multi-row INSERT.
pub struct LoadCheck {
    rules: WriteRules,
    slots: [Slot; 4],
    file: crate::sql::load::FileRows,
    /// Rows read so far.
    row: usize,
    findings: Vec<Finding>,
    /// Where the rows are (it holds the table's schema).
    rows: Rows<std::sync::Arc<TableSchema>>,
    max_row: usize,
}

impl LoadCheck {
    pub fn new(plan: &LoadPlan, rules: WriteRules) -> Self {
        let schema = plan.schema.clone();
        let l = &plan.load;
        let columns: Vec<Option<Vec<u8>>> = match &l.columns {
            Some(c) => c.clone(),
            None => schema
                .limits
                .columns
                .iter()
                .map(|c| Some(c.as_bytes().to_vec()))
                .collect(),
        };
        let slot = |name: &str| {
            if l.set.iter().any(|c| col_is(c, name)) {
                return Slot::Expression;
            }
            match columns
                .iter()
                .position(|c| c.as_deref().is_some_and(|c| col_is(c, name)))
            {
                Some(i) => Slot::Field(i),
                None => Slot::Absent,
            }
        };
        let slots = [slot("K"), slot("Q"), slot("T"), slot("V")];
        let limits = &schema.limits;
        // a row of cells within their limits, each byte escaped, and room for the rest
        let cells = [limits.k, limits.q, limits.v]
            .iter()
            .map(|l| l.unwrap_or(1 << 16))
            .fold(0u64, u64::saturating_add);
        let max_row = usize::try_from(cells.saturating_mul(2).saturating_add(1 << 16))
            .unwrap_or(usize::MAX)
            .min(512 << 20);
        let mut findings = Vec::new();
        if let Some(named) = &l.columns {
            let named: Vec<Vec<u8>> = named.iter().flatten().cloned().collect();
            findings.extend(cells::check_prefix_column_written(&named, limits));
        }
        findings.extend(cells::check_prefix_column_written(&l.set, limits));
        let file = crate::sql::load::FileRows::new(
            l.format.clone(),
            columns.len(),
            l.ignore_lines,
            max_row,
        );
        LoadCheck {
            rules,
            slots,
            file,
            row: 0,
            findings,
            rows: Rows::new(schema),
            max_row,
        }
    }

    /// More of the file: its complete rows are checked.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.refused() {
            return;
        }
        self.file.feed(bytes);
        self.drain();
    }

    /// Under strict cell rules an error refuses the load: the rest need not be read.
    pub fn refused(&self) -> bool {
        self.rules.cells == Enforcement::Strict
            && self.findings.iter().any(|f| f.level == Level::Error)
    }

    fn drain(&mut self) {
        use crate::sql::load::{Field, Next};
        loop {
            match self.file.next_row() {
                Next::More | Next::End => return,
                Next::TooLong => {
                    self.findings.push(Finding::error(
                        "C2",
                        cells::ER_DATA_TOO_LONG,
                        "22001",
                        format!(
                            "row {}: longer than {} bytes, more than a row of cells within their \
                             limits can be",
                            self.row + 1,
                            self.max_row
                        ),
                    ));
                    return;
                }
                Next::Unsure(why) => {
                    self.findings.push(unchecked(format!(
                        "the file from row {} on is not read by obkv-proxy ({why}); its cells were not checked",
                        self.row + 1
                    )));
                    self.rows
                        .not_known("a LOAD DATA file the proxy cannot read");
                    return;
                }
                Next::Row(fields) => {
                    self.row += 1;
                    let get = |slot: Slot| -> Seen<'_> {
                        match slot {
                            Slot::Absent => Seen::Absent,
                            Slot::Expression => Seen::Unknown,
                            Slot::Field(i) => match fields.get(i) {
                                None => Seen::Absent,
                                Some(Field::Null) => Seen::Null,
                                Some(Field::Bytes(b)) => Seen::Bytes(b),
                            },
                        }
                    };
                    let t = match get(self.slots[2]) {
                        Seen::Bytes(b) => std::str::from_utf8(b)
                            .ok()
                            .and_then(|s| s.parse::<i128>().ok())
                            .map_or(Seen::Unknown, Seen::Int),
                        other => other,
                    };
                    let cell = Cell {
                        k: rowkey(get(self.slots[0])),
                        q: get(self.slots[1]),
                        t,
                        v: get(self.slots[3]),
                    };
                    if self.findings.len() < MAX_FINDINGS {
                        cells::check_cell(
                            &cell,
                            &self.rows.schema.limits,
                            self.rules.convention,
                            self.rules.window,
                            self.row,
                            &mut self.findings,
                        );
                    }
                    self.rows.row(cell.k);
                    if self.refused() {
                        return;
                    }
                }
            }
        }
    }

    /// The file ended: the statement's checks.
    pub fn finish(mut self) -> Checked {
        if !self.refused() {
            self.file.finish();
            self.drain();
        }
        Checked {
            findings: self.findings,
            touch: Some(self.rows.finish()),
        }
    }
}

/// A LOAD DATA whose column list leaves T out (and whose SET does not assign it): where to
/// append `SET T = …` (or `, T = …`) in the statement, and the text, in the convention.
pub fn load_fill_t(load: &crate::sql::load::Load, rules: &WriteRules) -> Option<(usize, Vec<u8>)> {
    let columns = load.columns.as_ref()?;
    if columns.iter().flatten().any(|c| col_is(c, "T")) || load.set.iter().any(|c| col_is(c, "T")) {
        return None;
    }
    let t = rules.convention.encode(rules.now_ms);
    let text = if load.set.is_empty() {
        format!(" SET T = {t}")
    } else {
        format!(", T = {t}")
    };
    Some((load.end, text.into_bytes()))
}

/// A LOAD DATA whose file the proxy does not see (or cannot read): its cells are not checked,
/// and its rows may be anywhere.
pub fn load_unchecked(table: &str, why: &'static str) -> Checked {
    Checked {
        findings: vec![unchecked(format!(
            "LOAD DATA into {table}: {why}; its cells were not checked"
        ))],
        touch: Some(Touch::Unknown {
            table: table.to_string(),
            why,
        }),
    }
}

/// The cell rules' and the guard's verdict on one statement or execution, together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub refuse: Option<Finding>,
    /// Warnings and notes for the client (SHOW WARNINGS).
    pub warnings: Vec<Finding>,
    /// Inside a transaction: the partition this statement fixes (its first write).
    pub pin: Option<Place>,
}

/// Judges a checked statement: the cell rules by `rules.cells` first, then the guard against
/// the transaction `txn`.
pub fn verdict(checked: Checked, rules: &WriteRules, txn: &Txn) -> Outcome {
    let judged = crate::hbase::rules::judge(rules.cells, checked.findings);
    let mut out = Outcome {
        refuse: judged.refuse,
        warnings: judged.warnings,
        pin: None,
    };
    if out.refuse.is_some() {
        return out;
    }
    if let Some(touch) = &checked.touch {
        match guard(touch, txn, rules.transactions) {
            Guarded::Refuse(f) => out.refuse = Some(f),
            Guarded::Warn(f) => out.warnings.push(f),
            Guarded::Fine { pin } => out.pin = pin,
        }
    }
    out
}

/// The guard's verdict on one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guarded {
    /// May run; inside a transaction, `pin` is the partition it fixes (its first write).
    Fine {
        pin: Option<Place>,
    },
    Refuse(Finding),
    /// Runs, with this warning.
    Warn(Finding),
}

/// 1235 ER_NOT_SUPPORTED_YET: what OBKV-HBase does not do (a distributed transaction).
fn x(rule: &'static str, message: String) -> Finding {
    Finding::error(rule, ER_NOT_SUPPORTED, "42000", message)
}

/// The one-partition transaction guard for a statement whose rows are `touch`.
pub fn guard(touch: &Touch, txn: &Txn, mode: Transactions) -> Guarded {
    let soft = |f: Finding| match mode {
        Transactions::Warn => Guarded::Warn(Finding {
            level: Level::Warning,
            ..f
        }),
        _ => Guarded::Refuse(f),
    };
    if mode == Transactions::Off {
        return Guarded::Fine { pin: None };
    }
    if !txn.active {
        // a statement of its own: its cells may span partitions, each a transaction of its own
        return match touch {
            Touch::At(places) if places.len() > 1 => {
                let f = x(
                    "X3",
                    format!(
                        "this statement's rows are in {} partitions (first {}, then {}); OBKV-HBase keeps a \
                         unit of work in one partition: split it per partition",
                        places.len(),
                        places[0].describe(),
                        places[1].describe()
                    ),
                );
                if mode == Transactions::Strict {
                    Guarded::Refuse(f)
                } else {
                    Guarded::Warn(Finding {
                        level: Level::Warning,
                        ..f
                    })
                }
            }
            _ => Guarded::Fine { pin: None },
        };
    }
    match touch {
        Touch::Nothing => Guarded::Fine { pin: None },
        Touch::Unknown { table, why } => soft(x(
            "X2",
            format!(
                "inside a transaction obkv-proxy must know the partition of every write or locking read on \
                 {table}, and this statement does not pin one ({why}); give its rowkey with K = …, K IN (…) or a \
                 prefix of K"
            ),
        )),
        Touch::At(places) => {
            let Some(first) = places.first() else {
                return Guarded::Fine { pin: None };
            };
            let pinned = txn.pinned.as_ref().unwrap_or(first);
            if let Some(other) = places.iter().find(|p| !p.same_partition(pinned)) {
                let how = if txn.pinned.is_some() {
                    "this transaction is in"
                } else {
                    "this statement starts in"
                };
                return soft(x(
                    "X1",
                    format!(
                        "{how} {}, and this statement also touches {}; OBKV-HBase transactions stay in one partition \
                         of one table group: COMMIT first, or keep the unit of work under one rowkey prefix",
                        pinned.describe(),
                        other.describe()
                    ),
                ));
            }
            Guarded::Fine {
                pin: txn.pinned.is_none().then(|| first.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::schema::Placement;

    const NOW: i64 = 1_763_700_000_000;

    fn schema(partitioning: Partitioning) -> TableSchema {
        let prefix_column = match &partitioning {
            Partitioning::Key {
                prefix_len: Some(n),
                ..
            } => Some(("K_PREFIX".to_string(), *n)),
            _ => None,
        };
        TableSchema {
            schema: "hb".into(),
            name: "g$f".into(),
            partitioning,
            prefix_column,
            placement: Placement::MySqlFamily,
            grouped: true,
            limits: cells::CellLimits {
                k: Some(16),
                q: Some(8),
                v: Some(32),
                prefix_column: Some("K_PREFIX".into()),
                columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
            },
        }
    }

    fn prefixed() -> TableSchema {
        schema(Partitioning::Key {
            prefix_len: Some(4),
            partitions: 13,
        })
    }

    fn rules() -> WriteRules {
        WriteRules {
            now_ms: NOW,
            ..WriteRules::default()
        }
    }

    fn insert(sql: &str) -> (Checked, Vec<u8>) {
        let mut splice = Splice::new();
        let c = check_insert(
            sql.as_bytes(),
            Dialect::default(),
            &prefixed(),
            &rules(),
            Some(ConnCharset::Utf8),
            true,
            &mut splice,
            0,
            FillT::Literal,
        )
        .expect("no charset needed");
        (c, splice.apply(sql.as_bytes()))
    }

    fn rules_of(c: &Checked) -> Vec<&'static str> {
        c.findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn inserts_are_checked_row_by_row() {
        let (c, _) =
            insert("INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, 'v')");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1, 'v'), ('', 'q', -1763700000000, 'v')");
        assert_eq!(rules_of(&c), ["C5", "C1"]);
        assert!(c.findings[1].message.contains("row 2"));
        let (c, _) = insert("INSERT INTO g$f VALUES ('row1', 'q', 1763700000000, NULL, DEFAULT), ('', 'q', -1763700000000, 'v')");
        assert_eq!(
            rules_of(&c),
            ["C3", "C4"],
            "strict stops after the first row with an error"
        );
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('row1', 'q', -1763700000000, 'v', 'rowX')");
        assert_eq!(rules_of(&c), ["C6"]);
        let (c, _) = insert(
            "INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, CONCAT('a', 'b'))",
        );
        assert_eq!(rules_of(&c), ["C8"]);
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) SELECT K, Q, T, V FROM other");
        assert_eq!(rules_of(&c), ["C8"]);
        assert!(matches!(c.touch, Some(Touch::Unknown { .. })));
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, 'v') ON DUPLICATE KEY UPDATE T = -5");
        assert_eq!(rules_of(&c), ["C7"]);
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) VALUES (X'00112233445566778899AABBCCDDEEFF00', 'q', -1763700000000, 'v')");
        assert_eq!(rules_of(&c), ["C2"]);
    }

    #[test]
    fn t_is_filled_in_where_an_insert_leaves_it_out() {
        let (c, sent) = insert("INSERT INTO g$f (K, Q, V) VALUES ('a', 'q', 'v'), ('b', 'q', 'w')");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            "INSERT INTO g$f (K, Q, V, T) VALUES ('a', 'q', 'v', -1763700000000), ('b', 'q', 'w', -1763700000000)"
        );
        let (_, sent) = insert("INSERT INTO g$f SET K = 'a', Q = 'q', V = 'v'");
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            "INSERT INTO g$f SET K = 'a', Q = 'q', V = 'v', T = -1763700000000"
        );
        // T given, or no column list: nothing added
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'q', -1763700000000, 'v')";
        assert_eq!(insert(sql).1, sql.as_bytes());
    }

    #[test]
    fn where_an_insert_lands() {
        let (c, _) =
            insert("INSERT INTO g$f (K, Q, V) VALUES ('abcd1', 'q', 'v'), ('abcd2', 'q', 'v')");
        let Some(Touch::At(places)) = c.touch else {
            panic!("{:?}", c.touch)
        };
        assert_eq!(places.len(), 1, "one prefix, one partition");
        assert_eq!(places[0].rowkey, b"abcd1");
        let p = prefixed().partitioning.partition_of(b"abcd").unwrap();
        assert_eq!(places[0].partition, p);
    }

    fn dml(sql: &str) -> Dml {
        match crate::sql::dml::read(sql.as_bytes(), Dialect::default()) {
            crate::sql::dml::Read::Dml(d) => *d,
            other => panic!("{other:?}"),
        }
    }

    fn check(sql: &str, s: &TableSchema) -> Checked {
        check_dml(
            &dml(sql),
            s,
            &rules(),
            Some(ConnCharset::Utf8),
            Some(true),
            true,
        )
        .unwrap()
    }

    #[test]
    fn updates_do_not_move_cells() {
        let s = prefixed();
        assert_eq!(
            rules_of(&check("UPDATE g$f SET V = 'x' WHERE K = 'abcd1'", &s)),
            [""; 0]
        );
        assert_eq!(
            rules_of(&check("UPDATE g$f SET T = -1 WHERE K = 'abcd1'", &s)),
            ["C7"]
        );
        assert_eq!(
            rules_of(&check(
                "UPDATE g$f AS x SET x.K = 'b' WHERE K = 'abcd1'",
                &s
            )),
            ["C7"]
        );
        assert_eq!(
            rules_of(&check("UPDATE g$f SET V = NULL WHERE K = 'abcd1'", &s)),
            ["C3"]
        );
        assert_eq!(
            rules_of(&check(
                "UPDATE g$f SET V = 'much too long for thirty-two bytes' WHERE K = 'a'",
                &s
            )),
            ["C2"]
        );
        assert_eq!(
            rules_of(&check("UPDATE g$f SET K_PREFIX = 'x' WHERE K = 'a'", &s)),
            ["C6"]
        );
    }

    #[test]
    fn a_prefix_value_equal_to_the_rowkeys_prefix_is_left_to_the_backend() {
        // what mariadb-dump writes for a table with a generated prefix column: every column's
        // value, the generated one too (seekdb refuses it with 3105)
        let sql = "INSERT INTO `g$f` VALUES ('row1xyz','q',-1763700000000,'v','row1'),(X'00FF01','q',-1763700000000,'v',X'00FF01')";
        let (c, sent) = insert(sql);
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert_eq!(
            String::from_utf8_lossy(&sent),
            "INSERT INTO `g$f` VALUES ('row1xyz','q',-1763700000000,'v',DEFAULT),(X'00FF01','q',-1763700000000,'v',DEFAULT)"
        );
        // named, as --complete-insert writes it
        let (c, sent) = insert("INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('abcdef', 'q', -1763700000000, 'v', _binary 'abcd')");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert!(
            sent.ends_with(b"'v', DEFAULT)"),
            "{}",
            String::from_utf8_lossy(&sent)
        );
        // a value that is not the prefix is refused, named or not; DEFAULT is fine
        for sql in [
            "INSERT INTO g$f VALUES ('abcdef', 'q', -1763700000000, 'v', 'abce')",
            "INSERT INTO g$f VALUES ('abcdef', 'q', -1763700000000, 'v', 'abcdef')",
            "INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('abcdef', 'q', -1763700000000, 'v', NULL)",
            "INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('abcdef', 'q', -1763700000000, 'v', CONCAT('ab', 'cd'))",
        ] {
            let (c, _) = insert(sql);
            assert_eq!(rules_of(&c), ["C6"], "{sql}");
        }
        let (c, sent) =
            insert("INSERT INTO g$f VALUES ('abcdef', 'q', -1763700000000, 'v', DEFAULT)");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert!(sent.ends_with(b"'v', DEFAULT)"));
    }

    #[test]
    fn where_rows_are() {
        let s = prefixed();
        let at = |sql: &str| match check(sql, &s).touch {
            Some(Touch::At(p)) => p.iter().map(|p| p.partition).collect::<Vec<_>>(),
            other => panic!("{sql}: {other:?}"),
        };
        let p = |k: &[u8]| s.partitioning.partition_of(k).unwrap();
        assert_eq!(at("DELETE FROM g$f WHERE K = 'abcd1'"), [p(b"abcd")]);
        assert_eq!(at("DELETE FROM g$f WHERE K LIKE 'abcd%'"), [p(b"abcd")]);
        assert_eq!(
            at("DELETE FROM g$f WHERE K >= 'abcd1' AND K < 'abcd9'"),
            [p(b"abcd")]
        );
        assert!(matches!(
            check("DELETE FROM g$f WHERE V = 'x'", &s).touch,
            Some(Touch::Unknown { .. })
        ));
        assert!(check("SELECT * FROM g$f WHERE K = 'a'", &s).touch.is_none());
        assert!(check("SELECT * FROM g$f WHERE K = 'a' FOR UPDATE", &s)
            .touch
            .is_some());
        assert!(
            check("SELECT * FROM g$f WHERE K = 'a' LOCK IN SHARE MODE", &s)
                .touch
                .is_some()
        );
        // KEY(K): a LIKE pins nothing, an equality pins its key
        let whole = schema(Partitioning::Key {
            prefix_len: None,
            partitions: 7,
        });
        assert!(matches!(
            check("DELETE FROM g$f WHERE K LIKE 'abcd%'", &whole).touch,
            Some(Touch::Unknown { .. })
        ));
        match check("DELETE FROM g$f WHERE K = 'abcd1'", &whole).touch {
            Some(Touch::At(p)) => assert_eq!(
                p[0].partition,
                whole.partitioning.partition_of(b"abcd1").unwrap()
            ),
            other => panic!("{other:?}"),
        }
    }

    fn at(partition: u32, group: &str, key: &[u8]) -> Place {
        Place {
            schema: "hb".into(),
            group: group.into(),
            table: format!("{group}$f"),
            partition,
            rowkey: key.to_vec(),
        }
    }

    #[test]
    fn the_guard_keeps_a_transaction_in_one_partition() {
        let mode = Transactions::SinglePartition;
        let mut txn = Txn {
            active: true,
            pinned: None,
        };
        // the first write pins
        let g = guard(&Touch::At(vec![at(3, "g", b"a")]), &txn, mode);
        assert_eq!(
            g,
            Guarded::Fine {
                pin: Some(at(3, "g", b"a"))
            }
        );
        txn.pinned = Some(at(3, "g", b"a"));
        // the same partition of another family of the group: fine, nothing new pinned
        let mut other_family = at(3, "g", b"a");
        other_family.table = "g$other".into();
        assert_eq!(
            guard(&Touch::At(vec![other_family]), &txn, mode),
            Guarded::Fine { pin: None }
        );
        // another partition, another group, an unknown partition: refused
        for t in [
            Touch::At(vec![at(4, "g", b"b")]),
            Touch::At(vec![at(3, "h", b"a")]),
            Touch::Unknown {
                table: "g$f".into(),
                why: "no K",
            },
        ] {
            match guard(&t, &txn, mode) {
                Guarded::Refuse(f) => assert!(f.rule == "X1" || f.rule == "X2"),
                other => panic!("{t:?}: {other:?}"),
            }
        }
        let Guarded::Refuse(f) = guard(&Touch::At(vec![at(4, "g", b"b")]), &txn, mode) else {
            panic!()
        };
        assert!(
            f.message.contains("p3") && f.message.contains("p4"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("'a'") && f.message.contains("'b'"),
            "{}",
            f.message
        );
        // warn mode forwards with a warning; off does nothing
        assert!(matches!(
            guard(&Touch::At(vec![at(4, "g", b"b")]), &txn, Transactions::Warn),
            Guarded::Warn(_)
        ));
        assert_eq!(
            guard(&Touch::At(vec![at(4, "g", b"b")]), &txn, Transactions::Off),
            Guarded::Fine { pin: None }
        );
        // one statement spanning two partitions, outside a transaction: a warning (strict: refused)
        let two = Touch::At(vec![at(1, "g", b"a"), at(2, "g", b"b")]);
        let idle = Txn::default();
        assert!(matches!(guard(&two, &idle, mode), Guarded::Warn(f) if f.rule == "X3"));
        assert!(
            matches!(guard(&two, &idle, Transactions::Strict), Guarded::Refuse(f) if f.rule == "X3")
        );
        // inside a transaction with nothing pinned yet it is refused outright
        let fresh = Txn {
            active: true,
            pinned: None,
        };
        assert!(matches!(guard(&two, &fresh, mode), Guarded::Refuse(f) if f.rule == "X1"));
    }

    #[test]
    fn keys_are_shown_safely() {
        assert_eq!(show_key(b"row1"), "'row1'");
        assert_eq!(show_key(b"\x00\xff"), "X'00FF'");
        assert_eq!(show_key(b"it's"), "X'69742773'");
    }

    #[test]
    fn a_bulk_executes_rows_are_gathered() {
        let s = prefixed();
        let at = |k: &[u8]| Checked {
            findings: Vec::new(),
            touch: Some(Touch::At(vec![place(
                &s,
                s.partitioning.partition_of(k).unwrap(),
                k,
            )])),
        };
        let mut g = Gathered::new();
        g.add(at(b"aaaa1"));
        g.add(at(b"aaaa2"));
        assert!(!g.refused(&rules()));
        let c = g.finish(&s.name, false);
        let Some(Touch::At(places)) = c.touch else {
            panic!("{c:?}")
        };
        assert_eq!(places.len(), 1, "one partition, once");
        assert_eq!(
            places[0].rowkey, b"aaaa1",
            "the first row that put it there"
        );
        // an unknown row makes the whole unknown; an unreadable row notes it
        let mut g = Gathered::new();
        g.add(at(b"aaaa1"));
        let c = g.finish(&s.name, true);
        assert!(matches!(c.touch, Some(Touch::Unknown { .. })));
        assert_eq!(c.findings[0].rule, "C8");
        // findings are capped; an error refuses under strict rules only
        let mut g = Gathered::new();
        for _ in 0..100 {
            g.add(Checked {
                findings: vec![Finding::error("C1", 1292, "22007", "x".into())],
                touch: None,
            });
        }
        assert!(g.refused(&rules()));
        let warn = WriteRules {
            cells: Enforcement::Warn,
            ..rules()
        };
        assert!(!g.refused(&warn));
        let c = g.finish(&s.name, false);
        assert_eq!(c.findings.len(), MAX_FINDINGS);
        assert_eq!(c.touch, None, "no row touched a partition");
    }

    #[test]
    fn load_data_files_are_checked_row_by_row() {
        let plan = |sql: &str| LoadPlan {
            load: crate::sql::load::read(sql.as_bytes(), Dialect::default())
                .unwrap()
                .unwrap(),
            schema: std::sync::Arc::new(prefixed()),
        };
        let t = -NOW;
        // rows spread over partitions; each row numbered
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, T, V)");
        let mut c = LoadCheck::new(&p, rules());
        c.feed(format!("aaaa1\tq\t{t}\tv\nbbbb1\tq\t").as_bytes());
        c.feed(format!("{t}\tv\n\tq\t{t}\tv\n").as_bytes());
        assert!(c.refused(), "row 3's empty K");
        let out = c.finish();
        assert_eq!(out.findings[0].rule, "C1");
        assert!(out.findings[0].message.contains("row 3"));
        // a rowkey through a user variable is an expression: unknown, noted
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (@k, Q, T, V) SET K = UNHEX(@k)");
        let mut c = LoadCheck::new(&p, rules());
        c.feed(format!("6161\tq\t{t}\tv\n").as_bytes());
        let out = c.finish();
        assert!(matches!(out.touch, Some(Touch::Unknown { .. })), "{out:?}");
        // T left out: filled in where the statement ends
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, V)");
        let (at, text) = load_fill_t(&p.load, &rules()).unwrap();
        assert_eq!(
            at,
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, V)".len()
        );
        assert_eq!(text, format!(" SET T = {t}").into_bytes());
        let mut c = LoadCheck::new(&p, rules());
        c.feed(b"aaaa1\tq\tv\naaaa2\tq\tv");
        let out = c.finish();
        assert!(out.findings.is_empty(), "{:?}", out.findings);
        let Some(Touch::At(places)) = out.touch else {
            panic!()
        };
        assert_eq!(places.len(), 1, "one prefix, one partition");
        // the generated prefix column may not be loaded
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, T, V, K_PREFIX)");
        assert!(LoadCheck::new(&p, rules()).refused());
    }

    #[test]
    fn a_prepared_join_checks_each_v_against_the_table_it_goes_to() {
        let small = std::sync::Arc::new(prefixed());
        let mut big = prefixed();
        big.name = "g$h".into();
        big.limits.v = Some(1 << 20);
        let big = std::sync::Arc::new(big);
        let plan_of = |sql: &str| {
            let crate::sql::assign::Read::Update(u) =
                crate::sql::assign::read(sql.as_bytes(), Dialect::default())
            else {
                panic!("not read: {sql}");
            };
            // the tables as the statement names them: g$f, g$h, then anything else
            let schemas: Vec<_> = u
                .tables
                .iter()
                .map(|t| match t.table.name.as_str() {
                    "g$f" => Some(small.clone()),
                    "g$h" => Some(big.clone()),
                    _ => None,
                })
                .collect();
            plan_assigned(&u, &schemas).expect("a plan")
        };
        let run = |plan: &WritePlan, values: &[Vec<u8>]| {
            let bound = |n: u32| match values.get(n as usize) {
                Some(v) => Bound::Bytes(v, true),
                None => Bound::Other,
            };
            let c = check_execution(plan, &bound, &rules(), None, Some(true), 0);
            assert!(
                matches!(c.touch, Some(Touch::Unknown { .. })),
                "{:?}",
                c.touch
            );
            c.findings.iter().map(|f| f.rule).collect::<Vec<_>>()
        };
        let forty = vec![b'x'; 40];
        let plan = plan_of("UPDATE g$f a JOIN g$h b ON a.K = b.K SET a.V = ?, b.V = ?");
        assert!(matches!(plan.shape, Shape::Assigned(ref e) if e.len() == 2));
        assert!(run(&plan, &[b"v".to_vec(), forty.clone()]).is_empty());
        assert_eq!(run(&plan, &[forty.clone(), b"v".to_vec()]), ["C2"]);
        let huge = vec![b'x'; (1 << 20) + 1];
        assert_eq!(run(&plan, &[b"v".to_vec(), huge]), ["C2"]);
        // an unqualified V may belong to either table: checked against both
        let plan = plan_of("UPDATE g$h, g$f SET V = ? WHERE g$f.K = g$h.K");
        assert_eq!(run(&plan, std::slice::from_ref(&forty)), ["C2"]);
        // one HBase table among others keeps the one-table plan
        let plan = plan_of("UPDATE g$f a JOIN o b ON a.K = b.k SET a.V = ?, b.v = ?");
        assert!(matches!(plan.shape, Shape::Dml(_)));
        assert_eq!(run(&plan, &[forty, b"v".to_vec()]), ["C2"]);
    }
}
