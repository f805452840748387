//! Statements that read the diagnostics area (the conditions — errors, warnings, notes — the
//! previous statement left): `SHOW WARNINGS | ERRORS [LIMIT …]`, `SHOW COUNT(*) WARNINGS |
//! ERRORS`, `SELECT @@warning_count, @@error_count` and `GET [CURRENT] DIAGNOSTICS …`; and
//! whether a statement leaves MariaDB's diagnostics area as it was (`keeps_diagnostics`).
//!
//! Read only while the proxy holds conditions of its own for the session (after it refused a
//! statement with a message the backend could not carry whole, answered one itself, or added
//! notes to a forwarded one): plain traffic never comes here. Only the plain shapes are read —
//! one statement, keywords, numbers, user variables, aliases; no executable comment. Anything
//! else is `None`, and the session treats it as any other statement.

use super::scan::{has_executable_comment, Dialect, Scanner, Tok, Token};

/// Longest text read as a diagnostics statement.
const MAX_TEXT: usize = 4096;

/// A statement that reads the diagnostics area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `SHOW WARNINGS` (`errors`: `SHOW ERRORS`), with its `LIMIT [offset,] count`.
    Show { errors: bool, limit: Option<Limit> },
    /// `SHOW COUNT(*) WARNINGS` (`errors`: `… ERRORS`).
    Count { errors: bool },
    /// `SELECT` of `@@[session.|local.]warning_count` / `error_count` items only (each may be
    /// aliased): the columns, in order.
    Select(Vec<Counter>),
    /// `GET [CURRENT] DIAGNOSTICS …`.
    Get(Get),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub offset: u64,
    pub count: u64,
}

/// A counter a SELECT reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Warnings,
    Errors,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Get {
    /// Statement information: `target = NUMBER | ROW_COUNT, …`.
    Statement(Vec<(Target, StatementItem)>),
    /// `CONDITION n target = item, …` with a literal `n`; `at` is where `n` is written.
    Condition {
        number: u64,
        at: (usize, usize),
        items: Vec<(Target, ConditionItem)>,
    },
}

/// A user variable a GET DIAGNOSTICS assigns, as written (`@x`, `` @`x` ``, `@'x'`).
pub type Target = Vec<u8>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementItem {
    Number,
    RowCount,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionItem {
    ReturnedSqlstate,
    MysqlErrno,
    MessageText,
    ClassOrigin,
    SubclassOrigin,
    /// CONSTRAINT_CATALOG, CONSTRAINT_SCHEMA, CONSTRAINT_NAME, CATALOG_NAME, SCHEMA_NAME,
    /// TABLE_NAME, COLUMN_NAME, CURSOR_NAME: empty for the conditions the proxy raises.
    Other,
}

/// Reads `sql` as a diagnostics statement; None for anything else.
pub fn read(sql: &[u8], d: Dialect) -> Option<Statement> {
    if sql.len() > MAX_TEXT || has_executable_comment(sql) {
        return None;
    }
    let mut toks: Vec<Token> = Vec::with_capacity(16);
    for t in Scanner::new(sql, d) {
        toks.push(t.ok()?);
        if toks.len() > 256 {
            return None;
        }
    }
    // one statement: a trailing `;` at most
    if toks.last().is_some_and(|t| t.is_punct(b';')) {
        toks.pop();
    }
    if toks.iter().any(|t| t.is_punct(b';')) {
        return None;
    }
    let r = Read { sql, t: &toks };
    if r.word(0, "SHOW") {
        r.show()
    } else if r.word(0, "SELECT") {
        r.select()
    } else if r.word(0, "GET") {
        r.get()
    } else {
        None
    }
}

struct Read<'a> {
    sql: &'a [u8],
    t: &'a [Token],
}

