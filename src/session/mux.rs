//! Multiplexing (`multiplex.mode = "transaction"`): the session holds a backend connection of
//! its set (`backend::lend`) for a command or a transaction and gives it back after a command
//! when nothing ties it to it; before its next command it is lent one again (its own last one
//! when that is idle), which is first put in the session's state (`CarriedState`: the current
//! database, the session variables it set, LAST_INSERT_ID).
//!
//! What ties a connection to a session:
//! - for a while: a transaction (IN_TRANS, or autocommit off), conditions or results the next
//!   statement may read (warnings, an error, rows changed), or the HBase guard's partition
//!   (conditions the proxy holds itself, `engine::diagnostics`, are the session's, not the
//!   connection's). The connection is kept until a command ends without them.
//! - for good (a pin, counted by reason): state the proxy cannot carry
//!   (`sql::session_state::Pin`): the session leaves multiplexing, its connection leaves the
//!   set and is its own from then on, exactly as with multiplexing off.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::*;
use crate::backend::lend::{Assigned, Borrowed, CarriedState, Conn, Keeper, Set, SetKey, Shortage};
use crate::sql::session_state::{self, Effect, Pin};

/// What is left of a command's end that waits on something (`Session::after_command_then`).
pub(super) enum Then {
    Done,
    Fail(End),
    Pin(Pin),
    GiveBack,
    /// The diagnostics area may hold an earlier statement's conditions: carried, then kept
    /// or given back.
    Stale {
        hold: bool,
        conditions: bool,
    },
    /// Kept: the current database read first.
    NoteDatabase,
    /// The backend reported variables no text set (`Mux::unverified`): made again on the
    /// connection (their values must read back), then carried; then as `Stale` says.
    Reported {
        stale: bool,
        conditions: bool,
    },
}

/// Clears a connection's diagnostics area (`Session::give_up_for_waiter`).
const CLEAR_AREA: &str = "SELECT 1 FROM information_schema.CHARACTER_SETS LIMIT 0";

/// A multiplexed session's part.
pub(super) struct Mux {
    set: Arc<Set>,
    /// The session's state, as the proxy carries it.
    state: CarriedState,
    /// The backend id of the connection it last held.
    last_id: u32,
    /// Assignments of the command being carried out, recorded once it ran without an error.
    carry: Vec<session_state::Assignment>,
    /// What the backend reported the command changed (CLIENT_SESSION_TRACK).
    reports: Option<Box<crate::protocol::packets::Reports>>,
    /// Assignments that make reported values again, not yet run on the connection (which
    /// holds those values, and is not given to another session until they ran there:
    /// `Session::verify_reported`).
    unverified: Vec<session_state::Assignment>,
    /// The last response leaves something the next statement may read: keep the connection.
    hold: bool,
    /// Of which conditions (a warning, an error) in the backend's diagnostics area.
    conditions: bool,
    /// ROW_COUNT() after the last response: its OK's affected rows, -1 after rows or an error
    /// (0 after the login, as on both backends).
    last_rows: i64,
    /// Between commands: the connection is kept only for what the last statement left
    /// (`hold`), and may be given up to a waiting session (`give_up_for_waiter`).
    releasable: bool,
    /// The connection was given back or up: ROW_COUNT() as the next statement reads it.
    released_rows: Option<i64>,
    /// How the set asks the session to give up the connection it keeps between commands.
    keeper: Arc<Keeper>,
    /// It is one of the set's keepers now.
    kept: bool,
    /// The connection held may keep conditions of the session's last statement in its
    /// diagnostics area: it is not given back at the session's end (the next holder could
    /// read them), but closed.
    dirty: bool,
    /// A response of the command ended in an error.
    failed: bool,
    /// The connection was lost between commands of a transaction: the next command is
    /// answered with the error the client would get directly (2013), and the one after it
    /// runs on another connection.
    lost_in_transaction: bool,
    /// The command is a COM_RESET_CONNECTION: once it succeeded, the session is in its
    /// login's state again (variables, the insert id; the database stays).
    resetting: bool,
    /// The command is a COM_SET_OPTION turning multiple statements on (Some(true)) or off:
    /// carried once it succeeded.
    set_option: Option<bool>,
}

impl Mux {
    /// The connection held keeps what the session's last statement left (an error, a
    /// statement's pieces) until the session's next command.
    pub(super) fn hold_for_next(&mut self) {
        self.hold = true;
        self.conditions = true;
        self.failed = true;
        self.last_rows = -1;
    }

    /// A response's reports join the command's earlier ones (a name again: its last value).
    pub(super) fn reported(&mut self, r: crate::protocol::packets::Reports) {
        match self.reports.as_mut() {
            None => self.reports = Some(Box::new(r)),
            Some(all) => all.merge(r),
        }
    }

    /// The session's state now, its database `db` as last read.
    pub(super) fn state_now(&self, db: Option<Arc<[u8]>>) -> CarriedState {
        let mut now = self.state.clone();
        now.db = db;
        now
    }

    /// The SET that puts a connection of the set back in its login's character set.
    pub(super) fn base_charset(&self) -> Option<Vec<u8>> {
        self.set.base_charset().map(<[u8]>::to_vec)
    }

    pub(super) fn set(&self) -> Arc<Set> {
        self.set.clone()
    }

    /// The session no longer keeps a connection of its set between commands.
    fn unkeep(&mut self) {
        if std::mem::take(&mut self.kept) {
            self.set.unkeep(&self.keeper);
        }
    }

    /// How the set asks the session to give up its connection, while it keeps one between
    /// commands.
    #[inline]
    pub(super) fn keeper_if_releasable(&self) -> Option<&Keeper> {
        self.releasable.then_some(&*self.keeper)
    }

    /// What the previous command recorded to be carried after it ran goes, before the next
    /// command's effect is read.
    #[inline]
    fn begin_command(&mut self) {
        self.carry.clear();
        // (tested first: dropping a None costs a call)
        if self.reports.is_some() {
            self.reports = None;
        }
        self.resetting = false;
        self.set_option = None;
    }
}

