//! ALTER TABLE of an HBase table, and the adoption of a table made without the proxy
//! (`ALTER TABLE g$f TABLEGROUP = g`): the stored definition kept in step, the marker spliced
//! into the user's statement.

use super::catalog::{cell, hex_cell, lossy, Entry, Internal};
use super::{End, Session};
use crate::engine::ddl as ddl_policy;
use crate::hbase::backend::Flavor;
use crate::hbase::catalog;
use crate::hbase::live;
use crate::hbase::marker::{self, Marker};
use crate::hbase::rules::{self, GroupState};
use crate::hbase::translate;
use crate::protocol::packets::ErrorInfo;
use crate::protocol::response::ResponseKind;
use crate::sql::ddl::{self, AlterAction, CreateTable, Statement, TableName};
use crate::sql::splice::Splice;

impl Session {
    pub(super) async fn alter_table(
        &mut self,
        table: &TableName,
        actions: &[AlterAction],
    ) -> Result<(), End> {
        let renamed = actions.iter().filter_map(|a| match a {
            AlterAction::Rename(to) => Some((table, to)),
            _ => None,
        });
        let v = ddl_policy::rename_into_hbase_names(renamed, self.enforcement());
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
        let exchanged = actions.iter().filter_map(|a| match a {
            AlterAction::Exchange(other) => Some((table, other)),
            _ => None,
        });
        let v = ddl_policy::exchange_with_hbase_tables(exchanged, self.enforcement());
        if let Some(e) = self.carry(v) {
            return self.answer_error(e).await;
        }
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
    pub(super) async fn live_definition(
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
    pub(super) fn name_end_of(&self, ddl: &[u8]) -> usize {
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
            let e = ddl_policy::adoption_not_alone(&name, group_option).to_error();
            return self.answer_error(e).await;
        }
        let Some(dollar) = memchr::memchr(b'$', &name) else {
            return self.forward(ResponseKind::Query).await.map(drop);
        };
        let group = name.get(..dollar).unwrap_or_default().to_vec();
        if !group_option.as_bytes().eq_ignore_ascii_case(&group) {
            let e = ddl_policy::adoption_group_mismatch(&name, group_option, &group).to_error();
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

    /// The proxy's two prefix-column triggers of a MariaDB/MySQL table, created where missing
    /// (in the proxy's own definition).
    pub(super) async fn ensure_prefix_triggers(
        &mut self,
        schema: &[u8],
        name: &[u8],
        column: &str,
        n: u64,
    ) -> Result<Result<(), Vec<u8>>, End> {
        let qualified = [
            catalog::ident_bytes(schema),
            b".".to_vec(),
            catalog::ident_bytes(name),
        ]
        .concat();
        let triggers = translate::prefix_triggers(schema, &qualified, &lossy(name), column, n);
        for (trigger, stmt) in triggers {
            let q = format!(
                "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {} AND TRIGGER_NAME = {}",
                catalog::client_text(schema),
                catalog::client_text(trigger.as_bytes())
            );
            let exists = match self.rows(&q).await? {
                Ok(rows) => rows.first().is_some_and(|r| cell(r, 0) != b"0"),
                Err(e) => return Ok(Err(e)),
            };
            if exists {
                continue;
            }
            if let Internal::Err(e) = self.internal(&stmt).await? {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }

    /// CREATE TRIGGER of one of the proxy's own triggers (a restored dump): the proxy's triggers
    /// of the table are made where missing, in its own definition, and the client gets OK.
    pub(super) async fn answer_proxy_trigger(&mut self, t: &TableName) -> Result<(), End> {
        if self.flavor().await? == Flavor::MySqlFamily {
            if let Some(entry) = self.catalog_entry(t).await? {
                if let Some((col, n)) = entry.def.table.prefix_column() {
                    let col = col.to_string();
                    let done = self
                        .ensure_prefix_triggers(&entry.schema, &entry.name, &col, n)
                        .await?;
                    if let Err(e) = done {
                        return self.answer_raw(&e).await;
                    }
                }
            }
        }
        self.answer_ok(0, 0).await
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
                if let Err(e) = self.ensure_prefix_triggers(&schema, &name, col, n).await? {
                    return self.answer_raw(&e).await;
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
