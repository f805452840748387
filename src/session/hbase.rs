//! Carrying out HBase DDL for a session: the rules (`hbase::rules`), the marker that records
//! membership in the table itself (`hbase::marker`), the catalog schema (`hbase::catalog`) and
//! the per-backend translation (`hbase::translate`) meet here.
//!
//! - The user's DDL runs on the user's own connection (the user's privileges apply), with the
//!   marker spliced into its COMMENT: membership is atomic with the DDL.
//! - Catalog statements (table groups, DDL texts) run on the catalog account's connection when
//!   one is configured, else on the user's connection after the implicit commit DDL makes.
//! - DDL on one table group is serialized across every proxy by a named lock (GET_LOCK) taken on
//!   the user's connection for the length of the statement.
//! - Nothing is half-done: if the backend refuses a step, the steps before it are undone.

use crate::protocol::constants::er;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::{End, Session};
use crate::backend::{self, QueryError};
use crate::engine::ddl as ddl_policy;
use crate::hbase::backend::{BackendFacts, Flavor};
use crate::hbase::catalog::{self, like, Catalog, Definition};
use crate::hbase::live;
use crate::hbase::marker::{self, Marker};
use crate::hbase::rules::{self, GroupState, RuleConfig};
use crate::hbase::translate;
use crate::protocol::constants::status;
use crate::protocol::packets::{ok_packet, parse_err_code, ErrorInfo, OkInfo};
use crate::sql::ddl::{self, AlterAction, CreateTable, Statement, TableName};

use crate::protocol::response::ResponseKind;
use crate::sql::scan::Flavor as SqlFlavor;
use crate::sql::splice::Splice;

pub(super) use crate::backend::QueryResult as Internal;

/// A warning kept for the next SHOW WARNINGS: (level, code, message).
pub(super) type Warning = (String, u16, String);

type Rows = Vec<crate::backend::Row>;

