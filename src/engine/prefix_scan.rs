//! The rewrite stage of the policy: for one SELECT / UPDATE / DELETE read by `sql::dml`, decide
//! whether the prefix-column predicate can be added, with what, or what is missing to decide.
//!
//! Pure: the table's schema comes from the process's cache (`hbase::schema`), the session's
//! current database and character set from the session; when one of them is not known the
//! answer is `Step::Need`, the session reads it and asks again (once: then unknown means no).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::rewrite;
use crate::hbase::partition::Partitioning;
use crate::hbase::prefix::{pin, why_unpinned, KeyPred, KeyPreds, Pinned};
use crate::hbase::schema::{self, Lookup, Placement, SchemaCache, TableSchema};
use crate::sql::ddl::TableName;
use crate::sql::dml::{Dml, Escape, LitCharset, Operand, Pred};

/// The connection's character set, when the client's and the connection's are the same (then a
/// literal's bytes reach the comparison unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnCharset {
    Binary,
    Utf8,
    Latin1,
    /// Another one, or client and connection character sets differ.
    Other,
    /// A connection character set that does not keep ASCII as it is (ucs2, utf16, utf16le,
    /// utf32: a literal's characters become two or four bytes each).
    Wide,
}

impl ConnCharset {
    /// From `@@character_set_client` and `@@character_set_connection`.
    pub fn from_names(client: &[u8], connection: &[u8]) -> ConnCharset {
        if crate::sql::insert::is_wide_charset(connection) {
            return ConnCharset::Wide;
        }
        if !client.eq_ignore_ascii_case(connection) {
            return ConnCharset::Other;
        }
        match client.to_ascii_lowercase().as_slice() {
            b"binary" => ConnCharset::Binary,
            b"utf8mb4" | b"utf8" | b"utf8mb3" => ConnCharset::Utf8,
            b"latin1" => ConnCharset::Latin1,
            _ => ConnCharset::Other,
        }
    }
}

/// Counters of the rewriter (shown by SHOW PROXY STATUS).
#[derive(Debug, Default)]
pub struct Counters {
    pub rewritten: AtomicU64,
    pub declined: AtomicU64,
    pub unreadable: AtomicU64,
}

/// What the rewriter may know when it decides.
#[derive(Clone)]
pub struct TableView {
    pub cache: Arc<SchemaCache>,
    /// The session's current database: None = not known yet; Some(None) = none selected.
    /// (shared with the session: no copy per statement)
    pub current_db: Option<Option<Arc<[u8]>>>,
    pub charset: Option<ConnCharset>,
    pub names_ci: bool,
    /// The session has just read what was missing: what is still unknown counts as "no".
    pub settled: bool,
    pub counters: Arc<Counters>,
    /// HBase tables (database, name) whose definition the session could not read now (inside
    /// the user's transaction, not cached): never "not an HBase table", even when settled.
    pub blind: Vec<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for TableView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableView")
            .field("current_db", &self.current_db)
            .field("charset", &self.charset)
            .field("settled", &self.settled)
            .finish()
    }
}

impl PartialEq for TableView {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.cache, &o.cache)
            && self.current_db == o.current_db
            && self.charset == o.charset
            && self.settled == o.settled
            && self.blind == o.blind
    }
}
impl Eq for TableView {}

/// What the session must read before the rewriter can decide.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Need {
    pub current_db: bool,
    pub charset: bool,
    /// Tables to read into the cache: (database, table) as the client named them; no
    /// database: the current one (read first).
    pub tables: Vec<(Option<Vec<u8>>, Vec<u8>)>,
    /// Dynamic SQL (`PREPARE s FROM @v`, `EXECUTE IMMEDIATE CONCAT(@a, …)`): the expressions
    /// whose values are the texts it runs; the session reads and checks each
    /// (`router::check_dynamic`) before the text is sent.
    pub variables: Vec<Vec<u8>>,
}

impl Need {
    /// Whether facts the decision depends on are needed (the variables are checked after).
    pub fn facts(&self) -> bool {
        self.current_db || self.charset || !self.tables.is_empty()
    }

