//! Builders for the few packets the proxy writes itself (errors, OK, EOF, small result sets)
//! and parsers for the status packets it must understand.

use super::constants::er;
use super::constants::{cap, ext, Caps, CHARSET_UTF8MB4_GENERAL_CI, MYSQL_TYPE_VAR_STRING};
use super::wire::{put_lenenc_bytes, put_lenenc_int, Reader};

/// An error the proxy itself reports to a client, with a MySQL error code and SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorInfo {
    pub code: u16,
    pub sqlstate: [u8; 5],
    pub message: String,
}

impl ErrorInfo {
    pub fn new(code: u16, sqlstate: &str, message: impl Into<String>) -> Self {
        let mut state = *b"HY000";
        if sqlstate.len() == 5 {
            state.copy_from_slice(sqlstate.as_bytes());
        }
        ErrorInfo {
            code,
            sqlstate: state,
            message: message.into(),
        }
    }

    /// Backend could not be reached (client-library code 2003, as a MySQL client would report).
    pub fn backend_unreachable(addr: &str, reason: &str) -> Self {
        Self::new(
            er::CR_CONN_HOST_ERROR,
            "HY000",
            format!("obkv-proxy: can't connect to backend MySQL server on '{addr}' ({reason})"),
        )
    }

    /// Backend connection lost while a command was in flight (2013-style).
    pub fn backend_lost(addr: &str) -> Self {
        Self::new(
            er::CR_SERVER_LOST,
            "HY000",
            format!("obkv-proxy: lost connection to backend MySQL server on '{addr}' during query"),
        )
    }

    pub fn unknown_command(cmd: u8) -> Self {
        Self::new(
            er::UNKNOWN_COM_ERROR,
            "08S01",
            format!("Unknown command (0x{cmd:02x} is not supported by obkv-proxy)"),
        )
    }

    pub fn packet_too_large(limit: usize) -> Self {
        Self::new(
            er::NET_PACKET_TOO_LARGE,
            "08S01",
            format!(
                "Got a packet bigger than 'max_allowed_packet' bytes (obkv-proxy limit {limit})"
            ),
        )
    }

    /// The proxy failed on its side (never the client's or the backend's fault).
    pub fn internal(what: &str) -> Self {
        Self::new(
            er::UNKNOWN_ERROR,
            "HY000",
            format!("obkv-proxy: internal error {what}"),
        )
    }

    pub fn net_read_timeout() -> Self {
        Self::new(
            er::NET_READ_INTERRUPTED,
            "08S01",
            "Got timeout reading communication packets",
        )
    }

    pub fn out_of_order() -> Self {
        Self::new(
            er::NET_PACKETS_OUT_OF_ORDER,
            "08S01",
            "Got packets out of order",
        )
    }

    pub fn bad_handshake() -> Self {
        Self::new(er::HANDSHAKE_ERROR, "08S01", "Bad handshake")
    }

    pub fn too_many_connections() -> Self {
        Self::new(er::CON_COUNT_ERROR, "08004", "Too many connections")
    }

    pub fn access_denied(user: &[u8], host: &str, with_password: bool) -> Self {
        Self::new(
            er::ACCESS_DENIED_ERROR,
            "28000",
            format!(
                "Access denied for user '{}'@'{}' (using password: {})",
                String::from_utf8_lossy(user),
                host,
                if with_password { "YES" } else { "NO" }
            ),
        )
    }

    pub fn malformed_backend_packet(what: &str) -> Self {
        Self::new(
            er::CR_MALFORMED_PACKET,
            "HY000",
            format!("obkv-proxy: malformed packet from backend ({what})"),
        )
    }

    pub fn unsupported_in_prepared() -> Self {
        Self::new(
            er::UNSUPPORTED_PS,
            "HY000",
            "This command is not supported in the prepared statement protocol yet",
        )
    }

    pub fn to_packet(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(9 + self.message.len());
        p.push(0xff);
        p.extend_from_slice(&self.code.to_le_bytes());
        p.push(b'#');
        p.extend_from_slice(&self.sqlstate);
        p.extend_from_slice(self.message.as_bytes());
        p
    }
}

pub fn ok_packet(affected: u64, last_insert_id: u64, status: u16, warnings: u16) -> Vec<u8> {
    let mut p = vec![0x00];
    put_lenenc_int(&mut p, affected);
    put_lenenc_int(&mut p, last_insert_id);
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&warnings.to_le_bytes());
    p
}

