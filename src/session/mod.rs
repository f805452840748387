//! One client session: the command loop.
//!
//! The story of a command: read it from the client → ask the router (`engine::router`) → forward
//! it (or a rewrite) to the session's pinned backend connection, or answer locally → relay the
//! backend's response packets to the client as they arrive, watching only the status packets
//! (`protocol::response`) to know where the response ends.

/// The session's backend connection, in a function that returns `Result<_, End>`. A session
/// without one (multiplexing, between its statements: `mux`) is lent one before any command
/// runs; none here ends the session (never a panic).
macro_rules! be {
    ($s:expr) => {
        match $s.backend.as_mut() {
            Some(b) => b,
            None => return Err(End::BackendLost),
        }
    };
}

mod advice;
mod alter;
mod answer;
mod carried;
mod catalog;
mod diagnostics;
mod dynamic;
mod facts;
pub mod handshake;
mod hbase;
mod load;
mod mux;
mod observe;
mod prepared;
mod relay;
mod ttl;

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::{debug, warn};

use crate::admin::{bump, metrics};
use crate::backend::{BackendStream, PooledLogin};
use crate::config::AuthMode;
use crate::config::BackendKind;
use crate::engine::prefix_scan::{ConnCharset, TableView};
use crate::engine::read::Scope;
use crate::engine::refusal::{Refusal, Unchecked};
use crate::engine::router::{self, Answer, Context, Decision, Origin, Outbound};
use crate::hbase::rules::Note;
use crate::net::{ClientIo, ClientSock, Peer};
use crate::protocol::compress::OutOfOrder;
use crate::protocol::constants::{cap, com, er, status, Caps, MAX_FRAME};
use crate::protocol::packets::ErrorInfo;
use crate::protocol::response::{
    with_more_results, with_warnings_added, ResponseKind, ResponseTracker, Step, Summary,
};
use crate::protocol::stream::{CopyError, Flow, PacketStream};
use crate::shared::Shared;
use crate::sql::classify::{self, Class};
use crate::sql::scan::{Dialect, Flavor as SqlFlavor};

/// A command buffer larger than this is given back after the command.
const COMMAND_KEEP: usize = 1 << 20;

/// How many times a new session, or one the watcher found idle, gives back its buffers as soon
/// as it waits for a command, before it keeps them between commands (until the watcher finds
/// it idle again).
const EAGER_COMMANDS: u8 = 4;

/// How a session ended; decides whether its backend connection may be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// COM_QUIT, or the client closed between commands: the backend is idle and clean.
    ClientQuit,
    /// The client vanished or broke the protocol mid-command: the backend may be mid-response.
    ClientGone,
    /// The backend connection failed; the client was told.
    BackendLost,
    /// Proxy shutdown between commands.
    Shutdown,
}

/// Accepts one client: handshake, then the command loop.
pub async fn serve(mut sock: ClientSock, peer: Peer, shared: Arc<Shared>) {
    if let Some(tcp) = sock.as_tcp() {
        let _ = tcp.set_nodelay(true);
    }
    sock.set_write_timeout(shared.config().net_write_timeout());
    let tcp = sock;
    let timeout = shared.config().handshake_timeout();
    let deadline = tokio::time::Instant::now() + timeout;
    // A slot among the clients logging in: bounds what unauthenticated clients hold (a backend
    // connection each, in the default auth mode). A burst waits; a flood gets 1040.
    let slot =
        match crate::timer::timeout_at(deadline, shared.preauth.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                bump(&shared.stats.refused_login_slots);
                debug!(%peer, "no login slot within {} ms", timeout.as_millis());
                let e = ErrorInfo::new(
                    er::CON_COUNT_ERROR,
                    "08004",
                    "Too many connections (obkv-proxy: too many clients logging in at once)",
                );
                crate::net::refuse_with(tcp, e).await;
                return;
            }
        };
    // the backend's own waits during login are bounded by the same timeout and reported to the
    // client; this outer bound (a little later) only ends logins the client itself stalls
    let outer = deadline + std::time::Duration::from_millis(500);
    // (boxed: the login's state is dropped once it is done, not carried in the session's task
    // for as long as the client stays)
    let login = Box::pin(handshake::establish(tcp, peer, shared.clone()));
    // (the session is moved into its future inside this block: a `session` or `established`
    // local would keep a second copy of it in this task's state for the session's life)
    let run = {
        let established = crate::timer::timeout_at(outer, login).await;
        drop(slot);
        match established {
            Ok(Ok(s)) => s.run(),
            Ok(Err(e)) => {
                if matches!(e, handshake::HandshakeFailure::Rejected(_)) {
                    bump(&shared.stats.refused_login_failed);
                }
                debug!(%peer, "no session: {e:?}");
                return;
            }
            Err(_) => {
                bump(&shared.stats.refused_login_timeout);
                debug!(%peer, "login not finished within {} ms", timeout.as_millis());
                return;
            }
        }
    };
    run.await;
}

/// A login's OK not yet sent (`Session::with_login_ok`).
struct LoginOk {
    seq: u8,
    packet: Vec<u8>,
    compress: bool,
}