    pub fn merge(&mut self, o: Need) {
        self.current_db |= o.current_db;
        self.charset |= o.charset;
        for t in o.tables {
            if !self.tables.contains(&t) {
                self.tables.push(t);
            }
        }
        for v in o.variables {
            if !self.variables.contains(&v) {
                self.variables.push(v);
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Not an HBase table, or one whose partitioning needs no rewrite.
    Untouched,
    /// A prefix scan on a table that no rewrite can prune (KEY(K)): a note for the user.
    Note(String),
    /// An HBase table with prefix partitioning, but nothing certain pins one prefix.
    Declined(std::borrow::Cow<'static, str>),
    Need(Need),
    /// Splice this predicate after the WHERE clause; it names these prefixes.
    Splice {
        text: Vec<u8>,
        pinned: Pinned,
    },
    /// A prepared statement whose bound values decide the prefix: decided at each execution.
    Prepared(Box<PreparedPlan>),
}

/// What each execution of a prepared statement needs to decide its prefix: the K predicates
/// (their `?` by position), the table as it was when the statement was prepared, and where the
/// variant's predicate goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedPlan {
    pub schema: Arc<TableSchema>,
    /// The cache key of the table (to check at execution that its schema is still this one).
    pub key: schema::SchemaKey,
    pub column: String,
    pub n: usize,
    pub preds: Vec<Pred>,
    /// NO_BACKSLASH_ESCAPES was off when the statement was prepared (None: not reported).
    pub backslash_escape: Option<bool>,
    /// Where the variant's predicate is spliced in the statement's text.
    pub where_end: usize,
    /// The position its placeholders take among the statement's parameters.
    pub insert_at: u32,
}

/// A bound parameter's value as an execution of a prepared statement sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound<'a> {
    /// BLOB-typed: the bytes, binary on both backends.
    Binary(&'a [u8]),
    /// A character string, in the client's character set.
    Text(&'a [u8]),
    /// NULL, a number, a date…, or sent with COM_STMT_SEND_LONG_DATA: not read.
    Other,
}

/// One execution's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Execution {
    /// Send the variant with these prefixes bound to its placeholders.
    Prefixes(crate::hbase::prefix::Prefixes),
    /// The values pin no prefix (or not certainly): send the statement as prepared.
    Original,
    /// A non-ASCII string value whose bytes depend on the connection's character set.
    NeedCharset,
}

impl PreparedPlan {
    /// The prefixes this execution's values pin, if they pin exactly one per key.
    /// `backslash_escape`: NO_BACKSLASH_ESCAPES is off now (None: not reported). A LIKE's
    /// default escape character follows the mode; unless it is known and the same as when the
    /// statement was prepared, a pattern with a backslash pins nothing.
    pub fn execution<'a>(
        &self,
        bound: &dyn Fn(u32) -> Bound<'a>,
        charset: Option<ConnCharset>,
        backslash_escape: Option<bool>,
    ) -> Execution {
        let escape_known = match (self.backslash_escape, backslash_escape) {
            (Some(a), Some(b)) if a == b => Some(a),
            _ => None,
        };
        let mut need_charset = false;
        let mut known = KeyPreds::new();
        for p in &self.preds {
            let default_escape = matches!(
                p,
                Pred::Like {
                    escape: Escape::Default,
                    ..
                }
            );
            let no_backslash = default_escape && escape_known.is_none();
            let mut value = operand_bytes(|op| {
                let (bytes, cs) = match op {
                    Operand::Lit { bytes, charset } => (bytes.as_slice(), *charset),
                    Operand::Param(i) => match bound(*i) {
                        Bound::Binary(b) => (b, LitCharset::Binary),
                        Bound::Text(b) => (b, LitCharset::Connection),
                        Bound::Other => return None,
                    },
                };
                // (eight bytes a step: `contains` sets up a search that costs more than a
                // pattern's few bytes)
                if no_backslash && crate::sql::scan::find_stop(bytes, b'\\', b'\\', false).is_some()
                {
                    return None;
                }
                match certain(bytes, cs, charset) {
                    Some(true) => Some(bytes),
                    Some(false) => None,
                    None => {
                        need_charset = true;
                        None
                    }
                }
            });
            key_preds(p, escape_known.unwrap_or(true), &mut value, &mut known);
        }
        match pin(&known, self.n) {
            Some(Pinned::Any(l)) if l.iter().any(|p| p.is_empty()) => Execution::Original,
            Some(pinned) => Execution::Prefixes(pinned.into_prefixes()),
            None if need_charset => Execution::NeedCharset,
            None => Execution::Original,
        }
    }

    /// The variant's text: the statement with the prefix column compared with `k` placeholders.
    pub fn variant_text(&self, sql: &[u8], k: usize) -> Option<Vec<u8>> {
        let at = self.where_end;
        if at > sql.len() || k == 0 {
            return None;
        }
        let mut out = Vec::with_capacity(sql.len() + 24 + 3 * k);
        out.extend_from_slice(sql.get(..at)?);
        out.extend_from_slice(&rewrite::placeholder_predicate(&self.column, k));
        out.extend_from_slice(sql.get(at..)?);
        Some(out)
    }
}

/// The schema of the table a statement names, resolved as the backend resolves it for this
/// session (the named database, else the current one), as the cache knows it.
pub fn table(dml: &Dml, view: &TableView) -> Result<Option<Arc<TableSchema>>, Need> {
    table_named(&dml.table, view)
}

/// `table` for a table named in any statement.
pub fn table_named(table: &TableName, view: &TableView) -> Result<Option<Arc<TableSchema>>, Need> {
    let name = &table.raw_name;
    let db: &[u8] = match (&table.raw_schema, &view.current_db) {
        (Some(db), _) => db,
        (None, Some(Some(db))) => db,
        (None, Some(None)) => return Ok(None), // no database: the backend's error
        (None, None) if view.settled => return Ok(None),
        (None, None) => {
            return Err(Need {
                current_db: true,
                tables: vec![(None, name.to_vec())],
                ..Need::default()
            })
        }
    };
    if !db.is_ascii() || !name.is_ascii() {
        return Ok(None); // non-ASCII names are not cached (their bytes depend on the charset)
    }
    let same = |a: &[u8], b: &[u8]| {
        if view.names_ci {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    if view
        .blind
        .iter()
        .any(|(d, n)| same(d, db) && n.eq_ignore_ascii_case(name))
    {
        // an HBase table whose schema cannot be read now: still needed, never guessed
        return Err(Need {
            tables: vec![(Some(db.to_vec()), name.to_vec())],
            ..Need::default()
        });
    }
    match view.cache.get_named(db, name, view.names_ci) {
        Lookup::Known(found) => Ok(found),
        Lookup::Unknown if view.settled => Ok(None),
        Lookup::Unknown => Err(Need {
            tables: vec![(Some(db.to_vec()), name.to_vec())],
            ..Need::default()
        }),
    }
}

/// The rewrite stage for one statement (`backslash_escape`: NO_BACKSLASH_ESCAPES is off, None
/// when the backend does not say).
pub fn plan(dml: &Dml, view: &TableView, backslash_escape: Option<bool>) -> Step {
    plan_looked_up(dml, view, table(dml, view), backslash_escape)
}

/// `plan` with the statement's table already looked up (`table`).
pub fn plan_looked_up(
    dml: &Dml,
    view: &TableView,
    looked_up: Result<Option<Arc<TableSchema>>, Need>,
    backslash_escape: Option<bool>,
) -> Step {
    let reported_escape = backslash_escape;
    let schema = match looked_up {
        Ok(Some(t)) => t,
        Ok(None) => return Step::Untouched,
        // a schema that stays unreadable (inside the user's transaction): not rewritten
        Err(_) if view.settled => {
            return Step::Declined("the table's schema cannot be read now".into())
        }
        Err(need) => return Step::Need(need),
    };
    let (column, n) = match (&schema.partitioning, &schema.prefix_column) {
        (
            Partitioning::Key {
                prefix_len: Some(n),
                ..
            },
            Some((c, _)),
        ) => (c.as_str(), *n),
        (
            Partitioning::Key {
                prefix_len: None, ..
            },
            _,
        ) if dml.preds.iter().any(|p| {
            matches!(
                p,
                Pred::Like { .. } | Pred::Lower { .. } | Pred::Upper { .. } | Pred::Between(..)
            )
        }) =>
        {
            return Step::Note(format!(
                "obkv-proxy: `{}` is partitioned by KEY(K), so a prefix scan or range on K reads all {} partitions; \
                 for prefix scans partition by KEY(prefix column) with prefix = substring(K, 1, n) (see docs/RULES.md)",
                schema.name,
                schema.partitioning.partition_count()
            ));
        }
        _ => return Step::Untouched,
    };
    if dml.where_end.is_none() {
        return Step::Declined("no WHERE clause".into());
    }
    if dml.where_idents.contains_ci(column.as_bytes()) {
        return Step::Declined("the statement already names the prefix column".into());
    }
    // OceanBase derives the prefix column from an equality on the whole K (`K = v`, `K <=> v`,
    // `K IN (…)`, literal or bound: EXPLAIN on seekdb 1.4 shows the one partition, and a
    // prepared point get runs as fast as the hand-written statement): it prunes by itself, and
    // the added predicate would only cost (a point get through the variant measured 0.90× the
    // unrewritten statement through HAProxy). MariaDB does not, so there it is added.
    if schema.placement == Placement::OceanBase
        && dml
            .preds
            .iter()
            .any(|p| matches!(p, Pred::Eq(_) | Pred::In(_)))
    {
        return Step::Untouched;
    }
    // OceanBase does not report NO_BACKSLASH_ESCAPES in its status flags (measured on seekdb
    // 1.4): a literal with a backslash could be read two ways
    let backslash_escape =
        match backslash_escape {
            Some(b) => b,
            None if dml.backslash_literal => return Step::Declined(
                "a backslash in a literal, and the backend does not report NO_BACKSLASH_ESCAPES \
                 (so the literal's bytes cannot be proved)"
                    .into(),
            ),
            // no backslash anywhere: the escape character cannot matter
            None => true,
        };
    // literal-only predicates decide now
    let mut need_charset = false;
    let mut known = KeyPreds::new();
    let mut with_params = false;
    let mut param_preds: Vec<Pred> = Vec::new();
    for p in &dml.preds {
        let mut value = operand_bytes(|op| literal_bytes(op, view.charset, &mut need_charset));
        if !key_preds(p, backslash_escape, &mut value, &mut known) && pred_has_param(p) {
            with_params = true;
            param_preds.push(p.clone());
        }
    }
    // seekdb 1.4 loses the empty string in some IN lists (`IN (_binary'', X'…', X'…')` finds
    // nothing for an empty key, measured): a list with the empty prefix is not written
    if let Some(pinned) =
        pin(&known, n).filter(|p| !matches!(p, Pinned::Any(l) if l.iter().any(|p| p.is_empty())))
    {
        let text = rewrite::predicate(column, &pinned.prefixes());
        return Step::Splice { text, pinned };
    }
    if need_charset && !view.settled {
        return Step::Need(Need {
            charset: true,
            ..Need::default()
        });
    }
    if let (true, Some(where_end)) = (with_params, dml.where_end) {
        // each execution decides with its values; the literal predicates count there too
        let mut preds = param_preds;
        preds.extend(dml.preds.iter().filter(|p| !pred_has_param(p)).cloned());
        let key = schema::key(
            dml.table
                .raw_schema
                .as_deref()
                .or(match &view.current_db {
                    Some(Some(db)) => Some(&**db),
                    _ => None,
                })
                .unwrap_or_default(),
            &dml.table.raw_name,
            view.names_ci,
        );
        return Step::Prepared(Box::new(PreparedPlan {
            schema: schema.clone(),
            key,
            column: column.to_string(),
            n,
            preds,
            backslash_escape: reported_escape,
            where_end,
            insert_at: dml.params_before_where_end,
        }));
    }
    if need_charset {
        return Step::Declined(
            "a literal's bytes depend on the connection's character set, which could not be read"
                .into(),
        );
    }
    Step::Declined(format!("no predicate pins one prefix: {}", why_unpinned(&known, n)).into())
}

fn pred_has_param(p: &Pred) -> bool {
    let is = |o: &Operand| matches!(o, Operand::Param(_));
    match p {
        Pred::Eq(v) | Pred::Lower { bound: v, .. } | Pred::Upper { bound: v, .. } => is(v),
        Pred::Left { value, .. } => is(value),
        Pred::Like { pattern, .. } => is(pattern),
        Pred::In(vs) => vs.iter().any(is),
        Pred::Between(a, b) => is(a) || is(b),
    }
}

/// A literal operand's bytes when they are certainly the bytes the backend compares with K
/// (None for a placeholder or an uncertain literal; `need_charset` when the session's
/// character set would decide).
/// What a SELECT on an HBase table shows the advisor: the key it gets, or the literal its
/// keys begin with and the partition that holds them (None: the scan reads every partition).
/// Literal predicates only; a statement whose keys cannot be told is not observed.
pub fn observe_read(
    dml: &Dml,
    schema: &TableSchema,
    conn: Option<ConnCharset>,
    backslash_escape: Option<bool>,
) -> Option<crate::hbase::advisor::Observed> {
    use crate::hbase::advisor::{Key, Observed};
    fn sure(op: &Operand, conn: Option<ConnCharset>) -> Option<&[u8]> {
        match op {
            Operand::Lit { bytes, charset } if certain(bytes, *charset, conn) == Some(true) => {
                Some(bytes.as_slice())
            }
            _ => None,
        }
    }
    let scan = |literal: &[u8]| {
        let partition = match &schema.partitioning {
            Partitioning::Key {
                prefix_len: Some(n),
                ..
            } if literal.len() >= *n => schema.partitioning.partition_of(literal),
            Partitioning::None => Some(0),
            _ => None,
        };
        Observed::Scan {
            len: u32::try_from(literal.len()).unwrap_or(u32::MAX),
            partition,
        }
    };
    // the common forms without copying: `K = 'lit'`, then `K LIKE 'lit%'` (no escape before
    // the first wildcard)
    for p in &dml.preds {
        if let Pred::Eq(op) = p {
            if let Some(k) = sure(op, conn) {
                return Some(Observed::Get {
                    partition: schema.partitioning.partition_of(k),
                    key: Key::of(k),
                });
            }
        }
    }
    for p in &dml.preds {
        if let Pred::Like { pattern, escape } = p {
            let Some(escape) = like_escape(escape, backslash_escape.unwrap_or(true)) else {
                continue;
            };
            // (MariaDB's LIKE skips a NUL byte: not guessed at, as in `key_preds`)
            let Some(lit) = sure(pattern, conn).filter(|l| !l.contains(&0)) else {
                continue;
            };
            let cut = crate::hbase::prefix::special_at(lit, escape);
            match cut.and_then(|i| lit.get(i).map(|&b| (i, b))) {
                Some((i, b)) if Some(b) != escape => return Some(scan(lit.get(..i)?)),
                Some(_) => break,
                None => {
                    return Some(Observed::Get {
                        partition: schema.partitioning.partition_of(lit),
                        key: Key::of(lit),
                    })
                }
            }
        }
    }
    let mut need_charset = false;
    let mut known = KeyPreds::new();
    for p in &dml.preds {
        let mut value = operand_bytes(|op| literal_bytes(op, conn, &mut need_charset));
        key_preds(p, backslash_escape.unwrap_or(true), &mut value, &mut known);
    }
    let (literal, exact) = crate::hbase::prefix::scan_literal(&known)?;
    if exact {
        return Some(Observed::Get {
            partition: schema.partitioning.partition_of(&literal),
            key: Key::of(&literal),
        });
    }
    Some(scan(&literal))
}

/// The escape character of a LIKE as the backend reads it: Some(None) for none, None where
/// the proxy does not model it (`%` or `_` as the escape, or one it could not read).
fn like_escape(escape: &Escape, backslash_escape: bool) -> Option<Option<u8>> {
    match escape {
        Escape::Default => Some(backslash_escape.then_some(b'\\')),
        Escape::Byte(b'%' | b'_') | Escape::Unknown => None,
        Escape::Byte(c) => Some(Some(*c)),
        Escape::Nothing => Some(None),
    }
}

pub fn literal_bytes<'a>(
    op: &'a Operand,
    conn: Option<ConnCharset>,
    need_charset: &mut bool,
) -> Option<&'a [u8]> {
    let Operand::Lit { bytes, charset } = op else {
        return None;
    };
    match certain(bytes, *charset, conn) {
        Some(true) => Some(bytes.as_slice()),
        Some(false) => None,
        None => {
            *need_charset = true;
            None
        }
    }
}

/// Whether a literal's bytes are the bytes the backend compares with K: Some(true) yes,
/// Some(false) no, None when it depends on the session's character set, which is not known.
#[inline]
pub fn certain(bytes: &[u8], cs: LitCharset, conn: Option<ConnCharset>) -> Option<bool> {
    Some(match cs {
        LitCharset::Binary => true,
        LitCharset::Utf8 => std::str::from_utf8(bytes).is_ok(),
        LitCharset::Other => bytes.is_ascii(),
        LitCharset::Wide => false,
        // ASCII is itself in every character set a session can begin with (a client's
        // cannot be a wide one); after a change the session reads the character set before
        // it decides (`Session::charset_changed`)
        LitCharset::Connection if bytes.is_ascii() => conn != Some(ConnCharset::Wide),
        LitCharset::Connection => match conn? {
            ConnCharset::Binary | ConnCharset::Latin1 => true,
            ConnCharset::Utf8 => std::str::from_utf8(bytes).is_ok(),
            ConnCharset::Other | ConnCharset::Wide => false,
        },
    })
}

/// `f` as what `key_preds` takes: an operand's bytes borrowed for as long as the operand (a
/// closure's signature is not inferred so from a `let`).
pub fn operand_bytes<'a, F>(f: F) -> F
where
    F: FnMut(&'a Operand) -> Option<&'a [u8]>,
{
    f
}

/// Appends a predicate's model form to `out` with its operands' bytes (`value` gives them,
/// None when not certain); false (nothing appended) when an operand is not certain. BETWEEN
/// becomes its two bounds.
pub fn key_preds<'a>(
    p: &'a Pred,
    backslash_escape: bool,
    value: &mut dyn FnMut(&'a Operand) -> Option<&'a [u8]>,
    out: &mut KeyPreds<'a>,
) -> bool {
    let mut one = || -> Option<KeyPred<'a>> {
        Some(match p {
            Pred::Eq(v) => KeyPred::Eq(value(v)?),
            Pred::In(vs) => {
                let mut list = Vec::with_capacity(vs.len());
                for v in vs {
                    list.push(value(v)?);
                }
                KeyPred::In(list)
            }
            Pred::Like { pattern, escape } => {
                let escape = like_escape(escape, backslash_escape)?;
                // MariaDB's LIKE skips a NUL byte in the pattern (measured): not guessed at
                let pattern = value(pattern).filter(|p| !p.contains(&0))?;
                KeyPred::Like { pattern, escape }
            }
            Pred::Lower { bound, inclusive } => KeyPred::Lower {
                bound: value(bound)?,
                inclusive: *inclusive,
            },
            Pred::Upper { bound, inclusive } => KeyPred::Upper {
                bound: value(bound)?,
                inclusive: *inclusive,
            },
            Pred::Between(lo, hi) => {
                let lo = value(lo)?;
                let hi = value(hi)?;
                out.push(KeyPred::Lower {
                    bound: lo,
                    inclusive: true,
                });
                KeyPred::Upper {
                    bound: hi,
                    inclusive: true,
                }
            }
            Pred::Left { len, value: v } => KeyPred::Left {
                len: *len,
                value: value(v)?,
            },
        })
    };
    match one() {
        Some(k) => {
            out.push(k);
            true
        }
        None => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Pinned prefixes from literals.
    fn prefixes(ps: &[&[u8]]) -> crate::hbase::prefix::Prefixes {
        ps.iter()
            .map(|p| crate::hbase::prefix::Prefix::from_slice(p))
            .collect()
    }
    use crate::hbase::schema::{key, Placement};
    use crate::sql::dml::{read, Read};
    use crate::sql::scan::Dialect;

    /// A wide character set (utf16, utf32, ucs2) keeps no byte of a literal as it is: neither
    /// as the connection's nor as an introducer's (found by a review).
    #[test]
    fn wide_character_sets_make_no_literal_certain() {
        let wide = ConnCharset::from_names(b"utf8mb4", b"UTF16");
        assert_eq!(wide, ConnCharset::Wide);
        assert_eq!(
            ConnCharset::from_names(b"utf32", b"utf32"),
            ConnCharset::Wide
        );
        assert_eq!(
            ConnCharset::from_names(b"utf8", b"latin1"),
            ConnCharset::Other
        );
        assert_eq!(
            certain(b"abcd", LitCharset::Connection, Some(wide)),
            Some(false)
        );
        assert_eq!(certain(b"abcd", LitCharset::Connection, None), Some(true));
        assert_eq!(
            certain(b"ab\xc3\xa9", LitCharset::Connection, Some(wide)),
            Some(false)
        );
        for intro in ["_utf16", "_UTF32", "_ucs2", "_utf16le", "_filename"] {
            let lower = intro.to_ascii_lowercase();
            for hex in [false, true] {
                let cs = crate::sql::insert::introduced(lower.as_bytes(), hex);
                assert_eq!(cs, LitCharset::Wide, "{intro} {hex}");
                assert_eq!(certain(b"a", cs, Some(ConnCharset::Utf8)), Some(false));
            }
        }
        // read so by the DML reader
        let Read::Dml(x) = read(b"SELECT * FROM g$f WHERE K = _utf32'a'", Dialect::default())
        else {
            panic!("read")
        };
        assert!(matches!(
            &x.preds[0],
            crate::sql::dml::Pred::Eq(Operand::Lit {
                charset: LitCharset::Wide,
                ..
            })
        ));
    }

    /// A view with `hb.g$f`: KEY(K_PREFIX), n = 4, 13 partitions; current database `hb`.
    pub(crate) fn view() -> TableView {
        view_placed(Placement::OceanBase)
    }

    /// `view()` on a backend that places rows as `placement` says.
    pub(crate) fn view_placed(placement: Placement) -> TableView {
        let cache = SchemaCache::new(std::time::Duration::from_secs(3600));
        let schema = TableSchema {
            schema: "hb".into(),
            name: "g$f".into(),
            partitioning: Partitioning::Key {
                prefix_len: Some(4),
                partitions: 13,
            },
            prefix_column: Some(("K_PREFIX".into(), 4)),
            placement,
            grouped: true,
            attrs: crate::hbase::ttl::Attributes::default(),
            limits: crate::hbase::cells::CellLimits {
                k: Some(16),
                q: Some(8),
                v: Some(32),
                prefix_column: Some("K_PREFIX".into()),
                columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
            },
        };
        cache.put(key(b"hb", b"g$f", false), Some(Arc::new(schema)));
        TableView {
            cache: Arc::new(cache),
            current_db: Some(Some(Arc::from(&b"hb"[..]))),
            charset: Some(ConnCharset::Utf8),
            names_ci: false,
            settled: true,
            counters: Default::default(),
            blind: Vec::new(),
        }
    }

    fn prepared(sql: &str) -> PreparedPlan {
        prepared_on(sql, Placement::OceanBase)
    }

    fn prepared_on(sql: &str, placement: Placement) -> PreparedPlan {
        let Read::Dml(d) = read(sql.as_bytes(), Dialect::default()) else {
            panic!("not read: {sql}");
        };
        match plan(&d, &view_placed(placement), Some(true)) {
            Step::Prepared(p) => *p,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn bound_values_decide_each_execution() {
        let sql = "SELECT * FROM g$f WHERE T > ? AND K LIKE ? ORDER BY K LIMIT ?";
        let p = prepared(sql);
        assert_eq!(p.insert_at, 2);
        assert_eq!(
            String::from_utf8(p.variant_text(sql.as_bytes(), 1).unwrap()).unwrap(),
            "SELECT * FROM g$f WHERE T > ? AND K LIKE ? AND `K_PREFIX` = ? ORDER BY K LIMIT ?"
        );
        let run = |pattern: Bound<'static>, cs, escape| {
            p.execution(
                &move |i| if i == 1 { pattern } else { Bound::Other },
                cs,
                escape,
            )
        };
        let utf8 = Some(ConnCharset::Utf8);
        assert_eq!(
            run(Bound::Text(b"abcdef%"), utf8, Some(true)),
            Execution::Prefixes(prefixes(&[b"abcd"]))
        );
        // too short, not a string, NULL
        assert_eq!(
            run(Bound::Text(b"ab%"), utf8, Some(true)),
            Execution::Original
        );
        assert_eq!(run(Bound::Other, utf8, Some(true)), Execution::Original);
        // binary values are certain; non-UTF-8 text is not, an unknown character set is asked
        assert_eq!(
            run(Bound::Binary(b"\xff\x01ab%"), utf8, Some(true)),
            Execution::Prefixes(prefixes(&[b"\xff\x01ab"]))
        );
        assert_eq!(
            run(Bound::Text(b"\xff\x00ab%"), utf8, Some(true)),
            Execution::Original
        );
        assert_eq!(
            run(Bound::Text(b"\xffabc%"), None, Some(true)),
            Execution::NeedCharset
        );
        // the default escape only when the mode is known and unchanged since the prepare
        assert_eq!(
            run(Bound::Text(b"a\\%cd%"), utf8, Some(true)),
            Execution::Prefixes(prefixes(&[b"a%cd"]))
        );
        assert_eq!(
            run(Bound::Text(b"a\\%cd%"), utf8, Some(false)),
            Execution::Original
        );
        assert_eq!(
            run(Bound::Text(b"a\\%cd%"), utf8, None),
            Execution::Original
        );
        assert_eq!(
            run(Bound::Text(b"abcd%"), utf8, None),
            Execution::Prefixes(prefixes(&[b"abcd"]))
        );
    }

    #[test]
    fn oceanbase_prunes_equalities_on_k_itself() {
        for sql in [
            "SELECT V FROM g$f WHERE K = 'abcdef'",
            "SELECT V FROM g$f WHERE K = ?",
            "DELETE FROM g$f WHERE K IN (?, 'zzzz1') AND K LIKE 'ab%'",
            "UPDATE g$f SET V = 'x' WHERE K <=> X'00'",
        ] {
            let Read::Dml(d) = read(sql.as_bytes(), Dialect::default()) else {
                panic!("not read: {sql}");
            };
            assert_eq!(plan(&d, &view(), Some(true)), Step::Untouched, "{sql}");
            let mariadb = plan(&d, &view_placed(Placement::MySqlFamily), Some(true));
            assert!(
                matches!(mariadb, Step::Splice { .. } | Step::Prepared(_)),
                "{sql}: {mariadb:?}"
            );
        }
    }

    #[test]
    fn lists_and_ranges_of_placeholders() {
        // MariaDB does not derive the prefix column from K IN (…): the variant adds it
        let sql = "DELETE FROM g$f WHERE K IN (?, ?, 'zzzz1')";
        let p = prepared_on(sql, Placement::MySqlFamily);
        let vals: [&[u8]; 2] = [b"abcd1", b"abcd2"];
        let got = p.execution(&|i| Bound::Binary(vals[i as usize]), None, Some(true));
        assert_eq!(got, Execution::Prefixes(prefixes(&[b"abcd", b"zzzz"])));
        assert_eq!(
            String::from_utf8(p.variant_text(sql.as_bytes(), 2).unwrap()).unwrap(),
            "DELETE FROM g$f WHERE K IN (?, ?, 'zzzz1') AND `K_PREFIX` IN (?, ?)"
        );
        let p = prepared("SELECT V FROM g$f WHERE K >= ? AND K < ?");
        let run = |lo: &'static [u8], hi: &'static [u8]| {
            p.execution(
                &move |i| Bound::Binary(if i == 0 { lo } else { hi }),
                None,
                Some(true),
            )
        };
        assert_eq!(
            run(b"abcd", b"abce"),
            Execution::Prefixes(prefixes(&[b"abcd"]))
        );
        assert_eq!(run(b"abcd", b"abcf"), Execution::Original);
    }
}
