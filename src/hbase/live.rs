//! HBase tables the proxy did not create: a table named `group$family` whose columns are K, Q,
//! T, V (made by OceanBase's own SQL, a migration, another tool) is an HBase table by what it
//! is, not by a marker. Its definition is what the backend reports (`SHOW CREATE TABLE`, parsed
//! by `sql::ddl`), folded back into the model's terms where a MySQL-family backend stores a
//! translation (a plain prefix column kept by a CHECK, a blob V with a length CHECK), then held
//! to the shape rules (R2–R7, R9). A table that breaks them is reported with its findings, not
//! silently treated as plain.
//!
//! Pure: no I/O.

use super::rules::{self, Finding, GroupState, Level, RuleConfig};
use crate::hbase::partition::ModelPartitioning;
use crate::sql::ddl::{CreateTable, Generated, TableOption};

/// What a `$` table is, read from its definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// An HBase table: its definition in the model's terms, and the warnings and notes the
    /// rules have about it (an unpartitioned table, a partition count that is not prime, …).
    Hbase {
        def: Box<CreateTable>,
        notes: Vec<Finding>,
    },
    /// Named and built like an HBase table (K, Q, T, V) but breaking a rule: not handled as
    /// one (its rows could not be checked or placed), listed with what is wrong.
    Broken(Vec<Finding>),
    /// Not an HBase table, and why.
    Plain(&'static str),
}

