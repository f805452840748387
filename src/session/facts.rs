//! The facts the engine asks for, read on the session's connection (current database,
//! character set, a table's schema — as this user sees them, so the backend's grants apply —
//! for tables made through the proxy and without it), and when they must be forgotten; and the
//! proxy commands that answer from them (EXPLAIN OBKV, SHOW OBKV TABLES, SHOW WARNINGS with the
//! proxy's notes).

use crate::protocol::constants::er;
use std::sync::Arc;

use super::catalog::cell;
use super::{End, Session};
use crate::engine::prefix_scan::{ConnCharset, Need};
use crate::hbase::backend::Flavor;
use crate::hbase::catalog;
use crate::hbase::live;
use crate::hbase::marker::{self, Marker};
use crate::hbase::schema::{self, Placement, TableSchema};
use crate::protocol::constants::status;
use crate::protocol::packets::ErrorInfo;

/// What reading a table's schema found.
enum TableRead {
    /// The table as it is now: an HBase table's schema, or None for any other table.
    Known(Option<Arc<TableSchema>>),
    /// No such table (for this user).
    Absent,
    /// An HBase table whose definition cannot be read now: not cached, and reading it on the
    /// user's connection (no catalog account) would join the user's open transaction.
    Blind,
}

/// What EXPLAIN OBKV shows of a LOAD DATA LOCAL's file: the verdict, the partitions its rows
/// go to (the backend's, OceanBase's), and a row for each of its rows.
type ExplainedLoad = (
    String,
    Option<(String, String)>,
    Vec<crate::engine::explain::Explained>,
);

impl Session {
    /// Reads what the rewriter asked for.
    pub(super) async fn read_facts(&mut self, need: &Need) -> Result<(), End> {
        if need.current_db || need.charset || self.db_fact.is_none() {
            let sql =
                "SELECT DATABASE(), @@character_set_client, @@character_set_connection, @@sql_mode";
            if let Ok(rows) = self.rows(sql).await? {
                if let Some(r) = rows.first() {
                    self.db_fact = Some(r.first().cloned().flatten().map(Into::into));
                    let charset = ConnCharset::from_names(cell(r, 1), cell(r, 2));
                    self.charset_fact = Some(charset);
                    // not a wide one now: only a later change could make it one
                    self.charset_changed = charset == ConnCharset::Wide;
                    let mode = cell(r, 3).to_ascii_uppercase();
                    let has = |w: &[u8]| mode.split(|c| *c == b',').any(|m| m == w);
                    self.mode_fact = Some(has(b"NO_BACKSLASH_ESCAPES"));
                }
            }
        }
        for (db, name) in &need.tables {
            let db = match db {
                Some(db) => db.clone(),
                None => match &self.db_fact {
                    Some(Some(db)) => db.to_vec(),
                    _ => continue,
                },
            };
            if !db.is_ascii() || !name.is_ascii() {
                continue;
            }
            match self.read_table_schema(&db, name).await? {
                TableRead::Known(found) => {
                    let key = schema::key(&db, name, self.names_ci);
                    self.shared.schemas.put(key, found);
                }
                // not remembered: a table made directly on the backend a moment later is an
                // HBase table at its first statement
                TableRead::Absent => {}
                // an HBase table not readable now (inside the user's transaction): nothing
                // cached, and the statement must not take it for a plain table
                TableRead::Blind => {
                    if !self.blind.iter().any(|(d, n)| *d == db && n == name) {
                        self.blind.push((db, name.clone()));
                    }
                }
            }
        }
        Ok(())
    }

    /// The `TimeToLive` / `MaxVersions` an HBase table this user can see declares.
    pub(super) async fn declared_attrs(
        &mut self,
        db: &[u8],
        name: &[u8],
    ) -> Result<Option<crate::hbase::ttl::Attributes>, End> {
        Ok(match self.read_table_schema(db, name).await? {
            TableRead::Known(Some(s)) => Some(s.attrs),
            _ => None,
        })
    }

    /// A table's schema as the backend has it now, if it is an HBase table this user can see.
    async fn read_table_schema(&mut self, db: &[u8], name: &[u8]) -> Result<TableRead, End> {
        Ok(self.read_table(db, name).await?.0)
    }

