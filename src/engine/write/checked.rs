//! What the write stage says of a statement (`Checked`: the cell rules' findings and where
//! its rows are, `Touch`), the write rules in force, and the readings every check shares (a
//! value as the cell rules see it, the partitions a WHERE clause confines the rows to).

use crate::config::Transactions;
use crate::engine::prefix_scan::{certain, key_preds, literal_bytes, operand_bytes, ConnCharset};
use crate::hbase::advisor::stats::Distinct;
use crate::hbase::advisor::{Sampler, Sampling, DISTINCT_UPDATES};
use crate::hbase::cells::{self, Cell, Convention, Seen, Window};
use crate::hbase::partition::Partitioning;
use crate::hbase::prefix::{pin, KeyPreds};
use crate::hbase::rules::{Enforcement, Finding, Level, Rule};
use crate::hbase::schema::TableSchema;
use crate::sql::dml::Dml;
use crate::sql::insert::{LitCharset, Plain, Value};

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
    /// Which rows' keys are kept for the rowkey advisor (`RowsSeen`): none when it is off
    /// (keeping them cost a batch row about 70 instructions for nothing), else a sample, one
    /// row in `advisor.sample_every`, drawn afresh for each statement.
    pub observe: Sampling,
}

impl Default for WriteRules {
    fn default() -> Self {
        WriteRules {
            cells: Enforcement::Strict,
            convention: Convention::NegatedMs,
            window: Window::default(),
            transactions: Transactions::SinglePartition,
            now_ms: 0,
            observe: Sampling::ALL,
        }
    }
}

/// One partition of one table group, and the rowkey (or prefix) that put a statement there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// (names kept inline when short, as most are: a place costs no allocation for them)
    pub schema: compact_str::CompactString,
    pub group: compact_str::CompactString,
    pub table: compact_str::CompactString,
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
/// set (a million-row INSERT costs a million lookups, not rows × partitions); and, for the
/// rowkey advisor, every row written (`RowsSeen`). `S` is how the schema is held: borrowed for
/// one statement, shared for a LOAD DATA file read over time.
pub(super) struct Rows<S> {
    pub(super) schema: S,
    places: Vec<Place>,
    /// The partitions of `places`, once there are more than a few (`first_time`; foldhash:
    /// a partition number is no secret to protect against collisions with).
    seen: std::collections::HashSet<u32, foldhash::fast::FixedState>,
    unknown: Option<&'static str>,
    written: RowsSeen,
    /// Which rows written have their rowkeys kept for the advisor (`WriteRules::observe`;
    /// None: none is, nor counted).
    sampler: Option<Sampler>,
    /// `Partitioning::key_hash` of the last place's rowkey, when its partition came from it
    /// (else 0: `key_hashed`).
    last_hash: u64,
}

/// Rows of one statement whose rowkeys the advisor reads: the first this many (in order, so
/// their order is seen); those after are counted by partition only.
pub const KEYED_ROWS: usize = crate::hbase::advisor::Key::MAX_ROWS;

/// What the rowkey advisor is shown of the rows one statement (or execution, or LOAD file)
/// writes: every row, in its partition, its partitioning key in the distinct count and its
/// length in the longest. Those the sample took (`Sampling`; at most the first `KEYED_ROWS` of
/// them) with their rowkeys (cut, see `Key`), the rest counted per partition (the advisor
/// shows the share it read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsSeen {
    pub keyed: Vec<(Option<u32>, crate::hbase::advisor::Key)>,
    /// Rows not keyed, per partition (index = partition; allocated at the first).
    pub counted: Vec<u32>,
    /// Rows not keyed that no partition takes.
    pub unplaced: u32,
    /// The first row not keyed while it is the only one (its partition, None: no partition
    /// takes it): a one-row statement's is not given a list of every partition.
    pub alone: Option<Option<u32>>,
    /// What every row's partitioning key adds to the distinct count (`Distinct::update_of`),
    /// a row like the one before adding none; at most `2 × DISTINCT_UPDATES` (then made one a
    /// register). A one-row statement's held inline.
    pub distinct: smallvec::SmallVec<[u16; 4]>,
    /// The last of `distinct` (`u32::MAX` before the first: no update is).
    pub last_update: u32,
    /// The hash the last row's update came from (a row with the same adds nothing).
    pub last_hash: u64,
    /// The longest rowkey's length (`u32::MAX` for any longer).
    pub longest: u32,
}

impl Default for RowsSeen {
    fn default() -> Self {
        RowsSeen {
            keyed: Vec::new(),
            counted: Vec::new(),
            unplaced: 0,
            alone: None,
            distinct: smallvec::SmallVec::new(),
            last_update: u32::MAX,
            last_hash: 0,
            longest: 0,
        }
    }
}

