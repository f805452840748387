//! A minimal synchronous MySQL client that keeps every response packet as raw bytes, so tests
//! can compare what a client receives through the proxy with what it receives directly.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use obkv_proxy::protocol::auth::native_scramble;
use obkv_proxy::protocol::constants::{cap, com, Caps};
use obkv_proxy::protocol::handshake::{
    build_handshake_response, parse_auth_switch, parse_greeting, Greeting,
};
use obkv_proxy::protocol::response::{ResponseKind, ResponseTracker, Step};

pub const DEFAULT_CAPS: u32 = cap::LONG_PASSWORD
    | cap::LONG_FLAG
    | cap::PROTOCOL_41
    | cap::TRANSACTIONS
    | cap::SECURE_CONNECTION
    | cap::MULTI_STATEMENTS
    | cap::MULTI_RESULTS
    | cap::PS_MULTI_RESULTS
    | cap::PLUGIN_AUTH
    | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | cap::LOCAL_FILES
    | cap::DEPRECATE_EOF;

/// One frame as received.
pub type Frame = (u8, Vec<u8>);

pub struct RawConn {
    pub stream: TcpStream,
    pub greeting: Greeting,
    pub caps: u32,
    /// MariaDB extended capabilities in force (asked for with `connect_ext`).
    pub ext: u32,
}

#[derive(Debug)]
pub enum ConnectError {
    Io(io::Error),
    /// The server answered with an ERR packet (code, message).
    Server(u16, String),
}

impl From<io::Error> for ConnectError {
    fn from(e: io::Error) -> Self {
        ConnectError::Io(e)
    }
}

/// Text rows, NULL as None.
pub type Rows = Vec<Vec<Option<Vec<u8>>>>;

pub fn err_of(p: &[u8]) -> Option<(u16, String)> {
    if p.first() != Some(&0xff) || p.len() < 3 {
        return None;
    }
    let code = u16::from_le_bytes([p[1], p[2]]);
    let msg = if p.get(3) == Some(&b'#') {
        &p[9.min(p.len())..]
    } else {
        &p[3..]
    };
    Some((code, String::from_utf8_lossy(msg).into_owned()))
}

pub fn read_frame_from(stream: &mut TcpStream) -> io::Result<Frame> {
    let mut h = [0u8; 4];
    stream.read_exact(&mut h)?;
    let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
    let mut p = vec![0u8; len];
    stream.read_exact(&mut p)?;
    Ok((h[3], p))
}

impl RawConn {
    pub fn connect(
        addr: &str,
        user: &str,
        password: &str,
        db: Option<&str>,
    ) -> Result<RawConn, ConnectError> {
        Self::connect_with(addr, user, password, db, DEFAULT_CAPS)
    }

    pub fn connect_with(
        addr: &str,
        user: &str,
        password: &str,
        db: Option<&str>,
        caps: u32,
    ) -> Result<RawConn, ConnectError> {
        Self::connect_ext(addr, user, password, db, caps, 0)
    }

