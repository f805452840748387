//! Splicing: text inserted or cut at byte positions of the original statement, every other
//! byte kept as the client sent it (never a re-printed statement). Edit texts are bytes, so a
//! name or comment in the client's character set goes back exactly.

/// Most bytes of room a spare buffer keeps (a larger one is dropped, not kept).
const SPARE_ROOM: usize = 16 * 1024;
/// How many spare buffers a thread keeps: a rewrite's edit text and its spliced text.
const SPARES: usize = 2;

thread_local! {
    /// Emptied byte buffers of this thread, for the next statement's edit texts and spliced
    /// text (`spare`, `give_back`): a rewritten statement then costs no allocation for them.
    /// At most `SPARES` of at most `SPARE_ROOM` bytes each; an empty slot holds no buffer.
    static SPARE: [std::cell::Cell<Vec<u8>>; SPARES] =
        const { [std::cell::Cell::new(Vec::new()), std::cell::Cell::new(Vec::new())] };
}

/// An empty buffer with room for at least `room` bytes: a spare one when the thread has one.
pub fn spare(room: usize) -> Vec<u8> {
    let mut v = SPARE
        .try_with(|slots| {
            slots
                .iter()
                .map(std::cell::Cell::take)
                .find(|v| v.capacity() > 0)
                .unwrap_or_default()
        })
        .unwrap_or_default();
    v.reserve(room);
    v
}

/// Keeps `v`, emptied, for `spare` (unless it is large or the thread keeps enough).
pub fn give_back(mut v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > SPARE_ROOM {
        return;
    }
    v.clear();
    let _ = SPARE.try_with(|slots| {
        for slot in slots {
            let held = slot.replace(Vec::new());
            if held.capacity() == 0 {
                slot.set(std::mem::take(&mut v));
                return;
            }
            slot.set(held);
        }
    });
}

/// Edits to one statement: `(start, end, text)` replaces `start..end` (an insertion when
/// start = end).
#[derive(Debug, Default)]
pub struct Splice {
    /// (most statements get one or two edits: no allocation for the list)
    edits: smallvec::SmallVec<[(usize, usize, Vec<u8>); 2]>,
}

impl Splice {
    pub fn new() -> Splice {
        Splice::default()
    }

    pub fn replace(&mut self, start: usize, end: usize, with: impl Into<Vec<u8>>) {
        self.edits.push((start, end, with.into()));
    }

    pub fn insert(&mut self, at: usize, text: impl Into<Vec<u8>>) {
        self.edits.push((at, at, text.into()));
    }

    /// Takes another splice's edits (of the same text).
    pub fn extend(&mut self, other: Splice) {
        self.edits.extend(other.edits);
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// The statement with the edits applied in position order. Overlapping cuts (two options
    /// sharing a comma) merge into one; positions past the end are taken as the end.
    pub fn apply(mut self, sql: &[u8]) -> Vec<u8> {
        self.edits.sort_by_key(|e| (e.0, e.1));
        let extra: usize = self.edits.iter().map(|e| e.2.len()).sum();
        let mut out = spare(sql.len() + extra);
        let mut at = 0;
        for (start, end, text) in self.edits {
            let start = start.clamp(at, sql.len());
            out.extend_from_slice(sql.get(at..start).unwrap_or_default());
            out.extend_from_slice(&text);
            give_back(text);
            at = end.clamp(start, sql.len());
        }
        out.extend_from_slice(sql.get(at..).unwrap_or_default());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer given back is a later `spare`, emptied; one too large is not kept, nor more
    /// than `SPARES` of them.
    #[test]
    fn spare_buffers_are_kept_within_their_bounds() {
        let held = || {
            SPARE.with(|s| {
                s.iter()
                    .map(|c| c.take())
                    .filter(|v| v.capacity() > 0)
                    .count()
            })
        };
        held();
        let mut v = Vec::with_capacity(100);
        v.extend_from_slice(b"left over");
        let at = v.as_ptr();
        give_back(v);
        let again = spare(10);
        assert!(again.is_empty() && again.as_ptr() == at && again.capacity() >= 100);
        give_back(Vec::with_capacity(SPARE_ROOM + 1));
        assert_eq!(held(), 0);
        for _ in 0..SPARES + 3 {
            give_back(Vec::with_capacity(8));
        }
        assert_eq!(held(), SPARES);
    }

    #[test]
    fn edits_apply_in_order_and_overlaps_merge() {
        let mut s = Splice::new();
        s.insert(3, "X");
        s.replace(0, 1, b"\xE9".to_vec());
        s.replace(4, 6, "");
        s.replace(5, 7, "");
        s.insert(99, "!");
        assert_eq!(s.apply(b"abcdefgh"), b"\xE9bcXdh!".to_vec());
    }
}
