//! One statement of a text read for the policy: which HBase tables and table groups it names
//! (`Scope` says where `$` names are HBase tables), what kind of statement it is for the
//! router (`Read`), through wrappers such as `SET STATEMENT … FOR` and stored programs.
//!
//! Pure: the readers are `sql/`'s; this decides only what they found.

use std::collections::HashMap;

use crate::sql::ddl::{self, Statement, TableName};
use crate::sql::dml;
use crate::sql::scan::{self, Dialect, Piece, Scanner, Tok};

/// The databases whose `group$family` tables are HBase tables (`hbase.databases`; OBKV maps an
/// HBase namespace to a database). Empty = every database, and then nothing else is needed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub databases: std::sync::Arc<[String]>,
    /// The session's current database, for unqualified names (asked only when `databases`
    /// is not empty).
    pub current: Option<String>,
    /// Database names compare case-insensitively (lower_case_table_names).
    pub names_ci: bool,
}

impl Scope {
    pub fn is_everything(&self) -> bool {
        self.databases.is_empty()
    }

    /// Whether a table in `schema` (None: the current database) may be an HBase table.
    pub fn covers(&self, schema: Option<&str>) -> bool {
        if self.databases.is_empty() {
            return true;
        }
        let Some(db) = schema.or(self.current.as_deref()) else {
            return false; // no database: the backend refuses the statement itself
        };
        self.databases.iter().any(|d| {
            if self.names_ci {
                d.to_lowercase() == db.to_lowercase()
            } else {
                d == db
            }
        })
    }
}

