//! Carrying out HBase DDL for a session: the rules (`hbase::rules`), the catalog
//! (`hbase::catalog`) and the per-backend translation (`hbase::translate`) meet here. Every
//! statement runs on the session's own backend connection, so the user's privileges apply, and
//! nothing is half-done: if the backend refuses a step, the steps before it are undone and the
//! catalog is unchanged.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use tracing::info;

use super::{End, Session};
use crate::backend::{self, QueryError};
use crate::config::Enforcement;
use crate::hbase::backend::{BackendFacts, Flavor};
use crate::hbase::catalog::{self, like, qualified, Catalog};
use crate::hbase::ddl::{self, AlterAction, CreateTable, Statement, TableName};
use crate::hbase::rules::{
    self, check_alter, check_create, check_rename, Finding, GroupState, Level, RuleConfig,
};
use crate::hbase::translate;
use crate::protocol::constants::status;
use crate::protocol::packets::{ok_packet, parse_err_code, ErrorInfo, OkInfo};

/// ER_TABLE_NOT_LOCKED: a table not named in the session's LOCK TABLES.
const ER_TABLE_NOT_LOCKED: u16 = 1100;
use crate::protocol::response::ResponseKind;
use crate::sql::scan::Flavor as SqlFlavor;

pub(super) use crate::backend::QueryResult as Internal;

/// A warning kept for the next SHOW WARNINGS: (level, code, message).
pub(super) type Warning = (String, u16, String);

type Rows = Vec<crate::backend::Row>;

