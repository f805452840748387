//! Prepared statements: what the session remembers of each, and the prefix-scan rewrite decided
//! at each COM_STMT_EXECUTE.
//!
//! A statement whose bound values decide the prefix (`K LIKE ?`, `K >= ? AND K < ?`) is
//! prepared on the backend as the client sent it; the client sees only that statement (its id,
//! parameter count, metadata). At an execution whose values pin one prefix, the proxy sends the
//! execution to a *variant* it prepared next to it — the same text with `` AND `K_PREFIX` = ? ``
//! (or `IN (?, …)`) spliced after the WHERE clause — with the prefixes bound as BLOB values;
//! other executions go to the client's statement. FETCH follows the execution that opened the
//! cursor, RESET and CLOSE reach every backend statement, and MariaDB's "last prepared
//! statement" id (0xFFFFFFFF) keeps meaning the client's last statement. An execution whose
//! values the proxy cannot see (sent with COM_STMT_SEND_LONG_DATA) goes to the client's
//! statement.

use std::sync::atomic::Ordering::Relaxed;

use super::carried::{Carried, Target, NO_STATEMENT};
use super::{End, Session};
use crate::admin::bump;
use crate::admin::metrics::Outcome;
use crate::backend;
use crate::engine::decision::TableUse;
use crate::engine::prefix_scan::{certain, Bound, Execution, Need, PreparedPlan};
use crate::engine::write::{self, Bound as WriteBound, WritePlan};
use crate::engine::{decide_execution, BulkExecution, ExecContext};
use crate::protocol::constants::{com, er, status};
use crate::protocol::execute::{self, Execute};
use crate::protocol::packets::ErrorInfo;
use crate::protocol::response::ResponseKind;
use crate::sql::dml::LitCharset;

/// Statements of one session with a rewrite plan (each holds a copy of its text).
const MAX_PLANS: usize = 256;
/// A plan's text is copied only up to this size.
const MAX_PLAN_TEXT: usize = 64 * 1024;
/// Variants (one per number of prefixes) per statement.
const MAX_VARIANTS: usize = 4;

/// Where each parameter's value lies in an execute packet's values (None: NULL).
use crate::protocol::execute::Spans;

/// What the session remembers of a prepared statement.
pub(super) struct Prepared {
    pub params: u16,
    pub columns: u16,
    /// Running it may change the session's current database or character set.
    pub changes_session: bool,
    /// Running it may be DDL (the process's schemas are read again afterwards).
    pub ddl: bool,
    pub rewrite: Option<Box<Rewrite>>,
    /// A write (or locking read) on an HBase table: checked at each execution.
    pub write: Option<WriteChecks>,
    /// A multiplexed session's statement (`Statements::carrying`): what prepares it again on
    /// another connection, and where it is prepared.
    pub carried: Option<Box<Carried>>,
}

/// The write rules' view of a prepared statement.
pub(super) struct WriteChecks {
    pub plan: std::sync::Arc<WritePlan>,
    /// The parameter types in force (from the last execution that bound them).
    pub types: Option<Vec<u8>>,
    /// Bytes sent with COM_STMT_SEND_LONG_DATA per parameter since the last execution.
    pub long: Vec<(u16, u64)>,
    /// Pieces came for more parameters than `long` keeps: the next execution cannot be read.
    pub long_lost: bool,
}

/// The prefix-scan rewrite of one prepared statement.
pub(super) struct Rewrite {
    plan: Box<PreparedPlan>,
    text: Vec<u8>,
    /// The parameter types in force (from the last execution that bound them).
    types: Option<Vec<u8>>,
    /// The client's statement on the backend has seen `types`.
    original_has_types: bool,
    /// (number of prefixes, backend statement id).
    variants: Vec<(usize, u32)>,
    /// Preparing a variant failed: executions go to the client's statement.
    failed: bool,
    /// COM_STMT_SEND_LONG_DATA since the last execution or reset.
    long_data: bool,
    /// The backend statement of the last execution (a cursor it opened lives there).
    last_target: Option<u32>,
    /// The schema cache's lookup that last found the table still as planned: while the cache
    /// would find the same, the next execution need not look again.
    seen: Option<crate::hbase::schema::Seen>,
}

/// The largest buffer a session keeps for its next rebuilt execution (`Statements::spare`).
const SPARE_PACKET: usize = 1024;

