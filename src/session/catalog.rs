//! The session's own statements on the backend and the proxy's catalog: the backend's kind,
//! where catalog statements run (the catalog account's connection, else the user's), the named
//! lock that serializes DDL on a table group, and reading what exists (the tables that carry a
//! marker, their definitions, a group's state). Used by the HBase DDL of `hbase.rs` and
//! `alter.rs`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::{End, Session};
use crate::backend::{self, QueryError};
use crate::hbase::backend::{BackendFacts, Flavor};
use crate::hbase::catalog::{self, Catalog, Definition};
use crate::hbase::marker::{self, Marker};
use crate::hbase::rules::GroupState;
use crate::protocol::constants::{er, status};
use crate::protocol::packets::{parse_err_code, ErrorInfo};
use crate::sql::ddl::{self, Statement, TableName};
use crate::sql::scan::Flavor as SqlFlavor;

pub(super) use crate::backend::QueryResult as Internal;

pub(super) type Rows = Vec<crate::backend::Row>;

pub(super) fn text(v: &Option<Vec<u8>>) -> String {
    v.as_deref()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// Column `i` of a row from the backend (absent and NULL both read as empty).
pub(super) fn cell(row: &[Option<Vec<u8>>], i: usize) -> &[u8] {
    row.get(i).and_then(|v| v.as_deref()).unwrap_or_default()
}

/// A column holding HEX() of a name: the name's UTF-8 bytes.
pub(super) fn hex_cell(row: &[Option<Vec<u8>>], i: usize) -> Vec<u8> {
    marker::from_hex(cell(row, i)).unwrap_or_default()
}

pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// ER_DUP_ENTRY-free answers: the documented errors of table-group DDL.
pub(super) const ER_TABLE_EXISTS: u16 = er::TABLE_EXISTS_ERROR;
pub(super) const ER_LOCK_WAIT_TIMEOUT: u16 = er::LOCK_WAIT_TIMEOUT;
pub(super) const ER_BAD_DB: u16 = er::BAD_DB_ERROR;
pub(super) const ER_NO_SUCH_TABLE: u16 = er::NO_SUCH_TABLE;

/// A table that carries a marker, as information_schema listed it.
pub(super) struct Marked {
    /// Schema and name in UTF-8 (as the backend keeps them).
    pub(super) schema: Vec<u8>,
    pub(super) name: Vec<u8>,
    /// Schema and name as the connection's client reads them (its character set).
    pub(super) shown_schema: Vec<u8>,
    pub(super) shown_name: Vec<u8>,
    pub(super) marker: Marker,
    pub(super) group: Vec<u8>,
    pub(super) group_key: Vec<u8>,
}

/// An HBase table's entry: where it is, its group, its marker and comment, its definition.
pub(super) struct Entry {
    pub(super) schema: Vec<u8>,
    pub(super) name: Vec<u8>,
    pub(super) group: Vec<u8>,
    pub(super) group_key: Vec<u8>,
    pub(super) marker: Marker,
    /// The whole comment, as the user's connection read it.
    pub(super) comment: Vec<u8>,
    pub(super) def: Arc<Definition>,
}

impl Session {
    /// What the backend can do. OceanBase names itself in VERSION() and @@version_comment, not
    /// in the greeting (which says only "5.7.25"), so the first session that needs to know asks,
    /// and the answer is kept for the process (every session talks to the same backend). A
    /// failed question is not taken as an answer.
    pub(super) async fn flavor(&mut self) -> Result<Flavor, End> {
        if let Some(f) = self.flavor {
            return Ok(f);
        }
        if let Some(facts) = self.shared.backend_facts() {
            self.learn_flavor(facts);
            return Ok(facts.flavor);
        }
        let kind = self.cfg.hbase.backend_kind;
        let sql = "SELECT CONCAT(VERSION(), ' ', @@version_comment), @@lower_case_table_names";
        let row = match self.rows(sql).await? {
            Ok(r) => r.into_iter().next().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let version = row.first().cloned().flatten().unwrap_or_default();
        let names_ci = row
            .get(1)
            .and_then(|v| v.as_deref())
            .is_some_and(|v| v != b"0");
        let f = Flavor::detect(kind, &version);
        if version.is_empty() {
            // not known: used for this session's DDL only, not taken as the backend's kind
            self.flavor = Some(f);
            return Ok(f);
        }
        info!(flavor = ?f, version = %String::from_utf8_lossy(&version), names_ci, "backend kind");
        let facts = BackendFacts {
            flavor: f,
            names_ci,
        };
        self.shared.set_backend_facts(facts);
        self.learn_flavor(facts);
        Ok(f)
    }

    /// Takes the backend's kind as known, which also settles how it reads SQL and compares
    /// names.
    fn learn_flavor(&mut self, facts: BackendFacts) {
        let f = facts.flavor;
        self.names_ci = facts.names_ci;
        self.flavor = Some(f);
        if self.dialect.flavor == SqlFlavor::MySqlOrOceanBase {
            self.dialect.flavor = match f {
                Flavor::OceanBase | Flavor::SeekDb => SqlFlavor::OceanBase,
                Flavor::MySqlFamily => SqlFlavor::MySql,
            };
        }
    }

    pub(super) fn catalog(&self) -> Catalog<'_> {
        Catalog {
            schema: &self.cfg.hbase.catalog_schema,
        }
    }

    /// Runs one statement on the session's backend connection and reads the whole answer.
    pub(super) async fn internal(&mut self, sql: &[u8]) -> Result<Internal, End> {
        match backend::query(be!(self), self.client_caps, sql).await {
            Ok((result, status)) => {
                if let Some(st) = status {
                    self.last_status = st & !status::MORE_RESULTS_EXISTS;
                }
                Ok(result)
            }
            Err(e) => Err(self.own_command_failed(e).await),
        }
    }

    /// A command of the proxy's own failed on the session's connection: the client is told
    /// and the session ends.
    pub(super) async fn own_command_failed(&mut self, e: QueryError) -> End {
        match e {
            QueryError::Io(_) => self.lose_backend(self.command_frames).await,
            QueryError::Framing(what) => {
                self.backend_protocol_error(self.command_frames, what).await
            }
        }
    }

    pub(super) async fn rows(&mut self, sql: &str) -> Result<Result<Rows, Vec<u8>>, End> {
        Ok(match self.internal(sql.as_bytes()).await? {
            Internal::Rows(r) => Ok(r),
            Internal::Ok(_) => Ok(Vec::new()),
            Internal::Err(e) => Err(e),
        })
    }

    // ---- where catalog statements run ----------------------------------------------------

    /// A catalog account is configured: catalog statements run on the proxy's own connection.
    pub(super) fn own_catalog(&self) -> bool {
        self.shared.catalog_conn.is_some()
    }

    /// Runs a catalog statement: on the catalog account's connection, else on the user's.
    pub(super) async fn on_catalog(&mut self, sql: &str) -> Result<Internal, End> {
        if let Some(r) = self.shared.catalog_query(sql.as_bytes()).await {
            return Ok(match r {
                Ok(x) => x,
                Err(msg) => Internal::Err(
                    ErrorInfo::new(
                        er::CR_SERVER_LOST,
                        "HY000",
                        format!("obkv-proxy: the catalog connection failed ({msg}); nothing was changed"),
                    )
                    .to_packet(),
                ),
            });
        }
        self.internal(sql.as_bytes()).await
    }

    /// Rows of a catalog read. A catalog schema that does not exist yet reads as empty.
    pub(super) async fn catalog_rows(&mut self, sql: &str) -> Result<Result<Rows, Vec<u8>>, End> {
        Ok(match self.on_catalog(sql).await? {
            Internal::Rows(r) => Ok(r),
            Internal::Ok(_) => Ok(Vec::new()),
            Internal::Err(e)
                if matches!(parse_err_code(&e), Some(ER_BAD_DB | ER_NO_SUCH_TABLE)) =>
            {
                Ok(Vec::new())
            }
            Internal::Err(e) => Err(e),
        })
    }

    /// A catalog write. On the user's connection with autocommit off it is committed at once,
    /// so no catalog row lock outlives the statement.
    pub(super) async fn catalog_write(&mut self, sql: &str) -> Result<Internal, End> {
        let r = self.on_catalog(sql).await?;
        if !self.own_catalog() && self.last_status & status::AUTOCOMMIT == 0 {
            self.internal(b"COMMIT").await?;
        }
        Ok(r)
    }

    /// Ends the user's open transaction as any DDL does (MySQL and OceanBase commit before a
    /// DDL statement runs): HBase DDL is DDL, including table-group DDL on backends where the
    /// proxy carries it out.
    pub(super) async fn implicit_commit(&mut self) -> Result<(), End> {
        if self.last_status & status::IN_TRANS != 0 {
            self.internal(b"COMMIT").await?;
        }
        Ok(())
    }

    /// Creates the catalog schema once per process.
    pub(super) async fn ensure_catalog(&mut self) -> Result<Result<(), Vec<u8>>, End> {
        if self.shared.catalog_ready.load(Ordering::Relaxed) {
            return Ok(Ok(()));
        }
        for sql in self.catalog().ensure() {
            if let Internal::Err(e) = self.on_catalog(&sql).await? {
                return Ok(Err(e));
            }
        }
        self.shared.catalog_ready.store(true, Ordering::Relaxed);
        Ok(Ok(()))
    }

    /// The UTF-8 form of bytes the client sent in its character set, as the backend converts
    /// names (asked only for bytes that are not ASCII).
    pub(super) async fn utf8_of(&mut self, raw: &[u8]) -> Result<Vec<u8>, End> {
        if raw.is_ascii() {
            return Ok(raw.to_vec());
        }
        let sql = format!("SELECT HEX({})", catalog::client_text(raw));
        Ok(match self.rows(&sql).await? {
            Ok(rows) => rows
                .first()
                .and_then(|r| marker::from_hex(cell(r, 0)))
                .unwrap_or_else(|| raw.to_vec()),
            Err(_) => raw.to_vec(),
        })
    }

    /// UTF-8 values as the client reads them (its character set), for answers the proxy makes.
    pub(super) async fn in_client_charset(
        &mut self,
        values: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>, End> {
        if values.iter().all(|v| v.is_ascii()) {
            return Ok(values);
        }
        let parts: Vec<String> = values
            .iter()
            .map(|v| format!("SELECT _utf8mb4 {}", catalog::hex(v)))
            .collect();
        match self.rows(&parts.join(" UNION ALL ")).await? {
            Ok(rows) if rows.len() == values.len() => {
                Ok(rows.iter().map(|r| cell(r, 0).to_vec()).collect())
            }
            _ => Ok(values),
        }
    }

    // ---- the named lock that serializes DDL on a table group ----------------------------

    /// Takes the table group's lock on the user's connection (named locks are not
    /// transactional: the user's transaction neither sees nor holds it). Err: the ERR packet.
    ///
    /// One `GET_LOCK` waits at most until a second before the backend's own statement timeout
    /// (seekdb's `ob_query_timeout`, 10 s by default, MariaDB's `max_statement_time`), so a
    /// waiter gets 1205 after `hbase.ddl_lock_timeout_ms` and never the backend's 1317; waits
    /// are not cut shorter (seekdb answers many short `GET_LOCK`s contending for one lock with
    /// 4016 and leaves the session needing a rollback, 6002). On OceanBase, whose named locks
    /// outlive their holder (a restarted backend, a proxy killed mid-DDL, a vanished client
    /// keep them for minutes), before each wait the lock's holder is looked up: when its
    /// session is gone, the lock moves to the next epoch's name (`lock_epochs` in the catalog,
    /// advanced once by compare-and-set), which every proxy reads before each wait.
    pub(super) async fn lock_group(
        &mut self,
        key: &[u8],
        shown: &[u8],
    ) -> Result<Result<String, Vec<u8>>, End> {
        let base = marker::lock_name(&self.cfg.hbase.catalog_schema, key);
        let ms = self.cfg.hbase.ddl_lock_timeout_ms;
        let deadline = Instant::now() + Duration::from_millis(ms);
        let flavor = self.flavor().await?;
        let outliving = matches!(flavor, Flavor::OceanBase | Flavor::SeekDb);
        if outliving && !self.own_catalog() {
            // the epoch is read on this connection: not inside the user's transaction (the
            // DDL commits it anyway)
            self.implicit_commit().await?;
        }
        let longest = self.longest_wait(flavor).await?;
        loop {
            let epoch = if outliving {
                match self.lock_epoch(&base).await? {
                    Ok(e) => e,
                    Err(e) => return Ok(Err(e)),
                }
            } else {
                0
            };
            let name = if epoch == 0 {
                base.clone()
            } else {
                format!("{base}:{epoch}")
            };
            if outliving {
                if let Some(holder) = self.lock_holder_gone(&name).await? {
                    if let Err(e) = self.ensure_catalog().await? {
                        return Ok(Err(e));
                    }
                    let bump = self.catalog().bump_lock_epoch(&base, epoch);
                    if let Internal::Err(e) = self.catalog_write(&bump).await? {
                        return Ok(Err(e));
                    }
                    warn!(
                        lock = %name,
                        holder = %lossy(&holder),
                        "a table group's DDL lock was held by a session that is gone; moved to the next epoch"
                    );
                    continue;
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = left.min(longest).as_secs_f64();
            let sql = format!("SELECT GET_LOCK('{name}', {wait:.3})");
            let got = match self.rows(&sql).await? {
                Ok(rows) => rows.first().is_some_and(|r| cell(r, 0) == b"1"),
                Err(e) => return Ok(Err(e)),
            };
            if got {
                // the epoch may have moved while this wait went on
                let moved = outliving
                    && match self.lock_epoch(&base).await? {
                        Ok(now) => now != epoch,
                        Err(e) => {
                            self.unlock(&name).await?;
                            return Ok(Err(e));
                        }
                    };
                if !moved {
                    return Ok(Ok(name));
                }
                self.unlock(&name).await?;
                continue;
            }
            if Instant::now() >= deadline {
                let secs = ms.div_ceil(1_000).max(1);
                return Ok(Err(ErrorInfo::new(
                    ER_LOCK_WAIT_TIMEOUT,
                    "HY000",
                    format!(
                        "obkv-proxy: another DDL on table group '{}' did not finish within {secs} s (hbase.ddl_lock_timeout_ms); try again",
                        lossy(shown)
                    ),
                )
                .to_packet()));
            }
        }
    }

    /// The longest one `GET_LOCK` may wait on this connection: a second less than the
    /// backend's statement timeout (at least half of it), unbounded when there is none.
    async fn longest_wait(&mut self, flavor: Flavor) -> Result<Duration, End> {
        let (sql, unit_us) = match flavor {
            Flavor::OceanBase | Flavor::SeekDb => ("SELECT @@ob_query_timeout", 1.0),
            Flavor::MySqlFamily => ("SELECT @@max_statement_time", 1e6),
        };
        let limit_us = match self.rows(sql).await? {
            Ok(rows) => rows
                .first()
                .and_then(|r| lossy(cell(r, 0)).parse::<f64>().ok())
                .map(|v| v * unit_us)
                .filter(|v| v.is_finite() && *v > 0.0),
            // a backend without the variable (MySQL has no max_statement_time)
            Err(_) => None,
        };
        Ok(match limit_us {
            Some(us) => {
                let limit = Duration::from_secs_f64(us / 1e6);
                limit.saturating_sub(Duration::from_secs(1)).max(limit / 2)
            }
            None => Duration::from_secs(u64::from(u32::MAX)),
        })
    }

    /// The epoch of a table group's lock (0 before any move).
    async fn lock_epoch(&mut self, base: &str) -> Result<Result<u64, Vec<u8>>, End> {
        Ok(self
            .catalog_rows(&self.catalog().lock_epoch(base))
            .await?
            .map(|rows| {
                rows.first()
                    .and_then(|r| lossy(cell(r, 0)).parse().ok())
                    .unwrap_or(0)
            }))
    }

    /// The holder of a named lock, when it is a session the backend no longer has. None when
    /// the lock is free, its holder is alive, or this account cannot see every session (no
    /// PROCESS privilege: another user's live session would look gone). A live session that
    /// holds a lock is always in the process list; a new session after a restart that got the
    /// dead holder's id makes the holder look alive: the waiter then waits (1205), it never
    /// moves a live holder's lock.
    async fn lock_holder_gone(&mut self, name: &str) -> Result<Option<Vec<u8>>, End> {
        let sql = format!(
            "SELECT h.id, (SELECT COUNT(*) FROM information_schema.PROCESSLIST p WHERE p.ID = h.id), \
             (SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'PROCESS' \
             AND GRANTEE = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', \
             SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')) \
             FROM (SELECT IS_USED_LOCK('{name}') id) h"
        );
        let rows = match self.rows(&sql).await? {
            Ok(r) => r,
            Err(_) => return Ok(None),
        };
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let (holder, alive, sees_all) = (cell(r, 0), cell(r, 1), cell(r, 2));
        if r.first().is_none_or(Option::is_none) || alive != b"0" || sees_all == b"0" {
            return Ok(None);
        }
        Ok(Some(holder.to_vec()))
    }

    pub(super) async fn unlock(&mut self, name: &str) -> Result<(), End> {
        self.internal(format!("SELECT RELEASE_LOCK('{name}')").as_bytes())
            .await
            .map(drop)
    }

    // ---- reading what exists ------------------------------------------------------------

    /// The tables that carry a marker. `everyone`: as the catalog account sees them (every
    /// table, when it has the rights) — for decisions; otherwise as the user sees them.
    pub(super) async fn marked_tables(
        &mut self,
        everyone: bool,
    ) -> Result<Result<Vec<Marked>, Vec<u8>>, End> {
        let sql = catalog::marked_tables();
        let rows = if everyone {
            self.catalog_rows(&sql).await?
        } else {
            self.rows(&sql).await?
        };
        let rows = match rows {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let Some((m, _)) = Marker::find(cell(&r, 2)) else {
                continue;
            };
            let name = hex_cell(&r, 1);
            let Some(group) = m.group_of(&name) else {
                continue;
            };
            out.push(Marked {
                schema: hex_cell(&r, 0),
                group_key: marker::fold(&group, self.names_ci),
                group,
                name,
                shown_schema: cell(&r, 3).to_vec(),
                shown_name: cell(&r, 4).to_vec(),
                marker: m,
            });
        }
        Ok(Ok(out))
    }

    /// A table's definition by DDL id: from the process's cache, else the catalog. A text that
    /// does not hash to its id was not written by a proxy: it is ignored and reported.
    pub(super) async fn definition(&mut self, id: &str) -> Result<Option<Arc<Definition>>, End> {
        if let Some(d) = self.shared.definitions.get(id) {
            return Ok(Some(d));
        }
        let sql = self.catalog().ddl(id);
        let ddl = match self.catalog_rows(&sql).await? {
            Ok(rows) => match rows.first() {
                Some(r) => cell(r, 0).to_vec(),
                None => {
                    warn!(id, "catalog disagreement: an HBase table's definition is missing from the catalog");
                    return Ok(None);
                }
            },
            Err(_) => return Ok(None),
        };
        if marker::ddl_id(&ddl) != id {
            warn!(id, "catalog disagreement: a stored definition does not match its id (altered by hand?); ignored");
            return Ok(None);
        }
        let Ok(Some(Statement::CreateTable(table))) = ddl::parse(&ddl) else {
            return Ok(None);
        };
        let d = Arc::new(Definition { ddl, table: *table });
        self.shared.definitions.put(id.to_string(), d.clone());
        Ok(Some(d))
    }

    /// The entry of an HBase table, looked up as the backend resolves the name for this user
    /// (current database, case rules, grants): None for a table that is not one.
    pub(super) async fn catalog_entry(&mut self, t: &TableName) -> Result<Option<Entry>, End> {
        let rows = match self.rows(&catalog::table_comment(t)).await? {
            Ok(r) => r,
            Err(_) => return Ok(None),
        };
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let comment = cell(r, 2).to_vec();
        let Some((m, _)) = Marker::find(&comment) else {
            return Ok(None);
        };
        let name = hex_cell(r, 1);
        let Some(group) = m.group_of(&name) else {
            return Ok(None);
        };
        let Some(def) = self.definition(&m.ddl_id).await? else {
            return Ok(None);
        };
        Ok(Some(Entry {
            schema: hex_cell(r, 0),
            group_key: marker::fold(&group, self.names_ci),
            group,
            name,
            marker: m,
            comment,
            def,
        }))
    }

    /// Reads the definitions of these tables into the process's cache (before a LOCK TABLES,
    /// after which the catalog cannot be read on this connection).
    pub(super) async fn read_catalog_entries(&mut self, tables: &[TableName]) -> Result<(), End> {
        self.flavor().await?;
        for t in tables {
            self.catalog_entry(t).await?;
        }
        Ok(())
    }

    /// Whether the group exists, and its families other than `except` (schema, name in UTF-8)
    /// with their partitioning.
    pub(super) async fn group_state(
        &mut self,
        key: &[u8],
        except: Option<(&[u8], &[u8])>,
    ) -> Result<Result<(GroupState, Vec<Marked>), Vec<u8>>, End> {
        let native = self.flavor().await?.native_tablegroups();
        let members = match self.marked_tables(true).await? {
            Ok(m) => m,
            Err(e) => return Ok(Err(e)),
        };
        let ci = self.names_ci;
        let same = |a: &[u8], b: &[u8]| marker::fold(a, ci) == marker::fold(b, ci);
        let members: Vec<Marked> = members
            .into_iter()
            .filter(|m| m.group_key == key)
            .filter(|m| !except.is_some_and(|(s, n)| same(&m.schema, s) && same(&m.name, n)))
            .collect();
        let exists = native
            || !members.is_empty()
            || match self.catalog_rows(&self.catalog().group(key)).await? {
                Ok(rows) => !rows.is_empty(),
                Err(e) => return Ok(Err(e)),
            };
        let mut families = Vec::new();
        for m in &members {
            let family = m
                .name
                .iter()
                .position(|&b| b == b'$')
                .and_then(|i| m.name.get(i + 1..))
                .map(lossy)
                .unwrap_or_default();
            let partition = match self.definition(&m.marker.ddl_id).await? {
                Some(d) => d.table.partition.clone(),
                None => None,
            };
            families.push((family, partition));
        }
        Ok(Ok((GroupState { exists, families }, members)))
    }
}
