//! The same HBase DDL on every backend: the user's statement is spliced, never re-printed —
//! options the backend lacks are cut out, and on MariaDB/MySQL the value column and the prefix
//! column take forms those servers accept while keeping one-partition pruning.

use super::backend::Flavor;
use super::catalog::{ident, ident_bytes, qualified_bytes};
use crate::sql::ddl::CreateTable;
use crate::sql::splice::Splice;

/// Statements to run, in order; if a later one fails, the table is dropped again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    pub create: Vec<u8>,
    pub after: Vec<Vec<u8>>,
}

/// `current_db` is the session's database as the backend returned it (the client's character
/// set), for the triggers' names; `marker` is the COMMENT edit that records the table's group
/// and definition (`hbase::marker::create_edit`), spliced with the rest.
pub fn create_table(
    t: &CreateTable,
    sql: &[u8],
    flavor: Flavor,
    current_db: &[u8],
    marker: Option<(usize, String)>,
) -> Translation {
    let mut s = Splice::new();
    if let Some((at, text)) = marker {
        s.insert(at, text);
    }
    let mut after = Vec::new();
    if !flavor.native_tablegroups() {
        if let Some(o) = t.option("TABLEGROUP") {
            s.replace(o.span.0, o.span.1, "");
        }
    }
    if !flavor.kv_attributes_option() {
        if let Some(o) = t.option("KV_ATTRIBUTES") {
            s.replace(o.span.0, o.span.1, "");
        }
    }
    if flavor == Flavor::MySqlFamily {
        if let Some(v) = t.columns.iter().find(|c| c.name.eq_ignore_ascii_case("V")) {
            if let (true, Some(l)) = (v.data_type.name == "VARBINARY", v.data_type.length) {
                if l > flavor.max_varbinary() {
                    let blob = if l < (1 << 24) {
                        "mediumblob"
                    } else {
                        "longblob"
                    };
                    s.replace(v.data_type.span.0, v.data_type.span.1, blob);
                    s.insert(
                        t.elements_end,
                        format!(
                            ", CONSTRAINT obkv_v_length CHECK (length({}) <= {l})",
                            ident(&v.name)
                        ),
                    );
                }
            }
        }
        if let Some(col) = t.columns.iter().find(|c| {
            c.generated
                .as_ref()
                .is_some_and(|g| g.prefix_of_k.is_some())
        }) {
            let g = col.generated.as_ref().expect("checked");
            let n = g.prefix_of_k.unwrap_or(1);
            let name = ident(&col.name);
            // a plain column kept equal to substring(K, 1, n) by triggers, guarded by a CHECK
            s.replace(g.clause_span.0, g.clause_span.1, "NOT NULL DEFAULT ''");
            s.insert(
                t.elements_end,
                format!(", CONSTRAINT obkv_k_prefix CHECK ({name} = substring(`K`, 1, {n}))"),
            );
            if let Some(pk_end) = t.primary_key_end {
                s.insert(pk_end, format!(", {name}"));
            }
            // names with the exact bytes the client sent: a name in another character set
            // must reach the backend as it came, or the trigger lands on no table
            let table = qualified_bytes(Some(current_db), &t.name);
            let db = t.name.raw_schema.as_deref().unwrap_or(current_db);
            after.extend(
                prefix_triggers(db, &table, &t.name.name, &col.name, n)
                    .into_iter()
                    .map(|(_, stmt)| stmt),
            );
        }
    }
    Translation {
        create: s.apply(sql),
        after,
    }
}

