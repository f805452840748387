//! Operations: counters shared by all sessions, shown by `SHOW PROXY STATUS`; the per-thread
//! metrics (`metrics`).

pub mod advisor;
pub mod metrics;
pub mod page;
pub mod prometheus;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Debug)]
pub struct Stats {
    pub started: Instant,
    pub connections_total: AtomicU64,
    pub connections_active: AtomicU64,
    /// Refused: at `proxy.max_connections`.
    pub connections_refused: AtomicU64,
    /// Refused: no login slot (`proxy.max_preauth_connections`) within the handshake timeout.
    pub refused_login_slots: AtomicU64,
    /// Logins that did not finish within the handshake timeout.
    pub refused_login_timeout: AtomicU64,
    /// Logins the proxy or the backend refused (bad credentials, bad handshake).
    pub refused_login_failed: AtomicU64,
    /// Client sessions that use TLS (since start).
    pub tls_sessions: AtomicU64,
    /// Sessions that logged in to the backend (since start).
    pub backend_logins: AtomicU64,
    /// Configuration reloads applied, and refused (SIGHUP).
    pub config_reloads: AtomicU64,
    pub config_reload_failures: AtomicU64,
    /// When a session last logged in to the backend (milliseconds after `started`, plus one;
    /// 0: never): a recent one shows the backend answers (`/readyz`).
    last_backend_login: AtomicU64,
    pub statements_flagged: AtomicU64,
    pub answered_locally: AtomicU64,
    /// Drivers' `@@socket` probes answered NULL (`sql::probe`).
    pub socket_probes_answered: AtomicU64,
    /// Diagnostics statements (SHOW WARNINGS, GET DIAGNOSTICS, …) answered with conditions the
    /// proxy held (`engine::diagnostics`).
    pub diagnostics_answered: AtomicU64,
    /// Errors the proxy answered that the backend raised itself (SIGNAL), and those it could
    /// not (answered by the proxy, the condition held).
    pub errors_signalled: AtomicU64,
    pub errors_held: AtomicU64,
    /// Statements ended because their client went while they ran: killed on the backend
    /// (`KILL`), or only their connection closed (no account that may kill it).
    pub statements_ended_killed: AtomicU64,
    pub statements_ended_closed: AtomicU64,
    /// Times a session the watcher found idle gave back its buffers and the watcher's copies
    /// of its sockets (`watch::Watched::rest`).
    pub sessions_rested: AtomicU64,
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
            refused_login_slots: AtomicU64::new(0),
            refused_login_timeout: AtomicU64::new(0),
            refused_login_failed: AtomicU64::new(0),
            tls_sessions: AtomicU64::new(0),
            backend_logins: AtomicU64::new(0),
            config_reloads: AtomicU64::new(0),
            config_reload_failures: AtomicU64::new(0),
            last_backend_login: AtomicU64::new(0),
            statements_flagged: AtomicU64::new(0),
            answered_locally: AtomicU64::new(0),
            socket_probes_answered: AtomicU64::new(0),
            diagnostics_answered: AtomicU64::new(0),
            errors_signalled: AtomicU64::new(0),
            errors_held: AtomicU64::new(0),
            statements_ended_killed: AtomicU64::new(0),
            statements_ended_closed: AtomicU64::new(0),
            sessions_rested: AtomicU64::new(0),
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
    /// A session logged in to the backend.
    pub fn backend_logged_in(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.last_backend_login.store(now + 1, Ordering::Relaxed);
        bump(&self.backend_logins);
    }

    /// Whether a session logged in to the backend within `d`.
    pub fn backend_login_within(&self, d: std::time::Duration) -> bool {
        let last = self.last_backend_login.load(Ordering::Relaxed);
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1;
        last != 0 && now.saturating_sub(last) <= u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
    }