/// The packet that ends a result set: a classic EOF, or an OK packet with the 0xFE header when
/// the client negotiated DEPRECATE_EOF.
pub fn end_of_rows_packet(deprecate_eof: bool, status: u16, warnings: u16) -> Vec<u8> {
    if deprecate_eof {
        let mut p = ok_packet(0, 0, status, warnings);
        p[0] = 0xfe;
        p
    } else {
        let mut p = vec![0xfe];
        p.extend_from_slice(&warnings.to_le_bytes());
        p.extend_from_slice(&status.to_le_bytes());
        p
    }
}

/// Status fields of an OK packet (header 0x00 or 0xFE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OkInfo {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

pub fn parse_ok(p: &[u8]) -> Option<OkInfo> {
    let mut r = Reader::new(p);
    let h = r.u8()?;
    if h != 0x00 && h != 0xfe {
        return None;
    }
    let affected_rows = r.lenenc_int()?;
    let last_insert_id = r.lenenc_int()?;
    let status = r.u16()?;
    let warnings = r.u16().unwrap_or(0);
    Some(OkInfo {
        affected_rows,
        last_insert_id,
        status,
        warnings,
    })
}

/// What the session-state information of OK packets reported (CLIENT_SESSION_TRACK): the
/// system variables and the current database the statement changed, in order. Bounded: a
/// report beyond what is kept, or one that cannot be read, leaves `unknown` set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reports {
    /// (lower-case name, value as the server wrote it); a name reported again replaces its
    /// value.
    pub vars: Vec<(Vec<u8>, Vec<u8>)>,
    /// The current database named by the last report of it (empty: none).
    pub schema: Option<Vec<u8>>,
    /// Something changed that is not kept here (too many, too long, unreadable).
    pub unknown: bool,
}

impl Reports {
    /// A variable reported (again: its last value), or `unknown` beyond the limit.
    pub fn note(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let full = self.vars.len() >= MAX_REPORTED_VARS;
        match self.vars.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v = value,
            None if full => self.unknown = true,
            None => self.vars.push((name, value)),
        }
    }

    /// A later response's reports on top of these.
    pub fn merge(&mut self, later: Reports) {
        self.unknown |= later.unknown;
        if later.schema.is_some() {
            self.schema = later.schema;
        }
        for (name, value) in later.vars {
            self.note(name, value);
        }
    }
}

/// Most variables a command's reports keep.
pub const MAX_REPORTED_VARS: usize = 64;
/// Longest name and value kept.
pub const MAX_REPORTED_NAME: usize = 64;
pub const MAX_REPORTED_VALUE: usize = 1024;

/// Session-state entry types (MySQL and MariaDB alike).
const TRACK_SYSTEM_VARIABLES: u8 = 0;
const TRACK_SCHEMA: u8 = 1;

/// Adds what an OK packet (header 0x00 or 0xFE) of a connection with CLIENT_SESSION_TRACK
/// reports to `into`. A packet without SERVER_SESSION_STATE_CHANGED adds nothing; one whose
/// report cannot be read sets `unknown`. Linear in the packet, allocation bounded by the limits
/// above.
pub fn read_reports(p: &[u8], into: &mut Reports) {
    let mut r = Reader::new(p);
    let head = (|| {
        let h = r.u8()?;
        if h != 0x00 && h != 0xfe {
            return None;
        }
        r.lenenc_int()?;
        r.lenenc_int()?;
        let st = r.u16()?;
        r.u16()?;
        Some(st)
    })();
    let Some(st) = head else { return };
    if st & super::constants::status::SESSION_STATE_CHANGED == 0 {
        return;
    }
    let state = (|| {
        r.lenenc_bytes()?; // the info string
        r.lenenc_bytes()
    })();
    let Some(state) = state else {
        into.unknown = true;
        return;
    };
    let mut entries = Reader::new(state);
    while !entries.is_empty() {
        let (Some(kind), Some(data)) = (entries.u8(), entries.lenenc_bytes()) else {
            into.unknown = true;
            return;
        };
        let mut d = Reader::new(data);
        match kind {
            TRACK_SYSTEM_VARIABLES => {
                while !d.is_empty() {
                    let (Some(name), Some(value)) = (d.lenenc_bytes(), d.lenenc_bytes()) else {
                        into.unknown = true;
                        return;
                    };
                    if name.len() > MAX_REPORTED_NAME || value.len() > MAX_REPORTED_VALUE {
                        into.unknown = true;
                        continue;
                    }
                    into.note(name.to_ascii_lowercase(), value.to_vec());
                }
            }
            TRACK_SCHEMA => match d.lenenc_bytes() {
                Some(db) if db.len() <= MAX_REPORTED_VALUE => into.schema = Some(db.to_vec()),
                _ => into.unknown = true,
            },
            // state changed (a flag), GTIDs, transaction state and characteristics: the
            // status flags and the proxy's own reading say what it needs of them
            _ => {}
        }
    }
}