pub struct Session {
    shared: Arc<Shared>,
    /// The configuration this session follows, and its generation: taken again between
    /// commands when a reload changed it (`refresh_config`).
    cfg: Arc<crate::config::Config>,
    cfg_generation: u64,
    peer: Peer,
    client: PacketStream<ClientIo>,
    /// None: lent back to its set (multiplexing) until the next command.
    backend: Option<BackendStream>,
    /// Capabilities in force between client and backend (MariaDB's extended ones included).
    client_caps: Caps,
    /// Proxy-auth mode: the login this backend connection was made for (its pool key).
    pooled: Option<PooledLogin>,
    statements: prepared::Statements,
    /// Server status of the last response (transaction state for local answers).
    last_status: u16,
    /// The current command, frames joined.
    command: Vec<u8>,
    /// How many frames the client used for the current command.
    command_frames: u8,
    /// What the backend can do natively (decides how HBase DDL is carried out); asked lazily.
    flavor: Option<crate::hbase::backend::Flavor>,
    /// Warnings and notes of the HBase DDL being carried out (the proxy's and the backend's it
    /// kept): the diagnostics area after the proxy's OK (`hold_own_answer`).
    pending_warnings: Vec<Note>,
    /// How the backend reads SQL text (from its greeting, refined by `flavor`).
    dialect: Dialect,
    /// The backend compares table names case-insensitively (learned with `flavor`).
    names_ci: bool,
    /// The proxy's notes and warnings about the statement being carried out: held with the
    /// backend's conditions of it once it ran (`hold_notes`).
    pending_notes: Vec<Note>,
    /// Conditions the proxy holds for the diagnostics area of the last statement
    /// (`engine::diagnostics`): None when the backend's own area is the truth.
    held: Option<crate::engine::diagnostics::Held>,
    /// The backend refused SIGNAL as a statement: refusals are answered by the proxy alone.
    no_signal: bool,
    /// How many warnings and notes the proxy adds to the statement being carried out: the
    /// response relayed next counts them in its warning count (with the backend's own), as the
    /// next SHOW WARNINGS lists them. Taken by the relay; cleared before each command.
    own_warnings: u16,
    /// The partition the open transaction's first write to an HBase table fixed.
    txn_pin: Option<crate::engine::write::Place>,
    /// `SET OBKV HBASE_READS = ON`: SELECTs on HBase tables return the cells HBase would.
    hbase_reads: bool,
    /// The current database as last read (None: not known; forgotten whenever a command may
    /// have changed it).
    db_fact: Option<Option<std::sync::Arc<[u8]>>>,
    /// The connection's character set as last read (None: not known).
    charset_fact: Option<ConnCharset>,
    /// The connection's character set may not be the login's, and may be a wide one (utf16,
    /// utf32, ucs2: a session can only begin in one that keeps ASCII as it is): while it is not
    /// known, it is read before a statement on an HBase table is decided.
    charset_changed: bool,
    /// Whether `@@sql_mode` as last read holds NO_BACKSLASH_ESCAPES, on OceanBase (which
    /// reports it in no status flag). None: not known.
    mode_fact: Option<bool>,
    /// HBase tables whose definition could not be read for the statement being decided
    /// (inside the user's transaction, not cached): its writes are refused, not guessed.
    blind: Vec<(Vec<u8>, Vec<u8>)>,
    /// What the statement being carried out does to HBase tables, and its class and outcome
    /// for the metrics (`observe`).
    activity: crate::engine::decision::Activity,
    /// What the statements of the open transaction showed the rowkey advisor: given to it
    /// when the transaction commits, dropped when it rolls back (`settle_observations`).
    txn_observed: Vec<crate::engine::decision::Observation>,
    /// The rows `txn_observed` shows, while it is not empty (`Observed::weight`).
    txn_shown: usize,
    statement: Option<(metrics::Class, metrics::Outcome)>,
    /// The HBase table last counted and its counters' slot (`metrics::table_slot`): the
    /// schema is held, so the same `Arc` is the same table.
    table_slot: Option<(Arc<crate::hbase::schema::TableSchema>, usize)>,
    /// When the command being carried out was read (None: counted already, or counting off).
    started: Option<u64>,
    /// The client stream's traffic when the last command's metrics were counted.
    traffic: (u64, u64),
    /// The user the client logged in as (for the log of refusals).
    user: Arc<str>,
    /// The backend's id of this session's connection (its greeting's; KILL takes it).
    backend_id: u32,
    /// The serial of the connection held, or last held (`backend::lend::Conn::serial`):
    /// which backend statements of the session's carried ones are there.
    conn_serial: u64,
    /// Whether a command sent to the backend has a response not ended yet (a client that goes
    /// then leaves a statement running, which the session's end stops: `end_backend_statement`),
    /// and the session's sockets as the client-gone watcher sees them (`watch`; unwatched while
    /// they cannot be duplicated, tried again at each command: a client that goes meanwhile is
    /// noticed when a write to it fails).
    watched: Arc<crate::watch::Watched>,
    /// Waits for a command left that give back the buffers at once (`EAGER_COMMANDS`).
    eager: u8,
    /// When the wait for the next command ends by the idle timeout (None: no timeout).
    idle_deadline: Option<tokio::time::Instant>,
    /// Multiplexing (`mux`); None: off, or the session is pinned to its connection.
    mux: Option<Box<mux::Mux>>,
    /// A pinned session's set: its connection is counted there until the session ends.
    pinned_set: Option<Arc<crate::backend::lend::Set>>,
    /// With multiplexing on: the session as a KILL finds it, by the id its client was given.
    kill_slot: Option<(u32, Arc<crate::backend::lend::Slot>)>,
    /// With multiplexing configured: the backend user the session's set logs in as (its
    /// KILLs are read by `on_kill` even once it is pinned, or when it could not register).
    mux_user: Option<Arc<[u8]>>,
    /// The `wait_timeout` a multiplexed session set: the backend closes no connection of its
    /// for idling, so the proxy ends the session after that long without a command.
    client_wait_timeout: Option<std::time::Duration>,
    /// The login's OK, until `run` sends it (`with_login_ok`).
    login_ok: Option<Box<LoginOk>>,
}

/// The backend speaks between commands (it is closing the connection); for a session that
/// holds none, a KILL that names it.
async fn closing(
    backend: &mut Option<BackendStream>,
    slot: Option<&Arc<crate::backend::lend::Slot>>,
) {
    match (backend, slot) {
        (Some(b), _) => {
            let _ = b.wait_readable().await;
        }
        (None, Some(s)) => s.killed().await,
        (None, None) => std::future::pending().await,
    }
}

/// `closing` with the lean wait of an idle session.
async fn closing_lean(
    backend: &mut Option<BackendStream>,
    slot: Option<&Arc<crate::backend::lend::Slot>>,
) {
    match (backend, slot) {
        (Some(b), _) => {
            let _ = b.wait_readable_lean().await;
        }
        (None, Some(s)) => s.killed().await,
        (None, None) => std::future::pending().await,
    }
}

enum ReadError {
    Closed,
    /// Nothing arrived within the idle timeout.
    Idle,
    /// A packet began but did not finish within the net read timeout.
    Timeout(u8),
    OutOfOrder(u8),
    TooLarge(u8),
}

/// The limits `read_command` applies.
struct ReadLimits {
    max_bytes: usize,
    idle: Option<std::time::Duration>,
    net_read: std::time::Duration,
}

impl Session {
    fn new(
        shared: Arc<Shared>,
        peer: Peer,
        client: PacketStream<ClientIo>,
        backend: BackendStream,
        client_caps: Caps,
        pooled: Option<PooledLogin>,
    ) -> Self {
        let watched = shared.watched.register(
            client.get_ref(),
            client.get_ref().is_tls(),
            backend.get_ref(),
        );
        Session {
            cfg: shared.config(),
            cfg_generation: shared.config_generation(),
            shared,
            peer,
            client,
            backend: Some(backend),
            client_caps,
            pooled,
            statements: prepared::Statements::default(),
            last_status: status::AUTOCOMMIT,
            command: Vec::new(),
            command_frames: 1,
            flavor: None,
            pending_warnings: Vec::new(),
            dialect: Dialect::default(),
            names_ci: false,
            db_fact: None,
            charset_fact: None,
            charset_changed: false,
            mode_fact: None,
            blind: Vec::new(),
            pending_notes: Vec::new(),
            held: None,
            no_signal: false,
            own_warnings: 0,
            txn_pin: None,
            hbase_reads: false,
            activity: Default::default(),
            txn_observed: Vec::new(),
            txn_shown: 0,
            statement: None,
            table_slot: None,
            started: None,
            traffic: (0, 0),
            user: Arc::from(""),
            backend_id: 0,
            conn_serial: 0,
            watched,
            eager: EAGER_COMMANDS,
            idle_deadline: None,
            mux: None,
            pinned_set: None,
            kill_slot: None,
            mux_user: None,
            client_wait_timeout: None,
            login_ok: None,
        }
    }

    /// The login's OK, sent by `run` before the first command is read: the session is then
    /// whole (its connection counted in its multiplexing set, `with_mux`) before its client can
    /// send anything. `compress`: both sides of the client's stream switch right after it.
    fn with_login_ok(mut self, seq: u8, packet: Vec<u8>, compress: bool) -> Self {
        self.login_ok = Some(Box::new(LoginOk {
            seq,
            packet,
            compress,
        }));
        self
    }

    /// Sends the login's OK (`with_login_ok`). Some: the client is gone.
    async fn finish_login(&mut self) -> Option<End> {
        let ok = self.login_ok.take()?;
        // (bounded as the rest of the login was)
        let wait = self.cfg.handshake_timeout();
        let sent = crate::timer::timeout(wait, self.client.send_packet(ok.seq, &ok.packet)).await;
        if !matches!(sent, Ok(Ok(_))) {
            return Some(End::ClientGone);
        }
        if ok.compress {
            self.client.enable_compression(true);
        }
        None
    }

    fn with_user(mut self, user: &[u8]) -> Self {
        self.user = Arc::from(String::from_utf8_lossy(user).as_ref());
        self.shared.stats.backend_logged_in();
        if self.client.get_ref().is_tls() {
            bump(&self.shared.stats.tls_sessions);
        }
        self
    }

    /// What the backend's greeting and login said: how it reads SQL, and the status after login.
    fn with_backend(mut self, server_version: &[u8], status: u16, backend_id: u32) -> Self {
        self.backend_id = backend_id;
        self.dialect = Dialect::from_server_version(server_version);
        // a configured kind settles what the greeting cannot say
        self.dialect.flavor = match self.cfg.hbase.backend_kind {
            BackendKind::Oceanbase | BackendKind::Seekdb => SqlFlavor::OceanBase,
            BackendKind::Mariadb => SqlFlavor::MariaDb,
            BackendKind::Mysql => SqlFlavor::MySql,
            BackendKind::Auto => self.dialect.flavor,
        };
        self.last_status = status;
        self
    }

