//! LOAD DATA LOCAL on an HBase table: its file's rows checked as the file passes, T filled in
//! where the column list leaves it out, and a load whose file the proxy cannot read.

use super::checked::{
    col_is, rowkey, unchecked, Checked, RowTrace, Rows, Touch, WriteRules, MAX_FINDINGS,
};

use crate::hbase::cells::{self, Cell, Seen};
use crate::hbase::rules::{Enforcement, Finding, Level, Rule};
use crate::hbase::schema::TableSchema;

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
    /// What EXPLAIN OBKV shows of the rows (None: a LOAD that runs).
    trace: Option<RowTrace>,
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
            rows: Rows::new(schema).observing(rules.observe),
            max_row,
            trace: None,
        }
    }

    /// Keeps what EXPLAIN OBKV shows of the file's rows (the first `limit` of them).
    pub fn traced(mut self, limit: usize) -> Self {
        self.trace = Some(RowTrace::new(limit));
        self
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
                        Rule::C2,
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
                    // a field is a string: T's reading of it is the cell rules' (C4)
                    let t = get(self.slots[2]);
                    let cell = Cell {
                        k: rowkey(get(self.slots[0])),
                        q: get(self.slots[1]),
                        t,
                        v: get(self.slots[3]),
                    };
                    let before = self.findings.len();
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
                    if let Some(t) = self.trace.as_mut() {
                        let found = self.findings.get(before..).unwrap_or_default();
                        t.row(&self.rows.schema, self.row as u64, &cell.k, found);
                    }
                    self.rows.row(cell.k);
                    if self.refused() {
                        return;
                    }
                }
            }
        }
    }

    /// The file ended: the statement's checks, and what EXPLAIN OBKV shows of its rows.
    pub fn finish_traced(mut self) -> (Checked, RowTrace) {
        let trace = self.trace.take().unwrap_or_default();
        (self.finish(), trace)
    }

    /// The file ended: the statement's checks.
    pub fn finish(mut self) -> Checked {
        if !self.refused() {
            self.file.finish();
            self.drain();
        }
        let (touch, rows) = self.rows.finish_seen();
        Checked {
            findings: self.findings,
            touch: Some(touch),
            rows,
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
        rows: Default::default(),
        findings: vec![unchecked(format!(
            "LOAD DATA into {table}: {why}; its cells were not checked"
        ))],
        touch: Some(Touch::Unknown {
            table: table.to_string(),
            why,
        }),
    }
}
