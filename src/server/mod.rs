//! The accept loop: `run(listener, config, shutdown)` serves until `shutdown` completes, then
//! lets sessions finish their current command (up to `proxy.shutdown_grace_ms`); the admin
//! listener (`admin_http`) beside it.

pub mod admin_http;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use crate::admin::bump;
use crate::config::{Config, ConfigError};
use crate::net::{refuse_with, ClientSock, Peer};
use crate::protocol::packets::ErrorInfo;
use crate::session;
use crate::shared::Shared;

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
    let (keep, rx) = tokio::sync::mpsc::unbounded_channel();
    let reloads = Reloads::new(rx, |_: &Config| {});
    let served = run_reloading(listener, config, shutdown, workers, reloads).await;
    drop(keep);
    served
}

/// Configurations read again (SIGHUP), or why one could not be read; `applied` is told of each
/// one the server applies (the process's log settings follow it).
pub struct Reloads {
    rx: tokio::sync::mpsc::UnboundedReceiver<Result<Config, String>>,
    applied: Box<dyn Fn(&Config) + Send>,
}

impl Reloads {
    pub fn new(
        rx: tokio::sync::mpsc::UnboundedReceiver<Result<Config, String>>,
        applied: impl Fn(&Config) + Send + 'static,
    ) -> Reloads {
        Reloads {
            rx,
            applied: Box::new(applied),
        }
    }
}

/// Applies one reload: the new configuration for new statements and connections, or the old
/// one kept, with the reason logged and counted.
fn reload(shared: &Shared, read: Result<Config, String>, applied: &dyn Fn(&Config)) {
    let outcome = read.and_then(|c| shared.reload(c).map_err(|e| e.to_string()));
    match outcome {
        Ok(kept) => {
            bump(&shared.stats.config_reloads);
            applied(&shared.config());
            for k in &kept {
                warn!(setting = %k, "configuration reloaded, but {k} changes only with a restart: kept");
            }
            info!("configuration reloaded: applies to new statements and connections");
        }
        Err(e) => {
            bump(&shared.stats.config_reload_failures);
            error!("configuration reload refused, the running configuration stays: {e}");
        }
    }
}