    /// `read_table_schema`, with the shape the backend's definition has when the table carries
    /// no marker (made without the proxy): one read of it serves both.
    async fn read_table(
        &mut self,
        db: &[u8],
        name: &[u8],
    ) -> Result<(TableRead, Option<live::Shape>), End> {
        let flavor = self.flavor().await?;
        let rows = match self.rows(&catalog::table_partitioning(db, name)).await? {
            Ok(r) => r,
            Err(_) => return Ok((TableRead::Known(None), None)),
        };
        let Some(r) = rows.first() else {
            return Ok((TableRead::Absent, None));
        };
        let text = |i| String::from_utf8_lossy(cell(r, i)).into_owned();
        let count: u32 = text(3).parse().unwrap_or(0);
        let (method, expr) = (text(4), text(5));
        let live = (count > 0).then_some((method.as_str(), expr.as_str(), count));
        // seekdb is an OceanBase kernel: OceanBase's placement, without native table groups
        let placement = if matches!(flavor, Flavor::OceanBase | Flavor::SeekDb) {
            Placement::OceanBase
        } else {
            Placement::MySqlFamily
        };
        let utf8 = |i| {
            String::from_utf8_lossy(&marker::from_hex(cell(r, i)).unwrap_or_default()).into_owned()
        };
        let blob_limit = self.cfg.hbase.cell_limit_bytes;
        let Some((m, _)) = Marker::find(cell(r, 2)) else {
            // made without the proxy: an HBase table by what it is
            let (db_name, table) = (utf8(0), utf8(1));
            let shape = self.live_shape(&db_name, &table).await?;
            let found = match &shape {
                Some(live::Shape::Hbase { def, .. }) => {
                    let grouped = flavor.native_tablegroups() && def.tablegroup().is_some();
                    TableSchema::from_definition(db_name, table, def, live, placement, blob_limit)
                        .map(|s| Arc::new(TableSchema { grouped, ..s }))
                }
                _ => None,
            };
            return Ok((TableRead::Known(found), shape));
        };
        let in_transaction = self.last_status & status::IN_TRANS != 0;
        if in_transaction
            && self.shared.catalog_conn.is_none()
            && self.shared.definitions.get(&m.ddl_id).is_none()
        {
            return Ok((TableRead::Blind, None));
        }
        let Some(def) = self.definition(&m.ddl_id).await? else {
            return Ok((TableRead::Known(None), None));
        };
        let found =
            TableSchema::from_definition(utf8(0), utf8(1), &def.table, live, placement, blob_limit);
        Ok((TableRead::Known(found.map(Arc::new)), None))
    }

    /// The shape of a table that carries no marker, from the backend's own SHOW CREATE TABLE
    /// on the user's connection (its grants apply; metadata only, so it joins no transaction).
    /// None: not a `group$family` name, or the backend would not show it.
    pub(super) async fn live_shape(
        &mut self,
        db: &str,
        table: &str,
    ) -> Result<Option<live::Shape>, End> {
        Ok(self.live_read(db, table).await?.map(|(s, _)| s))
    }

    /// `live_shape`, with the backend's SHOW CREATE TABLE text it was read from.
    pub(super) async fn live_read(
        &mut self,
        db: &str,
        table: &str,
    ) -> Result<Option<(live::Shape, Vec<u8>)>, End> {
        let name = crate::sql::ddl::TableName::new(Some(db), table);
        if name.hbase_parts().is_none() {
            return Ok(Some((
                live::Shape::Plain("its name is not group$family (one '$', both parts non-empty)"),
                Vec::new(),
            )));
        }
        let sql = format!(
            "SHOW CREATE TABLE {}.{}",
            catalog::ident(db),
            catalog::ident(table)
        );
        let rows = match self.rows(&sql).await? {
            Ok(r) => r,
            Err(_) => return Ok(None),
        };
        let Some(text) = rows.first().map(|r| cell(r, 1).to_vec()) else {
            return Ok(None);
        };
        // `"…"` names under ANSI_QUOTES, which the backend does not report: the other reading
        // when the first does not parse as a table
        let plain = self.reading();
        let ansi = crate::sql::scan::Dialect {
            ansi_quotes: !plain.ansi_quotes,
            ..plain
        };
        for d in [plain, ansi] {
            if let Ok(Some(crate::sql::ddl::Statement::CreateTable(def))) =
                crate::sql::ddl::parse_with(&text, d)
            {
                return Ok(Some((live::recognize(&def), text)));
            }
        }
        Ok(Some((
            live::Shape::Plain("obkv-proxy cannot read its definition"),
            text,
        )))
    }

