//! Connections to the backend database.
//!
//! In the default mode a session's backend connection is opened by `connect` and logged in by
//! the client itself (the proxy relays the exchange). In proxy-auth mode the proxy logs in with
//! `login`, and `pool` keeps idle, reset connections for reuse.

pub mod lend;
pub mod own;
pub mod pool;

use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::protocol::auth::{native_scramble, sha2_scramble, CACHING_SHA2_PLUGIN, NATIVE_PLUGIN};
use crate::protocol::constants::{cap, com, ext, Caps};
use crate::protocol::handshake::{
    build_handshake_response, parse_auth_switch, parse_greeting, Greeting,
};
use crate::protocol::packets::{parse_ok, OkInfo};
use crate::protocol::response::{ResponseKind, ResponseTracker, Step, Summary};
use crate::protocol::stream::PacketStream;
use crate::protocol::wire::Reader;

pub use crate::net::BackendIo;

pub type BackendStream = PacketStream<BackendIo>;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("{0}")]
    Connect(String),
    #[error("backend I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("backend protocol error: {0}")]
    Protocol(&'static str),
    /// The backend answered with an ERR packet (kept whole, to relay as it is).
    #[error("backend refused: {}", String::from_utf8_lossy(.0.get(9..).unwrap_or(&[])))]
    Refused(Vec<u8>),
    #[error("{0}")]
    Unsupported(&'static str),
}

/// Opens a TCP connection (TCP_NODELAY: the protocol is request/response, latency matters).
pub async fn connect(addr: &str, timeout: Duration) -> Result<BackendStream, BackendError> {
    let tcp = match crate::timer::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(BackendError::Connect(e.to_string())),
        Err(_) => {
            return Err(BackendError::Connect(format!(
                "timed out after {} ms",
                timeout.as_millis()
            )))
        }
    };
    tcp.set_nodelay(true)?;
    Ok(PacketStream::new(BackendIo::Plain(tcp)))
}

/// Switches a backend connection to TLS after its greeting: an SSLRequest (sequence id 1, the
/// capabilities the login will carry, SSL included), then the TLS handshake. The login that
/// follows goes with sequence id 2.
pub async fn upgrade_tls(
    mut stream: BackendStream,
    tls: &crate::tls::BackendTls,
    caps: Caps,
    charset: u8,
    timeout: Duration,
) -> Result<BackendStream, BackendError> {
    let mut req = Vec::with_capacity(32);
    req.extend_from_slice(&(caps.base | cap::SSL).to_le_bytes());
    req.extend_from_slice(&(16u32 << 20).to_le_bytes());
    req.push(charset);
    req.extend_from_slice(&[0u8; 19]);
    // MariaDB reads the extended capabilities from the SSLRequest: they must be the login's
    let ext = if caps.base & cap::LONG_PASSWORD == 0 {
        caps.ext
    } else {
        0
    };
    req.extend_from_slice(&ext.to_le_bytes());
    stream.send_packet(1, &req).await?;
    if stream.buffered() > 0 {
        return Err(BackendError::Protocol(
            "backend sent data before the TLS handshake",
        ));
    }
    let BackendIo::Plain(tcp) = stream.into_inner() else {
        return Err(BackendError::Protocol("backend connection is already TLS"));
    };
    let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
    match crate::timer::timeout(timeout, handshake).await {
        Ok(Ok(s)) => Ok(PacketStream::new(BackendIo::Tls(Box::new(s)))),
        Ok(Err(e)) => Err(BackendError::Connect(format!(
            "TLS to the backend failed: {e}"
        ))),
        Err(_) => Err(BackendError::Connect(format!(
            "TLS to the backend: no handshake within {} ms",
            timeout.as_millis()
        ))),
    }
}

