//! Multiplexing (`multiplex.mode = "transaction"`): the backend connections of one backend user
//! and wire shape, lent to that user's sessions for a statement or a transaction and given back
//! when nothing ties them (`session::mux`).
//!
//! A set is keyed by everything that shapes the wire format a connection speaks (the backend
//! user, the capabilities and MariaDB extended capabilities in force, the login's character
//! set, TLS or not) and, in proxy-auth mode, by the login the proxy makes itself: a connection
//! is never lent to a session of another user or of another wire shape.
//!
//! With relayed authentication the proxy cannot log in by itself (it never learns a password):
//! a set holds the connections its clients' own logins made, each kept when its session gives
//! it back while the set is under `multiplex.max_backend_connections`, closed otherwise. In
//! proxy-auth mode a set opens connections itself up to that limit.
//!
//! A session that needs a connection while all of its set's are lent waits for one, at most
//! `multiplex.wait_timeout_ms` (then error 1040, never a hang).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::{BackendStream, LoginSpec};
use crate::sql::session_state::is_charset_var;

/// Most sets kept at once: a session whose set would be one more is not multiplexed (pinned).
pub const MAX_SETS: usize = 4096;

/// What decides which connections a session may be lent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SetKey {
    /// The backend user (relayed authentication: the client's login name).
    pub user: Vec<u8>,
    pub caps: u32,
    pub ext_caps: u32,
    /// The character set (collation id) the login named.
    pub charset: u8,
    pub tls: bool,
    /// Proxy-auth mode: the login the proxy makes for more connections of this set.
    pub login: Option<LoginSpec>,
}

/// One assignment of a session variable as the client wrote it (`sql::session_state`), kept
/// to be made again on another connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assigned {
    /// The variable's lower-case name (`names` for SET NAMES / SET CHARACTER SET).
    pub key: Vec<u8>,
    /// What to send after `SET ` to make it again.
    pub text: Vec<u8>,
}

/// The session state a connection carries that the proxy restores when it changes hands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CarriedState {
    /// The current database (a session without one is never multiplexed).
    pub db: Option<Arc<[u8]>>,
    /// Session variables set since login, in the order they were set (one entry a name).
    pub vars: Vec<Assigned>,
    /// `LAST_INSERT_ID()`: the last AUTO_INCREMENT value an INSERT of the session generated.
    pub last_insert_id: u64,
    /// COM_SET_OPTION: multiple statements a text turned on (true) or off (false) since
    /// login; None: as the login's capabilities say.
    pub multi_statements: Option<bool>,
}

impl CarriedState {
    /// Records an assignment: a name set again keeps its place, a `DEFAULT` forgets it.
    pub fn assign(&mut self, a: Assigned, to_default: bool) {
        let found = self.vars.iter().position(|v| v.key == a.key);
        match (found, to_default) {
            (Some(i), true) => {
                self.vars.remove(i);
            }
            (Some(i), false) => {
                if let Some(v) = self.vars.get_mut(i) {
                    *v = a;
                }
            }
            (None, true) => {}
            (None, false) => self.vars.push(a),
        }
    }

    /// Whether `names` (or one of the connection character set variables) is set.
    pub fn sets_charset(&self) -> bool {
        self.vars.iter().any(|v| is_charset_var(&v.key))
    }

    /// The statement that turns a connection in state `from` into `self` (None: nothing to
    /// do), as the SET of the assignments that differ (a name `from` has and `self` has not
    /// goes back to DEFAULT; the character set variables go back to `base`, the set's login
    /// character set, read once); and whether the database differs. None: cannot be done
    /// (`from` changed the character set and `base` is not known).
    pub fn restore_from(&self, from: &CarriedState, base: Option<&[u8]>) -> Option<Restore> {
        if self == from {
            return Some(Restore::default());
        }
        let mut sql: Vec<u8> = Vec::new();
        let mut add = |piece: &[u8]| {
            sql.extend_from_slice(if sql.is_empty() { b"SET " } else { b", " });
            sql.extend_from_slice(piece);
        };
        let charset = |s: &'_ CarriedState| -> Vec<Assigned> {
            s.vars
                .iter()
                .filter(|v| is_charset_var(&v.key))
                .cloned()
                .collect()
        };
        let charset_differs = charset(self) != charset(from);
        // (SET NAMES sets every one of them: a session that used it needs no base)
        if charset_differs && from.sets_charset() && !self.vars.iter().any(|v| v.key == b"names") {
            add(base?);
        }
        // the client's own assignments, in its order: each from the first that differs on
        // (the later ones were made after it), all of them when the character set differs
        // (their literals were read in it)
        let mut from_here = charset_differs;
        for v in &self.vars {
            from_here |= !from.vars.contains(v);
            if from_here {
                add(&v.text);
            }
        }
        if self.last_insert_id != from.last_insert_id {
            add(format!("last_insert_id = {}", self.last_insert_id).as_bytes());
        }
        // what the session never set goes back to the server's value; last (OceanBase gives
        // every assignment after a `= DEFAULT` in one SET the default too, measured on seekdb)
        for v in &from.vars {
            if !is_charset_var(&v.key) && !self.vars.iter().any(|s| s.key == v.key) {
                let mut piece = b"SESSION ".to_vec();
                piece.extend_from_slice(&v.key);
                piece.extend_from_slice(b" = DEFAULT");
                add(&piece);
            }
        }
        Some(Restore {
            set: (!sql.is_empty()).then_some(sql),
            db: (self.db != from.db).then(|| self.db.clone()).flatten(),
            multi_statements: None,
        })
    }
}

