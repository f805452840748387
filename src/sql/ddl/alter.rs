//! Reading ALTER TABLE's actions.

use super::create::{partition_clause, skip_until};
use super::cursor::Cursor;
use super::terms::{AlterAction, ParseError, TableOption};
use crate::sql::lexer::{Kind, Token};

pub(super) fn alter_actions(c: &mut Cursor) -> Result<Vec<AlterAction>, ParseError> {
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
            // the other table of an exchange or a conversion: the table it names follows
            // `WITH TABLE` / `TO TABLE`, or comes right after CONVERT TABLE
            "EXCHANGE" | "CONVERT"
                if c.peek()
                    .is_some_and(|t| t.is_keyword("PARTITION") || t.is_keyword("TABLE")) =>
            {
                if c.kw("TABLE") {
                    AlterAction::Exchange(c.table_name()?)
                } else {
                    loop {
                        match c.next() {
                            Some(t) if t.is_keyword("TABLE") => break,
                            Some(_) => {}
                            None => {
                                return Err(ParseError(format!(
                                    "{w} PARTITION without the other table"
                                )))
                            }
                        }
                    }
                    AlterAction::Exchange(c.table_name()?)
                }
            }
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
