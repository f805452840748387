//! The catalog: table groups and HBase table definitions kept in a schema inside the backend,
//! so several proxies agree and a restart loses nothing. This module writes the SQL; the session
//! runs it on its own backend connection (the user's privileges apply). Every value goes in as a
//! hex literal, which no sql_mode or charset can misread.

use tracing::warn;

use super::ddl::TableName;
use crate::backend::{self, BackendStream, QueryError, QueryResult};

pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2 + 3);
    s.push_str("X'");
    for b in bytes {
        s.push_str(&format!("{b:02X}"));
    }
    s.push('\'');
    s
}

/// `name` as a backquoted identifier.
pub fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

pub fn qualified(schema: &str, t: &TableName) -> String {
    format!(
        "{}.{}",
        ident(t.schema.as_deref().unwrap_or(schema)),
        ident(&t.name)
    )
}

/// What this process last read or wrote of the catalog: (schema, table) → (group, DDL). Used
/// only where the catalog cannot be read (a session under LOCK TABLES); bounded.
#[derive(Default)]
pub struct CatalogCache {
    entries: std::sync::Mutex<std::collections::HashMap<TableKey, CachedEntry>>,
}

/// (schema, table), folded as the backend compares names.
pub type TableKey = (String, String);
/// (group, the user's DDL).
pub type CachedEntry = (String, Vec<u8>);

impl CatalogCache {
    const MAX_ENTRIES: usize = 10_000;

    pub fn put(&self, key: TableKey, entry: CachedEntry) {
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= Self::MAX_ENTRIES && !m.contains_key(&key) {
            m.clear();
        }
        m.insert(key, entry);
    }

    pub fn get(&self, key: &TableKey) -> Option<CachedEntry> {
        let m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.get(key).cloned()
    }

    pub fn remove(&self, key: &TableKey) {
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.remove(key);
    }
}

pub struct Catalog<'a> {
    pub schema: &'a str,
    /// The backend compares table and schema names case-insensitively
    /// (`lower_case_table_names` 1 or 2, OceanBase's default): so do lookups here, or
    /// `ALTER TABLE G$F …` would miss the entry of `g$f` and escape the rules.
    pub names_ci: bool,
}

