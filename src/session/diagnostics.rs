//! The diagnostics area as the client reads it after a statement the proxy answered or
//! annotated (`engine::diagnostics` decides; this carries it out): refusals raised by the
//! backend itself (`raise`), the proxy's own conditions held and shown by the next diagnostics
//! statement (`answer_diagnostics`), and dropped or kept after any other statement as the
//! backend keeps its area.

use super::catalog::Internal;
use super::*;
use crate::backend;
use crate::engine::diagnostics::{self as diag, Area, Condition, Held, Plan};
use crate::hbase::rules::Level;
use crate::protocol::packets::parse_err_code;
use crate::protocol::wire::{put_lenenc_bytes, Reader};

/// SHOW WARNINGS of the backend's read for a merged answer: rows past this many bytes are left
/// out (MariaDB keeps at most `max_error_count` conditions, 64 by default, 65,535 at most).
const SHOW_MAX_BYTES: usize = 4 << 20;

impl From<&Note> for Condition {
    fn from(n: &Note) -> Condition {
        Condition::new(n.level, n.code, n.sqlstate, n.message.as_bytes())
    }
}

/// A text-protocol row of these values.
fn text_row<T: AsRef<[u8]>>(values: &[T]) -> Vec<u8> {
    let mut r = Vec::with_capacity(values.iter().map(|v| v.as_ref().len() + 1).sum());
    for v in values {
        put_lenenc_bytes(&mut r, v.as_ref());
    }
    r
}

/// A SHOW WARNINGS row of the backend's read back: its level, code and message.
fn condition_of_row(row: &[u8]) -> Option<Condition> {
    let mut r = Reader::new(row);
    let level = Level::parse(r.lenenc_bytes()?);
    let code = std::str::from_utf8(r.lenenc_bytes()?).ok()?.parse().ok()?;
    let message = r.lenenc_bytes()?.to_vec();
    Some(Condition::new(level, code, "HY000", message))
}

fn level_of_row(row: &[u8]) -> Level {
    Reader::new(row)
        .lenenc_bytes()
        .map_or(Level::Warning, Level::parse)
}

/// The ERR packet's error, when its message can be raised again as it is (UTF-8).
fn error_of_packet(p: &[u8]) -> Option<ErrorInfo> {
    let mut r = Reader::new(p);
    if r.u8()? != 0xff {
        return None;
    }
    let code = r.u16()?;
    let rest = r.remaining();
    let (state, message) = match rest.first() {
        Some(b'#') => (rest.get(1..6)?, rest.get(6..)?),
        _ => (&b"HY000"[..], rest),
    };
    let message = std::str::from_utf8(message).ok()?;
    Some(ErrorInfo::new(
        code,
        std::str::from_utf8(state).ok()?,
        message,
    ))
}

impl Session {
    pub(super) fn area(&self) -> Area {
        Area::of(self.dialect.flavor)
    }

