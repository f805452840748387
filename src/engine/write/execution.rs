//! Prepared writes: the plan a prepared statement keeps, checked with each execution's bound
//! values, and a bulk execute's rows gathered into one statement's checks.

use super::checked::{
    check_assigned_v, col_is, rowkey, seen, unchecked, where_rows, Checked, Place, Rows, RowsSeen,
    Touch, WriteRules, MAX_FINDINGS,
};
use std::ops::ControlFlow;

use crate::engine::prefix_scan::{certain, ConnCharset};
use crate::hbase::cells::{self, Cell, Seen};
use crate::hbase::rules::{Enforcement, Finding, Level};
use crate::hbase::schema::TableSchema;
use crate::sql::dml::{Dml, LitCharset, Operand, Verb};
use crate::sql::insert::{self, Value};
use crate::sql::scan::Dialect;

/// The plan a prepared UPDATE of `sql::assign`'s shapes keeps for its executions: the V it
/// assigns from placeholders, checked with the bound values against the table each target may
/// belong to (an unqualified V in a join of two HBase tables, against both); the rows'
/// partition stays unknown.
pub fn plan_assigned(
    update: &crate::sql::assign::Update,
    schemas: &[Option<std::sync::Arc<TableSchema>>],
) -> Option<WritePlan> {
    // each V with the HBase table it goes to, and the first HBase table targeted
    let mut each: Vec<(std::sync::Arc<TableSchema>, Value<'static>)> = Vec::new();
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
            preds: Default::default(),
            where_idents: Default::default(),
            backslash_literal: false,
            params_before_where_end: 0,
            assignments: each.into_iter().map(|(_, v)| (b"V".to_vec(), v)).collect(),
            locking: false,
            table_span: (0, 0),
            alias: None,
            pred_spans: Default::default(),
            three_part_name: false,
        })),
    })
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
        rows: Vec<Vec<Value<'static>>>,
        /// The values ON DUPLICATE KEY UPDATE gives V (checked like an UPDATE's).
        on_duplicate_v: Vec<Value<'static>>,
    },
    /// UPDATE / DELETE / a locking SELECT.
    Dml(Box<Dml>),
    /// An UPDATE whose targets belong to several HBase tables (a join): each V it assigns with
    /// the table it goes to. Its rows' partition is not known.
    Assigned(Vec<(std::sync::Arc<TableSchema>, Value<'static>)>),
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
    let mut rows: Vec<Vec<Value<'static>>> = Vec::new();
    let mut kept = 0usize;
    let mut columns: Option<Vec<Vec<u8>>> = None;
    let mut too_large = false;
    let read = insert::read(piece, d, |head, row| {
        if columns.is_none() {
            columns = Some(match &head.columns {
                Some(c) => c.iter().map(|n| n.to_vec()).collect(),
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
        rows.push(row.values.iter().cloned().map(Value::into_owned).collect());
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
            // (a bulk execution checks each row set alone: each draws its own sample)
            let mut touched = Rows::new(&**schema).observing(rules.observe.part(first_row));
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
                        Some(Value::Param(n)) => seen_bound(bound(*n), conn),
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
            let (touch, rows) = touched.finish_seen();
            Checked {
                findings,
                touch: Some(touch),
                rows,
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
                rows: Default::default(),
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
            Checked {
                findings,
                touch,
                rows: Default::default(),
            }
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
    rows: RowsSeen,
    /// The table's partition count (for the rows counted past the keyed ones).
    partitions: usize,
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
            rows: RowsSeen::default(),
            partitions: 1,
        }
    }

    /// The rows are of a table of `n` partitions.
    pub fn with_partitions(mut self, n: usize) -> Self {
        self.partitions = n.max(1);
        self
    }

    /// One row's checks.
    pub fn add(&mut self, c: Checked) {
        let room = MAX_FINDINGS.saturating_sub(self.findings.len());
        self.findings.extend(c.findings.into_iter().take(room));
        self.rows.extend(c.rows, self.partitions);
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
            rows: self.rows,
        }
    }
}