impl RowsSeen {
    /// A row with rowkey `k` in partition `p`, its rowkey kept when `taken` (the sample took
    /// it), `h` its partitioning key's hash (`Partitioning::key_hash`). The usual row (not
    /// taken, in a partition counted before, its partitioning key like the row before's) is a
    /// few instructions in line; the rest is out of line.
    #[inline(always)]
    pub fn row(&mut self, p: Option<u32>, k: &[u8], taken: bool, h: u64, to: &Partitioning) {
        match p.and_then(|p| self.counted.get_mut(p as usize)) {
            Some(c) if !taken => *c = c.saturating_add(1),
            _ => self.row_out_of_line(p, k, taken, to),
        }
        self.longest = self.longest.max(u32::try_from(k.len()).unwrap_or(u32::MAX));
        if h != self.last_hash {
            self.last_hash = h;
            self.distinct_key(Distinct::update_of(h));
        }
    }

    /// `row`'s count or keyed row.
    #[inline(never)]
    fn row_out_of_line(&mut self, p: Option<u32>, k: &[u8], taken: bool, to: &Partitioning) {
        if taken && self.keyed.len() < KEYED_ROWS {
            self.keyed.push((p, crate::hbase::advisor::Key::of(k)));
        } else {
            self.count(p, 1, to.partition_count() as usize);
        }
    }

    /// What a row's partitioning key adds to the distinct count.
    pub fn distinct_key(&mut self, update: u16) {
        if u32::from(update) == self.last_update {
            return;
        }
        self.last_update = u32::from(update);
        if self.distinct.len() >= 2 * DISTINCT_UPDATES {
            self.compact();
        }
        self.distinct.push(update);
    }

    /// The distinct count's updates made one a register in use (at most 256).
    #[inline(never)]
    fn compact(&mut self) {
        let mut d = Distinct::default();
        for u in &self.distinct {
            d.add_update(*u);
        }
        self.distinct.clear();
        self.distinct.extend(d.updates());
    }

    /// `n` rows in partition `p` whose rowkeys are not kept.
    pub fn count(&mut self, p: Option<u32>, n: u32, partitions: usize) {
        if n == 1 && self.alone.is_none() && self.counted.is_empty() && self.unplaced == 0 {
            self.alone = Some(p);
            return;
        }
        if let Some(q) = self.alone.take() {
            self.count_listed(q, 1, partitions);
        }
        self.count_listed(p, n, partitions);
    }

    /// `count` in the list of every partition.
    fn count_listed(&mut self, p: Option<u32>, n: u32, partitions: usize) {
        match p.map(|p| p as usize).filter(|&p| p < partitions.max(1)) {
            Some(p) => {
                if self.counted.is_empty() {
                    self.counted = vec![0; partitions.max(1)];
                }
                if let Some(c) = self.counted.get_mut(p) {
                    *c = c.saturating_add(n);
                }
            }
            None => self.unplaced = self.unplaced.saturating_add(n),
        }
    }

    /// Another statement's rows after these (a bulk execute's rows, gathered).
    pub fn extend(&mut self, other: RowsSeen, partitions: usize) {
        for (p, k) in other.keyed {
            if self.keyed.len() < KEYED_ROWS {
                self.keyed.push((p, k));
            } else {
                self.count(p, 1, partitions);
            }
        }
        for (p, n) in other.counted.iter().enumerate() {
            if *n > 0 {
                self.count(u32::try_from(p).ok(), *n, partitions);
            }
        }
        self.unplaced = self.unplaced.saturating_add(other.unplaced);
        if let Some(q) = other.alone {
            self.count(q, 1, partitions);
        }
        for u in other.distinct {
            self.distinct_key(u);
        }
        self.longest = self.longest.max(other.longest);
    }

    /// Every row: the keyed ones and those counted.
    pub fn rows(&self) -> u64 {
        self.keyed.len() as u64
            + self.counted.iter().map(|&n| u64::from(n)).sum::<u64>()
            + u64::from(self.unplaced)
            + u64::from(self.alone.is_some())
    }
}

impl<S: std::ops::Deref<Target = TableSchema>> Rows<S> {
    pub(super) fn new(schema: S) -> Self {
        Rows {
            schema,
            places: Vec::new(),
            seen: Default::default(),
            unknown: None,
            written: RowsSeen::default(),
            sampler: Some(Sampler::new(Sampling::ALL)),
            last_hash: 0,
        }
    }

    /// `new`, keeping the rows written for the advisor as `observe` says (none when off).
    pub(super) fn observing(mut self, observe: Sampling) -> Self {
        self.sampler = observe.on().then(|| Sampler::new(observe));
        self
    }

    /// A row (or prefix) with rowkey `k`; its partition.
    pub(super) fn key(&mut self, k: &[u8]) -> Option<u32> {
        self.key_hashed(k).0
    }

