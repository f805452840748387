//! LOAD DATA LOCAL into an HBase table: the file is checked before the statement runs.
//!
//! The proxy asks the client for the file itself (the LOCAL INFILE request the backend would
//! send, naming the same file), reads it as it arrives — each row through the write rules
//! (`engine::write::LoadCheck`), every byte into a spool file that is unlinked as soon as it is
//! created — and only when the rows pass sends the statement to the backend and, at its LOCAL
//! INFILE request, replays the spool. A refused file reaches the backend not at all, so a
//! refusal changes nothing, inside a transaction or not, and the backend never waits on a
//! slow client. The spool is bounded (`hbase.load_data_max_bytes`); memory holds one row at a
//! time and one 64 KiB chunk.

use crate::protocol::constants::er;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::{End, Session};
use crate::admin::bump;
use crate::engine::router::Outbound;
use crate::engine::write::{self, LoadCheck, LoadPlan, WriteRules};
use crate::protocol::constants::status;
use crate::protocol::constants::MAX_FRAME;
use crate::protocol::packets::ErrorInfo;
use crate::protocol::response::{ResponseKind, Summary};

/// File bytes are read, checked, spooled and replayed in pieces of this size.
const CHUNK: usize = 64 * 1024;

/// This session's share of the process-wide spool budget
/// (`hbase.load_data_spool_total_bytes`), given back when dropped.
struct Reserved {
    shared: std::sync::Arc<crate::shared::Shared>,
    bytes: u64,
}

impl Reserved {
    fn new(shared: std::sync::Arc<crate::shared::Shared>) -> Self {
        Reserved { shared, bytes: 0 }
    }

    /// Takes `n` more bytes of the budget; false (nothing taken) if that would pass it.
    fn grow(&mut self, n: u64) -> bool {
        let total = &self.shared.stats.load_spool_bytes;
        let limit = self.shared.config().hbase.load_data_spool_total_bytes;
        let before = total.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > limit {
            total.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        self.bytes += n;
        true
    }

    fn release(&mut self) {
        let n = std::mem::take(&mut self.bytes);
        self.shared
            .stats
            .load_spool_bytes
            .fetch_sub(n, Ordering::Relaxed);
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.release();
    }
}

impl Session {
    /// Carries out a LOAD DATA LOCAL the write stage planned (`w.load`).
    pub(super) async fn carry_out_load(
        &mut self,
        mut w: Outbound,
        rules: WriteRules,
    ) -> Result<Option<Summary>, End> {
        let Some(plan) = w.load.take() else {
            return Ok(None);
        };
        if let Some(text) = w.text.take() {
            self.command.truncate(1);
            self.command.extend_from_slice(&text);
        }
        // the LOCAL INFILE request, as the backend would send it
        let mut request = Vec::with_capacity(1 + plan.load.file.len());
        request.push(0xfb);
        request.extend_from_slice(&plan.load.file);
        let seq = self.command_frames;
        let Ok(mut next) = self.client.send_packet(seq, &request).await else {
            return Err(End::ClientGone);
        };
        // held until the statement ran: the spool file lives as long
        let mut reserved = Reserved::new(self.shared.clone());
        let (spool, outcome) = self
            .receive_file(&plan, rules, &mut next, &mut reserved)
            .await?;
        let checked = match outcome {
            Ok(c) => c,
            Err(e) => {
                bump(&self.shared.stats.answered_locally);
                return self.answer_load_error(next, e).await;
            }
        };
        let txn = self.txn();
        let ctx = self.exec_context(&rules, &txn);
        let out = crate::engine::execute::decide_load(checked, &ctx);
        if let Some(e) = out.refuse {
            bump(&self.shared.stats.answered_locally);
            self.count_refusal(&e);
            return self.answer_load_error(next, e.to_error()).await;
        }
        let Some(spool) = spool else {
            return self
                .answer_load_error(next, ErrorInfo::internal("(the LOAD DATA spool is gone)"))
                .await;
        };
        // counted in the answer the backend's OK becomes
        self.keep_findings(out.notes);
        // every row of the file, for the rowkey advisor once the statement ran
        let room = self.activity.room();
        for what in crate::engine::write::observed(out.touch, out.rows, true, room) {
            self.activity.observe(crate::engine::decision::Observation {
                table: plan.schema.clone(),
                what,
            });
        }
        let summary = self.run_load(spool, next, &mut reserved).await?;
        let failed = summary.error_code.is_some();
        self.after_response(&summary);
        if let (Some(p), true, false) = (out.pin, self.last_status & status::IN_TRANS != 0, failed)
        {
            if self.txn_pin.is_none() {
                self.txn_pin = Some(p);
            }
        }
        Ok(Some(summary))
    }

    async fn answer_load_error(&mut self, seq: u8, e: ErrorInfo) -> Result<Option<Summary>, End> {
        self.raise(seq, e).await.map(|()| None)
    }

