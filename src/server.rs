//! The accept loop: `run(listener, config, shutdown)` serves until `shutdown` completes, then
//! lets sessions finish their current command (up to `proxy.shutdown_grace_ms`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use crate::admin::bump;
use crate::config::{Config, ConfigError};
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
    if workers.is_empty() {
        return Err(ConfigError::Invalid("no worker runtime".into()));
    }
    let mut next_worker = 0usize;
    let (stop_tx, stop_rx) = watch::channel(false);
    let shared = Arc::new(Shared::new(config, stop_rx)?);
    let limit = Arc::new(Semaphore::new(shared.config.proxy.max_connections));
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