/// (warnings, status) of a classic EOF packet.
pub fn parse_eof(p: &[u8]) -> Option<(u16, u16)> {
    let mut r = Reader::new(p);
    if r.u8()? != 0xfe {
        return None;
    }
    let warnings = r.u16()?;
    let status = r.u16()?;
    Some((warnings, status))
}

/// Error code of an ERR packet.
pub fn parse_err_code(p: &[u8]) -> Option<u16> {
    let mut r = Reader::new(p);
    if r.u8()? != 0xff {
        return None;
    }
    r.u16()
}

/// A text-protocol result set built by the proxy (for locally answered statements): every
/// column is a utf8mb4 string.
/// A text result set the proxy answers itself, framed as the connection negotiated: classic EOF
/// or DEPRECATE_EOF, and MariaDB's extended formats (the metadata-follows byte with
/// CACHE_METADATA, an empty extended-type block per column with EXTENDED_METADATA).
pub fn text_result_set<T: AsRef<[u8]>>(
    columns: &[&str],
    rows: &[Vec<Option<T>>],
    caps: Caps,
    status: u16,
) -> Vec<Vec<u8>> {
    let deprecate_eof = caps.has(cap::DEPRECATE_EOF);
    let mut packets = Vec::with_capacity(columns.len() + rows.len() + 3);
    let mut count = Vec::new();
    put_lenenc_int(&mut count, columns.len() as u64);
    if caps.has_ext(ext::CACHE_METADATA) {
        count.push(1); // the column definitions follow
    }
    packets.push(count);
    for name in columns {
        let mut c = Vec::with_capacity(32 + name.len());
        put_lenenc_bytes(&mut c, b"def");
        put_lenenc_bytes(&mut c, b""); // schema
        put_lenenc_bytes(&mut c, b""); // table
        put_lenenc_bytes(&mut c, b""); // org_table
        put_lenenc_bytes(&mut c, name.as_bytes());
        put_lenenc_bytes(&mut c, name.as_bytes());
        if caps.has_ext(ext::EXTENDED_METADATA) {
            put_lenenc_bytes(&mut c, b""); // no extended type information
        }
        c.push(0x0c);
        c.extend_from_slice(&u16::from(CHARSET_UTF8MB4_GENERAL_CI).to_le_bytes());
        c.extend_from_slice(&(1024u32 * 4).to_le_bytes());
        c.push(MYSQL_TYPE_VAR_STRING);
        c.extend_from_slice(&0u16.to_le_bytes()); // flags
        c.push(0); // decimals
        c.extend_from_slice(&[0, 0]);
        packets.push(c);
    }
    if !deprecate_eof {
        packets.push(end_of_rows_packet(false, status, 0));
    }
    for row in rows {
        let mut r = Vec::new();
        for v in row {
            match v {
                Some(s) => put_lenenc_bytes(&mut r, s.as_ref()),
                None => r.push(0xfb),
            }
        }
        packets.push(r);
    }
    packets.push(end_of_rows_packet(deprecate_eof, status, 0));
    packets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn err_packet_layout() {
        let p = ErrorInfo::new(1047, "08S01", "Unknown command").to_packet();
        assert_eq!(
            &p[..9],
            &[0xff, 0x17, 0x04, b'#', b'0', b'8', b'S', b'0', b'1']
        );
        assert_eq!(&p[9..], b"Unknown command");
        assert_eq!(parse_err_code(&p), Some(1047));
    }

    #[test]
    fn ok_and_eof_round_trip() {
        let p = ok_packet(300, 7, 0x0022, 3);
        assert_eq!(
            parse_ok(&p),
            Some(OkInfo {
                affected_rows: 300,
                last_insert_id: 7,
                status: 0x22,
                warnings: 3
            })
        );
        let e = end_of_rows_packet(false, 0x0002, 5);
        assert_eq!(parse_eof(&e), Some((5, 2)));
        let o = end_of_rows_packet(true, 0x000a, 1);
        assert_eq!(o[0], 0xfe);
        assert_eq!(
            parse_ok(&o).map(|i| (i.status, i.warnings)),
            Some((0x0a, 1))
        );
    }

    #[test]
    fn bad_sqlstate_falls_back_to_hy000() {
        assert_eq!(&ErrorInfo::new(1, "X", "m").sqlstate, b"HY000");
    }

    fn reports_of(p: &[u8]) -> Reports {
        let mut r = Reports::default();
        read_reports(p, &mut r);
        r
    }

    #[test]
    fn session_state_reports_read_as_both_backends_send_them() {
        // MariaDB 10.11, SET NAMES utf8mb4 (three entries), then USE (the schema)
        let names = b"\x00\x00\x00\x02\x40\x00\x00\x00\x62\x00\x21\x18character_set_connection\x07utf8mb4\x00\x1d\x14character_set_client\x07utf8mb4\x00\x1e\x15character_set_results\x07utf8mb4";
        let r = reports_of(names);
        assert_eq!(r.vars.len(), 3);
        assert_eq!(
            r.vars[1],
            (b"character_set_client".to_vec(), b"utf8mb4".to_vec())
        );
        assert!(!r.unknown && r.schema.is_none());
        let mut r = reports_of(b"\x00\x00\x00\x02\x40\x00\x00\x00\x0b\x01\x09\x08probe_st");
        assert_eq!(r.schema.as_deref(), Some(&b"probe_st"[..]));
        // seekdb, the end-of-rows OK form (0xFE) after a multi-statement text: two variables
        // (the second empty), a state-change flag
        read_reports(b"\xfe\x00\x00\x22\x40\x00\x00\x00\x23\x00\x11\x09time_zone\x06+01:00\x00\x0a\x08sql_mode\x00\x02\x02\x011", &mut r);
        assert_eq!(
            r.vars,
            vec![
                (b"time_zone".to_vec(), b"+01:00".to_vec()),
                (b"sql_mode".to_vec(), Vec::new())
            ]
        );
        assert_eq!(
            r.schema.as_deref(),
            Some(&b"probe_st"[..]),
            "kept across packets"
        );
        // a name again replaces its value (and is read in lower case)
        read_reports(
            b"\x00\x00\x00\x02\x40\x00\x00\x00\x13\x00\x11\x09TIME_ZONE\x06+02:00",
            &mut r,
        );
        assert_eq!(r.vars[0].1, b"+02:00");
        assert_eq!(r.vars.len(), 2);
        assert!(!r.unknown);
    }

    #[test]
    fn reports_without_the_flag_or_cut_short_say_so() {
        // no SESSION_STATE_CHANGED: nothing read, nothing unknown
        let r = reports_of(b"\x00\x00\x00\x02\x00\x00\x00\x00\x13\x00\x11\x09time_zone\x06+01:00");
        assert_eq!(r, Reports::default());
        // flagged, cut inside an entry: unknown
        let r = reports_of(b"\x00\x00\x00\x02\x40\x00\x00\x00\x13\x00\x11\x09time_zone\x06+0");
        assert!(r.unknown);
        let r = reports_of(b"\x00\x00\x00\x02\x40\x00\x00\x00");
        assert!(r.unknown);
        // more variables than kept: the rest is unknown, the kept ones stay
        let mut p = b"\x00\x00\x00\x02\x40\x00\x00\x00".to_vec();
        let mut state = Vec::new();
        for i in 0..=MAX_REPORTED_VARS {
            let mut data = Vec::new();
            put_lenenc_bytes(&mut data, format!("v{i}").as_bytes());
            put_lenenc_bytes(&mut data, b"1");
            state.push(0);
            put_lenenc_bytes(&mut state, &data);
        }
        put_lenenc_bytes(&mut p, &state);
        let r = reports_of(&p);
        assert_eq!(r.vars.len(), MAX_REPORTED_VARS);
        assert!(r.unknown);
        // a value longer than kept
        let mut data = Vec::new();
        put_lenenc_bytes(&mut data, b"sql_mode");
        put_lenenc_bytes(&mut data, &vec![b'A'; MAX_REPORTED_VALUE + 1]);
        let mut state = vec![0];
        put_lenenc_bytes(&mut state, &data);
        let mut p = b"\x00\x00\x00\x02\x40\x00\x00\x00".to_vec();
        put_lenenc_bytes(&mut p, &state);
        let r = reports_of(&p);
        assert!(r.unknown && r.vars.is_empty());
    }
}