impl Session {
    /// Multiplexing for this session, when the configuration asks for it: its login's
    /// connection joins the set `key`, lent to it. `db`: the database it logged in with.
    pub(super) fn with_mux(mut self, key: SetKey, db: Option<&[u8]>, visible: u32) -> Self {
        if self.cfg.multiplex.mode != crate::config::MultiplexMode::Transaction {
            return self;
        }
        self.mux_user = Some(Arc::from(key.user.as_slice()));
        let lending = &self.shared.lending;
        self.kill_slot = lending
            .register(visible, self.backend_id, &key.user)
            .map(|s| (visible, s));
        match lending.set(key) {
            Some(set) => {
                self.conn_serial = crate::backend::lend::new_serial();
                set.joined(self.conn_serial);
                self.statements.carrying = true;
                lending.sessions.fetch_add(1, Relaxed);
                lending.sessions_total.fetch_add(1, Relaxed);
                self.mux = Some(Box::new(Mux {
                    set,
                    state: CarriedState {
                        db: db.map(Arc::from),
                        ..Default::default()
                    },
                    last_id: self.backend_id,
                    carry: Vec::new(),
                    reports: None,
                    unverified: Vec::new(),
                    hold: false,
                    conditions: false,
                    last_rows: 0,
                    releasable: false,
                    released_rows: None,
                    keeper: Arc::default(),
                    kept: false,
                    dirty: false,
                    failed: false,
                    lost_in_transaction: false,
                    resetting: false,
                    set_option: None,
                }));
                // the login's connection is kept as any kept connection, and given up when a
                // session waits (an idle client that never sent a command would hold it
                // otherwise: over the limit, nobody could ask for it)
                if let Some(m) = self.mux.as_mut() {
                    let max = self.cfg.multiplex.max_backend_connections;
                    m.kept = m.set.keep(&m.keeper, false, true, max);
                    m.releasable = m.kept;
                }
            }
            None => lending.pinned(Pin::TooManySets as usize),
        }
        self
    }

    /// Proxy-auth mode: the id of the connection logged in for the session, known to the
    /// multiplexer (which lends it by id); the session's own KILL path keeps using the login's.
    pub(super) fn with_mux_own_login(mut self, id: u32) -> Self {
        if self.cfg.multiplex.mode == crate::config::MultiplexMode::Transaction {
            self.backend_id = id;
        }
        self
    }

    /// Leaves multiplexing for good: the connection held now is the session's own (it leaves
    /// its set); one not held is borrowed first.
    pub(super) async fn pin(&mut self, why: Pin) -> Result<(), End> {
        // CONNECTION_ID() reads best on the connection whose id the client was given
        if let (Pin::ConnectionId, Some(m), Some((visible, _))) =
            (why, self.mux.as_mut(), &self.kill_slot)
        {
            m.last_id = *visible;
        }
        if self.backend.is_none() && !self.attach().await? {
            return Ok(());
        }
        if let Some(mut m) = self.mux.take() {
            m.unkeep();
            self.shared.lending.pinned(why as usize);
            self.shared.lending.sessions.fetch_sub(1, Relaxed);
            // the connection stays counted in its set until the session ends (`pinned_set`)
            self.pinned_set = Some(m.set);
            debug!(peer = %self.peer, ?why, "session pinned to its backend connection");
        }
        Ok(())
    }

    /// A multiplexed session's set's login (Some(None): relayed authentication); None when the
    /// session is not multiplexed.
    pub(super) fn mux_login(&self) -> Option<Option<crate::backend::LoginSpec>> {
        self.mux.as_ref().map(|m| m.set.key.login.clone())
    }

    /// `mux_before` where nothing waits: a session that keeps its connection (the usual case
    /// when few share) reads what the command does without a future of its own; None when
    /// the rest must wait on something (`mux_before`, or `pin_before` when it is Some(Some)).
    #[inline]
    pub(super) fn mux_before_now(&mut self) -> Option<Option<Pin>> {
        if self.command.first() == Some(&com::QUIT) {
            return Some(None);
        }
        let m = self.mux.as_ref()?;
        if m.lost_in_transaction
            || self.backend.is_none()
            || self.kill_slot.as_ref().is_some_and(|(_, s)| s.is_killed())
        {
            return None;
        }
        self.queue_kept_closes();
        Some(self.command_effect())
    }

    /// A pin `mux_before_now` found the command needs.
    pub(super) async fn mux_pin_before(&mut self, p: Pin) -> Result<(), End> {
        self.pin_before(p).await
    }

    /// Before a command of a multiplexed session: a connection when it holds none (false: the
    /// client was answered instead), then what the command does to the session's state.
    pub(super) async fn mux_before(&mut self) -> Result<bool, End> {
        if self.command.first() == Some(&com::QUIT) {
            return Ok(true);
        }
        // a KILL named the session between its commands
        if self.kill_slot.as_ref().is_some_and(|(_, s)| s.is_killed()) {
            return Err(End::BackendLost);
        }
        // (told at the first command that has an answer; pieces of a long value for the lost
        // transaction go nowhere)
        if let Some(m) = self.mux.as_mut().filter(|m| m.lost_in_transaction) {
            match self.command.first().copied() {
                Some(com::STMT_SEND_LONG_DATA) => return Ok(false),
                Some(com::STMT_CLOSE) => {}
                _ => {
                    m.lost_in_transaction = false;
                    let e = ErrorInfo::backend_lost(&self.cfg.backend.address);
                    self.answer_protocol_error(e).await?;
                    self.observe_end();
                    return Ok(false);
                }
            }
        }
        // (a carried statement's close needs no connection: `session::carried`)
        let closing = self.command.first() == Some(&com::STMT_CLOSE) && self.statements.carrying;
        if self.backend.is_none() {
            if !closing && !self.attach().await? {
                self.observe_end();
                return Ok(false);
            }
        } else {
            self.queue_kept_closes();
        }
        self.before_command().await?;
        Ok(true)
    }

    /// Before a command: what it does to the session's state (a text read lexically, other
    /// commands by kind); a pin leaves multiplexing before it runs.
    pub(super) async fn before_command(&mut self) -> Result<(), End> {
        match self.command_effect() {
            Some(p) => self.pin_before(p).await,
            None => Ok(()),
        }
    }

    /// What the command does to the session's state, recorded to be carried once it ran; the
    /// pin it needs, if any (`pin_before`).
    #[inline]
    fn command_effect(&mut self) -> Option<Pin> {
        let m = self.mux.as_mut()?;
        m.releasable = false;
        // an execution (a prepared workload's every command): nothing to read, what the
        // previous statement left is the execution's to replace
        if self.command.first() == Some(&com::STMT_EXECUTE) {
            m.released_rows = None;
            m.begin_command();
            return match self.command.get(5) {
                Some(flags) if flags & 0x07 != 0 => Some(Pin::Cursor),
                _ => None,
            };
        }
        self.other_command_effect()
    }

