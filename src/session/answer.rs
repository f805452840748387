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
        if self.client.send_packet(seq, &e.to_packet()).await.is_err() {
            return Err(End::ClientGone);
        }
        Ok(())
    }

    pub(super) async fn answer_proxy_status(&mut self) -> Result<(), End> {
        let mut rows: Vec<Vec<Option<String>>> = self
            .shared
            .stats
            .rows()
            .into_iter()
            .map(|(k, v)| vec![Some(k.to_string()), Some(v)])
            .collect();
        let c = &self.shared.rewrite_counters;
        for (name, v) in [
            ("prefix_rewrites", &c.rewritten),
            ("prefix_rewrites_declined", &c.declined),
            ("prefix_rewrites_unreadable", &c.unreadable),
        ] {
            rows.push(vec![
                Some(name.into()),
                Some(v.load(Ordering::Relaxed).to_string()),
            ]);
        }
        rows.push(vec![
            Some("backend".into()),
            Some(self.shared.config.backend.address.clone()),
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
        self.client.flush().await.map_err(|_| End::ClientGone)
    }

    pub(super) async fn answer_ok(&mut self, affected: u64, warnings: u16) -> Result<(), End> {
        let p = ok_packet(affected, 0, self.last_status, warnings);
        let seq = self.command_frames;
        self.client
            .send_packet(seq, &p)
            .await
            .map(drop)
            .map_err(|_| End::ClientGone)
    }

    pub(super) async fn answer_raw(&mut self, packet: &[u8]) -> Result<(), End> {
        let seq = self.command_frames;
        self.client
            .send_packet(seq, packet)
            .await
            .map(drop)
            .map_err(|_| End::ClientGone)
    }
}
