//! The decision point. Every statement — text, prepared at prepare time, and prepared at execute
//! time — comes here, and the answer says what the session does with it:
//!
//! * `Forward`: send the client's bytes to the backend unchanged (the fast path for plain traffic,
//!   decided by the lexical pre-check alone);
//! * `Rewrite`: send this text instead (later: prefix-scan pruning);
//! * `Answer`: do not involve the backend; answer with a local result or error (proxy commands,
//!   later: OBKV rule violations).
//!
//! Statements the pre-check flags as possible HBase statements are forwarded for now; the OBKV
//! rules will hook in at `decide_hbase`.

use super::classify::{classify, leading_words, Class};
use super::lexer::{tokenize, Kind};
use crate::hbase::ddl::{self, Statement};
use crate::protocol::packets::ErrorInfo;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Forward,
    Rewrite(Vec<u8>),
    Answer(Answer),
    /// HBase DDL: the session checks it against the rules and the catalog and carries it out.
    Hbase(Box<Statement>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Error(ErrorInfo),
    /// `SHOW PROXY STATUS`: the proxy's counters as a two-column result.
    ProxyStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// COM_QUERY.
    Text,
    /// COM_STMT_PREPARE.
    Prepare,
}

/// What the session remembers about a prepared statement, so COM_STMT_EXECUTE can be decided
/// without the text being re-sent.
#[derive(Debug, Clone)]
pub struct PreparedInfo {
    pub class: Class,
    pub params: u16,
}

pub fn decide(sql: &[u8], origin: Origin) -> (Class, Decision) {
    let class = classify(sql);
    let decision = match class {
        Class::Plain => Decision::Forward,
        Class::MaybeHbase => decide_hbase(sql, origin),
        Class::ProxyCommand => decide_proxy_command(sql, origin),
    };
    (class, decision)
}

pub fn decide_execute(stmt: &PreparedInfo) -> Decision {
    match stmt.class {
        // HBase statements will be checked here with their bound parameters.
        Class::Plain | Class::MaybeHbase | Class::ProxyCommand => Decision::Forward,
    }
}

fn decide_hbase(sql: &[u8], origin: Origin) -> Decision {
    let stmt = match ddl::parse(sql) {
        Ok(Some(s)) => s,
        Ok(None) => return Decision::Forward, // DML on HBase tables: later issues
        Err(e) => {
            let words = leading_words(sql, 2);
            let ddl_words = ["CREATE", "ALTER", "RENAME", "DROP"];
            if words
                .first()
                .is_some_and(|w| ddl_words.contains(&w.as_str()))
                && (memchr::memchr(b'$', sql).is_some()
                    || words.get(1).is_some_and(|w| w == "TABLEGROUP"))
            {
                return Decision::Answer(Answer::Error(ErrorInfo::new(
                    1064,
                    "42000",
                    format!("obkv-proxy cannot read this HBase DDL, so it cannot check it: {e}"),
                )));
            }
            return Decision::Forward;
        }
    };
    if !touches_hbase(&stmt) {
        return Decision::Forward;
    }
    if origin == Origin::Prepare {
        return Decision::Answer(Answer::Error(ErrorInfo::new(
            1295,
            "HY000",
            "HBase DDL is not supported in the prepared statement protocol; send it as a plain statement",
        )));
    }
    if has_second_statement(sql) {
        return Decision::Answer(Answer::Error(ErrorInfo::new(
            1235,
            "42000",
            "obkv-proxy: send HBase DDL as a statement of its own, not inside a multi-statement",
        )));
    }
    Decision::Hbase(Box::new(stmt))
}

/// Whether a parsed statement can concern an HBase table or a table group.
fn touches_hbase(stmt: &Statement) -> bool {
    match stmt {
        Statement::CreateTablegroup { .. }
        | Statement::DropTablegroup { .. }
        | Statement::ShowTablegroups { .. } => true,
        // plain CREATE TABLE is looked at for the K/Q/T/V-without-'$' warning
        Statement::CreateTable(t) => {
            t.name.is_hbase_name() || t.tablegroup().is_some() || t.has_kqtv_columns()
        }
        Statement::DropTable { tables, .. } => tables.iter().any(|t| t.is_hbase_name()),
        Statement::TruncateTable(t)
        | Statement::ShowCreateTable(t)
        | Statement::CreateIndex { table: t, .. }
        | Statement::AlterTable { table: t, .. } => t.is_hbase_name(),
        Statement::RenameTable(pairs) => pairs
            .iter()
            .any(|(a, b)| a.is_hbase_name() || b.is_hbase_name()),
    }
}

fn has_second_statement(sql: &[u8]) -> bool {
    let Ok(tokens) = tokenize(sql) else {
        return false;
    };
    tokens
        .iter()
        .position(|t| t.kind == Kind::Punct(b';'))
        .is_some_and(|i| i + 1 < tokens.len())
}

fn decide_proxy_command(sql: &[u8], origin: Origin) -> Decision {
    if origin == Origin::Prepare {
        return Decision::Answer(Answer::Error(ErrorInfo::unsupported_in_prepared()));
    }
    let words = leading_words(sql, 4);
    match words.get(2).map(String::as_str) {
        Some("STATUS") if words.len() == 3 => Decision::Answer(Answer::ProxyStatus),
        _ => Decision::Answer(Answer::Error(ErrorInfo::new(
            1064,
            "42000",
            "obkv-proxy: unknown proxy command; supported: SHOW PROXY STATUS",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hbase_ddl_is_routed_to_the_session() {
        assert!(matches!(
            decide(b"CREATE TABLEGROUP g", Origin::Text).1,
            Decision::Hbase(_)
        ));
        assert!(matches!(
            decide(b"CREATE TABLE g$f (K varbinary(10))", Origin::Text).1,
            Decision::Hbase(_)
        ));
        assert!(
            matches!(decide(b"CREATE TABLE g$f (K varbinary(10))", Origin::Prepare).1, Decision::Answer(Answer::Error(e)) if e.code == 1295)
        );
        assert!(
            matches!(decide(b"CREATE TABLEGROUP g; SELECT 1", Origin::Text).1, Decision::Answer(Answer::Error(e)) if e.code == 1235)
        );
        assert_eq!(
            decide(b"CREATE TABLE plain (a int)", Origin::Text).1,
            Decision::Forward
        );
        assert_eq!(
            decide(b"SELECT * FROM g$f", Origin::Text).1,
            Decision::Forward
        );
        assert!(
            matches!(decide(b"CREATE TABLE g$f (", Origin::Text).1, Decision::Answer(Answer::Error(e)) if e.code == 1064)
        );
    }

    #[test]
    fn plain_is_forwarded_and_proxy_commands_answered() {
        assert_eq!(decide(b"select 1", Origin::Text).1, Decision::Forward);
        assert_eq!(
            decide(b"show proxy status", Origin::Text).1,
            Decision::Answer(Answer::ProxyStatus)
        );
        assert!(
            matches!(decide(b"show proxy status", Origin::Prepare).1, Decision::Answer(Answer::Error(e)) if e.code == 1295)
        );
        assert!(
            matches!(decide(b"show proxy nonsense", Origin::Text).1, Decision::Answer(Answer::Error(e)) if e.code == 1064)
        );
    }
}
