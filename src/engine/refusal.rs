//! Every refusal the engine decides, as one type, and the one mapping from a refusal to the ERR
//! the client gets (`Refusal::to_error`; the session turns that into the packet). Tests match
//! the variants; the codes and messages live here only.

use crate::hbase::rules::Finding;
use crate::protocol::constants::er;
use crate::protocol::packets::ErrorInfo;

/// Why the proxy does not run a statement (or what it answers instead of the backend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A rule's finding — R (DDL), C (cells), X (transactions) — with its own code.
    Rule(Finding),
    /// HBase DDL sent other than as a statement of its own (ER_NOT_SUPPORTED_YET).
    DdlNotAlone(Alone),
    /// HBase DDL through the prepared-statement protocol (ER_UNSUPPORTED_PS).
    DdlPrepared,
    /// A proxy command through the prepared-statement protocol (ER_UNSUPPORTED_PS).
    CommandPrepared,
    /// A proxy command the proxy does not know (ER_PARSE_ERROR).
    UnknownCommand(Command),
    /// What the proxy must check but cannot read with certainty (ER_PARSE_ERROR).
    Unreadable(Unreadable),
    /// What the proxy cannot check, and so does not run (ER_NOT_SUPPORTED_YET).
    Unchecked(Unchecked),
    /// A T the proxy would fill in, inside dynamic SQL the backend runs as written
    /// (ER_NO_DEFAULT_FOR_FIELD).
    TLeftOutInDynamic,
    /// What the decision depends on could not be read; `blind`: an HBase table's definition,
    /// which the proxy does not read inside the user's transaction.
    FactsMissing { blind: bool },
    /// CREATE TABLEGROUP of a group that exists (ER_TABLE_EXISTS_ERROR).
    GroupExists(String),
    /// DROP TABLEGROUP of a group that does not exist.
    UnknownGroup(String),
    /// DROP TABLEGROUP of a group with tables: those the user may see, and how many others.
    GroupHasTables {
        group: String,
        tables: Vec<String>,
        hidden: usize,
    },
    /// Passed on as it is: the backend's error (reading the text of dynamic SQL), or the
    /// proxy's own failure.
    Error(ErrorInfo),
}

/// Where HBase DDL was that is not a statement of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alone {
    InMultiStatement,
    UnderSetStatement,
    AfterSemicolon,
}

/// The proxy commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `SHOW OBKV …`.
    Obkv,
    /// `SHOW PROXY …`.
    Proxy,
}

/// What the proxy cannot read with certainty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// HBase DDL the DDL reader does not follow (with its error, when it has one).
    HbaseDdl(Option<String>),
    /// A LOAD DATA on an HBase table, and why.
    Load(String),
    /// The statement a SET STATEMENT … FOR or ANALYZE runs.
    Wrapped,
    /// A text the backend could read in more than one way, with different effects.
    Ambiguous,
    /// A PREPARE / EXECUTE IMMEDIATE whose text or values depend on the reading.
    AmbiguousDynamic,
    /// The text of a PREPARE / EXECUTE IMMEDIATE.
    DynamicText,
    /// The values of an `EXECUTE name USING …` of a checked statement.
    ExecuteValues,
    /// The name of a PREPARE whose executions are checked.
    PrepareName,
}

/// What the proxy cannot check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchecked {
    /// The cells a stored program, trigger, event or compound statement writes.
    ProgramWrites,
    /// Dynamic SQL in a stored program or compound statement whose text is not a literal.
    ProgramDynamic,
    /// HBase DDL inside a stored program or compound statement.
    ProgramDdl,
    /// A trigger on an HBase table (not one of the proxy's own).
    TriggerOnHbase,
    /// DROP TRIGGER of one of the proxy's own triggers.
    ProxyTrigger,
    /// A view over an HBase table that could take writes.
    UpdatableView,
    /// Dynamic SQL whose text comes from a variable set earlier in the same text.
    VariableSetInText,
    /// Dynamic SQL whose text is an expression the proxy does not compute.
    DynamicExpression,
    /// A dynamic write inside a multi-statement text (its executions could not be checked).
    DynamicWriteInText,
    /// The values of an `EXECUTE name USING …` of a checked statement, when they could not be
    /// read.
    ExecuteValues,
    /// With HBase reads on, a SELECT on an HBase table in a shape the proxy cannot filter.
    HbaseRead,
}