/// SHOW CREATE TABLE of an HBase table on a backend that stores a translation of it (MariaDB,
/// MySQL): the user's definition in the canonical multi-line form OceanBase prints (backquoted
/// names, one column per line, `PRIMARY KEY (`K`, `Q`, `T`)`, the table options, the
/// partitioning), so tools that parse SHOW CREATE TABLE line by line (SQLAlchemy, Alembic,
/// mysqldump) see the HBase table, not the translation. A presentation, not a rewrite of a
/// statement: it is rendered from the parsed definition.
pub fn canonical_create(t: &CreateTable, ddl: &[u8]) -> String {
    let q = |n: &str| format!("`{}`", n.replace('`', "``"));
    let pk: Vec<String> = t.primary_key.clone().unwrap_or_default();
    let in_pk = |c: &str| pk.iter().any(|p| p.eq_ignore_ascii_case(c));
    let mut lines = Vec::new();
    for c in &t.columns {
        let ty = &c.data_type;
        let type_text = match (ty.name.as_str(), ty.length) {
            ("BIGINT", None) => "bigint(20)".to_string(),
            (name, Some(n)) => format!("{}({n})", name.to_ascii_lowercase()),
            (name, None) => name.to_ascii_lowercase(),
        };
        let mut line = format!("  {} {type_text}", q(&c.name));
        match &c.generated {
            Some(g) => {
                let expr = match g.prefix_of_k {
                    Some(n) => format!("substr(`K`,1,{n})"),
                    None => {
                        let raw = ddl.get(g.expr_span.0..g.expr_span.1).unwrap_or_default();
                        let raw = String::from_utf8_lossy(raw);
                        // the clause's own parentheses, once (`(f(x))` is `f(x)`, not `f(x`)
                        let raw = raw.trim();
                        match raw.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
                            Some(inner) => inner.to_string(),
                            None => raw.to_string(),
                        }
                    }
                };
                let kind = if g.stored { "STORED" } else { "VIRTUAL" };
                line.push_str(&format!(" GENERATED ALWAYS AS ({expr}) {kind}"));
            }
            None if c.not_null || in_pk(&c.name) => line.push_str(" NOT NULL"),
            None => line.push_str(" DEFAULT NULL"),
        }
        lines.push(line);
    }
    if !pk.is_empty() {
        let cols: Vec<String> = pk.iter().map(|c| q(c)).collect();
        lines.push(format!("  PRIMARY KEY ({})", cols.join(", ")));
    }
    let mut out = format!(
        "CREATE TABLE {} (\n{}\n) DEFAULT CHARSET = utf8mb4{}",
        q(&t.name.name),
        lines.join(",\n"),
        kept_options(t)
    );
    if let Some(p) = &t.partition {
        match (p.kind.as_str(), p.count) {
            ("KEY", Some(n)) => {
                let cols: Vec<String> = p.columns.iter().map(|c| q(c)).collect();
                out.push_str(&format!(
                    "\n partition by key({}) partitions {n}",
                    cols.join(", ")
                ));
            }
            _ => {
                let clause = ddl.get(p.span.0..p.span.1).unwrap_or_default();
                out.push_str(&format!("\n {}", String::from_utf8_lossy(clause)));
            }
        }
    }
    out
}

/// SHOW CREATE TABLE on a backend that prints OceanBase's form itself but has no table groups
/// (seekdb): its own answer with the options it does not keep (TABLEGROUP, KV_ATTRIBUTES) put
/// back at the end of the table-options line (the line that closes the column list).
pub fn with_kept_options(backend_text: &str, t: &CreateTable) -> String {
    let extra = kept_options(t);
    let mut out = String::with_capacity(backend_text.len() + extra.len());
    let mut done = extra.is_empty();
    for (i, line) in backend_text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
        if !done && line.starts_with(')') {
            out.push_str(&extra);
            done = true;
        }
    }
    out
}

/// ` TABLEGROUP = 'g' KV_ATTRIBUTES = '…'` as OceanBase prints them, for the options set.
fn kept_options(t: &CreateTable) -> String {
    let kv = t.option("KV_ATTRIBUTES").map(|o| o.value.as_str());
    let mut out = String::new();
    for (name, value) in [("TABLEGROUP", t.tablegroup()), ("KV_ATTRIBUTES", kv)] {
        if let Some(v) = value {
            let quoted = v.replace('\\', "\\\\").replace('\'', "''");
            out.push_str(&format!(" {name} = '{quoted}'"));
        }
    }
    out
}

/// A trigger or constraint name for a table (names are limited to 64 characters, not bytes).
/// Cut at a character boundary: a byte cut inside a multibyte character panicked the session.
pub fn derived_name(table: &str, suffix: &str) -> String {
    let base: String = format!("obkv_{table}").chars().take(58).collect();
    format!("{base}_{suffix}")
}

/// The two triggers that keep a plain prefix column equal to `substring(K, 1, n)` on MariaDB /
/// MySQL (which cannot partition by a generated column in the primary key): (trigger name,
/// CREATE TRIGGER). `db` and `table` are the exact bytes of the database and the qualified
/// table, `name` the table's name for the triggers' names.
pub fn prefix_triggers(
    db: &[u8],
    table: &[u8],
    name: &str,
    column: &str,
    n: u64,
) -> Vec<(String, Vec<u8>)> {
    let col = ident(column);
    let db = ident_bytes(db);
    [("bi", "INSERT"), ("bu", "UPDATE")]
        .into_iter()
        .map(|(suffix, event)| {
            let trigger = derived_name(name, suffix);
            let mut stmt = b"CREATE TRIGGER ".to_vec();
            stmt.extend_from_slice(&db);
            stmt.push(b'.');
            stmt.extend_from_slice(ident(&trigger).as_bytes());
            stmt.extend_from_slice(format!(" BEFORE {event} ON ").as_bytes());
            stmt.extend_from_slice(table);
            stmt.extend_from_slice(
                format!(" FOR EACH ROW SET NEW.{col} = substring(NEW.`K`, 1, {n})").as_bytes(),
            );
            (trigger, stmt)
        })
        .collect()
}