fn text(v: &Option<Vec<u8>>) -> String {
    v.as_deref()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
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
            names_ci: self.names_ci,
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
            Err(QueryError::Io(_)) => Err(self.lose_backend(self.command_frames).await),
            Err(QueryError::Framing(what)) => {
                Err(self.backend_protocol_error(self.command_frames, what).await)
            }
        }
    }

    async fn rows(&mut self, sql: &str) -> Result<Result<Rows, Vec<u8>>, End> {
        Ok(match self.internal(sql.as_bytes()).await? {
            Internal::Rows(r) => Ok(r),
            Internal::Ok(_) => Ok(Vec::new()),
            Internal::Err(e) => Err(e),
        })
    }

    /// Creates the catalog schema once per process (and then reconciles it with the backend).
    async fn ensure_catalog(&mut self) -> Result<Result<(), Vec<u8>>, End> {
        if self.shared.catalog_ready.load(Ordering::Relaxed) {
            return Ok(Ok(()));
        }
        for sql in self.catalog().ensure() {
            if let Internal::Err(e) = self.internal(sql.as_bytes()).await? {
                return Ok(Err(e));
            }
        }
        let schema = self.shared.config.hbase.catalog_schema.clone();
        match catalog::reconcile(&mut self.backend, self.client_caps, &schema).await {
            Ok(_) => {}
            Err(QueryError::Io(_)) => return Err(self.lose_backend(self.command_frames).await),
            Err(QueryError::Framing(what)) => {
                return Err(self.backend_protocol_error(self.command_frames, what).await)
            }
        }
        self.shared.catalog_ready.store(true, Ordering::Relaxed);
        Ok(Ok(()))
    }

    pub(super) async fn current_db(&mut self) -> Result<Option<String>, End> {
        Ok(match self.rows("SELECT DATABASE()").await? {
            Ok(r) => r
                .first()
                .and_then(|row| row.first().cloned().flatten())
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            Err(_) => None,
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

    async fn answer_raw(&mut self, packet: &[u8]) -> Result<(), End> {
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

    /// Applies the enforcement mode: the first error refuses the statement in strict mode; the
    /// rest become warnings for SHOW WARNINGS. Returns the refusal, if any.
    fn judge(&mut self, findings: Vec<Finding>) -> Option<ErrorInfo> {
        let mode = self.shared.config.hbase.enforcement;
        if mode == Enforcement::Off {
            return None;
        }
        if mode == Enforcement::Strict {
            if let Some(e) = findings.iter().find(|f| f.level == Level::Error) {
                return Some(ErrorInfo::new(e.code, e.sqlstate, e.message.clone()));
            }
        }
        for f in findings {
            let level = match f.level {
                Level::Error | Level::Warning => "Warning",
                Level::Note => "Note",
            };
            self.pending_warnings
                .push((level.into(), f.code, f.message));
        }
        None
    }

    /// Backend warnings of the statement just run, kept before the catalog writes reset them.
    async fn keep_backend_warnings(&mut self, ok: &OkInfo) -> Result<(), End> {
        if ok.warnings == 0 {
            return Ok(());
        }
        if let Ok(rows) = self.rows("SHOW WARNINGS").await? {
            for r in rows {
                let code = text(&r[1]).parse().unwrap_or(0);
                self.pending_warnings.push((text(&r[0]), code, text(&r[2])));
            }
        }
        Ok(())
    }

    pub(super) async fn on_hbase(&mut self, stmt: Statement) -> Result<(), End> {
        // the backend's kind and name comparison decide every lookup below
        self.flavor().await?;
        if let Err(e) = self.ensure_catalog().await? {
            return self.answer_raw(&e).await;
        }
        match stmt {
            Statement::CreateTablegroup {
                name,
                if_not_exists,
            } => self.create_tablegroup(&name, if_not_exists).await,
            Statement::DropTablegroup { name, if_exists } => {
                self.drop_tablegroup(&name, if_exists).await
            }
            Statement::ShowTablegroups { like } => self.show_tablegroups(like.as_deref()).await,
            Statement::CreateTable(t) => self.create_table(*t).await,
            Statement::DropTable { tables, .. } => self.drop_tables(&tables).await,
            Statement::RenameTable(pairs) => self.rename_tables(&pairs).await,
            Statement::AlterTable { table, actions } => self.alter_table(&table, &actions).await,
            Statement::CreateIndex { table, kind } => {
                let f = Finding {
                    rule: "R7",
                    level: Level::Error,
                    code: rules::ER_NOT_SUPPORTED,
                    sqlstate: "42000",
                    message: format!("OBKV-HBase rule R7: {kind} on HBase table '{table}': secondary indexes are not allowed"),
                };
                match self.judge(vec![f]) {
                    Some(e) => self.answer_error(e).await,
                    None => self.forward(ResponseKind::Query).await.map(drop),
                }
            }
            Statement::TruncateTable(_) => self.forward(ResponseKind::Query).await.map(drop),
            Statement::ShowCreateTable(t) => self.show_create_table(&t).await,
        }
    }

    /// Native table groups: the backend runs the statement (its answer is relayed) and the
    /// catalog follows when it succeeded.
    async fn forward_then_record(&mut self, catalog_sql: &str) -> Result<(), End> {
        let summary = self.forward(ResponseKind::Query).await?;
        if summary.error_code.is_none() {
            self.internal(catalog_sql.as_bytes()).await?;
        }
        Ok(())
    }

    async fn group_exists(&mut self, group: &str) -> Result<bool, End> {
        let sql = self.catalog().group_exists(group);
        Ok(self.rows(&sql).await?.is_ok_and(|r| !r.is_empty()))
    }

    async fn create_tablegroup(&mut self, name: &str, if_not_exists: bool) -> Result<(), End> {
        if self.flavor().await?.native_tablegroups() {
            let sql = self.catalog().insert_group(name);
            return self.forward_then_record(&sql).await;
        }
        if self.group_exists(name).await? {
            let e = ErrorInfo::new(
                1050,
                "42S01",
                format!("Table group '{name}' already exists"),
            );
            return self.answer_error_or_note(if_not_exists, e).await;
        }
        let sql = self.catalog().insert_group(name);
        match self.internal(sql.as_bytes()).await? {
            Internal::Err(e) => self.answer_raw(&e).await,
            _ => {
                info!(group = name, "table group created (kept in the catalog)");
                self.answer_ok(0, 0).await
            }
        }
    }

    async fn drop_tablegroup(&mut self, name: &str, if_exists: bool) -> Result<(), End> {
        let sql = self.catalog().group_tables(name);
        let tables = self.rows(&sql).await?.unwrap_or_default();
        if !tables.is_empty() {
            let visible = self.visible_hbase_tables().await?;
            let (seen, hidden): (Vec<_>, Vec<_>) = tables
                .iter()
                .map(|r| (text(&r[0]), text(&r[1])))
                .partition(|t| visible.contains(t));
            let mut names: Vec<String> = seen.iter().map(|(d, t)| format!("{d}.{t}")).collect();
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
        if self.flavor().await?.native_tablegroups() {
            let sql = self.catalog().delete_group(name);
            return self.forward_then_record(&sql).await;
        }
        if !self.group_exists(name).await? {
            let e = ErrorInfo::new(
                rules::ER_NO_SUCH_TABLEGROUP,
                "42S02",
                format!("Unknown table group '{name}'"),
            );
            return self.answer_error_or_note(if_exists, e).await;
        }
        let sql = self.catalog().delete_group(name);
        match self.internal(sql.as_bytes()).await? {
            Internal::Err(e) => self.answer_raw(&e).await,
            _ => self.answer_ok(0, 0).await,
        }
    }

    async fn show_tablegroups(&mut self, pattern: Option<&str>) -> Result<(), End> {
        if self.flavor().await?.native_tablegroups() {
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        let sql = self.catalog().all_groups();
        let rows = match self.rows(&sql).await? {
            Ok(r) => r,
            Err(e) => return self.answer_raw(&e).await,
        };
        let visible = self.visible_hbase_tables().await?;
        // rows come ordered by group; a table the user may not see is not named, and a group
        // none of whose tables the user may see shows as if empty
        let mut out: Vec<Vec<Option<String>>> = Vec::new();
        for r in &rows {
            let group = text(&r[0]);
            if !pattern.is_none_or(|p| like(p, &group)) {
                continue;
            }
            let (db, table) = (text(&r[2]), text(&r[1]));
            let shown = r[1].is_some() && visible.contains(&(db.clone(), table.clone()));
            let last_same_group = out.last().filter(|o| o[0].as_deref() == Some(&group));
            match (shown, last_same_group.is_some_and(|o| o[1].is_none())) {
                (true, true) => {
                    *out.last_mut().expect("checked") = vec![Some(group), Some(table), Some(db)]
                }
                (true, false) => out.push(vec![Some(group), Some(table), Some(db)]),
                (false, _) if last_same_group.is_none() => out.push(vec![Some(group), None, None]),
                (false, _) => {}
            }
        }
        self.answer_rows(&["Tablegroup_name", "Table_name", "Database_name"], &out)
            .await
    }

    /// Families already in the group (excluding `except`), with their partition clauses.
    async fn group_state(&mut self, group: &str, except: (&str, &str)) -> Result<GroupState, End> {
        let exists = self.flavor().await?.native_tablegroups() || self.group_exists(group).await?;
        let sql = self.catalog().group_tables(group);
        let rows = self.rows(&sql).await?.unwrap_or_default();
        let mut families = Vec::new();
        for r in rows {
            if text(&r[0]) == except.0 && text(&r[1]).eq_ignore_ascii_case(except.1) {
                continue;
            }
            if let Ok(Some(Statement::CreateTable(t))) =
                ddl::parse(r[3].as_deref().unwrap_or_default())
            {
                families.push((text(&r[2]), t.partition.clone()));
            }
        }
        Ok(GroupState { exists, families })
    }

    async fn create_table(&mut self, t: CreateTable) -> Result<(), End> {
        let sql = self.command[1..].to_vec();
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
        let Some(db) = (match &t.name.schema {
            Some(s) => Some(s.clone()),
            None => self.current_db().await?,
        }) else {
            return self
                .answer_error(ErrorInfo::new(1046, "3D000", "No database selected"))
                .await;
        };
        let group = t
            .name
            .hbase_parts()
            .map(|(g, _)| g.to_string())
            .or_else(|| t.tablegroup().map(str::to_owned))
            .unwrap_or_default();
        let family = t
            .name
            .hbase_parts()
            .map(|(_, f)| f.to_string())
            .unwrap_or_default();
        let state = self.group_state(&group, (&db, &t.name.name)).await?;
        let findings = check_create(&t, self.rule_config(), &state);
        if let Some(e) = self.judge(findings) {
            return self.answer_error(e).await;
        }
        let flavor = self.flavor().await?;
        let tr = translate::create_table(&t, &sql, flavor, &db);
        let created = match self.internal(&tr.create).await? {
            Internal::Err(e) => {
                self.pending_warnings.clear();
                return self.answer_raw(&e).await;
            }
            Internal::Ok(ok) => ok,
            Internal::Rows(_) => OkInfo::default(),
        };
        let existed = t.if_not_exists && created.warnings > 0;
        self.keep_backend_warnings(&created).await?;
        if existed {
            let n = self.pending_warnings.len() as u16;
            return self.answer_ok(0, n).await;
        }
        let drop_sql = format!("DROP TABLE {}", qualified(&db, &t.name));
        for step in &tr.after {
            if let Internal::Err(e) = self.internal(step).await? {
                self.internal(drop_sql.as_bytes()).await?;
                self.pending_warnings.clear();
                return self.answer_raw(&e).await;
            }
        }
        let record = self
            .catalog()
            .insert_table(&db, &t.name.name, &group, &family, &sql);
        if let Internal::Err(e) = self.internal(record.as_bytes()).await? {
            self.internal(drop_sql.as_bytes()).await?;
            self.pending_warnings.clear();
            return self.answer_raw(&e).await;
        }
        let key = self.cache_key(&db, &t.name.name);
        self.shared
            .catalog_cache
            .put(key, (group.clone(), sql.clone()));
        info!(table = %t.name, %db, %group, "HBase table created");
        let n = self.pending_warnings.len() as u16;
        self.answer_ok(0, n).await
    }

    /// The catalog entry of a table: (schema, group, family, parsed definition, original DDL).
    async fn catalog_entry(
        &mut self,
        t: &TableName,
    ) -> Result<Option<(String, String, CreateTable, Vec<u8>)>, End> {
        let Some(db) = (match &t.schema {
            Some(s) => Some(s.clone()),
            None => self.current_db().await?,
        }) else {
            return Ok(None);
        };
        let sql = self.catalog().table(&db, &t.name);
        let key = self.cache_key(&db, &t.name);
        let (group, ddl_text) = match self.rows(&sql).await? {
            Ok(rows) => match rows.first() {
                Some(r) => {
                    let entry = (text(&r[0]), r[2].clone().unwrap_or_default());
                    self.shared.catalog_cache.put(key, entry.clone());
                    entry
                }
                None => {
                    self.shared.catalog_cache.remove(&key);
                    return Ok(None);
                }
            },
            // Under LOCK TABLES (mariadb-dump's default) the catalog cannot be read on this
            // connection: what this process last read or wrote stands in for it.
            Err(e) if parse_err_code(&e) == Some(ER_TABLE_NOT_LOCKED) => {
                match self.shared.catalog_cache.get(&key) {
                    Some(entry) => entry,
                    None => return Ok(None),
                }
            }
            Err(_) => return Ok(None),
        };
        match ddl::parse(&ddl_text) {
            Ok(Some(Statement::CreateTable(c))) => Ok(Some((db, group, *c, ddl_text))),
            _ => Ok(None),
        }
    }

    /// Reads the catalog entries of these tables into the process's cache (before a LOCK
    /// TABLES, after which the catalog cannot be read on this connection).
    pub(super) async fn read_catalog_entries(&mut self, tables: &[TableName]) -> Result<(), End> {
        self.flavor().await?;
        for t in tables {
            self.catalog_entry(t).await?;
        }
        Ok(())
    }

    /// The catalog cache's key for a table: names folded as the backend compares them.
    fn cache_key(&self, db: &str, table: &str) -> (String, String) {
        if self.names_ci {
            (db.to_lowercase(), table.to_lowercase())
        } else {
            (db.to_string(), table.to_string())
        }
    }

    async fn drop_tables(&mut self, tables: &[TableName]) -> Result<(), End> {
        let mut dbs = Vec::new();
        for t in tables {
            let db = match &t.schema {
                Some(s) => Some(s.clone()),
                None => self.current_db().await?,
            };
            dbs.push(db);
        }
        let summary = self.forward(ResponseKind::Query).await?;
        if summary.error_code.is_none() {
            for (t, db) in tables.iter().zip(dbs) {
                if let Some(db) = db {
                    let sql = self.catalog().delete_table(&db, &t.name);
                    self.internal(sql.as_bytes()).await?;
                    let key = self.cache_key(&db, &t.name);
                    self.shared.catalog_cache.remove(&key);
                }
            }
        }
        Ok(())
    }

    async fn rename_tables(&mut self, pairs: &[(TableName, TableName)]) -> Result<(), End> {
        let mut findings = Vec::new();
        let mut moves = Vec::new();
        for (from, to) in pairs {
            if let Some((db, _group, def, ddl_text)) = self.catalog_entry(from).await? {
                findings.extend(check_rename(from, to));
                moves.push((db, from.clone(), to.clone(), def, ddl_text));
            }
        }
        if let Some(e) = self.judge(findings) {
            return self.answer_error(e).await;
        }
        let summary = self.forward(ResponseKind::Query).await?;
        if summary.error_code.is_some() {
            return Ok(());
        }
        for (db, from, to, def, ddl_text) in moves {
            let (group, family) = to
                .hbase_parts()
                .map(|(g, f)| (g.to_string(), f.to_string()))
                .unwrap_or_default();
            let new_ddl = [
                &ddl_text[..def.name_span.0],
                to.name.as_bytes(),
                &ddl_text[def.name_span.1..],
            ]
            .concat();
            let to_db = to.schema.clone().unwrap_or_else(|| db.clone());
            let ins = self
                .catalog()
                .insert_table(&to_db, &to.name, &group, &family, &new_ddl);
            self.internal(ins.as_bytes()).await?;
            let del = self.catalog().delete_table(&db, &from.name);
            self.internal(del.as_bytes()).await?;
            let key = self.cache_key(&db, &from.name);
            self.shared.catalog_cache.remove(&key);
        }
        Ok(())
    }

    async fn alter_table(&mut self, table: &TableName, actions: &[AlterAction]) -> Result<(), End> {
        let Some((db, group, current, ddl_text)) = self.catalog_entry(table).await? else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let state = self.group_state(&group, (&db, &table.name)).await?;
        let findings = check_alter(&current, actions, self.rule_config(), &state);
        if let Some(e) = self.judge(findings) {
            return self.answer_error(e).await;
        }
        let sql = self.command[1..].to_vec();
        // options the backend lacks are kept in the catalog only
        let flavor = self.flavor().await?;
        let cut: Vec<(usize, usize)> = actions
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
        let only_options = !cut.is_empty() && cut.len() == actions.len();
        if !only_options {
            let to_run = translate::strip_options(&sql, &cut);
            match self.internal(&to_run).await? {
                Internal::Err(e) => return self.answer_raw(&e).await,
                Internal::Ok(ok) => self.keep_backend_warnings(&ok).await?,
                Internal::Rows(_) => {}
            }
        }
        // keep the stored definition in step with what changed
        let mut new_ddl = ddl_text.clone();
        for a in actions {
            if let AlterAction::Partition(p) = a {
                let clause = &sql[p.span.0..p.span.1];
                new_ddl = match ddl::parse(&new_ddl) {
                    Ok(Some(Statement::CreateTable(c))) => match &c.partition {
                        Some(old) => {
                            [&new_ddl[..old.span.0], clause, &new_ddl[old.span.1..]].concat()
                        }
                        None => [&new_ddl[..], b" ", clause].concat(),
                    },
                    _ => new_ddl,
                };
            }
            if let AlterAction::Option(o) = a {
                if o.name == "KV_ATTRIBUTES" {
                    let opt = &sql[o.span.0..o.span.1];
                    new_ddl = match ddl::parse(&new_ddl) {
                        Ok(Some(Statement::CreateTable(c))) => match c.option("KV_ATTRIBUTES") {
                            Some(old) => {
                                [&new_ddl[..old.span.0], b" ", opt, &new_ddl[old.span.1..]].concat()
                            }
                            None => {
                                let at = c.partition.as_ref().map_or(new_ddl.len(), |p| p.span.0);
                                [&new_ddl[..at], opt, b" ", &new_ddl[at..]].concat()
                            }
                        },
                        _ => new_ddl,
                    };
                }
            }
        }
        if new_ddl != ddl_text {
            let upd = self.catalog().update_ddl(&db, &table.name, &new_ddl);
            self.internal(upd.as_bytes()).await?;
            let key = self.cache_key(&db, &table.name);
            self.shared.catalog_cache.put(key, (group.clone(), new_ddl));
        }
        let n = self.pending_warnings.len() as u16;
        self.answer_ok(0, n).await
    }

    /// SHOW CREATE TABLE of an HBase table, in the canonical multi-line form OceanBase prints:
    /// an OceanBase cluster answers itself; seekdb's own answer gets back the options it does
    /// not keep; MariaDB/MySQL's (a translation) is replaced by the user's definition rendered
    /// that way. Tools that parse it line by line (SQLAlchemy, mysqldump) see the HBase table.
    async fn show_create_table(&mut self, t: &TableName) -> Result<(), End> {
        let Some((db, _, def, ddl_text)) = self.catalog_entry(t).await? else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let flavor = self.flavor().await?;
        if flavor.native_tablegroups() {
            return self.forward(ResponseKind::Query).await.map(drop);
        }
        // The backend answers the same question first, so its grants apply: a user who may not
        // see the table gets the backend's own error (1142), never the catalog's text.
        let probe = format!("SHOW CREATE TABLE {}", qualified(&db, t));
        let backend_row = match self.internal(probe.as_bytes()).await? {
            Internal::Err(e) => return self.answer_raw(&e).await,
            Internal::Rows(rows) => rows.into_iter().next().unwrap_or_default(),
            Internal::Ok(_) => Vec::new(),
        };
        let name = backend_row
            .first()
            .map(text)
            .unwrap_or_else(|| def.name.name.clone());
        let shown = match (flavor, backend_row.get(1)) {
            (Flavor::SeekDb, Some(v)) => translate::with_kept_options(&text(v), &def),
            _ => translate::canonical_create(&def, &ddl_text),
        };
        self.answer_rows(&["Table", "Create Table"], &[vec![Some(name), Some(shown)]])
            .await
    }

    /// The (schema, table) pairs of HBase-named tables this user may see: information_schema
    /// lists only tables the user has some privilege on.
    async fn visible_hbase_tables(&mut self) -> Result<HashSet<(String, String)>, End> {
        let sql = "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES \
                   WHERE TABLE_NAME LIKE '%$%'";
        Ok(self
            .rows(sql)
            .await?
            .unwrap_or_default()
            .iter()
            .map(|r| (text(&r[0]), text(&r[1])))
            .collect())
    }

    /// `SHOW PROXY CREATE TABLEGROUPS`: one `CREATE TABLEGROUP IF NOT EXISTS` per table group,
    /// to run before restoring a dump (mysqldump knows nothing of table groups).
    pub(super) async fn answer_tablegroup_ddl(&mut self) -> Result<(), End> {
        self.flavor().await?;
        if let Err(e) = self.ensure_catalog().await? {
            return self.answer_raw(&e).await;
        }
        let sql = if self.flavor.is_some_and(Flavor::native_tablegroups) {
            "SHOW TABLEGROUPS".to_string()
        } else {
            self.catalog().all_groups()
        };
        let rows = match self.rows(&sql).await? {
            Ok(r) => r,
            Err(e) => return self.answer_raw(&e).await,
        };
        let mut groups: Vec<String> = rows.iter().map(|r| text(&r[0])).collect();
        groups.dedup();
        let out: Vec<Vec<Option<String>>> = groups
            .iter()
            .map(|g| {
                vec![Some(format!(
                    "CREATE TABLEGROUP IF NOT EXISTS {};",
                    catalog::ident(g)
                ))]
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
