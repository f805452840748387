//! The catalog schema: what has no other home in the backend — table groups that exist
//! without tables (on backends without native table groups) and the users' DDL texts,
//! content-addressed by their SHA-256. Which table belongs to which group is not kept here:
//! it is in the tables' own COMMENT (`hbase::marker`), read from information_schema, so it
//! cannot drift from the database. This module writes the SQL; the session runs it (on the
//! proxy's catalog connection when a catalog account is configured, else on the user's). Every
//! value goes in as a hex literal, which no sql_mode or charset can misread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::marker::TAG;
use crate::sql::ddl::{CreateTable, TableName};

/// `X'…'` for any bytes (no character set or escape setting can misread it).
pub fn hex(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2 + 3);
    push_hex(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `X'…'` with `bytes` in upper-case hex digits.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    // room first: the loop then writes without a capacity check per byte
    out.reserve(3 + 2 * bytes.len());
    out.extend_from_slice(b"X'");
    out.extend(
        bytes
            .iter()
            .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]),
    );
    out.push(b'\'');
}

/// `name` as a backquoted identifier.
pub fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Exact identifier bytes (in the client's character set) as a backquoted identifier.
pub fn ident_bytes(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    out.push(b'`');
    for &b in name {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
    out
}

/// A table's reference with the exact bytes the client sent: `db`.`name`, the database being
/// the one the statement named, else `current_db` (as the backend returned it on the user's
/// connection), else none (`name`, resolved by the backend as the client's was).
pub fn qualified_bytes(current_db: Option<&[u8]>, t: &TableName) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(db) = t.raw_schema.as_deref().or(current_db) {
        out.extend_from_slice(&ident_bytes(db));
        out.push(b'.');
    }
    out.extend_from_slice(&ident_bytes(&t.raw_name));
    out
}

/// Bytes in the client's character set as a UTF-8 string expression (for comparing with
/// information_schema, which the backend keeps in UTF-8): the backend transcodes, as it does
/// the names in the client's statements.
pub fn client_text(bytes: &[u8]) -> String {
    format!("CONVERT(CAST({} AS CHAR) USING utf8mb4)", hex(bytes))
}

/// A table's definition, read once per process per DDL id (ids are content hashes, so an entry
/// can never be stale); bounded.
#[derive(Default)]
pub struct DefinitionCache {
    entries: Mutex<HashMap<String, Arc<Definition>>>,
}

/// The user's DDL text and its parsed form.
#[derive(Debug)]
pub struct Definition {
    pub ddl: Vec<u8>,
    pub table: CreateTable,
}

impl DefinitionCache {
    const MAX_ENTRIES: usize = 10_000;

    pub fn put(&self, id: String, d: Arc<Definition>) {
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= Self::MAX_ENTRIES && !m.contains_key(&id) {
            m.clear();
        }
        m.insert(id, d);
    }

    pub fn get(&self, id: &str) -> Option<Arc<Definition>> {
        let m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.get(id).cloned()
    }
}

pub struct Catalog<'a> {
    pub schema: &'a str,
}

impl Catalog<'_> {
    pub fn ensure(&self) -> Vec<String> {
        let s = ident(self.schema);
        vec![
            format!("CREATE DATABASE IF NOT EXISTS {s}"),
            format!(
                "CREATE TABLE IF NOT EXISTS {s}.table_groups (name_key VARBINARY(768) NOT NULL PRIMARY KEY, name VARBINARY(768) NOT NULL)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {s}.hbase_ddl (id CHAR(64) NOT NULL PRIMARY KEY, ddl LONGBLOB NOT NULL)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {s}.lock_epochs (lock_name VARCHAR(64) NOT NULL PRIMARY KEY, epoch BIGINT NOT NULL)"
            ),
        ]
    }

    /// The epoch of a table group's DDL lock (no row: 0). On a backend whose named locks
    /// outlive their holder (OceanBase keeps a dead session's lock for minutes) the lock moves
    /// to a new name, `lock_name:epoch`, once its holder is seen gone.
    pub fn lock_epoch(&self, lock_name: &str) -> String {
        format!(
            "SELECT epoch FROM {}.lock_epochs WHERE lock_name = '{}'",
            ident(self.schema),
            lock_name.replace('\'', "")
        )
    }

    /// Moves the lock from epoch `from` to the next one, unless another proxy already did.
    pub fn bump_lock_epoch(&self, lock_name: &str, from: u64) -> String {
        let name = lock_name.replace('\'', "");
        format!(
            "INSERT INTO {}.lock_epochs (lock_name, epoch) VALUES ('{name}', {next}) \
             ON DUPLICATE KEY UPDATE epoch = IF(epoch = {from}, {next}, epoch)",
            ident(self.schema),
            next = from + 1
        )
    }

    /// HEX(name) of the group with this key (no row: no such group).
    pub fn group(&self, key: &[u8]) -> String {
        format!(
            "SELECT HEX(name) FROM {}.table_groups WHERE name_key = {}",
            ident(self.schema),
            hex(key)
        )
    }

    /// One row affected: created; none: it existed.
    pub fn insert_group(&self, key: &[u8], name: &[u8]) -> String {
        format!(
            "INSERT IGNORE INTO {}.table_groups (name_key, name) VALUES ({}, {})",
            ident(self.schema),
            hex(key),
            hex(name)
        )
    }

    pub fn delete_group(&self, key: &[u8]) -> String {
        format!(
            "DELETE FROM {}.table_groups WHERE name_key = {}",
            ident(self.schema),
            hex(key)
        )
    }

    /// HEX(name) of every table group.
    pub fn all_groups(&self) -> String {
        format!("SELECT HEX(name) FROM {}.table_groups", ident(self.schema))
    }

    pub fn insert_ddl(&self, id: &str, ddl: &[u8]) -> String {
        format!(
            "INSERT IGNORE INTO {}.hbase_ddl (id, ddl) VALUES ('{id}', {})",
            ident(self.schema),
            hex(ddl)
        )
    }

    pub fn ddl(&self, id: &str) -> String {
        // ids are checked to be hex digits before they get here
        let id: String = id.chars().filter(char::is_ascii_hexdigit).collect();
        format!(
            "SELECT ddl FROM {}.hbase_ddl WHERE id = '{id}'",
            ident(self.schema)
        )
    }
}

