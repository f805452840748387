//! The OBKV-HBase cell rules for writes (issue 10), pure: what one cell written to an HBase
//! table may be, and the timestamp convention. The statement readers (`sql::insert`,
//! `sql::dml`) say what a statement writes; this module judges each cell and returns
//! `Finding`s, which `rules::judge` turns into a refusal or warnings by the enforcement mode.
//!
//! Rules (docs/RULES.md lists each with its code):
//! - C1 K not empty; C2 K, Q, V not longer than declared (V: the blob cell limit when V is a
//!   blob) — the proxy refuses what a non-strict sql_mode would silently truncate;
//! - C3 V not NULL;
//! - C4 T's sign follows the convention (`negated-ms`: T ≤ 0; `ms`: T ≥ 0); C5 a T whose
//!   magnitude looks like seconds or microseconds gets a warning;
//! - C6 the generated prefix column is not written; C7 UPDATE does not change K, Q or T;
//! - C8 a value the proxy cannot see is noted, not checked.

use super::rules::{Finding, Level, Rule, ER_NOT_SUPPORTED};
use crate::protocol::constants::er;
use crate::sql::ddl::CreateTable;

/// 1406 ER_DATA_TOO_LONG ("Data too long for column"), SQLSTATE 22001.
pub const ER_DATA_TOO_LONG: u16 = er::DATA_TOO_LONG;
/// 1048 ER_BAD_NULL_ERROR ("Column cannot be null"), SQLSTATE 23000.
pub const ER_BAD_NULL: u16 = er::BAD_NULL_ERROR;
/// 1292 ER_TRUNCATED_WRONG_VALUE: a value the column's convention cannot hold, SQLSTATE 22007.
pub const ER_WRONG_VALUE: u16 = er::TRUNCATED_WRONG_VALUE;
/// 3105 ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN, SQLSTATE HY000.
pub const ER_GENERATED_COLUMN: u16 = er::NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN;

/// `hbase.timestamp`: how T encodes a cell's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Convention {
    /// OceanBase 4.x's HBase API: T = −epoch_ms (newer versions sort first).
    NegatedMs,
    /// The documented model: T = epoch_ms.
    Ms,
}

impl Convention {
    /// T for a cell written at `epoch_ms`.
    pub fn encode(self, epoch_ms: i64) -> i64 {
        match self {
            Convention::NegatedMs => epoch_ms.saturating_neg(),
            Convention::Ms => epoch_ms,
        }
    }
}

/// The byte limits of one table's cells, from its definition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellLimits {
    pub k: Option<u64>,
    pub q: Option<u64>,
    pub v: Option<u64>,
    /// The generated prefix column, if any (never written).
    pub prefix_column: Option<String>,
    /// Every column in definition order (how an INSERT without a column list is read).
    pub columns: Vec<String>,
}

impl CellLimits {
    /// From the table's definition; `blob_limit` applies to a blob-typed V.
    pub fn from_definition(def: &CreateTable, blob_limit: u64) -> CellLimits {
        let declared = |name: &str| {
            def.columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))
                .map(|c| {
                    let t = c.data_type.name.as_str();
                    match (t, c.data_type.length) {
                        (_, Some(n)) if !t.ends_with("BLOB") => n,
                        ("TINYBLOB", _) => 255,
                        ("BLOB", _) => 65_535.min(blob_limit),
                        ("MEDIUMBLOB", _) => 16_777_215.min(blob_limit),
                        _ => blob_limit,
                    }
                })
        };
        CellLimits {
            k: declared("K"),
            q: declared("Q"),
            v: declared("V"),
            prefix_column: def.prefix_column().map(|(c, _)| c.to_string()),
            columns: def.columns.iter().map(|c| c.name.clone()).collect(),
        }
    }
}

/// What the proxy knows of one value written to a cell column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen<'a> {
    /// The bytes the column receives (certain: literal, binary or known charset).
    Bytes(&'a [u8]),
    /// An integer.
    Int(i128),
    Null,
    /// The rowkey left out of an INSERT, `DEFAULT`, a bulk execute's DEFAULT / IGNORE
    /// indicator, a LOAD DATA row without its field: the backend fills in the column's
    /// default, an empty rowkey (C1).
    DefaultK,
    /// Not written by the statement (the column's default applies).
    Absent,
    /// An expression, a function, a value in an uncertain character set: not checked.
    Unknown,
    /// A value sent in pieces (COM_STMT_SEND_LONG_DATA): only its length is known.
    Length(u64),
}

