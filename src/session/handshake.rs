//! Establishing a session: the connection phase in both auth modes, TLS upgrade, and
//! COM_CHANGE_USER.
//!
//! Default mode ("backend"): the proxy connects to the backend first and relays its greeting
//! (salt and version string included) with the capability flags narrowed to what the proxy can
//! relay, then relays the client's answer and every auth round (auth switch, caching_sha2 data)
//! until the backend says OK or ERR. The backend's accounts and grants apply unchanged.
//!
//! Proxy mode: the proxy sends its own greeting with a fresh random salt, checks the client
//! against `auth.users`, and attaches a backend connection logged in as the mapped user, taken
//! from the pool when one with the same session shape is idle.

use std::io;
use std::sync::Arc;

use crate::net::{ClientSock, Peer};
use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::{debug, info, warn};

use super::Session;
use crate::admin::bump;
use crate::backend::{self, BackendError, BackendStream, LoginSpec};
use crate::config::AuthMode;
use crate::net::ClientIo;
use crate::protocol::auth::NATIVE_PLUGIN;
use crate::protocol::constants::MAX_LOGIN_PACKET;
use crate::protocol::constants::{cap, er, ext, Caps, MAX_FRAME};
use crate::protocol::handshake::{
    build_auth_switch, build_greeting, is_ssl_request, parse_handshake_response,
    set_greeting_capabilities, set_response_capabilities, HandshakeResponse,
};
use crate::protocol::packets::{ok_packet, ErrorInfo};
use crate::protocol::stream::PacketStream;
use crate::shared::Shared;
use crate::tls::BackendTls;