    /// `key`, and `Partitioning::key_hash` of `k` where the partition came from it, else 0
    /// (a hash that is 0 is worked out again: the pair fits in two registers, an `Option`
    /// of the hash did not). In line: a batch's row is mostly the comparison alone.
    #[inline(always)]
    fn key_hashed(&mut self, k: &[u8]) -> (Option<u32>, u64) {
        // the same bytes hashed as for the rowkey that made the last place: that place's
        // partition (a batch's rows, or an HBase row's cells, mostly share their prefix),
        // neither hashed again nor looked up among the places
        let partitioning = &self.schema.partitioning;
        if let (Some(hashed), Some(l)) = (partitioning.key_bytes(k), self.places.last()) {
            if partitioning
                .key_bytes(&l.rowkey)
                .is_some_and(|before| crate::sql::scan::same_gap(before, hashed))
            {
                return (Some(l.partition), self.last_hash);
            }
        }
        self.place_key(k)
    }

    /// `key` worked out: the partition, and the place when it is the first row there.
    #[inline(never)]
    fn place_key(&mut self, k: &[u8]) -> (Option<u32>, u64) {
        let (p, h) = self.schema.partitioning.place(k);
        let h = h.unwrap_or(0);
        match p {
            Some(p) if self.first_time(p) => {
                self.places.push(place(&self.schema, p, k));
                self.last_hash = h;
            }
            Some(_) => {}
            None => self.not_known("a rowkey beyond the last RANGE partition"),
        }
        (p, h)
    }

    /// Whether no row before was in partition `p`: the few partitions of most statements are
    /// looked through, a set is made only past `FEW_PLACES` of them.
    fn first_time(&mut self, p: u32) -> bool {
        const FEW_PLACES: usize = 8;
        if self.places.len() < FEW_PLACES {
            return !self.places.iter().any(|l| l.partition == p);
        }
        if self.seen.is_empty() {
            self.seen.extend(self.places.iter().map(|l| l.partition));
        }
        self.seen.insert(p)
    }

    /// At least `n` rows are to come: room for as many keyed rows as will be kept of them
    /// (a 100-row batch's list grown from four entries copied about 32 instructions a row).
    pub(super) fn expect_rows(&mut self, n: usize) {
        let Some(s) = &self.sampler else {
            return;
        };
        if n <= 1 {
            return;
        }
        // room for the rows the sample will likely take (its mean and four standard
        // deviations: a 100-row batch's list grown from four entries, one in sixteen rows,
        // copied about 8 instructions a row); the distinct count's updates grow as they come
        // (a batch's rows often share their partitioning key: one update)
        let keyed = &mut self.written.keyed;
        if keyed.is_empty() {
            keyed.reserve_exact(s.likely(n).min(KEYED_ROWS));
        }
    }

    /// A row written with rowkey `k` as the proxy sees it.
    #[inline(always)]
    pub(super) fn row(&mut self, k: Seen<'_>) {
        let k = match k {
            Seen::Bytes(k) => k,
            // the backend stores the column's default: an empty rowkey
            Seen::DefaultK => b"",
            _ => return self.not_known("a rowkey the proxy cannot read"),
        };
        let (p, h) = self.key_hashed(k);
        let Some(s) = &mut self.sampler else {
            return;
        };
        let taken = s.take();
        let to = &self.schema.partitioning;
        let h = if h == 0 { to.key_hash(k) } else { h };
        self.written.row(p, k, taken, h, to);
    }

    pub(super) fn not_known(&mut self, why: &'static str) {
        self.unknown = Some(why);
    }

    pub(super) fn finish(self) -> Touch {
        self.finish_seen().0
    }

    /// `finish`, and the rows written as the advisor sees them.
    pub(super) fn finish_seen(self) -> (Touch, RowsSeen) {
        let touch = match self.unknown {
            Some(why) => Touch::Unknown {
                table: self.schema.name.clone(),
                why,
            },
            None => Touch::At(self.places),
        };
        (touch, self.written)
    }
}

/// What EXPLAIN OBKV shows of a write's rows: the first `limit` each with its rowkey, where the
/// backend and OceanBase place it and what the cell rules found in it; then how many more, and
/// where they go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowTrace {
    limit: usize,
    pub rows: Vec<TracedRow>,
    /// Rows past the first `limit`.
    pub more: u64,
    /// Partitions of the rows past the first `limit`: the backend's, OceanBase's.
    pub more_backend: std::collections::BTreeSet<u32>,
    pub more_oceanbase: std::collections::BTreeSet<u32>,
}