/// The plausible window for |T| in milliseconds (`hbase.timestamp_window_ms`): outside it a
/// T looks like seconds or microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub min_ms: i64,
    pub max_ms: i64,
}

impl Default for Window {
    /// 2001-09-09 (10^12 ms) to 2286-11-20 (10^13 ms): a seconds timestamp is about 10^9, a
    /// microseconds one about 10^15.
    fn default() -> Self {
        Window {
            min_ms: 1_000_000_000_000,
            max_ms: 10_000_000_000_000,
        }
    }
}

/// The cell columns of one row as the statement writes them.
#[derive(Debug, Clone, Copy)]
pub struct Cell<'a> {
    pub k: Seen<'a>,
    pub q: Seen<'a>,
    pub t: Seen<'a>,
    pub v: Seen<'a>,
}

fn error(rule: Rule, code: u16, sqlstate: &'static str, message: String) -> Finding {
    Finding::error(rule, code, sqlstate, message)
}

fn warning(rule: Rule, message: String) -> Finding {
    Finding {
        level: Level::Warning,
        ..Finding::error(rule, ER_WRONG_VALUE, "22007", message)
    }
}

fn note(rule: Rule, message: String) -> Finding {
    Finding {
        level: Level::Note,
        ..warning(rule, message)
    }
}

/// Judges one written cell (`row`: its 1-based position in the statement, for messages).
pub fn check_cell(
    cell: &Cell<'_>,
    limits: &CellLimits,
    convention: Convention,
    window: Window,
    row: usize,
    out: &mut Vec<Finding>,
) {
    let mut unseen: Vec<&str> = Vec::new();
    // C1, C2 on K
    match cell.k {
        Seen::Bytes([]) => out.push(error(
            Rule::C1,
            ER_WRONG_VALUE,
            "22007",
            format!("row {row}: the rowkey K is empty; an HBase row needs a rowkey"),
        )),
        Seen::Bytes(b) => too_long("K", b.len(), limits.k, row, out),
        Seen::Null => out.push(error(
            Rule::C1,
            ER_BAD_NULL,
            "23000",
            format!("row {row}: the rowkey K is NULL"),
        )),
        // sent in pieces (COM_STMT_SEND_LONG_DATA) that hold nothing: an empty rowkey
        Seen::Length(0) => out.push(error(
            Rule::C1,
            ER_WRONG_VALUE,
            "22007",
            format!("row {row}: the rowkey K is empty (sent as long data of no bytes); an HBase row needs a rowkey"),
        )),
        Seen::Length(n) => too_long_n("K", n, limits.k, row, out),
        Seen::Unknown | Seen::Int(_) => unseen.push("K"),
        Seen::DefaultK => out.push(error(
            Rule::C1,
            ER_WRONG_VALUE,
            "22007",
            format!("row {row}: the rowkey K is left to its default (left out, DEFAULT, or a missing field): the row would get an empty rowkey; an HBase row needs one"),
        )),
        Seen::Absent => {}
    }
    match cell.q {
        Seen::Bytes(b) => too_long("Q", b.len(), limits.q, row, out),
        Seen::Length(n) => too_long_n("Q", n, limits.q, row, out),
        Seen::Unknown | Seen::Int(_) => unseen.push("Q"),
        _ => {}
    }
    // C3, C2 on V
    match cell.v {
        Seen::Null => out.push(error(
            Rule::C3,
            ER_BAD_NULL,
            "23000",
            format!("row {row}: the value V is NULL; an HBase cell always has a value (write an empty one, or delete the cell)"),
        )),
        Seen::Bytes(b) => too_long("V", b.len(), limits.v, row, out),
        Seen::Length(n) => too_long_n("V", n, limits.v, row, out),
        Seen::Unknown | Seen::Int(_) => unseen.push("V"),
        _ => {}
    }
    // C4, C5 on T
    match cell.t {
        Seen::Int(t) => check_t(t, convention, window, row, out),
        Seen::Null => out.push(error(
            Rule::C4,
            ER_BAD_NULL,
            "23000",
            format!("row {row}: the timestamp T is NULL"),
        )),
        // a string: what the backend makes of it for the integer column, on every path (a
        // text literal, a bound string, EXECUTE … USING, a LOAD field)
        Seen::Bytes(b) => match int_of_text(b) {
            Some(t) => check_t(t, convention, window, row, out),
            None => out.push(error(
                Rule::C4,
                ER_WRONG_VALUE,
                "22007",
                format!("row {row}: the timestamp T is the string {}, which is not an integer; give T as an integer", shown(b)),
            )),
        },
        Seen::Unknown | Seen::Length(_) => unseen.push("T"),
        Seen::Absent | Seen::DefaultK => {}
    }
    if !unseen.is_empty() {
        out.push(note(
            Rule::C8,
            format!(
                "row {row}: {} not checked (an expression or a value the proxy cannot read); the backend's own constraints apply",
                unseen.join(", ")
            ),
        ));
    }
}