/// Reads the backend's greeting; an ERR in its place (too many connections, host blocked) is
/// returned as `Refused` so it can be relayed.
pub async fn read_greeting(
    stream: &mut BackendStream,
) -> Result<(Vec<u8>, Greeting), BackendError> {
    let mut raw = Vec::new();
    stream
        .read_frame_capped(&mut raw, crate::protocol::constants::MAX_LOGIN_PACKET)
        .await?;
    if raw.first() == Some(&0xff) {
        return Err(BackendError::Refused(raw));
    }
    let g = parse_greeting(&raw).ok_or(BackendError::Protocol("unparseable greeting"))?;
    Ok((raw, g))
}

/// `read_greeting`, for a backend that must greet within `wait` (a frozen backend is reported,
/// not waited for).
pub async fn read_greeting_within(
    stream: &mut BackendStream,
    wait: Duration,
) -> Result<(Vec<u8>, Greeting), BackendError> {
    match crate::timer::timeout(wait, read_greeting(stream)).await {
        Ok(r) => r,
        Err(_) => Err(BackendError::Connect(format!(
            "connected, but no greeting within {} ms",
            wait.as_millis()
        ))),
    }
}

/// A backend connection the proxy logged in itself (proxy-auth mode).
pub struct LoggedIn {
    pub stream: BackendStream,
    pub greeting: Greeting,
    /// Capabilities in force on this connection (what the proxy sent).
    pub caps: Caps,
    /// The session state right after login (`SESSION_FINGERPRINT`): a pooled connection is
    /// reused only when its reset state equals it.
    pub fingerprint: Vec<Row>,
}

/// What a reset must restore and COM_RESET_CONNECTION alone does not guarantee (it keeps the
/// current database, and servers differ on the character set): compared after every reset.
pub const SESSION_FINGERPRINT: &str = "SELECT DATABASE(), @@character_set_client, \
     @@character_set_connection, @@character_set_results, @@collation_connection, \
     @@autocommit, @@sql_mode, @@time_zone";

/// The session fingerprint of a logged-in connection.
pub async fn fingerprint(stream: &mut BackendStream, caps: Caps) -> Result<Vec<Row>, BackendError> {
    match query(stream, caps, SESSION_FINGERPRINT.as_bytes()).await {
        Ok((QueryResult::Rows(r), _)) => Ok(r),
        Ok((QueryResult::Err(e), _)) => Err(BackendError::Refused(e)),
        Ok(_) => Err(BackendError::Protocol("no session fingerprint")),
        Err(QueryError::Io(e)) => Err(BackendError::Io(e)),
        Err(QueryError::Framing(w)) => Err(BackendError::Protocol(w)),
    }
}

/// What a session keeps about its proxy-made login, to give the connection back to the pool.
#[derive(Debug, Clone)]
pub struct PooledLogin {
    pub spec: LoginSpec,
    pub greeting: Greeting,
    pub fingerprint: Vec<Row>,
}

impl PooledLogin {
    /// The connection again, to give back to the pool.
    pub fn with_stream(self, stream: BackendStream, caps: Caps) -> (LoginSpec, LoggedIn) {
        let conn = LoggedIn {
            stream,
            greeting: self.greeting,
            caps,
            fingerprint: self.fingerprint,
        };
        (self.spec, conn)
    }
}

impl LoggedIn {
    /// Splits into the stream and what the pool needs later.
    pub fn into_parts(self, spec: LoginSpec) -> (BackendStream, PooledLogin, Caps) {
        (
            self.stream,
            PooledLogin {
                spec,
                greeting: self.greeting,
                fingerprint: self.fingerprint,
            },
            self.caps,
        )
    }
}

/// Credentials and session shape of a proxy-made backend login.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoginSpec {
    pub user: String,
    pub password: String,
    pub caps: u32,
    /// MariaDB extended capabilities the client agreed to (0 elsewhere).
    pub ext_caps: u32,
    pub charset: u8,
    pub database: Option<Vec<u8>>,
}