    /// Reads the client's file to its end (the empty packet), checking and spooling it; `next`
    /// ends as the sequence id of the answer.
    async fn receive_file(
        &mut self,
        plan: &LoadPlan,
        rules: WriteRules,
        next: &mut u8,
        reserved: &mut Reserved,
    ) -> Result<(Option<tokio::fs::File>, Result<write::Checked, ErrorInfo>), End> {
        let h = &self.cfg.hbase;
        let max = h.load_data_max_bytes;
        let dir = h
            .load_data_spool_dir
            .as_ref()
            .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
        let cannot_hold = |e: std::io::Error| {
            let msg = format!(
                "obkv-proxy cannot hold the LOAD DATA file to check it ({}: {e})",
                dir.display()
            );
            ErrorInfo::new(er::UNKNOWN_ERROR, "HY000", msg)
        };
        // the proxy could not hold the file (too large, or the spool failed)
        let mut stop: Option<ErrorInfo> = None;
        let mut spool = match tempfile::tempfile_in(&dir) {
            Ok(f) => Some(tokio::fs::File::from_std(f)),
            Err(e) => {
                stop = Some(cannot_hold(e));
                None
            }
        };
        let mut check = LoadCheck::new(plan, rules);
        let mut total = 0u64;
        let mut previous_full = false;
        let net_read = self.cfg.net_read_timeout();
        let mut chunk: Vec<u8> = Vec::with_capacity(CHUNK);
        loop {
            let header = match crate::timer::timeout(net_read, self.client.read_header()).await {
                Ok(Ok(h)) => h,
                _ => return Err(End::ClientGone),
            };
            if header.seq != *next {
                return Err(End::ClientGone);
            }
            *next = next.wrapping_add(1);
            let mut left = header.len;
            while left > 0 {
                let n = left.min(CHUNK);
                chunk.clear();
                let read = self.client.read_payload_into(n, &mut chunk);
                match crate::timer::timeout(net_read, read).await {
                    Ok(Ok(())) => {}
                    _ => return Err(End::ClientGone),
                }
                left -= n;
                total = total.saturating_add(n as u64);
                if stop.is_some() || check.refused() {
                    continue; // the rest is read and dropped: the client is answered after it
                }
                if total > max {
                    stop = Some(ErrorInfo::new(
                        er::NET_PACKET_TOO_LARGE,
                        "08S01",
                        format!(
                            "obkv-proxy checks a LOAD DATA file on an HBase table before it runs, and \
                             holds at most hbase.load_data_max_bytes = {max} bytes of it: load the file \
                             in parts"
                        ),
                    ));
                    spool = None;
                    reserved.release();
                    continue;
                }
                check.feed(&chunk);
                if check.refused() {
                    spool = None;
                    reserved.release();
                    continue;
                }
                if spool.is_some() && !reserved.grow(n as u64) {
                    let limit = self.cfg.hbase.load_data_spool_total_bytes;
                    stop = Some(ErrorInfo::new(
                        er::OUT_OF_RESOURCES,
                        "HY000",
                        format!(
                            "obkv-proxy holds at most hbase.load_data_spool_total_bytes = {limit} bytes \
                             of LOAD DATA files at once (all sessions), and that is taken: send the \
                             file again later, or in parts"
                        ),
                    ));
                    spool = None;
                    reserved.release();
                    continue;
                }
                if let Some(f) = spool.as_mut() {
                    if let Err(e) = f.write_all(&chunk).await {
                        stop = Some(cannot_hold(e));
                        spool = None;
                        reserved.release();
                    }
                }
            }
            if header.len == 0 && !previous_full {
                break;
            }
            previous_full = header.len == MAX_FRAME;
        }
        drop(chunk);
        // a refusal by the rules is the verdict's to state
        let outcome = match stop {
            Some(e) if !check.refused() => Err(e),
            _ => Ok(check.finish()),
        };
        Ok((spool, outcome))
    }

    /// Sends the statement, replays the spool at the backend's LOCAL INFILE request, and relays
    /// the answer with the sequence ids the client expects (`client_next`).
    async fn run_load(
        &mut self,
        mut spool: tokio::fs::File,
        client_next: u8,
        reserved: &mut Reserved,
    ) -> Result<Summary, End> {
        if be!(self).send_command(&self.command).await.is_err() {
            return Err(self.lose_backend(client_next).await);
        }
        // the answer's header, and its first byte when it has one (an empty packet has none
        // to wait for)
        let (len, seq) = match be!(self).peek(4).await {
            Ok(b) => (
                usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16,
                b[3],
            ),
            Err(_) => return Err(self.lose_backend(client_next).await),
        };
        let first = match len {
            0 => None,
            _ => match be!(self).peek(5).await {
                Ok(b) => Some(b[4]),
                Err(_) => return Err(self.lose_backend(client_next).await),
            },
        };
        let delta = if first == Some(0xfb) {
            // the backend asks for the file: it gets the one the proxy checked
            if be!(self).read_header().await.is_err() || be!(self).read_payload(len).await.is_err()
            {
                return Err(self.lose_backend(client_next).await);
            }
            let mut s = seq.wrapping_add(1);
            // a spool that cannot be read back: the backend connection is given up, so the
            // backend aborts the statement (and loads nothing) rather than a part of the file
            if spool.seek(std::io::SeekFrom::Start(0)).await.is_err() {
                warn_spool();
                return Err(self.lose_backend(client_next).await);
            }
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = match spool.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(_) => {
                        warn_spool();
                        return Err(self.lose_backend(client_next).await);
                    }
                };
                be!(self).queue_packet(s, &buf[..n]);
                s = s.wrapping_add(1);
                if be!(self).flush_if_full().await.is_err() {
                    return Err(self.lose_backend(client_next).await);
                }
            }
            be!(self).queue_packet(s, &[]);
            s = s.wrapping_add(1);
            if be!(self).flush().await.is_err() {
                return Err(self.lose_backend(client_next).await);
            }
            client_next.wrapping_sub(s)
        } else {
            // the backend answered without asking (an error): relayed in the client's sequence
            client_next.wrapping_sub(seq)
        };
        // the file is with the backend: its budget is free before the answer is relayed
        drop(spool);
        reserved.release();
        let (summary, _) = self
            .relay_response(ResponseKind::Query, delta, false)
            .await?;
        Ok(summary)
    }
}

fn warn_spool() {
    tracing::warn!("LOAD DATA spool unreadable: the backend connection is given up");
}