/// The integer the backend reads from a string given for an integer column when it reads it
/// exactly: an optional sign and decimal digits, with spaces around. None for anything else
/// (a fraction, an exponent, other characters: rounded, cut or refused by the backend).
pub fn int_of_text(b: &[u8]) -> Option<i128> {
    let t = b.trim_ascii();
    let digits = t
        .strip_prefix(b"-")
        .or_else(|| t.strip_prefix(b"+"))
        .unwrap_or(t);
    if digits.is_empty() || digits.len() > 30 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse::<i128>().ok()
}

/// A value in a message: quoted, lossy, at most 40 bytes.
fn shown(b: &[u8]) -> String {
    let cut = b.get(..40).unwrap_or(b);
    let more = if cut.len() < b.len() { "…" } else { "" };
    format!("'{}{more}'", String::from_utf8_lossy(cut).escape_debug())
}

#[inline]
fn too_long(column: &str, len: usize, limit: Option<u64>, row: usize, out: &mut Vec<Finding>) {
    too_long_n(column, len as u64, limit, row, out)
}

/// C2 (the test in line: a cell of every row of a batch passes it).
#[inline]
fn too_long_n(column: &str, len: u64, limit: Option<u64>, row: usize, out: &mut Vec<Finding>) {
    if let Some(limit) = limit {
        if len > limit {
            too_long_found(column, len, limit, row, out);
        }
    }
}

#[cold]
#[inline(never)]
fn too_long_found(column: &str, len: u64, limit: u64, row: usize, out: &mut Vec<Finding>) {
    out.push(error(
        Rule::C2,
        ER_DATA_TOO_LONG,
        "22001",
        format!("row {row}: {column} is {len} bytes, longer than its {limit}; a non-strict sql_mode would cut it silently"),
    ));
}

/// C4 and C5 for one T (the tests in line, the findings out of it: the T of every row of a
/// batch passes them).
#[inline]
pub fn check_t(
    t: i128,
    convention: Convention,
    window: Window,
    row: usize,
    out: &mut Vec<Finding>,
) {
    let wrong_sign = match convention {
        Convention::NegatedMs => t > 0,
        Convention::Ms => t < 0,
    };
    let magnitude = t.unsigned_abs();
    let outside =
        t != 0 && (magnitude < window.min_ms as u128 || magnitude > window.max_ms as u128);
    if wrong_sign {
        t_wrong_sign(t, convention, row, out);
    } else if outside {
        let unit = if magnitude < window.min_ms as u128 {
            "seconds"
        } else {
            "microseconds"
        };
        t_outside(t, unit, row, out);
    }
}

/// C4: T's sign is the other convention's.
#[cold]
#[inline(never)]
fn t_wrong_sign(t: i128, convention: Convention, row: usize, out: &mut Vec<Finding>) {
    // both ways out: the value in this convention, or the other convention
    let message = match convention {
        Convention::NegatedMs => format!(
            "row {row}: T = {t} is positive, but T follows the default timestamp convention 'negated-ms' (OceanBase 4.x's HBase API stores T = -epoch_ms, newer versions first); write T = -epoch_ms (here {}), or set hbase.timestamp = \"ms\" in the proxy's configuration to store T = epoch_ms",
            -t
        ),
        Convention::Ms => format!(
            "row {row}: T = {t} is negative, but T follows the timestamp convention 'ms' (T = epoch_ms); write T = epoch_ms (here {}), or set hbase.timestamp = \"negated-ms\" in the proxy's configuration to store T = -epoch_ms as OceanBase 4.x's HBase API does",
            -t
        ),
    };
    out.push(error(Rule::C4, ER_WRONG_VALUE, "22007", message));
}

/// C5: T's magnitude looks like `unit`, not milliseconds.
#[cold]
#[inline(never)]
fn t_outside(t: i128, unit: &str, row: usize, out: &mut Vec<Finding>) {
    out.push(warning(
        Rule::C5,
        format!("row {row}: T = {t} looks like {unit}, not milliseconds"),
    ));
}

