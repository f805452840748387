//! The typed schema of an HBase table, as the read/write path needs it (partitioning, prefix
//! column), cached per process.
//!
//! The truth is the backend: an entry is made from the table's marker (its COMMENT, read from
//! information_schema as the user's connection sees it) and the definition it names, checked
//! against the partitioning information_schema reports. Entries are dropped by DDL through this
//! proxy at once, and re-read after `max_age` (DDL through another proxy, or run directly on
//! the backend). A table that is not an HBase table is cached too (as `None`), so plain tables
//! with a `$` in their name cost one lookup per `max_age`, not one per statement.

use crate::hbase::partition::ModelPartitioning;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::cells::CellLimits;
use super::partition::Partitioning;
use crate::sql::ddl::CreateTable;

/// How the backend places rows (the prefix-scan rewriter predicts partitions with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// OceanBase and seekdb: MurmurHash64A (`partition::key_partition`).
    OceanBase,
    /// MariaDB / MySQL: the binary collation's hash (`partition::mariadb_key_partition`).
    MySqlFamily,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// The database and table, as information_schema names them (UTF-8).
    pub schema: String,
    pub name: String,
    pub partitioning: Partitioning,
    /// The generated prefix column that KEY partitioning uses, with its length n.
    pub prefix_column: Option<(String, usize)>,
    pub placement: Placement,
    /// What each cell column may hold (the write rules).
    pub limits: CellLimits,
    /// In a table group (the proxy's marker, or the backend's own TABLEGROUP); a table in no
    /// group is its own group for the transaction guard.
    pub grouped: bool,
    /// The family's `TimeToLive` and `MaxVersions` (`KV_ATTRIBUTES`), for reads as HBase sees
    /// them.
    pub attrs: super::ttl::Attributes,
}

impl TableSchema {
    /// From a table's definition, if information_schema's view of its partitioning agrees:
    /// `live` is (method, expression, partition count) as information_schema reports them.
    pub fn from_definition(
        schema: String,
        name: String,
        def: &CreateTable,
        live: Option<(&str, &str, u32)>,
        placement: Placement,
        blob_limit: u64,
    ) -> Option<TableSchema> {
        let partitioning = def.model_partitioning()?;
        let prefix_column = match &partitioning {
            Partitioning::Key {
                prefix_len: Some(n),
                ..
            } => def.prefix_column().map(|(c, _)| (c.to_string(), *n)),
            _ => None,
        };
        // the definition must still be what the backend has
        let agrees = match (&partitioning, live) {
            (Partitioning::None, None) => true,
            (Partitioning::Key { partitions, .. }, Some((method, expr, count))) => {
                let column = prefix_column.as_ref().map_or("K", |(c, _)| c.as_str());
                method.eq_ignore_ascii_case("KEY")
                    // quoted as the session's sql_mode quotes names (ANSI_QUOTES: "…")
                    && expr
                        .trim_matches(|c| c == '`' || c == '"')
                        .eq_ignore_ascii_case(column)
                    && count == *partitions
            }
            (Partitioning::RangeK { bounds }, Some((method, _, count))) => {
                method.to_ascii_uppercase().starts_with("RANGE") && count as usize == bounds.len()
            }
            _ => false,
        };
        agrees.then_some(TableSchema {
            schema,
            name,
            partitioning,
            prefix_column,
            placement,
            limits: CellLimits::from_definition(def, blob_limit),
            grouped: true,
            attrs: def
                .option("KV_ATTRIBUTES")
                .map(|o| super::ttl::Attributes::parse(&o.value))
                .unwrap_or_default(),
        })
    }

    /// The HBase table (the table group) this column family belongs to: the name before `$`.
    pub fn group(&self) -> &str {
        if !self.grouped {
            return &self.name;
        }
        // (a byte search: a name is short, and `split_once` sets up a searcher for it; every
        // checked write asks this for its place)
        let end = self
            .name
            .bytes()
            .position(|b| b == b'$')
            .unwrap_or(self.name.len());
        self.name.get(..end).unwrap_or(&self.name)
    }

    /// The partition a rowkey (or prefix) is placed in on this backend.
    pub fn partition_of(&self, key: &[u8]) -> Option<u32> {
        match (&self.partitioning, self.placement) {
            (
                Partitioning::Key {
                    prefix_len,
                    partitions,
                },
                Placement::MySqlFamily,
            ) => Some(super::partition::mariadb_key_partition(
                key,
                *prefix_len,
                *partitions,
            )),
            (p, _) => p.partition_of(key),
        }
    }
}

/// A cache key: (database, table), ASCII-folded where the backend compares names that way.
pub type SchemaKey = (Vec<u8>, Vec<u8>);