pub async fn login(
    addr: &str,
    timeout: Duration,
    spec: &LoginSpec,
    tls: Option<&crate::tls::BackendTls>,
) -> Result<LoggedIn, BackendError> {
    let mut stream = connect(addr, timeout).await?;
    let (_, greeting) = read_greeting_within(&mut stream, timeout).await?;
    // compression as the client agreed to it, when this backend offers it too
    let caps = spec.caps & greeting.capabilities & !(cap::SSL | cap::CONNECT_ATTRS);
    let ext_caps = spec.ext_caps & greeting.ext_capabilities & ext::PROXY_SUPPORTED;
    // the proxy's own logins carry its credentials: TLS whenever the mode allows and it is offered
    let use_tls = match tls {
        Some(t) => {
            crate::tls::BackendTls::wanted(t.mode, true, greeting.capabilities & cap::SSL != 0)
                .map_err(BackendError::Unsupported)?
        }
        None => false,
    };
    let (mut stream, login_seq, sent_caps) = match tls.filter(|_| use_tls) {
        Some(t) => (
            upgrade_tls(stream, t, Caps::new(caps, ext_caps), spec.charset, timeout).await?,
            2,
            caps | cap::SSL,
        ),
        None => (stream, 1, caps),
    };
    let plugin: &[u8] = if greeting.auth_plugin == CACHING_SHA2_PLUGIN {
        CACHING_SHA2_PLUGIN
    } else {
        NATIVE_PLUGIN
    };
    let auth = answer_for(plugin, spec.password.as_bytes(), &greeting.scramble);
    let resp = build_handshake_response(
        (sent_caps, ext_caps),
        spec.charset,
        spec.user.as_bytes(),
        &auth,
        spec.database.as_deref(),
        plugin,
    );
    stream.send_packet(login_seq, &resp).await?;
    let auth = finish_auth(&mut stream, spec.password.as_bytes(), &greeting.scramble);
    match crate::timer::timeout(timeout, auth).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(BackendError::Connect(format!(
                "no answer to the login within {} ms",
                timeout.as_millis()
            )))
        }
    }
    if caps & cap::COMPRESS != 0 {
        stream.enable_compression(false);
    }
    let caps = Caps::new(caps, ext_caps);
    let fingerprint = match crate::timer::timeout(timeout, fingerprint(&mut stream, caps)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(BackendError::Protocol(
                "no answer to the session fingerprint",
            ))
        }
    };
    Ok(LoggedIn {
        stream,
        greeting,
        caps,
        fingerprint,
    })
}

fn answer_for(plugin: &[u8], password: &[u8], salt: &[u8]) -> Vec<u8> {
    if plugin == CACHING_SHA2_PLUGIN {
        sha2_scramble(password, salt)
    } else {
        native_scramble(password, salt)
    }
}

/// Client side of the rest of an auth exchange: auth switches and caching_sha2's fast path.
async fn finish_auth(
    stream: &mut BackendStream,
    password: &[u8],
    salt: &[u8],
) -> Result<(), BackendError> {
    let mut p = Vec::new();
    loop {
        let h = stream.read_frame_into(&mut p).await?;
        let seq = h.seq.wrapping_add(1);
        match p.first() {
            Some(0x00) => return Ok(()),
            Some(0xff) => return Err(BackendError::Refused(p)),
            Some(0xfe) => {
                let (plugin, new_salt) = parse_auth_switch(&p).ok_or(BackendError::Protocol("bad auth switch"))?;
                if plugin != NATIVE_PLUGIN && plugin != CACHING_SHA2_PLUGIN {
                    return Err(BackendError::Unsupported("backend asked for an auth plugin other than mysql_native_password or caching_sha2_password"));
                }
                let salt_used = if new_salt.is_empty() { salt.to_vec() } else { new_salt };
                stream.send_packet(seq, &answer_for(&plugin, password, &salt_used)).await?;
            }
            Some(0x01) if p.get(1) == Some(&0x03) => continue, // fast auth succeeded, OK follows
            Some(0x01) if p.get(1) == Some(&0x04) => {
                return Err(BackendError::Unsupported(
                    "backend requires caching_sha2_password full authentication (RSA key exchange) for the pooled login; use a mysql_native_password account for auth.users.backend_user",
                ))
            }
            _ => return Err(BackendError::Protocol("unexpected packet during login")),
        }
    }
}

