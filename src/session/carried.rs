//! Prepared statements of a multiplexed session, carried from connection to connection
//! (`Statements::carrying`) instead of pinning the session.
//!
//! A statement is prepared on the connection the session holds when the client prepares it;
//! its id the client is given is the backend's, unless the session already has a statement of
//! that id (then one of the proxy's, `Statements::client_id_for`), and the metadata of the
//! answer is the backend's, relayed as it is. When the session runs it on another connection
//! (an execution, pieces of a long value, a reset), the proxy prepares it there first, in the
//! database and variables the session had at the prepare, and reads that answer itself; the
//! commands then name the backend statement of that connection. An execution that sends no
//! parameter types is sent the ones the client bound last when that backend statement has
//! not seen them. Each connection is known by a serial (`Conn::serial`), which a
//! COM_RESET_CONNECTION renews: the statements other sessions had on it are prepared again.
//!
//! A statement the client closes is closed on every connection it was prepared on: on the
//! one the session holds at once, on the others before they next serve a session
//! (`Set::close_later`). The session's end, a reset and a change of user close them all
//! likewise.
//!
//! What still pins (`mux::before_command`): a statement the proxy rewrites (its variants are
//! prepared beside it on one connection), one whose text changes the session's state, an
//! execution that opens a cursor, MariaDB's bulk execution.

use super::*;
use std::sync::atomic::Ordering::Relaxed;

use crate::backend;
use crate::backend::lend::CarriedState;
use crate::protocol::execute;

/// The id sent in place of a statement the session does not have: no connection hands it
/// out (ids count up from 1), so the backend answers as for an unknown statement.
pub(super) const NO_STATEMENT: u32 = u32::MAX - 1;

/// Most connections a statement is kept prepared on: beyond it the oldest is closed.
const MAX_CONNS_A_STATEMENT: usize = 64;

/// A statement of a session whose statements are carried from connection to connection
/// (`session::carried`).
pub(super) struct Carried {
    /// The text as the client prepared it.
    pub text: Vec<u8>,
    /// The session's database and variables when it was prepared (None: as the connection
    /// has them): a connection in another state prepares it in this one.
    pub state: Option<crate::backend::lend::CarriedState>,
    /// The parameter types the client bound last (a connection whose statement has not seen
    /// them is sent them with an execution that sends none), and their generation (one more
    /// each time the client binds others).
    pub types: Option<Vec<u8>>,
    pub types_generation: u32,
    /// The backend statements that are this one, a connection each.
    pub on: Vec<OnConn>,
}

impl Carried {
    /// The backend statement execution `cmd` names on connection `serial`, when it is
    /// prepared there and the execution needs nothing recorded or rebuilt (the usual
    /// execution: the same types as last time, or none sent); else None
    /// (`Session::carry_execution` then does the rest). `params`: the statement's count.
    #[inline]
    pub fn ready_on(&self, serial: u64, cmd: &[u8], params: usize) -> Option<u32> {
        let on = self.on.iter().find(|o| o.serial == serial)?;
        let fresh = on.typed == self.types_generation;
        let ready = match execute::sent_types(cmd, params) {
            None => true,
            Some(None) => fresh || self.types.is_none(),
            Some(Some(t)) => {
                fresh && self.types_generation != 0 && self.types.as_deref() == Some(t)
            }
        };
        ready.then_some(on.id)
    }
}

/// A backend statement of a carried statement's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OnConn {
    /// The connection's serial (`backend::lend::Conn::serial`).
    pub serial: u64,
    /// The backend's statement id there.
    pub id: u32,
    /// The generation of the parameter types it has seen (0: none).
    pub typed: u32,
}

/// What preparing a carried statement again on the connection held gave.
enum Again {
    /// Its backend statement there.
    Ready(u32),
    /// The backend's refusal (its ERR packet).
    Refused(Vec<u8>),
    /// Another statement than the client's (its parameters or columns differ): closed.
    Differs,
    /// The session has no such statement.
    Gone,
}

