//! Configuration: a TOML file (every key documented in `config/obkv-proxy.toml`), overridden by
//! environment variables, overridden by command-line flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The most `proxy.max_packet_bytes` may be: 1 GiB, MySQL's and MariaDB's own ceiling for
/// `max_allowed_packet`.
pub const MAX_PACKET_CEILING: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {source}")]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("invalid configuration: {0}")]
    Invalid(String),
    /// An address the configuration names cannot be listened on (taken, not this host's).
    #[error("cannot listen on {setting} = {address}: {source} ({hint})")]
    Listen {
        setting: &'static str,
        address: String,
        source: std::io::Error,
        hint: &'static str,
    },
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub proxy: ProxySection,
    pub backend: BackendSection,
    pub auth: AuthSection,
    pub pool: PoolSection,
    pub tls: TlsSection,
    pub log: LogSection,
    pub hbase: HbaseSection,
    pub admin: AdminSection,
    pub advisor: AdvisorSection,
    pub ttl: TtlSection,
    pub multiplex: MultiplexSection,
}

/// `[multiplex]`: sessions of one backend user share that user's backend connections
/// (`backend::lend`, `session::mux`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MultiplexSection {
    /// `off`: each session keeps the backend connection it logged in with (the default);
    /// `transaction`: a session holds one for a statement or a transaction and gives it back
    /// when nothing ties it to it.
    pub mode: MultiplexMode,
    /// Most backend connections of one backend user and wire shape.
    pub max_backend_connections: usize,
    /// Longest wait for one of them before the statement gets error 1040.
    pub wait_timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MultiplexMode {
    Off,
    Transaction,
}

impl Default for MultiplexSection {
    fn default() -> Self {
        MultiplexSection {
            mode: MultiplexMode::Off,
            max_backend_connections: 64,
            wait_timeout_ms: 5_000,
        }
    }
}

/// `[ttl]`: the TTL task for backends without one of their own (seekdb, MariaDB/MySQL): the
/// cells a family's `TimeToLive` and `MaxVersions` age out are deleted in small batches
/// (`crate::ttl`, docs/RULES.md). An OceanBase cluster runs its own and is left alone.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TtlSection {
    /// The task may run (OceanBase's `enable_kv_ttl`); needs `hbase.catalog_user`.
    pub enabled: bool,
    /// The daily window of scheduled runs, `[HH:MM:SS, HH:MM:SS]` in the backend's local time
    /// (OceanBase's `kv_ttl_duty_duration`); empty: runs only when triggered
    /// (`ALTER SYSTEM TRIGGER TTL`).
    pub duty_duration: String,
    /// Rows a batch reads (and at most deletes), each batch its own short transaction.
    pub batch_rows: usize,
    /// Most rows read per second by one proxy's task (0: no limit).
    pub rows_per_second: u64,
    /// How long a proxy's hold on a table's task lasts without a batch renewing it; another
    /// proxy takes the table over after it (a proxy killed mid-run).
    pub lease_ms: u64,
    /// How often a proxy looks for tasks to run (other proxies' triggers, a lease run out).
    pub poll_ms: u64,
    /// Create `oceanbase.DBA_OB_KV_TTL_TASKS` and `oceanbase.DBA_OB_KV_TTL_TASK_HISTORY` (views
    /// over the catalog's task tables) where the backend has none.
    pub status_views: bool,
}

impl Default for TtlSection {
    fn default() -> Self {
        TtlSection {
            enabled: false,
            duty_duration: String::new(),
            batch_rows: 256,
            rows_per_second: 5_000,
            lease_ms: 10_000,
            poll_ms: 1_000,
            status_views: true,
        }
    }
}

/// `[advisor]`: the live rowkey-design advisor (docs/ADVISOR.md) and its memory budget.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdvisorSection {
    /// Keep traffic statistics of HBase tables and report findings.
    pub enabled: bool,
    /// Most tables kept at once.
    pub max_tables: usize,
    /// Most bytes the tables' statistics may take (each table's size is fixed by its partition
    /// count when first seen: about 140 KiB at 997 partitions).
    pub max_bytes: usize,
    /// Seconds an epoch (a column of the heatmap) covers.
    pub epoch_seconds: u64,
    /// Epochs kept (the recent window the detectors read: epochs × epoch_seconds).
    pub epochs: usize,
    /// Rowkeys sampled per table for what-if replays.
    pub sample: usize,
    /// A table with no traffic for this long is forgotten.
    pub idle_seconds: u64,
    /// One row written (and one get) in this many, drawn at random, has its rowkey read for
    /// the advisor's sketches (top keys, prefixes, order, the replay sample); every row is
    /// counted in its partition and in the distinct count of partitioning keys. 1: every row.
    pub sample_every: u32,
}

