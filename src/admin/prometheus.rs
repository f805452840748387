//! The Prometheus text exposition format (version 0.0.4) of the proxy's counters: the
//! per-thread metrics summed (`metrics::snapshot`), the process-wide counters (`Stats`) and
//! gauges the caller reads at scrape time (pool, spool). Every metric has HELP and TYPE; label
//! values are escaped; no rowkey or value is ever a label (tables are named, rules are ids).

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::metrics::{self, Class, Outcome, CLASSES, OUTCOMES, TABLE_EVENTS};
use super::Stats;

/// A gauge or counter the caller reads at scrape time.
pub struct Extra {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: &'static str,
    pub value: f64,
}

/// Escapes a label value: backslash, double quote and line feed.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

struct Out(String);

impl Out {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP obkv_proxy_{name} {help}");
        let _ = writeln!(self.0, "# TYPE obkv_proxy_{name} {kind}");
    }

    fn line(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let _ = write!(self.0, "obkv_proxy_{name}");
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn single(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.head(name, kind, help);
        self.line(name, &[], value);
    }
}

/// The whole exposition.
pub fn render(stats: &Stats, extra: &[Extra]) -> String {
    let snap = metrics::snapshot();
    let g = |c: &std::sync::atomic::AtomicU64| c.load(Relaxed);
    let mut o = Out(String::with_capacity(16 * 1024));
    o.single(
        "uptime_seconds",
        "gauge",
        "Seconds since the proxy started.",
        stats.started.elapsed().as_secs(),
    );
    o.single(
        "connections_active",
        "gauge",
        "Client sessions open now.",
        g(&stats.connections_active),
    );
    o.single(
        "connections_total",
        "counter",
        "Client connections accepted (TCP and Unix socket).",
        g(&stats.connections_total),
    );
    o.single(
        "socket_connections_total",
        "counter",
        "Client connections accepted on the Unix socket.",
        g(&stats.socket_connections),
    );
    o.head(
        "connections_refused_total",
        "counter",
        "Client connections refused, by reason.",
    );
    for (reason, c) in stats.refused_by_reason() {
        o.line("connections_refused_total", &[("reason", reason)], g(c));
    }
    o.single(
        "tls_sessions_total",
        "counter",
        "Client sessions that use TLS.",
        g(&stats.tls_sessions),
    );
    o.single(
        "compressed_sessions_total",
        "counter",
        "Client sessions that use the compressed protocol.",
        g(&stats.compressed_sessions),
    );
    o.head("commands_total", "counter", "Client commands, by kind.");
    for (name, n) in snap.commands() {
        o.line("commands_total", &[("command", name)], n);
    }
    o.head(
        "statements_total",
        "counter",
        "Statements (text queries, prepares, executions), by class and by what the proxy did.",
    );
    for (ci, class) in CLASSES.iter().enumerate() {
        for (oi, outcome) in OUTCOMES.iter().enumerate() {
            let n = snap.statements(Class::ALL[ci], Outcome::ALL[oi]);
            o.line(
                "statements_total",
                &[("class", class), ("outcome", outcome)],
                n,
            );
        }
    }
    o.head(
        "refusals_total",
        "counter",
        "Statements the proxy refused, by the rule (R/C/X id) or the kind of refusal.",
    );
    for (rule, n) in snap.refusals() {
        o.line("refusals_total", &[("rule", rule)], n);
    }
    o.head(
        "advisor_findings",
        "gauge",
        "The rowkey advisor's findings now, over every table it keeps, by the guide's rule (docs/ADVISOR.md).",
    );
    let findings = crate::admin::advisor::findings_by_rule();
    for (rule, n) in crate::hbase::advisor::detect::RULES.iter().zip(findings) {
        o.line("advisor_findings", &[("rule", rule)], n);
    }
    let (tables, bytes, refused) = crate::admin::advisor::usage();
    o.single(
        "advisor_tables",
        "gauge",
        "HBase tables the rowkey advisor keeps statistics of.",
        tables,
    );
    o.single(
        "advisor_bytes",
        "gauge",
        "Bytes the advisor's tables may take at most (within advisor.max_bytes).",
        bytes,
    );
    o.single(
        "advisor_observations_refused_total",
        "counter",
        "Observations of tables past the advisor's budget (advisor.max_tables, advisor.max_bytes), not kept.",
        refused,
    );
    o.head(
        "statement_duration_seconds",
        "histogram",
        "Time from a statement's last byte read from the client until its response's end is written to it, by class.",
    );
    for (ci, class) in CLASSES.iter().enumerate() {
        let (buckets, sum, count) = snap.latency(Class::ALL[ci]);
        for (i, n) in buckets.iter().enumerate() {
            let le = metrics::BUCKETS_US
                .get(i)
                .map_or("+Inf".to_string(), |us| format_seconds(*us));
            o.line(
                "statement_duration_seconds_bucket",
                &[("class", class), ("le", &le)],
                n,
            );
        }
        o.line("statement_duration_seconds_sum", &[("class", class)], sum);
        o.line(
            "statement_duration_seconds_count",
            &[("class", class)],
            count,
        );
    }
    let (bytes_in, bytes_out) = snap.bytes();
    o.single(
        "client_received_bytes_total",
        "counter",
        "Bytes read from clients.",
        bytes_in,
    );
    o.single(
        "client_sent_bytes_total",
        "counter",
        "Bytes written to clients.",
        bytes_out,
    );
    o.single(
        "backend_logins_total",
        "counter",
        "Sessions that logged in to the backend (each holds one backend connection).",
        g(&stats.backend_logins),
    );
    o.single(
        "backend_connect_errors_total",
        "counter",
        "Backend connections that could not be made.",
        g(&stats.backend_connect_errors),
    );
    o.single(
        "backend_lost_total",
        "counter",
        "Backend connections lost in a session.",
        g(&stats.backend_lost),
    );
    o.single(
        "client_protocol_errors_total",
        "counter",
        "Sessions ended by a client's protocol error (timeouts, oversized or out-of-order packets).",
        g(&stats.client_protocol_errors),
    );
    o.single(
        "statements_flagged_total",
        "counter",
        "Statements the lexical pre-check sent to the router.",
        g(&stats.statements_flagged),
    );
    o.single(
        "answered_locally_total",
        "counter",
        "Statements the proxy answered itself (refusals, its own commands, HBase DDL).",
        g(&stats.answered_locally),
    );
    o.single(
        "socket_probes_answered_total",
        "counter",
        "Drivers' @@socket probes answered by the proxy.",
        g(&stats.socket_probes_answered),
    );
    o.single(
        "diagnostics_answered_total",
        "counter",
        "Diagnostics statements (SHOW WARNINGS, GET DIAGNOSTICS, ...) answered with the proxy's conditions.",
        g(&stats.diagnostics_answered),
    );
    o.single(
        "errors_signalled_total",
        "counter",
        "Errors the proxy answered that the backend raised itself (SIGNAL).",
        g(&stats.errors_signalled),
    );
    o.single(
        "errors_held_total",
        "counter",
        "Errors the proxy answered and held itself (message longer than the backend's SIGNAL takes, or no SIGNAL).",
        g(&stats.errors_held),
    );
    o.head(
        "client_gone_statements_ended_total",
        "counter",
        "Statements ended because their client went while they ran: killed on the backend, or their connection closed.",
    );
    for (how, c) in [
        ("killed", &stats.statements_ended_killed),
        ("closed", &stats.statements_ended_closed),
    ] {
        o.line("client_gone_statements_ended_total", &[("how", how)], g(c));
    }
    o.single(
        "sessions_rested_total",
        "counter",
        "Times an idle session gave back its buffers and the client-gone watcher's copies of its sockets.",
        g(&stats.sessions_rested),
    );
    o.single(
        "load_data_spool_bytes",
        "gauge",
        "Bytes of LOAD DATA files held for checking now.",
        g(&stats.load_spool_bytes),
    );
    for e in extra {
        o.single(e.name, e.kind, e.help, e.value);
    }
    o.head(
        "table_events_total",
        "counter",
        "Per HBase table (database.table; beyond admin.max_tables, _other): reads, writes, prefix rewrites and refusals.",
    );
    for (table, counts) in snap.tables() {
        for (ei, event) in TABLE_EVENTS.iter().enumerate() {
            o.line(
                "table_events_total",
                &[("table", table), ("event", event)],
                counts[ei],
            );
        }
    }
    o.0
}