/// Where a command of a carried statement goes.
pub(super) enum Target {
    /// The backend statement of the connection held.
    Backend(u32),
    /// The session has no such statement (or it is not prepared there and `prepare` was
    /// false): the command goes to `NO_STATEMENT`.
    Unknown,
    /// It could not be prepared there: the client was answered.
    Answered,
}

impl Session {
    /// The backend statement that is the session's statement `id` on the connection held,
    /// prepared there first when it is not (and `prepare`). `answer`: a failure to prepare it
    /// is the client's answer (else, for a command without one, the statement is `Unknown`).
    pub(super) async fn carried_target(
        &mut self,
        id: u32,
        prepare: bool,
        answer: bool,
    ) -> Result<Target, End> {
        let serial = self.conn_serial;
        let Some(c) = self.statements.carried_mut(id) else {
            return Ok(Target::Unknown);
        };
        if let Some(on) = c.on.iter().find(|o| o.serial == serial) {
            return Ok(Target::Backend(on.id));
        }
        if !prepare || self.backend.is_none() {
            return Ok(Target::Unknown);
        }
        match self.prepare_here(id).await? {
            Again::Ready(bid) => Ok(Target::Backend(bid)),
            Again::Gone => Ok(Target::Unknown),
            Again::Refused(_) | Again::Differs if !answer => Ok(Target::Unknown),
            Again::Refused(packet) => {
                // the backend's refusal (a table dropped since), as a direct execution that
                // prepared it again would get it; the diagnostics area holds it there
                if let Some(m) = self.mux.as_mut() {
                    m.hold_for_next();
                }
                self.answer_backend_packet(&packet).await?;
                Ok(Target::Answered)
            }
            Again::Differs => {
                // not the statement the client prepared any more (its tables changed): the
                // client prepares it again
                let e = ErrorInfo::new(
                    er::NEED_REPREPARE,
                    "HY000",
                    "Prepared statement needs to be re-prepared",
                );
                self.answer_error(e).await?;
                Ok(Target::Answered)
            }
        }
    }

    /// Prepares the session's carried statement `id` on the connection held (which has it
    /// not), in the state it was prepared in, and records it there (the oldest connection of
    /// its beyond `MAX_CONNS_A_STATEMENT` let go).
    async fn prepare_here(&mut self, id: u32) -> Result<Again, End> {
        let serial = self.conn_serial;
        let Some(c) = self.statements.carried_mut(id) else {
            return Ok(Again::Gone);
        };
        let text = std::mem::take(&mut c.text);
        let at = c.state.clone();
        let prepared = self.prepare_again(&text, at.as_ref()).await;
        if let Some(c) = self.statements.carried_mut(id) {
            c.text = text;
        }
        let (bid, columns, params) = match prepared? {
            Ok(p) => p,
            Err(packet) => return Ok(Again::Refused(packet)),
        };
        self.shared.lending.prepared_again.fetch_add(1, Relaxed);
        let same = self
            .statements
            .get(id)
            .is_some_and(|p| p.params == params && p.columns == columns);
        let c = match self.statements.carried_mut(id) {
            Some(c) if same => c,
            _ => {
                be!(self).queue_command(&close_command(bid));
                return Ok(Again::Differs);
            }
        };
        let dropped = (c.on.len() >= MAX_CONNS_A_STATEMENT).then(|| c.on.remove(0));
        c.on.push(OnConn {
            serial,
            id: bid,
            typed: 0,
        });
        if let Some(old) = dropped {
            self.close_on(old.serial, &[old.id]);
        }
        Ok(Again::Ready(bid))
    }

    /// A multiplexed session's state now, its database read when not known (None: not
    /// multiplexed).
    pub(super) async fn state_now(&mut self) -> Result<Option<CarriedState>, End> {
        if self.mux.is_none() {
            return Ok(None);
        }
        if self.db_fact.is_none() {
            self.read_facts(&Default::default()).await?;
        }
        let db = match &self.db_fact {
            Some(Some(db)) => Some(db.clone()),
            _ => None,
        };
        Ok(self.mux.as_ref().map(|m| m.state_now(db)))
    }

