//! The relay: sending a command to the backend and streaming its response to the client as
//! the backend sent it (bounded buffers; only the status packets are looked at, by
//! `protocol::response`), with the sequence-id arithmetic a rewrite or a proxy answer after the
//! response needs; and the ends of a session on a protocol error
//! or a lost backend.

use super::*;
use crate::protocol::packets::{read_reports, Reports};

impl Session {
    pub(super) async fn forward_without_response(&mut self) -> Result<(), End> {
        if be!(self).send_command(&self.command).await.is_err() {
            return Err(self.lose_backend(self.command_frames).await);
        }
        Ok(())
    }

    /// Sends the current command to the backend and relays the response.
    pub(super) async fn forward(&mut self, kind: ResponseKind) -> Result<Summary, End> {
        let (summary, _) = self.send_and_relay(kind, false).await?;
        self.after_response(&summary);
        Ok(summary)
    }

    /// Sends the current command and relays the response (`more_after`: as `relay_response`);
    /// the summary and the sequence id after the response.
    pub(super) async fn send_and_relay(
        &mut self,
        kind: ResponseKind,
        more_after: bool,
    ) -> Result<(Summary, u8), End> {
        // from here until its response ends, a client that goes ends the statement too (`run`);
        // the watcher looks for it (unless the client already sent more: it is there then, as
        // MariaDB would find it)
        self.watched.start(self.client.buffered() == 0);
        let backend_frames = match be!(self).send_command(&self.command).await {
            Ok(next) => next,
            Err(_) => return Err(self.lose_backend(self.command_frames).await),
        };
        // Response sequence ids continue the command's; they differ when a rewrite changed the
        // number of frames.
        let seq_delta = self.command_frames.wrapping_sub(backend_frames);
        let relayed = self.relay_response(kind, seq_delta, more_after).await;
        if relayed.is_ok() {
            self.watched.done();
        }
        relayed
    }