/// C6: a statement that writes the generated prefix column.
pub fn check_prefix_column_written<C: AsRef<[u8]>>(
    columns: &[C],
    limits: &CellLimits,
) -> Option<Finding> {
    let p = limits.prefix_column.as_deref()?;
    columns
        .iter()
        .any(|c| c.as_ref().eq_ignore_ascii_case(p.as_bytes()))
        .then(|| {
            error(
                Rule::C6,
                ER_GENERATED_COLUMN,
                "HY000",
                format!(
                    "the generated prefix column {p} is written; the database derives it from K"
                ),
            )
        })
}

/// C6: a row gives the prefix column a value other than its rowkey's prefix (a value equal
/// to it is what the backend derives, and is left to the backend).
pub fn prefix_value_mismatch(column: &str, n: usize, row: usize) -> Finding {
    error(
        Rule::C6,
        ER_GENERATED_COLUMN,
        "HY000",
        format!(
            "row {row}: the prefix column {column} is given a value that is not substring(K, 1, {n}); the database derives it from K (leave it out, write DEFAULT, or the rowkey's first {n} bytes)"
        ),
    )
}

/// C7: an UPDATE (or ON DUPLICATE KEY UPDATE) that assigns K, Q or T.
pub fn check_cell_address_changed<C: AsRef<[u8]>>(assigned: &[C]) -> Option<Finding> {
    let changed: Vec<&str> = ["K", "Q", "T"]
        .into_iter()
        .filter(|c| {
            assigned
                .iter()
                .any(|a| a.as_ref().eq_ignore_ascii_case(c.as_bytes()))
        })
        .collect();
    (!changed.is_empty()).then(|| {
        error(
            Rule::C7,
            ER_NOT_SUPPORTED,
            "42000",
            format!(
                "UPDATE of {} changes a cell's address; cells are immutable: write a new version (a new T) instead",
                changed.join(", ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> CellLimits {
        CellLimits {
            k: Some(8),
            q: Some(4),
            v: Some(16),
            prefix_column: Some("K_PREFIX".into()),
            columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
        }
    }

    fn rules(cell: Cell<'_>, convention: Convention) -> Vec<Rule> {
        let mut out = Vec::new();
        check_cell(&cell, &limits(), convention, Window::default(), 1, &mut out);
        out.iter().map(|f| f.rule).collect()
    }

    const NOW: i128 = 1_763_700_000_000;

    fn ok_cell() -> Cell<'static> {
        Cell {
            k: Seen::Bytes(b"row1"),
            q: Seen::Bytes(b"q"),
            t: Seen::Int(-NOW),
            v: Seen::Bytes(b"value"),
        }
    }

    #[test]
    fn a_good_cell_passes() {
        assert!(rules(ok_cell(), Convention::NegatedMs).is_empty());
        let positive = Cell {
            t: Seen::Int(NOW),
            ..ok_cell()
        };
        assert!(rules(positive, Convention::Ms).is_empty());
        // boundary lengths are allowed
        let full = Cell {
            k: Seen::Bytes(b"12345678"),
            q: Seen::Bytes(b"1234"),
            v: Seen::Bytes(&[0u8; 16]),
            ..ok_cell()
        };
        assert!(rules(full, Convention::NegatedMs).is_empty());
    }

    #[test]
    fn each_rule_fires() {
        let c = |f: fn(&mut Cell<'static>)| {
            let mut cell = ok_cell();
            f(&mut cell);
            rules(cell, Convention::NegatedMs)
        };
        assert_eq!(c(|x| x.k = Seen::Bytes(b"")), [Rule::C1]);
        assert_eq!(c(|x| x.k = Seen::Null), [Rule::C1]);
        assert_eq!(c(|x| x.k = Seen::Bytes(b"123456789")), [Rule::C2]);
        assert_eq!(c(|x| x.q = Seen::Bytes(b"12345")), [Rule::C2]);
        assert_eq!(c(|x| x.v = Seen::Bytes(&[1u8; 17])), [Rule::C2]);
        assert_eq!(c(|x| x.v = Seen::Null), [Rule::C3]);
        assert_eq!(c(|x| x.t = Seen::Int(NOW)), [Rule::C4]);
        assert_eq!(c(|x| x.k = Seen::Length(0)), [Rule::C1]);
        assert_eq!(c(|x| x.k = Seen::Length(3)), Vec::<Rule>::new());
        assert_eq!(c(|x| x.t = Seen::Null), [Rule::C4]);
        assert_eq!(c(|x| x.t = Seen::Int(-1_763_700_000)), [Rule::C5]); // seconds
        assert_eq!(c(|x| x.t = Seen::Int(-1_763_700_000_000_000)), [Rule::C5]); // µs
        assert_eq!(c(|x| x.v = Seen::Unknown), [Rule::C8]);
        assert_eq!(
            rules(
                Cell {
                    t: Seen::Int(-NOW),
                    ..ok_cell()
                },
                Convention::Ms
            ),
            [Rule::C4]
        );
    }

    #[test]
    fn the_sign_rule_names_both_ways_out() {
        let message = |t: i128, convention: Convention| {
            let mut out = Vec::new();
            check_t(t, convention, Window::default(), 1, &mut out);
            assert_eq!(out.len(), 1);
            assert_eq!((out[0].rule, out[0].code), (Rule::C4, ER_WRONG_VALUE));
            out.remove(0).message
        };
        let m = message(NOW, Convention::NegatedMs);
        assert!(m.contains("T = -epoch_ms (here -1763700000000)"), "{m}");
        assert!(m.contains("OceanBase 4.x"), "{m}");
        assert!(m.contains(r#"set hbase.timestamp = "ms""#), "{m}");
        let m = message(-NOW, Convention::Ms);
        assert!(m.contains("T = epoch_ms (here 1763700000000)"), "{m}");
        assert!(m.contains(r#"set hbase.timestamp = "negated-ms""#), "{m}");
    }

    #[test]
    fn levels_and_codes() {
        let mut out = Vec::new();
        let cell = Cell {
            k: Seen::Bytes(b""),
            t: Seen::Int(-5),
            v: Seen::Unknown,
            ..ok_cell()
        };
        check_cell(
            &cell,
            &limits(),
            Convention::NegatedMs,
            Window::default(),
            3,
            &mut out,
        );
        let got: Vec<_> = out.iter().map(|f| (f.rule, f.level, f.code)).collect();
        assert_eq!(
            got,
            [
                (Rule::C1, Level::Error, ER_WRONG_VALUE),
                (Rule::C5, Level::Warning, ER_WRONG_VALUE),
                (Rule::C8, Level::Note, ER_WRONG_VALUE)
            ]
        );
        assert!(out[0].message.contains("row 3"));
    }

    #[test]
    fn prefix_column_and_address() {
        let l = limits();
        assert!(check_prefix_column_written(&[b"K".to_vec(), b"k_prefix".to_vec()], &l).is_some());
        assert!(check_prefix_column_written(&[b"K".to_vec(), b"V".to_vec()], &l).is_none());
        let f = check_cell_address_changed(&[b"V".to_vec(), b"t".to_vec()]).expect("refused");
        assert_eq!(f.rule, Rule::C7);
        assert!(f.message.contains("UPDATE of T"));
        assert!(check_cell_address_changed(&[b"V".to_vec()]).is_none());
    }

    #[test]
    fn limits_come_from_the_definition() {
        let def = |v: &str| {
            let sql = format!(
                "CREATE TABLE g$f (K varbinary(1024), Q varbinary(256), T bigint, V {v} NOT NULL, \
                 K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)), \
                 PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K_PREFIX) PARTITIONS 97"
            );
            match crate::sql::ddl::parse(sql.as_bytes()).expect("parses") {
                Some(crate::sql::ddl::Statement::CreateTable(t)) => *t,
                other => panic!("{other:?}"),
            }
        };
        let blob_limit = 10 << 20;
        let l = CellLimits::from_definition(&def("varbinary(1048576)"), blob_limit);
        assert_eq!((l.k, l.q, l.v), (Some(1024), Some(256), Some(1_048_576)));
        assert_eq!(l.prefix_column.as_deref(), Some("K_PREFIX"));
        let l = CellLimits::from_definition(&def("longblob"), blob_limit);
        assert_eq!(l.v, Some(blob_limit));
        let l = CellLimits::from_definition(&def("blob"), blob_limit);
        assert_eq!(l.v, Some(65_535));
    }

    #[test]
    fn convention_encodes_now() {
        assert_eq!(Convention::NegatedMs.encode(5), -5);
        assert_eq!(Convention::Ms.encode(5), 5);
        assert_eq!(Convention::NegatedMs.encode(i64::MIN), i64::MAX);
    }
}