/// A refusal's label in the proxy's metrics: the rule's id for a rule's refusal, else the kind
/// of refusal. A fixed set: the label's bound.
pub const REFUSAL_LABELS: [&str; 32] = [
    "R0",
    "R1",
    "R2",
    "R3",
    "R4",
    "R5",
    "R6",
    "R7",
    "R8",
    "R9",
    "C1",
    "C2",
    "C3",
    "C4",
    "C5",
    "C6",
    "C7",
    "C8",
    "C9",
    "X1",
    "X2",
    "X3",
    "ddl_not_alone",
    "ddl_prepared",
    "command_prepared",
    "unknown_command",
    "unreadable",
    "unchecked",
    "t_left_out_in_dynamic",
    "facts_missing",
    "tablegroup",
    "error",
];

impl Refusal {
    /// Its label's index in `REFUSAL_LABELS`.
    pub fn label(&self) -> usize {
        let kind = match self {
            Refusal::Rule(f) => return f.rule as usize,
            Refusal::DdlNotAlone(_) => "ddl_not_alone",
            Refusal::DdlPrepared => "ddl_prepared",
            Refusal::CommandPrepared => "command_prepared",
            Refusal::UnknownCommand(_) => "unknown_command",
            Refusal::Unreadable(_) => "unreadable",
            Refusal::Unchecked(_) => "unchecked",
            Refusal::TLeftOutInDynamic => "t_left_out_in_dynamic",
            Refusal::FactsMissing { .. } => "facts_missing",
            Refusal::GroupExists(_) | Refusal::UnknownGroup(_) | Refusal::GroupHasTables { .. } => {
                "tablegroup"
            }
            Refusal::Error(_) => "error",
        };
        REFUSAL_LABELS
            .iter()
            .position(|l| *l == kind)
            .unwrap_or(REFUSAL_LABELS.len() - 1)
    }

    /// The rule a rule's refusal is for.
    pub fn rule(&self) -> Option<crate::hbase::rules::Rule> {
        match self {
            Refusal::Rule(f) => Some(f.rule),
            _ => None,
        }
    }

