//! Reading the DDL statements that concern HBase tables (table groups, CREATE/ALTER/RENAME/DROP/
//! TRUNCATE TABLE, CREATE INDEX, SHOW CREATE TABLE) into the model's terms, with byte spans so a
//! translation can splice the user's text instead of re-printing it.

use crate::sql::lexer::{tokenize_with, Dialect, Kind, Token};

pub type Span = (usize, usize);

/// A bound of a `RANGE COLUMNS` partition, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeBound {
    LessThan(Vec<u8>),
    MaxValue,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    pub schema: Option<String>,
    pub name: String,
    /// The names' exact bytes as the client sent them (in its character set; `name` and
    /// `schema` are their lossy UTF-8 readings, for messages and rules).
    pub raw_schema: Option<Vec<u8>>,
    pub raw_name: Vec<u8>,
}

impl TableName {
    /// A name known as text (the raw bytes are its UTF-8).
    pub fn new(schema: Option<&str>, name: &str) -> TableName {
        TableName {
            schema: schema.map(str::to_owned),
            name: name.to_owned(),
            raw_schema: schema.map(|s| s.as_bytes().to_vec()),
            raw_name: name.as_bytes().to_vec(),
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

struct Cursor<'a> {
    t: &'a [Token],
    i: usize,
    /// The statement, for the exact bytes of names.
    sql: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.t.get(self.i)
    }
    fn peek_at(&self, k: usize) -> Option<&'a Token> {
        self.t.get(self.i + k)
    }
    fn next(&mut self) -> Option<&'a Token> {
        let t = self.t.get(self.i);
        self.i += usize::from(t.is_some());
        t
    }
    fn kw(&mut self, k: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_keyword(k)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn kws(&mut self, ks: &[&str]) -> bool {
        let ok = ks
            .iter()
            .enumerate()
            .all(|(j, k)| self.peek_at(j).is_some_and(|t| t.is_keyword(k)));
        if ok {
            self.i += ks.len();
        }
        ok
    }
    fn punct(&mut self, c: u8) -> bool {
        if self.peek().is_some_and(|t| t.is_punct(c)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, c: u8) -> Result<&'a Token, ParseError> {
        match self.next() {
            Some(t) if t.is_punct(c) => Ok(t),
            _ => Err(ParseError(format!("expected '{}'", c as char))),
        }
    }
    fn ident(&mut self) -> Result<String, ParseError> {
        self.next()
            .and_then(|t| t.ident().map(str::to_owned))
            .ok_or_else(|| ParseError("expected a name".into()))
    }
    /// The exact bytes of the identifier token just read (quotes removed, doubled quotes
    /// undone), in the client's character set.
    fn last_ident_bytes(&self) -> Vec<u8> {
        let Some(t) = self.i.checked_sub(1).and_then(|i| self.t.get(i)) else {
            return Vec::new();
        };
        let raw = self.sql.get(t.start..t.end).unwrap_or_default();
        match t.kind {
            Kind::Quoted(_) => crate::sql::scan::unquote_ident(raw),
            _ => raw.to_vec(),
        }
    }
    fn table_name(&mut self) -> Result<TableName, ParseError> {
        let first = self.ident()?;
        let first_raw = self.last_ident_bytes();
        if self.punct(b'.') {
            let name = self.ident()?;
            Ok(TableName {
                schema: Some(first),
                name,
                raw_schema: Some(first_raw),
                raw_name: self.last_ident_bytes(),
            })
        } else {
            Ok(TableName {
                schema: None,
                name: first,
                raw_schema: None,
                raw_name: first_raw,
            })
        }
    }
    fn number(&mut self) -> Result<u64, ParseError> {
        match self.next().map(|t| &t.kind) {
            Some(Kind::Number(n)) => n.parse().map_err(|_| ParseError(format!("bad number {n}"))),
            _ => Err(ParseError("expected a number".into())),
        }
    }
    /// Skips a balanced parenthesised group starting at '('; returns the offset after ')'.
    fn skip_group(&mut self) -> Result<usize, ParseError> {
        self.expect_punct(b'(')?;
        let mut depth = 1;
        while let Some(t) = self.next() {
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth -= 1;
                if depth == 0 {
                    return Ok(t.end);
                }
            }
        }
        Err(ParseError("unbalanced parentheses".into()))
    }
    fn name_list(&mut self) -> Result<Vec<String>, ParseError> {
        self.expect_punct(b'(')?;
        let mut names = Vec::new();
        loop {
            names.push(self.ident()?);
            if self.punct(b'(') {
                // index prefix length: KEY (K(10))
                self.number()?;
                self.expect_punct(b')')?;
            }
            self.kw("ASC");
            self.kw("DESC");
            if self.punct(b')') {
                return Ok(names);
            }
            self.expect_punct(b',')?;
        }
    }
    fn at_end(&self) -> bool {
        self.peek().is_none_or(|t| t.is_punct(b';'))
    }
}