impl Shape {
    /// One line for EXPLAIN OBKV and the listing.
    pub fn reason(&self) -> String {
        match self {
            Shape::Hbase { .. } => "an HBase table".into(),
            Shape::Broken(f) => format!(
                "not handled as an HBase table: it breaks {}",
                f.iter()
                    .filter(|f| f.level == Level::Error)
                    .map(|f| f.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Shape::Plain(why) => format!("not an HBase table: {why}"),
        }
    }
}

/// The shape of the table `def` (as the backend reports it).
pub fn recognize(def: &CreateTable) -> Shape {
    if def.name.hbase_parts().is_none() {
        return Shape::Plain("its name is not group$family (one '$', both parts non-empty)");
    }
    let first4: Vec<String> = def
        .columns
        .iter()
        .take(4)
        .map(|c| c.name.to_ascii_uppercase())
        .collect();
    if !def.has_kqtv_columns() && first4 != ["K", "Q", "T", "V"] {
        return Shape::Plain("its columns are not K, Q, T, V");
    }
    let def = fold_translation(def);
    let cfg = RuleConfig {
        require_tablegroup_option: false,
        multiple_families: true,
    };
    let group = GroupState {
        exists: true,
        families: Vec::new(),
    };
    let findings = rules::check_create(&def, cfg, &group);
    if rules::has_errors(&findings) || def.model_partitioning().is_none() {
        return Shape::Broken(findings);
    }
    Shape::Hbase {
        def: Box::new(def),
        notes: findings,
    }
}

/// The CREATE TABLE text the proxy records for a recognised table (its model definition in
/// the canonical form, in table group `group`, or in none): what adoption and CREATE … LIKE
/// carry on with as if the user had written it. `source` is the text `def` was read from.
pub fn model_ddl(mut def: CreateTable, source: &[u8], group: Option<&str>) -> Vec<u8> {
    def.options.retain(|o| o.name != "TABLEGROUP");
    if let Some(g) = group {
        def.options.push(TableOption {
            name: "TABLEGROUP".into(),
            value: g.to_string(),
            span: (0, 0),
            value_span: (0, 0),
            value_is_string: true,
        });
    }
    super::translate::canonical_create(&def, source).into_bytes()
}

/// The model's view of a definition a MySQL-family backend holds: a plain prefix column kept
/// equal to `substring(K, 1, n)` by a CHECK (and in the primary key, where those servers need
/// every partitioning column) is the generated prefix column; a blob V with a `length(V) <= L`
/// CHECK is `varbinary(L)`. Other definitions are returned unchanged.
pub fn fold_translation(def: &CreateTable) -> CreateTable {
    let mut t = def.clone();
    for (p, n) in &def.prefix_checks {
        let Some(col) = t
            .columns
            .iter_mut()
            .find(|c| c.name.eq_ignore_ascii_case(p) && c.generated.is_none())
        else {
            continue;
        };
        col.generated = Some(Generated {
            prefix_of_k: Some(*n),
            stored: true,
            expr_span: (0, 0),
            clause_span: (0, 0),
        });
        t.checks = t.checks.saturating_sub(1);
        if let Some(pk) = &mut t.primary_key {
            // (K, Q, T, P) or (P, K, Q, T): the key MariaDB needs, the model's (K, Q, T)
            let is = |c: &String, name: &str| c.eq_ignore_ascii_case(name);
            let kqt = |cols: &[String]| matches!(cols, [k, q, t] if is(k, "K") && is(q, "Q") && is(t, "T"));
            let folds = match pk.as_slice() {
                [head @ .., last] if is(last, p) => kqt(head),
                [first, rest @ ..] if is(first, p) => kqt(rest),
                _ => false,
            };
            if folds {
                pk.retain(|c| !is(c, p));
            }
        }
    }
    if let Some(l) = def.value_length_check {
        if let Some(v) = t
            .columns
            .iter_mut()
            .find(|c| c.name.eq_ignore_ascii_case("V") && c.data_type.name.ends_with("BLOB"))
        {
            v.data_type.name = "VARBINARY".into();
            v.data_type.length = Some(l);
            t.checks = t.checks.saturating_sub(1);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::partition::Partitioning;
    use crate::hbase::rules::Rule;
    use crate::sql::ddl::{parse, Statement};

    fn def(sql: &str) -> CreateTable {
        match parse(sql.as_bytes()) {
            Ok(Some(Statement::CreateTable(t))) => *t,
            other => panic!("{sql}: {other:?}"),
        }
    }

    /// What seekdb answers to SHOW CREATE TABLE for the guide's prefix form.
    const SEEKDB_PREFIX: &str = "CREATE TABLE `t$f` (\n  `K` varbinary(1024) NOT NULL,\n  `Q` varbinary(256) NOT NULL,\n  `T` bigint(20) NOT NULL,\n  `V` varbinary(1048576) NOT NULL,\n  `K_PREFIX` varbinary(1024) GENERATED ALWAYS AS (substr(`K`,1,4)) VIRTUAL,\n  PRIMARY KEY (`K`, `Q`, `T`)\n) ORGANIZATION INDEX DEFAULT CHARSET = utf8mb4 ROW_FORMAT = DYNAMIC COMPRESSION = 'zstd_1.3.8' BLOCK_SIZE = 16384 TABLET_SIZE = 134217728 PCTFREE = 0\n partition by key(k_prefix)\n(partition `p0`,\npartition `p1`,\npartition `p2`)";
    /// What MariaDB answers for the same table stored the way MariaDB can hold it.
    const MARIADB_PREFIX: &str = "CREATE TABLE `c$f` (\n  `K` varbinary(1024) NOT NULL,\n  `Q` varbinary(256) NOT NULL,\n  `T` bigint(20) NOT NULL,\n  `V` mediumblob NOT NULL,\n  `K_PREFIX` varbinary(4) NOT NULL DEFAULT '',\n  PRIMARY KEY (`K`,`Q`,`T`,`K_PREFIX`),\n  CONSTRAINT `obkv_v_length` CHECK (length(`V`) <= 1048576),\n  CONSTRAINT `obkv_k_prefix` CHECK (`K_PREFIX` = substr(`K`,1,4))\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci\n PARTITION BY KEY (`K_PREFIX`)\nPARTITIONS 7";
    const MARIADB_RANGE: &str = "CREATE TABLE `r$f` (\n  `K` varbinary(1024) NOT NULL,\n  `Q` varbinary(256) NOT NULL,\n  `T` bigint(20) NOT NULL,\n  `V` longblob NOT NULL,\n  PRIMARY KEY (`K`,`Q`,`T`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci\n PARTITION BY RANGE  COLUMNS(`K`)\n(PARTITION `p0` VALUES LESS THAN ('a') ENGINE = InnoDB,\n PARTITION `p1` VALUES LESS THAN (MAXVALUE) ENGINE = InnoDB)";

    fn hbase(sql: &str) -> CreateTable {
        match recognize(&def(sql)) {
            Shape::Hbase { def, .. } => *def,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn the_backends_own_definitions_are_hbase_tables() {
        let t = hbase(SEEKDB_PREFIX);
        assert_eq!(
            t.model_partitioning(),
            Some(Partitioning::Key {
                prefix_len: Some(4),
                partitions: 3
            })
        );
        let t = hbase(MARIADB_PREFIX);
        assert_eq!(
            t.model_partitioning(),
            Some(Partitioning::Key {
                prefix_len: Some(4),
                partitions: 7
            })
        );
        assert_eq!(t.prefix_column(), Some(("K_PREFIX", 4)));
        assert_eq!(t.primary_key.as_deref().map(<[String]>::len), Some(3));
        let v = t.columns.iter().find(|c| c.name == "V").expect("V");
        assert_eq!(
            (v.data_type.name.as_str(), v.data_type.length),
            ("VARBINARY", Some(1048576))
        );
        assert!(matches!(
            hbase(MARIADB_RANGE).model_partitioning(),
            Some(Partitioning::RangeK { .. })
        ));
    }

    #[test]
    fn a_dollar_table_that_breaks_a_rule_is_reported_with_it() {
        let broken = def("CREATE TABLE `x$f` (`K` varbinary(1024) NOT NULL, `Q` varbinary(256) NOT NULL, `T` bigint NOT NULL, `V` varbinary(100) NOT NULL, KEY `iv` (`V`), PRIMARY KEY (`K`,`Q`,`T`)) PARTITION BY KEY(`K`) PARTITIONS 3");
        let shape = recognize(&broken);
        let Shape::Broken(f) = &shape else {
            panic!("{shape:?}")
        };
        assert!(f.iter().any(|f| f.rule == Rule::R7), "{f:?}");
        assert!(shape.reason().contains("R7"), "{}", shape.reason());
        // a HASH partitioning is not the model's either
        let hash = def("CREATE TABLE `x$f` (`K` varbinary(1024) NOT NULL, `Q` varbinary(256) NOT NULL, `T` bigint NOT NULL, `V` varbinary(100) NOT NULL, PRIMARY KEY (`K`,`Q`,`T`)) PARTITION BY HASH(`T`) PARTITIONS 3");
        assert!(matches!(recognize(&hash), Shape::Broken(_)));
        // a prefix CHECK that is not a prefix of K is not folded: the extra column breaks R2
        let other = def("CREATE TABLE `x$f` (`K` varbinary(1024) NOT NULL, `Q` varbinary(256) NOT NULL, `T` bigint NOT NULL, `V` varbinary(100) NOT NULL, `P` varbinary(4) NOT NULL, PRIMARY KEY (`K`,`Q`,`T`,`P`), CHECK (`P` = substr(`K`,2,4))) PARTITION BY KEY(`P`) PARTITIONS 3");
        assert!(matches!(recognize(&other), Shape::Broken(_)));
    }

    #[test]
    fn other_dollar_tables_are_plain() {
        let legacy = def(
            "CREATE TABLE `order$items` (`id` int NOT NULL, `sku` varchar(10), PRIMARY KEY (`id`))",
        );
        assert!(matches!(recognize(&legacy), Shape::Plain(_)));
        let no_dollar = def("CREATE TABLE `kqtv` (`K` varbinary(10), `Q` varbinary(10), `T` bigint, `V` blob, PRIMARY KEY (`K`,`Q`,`T`))");
        assert!(matches!(recognize(&no_dollar), Shape::Plain(_)));
    }
}