/// `run_on`, applying each configuration `reloads` brings.
pub async fn run_reloading(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
    workers: Vec<Handle>,
    mut reloads: Reloads,
) -> Result<(), ConfigError> {
    if workers.is_empty() {
        return Err(ConfigError::Invalid("no worker runtime".into()));
    }
    let mut next_worker = 0usize;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shared = Shared::new(config, stop_rx)?;
    // the admin listener listens where configured, or the proxy does not start: a port taken
    // by another process would otherwise answer /readyz and /metrics in the proxy's name
    let admin = match shared.config().admin.listen.clone() {
        a if a.is_empty() => None,
        address => Some(TcpListener::bind(&address).await.map_err(|source| {
            ConfigError::Listen {
                setting: "admin.listen",
                address,
                source,
                hint: "choose another with --admin-listen or OBKV_PROXY_ADMIN_LISTEN, or \"\" to run without the admin listener",
            }
        })?),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let unix = match socket_path(&shared.config().proxy.socket, port) {
        Some(path) => bind_unix(&path).await.map(|l| (l, path)),
        None => None,
    };
    shared.socket = unix.as_ref().map(|(_, p)| Arc::from(p.as_str()));
    crate::admin::metrics::init(shared.config().admin.max_tables);
    crate::admin::metrics::set_enabled(shared.config().admin.metrics);
    crate::admin::advisor::init(shared.config().advisor.settings());
    let shared = Arc::new(shared);
    // each worker folds its advisor observations in once a second
    if shared.config().advisor.enabled {
        for w in &workers {
            w.spawn(crate::admin::advisor::tick(shared.shutdown.clone()));
        }
    }
    // clients that go while their statement runs: their statements end (`watch`)
    tokio::spawn(watch_clients(shared.clone()));
    // the TTL task where the backend has none (`ttl.enabled`; idle otherwise)
    tokio::spawn(crate::ttl::run(shared.clone()));
    if let Some(l) = admin {
        if let Ok(a) = l.local_addr() {
            info!(admin = %a, "admin listener: /metrics, /livez, /readyz");
        }
        tokio::spawn(admin_http::serve(
            l,
            shared.clone(),
            shared.shutdown.clone(),
        ));
    }
    let limit = Arc::new(Semaphore::new(shared.config().proxy.max_connections));
    let mut sessions = JoinSet::new();
    tokio::pin!(shutdown);
    if let Ok(addr) = listener.local_addr() {
        info!(listen = %addr, backend = %shared.config().backend.address, auth = ?shared.config().auth.mode, tls = shared.tls().is_some(), "obkv-proxy serving");
    }
    let accept_unix = || async {
        match &unix {
            Some((l, _)) => l.accept().await.map(|(s, _)| s),
            None => std::future::pending().await,
        }
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(read) = reloads.rx.recv() => reload(&shared, read, &*reloads.applied),
            accepted = accept_unix() => match accepted {
                Ok(sock) => {
                    bump(&shared.stats.connections_total);
                    bump(&shared.stats.socket_connections);
                    match (limit.clone().try_acquire_owned(), sock.into_std()) {
                        (Ok(permit), Ok(std_sock)) => {
                            let shared = shared.clone();
                            let worker = &workers[next_worker % workers.len()];
                            next_worker = next_worker.wrapping_add(1);
                            sessions.spawn_on(async move {
                                if let Ok(s) = UnixStream::from_std(std_sock) {
                                    session::serve(ClientSock::unix(s), Peer::Unix, shared).await;
                                }
                                drop(permit);
                            }, worker);
                        }
                        (Err(_), Ok(std_sock)) => {
                            bump(&shared.stats.connections_refused);
                            if let Ok(s) = UnixStream::from_std(std_sock) {
                                sessions.spawn(refuse_with(s, ErrorInfo::too_many_connections()));
                            }
                        }
                        (_, Err(e)) => warn!("cannot hand over a socket connection: {e}"),
                    }
                }
                Err(e) => {
                    warn!("accept on the Unix socket failed: {e}");
                    crate::timer::sleep(Duration::from_millis(20)).await;
                }
            },
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
                                            session::serve(ClientSock::tcp(tcp), Peer::Tcp(peer), shared).await;
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
                    crate::timer::sleep(Duration::from_millis(20)).await;
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
    if let Some((l, path)) = unix {
        drop(l);
        let _ = std::fs::remove_file(&path);
    }
    let _ = stop_tx.send(true);
    let grace = Duration::from_millis(shared.config().proxy.shutdown_grace_ms);
    let drained = crate::timer::timeout(grace, async {
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

/// The Unix socket path `proxy.socket` asks for: "auto" names it after the TCP port.
pub fn socket_path(setting: &str, port: u16) -> Option<String> {
    match setting {
        "" => None,
        "auto" => Some(format!("/tmp/obkv-proxy-{port}.sock")),
        p => Some(p.to_string()),
    }
}

/// Binds the Unix socket, replacing a stale socket file (one nobody listens on) and never
/// anything else; readable and writable by every local user, as MySQL's own socket is. A path
/// in use or unusable is logged and left: the proxy serves TCP without it.
async fn bind_unix(path: &str) -> Option<UnixListener> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            warn!(socket = path, "not a socket: not listening there");
            return None;
        }
        // a live listener answers at once; a full backlog must not hold up the start either
        let probe = UnixStream::connect(path);
        if !matches!(
            crate::timer::timeout(Duration::from_millis(200), probe).await,
            Ok(Err(_))
        ) {
            warn!(
                socket = path,
                "another process listens there: not listening there"
            );
            return None;
        }
        let _ = std::fs::remove_file(path);
    }
    match UnixListener::bind(path) {
        Ok(l) => {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777));
            info!(socket = path, "listening on a Unix socket too");
            Some(l)
        }
        Err(e) => {
            warn!(socket = path, "cannot listen on the Unix socket: {e}");
            None
        }
    }
}

async fn refuse(tcp: TcpStream) {
    refuse_with(tcp, ErrorInfo::too_many_connections()).await;
}

/// The client-gone watcher: every `watch::TICK` until shutdown.
async fn watch_clients(shared: Arc<Shared>) {
    let mut stop = shared.shutdown.clone();
    let mut every = crate::timer::interval(crate::watch::TICK);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => drop(shared.watched.tick()),
            _ = stop.changed() => return,
        }
    }
}