/// What a connection needs before it serves a session (`CarriedState::restore_from`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restore {
    /// A SET text.
    pub set: Option<Vec<u8>>,
    /// A database to select (COM_INIT_DB).
    pub db: Option<Arc<[u8]>>,
    /// Multiple statements to turn on or off (COM_SET_OPTION; set by the caller, which knows
    /// the login's capabilities).
    pub multi_statements: Option<bool>,
}

impl Restore {
    pub fn is_empty(&self) -> bool {
        self.set.is_none() && self.db.is_none() && self.multi_statements.is_none()
    }
}

/// A backend connection of a set, with what the proxy knows of its session state.
pub struct Conn {
    pub stream: BackendStream,
    /// The backend's id of the connection (its greeting's; 0: not known).
    pub id: u32,
    /// The proxy's name for the connection's prepared statements (`new_serial`): a backend
    /// statement id means something only on the connection of this serial. A new one after a
    /// COM_RESET_CONNECTION (which closed every statement on it).
    pub serial: u64,
    pub state: CarriedState,
    /// Statements of other sessions' to close before it serves (`Set::close_later`), filled
    /// by `Set::borrow`.
    pub closes: Vec<u32>,
}

/// A serial no connection had before (`Conn::serial`).
pub fn new_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Relaxed)
}

/// Most statement closes a set keeps for connections other sessions hold (beyond it, a close
/// is dropped: the statement stays on the backend until its connection closes).
pub const MAX_PENDING_CLOSES: usize = 65_536;

/// Why a session got no connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortage {
    /// Every connection of the set stayed lent for `multiplex.wait_timeout_ms`.
    Timeout,
    /// The set has no connection left and cannot open one (relayed authentication: every
    /// connection its clients' logins made was lost).
    NoneLeft,
}

/// What `Set::borrow` gives.
pub enum Borrowed {
    /// An idle connection of the set.
    Idle(Conn),
    /// Room for one more: the caller logs in (`Set::opened_failed` if that fails).
    Open(LoginSpec),
}

#[derive(Default)]
struct SetState {
    idle: Vec<Conn>,
    /// Connections of the set: lent and idle.
    open: usize,
    lent: usize,
    waiting: usize,
    /// Holders asked to give their connection up for a waiter that have not yet (`Release`).
    releasing: usize,
    /// Sessions that keep a connection of the set between commands (`Set::keep`).
    keepers: Vec<Arc<Keeper>>,
    /// Backend statements to close on a connection (by serial) once it is borrowed again.
    closes: HashMap<u64, Vec<u32>>,
    closes_count: usize,
    /// The serials of the set's open connections (lent, idle, or pinned by their session): a
    /// close for any other is dropped (its statements went with it).
    live: std::collections::HashSet<u64>,
}

impl SetState {
    /// Sessions wait that no idle connection and no keeper's release already serves.
    fn unserved(&self) -> bool {
        self.waiting > self.idle.len().saturating_add(self.releasing)
    }

    fn ask_keepers(&self) {
        for k in &self.keepers {
            k.ask();
        }
    }

    /// The connection `serial` is gone, or has no statements any more.
    fn gone(&mut self, serial: u64) {
        self.live.remove(&serial);
        if let Some(ids) = self.closes.remove(&serial) {
            self.closes_count = self.closes_count.saturating_sub(ids.len());
        }
    }
}

/// The connections of one backend user and wire shape.
pub struct Set {
    pub key: SetKey,
    state: Mutex<SetState>,
    /// `SetState::closes_count`, readable without the lock (stored as the lock goes: `Locked`).
    pending_closes: std::sync::atomic::AtomicUsize,
    /// `SetState::waiting` and `open` as the lock last left them (`Locked`), for `keep`.
    waiting_now: std::sync::atomic::AtomicUsize,
    open_now: std::sync::atomic::AtomicUsize,
    freed: Notify,
    /// The SET text that puts a connection back in the login's character set (read once).
    base_charset: std::sync::OnceLock<Vec<u8>>,
    totals: Arc<Totals>,
}

/// Backend connections of every set: open now, and the most open at once.
#[derive(Default)]
pub struct Totals {
    pub open: AtomicU64,
    pub peak: AtomicU64,
}

