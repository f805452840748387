//! What every session shares: the configuration, TLS, counters, the backend pool, the proxy
//! users, the HBase caches (definitions, schemas, rewrite counters) and what was learned of the
//! backend once. Built once by `server::run_on`, handed to each session as an `Arc`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;
use tracing::warn;

use crate::admin::Stats;
use crate::backend::pool::Pool;
use crate::backend::{self, BackendError, LoggedIn, LoginSpec};
use crate::config::{Config, ConfigError, ProxyUser};
use crate::protocol::auth::{parse_native_hash, verify_native};
use crate::protocol::handshake::Greeting;

/// State every session shares.
pub struct Shared {
    /// The configuration in force: replaced whole by a reload (`reload`); sessions keep their
    /// own `Arc` of it and take the new one between commands (`config_generation`).
    live: ArcSwap<Config>,
    generation: std::sync::atomic::AtomicU64,
    /// TLS for clients, replaced by a reload that names other certificate files.
    tls: ArcSwap<Option<TlsAcceptor>>,
    /// TLS to the backend; None when `backend.tls.mode = "off"`.
    pub backend_tls: Option<crate::tls::BackendTls>,
    pub stats: Stats,
    pub pool: Pool,
    /// Multiplexing's sets of backend connections and its counters (`backend::lend`).
    pub lending: crate::backend::lend::Lending,
    /// Slots for clients that have not finished logging in (`proxy.max_preauth_connections`).
    pub preauth: Arc<Semaphore>,
    /// HBase table definitions by DDL id (content hashes: never stale).
    pub definitions: crate::hbase::catalog::DefinitionCache,
    /// The catalog account's connection (`hbase.catalog_user`); None: catalog work runs on
    /// the client's connection.
    pub catalog_conn: Option<crate::backend::own::CatalogConn>,
    /// Sessions whose client may go while their statement runs (`watch`).
    pub watched: crate::watch::Registry,
    /// The TTL task's holder name, wake-up and counters (`crate::ttl`).
    pub ttl: TtlState,
    /// HBase table schemas for the prefix-scan rewriter (`hbase.schema_cache_ms`).
    pub schemas: Arc<crate::hbase::schema::SchemaCache>,
    pub rewrite_counters: Arc<crate::engine::prefix_scan::Counters>,
    /// `hbase.databases`, shared by every session's router context.
    pub hbase_databases: Arc<[String]>,
    pub shutdown: watch::Receiver<bool>,
    /// The Unix socket the proxy listens on, when it does: what a driver's `@@socket` probe
    /// is answered (`sql::probe`).
    pub socket: Option<Arc<str>>,
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
            watched: crate::watch::Registry::default(),
            ttl: TtlState::default(),
            catalog_conn: (!config.hbase.catalog_user.is_empty()).then(|| {
                crate::backend::own::CatalogConn::new(
                    &config.hbase.catalog_user,
                    &config.hbase.catalog_password,
                )
            }),
            hbase_databases: config.hbase.databases.clone().into(),
            backend_tls,
            preauth: Arc::new(Semaphore::new(config.proxy.max_preauth_connections)),
            tls: ArcSwap::from_pointee(tls),
            generation: std::sync::atomic::AtomicU64::new(0),
            stats: Stats::default(),
            pool,
            lending: Default::default(),
            shutdown,
            socket: None,
            users,
            next_connection_id: AtomicU32::new(1),
            backend_greeting: Mutex::new(None),
            backend_facts: Mutex::new(None),
            catalog_ready: std::sync::atomic::AtomicBool::new(false),
            live: ArcSwap::from_pointee(config),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.live.load_full()
    }

    /// Changes with each reload: a session compares it between commands (one relaxed load of
    /// a line no one writes) and takes `config()` again when it moved.
    pub fn config_generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// TLS for new client connections, if configured.
    pub fn tls(&self) -> Option<TlsAcceptor> {
        self.tls.load().as_ref().clone()
    }

    /// Applies a new configuration read from the file (SIGHUP): the rules, limits, timeouts,
    /// log settings and certificates hold for new statements and connections. Settings that
    /// cannot change in a running process keep their value; what was asked of them is returned
    /// (to be logged). An invalid configuration, or certificates that do not load, change
    /// nothing: the error is returned.
    pub fn reload(&self, new: Config) -> Result<Vec<String>, ConfigError> {
        new.validate()?;
        new.check_files()?;
        let tls = match (&new.tls.cert, &new.tls.key) {
            (Some(c), Some(k)) => Some(crate::tls::acceptor(c, k)?),
            _ => None,
        };
        let old = self.config();
        let (applied, kept) = new.keeping_fixed(&old);
        self.tls.store(Arc::new(tls));
        self.live.store(Arc::new(applied));
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(kept)
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
                &self.config().backend.address,
                self.config().connect_timeout().max(Duration::from_secs(10)),
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
        let mut s = backend::connect(
            &self.config().backend.address,
            self.config().connect_timeout(),
        )
        .await?;
        let (_, g) = backend::read_greeting_within(&mut s, self.config().connect_timeout()).await?;
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
            &self.config().backend.address,
            self.config().connect_timeout(),
            spec,
            self.backend_tls.as_ref(),
        )
        .await
    }

    /// Resets a cleanly released backend connection in the background and pools it, only when
    /// the reset leaves it exactly as a fresh login (`backend::reset_to`); otherwise closes it.
    pub fn recycle(self: &Arc<Self>, spec: LoginSpec, mut conn: LoggedIn) {
        let shared = self.clone();
        let wait = self.config().connect_timeout();
        tokio::spawn(async move {
            let reset = backend::reset_to(
                &mut conn.stream,
                conn.caps,
                spec.database.as_deref(),
                &conn.fingerprint,
            );
            match crate::timer::timeout(wait, reset).await {
                Ok(Ok(())) => shared.pool.put(spec, conn),
                Ok(Err(e)) => warn!("backend connection not reusable, closed: {e}"),
                Err(_) => warn!("backend connection not reset in time, closed"),
            }
        });
    }
}

/// The process's part of the TTL task (`crate::ttl`): its name as a lease holder, a wake-up
/// for a trigger, and the counters.
pub struct TtlState {
    pub holder: String,
    pub wake: tokio::sync::Notify,
    pub rows_scanned: AtomicU64,
    pub rows_expired: AtomicU64,
    pub rows_versions: AtomicU64,
    pub batches: AtomicU64,
    pub tasks_finished: AtomicU64,
    pub errors: AtomicU64,
}

impl Default for TtlState {
    fn default() -> Self {
        let mut seed = [0u8; 6];
        let _ = getrandom(&mut seed);
        let host = crate::admin::host_name();
        TtlState {
            holder: format!(
                "{host}:{}:{}",
                std::process::id(),
                seed.iter().map(|b| format!("{b:02x}")).collect::<String>()
            ),
            wake: tokio::sync::Notify::new(),
            rows_scanned: AtomicU64::new(0),
            rows_expired: AtomicU64::new(0),
            rows_versions: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            tasks_finished: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }
}

fn getrandom(buf: &mut [u8]) -> Result<(), ()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|_| ())
}