impl Read<'_> {
    fn word(&self, i: usize, w: &str) -> bool {
        self.t.get(i).is_some_and(|t| t.is_word(self.sql, w))
    }

    fn punct(&self, i: usize, c: u8) -> bool {
        self.t.get(i).is_some_and(|t| t.is_punct(c))
    }

    fn number(&self, i: usize) -> Option<u64> {
        let t = self.t.get(i).filter(|t| t.kind == Tok::Number)?;
        std::str::from_utf8(t.text(self.sql)).ok()?.parse().ok()
    }

    fn show(&self) -> Option<Statement> {
        if self.word(1, "COUNT") {
            // SHOW COUNT(*) WARNINGS | ERRORS
            if !(self.punct(2, b'(') && self.punct(3, b'*') && self.punct(4, b')')) {
                return None;
            }
            let errors = self.kind(5)?;
            return (self.t.len() == 6).then_some(Statement::Count { errors });
        }
        let errors = self.kind(1)?;
        let limit = match self.t.len() {
            2 => None,
            4 if self.word(2, "LIMIT") => Some(Limit {
                offset: 0,
                count: self.number(3)?,
            }),
            6 if self.word(2, "LIMIT") && self.punct(4, b',') => Some(Limit {
                offset: self.number(3)?,
                count: self.number(5)?,
            }),
            _ => return None,
        };
        Some(Statement::Show { errors, limit })
    }

    /// WARNINGS (false) or ERRORS (true) at `i`.
    fn kind(&self, i: usize) -> Option<bool> {
        if self.word(i, "WARNINGS") {
            Some(false)
        } else if self.word(i, "ERRORS") {
            Some(true)
        } else {
            None
        }
    }

    fn select(&self) -> Option<Statement> {
        let mut columns = Vec::new();
        let mut i = 1;
        loop {
            let t = self.t.get(i).filter(|t| t.kind == Tok::Var)?;
            columns.push(counter(t.text(self.sql))?);
            i += 1;
            // an alias: `AS name` or a bare name
            if self.word(i, "AS") {
                i += 1;
                self.alias(i)?;
                i += 1;
            } else if self.alias(i).is_some() {
                i += 1;
            }
            if self.punct(i, b',') {
                i += 1;
                continue;
            }
            return (i == self.t.len()).then_some(Statement::Select(columns));
        }
    }

    /// A name that can alias a column here (not a clause's keyword).
    fn alias(&self, i: usize) -> Option<()> {
        let t = self.t.get(i)?;
        match t.kind {
            Tok::QuotedIdent | Tok::Str => Some(()),
            Tok::Word => {
                let w = t.text(self.sql);
                let clause = ["FROM", "WHERE", "LIMIT", "INTO", "UNION", "FOR", "LOCK"]
                    .iter()
                    .any(|c| w.eq_ignore_ascii_case(c.as_bytes()));
                (!clause).then_some(())
            }
            _ => None,
        }
    }

    fn get(&self) -> Option<Statement> {
        let mut i = 1;
        if self.word(i, "CURRENT") {
            i += 1;
        }
        if !self.word(i, "DIAGNOSTICS") {
            return None; // STACKED: only inside a handler, the backend's
        }
        i += 1;
        if self.word(i, "CONDITION") {
            let t = self.t.get(i + 1)?;
            let number = self.number(i + 1)?;
            let at = (t.start, t.end);
            let items = self.assignments(i + 2, condition_item)?;
            return Some(Statement::Get(Get::Condition { number, at, items }));
        }
        let items = self.assignments(i, |w| {
            if w.eq_ignore_ascii_case(b"NUMBER") {
                Some(StatementItem::Number)
            } else if w.eq_ignore_ascii_case(b"ROW_COUNT") {
                Some(StatementItem::RowCount)
            } else {
                None
            }
        })?;
        Some(Statement::Get(Get::Statement(items)))
    }

    /// `@target = ITEM, …` from token `i` to the end.
    fn assignments<T>(
        &self,
        mut i: usize,
        item: impl Fn(&[u8]) -> Option<T>,
    ) -> Option<Vec<(Target, T)>> {
        let mut out = Vec::new();
        loop {
            let target = self.t.get(i).filter(|t| t.kind == Tok::Var)?;
            let text = target.text(self.sql);
            if text.starts_with(b"@@") {
                return None; // a system variable cannot be a target
            }
            if !self.punct(i + 1, b'=') {
                return None;
            }
            let w = self.t.get(i + 2).filter(|t| t.kind == Tok::Word)?;
            out.push((text.to_vec(), item(w.text(self.sql))?));
            i += 3;
            if self.punct(i, b',') {
                i += 1;
                continue;
            }
            return (i == self.t.len()).then_some(out);
        }
    }
}