impl Totals {
    fn opened(&self, n: usize) {
        let n = n as u64;
        let now = self.open.fetch_add(n, Relaxed).saturating_add(n);
        self.peak.fetch_max(now, Relaxed);
    }

    fn closed(&self, n: usize) {
        if n > 0 {
            let n = n as u64;
            let _ = self
                .open
                .fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(n)));
        }
    }
}

/// Counts of one set, for SHOW PROXY STATUS and /metrics.
#[derive(Debug, Clone, Default)]
pub struct SetCounts {
    pub user: String,
    pub open: usize,
    pub lent: usize,
    pub idle: usize,
    pub waiting: usize,
}

impl Set {
    fn lock(&self) -> Locked<'_> {
        Locked {
            guard: self.state.lock().unwrap_or_else(|e| e.into_inner()),
            set: self,
        }
    }

    /// A connection made by a login of this set's (relayed authentication), lent at once to
    /// the session that made it.
    pub fn joined(&self, serial: u64) {
        let mut s = self.lock();
        s.live.insert(serial);
        s.open = s.open.saturating_add(1);
        self.totals.opened(1);
        s.lent = s.lent.saturating_add(1);
    }

    /// A connection for a session in state `want`: the session's own last one when it is
    /// idle (`last`: its backend id), else one that needs no restore, else any that can be
    /// restored; else room to open one (proxy-auth mode); else waits until `deadline`.
    pub async fn borrow(
        &self,
        want: &CarriedState,
        last: u32,
        max: usize,
        deadline: tokio::time::Instant,
        waits: &Lending,
    ) -> Result<Borrowed, Shortage> {
        let mut waited = None;
        loop {
            let notified = self.freed.notified();
            tokio::pin!(notified);
            {
                let mut s = self.lock();
                loop {
                    let mut pick = s
                        .idle
                        .iter()
                        .rposition(|c| c.id == last && last != 0)
                        .or_else(|| s.idle.iter().rposition(|c| c.state == *want));
                    if pick.is_none() && !s.idle.is_empty() {
                        let base = self.base_charset();
                        pick = s
                            .idle
                            .iter()
                            .rposition(|c| want.restore_from(&c.state, base).is_some());
                    }
                    let Some(i) = pick else { break };
                    let mut conn = s.idle.swap_remove(i);
                    // (one branch when no session left a close)
                    if s.closes_count > 0 {
                        if let Some(ids) = s.closes.remove(&conn.serial) {
                            s.closes_count = s.closes_count.saturating_sub(ids.len());
                            conn.closes = ids;
                        }
                    }
                    // one the backend closed while it sat idle is dropped (a readable idle
                    // socket is a closed one), and the next looked at
                    if !still_open(&conn.stream) {
                        s.gone(conn.serial);
                        s.open = s.open.saturating_sub(1);
                        self.totals.closed(1);
                        continue;
                    }
                    s.lent = s.lent.saturating_add(1);
                    if waited.is_some() {
                        s.waiting = s.waiting.saturating_sub(1);
                    }
                    drop(s);
                    waits.waited(waited);
                    return Ok(Borrowed::Idle(conn));
                }
                if let (Some(spec), true) = (&self.key.login, s.open < max) {
                    s.open = s.open.saturating_add(1);
                    self.totals.opened(1);
                    s.lent = s.lent.saturating_add(1);
                    if waited.is_some() {
                        s.waiting = s.waiting.saturating_sub(1);
                    }
                    drop(s);
                    waits.waited(waited);
                    return Ok(Borrowed::Open(spec.clone()));
                }
                if s.open == 0 && self.key.login.is_none() {
                    if waited.is_some() {
                        s.waiting = s.waiting.saturating_sub(1);
                    }
                    return Err(Shortage::NoneLeft);
                }
                let first = waited.is_none();
                if first {
                    s.waiting = s.waiting.saturating_add(1);
                    waited = Some(std::time::Instant::now());
                }
                // registered before the lock goes: a give-back (which takes it before it
                // notifies) from here on wakes this wait
                notified.as_mut().enable();
                // the sessions that keep a connection between commands are asked to give one
                // up (`Keeper`)
                if first {
                    s.ask_keepers();
                }
            }
            if crate::timer::timeout_at(deadline, notified).await.is_err() {
                let mut s = self.lock();
                s.waiting = s.waiting.saturating_sub(1);
                drop(s);
                waits.timed_out.fetch_add(1, Relaxed);
                waits.waited(waited);
                return Err(Shortage::Timeout);
            }
        }
    }

    /// Backend statements other sessions closed on the connection `serial`, which its
    /// session kept between commands (`keep`): sent before its next command. (One atomic
    /// load when no session left a close.)
    #[inline]
    pub fn closes_for(&self, serial: u64) -> Vec<u32> {
        if !self.closes_pending() {
            return Vec::new();
        }
        let mut s = self.lock();
        let ids = s.closes.remove(&serial).unwrap_or_default();
        s.closes_count = s.closes_count.saturating_sub(ids.len());
        ids
    }

    /// After a command: whether the session keeps its connection until its next one —
    /// because it must (`hold`: what its last statement left), or because no session waits
    /// and the set is within `max` (a connection over it is closed when it comes back). A
    /// session that keeps it is one of the set's keepers (`registered`: already), asked to
    /// give it up when a session waits (at once if one does); one that does not is not.
    #[inline(always)]
    pub fn keep(&self, keeper: &Arc<Keeper>, registered: bool, hold: bool, max: usize) -> bool {
        // (a keeper that keeps on, with nothing changed: no lock)
        if registered
            && !hold
            && self.waiting_now.load(Relaxed) == 0
            && self.open_now.load(Relaxed) <= max
        {
            return true;
        }
        self.keep_locked(keeper, registered, hold, max)
    }

    /// Whether a session closed a carried statement that is still prepared on some
    /// connection of the set (`closes_for`): one atomic read, no lock.
    #[inline(always)]
    pub fn closes_pending(&self) -> bool {
        self.pending_closes.load(Relaxed) != 0
    }

    #[inline(never)]
    fn keep_locked(&self, keeper: &Arc<Keeper>, registered: bool, hold: bool, max: usize) -> bool {
        let mut s = self.lock();
        let keep = hold || (s.waiting == 0 && s.open <= max);
        if keep {
            if !registered {
                s.keepers.push(keeper.clone());
            }
            if s.unserved() {
                keeper.ask();
            }
        } else if registered {
            s.keepers.retain(|k| !Arc::ptr_eq(k, keeper));
        }
        keep
    }

    /// The session no longer keeps a connection of the set.
    pub fn unkeep(&self, keeper: &Arc<Keeper>) {
        let mut s = self.lock();
        s.keepers.retain(|k| !Arc::ptr_eq(k, keeper));
        keeper.asked.store(false, Relaxed);
    }

    /// A keeper asked (`Keeper::poll_asked`): a release for a session that waits when one
    /// still needs it (no idle connection and no other keeper's release serves it), else None.
    pub fn claim(&self) -> Option<Release<'_>> {
        let mut s = self.lock();
        if s.unserved() {
            s.releasing = s.releasing.saturating_add(1);
            return Some(Release(self));
        }
        None
    }

    /// A login `borrow` made room for succeeded: its connection is `serial`.
    pub fn opened(&self, serial: u64) {
        self.lock().live.insert(serial);
    }

    /// A login `borrow` made room for failed.
    pub fn open_failed(&self) {
        let mut s = self.lock();
        s.open = s.open.saturating_sub(1);
        self.totals.closed(1);
        s.lent = s.lent.saturating_sub(1);
        drop(s);
        self.freed.notify_waiters();
    }

    /// A lent connection comes back: kept idle (`keep`, and the set is not over `max`), or
    /// closed (None returned: the caller dropped it; Some: the caller closes it).
    pub fn give_back(&self, conn: Conn, keep: bool, max: usize) -> Option<Conn> {
        let mut s = self.lock();
        s.lent = s.lent.saturating_sub(1);
        let out = if keep && s.open <= max {
            s.idle.push(conn);
            None
        } else {
            s.gone(conn.serial);
            s.open = s.open.saturating_sub(1);
            self.totals.closed(1);
            Some(conn)
        };
        // a waiter counts itself and registers its wait under this lock: none counted, none
        // to wake
        let waiting = s.waiting > 0;
        drop(s);
        if waiting {
            self.freed.notify_waiters();
        }
        out
    }

    /// A lent connection (`serial`) is lost (broken, or kept by its session to its end).
    pub fn lost(&self, serial: u64) {
        let mut s = self.lock();
        s.gone(serial);
        s.lent = s.lent.saturating_sub(1);
        s.open = s.open.saturating_sub(1);
        self.totals.closed(1);
        drop(s);
        self.freed.notify_waiters();
    }

    /// Backend statements `ids` on the connection `serial` (which another session may hold
    /// now) are closed before it next serves a session. False: over `MAX_PENDING_CLOSES`,
    /// not kept.
    pub fn close_later(&self, serial: u64, ids: &[u32]) -> bool {
        if ids.is_empty() {
            return true;
        }
        let mut s = self.lock();
        // (a connection gone took its statements with it)
        if !s.live.contains(&serial) {
            return true;
        }
        if s.closes_count.saturating_add(ids.len()) > MAX_PENDING_CLOSES {
            return false;
        }
        s.closes_count += ids.len();
        s.closes.entry(serial).or_default().extend_from_slice(ids);
        true
    }

    /// A COM_RESET_CONNECTION closed every statement of connection `old`, which is `new`
    /// from now on (the closes kept for it go).
    pub fn renewed(&self, old: u64, new: u64) {
        let mut s = self.lock();
        s.gone(old);
        s.live.insert(new);
    }

    /// Closes kept for connections.
    #[cfg(test)]
    pub fn closes_kept(&self) -> usize {
        self.lock().closes_count
    }

    /// The login's character set assignments, once read (`set_base_charset`).
    pub fn base_charset(&self) -> Option<&[u8]> {
        self.base_charset.get().map(Vec::as_slice)
    }

    /// Learnt once: a later reading (of the same login's state) is not kept.
    pub fn set_base_charset(&self, text: Vec<u8>) {
        let _ = self.base_charset.set(text);
    }

    pub fn counts(&self) -> SetCounts {
        let s = self.lock();
        SetCounts {
            user: String::from_utf8_lossy(&self.key.user).into_owned(),
            open: s.open,
            lent: s.lent,
            idle: s.idle.len(),
            waiting: s.waiting,
        }
    }
}