    /// Relays one response; with `more_after` its last status packet says more results follow
    /// (the proxy answers them). Returns the summary and the sequence id after the response.
    pub(super) async fn relay_response(
        &mut self,
        kind: ResponseKind,
        seq_delta: u8,
        more_after: bool,
    ) -> Result<(Summary, u8), End> {
        let mut tracker = ResponseTracker::with_caps(kind, self.client_caps);
        // what OK packets report of the session's state, read as they pass
        let mut reports: Option<Box<Reports>> = None;
        let mut next_seq = self.command_frames;
        // the proxy's own warnings about the statement join the backend's count (the packets
        // carry it only under CLIENT_PROTOCOL_41)
        let own_warnings = match std::mem::take(&mut self.own_warnings) {
            n if self.client_caps.has(cap::PROTOCOL_41) => n,
            _ => 0,
        };
        // the last status packet (or a prepare's first) is edited: the packets are looked at
        // one by one
        // (and a multiplexed session's prepare: its statement's id may be the proxy's)
        let edit = more_after
            || own_warnings > 0
            || (kind == ResponseKind::Prepare && self.statements.carrying);
        // A packet of 16 MiB - 1 or more continues in further frames, which are relayed as they
        // are and not shown to the tracker.
        let mut continuing = false;
        let mut step = Step::More;
        // a compressed client expects a frame to end with each result, as servers do
        let compressed = self.client.is_compressed();
        loop {
            if !continuing && !edit {
                // the packets already read go on in one copy; the loop below reads the rest
                let mut failed = None;
                let mut stopped = false;
                be!(self).move_whole_packets(&mut self.client, seq_delta, |h, payload, after| {
                    next_seq = h.seq.wrapping_add(seq_delta).wrapping_add(1);
                    match feed_reading(&mut tracker, &mut reports, h.len, payload) {
                        Err(e) => {
                            failed = Some(e);
                            Flow::Leave
                        }
                        Ok(Step::More) if !(compressed && tracker.between_results()) => {
                            // the column definitions and rows after it go along, counted
                            // in one loop over their headers
                            match tracker.take_bulk(after) {
                                (0, _) | (_, None) => Flow::Next,
                                (n, Some(last)) => {
                                    next_seq = last.wrapping_add(seq_delta).wrapping_add(1);
                                    Flow::NextWith(n)
                                }
                            }
                        }
                        Ok(s) => {
                            step = s;
                            stopped = true;
                            Flow::TakeAndStop
                        }
                    }
                });
                if let Some(e) = failed {
                    warn!(peer = %self.peer, "{e}");
                    return Err(self.backend_protocol_error(next_seq, e.0).await);
                }
                if stopped {
                    if let Some(done) = self.after_packet(step, &tracker, seq_delta).await? {
                        if let Some(r) = reports.take() {
                            self.on_reports(*r);
                        }
                        return Ok((done, next_seq));
                    }
                    continue;
                }
                if self.client.flush_if_full().await.is_err() {
                    return Err(End::ClientGone);
                }
                // a packet not read whole yet that fits the buffer: read on, then move it
                // with the others; a larger one is streamed below
                if be!(self).next_frame_fits() {
                    match be!(self).read_some_flushing(&mut self.client).await {
                        Ok(()) => continue,
                        Err(CopyError::Read(_)) => return Err(self.lose_backend(next_seq).await),
                        Err(CopyError::Write(_)) => return Err(End::ClientGone),
                    }
                }
            }
            let header = match be!(self).read_header().await {
                Ok(h) => h,
                Err(_) => return Err(self.lose_backend(next_seq).await),
            };
            let seq = header.seq.wrapping_add(seq_delta);
            next_seq = seq.wrapping_add(1);
            if !continuing {
                let first = if header.len > 0 {
                    match be!(self).peek(1).await {
                        Ok(b) => Some(b[0]),
                        Err(_) => return Err(self.lose_backend(next_seq).await),
                    }
                } else {
                    None
                };
                if tracker.needs_whole_packet(first, header.len) {
                    let payload = match be!(self).read_payload(header.len).await {
                        Ok(p) => p,
                        Err(_) => return Err(self.lose_backend(next_seq).await),
                    };
                    step = match feed_reading(&mut tracker, &mut reports, header.len, payload) {
                        Ok(s) => s,
                        Err(e) => {
                            warn!(peer = %self.peer, "{e}");
                            return Err(self.backend_protocol_error(next_seq, e.0).await);
                        }
                    };
                    self.client.queue_header(header.len, seq);
                    let last = step == Step::Done && tracker.summary.error_code.is_none();
                    let deprecate_eof = self.client_caps.has(cap::DEPRECATE_EOF);
                    let mut patched =
                        edited(payload, last, kind, more_after, own_warnings, deprecate_eof);
                    if kind == ResponseKind::Prepare
                        && self.statements.carrying
                        && payload.first() == Some(&0x00)
                    {
                        if let Some(backend_id) = crate::protocol::execute::statement_id(payload) {
                            let id = self.statements.client_id_for(backend_id);
                            if id != backend_id {
                                let mut p = patched.unwrap_or_else(|| payload.to_vec());
                                crate::protocol::execute::with_statement_id(&mut p, id);
                                patched = Some(p);
                            }
                        }
                    }
                    match patched {
                        Some(patched) => self.client.queue_bytes(&patched),
                        None => self.client.queue_bytes(payload),
                    }
                } else {
                    let head = [first.unwrap_or(0)];
                    step = match tracker.feed(header.len, &head[..header.len.min(1)]) {
                        Ok(s) => s,
                        Err(e) => return Err(self.backend_protocol_error(next_seq, e.0).await),
                    };
                    self.client.queue_header(header.len, seq);
                    self.copy_backend_payload(header.len, next_seq).await?;
                }
            } else {
                self.client.queue_header(header.len, seq);
                self.copy_backend_payload(header.len, next_seq).await?;
            }
            continuing = header.len == MAX_FRAME;
            if continuing {
                continue;
            }
            if let Some(done) = self.after_packet(step, &tracker, seq_delta).await? {
                if let Some(r) = reports.take() {
                    self.on_reports(*r);
                }
                return Ok((done, next_seq));
            }
        }
    }

    /// What follows a relayed packet that ended a logical packet: the summary once the response
    /// is complete (flushed), else None after writing out what a client must see by now.
    pub(super) async fn after_packet(
        &mut self,
        step: Step,
        tracker: &ResponseTracker,
        seq_delta: u8,
    ) -> Result<Option<Summary>, End> {
        let flushed = match step {
            // a compressed client expects a frame to end with each result, as servers do
            Step::More if self.client.is_compressed() && tracker.between_results() => {
                self.client.flush().await
            }
            Step::More => self.client.flush_if_full().await,
            Step::Done => {
                self.observe_end();
                return match self.client.flush().await {
                    Ok(()) => Ok(Some(tracker.summary)),
                    Err(_) => Err(End::ClientGone),
                };
            }
            Step::LocalInfile => {
                if self.client.flush().await.is_err() {
                    return Err(End::ClientGone);
                }
                self.relay_local_infile(seq_delta).await?;
                Ok(())
            }
        };
        match flushed {
            Ok(()) => Ok(None),
            Err(_) => Err(End::ClientGone),
        }
    }