impl Catalog<'_> {
    /// `WHERE` condition for one table's entry, comparing names as the backend does.
    fn where_table(&self, schema: &str, name: &str) -> String {
        let (s, n) = (hex(schema.as_bytes()), hex(name.as_bytes()));
        if self.names_ci {
            let ci = |v: &str| format!("LOWER(CONVERT({v} USING utf8mb4))");
            format!(
                "{} = {} AND {} = {}",
                ci("schema_name"),
                ci(&s),
                ci("table_name"),
                ci(&n)
            )
        } else {
            format!("schema_name = {s} AND table_name = {n}")
        }
    }

    pub fn ensure(&self) -> Vec<String> {
        let s = ident(self.schema);
        vec![
            format!("CREATE DATABASE IF NOT EXISTS {s}"),
            format!("CREATE TABLE IF NOT EXISTS {s}.tablegroups (name VARCHAR(128) NOT NULL PRIMARY KEY)"),
            format!(
                "CREATE TABLE IF NOT EXISTS {s}.hbase_tables (schema_name VARCHAR(64) NOT NULL, table_name VARCHAR(128) NOT NULL, \
                 group_name VARCHAR(128) NOT NULL, family VARCHAR(128) NOT NULL, ddl LONGTEXT NOT NULL, \
                 PRIMARY KEY (schema_name, table_name))"
            ),
        ]
    }

    pub fn group_exists(&self, group: &str) -> String {
        format!(
            "SELECT name FROM {}.tablegroups WHERE name = {}",
            ident(self.schema),
            hex(group.as_bytes())
        )
    }

    pub fn insert_group(&self, group: &str) -> String {
        format!(
            "INSERT INTO {}.tablegroups (name) VALUES ({})",
            ident(self.schema),
            hex(group.as_bytes())
        )
    }

    pub fn delete_group(&self, group: &str) -> String {
        format!(
            "DELETE FROM {}.tablegroups WHERE name = {}",
            ident(self.schema),
            hex(group.as_bytes())
        )
    }

    /// (schema, table, family, ddl) of every table in a group, any schema.
    pub fn group_tables(&self, group: &str) -> String {
        format!(
            "SELECT schema_name, table_name, family, ddl FROM {}.hbase_tables WHERE group_name = {} ORDER BY schema_name, table_name",
            ident(self.schema),
            hex(group.as_bytes())
        )
    }

    /// (group, schema, table) for SHOW TABLEGROUPS.
    pub fn all_groups(&self) -> String {
        let s = ident(self.schema);
        format!(
            "SELECT g.name, t.table_name, t.schema_name FROM {s}.tablegroups g LEFT JOIN {s}.hbase_tables t ON t.group_name = g.name ORDER BY g.name, t.schema_name, t.table_name"
        )
    }

    pub fn table(&self, schema: &str, name: &str) -> String {
        format!(
            "SELECT group_name, family, ddl FROM {}.hbase_tables WHERE {}",
            ident(self.schema),
            self.where_table(schema, name)
        )
    }

    pub fn insert_table(
        &self,
        schema: &str,
        name: &str,
        group: &str,
        family: &str,
        ddl: &[u8],
    ) -> String {
        format!(
            "REPLACE INTO {}.hbase_tables (schema_name, table_name, group_name, family, ddl) VALUES ({}, {}, {}, {}, {})",
            ident(self.schema),
            hex(schema.as_bytes()),
            hex(name.as_bytes()),
            hex(group.as_bytes()),
            hex(family.as_bytes()),
            hex(ddl)
        )
    }

    pub fn delete_table(&self, schema: &str, name: &str) -> String {
        format!(
            "DELETE FROM {}.hbase_tables WHERE {}",
            ident(self.schema),
            self.where_table(schema, name)
        )
    }

    pub fn update_ddl(&self, schema: &str, name: &str, ddl: &[u8]) -> String {
        format!(
            "UPDATE {}.hbase_tables SET ddl = {} WHERE {}",
            ident(self.schema),
            hex(ddl),
            self.where_table(schema, name)
        )
    }

    /// Every catalog entry: (schema, table).
    pub fn all_tables(&self) -> String {
        format!(
            "SELECT schema_name, table_name FROM {}.hbase_tables",
            ident(self.schema)
        )
    }
}

/// Removes catalog entries of tables dropped behind the proxy's back (logged); returns them.
/// A backend without the catalog schema yet has nothing to reconcile.
///
/// Each entry is checked with a probe that waits for the table's metadata lock, and only "no
/// such table/database" removes it. information_schema is not used: a table being rebuilt by
/// ALTER TABLE in another session is briefly missing from it.
pub async fn reconcile(
    stream: &mut BackendStream,
    caps: crate::protocol::constants::Caps,
    schema: &str,
) -> Result<Vec<(String, String)>, QueryError> {
    const ER_BAD_DB: u16 = 1049;
    const ER_NO_SUCH_TABLE: u16 = 1146;
    let c = Catalog {
        schema,
        names_ci: false,
    };
    let (result, _) = backend::query(stream, caps, c.all_tables().as_bytes()).await?;
    let rows = match result {
        QueryResult::Rows(rows) => rows,
        QueryResult::Ok(_) => Vec::new(),
        QueryResult::Err(e) => {
            // most often: the catalog schema does not exist yet
            let msg = String::from_utf8_lossy(e.get(9..).unwrap_or_default()).into_owned();
            tracing::debug!("catalog not reconciled: {msg}");
            return Ok(Vec::new());
        }
    };
    tracing::debug!(candidates = rows.len(), "catalog reconcile");
    let mut removed = Vec::new();
    for r in rows {
        let name = |v: &Option<Vec<u8>>| {
            String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
        };
        let (db, table) = (name(&r[0]), name(&r[1]));
        let probe = format!("SELECT 1 FROM {}.{} LIMIT 0", ident(&db), ident(&table));
        let (answer, _) = backend::query(stream, caps, probe.as_bytes()).await?;
        let gone = matches!(&answer, QueryResult::Err(e) if matches!(crate::protocol::packets::parse_err_code(e), Some(ER_BAD_DB | ER_NO_SUCH_TABLE)));
        if !gone {
            continue;
        }
        warn!(schema = %db, %table, "catalog: HBase table was dropped behind the proxy's back; removing it from the catalog");
        backend::query(stream, caps, c.delete_table(&db, &table).as_bytes()).await?;
        removed.push((db, table));
    }
    Ok(removed)
}

