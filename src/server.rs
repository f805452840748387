//! The accept loop: `run(listener, config, shutdown)` serves until `shutdown` completes, then
//! lets sessions finish their current command (up to `proxy.shutdown_grace_ms`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tracing::{error, info, warn};

use crate::admin::{bump, Stats};
use crate::backend::pool::Pool;
use crate::backend::{self, BackendError, LoggedIn, LoginSpec};
use crate::config::{Config, ConfigError, ProxyUser};
use crate::protocol::handshake::Greeting;
use crate::protocol::packets::ErrorInfo;
use crate::session;
use crate::session::auth::{parse_native_hash, verify_native};

/// State every session shares.
pub struct Shared {
    pub config: Config,
    pub tls: Option<TlsAcceptor>,
    /// TLS to the backend; None when `backend.tls.mode = "off"`.
    pub backend_tls: Option<crate::tls::BackendTls>,
    pub stats: Stats,
    pub pool: Pool,
    /// Slots for clients that have not finished logging in (`proxy.max_preauth_connections`).
    pub preauth: Arc<Semaphore>,
    /// HBase table definitions by DDL id (content hashes: never stale).
    pub definitions: crate::hbase::catalog::DefinitionCache,
    /// The catalog account's connection (`hbase.catalog_user`); None: catalog work runs on
    /// the client's connection.
    pub catalog_conn: Option<crate::backend::own::CatalogConn>,
    /// HBase table schemas for the prefix-scan rewriter (`hbase.schema_cache_ms`).
    pub schemas: Arc<crate::hbase::schema::SchemaCache>,
    pub rewrite_counters: Arc<crate::sql::prefix_scan::Counters>,
    /// `hbase.databases`, shared by every session's router context.
    pub hbase_databases: Arc<[String]>,
    pub shutdown: watch::Receiver<bool>,
    users: HashMap<Vec<u8>, (ProxyUser, [u8; 20])>,
    next_connection_id: AtomicU32,
    /// The catalog schema has been created and reconciled by this process.
    pub catalog_ready: std::sync::atomic::AtomicBool,
    /// Proxy-auth mode: the backend's greeting (version string, capabilities), learned once.
    backend_greeting: Mutex<Option<Greeting>>,
    /// The backend's kind and name comparison, learned by the first session that asked.
    backend_facts: Mutex<Option<crate::hbase::backend::BackendFacts>>,
}

impl Shared {
    pub fn new(config: Config, shutdown: watch::Receiver<bool>) -> Result<Shared, ConfigError> {
        config.validate()?;
        let tls = match (&config.tls.cert, &config.tls.key) {
            (Some(c), Some(k)) => Some(crate::tls::acceptor(c, k)?),
            _ => None,
        };
        let users = config
            .auth
            .users
            .iter()
            .filter_map(|u| {
                parse_native_hash(&u.password_hash)
                    .map(|h| (u.name.as_bytes().to_vec(), (u.clone(), h)))
            })
            .collect();
        let pool = Pool::new(
            config.pool.max_idle,
            Duration::from_millis(config.pool.idle_timeout_ms),
        );
        let backend_tls = match config.backend.tls.mode {
            crate::config::BackendTlsMode::Off => None,
            _ => Some(crate::tls::backend_tls(&config)?),
        };
        Ok(Shared {
            definitions: Default::default(),
            schemas: Arc::new(crate::hbase::schema::SchemaCache::new(
                std::time::Duration::from_millis(config.hbase.schema_cache_ms),
            )),
            rewrite_counters: Default::default(),
            catalog_conn: (!config.hbase.catalog_user.is_empty()).then(|| {
                crate::backend::own::CatalogConn::new(
                    &config.hbase.catalog_user,
                    &config.hbase.catalog_password,
                )
            }),
            hbase_databases: config.hbase.databases.clone().into(),
            backend_tls,
            preauth: Arc::new(Semaphore::new(config.proxy.max_preauth_connections)),
            tls,
            stats: Stats::default(),
            pool,
            shutdown,
            users,
            next_connection_id: AtomicU32::new(1),
            backend_greeting: Mutex::new(None),
            backend_facts: Mutex::new(None),
            catalog_ready: std::sync::atomic::AtomicBool::new(false),
            config,
        })
    }

