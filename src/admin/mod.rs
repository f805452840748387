//! Operations: counters shared by all sessions, shown by `SHOW PROXY STATUS`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Debug)]
pub struct Stats {
    pub started: Instant,
    pub connections_total: AtomicU64,
    pub connections_active: AtomicU64,
    pub connections_refused: AtomicU64,
    pub commands_total: AtomicU64,
    pub statements_flagged: AtomicU64,
    pub answered_locally: AtomicU64,
    /// Drivers' `@@socket` probes answered NULL (`sql::probe`).
    pub socket_probes_answered: AtomicU64,
    /// Sessions that use the compressed protocol (since start).
    pub compressed_sessions: AtomicU64,
    /// Connections accepted on the proxy's Unix socket (since start).
    pub socket_connections: AtomicU64,
    pub backend_connect_errors: AtomicU64,
    pub backend_lost: AtomicU64,
    pub client_protocol_errors: AtomicU64,
    /// Bytes of LOAD DATA files held for checking right now (all sessions).
    pub load_spool_bytes: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            started: Instant::now(),
            connections_total: AtomicU64::new(0),
            connections_active: AtomicU64::new(0),
            connections_refused: AtomicU64::new(0),
            commands_total: AtomicU64::new(0),
            statements_flagged: AtomicU64::new(0),
            answered_locally: AtomicU64::new(0),
            socket_probes_answered: AtomicU64::new(0),
            compressed_sessions: AtomicU64::new(0),
            socket_connections: AtomicU64::new(0),
            backend_connect_errors: AtomicU64::new(0),
            backend_lost: AtomicU64::new(0),
            client_protocol_errors: AtomicU64::new(0),
            load_spool_bytes: AtomicU64::new(0),
        }
    }
}

pub fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Stats {
    /// Name/value rows for `SHOW PROXY STATUS`.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed).to_string();
        vec![
            ("version", env!("CARGO_PKG_VERSION").to_string()),
            (
                "uptime_seconds",
                self.started.elapsed().as_secs().to_string(),
            ),
            ("connections_active", g(&self.connections_active)),
            ("connections_total", g(&self.connections_total)),
            ("connections_refused", g(&self.connections_refused)),
            ("commands_total", g(&self.commands_total)),
            ("statements_flagged", g(&self.statements_flagged)),
            ("answered_locally", g(&self.answered_locally)),
            ("socket_probes_answered", g(&self.socket_probes_answered)),
            ("compressed_sessions", g(&self.compressed_sessions)),
            ("socket_connections", g(&self.socket_connections)),
            ("backend_connect_errors", g(&self.backend_connect_errors)),
            ("backend_lost", g(&self.backend_lost)),
            ("client_protocol_errors", g(&self.client_protocol_errors)),
            ("load_data_spool_bytes", g(&self.load_spool_bytes)),
        ]
    }
}