/// One row of a write, as EXPLAIN OBKV shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedRow {
    /// 1 for the first row.
    pub index: u64,
    /// None: a rowkey the proxy cannot read (an expression, a placeholder).
    pub key: Option<Vec<u8>>,
    pub backend: Option<u32>,
    pub oceanbase: Option<u32>,
    pub findings: Vec<Finding>,
}

impl RowTrace {
    pub fn new(limit: usize) -> RowTrace {
        RowTrace {
            limit,
            ..RowTrace::default()
        }
    }

    /// Row `index` (1-based), with rowkey `k` and the findings the cell rules made of it.
    pub(super) fn row(
        &mut self,
        schema: &TableSchema,
        index: u64,
        k: &Seen<'_>,
        findings: &[Finding],
    ) {
        let key = match k {
            Seen::Bytes(k) => Some(*k),
            Seen::DefaultK => Some(&b""[..]),
            _ => None,
        };
        let backend = key.and_then(|k| schema.partition_of(k));
        let oceanbase = key.and_then(|k| schema.partitioning.partition_of(k));
        if self.rows.len() < self.limit {
            self.rows.push(TracedRow {
                index,
                key: key.map(<[u8]>::to_vec),
                backend,
                oceanbase,
                findings: findings.iter().take(4).cloned().collect(),
            });
            return;
        }
        self.more += 1;
        self.more_backend.extend(backend);
        self.more_oceanbase.extend(oceanbase);
    }
}

/// What one statement of a text gets from the write stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub touch: Option<Touch>,
    /// The rows it writes, for the rowkey advisor (an INSERT's, an execution's, a file's).
    pub rows: RowsSeen,
}

/// At most this many findings per statement (a bulk INSERT of bad rows is not a bulk of
/// warnings).
pub(super) const MAX_FINDINGS: usize = 32;

/// How a literal's bytes are known: certain, not certain, or dependent on the session's
/// character set, which is not known yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedCharset;

/// `seen` with its two most common cases taken in line (a batch's values): an integer, and
/// a string borrowed from the text in the connection's character set that is ASCII.
#[inline(always)]
pub(super) fn seen_fast<'a>(v: &'a Value, conn: Option<ConnCharset>, need: &mut bool) -> Seen<'a> {
    match v {
        Value::Int(i) => Seen::Int(*i),
        Value::Bytes {
            bytes: std::borrow::Cow::Borrowed(b),
            charset: LitCharset::Connection,
        } if conn != Some(ConnCharset::Wide) && b.is_ascii() => Seen::Bytes(b),
        _ => seen(v, conn, need),
    }
}

/// What `seen_fast` makes of a laid-out row's plain value (`insert::Plain`) as a `Value`, on a
/// connection whose character set is not a wide one: a plain string's body is ASCII.
#[inline(always)]
pub(super) fn plain_seen(v: Plain<'_>) -> Seen<'_> {
    match v {
        Plain::Absent => Seen::Absent,
        Plain::Ascii(b) => Seen::Bytes(b),
        Plain::Int(i) => Seen::Int(i),
    }
}

#[inline(never)]
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
        schema: schema.schema.as_str().into(),
        group: schema.group().into(),
        table: schema.name.as_str().into(),
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
        let mut value = operand_bytes(|op| literal_bytes(op, conn, need));
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

    /// `seen_fast` is `seen`: every value form (borrowed and owned, ASCII and not, each
    /// literal character set) under every connection character set and none.
    #[test]
    fn seen_fast_is_seen() {
        use std::borrow::Cow;
        let charsets = [
            LitCharset::Binary,
            LitCharset::Utf8,
            LitCharset::Connection,
            LitCharset::Other,
            LitCharset::Wide,
        ];
        let mut values = vec![
            Value::Int(-1_700_000_000_000),
            Value::Int(i128::MAX),
            Value::Null,
            Value::Default,
            Value::Param(3),
            Value::Unknown,
        ];
        for bytes in [
            &b"row1"[..],
            b"",
            b"\xc3\xa9t\xc3\xa9",
            b"\xff\x00",
            b"it's",
        ] {
            for charset in charsets {
                values.push(Value::Bytes {
                    bytes: Cow::Borrowed(bytes),
                    charset,
                });
                values.push(Value::Bytes {
                    bytes: Cow::Owned(bytes.to_vec()),
                    charset,
                });
            }
        }
        let conns = [
            None,
            Some(ConnCharset::Binary),
            Some(ConnCharset::Utf8),
            Some(ConnCharset::Latin1),
            Some(ConnCharset::Other),
            Some(ConnCharset::Wide),
        ];
        for v in &values {
            for conn in conns {
                let (mut a, mut b) = (false, false);
                assert_eq!(
                    seen_fast(v, conn, &mut a),
                    seen(v, conn, &mut b),
                    "{v:?} {conn:?}"
                );
                assert_eq!(a, b, "{v:?} {conn:?}");
            }
        }
    }
}