    /// `command_effect` of a command that is not an execution.
    #[inline(never)]
    fn other_command_effect(&mut self) -> Option<Pin> {
        let m = self.mux.as_mut()?;
        // the connection that knew the previous statement's ROW_COUNT() was given up: a text
        // that reads it is given the count (the only place the proxy edits a client's text
        // for multiplexing; GET DIAGNOSTICS … ROW_COUNT is not, README "Limits")
        if let Some(n) = m.released_rows.take() {
            if self.command.first() == Some(&com::QUERY) {
                let sql = self.command.get(1..).unwrap_or_default();
                if let Some(text) = session_state::row_count_spliced(sql, self.reading(), n) {
                    let mut command = Vec::with_capacity(text.len() + 1);
                    command.push(com::QUERY);
                    command.extend_from_slice(&text);
                    self.command = command;
                }
            }
        }
        // (read only for a text)
        let reading = matches!(
            self.command.first().copied(),
            Some(com::QUERY | com::STMT_PREPARE)
        )
        .then(|| self.reading());
        let m = self.mux.as_mut()?;
        m.begin_command();
        let pin = match self.command.first().copied() {
            Some(com::QUERY) => {
                let sql = self.command.get(1..).unwrap_or_default();
                match session_state::effect(sql, reading.unwrap_or_default()) {
                    Effect::None => None,
                    Effect::Carry(list) => {
                        m.carry = list;
                        None
                    }
                    Effect::Pin(p) => Some(p),
                }
            }
            // prepared statements are carried (`session::carried`), except: one whose text
            // changes the session's state, or that the proxy rewrites (`on_prepare`), an
            // execution that opens a cursor, MariaDB's bulk execution
            Some(com::STMT_PREPARE) => {
                let sql = self.command.get(1..).unwrap_or_default();
                match session_state::effect(sql, reading.unwrap_or_default()) {
                    Effect::None => None,
                    Effect::Pin(p) => Some(p),
                    Effect::Carry(_) => Some(Pin::SetNotCarried),
                }
            }
            Some(com::STMT_BULK_EXECUTE) => Some(Pin::BulkExecute),
            // (the backend keeps a long value's pieces on the connection until the execution:
            // `Statements::long_pending` holds it)
            Some(
                com::STMT_SEND_LONG_DATA | com::STMT_FETCH | com::STMT_RESET | com::STMT_CLOSE,
            ) => None,
            Some(com::PROCESS_KILL) => Some(Pin::ConnectionId),
            // the backend puts the connection back in its login's state, both backends alike
            // (the login's character set, every variable at its global value, the database
            // kept; measured): what the session carries goes the same way once it succeeded
            Some(com::RESET_CONNECTION) => {
                m.resetting = true;
                None
            }
            // multiple statements on or off (mysqlclient sends it at connect): carried, and
            // set again on a connection that differs (an unknown option runs pinned)
            Some(com::SET_OPTION) => match self.command.get(1..) {
                Some([0, 0]) => {
                    m.set_option = Some(true);
                    None
                }
                Some([1, 0]) => {
                    m.set_option = Some(false);
                    None
                }
                _ => Some(Pin::SessionCommand),
            },
            Some(com::CHANGE_USER | com::DEBUG) => Some(Pin::SessionCommand),
            _ => None,
        };
        pin
    }

    /// A pin before a command: its prepared statements are all on its connection from now on,
    /// each in the state it was prepared in (known until the pin); a change of user drops them
    /// (not on a connection that keeps the last statement's conditions for this one).
    async fn pin_before(&mut self, p: Pin) -> Result<(), End> {
        let dirty = self.mux.as_ref().is_some_and(|m| m.dirty);
        if p != Pin::SessionCommand && !dirty {
            self.prepare_all_here().await?;
        }
        self.pin(p).await
    }

    /// A response of the session's: what it leaves for the next statement to read holds the
    /// connection; the insert id it reported is carried.
    pub(super) fn mux_after_response(&mut self, summary: &Summary) {
        if let Some(m) = self.mux.as_mut() {
            m.failed |= summary.error_code.is_some();
            let conditions = summary.warnings > 0 || summary.error_code.is_some();
            m.hold |= conditions || summary.affected_rows > 0;
            m.conditions |= conditions;
            m.last_rows = if summary.error_code.is_some()
                || (summary.result_sets > 0 && summary.affected_rows == 0)
            {
                -1
            } else {
                i64::try_from(summary.affected_rows).unwrap_or(i64::MAX)
            };
            if summary.last_insert_id != 0 {
                m.state.last_insert_id = summary.last_insert_id;
            }
        }
    }

    /// What `after_command_now` left that waits on something.
    pub(super) async fn after_command_then(&mut self, mut then: Then) -> Result<(), End> {
        loop {
            then = match then {
                Then::Done => return Ok(()),
                Then::Fail(end) => return Err(end),
                Then::Pin(p) => return self.pin(p).await,
                Then::GiveBack => return self.give_back().await,
                Then::Stale { hold, conditions } => {
                    if !self.carry_conditions(true).await {
                        return self.pin(Pin::Unreadable).await;
                    }
                    self.keep_or_give_back(hold, conditions)
                }
                Then::Reported { stale, conditions } => {
                    if !self.verify_reported().await {
                        return self.pin(Pin::SetNotCarried).await;
                    }
                    self.release_after(false, stale, conditions)
                }
                Then::NoteDatabase => {
                    if !self.note_database().await? {
                        return self.pin(Pin::NoDatabase).await;
                    }
                    if let Some(m) = self.mux.as_mut() {
                        m.releasable = true;
                    }
                    return Ok(());
                }
            };
        }
    }