/// Hashes the statement ids the backend hands out (small, mostly consecutive numbers, never
/// chosen by a client) with one multiplication instead of SipHash: looked up several times per
/// execution.
#[derive(Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, id: u32) {
        // Fibonacci hashing: the high bits hashbrown uses vary with every bit of the id
        self.0 = (self.0 ^ u64::from(id)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdMap<V> = std::collections::HashMap<u32, V, std::hash::BuildHasherDefault<IdHasher>>;

/// The session's prepared statements.
#[derive(Default)]
pub(super) struct Statements {
    by_id: IdMap<Prepared>,
    plans: usize,
    /// The client's last successfully prepared statement (MariaDB's id 0xFFFFFFFF).
    last_prepared: Option<u32>,
    /// The proxy prepared a statement of its own after the client's last prepare, so the
    /// backend's "last prepared" is no longer the client's.
    ours_prepared_last: bool,
    /// SQL-level prepared statements (`PREPARE name FROM …`) that write HBase tables, by name
    /// as the backend compares them: what each `EXECUTE name USING …` is checked with.
    pub by_name: std::collections::HashMap<Vec<u8>, SqlPlan>,
    /// Statements are carried (a multiplexed session): the ids the client sees are the
    /// proxy's, each statement prepared on every connection it runs on.
    pub carrying: bool,
    /// Carried statements with pieces of a long value on the connection held (sent with
    /// COM_STMT_SEND_LONG_DATA, not executed, reset or closed yet): the connection is kept.
    long_pending: Vec<u32>,
    /// Bytes of the carried statements' texts.
    carried_bytes: usize,
    /// The client's packet the last rewritten execution was rebuilt from: the next rebuilt
    /// packet is written into it (an execution allocates no packet). One a session, at most
    /// `SPARE_PACKET` bytes, given back when the session rests (`Session::trim`).
    pub spare: Vec<u8>,
}

/// Most statements a session whose statements are carried keeps (a prepare beyond it is
/// refused as the backend refuses one over `max_prepared_stmt_count`).
pub(super) const MAX_CARRIED: usize = 16_382;

/// Most bytes of text a session's carried statements keep (a prepare beyond it is refused).
pub(super) const MAX_CARRIED_BYTES: usize = 64 * 1024 * 1024;

/// Where the ids the proxy gives carried statements start, counting down (backend ids count
/// up from 1, so the two meet only after two billion prepares on one connection).
const CARRIED_IDS_TOP: u32 = 0x7fff_ffff;

/// The write rules' view of a SQL-level prepared statement.
pub(super) struct SqlPlan {
    pub plan: std::sync::Arc<WritePlan>,
    /// The number of `?` its EXECUTE binds.
    pub params: usize,
}

/// Most SQL-level prepared writes a session keeps plans for (a PREPARE beyond it is refused
/// under strict enforcement).
pub(super) const MAX_SQL_PLANS: usize = 1024;

impl Statements {
    pub fn clear(&mut self) {
        let carrying = self.carrying;
        *self = Statements::default();
        self.carrying = carrying;
    }

    /// Every statement, taken (a reset or a change of user closed them).
    pub fn take_all(&mut self) -> Vec<Prepared> {
        let all = std::mem::take(&mut self.by_id).into_values().collect();
        self.clear();
        all
    }

    /// Some carried statement has pieces of a long value on the connection held.
    pub fn long_pending(&self) -> bool {
        !self.long_pending.is_empty()
    }

    /// The command's statement's pieces of a long value went (an execution, a reset, a close).
    fn long_done(&mut self, id: Option<u32>) {
        if let Some(id) = id {
            self.long_pending.retain(|p| *p != id);
        }
    }

    /// Whether a carried statement of `len` bytes of text is one too many.
    pub fn carried_full(&self, len: usize) -> bool {
        self.by_id.len() >= MAX_CARRIED
            || self.carried_bytes.saturating_add(len) > MAX_CARRIED_BYTES
    }

    /// The id the client is given for a carried statement the backend prepared as `backend`:
    /// the backend's own when the session has no statement of that id, else the highest free
    /// one below `CARRIED_IDS_TOP`. (The same answer until a statement is added or closed.)
    pub fn client_id_for(&self, backend: u32) -> u32 {
        if backend != 0 && backend != u32::MAX && !self.by_id.contains_key(&backend) {
            return backend;
        }
        let mut id = CARRIED_IDS_TOP;
        while self.by_id.contains_key(&id) {
            id -= 1;
        }
        id
    }

    /// The carried statements not prepared on the connection `serial`.
    pub fn carried_elsewhere(&self, serial: u64) -> Vec<u32> {
        self.by_id
            .iter()
            .filter(|(_, p)| {
                p.carried
                    .as_ref()
                    .is_some_and(|c| c.on.iter().all(|o| o.serial != serial))
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// A carried statement with its number of parameters (one lookup).
    pub fn carried_with_params(&mut self, id: u32) -> Option<(usize, &mut Carried)> {
        let p = self.by_id.get_mut(&id)?;
        Some((usize::from(p.params), p.carried.as_deref_mut()?))
    }

    pub fn carried_mut(&mut self, id: u32) -> Option<&mut Carried> {
        self.by_id.get_mut(&id)?.carried.as_deref_mut()
    }

    /// The client's statement a command names (0xFFFFFFFF: the last one prepared).
    pub fn resolve(&self, cmd: &[u8]) -> Option<u32> {
        match execute::statement_id(cmd)? {
            u32::MAX => self.last_prepared,
            id => Some(id),
        }
    }

    pub fn get(&self, id: u32) -> Option<&Prepared> {
        self.by_id.get(&id)
    }

    /// A statement the client prepared.
    pub fn prepared(
        &mut self,
        id: u32,
        mut p: Prepared,
        plan: Option<Box<PreparedPlan>>,
        text: &[u8],
    ) {
        if let Some(old) = self.by_id.remove(&id) {
            self.plans -= usize::from(old.rewrite.is_some());
            if let Some(c) = &old.carried {
                self.carried_bytes = self.carried_bytes.saturating_sub(c.text.len());
            }
        }
        if let Some(c) = &p.carried {
            self.carried_bytes = self.carried_bytes.saturating_add(c.text.len());
        }
        if let Some(plan) = plan {
            if self.plans < MAX_PLANS && text.len() <= MAX_PLAN_TEXT {
                self.plans += 1;
                p.rewrite = Some(Box::new(Rewrite {
                    plan,
                    text: text.to_vec(),
                    types: None,
                    original_has_types: false,
                    variants: Vec::new(),
                    failed: false,
                    long_data: false,
                    last_target: None,
                    seen: None,
                }));
            }
        }
        self.by_id.insert(id, p);
        self.last_prepared = Some(id);
        self.ours_prepared_last = false;
    }

    /// A prepare the backend refused: 0xFFFFFFFF names no statement now.
    pub fn prepare_failed(&mut self) {
        self.last_prepared = None;
        self.ours_prepared_last = false;
    }

    /// The client closed a statement: the backend statements to close with it (its
    /// variants), and where it was carried to.
    pub fn close(&mut self, id: u32) -> (Vec<u32>, Option<Box<Carried>>) {
        let Some(p) = self.by_id.remove(&id) else {
            return (Vec::new(), None);
        };
        if let Some(c) = &p.carried {
            self.carried_bytes = self.carried_bytes.saturating_sub(c.text.len());
        }
        let variants = match p.rewrite {
            Some(rw) => {
                self.plans -= 1;
                rw.variants.iter().map(|(_, v)| *v).collect()
            }
            None => Vec::new(),
        };
        (variants, p.carried)
    }

    /// MariaDB's 0xFFFFFFFF in a command the client sends: the client's last statement, named
    /// explicitly once the proxy has prepared one of its own after it.
    pub fn pin_last(&self, cmd: &mut [u8]) {
        if self.ours_prepared_last && execute::statement_id(cmd) == Some(u32::MAX) {
            // no statement of the client's: an id the backend does not know, so it refuses
            execute::with_statement_id(cmd, self.last_prepared.unwrap_or(u32::MAX - 1));
        }
    }
}

impl Session {
    pub(super) async fn on_execute(&mut self) -> Result<(), End> {
        let id = self.statements.resolve(&self.command);
        // (and the HBase table an execution writes or scans, for the metrics: one lookup)
        // (and, for a multiplexed session, the statement's id on the connection held when
        // nothing else is to be done for it: `Carried::ready_on`)
        let serial = self.conn_serial;
        let (changes_session, ddl, rewrite, writes, here, table) =
            match id.and_then(|id| self.statements.get(id)) {
                Some(p) => (
                    p.changes_session,
                    p.ddl,
                    p.rewrite.is_some(),
                    p.write.is_some(),
                    p.carried
                        .as_deref()
                        .and_then(|c| c.ready_on(serial, &self.command, usize::from(p.params))),
                    match (&p.write, &p.rewrite) {
                        (Some(w), _) => Some((w.plan.schema.clone(), TableUse::Write)),
                        (None, Some(r)) => Some((r.plan.schema.clone(), TableUse::Read)),
                        _ => None,
                    },
                ),
                None => (false, false, false, false, None, None),
            };
        self.activity.tables.clear();
        if let Some(t) = &table {
            self.activity.tables.push(t.clone());
        }
        if changes_session {
            self.forget_session_facts();
            // (it may set the character set: read again before the next statement on an
            // HBase table is decided)
            self.charset_changed = true;
        }
        let bulk = self.command.first() == Some(&com::STMT_BULK_EXECUTE);
        // its string values are converted to the connection's character set: read it again
        // if it may have become a wide one
        if (writes || rewrite) && self.charset_stale() {
            self.read_charset().await?;
        }
        let mut pin = None;
        // (a read, most executions, needs no rules, nor the clock they read)
        if let (Some(id), true) = (id, writes) {
            match self.check_write_execution(id, bulk).await? {
                Checked::Refused(e, long_data) => {
                    bump(&self.shared.stats.answered_locally);
                    self.note_execution(table.as_ref().map(|(t, u)| (t, *u)), Outcome::Refused);
                    let target = match (long_data, self.statements.carrying) {
                        (false, _) => None,
                        (true, false) => Some(id),
                        (true, true) => match self.carried_target(id, false, false).await? {
                            Target::Backend(b) => Some(b),
                            _ => None,
                        },
                    };
                    if let Some(target) = target {
                        // the backend holds the pieces sent for this execution: dropped, so
                        // the next execution's pieces do not add to them
                        let mut cmd = vec![com::STMT_RESET];
                        cmd.extend_from_slice(&target.to_le_bytes());
                        self.own_command(&cmd).await?;
                    }
                    self.statements.long_done(Some(id));
                    return self.answer_error(e).await;
                }
                Checked::Runs(p) => pin = p,
            }
        }
        let outcome = if rewrite && !bulk {
            Outcome::Rewritten
        } else {
            Outcome::Forwarded
        };
        self.note_execution(table.as_ref().map(|(t, u)| (t, *u)), outcome);
        let result = match (id, rewrite && !bulk) {
            (Some(id), true) => self.execute_with_rewrite(id).await,
            // a multiplexed session's: the statement of the connection held
            // (the write checks ran on the same connection)
            _ if self.statements.carrying => match here.filter(|_| self.conn_serial == serial) {
                Some(bid) => {
                    execute::with_statement_id(&mut self.command, bid);
                    self.forward(ResponseKind::Execute).await.map(drop)
                }
                None => match self.carry_execution(id).await {
                    Ok(true) => self.forward(ResponseKind::Execute).await.map(drop),
                    other => other.map(drop),
                },
            },
            _ => {
                self.statements.pin_last(&mut self.command);
                self.forward(ResponseKind::Execute).await.map(drop)
            }
        };
        if ddl {
            self.shared.schemas.clear();
        }
        self.statements.long_done(id);
        // the execution's partition fixes the transaction's, once it ran
        if let (Some(p), true) = (pin, self.last_status & status::IN_TRANS != 0) {
            if self.txn_pin.is_none() {
                self.txn_pin = Some(p);
            }
        }
        result
    }

    /// The write rules and the transaction guard for one execution of a prepared write, with
    /// the values it binds (a value sent with SEND_LONG_DATA is known by its length).
    async fn check_write_execution(&mut self, id: u32, bulk: bool) -> Result<Checked, End> {
        let Some(rules) = self.write_rules() else {
            return Ok(Checked::Runs(None));
        };
        let escape = self.reading().reported_backslash_escape();
        let txn = self.txn();
        let Some(p) = self.statements.by_id.get_mut(&id) else {
            return Ok(Checked::Runs(None));
        };
        let params = usize::from(p.params);
        let Some(w) = p.write.as_mut() else {
            return Ok(Checked::Runs(None));
        };
        // The pieces sent with SEND_LONG_DATA and the parameter types this execution is read
        // with. What the proxy keeps of them changes only as the backend's does: the pieces
        // are dropped on both sides when the execution runs or is refused (a refusal resets
        // them on the backend), and types the execution sends are kept only once it runs (a
        // refused execution never reaches the backend, which keeps the types before it).
        let long = std::mem::take(&mut w.long);
        let plan = w.plan.clone();
        let unreadable = |long: &Vec<(u16, u64)>| {
            Ok(Checked::Refused(
                ErrorInfo::new(
                    er::MALFORMED_PACKET,
                    "08S01",
                    "Malformed communication packet (obkv-proxy: an execution of a prepared \
                     write to an HBase table whose values it cannot read)",
                ),
                !long.is_empty(),
            ))
        };
        let untyped = |long: &Vec<(u16, u64)>| {
            Ok(Checked::Refused(
                ErrorInfo::new(
                    er::WRONG_ARGUMENTS,
                    "HY000",
                    "Incorrect arguments to mysqld_stmt_execute (obkv-proxy: no parameter \
                     types were bound)",
                ),
                !long.is_empty(),
            ))
        };
        let mut sent_types: Option<Vec<u8>> = None;
        if std::mem::take(&mut w.long_lost) {
            return unreadable(&long);
        }
        let conn = self.charset_fact;
        let ctx = ExecContext {
            rules: &rules,
            conn,
            backslash_escape: escape,
            txn: &txn,
        };
        let out = if bulk {
            // MariaDB's bulk execute: every row checked, the partitions of all gathered
            let Some(b) = execute::parse_bulk(&self.command, params) else {
                return unreadable(&long);
            };
            sent_types = b.types.map(<[u8]>::to_vec);
            let Some(types) = sent_types.clone().or_else(|| w.types.clone()) else {
                return untyped(&long);
            };
            let mut judged = BulkExecution::new(&plan);
            let mut rows = execute::BulkRows::new(&types, b.rows);
            let mut row = Vec::with_capacity(params);
            let mut unreadable = false;
            while let Some(ok) = rows.next_row(&mut row) {
                if !ok {
                    unreadable = true;
                    break;
                }
                let bound = |i: u32| -> WriteBound<'_> {
                    let i = i as usize;
                    match (row.get(i), types.get(2 * i), types.get(2 * i + 1)) {
                        (Some(execute::BulkValue::Value(a, z)), Some(ty), Some(flags)) => {
                            bound_value(*ty, *flags & 0x80 != 0, b.rows, (*a, *z))
                        }
                        (Some(execute::BulkValue::Null), _, _) => WriteBound::Null,
                        (Some(execute::BulkValue::Default), _, _) => WriteBound::Default,
                        _ => WriteBound::Other,
                    }
                };
                if !judged.row(&bound, &ctx) {
                    break;
                }
            }
            judged.finish(unreadable, &ctx)
        } else if params == 0 {
            // literals only: checked at the prepare, placed for the guard at each execution
            decide_execution(&plan, None, &ctx)
        } else {
            let Some(e) = execute::parse(&self.command, params) else {
                return unreadable(&long);
            };
            sent_types = e.types.map(<[u8]>::to_vec);
            let Some(mut types) = sent_types.clone().or_else(|| w.types.clone()) else {
                return untyped(&long);
            };
            // a value sent in pieces is not in the packet: read as a NULL-typed placeholder
            for (i, _) in &long {
                if let Some(t) = types.get_mut(2 * usize::from(*i)) {
                    *t = 0x06;
                }
            }
            let spans = execute::value_spans(e.nulls, &types, e.values);
            let bound = |i: u32| -> WriteBound<'_> {
                if let Some((_, n)) = long.iter().find(|(p, _)| u32::from(*p) == i) {
                    return WriteBound::Length(*n);
                }
                let i = i as usize;
                let Some(spans) = &spans else {
                    return WriteBound::Other;
                };
                let (Some(span), Some(ty), Some(flags)) =
                    (spans.get(i), types.get(2 * i), types.get(2 * i + 1))
                else {
                    return WriteBound::Other;
                };
                let Some(span) = span else {
                    return WriteBound::Null;
                };
                bound_value(
                    *ty,
                    *flags & 0x80 != 0,
                    e.values,
                    execute::span_range(*span),
                )
            };
            decide_execution(&plan, Some(&bound), &ctx)
        };
        if let Some(e) = out.refuse {
            self.count_refusal(&e);
            return Ok(Checked::Refused(e.to_error(), !long.is_empty()));
        }
        // it runs: the types it sends are the statement's on the backend from now on
        if let (Some(t), Some(w)) = (
            sent_types,
            self.statements
                .by_id
                .get_mut(&id)
                .and_then(|p| p.write.as_mut()),
        ) {
            w.types = Some(t);
        }
        self.keep_findings(out.notes);
        // an INSERT's rowkeys are its rows'; an UPDATE's or DELETE's only placed them (shown
        // to the advisor once the execution ran: `settle_observations`)
        let keys = matches!(plan.shape, crate::engine::write::Shape::Insert { .. });
        let room = self.activity.room();
        for what in crate::engine::write::observed(out.touch, out.rows, keys, room) {
            self.activity.observe(crate::engine::decision::Observation {
                table: plan.schema.clone(),
                what,
            });
        }
        let pin = out.pin;
        Ok(Checked::Runs(pin))
    }

    /// COM_STMT_SEND_LONG_DATA: the next execution's value is not in its packet.
    pub(super) async fn on_long_data(&mut self) -> Result<(), End> {
        if let Some(rw) = self.rewrite_of_command() {
            rw.long_data = true;
        }
        // count the bytes as they pass (the value itself is never held)
        let param = self
            .command
            .get(5..7)
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        let len = self.command.len().saturating_sub(7) as u64;
        if let (Some(param), Some(w)) = (param, self.write_of_command()) {
            if let Some((_, n)) = w.long.iter_mut().find(|(p, _)| *p == param) {
                *n = n.saturating_add(len);
            } else if w.long.len() < 4096 {
                w.long.push((param, len));
            } else {
                w.long_lost = true;
            }
        }
        if self.statements.carrying {
            if let Some(id) = self.statements.resolve(&self.command) {
                let pending = &mut self.statements.long_pending;
                if !pending.contains(&id) && self.statements.by_id.contains_key(&id) {
                    pending.push(id);
                }
            }
            // (no answer to it: a statement that cannot be prepared here is named as unknown,
            // and its execution answers)
            self.carry_command(true, false).await?;
        } else {
            self.statements.pin_last(&mut self.command);
        }
        self.forward_without_response().await
    }

    /// COM_STMT_FETCH: from the backend statement whose execution opened the cursor.
    pub(super) async fn on_fetch(&mut self) -> Result<(), End> {
        let target = self.rewrite_of_command().and_then(|rw| rw.last_target);
        match target {
            Some(t) => execute::with_statement_id(&mut self.command, t),
            None if self.statements.carrying => {
                // (a cursor pinned the session: its statement is on the connection held)
                self.carry_command(false, false).await?;
            }
            None => self.statements.pin_last(&mut self.command),
        }
        self.forward(ResponseKind::Fetch).await.map(drop)
    }

    /// COM_STMT_RESET: the client's statement answers; a variant with a cursor open is reset
    /// first (quietly).
    pub(super) async fn on_stmt_reset(&mut self) -> Result<(), End> {
        let id = self.statements.resolve(&self.command);
        self.statements.long_done(id);
        // the client's statement on the backend (a carried one's: on the connection held)
        let serial = self.conn_serial;
        let own = match (id, self.statements.carrying) {
            (Some(id), true) => self
                .statements
                .carried_mut(id)
                .and_then(|c| c.on.iter().find(|o| o.serial == serial).map(|o| o.id)),
            (id, _) => id,
        };
        let mut variant = None;
        if let Some(w) = self.write_of_command() {
            w.long.clear();
            w.long_lost = false;
        }
        if let Some(rw) = self.rewrite_of_command() {
            rw.long_data = false;
            variant = rw.last_target.take().filter(|t| Some(*t) != own);
        }
        if let Some(v) = variant {
            let mut cmd = vec![com::STMT_RESET];
            cmd.extend_from_slice(&v.to_le_bytes());
            self.own_command(&cmd).await?;
        }
        if self.statements.carrying {
            if !self.carry_command(true, true).await? {
                return Ok(());
            }
        } else {
            self.statements.pin_last(&mut self.command);
        }
        self.forward(ResponseKind::Single).await.map(drop)
    }

    /// COM_STMT_CLOSE: the client's statement and its variants (no response to any).
    pub(super) async fn on_stmt_close(&mut self) -> Result<(), End> {
        let id = self.statements.resolve(&self.command);
        self.statements.long_done(id);
        let (variants, carried) = match id {
            Some(id) => self.statements.close(id),
            None => (Vec::new(), None),
        };
        if self.statements.carrying {
            // every backend statement that is it, wherever it is (nothing of the client's
            // packet goes: its id is the proxy's)
            return self.close_carried(carried, &variants).await;
        }
        self.statements.pin_last(&mut self.command);
        for v in variants {
            let mut cmd = vec![com::STMT_CLOSE];
            cmd.extend_from_slice(&v.to_le_bytes());
            be!(self).queue_command(&cmd);
        }
        self.forward_without_response().await
    }

    fn write_of_command(&mut self) -> Option<&mut WriteChecks> {
        let id = self.statements.resolve(&self.command)?;
        self.statements.by_id.get_mut(&id)?.write.as_mut()
    }

    fn rewrite_of_command(&mut self) -> Option<&mut Rewrite> {
        let id = self.statements.resolve(&self.command)?;
        self.statements.by_id.get_mut(&id)?.rewrite.as_deref_mut()
    }

    /// An execution of a statement with a rewrite plan.
    async fn execute_with_rewrite(&mut self, id: u32) -> Result<(), End> {
        let Some(p) = self.statements.by_id.get_mut(&id) else {
            return self.forward(ResponseKind::Execute).await.map(drop);
        };
        let (params, columns) = (usize::from(p.params), p.columns);
        // the client's statement on the backend (a multiplexed session's: pinned when it was
        // prepared, so on the connection held)
        let backend_id = match self.statements.carrying {
            false => id,
            true => match self.carried_target(id, true, true).await? {
                Target::Backend(b) => b,
                Target::Unknown => NO_STATEMENT,
                Target::Answered => return Ok(()),
            },
        };
        let Some(mut rw) = self
            .statements
            .by_id
            .get_mut(&id)
            .and_then(|p| p.rewrite.take())
        else {
            execute::with_statement_id(&mut self.command, backend_id);
            return self.forward(ResponseKind::Execute).await.map(drop);
        };
        let command = std::mem::take(&mut self.command);
        let routed = self
            .route_execution(backend_id, params, columns, &mut rw, &command)
            .await;
        self.command = command;
        let routed = routed?;
        match routed {
            Some(packet) => {
                let client = std::mem::replace(&mut self.command, packet);
                if client.capacity() <= SPARE_PACKET {
                    self.statements.spare = client;
                }
            }
            None => execute::with_statement_id(&mut self.command, backend_id),
        }
        if let Some(p) = self.statements.by_id.get_mut(&id) {
            p.rewrite = Some(rw);
        }
        self.forward(ResponseKind::Execute).await.map(drop)
    }

    /// Where this execution goes: a packet to send instead of the client's (a variant with the
    /// prefixes, or the client's statement with the parameter types it has not seen), or None
    /// to send the client's packet to the client's statement.
    async fn route_execution(
        &mut self,
        id: u32,
        params: usize,
        columns: u16,
        rw: &mut Rewrite,
        command: &[u8],
    ) -> Result<Option<Vec<u8>>, End> {
        let Some(e) = execute::parse(command, params) else {
            rw.last_target = Some(id);
            return Ok(None); // not readable: the backend answers it
        };
        if let Some(t) = e.types {
            // most drivers send them with every execution: the buffer is kept
            let kept = rw.types.get_or_insert_with(Vec::new);
            kept.clear();
            kept.extend_from_slice(t);
        }
        // the types in force, lent out for this execution (not copied) and given back
        let types = rw.types.take();
        let routed = self
            .route_typed(id, params, columns, rw, &e, types.as_deref())
            .await;
        rw.types = types;
        routed
    }

    /// `route_execution` with the parameter types in force (None: not sent yet). What the
    /// decision needs from the backend (the session's character set, the table's schema, a
    /// variant prepared) is fetched between attempts of `route_now`, which decides without
    /// waiting: an execution that needs nothing fetched, most of them, decides in one attempt,
    /// and nothing it computes is carried across a wait.
    async fn route_typed(
        &mut self,
        id: u32,
        params: usize,
        columns: u16,
        rw: &mut Rewrite,
        e: &Execute<'_>,
        types: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>, End> {
        let long_data = std::mem::take(&mut rw.long_data);
        let mut fetched = Fetched::default();
        // (each kind is fetched at most once: at most four attempts)
        loop {
            let fetch = match self.route_now(id, rw, e, types, long_data, fetched) {
                Route::Ready(packet) => return Ok(packet),
                Route::Fetch(f) => f,
            };
            let need = match fetch {
                Fetch::Charset => {
                    fetched.charset = true;
                    Need {
                        charset: true,
                        ..Need::default()
                    }
                }
                Fetch::Schema => {
                    fetched.schema = true;
                    let key = &rw.plan.key;
                    Need {
                        tables: vec![(Some(key.0.clone()), key.1.clone())],
                        ..Need::default()
                    }
                }
                Fetch::Variant(k) => {
                    fetched.variant = true;
                    self.variant(rw, k, params, columns).await?;
                    continue;
                }
            };
            self.read_facts(&need).await?;
        }
    }

    /// One attempt at routing an execution (`route_typed`): the packet to send (or None: the
    /// client's, to the client's statement), or what must be fetched first (never what
    /// `fetched` says was fetched already).
    fn route_now(
        &mut self,
        id: u32,
        rw: &mut Rewrite,
        e: &Execute<'_>,
        types: Option<&[u8]>,
        long_data: bool,
        fetched: Fetched,
    ) -> Route {
        let found = match (types, long_data || rw.failed) {
            (Some(types), false) => match self.execution_prefixes(rw, e, types, fetched) {
                Ok(found) => found,
                Err(fetch) => return Route::Fetch(fetch),
            },
            _ => None,
        };
        if let (Some((prefixes, spans)), Some(types)) = (found, types) {
            let k = prefixes.len();
            let variant = match rw.variants.iter().find(|(n, _)| *n == k) {
                Some((_, v)) => Some(*v),
                None if rw.failed || rw.variants.len() >= MAX_VARIANTS || fetched.variant => None,
                None => return Route::Fetch(Fetch::Variant(k)),
            };
            // the rowkey advisor: a scan of each prefix, in the one partition that holds it
            // (once: no attempt follows this one)
            let schema = &rw.plan.schema;
            for p in &prefixes {
                self.activity.observe(crate::engine::decision::Observation {
                    table: schema.clone(),
                    what: crate::engine::decision::Observed::Scan {
                        len: u32::try_from(p.len()).unwrap_or(u32::MAX),
                        partition: schema.partitioning.partition_of(p),
                    },
                });
            }
            if let Some(variant) = variant {
                // a string where its bytes are certainly the prefix's (OceanBase prunes with
                // it), else a BLOB (binary everywhere, pruned on MariaDB)
                let charset = self.charset_fact;
                let refs: smallvec::SmallVec<[(u8, &[u8]); 4]> = prefixes
                    .iter()
                    .map(|p| {
                        let text = certain(p, LitCharset::Connection, charset) == Some(true);
                        let ty = if text {
                            execute::TYPE_VAR_STRING
                        } else {
                            execute::TYPE_BLOB
                        };
                        (ty, p.as_slice())
                    })
                    .collect();
                let at = rw.plan.insert_at as usize;
                let spare = std::mem::take(&mut self.statements.spare);
                let packet = execute::rebuild(spare, e, variant, types, Some(&spans), at, &refs);
                if let Some(packet) = packet {
                    self.shared.rewrite_counters.rewritten.fetch_add(1, Relaxed);
                    rw.last_target = Some(variant);
                    if e.types.is_some() {
                        rw.original_has_types = false;
                    }
                    return Route::Ready(Some(packet));
                }
            }
        }
        self.shared.rewrite_counters.declined.fetch_add(1, Relaxed);
        rw.last_target = Some(id);
        // the client's statement: with the types in force if it has not seen them
        if e.types.is_some() {
            rw.original_has_types = true;
            return Route::Ready(None);
        }
        Route::Ready(match (types, rw.original_has_types) {
            (Some(types), false) => {
                rw.original_has_types = true;
                execute::rebuild(Vec::new(), e, id, types, None, 0, &[])
            }
            _ => None,
        })
    }

    /// The prefixes an execution's values pin, if the table is still what the plan was made
    /// for, with where each parameter's value lies in the packet; or what must be fetched
    /// before that is known.
    fn execution_prefixes(
        &mut self,
        rw: &mut Rewrite,
        e: &Execute<'_>,
        types: &[u8],
        fetched: Fetched,
    ) -> Result<Option<(crate::hbase::prefix::Prefixes, Spans)>, Fetch> {
        let Some(spans) = execute::value_spans(e.nulls, types, e.values) else {
            return Ok(None);
        };
        let bound = |i: u32| -> Bound<'_> {
            let i = i as usize;
            let (Some(Some(span)), Some(ty)) = (spans.get(i), types.get(2 * i)) else {
                return Bound::Other;
            };
            match execute::string_value(*ty, e.values, execute::span_range(*span)) {
                Some((b, true)) => Bound::Binary(b),
                Some((b, false)) => Bound::Text(b),
                None => Bound::Other,
            }
        };
        let escape = self.reading().reported_backslash_escape();
        let decided = rw.plan.execution(&bound, self.charset_fact, escape);
        if decided == Execution::NeedCharset && !fetched.charset {
            return Err(Fetch::Charset);
        }
        let Execution::Prefixes(prefixes) = decided else {
            return Ok(None);
        };
        // the table must still be partitioned as when the statement was prepared (known
        // without a lookup while the cache would find what it found last time)
        if rw.seen.is_some_and(|s| self.shared.schemas.still_seen(s)) {
            return Ok(Some((prefixes, spans)));
        }
        rw.seen = None;
        let (found, seen) = self.shared.schemas.get_seen(&rw.plan.key);
        if found == crate::hbase::schema::Lookup::Unknown && !fetched.schema {
            return Err(Fetch::Schema);
        }
        let same = match found {
            crate::hbase::schema::Lookup::Known(Some(s)) => {
                s.partitioning == rw.plan.schema.partitioning
                    && s.prefix_column == rw.plan.schema.prefix_column
            }
            _ => false,
        };
        if same {
            rw.seen = seen;
        }
        Ok(same.then_some((prefixes, spans)))
    }

    /// Prepares the backend statement for `k` prefixes (into `rw.variants`), or marks the
    /// rewrite failed when the backend's statement is not the one expected. (`route_now` asks
    /// for it only when there is none for `k`, the rewrite has not failed and there is room.)
    async fn variant(
        &mut self,
        rw: &mut Rewrite,
        k: usize,
        params: usize,
        columns: u16,
    ) -> Result<(), End> {
        let Some(text) = rw.plan.variant_text(&rw.text, k) else {
            return Ok(());
        };
        self.statements.ours_prepared_last = true;
        let prepared = match backend::prepare(be!(self), self.client_caps, &text).await {
            Ok(p) => p,
            Err(e) => return Err(self.own_command_failed(e).await),
        };
        match prepared {
            Ok((v, cols, n)) if cols == columns && usize::from(n) == params + k => {
                rw.variants.push((k, v));
                Ok(())
            }
            Ok((v, _, _)) => {
                // not the statement the client prepared plus k parameters: never used
                tracing::debug!("prefix-scan variant does not match its statement");
                let mut cmd = vec![com::STMT_CLOSE];
                cmd.extend_from_slice(&v.to_le_bytes());
                be!(self).queue_command(&cmd);
                rw.failed = true;
                Ok(())
            }
            Err(err) => {
                tracing::debug!(
                    "prefix-scan variant not prepared: {}",
                    String::from_utf8_lossy(err.get(9..).unwrap_or_default())
                );
                rw.failed = true;
                Ok(())
            }
        }
    }

    /// A command of the proxy's own on the session's connection, its answer not relayed.
    async fn own_command(&mut self, cmd: &[u8]) -> Result<(), End> {
        match backend::simple_command(be!(self), self.client_caps, cmd).await {
            Ok(_) => Ok(()),
            Err(e) => Err(self.own_command_failed(e).await),
        }
    }
}

/// What `route_typed` fetched for an execution so far.
#[derive(Default, Clone, Copy)]
struct Fetched {
    charset: bool,
    schema: bool,
    variant: bool,
}

/// What an attempt at routing an execution needs fetched before it can decide.
enum Fetch {
    /// The session's character set (whether a bound string's bytes are the key's).
    Charset,
    /// The table's schema (the cache does not know it).
    Schema,
    /// The backend statement for this many prefixes (not prepared yet).
    Variant(usize),
}

/// One attempt's outcome (`Session::route_now`).
enum Route {
    /// The packet to send instead of the client's (None: the client's, as it is).
    Ready(Option<Vec<u8>>),
    Fetch(Fetch),
}

/// The write rules' verdict on one execution.
enum Checked {
    /// Refused (and whether pieces of a long value reached the backend for it).
    Refused(ErrorInfo, bool),
    /// It runs; inside a transaction this partition fixes the transaction's.
    Runs(Option<write::Place>),
}

/// A bound value of binary-protocol type `ty` (`unsigned`: the type's flag) at `span`.
/// Rows one execution of `plan` writes (a VALUES list's length; 1 for UPDATE / DELETE).
fn bound_value(ty: u8, unsigned: bool, values: &[u8], span: (usize, usize)) -> WriteBound<'_> {
    if let Some((b, blob)) = execute::string_value(ty, values, span) {
        return WriteBound::Bytes(b, blob);
    }
    let Some(raw) = values.get(span.0..span.1) else {
        return WriteBound::Other;
    };
    let int = match (ty, raw.len()) {
        (0x01, 1) => Some(if unsigned {
            i128::from(raw[0])
        } else {
            i128::from(raw[0] as i8)
        }),
        (0x02 | 0x0d, 2) => {
            let v = u16::from_le_bytes([raw[0], raw[1]]);
            Some(if unsigned {
                i128::from(v)
            } else {
                i128::from(v as i16)
            })
        }
        (0x03 | 0x09, 4) => {
            let v = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
            Some(if unsigned {
                i128::from(v)
            } else {
                i128::from(v as i32)
            })
        }
        (0x08, 8) => {
            let mut b = [0u8; 8];
            b.copy_from_slice(raw);
            let v = u64::from_le_bytes(b);
            Some(if unsigned {
                i128::from(v)
            } else {
                i128::from(v as i64)
            })
        }
        _ => None,
    };
    match int {
        Some(i) => WriteBound::Int(i),
        None => WriteBound::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement() -> Prepared {
        Prepared {
            params: 0,
            columns: 0,
            changes_session: false,
            ddl: false,
            rewrite: None,
            write: None,
            carried: None,
        }
    }

    #[test]
    fn a_carried_statement_keeps_the_backends_id_unless_the_session_has_it() {
        let mut s = Statements {
            carrying: true,
            ..Default::default()
        };
        assert_eq!(s.client_id_for(1), 1);
        s.prepared(1, statement(), None, b"");
        // the same id from another connection: the proxy's own, counted down
        assert_eq!(s.client_id_for(1), CARRIED_IDS_TOP);
        s.prepared(CARRIED_IDS_TOP, statement(), None, b"");
        assert_eq!(s.client_id_for(1), CARRIED_IDS_TOP - 1);
        assert_eq!(s.client_id_for(2), 2);
        // never the ids that mean something else: 0 and MariaDB's "last prepared"
        assert_eq!(s.client_id_for(0), CARRIED_IDS_TOP - 1);
        assert_eq!(s.client_id_for(u32::MAX), CARRIED_IDS_TOP - 1);
        // a close frees its id; a reset keeps carrying
        let _ = s.close(1);
        assert_eq!(s.client_id_for(1), 1);
        s.clear();
        assert!(s.carrying);
        assert_eq!(s.client_id_for(CARRIED_IDS_TOP), CARRIED_IDS_TOP);
    }
}
