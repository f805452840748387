//! Reading the DDL statements that concern HBase tables (table groups, CREATE/ALTER/RENAME/DROP/
//! TRUNCATE TABLE, CREATE INDEX, SHOW CREATE TABLE) into the model's terms, with byte spans so a
//! translation can splice the user's text instead of re-printing it.

mod alter;
mod create;
mod cursor;
mod terms;

use crate::sql::lexer::{tokenize_with, Dialect, Kind, Token};
use alter::alter_actions;
use create::create_table;
use cursor::Cursor;

pub use terms::{
    AlterAction, Column, CreateTable, DataType, Generated, Index, ParseError, PartitionClause,
    RangeBound, Span, Statement, TableName, TableOption,
};

/// Parses a statement the HBase layer handles; `Ok(None)` for any other statement.
pub fn parse(sql: &[u8]) -> Result<Option<Statement>, ParseError> {
    parse_with(sql, Dialect::default())
}

/// The table a proxy command names after its `FOR` (`SHOW OBKV ADVICE FOR g$f`); None when
/// there is no FOR, Err when what follows is not one table name and nothing else.
pub fn table_after_for(sql: &[u8], d: Dialect) -> Result<Option<TableName>, ParseError> {
    let tokens = tokenize_with(sql, d).map_err(|e| ParseError(e.to_string()))?;
    let mut c = Cursor {
        t: &tokens,
        i: 0,
        sql,
    };
    while c.peek().is_some() {
        if c.kw("FOR") {
            let name = c.table_name()?;
            c.punct(b';');
            return match c.peek() {
                None => Ok(Some(name)),
                Some(_) => Err(ParseError("one table name after FOR".into())),
            };
        }
        c.next();
    }
    Ok(None)
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
