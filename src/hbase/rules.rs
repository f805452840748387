//! The OBKV-HBase rules for DDL (documented model; `docs/RULES.md` lists each with its error
//! code). OceanBase itself only checks that K, Q, T, V sit at positions 0–3, so a wrong table
//! would otherwise be found late, by an HBase client.

use crate::protocol::constants::er;
use crate::sql::ddl::{AlterAction, CreateTable, PartitionClause, TableName};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Note,
}

impl Level {
    /// As SHOW WARNINGS names it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "Error",
            Level::Warning => "Warning",
            Level::Note => "Note",
        }
    }

    /// A level as SHOW WARNINGS names it (the backend's); anything else reads as a warning.
    pub fn parse(name: &[u8]) -> Level {
        match name {
            b"Error" => Level::Error,
            b"Note" => Level::Note,
            _ => Level::Warning,
        }
    }
}

/// The OBKV-HBase rules (docs/RULES.md): R for DDL, C for cells, X for transactions. R0 is the
/// proxy's note on what it checked of a table's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    R0,
    R1,
    R2,
    R3,
    R4,
    R5,
    R6,
    R7,
    R8,
    R9,
    C1,
    C2,
    C3,
    C4,
    C5,
    C6,
    C7,
    C8,
    C9,
    X1,
    X2,
    X3,
}

impl Rule {
    /// As docs/RULES.md and the messages name it.
    pub fn id(self) -> &'static str {
        use Rule::*;
        match self {
            R0 => "R0",
            R1 => "R1",
            R2 => "R2",
            R3 => "R3",
            R4 => "R4",
            R5 => "R5",
            R6 => "R6",
            R7 => "R7",
            R8 => "R8",
            R9 => "R9",
            C1 => "C1",
            C2 => "C2",
            C3 => "C3",
            C4 => "C4",
            C5 => "C5",
            C6 => "C6",
            C7 => "C7",
            C8 => "C8",
            C9 => "C9",
            X1 => "X1",
            X2 => "X2",
            X3 => "X3",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A warning or note the client reads with SHOW WARNINGS (and counts in the OK packet):
/// the proxy's findings, and the backend's warnings it keeps for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub level: Level,
    pub code: u16,
    /// The SQLSTATE GET DIAGNOSTICS reports for it.
    pub sqlstate: &'static str,
    pub message: String,
}

impl Note {
    pub fn new(level: Level, code: u16, message: impl Into<String>) -> Note {
        Note {
            level,
            code,
            sqlstate: "HY000",
            message: message.into(),
        }
    }
}

impl From<Finding> for Note {
    fn from(f: Finding) -> Note {
        Note {
            level: f.level,
            code: f.code,
            sqlstate: f.sqlstate,
            message: f.message,
        }
    }
}

/// One rule's verdict on a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub level: Level,
    pub code: u16,
    pub sqlstate: &'static str,
    pub message: String,
}

impl Finding {
    pub(crate) fn error(rule: Rule, code: u16, sqlstate: &'static str, message: String) -> Self {
        Finding {
            rule,
            level: Level::Error,
            code,
            sqlstate,
            message: format!("OBKV-HBase rule {rule}: {message}"),
        }
    }
    /// The ERR the client gets when this finding refuses its statement.
    pub fn to_error(&self) -> crate::protocol::packets::ErrorInfo {
        crate::protocol::packets::ErrorInfo::new(self.code, self.sqlstate, self.message.clone())
    }

    fn unsupported(rule: Rule, message: String) -> Self {
        Self::error(rule, ER_NOT_SUPPORTED, "42000", message)
    }
    fn warning(rule: Rule, message: String) -> Self {
        Finding {
            rule,
            level: Level::Warning,
            code: ER_NOT_SUPPORTED,
            sqlstate: "42000",
            message: format!("OBKV-HBase rule {rule}: {message}"),
        }
    }
    fn note(rule: Rule, message: String) -> Self {
        Finding {
            level: Level::Note,
            ..Self::warning(rule, message)
        }
    }
}

/// 1235 ER_NOT_SUPPORTED_YET: "not supported", the code drivers map to feature errors.
pub const ER_NOT_SUPPORTED: u16 = er::NOT_SUPPORTED_YET;
pub const ER_WRONG_TABLE_NAME: u16 = er::WRONG_TABLE_NAME;
pub const ER_NO_SUCH_TABLEGROUP: u16 = er::NO_SUCH_TABLE;
pub const ER_WRONG_COLUMN_NAME: u16 = er::WRONG_COLUMN_NAME;
pub const ER_TOO_BIG_FIELDLENGTH: u16 = er::TOO_BIG_FIELDLENGTH;
pub const ER_WRONG_ARGUMENTS: u16 = er::WRONG_ARGUMENTS;