pub fn key(db: &[u8], table: &[u8], names_ci: bool) -> SchemaKey {
    if names_ci {
        (db.to_ascii_lowercase(), table.to_ascii_lowercase())
    } else {
        (db.to_vec(), table.to_vec())
    }
}

/// What the cache knows of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Read recently: the schema, or None for a table that is not an HBase table (or that
    /// does not exist, or that this process could not read).
    Known(Option<Arc<TableSchema>>),
    /// Not read yet, or too long ago.
    Unknown,
}

/// Entries by `database NUL table` (a name has no NUL): looked up from borrowed names without
/// building a key on the heap. foldhash with a per-process random seed: a fraction of
/// SipHash's cost on every statement's lookup, and still no key collisions a client can plan.
/// Each entry with the clock's reading when it was read (`crate::clock`: a few instructions,
/// where the OS clock cost a lookup about 70).
type Entries = HashMap<Vec<u8>, (Option<Arc<TableSchema>>, u64), foldhash::fast::RandomState>;

/// The map key of (database, table), folded when `ci`, written into `out`.
fn joined_into(db: &[u8], table: &[u8], ci: bool, out: &mut [u8]) -> Option<usize> {
    let n = db.len() + 1 + table.len();
    let out = out.get_mut(..n)?;
    let (a, rest) = out.split_at_mut(db.len());
    a.copy_from_slice(db);
    let (sep, b) = rest.split_first_mut()?;
    *sep = 0;
    b.copy_from_slice(table);
    if ci {
        out.make_ascii_lowercase();
    }
    Some(n)
}

fn joined(db: &[u8], table: &[u8], ci: bool) -> Vec<u8> {
    let mut v = vec![0; db.len() + 1 + table.len()];
    let _ = joined_into(db, table, ci, &mut v);
    v
}

pub struct SchemaCache {
    /// This cache among the process's (`LAST` is told which cache it is of).
    id: u64,
    entries: Mutex<Entries>,
    /// `max_age` in the clock's readings.
    max_age: u64,
    /// Bumped, under the entries' lock, by every change of them (`put`, `clear`).
    generation: AtomicU64,
}

/// The last lookup on this thread that found an entry, and what it found: while the cache's
/// generation is the same, the map is as it was then (every change bumps it under the lock),
/// so the same names find the same entry, if it is not too old by then. Most statements name
/// the table the last one named: they are answered here, without the key's folding, hash and
/// lock.
struct LastLookup {
    cache: u64,
    generation: u64,
    names_ci: bool,
    db: smallvec::SmallVec<[u8; 32]>,
    table: smallvec::SmallVec<[u8; 32]>,
    found: Option<Arc<TableSchema>>,
    at: u64,
}

thread_local! {
    static LAST: std::cell::RefCell<Option<LastLookup>> = const { std::cell::RefCell::new(None) };
}

/// Numbers the caches (`SchemaCache::id`).
static CACHES: AtomicU64 = AtomicU64::new(0);

/// What a caller keeps of one lookup it made (`get_seen`): while nothing was put into the
/// cache or cleared from it since, and the entry is not too old, the same lookup would find
/// the same entry (`still_seen`) — a check of one atomic and the clock, not of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    generation: u64,
    at: u64,
}

impl SchemaCache {
    const MAX_ENTRIES: usize = 10_000;

    pub fn new(max_age: Duration) -> SchemaCache {
        SchemaCache {
            id: CACHES.fetch_add(1, Ordering::Relaxed),
            entries: Mutex::new(HashMap::default()),
            max_age: crate::clock::ticks(max_age),
            generation: AtomicU64::new(0),
        }
    }

    pub fn get(&self, k: &SchemaKey) -> Lookup {
        self.get_named(&k.0, &k.1, false)
    }

    /// `get(&key(db, table, names_ci))`, without allocating for names of usual length.
    pub fn get_named(&self, db: &[u8], table: &[u8], names_ci: bool) -> Lookup {
        self.get_named_seen(db, table, names_ci).0
    }

    /// `get`, with what to keep to know later that the same lookup finds the same (None when
    /// it found nothing to keep).
    pub fn get_seen(&self, k: &SchemaKey) -> (Lookup, Option<Seen>) {
        self.get_named_seen(&k.0, &k.1, false)
    }

    /// True while `get_seen`'s lookup would find what it found when it gave `seen`.
    #[inline]
    pub fn still_seen(&self, seen: Seen) -> bool {
        self.generation.load(Ordering::Acquire) == seen.generation
            && crate::clock::now().wrapping_sub(seen.at) < self.max_age
    }