/// Leaves a pooled connection exactly as a fresh login for `database` would: COM_RESET_CONNECTION
/// (rolls back, releases locks, drops temporary tables, user variables and prepared statements,
/// resets session variables), then the login's database again (the reset keeps whatever the
/// last user chose with USE), then a check that the session state equals `fresh`, the state
/// right after login. Any difference is an error: the connection must not be reused.
pub async fn reset_to(
    stream: &mut BackendStream,
    caps: Caps,
    database: Option<&[u8]>,
    fresh: &[Row],
) -> Result<(), BackendError> {
    reset(stream).await?;
    if let Some(db) = database {
        init_db(stream, db).await?;
    }
    let now = fingerprint(stream, caps).await?;
    if now != fresh {
        return Err(BackendError::Protocol(
            "session state after reset differs from a fresh login",
        ));
    }
    Ok(())
}

/// COM_RESET_CONNECTION alone.
pub async fn reset(stream: &mut BackendStream) -> Result<(), BackendError> {
    stream.send_command(&[com::RESET_CONNECTION]).await?;
    let mut p = Vec::new();
    stream.read_frame_into(&mut p).await?;
    match p.first() {
        Some(0x00) => Ok(()),
        Some(0xff) => Err(BackendError::Refused(p)),
        _ => Err(BackendError::Protocol(
            "unexpected answer to COM_RESET_CONNECTION",
        )),
    }
}

/// Selects a database on a logged-in connection (COM_INIT_DB).
pub async fn init_db(stream: &mut BackendStream, db: &[u8]) -> Result<(), BackendError> {
    let mut cmd = Vec::with_capacity(db.len() + 1);
    cmd.push(com::INIT_DB);
    cmd.extend_from_slice(db);
    stream.send_command(&cmd).await?;
    let mut p = Vec::new();
    stream.read_frame_into(&mut p).await?;
    match p.first() {
        Some(0x00) => Ok(()),
        Some(0xff) => Err(BackendError::Refused(p)),
        _ => Err(BackendError::Protocol("unexpected answer to COM_INIT_DB")),
    }
}

/// COM_SET_OPTION: multiple statements a text on (`on`) or off for the connection. The
/// backend answers with an EOF packet (an OK packet headed 0xFE with CLIENT_DEPRECATE_EOF) or
/// an ERR packet.
pub async fn set_option(stream: &mut BackendStream, on: bool) -> Result<(), BackendError> {
    let option: u16 = if on { 0 } else { 1 };
    let [lo, hi] = option.to_le_bytes();
    stream.send_command(&[com::SET_OPTION, lo, hi]).await?;
    let mut p = Vec::new();
    stream.read_frame_into(&mut p).await?;
    match p.first() {
        Some(0x00 | 0xfe) => Ok(()),
        Some(0xff) => Err(BackendError::Refused(p)),
        _ => Err(BackendError::Protocol(
            "unexpected answer to COM_SET_OPTION",
        )),
    }
}

/// A text row of a result the proxy reads itself; NULL is None.
pub type Row = Vec<Option<Vec<u8>>>;

