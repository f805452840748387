//! What an UPDATE assigns, in every shape the backends accept — joins and multiple tables,
//! subqueries, a WITH clause, explicit partitions, index hints — for the cell rules (C3, C6,
//! C7, C2 on V). The DML reader (`dml`) follows only single-table statements, because it must
//! understand the WHERE clause to rewrite it; the cell rules need only the table references
//! and the SET list, which this reader finds in any shape, so no shape of UPDATE changes a
//! cell's address unseen.
//!
//! A SET target names its table by the qualifier it is written with (`a.V`, `db.g$f.V`) or by
//! none (`V`). The reader gives each target the table references it may belong to: the ones
//! it names, or, when it names none or the reader is not sure how a reference is named (an
//! alias it cannot tell from a keyword), every HBase-style reference. It never narrows on a
//! guess; a reference it over-counts only makes the check stricter.

use super::ddl::TableName;
use super::dml::assignment_value;
use super::insert::{literal, Value};
use super::scan::{ident_value, Dialect, Scanner, Tok, Token};

/// Most tokens read, from the start of the statement to the end of its SET list.
pub const MAX_TOKENS: usize = 65_536;

/// The words that begin the statement after a WITH clause.
const STATEMENT_VERBS: [&str; 7] = [
    "SELECT", "UPDATE", "DELETE", "INSERT", "REPLACE", "TABLE", "VALUES",
];
/// Most assignments read.
const MAX_ASSIGNMENTS: usize = 4096;

/// A table reference of the UPDATE's table list whose name holds a `$`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    pub table: TableName,
    /// The name a qualifier uses for it: its alias, else its own name (unquoted).
    pub goes_by: Vec<u8>,
}

/// One `[[db.]table.]column = value` of the SET list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The table part of the target's qualifier (unquoted), if it has one.
    pub qualifier: Option<Vec<u8>>,
    pub column: Vec<u8>,
    /// The value, when it is one literal or placeholder.
    pub value: Value<'static>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The `$` references of the table list (also ones inside a derived table or a join's
    /// nesting: a superset of the tables the statement may update).
    pub tables: Vec<TableRef>,
    /// Every reference's alias was read with certainty.
    pub sure: bool,
    pub assignments: Vec<Assignment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Not an UPDATE that runs (an EXPLAIN of one runs nothing).
    NotUpdate,
    Update(Box<Update>),
    /// An UPDATE whose SET list the reader cannot find or follow.
    Unreadable(&'static str),
}

/// Words after a table reference that are not its alias.
const NOT_ALIAS: [&str; 18] = [
    "JOIN",
    "INNER",
    "CROSS",
    "LEFT",
    "RIGHT",
    "NATURAL",
    "STRAIGHT_JOIN",
    "OUTER",
    "FULL",
    "ON",
    "USING",
    "SET",
    "USE",
    "FORCE",
    "IGNORE",
    "WHERE",
    "PARTITION",
    "AS",
];

/// Words that end an UPDATE's SET list.
const AFTER_SET: [&str; 4] = ["WHERE", "ORDER", "LIMIT", "RETURNING"];

/// Reads an UPDATE (after `scan::executed_part`'s wrappers) for what it assigns.
pub fn read(sql: &[u8], d: Dialect) -> Read {
    // the tokens up to the end of the SET list: a long WHERE clause is not lexed
    let mut t: Vec<Token> = Vec::new();
    let mut depth = 0i32;
    let mut set_at: Option<usize> = None;
    let mut update_at: Option<usize> = None;
    for tok in Scanner::new(sql, d) {
        let Ok(tok) = tok else {
            return Read::Unreadable("a token the reader does not follow");
        };
        if tok.is_punct(b'(') {
            depth += 1;
        } else if tok.is_punct(b')') {
            depth -= 1;
        } else if depth == 0 {
            if tok.is_punct(b';') {
                break;
            }
            if update_at.is_none() && tok.is_word(sql, "UPDATE") {
                update_at = Some(t.len());
            } else if update_at.is_some() && set_at.is_none() && tok.is_word(sql, "SET") {
                set_at = Some(t.len());
            } else if set_at.is_some() && AFTER_SET.iter().any(|w| tok.is_word(sql, w)) {
                break;
            }
        }
        if t.len() >= MAX_TOKENS {
            // a statement whose verb is already read as no UPDATE is none, however long it is
            // (a long SELECT is not this reader's business)
            if (Reader { sql, d, t: &t }).verb_is_not_update() {
                return Read::NotUpdate;
            }
            return Read::Unreadable("statement too long to analyse");
        }
        t.push(tok);
    }
    let r = Reader { sql, d, t: &t };
    let Some(u) = r.verb_at() else {
        return Read::NotUpdate;
    };
    if update_at != Some(u) {
        return Read::Unreadable("an UPDATE the reader does not follow");
    }
    let Some(set) = set_at else {
        return Read::Unreadable("no SET list");
    };
    let (tables, sure) = r.table_refs(u + 1, set);
    let mut assignments = Vec::new();
    if !r.assignments(set + 1, &mut assignments) {
        return Read::Unreadable("a SET list the reader does not follow");
    }
    Read::Update(Box::new(Update {
        tables,
        sure,
        assignments,
    }))
}