/// MySQL LIKE with `%` and `_` (and `\\` escapes), as SHOW ... LIKE applies it, compared
/// case-insensitively.
///
/// Iterative and without allocation per step: the classic greedy wildcard match, which keeps
/// only the position of the last `%` to go back to. Its worst case is O(pattern × text); a run
/// of `%` counts as one, so no pattern can make it exponential or deep (a recursive matcher
/// overflowed the stack on `'%' × 100,000` and took minutes on `'%a' × 12`).
pub fn like(pattern: &str, text: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Any,
        One,
        Char(char),
    }
    let mut p: Vec<P> = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let item = match c {
            '%' => P::Any,
            '_' => P::One,
            '\\' => P::Char(chars.next().unwrap_or('\\')),
            c => P::Char(c),
        };
        if !(item == P::Any && p.last() == Some(&P::Any)) {
            p.push(item);
        }
    }
    let t: Vec<char> = text.chars().collect();
    let same = |a: char, b: char| a == b || a.to_lowercase().eq(b.to_lowercase());
    let (mut pi, mut ti) = (0usize, 0usize);
    // after the last `%`: where the pattern resumes and which text position it matched from
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(P::Any) => {
                star = Some((pi + 1, ti));
                pi += 1;
            }
            Some(P::One) => {
                pi += 1;
                ti += 1;
            }
            Some(P::Char(c)) if same(*c, t[ti]) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // let the last `%` swallow one more character and try again from there
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    pi = sp;
                    ti = st + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|x| *x == P::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_hex_and_names_quoted() {
        let c = Catalog {
            schema: "obkv_meta",
            names_ci: false,
        };
        assert_eq!(
            c.group_exists("g'1"),
            "SELECT name FROM `obkv_meta`.tablegroups WHERE name = X'672731'"
        );
        assert_eq!(ident("a`b"), "`a``b`");
        assert_eq!(hex(b""), "X''");
        let ci = Catalog {
            schema: "m",
            names_ci: true,
        };
        assert!(ci.table("db", "G$F").ends_with(
            "LOWER(CONVERT(table_name USING utf8mb4)) = LOWER(CONVERT(X'472446' USING utf8mb4))"
        ));
    }

    #[test]
    fn like_patterns() {
        assert!(like("h%", "htable1"));
        assert!(like("h_able1", "HTABLE1"));
        assert!(!like("h_", "htable1"));
        assert!(like("a\\%", "a%"));
        assert!(!like("a\\%", "ab"));
        assert!(like("%", ""));
        assert!(like("a%b%c", "aXXbYYc"));
        assert!(!like("a%b%c", "aXXbYY"));
        assert!(like("%é", "CAFÉ"));
        assert!(like("a\\", "a\\"));
    }

    #[test]
    fn pathological_patterns_are_fast_and_shallow() {
        // recursion overflowed the stack here, and '%a' x 12 took over a minute
        let many = "%".repeat(100_000);
        assert!(like(&many, "anything"));
        let name = "a".repeat(40) + "b";
        let p = "%a".repeat(12) + "%c";
        assert!(!like(&p, &name));
        let p = "%a".repeat(5000) + "%c";
        assert!(!like(&p, &name));
        let long_text = "a".repeat(10_000);
        assert!(!like(&("%a".repeat(50) + "%b"), &long_text));
    }
}