    pub(super) async fn copy_backend_payload(
        &mut self,
        len: usize,
        next_seq: u8,
    ) -> Result<(), End> {
        match be!(self).copy_payload_to(len, &mut self.client).await {
            Ok(()) => Ok(()),
            Err(CopyError::Read(_)) => Err(self.lose_backend(next_seq).await),
            Err(CopyError::Write(_)) => Err(End::ClientGone),
        }
    }

    /// LOAD DATA LOCAL: the client sends the file as packets ending with an empty one.
    pub(super) async fn relay_local_infile(&mut self, seq_delta: u8) -> Result<(), End> {
        let mut previous_full = false;
        let net_read = self.cfg.net_read_timeout();
        loop {
            let h = match crate::timer::timeout(net_read, self.client.read_header()).await {
                Ok(Ok(h)) => h,
                _ => return Err(End::ClientGone),
            };
            be!(self).queue_header(h.len, h.seq.wrapping_sub(seq_delta));
            let copy = self.client.copy_payload_to(h.len, be!(self));
            match crate::timer::timeout(net_read, copy).await {
                Ok(Ok(())) => {}
                Ok(Err(CopyError::Read(_))) | Err(_) => return Err(End::ClientGone),
                Ok(Err(CopyError::Write(_))) => {
                    return Err(self.lose_backend(h.seq.wrapping_add(1)).await)
                }
            }
            if h.len == 0 && !previous_full {
                break;
            }
            previous_full = h.len == MAX_FRAME;
        }
        if be!(self).flush().await.is_err() {
            return Err(self.lose_backend(0).await);
        }
        Ok(())
    }

    /// The client went while its statement ran (it closed, broke, or read nothing for
    /// `proxy.net_write_timeout_ms`): the backend connection is closed at once — the backend
    /// then notices its client gone as it notices its own (MariaDB's SLEEP and waits look, a
    /// write fails) — and, where the proxy holds an account that may, the connection is killed
    /// (`KILL id`) so its statement ends at once, its transaction rolled back and its locks
    /// released: the pooled login's own account (proxy auth), else the catalog account (which
    /// needs CONNECTION ADMIN or SUPER for another user's connection). Counted, and logged.
    ///
    /// Not inlined, its task made and boxed in its own frame: the command loop's frame stays
    /// what plain commands need.
    #[inline(never)]
    pub(super) fn end_backend_statement(&mut self) {
        // (a multiplexed session's connection is the one it was lent, of its set's login)
        let (id, login) = match (self.mux_login(), &self.pooled) {
            (Some(login), _) => (self.backend_id, login),
            (None, Some(p)) => (p.greeting.connection_id, Some(p.spec.clone())),
            (None, None) => (self.backend_id, None),
        };
        let Some(backend) = self.backend.as_ref() else {
            return;
        };
        // the TCP connection under any TLS: nothing more is sent on it
        let _ = rustix::net::shutdown(
            std::os::fd::AsFd::as_fd(backend.get_ref()),
            rustix::net::Shutdown::Both,
        );
        let (shared, peer) = (self.shared.clone(), self.peer);
        // the session's task ends now; the KILL runs on its own, bounded by the connect timeout
        tokio::spawn(Box::pin(async move {
            let killed = kill_connection(&shared, id, login).await;
            let how = if killed { "killed" } else { "closed" };
            bump(if killed {
                &shared.stats.statements_ended_killed
            } else {
                &shared.stats.statements_ended_closed
            });
            tracing::info!(%peer, backend_connection = id, how, "client gone while its statement ran: statement ended");
        }));
    }

    /// The backend spoke or closed between commands: relay the whole packets it sent (MariaDB
    /// and MySQL send an error before closing a killed or timed-out connection) and end the
    /// session, so the client's socket closes at once instead of waiting for its next statement.
    pub(super) async fn backend_went_away(&mut self) -> End {
        bump(&self.shared.stats.backend_lost);
        warn!(peer = %self.peer, "backend closed the idle connection");
        let wait = std::time::Duration::from_millis(20);
        let frames = match self.backend.as_mut() {
            Some(b) => {
                b.read_until_closed(64 * 1024, wait).await;
                b.take_whole_frames()
            }
            None => Vec::new(),
        };
        self.client.queue_bytes(&frames);
        let _ = self.client.flush().await;
        End::BackendLost
    }