impl Default for AdvisorSection {
    fn default() -> Self {
        let d = crate::hbase::advisor::Settings::default();
        AdvisorSection {
            enabled: d.enabled,
            max_tables: d.max_tables,
            max_bytes: d.max_bytes,
            epoch_seconds: d.shape.epoch_seconds,
            epochs: d.shape.epochs,
            sample: d.shape.sample,
            idle_seconds: d.idle_seconds,
            sample_every: d.shape.sample_every,
        }
    }
}

impl AdvisorSection {
    pub fn settings(&self) -> crate::hbase::advisor::Settings {
        crate::hbase::advisor::Settings {
            enabled: self.enabled,
            max_tables: self.max_tables,
            max_bytes: self.max_bytes,
            shape: crate::hbase::advisor::table::Shape {
                epoch_seconds: self.epoch_seconds.max(1),
                epochs: self.epochs.clamp(1, 360),
                sample: self.sample.min(65_536),
                sample_every: self.sample_every.clamp(1, 65_536),
            },
            idle_seconds: self.idle_seconds.max(1),
        }
    }
}

/// `[admin]`: the operations listener (Prometheus metrics, health checks).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSection {
    /// HTTP listener for `/metrics`, `/livez` and `/readyz`, HOST:PORT; empty: none.
    pub listen: String,
    /// Most HBase tables with a label of their own in the metrics (the rest: `_other`).
    pub max_tables: usize,
    /// Sessions count commands, statements, latencies and refusals (off: the counters stay 0,
    /// for measuring what counting costs).
    pub metrics: bool,
    /// Who sees rowkeys on the admin listener's advisor views (`/advisor`, `/advisor/sample`).
    pub rowkeys: RowkeyViews,
}

/// `admin.rowkeys`: rowkeys on the admin listener are shown only to a caller the backend
/// authorises (HTTP Basic with a database account: the tables the backend shows that account,
/// rowkeys of those it may read, the grants SHOW OBKV ADVICE follows), or to nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowkeyViews {
    Credentials,
    Off,
}

impl Default for AdminSection {
    fn default() -> Self {
        AdminSection {
            listen: "127.0.0.1:9883".into(),
            max_tables: 1000,
            metrics: true,
            rowkeys: RowkeyViews::Credentials,
        }
    }
}

/// `hbase.enforcement`: how the OBKV-HBase rules apply (the model owns it).
pub use crate::hbase::cells::Convention;
pub use crate::hbase::rules::Enforcement;

pub use crate::hbase::backend::BackendKind;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HbaseSection {
    pub enforcement: Enforcement,
    pub require_tablegroup_option: bool,
    pub multiple_families: bool,
    pub backend_kind: BackendKind,
    pub catalog_schema: String,
    /// The proxy's own backend account for catalog work (reading and writing `catalog_schema`,
    /// and seeing every table when it decides whether a table group is empty). Applications
    /// then need no rights on the catalog schema. Empty: catalog work runs on the client's own
    /// connection with the client's rights (see README, "The catalog account").
    pub catalog_user: String,
    pub catalog_password: String,
    /// How long HBase DDL waits for another HBase DDL on the same table group (any proxy).
    pub ddl_lock_timeout_ms: u64,
    /// Databases whose `group$family` tables are HBase tables (an HBase namespace is a
    /// database); empty = every database.
    pub databases: Vec<String>,
    /// The prefix-scan rewriter: add the prefix-column predicate to SELECT / UPDATE / DELETE
    /// whose K predicates pin one prefix, so the backend reads one partition.
    pub rewrite: Switch,
    /// How long the rewriter trusts what it read of a table's schema before reading it again
    /// (DDL through this proxy drops it at once; this bounds DDL made elsewhere).
    pub schema_cache_ms: u64,
    /// How T encodes a cell's time: `negated-ms` (OceanBase 4.x's HBase API) or `ms`.
    pub timestamp: Convention,
    /// The plausible range of |T| in milliseconds: outside it T looks like seconds or
    /// microseconds (a warning).
    pub timestamp_window_ms: [i64; 2],
    /// Most bytes of a blob-typed V (the HBase guidance for a cell).
    pub cell_limit_bytes: u64,
    /// The one-partition transaction guard.
    pub transactions: Transactions,
    /// LOAD DATA LOCAL into an HBase table: the file is read from the client and its rows
    /// checked before the statement runs, held meanwhile in a file of at most this many bytes.
    pub load_data_max_bytes: u64,
    /// Most bytes of such files the whole process holds at once (all sessions); a file that
    /// would go past it is refused (1041), to be sent again later.
    pub load_data_spool_total_bytes: u64,
    /// Where that file is kept (removed from the directory as soon as it is created); default:
    /// the system's temporary directory.
    pub load_data_spool_dir: Option<String>,
}