fn text(v: &Option<Vec<u8>>) -> String {
    v.as_deref()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// Column `i` of a row from the backend (absent and NULL both read as empty).
pub(super) fn cell(row: &[Option<Vec<u8>>], i: usize) -> &[u8] {
    row.get(i).and_then(|v| v.as_deref()).unwrap_or_default()
}

/// A column holding HEX() of a name: the name's UTF-8 bytes.
fn hex_cell(row: &[Option<Vec<u8>>], i: usize) -> Vec<u8> {
    marker::from_hex(cell(row, i)).unwrap_or_default()
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// ER_DUP_ENTRY-free answers: the documented errors of table-group DDL.
const ER_TABLE_EXISTS: u16 = er::TABLE_EXISTS_ERROR;
const ER_LOCK_WAIT_TIMEOUT: u16 = er::LOCK_WAIT_TIMEOUT;
const ER_BAD_DB: u16 = er::BAD_DB_ERROR;
const ER_NO_SUCH_TABLE: u16 = er::NO_SUCH_TABLE;

/// A group's UTF-8 name and its tables, (database, table) as the client reads them.
type GroupListing = (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

/// A table that carries a marker, as information_schema listed it.
struct Marked {
    /// Schema and name in UTF-8 (as the backend keeps them).
    schema: Vec<u8>,
    name: Vec<u8>,
    /// Schema and name as the connection's client reads them (its character set).
    shown_schema: Vec<u8>,
    shown_name: Vec<u8>,
    marker: Marker,
    group: Vec<u8>,
    group_key: Vec<u8>,
}

/// An HBase table's entry: where it is, its group, its marker and comment, its definition.
struct Entry {
    schema: Vec<u8>,
    name: Vec<u8>,
    group: Vec<u8>,
    group_key: Vec<u8>,
    marker: Marker,
    /// The whole comment, as the user's connection read it.
    comment: Vec<u8>,
    def: Arc<Definition>,
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
        let kind = self.shared.config.hbase.backend_kind;
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

    fn catalog(&self) -> Catalog<'_> {
        Catalog {
            schema: &self.shared.config.hbase.catalog_schema,
        }
    }

    fn rule_config(&self) -> RuleConfig {
        let h = &self.shared.config.hbase;
        RuleConfig {
            require_tablegroup_option: h.require_tablegroup_option,
            multiple_families: h.multiple_families,
        }
    }

    /// Runs one statement on the session's backend connection and reads the whole answer.
    pub(super) async fn internal(&mut self, sql: &[u8]) -> Result<Internal, End> {
        match backend::query(&mut self.backend, self.client_caps, sql).await {
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

    pub(super) async fn answer_ok(&mut self, affected: u64, warnings: u16) -> Result<(), End> {
        let p = ok_packet(affected, 0, self.last_status, warnings);
        let seq = self.command_frames;
        self.client
            .send_packet(seq, &p)
            .await
            .map(drop)
            .map_err(|_| End::ClientGone)
    }

    pub(super) async fn answer_raw(&mut self, packet: &[u8]) -> Result<(), End> {
        let seq = self.command_frames;
        self.client
            .send_packet(seq, packet)
            .await
            .map(drop)
            .map_err(|_| End::ClientGone)
    }

    /// IF [NOT] EXISTS turns an error into a note and an OK, as MySQL does for tables.
    async fn answer_error_or_note(&mut self, soften: bool, e: ErrorInfo) -> Result<(), End> {
        if soften {
            self.pending_warnings
                .push(("Note".into(), e.code, e.message));
            return self.answer_ok(0, 1).await;
        }
        self.answer_error(e).await
    }

    /// An engine verdict on HBase DDL carried out: its notes are kept for SHOW WARNINGS; the
    /// refusal, if any, is returned for the caller to answer.
    fn carry(&mut self, v: ddl_policy::DdlVerdict) -> Option<ErrorInfo> {
        for f in v.notes {
            self.pending_warnings
                .push((f.level.name().into(), f.code, f.message));
        }
        v.refuse
    }

    fn enforcement(&self) -> rules::Enforcement {
        self.shared.config.hbase.enforcement
    }

    /// Backend warnings of the statement just run, kept before the catalog writes reset them.
    async fn keep_backend_warnings(&mut self, ok: &OkInfo) -> Result<(), End> {
        if ok.warnings == 0 {
            return Ok(());
        }
        if let Ok(rows) = self.rows("SHOW WARNINGS").await? {
            for r in rows {
                let code = lossy(cell(&r, 1)).parse().unwrap_or(0);
                self.pending_warnings
                    .push((lossy(cell(&r, 0)), code, lossy(cell(&r, 2))));
            }
        }
        Ok(())
    }

    // ---- where catalog statements run ----------------------------------------------------

    /// A catalog account is configured: catalog statements run on the proxy's own connection.
    fn own_catalog(&self) -> bool {
        self.shared.catalog_conn.is_some()
    }

    /// Runs a catalog statement: on the catalog account's connection, else on the user's.
    async fn on_catalog(&mut self, sql: &str) -> Result<Internal, End> {
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
    async fn catalog_rows(&mut self, sql: &str) -> Result<Result<Rows, Vec<u8>>, End> {
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
    async fn catalog_write(&mut self, sql: &str) -> Result<Internal, End> {
        let r = self.on_catalog(sql).await?;
        if !self.own_catalog() && self.last_status & status::AUTOCOMMIT == 0 {
            self.internal(b"COMMIT").await?;
        }
        Ok(r)
    }

    /// Ends the user's open transaction as any DDL does (MySQL and OceanBase commit before a
    /// DDL statement runs): HBase DDL is DDL, including table-group DDL on backends where the
    /// proxy carries it out.
    async fn implicit_commit(&mut self) -> Result<(), End> {
        if self.last_status & status::IN_TRANS != 0 {
            self.internal(b"COMMIT").await?;
        }
        Ok(())
    }

    /// Creates the catalog schema once per process.
    async fn ensure_catalog(&mut self) -> Result<Result<(), Vec<u8>>, End> {
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
    async fn utf8_of(&mut self, raw: &[u8]) -> Result<Vec<u8>, End> {
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
    async fn in_client_charset(&mut self, values: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, End> {
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
    async fn lock_group(
        &mut self,
        key: &[u8],
        shown: &[u8],
    ) -> Result<Result<String, Vec<u8>>, End> {
        let base = marker::lock_name(&self.shared.config.hbase.catalog_schema, key);
        let ms = self.shared.config.hbase.ddl_lock_timeout_ms;
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

    async fn unlock(&mut self, name: &str) -> Result<(), End> {
        self.internal(format!("SELECT RELEASE_LOCK('{name}')").as_bytes())
            .await
            .map(drop)
    }

    // ---- reading what exists ------------------------------------------------------------

    /// The tables that carry a marker. `everyone`: as the catalog account sees them (every
    /// table, when it has the rights) — for decisions; otherwise as the user sees them.
    async fn marked_tables(&mut self, everyone: bool) -> Result<Result<Vec<Marked>, Vec<u8>>, End> {
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
    async fn catalog_entry(&mut self, t: &TableName) -> Result<Option<Entry>, End> {
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
    async fn group_state(
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

    // ---- statements ---------------------------------------------------------------------

    pub(super) async fn on_hbase(&mut self, stmt: Statement) -> Result<(), End> {
        // the backend's kind and name comparison decide every lookup below
        self.flavor().await?;
        match stmt {
            Statement::CreateTablegroup {
                name,
                raw_name,
                if_not_exists,
            } => {
                self.create_tablegroup(&name, &raw_name, if_not_exists)
                    .await
            }
            Statement::DropTablegroup {
                name,
                raw_name,
                if_exists,
            } => self.drop_tablegroup(&name, &raw_name, if_exists).await,
            Statement::ShowTablegroups { like } => self.show_tablegroups(like.as_deref()).await,
            Statement::CreateTable(t) => {
                let sql = self.command.get(1..).unwrap_or_default().to_vec();
                self.create_table(*t, sql).await
            }
            Statement::CreateTableLike {
                name,
                name_span,
                if_not_exists,
                source,
            } => {
                self.create_table_like(&name, name_span, if_not_exists, &source)
                    .await
            }
            // the marker goes with the table: nothing to write
            Statement::DropTable { .. } | Statement::TruncateTable(_) => {
                self.forward(ResponseKind::Query).await.map(drop)
            }
            Statement::RenameTable(pairs) => self.rename_tables(&pairs).await,
            Statement::AlterTable { table, actions } => self.alter_table(&table, &actions).await,
            Statement::CreateIndex { table, kind } => {
                let v = ddl_policy::create_index(&table, &kind, self.enforcement());
                match self.carry(v) {
                    Some(e) => self.answer_error(e).await,
                    None => self.forward_counting_warnings().await,
                }
            }
            Statement::ShowCreateTable(t) => self.show_create_table(&t).await,
        }
    }

    async fn create_tablegroup(
        &mut self,
        name: &str,
        raw: &[u8],
        if_not_exists: bool,
    ) -> Result<(), End> {
        if self.flavor().await?.native_tablegroups() {
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        self.implicit_commit().await?;
        if let Err(e) = self.ensure_catalog().await? {
            return self.answer_raw(&e).await;
        }
        let group = self.utf8_of(raw).await?;
        let key = marker::fold(&group, self.names_ci);
        let sql = self.catalog().insert_group(&key, &group);
        match self.catalog_write(&sql).await? {
            Internal::Err(e) => self.answer_raw(&e).await,
            Internal::Ok(ok) if ok.affected_rows == 0 => {
                let e = ErrorInfo::new(
                    ER_TABLE_EXISTS,
                    "42S01",
                    format!("Table group '{name}' already exists"),
                );
                self.answer_error_or_note(if_not_exists, e).await
            }
            _ => {
                info!(group = name, "table group created (kept in the catalog)");
                self.answer_ok(0, 0).await
            }
        }
    }

    async fn drop_tablegroup(
        &mut self,
        name: &str,
        raw: &[u8],
        if_exists: bool,
    ) -> Result<(), End> {
        let group = self.utf8_of(raw).await?;
        let key = marker::fold(&group, self.names_ci);
        let lock = match self.lock_group(&key, &group).await? {
            Ok(l) => l,
            Err(e) => return self.answer_raw(&e).await,
        };
        let done = self.drop_tablegroup_locked(name, &key, if_exists).await;
        let unlocked = self.unlock(&lock).await;
        done?;
        unlocked
    }

    async fn drop_tablegroup_locked(
        &mut self,
        name: &str,
        key: &[u8],
        if_exists: bool,
    ) -> Result<(), End> {
        let native = self.flavor().await?.native_tablegroups();
        if !self.own_catalog() && !native {
            // the catalog is read and written on this connection: outside the user's
            // transaction, which DDL ends anyway
            self.implicit_commit().await?;
        }
        let members = match self.marked_tables(true).await? {
            Ok(m) => m,
            Err(e) => return self.answer_raw(&e).await,
        };
        let members: Vec<Marked> = members.into_iter().filter(|m| m.group_key == key).collect();
        if !members.is_empty() {
            // name only the tables this user may see
            let visible: HashSet<(Vec<u8>, Vec<u8>)> = match self.marked_tables(false).await? {
                Ok(v) => v.into_iter().map(|m| (m.schema, m.name)).collect(),
                Err(_) => HashSet::new(),
            };
            let (seen, hidden): (Vec<&Marked>, Vec<&Marked>) = members
                .iter()
                .partition(|m| visible.contains(&(m.schema.clone(), m.name.clone())));
            let mut names: Vec<String> = seen
                .iter()
                .map(|m| format!("{}.{}", lossy(&m.schema), lossy(&m.name)))
                .collect();
            if !hidden.is_empty() {
                names.push(format!("{} you may not see", hidden.len()));
            }
            return self
                .answer_error(ErrorInfo::new(
                    rules::ER_NOT_SUPPORTED,
                    "42000",
                    format!("Cannot drop table group '{name}': it still has tables ({}); drop them first", names.join(", ")),
                ))
                .await;
        }
        if native {
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        self.implicit_commit().await?;
        let sql = self.catalog().delete_group(key);
        match self.catalog_write(&sql).await? {
            Internal::Err(e)
                if !matches!(parse_err_code(&e), Some(ER_BAD_DB | ER_NO_SUCH_TABLE)) =>
            {
                self.answer_raw(&e).await
            }
            Internal::Err(_) => {
                let e = ErrorInfo::new(
                    rules::ER_NO_SUCH_TABLEGROUP,
                    "42S02",
                    format!("Unknown table group '{name}'"),
                );
                self.answer_error_or_note(if_exists, e).await
            }
            Internal::Ok(ok) if ok.affected_rows == 0 => {
                let e = ErrorInfo::new(
                    rules::ER_NO_SUCH_TABLEGROUP,
                    "42S02",
                    format!("Unknown table group '{name}'"),
                );
                self.answer_error_or_note(if_exists, e).await
            }
            _ => self.answer_ok(0, 0).await,
        }
    }

    /// SHOW TABLEGROUPS from what exists: the catalog's table groups and the tables that carry
    /// a marker, as far as this user may see them (a group none of whose tables the user may see
    /// shows as if empty).
    async fn show_tablegroups(&mut self, pattern: Option<&str>) -> Result<(), End> {
        if self.flavor().await?.native_tablegroups() {
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        let groups: Vec<Vec<u8>> = match self.catalog_rows(&self.catalog().all_groups()).await? {
            Ok(rows) => rows.iter().map(|r| hex_cell(r, 0)).collect(),
            Err(e) => return self.answer_raw(&e).await,
        };
        let tables = match self.marked_tables(false).await? {
            Ok(t) => t,
            Err(e) => return self.answer_raw(&e).await,
        };
        // (group key) → (group's UTF-8 name, [(db, table) as the client reads them])
        let mut by_key: std::collections::BTreeMap<Vec<u8>, GroupListing> = Default::default();
        for g in groups {
            let key = marker::fold(&g, self.names_ci);
            by_key.entry(key).or_insert((g, Vec::new()));
        }
        let mut unrecorded = Vec::new();
        for t in tables {
            by_key
                .entry(t.group_key.clone())
                .or_insert_with(|| {
                    unrecorded.push((t.group_key.clone(), t.group.clone()));
                    (t.group.clone(), Vec::new())
                })
                .1
                .push((t.shown_schema, t.shown_name));
        }
        // A table whose group has no catalog row (the row was deleted by hand, or the table
        // was restored straight into the backend): the group exists as far as its tables say;
        // reported, and repaired where the catalog account can write without touching the
        // user's session.
        for (key, group) in unrecorded {
            warn!(group = %lossy(&group), "catalog disagreement: HBase tables of a table group the catalog does not list; recording the group");
            if self.own_catalog() && self.ensure_catalog().await?.is_ok() {
                let sql = self.catalog().insert_group(&key, &group);
                self.on_catalog(&sql).await?;
            }
        }
        let names: Vec<Vec<u8>> = by_key.values().map(|(g, _)| g.clone()).collect();
        let shown = self.in_client_charset(names).await?;
        let mut out: Vec<Vec<Option<Vec<u8>>>> = Vec::new();
        for ((_, (_, mut members)), group) in by_key.into_iter().zip(shown) {
            if !pattern.is_none_or(|p| like(p, &lossy(&group))) {
                continue;
            }
            members.sort();
            if members.is_empty() {
                out.push(vec![Some(group.clone()), None, None]);
            }
            for (db, table) in members {
                out.push(vec![Some(group.clone()), Some(table), Some(db)]);
            }
        }
        self.answer_rows(&["Tablegroup_name", "Table_name", "Database_name"], &out)
            .await
    }

    /// CREATE TABLE of an HBase table (or of a K/Q/T/V table without `$`, which runs with a
    /// warning). `sql` is the statement to carry out (the user's, or a LIKE made concrete).
    async fn create_table(&mut self, t: CreateTable, sql: Vec<u8>) -> Result<(), End> {
        if !t.name.is_hbase_name() && t.tablegroup().is_none() {
            // not an HBase table, but it has K, Q, T, V: it runs, with a warning
            match self.internal(&sql).await? {
                Internal::Err(e) => return self.answer_raw(&e).await,
                Internal::Ok(ok) => self.keep_backend_warnings(&ok).await?,
                Internal::Rows(_) => {}
            }
            self.pending_warnings.push((
                "Warning".into(),
                rules::ER_WRONG_TABLE_NAME,
                format!("OBKV-HBase rule R1: table '{}' has columns K, Q, T, V but no '$' in its name; HBase clients look tables up as group$family", t.name),
            ));
            let n = self.pending_warnings.len() as u16;
            return self.answer_ok(0, n).await;
        }
        // the group: the part of the name before '$' (as the backend will store it), else the
        // TABLEGROUP option
        let raw_group = match memchr::memchr(b'$', &t.name.raw_name) {
            Some(i) if i > 0 => t.name.raw_name.get(..i).unwrap_or_default().to_vec(),
            _ => t.tablegroup().unwrap_or_default().as_bytes().to_vec(),
        };
        let group = self.utf8_of(&raw_group).await?;
        let key = marker::fold(&group, self.names_ci);
        let lock = match self.lock_group(&key, &group).await? {
            Ok(l) => l,
            Err(e) => return self.answer_raw(&e).await,
        };
        let done = self.create_table_locked(t, sql, group, key).await;
        let unlocked = self.unlock(&lock).await;
        done?;
        unlocked
    }

    async fn create_table_locked(
        &mut self,
        t: CreateTable,
        sql: Vec<u8>,
        group: Vec<u8>,
        key: Vec<u8>,
    ) -> Result<(), End> {
        if !self.own_catalog() {
            self.implicit_commit().await?;
        }
        // where the table will be, in UTF-8 (to leave it out of its own group's families)
        let schema_expr = match &t.name.raw_schema {
            Some(s) => catalog::client_text(s),
            None => "DATABASE()".into(),
        };
        let q = format!(
            "SELECT HEX({schema_expr}), HEX({}), DATABASE()",
            catalog::client_text(&t.name.raw_name)
        );
        let row = match self.rows(&q).await? {
            Ok(rows) => rows.into_iter().next().unwrap_or_default(),
            Err(e) => return self.answer_raw(&e).await,
        };
        if row.first().is_none_or(Option::is_none) {
            return self
                .answer_error(ErrorInfo::new(
                    er::NO_DB_ERROR,
                    "3D000",
                    "No database selected",
                ))
                .await;
        }
        let (schema, name) = (hex_cell(&row, 0), hex_cell(&row, 1));
        let current_db = cell(&row, 2).to_vec();
        let state = match self.group_state(&key, Some((&schema, &name))).await? {
            Ok((s, _)) => s,
            Err(e) => return self.answer_raw(&e).await,
        };
        let v = ddl_policy::create_table(&t, self.rule_config(), &state, self.enforcement());
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
        if let Err(e) = self.ensure_catalog().await? {
            return self.answer_raw(&e).await;
        }
        let id = marker::ddl_id(&sql);
        let m = Marker {
            ddl_id: id.clone(),
            group: t.name.hbase_parts().is_none().then(|| group.clone()),
        };
        let edit = match marker::create_edit(&t, &m) {
            Ok(e) => e,
            Err(marker::CannotMark(why)) => {
                return self
                    .answer_error(ErrorInfo::new(rules::ER_NOT_SUPPORTED, "42000", why))
                    .await
            }
        };
        // the definition first: when the table appears, its definition is there
        if let Internal::Err(e) = self
            .catalog_write(&self.catalog().insert_ddl(&id, &sql))
            .await?
        {
            self.pending_warnings.clear();
            return self.answer_raw(&e).await;
        }
        let flavor = self.flavor().await?;
        let tr = translate::create_table(&t, &sql, flavor, &current_db, Some(edit));
        let created = match self.internal(&tr.create).await? {
            Internal::Err(e) => {
                self.pending_warnings.clear();
                return self.answer_raw(&e).await;
            }
            Internal::Ok(ok) => ok,
            Internal::Rows(_) => OkInfo::default(),
        };
        let before = self.pending_warnings.len();
        self.keep_backend_warnings(&created).await?;
        // IF NOT EXISTS on a table that exists: the backend's note 1050, nothing created
        let existed = t.if_not_exists
            && self
                .pending_warnings
                .get(before..)
                .is_some_and(|w| w.iter().any(|(_, code, _)| *code == ER_TABLE_EXISTS));
        if existed {
            let n = self.pending_warnings.len() as u16;
            return self.answer_ok(0, n).await;
        }
        let mut drop_sql = b"DROP TABLE ".to_vec();
        drop_sql.extend_from_slice(&catalog::qualified_bytes(Some(&current_db), &t.name));
        for step in &tr.after {
            if let Internal::Err(e) = self.internal(step).await? {
                // the table goes again, named with the very bytes that created it
                self.internal(&drop_sql).await?;
                self.pending_warnings.clear();
                return self.answer_raw(&e).await;
            }
        }
        self.shared.definitions.put(
            id,
            Arc::new(Definition {
                ddl: sql,
                table: t.clone(),
            }),
        );
        info!(table = %t.name, group = %lossy(&group), "HBase table created");
        let n = self.pending_warnings.len() as u16;
        self.answer_ok(0, n).await
    }

    /// CREATE TABLE … LIKE an HBase table: the source's definition under the new name, through
    /// the same rules and translation as any CREATE TABLE (the backend's own LIKE would copy
    /// neither MariaDB's triggers nor a definition the rules have seen).
    async fn create_table_like(
        &mut self,
        name: &TableName,
        name_span: (usize, usize),
        if_not_exists: bool,
        source: &TableName,
    ) -> Result<(), End> {
        let Some(src) = self.catalog_entry(source).await? else {
            // a source made without the proxy: its definition as the backend reports it, in
            // the model's form
            let group = name.hbase_parts().map(|(g, _)| g.to_string());
            if let Some(def) = self.live_definition(source, group).await? {
                let sql = self.command.get(1..).unwrap_or_default();
                let new_name = sql.get(name_span.0..name_span.1).unwrap_or_default();
                let mut ddl = b"CREATE TABLE ".to_vec();
                if if_not_exists {
                    ddl.extend_from_slice(b"IF NOT EXISTS ");
                }
                ddl.extend_from_slice(new_name);
                ddl.extend_from_slice(def.get(self.name_end_of(&def)..).unwrap_or_default());
                if let Ok(Some(Statement::CreateTable(t))) = ddl::parse_with(&ddl, self.dialect) {
                    return self.create_table(*t, ddl).await;
                }
            }
            let v = ddl_policy::like_of_a_plain_table(name, source, self.enforcement());
            if let Some(e) = self.carry(v) {
                return self.answer_error(e).await;
            }
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let sql = self.command.get(1..).unwrap_or_default();
        let new_name = sql.get(name_span.0..name_span.1).unwrap_or_default();
        let def = &src.def;
        let mut ddl = b"CREATE TABLE ".to_vec();
        if if_not_exists {
            ddl.extend_from_slice(b"IF NOT EXISTS ");
        }
        ddl.extend_from_slice(new_name);
        ddl.extend_from_slice(def.ddl.get(def.table.name_span.1..).unwrap_or_default());
        match ddl::parse_with(&ddl, self.dialect) {
            Ok(Some(Statement::CreateTable(t))) => self.create_table(*t, ddl).await,
            _ => {
                self.answer_error(ErrorInfo::new(
                    rules::ER_NOT_SUPPORTED,
                    "42000",
                    format!("obkv-proxy: cannot read the definition of '{source}' under the new name; create '{name}' with its columns"),
                ))
                .await
            }
        }
    }

    async fn rename_tables(&mut self, pairs: &[(TableName, TableName)]) -> Result<(), End> {
        let mut hbase_pairs = Vec::new();
        for (from, to) in pairs {
            if self.catalog_entry(from).await?.is_some() {
                hbase_pairs.push((from, to));
            }
        }
        let v = ddl_policy::rename(hbase_pairs, self.enforcement());
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
        // the marker moves with the table, across databases too
        self.forward_counting_warnings().await
    }

    /// Forwards the statement, its OK counting the rules' warnings (warn mode) with the
    /// backend's.
    async fn forward_counting_warnings(&mut self) -> Result<(), End> {
        self.count_own_warnings(self.pending_warnings.len());
        self.forward(ResponseKind::Query).await.map(drop)
    }

    async fn alter_table(&mut self, table: &TableName, actions: &[AlterAction]) -> Result<(), End> {
        let Some(entry) = self.catalog_entry(table).await? else {
            let tablegroup = actions.iter().find_map(|a| match a {
                AlterAction::Option(o) if o.name == "TABLEGROUP" => Some(o.value.clone()),
                _ => None,
            });
            if let Some(g) = tablegroup {
                return self.adopt_table(table, actions, &g).await;
            }
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let lock = match self.lock_group(&entry.group_key, &entry.group).await? {
            Ok(l) => l,
            Err(e) => return self.answer_raw(&e).await,
        };
        let done = self.alter_table_locked(table, entry, actions).await;
        let unlocked = self.unlock(&lock).await;
        done?;
        unlocked
    }

    async fn alter_table_locked(
        &mut self,
        table: &TableName,
        entry: Entry,
        actions: &[AlterAction],
    ) -> Result<(), End> {
        if !self.own_catalog() {
            self.implicit_commit().await?;
        }
        // the group matters only to a new partitioning (the families must agree); other
        // ALTERs read nothing more (a restore's ALTER … DISABLE KEYS runs under LOCK TABLES,
        // where the catalog cannot be read on this connection)
        let state = if actions
            .iter()
            .any(|a| matches!(a, AlterAction::Partition(_)))
        {
            match self
                .group_state(&entry.group_key, Some((&entry.schema, &entry.name)))
                .await?
            {
                Ok((s, _)) => s,
                Err(e) => return self.answer_raw(&e).await,
            }
        } else {
            GroupState {
                exists: true,
                families: Vec::new(),
            }
        };
        let current = &entry.def.table;
        let v = ddl_policy::alter_table(
            current,
            actions,
            self.rule_config(),
            &state,
            self.enforcement(),
        );
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
        let sql = self.command.get(1..).unwrap_or_default().to_vec();
        let ddl_text = entry.def.ddl.clone();
        // keep the stored definition in step with what changed
        let mut new_ddl = ddl_text.clone();
        for a in actions {
            if let AlterAction::Partition(p) = a {
                let clause = sql.get(p.span.0..p.span.1).unwrap_or_default();
                new_ddl = match ddl::parse(&new_ddl) {
                    Ok(Some(Statement::CreateTable(c))) => match &c.partition {
                        Some(old) => [
                            new_ddl.get(..old.span.0).unwrap_or_default(),
                            clause,
                            new_ddl.get(old.span.1..).unwrap_or_default(),
                        ]
                        .concat(),
                        None => [&new_ddl[..], b" ", clause].concat(),
                    },
                    _ => new_ddl,
                };
            }
            if let AlterAction::Option(o) = a {
                if o.name == "KV_ATTRIBUTES" {
                    let opt = sql.get(o.span.0..o.span.1).unwrap_or_default();
                    let opt = opt.strip_prefix(b",").unwrap_or(opt);
                    let opt = opt.strip_suffix(b",").unwrap_or(opt);
                    new_ddl = match ddl::parse(&new_ddl) {
                        Ok(Some(Statement::CreateTable(c))) => match c.option("KV_ATTRIBUTES") {
                            Some(old) => [
                                new_ddl.get(..old.span.0).unwrap_or_default(),
                                b" ",
                                opt,
                                new_ddl.get(old.span.1..).unwrap_or_default(),
                            ]
                            .concat(),
                            None => {
                                let at = c.partition.as_ref().map_or(new_ddl.len(), |p| p.span.0);
                                [
                                    new_ddl.get(..at).unwrap_or_default(),
                                    opt,
                                    b" ",
                                    new_ddl.get(at..).unwrap_or_default(),
                                ]
                                .concat()
                            }
                        },
                        _ => new_ddl,
                    };
                }
            }
        }
        let changed = new_ddl != ddl_text;
        let new_marker = Marker {
            ddl_id: marker::ddl_id(&new_ddl),
            group: entry.marker.group.clone(),
        };
        // options the backend lacks are cut; the marker is spliced into the same statement
        let flavor = self.flavor().await?;
        let cuts: Vec<(usize, usize)> = actions
            .iter()
            .filter_map(|a| match a {
                AlterAction::Option(o)
                    if (o.name == "TABLEGROUP" && !flavor.native_tablegroups())
                        || (o.name == "KV_ATTRIBUTES" && !flavor.kv_attributes_option()) =>
                {
                    Some(o.span)
                }
                _ => None,
            })
            .collect();
        let cut_all = !cuts.is_empty() && cuts.len() == actions.len();
        let user_comment = marker::user_comment(&entry.comment).to_vec();
        let mbb = self.dialect.multibyte_backslash;
        let repartition = actions
            .iter()
            .any(|a| matches!(a, AlterAction::Partition(_)));
        // OceanBase's grammar takes no table option beside PARTITION BY: a new marker then goes
        // in a statement of its own, before the user's (and back if the user's fails)
        let separate = changed && repartition;
        let needed = changed && !separate;
        let marks = match self.marker_edits(actions, &new_marker, &user_comment, needed, &sql) {
            Ok(m) => m,
            Err(e) => return self.answer_error(e).await,
        };
        let set_marker = |m: &Marker| -> Result<Vec<u8>, marker::CannotMark> {
            let mut stmt = b"ALTER TABLE ".to_vec();
            stmt.extend_from_slice(&catalog::qualified_bytes(None, table));
            // the one edit goes at the end of this statement
            for (_, text) in marker::alter_edits(&[], m, &user_comment, true, mbb, stmt.len())? {
                stmt.extend_from_slice(&text);
            }
            Ok(translate::tidy_alter(&stmt))
        };
        let (before, undo) = if separate {
            match (set_marker(&new_marker), set_marker(&entry.marker)) {
                (Ok(a), Ok(b)) => (Some(a), Some(b)),
                (Err(marker::CannotMark(why)), _) | (_, Err(marker::CannotMark(why))) => {
                    return self
                        .answer_error(ErrorInfo::new(rules::ER_NOT_SUPPORTED, "42000", why))
                        .await
                }
            }
        } else {
            (None, None)
        };
        // (a new partitioning is never cut, so `separate` implies !cut_all)
        if cut_all && marks.is_empty() {
            // only options the backend does not keep, and they changed nothing
            let n = self.pending_warnings.len() as u16;
            return self.answer_ok(0, n).await;
        }
        if changed {
            if let Err(e) = self.ensure_catalog().await? {
                return self.answer_raw(&e).await;
            }
            let ins = self.catalog().insert_ddl(&new_marker.ddl_id, &new_ddl);
            if let Internal::Err(e) = self.catalog_write(&ins).await? {
                return self.answer_raw(&e).await;
            }
        }
        if let Some(stmt) = &before {
            if let Internal::Err(e) = self.internal(stmt).await? {
                return self.answer_raw(&e).await;
            }
        }
        let mut edits = Splice::new();
        for (a, b) in cuts {
            edits.replace(a, b, "");
        }
        for (at, text) in marks {
            edits.insert(at, text);
        }
        let to_run = translate::tidy_alter(&edits.apply(&sql));
        match self.internal(&to_run).await? {
            Internal::Err(e) => {
                if let Some(stmt) = &undo {
                    self.internal(stmt).await?;
                }
                return self.answer_raw(&e).await;
            }
            Internal::Ok(ok) => self.keep_backend_warnings(&ok).await?,
            Internal::Rows(_) => {}
        }
        let n = self.pending_warnings.len() as u16;
        self.answer_ok(0, n).await
    }

    /// The model's definition (canonical CREATE TABLE text, in table group `group`) of a table
    /// made without the proxy that is an HBase table; None for any other table.
    async fn live_definition(
        &mut self,
        t: &TableName,
        group: Option<String>,
    ) -> Result<Option<Vec<u8>>, End> {
        let rows = match self.rows(&catalog::table_comment(t)).await? {
            Ok(r) => r,
            Err(_) => return Ok(None),
        };
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        if Marker::find(cell(r, 2)).is_some() {
            return Ok(None);
        }
        let (schema, name) = (lossy(&hex_cell(r, 0)), lossy(&hex_cell(r, 1)));
        Ok(match self.live_read(&schema, &name).await? {
            Some((live::Shape::Hbase { def, .. }, source)) => {
                Some(live::model_ddl(*def, &source, group.as_deref()))
            }
            _ => None,
        })
    }

    /// Where the table's name ends in a CREATE TABLE text the proxy rendered.
    fn name_end_of(&self, ddl: &[u8]) -> usize {
        match ddl::parse(ddl) {
            Ok(Some(Statement::CreateTable(t))) => t.name_span.1,
            _ => ddl.len(),
        }
    }

    /// `ALTER TABLE g$f TABLEGROUP = g` on a table the proxy did not create: the table is put
    /// in the group after the group rules (R1, R8), its definition (as the backend reports it,
    /// in the model's terms) is recorded like a created table's, and on MariaDB/MySQL the
    /// prefix column's triggers are created where missing. Anything else in the same ALTER is
    /// refused: adopt first, then alter.
    async fn adopt_table(
        &mut self,
        table: &TableName,
        actions: &[AlterAction],
        group_option: &str,
    ) -> Result<(), End> {
        let rows = match self.rows(&catalog::table_comment(table)).await? {
            Ok(r) => r,
            Err(e) => return self.answer_raw(&e).await,
        };
        let Some(r) = rows.first() else {
            // no such table for this user: the backend's own answer
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let (schema, name) = (hex_cell(r, 0), hex_cell(r, 1));
        let comment = cell(r, 2).to_vec();
        let (shape, source) = match self.live_read(&lossy(&schema), &lossy(&name)).await? {
            Some((shape, source)) => (Some(shape), source),
            None => (None, Vec::new()),
        };
        let Some(shape) = shape else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        if let Some(v) = ddl_policy::adoption(&shape, self.enforcement()) {
            // the table itself breaks a rule (it cannot join a group as it is), or it is no
            // HBase table: the backend answers the ALTER
            if let Some(e) = self.carry(v) {
                return self.answer_error(e).await;
            }
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        let live::Shape::Hbase { def, .. } = shape else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        if actions
            .iter()
            .any(|a| !matches!(a, AlterAction::Option(o) if o.name == "TABLEGROUP"))
        {
            let e = ErrorInfo::new(
                rules::ER_NOT_SUPPORTED,
                "42000",
                format!(
                    "OBKV-HBase rule R1: put '{}' in its table group with ALTER TABLE … TABLEGROUP = {} alone, then alter it",
                    lossy(&name),
                    group_option
                ),
            );
            return self.answer_error(e).await;
        }
        let Some(dollar) = memchr::memchr(b'$', &name) else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let group = name.get(..dollar).unwrap_or_default().to_vec();
        if !group_option.as_bytes().eq_ignore_ascii_case(&group) {
            let e = ErrorInfo::new(
                rules::ER_NOT_SUPPORTED,
                "42000",
                format!(
                    "OBKV-HBase rule R1: TABLEGROUP = {group_option} does not match the group part of '{}'; write TABLEGROUP = {}",
                    lossy(&name),
                    lossy(&group)
                ),
            );
            return self.answer_error(e).await;
        }
        let key = marker::fold(&group, self.names_ci);
        let lock = match self.lock_group(&key, &group).await? {
            Ok(l) => l,
            Err(e) => return self.answer_raw(&e).await,
        };
        let done = self
            .adopt_table_locked((schema, name), comment, (*def, source), (group, key))
            .await;
        let unlocked = self.unlock(&lock).await;
        done?;
        unlocked
    }

    async fn adopt_table_locked(
        &mut self,
        (schema, name): (Vec<u8>, Vec<u8>),
        comment: Vec<u8>,
        (def, source): (CreateTable, Vec<u8>),
        (group, key): (Vec<u8>, Vec<u8>),
    ) -> Result<(), End> {
        if !self.own_catalog() {
            self.implicit_commit().await?;
        }
        let flavor = self.flavor().await?;
        // the definition as the proxy records a created table's: the model's form, in the group
        let model_ddl = live::model_ddl(def, &source, Some(&lossy(&group)));
        let model = match ddl::parse(&model_ddl) {
            Ok(Some(Statement::CreateTable(t))) => *t,
            _ => {
                let e = ErrorInfo::internal("while recording the table's definition");
                return self.answer_error(e).await;
            }
        };
        let (state, _) = match self.group_state(&key, Some((&schema, &name))).await? {
            Ok(s) => s,
            Err(e) => return self.answer_raw(&e).await,
        };
        let v = ddl_policy::create_table(&model, self.rule_config(), &state, self.enforcement());
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
        // MariaDB / MySQL: the prefix column is kept by the proxy's triggers
        if flavor == Flavor::MySqlFamily {
            if let Some((col, n)) = model.prefix_column() {
                let qualified = [
                    catalog::ident_bytes(&schema),
                    b".".to_vec(),
                    catalog::ident_bytes(&name),
                ]
                .concat();
                let triggers =
                    translate::prefix_triggers(&schema, &qualified, &lossy(&name), col, n);
                for (trigger, stmt) in triggers {
                    let q = format!(
                        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {} AND TRIGGER_NAME = {}",
                        catalog::client_text(&schema),
                        catalog::client_text(trigger.as_bytes())
                    );
                    let exists = match self.rows(&q).await? {
                        Ok(rows) => rows.first().is_some_and(|r| cell(r, 0) != b"0"),
                        Err(e) => return self.answer_raw(&e).await,
                    };
                    if exists {
                        continue;
                    }
                    if let Internal::Err(e) = self.internal(&stmt).await? {
                        return self.answer_raw(&e).await;
                    }
                }
            }
        }
        if let Err(e) = self.ensure_catalog().await? {
            return self.answer_raw(&e).await;
        }
        let new_marker = Marker {
            ddl_id: marker::ddl_id(&model_ddl),
            group: None,
        };
        let ins = self.catalog().insert_ddl(&new_marker.ddl_id, &model_ddl);
        if let Internal::Err(e) = self.catalog_write(&ins).await? {
            return self.answer_raw(&e).await;
        }
        // the marker goes into the table's comment; the TABLEGROUP option stays only where the
        // backend has table groups
        let sql = self.command.get(1..).unwrap_or_default().to_vec();
        let user_comment = marker::user_comment(&comment).to_vec();
        let actions: Vec<AlterAction> = match ddl::parse_with(&sql, self.reading()) {
            Ok(Some(Statement::AlterTable { actions, .. })) => actions,
            _ => Vec::new(),
        };
        let marks = match self.marker_edits(&actions, &new_marker, &user_comment, true, &sql) {
            Ok(m) => m,
            Err(e) => return self.answer_error(e).await,
        };
        let mut edits = Splice::new();
        if !flavor.native_tablegroups() {
            for a in &actions {
                if let AlterAction::Option(o) = a {
                    if o.name == "TABLEGROUP" {
                        edits.replace(o.span.0, o.span.1, "");
                    }
                }
            }
        }
        for (at, text) in marks {
            edits.insert(at, text);
        }
        let to_run = translate::tidy_alter(&edits.apply(&sql));
        match self.internal(&to_run).await? {
            Internal::Err(e) => return self.answer_raw(&e).await,
            Internal::Ok(ok) => self.keep_backend_warnings(&ok).await?,
            Internal::Rows(_) => {}
        }
        self.shared.schemas.clear();
        let n = self.pending_warnings.len() as u16;
        self.answer_ok(0, n).await
    }

    /// Where the marker goes into an ALTER TABLE text (`marker::alter_edits`), or why it cannot.
    fn marker_edits(
        &self,
        actions: &[AlterAction],
        m: &Marker,
        user_comment: &[u8],
        needed: bool,
        sql: &[u8],
    ) -> Result<Vec<(usize, Vec<u8>)>, ErrorInfo> {
        let end = statement_end(sql, self.dialect);
        let mbb = self.dialect.multibyte_backslash;
        marker::alter_edits(actions, m, user_comment, needed, mbb, end).map_err(
            |marker::CannotMark(why)| ErrorInfo::new(rules::ER_NOT_SUPPORTED, "42000", why),
        )
    }

    /// SHOW CREATE TABLE of an HBase table, in the canonical multi-line form OceanBase prints:
    /// an OceanBase cluster answers itself; seekdb's own answer gets back the options it does
    /// not keep; MariaDB/MySQL's (a translation) is replaced by the user's definition rendered
    /// that way. Tools that parse it line by line (SQLAlchemy, mysqldump) see the HBase table.
    async fn show_create_table(&mut self, t: &TableName) -> Result<(), End> {
        let Some(entry) = self.catalog_entry(t).await? else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let flavor = self.flavor().await?;
        if flavor.native_tablegroups() {
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        // The backend answers the same question first, so its grants apply: a user who may not
        // see the table gets the backend's own error (1142), never the catalog's text.
        let question = self.command.get(1..).unwrap_or_default().to_vec();
        let backend_row = match self.internal(&question).await? {
            Internal::Err(e) => return self.answer_raw(&e).await,
            Internal::Rows(rows) => rows.into_iter().next().unwrap_or_default(),
            Internal::Ok(_) => Vec::new(),
        };
        let def = &entry.def;
        let name = backend_row
            .first()
            .cloned()
            .flatten()
            .unwrap_or_else(|| def.table.name.name.clone().into_bytes());
        let shown = match (flavor, backend_row.get(1)) {
            (Flavor::SeekDb, Some(v)) => {
                let backend_text = translate::without_marker(&text(v), &entry.marker.render());
                translate::with_kept_options(&backend_text, &def.table)
            }
            _ => translate::canonical_create(&def.table, &def.ddl),
        };
        self.answer_rows(
            &["Table", "Create Table"],
            &[vec![Some(name), Some(shown.into_bytes())]],
        )
        .await
    }

    /// `SHOW PROXY CREATE TABLEGROUPS`: one `CREATE TABLEGROUP IF NOT EXISTS` per table group,
    /// to run before restoring a dump (mysqldump knows nothing of table groups).
    pub(super) async fn answer_tablegroup_ddl(&mut self) -> Result<(), End> {
        let native = self.flavor().await?.native_tablegroups();
        let mut groups: Vec<Vec<u8>> = if native {
            match self.rows("SHOW TABLEGROUPS").await? {
                Ok(rows) => rows.iter().map(|r| cell(r, 0).to_vec()).collect(),
                Err(e) => return self.answer_raw(&e).await,
            }
        } else {
            let mut g: Vec<Vec<u8>> = match self.catalog_rows(&self.catalog().all_groups()).await? {
                Ok(rows) => rows.iter().map(|r| hex_cell(r, 0)).collect(),
                Err(e) => return self.answer_raw(&e).await,
            };
            if let Ok(tables) = self.marked_tables(false).await? {
                g.extend(tables.into_iter().map(|t| t.group));
            }
            let ci = self.names_ci;
            g.sort_by_key(|x| marker::fold(x, ci));
            g.dedup_by(|a, b| marker::fold(a, ci) == marker::fold(b, ci));
            self.in_client_charset(g).await?
        };
        groups.dedup();
        let out: Vec<Vec<Option<Vec<u8>>>> = groups
            .iter()
            .map(|g| {
                let mut s = b"CREATE TABLEGROUP IF NOT EXISTS ".to_vec();
                s.extend_from_slice(&catalog::ident_bytes(g));
                s.push(b';');
                vec![Some(s)]
            })
            .collect();
        self.answer_rows(&["Create Tablegroup"], &out).await
    }

    /// SHOW WARNINGS after an HBase statement: the backend's warnings and the proxy's.
    pub(super) async fn show_pending_warnings(&mut self) -> Result<(), End> {
        let rows: Vec<Vec<Option<String>>> = self
            .pending_warnings
            .iter()
            .map(|(l, c, m)| vec![Some(l.clone()), Some(c.to_string()), Some(m.clone())])
            .collect();
        self.answer_rows(&["Level", "Code", "Message"], &rows).await
    }
}

/// Where a statement's last token ends (before a trailing `;`, spaces and comments): where a
/// clause is appended.
fn statement_end(sql: &[u8], d: crate::sql::scan::Dialect) -> usize {
    crate::sql::scan::Scanner::new(sql, d)
        .map_while(Result::ok)
        .filter(|t| !t.is_punct(b';'))
        .last()
        .map_or(sql.len(), |t| t.end)
}