    /// The one place an error the proxy answers a statement with reaches the client (a
    /// refusal, or an error of the backend's the proxy passes on after statements of its own):
    /// the backend raises it itself (SIGNAL, `engine::diagnostics`), so its diagnostics area,
    /// error count and GET DIAGNOSTICS are the statement's as for any error of its own, and its
    /// ERR is relayed. Where the backend cannot carry it whole (a message longer than its
    /// SIGNAL takes, no SIGNAL, a state that refuses statements), the client gets the proxy's
    /// ERR and the proxy holds the condition for the diagnostics statements that follow.
    ///
    /// Its future is made in this frame and boxed: it holds a backend statement's, and every
    /// path that may refuse (a text's, an execution's) would otherwise carry it in its own
    /// state and stack frame (measured: the command loop's frame grew from 2 KB to 9 KB, every
    /// plain command paying for the stack probes and spills, scripts/cost.sh).
    pub(super) fn raise(
        &mut self,
        seq: u8,
        e: ErrorInfo,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), End>> + Send + '_>> {
        Box::pin(self.raise_now(seq, e))
    }

    async fn raise_now(&mut self, seq: u8, e: ErrorInfo) -> Result<(), End> {
        self.pending_notes.clear();
        self.pending_warnings.clear();
        self.own_warnings = 0;
        let signal = if self.no_signal {
            None
        } else {
            diag::signal(&e, self.area())
        };
        if let Some((sql, cut)) = signal {
            match self.internal(&sql).await? {
                Internal::Err(packet) if !cut && parse_err_code(&packet) == Some(e.code) => {
                    bump(&self.shared.stats.errors_signalled);
                    self.held = None;
                    // the backend's ERR, unless it cuts a long message (its diagnostics area
                    // keeps it whole)
                    if e.message.len() > diag::ERR_MESSAGE_BYTES {
                        return self.send_answer(seq, &e.to_packet()).await;
                    }
                    return self.send_answer(seq, &packet).await;
                }
                // the condition raised, its message cut: the proxy holds it whole
                Internal::Err(packet) if parse_err_code(&packet) == Some(e.code) => {}
                Internal::Err(packet) => {
                    // a backend without SIGNAL is not asked again
                    if parse_err_code(&packet) == Some(er::PARSE_ERROR) {
                        self.no_signal = true;
                    }
                    debug!(peer = %self.peer, code = ?parse_err_code(&packet), "SIGNAL refused");
                }
                _ => {}
            }
        }
        bump(&self.shared.stats.errors_held);
        self.held = Some(Held::alone(vec![Condition::error(&e)]));
        self.send_answer(seq, &e.to_packet()).await
    }

    /// One packet as the whole answer to the current command (counted first).
    pub(super) async fn send_answer(&mut self, seq: u8, packet: &[u8]) -> Result<(), End> {
        self.observe_end();
        self.client
            .send_packet(seq, packet)
            .await
            .map(drop)
            .map_err(|_| End::ClientGone)
    }

    /// Packets as the answer to the current command, sequence ids from the command's.
    async fn answer_packets(&mut self, packets: &[Vec<u8>]) -> Result<(), End> {
        let mut seq = self.command_frames;
        for p in packets {
            seq = self.client.queue_packet(seq, p);
        }
        self.observe_end();
        self.client.flush().await.map_err(|_| End::ClientGone)
    }

    /// A statement of the proxy's own, its answer's packets (rows up to `max` bytes); the
    /// session's status follows it.
    async fn own_packets(&mut self, sql: &[u8], max: usize) -> Result<Vec<Vec<u8>>, End> {
        match backend::query_packets(be!(self), self.client_caps, sql, max).await {
            Ok((packets, summary, _)) => {
                if let Some(st) = summary.status {
                    self.last_status = st & !status::MORE_RESULTS_EXISTS;
                }
                Ok(packets)
            }
            Err(e) => Err(self.own_command_failed(e).await),
        }
    }

    /// A COM_QUERY while the proxy holds conditions (`held`): a diagnostics statement is
    /// answered from them and they stay (true); anything else is left to run (false).
    pub(super) async fn answer_diagnostics(&mut self, held: &mut Held) -> Result<bool, End> {
        let sql = self.command.get(1..).unwrap_or_default();
        let stmt = crate::sql::diagnostics::read(sql, self.reading());
        let plan = diag::plan(held, stmt.as_ref(), sql, self.area());
        match plan {
            Plan::Other => return Ok(false),
            Plan::Show { errors, limit } => self.answer_show(held, errors, limit).await?,
            Plan::Patch(values) => self.answer_patched(&values).await?,
            Plan::Get {
                capture,
                forward,
                set,
            } => {
                if capture {
                    self.capture(held).await?;
                }
                let mut answer = None;
                let steps: [Option<Vec<u8>>; 2] = [forward, set];
                for sql in steps.into_iter().flatten() {
                    let packets = self.own_packets(&sql, 64 * 1024).await?;
                    let first = packets.into_iter().next().unwrap_or_default();
                    let failed = first.first() == Some(&0xff);
                    if answer.is_none() || failed {
                        answer = Some(first);
                    }
                    if failed {
                        break;
                    }
                }
                let seq = self.command_frames;
                self.send_answer(seq, &answer.unwrap_or_default()).await?;
            }
        }
        bump(&self.shared.stats.diagnostics_answered);
        Ok(true)
    }

    /// SHOW WARNINGS / ERRORS: the backend's own SHOW WARNINGS gives the columns (and its rows
    /// when they are the statement's); the rows are the proxy's, then the backend's.
    async fn answer_show(
        &mut self,
        held: &Held,
        errors: bool,
        limit: Option<crate::sql::diagnostics::Limit>,
    ) -> Result<(), End> {
        let packets = self.own_packets(b"SHOW WARNINGS", SHOW_MAX_BYTES).await?;
        let Some(range) = backend::row_range(&packets, self.client_caps) else {
            // an error, or an answer that is no result set: the backend's, as it is
            return self.answer_packets(&packets).await;
        };
        let theirs = match held.backend {
            Some(_) => packets.get(range.clone()).unwrap_or_default(),
            None => &[],
        };
        let own = held.own.iter().map(|c| (c.level, text_row(&c.row())));
        let theirs = theirs.iter().map(|p| (level_of_row(p), p.clone()));
        let rows = diag::shown(own, theirs, errors, limit);
        let mut out: Vec<Vec<u8>> = packets.get(..range.start).unwrap_or_default().to_vec();
        out.extend(rows);
        out.extend(packets.get(range.end..).unwrap_or_default().iter().cloned());
        self.answer_packets(&out).await
    }

    /// The client's statement run on the backend, its one row's columns replaced by `values`
    /// (a count that includes the proxy's conditions); any other answer as the backend gave it.
    async fn answer_patched(&mut self, values: &[u64]) -> Result<(), End> {
        let sql = self.command.get(1..).unwrap_or_default().to_vec();
        let mut packets = self.own_packets(&sql, 64 * 1024).await?;
        if let Some(range) = backend::row_range(&packets, self.client_caps) {
            let cells = packets
                .get(range.start)
                .map(|row| {
                    let mut r = Reader::new(row);
                    let mut n = 0;
                    while !r.remaining().is_empty() && r.lenenc_bytes().is_some() {
                        n += 1;
                    }
                    n
                })
                .unwrap_or(0);
            if range.len() == 1 && cells == values.len() {
                let texts: Vec<String> = values.iter().map(u64::to_string).collect();
                if let Some(row) = packets.get_mut(range.start) {
                    *row = text_row(&texts);
                }
            }
        }
        self.answer_packets(&packets).await
    }

    /// The backend's conditions of the statement become held ones (before a statement of the
    /// proxy's clears the backend's area).
    async fn capture(&mut self, held: &mut Held) -> Result<(), End> {
        if held.backend.take().is_none() {
            return Ok(());
        }
        let packets = self.own_packets(b"SHOW WARNINGS", SHOW_MAX_BYTES).await?;
        if let Some(range) = backend::row_range(&packets, self.client_caps) {
            let rows = packets.get(range).unwrap_or_default();
            held.own
                .extend(rows.iter().filter_map(|r| condition_of_row(r)));
        }
        Ok(())
    }

    /// For a connection given up between commands (`session::mux`): the backend's conditions
    /// of the session's last statement (read when `read`), then its diagnostics area cleared
    /// by `clear`. None when either failed: nothing is sent to the client, which has no
    /// command in flight.
    pub(super) async fn conditions_to_carry(
        &mut self,
        read: bool,
        clear: &[u8],
    ) -> Option<Vec<Condition>> {
        let caps = self.client_caps;
        let be = self.backend.as_mut()?;
        let mut out = Vec::new();
        if read {
            let (packets, summary, _) =
                backend::query_packets(be, caps, b"SHOW WARNINGS", SHOW_MAX_BYTES)
                    .await
                    .ok()?;
            summary.error_code.is_none().then_some(())?;
            let range = backend::row_range(&packets, caps)?;
            out.extend(
                packets
                    .get(range)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|r| condition_of_row(r)),
            );
        }
        let (_, summary, _) = backend::query_packets(be, caps, clear, 4096).await.ok()?;
        summary.error_code.is_none().then_some(())?;
        if let Some(st) = summary.status {
            self.last_status = st & !status::MORE_RESULTS_EXISTS;
        }
        Some(out)
    }

    /// After a statement that was no diagnostics statement ran on the backend (its summary)
    /// while the proxy held `previous` conditions: they stay only if the backend kept its
    /// area (`keeps`: what the text's reading said), and nothing newer replaced them.
    pub(super) fn after_held(&mut self, previous: Held, keeps: bool, summary: Option<&Summary>) {
        if self.held.is_some() {
            return;
        }
        let raised = summary.is_none_or(|s| s.error_code.is_some() || s.warnings > 0);
        if keeps && !raised {
            self.held = Some(previous);
        }
    }

    /// The proxy's notes on the statement that just ran (`pending_notes`) join the backend's
    /// conditions of it; a statement that failed takes none (its error is the answer).
    pub(super) fn hold_notes(&mut self, summary: &Summary) {
        if self.pending_notes.is_empty() {
            return;
        }
        let notes = std::mem::take(&mut self.pending_notes);
        if summary.error_code.is_none() {
            let own = notes.iter().map(Condition::from).collect();
            self.held = Some(Held::annotated(own, summary.warnings));
        }
    }

    /// A result or OK the proxy made itself: the diagnostics area is its conditions
    /// (`pending_warnings`: HBase DDL's notes and the backend's warnings it kept), else empty,
    /// as after a database's own.
    pub(super) fn hold_own_answer(&mut self) {
        let own = std::mem::take(&mut self.pending_warnings)
            .iter()
            .map(Condition::from)
            .collect();
        self.held = Some(Held::alone(own));
    }

    /// An answer of the backend's the proxy passes on after statements of its own: an error is
    /// raised again (the backend's area must hold it, not the proxy's statements'), anything
    /// else sent as it is.
    pub(super) async fn answer_backend_packet(&mut self, packet: &[u8]) -> Result<(), End> {
        let seq = self.command_frames;
        if packet.first() == Some(&0xff) {
            return match error_of_packet(packet) {
                Some(e) => self.raise(seq, e).await,
                None => {
                    // a message in another character set: held as it is
                    let mut r = Reader::new(packet);
                    r.u8();
                    let code = r.u16().unwrap_or(0);
                    let message = packet.get(9..).unwrap_or_default().to_vec();
                    let state = packet
                        .get(4..9)
                        .and_then(|s| std::str::from_utf8(s).ok())
                        .unwrap_or("HY000");
                    self.held = Some(Held::alone(vec![Condition::new(
                        Level::Error,
                        code,
                        state,
                        message,
                    )]));
                    self.send_answer(seq, packet).await
                }
            };
        }
        self.hold_own_answer();
        self.send_answer(seq, packet).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_error_packets_are_read_back() {
        let e = ErrorInfo::new(1146, "42S02", "Table 'a.b' doesn't exist");
        assert_eq!(error_of_packet(&e.to_packet()), Some(e));
        let mut latin1 = ErrorInfo::new(1146, "42S02", "x").to_packet();
        latin1.push(0xe9);
        assert_eq!(error_of_packet(&latin1), None);
        assert_eq!(error_of_packet(&[0x00, 0, 0]), None);
    }

    #[test]
    fn show_warnings_rows_are_read_back() {
        let row = text_row(&[&b"Note"[..], b"1051", b"Unknown table 'x'"]);
        let c = condition_of_row(&row).unwrap();
        assert_eq!((c.level, c.code), (Level::Note, 1051));
        assert_eq!(c.message, b"Unknown table 'x'");
        assert_eq!(level_of_row(&row), Level::Note);
        assert_eq!(condition_of_row(&row[..3]), None);
    }
}