pub const RECOMMENDED_PARTITIONS: [u32; 6] = [23, 59, 97, 193, 389, 997];
pub const MAX_ROWKEY: u64 = 1024;
pub const MAX_QUALIFIER: u64 = 256;
pub const MAX_VALUE: u64 = 1 << 20;

/// Switches from the `[hbase]` configuration that change what the rules accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleConfig {
    pub require_tablegroup_option: bool,
    pub multiple_families: bool,
}

/// What the catalog knows about the table's group when the statement arrives.
#[derive(Debug, Clone, Default)]
pub struct GroupState {
    pub exists: bool,
    /// Families already in the group (other than the table being defined) and their partitioning.
    pub families: Vec<(String, Option<PartitionClause>)>,
}

/// How the rules apply (`hbase.enforcement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Enforcement {
    /// Refuse statements that break a rule (nothing reaches the database).
    Strict,
    /// Forward them, with the findings as warnings.
    Warn,
    /// Do not check (table groups and DDL translation still work).
    Off,
}

/// What the enforcement mode makes of a statement's findings.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The statement is refused with this finding (strict mode, first error).
    pub refuse: Option<Finding>,
    /// Otherwise these become the statement's warnings (errors demoted to warnings).
    pub warnings: Vec<Finding>,
}

/// Applies the enforcement mode: in strict mode the first error refuses the statement; in
/// warn mode every finding becomes a warning (errors as `Warning`); off ignores them all.
pub fn judge(mode: Enforcement, findings: Vec<Finding>) -> Verdict {
    match mode {
        Enforcement::Off => Verdict::default(),
        Enforcement::Strict if has_errors(&findings) => Verdict {
            refuse: findings.into_iter().find(|f| f.level == Level::Error),
            warnings: Vec::new(),
        },
        _ => Verdict {
            refuse: None,
            warnings: findings
                .into_iter()
                .map(|f| Finding {
                    level: if f.level == Level::Note {
                        Level::Note
                    } else {
                        Level::Warning
                    },
                    ..f
                })
                .collect(),
        },
    }
}

pub fn has_errors(f: &[Finding]) -> bool {
    f.iter().any(|x| x.level == Level::Error)
}

/// Rules 1–9 for CREATE TABLE of an HBase table.
pub fn check_create(t: &CreateTable, cfg: RuleConfig, group: &GroupState) -> Vec<Finding> {
    let mut out = Vec::new();
    // a table with none of K, Q, T, V was not meant as an HBase table: say what its `$` name
    // means here and the ways out, not the first HBase rule it breaks
    let hbase_column = |c: &&crate::sql::ddl::Column| {
        ["K", "Q", "T", "V"]
            .iter()
            .any(|k| c.name.eq_ignore_ascii_case(k))
    };
    if !t.columns.is_empty() && !t.columns.iter().any(|c| hbase_column(&c)) {
        let parts = match t.name.hbase_parts() {
            Some((g, f)) => format!(" (table group '{g}', family '{f}')"),
            None => String::new(),
        };
        out.push(Finding::error(
            Rule::R1,
            ER_WRONG_TABLE_NAME,
            "42000",
            format!(
                "'{}' is an HBase table name in this database{parts}: a '$' in a table name makes it a column family, whose columns are K, Q, T, V; for a plain table choose a name without '$', or list the HBase databases in hbase.databases so that this one is not among them",
                t.name.name
            ),
        ));
        return out;
    }
    check_name_and_group(t, cfg, group, &mut out);
    check_columns(t, &mut out);
    check_primary_key(t, &mut out);
    check_partitioning(t.partition.as_ref(), t, &mut out);
    if !t.indexes.is_empty() {
        let kinds: Vec<&str> = t.indexes.iter().map(|i| i.kind.as_str()).collect();
        out.push(Finding::unsupported(
            Rule::R7,
            format!("secondary indexes are not allowed on HBase tables (found {}); remove them — rows are found by rowkey (K)", kinds.join(", ")),
        ));
    }
    if t.checks > 0 {
        out.push(Finding::unsupported(
            Rule::R2,
            "CHECK constraints are not part of the HBase schema; remove them".into(),
        ));
    }
    check_families(t.partition.as_ref(), t, cfg, group, &mut out);
    if let Some(o) = t.option("KV_ATTRIBUTES") {
        if let Err(msg) = check_kv_attributes(&o.value) {
            out.push(Finding::error(Rule::R9, ER_WRONG_ARGUMENTS, "HY000", msg));
        }
    }
    out
}

