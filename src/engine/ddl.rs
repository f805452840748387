//! HBase DDL policy: the rules for a statement's definition against what the session read of
//! the table and its group (the facts), judged by the enforcement mode. The session reads the
//! facts and carries the verdict out (the catalog, the backend's statement); it judges nothing.
//!
//! Pure: no I/O.

use super::refusal::Refusal;
use crate::hbase::live::Shape;
use crate::hbase::rules::{self, Enforcement, Finding, GroupState, Level, Rule, RuleConfig};
use crate::sql::ddl::{AlterAction, CreateTable, TableName};

/// What the session carries out for an HBase DDL statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdlVerdict {
    /// Refused with this error: nothing reaches the backend.
    pub refuse: Option<Refusal>,
    /// Warnings and notes it runs with (SHOW WARNINGS).
    pub notes: Vec<Finding>,
}

/// The findings judged by the enforcement mode: in strict mode the first error refuses the
/// statement; in warn mode every finding becomes a note; off ignores them.
pub fn judge(mode: Enforcement, findings: Vec<Finding>) -> DdlVerdict {
    let v = rules::judge(mode, findings);
    DdlVerdict {
        refuse: v.refuse.map(Refusal::Rule),
        notes: v.warnings,
    }
}

/// CREATE TABLE of an HBase table (also one a CREATE … LIKE or an adoption made concrete),
/// against its group as it is now.
pub fn create_table(
    t: &CreateTable,
    cfg: RuleConfig,
    group: &GroupState,
    mode: Enforcement,
) -> DdlVerdict {
    judge(mode, rules::check_create(t, cfg, group))
}

/// ALTER TABLE of an HBase table whose definition is `current`.
pub fn alter_table(
    current: &CreateTable,
    actions: &[AlterAction],
    cfg: RuleConfig,
    group: &GroupState,
    mode: Enforcement,
) -> DdlVerdict {
    judge(mode, rules::check_alter(current, actions, cfg, group))
}

/// RENAME TABLE: the pairs whose source is an HBase table.
pub fn rename<'a>(
    hbase_pairs: impl IntoIterator<Item = (&'a TableName, &'a TableName)>,
    mode: Enforcement,
) -> DdlVerdict {
    let findings = hbase_pairs
        .into_iter()
        .flat_map(|(from, to)| rules::check_rename(from, to))
        .collect();
    judge(mode, findings)
}

/// RENAME TABLE / ALTER TABLE … RENAME of a table with a plain name to an HBase name: refused
/// (R1). A table takes an HBase name through CREATE TABLE (checked) or joins a group by
/// adoption; a rename would skip the rules, and a temporary table renamed so would hide the
/// HBase table of that name for the session.
pub fn rename_into_hbase_names<'a>(
    pairs: impl IntoIterator<Item = (&'a TableName, &'a TableName)>,
    mode: Enforcement,
) -> DdlVerdict {
    plain_to_hbase(pairs, mode, Rule::R1, |from, to| {
        format!("'{from}' cannot be renamed to the HBase name '{to}': a table takes an HBase name only through CREATE TABLE {to} (checked against the rules); a rename would skip them, and a temporary table renamed so would hide the HBase table '{to}'")
    })
}

/// The pairs (a plain-named table, an HBase-named one) of a DDL statement that moves a name or
/// rows from the first to the second, each refused under `rule` with `message`.
fn plain_to_hbase<'a>(
    pairs: impl IntoIterator<Item = (&'a TableName, &'a TableName)>,
    mode: Enforcement,
    rule: Rule,
    message: impl Fn(&TableName, &TableName) -> String,
) -> DdlVerdict {
    let findings = pairs
        .into_iter()
        .filter(|(plain, hbase)| hbase.is_hbase_name() && !plain.is_hbase_name())
        .map(|(plain, hbase)| {
            Finding::error(
                rule,
                rules::ER_NOT_SUPPORTED,
                "42000",
                message(plain, hbase),
            )
        })
        .collect();
    judge(mode, findings)
}