    /// The ERR the client gets.
    pub fn to_error(&self) -> ErrorInfo {
        let not_supported = |m: &str| ErrorInfo::new(er::NOT_SUPPORTED_YET, "42000", m);
        let parse = |m: &str| ErrorInfo::new(er::PARSE_ERROR, "42000", m);
        match self {
            Refusal::Rule(f) => f.to_error(),
            Refusal::DdlNotAlone(at) => not_supported(match at {
                Alone::InMultiStatement => {
                    "obkv-proxy: send HBase DDL as a statement of its own, not inside a multi-statement"
                }
                Alone::UnderSetStatement => {
                    "obkv-proxy: send HBase DDL as a statement of its own, not under SET STATEMENT … FOR"
                }
                Alone::AfterSemicolon => {
                    "obkv-proxy: send HBase DDL as a statement of its own, not after a ';'"
                }
            }),
            Refusal::DdlPrepared => ErrorInfo::new(
                er::UNSUPPORTED_PS,
                "HY000",
                "HBase DDL is not supported in the prepared statement protocol; send it as a plain statement",
            ),
            Refusal::CommandPrepared => ErrorInfo::unsupported_in_prepared(),
            Refusal::UnknownCommand(Command::Obkv) => {
                parse(
                "obkv-proxy: unknown OBKV command; supported: SHOW OBKV TABLES, SHOW OBKV ADVICE [FOR table], \
                 SHOW OBKV PARTITIONS FOR table, SHOW OBKV HBASE_READS, SET OBKV HBASE_READS = ON|OFF",
            )
            }
            Refusal::UnknownCommand(Command::Proxy) => parse(
                "obkv-proxy: unknown proxy command; supported: SHOW PROXY STATUS, SHOW PROXY CREATE TABLEGROUPS, \
                 SHOW OBKV TABLES, SHOW OBKV ADVICE, SHOW OBKV PARTITIONS FOR table, EXPLAIN OBKV <statement>",
            ),
            Refusal::Unreadable(u) => parse(&match u {
                Unreadable::HbaseDdl(None) => {
                    "obkv-proxy cannot read this HBase DDL, so it cannot check it".to_string()
                }
                Unreadable::HbaseDdl(Some(e)) => {
                    format!("obkv-proxy cannot read this HBase DDL, so it cannot check it: {e}")
                }
                Unreadable::Load(why) => format!(
                    "obkv-proxy cannot read this LOAD DATA ({why}), so it cannot check its rows"
                ),
                Unreadable::Wrapped => {
                    "obkv-proxy cannot read with certainty the statement this SET STATEMENT … FOR \
                     or ANALYZE runs (a placeholder in its settings, or an executable comment), so \
                     it cannot check it; send the statement without the wrapper"
                        .to_string()
                }
                Unreadable::Ambiguous => {
                    "obkv-proxy cannot tell how the backend reads this statement (an executable \
                     comment whose meaning depends on the server, a \"…\" that is a string or, under \
                     ANSI_QUOTES, a name, a backslash after a multibyte character), so it cannot \
                     check it; set hbase.backend_kind, or write the statement without them ('…' for \
                     strings, `…` for names, X'…' for binary literals)"
                        .to_string()
                }
                Unreadable::AmbiguousDynamic => {
                    "obkv-proxy cannot tell how the backend reads this PREPARE / EXECUTE IMMEDIATE (a \
                     backslash in a \"…\" literal or after a multibyte character), so it cannot check it"
                        .to_string()
                }
                Unreadable::ExecuteValues => {
                    "obkv-proxy cannot tell how the backend reads the values of this EXECUTE (a \
                     backslash in a \"…\" literal or after a multibyte character, a placeholder \
                     or an executable comment in a SET STATEMENT … FOR), so it cannot check them; \
                     give them as user variables, without a wrapper"
                        .to_string()
                }
                Unreadable::PrepareName => {
                    "obkv-proxy cannot read the name of this PREPARE, so it cannot check its executions"
                        .to_string()
                }
                Unreadable::DynamicText => {
                    "obkv-proxy cannot read the text of this PREPARE/EXECUTE IMMEDIATE, so it cannot check it"
                        .to_string()
                }
            }),
            Refusal::Unchecked(u) => not_supported(match u {
                Unchecked::HbaseRead => {
                    "obkv-proxy: HBase reads are on (SET OBKV HBASE_READS = ON), and this SELECT on an \
                     HBase table with TimeToLive or MaxVersions is in a shape the proxy cannot filter to \
                     the cells HBase would return (a join, a subquery, a UNION, a CTE, a db.table.column \
                     name, explicit partitions, index hints); read the table on its own, or SET OBKV \
                     HBASE_READS = OFF for the rows as stored"
                }
                Unchecked::ProgramWrites => {
                    "obkv-proxy cannot check the cells a stored program, trigger, event or compound \
                     statement writes to an HBase table, nor place them in a transaction; write them \
                     from the client (plain or prepared statements are checked)"
                }
                Unchecked::ProgramDynamic => {
                    "obkv-proxy cannot see what a stored program, event or compound statement runs \
                     with PREPARE … FROM or EXECUTE IMMEDIATE of a variable or an expression (it may \
                     write an HBase table unchecked); give the text as one string literal, or run it \
                     from the client (SQL-level PREPARE of a variable is checked there)"
                }
                Unchecked::ProxyTrigger => {
                    "obkv-proxy keeps this trigger: it fills the prefix column of an HBase table \
                     (without it new rows miss every prefix scan); drop the table instead"
                }
                Unchecked::TriggerOnHbase => {
                    "obkv-proxy: a trigger on an HBase table would change cells after the proxy \
                     checked them (SET NEW.T = …) and write rows it never sees; HBase tables take \
                     no triggers but the proxy's own"
                }
                Unchecked::ProgramDdl => {
                    "obkv-proxy: HBase DDL inside a stored program or compound statement cannot be \
                     checked; run it as a statement of its own"
                }
                Unchecked::UpdatableView => {
                    "obkv-proxy: a view over an HBase table could take INSERT / UPDATE / \
                     DELETE that the cell rules and the transaction guard do not see; make its query read-only \
                     (GROUP BY, DISTINCT, an aggregate, UNION) or read the table directly"
                }
                Unchecked::VariableSetInText => {
                    "obkv-proxy cannot see the text of this PREPARE/EXECUTE IMMEDIATE: its variable \
                     is set in the same multi-statement; send the PREPARE as a statement of its own"
                }
                Unchecked::DynamicExpression => {
                    "obkv-proxy cannot see the text of this PREPARE/EXECUTE IMMEDIATE; give it as a \
                     string literal, a user variable, or an expression of those and built-in string \
                     functions (CONCAT, REPLACE, IF, …)"
                }
                Unchecked::ExecuteValues => {
                    "obkv-proxy checks the values of an EXECUTE on an HBase table: give them as user \
                     variables or literals"
                }
                Unchecked::DynamicWriteInText => {
                    "obkv-proxy: send a PREPARE / EXECUTE of a write on an HBase table as a statement of its \
                     own, not inside a multi-statement text"
                }
            }),
            Refusal::TLeftOutInDynamic => ErrorInfo::new(
                er::NO_DEFAULT_FOR_FIELD,
                "HY000",
                "obkv-proxy fills in a missing T only in statements it sends itself; inside PREPARE / \
                 EXECUTE IMMEDIATE give T explicitly (e.g. -CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED))",
            ),
            Refusal::FactsMissing { blind: false } => parse(
                "obkv-proxy could not learn what it needs to check this statement (a table's \
                 schema, the current database or the character set); send it again",
            ),
            Refusal::FactsMissing { blind: true } => not_supported(
                "obkv-proxy has not read this HBase table's definition yet and does not read it \
                 inside your transaction; run a statement on the table outside a transaction \
                 first (or set hbase.catalog_user), then retry",
            ),
            Refusal::GroupExists(name) => ErrorInfo::new(
                er::TABLE_EXISTS_ERROR,
                "42S01",
                format!("Table group '{name}' already exists"),
            ),
            Refusal::UnknownGroup(name) => ErrorInfo::new(
                crate::hbase::rules::ER_NO_SUCH_TABLEGROUP,
                "42S02",
                format!("Unknown table group '{name}'"),
            ),
            Refusal::GroupHasTables {
                group,
                tables,
                hidden,
            } => {
                let mut names = tables.clone();
                if *hidden > 0 {
                    names.push(format!("{hidden} you may not see"));
                }
                not_supported(&format!(
                    "Cannot drop table group '{group}': it still has tables ({}); drop them first",
                    names.join(", ")
                ))
            }
            Refusal::Error(e) => e.clone(),
        }
    }
}