fn check_name_and_group(
    t: &CreateTable,
    cfg: RuleConfig,
    group: &GroupState,
    out: &mut Vec<Finding>,
) {
    let Some((g, _)) = t.name.hbase_parts() else {
        out.push(Finding::error(
            Rule::R1,
            ER_WRONG_TABLE_NAME,
            "42000",
            format!("HBase table name '{}' must be group$family with both parts non-empty and one '$' (for example htable1$family1)", t.name.name),
        ));
        return;
    };
    match t.tablegroup() {
        Some(opt) if !opt.eq_ignore_ascii_case(g) => out.push(Finding::unsupported(
            Rule::R1,
            format!("TABLEGROUP = {opt} does not match the group part of '{}'; write TABLEGROUP = {g}", t.name.name),
        )),
        None if cfg.require_tablegroup_option => out.push(Finding::unsupported(
            Rule::R1,
            format!("the TABLEGROUP option is required: add TABLEGROUP = {g} after the column list (or set hbase.require_tablegroup_option = false)"),
        )),
        _ => {}
    }
    if !group.exists {
        out.push(Finding::error(
            Rule::R1,
            ER_NO_SUCH_TABLEGROUP,
            "42S02",
            format!("table group '{g}' does not exist; run CREATE TABLEGROUP {g} first"),
        ));
    }
}