    /// The refused-connection counters by reason (the `reason` label's values).
    pub fn refused_by_reason(&self) -> [(&'static str, &AtomicU64); 4] {
        [
            ("max_connections", &self.connections_refused),
            ("login_slots", &self.refused_login_slots),
            ("login_timeout", &self.refused_login_timeout),
            ("login_failed", &self.refused_login_failed),
        ]
    }

    /// Name/value rows for `SHOW PROXY STATUS`: the same numbers as the metrics (docs/OPERATIONS.md).
    pub fn rows(&self) -> Vec<(String, String)> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed).to_string();
        let snap = metrics::snapshot();
        let mut rows: Vec<(String, String)> = [
            ("version", env!("CARGO_PKG_VERSION").to_string()),
            // which proxy answers, behind a load balancer (a container's name)
            ("proxy_host", host_name()),
            (
                "uptime_seconds",
                self.started.elapsed().as_secs().to_string(),
            ),
            ("connections_active", g(&self.connections_active)),
            ("connections_total", g(&self.connections_total)),
            ("connections_refused", g(&self.connections_refused)),
            ("commands_total", snap.commands_total().to_string()),
            ("statements_flagged", g(&self.statements_flagged)),
            ("answered_locally", g(&self.answered_locally)),
            ("socket_probes_answered", g(&self.socket_probes_answered)),
            ("diagnostics_answered", g(&self.diagnostics_answered)),
            ("errors_signalled", g(&self.errors_signalled)),
            ("errors_held", g(&self.errors_held)),
            ("statements_ended_killed", g(&self.statements_ended_killed)),
            ("statements_ended_closed", g(&self.statements_ended_closed)),
            ("sessions_rested", g(&self.sessions_rested)),
            ("compressed_sessions", g(&self.compressed_sessions)),
            ("socket_connections", g(&self.socket_connections)),
            ("backend_logins", g(&self.backend_logins)),
            ("backend_connect_errors", g(&self.backend_connect_errors)),
            ("backend_lost", g(&self.backend_lost)),
            ("client_protocol_errors", g(&self.client_protocol_errors)),
            ("load_data_spool_bytes", g(&self.load_spool_bytes)),
            ("tls_sessions", g(&self.tls_sessions)),
            ("config_reloads", g(&self.config_reloads)),
            ("config_reload_failures", g(&self.config_reload_failures)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (reason, c) in self.refused_by_reason().into_iter().skip(1) {
            rows.push((format!("connections_refused_{reason}"), g(c)));
        }
        for (name, n) in snap.commands() {
            rows.push((format!("command_{name}"), n.to_string()));
        }
        for (ci, class) in metrics::CLASSES.iter().enumerate() {
            let c = metrics::Class::ALL[ci];
            for (oi, outcome) in metrics::OUTCOMES.iter().enumerate() {
                let n = snap.statements(c, metrics::Outcome::ALL[oi]);
                rows.push((format!("statements_{class}_{outcome}"), n.to_string()));
            }
            let (buckets, sum, count) = snap.latency(c);
            rows.push((format!("latency_{class}_count"), count.to_string()));
            rows.push((format!("latency_{class}_sum_seconds"), format!("{sum:.6}")));
            for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
                rows.push((
                    format!("latency_{class}_{name}_at_most_ms"),
                    metrics::quantile_bound_ms(&buckets, q),
                ));
            }
        }
        for (rule, n) in snap.refusals() {
            rows.push((format!("refusals_{rule}"), n.to_string()));
        }
        let (bytes_in, bytes_out) = snap.bytes();
        rows.push(("client_received_bytes".into(), bytes_in.to_string()));
        rows.push(("client_sent_bytes".into(), bytes_out.to_string()));
        for (table, counts) in snap.tables() {
            for (ei, event) in metrics::TABLE_EVENTS.iter().enumerate() {
                rows.push((format!("table_{table}_{event}"), counts[ei].to_string()));
            }
        }
        let (tables, bytes, refused) = advisor::usage();
        rows.push(("advisor_tables".into(), tables.to_string()));
        rows.push(("advisor_bytes".into(), bytes.to_string()));
        rows.push(("advisor_observations_refused".into(), refused.to_string()));
        let findings = advisor::findings_by_rule();
        for (rule, n) in crate::hbase::advisor::detect::RULES.iter().zip(findings) {
            rows.push((format!("advisor_findings_{rule}"), n.to_string()));
        }
        rows
    }
}

/// This machine's (or container's) host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}