    /// The backend connection failed mid-command: tell the client (2013) and end the session.
    pub(super) async fn lose_backend(&mut self, seq: u8) -> End {
        // the watcher closed it: the client went while its statement ran
        if self.watched.client_gone() {
            return End::ClientGone;
        }
        bump(&self.shared.stats.backend_lost);
        let addr = &self.cfg.backend.address;
        warn!(peer = %self.peer, backend = %addr, "lost backend connection");
        let _ = self
            .client
            .send_packet(seq, &ErrorInfo::backend_lost(addr).to_packet())
            .await;
        End::BackendLost
    }

    pub(super) async fn backend_protocol_error(&mut self, seq: u8, what: &str) -> End {
        let _ = self
            .client
            .send_packet(seq, &ErrorInfo::malformed_backend_packet(what).to_packet())
            .await;
        End::BackendLost
    }

    pub(super) async fn protocol_error(&mut self, seq: u8, e: ErrorInfo) -> End {
        bump(&self.shared.stats.client_protocol_errors);
        debug!(peer = %self.peer, code = e.code, "client protocol error: {}", e.message);
        let _ = self.client.send_packet(seq, &e.to_packet()).await;
        End::ClientGone
    }
}

/// A whole relayed packet as the client gets it, when the proxy edits it (None: as it is): the
/// last status packet of a response with SERVER_MORE_RESULTS_EXISTS when the proxy answers
/// more after it (`more_after`), and with the proxy's own warnings added to the warning count
/// (of a prepare's first packet, for COM_STMT_PREPARE). Nothing else of the backend's bytes is
/// ever changed. `last`: the packet ended the response without an error.
fn edited(
    payload: &[u8],
    last: bool,
    kind: ResponseKind,
    more_after: bool,
    own_warnings: u16,
    deprecate_eof: bool,
) -> Option<Vec<u8>> {
    let more = if more_after && last {
        with_more_results(payload, deprecate_eof)
    } else {
        None
    };
    let prepare_ok = kind == ResponseKind::Prepare && payload.first() == Some(&0x00);
    if own_warnings == 0 || !(prepare_ok || (last && kind != ResponseKind::Prepare)) {
        return more;
    }
    let base = more.as_deref().unwrap_or(payload);
    with_warnings_added(base, own_warnings, prepare_ok, deprecate_eof).or(more)
}

/// `KILL id` on a connection of the proxy's own: logged in with `login` (proxy auth's pooled
/// account, which owns the connection), else the catalog account. False when neither is there
/// or the backend refused (the closed connection ends it then).
async fn kill_connection(
    shared: &Shared,
    id: u32,
    login: Option<crate::backend::LoginSpec>,
) -> bool {
    use crate::backend::{self, QueryResult};
    if id == 0 {
        return false;
    }
    let sql = format!("KILL {id}");
    match login {
        Some(spec) => {
            let cfg = shared.config();
            let wait = cfg.connect_timeout();
            let addr = &cfg.backend.address;
            let done = async {
                let mut c = backend::login(addr, wait, &spec, shared.backend_tls.as_ref())
                    .await
                    .ok()?;
                let r = backend::query(&mut c.stream, c.caps, sql.as_bytes())
                    .await
                    .ok()?;
                let _ = c.stream.send_command(&[com::QUIT]).await;
                Some(matches!(r.0, QueryResult::Ok(_)))
            };
            matches!(crate::timer::timeout(wait * 2, done).await, Ok(Some(true)))
        }
        None => matches!(
            shared.catalog_query(sql.as_bytes()).await,
            Some(Ok(QueryResult::Ok(_)))
        ),
    }
}

/// One packet fed to the tracker; an OK packet it counts as reporting session-state changes
/// is read into `reports` as it passes (both relays, bulk and packet by packet, read alike).
#[inline(always)]
fn feed_reading(
    tracker: &mut ResponseTracker,
    reports: &mut Option<Box<Reports>>,
    len: usize,
    payload: &[u8],
) -> Result<Step, crate::protocol::response::FramingError> {
    let seen = tracker.summary.state_changes;
    let fed = tracker.feed(len, payload);
    if tracker.summary.state_changes != seen {
        read_reports(payload, reports.get_or_insert_with(Default::default));
    }
    fed
}