    /// After a command: its assignments recorded (or, after an error, a pin: what ran of them
    /// is not known), then the connection kept or given back (`keep_or_give_back`) — up to the
    /// first step that waits on something (none, usually: `after_command_then` does the rest).
    pub(super) fn after_command_now(&mut self) -> Then {
        // the session's own KILL CONNECTION: it ends, as directly
        if self.kill_slot.as_ref().is_some_and(|(_, s)| s.is_killed()) {
            return Then::Fail(End::BackendLost);
        }
        let Some(m) = self.mux.as_mut() else {
            return Then::Done;
        };
        let hold = std::mem::take(&mut m.hold);
        // the statement after one that left conditions may have left them in the area (MariaDB
        // keeps it after a statement that uses no table): cleared before the connection goes
        let stale = std::mem::replace(&mut m.dirty, hold) && !hold;
        let conditions = std::mem::take(&mut m.conditions);
        let failed = std::mem::take(&mut m.failed);
        if std::mem::take(&mut m.resetting) {
            if failed || self.held.is_some() {
                return Then::Pin(Pin::SessionCommand);
            }
            m.state.vars.clear();
            m.state.last_insert_id = 0;
            m.reports = None;
            m.unverified.clear();
            self.client_wait_timeout = None;
            // the reset closed every statement on the connection, other sessions' too: they
            // prepare theirs again (`session::carried`)
            let old = std::mem::replace(&mut self.conn_serial, crate::backend::lend::new_serial());
            m.set.renewed(old, self.conn_serial);
        }
        if let Some(on) = m.set_option.take() {
            if failed {
                return Then::Pin(Pin::SessionCommand);
            }
            m.state.multi_statements = Some(on);
        }
        // what the backend reported beyond the text's own assignments (a variable a stored
        // function set, on both backends; sql_mode and more on OceanBase)
        if m.reports.is_some() {
            if let Err(p) = self.take_reported() {
                return Then::Pin(p);
            }
        }
        let Some(m) = self.mux.as_mut() else {
            return Then::Done;
        };
        if !m.carry.is_empty() {
            // what ran of a text that failed is not known
            // (conditions carried from a connection given up are the backend's own)
            let answered = self.held.as_ref().is_some_and(|h| !h.carried);
            if failed || answered {
                debug!(peer = %self.peer, failed, held = answered, sql = %String::from_utf8_lossy(self.command.get(1..).unwrap_or_default()), "multiplexing: assignments of a text that did not run whole");
                return Then::Pin(Pin::SetNotCarried);
            }
            // (an assignment of the text supersedes a reported one not yet made again)
            m.unverified
                .retain(|u| !m.carry.iter().any(|a| a.key == u.key));
            for a in std::mem::take(&mut m.carry) {
                if a.key == b"wait_timeout" {
                    self.client_wait_timeout = (!a.to_default)
                        .then(|| seconds(&a.text))
                        .flatten()
                        .map(std::time::Duration::from_secs);
                }
                m.state.assign(
                    Assigned {
                        key: a.key,
                        text: a.text,
                    },
                    a.to_default,
                );
            }
        }
        // (made again once the connection holds nothing the next statement may read)
        if !hold && self.mux.as_ref().is_some_and(|m| !m.unverified.is_empty()) {
            return Then::Reported { stale, conditions };
        }
        self.release_after(hold, stale, conditions)
    }

    /// The command's reports (`Mux::reports`) become assignments to make again
    /// (`Mux::unverified`, where they supersede older ones), beyond the text's own; or the
    /// pin a change needs that cannot be made again elsewhere.
    #[cold]
    fn take_reported(&mut self) -> Result<(), Pin> {
        let Some(m) = self.mux.as_mut() else {
            return Ok(());
        };
        let Some(r) = m.reports.take() else {
            return Ok(());
        };
        let read: Vec<&[u8]> = m.carry.iter().map(|a| &a.key[..]).collect();
        let reported = match session_state::reported(&r.vars, r.unknown, &read) {
            Ok(list) => list,
            Err(p) => {
                debug!(peer = %self.peer, reports = ?r, "multiplexing: the backend reported a change that is not made again elsewhere");
                return Err(p);
            }
        };
        m.unverified
            .retain(|u| !reported.iter().any(|a| a.key == u.key));
        m.unverified.extend(reported);
        Ok(())
    }

    /// After a command whose state was recorded: the connection stays while a transaction or
    /// anything else ties it; else its diagnostics area is cleared when stale, and it is kept
    /// or given back (`keep_or_give_back`).
    #[inline]
    fn release_after(&mut self, hold: bool, stale: bool, conditions: bool) -> Then {
        let tied = self.backend.is_none()
            || self.last_status & status::IN_TRANS != 0
            || self.last_status & status::AUTOCOMMIT == 0
            || self.txn_pin.is_some()
            || self.statements.long_pending()
            || !self.pending_notes.is_empty()
            || !self.pending_warnings.is_empty()
            || self.watched.client_gone();
        if tied {
            return Then::Done;
        }
        if stale && !self.area_cleared() {
            return Then::Stale { hold, conditions };
        }
        self.keep_or_give_back(hold, conditions)
    }

    /// Kept for the next command when its last statement left something the next may read
    /// (`hold`) — and, though nothing ties it, while no session waits and the set is within its
    /// bound: a session that runs alone or among few then borrows nothing and restores nothing
    /// command after command. Either way it is given up as soon as a session waits
    /// (`give_up_for_waiter`); a session that finds one waiting now gives it back at once.
    #[inline(always)]
    fn keep_or_give_back(&mut self, hold: bool, conditions: bool) -> Then {
        let max = self.cfg.multiplex.max_backend_connections;
        let Some(m) = self.mux.as_mut() else {
            return Then::Done;
        };
        if !m.set.keep(&m.keeper, m.kept, hold, max) {
            m.kept = false;
            return Then::GiveBack;
        }
        m.kept = true;
        m.conditions = hold && conditions;
        if !hold {
            // the state it would be given back in stays known (a lost connection's next one
            // is put in it)
            match &self.db_fact {
                Some(Some(db)) => {
                    if m.state.db.as_ref().is_none_or(|d| !Arc::ptr_eq(d, db)) {
                        m.state.db = Some(db.clone());
                    }
                }
                _ => return Then::NoteDatabase,
            }
        }
        m.releasable = true;
        Then::Done
    }

    /// The assignments that make reported values again (`Mux::unverified`), run on the
    /// connection held (which has those values: nothing changes), then carried; ROW_COUNT()
    /// as the session's last statement left it is kept for its next text (the SET made it
    /// 0). False: they fail there (the values cannot be made again elsewhere), or the
    /// connection failed (found lost at the next command).
    async fn verify_reported(&mut self) -> bool {
        let caps = self.client_caps;
        let (Some(m), Some(be)) = (self.mux.as_mut(), self.backend.as_mut()) else {
            return false;
        };
        let list = std::mem::take(&mut m.unverified);
        if list.is_empty() {
            return true;
        }
        let mut sql = b"SET ".to_vec();
        for (i, a) in list.iter().enumerate() {
            if i > 0 {
                sql.extend_from_slice(b", ");
            }
            sql.extend_from_slice(&a.text);
        }
        let ok = matches!(
            crate::backend::query(be, caps, &sql).await,
            Ok((crate::backend::QueryResult::Ok(_), _))
        );
        debug!(peer = %self.peer, ok, sql = %String::from_utf8_lossy(&sql), "multiplexing: variables the backend reported changed, made again");
        if ok {
            if m.released_rows.is_none() {
                m.released_rows = Some(m.last_rows);
            }
            for a in list {
                m.state.assign(
                    Assigned {
                        key: a.key,
                        text: a.text,
                    },
                    false,
                );
            }
        }
        ok
    }

