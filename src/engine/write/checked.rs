//! What the write stage says of a statement (`Checked`: the cell rules' findings and where
//! its rows are, `Touch`), the write rules in force, and the readings every check shares (a
//! value as the cell rules see it, the partitions a WHERE clause confines the rows to).

use crate::config::Transactions;
use crate::engine::prefix_scan::{certain, key_preds, literal_bytes, ConnCharset};
use crate::hbase::cells::{self, Cell, Convention, Seen, Window};
use crate::hbase::partition::Partitioning;
use crate::hbase::prefix::{pin, KeyPreds};
use crate::hbase::rules::{Enforcement, Finding, Level, Rule};
use crate::hbase::schema::TableSchema;
use crate::sql::dml::{Dml, Operand};
use crate::sql::insert::Value;

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
    pub(super) fn same_partition(&self, o: &Place) -> bool {
        self.schema == o.schema && self.group == o.group && self.partition == o.partition
    }

    pub(super) fn describe(&self) -> String {
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
pub(super) struct Rows<S> {
    pub(super) schema: S,
    places: Vec<Place>,
    seen: std::collections::HashSet<u32>,
    unknown: Option<&'static str>,
}

impl<S: std::ops::Deref<Target = TableSchema>> Rows<S> {
    pub(super) fn new(schema: S) -> Self {
        Rows {
            schema,
            places: Vec::new(),
            seen: std::collections::HashSet::new(),
            unknown: None,
        }
    }

    /// A row (or prefix) with rowkey `k`.
    pub(super) fn key(&mut self, k: &[u8]) {
        match self.schema.partitioning.partition_of(k) {
            Some(p) if self.seen.insert(p) => self.places.push(place(&self.schema, p, k)),
            Some(_) => {}
            None => self.not_known("a rowkey beyond the last RANGE partition"),
        }
    }

    /// A row written with rowkey `k` as the proxy sees it.
    pub(super) fn row(&mut self, k: Seen<'_>) {
        match k {
            Seen::Bytes(k) => self.key(k),
            // the backend stores the column's default: an empty rowkey
            Seen::DefaultK => self.key(b""),
            _ => self.not_known("a rowkey the proxy cannot read"),
        }
    }

    pub(super) fn not_known(&mut self, why: &'static str) {
        self.unknown = Some(why);
    }

    pub(super) fn finish(self) -> Touch {
        match self.unknown {
            Some(why) => Touch::Unknown {
                table: self.schema.name.clone(),
                why,
            },
            None => Touch::At(self.places),
        }
    }
}

/// What one statement of a text gets from the write stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub touch: Option<Touch>,
}

/// At most this many findings per statement (a bulk INSERT of bad rows is not a bulk of
/// warnings).
pub(super) const MAX_FINDINGS: usize = 32;

/// How a literal's bytes are known: certain, not certain, or dependent on the session's
/// character set, which is not known yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedCharset;

pub(super) fn seen<'a>(v: &'a Value, conn: Option<ConnCharset>, need: &mut bool) -> Seen<'a> {
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

/// The K an INSERT row writes: one it leaves to the column's default is `DefaultK` (C1).
pub(super) fn rowkey(k: Seen<'_>) -> Seen<'_> {
    match k {
        Seen::Absent => Seen::DefaultK,
        other => other,
    }
}

pub(super) fn col_is(c: &[u8], name: &str) -> bool {
    c.eq_ignore_ascii_case(name.as_bytes())
}

pub(super) fn place(schema: &TableSchema, partition: u32, rowkey: &[u8]) -> Place {
    Place {
        schema: schema.schema.clone(),
        group: schema.group().to_string(),
        table: schema.name.clone(),
        partition,
        rowkey: rowkey.to_vec(),
    }
}

pub(super) fn unchecked(message: String) -> Finding {
    Finding {
        level: Level::Note,
        ..Finding::error(Rule::C8, cells::ER_WRONG_VALUE, "22007", message)
    }
}

/// C2 / C3 on the V an UPDATE assigns.
pub(super) fn check_assigned_v(
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
pub(super) fn where_rows(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_shown_safely() {
        assert_eq!(show_key(b"row1"), "'row1'");
        assert_eq!(show_key(b"\x00\xff"), "X'00FF'");
        assert_eq!(show_key(b"it's"), "X'69742773'");
    }
}