/// The set's state, locked; the counts read without the lock (`keep`, `closes_for`) are
/// stored as it is unlocked.
struct Locked<'a> {
    guard: std::sync::MutexGuard<'a, SetState>,
    set: &'a Set,
}

impl std::ops::Deref for Locked<'_> {
    type Target = SetState;
    fn deref(&self) -> &SetState {
        &self.guard
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut SetState {
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.set.waiting_now.store(self.guard.waiting, Relaxed);
        self.set.open_now.store(self.guard.open, Relaxed);
        self.set
            .pending_closes
            .store(self.guard.closes_count, Relaxed);
    }
}

/// A session that keeps a connection between commands (`Set::keep`), as the set sees it: asked
/// to give it up when another session waits for one.
#[derive(Default)]
pub struct Keeper {
    asked: std::sync::atomic::AtomicBool,
    waker: atomic_waker::AtomicWaker,
}

impl Keeper {
    fn ask(&self) {
        self.asked.store(true, std::sync::atomic::Ordering::Release);
        self.waker.wake();
    }

    /// Ready once asked since the last time it was (the task polling it is woken then).
    #[inline]
    pub fn poll_asked(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        // (registered before the flag is read: an ask after it wakes this task)
        self.waker.register(cx.waker());
        if self.asked.swap(false, std::sync::atomic::Ordering::AcqRel) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }
}

