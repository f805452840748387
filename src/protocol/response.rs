//! Where a backend response ends.
//!
//! The proxy relays response packets without decoding rows; it only needs to know when the
//! response to a command is complete, and the few status fields that matter (transaction state,
//! errors, prepared-statement ids). `ResponseTracker` is that knowledge as a pure state machine:
//! the session feeds it each packet (the whole payload when `needs_whole_packet` says so, else
//! just the first bytes) and it answers whether more packets follow.

use super::constants::MAX_FRAME;
use super::constants::{cap, ext, status, Caps};
use super::packets::{parse_eof, parse_err_code, parse_ok};
use super::wire::Reader;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// COM_QUERY: OK, ERR, LOCAL INFILE request, or text result sets (possibly several).
    Query,
    /// COM_STMT_EXECUTE: OK, ERR, or binary result sets; with a cursor, metadata only.
    Execute,
    /// COM_STMT_PREPARE: prepare-OK with parameter and column definitions, or ERR.
    Prepare,
    /// COM_FIELD_LIST: column definitions ending in EOF, or ERR.
    FieldList,
    /// COM_STMT_FETCH: rows ending in EOF, or ERR.
    Fetch,
    /// One packet: OK, ERR, EOF, or COM_STATISTICS' string.
    Single,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More packets of this response follow.
    More,
    /// The response is complete.
    Done,
    /// The backend asks for a local file: relay client packets up to an empty one, then go on.
    LocalInfile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    First,
    Columns(u64),
    ColumnsEof,
    Rows,
    PrepareParams(u16),
    PrepareParamsEof,
    PrepareColumns(u16),
    PrepareColumnsEof,
    UntilEof,
    Finished,
}

/// What the proxy learned from a complete response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Server status flags of the last status-bearing packet.
    pub status: Option<u16>,
    pub error_code: Option<u16>,
    pub warnings: u16,
    pub affected_rows: u64,
    /// The last nonzero AUTO_INCREMENT value an OK packet of the response reported (0: none).
    pub last_insert_id: u64,
    pub result_sets: u32,
    pub rows: u64,
    /// COM_STMT_PREPARE: (statement id, columns, parameters).
    pub prepared: Option<(u32, u16, u16)>,
    /// OK packets that reported session-state changes (CLIENT_SESSION_TRACK): the relay reads
    /// each as it passes (`packets::read_reports`), seeing this count move.
    pub state_changes: u16,
}

#[derive(Debug)]
pub struct ResponseTracker {
    kind: ResponseKind,
    deprecate_eof: bool,
    /// MariaDB progress reports (ERR 0xFFFF) may come before the answer.
    progress: bool,
    /// MariaDB's metadata-follows byte after a column count.
    cache_metadata: bool,
    /// CLIENT_SESSION_TRACK: OK packets may report session-state changes.
    track: bool,
    state: State,
    pub summary: Summary,
}

