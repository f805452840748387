//! Buffered packet I/O over any byte stream.
//!
//! One read buffer and one write buffer per connection, both bounded: packets the proxy must
//! inspect are read whole (they are small), everything else is copied through in chunks, so a
//! result never has to fit in memory.
//!
//! Memory follows the bytes that actually arrive: the read buffer is never zero-filled or sized
//! ahead of data (a frame header promising 16 MiB costs nothing until 16 MiB arrive), whole-frame
//! reads can be capped before anything is allocated (`read_frame_capped`, for pre-auth packets),
//! and both buffers shrink back after an unusually large packet.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::compress::{Codec, Step, PIECE};
use super::constants::MAX_FRAME;

/// Read-ahead per socket read, and the size the read buffer shrinks back to.
const READ_CHUNK: usize = 64 * 1024;
/// Pending output is written out once it reaches this size.
const WRITE_HIGH_WATER: usize = 64 * 1024;
/// A packet this large goes out from where it is, in one vectored write with what is queued
/// before it, instead of being copied into the write buffer (below it, the copy costs less
/// than the write's second buffer).
const VECTORED_MIN: usize = 2 * 1024;

pub struct PacketStream<S> {
    io: S,
    /// Bytes read from the socket; `rbuf[rpos..]` is not consumed yet. Its length is what
    /// arrived, its capacity what is reserved (never initialised ahead of data).
    rbuf: Vec<u8>,
    rpos: usize,
    wbuf: Vec<u8>,
    /// The compressed protocol, once both sides agreed to it (after the login's OK): `rbuf` then
    /// holds decoded bytes and `wbuf` plain bytes that `flush` encodes.
    comp: Option<Box<Codec>>,
    /// Offsets in `wbuf` where a command starts: its first frame restarts the frame sequence.
    cuts: Vec<usize>,
    /// Bytes read from the socket, and written to it uncompressed, since the stream began.
    read: u64,
    written: u64,
}

/// A stream the packet layer may use without going through a future: a plain socket.
///
/// - A flush writes with the socket's `try_write`, which writes what the socket takes now. A
///   flush of the write buffer is most often one such write, and the `AsyncWrite` path around
///   it (a `write_all` future, the polls down to the socket's readiness, a flush that a plain
///   socket does not need) cost about 140 instructions more a write (callgrind,
///   `scripts/cost.sh`).
/// - A wait for bytes waits on the socket's readiness, not on a read: most such polls find
///   nothing (the backend between commands, every peer before its answer), and a read's layers
///   (a `read_buf` future, the TLS switch, the socket's `poll_read`) cost more than the readiness
///   they end in.
pub trait DirectIo {
    /// What the socket took of `buf` now (`WouldBlock`: nothing), or None where the write must
    /// go through `AsyncWrite` (TLS, a client whose write waits on its timer).
    fn try_write_now(&mut self, _buf: &[u8]) -> Option<io::Result<usize>> {
        None
    }

    /// `try_write_now` of several buffers in one write (`writev`), in order.
    fn try_write_vectored_now(&mut self, _bufs: &[io::IoSlice<'_>]) -> Option<io::Result<usize>> {
        None
    }

    /// Whether a flush has anything to do after the bytes were written (TLS's records, a
    /// client's write timer to clear); a plain socket's flush does nothing.
    fn flush_needed(&self) -> bool {
        true
    }

    /// Whether the socket may have bytes to read (registering the task to be woken when it
    /// does), or None where the wait must be a read (TLS, in-memory streams). Ready can be
    /// stale (the readiness a read then finds empty): the read that follows waits again.
    fn poll_read_ready(
        &self,
        _cx: &mut std::task::Context<'_>,
    ) -> Option<std::task::Poll<io::Result<()>>> {
        None
    }
}

/// (the tests' and fuzz targets' in-memory streams: through `AsyncWrite`)
impl DirectIo for tokio::io::DuplexStream {}

/// Header of one frame: payload length and sequence id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub len: usize,
    pub seq: u8,
}

/// The payload length a 4-byte frame header (`h`, at least 3 bytes) announces.
fn frame_len(h: &[u8]) -> usize {
    super::wire::u24(h[0], h[1], h[2])
}

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "packet larger than allowed")
}

impl<S: AsyncRead + AsyncWrite + DirectIo + Unpin> PacketStream<S> {
    pub fn new(io: S) -> Self {
        PacketStream {
            io,
            rbuf: Vec::new(),
            rpos: 0,
            wbuf: Vec::new(),
            comp: None,
            cuts: Vec::new(),
            read: 0,
            written: 0,
        }
    }

    /// Bytes read from the socket and written to it (on the wire: compressed, when the
    /// compressed protocol is on), since the stream began.
    pub fn traffic(&self) -> (u64, u64) {
        let compressed = self.comp.as_deref().map_or(0, Codec::written);
        (self.read, self.written + compressed)
    }

    /// `traffic`, with what is queued to be written counted as written (exactly, unless the
    /// stream is compressed: then the queue is counted once encoded and written).
    pub fn traffic_queued(&self) -> (u64, u64) {
        let (read, written) = self.traffic();
        let queued = if self.comp.is_none() {
            self.wbuf.len() as u64
        } else {
            0
        };
        (read, written + queued)
    }

    /// Switches to the compressed protocol (call right after the login's OK, with nothing
    /// queued): bytes already read and not consumed are compressed ones. `server`: the proxy is
    /// the server on this stream (the client's leg), so the packets it writes are numbered as a
    /// server numbers them (`protocol::compress`).
    pub fn enable_compression(&mut self, server: bool) {
        if self.comp.is_some() {
            return;
        }
        let pending = self.rbuf.split_off(self.rpos);
        self.rbuf.clear();
        self.rpos = 0;
        let codec = if server {
            Codec::for_server(pending)
        } else {
            Codec::new(pending)
        };
        self.comp = Some(Box::new(codec));
    }

    pub fn is_compressed(&self) -> bool {
        self.comp.is_some()
    }

    pub fn get_ref(&self) -> &S {
        &self.io
    }