    fn get_named_seen(&self, db: &[u8], table: &[u8], names_ci: bool) -> (Lookup, Option<Seen>) {
        let generation = self.generation.load(Ordering::Acquire);
        let now = crate::clock::now();
        let last = LAST.try_with(|last| {
            let last = last.try_borrow().ok()?;
            let l = last.as_ref()?;
            let same = l.cache == self.id
                && l.generation == generation
                && l.names_ci == names_ci
                && l.db.as_slice() == db
                && l.table.as_slice() == table
                && now.wrapping_sub(l.at) < self.max_age;
            same.then(|| {
                let seen = Seen {
                    generation,
                    at: l.at,
                };
                (Lookup::Known(l.found.clone()), Some(seen))
            })
        });
        if let Ok(Some(hit)) = last {
            return hit;
        }
        let found = self.get_named_locked(db, table, names_ci);
        if let (Lookup::Known(v), Some(seen)) = &found {
            let _ = LAST.try_with(|last| {
                if let Ok(mut last) = last.try_borrow_mut() {
                    *last = Some(LastLookup {
                        cache: self.id,
                        generation: seen.generation,
                        names_ci,
                        db: db.into(),
                        table: table.into(),
                        found: v.clone(),
                        at: seen.at,
                    });
                }
            });
        }
        found
    }

    /// `get_named_seen` from the map.
    fn get_named_locked(&self, db: &[u8], table: &[u8], names_ci: bool) -> (Lookup, Option<Seen>) {
        let mut buf = [0u8; 256];
        let heap;
        let k: &[u8] = match joined_into(db, table, names_ci, &mut buf) {
            Some(n) => buf.get(..n).unwrap_or_default(),
            None => {
                heap = joined(db, table, names_ci);
                &heap
            }
        };
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(k) {
            // (a reading before the entry's, from a core whose counter lags, is a stale entry)
            Some((v, at)) if crate::clock::now().wrapping_sub(*at) < self.max_age => {
                let seen = Seen {
                    generation: self.generation.load(Ordering::Relaxed),
                    at: *at,
                };
                (Lookup::Known(v.clone()), Some(seen))
            }
            _ => (Lookup::Unknown, None),
        }
    }