impl Update {
    /// The `$` references a SET target may belong to (see the module's note).
    pub fn targets_of(&self, a: &Assignment) -> Vec<&TableRef> {
        let named: Vec<&TableRef> = match &a.qualifier {
            Some(q) => self
                .tables
                .iter()
                .filter(|r| r.goes_by.eq_ignore_ascii_case(q))
                .collect(),
            None => Vec::new(),
        };
        if a.qualifier.is_none() || (named.is_empty() && !self.sure) {
            return self.tables.iter().collect();
        }
        named
    }
}

struct Reader<'a> {
    sql: &'a [u8],
    d: Dialect,
    t: &'a [Token],
}

impl Reader<'_> {
    fn word(&self, i: usize, w: &str) -> bool {
        super::scan::word_at(self.sql, self.t, i, w)
    }

    fn punct(&self, i: usize, c: u8) -> bool {
        super::scan::punct_at(self.t, i, c)
    }

    fn ident(&self, i: usize) -> bool {
        self.name(i).is_some()
    }

    /// The identifier at `i`, unquoted.
    fn name(&self, i: usize) -> Option<Vec<u8>> {
        self.t
            .get(i)
            .filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
            .map(|t| ident_value(self.sql, t))
    }

    /// The index of the UPDATE keyword of a statement that runs one: `UPDATE …`,
    /// `WITH … UPDATE`. None otherwise (an EXPLAIN runs nothing; `EXPLAIN ANALYZE` is read
    /// through by `scan::executed_part` before this reader sees the statement).
    /// Whether the tokens read so far already show the statement is no UPDATE: its first word
    /// is another verb, or, after WITH, the statement's verb is read and is another.
    fn verb_is_not_update(&self) -> bool {
        self.statement_verb()
            .is_some_and(|k| !self.word(k, "UPDATE"))
    }

    /// The statement's verb if it is UPDATE.
    fn verb_at(&self) -> Option<usize> {
        self.statement_verb().filter(|&k| self.word(k, "UPDATE"))
    }

    /// Where the statement's verb is: its first word, or after WITH (whose CTEs are names,
    /// column lists and parenthesised queries) the first statement word at depth 0; None
    /// while the WITH clause has not ended.
    fn statement_verb(&self) -> Option<usize> {
        if !self.word(0, "WITH") {
            return Some(0);
        }
        let mut depth = 0i32;
        for (k, t) in self.t.iter().enumerate().skip(1) {
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth -= 1;
            } else if depth == 0 && STATEMENT_VERBS.iter().any(|w| t.is_word(self.sql, w)) {
                return Some(k);
            }
        }
        None
    }

    /// The `$` table references among tokens `[from, to)`, and whether every alias was read
    /// with certainty.
    fn table_refs(&self, from: usize, to: usize) -> (Vec<TableRef>, bool) {
        let mut out = Vec::new();
        let mut sure = true;
        for k in from..to {
            let Some(t) = self.t.get(k) else { break };
            let dollar = matches!(t.kind, Tok::Word | Tok::QuotedIdent)
                && memchr::memchr(b'$', t.text(self.sql)).is_some();
            // `g$f.K` (a column) and `` `db$x`.t `` (a database) are qualifiers, not tables
            if !dollar || self.punct(k + 1, b'.') {
                continue;
            }
            let schema = k
                .checked_sub(2)
                .filter(|&s| self.punct(s + 1, b'.'))
                .and_then(|s| self.name(s));
            let raw_name = ident_value(self.sql, t);
            let mut j = k + 1;
            if self.word(j, "PARTITION") && self.punct(j + 1, b'(') {
                j = self.after_parens(j + 1);
            }
            let alias = if self.word(j, "AS") {
                let alias = self.name(j + 1);
                sure &= alias.is_some();
                alias
            } else {
                match self.t.get(j) {
                    None => None,
                    Some(a) if a.kind == Tok::QuotedIdent => Some(ident_value(self.sql, a)),
                    Some(a) if a.kind == Tok::Word => {
                        if NOT_ALIAS.iter().any(|w| a.is_word(self.sql, w)) {
                            None
                        } else if a.is_word(self.sql, "FOR") {
                            // FOR SYSTEM_TIME … (MariaDB) and the like: not followed
                            sure = false;
                            None
                        } else {
                            Some(a.text(self.sql).to_vec())
                        }
                    }
                    Some(a) if a.is_punct(b',') || a.is_punct(b')') || a.is_punct(b'(') => None,
                    Some(_) => {
                        sure = false;
                        None
                    }
                }
            };
            let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            out.push(TableRef {
                goes_by: alias.unwrap_or_else(|| raw_name.clone()),
                table: TableName {
                    schema: schema.as_deref().map(lossy),
                    name: compact_str::CompactString::from_utf8_lossy(&raw_name),
                    raw_schema: schema,
                    raw_name: raw_name.into(),
                },
            });
        }
        (out, sure)
    }

    /// The index after the parenthesis that closes the one at `open`.
    fn after_parens(&self, open: usize) -> usize {
        let mut depth = 0i32;
        for k in open..self.t.len() {
            if self.punct(k, b'(') {
                depth += 1;
            } else if self.punct(k, b')') {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
        }
        self.t.len()
    }

    /// The SET list from token `from` to the end of the tokens read. False when a target is
    /// not `[[db.]table.]column` followed by `=` / `:=`.
    fn assignments(&self, from: usize, out: &mut Vec<Assignment>) -> bool {
        let mut k = from;
        loop {
            // the target: up to three names joined by dots
            let mut parts = vec![k];
            while self.punct(*parts.last().unwrap_or(&k) + 1, b'.') && parts.len() < 3 {
                parts.push(parts.last().unwrap_or(&k) + 2);
            }
            if !parts.iter().all(|&p| self.ident(p)) {
                return false;
            }
            let last = *parts.last().unwrap_or(&k);
            let (Some(start), Some(column)) = (assignment_value(self.t, last + 1), self.name(last))
            else {
                return false;
            };
            // the table part: the name before the column
            let qualifier = parts
                .len()
                .checked_sub(2)
                .and_then(|q| parts.get(q))
                .and_then(|&q| self.name(q));
            // the value: to a comma at depth 0 or the end of the list
            let mut depth = 0i32;
            let mut end = start;
            while let Some(t) = self.t.get(end) {
                if t.is_punct(b'(') {
                    depth += 1;
                } else if t.is_punct(b')') {
                    depth -= 1;
                } else if depth == 0 && t.is_punct(b',') {
                    break;
                }
                end += 1;
            }
            let toks = self.t.get(start..end).unwrap_or_default();
            if toks.is_empty() {
                return false;
            }
            let param = match toks {
                [t] if t.is_punct(b'?') => Some(self.placeholders_before(start)),
                _ => None,
            };
            out.push(Assignment {
                qualifier,
                column,
                value: literal(self.sql, self.d, toks, param).into_owned(),
            });
            if out.len() > MAX_ASSIGNMENTS {
                return false;
            }
            if !self.punct(end, b',') {
                return true;
            }
            k = end + 1;
        }
    }

    /// How many `?` come before token `i`.
    fn placeholders_before(&self, i: usize) -> u32 {
        let n = self
            .t
            .get(..i)
            .unwrap_or_default()
            .iter()
            .filter(|t| t.is_punct(b'?'))
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(sql: &str) -> Update {
        match read(sql.as_bytes(), Dialect::default()) {
            Read::Update(u) => *u,
            other => panic!("{sql}: {other:?}"),
        }
    }

    /// Each assignment's column and the names of the references it may belong to.
    fn targets(sql: &str) -> Vec<(String, Vec<String>)> {
        let u = update(sql);
        u.assignments
            .iter()
            .map(|a| {
                (
                    String::from_utf8_lossy(&a.column).into_owned(),
                    u.targets_of(a)
                        .iter()
                        .map(|r| r.table.name.to_string())
                        .collect(),
                )
            })
            .collect()
    }

    fn t(col: &str, tables: &[&str]) -> (String, Vec<String>) {
        (
            col.to_string(),
            tables.iter().map(|s| s.to_string()).collect(),
        )
    }

    #[test]
    fn targets_belong_to_the_references_they_name() {
        // a join: the alias decides; another table's column is not the HBase table's
        assert_eq!(
            targets("UPDATE `g$f` a JOIN other b ON a.K = b.k SET a.K = 'z', b.v = 'x', V = NULL"),
            vec![t("K", &["g$f"]), t("v", &[]), t("V", &["g$f"])]
        );
        // the comma form, AS, a database-qualified target, `:=`
        assert_eq!(
            targets("UPDATE db.`g$f` AS x, other SET db.x.T := 5, other.T = 1 WHERE x.K = other.k"),
            vec![t("T", &["g$f"]), t("T", &[])]
        );
        // without an alias the table's own name qualifies
        assert_eq!(
            targets("UPDATE `g$f`, o SET `g$f`.Q = 'q'"),
            vec![t("Q", &["g$f"])]
        );
        // explicit partitions and index hints before and after the alias
        assert_eq!(
            targets("UPDATE g$f PARTITION (p0, p1) a USE INDEX (PRIMARY) SET a.T = 9"),
            vec![t("T", &["g$f"])]
        );
        assert_eq!(
            targets("UPDATE g$f USE INDEX (PRIMARY) SET T = 10"),
            vec![t("T", &["g$f"])]
        );
        // an unsure alias: every `$` reference
        assert_eq!(
            targets("UPDATE g$f FOR SYSTEM_TIME ALL x, o SET x.T = 1"),
            vec![t("T", &["g$f"])]
        );
        // nested joins and a derived table with an HBase table inside: a superset
        assert_eq!(
            targets(
                "UPDATE (g$f a JOIN g$h b ON a.K = b.K) JOIN (SELECT * FROM g$x) d ON 1 SET b.V = 'v', a.Q = d.Q"
            ),
            vec![t("V", &["g$h"]), t("Q", &["g$f"])]
        );
    }

    #[test]
    fn every_shape_that_runs_an_update_is_read() {
        for sql in [
            "UPDATE g$f SET K = 'x' WHERE K IN (SELECT k FROM o)",
            "WITH c AS (SELECT 1 AS n), d (m) AS (SELECT 2) UPDATE g$f SET K = 'x'",
            "UPDATE LOW_PRIORITY IGNORE g$f SET K = 'x' ORDER BY K LIMIT 1",
        ] {
            let u = update(sql);
            assert_eq!(u.assignments.len(), 1, "{sql}");
            assert_eq!(u.assignments[0].column, b"K", "{sql}");
            assert_eq!(
                u.assignments[0].value,
                Value::Bytes {
                    bytes: b"x".to_vec().into(),
                    charset: crate::sql::dml::LitCharset::Connection,
                },
                "{sql}"
            );
        }
        for sql in [
            "EXPLAIN UPDATE g$f SET K = 'x'",
            "SELECT * FROM g$f FOR UPDATE",
            "WITH c AS (SELECT 1) SELECT * FROM c",
            "INSERT INTO g$f VALUES (1,2,3,4) ON DUPLICATE KEY UPDATE K = 'x'",
        ] {
            assert_eq!(
                read(sql.as_bytes(), Dialect::default()),
                Read::NotUpdate,
                "{sql}"
            );
        }
        // values: literals, placeholders by position, expressions
        let u =
            update("UPDATE g$f a JOIN o ON o.x = ? SET a.V = ?, a.Q = CONCAT('a', ?), V = X'00'");
        let values: Vec<&Value> = u.assignments.iter().map(|a| &a.value).collect();
        assert_eq!(values[0], &Value::Param(1));
        assert_eq!(values[1], &Value::Unknown);
        assert!(matches!(values[2], Value::Bytes { bytes, .. } if **bytes == [0u8]));
        // a SET list it cannot follow
        for sql in [
            "UPDATE g$f SET (K) = ('x')",
            "UPDATE g$f SET K : = 'x'",
            "UPDATE g$f a JOIN o",
        ] {
            assert!(
                matches!(
                    read(sql.as_bytes(), Dialect::default()),
                    Read::Unreadable(_)
                ),
                "{sql}"
            );
        }
    }
}