    /// The session's current database, read when a command may have changed it, recorded in
    /// its carried state. False: it has none (a connection cannot be put back to none).
    async fn note_database(&mut self) -> Result<bool, End> {
        if self.db_fact.is_none() {
            self.read_facts(&Default::default()).await?;
        }
        let db = match &self.db_fact {
            Some(Some(db)) => db.clone(),
            _ => return Ok(false),
        };
        if let Some(m) = self.mux.as_mut() {
            m.state.db = Some(db);
        }
        Ok(true)
    }

    /// Before the connection goes to another session: the conditions the backend keeps for the
    /// session's last statement (read when `read`) become the proxy's to show, and the
    /// connection's diagnostics area is cleared. False: that failed.
    async fn carry_conditions(&mut self, read: bool) -> bool {
        let Some(captured) = self.conditions_to_carry(read, CLEAR_AREA.as_bytes()).await else {
            return false;
        };
        if read {
            match self.held.take() {
                // the proxy's own conditions of the statement first, as they were shown
                Some(h) if h.backend.is_some() => {
                    let mut own = h.own;
                    own.extend(captured);
                    self.held = Some(crate::engine::diagnostics::Held::alone(own));
                }
                // the backend's area held nothing of the statement's
                Some(h) => self.held = Some(h),
                None if captured.is_empty() => {}
                None => {
                    let mut held = crate::engine::diagnostics::Held::alone(captured);
                    held.carried = true;
                    self.held = Some(held);
                }
            }
        }
        // nothing in the area is the session's any more
        if let Some(h) = self.held.as_mut() {
            h.backend = None;
        }
        true
    }

    /// The command that just ran without a condition cleared the backend's diagnostics area
    /// (OceanBase clears it for every statement; MariaDB for one that uses a table).
    fn area_cleared(&self) -> bool {
        if self.area().clears_always {
            return true;
        }
        match self.command.first() {
            Some(&com::QUERY) => !crate::sql::diagnostics::keeps_diagnostics(
                self.command.get(1..).unwrap_or_default(),
                self.reading(),
            ),
            _ => false,
        }
    }

    /// The statements other sessions closed on the connection the session kept between
    /// commands go first (no answers), as on one borrowed.
    /// (One atomic read when no session left a close, the usual case.)
    #[inline]
    fn queue_kept_closes(&mut self) {
        if self.mux.as_ref().is_some_and(|m| m.set.closes_pending()) {
            self.queue_kept_closes_now();
        }
    }

    #[inline(never)]
    fn queue_kept_closes_now(&mut self) {
        if let (Some(m), Some(b)) = (self.mux.as_ref(), self.backend.as_mut()) {
            for id in m.set.closes_for(self.conn_serial) {
                b.queue_command(&super::carried::close_command(id));
            }
        }
    }

    /// An idle session keeping its connection (for what its last statement left, or because
    /// nobody waited) gives it up to a session that waits for one. What it left stays the session's: the conditions
    /// in the backend's diagnostics area become the proxy's to show
    /// (`engine::diagnostics::Held`, read with SHOW WARNINGS), ROW_COUNT() is given to a text
    /// that reads it next (`before_command`); the connection's area is then cleared, so that
    /// its next holder reads nothing of them.
    #[cold]
    pub(super) async fn give_up_for_waiter(&mut self) -> Result<(), End> {
        let Some(m) = self.mux.as_mut() else {
            return Ok(());
        };
        if !m.releasable {
            return Ok(());
        }
        // (another keeper's release, or an idle connection, may serve the waiter already)
        let set = m.set.clone();
        let Some(_release) = set.claim() else {
            return Ok(());
        };
        let Some(m) = self.mux.as_mut() else {
            return Ok(());
        };
        m.releasable = false;
        let conditions = std::mem::take(&mut m.conditions);
        let rows = m.last_rows;
        // (a connection kept though nothing tied it, or for rows changed without a condition,
        // holds nothing of the session's in its diagnostics area: `after_command_now` cleared
        // what an earlier statement may have left)
        if !(m.dirty && conditions) {
            if let Some(h) = self.held.as_mut() {
                h.backend = None;
            }
        } else if !self.carry_conditions(true).await {
            // the connection failed: it is dropped as one the backend closed between commands
            debug!(peer = %self.peer, "multiplexing: a connection failed while given up");
            if self.mux_backend_closed() {
                return Ok(());
            }
            return Err(End::BackendLost);
        }
        if let Some(m) = self.mux.as_mut() {
            m.dirty = false;
            m.released_rows = Some(rows);
        }
        if !self.verify_reported().await {
            return self.pin(Pin::SetNotCarried).await;
        }
        debug!(peer = %self.peer, rows, conditions, "multiplexing: connection given up to a waiting session");
        self.shared.lending.given_up.fetch_add(1, Relaxed);
        self.give_back().await
    }

    /// Gives the connection back to its set, in the state the session left it (the current
    /// database read first when a command may have changed it).
    async fn give_back(&mut self) -> Result<(), End> {
        if !self.note_database().await? {
            return self.pin(Pin::NoDatabase).await;
        }
        let Some(m) = self.mux.as_mut() else {
            return Ok(());
        };
        m.unkeep();
        // ROW_COUNT() as the last statement left it, for a text that reads it next on
        // whichever connection serves it (`command_effect`)
        if m.released_rows.is_none() {
            m.released_rows = Some(m.last_rows);
        }
        let set = m.set.clone();
        // the set learns its login's character set from a connection still in it
        if set.base_charset().is_none() && !m.state.sets_charset() {
            self.learn_base_charset(&set).await?;
        }
        // a KILL naming the session finds no connection from here on (and one that runs now
        // ends before the connection goes)
        if let Some((_, slot)) = &self.kill_slot {
            slot.detach().await;
        }
        let Some(m) = self.mux.as_mut() else {
            return Ok(());
        };
        // the watcher lets go of the connection first: it never touches one another session
        // holds
        self.watched.lend_backend();
        let Some(mut stream) = self.backend.take() else {
            return Ok(());
        };
        if self.watched.client_gone() {
            set.lost(self.conn_serial);
            return Ok(());
        }
        stream.release_large();
        m.last_id = self.backend_id;
        let conn = Conn {
            stream,
            id: self.backend_id,
            serial: self.conn_serial,
            state: m.state.clone(),
            closes: Vec::new(),
        };
        let max = self.cfg.multiplex.max_backend_connections;
        if let Some(mut extra) = set.give_back(conn, true, max) {
            let _ = extra.stream.send_command(&[com::QUIT]).await;
            extra.stream.shutdown().await;
        }
        Ok(())
    }

