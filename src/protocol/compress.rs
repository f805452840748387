//! The compressed protocol (`CLIENT_COMPRESS`, zlib), as a codec without I/O.
//!
//! After the login's OK both sides wrap the ordinary packet stream in frames of their own: a
//! 7-byte header (3 bytes compressed length, 1 byte sequence id, 3 bytes uncompressed length,
//! 0 meaning "stored as it is") and the zlib data. A frame may hold several packets or a part of
//! one; the packets inside keep their own headers. The frame sequence id is one counter per
//! connection: a frame read sets it to that frame's id + 1, a frame written uses it and counts
//! on, and the side that starts a command starts again at 0 (`PacketStream::queue_command`).
//!
//! The packets inside are numbered too. A server in compressed mode numbers them on, frame
//! boundaries or not, except that each time it ends a response (an OK, an ERR, the EOF or OK
//! that ends a result set, a LOCAL INFILE request: MariaDB's `net_flush`) the packet counter
//! jumps to the frame counter; and a frame read sets both. Clients check this (mysql_async
//! accepts an inner id equal to its count or to the last frame's id, and re-synchronises at
//! each next result set). So on the leg where the proxy is the server, the codec renumbers the
//! packets it writes the same way (`renumber`, `sync`); where it is the client, servers do not
//! check inner ids and the proxy's own numbering stays.
//!
//! A server checks the frames it reads like packets: the first frame of a command has sequence id
//! 0 and every later one the connection's counter (MariaDB's `my_real_read`; packets inside
//! frames are not checked). On the leg where the proxy is the server the codec does the same
//! and refuses a frame out of order with `OutOfOrder` (the session answers 1156, as MariaDB).
//!
//! Decoding is streamed: a frame is inflated as the reader asks for bytes, at most one read
//! chunk at a time, so neither a large frame nor a small frame that inflates to 16 MiB makes the
//! proxy hold more than the packets it was going to read anyway. Every frame is checked: its
//! zlib stream must end exactly at the frame's end and inflate to exactly the length it
//! declares, or the connection fails with InvalidData.

use std::io;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Frame header size.
pub const HEADER: usize = 7;
/// Pieces shorter than this are sent stored (MySQL's MIN_COMPRESS_LENGTH).
const MIN_COMPRESS: usize = 50;
/// The most plain bytes one written frame carries: compressed output stays this small too.
pub const PIECE: usize = 64 * 1024;

fn bad(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// A frame read on the server leg carried another sequence id than the one due (the error
/// inside the `io::Error` a decode returns; `found` is the frame's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfOrder {
    pub found: u8,
    pub expected: u8,
}

impl std::fmt::Display for OutOfOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "compressed frame out of order (found {}, expected {})",
            self.found, self.expected
        )
    }
}

impl std::error::Error for OutOfOrder {}

impl OutOfOrder {
    /// The `OutOfOrder` inside `e`, if that is what it is.
    pub fn of(e: &io::Error) -> Option<OutOfOrder> {
        e.get_ref()?.downcast_ref::<OutOfOrder>().copied()
    }
}

/// What a decode step did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// This many plain bytes were appended.
    Produced(usize),
    /// More compressed bytes must be read first.
    NeedInput,
}

/// The frame being read.
struct InFrame {
    /// Bytes of the frame's body not consumed yet.
    left_in: usize,
    /// Plain bytes it still has to give (its declared length, or its body when stored).
    left_out: usize,
    stored: bool,
}

pub struct Codec {
    /// Compressed bytes read from the socket; `raw[rpos..]` is not consumed yet.
    raw: Vec<u8>,
    rpos: usize,
    frame: Option<InFrame>,
    inflate: Decompress,
    deflate: Compress,
    /// Sequence id of the next frame written.
    seq: u8,
    /// Encoded frames waiting to be written.
    out: Vec<u8>,
    /// The proxy is the server on this leg: packets written are renumbered.
    server: bool,
    /// Sequence id of the next packet written (server leg).
    plain: u8,
    /// The next frame read begins a command (server leg): its sequence id must be 0.
    command_start: bool,
    /// Where the outgoing packet stream is: bytes of the current header seen (0 = none), the
    /// length read from it so far, payload bytes still to pass.
    hpos: u8,
    hlen: usize,
    left: usize,
    /// Encoded bytes written out so far.
    written: u64,
}