/// `@@warning_count`, `@@session.error_count`, …; None for any other variable.
fn counter(var: &[u8]) -> Option<Counter> {
    let name = var.strip_prefix(b"@@")?;
    let name = match name.iter().position(|&c| c == b'.') {
        Some(dot) => {
            let (scope, rest) = name.split_at(dot);
            if !(scope.eq_ignore_ascii_case(b"session") || scope.eq_ignore_ascii_case(b"local")) {
                return None;
            }
            rest.get(1..)?
        }
        None => name,
    };
    if name.eq_ignore_ascii_case(b"warning_count") {
        Some(Counter::Warnings)
    } else if name.eq_ignore_ascii_case(b"error_count") {
        Some(Counter::Errors)
    } else {
        None
    }
}

fn condition_item(w: &[u8]) -> Option<ConditionItem> {
    use ConditionItem::*;
    let is = |s: &str| w.eq_ignore_ascii_case(s.as_bytes());
    Some(if is("RETURNED_SQLSTATE") {
        ReturnedSqlstate
    } else if is("MYSQL_ERRNO") {
        MysqlErrno
    } else if is("MESSAGE_TEXT") {
        MessageText
    } else if is("CLASS_ORIGIN") {
        ClassOrigin
    } else if is("SUBCLASS_ORIGIN") {
        SubclassOrigin
    } else if [
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "CATALOG_NAME",
        "SCHEMA_NAME",
        "TABLE_NAME",
        "COLUMN_NAME",
        "CURSOR_NAME",
    ]
    .iter()
    .any(|s| is(s))
    {
        Other
    } else {
        return None;
    })
}