/// `hbase.transactions`: what a transaction (or a statement) that leaves one partition gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transactions {
    /// A write or locking read inside a transaction that leaves its partition is refused
    /// before it reaches the backend; a statement of its own that spans partitions gets a
    /// warning.
    SinglePartition,
    /// As `single-partition`, and a statement of its own that spans partitions is refused too.
    Strict,
    /// Forwarded with a warning.
    Warn,
    /// Not tracked.
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

impl Default for HbaseSection {
    fn default() -> Self {
        HbaseSection {
            enforcement: Enforcement::Strict,
            require_tablegroup_option: true,
            multiple_families: false,
            backend_kind: BackendKind::Auto,
            catalog_schema: "obkv_meta".into(),
            catalog_user: String::new(),
            catalog_password: String::new(),
            ddl_lock_timeout_ms: 30_000,
            databases: Vec::new(),
            rewrite: Switch::On,
            schema_cache_ms: 1_000,
            timestamp: Convention::NegatedMs,
            timestamp_window_ms: [1_000_000_000_000, 10_000_000_000_000],
            cell_limit_bytes: 10 << 20,
            transactions: Transactions::SinglePartition,
            load_data_max_bytes: 1 << 30,
            load_data_spool_total_bytes: 4 << 30,
            load_data_spool_dir: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxySection {
    pub listen: String,
    pub max_connections: usize,
    /// Clients between TCP accept and a finished login, at once (each holds a backend
    /// connection in the default auth mode). Further clients wait for a slot, within
    /// `handshake_timeout_ms`.
    pub max_preauth_connections: usize,
    pub handshake_timeout_ms: u64,
    /// Once the first byte of a client packet has arrived, the rest must arrive within this
    /// (MySQL's net_read_timeout); else error 1159 and the connection is closed.
    pub net_read_timeout_ms: u64,
    /// A write to a client that reads nothing for this long fails and ends the session, its
    /// statement ended on the backend (MySQL's net_write_timeout); 0 = never.
    pub net_write_timeout_ms: u64,
    /// A logged-in client that sends nothing for this long is disconnected; 0 = never (the
    /// backend's own wait_timeout still applies to its connection).
    pub idle_timeout_ms: u64,
    /// The largest command a client may send (1 KiB to 1 GiB); a longer one gets 1153.
    pub max_packet_bytes: usize,
    pub shutdown_grace_ms: u64,
    /// Single-threaded runtimes serving sessions; 0 = auto (one per CPU core).
    pub worker_threads: usize,
    /// A Unix socket the proxy also listens on: "auto" = /tmp/obkv-proxy-<listen port>.sock,
    /// "" = none, else a path. A driver's `@@socket` probe is answered with it.
    pub socket: String,
    /// Offer the compressed protocol (zlib, CLIENT_COMPRESS) when the backend offers it. A
    /// client that asks for it gets it on both legs, so the backend's `Compression` status
    /// reads as it would directly.
    pub compression: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendSection {
    pub address: String,
    pub connect_timeout_ms: u64,
    pub tls: BackendTlsSection,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendTlsMode {
    /// Never TLS to the backend.
    Off,
    /// TLS to the backend when the client used TLS to the proxy and the backend offers it.
    Auto,
    /// TLS whenever the backend offers it.
    Preferred,
    /// TLS always; a backend that does not offer it is an error for the client.
    Required,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendTlsSection {
    pub mode: BackendTlsMode,
    /// PEM CA bundle: the backend's certificate chain and name are verified against it.
    pub ca: Option<PathBuf>,
    /// Name to verify (default: the host of backend.address).
    pub server_name: Option<String>,
    /// Client certificate and key (PEM) for backends that ask for one.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl Default for BackendTlsSection {
    fn default() -> Self {
        BackendTlsSection {
            mode: BackendTlsMode::Auto,
            ca: None,
            server_name: None,
            cert: None,
            key: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// The backend authenticates every client with its own accounts; the proxy stores nothing.
    Backend,
    /// The proxy authenticates the users listed here and logs in to the backend as the mapped user.
    Proxy,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    pub mode: AuthMode,
    pub users: Vec<ProxyUser>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyUser {
    pub name: String,
    /// mysql_native_password hash: `*` + 40 hex digits of SHA1(SHA1(password)), as MySQL stores it.
    pub password_hash: String,
    pub backend_user: String,
    #[serde(default)]
    pub backend_password: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoolSection {
    pub max_idle: usize,
    pub idle_timeout_ms: u64,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSection {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub level: String,
    /// `text` (human) or `json` (one object per line).
    pub format: LogFormat,
    /// Statements slower than this (milliseconds, as the client waited) are logged, with
    /// literals masked; 0: none.
    pub slow_statement_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

impl Default for ProxySection {
    fn default() -> Self {
        ProxySection {
            listen: "127.0.0.1:2883".into(),
            max_connections: 2048,
            max_preauth_connections: 128,
            handshake_timeout_ms: 10_000,
            net_read_timeout_ms: 30_000,
            net_write_timeout_ms: 60_000,
            idle_timeout_ms: 0,
            max_packet_bytes: 64 << 20,
            shutdown_grace_ms: 10_000,
            worker_threads: 0,
            socket: "auto".into(),
            compression: true,
        }
    }
}

impl Default for BackendSection {
    fn default() -> Self {
        BackendSection {
            address: "127.0.0.1:2881".into(),
            connect_timeout_ms: 3_000,
            tls: BackendTlsSection::default(),
        }
    }
}

impl Default for AuthSection {
    fn default() -> Self {
        AuthSection {
            mode: AuthMode::Backend,
            users: Vec::new(),
        }
    }
}

impl Default for PoolSection {
    fn default() -> Self {
        PoolSection {
            max_idle: 64,
            idle_timeout_ms: 60_000,
        }
    }
}

impl Default for LogSection {
    fn default() -> Self {
        LogSection {
            level: "info".into(),
            format: LogFormat::Text,
            slow_statement_ms: 1000,
        }
    }
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text).map_err(|e| match e {
            ConfigError::Parse { source, .. } => ConfigError::Parse {
                path: path.to_owned(),
                source,
            },
            other => other,
        })
    }

    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::new(),
            source: Box::new(e),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks what serde cannot: addresses, limits, user entries, TLS file pairs.
    /// Checks that every file the configuration names can be read (certificates, keys, CA
    /// bundles) and that the LOAD DATA spool directory is a directory: a proxy that starts (or
    /// reloads) with this configuration does not fail on them later.
    pub fn check_files(&self) -> Result<(), ConfigError> {
        let files = [
            ("tls.cert", &self.tls.cert),
            ("tls.key", &self.tls.key),
            ("backend.tls.ca", &self.backend.tls.ca),
            ("backend.tls.cert", &self.backend.tls.cert),
            ("backend.tls.key", &self.backend.tls.key),
        ];
        for (key, path) in files {
            if let Some(p) = path {
                if let Err(e) = std::fs::File::open(p).and_then(|mut f| {
                    use std::io::Read;
                    f.read(&mut [0u8; 1])
                }) {
                    return Err(ConfigError::Invalid(format!(
                        "{key} = {}: cannot be read: {e}",
                        p.display()
                    )));
                }
            }
        }
        if let Some(d) = &self.hbase.load_data_spool_dir {
            if !Path::new(d).is_dir() {
                return Err(ConfigError::Invalid(format!(
                    "hbase.load_data_spool_dir = {d}: not a directory"
                )));
            }
        }
        Ok(())
    }

    /// The effective configuration as TOML, secrets replaced by "(set)".
    pub fn to_toml(&self) -> String {
        let mut shown = self.clone();
        if !shown.hbase.catalog_password.is_empty() {
            shown.hbase.catalog_password = "(set)".into();
        }
        for u in &mut shown.auth.users {
            if !u.backend_password.is_empty() {
                u.backend_password = "(set)".into();
            }
        }
        toml::to_string(&shown).unwrap_or_else(|e| format!("# cannot show: {e}\n"))
    }

    /// This configuration for a running process that started with `running`: the settings a
    /// process cannot change while it runs (listen addresses, threads, the connection limits'
    /// semaphores, the pool, the backend and its TLS, users, the catalog account, the HBase
    /// databases and the schema cache's lifetime) keep `running`'s values; the names of those
    /// asked to change are returned.
    pub fn keeping_fixed(&self, running: &Config) -> (Config, Vec<String>) {
        let mut out = self.clone();
        let mut kept = Vec::new();
        macro_rules! fixed {
            ($($field:ident).+, $name:expr) => {
                if format!("{:?}", out.$($field).+) != format!("{:?}", running.$($field).+) {
                    kept.push($name.to_string());
                    out.$($field).+ = running.$($field).+.clone();
                }
            };
        }
        fixed!(proxy.listen, "proxy.listen");
        fixed!(proxy.socket, "proxy.socket");
        fixed!(proxy.worker_threads, "proxy.worker_threads");
        fixed!(proxy.max_connections, "proxy.max_connections");
        fixed!(
            proxy.max_preauth_connections,
            "proxy.max_preauth_connections"
        );
        fixed!(backend.address, "backend.address");
        fixed!(backend.tls, "backend.tls");
        fixed!(auth, "auth");
        fixed!(pool, "pool");
        fixed!(admin, "admin");
        fixed!(advisor, "advisor");
        fixed!(hbase.catalog_user, "hbase.catalog_user");
        fixed!(hbase.catalog_password, "hbase.catalog_password");
        fixed!(hbase.catalog_schema, "hbase.catalog_schema");
        fixed!(hbase.databases, "hbase.databases");
        fixed!(hbase.schema_cache_ms, "hbase.schema_cache_ms");
        (out, kept)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.multiplex.max_backend_connections == 0 {
            return bad("multiplex.max_backend_connections must be at least 1".into());
        }
        if self.proxy.listen.parse::<SocketAddr>().is_err() {
            return bad(format!(
                "proxy.listen = {:?} is not HOST:PORT (an IP address and a port)",
                self.proxy.listen
            ));
        }
        if !self.backend.address.contains(':') {
            return bad(format!(
                "backend.address = {:?} is not HOST:PORT",
                self.backend.address
            ));
        }
        if self.proxy.max_connections == 0 {
            return bad("proxy.max_connections must be at least 1".into());
        }
        if let Err(e) = crate::hbase::ttl::DutyWindow::parse(&self.ttl.duty_duration) {
            return bad(format!("ttl.duty_duration: {e}"));
        }
        if !(1..=2_000).contains(&self.ttl.batch_rows) {
            return bad("ttl.batch_rows must be between 1 and 2000".into());
        }
        if self.ttl.lease_ms < 1_000 || self.ttl.poll_ms == 0 {
            return bad("ttl.lease_ms must be at least 1000 and ttl.poll_ms at least 1".into());
        }
        if self.proxy.max_preauth_connections == 0 {
            return bad("proxy.max_preauth_connections must be at least 1".into());
        }
        if self.proxy.handshake_timeout_ms == 0 || self.proxy.net_read_timeout_ms == 0 {
            return bad(
                "proxy.handshake_timeout_ms and proxy.net_read_timeout_ms must be above 0".into(),
            );
        }
        // (MySQL's own ceiling for max_allowed_packet: no client can send a longer command to
        // any backend, and the readers' positions assume it)
        if !(1024..=MAX_PACKET_CEILING).contains(&self.proxy.max_packet_bytes) {
            return bad(format!(
                "proxy.max_packet_bytes must be between 1024 and {MAX_PACKET_CEILING} (1 GiB)"
            ));
        }
        if !self.admin.listen.is_empty() && self.admin.listen.parse::<SocketAddr>().is_err() {
            return bad(format!(
                "admin.listen = {:?} is not HOST:PORT (an IP address and a port), nor empty",
                self.admin.listen
            ));
        }
        let [lo, hi] = self.hbase.timestamp_window_ms;
        if lo < 0 || hi <= lo {
            return bad(
                "hbase.timestamp_window_ms must be [low, high] with 0 <= low < high".into(),
            );
        }
        if self.hbase.cell_limit_bytes == 0 {
            return bad("hbase.cell_limit_bytes must be at least 1".into());
        }
        if self.hbase.load_data_spool_total_bytes == 0 {
            return bad("hbase.load_data_spool_total_bytes must be at least 1".into());
        }
        if self.hbase.load_data_max_bytes == 0 {
            return bad("hbase.load_data_max_bytes must be at least 1".into());
        }
        if self.tls.cert.is_some() != self.tls.key.is_some() {
            return bad("tls.cert and tls.key must be given together".into());
        }
        if self.backend.tls.cert.is_some() != self.backend.tls.key.is_some() {
            return bad("backend.tls.cert and backend.tls.key must be given together".into());
        }
        let schema = &self.hbase.catalog_schema;
        if schema.is_empty()
            || schema.len() > 64
            || !schema
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return bad(format!(
                "hbase.catalog_schema = {schema:?} must be 1-64 letters, digits or '_'"
            ));
        }
        if self.auth.mode == AuthMode::Proxy && self.auth.users.is_empty() {
            return bad("auth.mode = \"proxy\" needs at least one [[auth.users]] entry".into());
        }
        for u in &self.auth.users {
            if crate::protocol::auth::parse_native_hash(&u.password_hash).is_none() {
                return bad(format!(
                    "auth.users {:?}: password_hash must be '*' and 40 hex digits (SHA1(SHA1(password)), as `obkv-proxy hash-password` prints)",
                    u.name
                ));
            }
        }
        Ok(())
    }

    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.proxy.handshake_timeout_ms)
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.backend.connect_timeout_ms)
    }

    pub fn net_read_timeout(&self) -> Duration {
        Duration::from_millis(self.proxy.net_read_timeout_ms)
    }

    /// None when a write to a client may wait for ever.
    pub fn net_write_timeout(&self) -> Option<Duration> {
        (self.proxy.net_write_timeout_ms > 0)
            .then(|| Duration::from_millis(self.proxy.net_write_timeout_ms))
    }

    /// None when idle sessions are never disconnected.
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.proxy.idle_timeout_ms > 0).then(|| Duration::from_millis(self.proxy.idle_timeout_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_config_parses_and_defaults_apply() {
        let text = include_str!("../config/obkv-proxy.toml");
        let cfg = Config::from_toml(text).expect("example config is valid");
        assert_eq!(cfg.proxy.listen, "127.0.0.1:2883");
        assert_eq!(
            Config::from_toml("").expect("empty").backend.address,
            "127.0.0.1:2881"
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_are_rejected() {
        assert!(Config::from_toml("[proxy]\nlisten_addr = \"x\"").is_err());
        assert!(Config::from_toml("[proxy]\nlisten = \"nonsense\"").is_err());
        assert!(Config::from_toml("[tls]\ncert = \"a.pem\"").is_err());
        assert!(Config::from_toml("[auth]\nmode = \"proxy\"").is_err());
        let bad_hash = "[auth]\nmode = \"proxy\"\n[[auth.users]]\nname = \"a\"\npassword_hash = \"secret\"\nbackend_user = \"root\"";
        assert!(Config::from_toml(bad_hash).is_err());
        for (bytes, ok) in [
            (1023, false),
            (1024, true),
            (MAX_PACKET_CEILING, true),
            (MAX_PACKET_CEILING + 1, false),
        ] {
            let cfg = Config::from_toml(&format!("[proxy]\nmax_packet_bytes = {bytes}"));
            assert_eq!(cfg.is_ok(), ok, "max_packet_bytes = {bytes}");
        }
    }
}