/// ALTER TABLE on a backend without the option: cut TABLEGROUP / KV_ATTRIBUTES out.
pub fn strip_options(sql: &[u8], spans: &[(usize, usize)]) -> Vec<u8> {
    let mut s = Splice::new();
    for (a, b) in spans {
        s.replace(*a, *b, "");
    }
    tidy_alter(&s.apply(sql))
}

/// An ALTER TABLE after options were cut out and a COMMENT spliced in: a comma with nothing
/// before it (right after the table's name), nothing after it, another comma after it, or
/// PARTITION BY after it is dropped. Everything else stays byte for byte.
pub fn tidy_alter(sql: &[u8]) -> Vec<u8> {
    let tokens = crate::sql::lexer::tokenize(sql).unwrap_or_default();
    let Some(table_kw) = tokens.iter().position(|t| t.is_keyword("TABLE")) else {
        return sql.to_vec();
    };
    // the name: one token, or three (db . name)
    let mut after_name = table_kw + 2;
    if tokens.get(table_kw + 2).is_some_and(|t| t.is_punct(b'.')) {
        after_name = table_kw + 4;
    }
    let mut cut = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !t.is_punct(b',') || i < after_name {
            continue;
        }
        let next = tokens.get(i + 1);
        let dangling = i == after_name
            || next.is_none_or(|n| n.is_punct(b',') || n.is_punct(b';'))
            || (next.is_some_and(|n| n.is_keyword("PARTITION"))
                && tokens.get(i + 2).is_some_and(|n| n.is_keyword("BY")));
        if dangling {
            cut.push((t.start, t.end));
        }
    }
    let mut s = Splice::new();
    for (a, b) in cut {
        s.replace(a, b, "");
    }
    s.apply(sql)
}

