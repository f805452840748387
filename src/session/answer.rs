//! The proxy's own answers to the current command: an ERR, an OK, a packet of the backend's
//! passed on, a text result set (SHOW PROXY STATUS and the other proxy commands). Each takes
//! the sequence id after the command's frames.

use std::sync::atomic::Ordering;

use super::{End, Session};
use crate::protocol::constants::status;
use crate::protocol::packets::{ok_packet, text_result_set, ErrorInfo};

impl Session {
    /// An ERR for the current command (the one place the proxy's refusals become packets:
    /// `Refusal::to_error`, then this).
    pub(super) async fn answer_error(&mut self, e: ErrorInfo) -> Result<(), End> {
        let seq = self.command_frames;
        self.raise(seq, e).await
    }

    /// An ERR for a command the proxy could not take as one (malformed, unknown, a bad change
    /// of user): no statement ran, nothing of the diagnostics area changes.
    pub(super) async fn answer_protocol_error(&mut self, e: ErrorInfo) -> Result<(), End> {
        let seq = self.command_frames;
        self.send_answer(seq, &e.to_packet()).await
    }

    /// `SHOW [SESSION] STATUS [LIKE …]` that can list `Ssl_*`: the backend's rows, with
    /// `Ssl_cipher` and `Ssl_version` describing the client's own connection to the proxy
    /// (empty for a plain one), added where the backend has no such row and the pattern
    /// matches them.
    pub(super) async fn answer_ssl_status(
        &mut self,
        q: crate::sql::probe::SslStatus,
    ) -> Result<(), End> {
        let sql = String::from_utf8_lossy(self.command.get(1..).unwrap_or_default()).into_owned();
        let rows = match self.rows(&sql).await? {
            Ok(r) => r,
            Err(packet) => return self.answer_backend_packet(&packet).await,
        };
        let (cipher, version) = self.client.get_ref().tls_description().unwrap_or_default();
        let ours = |name: &str| -> Option<&str> {
            match name {
                n if n.eq_ignore_ascii_case("Ssl_cipher") => Some(&cipher),
                n if n.eq_ignore_ascii_case("Ssl_version") => Some(&version),
                _ => None,
            }
        };
        let mut out: Vec<Vec<Option<Vec<u8>>>> = Vec::with_capacity(rows.len() + 2);
        let mut seen = [false; 2];
        for mut r in rows {
            let name = r
                .first()
                .and_then(|v| v.as_deref())
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            if let Some(v) = ours(&name) {
                if let Some(i) = crate::sql::probe::SSL_VARIABLES
                    .iter()
                    .position(|s| s.eq_ignore_ascii_case(&name))
                {
                    seen[i] = true;
                }
                if let Some(cell) = r.get_mut(1) {
                    *cell = Some(v.as_bytes().to_vec());
                }
            }
            out.push(r);
        }
        for (i, name) in crate::sql::probe::SSL_VARIABLES.iter().enumerate() {
            let wanted = q
                .pattern
                .as_deref()
                .is_none_or(|p| crate::hbase::catalog::like(p, name));
            if !seen[i] && wanted {
                let v = ours(name).unwrap_or_default();
                out.push(vec![
                    Some(name.as_bytes().to_vec()),
                    Some(v.as_bytes().to_vec()),
                ]);
            }
        }
        self.answer_rows(&["Variable_name", "Value"], &out).await
    }

    pub(super) async fn answer_proxy_status(&mut self) -> Result<(), End> {
        let mut rows: Vec<Vec<Option<String>>> = self
            .shared
            .stats
            .rows()
            .into_iter()
            .map(|(k, v)| vec![Some(k.to_string()), Some(v)])
            .collect();
        let mode = match self.cfg.multiplex.mode {
            crate::config::MultiplexMode::Off => "off",
            crate::config::MultiplexMode::Transaction => "transaction",
        };
        rows.push(vec![Some("multiplex_mode".into()), Some(mode.into())]);
        for (k, v) in self.shared.lending.rows() {
            rows.push(vec![Some(k), Some(v)]);
        }
        let c = &self.shared.rewrite_counters;
        let t = &self.shared.ttl;
        for (name, v) in [
            ("prefix_rewrites", &c.rewritten),
            ("prefix_rewrites_declined", &c.declined),
            ("prefix_rewrites_unreadable", &c.unreadable),
            ("ttl_rows_scanned", &t.rows_scanned),
            ("ttl_rows_deleted_expired", &t.rows_expired),
            ("ttl_rows_deleted_versions", &t.rows_versions),
            ("ttl_batches", &t.batches),
            ("ttl_tasks_finished", &t.tasks_finished),
            ("ttl_errors", &t.errors),
        ] {
            rows.push(vec![
                Some(name.into()),
                Some(v.load(Ordering::Relaxed).to_string()),
            ]);
        }
        rows.push(vec![
            Some("backend".into()),
            Some(self.cfg.backend.address.clone()),
        ]);
        rows.push(vec![
            Some("idle_pooled_backend_connections".into()),
            Some(self.shared.pool.idle_count().to_string()),
        ]);
        self.answer_rows(&["Variable_name", "Value"], &rows).await
    }

    /// A text result set made by the proxy, in the EOF style the client negotiated.
    pub(super) async fn answer_rows<T: AsRef<[u8]>>(
        &mut self,
        columns: &[&str],
        rows: &[Vec<Option<T>>],
    ) -> Result<(), End> {
        let packets = text_result_set(
            columns,
            rows,
            self.client_caps,
            self.last_status & !status::MORE_RESULTS_EXISTS,
        );
        let mut seq = self.command_frames;
        for p in &packets {
            seq = self.client.queue_packet(seq, p);
        }
        // the diagnostics area after the proxy's own result: empty, as after a database's
        self.hold_own_answer();
        self.observe_end();
        self.client.flush().await.map_err(|_| End::ClientGone)
    }

    /// The proxy's own OK; its `warnings` are the HBase DDL's kept in `pending_warnings`,
    /// which the diagnostics area then holds.
    pub(super) async fn answer_ok(&mut self, affected: u64, warnings: u16) -> Result<(), End> {
        let p = ok_packet(affected, 0, self.last_status, warnings);
        let seq = self.command_frames;
        self.hold_own_answer();
        self.send_answer(seq, &p).await
    }

    /// A packet of the backend's as the answer, after statements of the proxy's own
    /// (`answer_backend_packet`: an error is raised again so the diagnostics area holds it).
    pub(super) async fn answer_raw(&mut self, packet: &[u8]) -> Result<(), End> {
        self.answer_backend_packet(packet).await
    }
}