    pub fn backend_facts(&self) -> Option<crate::hbase::backend::BackendFacts> {
        *self.backend_facts.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_backend_facts(&self, f: crate::hbase::backend::BackendFacts) {
        *self.backend_facts.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// Runs one catalog statement on the catalog account's connection (None: no account).
    pub async fn catalog_query(
        &self,
        sql: &[u8],
    ) -> Option<Result<crate::backend::QueryResult, String>> {
        let c = self.catalog_conn.as_ref()?;
        Some(
            c.query(
                &self.config.backend.address,
                self.config.connect_timeout().max(Duration::from_secs(10)),
                self.backend_tls.as_ref(),
                sql,
            )
            .await,
        )
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The proxy user whose password produced `response` for `salt`.
    pub fn check_proxy_user(
        &self,
        name: &[u8],
        salt: &[u8],
        response: &[u8],
    ) -> Option<&ProxyUser> {
        let (user, stored) = self.users.get(name)?;
        verify_native(stored, salt, response).then_some(user)
    }

    pub async fn backend_greeting(&self) -> Result<Greeting, BackendError> {
        if let Some(g) = self
            .backend_greeting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(g);
        }
        let mut s =
            backend::connect(&self.config.backend.address, self.config.connect_timeout()).await?;
        let (_, g) = backend::read_greeting_within(&mut s, self.config.connect_timeout()).await?;
        *self
            .backend_greeting
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(g.clone());
        Ok(g)
    }

    /// A backend connection logged in for `spec`: an idle pooled one, or a new login.
    pub async fn backend_login(&self, spec: &LoginSpec) -> Result<LoggedIn, BackendError> {
        if let Some(c) = self.pool.take(spec) {
            return Ok(c);
        }
        backend::login(
            &self.config.backend.address,
            self.config.connect_timeout(),
            spec,
            self.backend_tls.as_ref(),
        )
        .await
    }

    /// Resets a cleanly released backend connection in the background and pools it, only when
    /// the reset leaves it exactly as a fresh login (`backend::reset_to`); otherwise closes it.
    pub fn recycle(self: &Arc<Self>, spec: LoginSpec, mut conn: LoggedIn) {
        let shared = self.clone();
        let wait = self.config.connect_timeout();
        tokio::spawn(async move {
            let reset = backend::reset_to(
                &mut conn.stream,
                conn.caps,
                spec.database.as_deref(),
                &conn.fingerprint,
            );
            match tokio::time::timeout(wait, reset).await {
                Ok(Ok(())) => shared.pool.put(spec, conn),
                Ok(Err(e)) => warn!("backend connection not reusable, closed: {e}"),
                Err(_) => warn!("backend connection not reset in time, closed"),
            }
        });
    }
}

/// Serves clients from `listener` until `shutdown` resolves, running sessions on the current
/// runtime.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ConfigError> {
    run_on(listener, config, shutdown, vec![Handle::current()]).await
}

/// Like `run`, but hands each session to one of `workers` (single-threaded runtimes) in turn: a
/// session's socket events, its task and its backend connection stay on one thread, with no work
/// stealing and no cross-thread wake-ups (see docs/PERFORMANCE.md for the measurements).
pub async fn run_on(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
    workers: Vec<Handle>,
) -> Result<(), ConfigError> {
    if workers.is_empty() {
        return Err(ConfigError::Invalid("no worker runtime".into()));
    }
    let mut next_worker = 0usize;
    let (stop_tx, stop_rx) = watch::channel(false);
    let shared = Arc::new(Shared::new(config, stop_rx)?);
    let limit = Arc::new(Semaphore::new(shared.config.proxy.max_connections));
    if shared.config.auth.mode == crate::config::AuthMode::Proxy {
        // the proxy has backend credentials in this mode: reconcile the catalog at start-up
    }
    let mut sessions = JoinSet::new();
    tokio::pin!(shutdown);
    if let Ok(addr) = listener.local_addr() {
        info!(listen = %addr, backend = %shared.config.backend.address, auth = ?shared.config.auth.mode, tls = shared.tls.is_some(), "obkv-proxy serving");
    }
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    bump(&shared.stats.connections_total);
                    match limit.clone().try_acquire_owned() {
                        Ok(permit) => {
                            let shared = shared.clone();
                            let worker = &workers[next_worker % workers.len()];
                            next_worker = next_worker.wrapping_add(1);
                            // re-register the socket with the worker's own reactor
                            match tcp.into_std() {
                                Ok(std_tcp) => {
                                    sessions.spawn_on(async move {
                                        if let Ok(tcp) = TcpStream::from_std(std_tcp) {
                                            session::serve(tcp, peer, shared).await;
                                        }
                                        drop(permit);
                                    }, worker);
                                }
                                Err(e) => warn!(%peer, "cannot hand over connection: {e}"),
                            }
                        }
                        Err(_) => {
                            bump(&shared.stats.connections_refused);
                            sessions.spawn(refuse(tcp));
                        }
                    }
                }
                Err(e) => {
                    // e.g. out of file descriptors: back off instead of spinning
                    warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(done) = sessions.join_next(), if !sessions.is_empty() => {
                if let Err(e) = done {
                    if e.is_panic() {
                        error!("session task panicked: {e}");
                    }
                }
            }
        }
    }
    info!(sessions = sessions.len(), "shutting down");
    // stop accepting at once: new clients get "connection refused", not a hang in the backlog
    drop(listener);
    let _ = stop_tx.send(true);
    let grace = Duration::from_millis(shared.config.proxy.shutdown_grace_ms);
    let drained = tokio::time::timeout(grace, async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(
            sessions = sessions.len(),
            "grace period over, closing remaining sessions"
        );
        sessions.abort_all();
    }
    Ok(())
}

async fn refuse(tcp: TcpStream) {
    refuse_with(tcp, ErrorInfo::too_many_connections()).await;
}

/// Answers a client that will not be served with an ERR packet in place of the greeting.
pub async fn refuse_with(mut tcp: TcpStream, e: ErrorInfo) {
    let p = e.to_packet();
    let mut frame = vec![p.len() as u8, (p.len() >> 8) as u8, 0, 0];
    frame.extend_from_slice(&p);
    let _ = tcp.write_all(&frame).await;
    let _ = tcp.shutdown().await;
}