    /// `SHOW OBKV TABLES`: every HBase table this user can see (information_schema on the
    /// user's connection: the backend's grants apply), made through the proxy or not, and the
    /// `$` tables built like one that break a rule, with their findings.
    pub(super) async fn answer_obkv_tables(&mut self) -> Result<(), End> {
        const LIMIT: usize = 1000;
        let sql = catalog::dollar_tables(&self.cfg.hbase.catalog_schema, LIMIT);
        let listed = match self.rows(&sql).await? {
            Ok(r) => r,
            Err(packet) => return self.answer_raw(&packet).await,
        };
        let databases = self.shared.hbase_databases.clone();
        let mut out: Vec<Vec<Option<Vec<u8>>>> = Vec::new();
        for r in &listed {
            let hex = |i| marker::from_hex(cell(r, i)).unwrap_or_default();
            let (db, name) = (hex(0), hex(1));
            let db_s = String::from_utf8_lossy(&db).into_owned();
            if !databases.is_empty() && !databases.contains(&db_s) {
                continue;
            }
            let marked = Marker::find(cell(r, 2)).map(|(m, _)| m);
            let (read, shape) = self.read_table(&db, &name).await?;
            if marked.is_none() && matches!(shape, Some(live::Shape::Plain(_)) | None) {
                continue;
            }
            let findings = match &shape {
                Some(live::Shape::Broken(f)) | Some(live::Shape::Hbase { notes: f, .. }) => f
                    .iter()
                    .map(|f| format!("{}: {}", f.level.name(), f.message))
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => String::new(),
            };
            let schema = match read {
                TableRead::Known(s) => s,
                TableRead::Absent | TableRead::Blind => None,
            };
            let group = match (&marked, &schema) {
                (Some(m), _) => m
                    .group_of(&name)
                    .map(|g| String::from_utf8_lossy(&g).into_owned()),
                (None, Some(s)) if s.grouped => Some(s.group().to_string()),
                _ => None,
            };
            let (partitioning, prefix, handled) = match &schema {
                Some(s) => (
                    Some(s.partitioning.describe()),
                    s.prefix_column.as_ref().map(|(_, n)| n.to_string()),
                    "YES",
                ),
                None => (None, None, "NO"),
            };
            let origin = if marked.is_some() {
                "obkv-proxy"
            } else {
                "backend"
            };
            let findings = if handled == "NO" && findings.is_empty() {
                "its definition could not be read now (inside a transaction, or it no longer \
                 matches the backend's partitioning)"
                    .to_string()
            } else {
                findings
            };
            out.push(vec![
                Some(db),
                Some(name),
                group.map(String::into_bytes),
                partitioning.map(String::into_bytes),
                prefix.map(String::into_bytes),
                Some(handled.into()),
                Some(origin.into()),
                Some(findings.into_bytes()),
            ]);
        }
        let columns = [
            "Database",
            "Table",
            "Table_group",
            "Partitioning",
            "Prefix_length",
            "Handled",
            "Made_by",
            "Findings",
        ];
        self.answer_rows(&columns, &out).await
    }

    /// Why a `$` table is not handled as an HBase table (EXPLAIN OBKV).
    async fn why_not_hbase(&mut self, db: &[u8], name: &[u8]) -> Result<String, End> {
        let (db, name) = (String::from_utf8_lossy(db), String::from_utf8_lossy(name));
        let databases = self.shared.hbase_databases.clone();
        if !databases.is_empty() && !databases.iter().any(|d| *d == *db) {
            return Ok(format!(
                "not an HBase table: database `{db}` is not in hbase.databases"
            ));
        }
        let rows = self
            .rows(&catalog::table_partitioning(db.as_bytes(), name.as_bytes()))
            .await?;
        let comment = match &rows {
            Ok(r) if !r.is_empty() => r.first().map(|r| cell(r, 2).to_vec()).unwrap_or_default(),
            _ => return Ok("not an HBase table: no such table visible to this user".into()),
        };
        if Marker::find(&comment).is_some() {
            return Ok(
                "an HBase table made through obkv-proxy, but its definition could not be \
                read or no longer matches the backend's partitioning"
                    .into(),
            );
        }
        Ok(match self.live_shape(&db, &name).await? {
            Some(live::Shape::Hbase { .. }) => "an HBase table, but its partitioning as the \
                backend reports it does not match its definition"
                .into(),
            Some(shape) => shape.reason(),
            None => "not an HBase table: the backend does not show its definition".into(),
        })
    }