/// One statement of a text, read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Read {
    /// Nothing the proxy has business with (DML on HBase tables: later issues).
    Plain,
    /// A statement about an HBase table or a table group (or a CREATE TABLE with K, Q, T, V).
    Hbase(Box<Statement>),
    /// DDL naming an HBase table or a table group that the reader cannot parse.
    Unreadable(String),
    /// PREPARE … FROM / EXECUTE IMMEDIATE: the text it will run.
    Dynamic(crate::sql::dynamic::Source),
    /// A stored program or compound statement with HBase DDL inside.
    ProgramWithHbaseDdl,
    /// A stored program or compound statement that writes HBase tables.
    ProgramWritesHbase,
    /// A stored program or compound statement that runs dynamic SQL whose text is not a
    /// literal (it may write HBase tables; no one reads that text before it runs).
    ProgramDynamic,
    /// CREATE TRIGGER of a trigger the proxy keeps on an HBase table (in a restored dump): the
    /// table.
    ProxyTrigger(TableName),
    /// CREATE TRIGGER of any other trigger on an HBase table: it would change cells after the
    /// proxy checked them (`SET NEW.T = …`).
    TriggerOnHbase,
    /// DROP TRIGGER of a trigger the proxy keeps (the prefix column of a MariaDB/MySQL table).
    DropProxyTrigger,
    /// LOCK TABLES naming these HBase tables.
    Lock(Vec<TableName>),
    /// SELECT / UPDATE / DELETE on an HBase-style table, read for the rewriter.
    Dml(Box<dml::Dml>),
    /// SELECT / UPDATE / DELETE on an HBase-style table in a shape the rewriter does not read.
    DmlUnreadable(&'static str),
    /// INSERT / REPLACE into an HBase-style table (in scope).
    /// (Its head, read: the checks go on after it.)
    Insert(crate::sql::insert::Head),
    /// LOAD DATA into an HBase-style table (in scope).
    Load(Box<crate::sql::load::Load>),
    /// LOAD DATA naming an HBase-style name, in a form the reader does not follow.
    LoadUnreadable(&'static str),
    /// CREATE / ALTER VIEW naming an HBase-style table, whose query may take writes.
    View,
    /// INSERT / REPLACE whose head (its table) the reader does not follow.
    InsertUnreadable(&'static str),
    /// HBase DDL run by a wrapper (`SET STATEMENT … FOR`): the proxy carries DDL out only as
    /// a statement of its own.
    WrappedDdl,
    /// A write (or dynamic SQL) on an HBase-style table under a wrapper the proxy cannot read
    /// through with certainty (a placeholder in `SET STATEMENT`, an executable comment).
    WrappedUnsure,
}

/// Whether `t`, with the two tokens `before` it, names an HBase table in scope or a table
/// group: `g$f`, `` `g$f` ``, `db.g$f` (the database decides), TABLEGROUP.
pub(super) fn names_hbase_table(
    sql: &[u8],
    t: &scan::Token,
    before: [Option<scan::Token>; 2],
    scope: &Scope,
) -> bool {
    if !is_hbase_token(sql, t) {
        return false;
    }
    if t.kind == Tok::Word && memchr::memchr(b'$', t.text(sql)).is_none() {
        return true; // TABLEGROUP(S): table groups belong to the instance
    }
    if scope.is_everything() {
        return true;
    }
    let schema = match before {
        [Some(db), Some(dot)]
            if dot.is_punct(b'.') && matches!(db.kind, Tok::Word | Tok::QuotedIdent) =>
        {
            Some(String::from_utf8_lossy(&scan::ident_value(sql, &db)).into_owned())
        }
        _ => None,
    };
    scope.covers(schema.as_deref())
}

/// Whether an identifier token names an HBase table (`group$family`) or a table group.
pub(super) fn is_hbase_token(sql: &[u8], t: &scan::Token) -> bool {
    match t.kind {
        Tok::Word => {
            let w = t.text(sql);
            memchr::memchr(b'$', w).is_some()
                || w.eq_ignore_ascii_case(b"TABLEGROUP")
                || w.eq_ignore_ascii_case(b"TABLEGROUPS")
        }
        Tok::QuotedIdent => memchr::memchr(b'$', t.text(sql)).is_some(),
        _ => false,
    }
}

/// One statement of a text, read through the wrappers that run another statement
/// (`scan::executed_part`: `SET STATEMENT … FOR`, `ANALYZE`), with the part of the text that
/// runs: offsets in the read are relative to that part (the piece itself without a wrapper).
pub(super) fn read_executed(
    sql: &[u8],
    p: Piece,
    d: Dialect,
    scope: &Scope,
    dml_too: bool,
    kept: Option<&scan::Kept>,
) -> (Read, Piece) {
    // (the kept first token, when the split kept them, tells most statements from a wrapper:
    // it is the piece's own first token because a text with an executable comment, whose
    // state could carry across a `;`, keeps none — the router's `Kept::new(0)`)
    let ex = scan::executed_part_from(
        sql.get(p.start..p.end).unwrap_or_default(),
        d,
        kept.and_then(|k| k.first_of(&p)),
    );
    if ex.offset == 0 || p.program {
        return (read_piece(sql, p, d, scope, dml_too, kept), p);
    }
    let inner = Piece {
        start: p.start + ex.offset,
        ..p
    };
    let read = read_piece(sql, inner, d, scope, dml_too, kept);
    match read {
        Read::Hbase(_)
        | Read::Unreadable(_)
        | Read::ProgramWithHbaseDdl
        | Read::ProxyTrigger(_) => (Read::WrappedDdl, p),
        Read::Plain => (Read::Plain, p),
        Read::Dml(x) if ex.unsure && x.verb == dml::Verb::Select && !x.locking => (Read::Plain, p),
        Read::DmlUnreadable(_)
            if ex.unsure
                && !writes_rows_lexically(
                    sql.get(inner.start..inner.end).unwrap_or_default(),
                    d,
                ) =>
        {
            (Read::Plain, p)
        }
        _ if ex.unsure => (Read::WrappedUnsure, p),
        read => (read, inner),
    }
}

/// Whether a statement the DML reader read is `Read::Dml` (else plain): where the scope covers
/// its table's database.
pub(super) fn in_scope(x: &dml::Dml, scope: &Scope) -> bool {
    scope.covers(x.table.schema.as_deref())
}

/// One statement of a text, read (`kept`: the text's tokens, if its split kept them).
pub(super) fn read_piece(
    sql: &[u8],
    p: Piece,
    d: Dialect,
    scope: &Scope,
    dml_too: bool,
    kept: Option<&scan::Kept>,
) -> Read {
    let piece = &sql[p.start..p.end];
    // the first token: the split's when it kept them, else lexed here. Kept tokens are the
    // piece's own lexing because a text with an executable comment keeps none (the router's
    // `Kept::new(0)`): such a comment's state would carry across a `;`, and a later piece
    // lexed alone would begin otherwise.
    let first = match kept.and_then(|k| k.first_of(&p)) {
        Some(first) => first,
        None => Scanner::new(piece, d).next().and_then(Result::ok),
    };
    let Some(first) = first else {
        return Read::Plain;
    };
    if dml_too && !p.program && (first.is_word(piece, "INSERT") || first.is_word(piece, "REPLACE"))
    {
        // the head is enough here (the rows are read once the table's schema is known)
        // (from the kept tokens, and the shape's frame of the head when it has one)
        let head = kept
            .and_then(|k| crate::sql::framed::read_insert_head(k, piece, &p, d))
            .unwrap_or_else(|| crate::sql::insert::read_head_resumable(piece, d, None));
        return match head {
            Ok(Some(head))
                if memchr::memchr(b'$', head.insert.table.raw_name.as_slice()).is_some()
                    && scope.covers(head.insert.table.schema.as_deref()) =>
            {
                Read::Insert(head)
            }
            Ok(_) => Read::Plain,
            // a head it cannot read: the write stage reports it (C9) on an HBase table
            Err(why) => Read::InsertUnreadable(why),
        };
    }
    if dml_too && !p.program && first.is_word(piece, "LOAD") {
        return match crate::sql::load::read(piece, d) {
            Some(Ok(l))
                if memchr::memchr(b'$', l.table.raw_name.as_slice()).is_some()
                    && scope.covers(l.table.schema.as_deref()) =>
            {
                Read::Load(Box::new(l))
            }
            Some(Err(why)) if memchr::memchr(b'$', piece).is_some() => Read::LoadUnreadable(why),
            _ => Read::Plain,
        };
    }
    if dml_too && !p.program && DML_WORDS.iter().any(|w| first.is_word(piece, w)) {
        // (from the kept tokens, and the shape's frame of the statement when it has one)
        let read = kept
            .and_then(|k| crate::sql::framed::read_dml(k, piece, &p, d))
            .unwrap_or_else(|| dml::read_lexed(piece, d, None));
        return match read {
            dml::Read::Dml(x) if in_scope(&x, scope) => Read::Dml(x),
            dml::Read::Dml(_) | dml::Read::NotDml => Read::Plain,
            dml::Read::Unreadable(why) => Read::DmlUnreadable(why),
        };
    }
    if p.program {
        return if let Some(table) = proxy_trigger_table(piece, d) {
            Read::ProxyTrigger(table)
        } else if trigger_on_hbase_table(piece, d, scope) {
            Read::TriggerOnHbase
        } else {
            match program_body(piece, d, scope) {
                ProgramBody::Ddl => Read::ProgramWithHbaseDdl,
                ProgramBody::Writes => Read::ProgramWritesHbase,
                ProgramBody::Dynamic => Read::ProgramDynamic,
                ProgramBody::Nothing => Read::Plain,
            }
        };
    }
    if first.is_word(piece, "PREPARE") || first.is_word(piece, "EXECUTE") {
        return crate::sql::dynamic::source(piece, d).map_or(Read::Plain, Read::Dynamic);
    }
    if first.is_word(piece, "DROP") && drops_proxy_trigger(piece, d) {
        return Read::DropProxyTrigger;
    }
    if first.is_word(piece, "LOCK") {
        let tables = locked_hbase_tables(piece, d, scope);
        return if tables.is_empty() {
            Read::Plain
        } else {
            Read::Lock(tables)
        };
    }
    let verb = String::from_utf8_lossy(first.text(piece)).to_ascii_uppercase();
    if first.kind != Tok::Word || !DDL_VERBS.contains(&verb.as_str()) {
        return Read::Plain;
    }
    // the tokens after the first
    let mut tokens = Scanner::new(piece, d);
    let _ = tokens.next();
    // the object of the DDL, and whether any identifier names an HBase table or a group
    let mut object: Option<String> = None;
    let mut names_hbase = false;
    let mut before: [Option<scan::Token>; 2] = [None, None];
    for (i, t) in tokens.enumerate() {
        let Ok(t) = t else { break };
        names_hbase |= names_hbase_table(piece, &t, before, scope);
        before = [before[1], Some(t)];
        if object.is_none() && i < 8 && t.kind == Tok::Word {
            let w = String::from_utf8_lossy(t.text(piece)).to_ascii_uppercase();
            if OBJECTS.contains(&w.as_str()) {
                object = Some(w);
            }
        }
        if names_hbase && object.is_some() {
            break;
        }
    }
    let create_table = verb == "CREATE" && object.as_deref() == Some("TABLE");
    if !names_hbase && !create_table {
        return Read::Plain;
    }
    if names_hbase && (verb == "CREATE" || verb == "ALTER") {
        if let Some(v) = crate::sql::view::read(piece, d) {
            return if v.read_only { Read::Plain } else { Read::View };
        }
    }
    // offsets in the parsed statement are relative to the piece
    match ddl::parse_with(piece, d) {
        Ok(Some(stmt)) if touches_hbase(&stmt, scope) => Read::Hbase(Box::new(stmt)),
        Ok(Some(_)) => Read::Plain,
        // a form the parser does not read: refused when it may name an HBase table or a group
        // as a table (a `$` in a column's or an index's name is no such name)
        Ok(None)
            if names_hbase
                && object.as_deref().is_some_and(|o| TABLE_LIKE.contains(&o))
                && hbase_name_as_table(piece, d, scope) =>
        {
            Read::Unreadable(format!(
                "{verb} {} is not a form obkv-proxy reads",
                object.unwrap_or_default()
            ))
        }
        Ok(None) => Read::Plain,
        Err(e) if names_hbase && hbase_name_as_table(piece, d, scope) => Read::Unreadable(e.0),
        Err(_) => Read::Plain,
    }
}

/// Words after which a name in DDL is a table's (`TABLE g$f`, `FROM`, `ON`, `TO`, `LIKE`,
/// `REFERENCES`, `IF [NOT] EXISTS g$f`, `TRUNCATE g$f`, `SHOW INDEX IN g$f`, a verb itself, …).
const TABLE_POSITION: [&str; 17] = [
    "TABLE",
    "TABLES",
    "INTO",
    "FROM",
    "JOIN",
    "ON",
    "TO",
    "AS",
    "LIKE",
    "REFERENCES",
    "EXISTS",
    "TRUNCATE",
    "RENAME",
    "IN",
    "DROP",
    "CREATE",
    "ALTER",
];

/// Whether a DDL statement the parser cannot read names a table group, or an HBase table
/// where a table's name stands (after a word of `TABLE_POSITION`, or after a `,` outside
/// parentheses: a list of tables), rather than as a column's or an index's name (found by a
/// review: `CREATE TEMPORARY TABLE t (`c$1` int)` was refused).
fn hbase_name_as_table(piece: &[u8], d: Dialect, scope: &Scope) -> bool {
    let mut depth = 0u32;
    // the last three tokens before the current one (the oldest first)
    let mut back: [Option<scan::Token>; 3] = [None, None, None];
    let table_position = |p: Option<scan::Token>, depth: u32| {
        p.is_some_and(|p| {
            (p.is_punct(b',') && depth == 0)
                || (p.kind == Tok::Word && TABLE_POSITION.iter().any(|w| p.is_word(piece, w)))
        })
    };
    for t in Scanner::new(piece, d).map_while(Result::ok) {
        if names_hbase_table(piece, &t, [back[1], back[2]], scope) {
            if t.kind == Tok::Word && memchr::memchr(b'$', t.text(piece)).is_none() {
                return true; // TABLEGROUP(S)
            }
            // `db.g$f`: the position of `db`
            let before = if back[2].is_some_and(|p| p.is_punct(b'.')) {
                back[0]
            } else {
                back[2]
            };
            if table_position(before, depth) {
                return true;
            }
        }
        if t.is_punct(b'(') {
            depth += 1;
        } else if t.is_punct(b')') {
            depth = depth.saturating_sub(1);
        }
        back = [back[1], back[2], Some(t)];
    }
    false
}

/// Words that begin a statement the prefix-scan rewriter reads.
pub(super) const DML_WORDS: [&str; 8] = [
    "SELECT", "UPDATE", "DELETE", "EXPLAIN", "DESCRIBE", "DESC", "ANALYZE", "WITH",
];

/// Objects a DDL verb can name; the first of them among the leading words is the statement's.
pub(super) const OBJECTS: [&str; 14] = [
    "TABLE",
    "TABLES",
    "INDEX",
    "TABLEGROUP",
    "TABLEGROUPS",
    "VIEW",
    "DATABASE",
    "SCHEMA",
    "PROCEDURE",
    "FUNCTION",
    "TRIGGER",
    "EVENT",
    "USER",
    "SEQUENCE",
];
/// Objects whose DDL on an HBase name must be read (or refused).
pub(super) const TABLE_LIKE: [&str; 5] = ["TABLE", "TABLES", "INDEX", "TABLEGROUP", "TABLEGROUPS"];

/// A user variable as the backend compares names: without `@` and quotes, case-insensitive.
pub(super) fn normalize_variable(v: &[u8]) -> Vec<u8> {
    let v = v.strip_prefix(b"@").unwrap_or(v);
    let v = match v.first() {
        Some(b'`' | b'\'' | b'"') if v.len() >= 2 => &v[1..v.len() - 1],
        _ => v,
    };
    v.to_ascii_lowercase()
}

/// The offset of the first mention of every user variable in `sql` (one pass).
pub(super) fn variable_first_mentions(sql: &[u8], d: Dialect) -> HashMap<Vec<u8>, usize> {
    let mut out = HashMap::new();
    for t in Scanner::new(sql, d).map_while(Result::ok) {
        if t.kind == Tok::Var && !t.text(sql).starts_with(b"@@") {
            out.entry(normalize_variable(t.text(sql)))
                .or_insert(t.start);
        }
    }
    out
}

/// `CREATE [DEFINER = …] TRIGGER name … ON table …` where `name` is one of the triggers the
/// proxy itself keeps on an HBase table (MariaDB/MySQL translation): a dump made through the
/// proxy lists them, and restoring it must not fail on them. The table it is on.
pub(super) fn proxy_trigger_table(piece: &[u8], d: Dialect) -> Option<TableName> {
    let tokens: Vec<scan::Token> = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(40)
        .collect();
    let word = |t: &scan::Token, w: &str| t.is_word(piece, w);
    let at = tokens.iter().position(|t| word(t, "TRIGGER"))?;
    if !tokens.first().is_some_and(|t| word(t, "CREATE")) {
        return None;
    }
    // a name, possibly qualified: (qualifier, last part)
    let name_of = |i: usize| -> Option<(Option<Vec<u8>>, Vec<u8>)> {
        let first = tokens
            .get(i)
            .filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))?;
        match (tokens.get(i + 1), tokens.get(i + 2)) {
            (Some(dot), Some(last))
                if dot.is_punct(b'.') && matches!(last.kind, Tok::Word | Tok::QuotedIdent) =>
            {
                Some((
                    Some(scan::ident_value(piece, first)),
                    scan::ident_value(piece, last),
                ))
            }
            _ => Some((None, scan::ident_value(piece, first))),
        }
    };
    let (_, trigger) = name_of(at + 1)?;
    let on = tokens.iter().skip(at).position(|t| word(t, "ON"))? + at;
    let (schema, raw_name) = name_of(on + 1)?;
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (table, trigger) = (lossy(&raw_name), lossy(&trigger));
    let ours = table.contains('$')
        && ["bi", "bu"]
            .iter()
            .any(|s| trigger == crate::hbase::translate::derived_name(&table, s));
    ours.then(|| TableName {
        schema: schema.as_deref().map(lossy),
        name: table.as_str().into(),
        raw_schema: schema,
        raw_name: raw_name.into(),
    })
}