/// Parses a statement the HBase layer handles; `Ok(None)` for any other statement.
pub fn parse(sql: &[u8]) -> Result<Option<Statement>, ParseError> {
    parse_with(sql, Dialect::default())
}

/// `parse`, reading the text as `d` says the backend does (executable comments, escapes).
pub fn parse_with(sql: &[u8], d: Dialect) -> Result<Option<Statement>, ParseError> {
    let tokens = tokenize_with(sql, d).map_err(|e| ParseError(e.to_string()))?;
    let mut c = Cursor {
        t: &tokens,
        i: 0,
        sql,
    };
    let Some(first) = c.next().and_then(Token::keyword) else {
        return Ok(None);
    };
    let s = match first.as_str() {
        "CREATE" => {
            if c.kw("TABLEGROUP") {
                let if_not_exists = c.kws(&["IF", "NOT", "EXISTS"]);
                let name = c.ident()?;
                Statement::CreateTablegroup {
                    name,
                    raw_name: c.last_ident_bytes(),
                    if_not_exists,
                }
            } else if c.kw("TABLE") {
                match create_table_like(&mut c)? {
                    Some(like) => like,
                    None => Statement::CreateTable(Box::new(create_table(&mut c)?)),
                }
            } else {
                let mut kind = String::from("INDEX");
                for k in ["UNIQUE", "FULLTEXT", "SPATIAL"] {
                    if c.kw(k) {
                        kind = k.to_string();
                    }
                }
                if !c.kw("INDEX") {
                    return Ok(None);
                }
                c.ident()?;
                if !c.kw("ON") {
                    return Err(ParseError("expected ON".into()));
                }
                Statement::CreateIndex {
                    table: c.table_name()?,
                    kind,
                }
            }
        }
        "DROP" => {
            if c.kw("TABLEGROUP") {
                let if_exists = c.kws(&["IF", "EXISTS"]);
                let name = c.ident()?;
                Statement::DropTablegroup {
                    name,
                    raw_name: c.last_ident_bytes(),
                    if_exists,
                }
            } else {
                c.kw("TEMPORARY");
                if !c.kw("TABLE") {
                    return Ok(None);
                }
                let if_exists = c.kws(&["IF", "EXISTS"]);
                let mut tables = vec![c.table_name()?];
                while c.punct(b',') {
                    tables.push(c.table_name()?);
                }
                Statement::DropTable { tables, if_exists }
            }
        }
        "SHOW" => {
            if c.kw("TABLEGROUPS") {
                let like = if c.kw("LIKE") {
                    match c.next().map(|t| &t.kind) {
                        Some(Kind::Str(s)) => Some(String::from_utf8_lossy(s).into_owned()),
                        _ => return Err(ParseError("expected a pattern after LIKE".into())),
                    }
                } else {
                    None
                };
                Statement::ShowTablegroups { like }
            } else if c.kws(&["CREATE", "TABLE"]) {
                Statement::ShowCreateTable(c.table_name()?)
            } else {
                return Ok(None);
            }
        }
        "TRUNCATE" => {
            c.kw("TABLE");
            Statement::TruncateTable(c.table_name()?)
        }
        "RENAME" => {
            if !c.kw("TABLE") {
                return Ok(None);
            }
            let mut pairs = Vec::new();
            loop {
                let from = c.table_name()?;
                if !c.kw("TO") {
                    return Err(ParseError("expected TO".into()));
                }
                pairs.push((from, c.table_name()?));
                if !c.punct(b',') {
                    break;
                }
            }
            Statement::RenameTable(pairs)
        }
        "ALTER" => {
            if !c.kw("TABLE") {
                return Ok(None);
            }
            let table = c.table_name()?;
            Statement::AlterTable {
                table,
                actions: alter_actions(&mut c)?,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(s))
}

/// `CREATE TABLE [IF NOT EXISTS] name LIKE source` / `(LIKE source)`; None (and the cursor
/// where it was) for any other CREATE TABLE.
fn create_table_like(c: &mut Cursor) -> Result<Option<Statement>, ParseError> {
    let at = c.i;
    let if_not_exists = c.kws(&["IF", "NOT", "EXISTS"]);
    let name_start = c.peek().map_or(0, |t| t.start);
    let name = c.table_name()?;
    let name_span = (name_start, c.t.get(c.i - 1).map_or(name_start, |t| t.end));
    let paren = c.punct(b'(');
    if !c.kw("LIKE") {
        c.i = at;
        return Ok(None);
    }
    let source = c.table_name()?;
    if paren {
        c.expect_punct(b')')?;
    }
    if !c.at_end() {
        return Err(ParseError(
            "unexpected text after CREATE TABLE ... LIKE".into(),
        ));
    }
    Ok(Some(Statement::CreateTableLike {
        name,
        name_span,
        if_not_exists,
        source,
    }))
}

fn create_table(c: &mut Cursor) -> Result<CreateTable, ParseError> {
    let if_not_exists = c.kws(&["IF", "NOT", "EXISTS"]);
    let name_start = c.peek().map_or(0, |t| t.start);
    let name = c.table_name()?;
    let name_span = (name_start, c.t.get(c.i - 1).map_or(name_start, |t| t.end));
    if c.peek()
        .is_some_and(|t| t.is_keyword("AS") || t.is_keyword("SELECT"))
    {
        return Err(ParseError(
            "CREATE TABLE ... AS SELECT cannot define an HBase table: create it with its columns, then INSERT ... SELECT".into(),
        ));
    }
    c.expect_punct(b'(')?;
    let mut t = CreateTable {
        name,
        name_span,
        if_not_exists,
        columns: Vec::new(),
        primary_key: None,
        primary_key_end: None,
        indexes: Vec::new(),
        checks: 0,
        prefix_checks: Vec::new(),
        value_length_check: None,
        options: Vec::new(),
        partition: None,
        elements_end: 0,
    };
    loop {
        element(c, &mut t)?;
        match c.next() {
            Some(tok) if tok.is_punct(b',') => continue,
            Some(tok) if tok.is_punct(b')') => {
                t.elements_end = tok.start;
                break;
            }
            _ => return Err(ParseError("expected ',' or ')' in the column list".into())),
        }
    }
    // table options, then PARTITION BY
    while !c.at_end() {
        if c.peek().is_some_and(|t| t.is_keyword("PARTITION")) {
            t.partition = Some(partition_clause(c)?);
            continue;
        }
        let comma_start = c.peek().filter(|t| t.is_punct(b',')).map(|t| t.start);
        c.punct(b',');
        let Some(tok) = c.next() else { break };
        let mut name = tok
            .keyword()
            .ok_or_else(|| ParseError("unexpected token in table options".into()))?;
        // two-word options: DEFAULT CHARSET, CHARACTER SET, ...
        if ["DEFAULT", "CHARACTER"].contains(&name.as_str()) {
            if let Some(k) = c.next().and_then(Token::keyword) {
                name = format!("{name} {k}");
            }
            if name == "DEFAULT CHARACTER" && c.kw("SET") {
                name.push_str(" SET");
            }
        }
        c.punct(b'=');
        let v = c
            .next()
            .ok_or_else(|| ParseError(format!("option {name} has no value")))?;
        let value = match &v.kind {
            Kind::Word(w) | Kind::Quoted(w) | Kind::Number(w) => w.clone(),
            Kind::Str(s) => String::from_utf8_lossy(s).into_owned(),
            _ => return Err(ParseError(format!("bad value for {name}"))),
        };
        t.options.push(TableOption {
            name,
            value,
            span: (comma_start.unwrap_or(tok.start), v.end),
            value_span: (v.start, v.end),
            value_is_string: matches!(v.kind, Kind::Str(_)),
        });
    }
    Ok(t)
}

fn element(c: &mut Cursor, t: &mut CreateTable) -> Result<(), ParseError> {
    let Some(head) = c.peek() else {
        return Err(ParseError("unexpected end".into()));
    };
    let kw = head.keyword().unwrap_or_default();
    if matches!(head.kind, Kind::Word(_)) {
        match kw.as_str() {
            "CONSTRAINT" | "PRIMARY" | "KEY" | "INDEX" | "UNIQUE" | "FULLTEXT" | "SPATIAL"
            | "CHECK" | "FOREIGN" => {
                if c.kw("CONSTRAINT")
                    && !c.peek().is_some_and(|x| {
                        ["PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]
                            .iter()
                            .any(|k| x.is_keyword(k))
                    })
                {
                    c.ident()?;
                }
                if c.kws(&["PRIMARY", "KEY"]) {
                    t.primary_key = Some(c.name_list()?);
                    t.primary_key_end = c.t.get(c.i - 1).map(|t| t.start);
                    skip_to_element_end(c);
                    return Ok(());
                }
                if c.kw("CHECK") {
                    let open = c.i;
                    c.skip_group()?;
                    let group = c.t.get(open..c.i).unwrap_or_default();
                    if let Some(p) = prefix_check(group) {
                        t.prefix_checks.push(p);
                    } else if let Some(l) = value_length_check(group) {
                        t.value_length_check = Some(l);
                    }
                    t.checks += 1;
                    return Ok(());
                }
                if c.kw("FOREIGN") {
                    t.indexes.push(Index {
                        kind: "FOREIGN KEY".into(),
                        columns: Vec::new(),
                    });
                    skip_to_element_end(c);
                    return Ok(());
                }
                let mut kind = c.next().and_then(Token::keyword).unwrap_or_default();
                if kind != "KEY" && kind != "INDEX" && (c.kw("KEY") || c.kw("INDEX")) {
                    kind = format!("{kind} KEY");
                }
                if !c.peek().is_some_and(|x| x.is_punct(b'(')) {
                    c.ident()?;
                }
                let columns = c.name_list()?;
                skip_to_element_end(c);
                t.indexes.push(Index { kind, columns });
                return Ok(());
            }
            _ => {}
        }
    }
    let col = column(c)?;
    if col.inline_primary_key {
        t.primary_key = Some(vec![col.name.clone()]);
    }
    if col.inline_unique {
        t.indexes.push(Index {
            kind: "UNIQUE".into(),
            columns: vec![col.name.clone()],
        });
    }
    t.columns.push(col);
    Ok(())
}

/// Skips to the ',' or ')' that ends the current element (not consuming it).
fn skip_to_element_end(c: &mut Cursor) {
    skip_until(c, b")");
}

/// Skips tokens, over balanced parentheses, up to a ',', one of `stops` or a PARTITION BY clause
/// at depth 0 (not consuming it): an ALTER may give PARTITION BY after an option without a comma.
fn skip_until(c: &mut Cursor, stops: &[u8]) {
    let mut depth = 0;
    while let Some(t) = c.peek() {
        let partition_by =
            t.is_keyword("PARTITION") && c.peek_at(1).is_some_and(|n| n.is_keyword("BY"));
        if depth == 0 && (t.is_punct(b',') || stops.iter().any(|s| t.is_punct(*s)) || partition_by)
        {
            return;
        }
        if t.is_punct(b'(') {
            depth += 1;
        } else if t.is_punct(b')') {
            depth -= 1;
        }
        c.i += 1;
    }
}

fn column(c: &mut Cursor) -> Result<Column, ParseError> {
    let name_tok = c
        .next()
        .ok_or_else(|| ParseError("expected a column".into()))?;
    let name = name_tok
        .ident()
        .ok_or_else(|| ParseError("expected a column name".into()))?
        .to_owned();
    let type_tok = c
        .next()
        .ok_or_else(|| ParseError(format!("column {name} has no type")))?;
    let type_name = type_tok
        .keyword()
        .ok_or_else(|| ParseError(format!("column {name} has no type")))?;
    let mut type_end = type_tok.end;
    let mut length = None;
    if c.peek().is_some_and(|t| t.is_punct(b'(')) {
        c.next();
        length = Some(c.number()?);
        while !c.peek().is_some_and(|t| t.is_punct(b')')) {
            c.next()
                .ok_or_else(|| ParseError("unterminated type".into()))?;
        }
        type_end = c.next().map_or(type_end, |t| t.end);
    }
    let mut col = Column {
        name,
        data_type: DataType {
            name: type_name,
            length,
            span: (type_tok.start, type_end),
        },
        not_null: false,
        generated: None,
        inline_primary_key: false,
        inline_unique: false,
        span: (name_tok.start, type_end),
    };
    while let Some(t) = c.peek() {
        if t.is_punct(b',') || t.is_punct(b')') {
            break;
        }
        let start = t.start;
        if c.kws(&["NOT", "NULL"]) {
            col.not_null = true;
        } else if c.kws(&["PRIMARY", "KEY"]) {
            col.inline_primary_key = true;
        } else if c.kw("UNIQUE") {
            c.kw("KEY");
            col.inline_unique = true;
        } else if c.kws(&["GENERATED", "ALWAYS", "AS"]) || c.kw("AS") {
            let expr_start = c.peek().map_or(0, |t| t.start);
            let open = c.i;
            let expr_end = c.skip_group()?;
            let prefix_of_k = substring_of_k(&c.t[open..c.i]);
            let mut stored = false;
            let mut clause_end = expr_end;
            if let Some(k) = c.peek().filter(|t| {
                t.is_keyword("STORED") || t.is_keyword("VIRTUAL") || t.is_keyword("PERSISTENT")
            }) {
                stored = !k.is_keyword("VIRTUAL");
                clause_end = k.end;
                c.next();
            }
            col.generated = Some(Generated {
                prefix_of_k,
                stored,
                expr_span: (expr_start, expr_end),
                clause_span: (start, clause_end),
            });
        } else if c.peek().is_some_and(|t| t.is_punct(b'(')) {
            c.skip_group()?;
        } else {
            c.next();
        }
        col.span.1 = c.t.get(c.i.saturating_sub(1)).map_or(col.span.1, |t| t.end);
    }
    Ok(col)
}

/// `(substring(K, 1, n))`, `(substr(K,1,n))`, `(SUBSTRING(K FROM 1 FOR n))` → n.
fn substring_of_k(group: &[Token]) -> Option<u64> {
    let inner = group.get(1..group.len().checked_sub(1)?)?;
    let (f, rest) = inner.split_first()?;
    if !(f.is_keyword("SUBSTRING") || f.is_keyword("SUBSTR")) {
        return None;
    }
    let args: Vec<&Kind> = rest.iter().map(|t| &t.kind).collect();
    let num = |k: &Kind| match k {
        Kind::Number(n) => n.parse::<u64>().ok(),
        _ => None,
    };
    let is_k =
        |k: &Kind| matches!(k, Kind::Word(w) | Kind::Quoted(w) if w.eq_ignore_ascii_case("K"));
    match args.as_slice() {
        [Kind::Punct(b'('), k, Kind::Punct(b','), one, Kind::Punct(b','), n, Kind::Punct(b')')]
            if is_k(k) && num(one) == Some(1) =>
        {
            num(n)
        }
        [Kind::Punct(b'('), k, Kind::Word(from), one, Kind::Word(for_), n, Kind::Punct(b')')]
            if is_k(k)
                && from.eq_ignore_ascii_case("FROM")
                && for_.eq_ignore_ascii_case("FOR")
                && num(one) == Some(1) =>
        {
            num(n)
        }
        _ => None,
    }
}

/// `(P = substring(K, 1, n))` or `(substring(K, 1, n) = P)` → (P, n).
fn prefix_check(group: &[Token]) -> Option<(String, u64)> {
    let inner = group.get(1..group.len().checked_sub(1)?)?;
    let eq = inner.iter().position(|t| t.is_punct(b'='))?;
    let (left, right) = (inner.get(..eq)?, inner.get(eq + 1..)?);
    let name = |side: &[Token]| match side {
        [t] => match &t.kind {
            Kind::Word(w) | Kind::Quoted(w) => Some(w.clone()),
            _ => None,
        },
        _ => None,
    };
    // substring_of_k reads a parenthesised group: the side with its own parentheses around it
    let substring = |side: &[Token]| {
        let mut toks = Vec::with_capacity(side.len() + 2);
        toks.push(group.first()?.clone());
        toks.extend_from_slice(side);
        toks.push(group.last()?.clone());
        substring_of_k(&toks)
    };
    match (name(left), name(right)) {
        (Some(p), None) => Some((p, substring(right)?)),
        (None, Some(p)) => Some((p, substring(left)?)),
        _ => None,
    }
}

/// `(length(V) <= L)` → L.
fn value_length_check(group: &[Token]) -> Option<u64> {
    let kinds: Vec<&Kind> = group.iter().map(|t| &t.kind).collect();
    match kinds.as_slice() {
        [Kind::Punct(b'('), Kind::Word(f), Kind::Punct(b'('), v, Kind::Punct(b')'), Kind::Punct(b'<'), Kind::Punct(b'='), Kind::Number(n), Kind::Punct(b')')]
            if (f.eq_ignore_ascii_case("LENGTH") || f.eq_ignore_ascii_case("OCTET_LENGTH"))
                && matches!(v, Kind::Word(w) | Kind::Quoted(w) if w.eq_ignore_ascii_case("V")) =>
        {
            n.parse().ok()
        }
        _ => None,
    }
}

fn partition_clause(c: &mut Cursor) -> Result<PartitionClause, ParseError> {
    let start = c.peek().map_or(0, |t| t.start);
    if !c.kws(&["PARTITION", "BY"]) {
        return Err(ParseError("expected PARTITION BY".into()));
    }
    c.kw("LINEAR");
    let mut kind = c
        .next()
        .and_then(Token::keyword)
        .ok_or_else(|| ParseError("expected a partitioning kind".into()))?;
    if c.kw("COLUMNS") {
        kind.push_str(" COLUMNS");
    }
    if kind == "KEY" && c.kw("ALGORITHM") {
        c.punct(b'=');
        c.next();
    }
    let columns = if kind == "HASH" || (kind == "RANGE" || kind == "LIST") {
        let open = c.i;
        c.skip_group()?;
        c.t[open + 1..c.i - 1]
            .iter()
            .filter_map(|t| t.ident().map(str::to_owned))
            .collect()
    } else {
        c.name_list()?
    };
    let mut p = PartitionClause {
        kind,
        columns,
        count: None,
        bounds: Vec::new(),
        subpartitioned: false,
        span: (start, 0),
    };
    if c.kw("PARTITIONS") {
        p.count = Some(c.number()?);
    }
    if c.kws(&["SUBPARTITION", "BY"]) {
        p.subpartitioned = true;
        while !c.at_end() && !c.peek().is_some_and(|t| t.is_punct(b'(')) {
            if c.peek().is_some_and(|t| t.is_punct(b'(')) {
                break;
            }
            c.next();
            if c.peek().is_some_and(|t| t.is_punct(b'('))
                && c.peek_at(1).is_some_and(|t| !t.is_keyword("PARTITION"))
            {
                c.skip_group()?;
            }
        }
    }
    if c.peek().is_some_and(|t| t.is_punct(b'(')) {
        c.next();
        let mut defs = 0u64;
        loop {
            if !c.kw("PARTITION") {
                return Err(ParseError(
                    "expected PARTITION in the partition list".into(),
                ));
            }
            c.ident()?;
            defs += 1;
            if c.kws(&["VALUES", "LESS", "THAN"]) {
                if c.kw("MAXVALUE") {
                    p.bounds.push(RangeBound::MaxValue);
                } else {
                    c.expect_punct(b'(')?;
                    let v = c
                        .next()
                        .ok_or_else(|| ParseError("expected a bound".into()))?;
                    p.bounds.push(match &v.kind {
                        Kind::Word(w) if w.eq_ignore_ascii_case("MAXVALUE") => RangeBound::MaxValue,
                        Kind::Str(s) | Kind::Hex(s) => RangeBound::LessThan(s.clone()),
                        Kind::Number(n) => RangeBound::LessThan(n.as_bytes().to_vec()),
                        _ => return Err(ParseError("unsupported partition bound".into())),
                    });
                    c.expect_punct(b')')?;
                }
            } else if c.kws(&["VALUES", "IN"]) {
                c.skip_group()?;
            }
            // partition options and subpartition lists
            while let Some(t) = c.peek() {
                if t.is_punct(b',') || t.is_punct(b')') {
                    break;
                }
                if t.is_punct(b'(') {
                    p.subpartitioned = true;
                    c.skip_group()?;
                } else {
                    c.next();
                }
            }
            if c.punct(b')') {
                break;
            }
            c.expect_punct(b',')?;
        }
        if p.count.is_none() {
            p.count = Some(defs);
        }
    }
    p.span.1 = c.t.get(c.i.saturating_sub(1)).map_or(start, |t| t.end);
    Ok(p)
}

fn alter_actions(c: &mut Cursor) -> Result<Vec<AlterAction>, ParseError> {
    let mut actions = Vec::new();
    while !c.at_end() {
        if c.peek().is_some_and(|t| t.is_keyword("PARTITION"))
            && c.peek_at(1).is_some_and(|t| t.is_keyword("BY"))
        {
            actions.push(AlterAction::Partition(partition_clause(c)?));
            c.punct(b',');
            continue;
        }
        let start_idx = c.i;
        let start_tok = c
            .next()
            .ok_or_else(|| ParseError("expected an ALTER action".into()))?;
        let w = start_tok.keyword().unwrap_or_default();
        let action = match w.as_str() {
            "ADD" => {
                if c.kw("COLUMN") {
                    AlterAction::AddColumn
                } else if let Some(k) = c.peek().and_then(Token::keyword).filter(|k| {
                    [
                        "INDEX",
                        "KEY",
                        "UNIQUE",
                        "FULLTEXT",
                        "SPATIAL",
                        "PRIMARY",
                        "CONSTRAINT",
                        "FOREIGN",
                    ]
                    .contains(&k.as_str())
                }) {
                    AlterAction::AddIndex(k)
                } else if c.peek().is_some_and(|t| t.is_keyword("PARTITION")) {
                    AlterAction::PartitionMaintenance("ADD PARTITION".into())
                } else {
                    AlterAction::AddColumn
                }
            }
            "DROP" => {
                if c.kw("COLUMN") {
                    AlterAction::DropColumn(c.ident()?)
                } else if c.kw("PARTITION") {
                    AlterAction::PartitionMaintenance("DROP PARTITION".into())
                } else if c.kw("INDEX")
                    || c.kw("KEY")
                    || c.kws(&["PRIMARY", "KEY"])
                    || c.kw("CONSTRAINT")
                    || c.kw("CHECK")
                    || c.kw("FOREIGN")
                {
                    AlterAction::DropIndex
                } else {
                    AlterAction::DropColumn(c.ident()?)
                }
            }
            "CHANGE" | "MODIFY" => {
                c.kw("COLUMN");
                AlterAction::ChangeColumn(c.ident()?)
            }
            "RENAME" => {
                if c.kw("COLUMN") {
                    AlterAction::RenameColumn(c.ident()?)
                } else if c.kw("INDEX") || c.kw("KEY") {
                    AlterAction::DropIndex
                } else {
                    let _ = c.kw("TO") || c.kw("AS");
                    AlterAction::Rename(c.table_name()?)
                }
            }
            "REMOVE" if c.kw("PARTITIONING") => AlterAction::RemovePartitioning,
            "TRUNCATE" | "COALESCE" | "REORGANIZE" | "EXCHANGE" | "ANALYZE" | "CHECK"
            | "OPTIMIZE" | "REBUILD" | "REPAIR"
                if c.peek().is_some_and(|t| t.is_keyword("PARTITION")) =>
            {
                AlterAction::PartitionMaintenance(format!("{w} PARTITION"))
            }
            "TABLEGROUP" | "KV_ATTRIBUTES" | "COMMENT" | "ENGINE" => {
                c.punct(b'=');
                let v = c
                    .next()
                    .ok_or_else(|| ParseError(format!("{w} needs a value")))?;
                let value = match &v.kind {
                    Kind::Word(s) | Kind::Quoted(s) | Kind::Number(s) => s.clone(),
                    Kind::Str(s) => String::from_utf8_lossy(s).into_owned(),
                    _ => String::new(),
                };
                // the span takes one separating comma (the following one, else the preceding
                // one), so cutting the option leaves a well-formed statement
                let before = start_idx.checked_sub(1).and_then(|k| c.t.get(k));
                let span = match (c.peek().filter(|t| t.is_punct(b',')), before) {
                    (Some(next), _) => (start_tok.start, next.end),
                    (None, Some(prev)) if prev.is_punct(b',') => (prev.start, v.end),
                    _ => (start_tok.start, v.end),
                };
                AlterAction::Option(TableOption {
                    name: w.clone(),
                    value,
                    span,
                    value_span: (v.start, v.end),
                    value_is_string: matches!(v.kind, Kind::Str(_)),
                })
            }
            other => AlterAction::Other(other.to_string()),
        };
        // skip the rest of this action
        skip_until(c, b";");
        c.punct(b',');
        actions.push(action);
    }
    Ok(actions)
}

#[cfg(test)]
mod tests {
    use super::*;
    // the model's reading of a definition lives in hbase (tests may look upwards)
    use crate::hbase::partition::{ModelPartitioning, Partitioning};

    fn create(sql: &str) -> CreateTable {
        match parse(sql.as_bytes()).expect("parses") {
            Some(Statement::CreateTable(t)) => *t,
            other => panic!("not a CREATE TABLE: {other:?}"),
        }
    }

    const GUIDE: &str = "CREATE TABLE htable1$family1 (
  K varbinary(1024),
  Q varbinary(256),
  T bigint,
  V varbinary(1048576) NOT NULL,
  PRIMARY KEY (K, Q, T))
TABLEGROUP = htable1
PARTITION BY KEY(K) PARTITIONS 97;";

    #[test]
    fn the_documented_table() {
        let t = create(GUIDE);
        assert_eq!(t.name.hbase_parts(), Some(("htable1", "family1")));
        assert_eq!(
            t.columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["K", "Q", "T", "V"]
        );
        assert_eq!(
            t.columns[0].data_type,
            DataType {
                name: "VARBINARY".into(),
                length: Some(1024),
                span: t.columns[0].data_type.span
            }
        );
        assert!(t.columns[3].not_null && !t.columns[0].not_null);
        assert_eq!(
            t.primary_key.as_deref(),
            Some(&["K".to_string(), "Q".into(), "T".into()][..])
        );
        assert_eq!(t.tablegroup(), Some("htable1"));
        assert_eq!(
            t.model_partitioning(),
            Some(Partitioning::Key {
                prefix_len: None,
                partitions: 97
            })
        );
        let opt = t.option("TABLEGROUP").expect("option");
        assert_eq!(&GUIDE[opt.span.0..opt.span.1], "TABLEGROUP = htable1");
    }

    #[test]
    fn prefix_column_forms() {
        for expr in [
            "substring(K, 1, 4)",
            "SUBSTR(`K`,1,4)",
            "SUBSTRING(K FROM 1 FOR 4)",
        ] {
            let sql = format!("create table g$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) not null, K_PREFIX varbinary(1024) GENERATED ALWAYS AS ({expr}) VIRTUAL, primary key (K,Q,T)) partition by key(K_PREFIX) partitions 97");
            let t = create(&sql);
            assert_eq!(t.prefix_column(), Some(("K_PREFIX", 4)), "{expr}");
            assert_eq!(
                t.model_partitioning(),
                Some(Partitioning::Key {
                    prefix_len: Some(4),
                    partitions: 97
                })
            );
        }
        let t = create(
            "create table g$f (K varbinary(10), P varbinary(10) AS (substring(K, 2, 4)) STORED)",
        );
        assert_eq!(t.prefix_column(), None);
        assert!(t.columns[1].generated.as_ref().is_some_and(|g| g.stored));
    }

    #[test]
    fn range_columns_and_other_partitionings() {
        let t = create("create table g$f (K varbinary(1024)) partition by range columns(K) (partition p0 values less than ('a'), partition p1 values less than ('w'), partition p2 values less than (MAXVALUE))");
        assert_eq!(
            t.model_partitioning(),
            Some(Partitioning::RangeK {
                bounds: vec![
                    RangeBound::LessThan(b"a".to_vec()),
                    RangeBound::LessThan(b"w".to_vec()),
                    RangeBound::MaxValue
                ]
            })
        );
        let h = create(
            "create table g$f (K varbinary(10), T bigint) partition by hash(T) partitions 7",
        );
        assert_eq!(h.partition.as_ref().map(|p| p.kind.as_str()), Some("HASH"));
        assert_eq!(h.model_partitioning(), None);
        let s = create("create table g$f (K varbinary(10)) partition by key(K) partitions 3 subpartition by key(K) subpartitions 2");
        assert!(s.partition.as_ref().is_some_and(|p| p.subpartitioned));
    }

    #[test]
    fn indexes_options_and_other_statements() {
        let t = create("create table g$f (K varbinary(10) unique, Q varbinary(10), KEY iq (Q), FULLTEXT INDEX ft (Q)) KV_ATTRIBUTES = '{\"Hbase\": {\"TimeToLive\": 3600}}', COMMENT 'x'");
        assert_eq!(t.indexes.len(), 3);
        assert_eq!(
            t.option("KV_ATTRIBUTES").map(|o| o.value.as_str()),
            Some("{\"Hbase\": {\"TimeToLive\": 3600}}")
        );
        assert_eq!(
            parse(b"CREATE TABLEGROUP IF NOT EXISTS g1").expect("ok"),
            Some(Statement::CreateTablegroup {
                name: "g1".into(),
                raw_name: b"g1".to_vec(),
                if_not_exists: true
            })
        );
        assert_eq!(
            parse(b"show tablegroups like 'h%'").expect("ok"),
            Some(Statement::ShowTablegroups {
                like: Some("h%".into())
            })
        );
        assert!(
            matches!(parse(b"rename table a$b to c$b, x to y").expect("ok"), Some(Statement::RenameTable(p)) if p.len() == 2)
        );
        let alter = parse(
            b"alter table g$f add column x int, drop index i, partition by key(K) partitions 23",
        )
        .expect("ok");
        let Some(Statement::AlterTable { actions, .. }) = alter else {
            panic!("alter")
        };
        assert!(matches!(actions[0], AlterAction::AddColumn));
        assert!(matches!(actions[1], AlterAction::DropIndex));
        assert!(matches!(&actions[2], AlterAction::Partition(p) if p.count == Some(23)));
        // an option's span takes one separating comma; PARTITION BY after an option without a
        // comma is still seen
        let sql = b"alter table g$f KV_ATTRIBUTES = '{}', partition by key(K) partitions 7";
        let Some(Statement::AlterTable { actions, .. }) = parse(sql).expect("ok") else {
            panic!("alter")
        };
        let AlterAction::Option(o) = &actions[0] else {
            panic!("option")
        };
        assert_eq!(&sql[o.span.0..o.span.1], b"KV_ATTRIBUTES = '{}',");
        let sql = b"alter table g$f add partition (partition p9), KV_ATTRIBUTES '{}'";
        let Some(Statement::AlterTable { actions, .. }) = parse(sql).expect("ok") else {
            panic!("alter")
        };
        let AlterAction::Option(o) = &actions[1] else {
            panic!("option")
        };
        assert_eq!(&sql[o.span.0..o.span.1], b", KV_ATTRIBUTES '{}'");
        let Some(Statement::AlterTable { actions, .. }) =
            parse(b"alter table g$f KV_ATTRIBUTES = '{}' partition by key(K) partitions 10")
                .expect("ok")
        else {
            panic!("alter")
        };
        assert!(
            matches!(&actions[1], AlterAction::Partition(p) if p.count == Some(10)),
            "{actions:?}"
        );
        assert_eq!(parse(b"select 1").expect("ok"), None);
        assert!(parse(b"create table g$f (").is_err());
    }
}