    #[cold]
    async fn learn_base_charset(&mut self, set: &Set) -> Result<(), End> {
        let sql = "SELECT @@character_set_client, @@character_set_connection, \
                   @@character_set_results, @@collation_connection";
        if let Ok(rows) = self.rows(sql).await? {
            if let Some(r) = rows.first() {
                let v = |i: usize| -> Option<Vec<u8>> {
                    match r.get(i) {
                        Some(Some(b))
                            if b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') =>
                        {
                            let mut q = b"'".to_vec();
                            q.extend_from_slice(b);
                            q.push(b'\'');
                            Some(q)
                        }
                        Some(None) => Some(b"NULL".to_vec()),
                        _ => None,
                    }
                };
                if let (Some(c), Some(n), Some(res), Some(col)) = (v(0), v(1), v(2), v(3)) {
                    let mut t = b"character_set_client = ".to_vec();
                    t.extend_from_slice(&c);
                    t.extend_from_slice(b", character_set_connection = ");
                    t.extend_from_slice(&n);
                    t.extend_from_slice(b", character_set_results = ");
                    t.extend_from_slice(&res);
                    t.extend_from_slice(b", collation_connection = ");
                    t.extend_from_slice(&col);
                    set.set_base_charset(t);
                }
            }
        }
        Ok(())
    }

    /// Before a command of a session that holds no connection: one of its set's, put in the
    /// session's state. Ok(false): none could be had, the client was told (error 1040 after
    /// `multiplex.wait_timeout_ms`, or the backend's refusal of a login or a restore).
    pub(super) async fn attach(&mut self) -> Result<bool, End> {
        let Some(m) = self.mux.as_ref() else {
            return Ok(self.backend.is_some());
        };
        let (set, want, last) = (m.set.clone(), m.state.clone(), m.last_id);
        let cfg = self.cfg.clone();
        let max = cfg.multiplex.max_backend_connections;
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_millis(cfg.multiplex.wait_timeout_ms);
        let lending = &self.shared.lending;
        lending.borrows.fetch_add(1, Relaxed);
        let mut conn = match set.borrow(&want, last, max, deadline, lending).await {
            Ok(Borrowed::Idle(c)) => c,
            Ok(Borrowed::Open(spec)) => {
                let wait = cfg.connect_timeout();
                match crate::backend::login(
                    &cfg.backend.address,
                    wait,
                    &spec,
                    self.shared.backend_tls.as_ref(),
                )
                .await
                {
                    Ok(l) => Conn {
                        stream: l.stream,
                        id: l.greeting.connection_id,
                        serial: {
                            let serial = crate::backend::lend::new_serial();
                            set.opened(serial);
                            serial
                        },
                        closes: Vec::new(),
                        state: CarriedState {
                            db: spec.database.as_deref().map(Arc::from),
                            ..Default::default()
                        },
                    },
                    Err(e) => {
                        set.open_failed();
                        warn!(peer = %self.peer, "multiplexing: no new backend connection: {e}");
                        let e = ErrorInfo::backend_lost(&cfg.backend.address);
                        return self.attach_failed(e).await;
                    }
                }
            }
            Err(Shortage::Timeout) => {
                let e = ErrorInfo::new(
                    er::CON_COUNT_ERROR,
                    "08004",
                    format!(
                        "Too many connections (obkv-proxy: every backend connection of this user \
                         stayed busy for {} ms; multiplex.max_backend_connections = {max})",
                        cfg.multiplex.wait_timeout_ms
                    ),
                );
                // (no statement ran: the diagnostics area stays as it was)
                return self.attach_failed(e).await;
            }
            Err(Shortage::NoneLeft) => {
                // relayed authentication: no connection of this user is left (lost, or their
                // sessions ended), and the proxy cannot log in without the client's password
                let e = ErrorInfo::new(
                    er::CON_COUNT_ERROR,
                    "08004",
                    "Too many connections (obkv-proxy: no backend connection of this user is \
                     open, and with relayed authentication the proxy opens none itself; a new \
                     login of the user makes one)",
                );
                return self.attach_failed(e).await;
            }
        };
        // statements other sessions closed meanwhile go first (no answers)
        for id in std::mem::take(&mut conn.closes) {
            conn.stream
                .queue_command(&super::carried::close_command(id));
        }
        let base = set.base_charset();
        let mut restore = want.restore_from(&conn.state, base);
        // multiple statements as the session has them (the login's capabilities unless a
        // COM_SET_OPTION of the session's or the last holder's changed them)
        let login_multi = set.key.caps & crate::protocol::constants::cap::MULTI_STATEMENTS != 0;
        let multi = |s: &CarriedState| s.multi_statements.unwrap_or(login_multi);
        if let Some(r) = restore.as_mut() {
            r.multi_statements = (multi(&want) != multi(&conn.state)).then(|| multi(&want));
        }
        match restore {
            Some(r) if r.is_empty() => {}
            restore => {
                lending.restores.fetch_add(1, Relaxed);
                debug!(peer = %self.peer, ?restore, "multiplexing: restoring the session's state");
                if !restored(&mut conn.stream, self.client_caps, restore).await {
                    set.lost(conn.serial);
                    warn!(peer = %self.peer, "multiplexing: a backend connection could not be put in the session's state; closed");
                    let e = ErrorInfo::backend_lost(&cfg.backend.address);
                    return self.attach_failed(e).await;
                }
            }
        }
        if let Some((_, slot)) = &self.kill_slot {
            slot.attach(conn.id);
        }
        let same = conn.id == self.backend_id && conn.id != 0;
        self.backend_id = conn.id;
        self.conn_serial = conn.serial;
        self.watched.backend_back(conn.stream.get_ref(), same);
        self.watched
            .resume(self.client.get_ref(), conn.stream.get_ref());
        self.backend = Some(conn.stream);
        Ok(true)
    }