    pub fn put(&self, k: SchemaKey, v: Option<Arc<TableSchema>>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= Self::MAX_ENTRIES {
            let (now, max_age) = (crate::clock::now(), self.max_age);
            entries.retain(|_, (_, at)| now.wrapping_sub(*at) < max_age);
            if entries.len() >= Self::MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(joined(&k.0, &k.1, false), (v, crate::clock::now()));
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// DDL through this proxy may have changed a table: every entry is read again.
    pub fn clear(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.clear();
        self.generation.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some_schema() -> Option<Arc<TableSchema>> {
        Some(Arc::new(TableSchema {
            schema: "db".into(),
            name: "t$f".into(),
            partitioning: Partitioning::Key {
                prefix_len: None,
                partitions: 3,
            },
            prefix_column: None,
            placement: Placement::OceanBase,
            limits: Default::default(),
            grouped: true,
            attrs: crate::hbase::ttl::Attributes::default(),
        }))
    }

    #[test]
    fn the_live_partitioning_is_read_however_the_session_quotes_names() {
        let sql = b"CREATE TABLE g$f (K varbinary(16), Q varbinary(8), T bigint, V varbinary(32) NOT NULL, \
            K_PREFIX varbinary(16) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) \
            TABLEGROUP = g PARTITION BY KEY(K_PREFIX) PARTITIONS 13";
        let Ok(Some(crate::sql::ddl::Statement::CreateTable(def))) = crate::sql::ddl::parse(sql)
        else {
            panic!("parsed");
        };
        let schema = |live| {
            TableSchema::from_definition(
                "db".into(),
                "g$f".into(),
                &def,
                live,
                Placement::OceanBase,
                10,
            )
        };
        // backticks, or "…" under ANSI_QUOTES (MariaDB's information_schema follows sql_mode)
        for expr in ["`K_PREFIX`", "\"K_PREFIX\"", "K_PREFIX"] {
            assert!(schema(Some(("KEY", expr, 13))).is_some(), "{expr}");
        }
        // a definition the backend no longer has is not this table's
        assert!(schema(Some(("KEY", "`K`", 13))).is_none());
        assert!(schema(Some(("KEY", "`K_PREFIX`", 7))).is_none());
    }

    #[test]
    fn lookups_by_borrowed_names_find_what_was_put() {
        let c = SchemaCache::new(Duration::from_secs(60));
        c.put(key(b"Db", b"T$f", true), some_schema());
        assert_eq!(
            c.get_named(b"DB", b"t$F", true),
            Lookup::Known(some_schema())
        );
        assert_eq!(
            c.get(&key(b"db", b"t$f", false)),
            Lookup::Known(some_schema())
        );
        // case matters where the backend compares names exactly
        assert_eq!(c.get_named(b"DB", b"t$F", false), Lookup::Unknown);
        // the separator keeps (a, bc) and (ab, c) apart
        c.put(key(b"a", b"bc", false), None);
        assert_eq!(c.get_named(b"ab", b"c", false), Lookup::Unknown);
        assert_eq!(c.get_named(b"a", b"bc", false), Lookup::Known(None));
        // names longer than the stack buffer take the heap path
        let long = vec![b'x'; 300];
        c.put(key(&long, b"t", false), some_schema());
        assert_eq!(
            c.get_named(&long, b"t", false),
            Lookup::Known(some_schema())
        );
        assert_eq!(c.get_named(&long, b"u", false), Lookup::Unknown);
    }

    /// The thread's last lookup answers the same names again only while the same cache is
    /// unchanged: a put (of any table), a clear, another cache, the other case rule, other
    /// names or an aged entry are looked up in the map.
    #[test]
    fn the_last_lookup_answers_only_while_it_would_find_the_same() {
        let other_schema = || {
            let mut s = (*some_schema().expect("a schema")).clone();
            s.grouped = false;
            Some(Arc::new(s))
        };
        let c = SchemaCache::new(Duration::from_secs(60));
        c.put(key(b"db", b"t$f", false), some_schema());
        assert_eq!(
            c.get_named(b"db", b"t$f", false),
            Lookup::Known(some_schema())
        );
        // remembered: a second lookup of the same names finds the same
        assert!(LAST.with(|l| l
            .borrow()
            .as_ref()
            .is_some_and(|l| l.table.as_slice() == b"t$f")));
        assert_eq!(
            c.get_named(b"db", b"t$f", false),
            Lookup::Known(some_schema())
        );
        // a put changes what the names find
        c.put(key(b"db", b"t$f", false), other_schema());
        assert_eq!(
            c.get_named(b"db", b"t$f", false),
            Lookup::Known(other_schema())
        );
        // another cache, with the same generation, does not take this one's answer
        let d = SchemaCache::new(Duration::from_secs(60));
        d.put(key(b"db", b"x", false), None);
        d.put(key(b"db", b"y", false), None);
        assert_eq!(d.get_named(b"db", b"t$f", false), Lookup::Unknown);
        // case: folded names find the entry only under the rule that folds them
        assert_eq!(
            c.get_named(b"db", b"t$f", false),
            Lookup::Known(other_schema())
        );
        assert_eq!(c.get_named(b"db", b"T$F", false), Lookup::Unknown);
        assert_eq!(
            c.get_named(b"DB", b"T$F", true),
            Lookup::Known(other_schema())
        );
        assert_eq!(c.get_named(b"DB", b"T$F", false), Lookup::Unknown);
        // a clear forgets it
        assert_eq!(
            c.get_named(b"db", b"t$f", false),
            Lookup::Known(other_schema())
        );
        c.clear();
        assert_eq!(c.get_named(b"db", b"t$f", false), Lookup::Unknown);
        // an aged entry is not answered
        let young = SchemaCache::new(Duration::ZERO);
        young.put(key(b"db", b"t$f", false), some_schema());
        assert_eq!(young.get_named(b"db", b"t$f", false), Lookup::Unknown);
    }

    #[test]
    fn a_kept_lookup_holds_until_the_cache_changes_or_the_entry_ages() {
        let c = SchemaCache::new(Duration::from_secs(60));
        let k = key(b"db", b"t$f", false);
        assert_eq!(c.get_seen(&k), (Lookup::Unknown, None));
        c.put(k.clone(), some_schema());
        let (found, seen) = c.get_seen(&k);
        assert_eq!(found, Lookup::Known(some_schema()));
        let seen = seen.expect("an entry to keep");
        assert!(c.still_seen(seen));
        // any put (another table's too) or a clear: looked up again
        c.put(key(b"db", b"other", false), None);
        assert!(!c.still_seen(seen));
        let seen = c.get_seen(&k).1.expect("still there");
        assert!(c.still_seen(seen));
        c.clear();
        assert!(!c.still_seen(seen));
        assert_eq!(c.get_seen(&k), (Lookup::Unknown, None));
        // an entry past its age is not kept
        let young = SchemaCache::new(Duration::ZERO);
        young.put(k.clone(), some_schema());
        assert_eq!(young.get_seen(&k), (Lookup::Unknown, None));
    }
}