/// seekdb's SHOW CREATE TABLE of an HBase table without the proxy's marker in its COMMENT (and
/// without the COMMENT when the marker was all of it).
pub fn without_marker(backend_text: &str, marker: &str) -> String {
    let out = backend_text
        .replace(&format!(" {marker}"), "")
        .replace(marker, "");
    out.replace(" COMMENT = ''", "").replace(" COMMENT=''", "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_expression_keeps_its_own_parentheses() {
        let sql = b"CREATE TABLE g$f (K varbinary(1024), Q varbinary(256), T bigint, \
            V varbinary(1024) GENERATED ALWAYS AS (concat(K, 'x')) VIRTUAL, PRIMARY KEY (K, Q, T))";
        let Ok(Some(crate::sql::ddl::Statement::CreateTable(t))) = crate::sql::ddl::parse(sql)
        else {
            panic!("not parsed");
        };
        let shown = canonical_create(&t, sql);
        assert!(
            shown.contains("GENERATED ALWAYS AS (concat(K, 'x')) VIRTUAL"),
            "{shown}"
        );
    }
    use crate::sql::ddl::{parse, Statement};

    fn t(sql: &str) -> CreateTable {
        match parse(sql.as_bytes()).expect("parses") {
            Some(Statement::CreateTable(t)) => *t,
            other => panic!("{other:?}"),
        }
    }

    const PREFIX: &str = "CREATE TABLE h$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)) VIRTUAL, PRIMARY KEY (K, Q, T)) TABLEGROUP = h KV_ATTRIBUTES = '{\"Hbase\": {\"MaxVersions\": 2}}' PARTITION BY KEY(K_PREFIX) PARTITIONS 97";

    #[test]
    fn cutting_alter_options_leaves_valid_sql() {
        let cut = |sql: &str| {
            let Some(Statement::AlterTable { actions, .. }) =
                parse(sql.as_bytes()).expect("parses")
            else {
                panic!("alter")
            };
            let spans: Vec<(usize, usize)> = actions
                .iter()
                .filter_map(|a| match a {
                    crate::sql::ddl::AlterAction::Option(o) => Some(o.span),
                    _ => None,
                })
                .collect();
            let out = String::from_utf8(strip_options(sql.as_bytes(), &spans)).expect("utf8");
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        assert_eq!(
            cut("ALTER TABLE t KV_ATTRIBUTES='{}', PARTITION BY KEY(K) PARTITIONS 7"),
            "ALTER TABLE t PARTITION BY KEY(K) PARTITIONS 7"
        );
        assert_eq!(
            cut("ALTER TABLE t TRUNCATE PARTITION p1, KV_ATTRIBUTES='{}', TABLEGROUP = g"),
            "ALTER TABLE t TRUNCATE PARTITION p1"
        );
        assert_eq!(
            cut("ALTER TABLE t KV_ATTRIBUTES='{}' PARTITION BY KEY(K) PARTITIONS 7"),
            "ALTER TABLE t PARTITION BY KEY(K) PARTITIONS 7"
        );
    }

    #[test]
    fn canonical_form_is_oceanbase_shaped() {
        let shown = canonical_create(&t(PREFIX), PREFIX.as_bytes());
        let want = [
            "CREATE TABLE `h$f` (",
            "  `K` varbinary(1024) NOT NULL,",
            "  `Q` varbinary(256) NOT NULL,",
            "  `T` bigint(20) NOT NULL,",
            "  `V` varbinary(1048576) NOT NULL,",
            "  `K_PREFIX` varbinary(1024) GENERATED ALWAYS AS (substr(`K`,1,4)) VIRTUAL,",
            "  PRIMARY KEY (`K`, `Q`, `T`)",
            ") DEFAULT CHARSET = utf8mb4 TABLEGROUP = 'h' KV_ATTRIBUTES = '{\"Hbase\": {\"MaxVersions\": 2}}'",
            " partition by key(`K_PREFIX`) partitions 97",
        ];
        assert_eq!(shown, want.join("\n"));
        let seekdb = "CREATE TABLE `h$f` (\n  `K` varbinary(1024) NOT NULL\n) ORGANIZATION INDEX\n partition by key(k)";
        let kept = with_kept_options(seekdb, &t(PREFIX));
        assert_eq!(
            kept.lines().nth(2),
            Some(") ORGANIZATION INDEX TABLEGROUP = 'h' KV_ATTRIBUTES = '{\"Hbase\": {\"MaxVersions\": 2}}'")
        );
        assert_eq!(kept.lines().count(), 4);
    }

    #[test]
    fn derived_names_cut_at_characters() {
        // 49 characters with a two-byte one where byte 58 falls inside it
        let table = format!("{}é{}", "a".repeat(52), "b".repeat(10));
        let n = derived_name(&table, "bi");
        assert_eq!(n.chars().count(), 61);
        assert!(n.ends_with("_bi"));
        let n = derived_name(&"é".repeat(60), "bu");
        assert_eq!(n.chars().count(), 61);
    }

    #[test]
    fn oceanbase_keeps_everything() {
        let tr = create_table(
            &t(PREFIX),
            PREFIX.as_bytes(),
            Flavor::OceanBase,
            b"db",
            None,
        );
        assert_eq!(tr.create, PREFIX.as_bytes());
        assert!(tr.after.is_empty());
    }

    #[test]
    fn seekdb_loses_only_the_options() {
        let tr = create_table(&t(PREFIX), PREFIX.as_bytes(), Flavor::SeekDb, b"db", None);
        let s = String::from_utf8(tr.create).expect("utf8");
        assert!(
            !s.contains("TABLEGROUP") && !s.contains("KV_ATTRIBUTES"),
            "{s}"
        );
        assert!(
            s.starts_with("CREATE TABLE h$f (K varbinary(1024),")
                && s.ends_with("PARTITION BY KEY(K_PREFIX) PARTITIONS 97")
        );
        assert!(s.contains("GENERATED ALWAYS AS (substring(K, 1, 4)) VIRTUAL"));
    }

    #[test]
    fn mariadb_gets_blob_checks_and_triggers() {
        let tr = create_table(
            &t(PREFIX),
            PREFIX.as_bytes(),
            Flavor::MySqlFamily,
            b"db",
            None,
        );
        let s = String::from_utf8(tr.create).expect("utf8");
        assert!(s.contains("V mediumblob NOT NULL"), "{s}");
        assert!(s.contains("CHECK (length(`V`) <= 1048576)"), "{s}");
        assert!(
            s.contains("K_PREFIX varbinary(1024) NOT NULL DEFAULT ''"),
            "{s}"
        );
        assert!(s.contains("PRIMARY KEY (K, Q, T, `K_PREFIX`)"), "{s}");
        assert!(
            s.contains("CHECK (`K_PREFIX` = substring(`K`, 1, 4))"),
            "{s}"
        );
        assert_eq!(tr.after.len(), 2);
        assert!(String::from_utf8_lossy(&tr.after[0]).contains("BEFORE INSERT ON `db`.`h$f`"));
    }
}