/// `DROP TRIGGER [IF EXISTS] [db.]name` where `name` is one the proxy gives its own triggers
/// (`obkv_<group$family>_bi` / `_bu`: `hbase::translate::derived_name`).
pub(super) fn drops_proxy_trigger(piece: &[u8], d: Dialect) -> bool {
    let tokens: Vec<scan::Token> = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(8)
        .collect();
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(piece, w));
    if !word(0, "DROP") || !word(1, "TRIGGER") {
        return false;
    }
    let mut i = 2;
    if word(2, "IF") && word(3, "EXISTS") {
        i = 4;
    }
    if tokens.get(i + 1).is_some_and(|t| t.is_punct(b'.')) {
        i += 2;
    }
    let Some(name) = tokens.get(i) else {
        return false;
    };
    let name = scan::ident_value(piece, name);
    name.starts_with(b"obkv_")
        && (name.ends_with(b"_bi") || name.ends_with(b"_bu"))
        && memchr::memchr(b'$', &name).is_some()
}

/// `CREATE … TRIGGER name {BEFORE | AFTER} event ON table …` where `table` is an HBase table (in
/// scope): whatever its body does, it runs after the proxy's checks.
pub(super) fn trigger_on_hbase_table(piece: &[u8], d: Dialect, scope: &Scope) -> bool {
    let tokens: Vec<scan::Token> = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(64)
        .collect();
    let word = |t: &scan::Token, w: &str| t.is_word(piece, w);
    if !tokens.first().is_some_and(|t| word(t, "CREATE")) {
        return false;
    }
    let Some(at) = tokens.iter().position(|t| word(t, "TRIGGER")) else {
        return false;
    };
    let Some(on) = tokens
        .iter()
        .skip(at)
        .position(|t| word(t, "ON"))
        .map(|p| p + at)
    else {
        return false;
    };
    // the table: `name` or `db.name`
    let (first, second, third) = (tokens.get(on + 1), tokens.get(on + 2), tokens.get(on + 3));
    let (table, before) = match (first, second, third) {
        (Some(db), Some(dot), Some(t)) if dot.is_punct(b'.') => (*t, [Some(*db), Some(*dot)]),
        (Some(t), _, _) => (*t, [None, tokens.get(on).copied()]),
        _ => return false,
    };
    memchr::memchr(b'$', table.text(piece)).is_some()
        && names_hbase_table(piece, &table, before, scope)
}