/// Why a session was not established (already reported to the client where possible).
#[derive(Debug)]
pub enum HandshakeFailure {
    Io(io::Error),
    Rejected(&'static str),
}

impl From<io::Error> for HandshakeFailure {
    fn from(e: io::Error) -> Self {
        HandshakeFailure::Io(e)
    }
}

pub async fn establish(
    tcp: ClientSock,
    peer: Peer,
    shared: Arc<Shared>,
) -> Result<Session, HandshakeFailure> {
    match shared.config().auth.mode {
        AuthMode::Backend => establish_relayed(tcp, peer, shared).await,
        AuthMode::Proxy => establish_proxy_auth(tcp, peer, shared).await,
    }
}

/// Capability flags the proxy advertises: the backend's, narrowed to what can be relayed (and
/// without compression when the configuration turns it off), plus TLS when the proxy has a
/// certificate (TLS ends at the proxy).
pub fn advertised_caps(backend_caps: u32, tls: bool, compression: bool) -> u32 {
    let mut c = backend_caps & cap::PROXY_SUPPORTED;
    if !compression {
        c &= !cap::COMPRESS;
    }
    if tls {
        c | cap::SSL
    } else {
        c
    }
}

async fn write_raw_packet(tcp: &mut ClientSock, seq: u8, payload: &[u8]) -> io::Result<()> {
    let mut frame = Vec::with_capacity(payload.len() + 4);
    let n = payload.len().min(MAX_FRAME) as u32;
    frame.extend_from_slice(&[n as u8, (n >> 8) as u8, (n >> 16) as u8, seq]);
    frame.extend_from_slice(&payload[..n as usize]);
    tcp.write_all(&frame).await?;
    tcp.flush().await
}

/// Reads one packet straight from the socket, without read-ahead: after an SSLRequest the next
/// bytes belong to the TLS handshake.
async fn read_raw_packet(tcp: &mut ClientSock) -> Result<(u8, Vec<u8>), HandshakeFailure> {
    let mut h = [0u8; 4];
    tcp.read_exact(&mut h).await?;
    let len = crate::protocol::wire::u24(h[0], h[1], h[2]);
    if len > MAX_LOGIN_PACKET {
        let err = ErrorInfo::packet_too_large(MAX_LOGIN_PACKET).to_packet();
        let _ = write_raw_packet(tcp, h[3].wrapping_add(1), &err).await;
        return Err(HandshakeFailure::Rejected("login packet too large"));
    }
    // grows with the bytes that arrive, not with what the header promises
    let mut p = Vec::new();
    (&mut *tcp).take(len as u64).read_to_end(&mut p).await?;
    if p.len() < len {
        return Err(HandshakeFailure::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    Ok((h[3], p))
}

/// Reads the client's login request, upgrading to TLS first when it asks. Returns the client
/// stream, the raw HandshakeResponse41 and its sequence id.
async fn read_login_request(
    mut tcp: ClientSock,
    shared: &Shared,
    advertised: u32,
) -> Result<(PacketStream<ClientIo>, Vec<u8>, u8), HandshakeFailure> {
    let (seq, first) = read_raw_packet(&mut tcp).await?;
    if !is_ssl_request(&first) {
        return Ok((PacketStream::new(ClientIo::Plain(tcp)), first, seq));
    }
    let Some(acceptor) = shared.tls().filter(|_| advertised & cap::SSL != 0) else {
        let _ = write_raw_packet(
            &mut tcp,
            seq.wrapping_add(1),
            &ErrorInfo::bad_handshake().to_packet(),
        )
        .await;
        return Err(HandshakeFailure::Rejected(
            "SSLRequest without TLS configured",
        ));
    };
    let tls = acceptor.accept(tcp).await?;
    let mut client = PacketStream::new(ClientIo::Tls(Box::new(tls)));
    let mut p = Vec::new();
    let h = client.read_frame_capped(&mut p, MAX_LOGIN_PACKET).await?;
    Ok((client, p, h.seq))
}

/// Sends the greeting and reads the client's login (through TLS when it asks). Returns the
/// client stream, the raw and the parsed login, and the login's sequence id.
async fn greet_and_read_login(
    mut tcp: ClientSock,
    shared: &Shared,
    greeting: &[u8],
    advertised: u32,
) -> Result<(PacketStream<ClientIo>, Vec<u8>, HandshakeResponse, u8), HandshakeFailure> {
    write_raw_packet(&mut tcp, 0, greeting).await?;
    let (mut client, raw, seq) = read_login_request(tcp, shared, advertised).await?;
    match parse_handshake_response(&raw) {
        Some(response) => Ok((client, raw, response, seq)),
        None => {
            bump(&shared.stats.client_protocol_errors);
            let err = ErrorInfo::bad_handshake();
            Err(reject(&mut client, seq.wrapping_add(1), err, "unparseable login").await)
        }
    }
}

async fn reject(
    client: &mut PacketStream<ClientIo>,
    seq: u8,
    err: ErrorInfo,
    why: &'static str,
) -> HandshakeFailure {
    let _ = client.send_packet(seq, &err.to_packet()).await;
    client.shutdown().await;
    HandshakeFailure::Rejected(why)
}

async fn establish_relayed(
    mut tcp: ClientSock,
    peer: Peer,
    shared: Arc<Shared>,
) -> Result<Session, HandshakeFailure> {
    let addr = shared.config().backend.address.clone();
    let mut backend = match backend::connect(&addr, shared.config().connect_timeout()).await {
        Ok(b) => b,
        Err(e) => return Err(report_backend_down(&mut tcp, &shared, &addr, &e).await),
    };
    let wait = shared.config().connect_timeout();
    let (mut greeting_raw, greeting) = match backend::read_greeting_within(&mut backend, wait).await
    {
        Ok(g) => g,
        Err(BackendError::Refused(err)) => {
            // e.g. "Too many connections" from the backend: relay it as the first packet
            let _ = write_raw_packet(&mut tcp, 0, &err).await;
            return Err(HandshakeFailure::Rejected("backend refused the connection"));
        }
        Err(e) => return Err(report_backend_down(&mut tcp, &shared, &addr, &e).await),
    };
    let advertised = advertised_caps(
        greeting.capabilities,
        shared.tls().is_some(),
        shared.config().proxy.compression,
    );
    let advertised_ext = greeting.ext_capabilities & ext::PROXY_SUPPORTED;
    set_greeting_capabilities(&mut greeting_raw, &greeting, advertised, advertised_ext);
    let (mut client, mut response_raw, response, seq) =
        greet_and_read_login(tcp, &shared, &greeting_raw, advertised).await?;
    let client_caps = response.capabilities & advertised & !cap::SSL;
    let client_ext = response.ext_capabilities & advertised_ext;
    let (mut backend, backend_caps, backend_login_seq) = match backend_tls_for(
        &shared,
        backend,
        &client,
        (client_caps, client_ext),
        &greeting,
        response.charset,
    )
    .await
    {
        Ok(b) => b,
        Err(e) => return Err(reject(&mut client, seq.wrapping_add(1), e, "backend TLS").await),
    };
    // Each side's sequence ids count its own SSLRequest, if any.
    let seq_delta = seq.wrapping_sub(backend_login_seq);
    set_response_capabilities(&mut response_raw, backend_caps, client_ext);
    if backend
        .send_packet(backend_login_seq, &response_raw)
        .await
        .is_err()
    {
        return Err(reject(
            &mut client,
            seq.wrapping_add(1),
            ErrorInfo::backend_lost(&addr),
            "backend lost during login",
        )
        .await);
    }
    let Some(Authed {
        status,
        ok: (ok_seq, ok),
    }) = relay_auth(
        &mut client,
        &mut backend,
        seq_delta,
        seq.wrapping_add(1),
        &addr,
        shared.config().handshake_timeout(),
    )
    .await?
    else {
        debug!(%peer, user = %String::from_utf8_lossy(&response.user), "backend refused login");
        client.shutdown().await;
        return Err(HandshakeFailure::Rejected("authentication failed"));
    };
    let compress = client_caps & cap::COMPRESS != 0;
    if compress {
        // both sides switch right after the OK (the client's once `run` sent it to it)
        backend.enable_compression(false);
        bump(&shared.stats.compressed_sessions);
    }
    info!(%peer, user = %String::from_utf8_lossy(&response.user), tls = client.get_ref().is_tls(), compressed = client.is_compressed(), "session established");
    // the connections this login's may share with (multiplexing): the same backend user and
    // wire shape
    let set = crate::backend::lend::SetKey {
        user: response.user.clone(),
        caps: backend_caps,
        ext_caps: client_ext,
        charset: response.charset,
        tls: backend.get_ref().is_tls(),
        login: None,
    };
    let db = response.database.clone().filter(|d| !d.is_empty());
    Ok(Session::new(
        shared,
        peer,
        client,
        backend,
        Caps::new(client_caps, client_ext),
        None,
    )
    .with_backend(&greeting.server_version, status, greeting.connection_id)
    .with_user(&response.user)
    .with_mux(set, db.as_deref(), greeting.connection_id)
    .with_login_ok(ok_seq, ok, compress))
}

/// TLS to the backend as `backend.tls.mode` says (the client's own TLS ends at the proxy):
/// the backend stream to log in on, the capabilities the login carries and its sequence id
/// (2 after an SSLRequest, else 1). Err: the error packet for the client.
async fn backend_tls_for(
    shared: &Shared,
    backend: BackendStream,
    client: &PacketStream<ClientIo>,
    (client_caps, client_ext): (u32, u32),
    greeting: &crate::protocol::handshake::Greeting,
    charset: u8,
) -> Result<(BackendStream, u32, u8), ErrorInfo> {
    let Some(tls) = shared.backend_tls.as_ref() else {
        return Ok((backend, client_caps, 1));
    };
    let offered = greeting.capabilities & cap::SSL != 0;
    let wanted =
        BackendTls::wanted(tls.mode, client.get_ref().is_tls(), offered).map_err(|why| {
            ErrorInfo::new(
                er::CR_SSL_CONNECTION_ERROR,
                "HY000",
                format!("obkv-proxy: {why}"),
            )
        })?;
    if !wanted {
        return Ok((backend, client_caps, 1));
    }
    let wait = shared.config().connect_timeout();
    match backend::upgrade_tls(
        backend,
        tls,
        Caps::new(client_caps, client_ext),
        charset,
        wait,
    )
    .await
    {
        Ok(b) => Ok((b, client_caps | cap::SSL, 2)),
        Err(e) => {
            warn!(backend = %shared.config().backend.address, "{e}");
            Err(ErrorInfo::new(
                er::CR_SSL_CONNECTION_ERROR,
                "HY000",
                format!("obkv-proxy: {e}"),
            ))
        }
    }
}

async fn report_backend_down(
    tcp: &mut ClientSock,
    shared: &Shared,
    addr: &str,
    e: &BackendError,
) -> HandshakeFailure {
    bump(&shared.stats.backend_connect_errors);
    warn!(backend = addr, "cannot reach backend: {e}");
    let _ = write_raw_packet(
        tcp,
        0,
        &ErrorInfo::backend_unreachable(addr, &e.to_string()).to_packet(),
    )
    .await;
    let _ = tcp.shutdown().await;
    HandshakeFailure::Rejected("backend unreachable")
}

/// A login the backend accepted (`relay_auth`).
pub struct Authed {
    /// The status its OK carried.
    pub status: u16,
    /// The OK, not yet sent to the client, and its client sequence id.
    pub ok: (u8, Vec<u8>),
}

/// Relays an auth exchange until the backend's OK (its server status, and the OK itself, which
/// is left to the caller to send: a login sends it once its session is whole) or ERR (None,
/// relayed). Every other packet is relayed to the client. Client sequence ids are the backend's
/// plus `seq_delta`; `next_client_seq` is the id the client expects next. Every packet is capped
/// at MAX_LOGIN_PACKET, and a backend that does not answer within `wait` is reported to the
/// client (error 2013), not left hanging.
pub async fn relay_auth(
    client: &mut PacketStream<ClientIo>,
    backend: &mut BackendStream,
    seq_delta: u8,
    mut next_client_seq: u8,
    addr: &str,
    wait: std::time::Duration,
) -> Result<Option<Authed>, HandshakeFailure> {
    let mut p = Vec::new();
    loop {
        let read = crate::timer::timeout(wait, backend.read_frame_capped(&mut p, MAX_LOGIN_PACKET));
        let h = match read.await {
            Ok(Ok(h)) => h,
            _ => {
                return Err(reject(
                    client,
                    next_client_seq,
                    ErrorInfo::backend_lost(addr),
                    "backend lost or silent during login",
                )
                .await)
            }
        };
        let seq = h.seq.wrapping_add(seq_delta);
        if p.first() == Some(&0x00) {
            let status = crate::protocol::packets::parse_ok(&p).map_or(0, |ok| ok.status);
            return Ok(Some(Authed {
                status,
                ok: (seq, p),
            }));
        }
        client.send_packet(seq, &p).await?;
        match p.first() {
            Some(0xff) => return Ok(None),
            Some(0x01) if p.as_slice() == [0x01, 0x03] => continue, // caching_sha2 fast auth: OK follows
            _ => {}
        }
        let ch = client.read_frame_capped(&mut p, MAX_LOGIN_PACKET).await?;
        next_client_seq = ch.seq.wrapping_add(1);
        if backend
            .send_packet(ch.seq.wrapping_sub(seq_delta), &p)
            .await
            .is_err()
        {
            return Err(reject(
                client,
                next_client_seq,
                ErrorInfo::backend_lost(addr),
                "backend lost during login",
            )
            .await);
        }
    }
}

fn random_salt() -> [u8; 20] {
    let mut rng = rand::rng();
    let mut s = [0u8; 20];
    for b in &mut s {
        // printable, never NUL: the salt's second part is NUL-terminated on the wire
        *b = rng.random_range(0x21u8..0x7f);
    }
    s
}

async fn establish_proxy_auth(
    mut tcp: ClientSock,
    peer: Peer,
    shared: Arc<Shared>,
) -> Result<Session, HandshakeFailure> {
    let addr = shared.config().backend.address.clone();
    let backend_greeting = match shared.backend_greeting().await {
        Ok(g) => g,
        Err(e) => return Err(report_backend_down(&mut tcp, &shared, &addr, &e).await),
    };
    let salt = random_salt();
    let advertised = advertised_caps(
        backend_greeting.capabilities,
        shared.tls().is_some(),
        shared.config().proxy.compression,
    );
    let advertised_ext = backend_greeting.ext_capabilities & ext::PROXY_SUPPORTED;
    let conn_id = shared.next_connection_id();
    let greeting = build_greeting(
        &backend_greeting.server_version,
        conn_id,
        &salt,
        (advertised, advertised_ext),
        backend_greeting.charset,
        backend_greeting.status,
        NATIVE_PLUGIN,
    );
    let (mut client, _, response, seq) =
        greet_and_read_login(tcp, &shared, &greeting, advertised).await?;
    let client_caps = response.capabilities & advertised & !cap::SSL;
    let client_ext = response.ext_capabilities & advertised_ext;
    let (auth_data, next_seq) =
        native_auth_data(&mut client, &response, &salt, seq.wrapping_add(1)).await?;
    let host = peer.host();
    let Some(user) = shared.check_proxy_user(&response.user, &salt, &auth_data) else {
        info!(%peer, user = %String::from_utf8_lossy(&response.user), "proxy authentication failed");
        let err = ErrorInfo::access_denied(&response.user, &host, !auth_data.is_empty());
        return Err(reject(&mut client, next_seq, err, "authentication failed").await);
    };
    let spec = LoginSpec {
        user: user.backend_user.clone(),
        password: user.backend_password.clone(),
        caps: client_caps,
        ext_caps: client_ext,
        charset: response.charset,
        database: response.database.clone().filter(|d| !d.is_empty()),
    };
    let logged = match shared.backend_login(&spec).await {
        Ok(l) => l,
        Err(BackendError::Refused(err)) => {
            let _ = client.send_packet(next_seq, &err).await;
            return Err(HandshakeFailure::Rejected(
                "backend refused the mapped login",
            ));
        }
        Err(e) => {
            bump(&shared.stats.backend_connect_errors);
            warn!(backend = %addr, "backend login failed: {e}");
            let err = ErrorInfo::backend_unreachable(&addr, &e.to_string());
            return Err(reject(&mut client, next_seq, err, "backend unreachable").await);
        }
    };
    let compress = client_caps & cap::COMPRESS != 0;
    if compress {
        bump(&shared.stats.compressed_sessions);
    }
    info!(%peer, user = %String::from_utf8_lossy(&response.user), backend_user = %spec.user, "session established (proxy auth)");
    let set = crate::backend::lend::SetKey {
        user: spec.user.as_bytes().to_vec(),
        caps: logged.caps.base,
        ext_caps: logged.caps.ext,
        charset: spec.charset,
        tls: logged.stream.get_ref().is_tls(),
        login: Some(spec.clone()),
    };
    let db = spec.database.clone();
    let id = logged.greeting.connection_id;
    let (stream, pooled, caps) = logged.into_parts(spec);
    let status = backend_greeting.status;
    let session = Session::new(shared, peer, client, stream, caps, Some(pooled))
        .with_backend(&backend_greeting.server_version, status, 0)
        .with_user(&response.user);
    // (the OK goes once the session is whole: `Session::with_login_ok`)
    Ok(session
        .with_mux_own_login(id)
        .with_mux(set, db.as_deref(), conn_id)
        .with_login_ok(
            next_seq,
            ok_packet(0, 0, backend_greeting.status, 0),
            compress,
        ))
}

/// The client's mysql_native_password answer; asks for it with an auth switch when the client
/// started with another plugin. Returns the answer and the next sequence id.
async fn native_auth_data(
    client: &mut PacketStream<ClientIo>,
    response: &HandshakeResponse,
    salt: &[u8; 20],
    seq: u8,
) -> Result<(Vec<u8>, u8), HandshakeFailure> {
    let plugin = response.auth_plugin.as_deref().unwrap_or(NATIVE_PLUGIN);
    if plugin == NATIVE_PLUGIN || plugin.is_empty() {
        return Ok((response.auth_response.clone(), seq));
    }
    client
        .send_packet(seq, &build_auth_switch(NATIVE_PLUGIN, salt))
        .await?;
    let mut p = Vec::new();
    let h = client.read_frame_capped(&mut p, MAX_LOGIN_PACKET).await?;
    Ok((p, h.seq.wrapping_add(1)))
}

/// COM_CHANGE_USER fields (after the command byte).
pub struct ChangeUser {
    pub user: Vec<u8>,
    pub database: Option<Vec<u8>>,
    pub charset: Option<u8>,
}

pub fn parse_change_user(p: &[u8], caps: u32) -> Option<ChangeUser> {
    let mut r = crate::protocol::wire::Reader::new(p);
    let user = r.null_terminated().to_vec();
    if caps & cap::SECURE_CONNECTION != 0 {
        let n = usize::from(r.u8()?);
        r.take(n)?;
    } else {
        r.null_terminated();
    }
    let db = r.null_terminated().to_vec();
    let charset = r.u16().map(|c| c as u8);
    Some(ChangeUser {
        user,
        database: Some(db).filter(|d| !d.is_empty()),
        charset,
    })
}

/// Proxy mode COM_CHANGE_USER: re-authenticates with a fresh salt (auth switch), then gives the
/// session a clean backend connection for the new user. Returns false when refused.
pub async fn proxy_change_user(
    session: &mut Session,
    request: ChangeUser,
) -> Result<bool, HandshakeFailure> {
    let salt = random_salt();
    session
        .client
        .send_packet(1, &build_auth_switch(NATIVE_PLUGIN, &salt))
        .await?;
    let mut p = Vec::new();
    let h = session
        .client
        .read_frame_capped(&mut p, MAX_LOGIN_PACKET)
        .await?;
    let seq = h.seq.wrapping_add(1);
    let host = session.peer.host();
    let Some(user) = session.shared.check_proxy_user(&request.user, &salt, &p) else {
        let err = ErrorInfo::access_denied(&request.user, &host, !p.is_empty());
        session.client.send_packet(seq, &err.to_packet()).await?;
        return Ok(false);
    };
    let Some(old_spec) = session.pooled.as_ref().map(|p| &p.spec) else {
        return Ok(false);
    };
    let spec = LoginSpec {
        user: user.backend_user.clone(),
        password: user.backend_password.clone(),
        caps: old_spec.caps,
        ext_caps: old_spec.ext_caps,
        charset: request.charset.unwrap_or(old_spec.charset),
        database: request.database,
    };
    match session.shared.backend_login(&spec).await {
        Ok(logged) => {
            let (stream, pooled, _) = logged.into_parts(spec);
            session.watched.set_backend(stream.get_ref());
            let old = session.backend.replace(stream);
            let old_pooled = session.pooled.replace(pooled);
            session.statements.clear();
            if let (Some(p), Some(old)) = (old_pooled, old) {
                let (spec, conn) = p.with_stream(old, session.client_caps);
                session.shared.recycle(spec, conn);
            }
            session
                .client
                .send_packet(seq, &ok_packet(0, 0, 2, 0))
                .await?;
            Ok(true)
        }
        Err(BackendError::Refused(err)) => {
            session.client.send_packet(seq, &err).await?;
            Ok(false)
        }
        Err(e) => {
            let err = ErrorInfo::backend_unreachable(&session.cfg.backend.address, &e.to_string());
            session.client.send_packet(seq, &err.to_packet()).await?;
            Ok(false)
        }
    }
}
