//! A byte stream that is plain or TLS: the client's (TCP or the proxy's Unix socket, TLS after
//! an SSLRequest) and the backend's (TCP, TLS when the proxy upgrades its own connection).

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use crate::protocol::stream::DirectIo;

pub enum MaybeTls<P, T> {
    Plain(P),
    Tls(Box<T>),
}

/// Where a client connected from: a TCP address, or the proxy's Unix socket (a local client,
/// `localhost` to MySQL, as a server names a socket client's host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Tcp(std::net::SocketAddr),
    Unix,
}

impl Peer {
    /// The host part of `'user'@'host'` in MySQL's messages.
    pub fn host(&self) -> String {
        match self {
            Peer::Tcp(a) => a.ip().to_string(),
            Peer::Unix => "localhost".into(),
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Tcp(a) => a.fmt(f),
            Peer::Unix => f.write_str("unix-socket"),
        }
    }
}

/// A client's socket: TCP, or the proxy's own Unix socket (`proxy.socket`); a write that
/// cannot go on for `proxy.net_write_timeout_ms` fails (`set_write_timeout`).
pub struct ClientSock {
    sock: Sock,
    stall: Stall,
}

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// How long a write may wait for the client to read, and since when it waits. The timer is
/// made only when a write would block (a client that reads costs a branch), dropped when the
/// write goes on: a client that stops reading a result fails the write after the limit, as
/// MariaDB's own `net_write_timeout` does, instead of holding the backend's statement (and its
/// locks) for as long as it likes.
#[derive(Default)]
struct Stall {
    limit: Option<std::time::Duration>,
    since: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Stall {
    /// After a write or flush polled `r`: the timer when it waits, none when it went on (a
    /// write that goes on with no timer is all the caller's inline path checks).
    #[inline(always)]
    fn after<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if r.is_ready() && self.since.is_none() {
            return r;
        }
        self.waiting(cx, r)
    }

    #[cold]
    #[inline(never)]
    fn waiting<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => {
                let Some(limit) = self.limit else {
                    return Poll::Pending;
                };
                let since = self
                    .since
                    .get_or_insert_with(|| Box::pin(crate::timer::sleep(limit)));
                match std::future::Future::poll(since.as_mut(), cx) {
                    Poll::Ready(()) => {
                        self.since = None;
                        Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the client read nothing for proxy.net_write_timeout_ms",
                        )))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
            ready => {
                if self.since.is_some() {
                    self.since = None;
                }
                ready
            }
        }
    }
}

/// The client's stream.
pub type ClientIo = MaybeTls<ClientSock, tokio_rustls::server::TlsStream<ClientSock>>;
/// The backend's stream.
pub type BackendIo = MaybeTls<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;

impl<P, T> MaybeTls<P, T> {
    pub fn is_tls(&self) -> bool {
        matches!(self, MaybeTls::Tls(_))
    }
}

impl BackendIo {
    pub fn tcp(&self) -> &TcpStream {
        match self {
            MaybeTls::Plain(s) => s,
            MaybeTls::Tls(s) => s.get_ref().0,
        }
    }
}

impl AsFd for ClientSock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.sock {
            Sock::Tcp(s) => s.as_fd(),
            Sock::Unix(s) => s.as_fd(),
        }
    }
}

impl AsFd for ClientIo {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            MaybeTls::Plain(s) => s.as_fd(),
            MaybeTls::Tls(s) => s.get_ref().0.as_fd(),
        }
    }
}

impl AsFd for BackendIo {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.tcp().as_fd()
    }
}

impl ClientIo {
    /// The cipher and protocol of a TLS client connection, named as MySQL servers name them in
    /// `Ssl_cipher` and `Ssl_version` (OpenSSL's names); None for a plain one.
    pub fn tls_description(&self) -> Option<(String, String)> {
        let MaybeTls::Tls(s) = self else {
            return None;
        };
        let conn = &s.get_ref().1;
        let iana = conn
            .negotiated_cipher_suite()
            .and_then(|c| c.suite().as_str())
            .unwrap_or("");
        let cipher = match iana {
            "TLS13_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
            "TLS13_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
            "TLS13_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => "ECDHE-ECDSA-AES128-GCM-SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => "ECDHE-ECDSA-AES256-GCM-SHA384",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-ECDSA-CHACHA20-POLY1305",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => "ECDHE-RSA-AES128-GCM-SHA256",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => "ECDHE-RSA-AES256-GCM-SHA384",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-RSA-CHACHA20-POLY1305",
            other => other,
        };
        let version = match conn.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "",
        };
        Some((cipher.to_string(), version.to_string()))
    }
}

impl ClientSock {
    pub fn tcp(s: TcpStream) -> ClientSock {
        ClientSock {
            sock: Sock::Tcp(s),
            stall: Stall::default(),
        }
    }