/// `LOCK TABLE[S] t [AS a] READ|WRITE, …`: the HBase tables it names (in scope). While they are
/// locked the catalog cannot be read on the session's connection, so the session reads their
/// entries first.
pub(super) fn locked_hbase_tables(piece: &[u8], d: Dialect, scope: &Scope) -> Vec<TableName> {
    let tokens: Vec<scan::Token> = Scanner::new(piece, d).map_while(Result::ok).collect();
    let is_lock = tokens.first().is_some_and(|t| t.is_word(piece, "LOCK"))
        && tokens
            .get(1)
            .is_some_and(|t| t.is_word(piece, "TABLE") || t.is_word(piece, "TABLES"));
    if !is_lock {
        return Vec::new();
    }
    let name = |t: &scan::Token| String::from_utf8_lossy(&scan::ident_value(piece, t)).into_owned();
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let before = [
            i.checked_sub(2).and_then(|j| tokens.get(j)).copied(),
            i.checked_sub(1).and_then(|j| tokens.get(j)).copied(),
        ];
        if memchr::memchr(b'$', t.text(piece)).is_none()
            || !names_hbase_table(piece, t, before, scope)
        {
            continue;
        }
        let schema = match before {
            [Some(db), Some(dot)] if dot.is_punct(b'.') => Some(name(&db)),
            _ => None,
        };
        out.push(TableName {
            raw_schema: match before {
                [Some(db), Some(dot)] if dot.is_punct(b'.') => Some(scan::ident_value(piece, &db)),
                _ => None,
            },
            raw_name: scan::ident_small(piece, t),
            schema,
            name: name(t).into(),
        });
    }
    out
}