    pub fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }

    /// Bytes already read from the socket and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.rbuf.len() - self.rpos
    }

    pub fn has_pending_output(&self) -> bool {
        !self.wbuf.is_empty()
    }

    /// The output queued and not written yet (plain bytes, before any compression).
    pub fn pending_output(&self) -> &[u8] {
        &self.wbuf
    }

    /// Memory held by the buffers (capacity), for tests and accounting.
    pub fn buffer_capacity(&self) -> usize {
        self.rbuf.capacity() + self.wbuf.capacity()
    }

    /// Moves unconsumed bytes to the front of the read buffer.
    fn compact(&mut self) {
        if self.rpos > 0 {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
    }

    /// One socket read into the free capacity of the read buffer, for a packet that still misses
    /// `missing` bytes. At most one READ_CHUNK is reserved ahead of the data, so a peer that
    /// promises a large packet and sends nothing costs nothing, and a large packet makes the
    /// buffer grow only as its bytes arrive.
    async fn read_more(&mut self, missing: usize) -> io::Result<()> {
        if self.rpos == self.rbuf.len() {
            self.rbuf.clear();
            self.rpos = 0;
        }
        let want = missing.clamp(1, READ_CHUNK);
        if self.rbuf.capacity() - self.rbuf.len() < want {
            self.compact();
            if self.rbuf.capacity() - self.rbuf.len() < want {
                self.rbuf.reserve(READ_CHUNK);
            }
        }
        if let Some(c) = self.comp.as_deref_mut() {
            // decoded bytes, at most `want` per call, read from the socket as frames need them
            loop {
                match c.decode(&mut self.rbuf, want)? {
                    Step::Produced(_) => return Ok(()),
                    Step::NeedInput => {
                        let n = self.io.read_buf(c.input_buffer(READ_CHUNK)).await?;
                        self.read += n as u64;
                        if n == 0 {
                            return Err(io::ErrorKind::UnexpectedEof.into());
                        }
                    }
                }
            }
        }
        let n = self.io.read_buf(&mut self.rbuf).await?;
        self.read += n as u64;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// `wait_readable` for a stream that gave its buffers back (`release_idle`): each poll
    /// reserves a read buffer and reads into it, and gives it back when nothing came (the
    /// socket would block), so a stream waiting on a quiet peer holds no buffer while it
    /// waits. A stream that holds a buffer or bytes, or a compressed one, waits as
    /// `wait_readable` does.
    pub async fn wait_readable_lean(&mut self) -> io::Result<()> {
        if self.rbuf.capacity() != 0 || self.comp.is_some() {
            return self.fill_at_least(1).await;
        }
        let n = std::future::poll_fn(|cx| {
            if self.rbuf.capacity() == 0 {
                self.rbuf.reserve(READ_CHUNK);
            }
            let r = std::future::Future::poll(std::pin::pin!(self.io.read_buf(&mut self.rbuf)), cx);
            if r.is_pending() && self.rbuf.is_empty() {
                self.rbuf = Vec::new();
            }
            r
        })
        .await?;
        self.read += n as u64;
        if n == 0 {
            self.rbuf = Vec::new();
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// Gives back buffers grown beyond their usual size (a large packet's), keeping the usual
    /// ones: a backend connection going back to its multiplexing set serves another session
    /// at once, which would make them again.
    pub fn release_large(&mut self) {
        self.release_beyond(2 * READ_CHUNK, 2 * WRITE_HIGH_WATER);
    }

    /// Gives back both buffers when nothing is buffered or queued (call when the peer is
    /// expected to be quiet for a while: an idle session, which then waits with
    /// `wait_readable_lean`); the next read or write makes its buffer again.
    /// A compressed stream keeps its buffers (its codec's state is the larger part anyway).
    pub fn release_idle(&mut self) {
        self.release_beyond(0, 0);
    }

    /// Drops the read buffer when it holds nothing and has more room than `read`, and the
    /// write buffer when it holds nothing and has more room than `write` (never a compressed
    /// stream's).
    fn release_beyond(&mut self, read: usize, write: usize) {
        if self.comp.is_some() {
            return;
        }
        if self.rbuf.capacity() > read && self.buffered() == 0 {
            self.rbuf = Vec::new();
            self.rpos = 0;
        }
        if self.wbuf.capacity() > write && self.wbuf.is_empty() && self.cuts.is_empty() {
            self.wbuf = Vec::new();
        }
    }

    /// Reads more bytes from the socket; errors with UnexpectedEof when the peer closed.
    async fn fill_some(&mut self) -> io::Result<()> {
        self.read_more(READ_CHUNK).await
    }

    /// Makes sure `n` bytes are buffered.
    async fn fill_at_least(&mut self, n: usize) -> io::Result<()> {
        while self.buffered() < n {
            self.read_more(n - self.buffered()).await?;
        }
        Ok(())
    }

    /// Gives back memory after an unusually large packet (call between commands: an idle
    /// session keeps only the small buffers).
    pub fn shrink_buffers(&mut self) {
        if self.rbuf.capacity() > READ_CHUNK && self.buffered() <= READ_CHUNK {
            self.compact();
            self.rbuf.shrink_to(READ_CHUNK);
        }
        if self.wbuf.is_empty() && self.wbuf.capacity() > WRITE_HIGH_WATER {
            self.wbuf.shrink_to(WRITE_HIGH_WATER);
        }
        if let Some(c) = self.comp.as_deref_mut() {
            c.shrink(READ_CHUNK);
        }
    }

    /// Waits until at least one byte can be read (or the peer closed: UnexpectedEof).
    pub async fn wait_readable(&mut self) -> io::Result<()> {
        if self.buffered() == 0 && self.comp.is_none() {
            let io = &self.io;
            let ready = std::future::poll_fn(|cx| match io.poll_read_ready(cx) {
                None => std::task::Poll::Ready(Ok(())),
                Some(r) => r,
            });
            ready.await?;
        }
        self.fill_at_least(1).await
    }

    /// For a peer that is closing: reads what it still sends until it closes, `limit` bytes are
    /// buffered, or `wait` passes.
    pub async fn read_until_closed(&mut self, limit: usize, wait: std::time::Duration) {
        let _ = crate::timer::timeout(wait, async {
            while self.buffered() < limit && self.fill_some().await.is_ok() {}
        })
        .await;
    }

    /// Consumes and returns the complete frames (headers included) already buffered; a partial
    /// frame at the end is dropped.
    pub fn take_whole_frames(&mut self) -> Vec<u8> {
        let buf = &self.rbuf[self.rpos..];
        let mut end = 0;
        while let Some(h) = buf.get(end..end + 4) {
            let len = frame_len(h);
            if buf.len() < end + 4 + len {
                break;
            }
            end += 4 + len;
        }
        let out = buf[..end].to_vec();
        self.rpos = self.rbuf.len();
        out
    }

    /// Takes one frame shorter than a full one into `out` when it is already read whole and
    /// its payload is at most `max` bytes, without waiting: the usual command arrives in one
    /// piece, and reading it needs no timer then. None leaves the stream as it was.
    pub fn take_whole_frame(&mut self, out: &mut Vec<u8>, max: usize) -> Option<Header> {
        let buf = self.rbuf.get(self.rpos..)?;
        let h = buf.get(..4)?;
        let len = frame_len(h);
        if len >= MAX_FRAME || len > max {
            return None;
        }
        let payload = buf.get(4..4 + len)?;
        let seq = h[3];
        out.clear();
        out.extend_from_slice(payload);
        self.rpos += 4 + len;
        Some(Header { len, seq })
    }

    pub async fn read_header(&mut self) -> io::Result<Header> {
        self.fill_at_least(4).await?;
        let h = &self.rbuf[self.rpos..self.rpos + 4];
        let header = Header {
            len: frame_len(h),
            seq: h[3],
        };
        self.rpos += 4;
        Ok(header)
    }

    /// The next `min(n, len)` payload bytes without consuming them (for classifying a packet).
    pub async fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        self.fill_at_least(n).await?;
        Ok(&self.rbuf[self.rpos..self.rpos + n])
    }

    /// Reads a whole payload of `len` bytes and returns it as a slice valid until the next read.
    pub async fn read_payload(&mut self, len: usize) -> io::Result<&[u8]> {
        self.shrink_buffers();
        self.fill_at_least(len).await?;
        let start = self.rpos;
        self.rpos += len;
        Ok(&self.rbuf[start..start + len])
    }

    /// Appends a payload of `len` bytes to `out`, reading what is not buffered yet straight into
    /// `out` (a large command is held once, not once here and once there). `out` grows with the
    /// bytes that arrive.
    pub async fn read_payload_into(&mut self, mut len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let have = len.min(self.buffered());
        out.extend_from_slice(&self.rbuf[self.rpos..self.rpos + have]);
        self.rpos += have;
        len -= have;
        if self.comp.is_some() {
            // through the decoder, a chunk at a time
            while len > 0 {
                self.read_more(len).await?;
                let n = len.min(self.buffered());
                out.extend_from_slice(&self.rbuf[self.rpos..self.rpos + n]);
                self.rpos += n;
                len -= n;
            }
            return Ok(());
        }
        while len > 0 {
            out.reserve(len.min(READ_CHUNK));
            let spare = (out.capacity() - out.len()).min(len);
            let n = (&mut self.io).take(spare as u64).read_buf(out).await?;
            self.read += n as u64;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            len -= n;
        }
        Ok(())
    }

    /// Reads one frame (header and payload) into `out`, returning its header.
    pub async fn read_frame_into(&mut self, out: &mut Vec<u8>) -> io::Result<Header> {
        let h = self.read_header().await?;
        out.clear();
        self.read_payload_into(h.len, out).await?;
        Ok(h)
    }

    /// Like `read_frame_into`, but refuses (InvalidData) a frame longer than `max` before reading
    /// or allocating anything for it: for packets whose size is known to be small (logins, auth
    /// rounds).
    pub async fn read_frame_capped(&mut self, out: &mut Vec<u8>, max: usize) -> io::Result<Header> {
        let h = self.read_header().await?;
        if h.len > max {
            return Err(too_large());
        }
        out.clear();
        self.read_payload_into(h.len, out).await?;
        Ok(h)
    }

    /// Copies `len` payload bytes to `dst` without holding them all, writing `dst` out whenever
    /// its buffer fills, and flushing it before this side would block so the peer sees data early.
    pub async fn copy_payload_to<D>(
        &mut self,
        mut len: usize,
        dst: &mut PacketStream<D>,
    ) -> Result<(), CopyError>
    where
        D: AsyncRead + AsyncWrite + DirectIo + Unpin,
    {
        while len > 0 {
            if self.buffered() == 0 {
                if dst.has_pending_output() {
                    dst.flush_partial().await.map_err(CopyError::Write)?;
                }
                self.fill_some().await.map_err(CopyError::Read)?;
            }
            let n = len.min(self.buffered());
            dst.wbuf
                .extend_from_slice(&self.rbuf[self.rpos..self.rpos + n]);
            self.rpos += n;
            len -= n;
            if dst.wbuf.len() >= WRITE_HIGH_WATER {
                dst.flush_partial().await.map_err(CopyError::Write)?;
            }
        }
        Ok(())
    }

    /// Moves the whole packets already read (each shorter than a full frame) to `dst`'s output
    /// in one copy, with their sequence ids shifted by `seq_delta`, without waiting for more:
    /// the relay of a result set whose packets arrived together costs one loop over their
    /// headers, not a read, a peek and a copy per packet. `each` sees every packet (its header,
    /// as the backend numbered it, its whole payload, and the bytes after it in the buffer)
    /// before it moves and says whether it moves and whether the walk goes on; it may take
    /// whole packets after it along (`Flow::NextWith`), which it has looked at in those bytes.
    pub fn move_whole_packets<D, F>(
        &mut self,
        dst: &mut PacketStream<D>,
        seq_delta: u8,
        mut each: F,
    ) where
        D: AsyncRead + AsyncWrite + DirectIo + Unpin,
        F: FnMut(Header, &[u8], &[u8]) -> Flow,
    {
        let buf = self.rbuf.get(self.rpos..).unwrap_or_default();
        let mut end = 0;
        while let Some(h) = buf.get(end..end + 4) {
            let len = frame_len(h);
            // a frame of 16 MiB - 1 continues in the next one: the caller streams those
            let Some(payload) = buf.get(end + 4..end + 4 + len).filter(|_| len < MAX_FRAME) else {
                break;
            };
            let after = buf.get(end + 4 + len..).unwrap_or_default();
            match each(Header { len, seq: h[3] }, payload, after) {
                Flow::Leave => break,
                Flow::Next => end += 4 + len,
                // (whole frames the callback walked in `after`; no further than the buffer,
                // whatever it says)
                Flow::NextWith(more) => {
                    debug_assert!(more <= after.len());
                    end += 4 + len + more.min(after.len());
                }
                Flow::TakeAndStop => {
                    end += 4 + len;
                    break;
                }
            }
        }
        if end == 0 {
            return;
        }
        let start = dst.wbuf.len();
        if start == 0 && self.rpos == 0 && dst.cuts.is_empty() {
            // nothing queued on the other side and the packets open this buffer: the buffers
            // trade places instead of the bytes moving; only a partial packet after them is
            // copied back
            std::mem::swap(&mut self.rbuf, &mut dst.wbuf);
            self.rbuf.clear();
            self.rbuf
                .extend_from_slice(dst.wbuf.get(end..).unwrap_or_default());
            dst.wbuf.truncate(end);
        } else {
            dst.wbuf.extend_from_slice(&buf[..end]);
            self.rpos += end;
        }
        if seq_delta != 0 {
            let out = &mut dst.wbuf[start..];
            let mut at = 0;
            while let Some(h) = out.get_mut(at..at + 4) {
                let len = frame_len(h);
                h[3] = h[3].wrapping_add(seq_delta);
                at += 4 + len;
            }
        }
    }

    /// Whether the next frame, of which at most a part is read, is small enough to be read
    /// whole into the buffer (`read_some` until `move_whole_packets` takes it) rather than
    /// streamed through.
    pub fn next_frame_fits(&self) -> bool {
        match self.rbuf.get(self.rpos..self.rpos + 4) {
            Some(h) => {
                let len = frame_len(h);
                len < MAX_FRAME && 4 + len <= READ_CHUNK
            }
            None => true,
        }
    }

    /// Reads what the socket has (at least one byte); UnexpectedEof when the peer closed.
    pub async fn read_some(&mut self) -> io::Result<()> {
        self.fill_some().await
    }

    /// Like `read_some`, but when nothing has arrived yet, first writes out what `dst` holds,
    /// so its peer sees a streamed result while this side waits (and nothing is written while
    /// the bytes are already there).
    pub async fn read_some_flushing<D>(
        &mut self,
        dst: &mut PacketStream<D>,
    ) -> Result<(), CopyError>
    where
        D: AsyncRead + AsyncWrite + DirectIo + Unpin,
    {
        if !dst.has_pending_output() {
            return self.fill_some().await.map_err(CopyError::Read);
        }
        let mut read = std::pin::pin!(self.fill_some());
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(read.as_mut(), cx))
        })
        .await;
        if let std::task::Poll::Ready(r) = first {
            return r.map_err(CopyError::Read);
        }
        dst.flush_partial().await.map_err(CopyError::Write)?;
        read.await.map_err(CopyError::Read)
    }

    /// Queues a frame header.
    pub fn queue_header(&mut self, len: usize, seq: u8) {
        let l = len as u32;
        self.wbuf
            .extend_from_slice(&[l as u8, (l >> 8) as u8, (l >> 16) as u8, seq]);
    }

    /// Queues raw payload bytes (after `queue_header`).
    pub fn queue_bytes(&mut self, b: &[u8]) {
        self.wbuf.extend_from_slice(b);
    }

    /// Queues a whole logical packet, split into frames as the protocol requires (a payload of
    /// 16 MiB - 1 or more continues in further frames, ending with a shorter, maybe empty, one).
    /// Returns the sequence id the next packet should use.
    pub fn queue_packet(&mut self, mut seq: u8, payload: &[u8]) -> u8 {
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_FRAME);
            self.queue_header(n, seq);
            self.wbuf.extend_from_slice(&rest[..n]);
            seq = seq.wrapping_add(1);
            rest = &rest[n..];
            if n < MAX_FRAME {
                return seq;
            }
        }
    }

    /// Writes out queued output when it has grown past the high-water mark.
    pub async fn flush_if_full(&mut self) -> io::Result<()> {
        if self.wbuf.len() >= WRITE_HIGH_WATER {
            self.flush_partial().await?;
        }
        Ok(())
    }

    /// Queues a command to the peer (this side is its client): sequence id 0, and under
    /// compression a new frame sequence.
    pub fn queue_command(&mut self, payload: &[u8]) {
        self.begin_command();
        self.queue_packet(0, payload);
    }

    /// Sends a command (see `queue_command`) and flushes; returns the next sequence id.
    pub async fn send_command(&mut self, payload: &[u8]) -> io::Result<u8> {
        self.begin_command();
        self.send_packet(0, payload).await
    }

    /// This side is the peer's server and waits for its next command: under compression the
    /// next frame read must be numbered 0 (`protocol::compress`).
    pub fn expect_command(&mut self) {
        if let Some(c) = self.comp.as_deref_mut() {
            c.expect_command();
        }
    }

    fn begin_command(&mut self) {
        if let Some(c) = self.comp.as_deref_mut() {
            if self.wbuf.is_empty() {
                c.restart_sequence();
            } else {
                self.cuts.push(self.wbuf.len());
            }
        }
    }

    /// Encodes the queued plain bytes into frames and writes them (compressed protocol).
    async fn flush_compressed(&mut self) -> io::Result<()> {
        let Some(c) = self.comp.as_deref_mut() else {
            return Ok(());
        };
        let mut from = 0;
        for end in self.cuts.drain(..).chain(std::iter::once(self.wbuf.len())) {
            let segment = self.wbuf.get_mut(from..end).unwrap_or_default();
            c.renumber(segment);
            encode_frames(&mut self.io, c, segment).await?;
            if end < self.wbuf.len() {
                c.restart_sequence();
            }
            from = end;
        }
        self.wbuf.clear();
        write_encoded(&mut self.io, c).await
    }

    /// Writes `data` as frames of its own, after what is queued (compressed protocol).
    async fn write_compressed(&mut self, data: &[u8]) -> io::Result<()> {
        self.flush_compressed().await?;
        let Some(c) = self.comp.as_deref_mut() else {
            return Ok(());
        };
        if c.has_header_in(data) {
            // not the case for the payloads this is used for; kept correct all the same
            let mut copy = data.to_vec();
            c.renumber(&mut copy);
            encode_frames(&mut self.io, c, &copy).await?;
        } else {
            c.pass_payload(data.len());
            encode_frames(&mut self.io, c, data).await?;
        }
        write_encoded(&mut self.io, c).await
    }

    /// Writes out what is queued. Under compression this also ends a response: the next packet
    /// the server leg writes is numbered like the next frame (`flush_partial` does not).
    pub async fn flush(&mut self) -> io::Result<()> {
        self.flush_with(true).await
    }

    /// Writes out what is queued in the middle of a response.
    pub async fn flush_partial(&mut self) -> io::Result<()> {
        self.flush_with(false).await
    }

    async fn flush_with(&mut self, response_end: bool) -> io::Result<()> {
        if self.comp.is_some() {
            self.flush_compressed().await?;
            if let (Some(c), true) = (self.comp.as_deref_mut(), response_end) {
                c.sync();
            }
            if self.wbuf.capacity() > 4 * WRITE_HIGH_WATER {
                self.wbuf.shrink_to(WRITE_HIGH_WATER);
            }
        } else if !self.wbuf.is_empty() {
            // the usual flush: the socket takes it all now, written without a future
            let mut sent = 0;
            match self.io.try_write_now(&self.wbuf) {
                Some(Ok(n)) => sent = n,
                Some(Err(e))
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    return Err(e)
                }
                _ => {}
            }
            if sent < self.wbuf.len() {
                // (what went is gone from the buffer before the wait: a flush dropped while it
                // waits sends the rest later, not the whole again)
                if sent > 0 {
                    self.wbuf.drain(..sent);
                    self.written += sent as u64;
                }
                self.io.write_all(&self.wbuf).await?;
            }
            self.written += self.wbuf.len() as u64;
            self.wbuf.clear();
            if self.wbuf.capacity() > 4 * WRITE_HIGH_WATER {
                self.wbuf.shrink_to(WRITE_HIGH_WATER);
            }
        }
        if self.io.flush_needed() {
            self.io.flush().await?;
        }
        Ok(())
    }

    /// Sends one packet and flushes. A large payload is written from where it is, frame by
    /// frame, instead of being copied into the write buffer first. Returns the next sequence id.
    pub async fn send_packet(&mut self, mut seq: u8, payload: &[u8]) -> io::Result<u8> {
        if payload.len() >= VECTORED_MIN && payload.len() < MAX_FRAME && self.comp.is_none() {
            if let Some(next) = self.send_vectored(seq, payload).await? {
                return Ok(next);
            }
        }
        if payload.len() < WRITE_HIGH_WATER {
            let next = self.queue_packet(seq, payload);
            self.flush().await?;
            return Ok(next);
        }
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_FRAME);
            self.queue_header(n, seq);
            if self.comp.is_some() {
                self.write_compressed(&rest[..n]).await?;
            } else {
                self.flush_partial().await?;
                self.io.write_all(&rest[..n]).await?;
                self.written += n as u64;
            }
            seq = seq.wrapping_add(1);
            rest = &rest[n..];
            if n < MAX_FRAME {
                self.flush().await?;
                return Ok(seq);
            }
        }
    }

    /// `send_packet` of a one-frame payload on an uncompressed stream that writes without a
    /// future: the queued bytes, the header and the payload in one vectored write, the payload
    /// read from where it is. None (nothing queued or written) where the socket does not
    /// write so (TLS, a client whose write waits on its timer).
    async fn send_vectored(&mut self, seq: u8, payload: &[u8]) -> io::Result<Option<u8>> {
        let queued = self.wbuf.len();
        self.queue_header(payload.len(), seq);
        let bufs = [io::IoSlice::new(&self.wbuf), io::IoSlice::new(payload)];
        let sent = match self.io.try_write_vectored_now(&bufs) {
            None => {
                self.wbuf.truncate(queued);
                return Ok(None);
            }
            Some(Ok(n)) => n,
            Some(Err(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                0
            }
            Some(Err(e)) => {
                // nothing went: the header without its payload is not left queued
                self.wbuf.truncate(queued);
                return Err(e);
            }
        };
        let head = self.wbuf.len();
        if sent < head {
            // the socket took less than the queue and the header: the rest of them, then the
            // payload, through the waiting writes (what went is gone from the buffer first)
            self.wbuf.drain(..sent);
            self.written += sent as u64;
            self.flush_partial().await?;
            self.io.write_all(payload).await?;
            self.written += payload.len() as u64;
        } else {
            self.wbuf.clear();
            self.written += sent as u64;
            let rest = payload.get(sent - head..).unwrap_or_default();
            if !rest.is_empty() {
                self.io.write_all(rest).await?;
            }
            self.written += rest.len() as u64;
        }
        if self.io.flush_needed() {
            self.io.flush().await?;
        }
        Ok(Some(seq.wrapping_add(1)))
    }

    pub async fn shutdown(&mut self) {
        let _ = self.flush().await;
        let _ = self.io.shutdown().await;
    }

    pub fn into_inner(self) -> S {
        self.io
    }
}

