//! Splicing: text inserted or cut at byte positions of the original statement, every other
//! byte kept as the client sent it (never a re-printed statement). Edit texts are bytes, so a
//! name or comment in the client's character set goes back exactly.

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
        let mut out = Vec::with_capacity(sql.len() + extra);
        let mut at = 0;
        for (start, end, text) in self.edits {
            let start = start.clamp(at, sql.len());
            out.extend_from_slice(sql.get(at..start).unwrap_or_default());
            out.extend_from_slice(&text);
            at = end.clamp(start, sql.len());
        }
        out.extend_from_slice(sql.get(at..).unwrap_or_default());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