/// A stored program or compound statement: does any statement inside it run DDL on an HBase
/// table or a table group? (Its own leading CREATE is not one of them.)
/// What a stored program's (or compound statement's) body does to HBase tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProgramBody {
    Nothing,
    /// DDL naming an HBase table or a table group.
    Ddl,
    /// INSERT / REPLACE / UPDATE / DELETE / LOAD DATA into an HBase table: rows the proxy
    /// never sees (the body runs inside the backend).
    Writes,
    /// `PREPARE … FROM` / `EXECUTE IMMEDIATE` of a text that is not one string literal (a
    /// variable, an expression, adjacent literals, an introducer): what it runs is known only
    /// when it runs.
    Dynamic,
}

/// One pass over a program's tokens. A write's target is an HBase name between its verb and
/// the first SET / VALUES / SELECT / WHERE / `(` (so a table only read in a subquery or an
/// INSERT … SELECT is not taken for one); a verb after BEFORE / AFTER / ON / FOR / KEY is a
/// trigger event, a referential action, a locking read or an upsert clause, not a write.
pub(super) fn program_body(piece: &[u8], d: Dialect, scope: &Scope) -> ProgramBody {
    program_body_at(piece, d, scope, true)
}

/// `program_body`; with `literals`, the text of a `PREPARE name FROM '…'` / `EXECUTE IMMEDIATE
/// '…'` literal in the body is read too (one level: not the literals inside it).
fn program_body_at(piece: &[u8], d: Dialect, scope: &Scope, literals: bool) -> ProgramBody {
    let mut in_ddl = false;
    // a write's verb, while its target may follow (`(` ends an INSERT's; an UPDATE's or a
    // DELETE's table references go on after a derived table, whose inside is skipped, and
    // into parentheses that hold tables: `UPDATE (g$f JOIN t ON …) SET …`)
    let mut in_write: Option<bool> = None;
    // inside a derived table (`(SELECT …)`, `(WITH …`, `(VALUES …`, `(TABLE …`): its depth;
    // parentheses not yet known to open one (those that hold tables are read through)
    let mut depth = 0u32;
    let mut undecided = 0u32;
    let mut writes = false;
    let mut dynamic = false;
    // the program's own leading word is not one of its statements; a literal's first word is
    let mut first = literals;
    let mut before: [Option<scan::Token>; 2] = [None, None];
    // `SET STATEMENT …` seen: its FOR begins the statement it runs, not a locking clause
    let mut statement_for = false;
    let mut after_statement_for = false;
    // where a dynamic text must follow: a PREPARE (its name, then FROM), an EXECUTE IMMEDIATE
    let mut prepare_at: Option<usize> = None;
    let mut text_next = false;
    let mut text_read = false;
    for (i, t) in Scanner::new(piece, d).map_while(Result::ok).enumerate() {
        let two_back = before;
        before = [before[1], Some(t)];
        if t.is_punct(b';') {
            in_ddl = false;
            in_write = None;
            depth = 0;
            undecided = 0;
            statement_for = false;
            prepare_at = None;
            text_next = false;
            text_read = false;
            continue;
        }
        let is_first = std::mem::replace(&mut first, false);
        let was_statement_for = std::mem::replace(&mut after_statement_for, false);
        // dynamic SQL the body runs: one string literal is read; anything else (a variable,
        // an expression, a literal followed by another, which the backend joins) is not known
        // before it runs
        if literals {
            // after the literal only its statement's end or EXECUTE IMMEDIATE's USING: another
            // literal (joined to it), `||` (PIPES_AS_CONCAT) or any operator makes the text
            // one the backend computes
            if std::mem::replace(&mut text_read, false) && !t.is_word(piece, "USING") {
                dynamic = true;
            }
            if std::mem::replace(&mut text_next, false) {
                if t.kind != Tok::Str {
                    dynamic = true;
                    continue;
                }
                text_read = true;
                let text = scan::string_value(piece, &t, d);
                match program_body_at(&text, d, scope, false) {
                    ProgramBody::Ddl => return ProgramBody::Ddl,
                    ProgramBody::Writes => writes = true,
                    ProgramBody::Dynamic => dynamic = true,
                    ProgramBody::Nothing => {}
                }
                continue;
            }
            if t.is_word(piece, "PREPARE") {
                prepare_at = Some(i);
            } else if (t.is_word(piece, "FROM") && prepare_at.is_some_and(|p| p + 2 == i))
                || (t.is_word(piece, "IMMEDIATE")
                    && two_back[1].is_some_and(|p| p.is_word(piece, "EXECUTE")))
            {
                text_next = true;
                continue;
            }
        }
        if t.is_word(piece, "STATEMENT") && two_back[1].is_some_and(|p| p.is_word(piece, "SET")) {
            statement_for = true;
        } else if t.is_word(piece, "FOR") && statement_for {
            statement_for = false;
            after_statement_for = true;
            continue;
        }
        if t.kind == Tok::Word
            && ["CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"]
                .iter()
                .any(|v| t.is_word(piece, v))
        {
            in_ddl |= !is_first;
            continue;
        }
        if t.kind == Tok::Word
            && !is_first
            && ["INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD"]
                .iter()
                .any(|v| t.is_word(piece, v))
        {
            // a trigger's event, a referential action, an upsert's clause, a locking read
            // (`FOR UPDATE`; the FOR of `SET STATEMENT … FOR` begins a statement)
            let event = !was_statement_for
                && two_back[1].is_some_and(|p| {
                    ["BEFORE", "AFTER", "ON", "KEY"]
                        .iter()
                        .any(|w| p.is_word(piece, w))
                        || (p.is_word(piece, "FOR") && t.is_word(piece, "UPDATE"))
                });
            let rows_after_paren = t.is_word(piece, "UPDATE") || t.is_word(piece, "DELETE");
            in_write = (!event).then_some(rows_after_paren);
            depth = 0;
            undecided = 0;
            continue;
        }
        if let Some(refs_go_on) = in_write {
            if depth == 0 && undecided > 0 && !t.is_punct(b'(') {
                // what follows the parentheses tells a derived table from tables
                // (only the innermost: `((SELECT …) d JOIN g$f …)`)
                if ["SELECT", "WITH", "VALUES", "TABLE"]
                    .iter()
                    .any(|w| t.is_word(piece, w))
                {
                    depth = 1;
                }
                undecided = 0;
            }
            if t.is_punct(b'(') {
                if !refs_go_on {
                    in_write = None;
                } else if depth > 0 {
                    depth += 1;
                } else {
                    undecided += 1;
                }
            } else if t.is_punct(b')') {
                depth = depth.saturating_sub(1);
            } else if depth == 0
                && ["SET", "VALUES", "VALUE", "SELECT", "WHERE", "WITH"]
                    .iter()
                    .any(|w| t.is_word(piece, w))
            {
                in_write = None;
            }
        }
        if in_ddl && names_hbase_table(piece, &t, two_back, scope) {
            return ProgramBody::Ddl;
        }
        if in_write.is_some()
            && depth == 0
            && memchr::memchr(b'$', t.text(piece)).is_some()
            && names_hbase_table(piece, &t, two_back, scope)
        {
            writes = true;
        }
    }
    if writes {
        ProgramBody::Writes
    } else if dynamic {
        ProgramBody::Dynamic
    } else {
        ProgramBody::Nothing
    }
}