/// A holder's promise to give its connection up for a waiter (`Set::claim`): kept until
/// dropped, after the give-back (or the session's end).
pub struct Release<'a>(&'a Set);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.releasing = s.releasing.saturating_sub(1);
        // a holder that could not give its connection up (it pinned, or failed) leaves the
        // waiter to another
        if s.unserved() {
            s.ask_keepers();
        }
    }
}

/// An idle connection has nothing to say: readable means closed (EOF) or out of step.
fn still_open(stream: &BackendStream) -> bool {
    if stream.buffered() != 0 {
        return false;
    }
    let mut probe = [0u8; 1];
    matches!(stream.get_ref().tcp().try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// Upper bounds (seconds) of the wait-for-a-connection histogram.
pub const WAIT_BOUNDS: [f64; 8] = [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0];

/// Reasons a session keeps its connection for the rest of its life (`sql::session_state`).
pub const PIN_REASONS: [&str; 15] = [
    "user_variable",
    "temporary_table",
    "lock",
    "prepared_statement",
    "previous_result",
    "connection_id",
    "session_command",
    "stored_program",
    "set_not_carried",
    "no_database",
    "unreadable",
    "too_many_sets",
    "cursor",
    "prepared_rewrite",
    "bulk_execute",
];

/// A session as a KILL finds it by the connection id its client was given (the greeting's):
/// the backend connection that serves it now (0: none). A KILL counts itself in `kills` before
/// it reads `current`, and a give-back clears `current` before it reads `kills` (both
/// sequentially consistent): either the KILL reads 0, or the give-back sees the KILL and waits
/// until it ran — so the connection a KILL names cannot pass to another session meanwhile, at
/// the cost of two atomic operations a command when no KILL runs.
#[derive(Default)]
pub struct Slot {
    current: AtomicU32,
    /// KILLs that read `current` and have not finished running.
    kills: AtomicU32,
    /// The last of them finished.
    done: tokio::sync::Notify,
    /// A KILL CONNECTION named it: the session ends.
    killed: std::sync::atomic::AtomicBool,
    /// The session's task while it waits between commands (one waiter: a few atomic
    /// operations a wait, where a `Notify` takes a lock).
    waker: atomic_waker::AtomicWaker,
    /// The backend user the session's connections log in as (a change of user changes it).
    user: std::sync::Mutex<Arc<[u8]>>,
}

/// A KILL under way: the connection it read, which stays the session's until it drops.
pub struct KillGuard {
    slot: Arc<Slot>,
    pub current: u32,
}

impl Drop for KillGuard {
    fn drop(&mut self) {
        if self.slot.kills.fetch_sub(1, SeqCst) == 1 {
            self.slot.done.notify_waiters();
        }
    }
}

impl Slot {
    /// The backend user the session logs in as.
    pub fn user(&self) -> Arc<[u8]> {
        self.user.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The session changed its user (COM_CHANGE_USER).
    pub fn set_user(&self, user: Arc<[u8]>) {
        *self.user.lock().unwrap_or_else(|e| e.into_inner()) = user;
    }

    /// The session holds connection `id` now.
    pub fn attach(&self, id: u32) {
        self.current.store(id, SeqCst);
    }

    /// The session lets its connection go: no KILL finds it from here on, and one that read it
    /// before has run.
    pub async fn detach(&self) {
        self.current.store(0, SeqCst);
        // (no KILL under way, most often: no waiter registered)
        if self.kills.load(SeqCst) == 0 {
            return;
        }
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.kills.load(SeqCst) == 0 {
                return;
            }
            done.await;
        }
    }

    /// A KILL naming the session begins: the connection that serves it, kept its own until the
    /// guard drops.
    pub fn begin_kill(self: &Arc<Self>) -> KillGuard {
        self.kills.fetch_add(1, SeqCst);
        KillGuard {
            slot: self.clone(),
            current: self.current.load(SeqCst),
        }
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// A KILL CONNECTION names the session: it ends (woken if it waits).
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        self.waker.wake();
    }

    /// Waits until a KILL names the session (only the session's own task waits here).
    pub async fn killed(&self) {
        std::future::poll_fn(|cx| {
            self.waker.register(cx.waker());
            if self.is_killed() {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    }
}

/// Every set, and the counters of lending.
#[derive(Default)]
pub struct Lending {
    sets: Mutex<HashMap<SetKey, Arc<Set>>>,
    /// Sessions by the connection id their client was given (`Slot`).
    slots: Mutex<HashMap<u32, Arc<Slot>>>,
    pub totals: Arc<Totals>,
    /// Sessions multiplexed since start.
    pub sessions_total: AtomicU64,
    /// Sessions multiplexed now.
    pub sessions: AtomicU64,
    pub borrows: AtomicU64,
    pub restores: AtomicU64,
    /// Prepared statements of multiplexed sessions prepared again on another connection.
    pub prepared_again: AtomicU64,
    /// Connections idle sessions gave up to a waiting one (`Set::claim`).
    pub given_up: AtomicU64,
    pub timed_out: AtomicU64,
    pub pins: [AtomicU64; PIN_REASONS.len()],
    /// Waits for a connection: counts under each of `WAIT_BOUNDS` (cumulative at reading),
    /// the rest, and the sum in microseconds.
    waits: [AtomicU64; WAIT_BOUNDS.len() + 1],
    wait_us: AtomicU64,
}

impl Lending {
    /// The set of `key`, made when it is the first of its kind (None: `MAX_SETS` are kept).
    pub fn set(&self, key: SetKey) -> Option<Arc<Set>> {
        let mut sets = self.sets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = sets.get(&key) {
            return Some(s.clone());
        }
        if sets.len() >= MAX_SETS {
            // sets no connection is left in make room
            sets.retain(|_, s| {
                let c = s.lock();
                c.open > 0 || c.waiting > 0 || Arc::strong_count(s) > 1
            });
            if sets.len() >= MAX_SETS {
                return None;
            }
        }
        let set = Arc::new(Set {
            key: key.clone(),
            state: Mutex::new(SetState::default()),
            pending_closes: Default::default(),
            waiting_now: Default::default(),
            open_now: Default::default(),
            freed: Notify::new(),
            base_charset: std::sync::OnceLock::new(),
            totals: self.totals.clone(),
        });
        sets.insert(key, set.clone());
        Some(set)
    }

    /// Registers a session under the id its client was given; None when another holds it.
    pub fn register(&self, visible: u32, current: u32, user: &[u8]) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if visible == 0 || slots.contains_key(&visible) {
            return None;
        }
        let slot = Arc::new(Slot {
            current: AtomicU32::new(current),
            user: std::sync::Mutex::new(Arc::from(user)),
            ..Default::default()
        });
        slots.insert(visible, slot.clone());
        Some(slot)
    }

    pub fn unregister(&self, visible: u32, slot: &Arc<Slot>) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots.get(&visible).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(&visible);
        }
    }

    /// The session that holds backend connection `id` now (the id `CONNECTION_ID()` gave a
    /// pinned session), if one does: one pass over the sessions, for a KILL only.
    pub fn slot_holding(&self, id: u32) -> Option<Arc<Slot>> {
        if id == 0 {
            return None;
        }
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|s| s.current.load(SeqCst) == id)
            .cloned()
    }

    /// The session its client knows as `visible`.
    pub fn slot(&self, visible: u32) -> Option<Arc<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&visible)
            .cloned()
    }

    fn waited(&self, since: Option<std::time::Instant>) {
        let Some(since) = since else { return };
        let took = since.elapsed().as_secs_f64();
        let i = WAIT_BOUNDS
            .iter()
            .position(|b| took <= *b)
            .unwrap_or(WAIT_BOUNDS.len());
        if let Some(c) = self.waits.get(i) {
            c.fetch_add(1, Relaxed);
        }
        self.wait_us.fetch_add(
            u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX),
            Relaxed,
        );
    }

    pub fn pinned(&self, reason: usize) {
        if let Some(c) = self.pins.get(reason) {
            c.fetch_add(1, Relaxed);
        }
    }

    /// Per set: its user and counts.
    pub fn counts(&self) -> Vec<SetCounts> {
        let sets: Vec<Arc<Set>> = self
            .sets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        sets.iter().map(|s| s.counts()).collect()
    }

    /// Name/value rows for SHOW PROXY STATUS: totals, then one row a user.
    pub fn rows(&self) -> Vec<(String, String)> {
        let g = |c: &AtomicU64| c.load(Relaxed).to_string();
        let per_user = self.per_user();
        let (open, lent, idle) = per_user.iter().fold((0, 0, 0), |(o, l, i), c| {
            (o + c.open, l + c.lent, i + c.idle)
        });
        let sessions = self.sessions.load(Relaxed);
        let mut rows = vec![
            ("multiplex_sessions".to_string(), sessions.to_string()),
            (
                "multiplex_backend_connections_open".into(),
                open.to_string(),
            ),
            (
                "multiplex_backend_connections_busy".into(),
                lent.to_string(),
            ),
            (
                "multiplex_backend_connections_idle".into(),
                idle.to_string(),
            ),
            (
                "multiplex_clients_per_backend_connection".into(),
                format!("{:.2}", ratio(sessions, open)),
            ),
            ("multiplex_sessions_total".into(), g(&self.sessions_total)),
            (
                "multiplex_backend_connections_peak".into(),
                g(&self.totals.peak),
            ),
            ("multiplex_borrows".into(), g(&self.borrows)),
            ("multiplex_state_restores".into(), g(&self.restores)),
            (
                "multiplex_statements_prepared_again".into(),
                g(&self.prepared_again),
            ),
            ("multiplex_given_up".into(), g(&self.given_up)),
            ("multiplex_wait_timeouts".into(), g(&self.timed_out)),
        ];
        let (waits, sum) = self.wait_histogram();
        rows.push((
            "multiplex_waits".into(),
            waits.iter().sum::<u64>().to_string(),
        ));
        rows.push(("multiplex_wait_seconds_sum".into(), format!("{sum:.6}")));
        for (reason, c) in PIN_REASONS.iter().zip(&self.pins) {
            rows.push((format!("multiplex_pins_{reason}"), g(c)));
        }
        for c in per_user {
            rows.push((
                format!("multiplex_user:{}", c.user),
                format!(
                    "open={} busy={} idle={} waiting={}",
                    c.open, c.lent, c.idle, c.waiting
                ),
            ));
        }
        rows
    }

    /// The counts of every set, summed by user.
    pub fn per_user(&self) -> Vec<SetCounts> {
        let mut by: std::collections::BTreeMap<String, SetCounts> = Default::default();
        for c in self.counts() {
            let e = by.entry(c.user.clone()).or_insert_with(|| SetCounts {
                user: c.user.clone(),
                ..Default::default()
            });
            e.open += c.open;
            e.lent += c.lent;
            e.idle += c.idle;
            e.waiting += c.waiting;
        }
        by.into_values().collect()
    }

    /// The wait histogram: counts per bound (not cumulative), the count past the last, and
    /// the sum in seconds.
    pub fn wait_histogram(&self) -> (Vec<u64>, f64) {
        let counts = self.waits.iter().map(|c| c.load(Relaxed)).collect();
        (counts, self.wait_us.load(Relaxed) as f64 / 1e6)
    }
}