    /// Forgets the session facts a text may change (USE, SET NAMES, a stored procedure, …);
    /// DDL makes every session re-read the schemas it uses. The test is lexical and cheap; a
    /// false alarm costs one re-read before the next HBase statement.
    /// Returns what the text may change (the caller forgets it again once the text ran:
    /// deciding it may read the facts the text is about to change, and another session may
    /// read a schema while the DDL runs).
    pub(super) fn forget_facts_after_query(&mut self) -> TextEffects {
        let sql = self.command.get(1..).unwrap_or_default();
        let (ddl, session) = text_effects(sql);
        let effects = TextEffects {
            ddl,
            session,
            charset: session && may_change_charset(sql),
        };
        self.forget_effects(effects);
        effects
    }

    /// Forgets what a text's `effects` may have changed (before it runs, and again after).
    pub(super) fn forget_effects(&mut self, effects: TextEffects) {
        if effects.ddl {
            self.shared.schemas.clear();
        }
        if effects.session {
            self.forget_session_facts();
        }
        if effects.charset {
            self.charset_changed = true;
        }
    }

    /// `EXPLAIN OBKV <statement>`: what the proxy would do with the statement, not run.
    pub(super) async fn answer_explain_obkv(&mut self) -> Result<(), End> {
        let sql = self.command.get(1..).unwrap_or_default();
        let text = crate::sql::classify::after_words(sql, 2).to_vec();
        if text.len() > crate::engine::router::LARGE_TEXT {
            let e = ErrorInfo::new(
                er::UNKNOWN_ERROR,
                "HY000",
                "obkv-proxy: statement too long to explain",
            );
            return self.answer_error(e).await;
        }
        let mut ctx = self.context().await?;
        for _ in 0..2 {
            match crate::engine::explain::explain_obkv(&text, &ctx) {
                Ok(mut rows) => {
                    for r in rows.iter_mut() {
                        if let Some((db, name)) = r.not_hbase.take() {
                            let why = self.why_not_hbase(&db, &name).await?;
                            r.note = if r.note.is_empty() {
                                why
                            } else {
                                format!("{why}; {}", r.note)
                            };
                        }
                    }
                    // a LOAD DATA LOCAL: its file's rows, read from the client (not written)
                    if let Some(i) = rows.iter().position(|r| r.load.is_some()) {
                        let plan = rows.get_mut(i).and_then(|r| r.load.take());
                        if let Some(plan) = plan {
                            let (note, placed, more) = match self.explain_load_file(&plan).await? {
                                Ok(x) => x,
                                Err(e) => return self.answer_error(e).await,
                            };
                            if let Some(r) = rows.get_mut(i) {
                                r.note = note;
                                if let Some((backend, oceanbase)) = placed {
                                    r.partitions = Some(backend);
                                    r.oceanbase_partitions = Some(oceanbase);
                                }
                            }
                            let tail = rows.split_off(i + 1);
                            rows.extend(more);
                            rows.extend(tail);
                        }
                    }
                    let rows: Vec<Vec<Option<Vec<u8>>>> = rows
                        .into_iter()
                        .map(|r| {
                            vec![
                                r.table.map(String::into_bytes),
                                r.partitioning.map(String::into_bytes),
                                Some(r.sent),
                                r.partitions.map(String::into_bytes),
                                r.oceanbase_partitions.map(String::into_bytes),
                                Some(r.note.into_bytes()),
                            ]
                        })
                        .collect();
                    let columns = [
                        "table",
                        "partitioning",
                        "statement_sent",
                        "partitions",
                        "oceanbase_partitions",
                        "note",
                    ];
                    return self.answer_rows(&columns, &rows).await;
                }
                Err(need) => {
                    self.read_facts(&need).await?;
                    ctx = self.context().await?;
                    if let Some(t) = ctx.tables.as_mut() {
                        t.settled = true;
                    }
                }
            }
        }
        let e = ErrorInfo::internal("while explaining the statement");
        self.answer_error(e).await
    }