impl Default for Codec {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl Codec {
    /// A codec for a stream whose unconsumed bytes `pending` were read before compression
    /// began (a client may send its first command right behind its login).
    pub fn new(pending: Vec<u8>) -> Self {
        Codec {
            raw: pending,
            rpos: 0,
            frame: None,
            inflate: Decompress::new(true),
            deflate: Compress::new(Compression::default(), true),
            seq: 0,
            out: Vec::new(),
            server: false,
            plain: 0,
            command_start: true,
            hpos: 0,
            hlen: 0,
            left: 0,
            written: 0,
        }
    }

    /// A codec for the leg where the proxy is the server (packets written are renumbered).
    pub fn for_server(pending: Vec<u8>) -> Self {
        Codec {
            server: true,
            ..Self::new(pending)
        }
    }

    pub fn is_server(&self) -> bool {
        self.server
    }

    /// The next frame read begins a command (server leg): it must be numbered 0. Frames read
    /// afterwards, until the next call, continue the connection's count.
    pub fn expect_command(&mut self) {
        self.command_start = true;
    }

    /// A response ended (server leg): the next packet is numbered like the next frame.
    pub fn sync(&mut self) {
        self.plain = self.seq;
    }

    /// Whether `data`, the next bytes of the outgoing stream, holds a packet header (else it
    /// is all payload and passes as it is).
    pub fn has_header_in(&self, data: &[u8]) -> bool {
        self.server && (self.hpos > 0 || self.left < data.len())
    }

    /// Walks the next bytes of the outgoing packet stream, giving each packet header the
    /// server leg's sequence id (no-op on the client leg).
    pub fn renumber(&mut self, mut data: &mut [u8]) {
        if !self.server {
            return;
        }
        while !data.is_empty() {
            if self.left > 0 {
                let n = self.left.min(data.len());
                self.left -= n;
                data = &mut data[n..];
                continue;
            }
            let b = &mut data[0];
            match self.hpos {
                0..=2 => {
                    self.hlen |= usize::from(*b) << (8 * self.hpos);
                    self.hpos += 1;
                }
                _ => {
                    *b = self.plain;
                    self.plain = self.plain.wrapping_add(1);
                    self.left = self.hlen;
                    self.hlen = 0;
                    self.hpos = 0;
                }
            }
            data = &mut data[1..];
        }
    }

    /// Passes payload bytes that `has_header_in` said hold no header.
    pub fn pass_payload(&mut self, n: usize) {
        self.left = self.left.saturating_sub(n);
    }

    /// Compressed bytes already read and not decoded.
    pub fn pending_input(&self) -> usize {
        self.raw.len() - self.rpos
    }

    /// Whether a frame has begun and not ended (its remaining plain bytes are owed).
    pub fn in_frame(&self) -> bool {
        self.frame.is_some()
    }

    /// The buffer the socket reads into, with room for at least `want` more bytes (consumed
    /// bytes are dropped first; nothing is reserved beyond `want`).
    pub fn input_buffer(&mut self, want: usize) -> &mut Vec<u8> {
        if self.rpos == self.raw.len() {
            self.raw.clear();
            self.rpos = 0;
        } else if self.raw.capacity() - self.raw.len() < want && self.rpos > 0 {
            self.raw.drain(..self.rpos);
            self.rpos = 0;
        }
        if self.raw.capacity() - self.raw.len() < want {
            self.raw.reserve(want);
        }
        &mut self.raw
    }

    /// How many compressed bytes the next step needs at least (for sizing a socket read).
    pub fn input_wanted(&self) -> usize {
        match &self.frame {
            Some(f) => f.left_in.saturating_sub(self.pending_input()).max(1),
            None => HEADER.saturating_sub(self.pending_input()).max(1),
        }
    }

    /// Gives back memory after a large frame.
    pub fn shrink(&mut self, keep: usize) {
        if self.raw.capacity() > keep && self.pending_input() <= keep {
            self.raw.drain(..self.rpos);
            self.rpos = 0;
            self.raw.shrink_to(keep);
        }
        if self.out.is_empty() && self.out.capacity() > 2 * PIECE {
            self.out.shrink_to(2 * PIECE);
        }
    }