    pub fn unix(s: UnixStream) -> ClientSock {
        ClientSock {
            sock: Sock::Unix(s),
            stall: Stall::default(),
        }
    }

    pub fn is_unix(&self) -> bool {
        matches!(self.sock, Sock::Unix(_))
    }

    pub fn as_tcp(&self) -> Option<&TcpStream> {
        match &self.sock {
            Sock::Tcp(s) => Some(s),
            Sock::Unix(_) => None,
        }
    }

    /// A write that waits on the client longer than `limit` fails with TimedOut (None: never).
    pub fn set_write_timeout(&mut self, limit: Option<std::time::Duration>) {
        self.stall.limit = limit;
    }
}

impl AsyncRead for ClientSock {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().sock {
            Sock::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Sock::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientSock {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = match &mut this.sock {
            Sock::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Sock::Unix(s) => Pin::new(s).poll_write(cx, buf),
        };
        this.stall.after(cx, r)
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = match &mut this.sock {
            Sock::Tcp(s) => Pin::new(s).poll_flush(cx),
            Sock::Unix(s) => Pin::new(s).poll_flush(cx),
        };
        this.stall.after(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().sock {
            Sock::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Sock::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl DirectIo for TcpStream {
    #[inline]
    fn try_write_now(&mut self, buf: &[u8]) -> Option<io::Result<usize>> {
        Some(self.try_write(buf))
    }

    #[inline]
    fn try_write_vectored_now(&mut self, bufs: &[io::IoSlice<'_>]) -> Option<io::Result<usize>> {
        Some(self.try_write_vectored(bufs))
    }

    #[inline]
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        Some(TcpStream::poll_read_ready(self, cx))
    }

    #[inline]
    fn flush_needed(&self) -> bool {
        false
    }
}

impl DirectIo for ClientSock {
    #[inline]
    fn try_write_now(&mut self, buf: &[u8]) -> Option<io::Result<usize>> {
        // (a write that waited keeps its timer until a poll sees it go on)
        if self.stall.since.is_some() {
            return None;
        }
        Some(match &self.sock {
            Sock::Tcp(s) => s.try_write(buf),
            Sock::Unix(s) => s.try_write(buf),
        })
    }

    #[inline]
    fn try_write_vectored_now(&mut self, bufs: &[io::IoSlice<'_>]) -> Option<io::Result<usize>> {
        if self.stall.since.is_some() {
            return None;
        }
        Some(match &self.sock {
            Sock::Tcp(s) => s.try_write_vectored(bufs),
            Sock::Unix(s) => s.try_write_vectored(bufs),
        })
    }

    #[inline]
    fn flush_needed(&self) -> bool {
        self.stall.since.is_some()
    }

    #[inline]
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        Some(match &self.sock {
            Sock::Tcp(s) => s.poll_read_ready(cx),
            Sock::Unix(s) => s.poll_read_ready(cx),
        })
    }
}

impl<P: DirectIo, T> DirectIo for MaybeTls<P, T> {
    #[inline]
    fn try_write_now(&mut self, buf: &[u8]) -> Option<io::Result<usize>> {
        match self {
            MaybeTls::Plain(p) => p.try_write_now(buf),
            MaybeTls::Tls(_) => None,
        }
    }

    #[inline]
    fn try_write_vectored_now(&mut self, bufs: &[io::IoSlice<'_>]) -> Option<io::Result<usize>> {
        match self {
            MaybeTls::Plain(p) => p.try_write_vectored_now(bufs),
            MaybeTls::Tls(_) => None,
        }
    }

    #[inline]
    fn flush_needed(&self) -> bool {
        match self {
            MaybeTls::Plain(p) => p.flush_needed(),
            MaybeTls::Tls(_) => true,
        }
    }

    #[inline]
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        match self {
            MaybeTls::Plain(p) => p.poll_read_ready(cx),
            MaybeTls::Tls(_) => None,
        }
    }
}

impl<P: AsyncRead + Unpin, T: AsyncRead + Unpin> AsyncRead for MaybeTls<P, T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_read(cx, buf),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<P: AsyncWrite + Unpin, T: AsyncWrite + Unpin> AsyncWrite for MaybeTls<P, T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_write(cx, buf),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_flush(cx),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_shutdown(cx),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Answers a client that will not be served with an ERR packet in place of the greeting.
pub async fn refuse_with<S: AsyncWrite + Unpin>(
    mut tcp: S,
    e: crate::protocol::packets::ErrorInfo,
) {
    let p = e.to_packet();
    // an ERR packet is far below one frame's 16 MiB: one frame, sequence id 0
    let len = p.len().min(crate::protocol::constants::MAX_FRAME) as u32;
    let mut frame = len.to_le_bytes().to_vec();
    frame[3] = 0;
    frame.extend_from_slice(&p);
    let _ = tcp.write_all(&frame).await;
    let _ = tcp.shutdown().await;
}