fn check_columns(t: &CreateTable, out: &mut Vec<Finding>) {
    let names: Vec<String> = t
        .columns
        .iter()
        .map(|c| c.name.to_ascii_uppercase())
        .collect();
    let first4: Vec<&str> = names.iter().take(4).map(String::as_str).collect();
    if first4 != ["K", "Q", "T", "V"] {
        out.push(Finding::error(
            Rule::R2,
            ER_WRONG_COLUMN_NAME,
            "42000",
            format!("the columns must be K, Q, T, V in that order (found {}); HBase clients read them by position", names.join(", ")),
        ));
    }
    let extra = t.columns.iter().skip(4).collect::<Vec<_>>();
    if extra.len() > 1 {
        out.push(Finding::error(
            Rule::R2,
            ER_WRONG_COLUMN_NAME,
            "42000",
            format!(
                "only one column besides K, Q, T, V is allowed, a generated prefix of K (found {})",
                extra
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    for c in &extra {
        match c.generated.as_ref().map(|g| g.prefix_of_k) {
            Some(Some(n)) if n >= 1 => {
                if c.data_type.name != "VARBINARY" {
                    out.push(Finding::unsupported(Rule::R3, format!("prefix column {} must be varbinary, not {}", c.name, c.data_type.name.to_lowercase())));
                }
            }
            Some(Some(_)) => out.push(Finding::unsupported(Rule::R2, format!("prefix column {} needs a length n >= 1 in substring(K, 1, n)", c.name))),
            _ => out.push(Finding::error(
                Rule::R2,
                ER_WRONG_COLUMN_NAME,
                "42000",
                format!("extra column {} is not allowed: the only extra column is a generated prefix, `{} varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, n))`", c.name, c.name),
            )),
        }
    }
    let by_name = |n: &str| t.columns.iter().find(|c| c.name.eq_ignore_ascii_case(n));
    for (col, max) in [("K", MAX_ROWKEY), ("Q", MAX_QUALIFIER)] {
        if let Some(c) = by_name(col) {
            match (c.data_type.name.as_str(), c.data_type.length) {
                ("VARBINARY", Some(l)) if l <= max => {}
                ("VARBINARY", Some(l)) => out.push(Finding::error(
                    Rule::R3,
                    ER_TOO_BIG_FIELDLENGTH,
                    "42000",
                    format!("{col} varbinary({l}) is too long: at most varbinary({max})"),
                )),
                (other, _) => out.push(Finding::unsupported(
                    Rule::R3,
                    format!(
                        "{col} must be varbinary(L) with L <= {max}, not {}",
                        other.to_lowercase()
                    ),
                )),
            }
        }
    }
    if let Some(c) = by_name("T") {
        if c.data_type.name != "BIGINT" {
            out.push(Finding::unsupported(
                Rule::R3,
                format!(
                    "T must be bigint (milliseconds), not {}",
                    c.data_type.name.to_lowercase()
                ),
            ));
        }
    }
    if let Some(c) = by_name("V") {
        match (c.data_type.name.as_str(), c.data_type.length) {
            ("VARBINARY", Some(l)) if l <= MAX_VALUE => {}
            ("VARBINARY", Some(l)) => out.push(Finding::error(
                Rule::R3,
                ER_TOO_BIG_FIELDLENGTH,
                "42000",
                format!("V varbinary({l}) is too long: at most varbinary({MAX_VALUE}); use longblob for values over 1 MiB"),
            )),
            ("BLOB" | "MEDIUMBLOB" | "LONGBLOB" | "TINYBLOB", _) => {}
            (other, _) => out.push(Finding::unsupported(Rule::R3, format!("V must be varbinary(L <= {MAX_VALUE}) or a blob type, not {}", other.to_lowercase()))),
        }
        if !c.not_null {
            out.push(Finding::warning(
                Rule::R3,
                "V should be NOT NULL: HBase cells always have a value".into(),
            ));
        }
    }
}

fn check_primary_key(t: &CreateTable, out: &mut Vec<Finding>) {
    let pk: Vec<String> = t
        .primary_key
        .iter()
        .flatten()
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if pk != ["K", "Q", "T"] {
        out.push(Finding::unsupported(
            Rule::R4,
            format!(
                "the primary key must be PRIMARY KEY (K, Q, T) in that order (found {})",
                if pk.is_empty() {
                    "none".to_string()
                } else {
                    format!("({})", pk.join(", "))
                }
            ),
        ));
    }
}

/// Rules 5 and 6 for a partition clause (CREATE TABLE or ALTER TABLE ... PARTITION BY).
pub fn check_partitioning(p: Option<&PartitionClause>, t: &CreateTable, out: &mut Vec<Finding>) {
    let Some(p) = p else {
        out.push(Finding::warning(Rule::R5, "no partitioning: fine only for small tables; large ones need PARTITION BY KEY(K) or KEY(prefix column)".into()));
        return;
    };
    if p.subpartitioned {
        out.push(Finding::unsupported(
            Rule::R5,
            "subpartitions are not supported for HBase tables".into(),
        ));
        return;
    }
    let prefix = t.prefix_column();
    let on = |c: &str| p.columns.len() == 1 && p.columns[0].eq_ignore_ascii_case(c);
    match p.kind.as_str() {
        "KEY" if on("K") => {
            check_key_count(p.count.unwrap_or(1), out);
            out.push(Finding::note(Rule::R5, "KEY(K) spreads rows evenly and suits gets by rowkey; a prefix scan will touch every partition".into()));
        }
        "KEY" if prefix.is_some_and(|(name, _)| on(name)) => check_key_count(p.count.unwrap_or(1), out),
        "RANGE COLUMNS" if on("K") => out.push(Finding::warning(
            Rule::R5,
            "RANGE COLUMNS(K) risks skew and hotspots (monotonic rowkeys all land in one partition); prefer KEY(K) or KEY(prefix column)".into(),
        )),
        kind => out.push(Finding::unsupported(
            Rule::R5,
            format!(
                "PARTITION BY {kind}({}) is not an HBase partitioning; use KEY(K), KEY(<prefix column>) or RANGE COLUMNS(K)",
                p.columns.join(", ")
            ),
        )),
    }
}

fn is_prime(n: u32) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

fn check_key_count(n: u64, out: &mut Vec<Finding>) {
    let list = RECOMMENDED_PARTITIONS.map(|x| x.to_string()).join(", ");
    if n.is_multiple_of(2) {
        out.push(Finding::unsupported(
            Rule::R6,
            format!("KEY partition count {n} is even; use an odd count, preferably one of {list}"),
        ));
    } else if n > 997 {
        out.push(Finding::warning(
            Rule::R6,
            format!(
                "{n} KEY partitions is above the documented maximum of 997; recommended: {list}"
            ),
        ));
    } else if !is_prime(n as u32) {
        out.push(Finding::warning(
            Rule::R6,
            format!("KEY partition count {n} is not prime; recommended: {list}"),
        ));
    }
}

/// Rule 8: one family per group unless configured, and then identical partitioning.
fn check_families(
    p: Option<&PartitionClause>,
    t: &CreateTable,
    cfg: RuleConfig,
    group: &GroupState,
    out: &mut Vec<Finding>,
) {
    let Some((g, _)) = t.name.hbase_parts() else {
        return;
    };
    let Some((other, _)) = group.families.first() else {
        return;
    };
    if !cfg.multiple_families {
        out.push(Finding::unsupported(
            Rule::R8,
            format!("table group '{g}' already has family '{other}'; one family per table group (set hbase.multiple_families = true to allow several, as OceanBase 4.x does)"),
        ));
        return;
    }
    if let Some((name, q)) = group
        .families
        .iter()
        .find(|(_, q)| !same_partitioning(p, q.as_ref()))
    {
        let theirs = q
            .as_ref()
            .map_or_else(|| "no partitioning".to_string(), describe);
        out.push(Finding::unsupported(
            Rule::R8,
            format!("every table of group '{g}' must use identical partitioning; family '{name}' uses {theirs}"),
        ));
    }
}

pub fn describe(p: &PartitionClause) -> String {
    let mut s = format!("{}({})", p.kind, p.columns.join(", "));
    if let Some(n) = p.count {
        s.push_str(&format!(" PARTITIONS {n}"));
    }
    s
}

/// Kind, column, count and bounds equal (column names compared case-insensitively).
pub fn same_partitioning(a: Option<&PartitionClause>, b: Option<&PartitionClause>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.kind == b.kind
                && a.count == b.count
                && a.bounds == b.bounds
                && a.columns.len() == b.columns.len()
                && a.columns
                    .iter()
                    .zip(&b.columns)
                    .all(|(x, y)| x.eq_ignore_ascii_case(y))
        }
        _ => false,
    }
}

/// Rule 9: `KV_ATTRIBUTES` as OceanBase 4.x accepts it, with its error texts.
pub fn check_kv_attributes(json: &str) -> Result<(), String> {
    const WRONG: &str = "kv attributes with wrong format";
    let top: Entries<Entries<serde_json::Value>> =
        serde_json::from_str(json).map_err(|_| WRONG.to_string())?;
    let [(key, inner)] = top.0.as_slice() else {
        return Err(WRONG.into());
    };
    if key != "Hbase" {
        return Err(WRONG.into());
    }
    let mut seen = Vec::new();
    for (k, v) in &inner.0 {
        if seen.contains(&k) {
            return Err(WRONG.into());
        }
        seen.push(k);
        match k.as_str() {
            "TimeToLive" => {
                if v.as_i64().is_none_or(|n| n <= 0) {
                    return Err("Time to live of hbase table must be greater than 0".into());
                }
            }
            "MaxVersions" => {
                if v.as_i64().is_none_or(|n| n <= 0) {
                    return Err("MaxVersions of hbase table must be greater than 0".into());
                }
            }
            "State" => {
                if !matches!(v.as_str(), Some("enable") | Some("disable")) {
                    return Err(WRONG.into());
                }
            }
            _ => return Err(WRONG.into()),
        }
    }
    Ok(())
}

/// A JSON object read as its entries in order, repeated keys kept (serde_json's maps keep the
/// last one silently, and OceanBase refuses repeats).
struct Entries<T>(Vec<(String, T)>);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Entries<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = Entries<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Entries<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = m.next_entry()? {
                    v.push(e);
                }
                Ok(Entries(v))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// ALTER TABLE on an HBase table: what may change after creation.
pub fn check_alter(
    current: &CreateTable,
    actions: &[AlterAction],
    cfg: RuleConfig,
    group: &GroupState,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for a in actions {
        match a {
            AlterAction::AddColumn | AlterAction::DropColumn(_) | AlterAction::ChangeColumn(_) | AlterAction::RenameColumn(_) => {
                out.push(Finding::unsupported(
                    Rule::R2,
                    format!("the columns of HBase table '{}' are fixed (K, Q, T, V): adding, dropping, renaming or retyping columns is refused", current.name),
                ))
            }
            AlterAction::AddIndex(kind) => out.push(Finding::unsupported(Rule::R7, format!("{kind}: secondary indexes are not allowed on HBase tables"))),
            AlterAction::Partition(p) => {
                check_partitioning(Some(p), current, &mut out);
                check_families(Some(p), current, cfg, group, &mut out);
            }
            AlterAction::RemovePartitioning => check_partitioning(None, current, &mut out),
            AlterAction::PartitionMaintenance(what) if what == "TRUNCATE PARTITION" => {}
            AlterAction::PartitionMaintenance(what) => out.push(Finding::unsupported(
                Rule::R5,
                format!("{what} changes the partitioning piecemeal; use ALTER TABLE ... PARTITION BY KEY(...) PARTITIONS n so the result can be checked"),
            )),
            AlterAction::Exchange(other) => out.push(Finding::unsupported(
                Rule::R5,
                format!("exchanging or converting partitions of '{}' with table '{other}' moves rows the rules never checked (and changes the partitioning piecemeal); copy them with INSERT … SELECT instead", current.name),
            )),
            AlterAction::Rename(to) => out.extend(check_rename(&current.name, to)),
            AlterAction::Option(o) if o.name == "TABLEGROUP" => {
                let g = current.name.hbase_parts().map(|(g, _)| g).unwrap_or_default();
                if !o.value.eq_ignore_ascii_case(g) {
                    out.push(Finding::unsupported(Rule::R1, format!("moving '{}' to table group '{}' is refused: a table stays in the group its name names", current.name, o.value)));
                }
            }
            AlterAction::Option(o) if o.name == "KV_ATTRIBUTES" => {
                if let Err(msg) = check_kv_attributes(&o.value) {
                    out.push(Finding::error(Rule::R9, ER_WRONG_ARGUMENTS, "HY000", msg));
                }
            }
            AlterAction::Option(_) | AlterAction::DropIndex | AlterAction::Other(_) => {}
        }
    }
    out
}

/// RENAME of an HBase table: the new name keeps rule 1 and the same group.
/// Rule 7 for CREATE INDEX on an HBase table: secondary indexes are not allowed.
pub fn check_create_index(table: &TableName, kind: &str) -> Vec<Finding> {
    vec![Finding::unsupported(
        Rule::R7,
        format!("{kind} on HBase table '{table}': secondary indexes are not allowed"),
    )]
}

pub fn check_rename(from: &TableName, to: &TableName) -> Vec<Finding> {
    let (Some((g1, _)), parts) = (from.hbase_parts(), to.hbase_parts()) else {
        return Vec::new();
    };
    match parts {
        None => vec![Finding::error(
            Rule::R1,
            ER_WRONG_TABLE_NAME,
            "42000",
            format!("cannot rename HBase table '{from}' to '{to}': the new name must be {g1}$family"),
        )],
        Some((g2, _)) if !g1.eq_ignore_ascii_case(g2) => vec![Finding::unsupported(
            Rule::R1,
            format!("renaming '{from}' to '{to}' would move it from table group '{g1}' to '{g2}'; a table cannot change groups"),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::{parse, Statement};

    const CFG: RuleConfig = RuleConfig {
        require_tablegroup_option: true,
        multiple_families: false,
    };

    fn table(sql: &str) -> CreateTable {
        match parse(sql.as_bytes()).expect("parses") {
            Some(Statement::CreateTable(t)) => *t,
            other => panic!("{other:?}"),
        }
    }

    fn group() -> GroupState {
        GroupState {
            exists: true,
            families: Vec::new(),
        }
    }

    #[test]
    fn judge_applies_the_enforcement_mode() {
        let findings = || {
            vec![
                Finding::note(Rule::R0, "a note".into()),
                Finding::unsupported(Rule::R1, "first".into()),
                Finding::unsupported(Rule::R2, "second".into()),
            ]
        };
        let strict = judge(Enforcement::Strict, findings());
        assert_eq!(strict.refuse.map(|f| f.rule), Some(Rule::R1));
        assert!(strict.warnings.is_empty());
        let warn = judge(Enforcement::Warn, findings());
        assert!(warn.refuse.is_none());
        let levels: Vec<_> = warn.warnings.iter().map(|f| (f.rule, f.level)).collect();
        assert_eq!(
            levels,
            [
                (Rule::R0, Level::Note),
                (Rule::R1, Level::Warning),
                (Rule::R2, Level::Warning)
            ]
        );
        assert_eq!(judge(Enforcement::Off, findings()), Verdict::default());
        // Strict without an error keeps the notes and warnings.
        let mild = judge(
            Enforcement::Strict,
            vec![Finding::warning(Rule::R3, "w".into())],
        );
        assert!(mild.refuse.is_none());
        assert_eq!(mild.warnings.len(), 1);
    }

    fn errors(sql: &str) -> Vec<Rule> {
        check_create(&table(sql), CFG, &group())
            .into_iter()
            .filter(|f| f.level == Level::Error)
            .map(|f| f.rule)
            .collect()
    }

    const OK: &str = "CREATE TABLE h$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = h PARTITION BY KEY(K) PARTITIONS 97";

    #[test]
    fn the_documented_table_passes() {
        let f = check_create(&table(OK), CFG, &group());
        assert!(!has_errors(&f), "{f:?}");
        assert!(f.iter().all(|x| x.level == Level::Note), "{f:?}");
    }

    #[test]
    fn a_dollar_name_without_hbase_columns_is_told_what_the_name_means() {
        let sql = "CREATE TABLE price$usd (id INT PRIMARY KEY, amount DECIMAL(10,2))";
        let f = check_create(&table(sql), CFG, &GroupState::default());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].rule, f[0].level), (Rule::R1, Level::Error));
        for part in [
            "'price$usd' is an HBase table name",
            "K, Q, T, V",
            "without '$'",
            "hbase.databases",
            "table group 'price'",
        ] {
            assert!(f[0].message.contains(part), "{part}: {}", f[0].message);
        }
        // a table that has some of them is read as an HBase table that breaks rules
        let half = "CREATE TABLE h$f (K varbinary(10), amount int) TABLEGROUP = h";
        assert!(check_create(&table(half), CFG, &group())
            .iter()
            .any(|f| f.rule == Rule::R2));
    }

    #[test]
    fn each_rule_rejects() {
        let cases = [
            (
                Rule::R1,
                OK.replace("h$f", "hf")
                    .replace("TABLEGROUP = h", "TABLEGROUP = hf"),
            ),
            (Rule::R1, OK.replace("h$f", "$f")),
            (Rule::R1, OK.replace("TABLEGROUP = h", "TABLEGROUP = other")),
            (Rule::R1, OK.replace("TABLEGROUP = h", "")),
            (
                Rule::R2,
                OK.replace("Q varbinary(256), T bigint", "T bigint, Q varbinary(256)"),
            ),
            (Rule::R2, OK.replace("NOT NULL,", "NOT NULL, extra int,")),
            (
                Rule::R3,
                OK.replace("K varbinary(1024)", "K varbinary(2048)"),
            ),
            (Rule::R3, OK.replace("Q varbinary(256)", "Q varchar(256)")),
            (Rule::R3, OK.replace("T bigint", "T int")),
            (
                Rule::R3,
                OK.replace("V varbinary(1048576)", "V varbinary(2000000)"),
            ),
            (
                Rule::R4,
                OK.replace("PRIMARY KEY (K, Q, T)", "PRIMARY KEY (K, T, Q)"),
            ),
            (
                Rule::R5,
                OK.replace("KEY(K) PARTITIONS 97", "HASH(T) PARTITIONS 97"),
            ),
            (
                Rule::R5,
                OK.replace("KEY(K) PARTITIONS 97", "KEY(Q) PARTITIONS 97"),
            ),
            (Rule::R6, OK.replace("PARTITIONS 97", "PARTITIONS 96")),
            (
                Rule::R7,
                OK.replace("PRIMARY KEY (K, Q, T)", "PRIMARY KEY (K, Q, T), KEY iq (Q)"),
            ),
            (
                Rule::R9,
                format!("{OK} KV_ATTRIBUTES = '{{\"Hbase\": {{\"TimeToLive\": 0}}}}'")
                    .replace(" PARTITION BY KEY(K) PARTITIONS 97 KV", " KV")
                    + " PARTITION BY KEY(K) PARTITIONS 97",
            ),
        ];
        for (rule, sql) in cases {
            let e = errors(&sql);
            assert!(e.contains(&rule), "{rule} not raised for {sql}: {e:?}");
        }
        let missing = check_create(&table(OK), CFG, &GroupState::default());
        assert!(missing
            .iter()
            .any(|f| f.rule == Rule::R1 && f.code == ER_NO_SUCH_TABLEGROUP));
    }

    #[test]
    fn warnings_and_accepted_variants() {
        let warn = |sql: &str| {
            check_create(&table(sql), CFG, &group())
                .into_iter()
                .filter(|f| f.level == Level::Warning)
                .map(|f| f.message)
                .collect::<Vec<_>>()
        };
        assert!(warn(&OK.replace(" NOT NULL", ""))
            .iter()
            .any(|m| m.contains("NOT NULL")));
        assert!(warn(&OK.replace("PARTITIONS 97", "PARTITIONS 99"))
            .iter()
            .any(|m| m.contains("not prime") && m.contains("193")));
        assert!(warn(&OK.replace("PARTITIONS 97", "PARTITIONS 1001"))
            .iter()
            .any(|m| m.contains("997")));
        assert!(warn(&OK.replace(" PARTITION BY KEY(K) PARTITIONS 97", ""))
            .iter()
            .any(|m| m.contains("small tables")));
        let range = OK.replace("KEY(K) PARTITIONS 97", "RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('a'), PARTITION p1 VALUES LESS THAN ('w'), PARTITION p2 VALUES LESS THAN (MAXVALUE))");
        assert!(errors(&range).is_empty());
        assert!(warn(&range).iter().any(|m| m.contains("hotspots")));
        let prefix = OK
            .replace(
                "NOT NULL,",
                "NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)),",
            )
            .replace("KEY(K)", "KEY(K_PREFIX)");
        assert!(errors(&prefix).is_empty(), "{:?}", errors(&prefix));
        assert!(errors(&OK.replace("varbinary(1048576) NOT NULL", "longblob NOT NULL")).is_empty());
        let relaxed = RuleConfig {
            require_tablegroup_option: false,
            ..CFG
        };
        assert!(!has_errors(&check_create(
            &table(&OK.replace("TABLEGROUP = h", "")),
            relaxed,
            &group()
        )));
    }

    #[test]
    fn families_per_group() {
        let other = table(OK).partition.expect("partition");
        let g = GroupState {
            exists: true,
            families: vec![("f0".into(), Some(other.clone()))],
        };
        assert!(check_create(&table(OK), CFG, &g)
            .iter()
            .any(|f| f.rule == Rule::R8));
        let many = RuleConfig {
            multiple_families: true,
            ..CFG
        };
        assert!(!has_errors(&check_create(&table(OK), many, &g)));
        // two unpartitioned families have identical (no) partitioning
        let bare = OK.replace(" PARTITION BY KEY(K) PARTITIONS 97", "");
        let g_bare = GroupState {
            exists: true,
            families: vec![("f0".into(), None)],
        };
        assert!(!has_errors(&check_create(&table(&bare), many, &g_bare)));
        assert!(has_errors(&check_create(&table(OK), many, &g_bare)));
        let differs = OK.replace("PARTITIONS 97", "PARTITIONS 193");
        assert!(check_create(&table(&differs), many, &g)
            .iter()
            .any(|f| f.rule == Rule::R8 && f.level == Level::Error));
    }

    #[test]
    fn kv_attributes() {
        assert!(check_kv_attributes(
            r#"{"Hbase": {"TimeToLive": 3600, "MaxVersions": 3, "State": "enable"}}"#
        )
        .is_ok());
        assert_eq!(
            check_kv_attributes(r#"{"Hbase": {"TimeToLive": -1}}"#).unwrap_err(),
            "Time to live of hbase table must be greater than 0"
        );
        assert_eq!(
            check_kv_attributes(r#"{"Hbase": {"MaxVersions": 0}}"#).unwrap_err(),
            "MaxVersions of hbase table must be greater than 0"
        );
        for bad in [
            r#"{"Hbase": {"Other": 1}}"#,
            r#"{"Hbase": {}, "X": 1}"#,
            r#"{"HBase": {}}"#,
            r#"{"Hbase": {"MaxVersions": 1, "MaxVersions": 2}}"#,
            "not json",
            r#"{"Hbase": {"State": "on"}}"#,
        ] {
            assert_eq!(
                check_kv_attributes(bad).unwrap_err(),
                "kv attributes with wrong format",
                "{bad}"
            );
        }
    }

    #[test]
    fn alter_and_rename() {
        let t = table(OK);
        let alter = |sql: &str| match parse(sql.as_bytes()).expect("parses") {
            Some(Statement::AlterTable { actions, .. }) => check_alter(&t, &actions, CFG, &group()),
            other => panic!("{other:?}"),
        };
        assert!(has_errors(&alter("ALTER TABLE h$f ADD COLUMN x int")));
        assert!(has_errors(&alter("ALTER TABLE h$f MODIFY V longblob")));
        assert!(has_errors(&alter("ALTER TABLE h$f ADD INDEX i (Q)")));
        assert!(has_errors(&alter(
            "ALTER TABLE h$f PARTITION BY KEY(K) PARTITIONS 10"
        )));
        assert!(!has_errors(&alter(
            "ALTER TABLE h$f PARTITION BY KEY(K) PARTITIONS 193"
        )));
        assert!(has_errors(&alter("ALTER TABLE h$f RENAME TO x$f")));
        // rows moved in or out of an HBase table by an exchange or a conversion: R5, the
        // other table named (a plain table's ALTER naming an HBase one is refused as well:
        // `engine::ddl::exchange_with_hbase_tables`)
        for sql in [
            "ALTER TABLE h$f EXCHANGE PARTITION p0 WITH TABLE plain WITHOUT VALIDATION",
            "ALTER TABLE h$f CONVERT PARTITION p0 TO TABLE plain",
            "ALTER TABLE h$f CONVERT TABLE plain TO PARTITION p9 VALUES LESS THAN (9)",
        ] {
            let f = alter(sql);
            assert!(
                has_errors(&f) && f.iter().any(|f| f.rule == Rule::R5),
                "{sql}: {f:?}"
            );
        }
        for (sql, other) in [
            (
                "ALTER TABLE plain EXCHANGE PARTITION p0 WITH TABLE db.`n$f`",
                "n$f",
            ),
            ("ALTER TABLE plain CONVERT TABLE n$f TO PARTITION p9", "n$f"),
            (
                "ALTER TABLE plain ENGINE = InnoDB, CONVERT PARTITION p0 TO TABLE n$f",
                "n$f",
            ),
        ] {
            match parse(sql.as_bytes()).expect("parses") {
                Some(Statement::AlterTable { actions, .. }) => assert!(
                    actions
                        .iter()
                        .any(|a| matches!(a, AlterAction::Exchange(t) if t.name == other)),
                    "{sql}: {actions:?}"
                ),
                o => panic!("{o:?}"),
            }
        }
        let n = |s: &str| TableName::new(None, s);
        assert!(check_rename(&n("h$f"), &n("h$g")).is_empty());
        assert!(!check_rename(&n("h$f"), &n("hf")).is_empty());
        assert!(!check_rename(&n("h$f"), &n("x$f")).is_empty());
    }
}