    /// What the router needs for a flagged text besides the text: the backend's reading of SQL
    /// as of now (its NO_BACKSLASH_ESCAPES state comes with every status; its kind is asked once
    /// per process, OceanBase's greeting does not say), the enforcement mode, and where `$` names
    /// are HBase tables (the current database is asked only when `hbase.databases` is set).
    async fn context(&mut self) -> Result<Context, End> {
        self.context_facts().await?;
        Ok(self.context_now())
    }

    /// What `context_now` needs from the backend, asked when the session does not know it.
    async fn context_facts(&mut self) -> Result<(), End> {
        let scoped = !self.shared.hbase_databases.is_empty();
        if scoped || self.dialect.flavor == SqlFlavor::MySqlOrOceanBase {
            self.flavor().await?;
        }
        // the current database as the session tracks it (read once, forgotten whenever a
        // command may change it), not asked again for every statement
        // on OceanBase also the sql_mode (NO_BACKSLASH_ESCAPES is in no status flag there)
        let ob = self.dialect.flavor == SqlFlavor::OceanBase;
        if (scoped || ob) && self.db_fact.is_none() {
            self.read_facts(&Default::default()).await?;
        }
        if self.charset_stale() {
            self.read_charset().await?;
        }
        Ok(())
    }

    /// Whether the connection's character set may have changed to a wide one since it was
    /// last known (`charset_changed`): read it (`read_charset`) before deciding. Tested before
    /// the await (an await that does nothing still costs a future).
    fn charset_stale(&self) -> bool {
        self.charset_changed && self.charset_fact.is_none()
    }

    async fn read_charset(&mut self) -> Result<(), End> {
        let need = crate::engine::prefix_scan::Need {
            charset: true,
            ..Default::default()
        };
        self.read_facts(&need).await?;
        Ok(())
    }

    /// `context` once `context_facts` has run: made in place, where an async function's result
    /// would be copied out of its future (the context is a few hundred bytes; every flagged
    /// text makes one).
    fn context_now(&self) -> Context {
        let databases = self.shared.hbase_databases.clone();
        let scoped = !databases.is_empty();
        let current = match (scoped, &self.db_fact) {
            (true, Some(Some(db))) => Some(String::from_utf8_lossy(db).into_owned()),
            _ => None,
        };
        let rewrite = self.cfg.hbase.rewrite == crate::config::Switch::On;
        let writes = self.write_rules();
        Context {
            dialect: self.reading(),
            strict: self.strict(),
            scope: Scope {
                databases,
                current,
                names_ci: self.names_ci,
            },
            rewrite,
            txn: self.txn(),
            socket: self.shared.socket.clone(),
            hbase_reads: self.hbase_reads.then_some(self.cfg.hbase.timestamp),
            tables: (rewrite || writes.is_some() || self.hbase_reads).then(|| TableView {
                cache: self.shared.schemas.clone(),
                current_db: self.db_fact.clone(),
                charset: self.charset_fact,
                names_ci: self.names_ci,
                settled: false,
                counters: self.shared.rewrite_counters.clone(),
                blind: self.blind.clone(),
            }),
            writes,
        }
    }