    /// EXPLAIN OBKV of a LOAD DATA LOCAL: asks the client for the file as the backend would,
    /// reads and checks its rows (at most `hbase.load_data_max_bytes` of it) without holding or
    /// sending them, and gives the verdict and a row for each of the file's rows. The answer
    /// then follows the file (`command_frames` moves past it).
    async fn explain_load_file(
        &mut self,
        plan: &crate::engine::write::LoadPlan,
    ) -> Result<Result<ExplainedLoad, ErrorInfo>, End> {
        use crate::engine::explain;
        use crate::engine::write::LoadCheck;
        use crate::protocol::constants::{cap, MAX_FRAME};
        if !self.client_caps.has(cap::LOCAL_FILES) {
            let note = "the client does not send files: the rows are not seen".to_string();
            return Ok(Ok((note, None, Vec::new())));
        }
        let rules = self.write_rules();
        let reading = crate::engine::write::WriteRules {
            cells: crate::hbase::rules::Enforcement::Warn,
            ..rules.unwrap_or_default()
        };
        let mut request = Vec::with_capacity(1 + plan.load.file.len());
        request.push(0xfb);
        request.extend_from_slice(&plan.load.file);
        let mut next = match self.client.send_packet(self.command_frames, &request).await {
            Ok(n) => n,
            Err(_) => return Err(End::ClientGone),
        };
        let mut check = LoadCheck::new(plan, reading).traced(explain::ROWS_SHOWN);
        let max = self.cfg.hbase.load_data_max_bytes;
        let net_read = self.cfg.net_read_timeout();
        let (mut total, mut previous_full) = (0u64, false);
        let mut chunk: Vec<u8> = Vec::with_capacity(64 * 1024);
        loop {
            let header = match crate::timer::timeout(net_read, self.client.read_header()).await {
                Ok(Ok(h)) if h.seq == next => h,
                _ => return Err(End::ClientGone),
            };
            next = next.wrapping_add(1);
            let mut left = header.len;
            while left > 0 {
                let n = left.min(64 * 1024);
                chunk.clear();
                let read = self.client.read_payload_into(n, &mut chunk);
                match crate::timer::timeout(net_read, read).await {
                    Ok(Ok(())) => {}
                    _ => return Err(End::ClientGone),
                }
                left -= n;
                total = total.saturating_add(n as u64);
                // past the limit a LOAD would be refused: the rest is read and dropped
                if total <= max {
                    check.feed(&chunk);
                }
            }
            if header.len == 0 && !previous_full {
                break;
            }
            previous_full = header.len == MAX_FRAME;
        }
        self.command_frames = next;
        let (checked, trace) = check.finish_traced();
        let txn = self.txn();
        let mut note = explain::write_verdict(checked, rules.as_ref(), &txn);
        if total > max {
            note = format!(
                "refused: the file is {total} bytes, over hbase.load_data_max_bytes = {max} \
                 (the proxy holds a file while it checks it); the rows shown are its first"
            );
        }
        let placed = explain::placed(&trace);
        Ok(Ok((note, Some(placed), explain::write_rows(&trace))))
    }

    /// What the backend reported a command changed in the session (CLIENT_SESSION_TRACK): the
    /// facts it touches are read again when next needed, a reported database is the current
    /// one, and a multiplexed session carries the rest (`Session::carry_reports`).
    #[cold]
    #[inline(never)]
    pub(super) fn on_reports(&mut self, r: crate::protocol::packets::Reports) {
        if let Some(db) = &r.schema {
            self.db_fact = Some((!db.is_empty()).then(|| db.as_slice().into()));
        }
        for (name, _) in &r.vars {
            if name == b"sql_mode" {
                self.mode_fact = None;
            } else if crate::sql::session_state::is_charset_var(name) {
                self.charset_fact = None;
                self.charset_changed = true;
            }
        }
        if r.unknown {
            self.charset_fact = None;
            self.charset_changed = true;
            self.mode_fact = None;
        }
        if let Some(m) = self.mux.as_mut() {
            m.reported(r);
        }
    }

    pub(super) fn forget_session_facts(&mut self) {
        self.db_fact = None;
        self.forget_variable_facts();
    }

    /// What a COM_RESET_CONNECTION changes: the character set and sql_mode go back to the
    /// login's, the current database stays (both backends, measured) — so a multiplexed
    /// session that gives its connection back after a reset (every pool return of some
    /// drivers) need not ask the backend for its database first.
    pub(super) fn forget_variable_facts(&mut self) {
        self.charset_fact = None;
        self.mode_fact = None;
    }
}

/// What running a text may change (`forget_facts_after_query`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TextEffects {
    /// Tables' schemas (DDL).
    pub ddl: bool,
    /// The session's current database, character set, sql_mode.
    pub session: bool,
    /// The character set into a wide one (`Session::charset_changed`).
    pub charset: bool,
}