    /// Prepares `text` on the connection held, in the session's state `at` (its database
    /// and variables when the client prepared it) when the connection is in another.
    async fn prepare_again(
        &mut self,
        text: &[u8],
        at: Option<&CarriedState>,
    ) -> Result<Result<(u32, u16, u16), Vec<u8>>, End> {
        let switch = match at {
            Some(at) => self
                .state_now()
                .await?
                .filter(|now| now.db != at.db || now.vars != at.vars)
                .map(|now| {
                    // (what is not read at a prepare stays as the session has it)
                    let mut then = at.clone();
                    then.last_insert_id = now.last_insert_id;
                    then.multi_statements = now.multi_statements;
                    (then, now)
                }),
            _ => None,
        };
        let Some((then, now)) = switch else {
            return match backend::prepare(be!(self), self.client_caps, text).await {
                Ok(p) => Ok(p),
                Err(e) => Err(self.own_command_failed(e).await),
            };
        };
        // the statement reads its names and literals in the state it was prepared in: the
        // connection is put in it for the prepare, and back in the session's after
        let base = self.mux.as_ref().and_then(|m| m.base_charset());
        let there = then.restore_from(&now, base.as_deref());
        let back = now.restore_from(&then, base.as_deref());
        let (Some(there), Some(back)) = (there, back) else {
            let e = ErrorInfo::new(
                er::NEED_REPREPARE,
                "HY000",
                "Prepared statement needs to be re-prepared",
            );
            return Ok(Err(e.to_packet()));
        };
        let caps = self.client_caps;
        if !mux::restored(be!(self), caps, Some(there)).await {
            return Err(self.lose_backend(self.command_frames).await);
        }
        let prepared = backend::prepare(be!(self), caps, text).await;
        if !mux::restored(be!(self), caps, Some(back)).await {
            return Err(self.lose_backend(self.command_frames).await);
        }
        match prepared {
            Ok(p) => Ok(p),
            Err(e) => Err(self.own_command_failed(e).await),
        }
    }

    /// Before the session is pinned (its state is not followed after): every statement of
    /// its not prepared on the connection held is prepared there now, each in the state it
    /// was prepared in. One that cannot be (its tables changed) is left to its next use.
    pub(super) async fn prepare_all_here(&mut self) -> Result<(), End> {
        if !self.statements.carrying || self.backend.is_none() {
            return Ok(());
        }
        // (one that cannot be prepared now is left to its next use)
        for id in self.statements.carried_elsewhere(self.conn_serial) {
            self.prepare_here(id).await?;
        }
        Ok(())
    }

    /// An execution (or a bulk execution) of statement `id` of a carried session: the
    /// command names the backend statement of the connection held, and sends the parameter
    /// types that statement has not seen when the client sent none. False: the client was
    /// answered instead.
    pub(super) async fn carry_execution(&mut self, id: Option<u32>) -> Result<bool, End> {
        let Some(id) = id else {
            execute::with_statement_id(&mut self.command, NO_STATEMENT);
            return Ok(true);
        };
        // (prepared on the connection held already, the usual case: no future of its own)
        if self.carry_execution_here(id) {
            return Ok(true);
        }
        match self.carried_target(id, true, true).await? {
            Target::Backend(_) => {
                self.carry_execution_here(id);
                Ok(true)
            }
            Target::Unknown => {
                execute::with_statement_id(&mut self.command, NO_STATEMENT);
                Ok(true)
            }
            Target::Answered => Ok(false),
        }
    }

