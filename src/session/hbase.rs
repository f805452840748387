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

use std::collections::HashSet;
use std::sync::Arc;

use tracing::{info, warn};

use super::catalog::{
    cell, hex_cell, lossy, text, Internal, Marked, ER_BAD_DB, ER_NO_SUCH_TABLE, ER_TABLE_EXISTS,
};
use super::{End, Session};
use crate::engine::ddl as ddl_policy;
use crate::hbase::backend::Flavor;
use crate::hbase::catalog::{self, like, Definition};
use crate::hbase::marker::{self, Marker};
use crate::hbase::rules::{self, Level, Note, RuleConfig};
use crate::hbase::translate;
use crate::protocol::constants::er;
use crate::protocol::packets::{parse_err_code, ErrorInfo, OkInfo};
use crate::protocol::response::ResponseKind;
use crate::sql::ddl::{self, CreateTable, Statement, TableName};

/// A group's UTF-8 name and its tables, (database, table) as the client reads them.
type GroupListing = (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

impl Session {
    pub(super) fn rule_config(&self) -> RuleConfig {
        let h = &self.cfg.hbase;
        RuleConfig {
            require_tablegroup_option: h.require_tablegroup_option,
            multiple_families: h.multiple_families,
        }
    }

    /// IF [NOT] EXISTS turns an error into a note and an OK, as MySQL does for tables.
    async fn answer_error_or_note(&mut self, soften: bool, e: ErrorInfo) -> Result<(), End> {
        if soften {
            self.pending_warnings
                .push(Note::new(Level::Note, e.code, e.message));
            return self.answer_ok(0, 1).await;
        }
        self.answer_error(e).await
    }

    /// An engine verdict on HBase DDL carried out: its notes are kept for SHOW WARNINGS; the
    /// refusal, if any, is returned for the caller to answer.
    pub(super) fn carry(&mut self, v: ddl_policy::DdlVerdict) -> Option<ErrorInfo> {
        for f in v.notes {
            self.pending_warnings.push(Note::from(f));
        }
        v.refuse.map(|r| {
            self.count_refusal(&r);
            r.to_error()
        })
    }

    pub(super) fn enforcement(&self) -> rules::Enforcement {
        self.cfg.hbase.enforcement
    }

    /// Backend warnings of the statement just run, kept before the catalog writes reset them.
    pub(super) async fn keep_backend_warnings(&mut self, ok: &OkInfo) -> Result<(), End> {
        if ok.warnings == 0 {
            return Ok(());
        }
        if let Ok(rows) = self.rows("SHOW WARNINGS").await? {
            for r in rows {
                let code = lossy(cell(&r, 1)).parse().unwrap_or(0);
                self.pending_warnings.push(Note::new(
                    Level::parse(cell(&r, 0)),
                    code,
                    lossy(cell(&r, 2)),
                ));
            }
        }
        Ok(())
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
                let e = ddl_policy::tablegroup_exists(name).to_error();
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
            let shown: Vec<(&[u8], &[u8])> =
                seen.iter().map(|m| (&m.schema[..], &m.name[..])).collect();
            let e = ddl_policy::group_still_has_tables(name, &shown, hidden.len()).to_error();
            return self.answer_error(e).await;
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
                let e = ddl_policy::unknown_tablegroup(name).to_error();
                self.answer_error_or_note(if_exists, e).await
            }
            Internal::Ok(ok) if ok.affected_rows == 0 => {
                let e = ddl_policy::unknown_tablegroup(name).to_error();
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
            // a warning, never a refusal: the table is no HBase table
            self.carry(ddl_policy::kqtv_without_dollar(&t.name));
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
                .is_some_and(|w| w.iter().any(|n| n.code == ER_TABLE_EXISTS));
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
        let v = ddl_policy::rename_into_hbase_names(
            pairs.iter().map(|(a, b)| (a, b)),
            self.enforcement(),
        );
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
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
        let notes = std::mem::take(&mut self.pending_warnings);
        if !notes.is_empty() {
            self.keep_notes(notes);
        }
        self.forward(ResponseKind::Query).await.map(drop)
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
            .unwrap_or_else(|| def.table.name.name.as_bytes().to_vec());
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
}