/// ALTER TABLE of a table that is not an HBase table, exchanging or converting a partition
/// with an HBase table (`EXCHANGE PARTITION p WITH TABLE g$f`, `CONVERT PARTITION p TO TABLE
/// g$f`, `CONVERT TABLE g$f TO PARTITION p`): rows would enter or leave the HBase table
/// unchecked, or a table take an HBase name without CREATE TABLE.
pub fn exchange_with_hbase_tables<'a>(
    pairs: impl IntoIterator<Item = (&'a TableName, &'a TableName)>,
    mode: Enforcement,
) -> DdlVerdict {
    plain_to_hbase(pairs, mode, Rule::R5, |table, other| {
        format!("exchanging or converting partitions of '{table}' with the HBase table '{other}' moves rows the rules never checked; copy them with INSERT … SELECT instead")
    })
}

/// CREATE INDEX on an HBase table.
pub fn create_index(table: &TableName, kind: &str, mode: Enforcement) -> DdlVerdict {
    judge(mode, rules::check_create_index(table, kind))
}

/// `ALTER TABLE g$f TABLEGROUP = g` on a table made without the proxy, before its group is
/// read: what its shape says (a table that breaks a rule cannot join a group as it is). None:
/// the table is an HBase table and may go on to the group rules (`create_table` of its model
/// definition).
pub fn adoption(shape: &Shape, mode: Enforcement) -> Option<DdlVerdict> {
    match shape {
        Shape::Hbase { .. } => None,
        Shape::Broken(findings) => {
            let errors = findings
                .iter()
                .filter(|f| f.level == Level::Error)
                .cloned()
                .collect();
            Some(judge(mode, errors))
        }
        Shape::Plain(_) => Some(DdlVerdict::default()),
    }
}

/// CREATE TABLE … LIKE a source that is no HBase table, under an HBase name: refused in strict
/// mode (the copy would be an HBase table nothing checked).
pub fn like_of_a_plain_table(
    name: &TableName,
    source: &TableName,
    mode: Enforcement,
) -> DdlVerdict {
    if !name.is_hbase_name() || mode != Enforcement::Strict {
        return DdlVerdict::default();
    }
    DdlVerdict {
        refuse: Some(Refusal::Rule(Finding::error(
            Rule::R1,
            rules::ER_NOT_SUPPORTED,
            "42000",
            format!("'{name}' would be an HBase table copied from '{source}', which is not one; define it with CREATE TABLE {name} (K …, Q …, T …, V …)"),
        ))),
        notes: Vec::new(),
    }
}

/// CREATE TABLE of a table with columns K, Q, T, V but no `$` in its name (and no TABLEGROUP
/// option): no HBase table, so nothing refuses it; it runs with this warning, in every mode.
pub fn kqtv_without_dollar(name: &TableName) -> DdlVerdict {
    DdlVerdict {
        refuse: None,
        notes: vec![Finding {
            rule: Rule::R1,
            level: Level::Warning,
            code: rules::ER_WRONG_TABLE_NAME,
            sqlstate: "42000",
            message: format!("OBKV-HBase rule R1: table '{name}' has columns K, Q, T, V but no '$' in its name; HBase clients look tables up as group$family"),
        }],
    }
}

/// CREATE TABLEGROUP of a group that exists (a note and an OK with IF NOT EXISTS).
pub fn tablegroup_exists(name: &str) -> Refusal {
    Refusal::GroupExists(name.to_string())
}

/// DROP TABLEGROUP of a group that does not exist (a note and an OK with IF EXISTS).
pub fn unknown_tablegroup(name: &str) -> Refusal {
    Refusal::UnknownGroup(name.to_string())
}

/// DROP TABLEGROUP of a group that still has tables: refused, naming the tables the user may
/// see (schema and name, UTF-8) and counting the `hidden` others.
pub fn group_still_has_tables(name: &str, visible: &[(&[u8], &[u8])], hidden: usize) -> Refusal {
    let tables = visible
        .iter()
        .map(|(schema, table)| {
            format!(
                "{}.{}",
                String::from_utf8_lossy(schema),
                String::from_utf8_lossy(table)
            )
        })
        .collect();
    Refusal::GroupHasTables {
        group: name.to_string(),
        tables,
        hidden,
    }
}

/// An adoption (`ALTER TABLE g$f TABLEGROUP = g`) with other actions in the same ALTER: refused
/// (adopt first, then alter). `table` is the table's name in UTF-8.
pub fn adoption_not_alone(table: &[u8], group_option: &str) -> Refusal {
    Refusal::Rule(Finding::error(
        Rule::R1,
        rules::ER_NOT_SUPPORTED,
        "42000",
        format!(
            "put '{}' in its table group with ALTER TABLE … TABLEGROUP = {} alone, then alter it",
            String::from_utf8_lossy(table),
            group_option
        ),
    ))
}