    /// What the engine's execution-time decisions know of the session (`engine::execute`).
    fn exec_context<'a>(
        &self,
        rules: &'a crate::engine::write::WriteRules,
        txn: &'a crate::engine::write::Txn,
    ) -> crate::engine::ExecContext<'a> {
        crate::engine::ExecContext {
            rules,
            conn: self.charset_fact,
            backslash_escape: self.reading().reported_backslash_escape(),
            txn,
        }
    }

    /// How the backend reads this session's text now: the dialect its greeting and flavor
    /// gave, with NO_BACKSLASH_ESCAPES as the last status reported it.
    fn reading(&self) -> Dialect {
        match self.mode_fact {
            // OceanBase: string literals read as the session's mode last read says (LIKE's
            // escape stays unknown there: `Dialect::reported_backslash_escape`, measured)
            Some(no_backslash_escapes) if self.dialect.flavor == SqlFlavor::OceanBase => Dialect {
                no_backslash_escapes,
                ..self.dialect
            },
            _ => Dialect {
                no_backslash_escapes: self.last_status & status::NO_BACKSLASH_ESCAPES != 0,
                ..self.dialect
            },
        }
    }

    /// `hbase.enforcement = "strict"`: refuse what the proxy cannot check.
    fn strict(&self) -> bool {
        self.cfg.hbase.enforcement == crate::config::Enforcement::Strict
    }

    /// The session's transaction as the write guard sees it: inside one when the backend says
    /// so (IN_TRANS) or autocommit is off; the partition its first write fixed.
    fn txn(&self) -> crate::engine::write::Txn {
        crate::engine::write::Txn {
            active: self.last_status & status::IN_TRANS != 0
                || self.last_status & status::AUTOCOMMIT == 0,
            pinned: self.txn_pin.clone(),
        }
    }

    /// The write rules' warnings and notes for the statement about to run: listed by the next
    /// SHOW WARNINGS and counted in the warning count of the response relayed next.
    fn keep_findings(&mut self, findings: Vec<crate::hbase::rules::Finding>) {
        if !findings.is_empty() {
            self.keep_notes(findings.into_iter().map(Note::from).collect());
        }
    }

    /// The proxy's warnings and notes for the statement about to run (`keep_findings`).
    fn keep_notes(&mut self, notes: Vec<Note>) {
        self.count_own_warnings(notes.len());
        self.pending_notes = notes;
    }

    /// The response relayed next counts `n` warnings of the proxy's besides the backend's.
    fn count_own_warnings(&mut self, n: usize) {
        self.own_warnings = u16::try_from(n).unwrap_or(u16::MAX);
    }

    /// The write rules in force (None: cell rules and the transaction guard both off), with
    /// this statement's time for a T the proxy fills in (one for every reading of the text).
    fn write_rules(&self) -> Option<crate::engine::write::WriteRules> {
        let h = &self.cfg.hbase;
        if h.enforcement == crate::config::Enforcement::Off
            && h.transactions == crate::config::Transactions::Off
        {
            return None;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let now_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
        Some(crate::engine::write::WriteRules {
            cells: h.enforcement,
            convention: h.timestamp,
            window: crate::hbase::cells::Window {
                min_ms: h.timestamp_window_ms[0],
                max_ms: h.timestamp_window_ms[1],
            },
            transactions: h.transactions,
            now_ms,
            // (the sample's seed: the clock's nanoseconds, mixed by the sampler)
            observe: crate::admin::advisor::sampling(now.as_nanos() as u64),
        })
    }

    /// The router's decision on the current command's text. A large text is read on the
    /// blocking pool, so one client's 60 MiB statement never stalls the other sessions of its
    /// event loop. When the rewriter needs facts it does not have (a table's schema, the
    /// current database), they are read and the router asked once more.
    async fn decide(&mut self, origin: Origin) -> Result<(Class, Decision), End> {
        let large = self.command.len() > router::LARGE_TEXT;
        let class = if large {
            // even the pre-check of a huge text runs off the event loop
            match self.off_loop(classify::classify).await {
                Some(c) => c,
                None => return Ok(Self::analysis_failed()),
            }
        } else {
            classify::classify(self.command.get(1..).unwrap_or_default())
        };
        if class == Class::Plain {
            // the fast path: no context, no parse
            return Ok((class, Decision::forward()));
        }
        if class == Class::ServerProbe {
            // a short text read without context
            let sql = self.command.get(1..).unwrap_or_default();
            let decision = router::decide_probe(sql, origin, self.shared.socket.as_deref());
            if decision.rewritten().is_some() {
                bump(&self.shared.stats.socket_probes_answered);
            }
            return Ok((class, decision));
        }
        self.blind.clear();
        self.context_facts().await?;
        let mut ctx = self.context_now();
        // facts are read at most twice (a reading may need a table's schema, then the
        // character set); the third decision is made with what is known (settled)
        for round in 0..3 {
            // (emptied when the command began)
            if round > 0 {
                self.activity.clear();
            }
            let decision = if large {
                let c = ctx.clone();
                let decided = self
                    .off_loop(move |sql| {
                        let mut activity = Default::default();
                        let d = router::decide_observed(sql, class, origin, &c, &mut activity);
                        (d, activity)
                    })
                    .await;
                match decided {
                    Some((d, activity)) => {
                        self.activity = activity;
                        d
                    }
                    None => return Ok(Self::analysis_failed()),
                }
            } else {
                let sql = self.command.get(1..).unwrap_or_default();
                router::decide_observed(sql, class, origin, &ctx, &mut self.activity)
            };
            let Decision::Need(need) = decision else {
                return Ok((class, decision));
            };
            if !need.variables.is_empty() {
                // the texts of dynamic SQL: read and checked; then the text is sent as it is
                let decision = match self.check_dynamic_texts(&need.variables).await? {
                    Some(r) => router::refuse(r),
                    None => Decision::forward(),
                };
                return Ok((class, decision));
            }
            debug!(?need, "reading facts for the statement");
            self.read_facts(&need).await?;
            ctx = self.context().await?;
            // the last decision is made with what is known: a fact still missing then (a
            // table not readable, no character set) is taken as it stands
            if let (Some(t), true) = (ctx.tables.as_mut(), round >= 1) {
                t.settled = true;
            }
        }
        // facts that cannot be had: never forward unchecked what the rules would check
        if self.strict() {
            let blind = !self.blind.is_empty();
            return Ok((class, router::refuse(Refusal::FactsMissing { blind })));
        }
        Ok((class, Decision::forward()))
    }

    /// Runs `f` on the current command's text on the blocking pool (the buffer moves there and
    /// back, not copied). None if the work failed.
    async fn off_loop<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&[u8]) -> T + Send + 'static,
    ) -> Option<T> {
        let command = std::mem::take(&mut self.command);
        let work = tokio::task::spawn_blocking(move || {
            let out = f(command.get(1..).unwrap_or_default());
            (command, out)
        });
        match work.await {
            Ok((command, out)) => {
                self.command = command;
                Some(out)
            }
            Err(e) => {
                warn!(peer = %self.peer, "statement analysis failed: {e}");
                None
            }
        }
    }

    fn analysis_failed() -> (Class, Decision) {
        let err = ErrorInfo::internal("while reading the statement");
        (Class::MaybeHbase, router::refuse(Refusal::Error(err)))
    }

    // (an `async` block, not an `async fn`: an `async fn` keeps its `self` argument twice in its
    // state, as the argument and as the local it is moved to, and every session's task holds
    // that state)
    #[allow(clippy::manual_async_fn)]
    fn run(mut self) -> impl std::future::Future<Output = ()> {
        async move {
            let stats = &self.shared.stats;
            stats.connections_active.fetch_add(1, Ordering::Relaxed);
            // While commands come, the command loop's state (the largest part of a session: the
            // futures of every command it may carry out) lives in a box; a session that goes idle
            // (`busy_loop`) drops it and its buffers, waits for its next command holding a few
            // KiB, and makes them again when it comes.
            let end = match self.finish_login().await {
                Some(end) => end,
                None => loop {
                    if let Some(end) = Box::pin(self.busy_loop()).await {
                        break end;
                    }
                    if let Some(end) = self.idle_wait().await {
                        break end;
                    }
                },
            };
            self.observe_close();
            self.shared
                .stats
                .connections_active
                .fetch_sub(1, Ordering::Relaxed);
            debug!(peer = %self.peer, ?end, "session ended");
            // after this the watcher touches the sockets no more (a look under way ends first): a
            // backend connection it shut down is never reused
            self.watched.release();
            let clean =
                matches!(end, End::ClientQuit | End::Shutdown) && !self.watched.client_gone();
            // a client that went while its statement ran: the statement (and its transaction, with
            // its locks) ends now, as the server ends its own client's
            if end == End::ClientGone && self.watched.in_flight() {
                self.end_backend_statement();
            }
            self.client.shutdown().await;
            if let Some((visible, slot)) = self.kill_slot.take() {
                self.shared.lending.unregister(visible, &slot);
            }
            // the session's statements on connections of its set go with it
            self.close_all_carried(false);
            if let Some(set) = self.pinned_set.take() {
                set.lost(self.conn_serial);
            }
            if self.mux.is_some() && Box::pin(self.mux_end(clean)).await {
                return;
            }
            let Some(mut backend) = self.backend.take() else {
                return;
            };
            match self.pooled.take() {
                Some(p) if clean => {
                    let (spec, conn) = p.with_stream(backend, self.client_caps);
                    self.shared.recycle(spec, conn);
                }
                _ if clean => {
                    // tell the backend goodbye so it does not log an aborted connection
                    let _ = backend.send_command(&[com::QUIT]).await;
                    backend.shutdown().await;
                }
                _ => {} // dropped: a connection with a response in flight is never reused
            }
        }
    }

    /// How long the session may wait for a command: `proxy.idle_timeout_ms`, or sooner the
    /// `wait_timeout` a multiplexed session set (the backend closes no connection of its for
    /// idling: `mux`).
    #[inline]
    fn idle_limit(&self, configured: Option<std::time::Duration>) -> Option<std::time::Duration> {
        match (configured, self.client_wait_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// An idle session's wait for its next command, holding nothing it can give back: as the
    /// busy loop waits, and a command that comes is read there (None).
    #[cold]
    async fn idle_wait(&mut self) -> Option<End> {
        self.trim();
        let mut stop = self.shared.shutdown.clone();
        if !matches!(stop.has_changed(), Ok(false)) {
            return Some(End::Shutdown);
        }
        let deadline = self.idle_deadline;
        let idle = async {
            match deadline {
                Some(deadline) => crate::timer::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(idle);
        // the watcher finds this wait as it finds the busy loop's: one idle for a tick rests
        // (`watch::Watched::rest`), then waits on
        self.watched.idle();
        let watched = self.watched.clone();
        let mut registered = false;
        let mut rested = false;
        loop {
            let asked = std::future::poll_fn(|cx| {
                if !rested && watched.trim_requested(cx, &mut registered) {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            });
            let keeper = self.mux.as_deref().and_then(mux::Mux::keeper_if_releasable);
            tokio::select! {
                biased;
                _ = closing_lean(&mut self.backend, self.kill_slot.as_ref().map(|(_, s)| s)) => {
                    if self.mux.is_some() && self.mux_backend_closed() {
                        continue;
                    }
                    return Some(self.backend_went_away().await);
                }
                r = self.client.wait_readable_lean() => return r.is_err().then_some(End::ClientQuit),
                _ = stop.changed() => return Some(End::Shutdown),
                () = keeper_asked(keeper, &NOT_BEGUN) => {
                    // (boxed: its state is most of this wait's, which every idle session holds)
                    if let Err(end) = Box::pin(self.give_up_for_waiter()).await {
                        return Some(end);
                    }
                }
                () = &mut idle => {
                    // between commands, like a quit: the backend connection is clean
                    debug!(peer = %self.peer, "idle timeout");
                    return Some(End::ClientQuit);
                }
                () = asked => {
                    self.rest();
                    rested = true;
                }
            }
        }
    }

    /// The watcher found this session idle: the watcher's copies of its sockets go
    /// (`watch::Watched::rest`), counted once.
    #[cold]
    #[inline(never)]
    fn rest(&self) {
        if self.watched.rest() {
            bump(&self.shared.stats.sessions_rested);
        }
    }

    /// What an idle session gives back: both streams' buffers, the command buffer, the
    /// statement's bookkeeping (made again by the next command).
    #[cold]
    fn trim(&mut self) {
        self.client.release_idle();
        if let Some(b) = self.backend.as_mut() {
            b.release_idle();
        }
        self.command = Vec::new();
        self.statements.spare = Vec::new();
        self.activity = Default::default();
        // (a transaction's observations wait for its end; after one, the list's room goes)
        if self.txn_observed.is_empty() {
            self.txn_observed = Vec::new();
        }
        if self.blind.is_empty() {
            self.blind = Vec::new();
        }
    }

    /// Commands until the session ends (Some) or the watcher asks an idle session to trim
    /// (None; never for a compressed session, whose codec keeps its buffers).
    async fn busy_loop(&mut self) -> Option<End> {
        // a session that rested is watched again from its next command on
        if let Some(b) = &self.backend {
            self.watched.resume(self.client.get_ref(), b.get_ref());
        }
        let trims = !self.client.is_compressed()
            && !self.backend.as_ref().is_some_and(|b| b.is_compressed());
        let mut shutdown = self.shared.shutdown.clone();
        let cfg = &self.cfg;
        let limits = ReadLimits {
            max_bytes: cfg.proxy.max_packet_bytes,
            idle: cfg.idle_timeout(),
            net_read: cfg.net_read_timeout(),
        };
        // one wait for shutdown for the whole session, not one registered and dropped for
        // each command
        let stopping = self.shared.shutdown.clone();
        // It is polled once, here, which puts the task's waker with the watch (kept there
        // while the future lives: the task's waker does not change, and only a send or a
        // close takes it, both of which `has_changed` then reports); after that the watch's
        // version is read instead, an atomic load where polling the wait again takes its lock
        // (about 250 instructions a command). Unconstrained: polled with the task's
        // cooperative budget spent, the wait would return without registering.
        let stop = tokio::task::unconstrained(shutdown.changed());
        tokio::pin!(stop);
        let stopped = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(stop.as_mut(), cx).is_ready())
        });
        if stopped.await {
            return Some(End::Shutdown);
        }
        // The watcher's request to trim comes with the shutdown's (one future for both:
        // Some(true) to stop, Some(false) to trim), looked at last: a command or a close that
        // is there is read first.
        // A trim is taken only before a command's first byte came: one asked while a command
        // arrives in frames (a 40 MB INSERT over a slow link) waits for the next wait, as
        // ending the read would drop what was read of it.
        let watched = self.watched.clone();
        let mut registered = false;
        let stopping_ref = &stopping;
        let begun = std::sync::atomic::AtomicBool::new(false);
        let begun_ref = &begun;
        let stop_or_trim = std::future::poll_fn(move |cx| {
            if !matches!(stopping_ref.has_changed(), Ok(false)) {
                return std::task::Poll::Ready(true);
            }
            if trims
                && !begun_ref.load(Ordering::Relaxed)
                && watched.trim_requested(cx, &mut registered)
            {
                return std::task::Poll::Ready(false);
            }
            std::task::Poll::Pending
        });
        tokio::pin!(stop_or_trim);
        loop {
            // a client whose next command is always there still stops between commands
            if !matches!(stopping.has_changed(), Ok(false)) {
                return Some(End::Shutdown);
            }
            begun.store(false, Ordering::Relaxed);
            // A new session (or one the watcher found idle) gives its buffers back between
            // its first commands: a driver's setup then a long wait (a pool's idle
            // connection) holds nothing, and a burst of logins holds no buffers for the
            // watcher's tick. One that keeps working keeps them (`EAGER_COMMANDS`).
            if self.eager > 0
                && trims
                && self.client.buffered() == 0
                && self.backend.as_ref().is_none_or(|b| b.buffered() == 0)
            {
                self.eager -= 1;
                self.idle_deadline = self
                    .idle_limit(limits.idle)
                    .map(|d| tokio::time::Instant::now() + d);
                return None;
            }
            self.watched.idle();
            let idle_deadline = match self.idle_limit(limits.idle) {
                None => None,
                Some(d) => {
                    // (kept for the wait without buffers, should the watcher end this one)
                    self.idle_deadline = Some(tokio::time::Instant::now() + d);
                    self.idle_deadline
                }
            };
            // an idle session keeps only small buffers, whatever its last command was
            self.client.shrink_buffers();
            if let Some(b) = self.backend.as_mut() {
                b.shrink_buffers();
            }
            if self.command.capacity() > COMMAND_KEEP {
                self.command = Vec::new();
            }
            // Between commands the backend has nothing to say; if it speaks, it is closing the
            // connection (KILL, wait_timeout, restart). Watching costs no system call: tokio
            // knows the socket drained after the last short read. The backend is looked at
            // first: when it closed and the client's next command came before the proxy saw
            // it (a KILL, then a ping), the client learns of the close as it would directly,
            // instead of getting the backend's goodbye as the answer to its command.
            // (a multiplexed session that keeps its connection between commands gives it up
            // to a session that waits for one)
            let keeper = self.mux.as_deref().and_then(mux::Mux::keeper_if_releasable);
            let read = tokio::select! {
                biased;
                _ = closing(&mut self.backend, self.kill_slot.as_ref().map(|(_, s)| s)) => {
                    if self.mux.is_some() && self.mux_backend_closed() {
                        continue;
                    }
                    return Some(self.backend_went_away().await);
                }
                r = read_command(&mut self.client, &limits, idle_deadline, &begun, &mut self.command) => r,
                () = keeper_asked(keeper, &begun) => {
                    // (boxed, as in `idle_wait`: a rare path, kept out of the loop's state)
                    if let Err(end) = Box::pin(self.give_up_for_waiter()).await {
                        return Some(end);
                    }
                    continue;
                }
                stop = &mut stop_or_trim => {
                    if stop {
                        return Some(End::Shutdown);
                    }
                    self.eager = EAGER_COMMANDS;
                    // nothing in flight to watch: the watcher's copies of the sockets go too
                    self.rest();
                    return None;
                }
            };
            match read {
                Ok(frames) => self.command_frames = frames,
                Err(ReadError::Closed) => return Some(End::ClientQuit),
                Err(ReadError::Idle) => {
                    // between commands, like a quit: the backend connection is clean
                    debug!(peer = %self.peer, "idle timeout");
                    return Some(End::ClientQuit);
                }
                Err(ReadError::Timeout(seq)) => {
                    return Some(
                        self.protocol_error(seq, ErrorInfo::net_read_timeout())
                            .await,
                    );
                }
                Err(ReadError::OutOfOrder(seq)) => {
                    return Some(self.protocol_error(seq, ErrorInfo::out_of_order()).await);
                }
                Err(ReadError::TooLarge(seq)) => {
                    let limit = self.cfg.proxy.max_packet_bytes;
                    return Some(
                        self.protocol_error(seq, ErrorInfo::packet_too_large(limit))
                            .await,
                    );
                }
            }
            self.started = metrics::enabled().then(metrics::now);
            // multiplexing: a connection lent (and put in the session's state) before the
            // command, what it does to the state read
            if self.mux.is_some() {
                // (a future of its own only when something must be waited on)
                match self.mux_before_now() {
                    Some(None) => {}
                    Some(Some(pin)) => {
                        if let Err(end) = Box::pin(self.mux_pin_before(pin)).await {
                            return Some(end);
                        }
                    }
                    None => match Box::pin(self.mux_before()).await {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(end) => return Some(end),
                    },
                }
            }
            // a reload applies from the next command on
            let generation = self.shared.config_generation();
            if generation != self.cfg_generation {
                self.cfg = self.shared.config();
                self.cfg_generation = generation;
            }
            self.own_warnings = 0;
            self.statement = None;
            self.activity.clear();
            // what an earlier command left unsaid is not this one's; a command other than a
            // text (or a ping) leaves no condition of the proxy's (one branch when none)
            if self.held.is_some()
                || !self.pending_notes.is_empty()
                || !self.pending_warnings.is_empty()
            {
                self.forget_earlier_conditions();
            }
            let result = match self.command.first().copied() {
                // a KILL of a session of this proxy's reaches the connection that serves it
                _ if self.mux_user.is_some() && mux::kill_command(&self.command) => {
                    Box::pin(self.on_kill()).await
                }
                None => {
                    self.answer_protocol_error(ErrorInfo::new(
                        er::MALFORMED_PACKET,
                        "08S01",
                        "Malformed communication packet",
                    ))
                    .await
                }
                Some(com::QUIT) => return Some(End::ClientQuit),
                // (the path that reads held conditions is boxed: the usual text's state
                // machine, and the loop's stack frame, stay as small as before it)
                Some(com::QUERY) if self.held.is_none() => self.on_query_text().await.map(drop),
                Some(com::QUERY) => self.on_query_held().await,
                Some(com::STMT_PREPARE) => self.on_prepare().await,
                // MariaDB's bulk execute names a prepared statement like an execute does
                Some(com::STMT_EXECUTE | com::STMT_BULK_EXECUTE) => self.on_execute().await,
                Some(com::STMT_SEND_LONG_DATA) => self.on_long_data().await,
                Some(com::STMT_CLOSE) => self.on_stmt_close().await,
                Some(com::STMT_FETCH) => self.on_fetch().await,
                Some(com::STMT_RESET) => self.on_stmt_reset().await,
                Some(com::FIELD_LIST) => self.forward(ResponseKind::FieldList).await.map(drop),
                Some(com::PROCESS_INFO) => self.forward(ResponseKind::Query).await.map(drop),
                Some(com::RESET_CONNECTION) => {
                    // (the reset closes those on the connection held itself)
                    self.close_all_carried(true);
                    self.statements.clear();
                    self.txn_pin = None;
                    self.hbase_reads = false;
                    // the reset rolls the transaction back, and its rows with it
                    self.txn_observed.clear();
                    self.forget_variable_facts();
                    // (the login's character set again)
                    self.charset_changed = false;
                    self.forward(ResponseKind::Single).await.map(drop)
                }
                Some(com::INIT_DB) => {
                    self.forget_session_facts();
                    self.forward(ResponseKind::Single).await.map(drop)
                }
                Some(
                    com::PING
                    | com::STATISTICS
                    | com::SET_OPTION
                    | com::PROCESS_KILL
                    | com::DEBUG
                    | com::REFRESH,
                ) => self.forward(ResponseKind::Single).await.map(drop),
                Some(com::CHANGE_USER) => self.on_change_user().await,
                Some(other) => {
                    self.answer_protocol_error(ErrorInfo::unknown_command(other))
                        .await
                }
            };
            self.observe_end();
            if let Err(end) = result {
                // a multiplexed session outlives its connection: the client was told (2013),
                // its next command is lent another
                // (not after a command with no answer: the 2013 sent is read as the next
                // command's, so the session ends as without multiplexing)
                if end == End::BackendLost
                    && self.mux.is_some()
                    && !mux::answers_nothing(&self.command)
                    && self.mux_recover()
                {
                    continue;
                }
                return Some(end);
            }
            if self.mux.is_some() {
                let then = self.after_command_now();
                if !matches!(then, mux::Then::Done) {
                    if let Err(end) = Box::pin(self.after_command_then(then)).await {
                        return Some(end);
                    }
                }
            }
        }
    }

    /// COM_QUERY while the proxy holds conditions for the session's diagnostics area: a
    /// diagnostics statement reads them; any other statement runs (`on_query_text`) and drops
    /// them where the backend clears its own area. (Its future is made in this frame and
    /// boxed, not in the command loop's.)
    fn on_query_held(
        &mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), End>> + Send + '_>> {
        Box::pin(async move {
            let Some(mut held) = self.held.take() else {
                return self.on_query_text().await.map(drop);
            };
            if self.answer_diagnostics(&mut held).await? {
                self.held = Some(held);
                return Ok(());
            }
            let sql = self.command.get(1..).unwrap_or_default();
            let keeps = crate::engine::diagnostics::kept_after(
                Some(sql),
                false,
                self.area(),
                self.reading(),
            );
            let result = self.on_query_text().await;
            if let Ok(summary) = &result {
                self.after_held(held, keeps, summary.as_ref());
            }
            result.map(drop)
        })
    }

    /// COM_QUERY, in the order PgDog's `QueryEngine::handle` reads: the facts the text may
    /// change forgotten → decide (`engine::router`) → carry the decision out (`apply`) →
    /// after; the backend's summary when it ran there.
    async fn on_query_text(&mut self) -> Result<Option<Summary>, End> {
        // the TLS status a client reads is its own connection's, not the proxy's backend link's
        if self.client.get_ref().is_tls()
            || self.backend.as_ref().is_some_and(|b| b.get_ref().is_tls())
        {
            let sql = self.command.get(1..).unwrap_or_default();
            if let Some(q) = crate::sql::probe::ssl_status(sql, self.reading()) {
                return self.answer_ssl_status(q).await.map(|()| None);
            }
        }
        let effects = self.forget_facts_after_query();
        // `EXECUTE name USING …` of a statement whose executions are checked: carried out here
        let forget = match self.on_sql_executions().await? {
            dynamic::SqlExecutions::Answered => return Ok(None),
            dynamic::SqlExecutions::Forget(names) => names,
        };
        // decide
        let (class, decision) = self.decide(Origin::Text).await?;
        self.note_statement(class, &decision);
        // (what the text shows the advisor is given to it once the backend ran the text
        // without an error: `settle_observations`; the proxy's own answers run nothing)
        // a text the write stage cut short did not run whole
        let whole = !matches!(&decision, Decision::Send(w) if w.refused.is_some());
        // carry out
        let result = self.apply(decision, ResponseKind::Query).await;
        // after
        self.after_query(class, &result, whole, &forget, effects);
        result
    }

    /// After a text: the counters; the SQL-level prepared statements it replaced (`forget`,
    /// when it ran whole and without an error) lose their plans; the schemas cached are dropped
    /// after DDL. (The status and the transaction's partition follow each response:
    /// `after_response`.)
    fn after_query(
        &mut self,
        class: Class,
        result: &Result<Option<Summary>, End>,
        whole: bool,
        forget: &[Vec<u8>],
        effects: facts::TextEffects,
    ) {
        if class != Class::Plain {
            bump(&self.shared.stats.statements_flagged);
        }
        if let (Ok(Some(s)), true) = (result, whole) {
            if s.error_code.is_none() {
                for name in forget {
                    self.statements.by_name.remove(name);
                }
            }
        }
        // what the text changed, forgotten again: deciding it may have read the facts it was
        // about to change (a multi-statement `SET NAMES …; SELECT … FROM g$f` read the old
        // character set, found by a review)
        self.forget_effects(effects);
    }

    async fn on_prepare(&mut self) -> Result<(), End> {
        let carrying = self.statements.carrying;
        let text_len = self.command.len().saturating_sub(1);
        if carrying && self.statements.carried_full(text_len) {
            let e = ErrorInfo::new(
                er::MAX_PREPARED_STMT_COUNT_REACHED,
                "42000",
                format!(
                    "Can't create more than max_prepared_stmt_count statements (obkv-proxy: a \
                     multiplexed session keeps at most {} statements and {} MiB of their text)",
                    prepared::MAX_CARRIED,
                    prepared::MAX_CARRIED_BYTES >> 20
                ),
            );
            return self.answer_error(e).await;
        }
        let (class, decision) = self.decide(Origin::Prepare).await?;
        self.note_statement(class, &decision);
        // (a prepare runs nothing: what its executions do is theirs)
        self.activity.observed.clear();
        if class != Class::Plain {
            bump(&self.shared.stats.statements_flagged);
        }
        let (decision, plan, write) = match decision {
            Decision::Send(mut w) => {
                let (scan, write) = (w.scan.take(), w.plan.take());
                (Decision::Send(w), scan, write)
            }
            d => (d, None, None),
        };
        let (ddl, changes_session) = facts::text_effects(self.command.get(1..).unwrap_or_default());
        let text = plan
            .is_some()
            .then(|| self.command.get(1..).unwrap_or_default().to_vec());
        // a multiplexed session's statement is carried: prepared again, in the state it was
        // prepared in, on each connection it runs on; one the proxy rewrites pins (its
        // variants are prepared beside it)
        let mut at = None;
        if carrying && self.mux.is_some() {
            if plan.is_some() && matches!(decision, Decision::Send(_)) {
                self.prepare_all_here().await?;
                self.pin(crate::sql::session_state::Pin::PreparedRewrite)
                    .await?;
            } else {
                at = self.state_now().await?;
            }
        }
        let Some(summary) = self.apply(decision, ResponseKind::Prepare).await? else {
            return Ok(()); // answered by the proxy: the backend prepared nothing
        };
        match summary.prepared {
            Some((backend_id, columns, params)) => {
                let id = match carrying {
                    true => self.statements.client_id_for(backend_id),
                    false => backend_id,
                };
                let carried = carrying.then(|| {
                    Box::new(carried::Carried {
                        text: self.command.get(1..).unwrap_or_default().to_vec(),
                        state: at,
                        types: None,
                        types_generation: 0,
                        on: vec![carried::OnConn {
                            serial: self.conn_serial,
                            id: backend_id,
                            typed: 0,
                        }],
                    })
                });
                let p = prepared::Prepared {
                    params,
                    columns,
                    changes_session,
                    ddl,
                    rewrite: None,
                    write: write.map(|plan| prepared::WriteChecks {
                        plan: plan.into(),
                        types: None,
                        long: Vec::new(),
                        long_lost: false,
                    }),
                    carried,
                };
                self.statements
                    .prepared(id, p, plan, text.as_deref().unwrap_or_default());
            }
            None => self.statements.prepare_failed(),
        }
        Ok(())
    }

    /// With multiplexing configured, a session whose user changed is that user's for KILL
    /// (`Session::on_kill`), its own and others'.
    fn user_changed(&mut self, user: Option<impl AsRef<[u8]>>) {
        let (Some(_), Some(user)) = (&self.mux_user, user) else {
            return;
        };
        let user: Arc<[u8]> = Arc::from(user.as_ref());
        if let Some((_, slot)) = &self.kill_slot {
            slot.set_user(user.clone());
        }
        self.mux_user = Some(user);
    }

    async fn on_change_user(&mut self) -> Result<(), End> {
        self.close_all_carried(true);
        self.statements.clear();
        self.txn_pin = None;
        self.hbase_reads = false;
        self.txn_observed.clear();
        self.forget_session_facts();
        // (the new login's character set: never a wide one)
        self.charset_changed = false;
        if self.cfg.auth.mode == AuthMode::Proxy {
            let Some(request) =
                handshake::parse_change_user(&self.command[1..], self.client_caps.base)
            else {
                return self.answer_protocol_error(ErrorInfo::bad_handshake()).await;
            };
            // refused: the session goes on as the previous user, as MariaDB's does
            return match handshake::proxy_change_user(self, request).await {
                Ok(changed) => {
                    if changed {
                        let user = self.pooled.as_ref().map(|p| p.spec.user.clone());
                        self.user_changed(user);
                    }
                    Ok(())
                }
                Err(_) => Err(End::ClientGone),
            };
        }
        be!(self).queue_command(&self.command);
        if be!(self).flush().await.is_err() {
            return Err(self.lose_backend(1).await);
        }
        let addr = self.cfg.backend.address.clone();
        let wait = self.cfg.handshake_timeout();
        match handshake::relay_auth(&mut self.client, be!(self), 0, 1, &addr, wait).await {
            Ok(Some(authed)) => {
                let (seq, ok) = &authed.ok;
                if self.client.send_packet(*seq, ok).await.is_err() {
                    return Err(End::ClientGone);
                }
                self.last_status = authed.status;
                let user = handshake::parse_change_user(
                    self.command.get(1..).unwrap_or_default(),
                    self.client_caps.base,
                )
                .map(|r| r.user);
                self.user_changed(user);
                Ok(())
            }
            // Refused: MariaDB keeps the connection with the previous user, database and
            // character set, so the session goes on; a backend that closes it instead is seen
            // by the command loop, which then closes the client too.
            Ok(None) => Ok(()),
            Err(_) => Err(End::ClientGone),
        }
    }

    /// Carries out a router decision. Returns the response summary when the backend answered.
    async fn apply(
        &mut self,
        decision: Decision,
        kind: ResponseKind,
    ) -> Result<Option<Summary>, End> {
        match decision {
            Decision::Send(w) if w.load.is_some() => self.send_load(w, kind).await,
            Decision::Send(w) => self.send(w, kind).await,
            // `decide` reads what is needed: a decision made without it is a forward (lax)
            Decision::Need(_) => self.forward(kind).await.map(Some),
            Decision::Ddl(stmt) => {
                bump(&self.shared.stats.answered_locally);
                // the advisor forgets what it kept of a table dropped, emptied or renamed
                let gone: Vec<crate::sql::ddl::TableName> = match &*stmt {
                    crate::sql::ddl::Statement::DropTable { tables, .. } => tables.clone(),
                    crate::sql::ddl::Statement::TruncateTable(t) => vec![t.clone()],
                    crate::sql::ddl::Statement::RenameTable(pairs) => {
                        pairs.iter().map(|(a, _)| a.clone()).collect()
                    }
                    _ => Vec::new(),
                };
                // schemas read while the DDL runs must not outlive it
                self.shared.schemas.clear();
                let done = self.on_hbase(*stmt).await;
                self.shared.schemas.clear();
                for t in &gone {
                    crate::admin::advisor::forget(t.schema.as_deref(), &t.name);
                }
                done?;
                Ok(None)
            }
            Decision::Dynamic(d) => self.on_dynamic(*d, kind).await,
            Decision::Answer(Answer::Ttl(cmd)) => self.answer_ttl(cmd, kind).await,
            Decision::Answer(answer) => {
                bump(&self.shared.stats.answered_locally);
                match answer {
                    Answer::Refuse(r) => self.answer_error(r.to_error()).await?,
                    Answer::ProxyStatus => self.answer_proxy_status().await?,
                    Answer::TablegroupDdl => self.answer_tablegroup_ddl().await?,
                    Answer::Ok => self.answer_ok(0, 0).await?,
                    Answer::ProxyTrigger(t) => self.answer_proxy_trigger(&t).await?,
                    Answer::ExplainObkv => self.answer_explain_obkv().await?,
                    Answer::ObkvTables => self.answer_obkv_tables().await?,
                    Answer::ObkvAdvice(t) => self.answer_obkv_advice(t).await?,
                    Answer::ObkvPartitions(t) => self.answer_obkv_partitions(t).await?,
                    Answer::HbaseReads(Some(on)) => {
                        self.hbase_reads = on;
                        self.answer_ok(0, 0).await?
                    }
                    Answer::HbaseReads(None) => self.answer_hbase_reads().await?,
                    // carried out above
                    Answer::Ttl(_) => {}
                }
                Ok(None)
            }
        }
    }

    /// Carries out a `Send` with a LOAD DATA LOCAL: the file is checked before the statement
    /// runs (or, when the client sends no files, judged unseen).
    async fn send_load(
        &mut self,
        mut w: Outbound,
        kind: ResponseKind,
    ) -> Result<Option<Summary>, End> {
        match (w.load.is_some(), self.write_rules()) {
            // LOAD DATA LOCAL from a client that sends files: the file is checked first
            (true, Some(rules))
                if kind == ResponseKind::Query && self.client_caps.has(cap::LOCAL_FILES) =>
            {
                self.carry_out_load(w, rules).await
            }
            (true, Some(rules)) => {
                // the file never passes the proxy (the client does not send files): its rows
                // are not seen
                let table = w.load.as_ref().map_or("", |p| p.schema.name.as_str());
                let txn = self.txn();
                let ctx = self.exec_context(&rules, &txn);
                let why = "the client does not send files";
                let out = crate::engine::execute::decide_unseen_load(table, why, &ctx);
                match out.refuse {
                    Some(e) => {
                        bump(&self.shared.stats.answered_locally);
                        self.count_refusal(&e);
                        self.answer_error(e.to_error()).await.map(|()| None)
                    }
                    None => {
                        w.notes.extend(out.notes.into_iter().map(Note::from));
                        self.send(w, kind).await
                    }
                }
            }
            _ => self.send(w, kind).await,
        }
    }

    /// Reads the user variables a PREPARE / EXECUTE IMMEDIATE takes its text from (a plain
    /// SELECT on the session's connection: no state changes) and checks each text.
    async fn check_dynamic_texts(&mut self, names: &[Vec<u8>]) -> Result<Option<Refusal>, End> {
        for name in names {
            let text = self.variable_text(name).await?;
            match self.check_dynamic_text(text).await? {
                router::DynamicCheck::Refused(e) => return Ok(Some(e)),
                // inside a multi-statement text its executions could not be checked
                router::DynamicCheck::Checked { .. } if self.strict() => {
                    return Ok(Some(Refusal::Unchecked(Unchecked::DynamicWriteInText)))
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// `after_response` of a statement the proxy noted something about or that showed the
    /// advisor something.
    #[cold]
    fn after_response_noted(&mut self, summary: &Summary) {
        self.hold_notes(summary);
        if !self.activity.observed.is_empty() || !self.txn_observed.is_empty() {
            self.settle_observations(summary);
        }
    }

    /// Before a command: the proxy's notes an earlier command left, and its held conditions
    /// unless this is a text (which may read them) or a ping.
    #[cold]
    fn forget_earlier_conditions(&mut self) {
        self.pending_notes.clear();
        self.pending_warnings.clear();
        if !matches!(self.command.first().copied(), Some(com::QUERY | com::PING)) {
            self.held = None;
        }
    }

    /// The status a response ended with: the session's transaction state follows it (COMMIT,
    /// ROLLBACK and implicit commits end the partition the guard keeps).
    fn after_response(&mut self, summary: &Summary) {
        if let Some(st) = summary.status {
            self.last_status = st;
        }
        // the proxy's notes, the advisor's observations: a branch when there are none
        if !self.pending_notes.is_empty()
            || !self.activity.observed.is_empty()
            || !self.txn_observed.is_empty()
        {
            self.after_response_noted(summary);
        }
        if self.last_status & status::IN_TRANS == 0 {
            self.txn_pin = None;
        }
        if self.mux.is_some() {
            self.mux_after_response(summary);
        }
    }

    /// Carries out a `Send`: catalog entries read first (LOCK TABLES); the text (T filled in,
    /// prefix predicates added, or the client's) is forwarded with the proxy's notes; when a
    /// later statement of it was refused, the text sent ends before that one and the refusal
    /// follows the results of those before it, as the backend's own error would; the
    /// transaction's partition follows.
    async fn send(&mut self, w: Outbound, kind: ResponseKind) -> Result<Option<Summary>, End> {
        if !w.read_catalog.is_empty() {
            self.read_catalog_entries(&w.read_catalog).await?;
        }
        if let Some(text) = w.text {
            self.command.truncate(1);
            self.command.extend_from_slice(&text);
            crate::sql::splice::give_back(text);
        }
        let refused = w.refused;
        if !w.notes.is_empty() {
            self.keep_notes(w.notes);
        }
        let (summary, next_seq) = self.send_and_relay(kind, refused.is_some()).await?;
        let failed = summary.error_code.is_some();
        if let (Some(after), false) = (w.txn_after, failed) {
            self.txn_pin = after.map(|p| *p);
        }
        // (a statement that failed takes none of the proxy's notes: its error is the answer)
        self.after_response(&summary);
        match refused {
            // a statement before the refused one failed: the backend's error ends the text
            Some(_) if failed => {}
            Some(e) => {
                bump(&self.shared.stats.answered_locally);
                self.raise(next_seq, e.to_error()).await?;
            }
            None => {}
        }
        Ok(Some(summary))
    }
}

/// Reads one command, joining 16 MiB frames; returns the number of frames it used. The wait for
/// a command is bounded by the idle timeout (`idle_deadline`), a begun packet by the net read timeout, and the
/// size is checked before a frame's payload is read.
/// No command has begun (the idle wait's: it reads none).
static NOT_BEGUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ready when the session, which keeps its connection between commands (`keeper`: Some then),
/// is asked to give it up to a session that waits; never once a command began arriving
/// (`begun`: dropping its read would lose what came of it).
fn keeper_asked<'a>(
    keeper: Option<&'a crate::backend::lend::Keeper>,
    begun: &'a std::sync::atomic::AtomicBool,
) -> impl std::future::Future<Output = ()> + 'a {
    std::future::poll_fn(move |cx| match keeper {
        Some(k) if !begun.load(Ordering::Relaxed) => k.poll_asked(cx),
        _ => std::task::Poll::Pending,
    })
}

async fn read_command(
    client: &mut PacketStream<ClientIo>,
    limits: &ReadLimits,
    idle_deadline: Option<tokio::time::Instant>,
    begun: &std::sync::atomic::AtomicBool,
    out: &mut Vec<u8>,
) -> Result<u8, ReadError> {
    out.clear();
    client.expect_command();
    // a compressed frame out of order is refused like a packet out of order; any other read
    // error means the client is gone
    let failed = |e: io::Error| match OutOfOrder::of(&e) {
        Some(o) => ReadError::OutOfOrder(o.found.wrapping_add(1)),
        None => ReadError::Closed,
    };
    // between commands a client may wait (up to the idle timeout, when one is set)
    let first_byte = client.wait_readable();
    match idle_deadline {
        Some(deadline) => match crate::timer::timeout_at(deadline, first_byte).await {
            Ok(r) => r.map_err(failed)?,
            Err(_) => return Err(ReadError::Idle),
        },
        None => first_byte.await.map_err(failed)?,
    }
    // from here on the command is read to its end (the watcher's trim waits for it)
    begun.store(true, Ordering::Relaxed);
    // Inside compressed frames the packets' own sequence ids are not checked, as MariaDB does
    // not check them (the frames' ids are: `protocol::compress`). Connector/J 2.7 numbers a
    // command's packet 1 when it tried to compress it and sent it stored instead (its
    // CompressPacketOutputStream counts the packet once for each attempt); MariaDB runs it.
    // the usual command: one frame, already read whole
    if let Some(h) = client.take_whole_frame(out, limits.max_bytes) {
        if h.seq != 0 && !client.is_compressed() {
            return Err(ReadError::OutOfOrder(h.seq.wrapping_add(1)));
        }
        return Ok(1);
    }
    let mut expected = 0u8;
    loop {
        let h = match crate::timer::timeout(limits.net_read, client.read_header()).await {
            Ok(r) => r.map_err(failed)?,
            Err(_) => return Err(ReadError::Timeout(expected)),
        };
        if h.seq != expected && !client.is_compressed() {
            return Err(ReadError::OutOfOrder(h.seq.wrapping_add(1)));
        }
        expected = expected.wrapping_add(1);
        if out.len() + h.len > limits.max_bytes {
            return Err(ReadError::TooLarge(expected));
        }
        match crate::timer::timeout(limits.net_read, client.read_payload_into(h.len, out)).await {
            Ok(r) => r.map_err(failed)?,
            Err(_) => return Err(ReadError::Timeout(expected)),
        }
        if h.len < MAX_FRAME {
            return Ok(expected);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every client's task holds its session's future for as long as the client stays, idle or
    /// not, so what that future keeps is most of an idle client's cost. The command loop and the
    /// rare paths (a give-back to a waiting session, a multiplexed session's end) are boxed and
    /// the session is held once; before, the future was 8,488 bytes (release build) and an idle
    /// client cost 9.96 KiB in `scripts/idle-bench.sh`, against issue 42's budget of 8.
    #[test]
    fn a_sessions_task_holds_a_few_kib() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bound");
            let addr = l.local_addr().expect("address");
            let c = tokio::net::TcpStream::connect(addr)
                .await
                .expect("connected");
            let (_stop, rx) = tokio::sync::watch::channel(false);
            let shared =
                Arc::new(Shared::new(crate::config::Config::default(), rx).expect("shared"));
            let session = serve(ClientSock::tcp(c), Peer::Tcp(addr), shared);
            let size = std::mem::size_of_val(&session);
            eprintln!("a session's task future: {size} bytes");
            assert!(size <= 4096, "a session's task future is {size} bytes");
        });
    }
}