/// Whether a parsed statement can concern an HBase table or a table group (including the
/// CREATE TABLE of a K/Q/T/V table without `$`, which earns a warning).
pub(super) fn touches_hbase(stmt: &Statement, scope: &Scope) -> bool {
    names_hbase_object(stmt, scope)
        || matches!(stmt, Statement::CreateTable(t)
            if t.has_kqtv_columns() && scope.covers(t.name.schema.as_deref()))
}

/// Whether a parsed statement names an HBase table (in scope) or a table group.
pub(super) fn names_hbase_object(stmt: &Statement, scope: &Scope) -> bool {
    let hbase = |t: &TableName| t.is_hbase_name() && scope.covers(t.schema.as_deref());
    match stmt {
        Statement::CreateTablegroup { .. }
        | Statement::DropTablegroup { .. }
        | Statement::ShowTablegroups { .. } => true,
        Statement::CreateTable(t) => hbase(&t.name) || t.tablegroup().is_some(),
        Statement::CreateTableLike { name, source, .. } => hbase(name) || hbase(source),
        Statement::DropTable { tables, .. } => tables.iter().any(hbase),
        Statement::TruncateTable(t)
        | Statement::ShowCreateTable(t)
        | Statement::CreateIndex { table: t, .. } => hbase(t),
        // a rename to an HBase name too (refused unless the table is one)
        Statement::AlterTable { table: t, actions } => {
            hbase(t)
                || actions
                    .iter()
                    .any(|a| matches!(a, crate::sql::ddl::AlterAction::Rename(n) | crate::sql::ddl::AlterAction::Exchange(n) if hbase(n)))
        }
        Statement::RenameTable(pairs) => pairs.iter().any(|(a, b)| hbase(a) || hbase(b)),
    }
}

