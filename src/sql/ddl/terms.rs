//! The DDL statements as read: table names, columns, indexes, partitioning and options, with
//! the byte spans a translation splices.

pub type Span = (usize, usize);

/// A bound of a `RANGE COLUMNS` partition, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeBound {
    LessThan(Vec<u8>),
    MaxValue,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TableName {
    pub schema: Option<String>,
    /// (names of up to 24 bytes, most, are kept inline: reading a statement's table costs no
    /// allocation for them)
    pub name: compact_str::CompactString,
    /// The names' exact bytes as the client sent them (in its character set; `name` and
    /// `schema` are their lossy UTF-8 readings, for messages and rules).
    pub raw_schema: Option<Vec<u8>>,
    pub raw_name: crate::sql::scan::Ident,
}

/// (by hand: the raw name's bytes copied at once, not one by one as the small vector's own
/// `clone` does; a statement read from a shape's frame copies its table's name)
impl Clone for TableName {
    fn clone(&self) -> TableName {
        TableName {
            schema: self.schema.clone(),
            name: self.name.clone(),
            raw_schema: self.raw_schema.clone(),
            raw_name: crate::sql::scan::Ident::from_slice(&self.raw_name),
        }
    }
}

impl TableName {
    /// A name known as text (the raw bytes are its UTF-8).
    pub fn new(schema: Option<&str>, name: &str) -> TableName {
        TableName {
            schema: schema.map(str::to_owned),
            name: name.into(),
            raw_schema: schema.map(|s| s.as_bytes().to_vec()),
            raw_name: name.as_bytes().into(),
        }
    }

    /// `group$family` → (group, family) when both parts are non-empty.
    pub fn hbase_parts(&self) -> Option<(&str, &str)> {
        let (g, f) = self.name.split_once('$')?;
        (!g.is_empty() && !f.is_empty() && !f.contains('$')).then_some((g, f))
    }

    pub fn is_hbase_name(&self) -> bool {
        self.name.contains('$')
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            Some(s) => write!(f, "{s}.{}", self.name),
            None => write!(f, "{}", self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataType {
    /// Upper-cased type name (VARBINARY, BIGINT, LONGBLOB, ...).
    pub name: String,
    pub length: Option<u64>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub data_type: DataType,
    pub not_null: bool,
    /// `GENERATED ALWAYS AS (expr)` / `AS (expr)`: the expression's text span and, when it is
    /// `substring(K, 1, n)` (or an equivalent form), n.
    pub generated: Option<Generated>,
    pub inline_primary_key: bool,
    pub inline_unique: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub prefix_of_k: Option<u64>,
    pub stored: bool,
    pub expr_span: Span,
    /// From `GENERATED`/`AS` to the end of `VIRTUAL`/`STORED`.
    pub clause_span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub kind: String,
    pub columns: Vec<String>,
}

/// A PARTITION BY clause as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionClause {
    /// KEY, HASH, RANGE, RANGE COLUMNS, LIST, LIST COLUMNS (LINEAR dropped).
    pub kind: String,
    pub columns: Vec<String>,
    pub count: Option<u64>,
    pub bounds: Vec<RangeBound>,
    pub subpartitioned: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOption {
    pub name: String,
    pub value: String,
    /// The option with its `=` and value (and a separating comma before it, if any).
    pub span: Span,
    /// Where the value's token stands, and whether it is a quoted string.
    pub value_span: Span,
    pub value_is_string: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTable {
    pub name: TableName,
    /// Where the table name stands in the statement.
    pub name_span: Span,
    pub if_not_exists: bool,
    pub columns: Vec<Column>,
    pub primary_key: Option<Vec<String>>,
    /// Offset of the ')' closing the PRIMARY KEY column list.
    pub primary_key_end: Option<usize>,
    pub indexes: Vec<Index>,
    pub checks: usize,
    /// CHECK constraints of the form `(P = substring(K, 1, n))`: (P, n). This is how a backend
    /// without generated partition keys (MariaDB, MySQL) keeps a plain prefix column.
    pub prefix_checks: Vec<(String, u64)>,
    /// A CHECK constraint `(length(V) <= L)`: L (a blob V with the varbinary's length kept).
    pub value_length_check: Option<u64>,
    pub options: Vec<TableOption>,
    pub partition: Option<PartitionClause>,
    /// Offset of the closing parenthesis of the element list.
    pub elements_end: usize,
}

impl CreateTable {
    pub fn option(&self, name: &str) -> Option<&TableOption> {
        self.options
            .iter()
            .find(|o| o.name.eq_ignore_ascii_case(name))
    }

    pub fn tablegroup(&self) -> Option<&str> {
        self.option("TABLEGROUP").map(|o| o.value.as_str())
    }

    /// The generated prefix column, if any: (name, n).
    pub fn prefix_column(&self) -> Option<(&str, u64)> {
        self.columns.iter().find_map(|c| {
            c.generated
                .as_ref()
                .and_then(|g| g.prefix_of_k)
                .map(|n| (c.name.as_str(), n))
        })
    }

    pub fn has_kqtv_columns(&self) -> bool {
        let names: Vec<String> = self
            .columns
            .iter()
            .map(|c| c.name.to_ascii_uppercase())
            .collect();
        ["K", "Q", "T", "V"]
            .iter()
            .all(|n| names.iter().any(|c| c == n))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterAction {
    AddColumn,
    DropColumn(String),
    ChangeColumn(String),
    RenameColumn(String),
    AddIndex(String),
    DropIndex,
    Rename(TableName),
    Partition(PartitionClause),
    RemovePartitioning,
    PartitionMaintenance(String),
    /// EXCHANGE PARTITION … WITH TABLE x, CONVERT PARTITION … TO TABLE x, CONVERT TABLE x TO
    /// PARTITION …: rows move between the table and `x` (named here).
    Exchange(TableName),
    Option(TableOption),
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    CreateTablegroup {
        name: String,
        /// The name's exact bytes, in the client's character set.
        raw_name: Vec<u8>,
        if_not_exists: bool,
    },
    DropTablegroup {
        name: String,
        raw_name: Vec<u8>,
        if_exists: bool,
    },
    ShowTablegroups {
        like: Option<String>,
    },
    CreateTable(Box<CreateTable>),
    /// `CREATE TABLE [IF NOT EXISTS] name LIKE source` (or `(LIKE source)`).
    CreateTableLike {
        name: TableName,
        name_span: Span,
        if_not_exists: bool,
        source: TableName,
    },
    DropTable {
        tables: Vec<TableName>,
        if_exists: bool,
    },
    TruncateTable(TableName),
    RenameTable(Vec<(TableName, TableName)>),
    AlterTable {
        table: TableName,
        actions: Vec<AlterAction>,
    },
    CreateIndex {
        table: TableName,
        kind: String,
    },
    ShowCreateTable(TableName),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);