/// Whether a text with session effects may change the connection's character set (into a
/// wide one): it names one of its variables or statements, or runs a text or program the
/// proxy does not read here. Cheap and lexical; a literal mentioning them counts too.
fn may_change_charset(sql: &[u8]) -> bool {
    [
        &b"names"[..],
        b"character",
        b"charset",
        b"collation",
        b"execute",
        b"call",
    ]
    .iter()
    .any(|w| crate::sql::classify::contains_ci(sql, w))
}

/// What running a text may change, by its first word (cheap and lexical): (DDL: tables'
/// schemas; the session's current database or character set).
pub(super) fn text_effects(sql: &[u8]) -> (bool, bool) {
    // HBase DDL in any other form (an executable comment) is cleared for in `apply`; a text
    // that merely starts with a comment must not make every session re-read its schemas
    // (DDL: DROP, ALTER, CREATE, RENAME, TRUNCATE; the session's: USE, SET, CALL, EXECUTE,
    // DROP, told apart by length first: most texts begin with none of them)
    let (ddl, session) = match first_word(sql) {
        None => (false, true),
        Some(w) => {
            let is = |x: &[u8]| w.eq_ignore_ascii_case(x);
            match w.len() {
                3 => (false, is(b"USE") || is(b"SET")),
                4 => {
                    let drop = is(b"DROP");
                    (drop, drop || is(b"CALL"))
                }
                5 => (is(b"ALTER"), false),
                6 => (is(b"CREATE") || is(b"RENAME"), false),
                7 => (false, is(b"EXECUTE")),
                8 => (is(b"TRUNCATE"), false),
                _ => (false, false),
            }
        }
    };
    (ddl, session || memchr::memchr(b';', sql).is_some())
}

/// The first word of a text, after white space and plain comments; None when it begins with
/// anything else (an executable comment, a parenthesis).
fn first_word(mut sql: &[u8]) -> Option<&[u8]> {
    for _ in 0..16 {
        let start = sql.iter().position(|c| !c.is_ascii_whitespace())?;
        sql = &sql[start..];
        if sql.starts_with(b"/*") && !sql.starts_with(b"/*!") && !sql.starts_with(b"/*M!") {
            let end = memchr::memmem::find(&sql[2..], b"*/")?;
            sql = &sql[end + 4..];
            continue;
        }
        if sql.starts_with(b"#") || sql.starts_with(b"-- ") {
            let end = memchr::memchr(b'\n', sql)?;
            sql = &sql[end + 1..];
            continue;
        }
        let end = sql
            .iter()
            .position(|c| !c.is_ascii_alphabetic())
            .unwrap_or(sql.len());
        return (end > 0).then(|| &sql[..end]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By length, then the word: what comparing the first word with every listed word finds.
    #[test]
    fn text_effects_are_the_listed_words() {
        let by_list = |sql: &[u8]| {
            let word = first_word(sql);
            let any =
                |ws: &[&[u8]]| word.is_some_and(|w| ws.iter().any(|x| w.eq_ignore_ascii_case(x)));
            let ddl = any(&[b"DROP", b"ALTER", b"CREATE", b"RENAME", b"TRUNCATE"]);
            let session = word.is_none()
                || any(&[b"USE", b"SET", b"CALL", b"EXECUTE", b"DROP"])
                || memchr::memchr(b';', sql).is_some();
            (ddl, session)
        };
        let words = [
            "USE",
            "set",
            "Call",
            "EXECUTE",
            "drop",
            "ALTER",
            "create",
            "RENAME",
            "truncate",
            "SELECT",
            "UPDATE",
            "INSERT",
            "DO",
            "SHOW",
            "LOAD",
            "DELETE",
            "REPLACE",
            "BEGIN",
            "CALLS",
            "US",
            "SETS",
            "ALTERS",
            "DROPS",
            "EXECUTES",
            "TRUNCATED",
            "CREATEX",
        ];
        let mut ddl_seen = 0;
        let mut session_seen = 0;
        for w in words {
            for tail in [" x", "; SELECT 1", "", "(1)"] {
                for head in ["", "  ", "/* c */ ", "-- c\n", "/*!", "("] {
                    let sql = format!("{head}{w}{tail}");
                    let got = text_effects(sql.as_bytes());
                    assert_eq!(got, by_list(sql.as_bytes()), "{sql:?}");
                    ddl_seen += usize::from(got.0);
                    session_seen += usize::from(got.1);
                }
            }
        }
        assert!(ddl_seen > 0 && session_seen > ddl_seen);
    }
}