/// Whether a statement the DML reader does not follow writes or locks rows, by its words: an
/// UPDATE or DELETE (also after WITH), or a SELECT with FOR UPDATE / FOR SHARE / LOCK IN SHARE
/// MODE.
/// Whether a statement of a text, before its last, changes how the backend reads the ones
/// after it: `SET sql_mode …`, `SET NAMES …`, `SET CHARACTER SET …`, a `character_set_*` or
/// `collation_connection` variable (not `SET STATEMENT … FOR`, which holds for its statement);
/// or may, by running a text or program the proxy does not read here (`EXECUTE`, `EXECUTE
/// IMMEDIATE`, `CALL`: their SET would hold for the rest of the text too).
pub(crate) fn changes_reading_state(sql: &[u8], pieces: &[Piece], d: Dialect) -> bool {
    let Some((_, before_last)) = pieces.split_last() else {
        return false;
    };
    before_last.iter().any(|p| {
        let piece = sql.get(p.start..p.end).unwrap_or_default();
        let mut toks = Scanner::new(piece, d).map_while(Result::ok).take(64);
        let (Some(first), second) = (toks.next(), toks.next()) else {
            return false;
        };
        if first.is_word(piece, "EXECUTE") || first.is_word(piece, "CALL") {
            return true;
        }
        if !first.is_word(piece, "SET") || second.is_some_and(|t| t.is_word(piece, "STATEMENT")) {
            return false;
        }
        let named = |t: &scan::Token| {
            let lower = t.text(piece).to_ascii_lowercase();
            let has = |w: &[u8]| lower.windows(w.len()).any(|x| x == w);
            matches!(t.kind, Tok::Word | Tok::Var | Tok::QuotedIdent)
                && (has(b"sql_mode")
                    || has(b"character_set")
                    || has(b"collation_connection")
                    || t.is_word(piece, "NAMES")
                    || t.is_word(piece, "CHARACTER")
                    || t.is_word(piece, "CHARSET"))
        };
        second.is_some_and(|t| named(&t)) || toks.any(|t| named(&t))
    })
}