/// Encodes `data` as frames, writing the encoded bytes out whenever they reach four pieces.
async fn encode_frames<S: AsyncWrite + Unpin>(
    io: &mut S,
    c: &mut Codec,
    data: &[u8],
) -> io::Result<()> {
    for piece in data.chunks(PIECE) {
        c.encode_frame(piece);
        if c.output().len() >= 4 * PIECE {
            write_encoded(io, c).await?;
        }
    }
    Ok(())
}

/// Writes out the frames encoded so far.
async fn write_encoded<S: AsyncWrite + Unpin>(io: &mut S, c: &mut Codec) -> io::Result<()> {
    if !c.output().is_empty() {
        io.write_all(c.output()).await?;
        c.output_written();
    }
    Ok(())
}

/// What `move_whole_packets` does with the packet it showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Move it and look at the next one.
    Next,
    /// Move it and the whole packets that take the given number of bytes after it (the callback
    /// walked their headers in the bytes it was shown: a count that ends inside a packet would
    /// misnumber the rest), and look at the packet after those.
    NextWith(usize),
    /// Move it and stop.
    TakeAndStop,
    /// Stop before it: it stays unread.
    Leave,
}

/// A failed copy says which side failed, because the session reacts differently to each.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("read failed: {0}")]
    Read(io::Error),
    #[error("write failed: {0}")]
    Write(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_split_and_join_at_16_mib() {
        let (a, b) = tokio::io::duplex(1 << 20);
        let mut w = PacketStream::new(a);
        let mut r = PacketStream::new(b);
        let payload = vec![7u8; MAX_FRAME];
        let writer = tokio::spawn(async move {
            let next = w.queue_packet(0, &payload);
            w.flush().await.unwrap();
            next
        });
        let h1 = r.read_header().await.unwrap();
        assert_eq!((h1.len, h1.seq), (MAX_FRAME, 0));
        assert_eq!(r.read_payload(h1.len).await.unwrap().len(), MAX_FRAME);
        let h2 = r.read_header().await.unwrap();
        assert_eq!((h2.len, h2.seq), (0, 1));
        assert_eq!(writer.await.unwrap(), 2);
    }

    /// Over a real socket a flush writes directly (`DirectIo`): small packets whole, and a
    /// buffer larger than the socket takes at once partly, the rest through `AsyncWrite`; the
    /// peer gets every byte, in order.
    #[tokio::test]
    async fn a_flush_over_a_socket_delivers_every_byte_in_order() {
        use tokio::io::AsyncReadExt;
        let (connected, mut peer) = socket_pair().await;
        let mut w = PacketStream::new(connected);
        let big: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 251) as u8).collect();
        let mut expected = Vec::new();
        for i in 0..3u8 {
            w.queue_packet(i, &[i; 5]);
            w.flush().await.unwrap();
            expected.extend_from_slice(&[5, 0, 0, i, i, i, i, i, i]);
        }
        expected.extend_from_slice(&big);
        let total = expected.len();
        let reader = tokio::spawn(async move {
            let mut got = vec![0u8; total];
            peer.read_exact(&mut got).await.unwrap();
            got
        });
        w.queue_bytes(&big);
        w.flush().await.unwrap();
        assert_eq!(w.written, total as u64);
        assert!(reader.await.unwrap() == expected, "bytes differ");
    }

    /// Over a real socket a packet of `VECTORED_MIN` bytes or more goes out from where it is in
    /// one vectored write with what was queued before it; one the socket takes only partly
    /// (8 MiB, while the peer has not read yet) and a short one (copied) arrive too: every
    /// byte, in order, numbered as `queue_packet` numbers them, and counted as written.
    #[tokio::test]
    async fn packets_sent_from_where_they_are_arrive_whole_and_in_order() {
        use tokio::io::AsyncReadExt;
        let (connected, mut peer) = socket_pair().await;
        let mut w = PacketStream::new(connected);
        let sizes = [
            VECTORED_MIN - 1,
            VECTORED_MIN,
            9_000,
            WRITE_HIGH_WATER,
            8 << 20,
            3,
        ];
        let mut expected = Vec::new();
        let mut model = PacketStream::new(tokio::io::duplex(1).0);
        model.queue_packet(7, b"queued first");
        w.queue_packet(7, b"queued first");
        let mut payloads = Vec::new();
        for (i, n) in sizes.iter().enumerate() {
            let p: Vec<u8> = (0..*n).map(|j| ((j * 7 + i) % 253) as u8).collect();
            let seq = model.queue_packet(i as u8, &p);
            payloads.push((i as u8, p, seq));
        }
        expected.extend_from_slice(&model.wbuf);
        let total = expected.len();
        let reader = tokio::spawn(async move {
            let mut got = vec![0u8; total];
            peer.read_exact(&mut got).await.unwrap();
            got
        });
        for (seq, p, next) in &payloads {
            assert_eq!(w.send_packet(*seq, p).await.unwrap(), *next);
            assert!(w.wbuf.is_empty(), "nothing left queued after a send");
        }
        assert_eq!(w.written, total as u64);
        assert!(reader.await.unwrap() == expected, "bytes differ");
    }

    /// On a real socket the wait for bytes waits on the socket's readiness (`DirectIo`), then
    /// reads: bytes that come later are there after it, and a peer that closes ends it with an
    /// error.
    #[tokio::test]
    async fn a_wait_on_a_socket_ends_with_the_bytes_or_the_close() {
        use tokio::io::AsyncWriteExt;
        let (connected, mut peer) = socket_pair().await;
        let mut r = PacketStream::new(connected);
        let (go, gone) = tokio::sync::oneshot::channel::<()>();
        let writer = tokio::spawn(async move {
            let _ = gone.await;
            peer.write_all(&[1, 0, 0, 0, 42]).await.unwrap();
            peer
        });
        {
            let mut wait = std::pin::pin!(r.wait_readable());
            // nothing sent yet: the wait waits
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            go.send(()).unwrap();
            wait.await.unwrap();
        }
        let peer = writer.await.unwrap();
        assert_eq!(r.take_whole_frames(), vec![1, 0, 0, 0, 42]);
        drop(peer);
        assert!(
            r.wait_readable().await.is_err(),
            "a closed peer ends the wait"
        );
    }

    /// Two ends of a loopback TCP connection: the connecting one and the accepted one.
    async fn socket_pair() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (accepted, connected) = tokio::join!(l.accept(), tokio::net::TcpStream::connect(addr));
        (connected.unwrap(), accepted.unwrap().0)
    }

    /// Polls a future once: its output, or None when it is pending.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = f;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }

    #[tokio::test]
    async fn eof_mid_packet_is_an_error() {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&[10, 0, 0, 0, 1, 2]).await.unwrap();
        drop(a);
        let mut r = PacketStream::new(b);
        let h = r.read_header().await.unwrap();
        assert_eq!(h.len, 10);
        assert_eq!(
            r.read_payload(h.len).await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[tokio::test]
    async fn a_promised_large_frame_costs_nothing_until_it_arrives() {
        let (mut a, b) = tokio::io::duplex(1 << 16);
        // header: 16 MiB - 1, then only two payload bytes
        a.write_all(&[0xff, 0xff, 0xff, 0, 1, 2]).await.unwrap();
        let mut r = PacketStream::new(b);
        let h = r.read_header().await.unwrap();
        assert_eq!(h.len, MAX_FRAME);
        let mut out = Vec::new();
        let read = crate::timer::timeout(
            std::time::Duration::from_millis(50),
            r.read_payload_into(h.len, &mut out),
        )
        .await;
        assert!(read.is_err(), "still waiting for the rest");
        assert!(
            r.buffer_capacity() <= 2 * READ_CHUNK,
            "{}",
            r.buffer_capacity()
        );
    }

    #[tokio::test]
    async fn whole_frames_are_taken_and_a_partial_one_dropped() {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&[2, 0, 0, 0, 0xff, 1, 3, 0, 0, 1, 9])
            .await
            .unwrap();
        drop(a);
        let mut r = PacketStream::new(b);
        r.wait_readable().await.unwrap();
        while r.fill_some().await.is_ok() {}
        assert_eq!(r.take_whole_frames(), vec![2, 0, 0, 0, 0xff, 1]);
        assert_eq!(r.buffered(), 0);
    }

    /// A stream that has read `bytes` (and then the peer's end).
    async fn read_all(bytes: &[u8]) -> PacketStream<tokio::io::DuplexStream> {
        let (mut a, b) = tokio::io::duplex(bytes.len() + 1);
        a.write_all(bytes).await.unwrap();
        drop(a);
        let mut r = PacketStream::new(b);
        while r.read_some().await.is_ok() {}
        r
    }

    fn sink() -> PacketStream<tokio::io::DuplexStream> {
        PacketStream::new(tokio::io::duplex(16).0)
    }

    #[tokio::test]
    async fn whole_packets_move_in_one_piece_renumbered() {
        // three packets and the first two bytes of a fourth
        let input = [1, 0, 0, 5, 0xaa, 2, 0, 0, 6, 1, 2, 0, 0, 0, 7, 9, 0];
        let mut r = read_all(&input).await;
        let mut w = sink();
        let mut seen = Vec::new();
        r.move_whole_packets(&mut w, 3, |h, payload, _| {
            seen.push((h.len, h.seq, payload.to_vec()));
            Flow::Next
        });
        assert_eq!(
            seen,
            vec![(1, 5, vec![0xaa]), (2, 6, vec![1, 2]), (0, 7, vec![])]
        );
        assert_eq!(
            w.pending_output(),
            &[1, 0, 0, 8, 0xaa, 2, 0, 0, 9, 1, 2, 0, 0, 0, 10]
        );
        // the partial packet stays to be read
        assert_eq!(r.buffered(), 2);
        assert!(r.next_frame_fits());
        assert_eq!(r.rbuf[r.rpos..], [9, 0]);
    }

    #[tokio::test]
    async fn whole_packets_after_queued_output_are_copied_and_the_walk_stops_when_told() {
        let input = [1, 0, 0, 0, 1, 1, 0, 0, 1, 2, 1, 0, 0, 2, 3];
        let mut r = read_all(&input).await;
        let mut w = sink();
        w.queue_bytes(b"q");
        // the second packet ends the walk; the third stays
        let mut n = 0;
        r.move_whole_packets(&mut w, 0, |_, _, _| {
            n += 1;
            if n == 2 {
                Flow::TakeAndStop
            } else {
                Flow::Next
            }
        });
        assert_eq!(w.pending_output(), b"q\x01\0\0\0\x01\x01\0\0\x01\x02");
        assert_eq!(r.buffered(), 5);
        // a packet left alone is not moved
        r.move_whole_packets(&mut w, 0, |_, _, _| Flow::Leave);
        assert_eq!(r.buffered(), 5);
        assert_eq!(w.pending_output().len(), 11);
    }

    #[tokio::test]
    async fn packets_taken_along_move_renumbered_and_the_walk_goes_on_after_them() {
        // four packets: the first takes the next two along, the fourth is shown
        let input = [
            1, 0, 0, 0, 0xa, 1, 0, 0, 1, 0xb, 0, 0, 0, 2, 1, 0, 0, 3, 0xd,
        ];
        let mut r = read_all(&input).await;
        let mut w = sink();
        let mut seen = Vec::new();
        r.move_whole_packets(&mut w, 2, |h, payload, after| {
            seen.push((h.seq, payload.to_vec()));
            if h.seq == 0 {
                assert_eq!(after.len(), 14);
                Flow::NextWith(9)
            } else {
                Flow::Next
            }
        });
        assert_eq!(seen, vec![(0, vec![0xa]), (3, vec![0xd])]);
        assert_eq!(
            w.pending_output(),
            &[1, 0, 0, 2, 0xa, 1, 0, 0, 3, 0xb, 0, 0, 0, 4, 1, 0, 0, 5, 0xd]
        );
        assert_eq!(r.buffered(), 0);
    }

    #[tokio::test]
    async fn a_full_frame_is_never_moved_in_bulk() {
        let mut input = vec![0xff, 0xff, 0xff, 0];
        input.extend(std::iter::repeat_n(1u8, 100));
        let mut r = read_all(&input).await;
        let mut w = sink();
        r.move_whole_packets(&mut w, 0, |_, _, _| Flow::Next);
        assert!(!w.has_pending_output());
        assert!(!r.next_frame_fits(), "streamed, not read whole");
    }

    #[tokio::test]
    async fn waiting_for_more_writes_out_what_is_queued_first() {
        let (client_end, mut client_peer) = tokio::io::duplex(1024);
        let (mut backend_peer, backend_end) = tokio::io::duplex(1024);
        let mut dst = PacketStream::new(client_end);
        let mut src = PacketStream::new(backend_end);
        dst.queue_bytes(b"rows so far");
        let reader = tokio::spawn(async move {
            src.read_some_flushing(&mut dst).await.unwrap();
            (src.buffered(), dst.has_pending_output())
        });
        // the queued rows reach the client while the backend has sent nothing more
        let mut got = [0u8; 11];
        let seen = std::time::Duration::from_secs(10);
        crate::timer::timeout(seen, client_peer.read_exact(&mut got))
            .await
            .expect("the queued bytes were not written before the wait")
            .unwrap();
        assert_eq!(&got, b"rows so far");
        backend_peer.write_all(b"more").await.unwrap();
        assert_eq!(reader.await.unwrap(), (4, false));
    }

    #[tokio::test]
    async fn bytes_already_there_are_read_without_writing_anything() {
        let (mut peer, end) = tokio::io::duplex(64);
        peer.write_all(b"next").await.unwrap();
        let mut src = PacketStream::new(end);
        let mut dst = sink();
        dst.queue_bytes(b"queued");
        src.read_some_flushing(&mut dst).await.unwrap();
        assert_eq!(src.buffered(), 4);
        assert_eq!(
            dst.pending_output(),
            b"queued",
            "nothing written: no wait came"
        );
    }

    #[tokio::test]
    async fn a_command_read_whole_is_taken_without_waiting() {
        let mut r = read_all(&[3, 0, 0, 0, 3, b'a', b'b', 2, 0]).await;
        let mut out = vec![7];
        // over the size allowed: left for the reader that reports it
        assert_eq!(r.take_whole_frame(&mut out, 2), None);
        assert_eq!(out, [7]);
        let h = r.take_whole_frame(&mut out, 3).unwrap();
        assert_eq!((h.len, h.seq), (3, 0));
        assert_eq!(out, [3, b'a', b'b']);
        // a frame not read whole is not taken
        assert_eq!(r.take_whole_frame(&mut out, 100), None);
        assert_eq!(r.buffered(), 2);
    }

    #[tokio::test]
    async fn capped_frames_are_refused_before_reading() {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&[0, 0, 1, 0]).await.unwrap(); // 64 KiB promised
        let mut r = PacketStream::new(b);
        let mut out = Vec::new();
        let e = r.read_frame_capped(&mut out, 1024).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(out.capacity() == 0);
    }

    #[tokio::test]
    async fn an_idle_stream_holds_no_buffer_while_it_waits() {
        let (mut peer, end) = tokio::io::duplex(1 << 16);
        let mut s = PacketStream::new(end);
        // a command and its answer: both buffers in use
        peer.write_all(&[1, 0, 0, 0, 0x0e]).await.unwrap();
        let mut out = Vec::new();
        s.read_frame_into(&mut out).await.unwrap();
        s.send_packet(1, &[0, 0, 0, 2, 0, 0, 0]).await.unwrap();
        assert!(s.buffer_capacity() > 0);
        s.release_idle();
        assert_eq!(s.buffer_capacity(), 0);
        // waiting for the next command reserves nothing while nothing comes
        let wait =
            crate::timer::timeout(std::time::Duration::from_millis(20), s.wait_readable_lean());
        assert!(wait.await.is_err(), "nothing was sent");
        assert_eq!(s.buffer_capacity(), 0);
        // and reads it whole when it comes
        peer.write_all(&[3, 0, 0, 0, 3, 0xab, 0xcd]).await.unwrap();
        s.wait_readable_lean().await.unwrap();
        let h = s.take_whole_frame(&mut out, 100).unwrap();
        assert_eq!((h.len, h.seq, &out[..]), (3, 0, &[3, 0xab, 0xcd][..]));
        // bytes not consumed yet are kept: nothing is given back then
        peer.write_all(&[1, 0]).await.unwrap();
        s.wait_readable().await.unwrap();
        s.release_idle();
        assert_eq!(s.buffered(), 2);
        // a peer that closes while the stream is idle is an end, as before
        s.take_whole_frames();
        s.release_idle();
        assert_eq!(s.buffer_capacity(), 0);
        drop(peer);
        assert_eq!(
            s.wait_readable_lean().await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(s.buffer_capacity(), 0);
    }

    #[tokio::test]
    async fn buffers_shrink_after_a_large_packet() {
        let (a, b) = tokio::io::duplex(1 << 20);
        let mut w = PacketStream::new(a);
        let mut r = PacketStream::new(b);
        let payload = vec![9u8; 5 << 20];
        let writer = tokio::spawn(async move {
            w.send_packet(0, &payload).await.unwrap();
            w.send_packet(1, b"small").await.unwrap();
            w
        });
        let h = r.read_header().await.unwrap();
        assert_eq!(r.read_payload(h.len).await.unwrap().len(), 5 << 20);
        assert!(r.buffer_capacity() >= 5 << 20);
        let h = r.read_header().await.unwrap();
        assert_eq!(r.read_payload(h.len).await.unwrap(), b"small");
        r.shrink_buffers();
        assert!(r.buffer_capacity() <= READ_CHUNK + WRITE_HIGH_WATER);
        let w = writer.await.unwrap();
        assert!(w.buffer_capacity() <= 2 * WRITE_HIGH_WATER);
    }
}
