//! Small, bounds-checked readers and writers for protocol primitives (length-encoded integers
//! and strings, fixed-width little-endian integers). Every reader returns `None` on short input,
//! so data from the network can never cause a panic.

/// A 3-byte little-endian integer: a packet header's payload length, a compressed frame's two
/// lengths, a length-encoded integer's 0xFD form.
#[inline]
pub fn u24(b0: u8, b1: u8, b2: u8) -> usize {
    usize::from(b0) | usize::from(b1) << 8 | usize::from(b2) << 16
}

/// A cursor over a payload that refuses to read past its end.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }

    pub fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    pub fn lenenc_int(&mut self) -> Option<u64> {
        match self.u8()? {
            n @ 0..=0xfa => Some(u64::from(n)),
            0xfc => self.u16().map(u64::from),
            0xfd => self.take(3).map(|s| u24(s[0], s[1], s[2]) as u64),
            0xfe => self.take(8).map(|s| {
                let mut b = [0u8; 8];
                b.copy_from_slice(s);
                u64::from_le_bytes(b)
            }),
            _ => None, // 0xfb is NULL, 0xff is not an integer
        }
    }

    pub fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.lenenc_int()?).ok()?;
        self.take(n)
    }

    /// Bytes up to (not including) the next NUL; the NUL is consumed. Without a NUL, the rest.
    pub fn null_terminated(&mut self) -> &'a [u8] {
        let rest = self.remaining();
        match memchr::memchr(0, rest) {
            Some(i) => {
                self.pos += i + 1;
                &rest[..i]
            }
            None => {
                self.pos = self.buf.len();
                rest
            }
        }
    }
}

pub fn put_lenenc_int(out: &mut Vec<u8>, v: u64) {
    if v < 0xfb {
        out.push(v as u8);
    } else if v <= 0xffff {
        out.push(0xfc);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v <= 0xff_ffff {
        out.push(0xfd);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xfe);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

pub fn put_lenenc_bytes(out: &mut Vec<u8>, s: &[u8]) {
    put_lenenc_int(out, s.len() as u64);
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trip_at_every_width() {
        for v in [
            0u64,
            250,
            251,
            0xffff,
            0x10000,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_lenenc_int(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(r.lenenc_int(), Some(v));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn short_input_is_none_not_panic() {
        assert_eq!(Reader::new(&[0xfc, 1]).lenenc_int(), None);
        assert_eq!(Reader::new(&[0xfe, 1, 2, 3]).lenenc_int(), None);
        assert_eq!(Reader::new(&[5, b'a']).lenenc_bytes(), None);
        assert_eq!(Reader::new(&[1]).u16(), None);
        assert_eq!(Reader::new(&[0xff]).lenenc_int(), None);
        let mut r = Reader::new(b"abc");
        assert_eq!(r.null_terminated(), b"abc");
        assert!(r.is_empty());
    }
}