impl From<Finding> for Refusal {
    fn from(f: Finding) -> Refusal {
        Refusal::Rule(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::rules::Rule;

    /// A rule's refusal is labelled with the rule's own id (the label set starts with the
    /// rules in their order), any other with its kind.
    #[test]
    fn refusals_are_labelled_by_rule_or_kind() {
        use Rule::*;
        for r in [
            R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, C1, C2, C3, C4, C5, C6, C7, C8, C9, X1, X2, X3,
        ] {
            let f = Finding::error(r, er::NOT_SUPPORTED_YET, "42000", String::new());
            assert_eq!(REFUSAL_LABELS[Refusal::Rule(f).label()], r.id());
        }
        assert_eq!(
            REFUSAL_LABELS[Refusal::Unreadable(Unreadable::Ambiguous).label()],
            "unreadable"
        );
        assert_eq!(
            REFUSAL_LABELS[Refusal::UnknownGroup("g".into()).label()],
            "tablegroup"
        );
    }

    /// The mapping: each kind of refusal gets the code and state drivers map it by.
    #[test]
    fn each_refusal_has_its_code_and_state() {
        let rule = Finding::error(
            Rule::C1,
            er::TRUNCATED_WRONG_VALUE,
            "22007",
            "empty K".into(),
        );
        for (r, code, state) in [
            (Refusal::Rule(rule), er::TRUNCATED_WRONG_VALUE, "22007"),
            (
                Refusal::DdlNotAlone(Alone::AfterSemicolon),
                er::NOT_SUPPORTED_YET,
                "42000",
            ),
            (Refusal::DdlPrepared, er::UNSUPPORTED_PS, "HY000"),
            (Refusal::CommandPrepared, er::UNSUPPORTED_PS, "HY000"),
            (
                Refusal::UnknownCommand(Command::Obkv),
                er::PARSE_ERROR,
                "42000",
            ),
            (
                Refusal::Unreadable(Unreadable::HbaseDdl(Some("at ')'".into()))),
                er::PARSE_ERROR,
                "42000",
            ),
            (
                Refusal::Unchecked(Unchecked::UpdatableView),
                er::NOT_SUPPORTED_YET,
                "42000",
            ),
            (
                Refusal::TLeftOutInDynamic,
                er::NO_DEFAULT_FOR_FIELD,
                "HY000",
            ),
            (
                Refusal::FactsMissing { blind: false },
                er::PARSE_ERROR,
                "42000",
            ),
            (
                Refusal::FactsMissing { blind: true },
                er::NOT_SUPPORTED_YET,
                "42000",
            ),
            (
                Refusal::GroupExists("g".into()),
                er::TABLE_EXISTS_ERROR,
                "42S01",
            ),
            (
                Refusal::UnknownGroup("g".into()),
                er::NO_SUCH_TABLE,
                "42S02",
            ),
        ] {
            let e = r.to_error();
            assert_eq!((e.code, &e.sqlstate[..]), (code, state.as_bytes()), "{r:?}");
            assert!(!e.message.is_empty());
        }
        // the rule's own message, and the tables a group still has, named
        let e = Refusal::Unreadable(Unreadable::HbaseDdl(Some("at ')'".into()))).to_error();
        assert!(e.message.ends_with(": at ')'"), "{}", e.message);
        let e = Refusal::GroupHasTables {
            group: "g".into(),
            tables: vec!["db.g$f".into()],
            hidden: 2,
        }
        .to_error();
        assert!(
            e.message.contains("(db.g$f, 2 you may not see)"),
            "{}",
            e.message
        );
    }
}