    /// No connection for the command: the client is told (Ok(false)), unless the command has
    /// no answer (pieces of a long value, a close): then the session ends, as it would had its
    /// connection gone (an answer would be read as the next command's).
    async fn attach_failed(&mut self, e: ErrorInfo) -> Result<bool, End> {
        if answers_nothing(&self.command) {
            return Err(End::BackendLost);
        }
        self.answer_protocol_error(e).await?;
        Ok(false)
    }

    /// The connection failed mid-command and the client was told: it leaves the set, and the
    /// session goes on without it (what the server rolled back with it is gone: no
    /// transaction, no partition kept). False: the session ends (a client that went).
    #[cold]
    pub(super) fn mux_recover(&mut self) -> bool {
        if self.watched.client_gone() || self.kill_slot.as_ref().is_some_and(|(_, s)| s.is_killed())
        {
            return false;
        }
        let Some(m) = self.mux.as_mut() else {
            return false;
        };
        self.watched.done();
        self.watched.rest();
        if self.backend.take().is_some() {
            m.set.lost(self.conn_serial);
        }
        m.unkeep();
        m.releasable = false;
        m.hold = false;
        m.failed = false;
        m.carry.clear();
        m.resetting = false;
        m.set_option = None;
        m.last_id = 0;
        self.last_status = status::AUTOCOMMIT | (self.last_status & status::NO_BACKSLASH_ESCAPES);
        self.txn_pin = None;
        self.txn_observed.clear();
        self.held = None;
        self.pending_notes.clear();
        self.pending_warnings.clear();
        true
    }

    /// The backend closed the connection the session holds between commands (KILL,
    /// wait_timeout, a restart): it leaves the set; outside a transaction the client notices
    /// nothing, inside one its next command gets the error (`lost_in_transaction`). False: the
    /// session ends as without multiplexing.
    #[cold]
    pub(super) fn mux_backend_closed(&mut self) -> bool {
        let in_transaction = self.last_status & status::IN_TRANS != 0
            || self.last_status & status::AUTOCOMMIT == 0
            || self.txn_pin.is_some();
        warn!(peer = %self.peer, in_transaction, "multiplexing: the backend closed a connection the session held");
        bump(&self.shared.stats.backend_lost);
        if !self.mux_recover() {
            return false;
        }
        if let Some(m) = self.mux.as_mut() {
            m.lost_in_transaction = in_transaction;
        }
        true
    }

    /// At the session's end: the connection held goes back to its set when the session left
    /// it clean and in a known state; else it is closed. True: it was taken care of here.
    pub(super) async fn mux_end(&mut self, clean: bool) -> bool {
        let Some(m) = self.mux.as_mut() else {
            return false;
        };
        self.shared.lending.sessions.fetch_sub(1, Relaxed);
        m.unkeep();
        let m = &**m;
        let set = m.set.clone();
        let Some(mut stream) = self.backend.take() else {
            return true;
        };
        let known = matches!(&self.db_fact, Some(Some(_)));
        // (a connection that may hold the session's conditions is closed, never lent on)
        // (nor one whose reported values the proxy has not made its own yet)
        let idle = self.last_status & status::IN_TRANS == 0
            && self.last_status & status::AUTOCOMMIT != 0
            && !m.dirty
            && m.unverified.is_empty();
        if let Some((_, slot)) = &self.kill_slot {
            slot.detach().await;
        }
        if clean && known && idle {
            if let (Some(m), Some(Some(db))) = (self.mux.as_mut(), &self.db_fact) {
                m.state.db = Some(db.clone());
                stream.release_large();
                let conn = Conn {
                    stream,
                    id: self.backend_id,
                    serial: self.conn_serial,
                    state: m.state.clone(),
                    closes: Vec::new(),
                };
                if let Some(mut extra) =
                    set.give_back(conn, true, self.cfg.multiplex.max_backend_connections)
                {
                    let _ = extra.stream.send_command(&[com::QUIT]).await;
                    extra.stream.shutdown().await;
                }
                return true;
            }
        }
        set.lost(self.conn_serial);
        if clean {
            let _ = stream.send_command(&[com::QUIT]).await;
            stream.shutdown().await;
        }
        true
    }
}

/// Puts a connection in the session's state (None: it cannot be). False: it failed.
pub(super) async fn restored(
    stream: &mut BackendStream,
    caps: Caps,
    restore: Option<crate::backend::lend::Restore>,
) -> bool {
    let Some(r) = restore else {
        return false;
    };
    if let Some(on) = r.multi_statements {
        if crate::backend::set_option(stream, on).await.is_err() {
            return false;
        }
    }
    if let Some(sql) = &r.set {
        match crate::backend::query(stream, caps, sql).await {
            Ok((crate::backend::QueryResult::Ok(_), _)) => {}
            _ => return false,
        }
    }
    if let Some(db) = &r.db {
        if crate::backend::init_db(stream, db).await.is_err() {
            return false;
        }
    }
    true
}

/// A command the backend answers nothing to.
pub(super) fn answers_nothing(cmd: &[u8]) -> bool {
    matches!(
        cmd.first().copied(),
        Some(com::STMT_CLOSE | com::STMT_SEND_LONG_DATA)
    )
}

/// A command that may be a KILL (COM_PROCESS_KILL, or a text that starts with KILL or an
/// executable comment): `Session::on_kill` reads it.
pub(super) fn kill_command(cmd: &[u8]) -> bool {
    match cmd.split_first() {
        Some((&com::PROCESS_KILL, _)) => true,
        // any text with the word in it: `on_kill` reads it as the backend does (`--<TAB>`,
        // a vertical tab, a skipped version comment holding a comment before the KILL are
        // noise there too; found by a review), and runs any other text as usual
        Some((&com::QUERY, sql)) => mentions_kill(sql),
        _ => false,
    }
}

/// The letters KILL anywhere in a text (any case): the cheap look before a reading.
pub(super) fn mentions_kill(sql: &[u8]) -> bool {
    let mut rest = sql;
    while let Some(at) = memchr::memchr2(b'k', b'K', rest) {
        let tail = rest.get(at..).unwrap_or_default();
        if tail
            .get(..4)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"KILL"))
        {
            return true;
        }
        rest = rest.get(at + 1..).unwrap_or_default();
    }
    false
}