/// Whether MariaDB (and MySQL) leave the diagnostics area as it was after `sql` ran without a
/// condition of its own: they clear it only for a statement that uses tables (measured on
/// MariaDB 10.11: `SELECT 1`, `SET @x = 1`, `DO 1`, `BEGIN`, `COMMIT`, `USE db`, `SELECT
/// (SELECT 1)` keep it; `SHOW VARIABLES …`, a derived table, information_schema clear it).
/// Read narrowly: one statement led by SELECT, SET, DO, BEGIN, START, COMMIT, ROLLBACK or USE
/// with no FROM, TABLE or INTO anywhere; everything else is taken to clear it.
pub fn keeps_diagnostics(sql: &[u8], d: Dialect) -> bool {
    if sql.len() > MAX_TEXT || has_executable_comment(sql) {
        return false;
    }
    let mut first = true;
    let mut lead_ok = false;
    let mut second = true;
    let mut after_set = false;
    let mut ended = false;
    for t in Scanner::new(sql, d) {
        let Ok(t) = t else { return false };
        if ended {
            return false; // a second statement
        }
        if t.is_punct(b';') {
            ended = true;
            continue;
        }
        if t.kind != Tok::Word {
            first = false;
            continue;
        }
        let w = t.text(sql);
        let is = |s: &str| w.eq_ignore_ascii_case(s.as_bytes());
        if first {
            lead_ok = [
                "SELECT", "SET", "DO", "BEGIN", "START", "COMMIT", "ROLLBACK", "USE",
            ]
            .iter()
            .any(|s| is(s));
            after_set = is("SET");
            first = false;
            continue;
        }
        // SET PASSWORD / ROLE / DEFAULT ROLE read the grant tables
        if after_set && second && (is("PASSWORD") || is("ROLE") || is("DEFAULT")) {
            return false;
        }
        second = false;
        if is("FROM") || is("TABLE") || is("INTO") {
            return false;
        }
    }
    lead_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rd(s: &str) -> Option<Statement> {
        read(s.as_bytes(), Dialect::default())
    }

    #[test]
    fn show_statements_are_read() {
        assert_eq!(
            rd("SHOW WARNINGS"),
            Some(Statement::Show {
                errors: false,
                limit: None
            })
        );
        assert_eq!(
            rd(" show errors limit 3 ;"),
            Some(Statement::Show {
                errors: true,
                limit: Some(Limit {
                    offset: 0,
                    count: 3
                })
            })
        );
        assert_eq!(
            rd("SHOW WARNINGS LIMIT 2, 5"),
            Some(Statement::Show {
                errors: false,
                limit: Some(Limit {
                    offset: 2,
                    count: 5
                })
            })
        );
        assert_eq!(
            rd("SHOW COUNT(*) ERRORS"),
            Some(Statement::Count { errors: true })
        );
        assert_eq!(
            rd("SHOW /* c */ COUNT ( * ) WARNINGS"),
            Some(Statement::Count { errors: false })
        );
        for not in [
            "SHOW WARNINGS; SELECT 1",
            "SHOW WARNINGS LIMIT",
            "SHOW WARNINGS LIMIT @a",
            "SHOW /*!50000 WARNINGS */",
            "SHOW VARIABLES",
            "SHOW COUNT(*) WARNINGS x",
            "SHOW WARNINGS LIMIT 1 OFFSET 2",
        ] {
            assert_eq!(rd(not), None, "{not}");
        }
    }

    #[test]
    fn counters_in_a_select_are_read() {
        assert_eq!(
            rd("SELECT @@warning_count, @@SESSION.error_count AS e, @@local.warning_count `w`"),
            Some(Statement::Select(vec![
                Counter::Warnings,
                Counter::Errors,
                Counter::Warnings
            ]))
        );
        for not in [
            "SELECT @@warning_count + 1",
            "SELECT @@global.warning_count",
            "SELECT @@warning_count FROM t",
            "SELECT @@warning_count, @@version",
            "SELECT @warning_count",
            "SELECT",
        ] {
            assert_eq!(rd(not), None, "{not}");
        }
    }

    #[test]
    fn get_diagnostics_is_read() {
        assert_eq!(
            rd("GET DIAGNOSTICS @n = NUMBER, @`r` = row_count"),
            Some(Statement::Get(Get::Statement(vec![
                (b"@n".to_vec(), StatementItem::Number),
                (b"@`r`".to_vec(), StatementItem::RowCount)
            ])))
        );
        let sql = "GET CURRENT DIAGNOSTICS CONDITION 2 @e = MYSQL_ERRNO, @m = MESSAGE_TEXT, @t = TABLE_NAME";
        assert_eq!(
            rd(sql),
            Some(Statement::Get(Get::Condition {
                number: 2,
                at: (34, 35),
                items: vec![
                    (b"@e".to_vec(), ConditionItem::MysqlErrno),
                    (b"@m".to_vec(), ConditionItem::MessageText),
                    (b"@t".to_vec(), ConditionItem::Other)
                ]
            }))
        );
        for not in [
            "GET STACKED DIAGNOSTICS @n = NUMBER",
            "GET DIAGNOSTICS CONDITION @k @e = MYSQL_ERRNO",
            "GET DIAGNOSTICS @@n = NUMBER",
            "GET DIAGNOSTICS @n = NOPE",
            "GET DIAGNOSTICS @n NUMBER",
        ] {
            assert_eq!(rd(not), None, "{not}");
        }
    }

    #[test]
    fn which_statements_keep_mariadbs_diagnostics_area() {
        let keeps = |s: &str| keeps_diagnostics(s.as_bytes(), Dialect::default());
        for k in [
            "SELECT 1",
            "select now();",
            "SET @x = 1",
            "SET autocommit = 0",
            "DO 1",
            "BEGIN",
            "COMMIT",
            "USE test",
            "SELECT (SELECT 1)",
            "SELECT @@version",
        ] {
            assert!(keeps(k), "{k}");
        }
        for c in [
            "SELECT * FROM t",
            "SET @x = (SELECT a FROM t)",
            "SHOW VARIABLES",
            "INSERT INTO t VALUES (1)",
            "SELECT 1; SELECT 2",
            "SET PASSWORD = 'x'",
            "SELECT 1 INTO @x",
            "/*!50000 SELECT 1 */",
            "",
        ] {
            assert!(!keeps(c), "{c}");
        }
    }
}