    /// Appends up to `limit` (at least 1) plain bytes to `dst` from the frames read so far.
    pub fn decode(&mut self, dst: &mut Vec<u8>, limit: usize) -> io::Result<Step> {
        let limit = limit.max(1);
        loop {
            let Some(f) = self.frame.as_mut() else {
                let Some(h) = self.raw.get(self.rpos..self.rpos + HEADER) else {
                    return Ok(Step::NeedInput);
                };
                let clen = super::wire::u24(h[0], h[1], h[2]);
                let ulen = super::wire::u24(h[4], h[5], h[6]);
                if self.server {
                    let expected = if self.command_start { 0 } else { self.seq };
                    if h[3] != expected {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            OutOfOrder {
                                found: h[3],
                                expected,
                            },
                        ));
                    }
                    self.command_start = false;
                }
                self.seq = h[3].wrapping_add(1);
                self.plain = self.seq;
                self.rpos += HEADER;
                if clen == 0 {
                    if ulen != 0 {
                        return Err(bad("empty compressed frame declares data"));
                    }
                    continue;
                }
                let stored = ulen == 0;
                if !stored {
                    self.inflate.reset(true);
                }
                self.frame = Some(InFrame {
                    left_in: clen,
                    left_out: if stored { clen } else { ulen },
                    stored,
                });
                continue;
            };
            let avail = f.left_in.min(self.raw.len() - self.rpos);
            let input = &self.raw[self.rpos..self.rpos + avail];
            if f.stored {
                if avail == 0 {
                    return Ok(Step::NeedInput);
                }
                let n = avail.min(limit);
                dst.extend_from_slice(&input[..n]);
                self.rpos += n;
                f.left_in -= n;
                f.left_out -= n;
                if f.left_in == 0 {
                    self.frame = None;
                }
                return Ok(Step::Produced(n));
            }
            let (in0, out0) = (self.inflate.total_in(), self.inflate.total_out());
            let room = f.left_out.min(limit);
            let status = if room == 0 {
                // everything declared is out: what is left must be the end of the zlib stream
                let mut scratch = [0u8; 16];
                self.inflate
                    .decompress(input, &mut scratch, FlushDecompress::None)
            } else {
                let at = dst.len();
                dst.resize(at + room, 0);
                let s = self
                    .inflate
                    .decompress(input, &mut dst[at..], FlushDecompress::None);
                let made = (self.inflate.total_out() - out0) as usize;
                dst.truncate(at + made.min(room));
                s
            };
            let consumed = (self.inflate.total_in() - in0) as usize;
            let produced = (self.inflate.total_out() - out0) as usize;
            let status = status.map_err(|_| bad("corrupt compressed frame"))?;
            if produced > f.left_out || consumed > f.left_in {
                return Err(bad("compressed frame inflates past its declared length"));
            }
            self.rpos += consumed;
            f.left_in -= consumed;
            f.left_out -= produced;
            if status == Status::StreamEnd {
                if f.left_in != 0 || f.left_out != 0 {
                    return Err(bad("compressed frame length does not match its data"));
                }
                self.frame = None;
            } else if consumed == 0 && produced == 0 {
                if avail < f.left_in {
                    return Ok(Step::NeedInput);
                }
                return Err(bad("compressed frame ends before its data"));
            }
            if produced > 0 {
                return Ok(Step::Produced(produced));
            }
        }
    }

    /// Starts a new command: the next frame written has sequence id 0.
    pub fn restart_sequence(&mut self) {
        self.seq = 0;
    }

    /// Encodes `data` as frames (at most PIECE plain bytes each) after the ones waiting.
    pub fn encode(&mut self, data: &[u8]) {
        for piece in data.chunks(PIECE) {
            self.encode_frame(piece);
        }
    }

    /// Encodes one frame of `piece` (at most 16 MiB - 1 bytes; PIECE keeps output small).
    pub fn encode_frame(&mut self, piece: &[u8]) {
        let start = self.out.len();
        self.out.resize(start + HEADER + piece.len(), 0);
        let mut deflated = 0;
        if piece.len() >= MIN_COMPRESS {
            self.deflate.reset();
            let body = &mut self.out[start + HEADER..];
            // room for exactly the plain size: a frame that would not shrink is stored
            if let Ok(Status::StreamEnd) = self.deflate.compress(piece, body, FlushCompress::Finish)
            {
                deflated = self.deflate.total_out() as usize;
            }
        }
        let (clen, ulen) = if deflated > 0 && deflated < piece.len() {
            self.out.truncate(start + HEADER + deflated);
            (deflated, piece.len())
        } else {
            self.out[start + HEADER..].copy_from_slice(piece);
            (piece.len(), 0)
        };
        let h = &mut self.out[start..start + HEADER];
        h[..3].copy_from_slice(&(clen as u32).to_le_bytes()[..3]);
        h[3] = self.seq;
        h[4..].copy_from_slice(&(ulen as u32).to_le_bytes()[..3]);
        self.seq = self.seq.wrapping_add(1);
    }

    /// Encoded bytes waiting to be written.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    pub fn output_written(&mut self) {
        self.written += self.out.len() as u64;
        self.out.clear();
    }

    /// Bytes of encoded output written so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(c: &mut Codec, limit: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Step::Produced(_) = c.decode(&mut out, limit)? {}
        Ok(out)
    }

    fn frame(body: &[u8], seq: u8, ulen: usize) -> Vec<u8> {
        let mut f = (body.len() as u32).to_le_bytes()[..3].to_vec();
        f.push(seq);
        f.extend_from_slice(&(ulen as u32).to_le_bytes()[..3]);
        f.extend_from_slice(body);
        f
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut c = Compress::new(Compression::default(), true);
        let mut out = vec![0; data.len() + 64];
        c.compress(data, &mut out, FlushCompress::Finish).unwrap();
        out.truncate(c.total_out() as usize);
        out
    }

    #[test]
    fn frames_round_trip_with_counted_sequence_ids() {
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 977) as u8)
            .collect();
        for len in [0, 1, 49, 50, 400, PIECE, PIECE + 1, data.len()] {
            let mut w = Codec {
                seq: 250,
                ..Codec::default()
            };
            w.encode(&data[..len]);
            let frames = w.output().to_vec();
            let expected_frames = len.div_ceil(PIECE);
            assert_eq!(
                w.seq,
                250u8.wrapping_add(expected_frames as u8),
                "len {len}"
            );
            let mut r = Codec::new(frames.clone());
            for limit in [1, 7, 4096, 1 << 20] {
                let mut r2 = Codec::new(frames.clone());
                assert_eq!(
                    decode_all(&mut r2, limit).unwrap(),
                    &data[..len],
                    "len {len}"
                );
            }
            decode_all(&mut r, 1 << 20).unwrap();
            if len > 0 {
                assert_eq!(r.seq, w.seq, "a frame read sets the counter past it");
            }
            assert!(!r.in_frame());
        }
    }

    #[test]
    fn the_server_leg_checks_frame_ids_like_a_server() {
        let stored = |seq| frame(b"\x01\x00\x00\x00\x0e", seq, 0);
        let fails = |c: &mut Codec| {
            let e = decode_all(c, 64).unwrap_err();
            OutOfOrder::of(&e).expect("an OutOfOrder error")
        };
        // a command's first frame is 0, the frames after it count on
        let mut c = Codec::for_server([stored(0), stored(1), stored(2)].concat());
        assert_eq!(decode_all(&mut c, 64).unwrap().len(), 15);
        // an answer written moves the counter; the command's next frame follows it
        c.encode(b"answer");
        assert_eq!(c.seq, 4);
        c.input_buffer(16).extend_from_slice(&stored(4));
        assert_eq!(decode_all(&mut c, 64).unwrap().len(), 5);
        // the next command starts again at 0, and not at the counter
        c.expect_command();
        c.input_buffer(16).extend_from_slice(&stored(5));
        assert_eq!(
            fails(&mut c),
            OutOfOrder {
                found: 5,
                expected: 0
            }
        );
        for (frames, found, expected) in [
            (vec![stored(1)], 1, 0),
            (vec![stored(0), stored(0)], 0, 1),
            (vec![stored(0), stored(2)], 2, 1),
        ] {
            let mut c = Codec::for_server(frames.concat());
            assert_eq!(fails(&mut c), OutOfOrder { found, expected });
        }
        // the client leg does not check: servers number their frames as they like
        let mut c = Codec::new([stored(7), stored(3)].concat());
        assert_eq!(decode_all(&mut c, 64).unwrap().len(), 10);
        // a plain InvalidData error is not taken for one
        assert_eq!(OutOfOrder::of(&bad("x")), None);
    }

    #[test]
    fn small_and_incompressible_pieces_are_stored() {
        let mut w = Codec::default();
        w.encode(b"tiny");
        assert_eq!(w.output(), frame(b"tiny", 0, 0).as_slice());
        let noise: Vec<u8> = (0..1000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let mut w = Codec::default();
        w.encode(&noise);
        let out = w.output();
        assert!(out.len() <= noise.len() + HEADER);
        assert_eq!(
            decode_all(&mut Codec::new(out.to_vec()), 100).unwrap(),
            noise
        );
    }

    #[test]
    fn a_frame_split_anywhere_decodes_the_same() {
        let data = b"SELECT 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"
            .repeat(9);
        let mut w = Codec::default();
        w.encode(&data);
        w.encode(b"second frame, stored");
        let wire = w.output().to_vec();
        for cut in 0..wire.len() {
            let mut r = Codec::new(wire[..cut].to_vec());
            let mut out = Vec::new();
            while let Step::Produced(_) = r.decode(&mut out, 13).unwrap() {}
            r.input_buffer(wire.len()).extend_from_slice(&wire[cut..]);
            while let Step::Produced(_) = r.decode(&mut out, 13).unwrap() {}
            let mut all = data.clone();
            all.extend_from_slice(b"second frame, stored");
            assert_eq!(out, all, "cut at {cut}");
        }
    }

    #[test]
    fn bad_frames_are_refused() {
        let data = vec![b'a'; 1000];
        let z = zlib(&data);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("declares more", frame(&z, 0, 1001)),
            ("declares less", frame(&z, 0, 999)),
            ("corrupt", frame(b"not a zlib stream at all", 0, 10)),
            (
                "trailing",
                frame(&[z.as_slice(), b"junk"].concat(), 0, 1000),
            ),
            ("empty with data", frame(b"", 0, 5)),
        ];
        for (what, wire) in cases {
            let mut r = Codec::new(wire);
            assert!(decode_all(&mut r, 1 << 20).is_err(), "{what}");
        }
        // a truncated frame waits for the rest instead of failing
        let mut r = Codec::new(frame(&z[..z.len() - 1], 0, 1000)[..].to_vec());
        let whole = frame(&z, 0, 1000);
        let mut r_ok = Codec::new(whole[..whole.len() - 1].to_vec());
        let mut out = Vec::new();
        while let Step::Produced(_) = r_ok.decode(&mut out, 1 << 20).unwrap() {}
        assert_eq!(r_ok.decode(&mut out, 1 << 20).unwrap(), Step::NeedInput);
        assert!(r_ok.in_frame());
        // a frame whose zlib stream is cut short fails at the frame's end
        assert!(decode_all(&mut r, 1 << 20).is_err());
    }

    #[test]
    fn the_server_leg_numbers_packets_like_a_server() {
        // a frame in the middle of a command (the counter at 4)
        let mut c = Codec {
            seq: 4,
            command_start: false,
            ..Codec::for_server(frame(b"\x01\x00\x00\x00\x03", 4, 0))
        };
        assert_eq!(decode_all(&mut c, 100).unwrap(), b"\x01\x00\x00\x00\x03");
        // two packets, the second split across calls, then a zero-length one
        let mut a = b"\x02\x00\x00\x09ab\x03\x00".to_vec();
        let mut b = b"\x00\x09xyz\x00\x00\x00\x09".to_vec();
        c.renumber(&mut a);
        c.renumber(&mut b);
        assert_eq!((a[3], b[1]), (5, 6), "{a:?} {b:?}");
        assert_eq!(b[8], 7);
        // payload only: passes without a copy
        let mut big = b"\x05\x00\x00\x00".to_vec();
        c.renumber(&mut big);
        assert_eq!(big[3], 8);
        assert!(!c.has_header_in(b"12345"));
        assert!(c.has_header_in(b"123456"));
        c.pass_payload(5);
        // after a response, the next packet is numbered like the next frame
        c.encode(b"anything");
        c.sync();
        let mut p = b"\x00\x00\x00\x00".to_vec();
        c.renumber(&mut p);
        assert_eq!(
            p[3], 6,
            "frames 5 (read: next 5) and 5 written: next frame 6"
        );
        // the client leg leaves packets as they are
        let mut client = Codec::new(Vec::new());
        let mut q = b"\x01\x00\x00\x00\x03".to_vec();
        client.renumber(&mut q);
        assert_eq!(q[3], 0);
    }

    #[test]
    fn a_small_frame_inflating_to_a_lot_is_given_out_by_the_chunk() {
        let data = vec![0u8; 0xFF_FFFF];
        let z = zlib(&data);
        assert!(z.len() < 20_000);
        let mut r = Codec::new(frame(&z, 3, data.len()));
        let mut out = Vec::new();
        assert_eq!(r.decode(&mut out, 4096).unwrap(), Step::Produced(4096));
        assert!(out.capacity() < 64 * 1024, "{}", out.capacity());
        assert_eq!(r.seq, 4);
    }
}