/// Every table that carries a marker and that the connection's account may see:
/// HEX(schema), HEX(name), comment, schema and name as the connection's client reads them.
pub fn marked_tables() -> String {
    format!(
        "SELECT HEX(TABLE_SCHEMA), HEX(TABLE_NAME), TABLE_COMMENT, TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES \
         WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_COMMENT LIKE '%{TAG}%'"
    )
}

/// Every base table with a `$` in its name that the connection's account may see (at most
/// `limit`), outside the servers' own schemas and `catalog_schema`: HEX(schema), HEX(name),
/// comment. For `SHOW OBKV TABLES`, asked by a user, never per statement.
pub fn dollar_tables(catalog_schema: &str, limit: usize) -> String {
    format!(
        "SELECT HEX(TABLE_SCHEMA), HEX(TABLE_NAME), TABLE_COMMENT FROM information_schema.TABLES \
         WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME LIKE '%$%' AND TABLE_SCHEMA NOT IN \
         ('mysql', 'information_schema', 'performance_schema', 'sys', 'oceanbase', {}) \
         ORDER BY TABLE_SCHEMA, TABLE_NAME LIMIT {limit}",
        client_text(catalog_schema.as_bytes())
    )
}

/// One table, named as the client named it (the current database when unqualified), compared
/// as the backend compares names: HEX(schema), HEX(name), comment.
pub fn table_comment(t: &TableName) -> String {
    let schema = match &t.raw_schema {
        Some(s) => client_text(s),
        None => "DATABASE()".to_string(),
    };
    format!(
        "SELECT HEX(TABLE_SCHEMA), HEX(TABLE_NAME), TABLE_COMMENT FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = {schema} AND TABLE_NAME = {}",
        client_text(&t.raw_name)
    )
}

/// One table's marker and the partitioning information_schema reports for it: HEX(schema),
/// HEX(name), comment, partition count, method, expression. Names compared as the backend
/// compares them; `db` and `name` are the client's bytes.
///
/// Both sides are filtered by constants, not correlated (a correlated subquery on
/// information_schema.PARTITIONS per column took 20 ms on MariaDB and 11 ms on seekdb for a
/// 97-partition table, once per table per `hbase.schema_cache_ms` per session; this form takes
/// about 0.5 and 2 ms). ASCII names are written as `_utf8mb4 X'…'`, a literal both servers use
/// to open only the named table.
pub fn table_partitioning(db: &[u8], name: &[u8]) -> String {
    let text = |b: &[u8]| {
        if b.is_ascii() {
            format!("_utf8mb4 {}", hex(b))
        } else {
            client_text(b)
        }
    };
    let (db, name) = (text(db), text(name));
    format!(
        "SELECT HEX(t.TABLE_SCHEMA), HEX(t.TABLE_NAME), t.TABLE_COMMENT, p.n, p.m, p.e \
         FROM information_schema.TABLES t, (SELECT COUNT(*) n, MAX(PARTITION_METHOD) m, \
         MAX(PARTITION_EXPRESSION) e FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = {db} \
         AND TABLE_NAME = {name} AND PARTITION_NAME IS NOT NULL) p \
         WHERE t.TABLE_SCHEMA = {db} AND t.TABLE_NAME = {name}"
    )
}

/// A statement that succeeds exactly when the user may read the table: EXPLAIN of a SELECT on
/// it (the backend's own SELECT privilege check, which runs nothing and reads nothing). With
/// `table_partitioning` (which lists the table only to a user the backend shows it to), the
/// grants the advisor's rowkey views follow, in SQL and on the admin listener.
pub fn readable_probe(db: &str, name: &str) -> String {
    let quoted = |s: &str| format!("`{}`", s.replace('`', "``"));
    format!(
        "EXPLAIN SELECT 1 FROM {}.{} WHERE 1 = 0",
        quoted(db),
        quoted(name)
    )
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
        };
        assert_eq!(
            c.group(b"g'1"),
            "SELECT HEX(name) FROM `obkv_meta`.table_groups WHERE name_key = X'672731'"
        );
        assert_eq!(ident("a`b"), "`a``b`");
        assert_eq!(ident_bytes(b"a`\xE9"), b"`a``\xE9`".to_vec());
        assert_eq!(hex(b""), "X''");
        assert!(c.ddl("ab'; DROP").ends_with("id = 'abD'"));
        let t = TableName {
            schema: None,
            name: "?".into(),
            raw_schema: None,
            raw_name: [0xE9, b'$', b'f'][..].into(),
        };
        assert!(table_comment(&t).ends_with(
            "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = CONVERT(CAST(X'E92466' AS CHAR) USING utf8mb4)"
        ));
        assert_eq!(qualified_bytes(Some(b"d"), &t), b"`d`.`\xE9$f`".to_vec());
        assert_eq!(qualified_bytes(None, &t), b"`\xE9$f`".to_vec());
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