    /// The execution of carried statement `id` names its statement on the connection held,
    /// with the parameter types the client bound last when that statement has not seen them
    /// (false: it is not prepared there).
    fn carry_execution_here(&mut self, id: u32) -> bool {
        let serial = self.conn_serial;
        let Some((params, c)) = self.statements.carried_with_params(id) else {
            return false;
        };
        let Some(on) = c.on.iter_mut().find(|o| o.serial == serial) else {
            return false;
        };
        let bid = on.id;
        execute::with_statement_id(&mut self.command, bid);
        // (None also for a bulk execution, and a statement without parameters)
        let Some(e) = execute::parse(&self.command, params) else {
            return true;
        };
        if let Some(t) = e.types {
            let kept = c.types.get_or_insert_with(Vec::new);
            if kept.as_slice() != t || c.types_generation == 0 {
                kept.clear();
                kept.extend_from_slice(t);
                c.types_generation = c.types_generation.wrapping_add(1).max(1);
            }
            on.typed = c.types_generation;
            return true;
        }
        // the types this statement last saw are the ones the client bound last
        if on.typed == c.types_generation {
            return true;
        }
        let Some(types) = c.types.as_deref() else {
            return true; // none bound yet: the backend answers as it would directly
        };
        if let Some(packet) = execute::rebuild(Vec::new(), &e, bid, types, None, 0, &[]) {
            on.typed = c.types_generation;
            self.command = packet;
        }
        true
    }

    /// A command that names a statement and is not an execution (pieces of a long value, a
    /// fetch, a reset): it names the backend statement of the connection held (prepared there
    /// first when `prepare`; `answer`: as `carried_target`). False: the client was answered
    /// instead.
    pub(super) async fn carry_command(&mut self, prepare: bool, answer: bool) -> Result<bool, End> {
        let target = match self.statements.resolve(&self.command) {
            Some(id) => self.carried_target(id, prepare, answer).await?,
            None => Target::Unknown,
        };
        let bid = match target {
            Target::Backend(b) => b,
            Target::Unknown => NO_STATEMENT,
            Target::Answered => return Ok(false),
        };
        execute::with_statement_id(&mut self.command, bid);
        Ok(true)
    }

    /// The client closed a carried statement: it is closed on every connection it was
    /// prepared on (its rewrite's variants on the one held).
    pub(super) async fn close_carried(
        &mut self,
        carried: Option<Box<Carried>>,
        variants: &[u32],
    ) -> Result<(), End> {
        let mut queued = false;
        if let Some(b) = self.backend.as_mut() {
            for v in variants {
                b.queue_command(&close_command(*v));
                queued = true;
            }
        }
        if let Some(c) = carried {
            for on in &c.on {
                queued |= self.close_on(on.serial, &[on.id]);
            }
        }
        if queued && be!(self).flush().await.is_err() {
            return Err(self.lose_backend(self.command_frames).await);
        }
        Ok(())
    }

    /// Every statement of the session goes (a reset or a change of user, which close those
    /// on the connection held themselves: `held_closed`; or the session's end).
    pub(super) fn close_all_carried(&mut self, held_closed: bool) {
        if !self.statements.carrying {
            return;
        }
        let serial = self.conn_serial;
        for p in self.statements.take_all() {
            if let Some(c) = p.carried {
                for on in &c.on {
                    if !(held_closed && on.serial == serial) {
                        self.close_on(on.serial, &[on.id]);
                    }
                }
            }
        }
    }

    /// Closes backend statements `ids` of connection `serial`: queued on the connection held
    /// when it is that one (true), else kept for it by its set.
    fn close_on(&mut self, serial: u64, ids: &[u32]) -> bool {
        if serial == self.conn_serial {
            if let Some(b) = self.backend.as_mut() {
                for id in ids {
                    b.queue_command(&close_command(*id));
                }
                return true;
            }
        }
        let set = match (&self.mux, &self.pinned_set) {
            (Some(m), _) => m.set(),
            (None, Some(s)) => s.clone(),
            (None, None) => return false,
        };
        if !set.close_later(serial, ids) {
            debug!(peer = %self.peer, "multiplexing: too many statement closes kept; one dropped");
        }
        false
    }
}

/// COM_STMT_CLOSE of backend statement `id`.
pub(super) fn close_command(id: u32) -> [u8; 5] {
    let b = id.to_le_bytes();
    [com::STMT_CLOSE, b[0], b[1], b[2], b[3]]
}