    /// A login that also asks for MariaDB extended capabilities (`ext`), kept where the
    /// server offers them.
    pub fn connect_ext(
        addr: &str,
        user: &str,
        password: &str,
        db: Option<&str>,
        caps: u32,
        ext: u32,
    ) -> Result<RawConn, ConnectError> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        let (_, g) = read_frame_from(&mut stream)?;
        if let Some((code, msg)) = err_of(&g) {
            return Err(ConnectError::Server(code, msg));
        }
        let greeting = parse_greeting(&g).ok_or_else(|| io::Error::other("bad greeting"))?;
        let mut c = RawConn {
            stream,
            caps: caps & greeting.capabilities,
            ext: ext & greeting.ext_capabilities,
            greeting,
        };
        let auth = native_scramble(password.as_bytes(), &c.greeting.scramble);
        let resp = build_handshake_response(
            (c.caps, c.ext),
            45,
            user.as_bytes(),
            &auth,
            db.map(str::as_bytes),
            b"mysql_native_password",
        );
        c.caps = u32::from_le_bytes([resp[0], resp[1], resp[2], resp[3]]);
        c.write_frame(1, &resp)?;
        loop {
            let (seq, p) = c.read_frame()?;
            match p.first() {
                Some(0x00) => return Ok(c),
                Some(0xff) => {
                    let (code, msg) = err_of(&p).unwrap_or((0, String::new()));
                    return Err(ConnectError::Server(code, msg));
                }
                Some(0xfe) => {
                    let (_, salt) =
                        parse_auth_switch(&p).ok_or_else(|| io::Error::other("bad auth switch"))?;
                    c.write_frame(
                        seq.wrapping_add(1),
                        &native_scramble(password.as_bytes(), &salt),
                    )?;
                }
                _ => {
                    return Err(ConnectError::Io(io::Error::other(
                        "unexpected login packet",
                    )))
                }
            }
        }
    }

    /// How long a read waits for the server (120 s from `connect`).
    pub fn set_read_timeout(&self, within: Duration) {
        self.stream
            .set_read_timeout(Some(within))
            .expect("read timeout set");
    }

    pub fn read_frame(&mut self) -> io::Result<Frame> {
        read_frame_from(&mut self.stream)
    }

    pub fn write_frame(&mut self, seq: u8, payload: &[u8]) -> io::Result<()> {
        let n = payload.len() as u32;
        let mut f = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        f.extend_from_slice(payload);
        self.stream.write_all(&f)
    }

    /// Sends a command (one frame, or several if large) and returns every frame of the answer.
    pub fn command(&mut self, payload: &[u8], kind: ResponseKind) -> io::Result<Vec<Frame>> {
        let mut seq = 0u8;
        let mut rest = payload;
        loop {
            let n = rest.len().min(0xff_ffff);
            self.write_frame(seq, &rest[..n])?;
            seq = seq.wrapping_add(1);
            rest = &rest[n..];
            if n < 0xff_ffff {
                break;
            }
        }
        self.read_response(kind)
    }

    pub fn read_response(&mut self, kind: ResponseKind) -> io::Result<Vec<Frame>> {
        let mut t = ResponseTracker::with_caps(kind, Caps::new(self.caps, self.ext));
        let mut out = Vec::new();
        loop {
            let (seq, p) = self.read_frame()?;
            let step = t
                .feed(p.len(), &p)
                .map_err(|e| io::Error::other(e.to_string()))?;
            out.push((seq, p));
            match step {
                Step::Done => return Ok(out),
                Step::More => {}
                Step::LocalInfile => return Ok(out),
            }
        }
    }

    pub fn query(&mut self, sql: &[u8]) -> io::Result<Vec<Frame>> {
        let mut cmd = vec![com::QUERY];
        cmd.extend_from_slice(sql);
        self.command(&cmd, ResponseKind::Query)
    }

    /// Runs a statement; the backend's error (code, message) if it fails.
    pub fn exec(&mut self, sql: &str) -> Result<(), (u16, String)> {
        let frames = self.query(sql.as_bytes()).map_err(|e| (0, e.to_string()))?;
        match frames.iter().find_map(|(_, p)| err_of(p)) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Runs a statement: its warning count, or the error (code, message) of its first packet.
    pub fn warnings_or_error(&mut self, sql: &str) -> Result<u16, (u16, String)> {
        let frames = self.query(sql.as_bytes()).expect("answered");
        let first = &frames[0].1;
        if let Some(e) = err_of(first) {
            return Err(e);
        }
        Ok(obkv_proxy::protocol::packets::parse_ok(first).map_or(0, |o| o.warnings))
    }

    /// Runs a statement that must succeed; a failure panics with the backend's own error (code and
    /// message) and the server's address, so a setup statement that fails says why.
    #[track_caller]
    pub fn must(&mut self, sql: &str) {
        if let Err((code, msg)) = self.exec(sql) {
            let peer = self
                .stream
                .peer_addr()
                .map_or_else(|e| e.to_string(), |a| a.to_string());
            panic!("{sql}: error {code} {msg} (server {peer})");
        }
    }

    /// True when the statement succeeded (no ERR anywhere in the answer).
    pub fn query_ok(&mut self, sql: &str) -> bool {
        self.query(sql.as_bytes())
            .is_ok_and(|f| f.iter().all(|(_, p)| p.first() != Some(&0xff)))
    }

    /// Text rows of a simple single-result query (for assertions), NULL as None.
    pub fn rows(&mut self, sql: &str) -> Rows {
        self.rows_or_error(sql)
            .unwrap_or_else(|(code, msg)| panic!("{sql}: error {code} {msg}"))
    }

    /// What a single-result query gave: its text rows (none for an OK), or its error (also one
    /// that ends the rows).
    pub fn rows_or_error(&mut self, sql: &str) -> Result<Rows, (u16, String)> {
        let frames = self.query(sql.as_bytes()).expect("query answered");
        let first = &frames[0].1;
        if let Some(e) = err_of(first) {
            return Err(e);
        }
        if first.first() == Some(&0x00) {
            return Ok(Vec::new());
        }
        let ncols = first[0] as usize;
        let mut rows = Vec::new();
        let skip = 1 + ncols + usize::from(self.caps & cap::DEPRECATE_EOF == 0);
        for (_, p) in &frames[skip..frames.len() - 1] {
            if let Some(e) = err_of(p) {
                return Err(e);
            }
            let mut r = obkv_proxy::protocol::wire::Reader::new(p);
            let mut row = Vec::new();
            for _ in 0..ncols {
                if r.remaining().first() == Some(&0xfb) {
                    r.u8();
                    row.push(None);
                } else {
                    row.push(Some(r.lenenc_bytes().expect("value").to_vec()));
                }
            }
            rows.push(row);
        }
        Ok(rows)
    }

    pub fn scalar(&mut self, sql: &str) -> String {
        let rows = self.rows(sql);
        String::from_utf8_lossy(rows[0][0].as_deref().unwrap_or(b"NULL")).into_owned()
    }

    /// COM_CHANGE_USER with mysql_native_password, answering auth switches; returns the final
    /// packet (OK or ERR).
    pub fn change_user(&mut self, user: &str, password: &str, db: &str) -> Vec<u8> {
        let mut body = vec![com::CHANGE_USER];
        body.extend_from_slice(user.as_bytes());
        body.push(0);
        let auth = native_scramble(password.as_bytes(), &self.greeting.scramble);
        body.push(auth.len() as u8);
        body.extend_from_slice(&auth);
        body.extend_from_slice(db.as_bytes());
        body.push(0);
        body.extend_from_slice(&45u16.to_le_bytes());
        body.extend_from_slice(b"mysql_native_password\0");
        self.write_frame(0, &body).expect("change user sent");
        loop {
            let (seq, p) = self.read_frame().expect("change user answered");
            if p.first() != Some(&0xfe) {
                return p;
            }
            let (_, salt) = parse_auth_switch(&p).expect("auth switch");
            let answer = native_scramble(password.as_bytes(), &salt);
            self.write_frame(seq.wrapping_add(1), &answer)
                .expect("answer sent");
        }
    }

    pub fn quit(mut self) {
        let _ = self.write_frame(0, &[com::QUIT]);
    }
}

/// Reads until the peer closes (or `within` passes): whether it closed, and what it sent.
pub fn read_until_closed(s: &mut TcpStream, within: Duration) -> (bool, Vec<u8>) {
    s.set_read_timeout(Some(within)).expect("timeout");
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return (true, got),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return (false, got),
        }
    }
}

/// Splits bytes into whole packets' payloads; None when they end inside a packet.
pub fn whole_packets(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let h = bytes.get(at..at + 4)?;
        let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        out.push(bytes.get(at + 4..at + 4 + len)?);
        at += 4 + len;
    }
    Some(out)
}