/// The answer to a statement the proxy runs itself.
#[derive(Debug)]
pub enum QueryResult {
    Ok(OkInfo),
    Rows(Vec<Row>),
    /// The backend's ERR packet, whole (to relay as it is).
    Err(Vec<u8>),
}

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("backend connection failed: {0}")]
    Io(#[from] io::Error),
    #[error("unexpected backend answer: {0}")]
    Framing(&'static str),
}

/// Runs one statement on `stream` (whose session negotiated `caps`) and reads the whole answer;
/// also returns the final server status.
pub async fn query(
    stream: &mut BackendStream,
    caps: Caps,
    sql: &[u8],
) -> Result<(QueryResult, Option<u16>), QueryError> {
    let mut cmd = Vec::with_capacity(sql.len() + 1);
    cmd.push(com::QUERY);
    cmd.extend_from_slice(sql);
    let (packets, summary) = command(stream, caps, &cmd, ResponseKind::Query).await?;
    let first = packets.first().cloned().unwrap_or_default();
    let result = match first.first() {
        Some(0xff) => QueryResult::Err(first),
        Some(0x00) => QueryResult::Ok(parse_ok(&first).unwrap_or_default()),
        _ => QueryResult::Rows(decode_rows(&packets, caps)),
    };
    Ok((result, summary.status))
}

/// Prepares a statement of the proxy's own on `stream`: its (id, columns, parameters), or the
/// backend's ERR packet.
pub async fn prepare(
    stream: &mut BackendStream,
    caps: Caps,
    sql: &[u8],
) -> Result<Result<(u32, u16, u16), Vec<u8>>, QueryError> {
    let mut cmd = Vec::with_capacity(sql.len() + 1);
    cmd.push(com::STMT_PREPARE);
    cmd.extend_from_slice(sql);
    let (mut packets, summary) = command(stream, caps, &cmd, ResponseKind::Prepare).await?;
    match summary.prepared {
        Some(p) => Ok(Ok(p)),
        None => Ok(Err(packets.drain(..).next().unwrap_or_default())),
    }
}

/// A command of the proxy's own that has a response (`kind`) and no response the client
/// sees: `COM_STMT_RESET` of a statement the proxy prepared.
pub async fn simple_command(
    stream: &mut BackendStream,
    caps: Caps,
    cmd: &[u8],
) -> Result<Summary, QueryError> {
    command(stream, caps, cmd, ResponseKind::Single)
        .await
        .map(|(_, s)| s)
}

/// A statement of the proxy's own whose whole answer is wanted as packets, the rows kept up to
/// `max_bytes` (those after are read and dropped: `true` in the answer when some were). The
/// packets are the backend's, in order; the last one ends the response.
pub async fn query_packets(
    stream: &mut BackendStream,
    caps: Caps,
    sql: &[u8],
    max_bytes: usize,
) -> Result<(Vec<Vec<u8>>, Summary, bool), QueryError> {
    let mut cmd = Vec::with_capacity(sql.len() + 1);
    cmd.push(com::QUERY);
    cmd.extend_from_slice(sql);
    command_capped(stream, caps, &cmd, ResponseKind::Query, max_bytes).await
}

/// Where a text result set's rows are among its packets (after the column count, the column
/// definitions and, without DEPRECATE_EOF, their EOF; before the last packet). None for an
/// answer that is not a result set.
pub fn row_range(packets: &[Vec<u8>], caps: Caps) -> Option<std::ops::Range<usize>> {
    let first = packets.first()?;
    if matches!(first.first(), Some(0x00 | 0xff | 0xfb)) {
        return None;
    }
    let mut header = Reader::new(first);
    let ncols = header.lenenc_int()?;
    let definitions = !caps.has_ext(ext::CACHE_METADATA) || header.u8() != Some(0);
    let ncols = usize::try_from(ncols).ok().filter(|n| *n < packets.len())?;
    let start =
        1 + if definitions { ncols } else { 0 } + usize::from(!caps.has(cap::DEPRECATE_EOF));
    let end = packets.len().checked_sub(1)?;
    (start <= end).then_some(start..end)
}

/// Sends one command and reads its whole response (a few packets: the proxy's own statements).
async fn command(
    stream: &mut BackendStream,
    caps: Caps,
    cmd: &[u8],
    kind: ResponseKind,
) -> Result<(Vec<Vec<u8>>, Summary), QueryError> {
    command_capped(stream, caps, cmd, kind, usize::MAX)
        .await
        .map(|(p, s, _)| (p, s))
}

/// `command`, keeping at most `max_bytes` of packets before the last (see `query_packets`).
async fn command_capped(
    stream: &mut BackendStream,
    caps: Caps,
    cmd: &[u8],
    kind: ResponseKind,
    max_bytes: usize,
) -> Result<(Vec<Vec<u8>>, Summary, bool), QueryError> {
    stream.queue_command(cmd);
    stream.flush().await?;
    let mut tracker = ResponseTracker::with_caps(kind, caps);
    let mut packets: Vec<Vec<u8>> = Vec::new();
    let mut kept = 0usize;
    let mut dropped = false;
    loop {
        let h = stream.read_header().await?;
        let payload = stream.read_payload(h.len).await?;
        let step = tracker
            .feed(payload.len(), payload)
            .map_err(|e| QueryError::Framing(e.0))?;
        kept = kept.saturating_add(payload.len());
        if kept > max_bytes && step == Step::More {
            dropped = true;
        } else {
            packets.push(payload.to_vec());
        }
        match step {
            Step::More => {}
            Step::Done => break,
            Step::LocalInfile => {
                return Err(QueryError::Framing(
                    "LOCAL INFILE request for a proxy statement",
                ))
            }
        }
    }
    Ok((packets, tracker.summary, dropped))
}

/// Text rows of a result set.
pub fn decode_rows(packets: &[Vec<u8>], caps: Caps) -> Vec<Row> {
    let deprecate_eof = caps.has(cap::DEPRECATE_EOF);
    let Some(first) = packets.first() else {
        return Vec::new();
    };
    let mut header = Reader::new(first);
    let Some(ncols) = header.lenenc_int() else {
        return Vec::new();
    };
    // MariaDB's metadata-follows byte: 0 = no column definitions
    let definitions = !caps.has_ext(ext::CACHE_METADATA) || header.u8() != Some(0);
    // each column has a definition packet: a count above the packets is not to be believed
    // (and must not size an allocation)
    let Some(ncols) = usize::try_from(ncols).ok().filter(|n| *n < packets.len()) else {
        return Vec::new();
    };
    let skip = 1 + if definitions { ncols } else { 0 } + usize::from(!deprecate_eof);
    let mut rows = Vec::new();
    for p in packets.iter().skip(skip) {
        if p.first() == Some(&0xfe) && p.len() < 0xff_ffff {
            break;
        }
        let mut r = Reader::new(p);
        let mut row = Vec::with_capacity(ncols);
        for _ in 0..ncols {
            if r.remaining().first() == Some(&0xfb) {
                r.u8();
                row.push(None);
            } else {
                row.push(r.lenenc_bytes().map(<[u8]>::to_vec));
            }
        }
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_count_beyond_the_packets_allocates_nothing() {
        // found by fuzzing: 0xfe + 8 bytes claims 2^64 - 1 columns
        let first = vec![0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(decode_rows(&[first, vec![0xfe, 0, 0, 2, 0]], Caps::classic(0)).is_empty());
        // an honest one-column result still decodes
        let rows = decode_rows(
            &[
                vec![1],
                vec![3],
                vec![0xfe, 0, 0, 2, 0],
                vec![1, b'x'],
                vec![0xfe, 0, 0, 2, 0],
            ],
            Caps::classic(0),
        );
        assert_eq!(rows, vec![vec![Some(b"x".to_vec())]]);
        // MariaDB metadata caching, metadata not sent: rows right after the count
        let caps = Caps::new(cap::DEPRECATE_EOF, ext::CACHE_METADATA);
        let ok_eof = vec![0xfe, 0, 0, 2, 0, 0, 0];
        let rows = decode_rows(&[vec![1, 0], vec![1, b'y'], ok_eof], caps);
        assert_eq!(rows, vec![vec![Some(b"y".to_vec())]]);
    }
}