/// An adoption whose TABLEGROUP is not the group part (`group`) of the table's name `table`
/// (both UTF-8): refused.
pub fn adoption_group_mismatch(table: &[u8], group_option: &str, group: &[u8]) -> Refusal {
    Refusal::Rule(Finding::error(
        Rule::R1,
        rules::ER_NOT_SUPPORTED,
        "42000",
        format!(
            "TABLEGROUP = {group_option} does not match the group part of '{}'; write TABLEGROUP = {}",
            String::from_utf8_lossy(table),
            String::from_utf8_lossy(group)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::constants::er;
    use crate::sql::ddl::{parse, Statement};

    fn table(sql: &str) -> CreateTable {
        match parse(sql.as_bytes()) {
            Ok(Some(Statement::CreateTable(t))) => *t,
            other => panic!("{sql}: {other:?}"),
        }
    }

    const CFG: RuleConfig = RuleConfig {
        require_tablegroup_option: true,
        multiple_families: false,
    };

    fn group() -> GroupState {
        GroupState {
            exists: true,
            families: Vec::new(),
        }
    }

    const GOOD: &str = "CREATE TABLE g$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = g PARTITION BY KEY(K) PARTITIONS 97";

    #[test]
    fn a_create_is_judged_by_the_mode() {
        let ok = create_table(&table(GOOD), CFG, &group(), Enforcement::Strict);
        assert_eq!(ok.refuse, None);
        // a note for KEY(K) (prefix scans read every partition)
        assert!(ok.notes.iter().any(|f| f.rule == Rule::R5), "{ok:?}");
        let bad = table(&GOOD.replace("PARTITIONS 97", "PARTITIONS 96"));
        let strict = create_table(&bad, CFG, &group(), Enforcement::Strict);
        let refusal = strict.refuse.expect("R6 refuses an even count");
        assert_eq!(refusal.rule(), Some(Rule::R6), "{refusal:?}");
        assert_eq!(refusal.to_error().code, er::NOT_SUPPORTED_YET);
        let warn = create_table(&bad, CFG, &group(), Enforcement::Warn);
        assert_eq!(warn.refuse, None);
        assert!(warn
            .notes
            .iter()
            .any(|f| f.rule == Rule::R6 && f.level == Level::Warning));
        assert_eq!(
            create_table(&bad, CFG, &group(), Enforcement::Off),
            DdlVerdict::default()
        );
        // the group must exist
        let missing = GroupState::default();
        let e = create_table(&table(GOOD), CFG, &missing, Enforcement::Strict).refuse;
        assert_eq!(e.as_ref().and_then(Refusal::rule), Some(Rule::R1), "{e:?}");
        assert_eq!(e.map(|e| e.to_error().code), Some(er::NO_SUCH_TABLE));
    }

    #[test]
    fn a_plain_table_is_not_renamed_into_the_hbase_name_space() {
        let (tmp, hb, other) = (
            TableName::new(None, "tmp"),
            TableName::new(None, "g$f"),
            TableName::new(None, "g$h"),
        );
        let v = rename_into_hbase_names([(&tmp, &hb)], Enforcement::Strict);
        let r = v.refuse.expect("refused");
        assert_eq!(r.rule(), Some(Rule::R1), "{r:?}");
        assert!(r.to_error().message.contains("temporary table"), "{r:?}");
        // warn mode: a warning; HBase to HBase and plain to plain are other rules' business
        let v = rename_into_hbase_names([(&tmp, &hb)], Enforcement::Warn);
        assert!(v.refuse.is_none() && v.notes.iter().any(|f| f.rule == Rule::R1));
        for (from, to) in [(&hb, &other), (&hb, &tmp), (&tmp, &tmp)] {
            assert_eq!(
                rename_into_hbase_names([(from, to)], Enforcement::Strict),
                DdlVerdict::default()
            );
        }
    }

    #[test]
    fn alters_renames_and_indexes_are_judged() {
        let current = table(GOOD);
        let add = [AlterAction::AddColumn];
        let v = alter_table(&current, &add, CFG, &group(), Enforcement::Strict);
        assert!(v.refuse.is_some_and(|e| e.rule() == Some(Rule::R2)));
        let to = TableName::new(None, "nodollar");
        let from = TableName::new(None, "g$f");
        let v = rename([(&from, &to)], Enforcement::Strict);
        assert!(v
            .refuse
            .is_some_and(|e| e.to_error().code == er::WRONG_TABLE_NAME));
        let v = create_index(&from, "INDEX", Enforcement::Strict);
        assert!(v.refuse.is_some_and(|e| e.rule() == Some(Rule::R7)));
        assert_eq!(create_index(&from, "INDEX", Enforcement::Off).refuse, None);
    }

    #[test]
    fn an_adoption_is_refused_for_the_tables_own_errors_only() {
        let broken = Shape::Broken(vec![rules::Finding::error(
            Rule::R7,
            er::NOT_SUPPORTED_YET,
            "42000",
            "an index".into(),
        )]);
        let v = adoption(&broken, Enforcement::Strict).expect("decided");
        assert!(v.refuse.is_some_and(|e| e.rule() == Some(Rule::R7)));
        assert_eq!(
            adoption(&broken, Enforcement::Warn).and_then(|v| v.refuse),
            None
        );
        let plain = Shape::Plain("its columns are not K, Q, T, V");
        assert_eq!(
            adoption(&plain, Enforcement::Strict),
            Some(DdlVerdict::default())
        );
        let name = TableName::new(None, "c$f");
        let source = TableName::new(None, "plain");
        assert!(like_of_a_plain_table(&name, &source, Enforcement::Strict)
            .refuse
            .is_some());
        assert!(like_of_a_plain_table(&name, &source, Enforcement::Warn)
            .refuse
            .is_none());
    }

    #[test]
    fn a_kqtv_table_without_a_dollar_runs_with_a_warning() {
        let v = kqtv_without_dollar(&TableName::new(None, "plain"));
        assert_eq!(v.refuse, None);
        let [f] = &v.notes[..] else { panic!("{v:?}") };
        assert_eq!((f.level, f.code), (Level::Warning, er::WRONG_TABLE_NAME));
        assert_eq!(
            f.message,
            "OBKV-HBase rule R1: table 'plain' has columns K, Q, T, V but no '$' in its name; HBase clients look tables up as group$family"
        );
    }

    #[test]
    fn table_group_answers() {
        let e = tablegroup_exists("g").to_error();
        assert_eq!((e.code, &e.sqlstate), (er::TABLE_EXISTS_ERROR, b"42S01"));
        assert_eq!(e.message, "Table group 'g' already exists");
        let e = unknown_tablegroup("g").to_error();
        assert_eq!((e.code, &e.sqlstate), (er::NO_SUCH_TABLE, b"42S02"));
        assert_eq!(e.message, "Unknown table group 'g'");
        let e = group_still_has_tables("g", &[(b"db", b"g$f"), (b"db", b"g$h")], 2).to_error();
        assert_eq!((e.code, &e.sqlstate), (er::NOT_SUPPORTED_YET, b"42000"));
        assert_eq!(
            e.message,
            "Cannot drop table group 'g': it still has tables (db.g$f, db.g$h, 2 you may not see); drop them first"
        );
        let e = group_still_has_tables("g", &[], 1).to_error();
        assert_eq!(
            e.message,
            "Cannot drop table group 'g': it still has tables (1 you may not see); drop them first"
        );
    }

    #[test]
    fn an_adoption_is_alone_and_names_its_group() {
        let e = adoption_not_alone(b"g$f", "g").to_error();
        assert_eq!((e.code, &e.sqlstate), (er::NOT_SUPPORTED_YET, b"42000"));
        assert_eq!(
            e.message,
            "OBKV-HBase rule R1: put 'g$f' in its table group with ALTER TABLE … TABLEGROUP = g alone, then alter it"
        );
        let e = adoption_group_mismatch(b"g$f", "h", b"g").to_error();
        assert_eq!(e.code, er::NOT_SUPPORTED_YET);
        assert_eq!(
            e.message,
            "OBKV-HBase rule R1: TABLEGROUP = h does not match the group part of 'g$f'; write TABLEGROUP = g"
        );
        assert_eq!(&e.sqlstate, b"42000");
    }
}