/// The error code MariaDB uses for a progress report.
const PROGRESS_REPORT: u16 = 0xffff;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected backend packet: {0}")]
pub struct FramingError(pub &'static str);

impl ResponseTracker {
    /// A tracker for a connection with only classic capabilities.
    pub fn new(kind: ResponseKind, client_caps: u32) -> Self {
        Self::with_caps(kind, Caps::classic(client_caps))
    }

    /// A tracker for the capabilities in force, MariaDB's extended ones included.
    pub fn with_caps(kind: ResponseKind, caps: Caps) -> Self {
        let state = match kind {
            ResponseKind::FieldList | ResponseKind::Fetch => State::UntilEof,
            _ => State::First,
        };
        ResponseTracker {
            kind,
            deprecate_eof: caps.has(cap::DEPRECATE_EOF),
            progress: caps.has_ext(ext::PROGRESS),
            cache_metadata: caps.has_ext(ext::CACHE_METADATA),
            track: caps.has(cap::SESSION_TRACK),
            state,
            summary: Summary::default(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Finished
    }

    /// After a packet: whether it ended one result (or a progress report) and the response goes
    /// on with another, where a server ends a compressed frame.
    pub fn between_results(&self) -> bool {
        self.state == State::First
    }

    /// Whether `feed` needs the whole payload of a packet that starts with `first` and has
    /// `len` bytes. Rows and column definitions are never needed whole, so they can be streamed.
    pub fn needs_whole_packet(&self, first: Option<u8>, len: usize) -> bool {
        match self.state {
            State::First
            | State::ColumnsEof
            | State::PrepareParamsEof
            | State::PrepareColumnsEof => true,
            State::Rows | State::UntilEof => is_terminator(first, len) || first == Some(0xff),
            _ => false,
        }
    }

    /// Feeds one packet. `payload` is the whole payload if `needs_whole_packet` said so, else at
    /// least its first byte (when `len > 0`).
    pub fn feed(&mut self, len: usize, payload: &[u8]) -> Result<Step, FramingError> {
        let first = payload.first().copied();
        match self.state {
            State::Finished => Err(FramingError("packet after end of response")),
            State::First => self.first_packet(payload),
            State::Columns(n) => {
                self.state = if n > 1 {
                    State::Columns(n - 1)
                } else if self.deprecate_eof {
                    State::Rows
                } else {
                    State::ColumnsEof
                };
                Ok(Step::More)
            }
            State::ColumnsEof => {
                let (_, st) =
                    parse_eof(payload).ok_or(FramingError("expected EOF after columns"))?;
                self.summary.status = Some(st);
                if self.kind == ResponseKind::Execute && st & status::CURSOR_EXISTS != 0 {
                    return Ok(self.finish());
                }
                self.state = State::Rows;
                Ok(Step::More)
            }
            State::Rows => {
                if first == Some(0xff) {
                    self.summary.error_code = parse_err_code(payload);
                    return Ok(self.finish());
                }
                if is_terminator(first, len) {
                    let st = self.terminator_status(payload)?;
                    if st & status::MORE_RESULTS_EXISTS != 0 {
                        self.state = State::First;
                        return Ok(Step::More);
                    }
                    return Ok(self.finish());
                }
                self.summary.rows += 1;
                Ok(Step::More)
            }
            State::UntilEof => {
                if first == Some(0xff) {
                    self.summary.error_code = parse_err_code(payload);
                    return Ok(self.finish());
                }
                if is_terminator(first, len) {
                    self.terminator_status(payload)?;
                    return Ok(self.finish());
                }
                self.summary.rows += 1;
                Ok(Step::More)
            }
            State::PrepareParams(n) => {
                self.state = if n > 1 {
                    State::PrepareParams(n - 1)
                } else if self.deprecate_eof {
                    self.after_prepare_params()
                } else {
                    State::PrepareParamsEof
                };
                Ok(self.step_or_finish())
            }
            State::PrepareParamsEof => {
                parse_eof(payload).ok_or(FramingError("expected EOF after parameters"))?;
                self.state = self.after_prepare_params();
                Ok(self.step_or_finish())
            }
            State::PrepareColumns(n) => {
                self.state = if n > 1 {
                    State::PrepareColumns(n - 1)
                } else if self.deprecate_eof {
                    State::Finished
                } else {
                    State::PrepareColumnsEof
                };
                Ok(self.step_or_finish())
            }
            State::PrepareColumnsEof => {
                parse_eof(payload).ok_or(FramingError("expected EOF after prepared columns"))?;
                Ok(self.finish())
            }
        }
    }

    /// The packets that open `frames` (framed bytes, header first) which the tracker needs no
    /// look inside: a result's column definitions (as many as are still to come) and its rows,
    /// up to the first packet that is not a row (an ERR, a terminator), that is a frame of
    /// 16 MiB - 1 or that is not whole in `frames`. They are counted as `feed` counts them.
    /// Returns the bytes they take and the last one's sequence id; nothing outside those
    /// states. The bulk relay takes a buffer of them in one loop over their headers instead of
    /// a call to `feed` a packet.
    #[inline]
    pub fn take_bulk(&mut self, frames: &[u8]) -> (usize, Option<u8>) {
        let (mut at, mut seq) = (0usize, None);
        if let State::Columns(n) = self.state {
            let mut left = n;
            while left > 0 {
                let Some((end, s, _)) = whole_frame(frames, at) else {
                    break;
                };
                left -= 1;
                seq = Some(s);
                at = end;
            }
            self.state = match (left, self.deprecate_eof) {
                (0, true) => State::Rows,
                (0, false) => State::ColumnsEof,
                _ => State::Columns(left),
            };
        }
        if !matches!(self.state, State::Rows | State::UntilEof) {
            return (at, seq);
        }
        let mut rows = 0u64;
        // (an empty packet is a row to `feed` too)
        while let Some((end, s, first)) = whole_frame(frames, at) {
            if matches!(first, Some(0xfe | 0xff)) {
                break;
            }
            rows += 1;
            seq = Some(s);
            at = end;
        }
        self.summary.rows += rows;
        (at, seq)
    }

    fn first_packet(&mut self, payload: &[u8]) -> Result<Step, FramingError> {
        let first = *payload
            .first()
            .ok_or(FramingError("empty response packet"))?;
        if first == 0xff && self.progress && parse_err_code(payload) == Some(PROGRESS_REPORT) {
            // a progress report: the answer is still to come
            return Ok(Step::More);
        }
        if self.kind == ResponseKind::Single {
            match first {
                0x00 => self.take_ok(payload),
                0xff => self.summary.error_code = parse_err_code(payload),
                0xfe => {
                    if let Some((w, st)) = parse_eof(payload) {
                        self.summary.warnings = w;
                        self.summary.status = Some(st);
                    }
                }
                _ => {} // COM_STATISTICS answers with a bare string
            }
            return Ok(self.finish());
        }
        match first {
            0xff => {
                self.summary.error_code = parse_err_code(payload);
                Ok(self.finish())
            }
            0x00 if self.kind == ResponseKind::Prepare => {
                let mut r = Reader::new(payload);
                r.u8();
                let (Some(id), Some(cols), Some(params)) = (r.u32(), r.u16(), r.u16()) else {
                    return Err(FramingError("short prepare OK"));
                };
                r.u8();
                self.summary.warnings = r.u16().unwrap_or(0);
                self.summary.prepared = Some((id, cols, params));
                self.state = State::PrepareParams(params);
                if params == 0 {
                    self.state = self.after_prepare_params();
                }
                Ok(self.step_or_finish())
            }
            0x00 => {
                self.take_ok(payload);
                let st = self.summary.status.unwrap_or(0);
                if st & status::MORE_RESULTS_EXISTS != 0 {
                    Ok(Step::More)
                } else {
                    Ok(self.finish())
                }
            }
            0xfb if self.kind == ResponseKind::Query => Ok(Step::LocalInfile),
            _ if self.kind == ResponseKind::Prepare => Err(FramingError("bad prepare response")),
            _ => {
                let mut r = Reader::new(payload);
                let n = r
                    .lenenc_int()
                    .filter(|&n| n > 0)
                    .ok_or(FramingError("bad column count"))?;
                self.summary.result_sets += 1;
                // MariaDB with metadata caching: 0 = the column definitions are not sent
                let metadata_follows = !self.cache_metadata || r.u8() != Some(0);
                self.state = match (metadata_follows, self.deprecate_eof) {
                    (true, _) => State::Columns(n),
                    (false, true) => State::Rows,
                    (false, false) => State::ColumnsEof,
                };
                Ok(Step::More)
            }
        }
    }

    fn after_prepare_params(&self) -> State {
        match self.summary.prepared {
            Some((_, cols, _)) if cols > 0 => State::PrepareColumns(cols),
            _ => State::Finished,
        }
    }

    fn step_or_finish(&self) -> Step {
        if self.state == State::Finished {
            Step::Done
        } else {
            Step::More
        }
    }

    fn take_ok(&mut self, payload: &[u8]) {
        if let Some(ok) = parse_ok(payload) {
            self.count_reports(ok.status);
            self.summary.status = Some(ok.status);
            self.summary.warnings = ok.warnings;
            self.summary.affected_rows = ok.affected_rows;
            if ok.last_insert_id != 0 {
                self.summary.last_insert_id = ok.last_insert_id;
            }
        }
    }

    fn terminator_status(&mut self, payload: &[u8]) -> Result<u16, FramingError> {
        let (warnings, st) = if self.deprecate_eof {
            let ok = parse_ok(payload).ok_or(FramingError("bad end-of-rows OK"))?;
            self.count_reports(ok.status);
            (ok.warnings, ok.status)
        } else {
            parse_eof(payload).ok_or(FramingError("bad EOF"))?
        };
        self.summary.warnings = warnings;
        self.summary.status = Some(st);
        Ok(st)
    }

    /// An OK packet that reports session-state changes is counted.
    #[inline]
    fn count_reports(&mut self, status: u16) {
        if status & status::SESSION_STATE_CHANGED != 0 && self.track {
            self.summary.state_changes = self.summary.state_changes.saturating_add(1);
        }
    }

    fn finish(&mut self) -> Step {
        self.state = State::Finished;
        Step::Done
    }
}

/// The frame at `at` in `frames` when it is there whole and shorter than 16 MiB - 1: where it
/// ends, its sequence id and its payload's first byte (None when empty).
#[inline]
fn whole_frame(frames: &[u8], at: usize) -> Option<(usize, u8, Option<u8>)> {
    let &[l0, l1, l2, seq] = frames.get(at..at + 4)? else {
        return None;
    };
    let len = super::wire::u24(l0, l1, l2);
    let end = at + 4 + len;
    if len >= MAX_FRAME || end > frames.len() {
        return None;
    }
    let first = if len > 0 {
        frames.get(at + 4).copied()
    } else {
        None
    };
    Some((end, seq, first))
}

/// An EOF or end-of-rows OK packet starts with 0xFE and is shorter than a full frame; a row that
/// starts with 0xFE (an 8-byte length prefix) is always a full 16 MiB frame.
fn is_terminator(first: Option<u8>, len: usize) -> bool {
    first == Some(0xfe) && len < MAX_FRAME
}

/// The last packet of a response (OK, or EOF / the OK-format terminator of a result set) with
/// SERVER_MORE_RESULTS_EXISTS set: what the backend itself sends before the next result of a
/// multi-statement text. The proxy sets it when it ends a text early and answers the rest with
/// an error. None when the packet is not such a status packet.
pub fn with_more_results(payload: &[u8], deprecate_eof: bool) -> Option<Vec<u8>> {
    let at = match payload.first()? {
        0x00 => ok_status_offset(payload)?,
        0xFE if deprecate_eof => ok_status_offset(payload)?,
        0xFE if payload.len() >= 5 => 3, // EOF: header, warnings (2), status (2)
        _ => return None,
    };
    let bytes = payload.get(at..at + 2)?;
    let st = u16::from_le_bytes([bytes[0], bytes[1]]) | status::MORE_RESULTS_EXISTS;
    let mut out = payload.to_vec();
    out.get_mut(at..at + 2)?.copy_from_slice(&st.to_le_bytes());
    Some(out)
}

/// A relayed packet with `extra` added to its warning count (saturating at u16::MAX): the
/// proxy's own warnings and notes about the statement, which the next SHOW WARNINGS lists with
/// the backend's, counted where a client reads the count. `prepare_ok`: the packet is the first
/// of a COM_STMT_PREPARE response (statement id, columns, parameters, filler, warnings); else it
/// is the last status packet of a response: an OK (header 0x00, or 0xFE under DEPRECATE_EOF:
/// affected rows, last insert id, status, warnings) or a classic EOF (warnings, status). These
/// layouts are the CLIENT_PROTOCOL_41 ones; the caller edits nothing without it. None when the
/// packet is none of these (it is relayed as it is); every other byte stays as it was.
pub fn with_warnings_added(
    payload: &[u8],
    extra: u16,
    prepare_ok: bool,
    deprecate_eof: bool,
) -> Option<Vec<u8>> {
    let at = match payload.first()? {
        0x00 if prepare_ok => 10,
        _ if prepare_ok => return None,
        0x00 => ok_status_offset(payload)? + 2,
        0xFE if deprecate_eof => ok_status_offset(payload)? + 2,
        0xFE if payload.len() >= 5 => 1,
        _ => return None,
    };
    let bytes = payload.get(at..at + 2)?;
    let warnings = u16::from_le_bytes([bytes[0], bytes[1]]).saturating_add(extra);
    let mut out = payload.to_vec();
    out.get_mut(at..at + 2)?
        .copy_from_slice(&warnings.to_le_bytes());
    Some(out)
}

/// Where an OK packet's status flags are: after the header, affected rows and last insert id.
fn ok_status_offset(payload: &[u8]) -> Option<usize> {
    let mut r = Reader::new(payload);
    r.u8()?;
    r.lenenc_int()?;
    r.lenenc_int()?;
    (r.remaining().len() >= 2).then(|| r.pos())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::packets::{end_of_rows_packet, ok_packet, text_result_set, ErrorInfo};

    /// MariaDB's extended capabilities are meaningful only with CLIENT_MYSQL (bit 0) clear.
    fn maria(base: u32, ext: u32) -> Caps {
        Caps::new(base & !cap::LONG_PASSWORD, ext)
    }

    #[test]
    fn local_result_sets_follow_the_negotiated_mariadb_format() {
        let caps = maria(
            cap::DEPRECATE_EOF,
            ext::CACHE_METADATA | ext::EXTENDED_METADATA,
        );
        let packets = text_result_set(&["a"], &[vec![Some("1".to_string())]], caps, 2);
        assert_eq!(packets[0], vec![1, 1], "column count, metadata follows");
        // def, schema, table, org_table, name, org_name, then the empty extended block
        assert_eq!(&packets[1][..13], b"\x03def\x00\x00\x00\x01a\x01a\x00\x0c");
        let mut t = ResponseTracker::with_caps(ResponseKind::Query, caps);
        let steps = run(&mut t, &packets);
        assert_eq!(steps.last(), Some(&Step::Done));
        assert_eq!(t.summary.rows, 1);
    }

    /// `packets` framed, numbered from `seq`.
    fn framed(packets: &[&[u8]], seq: u8) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in packets.iter().enumerate() {
            let l = p.len();
            out.extend_from_slice(&[l as u8, (l >> 8) as u8, (l >> 16) as u8, seq + i as u8]);
            out.extend_from_slice(p);
        }
        out
    }

    #[test]
    fn columns_and_rows_are_taken_in_bulk_up_to_the_first_packet_that_is_not_one() {
        let mut t = ResponseTracker::with_caps(ResponseKind::Query, Caps::classic(0));
        // before the columns nothing is taken
        assert_eq!(t.take_bulk(&framed(&[b"\x01a"], 1)), (0, None));
        t.feed(1, &[2]).expect("column count");
        // two column definitions, of which one is here whole; then the second and the EOF
        let cols = framed(&[b"\x03def", b"\x03def"], 2);
        assert_eq!(t.take_bulk(&cols[..cols.len() - 1]), (8, Some(2)));
        assert_eq!(t.take_bulk(&cols[8..]), (8, Some(3)));
        assert_eq!(t.take_bulk(&framed(&[b"\xfe\0\0\x02\0"], 4)), (0, None));
        t.feed(5, b"\xfe\0\0\x02\0").expect("EOF");
        // two rows (one of them empty), the EOF, another row
        let frames = framed(&[b"\x01a", b"", b"\xfe\0\0\x02\0", b"\x01b"], 4);
        assert_eq!(t.take_bulk(&frames), (10, Some(5)));
        assert_eq!(t.summary.rows, 2);
        assert!(!t.is_done(), "the terminator is left to feed");
        // an ERR stops it, and so does a packet not all there
        assert_eq!(t.take_bulk(&framed(&[b"\xff\x15\x04"], 6)), (0, None));
        let cut = framed(&[b"\x01c", b"\x02de"], 6);
        assert_eq!(t.take_bulk(&cut[..cut.len() - 1]), (6, Some(6)));
        // a frame of 16 MiB - 1 is streamed, never taken
        assert_eq!(t.take_bulk(&[0xff, 0xff, 0xff, 7, 1]), (0, None));
        assert_eq!(t.summary.rows, 3);
    }

    #[test]
    fn progress_reports_are_not_the_answer() {
        let mut progress = vec![0xff, 0xff, 0xff, 1, 2, 0x10, 0x27, 0];
        progress.extend_from_slice(&[4, b'c', b'o', b'p', b'y']);
        let ok = ok_packet(0, 0, 2, 0);
        let mut t = ResponseTracker::with_caps(ResponseKind::Query, maria(0, ext::PROGRESS));
        assert_eq!(t.feed(progress.len(), &progress), Ok(Step::More));
        assert_eq!(t.feed(progress.len(), &progress), Ok(Step::More));
        assert_eq!(t.feed(ok.len(), &ok), Ok(Step::Done));
        assert_eq!(t.summary.error_code, None);
        // without the capability such a packet is an error that ends the response
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        assert_eq!(t.feed(progress.len(), &progress), Ok(Step::Done));
    }

    #[test]
    fn cached_metadata_skips_the_column_definitions() {
        let eof = end_of_rows_packet(true, 2, 0);
        let caps = maria(cap::DEPRECATE_EOF, ext::CACHE_METADATA);
        // two columns, metadata not sent: rows follow at once
        let mut t = ResponseTracker::with_caps(ResponseKind::Execute, caps);
        assert_eq!(t.feed(2, &[2, 0]), Ok(Step::More));
        assert_eq!(t.feed(3, &[0, 0, 1]), Ok(Step::More));
        assert_eq!(t.feed(eof.len(), &eof), Ok(Step::Done));
        assert_eq!(t.summary.rows, 1);
        // metadata sent: two column definitions first
        let mut t = ResponseTracker::with_caps(ResponseKind::Execute, caps);
        assert_eq!(t.feed(2, &[2, 1]), Ok(Step::More));
        assert!(!t.needs_whole_packet(Some(3), 20));
        assert_eq!(t.feed(20, &[3]), Ok(Step::More));
        assert_eq!(t.feed(20, &[3]), Ok(Step::More));
        assert_eq!(t.feed(eof.len(), &eof), Ok(Step::Done));
        assert_eq!(t.summary.rows, 0);
        // classic EOF style: the EOF after the (absent) definitions still comes
        let classic_eof = end_of_rows_packet(false, 2, 0);
        let mut t =
            ResponseTracker::with_caps(ResponseKind::Execute, maria(0, ext::CACHE_METADATA));
        assert_eq!(t.feed(2, &[1, 0]), Ok(Step::More));
        assert!(t.needs_whole_packet(Some(0xfe), 5));
        assert_eq!(t.feed(5, &classic_eof), Ok(Step::More));
        assert_eq!(t.feed(classic_eof.len(), &classic_eof), Ok(Step::Done));
    }

    fn run(t: &mut ResponseTracker, packets: &[Vec<u8>]) -> Vec<Step> {
        packets
            .iter()
            .map(|p| t.feed(p.len(), p).expect("valid"))
            .collect()
    }

    #[test]
    fn ok_ends_a_query() {
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        assert_eq!(run(&mut t, &[ok_packet(1, 0, 2, 0)]), vec![Step::Done]);
        assert_eq!(t.summary.affected_rows, 1);
    }

    #[test]
    fn result_set_in_both_eof_styles() {
        for deprecate in [false, true] {
            let rows = vec![
                vec![Some("1".to_string()), None],
                vec![Some("2".into()), Some("x".into())],
            ];
            let caps = Caps::classic(if deprecate { cap::DEPRECATE_EOF } else { 0 });
            let packets = text_result_set(&["a", "b"], &rows, caps, 2);
            let mut t = ResponseTracker::with_caps(ResponseKind::Query, caps);
            let steps = run(&mut t, &packets);
            assert_eq!(steps.last(), Some(&Step::Done));
            assert!(steps[..steps.len() - 1].iter().all(|s| *s == Step::More));
            assert_eq!(t.summary.rows, 2);
            assert!(t.is_done());
        }
    }

    #[test]
    fn multi_results_continue_until_last() {
        let more = status::MORE_RESULTS_EXISTS | 2;
        let mut packets =
            text_result_set(&["a"], &[vec![Some("1".to_string())]], Caps::classic(0), 2);
        let last = packets.len() - 1;
        packets[last] = end_of_rows_packet(false, more, 0);
        packets.push(ok_packet(1, 0, more, 0));
        packets.push(ok_packet(0, 0, 2, 0));
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        let steps = run(&mut t, &packets);
        assert_eq!(steps.iter().filter(|s| **s == Step::Done).count(), 1);
        assert_eq!(steps.last(), Some(&Step::Done));
    }

    #[test]
    fn error_mid_rows_ends_response() {
        let mut packets =
            text_result_set(&["a"], &[vec![Some("1".to_string())]], Caps::classic(0), 2);
        packets.pop();
        packets.push(ErrorInfo::new(1317, "70100", "interrupted").to_packet());
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        assert_eq!(run(&mut t, &packets).last(), Some(&Step::Done));
        assert_eq!(t.summary.error_code, Some(1317));
    }

    #[test]
    fn big_row_starting_with_fe_is_not_a_terminator() {
        let mut t = ResponseTracker::new(ResponseKind::Query, cap::DEPRECATE_EOF);
        t.feed(1, &[1]).unwrap();
        t.feed(10, &[3, b'd']).unwrap();
        assert!(!t.needs_whole_packet(Some(0xfe), MAX_FRAME));
        assert_eq!(t.feed(MAX_FRAME, &[0xfe]).unwrap(), Step::More);
        assert!(t.needs_whole_packet(Some(0xfe), 7));
    }

    #[test]
    fn prepare_with_params_and_columns() {
        for deprecate in [false, true] {
            let caps = if deprecate { cap::DEPRECATE_EOF } else { 0 };
            let mut head = vec![0u8];
            head.extend_from_slice(&7u32.to_le_bytes());
            head.extend_from_slice(&1u16.to_le_bytes()); // columns
            head.extend_from_slice(&2u16.to_le_bytes()); // params
            head.extend_from_slice(&[0, 0, 0]);
            let mut packets = vec![head, vec![3], vec![3]];
            if !deprecate {
                packets.push(end_of_rows_packet(false, 2, 0));
            }
            packets.push(vec![3]);
            if !deprecate {
                packets.push(end_of_rows_packet(false, 2, 0));
            }
            let mut t = ResponseTracker::new(ResponseKind::Prepare, caps);
            let steps = run(&mut t, &packets);
            assert_eq!(steps.last(), Some(&Step::Done));
            assert_eq!(steps.iter().filter(|s| **s == Step::Done).count(), 1);
            assert_eq!(t.summary.prepared, Some((7, 1, 2)));
        }
    }

    #[test]
    fn prepare_without_params_or_columns_is_one_packet() {
        let mut head = vec![0u8];
        head.extend_from_slice(&9u32.to_le_bytes());
        head.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
        let mut t = ResponseTracker::new(ResponseKind::Prepare, 0);
        assert_eq!(t.feed(head.len(), &head).unwrap(), Step::Done);
    }

    #[test]
    fn cursor_execute_ends_after_metadata() {
        let mut t = ResponseTracker::new(ResponseKind::Execute, 0);
        t.feed(1, &[1]).unwrap();
        t.feed(5, &[3]).unwrap();
        let eof = end_of_rows_packet(false, status::CURSOR_EXISTS | 2, 0);
        assert_eq!(t.feed(eof.len(), &eof).unwrap(), Step::Done);
    }

    #[test]
    fn local_infile_request_is_reported() {
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        assert_eq!(t.feed(5, &[0xfb, b'/', b'x']).unwrap(), Step::LocalInfile);
        let ok = ok_packet(3, 0, 2, 0);
        assert_eq!(t.feed(ok.len(), &ok).unwrap(), Step::Done);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        assert!(t.feed(0, &[]).is_err());
        let mut t = ResponseTracker::new(ResponseKind::Query, 0);
        t.feed(1, &[1]).unwrap();
        t.feed(1, &[3]).unwrap();
        assert!(t.feed(2, &[0x00, 0x01]).is_err()); // not an EOF where one is due
    }

    #[test]
    fn more_results_is_set_in_the_last_status() {
        // OK: affected 1, insert id 0, status AUTOCOMMIT, 0 warnings
        let ok = [0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00];
        let out = with_more_results(&ok, false).expect("an OK");
        assert_eq!(out, [0x00, 0x01, 0x00, 0x0A, 0x00, 0x00, 0x00]);
        // EOF: warnings 0, status AUTOCOMMIT
        let eof = [0xFE, 0x00, 0x00, 0x02, 0x00];
        assert_eq!(
            with_more_results(&eof, false).unwrap(),
            [0xFE, 0x00, 0x00, 0x0A, 0x00]
        );
        // the OK-format terminator when EOF is deprecated
        let term = [0xFE, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00];
        assert_eq!(
            with_more_results(&term, true).unwrap(),
            [0xFE, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00]
        );
        // an error, or a truncated packet: nothing
        assert!(with_more_results(&[0xFF, 0x10, 0x04], false).is_none());
        assert!(with_more_results(&[0x00, 0x01], false).is_none());
    }

    #[test]
    fn the_proxys_warnings_are_added_to_the_count() {
        let add =
            |p: &[u8], n: u16, deprecate_eof: bool| with_warnings_added(p, n, false, deprecate_eof);
        // OK with 3-byte affected rows (0xFC 0x10 0x27 = 10000), insert id 7, status
        // AUTOCOMMIT, 1 warning, then the info string: only the warning count changes
        let info = b"Records: 2  Duplicates: 0  Warnings: 1";
        let mut ok = ok_packet(10_000, 7, 2, 1);
        ok.extend_from_slice(info);
        let out = add(&ok, 2, false).expect("an OK");
        let parsed = parse_ok(&out).expect("still an OK");
        assert_eq!(
            (parsed.affected_rows, parsed.last_insert_id, parsed.status),
            (10_000, 7, 2)
        );
        assert_eq!(parsed.warnings, 3);
        assert_eq!(out.len(), ok.len());
        let at = ok.len() - info.len() - 2;
        assert_eq!(out[..at], ok[..at]);
        assert_eq!(out[at + 2..], ok[at + 2..]);
        // the classic EOF (warnings before status) and the OK-format terminator
        assert_eq!(
            add(&end_of_rows_packet(false, 0x22, 0), 1, false).unwrap(),
            end_of_rows_packet(false, 0x22, 1)
        );
        assert_eq!(
            add(&end_of_rows_packet(true, 0x22, 4), 1, true).unwrap(),
            end_of_rows_packet(true, 0x22, 5)
        );
        // saturating
        assert_eq!(
            parse_ok(&add(&ok_packet(1, 0, 2, 65_000), 1_000, false).unwrap())
                .unwrap()
                .warnings,
            u16::MAX
        );
        // a prepare OK: id 1, 2 columns, 1 parameter, filler, 0 warnings
        let prepare = [0x00, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0];
        assert_eq!(
            with_warnings_added(&prepare, 2, true, false).unwrap(),
            [0x00, 1, 0, 0, 0, 2, 0, 1, 0, 0, 2, 0]
        );
        // nothing to count in: an error, a row, a packet too short for the field
        assert!(add(&ErrorInfo::new(1064, "42000", "x").to_packet(), 1, false).is_none());
        assert!(add(&[0x03, b'a', b'b', b'c'], 1, false).is_none());
        assert!(add(&[0x00, 0x01, 0x00, 0x02, 0x00], 1, false).is_none());
        assert!(add(&[0xFE, 0x00, 0x00], 1, false).is_none());
        assert!(with_warnings_added(&prepare[..10], 1, true, false).is_none());
        assert!(with_warnings_added(&[0xFF, 0x10, 0x04], 1, true, false).is_none());
    }
}