/// Clients per backend connection (0 with none open).
pub fn ratio(sessions: u64, open: usize) -> f64 {
    if open == 0 {
        0.0
    } else {
        sessions as f64 / open as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(key: &str, text: &str) -> Assigned {
        Assigned {
            key: key.as_bytes().to_vec(),
            text: text.as_bytes().to_vec(),
        }
    }

    fn state(db: &str, vars: &[(&str, &str)], id: u64) -> CarriedState {
        CarriedState {
            db: Some(Arc::from(db.as_bytes())),
            vars: vars.iter().map(|(k, t)| a(k, t)).collect(),
            last_insert_id: id,
            multi_statements: None,
        }
    }

    #[test]
    fn the_same_state_needs_no_restore() {
        let s = state("d", &[("sql_mode", "sql_mode='ANSI'")], 3);
        assert!(s.restore_from(&s.clone(), None).unwrap().is_empty());
    }

    #[test]
    fn what_differs_is_set_again_and_what_the_session_never_set_goes_back_to_default() {
        let want = state("d", &[("time_zone", "time_zone='+00:00'")], 7);
        let from = state("e", &[("sql_mode", "sql_mode='ANSI'")], 0);
        let r = want.restore_from(&from, None).unwrap();
        assert_eq!(
            String::from_utf8(r.set.unwrap()).unwrap(),
            "SET time_zone='+00:00', last_insert_id = 7, SESSION sql_mode = DEFAULT"
        );
        assert_eq!(r.db.as_deref(), Some(&b"d"[..]));
    }

    #[test]
    fn a_changed_character_set_goes_back_to_the_login_one_only_when_it_is_known() {
        let want = state("d", &[], 0);
        let from = state("d", &[("names", "NAMES latin1")], 0);
        assert!(want.restore_from(&from, None).is_none());
        let r = want
            .restore_from(&from, Some(b"character_set_client = 'utf8mb4'"))
            .unwrap();
        assert_eq!(r.set.unwrap(), b"SET character_set_client = 'utf8mb4'");
        // a session that set its own character set needs no base: its assignments follow
        let want = state(
            "d",
            &[("names", "NAMES utf8mb4"), ("sql_mode", "sql_mode=''")],
            0,
        );
        let r = want.restore_from(&from, None).unwrap();
        assert_eq!(r.set.unwrap(), b"SET NAMES utf8mb4, sql_mode=''");
    }

    #[test]
    fn an_assignment_again_keeps_its_place_and_default_forgets_it() {
        let mut s = CarriedState::default();
        s.assign(a("sql_mode", "sql_mode='A'"), false);
        s.assign(a("time_zone", "time_zone='+01:00'"), false);
        s.assign(a("sql_mode", "sql_mode='B'"), false);
        assert_eq!(s.vars[0].text, b"sql_mode='B'");
        s.assign(a("sql_mode", "sql_mode=DEFAULT"), true);
        assert_eq!(s.vars.len(), 1);
        assert_eq!(s.vars[0].key, b"time_zone");
    }

    /// A give-back waits for a KILL that read its connection, and only for that: a KILL that
    /// begins after it finds no connection.
    #[tokio::test]
    async fn a_give_back_waits_for_the_kill_that_read_its_connection() {
        use std::future::Future;
        use std::task::Poll;
        let lending = Lending::default();
        let slot = lending.register(7, 41, b"app").expect("registered");
        let kill = slot.begin_kill();
        assert_eq!(kill.current, 41);
        let detach = slot.detach();
        tokio::pin!(detach);
        let once = std::future::poll_fn(|cx| Poll::Ready(detach.as_mut().poll(cx))).await;
        assert!(once.is_pending(), "the give-back went while the KILL ran");
        drop(kill);
        detach.await;
        assert_eq!(
            slot.begin_kill().current,
            0,
            "a later KILL finds no connection"
        );
        slot.attach(42);
        assert_eq!(slot.begin_kill().current, 42);
        // no KILL under way: the give-back does not wait
        slot.detach().await;
    }
}

#[cfg(test)]
mod closes {
    use super::*;

    fn set() -> Arc<Set> {
        Lending::default()
            .set(SetKey {
                user: b"u".to_vec(),
                caps: 0,
                ext_caps: 0,
                charset: 45,
                tls: false,
                login: None,
            })
            .expect("a set")
    }

    #[test]
    fn closes_are_kept_for_live_connections_only_and_go_with_them() {
        let s = set();
        s.joined(7);
        assert!(s.close_later(7, &[1, 2]));
        assert_eq!(s.closes_kept(), 2);
        // a connection the set does not have (lost, reset, never its): nothing to close
        assert!(s.close_later(8, &[3]));
        assert_eq!(s.closes_kept(), 2);
        // a reset closed them all: the connection is another from then on
        s.renewed(7, 9);
        assert_eq!(s.closes_kept(), 0);
        assert!(s.close_later(7, &[4]));
        assert_eq!(s.closes_kept(), 0);
        assert!(s.close_later(9, &[5]));
        assert_eq!(s.closes_kept(), 1);
        s.lost(9);
        assert_eq!(s.closes_kept(), 0);
    }

    #[test]
    fn closes_beyond_the_limit_are_refused() {
        let s = set();
        s.joined(1);
        let many = vec![7u32; MAX_PENDING_CLOSES];
        assert!(s.close_later(1, &many));
        assert!(!s.close_later(1, &[8]));
        assert_eq!(s.closes_kept(), MAX_PENDING_CLOSES);
    }

    #[test]
    fn serials_are_never_given_twice() {
        let (a, b) = (new_serial(), new_serial());
        assert_ne!(a, b);
        assert_ne!(a, 0);
    }
}