/// Microseconds as seconds, written as Prometheus clients write bucket bounds (0.0001, 0.25, 1).
fn format_seconds(us: u64) -> String {
    let s = us as f64 / 1e6;
    let mut t = format!("{s:.6}");
    while t.ends_with('0') {
        t.pop();
    }
    if t.ends_with('.') {
        t.pop();
    }
    t
}

/// Multiplexing's gauges and counters (`backend::lend`).
pub fn lending(l: &crate::backend::lend::Lending) -> String {
    use crate::backend::lend::{ratio, PIN_REASONS, WAIT_BOUNDS};
    let mut o = Out(String::new());
    let per_user = l.per_user();
    o.head(
        "multiplex_backend_connections",
        "gauge",
        "Backend connections of multiplexed sessions, by backend user and state (open = busy + idle).",
    );
    for c in &per_user {
        for (state, v) in [("open", c.open), ("busy", c.lent), ("idle", c.idle)] {
            o.line(
                "multiplex_backend_connections",
                &[("user", c.user.as_str()), ("state", state)],
                v,
            );
        }
    }
    o.head(
        "multiplex_waiting_sessions",
        "gauge",
        "Sessions waiting for a backend connection of their user now.",
    );
    for c in &per_user {
        o.line(
            "multiplex_waiting_sessions",
            &[("user", c.user.as_str())],
            c.waiting,
        );
    }
    let sessions = l.sessions.load(Relaxed);
    let open: usize = per_user.iter().map(|c| c.open).sum();
    o.single(
        "multiplex_sessions",
        "gauge",
        "Client sessions multiplexed now (not pinned).",
        sessions,
    );
    o.single(
        "multiplex_clients_per_backend_connection",
        "gauge",
        "Multiplexed sessions per open backend connection.",
        ratio(sessions, open),
    );
    o.single(
        "multiplex_borrows_total",
        "counter",
        "Backend connections lent to a session for a command.",
        l.borrows.load(Relaxed),
    );
    o.single(
        "multiplex_state_restores_total",
        "counter",
        "Lent connections first put in their session's state (database, variables, LAST_INSERT_ID).",
        l.restores.load(Relaxed),
    );
    o.single(
        "multiplex_statements_prepared_again_total",
        "counter",
        "Prepared statements of multiplexed sessions prepared again on another backend connection (the first time they ran there).",
        l.prepared_again.load(Relaxed),
    );
    o.single(
        "multiplex_given_up_total",
        "counter",
        "Backend connections an idle session kept only for its last statement's conditions or row count gave up to a waiting session (those carried by the proxy).",
        l.given_up.load(Relaxed),
    );
    o.single(
        "multiplex_wait_timeouts_total",
        "counter",
        "Commands answered with error 1040: no backend connection of their user within multiplex.wait_timeout_ms.",
        l.timed_out.load(Relaxed),
    );
    o.head(
        "multiplex_pins_total",
        "counter",
        "Sessions pinned to their backend connection for good, by reason.",
    );
    for (reason, c) in PIN_REASONS.iter().zip(&l.pins) {
        o.line(
            "multiplex_pins_total",
            &[("reason", reason)],
            c.load(Relaxed),
        );
    }
    let (counts, sum) = l.wait_histogram();
    o.head(
        "multiplex_wait_seconds",
        "histogram",
        "Time sessions waited for a backend connection when none was idle.",
    );
    let mut cumulative = 0u64;
    for (bound, c) in WAIT_BOUNDS.iter().zip(&counts) {
        cumulative += c;
        let le = format!("{bound}");
        o.line(
            "multiplex_wait_seconds_bucket",
            &[("le", le.as_str())],
            cumulative,
        );
    }
    cumulative += counts.get(WAIT_BOUNDS.len()).copied().unwrap_or(0);
    o.line(
        "multiplex_wait_seconds_bucket",
        &[("le", "+Inf")],
        cumulative,
    );
    o.line("multiplex_wait_seconds_sum", &[], sum);
    o.line("multiplex_wait_seconds_count", &[], cumulative);
    o.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_is_well_formed() {
        metrics::statement(
            Class::HbaseRead,
            Outcome::Rewritten,
            std::time::Duration::from_millis(3),
        );
        let text = render(&Stats::default(), &[]);
        // every sample line names a metric that has HELP and TYPE before it
        let mut typed = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.insert(rest.split(' ').next().unwrap_or_default().to_string());
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            let base = name
                .strip_suffix("_bucket")
                .or_else(|| name.strip_suffix("_sum"))
                .or_else(|| name.strip_suffix("_count"))
                .filter(|b| typed.contains(*b))
                .unwrap_or(name);
            assert!(typed.contains(base), "{line}");
        }
        // (other tests may have filled the table slots: the escaping itself)
        assert_eq!(escape("db.g$\"f\n\\"), r#"db.g$\"f\n\\"#);
        assert!(text.contains(
            r#"obkv_proxy_statement_duration_seconds_bucket{class="hbase_read",le="0.005"}"#
        ));
        assert!(text.contains(r#"le="0.0001""#) && text.contains(r#"le="10""#));
        assert!(text.contains(r#"obkv_proxy_refusals_total{rule="C4"}"#));
    }
}
