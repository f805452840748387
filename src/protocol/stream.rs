//! Buffered packet I/O over any byte stream.
//!
//! One read buffer and one write buffer per connection, both bounded: packets the proxy must
//! inspect are read whole (they are small), everything else is copied through in chunks, so a
//! result never has to fit in memory.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::constants::MAX_FRAME;

const READ_CHUNK: usize = 64 * 1024;
/// Pending output is written out once it reaches this size.
const WRITE_HIGH_WATER: usize = 64 * 1024;

pub struct PacketStream<S> {
    io: S,
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    wbuf: Vec<u8>,
}

/// Header of one frame: payload length and sequence id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub len: usize,
    pub seq: u8,
}

impl<S: AsyncRead + AsyncWrite + Unpin> PacketStream<S> {
    pub fn new(io: S) -> Self {
        PacketStream {
            io,
            rbuf: vec![0; READ_CHUNK],
            rpos: 0,
            rend: 0,
            wbuf: Vec::with_capacity(WRITE_HIGH_WATER),
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// Bytes already read from the socket and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.rend - self.rpos
    }

    pub fn has_pending_output(&self) -> bool {
        !self.wbuf.is_empty()
    }

    /// Reads more bytes from the socket; errors with UnexpectedEof when the peer closed.
    async fn fill_some(&mut self) -> io::Result<()> {
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        } else if self.rend == self.rbuf.len() {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
        }
        let n = self.io.read(&mut self.rbuf[self.rend..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.rend += n;
        Ok(())
    }

    /// Makes sure `n` bytes are buffered, growing the buffer when one packet is larger than it.
    async fn fill_at_least(&mut self, n: usize) -> io::Result<()> {
        if self.buffered() >= n {
            return Ok(());
        }
        if self.rbuf.len() - self.rpos < n {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
            if self.rbuf.len() < n {
                self.rbuf.resize(n, 0);
            }
        }
        while self.buffered() < n {
            let end = self.rbuf.len();
            let m = self.io.read(&mut self.rbuf[self.rend..end]).await?;
            if m == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.rend += m;
        }
        Ok(())
    }

    /// Gives back memory after an unusually large packet.
    fn shrink_read_buffer(&mut self) {
        if self.rbuf.len() > READ_CHUNK && self.buffered() <= READ_CHUNK {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
            self.rbuf.truncate(READ_CHUNK);
            self.rbuf.shrink_to_fit();
        }
    }

    pub async fn read_header(&mut self) -> io::Result<Header> {
        self.fill_at_least(4).await?;
        let h = &self.rbuf[self.rpos..self.rpos + 4];
        let header = Header {
            len: usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16,
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
        self.shrink_read_buffer();
        self.fill_at_least(len).await?;
        let start = self.rpos;
        self.rpos += len;
        Ok(&self.rbuf[start..start + len])
    }

    /// Reads one frame (header and payload) into `out`, returning its header.
    pub async fn read_frame_into(&mut self, out: &mut Vec<u8>) -> io::Result<Header> {
        let h = self.read_header().await?;
        out.clear();
        out.extend_from_slice(self.read_payload(h.len).await?);
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
        D: AsyncRead + AsyncWrite + Unpin,
    {
        while len > 0 {
            if self.buffered() == 0 {
                if dst.has_pending_output() {
                    dst.flush().await.map_err(CopyError::Write)?;
                }
                self.fill_some().await.map_err(CopyError::Read)?;
            }
            let n = len.min(self.buffered());
            dst.wbuf
                .extend_from_slice(&self.rbuf[self.rpos..self.rpos + n]);
            self.rpos += n;
            len -= n;
            if dst.wbuf.len() >= WRITE_HIGH_WATER {
                dst.flush().await.map_err(CopyError::Write)?;
            }
        }
        Ok(())
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
            self.flush().await?;
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> io::Result<()> {
        if !self.wbuf.is_empty() {
            self.io.write_all(&self.wbuf).await?;
            self.wbuf.clear();
            if self.wbuf.capacity() > 4 * WRITE_HIGH_WATER {
                self.wbuf.shrink_to(WRITE_HIGH_WATER);
            }
        }
        self.io.flush().await
    }

    /// Queues and flushes one packet.
    pub async fn send_packet(&mut self, seq: u8, payload: &[u8]) -> io::Result<u8> {
        let next = self.queue_packet(seq, payload);
        self.flush().await?;
        Ok(next)
    }

    pub async fn shutdown(&mut self) {
        let _ = self.flush().await;
        let _ = self.io.shutdown().await;
    }

    pub fn into_inner(self) -> S {
        self.io
    }
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
}