/// Whether a text the scanner cannot split mentions the reading state anywhere (`sql_mode`,
/// `NAMES`, `CHARACTER SET`, `character_set_…`, `collation_connection`), or what may change it
/// unseen (`EXECUTE`, `CALL`): then it is read under every state, as a split text with such a
/// statement is.
pub(super) fn mentions_reading_state(sql: &[u8]) -> bool {
    [
        &b"sql_mode"[..],
        b"names",
        b"character",
        b"charset",
        b"collation_connection",
        b"execute",
        b"call",
    ]
    .iter()
    .any(|w| crate::sql::classify::contains_ci(sql, w))
}

/// What a statement does to the session's transaction state, read lexically: `SET
/// autocommit = …` (off: every statement runs in a transaction; on: commits), `XA START` /
/// `XA BEGIN` (begins one), `XA COMMIT` / `XA ROLLBACK` (ends it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TxnEffect {
    Begins,
    Ends,
}

pub(super) fn txn_effect(piece: &[u8], d: Dialect) -> Option<TxnEffect> {
    let toks: Vec<scan::Token> = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(64)
        .collect();
    let word = |i: usize, w: &str| toks.get(i).is_some_and(|t| t.is_word(piece, w));
    if word(0, "XA") {
        if word(1, "START") || word(1, "BEGIN") {
            return Some(TxnEffect::Begins);
        }
        if word(1, "COMMIT") || word(1, "ROLLBACK") {
            return Some(TxnEffect::Ends);
        }
        return None;
    }
    if !word(0, "SET") || word(1, "STATEMENT") {
        return None;
    }
    // SET [SESSION | LOCAL | @@[session.]]autocommit {= | :=} value, among other assignments
    let mut effect = None;
    let mut i = 1;
    while let Some(t) = toks.get(i) {
        let text = t.text(piece);
        let named = matches!(t.kind, Tok::Word | Tok::Var)
            && text.len() >= 10
            && text
                .get(text.len() - 10..)
                .is_some_and(|end| end.eq_ignore_ascii_case(b"autocommit"))
            && (text.len() == 10 || matches!(text.get(text.len() - 11), Some(b'.' | b'@')));
        if named {
            let mut j = i + 1;
            if toks.get(j).is_some_and(|t| t.is_punct(b':')) {
                j += 1;
            }
            if toks.get(j).is_some_and(|t| t.is_punct(b'=')) {
                let v = toks.get(j + 1).map(|t| t.text(piece)).unwrap_or_default();
                let is = |w: &str| v.eq_ignore_ascii_case(w.as_bytes());
                if is("0") || is("OFF") || is("FALSE") {
                    effect = Some(TxnEffect::Begins);
                } else if is("1") || is("ON") || is("TRUE") {
                    effect = Some(TxnEffect::Ends);
                }
            }
        }
        i += 1;
    }
    effect
}

pub(super) fn writes_rows_lexically(piece: &[u8], d: Dialect) -> bool {
    let mut words = Scanner::new(piece, d)
        .map_while(Result::ok)
        .filter(|t| t.kind == Tok::Word)
        .map(|t| t.text(piece));
    let is = |w: &[u8], s: &str| w.eq_ignore_ascii_case(s.as_bytes());
    let Some(first) = words.next() else {
        return false;
    };
    // an EXPLAIN runs nothing (EXPLAIN ANALYZE is read through before: `scan::executed_part`)
    if ["EXPLAIN", "DESCRIBE", "DESC"].iter().any(|w| is(first, w)) {
        return false;
    }
    if is(first, "UPDATE") || is(first, "DELETE") {
        return true;
    }
    let with = is(first, "WITH");
    let mut prev: &[u8] = first;
    for w in words {
        if (is(prev, "FOR") && (is(w, "UPDATE") || is(w, "SHARE")))
            || (is(prev, "IN") && is(w, "SHARE"))
            || (with && (is(w, "UPDATE") || is(w, "DELETE")))
        {
            return true;
        }
        prev = w;
    }
    false
}

/// The first words of a statement (at most 4), as the backend reads them.
pub(super) fn leading_words_of(piece: &[u8], d: Dialect) -> Vec<String> {
    Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(4)
        .take_while(|t| t.kind == Tok::Word)
        .map(|t| String::from_utf8_lossy(t.text(piece)).into_owned())
        .collect()
}

pub(super) const DDL_VERBS: [&str; 6] = ["CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "SHOW"];