impl Session {
    /// A KILL with multiplexing on: one that names a session of this proxy's (by the id its
    /// client was given) reaches the backend connection that serves that session now, never
    /// one another session holds; a session that holds none has no statement to end (KILL
    /// QUERY: OK) or ends at once (KILL CONNECTION: OK). Any other KILL, and any other text,
    /// runs as it would.
    pub(super) async fn on_kill(&mut self) -> Result<(), End> {
        let process_kill = self.command.first() == Some(&com::PROCESS_KILL);
        let target = if process_kill {
            self.command
                .get(1..5)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(|b| (u32::from_le_bytes(b), false, None))
        } else {
            let sql = self.command.get(1..).unwrap_or_default();
            session_state::kill_target(sql, self.reading()).map(|k| (k.id, k.query, Some(k)))
        };
        // (by the id its client was given, else by the connection it holds: the id
        // CONNECTION_ID() answers a pinned session, which a pool's own test KILLs)
        let lending = &self.shared.lending;
        let found = target.as_ref().and_then(|&(id, q, ref k)| {
            let slot = lending.slot(id).or_else(|| lending.slot_holding(id))?;
            Some((slot, q, k.clone()))
        });
        let Some((slot, query, kill_text)) = found else {
            if let Some((id, _, _)) = target {
                // A connection id no session of this proxy's goes by: the backend would read
                // it as its own thread's, which may be a connection this proxy lends to other
                // sessions (a session that ended leaves its login's connection in the set).
                // Answered as MariaDB answers an id it does not know.
                bump(&self.shared.stats.answered_locally);
                let e = ErrorInfo::new(
                    er::NO_SUCH_THREAD,
                    "HY000",
                    format!("Unknown thread id: {id}"),
                );
                return self.answer_error(e).await;
            }
            if self.command.first() == Some(&com::QUERY) && self.kill_unmapped().await {
                bump(&self.shared.stats.answered_locally);
                return self.answer_error(unmapped_kill_error()).await;
            }
            return match self.command.first().copied() {
                Some(com::QUERY) if self.held.is_none() => self.on_query_text().await.map(drop),
                Some(com::QUERY) => self.on_query_held().await,
                _ => self.forward(ResponseKind::Single).await.map(drop),
            };
        };
        // Another backend user's session: the backend would answer whether this user may
        // end it (its grants), but with multiplexing the session's connection is one a set of
        // that user shares, or none. Answered as the backend answers a thread that is not the
        // user's own (found by a review: such a KILL ended the other user's session).
        if self.mux_user.as_deref() != Some(&*slot.user()) {
            bump(&self.shared.stats.answered_locally);
            let id = target.map_or(0, |(id, _, _)| id);
            let e = ErrorInfo::new(
                er::KILL_DENIED,
                "HY000",
                format!("You are not owner of thread {id}"),
            );
            return self.answer_error(e).await;
        }
        if !query {
            slot.kill();
            // the session's own: it ends (told as MariaDB tells it), and the connection it
            // holds, which other sessions share, is given back rather than killed
            if self
                .kill_slot
                .as_ref()
                .is_some_and(|(_, own)| Arc::ptr_eq(own, &slot))
            {
                let e = ErrorInfo::new(er::CONNECTION_KILLED, "70100", "Connection was killed");
                self.answer_protocol_error(e).await?;
                return Err(End::ClientQuit);
            }
        }
        let kill = slot.begin_kill();
        let current = kill.current;
        if current == 0 {
            drop(kill);
            return self.answer_ok(0, 0).await;
        }
        match kill_text {
            // a text of the proxy's own: nothing of the client's bytes goes with it (found by
            // a review: a comment MySQL's reading skips and OceanBase runs rode along)
            Some(k) => {
                let mut text = vec![com::QUERY];
                text.extend_from_slice(&k.text_for(current));
                self.command = text;
            }
            None => {
                if let Some(b) = self.command.get_mut(1..5) {
                    b.copy_from_slice(&current.to_le_bytes());
                }
            }
        }
        let kind = if process_kill {
            ResponseKind::Single
        } else {
            ResponseKind::Query
        };
        let r = self.forward(kind).await.map(drop);
        drop(kill);
        r
    }
}

impl Session {
    /// Whether the text being run holds a KILL the proxy cannot map
    /// (`session_state::unmapped_kill`), read under every state a statement of it may set; a
    /// text over `MAX_READ` is read off the event loop (one that cannot be read is taken to).
    pub(super) async fn kill_unmapped(&mut self) -> bool {
        let d = self.reading();
        let read = move |sql: &[u8]| {
            // (a text this reading cannot split may be split by another: read under every
            // state, as the router reads it; found by a review)
            let state = crate::sql::scan::statements(sql, d).map_or(true, |(p, _)| {
                crate::engine::read::changes_reading_state(sql, &p, d)
            });
            session_state::unmapped_kill(sql, d, state)
        };
        if self.command.len() > session_state::MAX_READ {
            self.off_loop(read).await.unwrap_or(true)
        } else {
            read(self.command.get(1..).unwrap_or_default())
        }
    }
}

/// The answer to a KILL the proxy cannot map with multiplexing on
/// (`session_state::unmapped_kill`): one in a text of several statements, in dynamic SQL,
/// in a program's body, of an expression or a user's connections.
pub(super) fn unmapped_kill_error() -> ErrorInfo {
    ErrorInfo::new(
        er::NOT_SUPPORTED_YET,
        "42000",
        "obkv-proxy: with multiplexing on, a KILL must be the only statement of its text and \
         name a connection id as a number (KILL [QUERY | CONNECTION] n) or a query id (KILL \
         QUERY ID n); this KILL would reach a backend connection other sessions share",
    )
}

/// The whole seconds an assignment's value gives (`@@SESSION.wait_timeout = 3`, `= '3'`).
fn seconds(text: &[u8]) -> Option<u64> {
    let at = memchr::memchr(b'=', text)?;
    let v = text.get(at + 1..)?.trim_ascii();
    let v = v
        .strip_prefix(b"'")
        .and_then(|v| v.strip_suffix(b"'"))
        .unwrap_or(v);
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wait_timeout_is_read_in_whole_seconds() {
        assert_eq!(super::seconds(b"@@SESSION.wait_timeout = 3"), Some(3));
        assert_eq!(
            super::seconds(b"@@SESSION.wait_timeout = '28800'"),
            Some(28800)
        );
        assert_eq!(super::seconds(b"@@SESSION.wait_timeout = -1"), None);
        assert_eq!(super::seconds(b"@@SESSION.wait_timeout = 1.5"), None);
    }
}
