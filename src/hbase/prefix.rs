//! Which n-byte rowkey prefixes a set of predicates on K pins (the model half of the
//! prefix-scan rewriter; `sql::dml` reads the predicates, `engine::rewrite` splices the result).
//!
//! Under KEY(prefix column) with `prefix = substring(K, 1, n)`, a row's partition depends only
//! on `K[..min(n, len K)]`. A predicate pins a prefix P when every key it accepts has prefix P;
//! adding `prefix_column = P` to a conjunction that contains it then cannot change the rows,
//! and lets the backend read one partition.

/// A predicate on K whose operands are known bytes (literals, or values bound at execution),
/// borrowed from where they were read (a statement's literal, an execution's value): reading
/// them copies nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPred<'a> {
    Eq(&'a [u8]),
    In(Vec<&'a [u8]>),
    /// A LIKE pattern and its escape byte (None: no escape character).
    Like {
        pattern: &'a [u8],
        escape: Option<u8>,
    },
    Lower {
        bound: &'a [u8],
        inclusive: bool,
    },
    Upper {
        bound: &'a [u8],
        inclusive: bool,
    },
    /// `LEFT(K, len) = value`.
    Left {
        len: u64,
        value: &'a [u8],
    },
}

/// The predicates of one statement (most have one or two: no allocation for the list).
pub type KeyPreds<'a> = smallvec::SmallVec<[KeyPred<'a>; 2]>;

/// A pinned prefix: inline up to 32 bytes (a prefix column is a few bytes to a few dozen), so
/// pinning one allocates nothing.
pub type Prefix = smallvec::SmallVec<[u8; 32]>;

/// Pinned prefixes, taken (one inline: a point get or a prefix scan allocates no list).
pub type Prefixes = smallvec::SmallVec<[Prefix; 1]>;

/// What the predicates pin, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinned {
    /// Every accepted key has this prefix.
    One(Prefix),
    /// Every accepted key has one of these prefixes (distinct, in order of first mention).
    Any(Vec<Prefix>),
}

impl Pinned {
    /// The prefixes, taken.
    pub fn into_prefixes(self) -> Prefixes {
        match self {
            Pinned::One(p) => smallvec::smallvec![p],
            Pinned::Any(ps) => ps.into(),
        }
    }

    /// The prefixes (one or a short list: no allocation up to four).
    pub fn prefixes(&self) -> smallvec::SmallVec<[&[u8]; 4]> {
        match self {
            Pinned::One(p) => smallvec::smallvec![p.as_slice()],
            Pinned::Any(ps) => ps.iter().map(|p| p.as_slice()).collect(),
        }
    }
}

/// The prefix of one key: its first n bytes, or the whole key when shorter.
pub fn key_prefix(key: &[u8], n: usize) -> &[u8] {
    &key[..n.min(key.len())]
}

/// The exclusive upper bound of all byte strings that start with `prefix`: trailing 0xFF
/// bytes dropped, the last remaining byte incremented. None for an all-0xFF (or empty) prefix,
/// which has no upper bound.
pub fn upper_bound(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix[..=keep].to_vec();
    if let Some(last) = out.last_mut() {
        *last += 1;
    }
    Some(out)
}

/// Where a LIKE pattern's first wildcard (`%`, `_`) or escape character is, a word at a time
/// (with no escape character, `%` is looked for twice).
#[inline]
pub fn special_at(pattern: &[u8], escape: Option<u8>) -> Option<usize> {
    crate::sql::scan::find_any3(pattern, b'%', b'_', escape.unwrap_or(b'%'))
}

/// The literal bytes of a LIKE pattern before its first wildcard, and whether a wildcard
/// follows. None when the pattern ends in a lone escape character (its meaning differs
/// between servers).
pub fn like_literal(pattern: &[u8], escape: Option<u8>) -> Option<(Prefix, bool)> {
    let special = |s: &[u8]| special_at(s, escape).unwrap_or(s.len());
    // the bytes before the first wildcard or escape character are literal, copied at once
    let at = special(pattern);
    let (literal, mut from) = pattern.split_at(at);
    let mut out = Prefix::from_slice(literal);
    loop {
        match from {
            // an escape character that is also a wildcard escapes: the escape is read first
            [c, next, tail @ ..] if Some(*c) == escape => {
                out.push(*next);
                let at = special(tail);
                let (literal, rest) = tail.split_at(at);
                out.extend_from_slice(literal);
                from = rest;
            }
            // a lone escape character at the end: its meaning differs between servers
            [c] if Some(*c) == escape => return None,
            [] => return Some((out, false)),
            _ => return Some((out, true)),
        }
    }
}

/// What a read's K predicates (ANDed) tell of the keys it reads, for the advisor: a point
/// get's key (`true`), or the literal every key read begins with (a LIKE's text before its
/// first wildcard, a LEFT(K, n) value, a range's common prefix). None: nothing certain.
pub fn scan_literal(preds: &[KeyPred]) -> Option<(Vec<u8>, bool)> {
    let mut best: Option<(Vec<u8>, bool)> = None;
    let mut keep = |lit: Vec<u8>, exact: bool| {
        let better = match &best {
            None => true,
            Some((_, true)) => false,
            Some((b, false)) => exact || lit.len() > b.len(),
        };
        if better {
            best = Some((lit, exact));
        }
    };
    for p in preds {
        match p {
            KeyPred::Eq(v) => keep(v.to_vec(), true),
            KeyPred::Like { pattern, escape } => {
                if let Some((lit, wildcard)) = like_literal(pattern, *escape) {
                    keep(lit.into_vec(), !wildcard);
                }
            }
            KeyPred::Left { value, .. } => keep(value.to_vec(), false),
            _ => {}
        }
    }
    let lower = preds.iter().find_map(|p| match p {
        KeyPred::Lower { bound, .. } => Some(*bound),
        _ => None,
    });
    let upper = preds.iter().find_map(|p| match p {
        KeyPred::Upper { bound, .. } => Some(*bound),
        _ => None,
    });
    if let (Some(lo), Some(hi)) = (lower, upper) {
        let common = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
        keep(lo[..common].to_vec(), false);
    }
    best
}

/// The prefix one predicate pins on its own.
fn single(p: &KeyPred, n: usize) -> Option<Pinned> {
    match p {
        KeyPred::Eq(v) => Some(Pinned::One(Prefix::from_slice(key_prefix(v, n)))),
        KeyPred::In(vs) if !vs.is_empty() => {
            let mut out: Vec<Prefix> = Vec::new();
            for v in vs {
                let p = key_prefix(v, n);
                if !out.iter().any(|o| o.as_slice() == p) {
                    out.push(Prefix::from_slice(p));
                }
            }
            Some(if out.len() == 1 {
                Pinned::One(out.remove(0))
            } else {
                Pinned::Any(out)
            })
        }
        KeyPred::Like { pattern, escape } => {
            let (mut lit, wildcard) = like_literal(pattern, *escape)?;
            if !wildcard || lit.len() >= n {
                // no wildcard: the key is exactly the literal (binary LIKE does not pad), and a
                // shorter key is its own prefix
                lit.truncate(n);
                Some(Pinned::One(lit))
            } else {
                None
            }
        }
        KeyPred::Left { len, value } => {
            (*len >= n as u64).then(|| Pinned::One(Prefix::from_slice(key_prefix(value, n))))
        }
        _ => None,
    }
}

/// Why `preds` pin no `n`-byte prefix, in a user's terms (what EXPLAIN OBKV says of a prefix
/// scan that is not rewritten): the literal that falls short and by how much, a range across
/// prefixes, a wildcard in front, or no predicate on K in a form the rewriter reads.
pub fn why_unpinned(preds: &[KeyPred], n: usize) -> String {
    let shown = |b: &[u8]| match std::str::from_utf8(b) {
        Ok(s) if !s.chars().any(char::is_control) => format!("'{s}'"),
        _ => format!(
            "X'{}'",
            b.iter().map(|c| format!("{c:02X}")).collect::<String>()
        ),
    };
    let bytes = |k: usize| {
        if k == 1 {
            "1 byte".to_string()
        } else {
            format!("{k} bytes")
        }
    };
    for p in preds {
        match p {
            KeyPred::Like { pattern, escape } => match like_literal(pattern, *escape) {
                Some((lit, true)) if lit.is_empty() => {
                    return "the LIKE pattern begins with a wildcard: every key matches it".into()
                }
                Some((lit, true)) if lit.len() < n => {
                    return format!(
                        "the LIKE literal {} is {}, the prefix column holds {}: its keys can be in any partition ({} short)",
                        shown(&lit),
                        bytes(lit.len()),
                        bytes(n),
                        bytes(n - lit.len())
                    )
                }
                None => return "the LIKE pattern ends in its escape character".into(),
                _ => {}
            },
            KeyPred::Left { len, .. } if (*len as usize) < n => {
                return format!(
                    "LEFT(K, {len}) gives {}, the prefix column holds {}",
                    bytes(*len as usize),
                    bytes(n)
                )
            }
            KeyPred::Lower { bound, .. } if bound.len() < n => {
                return format!(
                    "the range's lower bound {} is {}, the prefix column holds {}",
                    shown(bound),
                    bytes(bound.len()),
                    bytes(n)
                )
            }
            _ => {}
        }
    }
    let lower = preds.iter().any(|p| matches!(p, KeyPred::Lower { .. }));
    let upper = preds.iter().any(|p| matches!(p, KeyPred::Upper { .. }));
    match (lower, upper) {
        (true, true) => format!("the range spans keys of more than one {}-byte prefix", n),
        (true, false) | (false, true) => {
            "a range open on one side spans many prefixes".into()
        }
        _ => "no predicate on K in a form the rewriter reads (K = literal, K IN (…), K LIKE 'literal%', a range, LEFT(K, n) = literal)".into(),
    }
}

/// Whether every key in the interval from `lower` up to `upper` has prefix `lower[..n]`.
fn range_pins(lower: &[u8], upper: Option<(&[u8], bool)>, n: usize) -> Option<Prefix> {
    if lower.len() < n || n == 0 {
        return None;
    }
    let p = &lower[..n];
    match upper_bound(p) {
        // all-0xFF prefix: nothing above it has another prefix
        None => Some(Prefix::from_slice(p)),
        Some(succ) => {
            let (hi, inclusive) = upper?;
            let inside = if inclusive {
                hi < succ.as_slice()
            } else {
                hi <= succ.as_slice()
            };
            inside.then(|| Prefix::from_slice(p))
        }
    }
}

/// What the predicates (ANDed) pin, for prefix length `n`. A single-prefix answer is preferred
/// over a list.
pub fn pin(preds: &[KeyPred], n: usize) -> Option<Pinned> {
    if n == 0 {
        return None;
    }
    let mut list: Option<Pinned> = None;
    for p in preds {
        match single(p, n) {
            Some(one @ Pinned::One(_)) => return Some(one),
            Some(any) if list.is_none() => list = Some(any),
            _ => {}
        }
    }
    // ranges: any lower bound and any upper bound of the conjunction bound the interval
    let lowers = preds.iter().filter_map(|p| match p {
        KeyPred::Lower { bound, .. } => Some(*bound),
        _ => None,
    });
    let uppers: Vec<(&[u8], bool)> = preds
        .iter()
        .filter_map(|p| match p {
            KeyPred::Upper { bound, inclusive } => Some((*bound, *inclusive)),
            _ => None,
        })
        .collect();
    for lo in lowers {
        if let Some(p) = range_pins(lo, None, n) {
            return Some(Pinned::One(p));
        }
        for hi in &uppers {
            if let Some(p) = range_pins(lo, Some(*hi), n) {
                return Some(Pinned::One(p));
            }
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `like_literal` read one byte at a time (the reading it must agree with).
    fn like_literal_bytewise(pattern: &[u8], escape: Option<u8>) -> Option<(Vec<u8>, bool)> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(&c) = pattern.get(i) {
            if Some(c) == escape {
                out.push(*pattern.get(i + 1)?);
                i += 2;
                continue;
            }
            if c == b'%' || c == b'_' {
                return Some((out, true));
            }
            out.push(c);
            i += 1;
        }
        Some((out, false))
    }

    #[test]
    fn like_literals_are_read_as_byte_by_byte() {
        let alphabet = [b'a', b'%', b'_', b'\\', b'!', 0xff];
        let escapes = [None, Some(b'\\'), Some(b'!'), Some(b'%'), Some(b'_')];
        // every pattern of up to five bytes from the alphabet, under every escape
        let mut pattern = Vec::new();
        for len in 0..=5u32 {
            for n in 0..alphabet.len().pow(len) {
                pattern.clear();
                let mut k = n;
                for _ in 0..len {
                    pattern.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                for e in escapes {
                    assert_eq!(
                        like_literal(&pattern, e).map(|(l, w)| (l.into_vec(), w)),
                        like_literal_bytewise(&pattern, e),
                        "{pattern:?} {e:?}"
                    );
                }
            }
        }
        // longer ones, read a word at a time: every alphabet byte at every place, then an
        // escaped wildcard and another byte after it
        for len in [7usize, 8, 9, 15, 16, 17, 24, 31] {
            for i in 0..len {
                for c in alphabet {
                    for (j, d) in [(i + 2, b'%'), (i + 1, b'_'), (len - 1, b'!')] {
                        let mut pattern = vec![b'k'; len];
                        pattern[i] = c;
                        if let Some(x) = pattern.get_mut(j) {
                            *x = d;
                        }
                        for e in escapes {
                            assert_eq!(
                                like_literal(&pattern, e).map(|(l, w)| (l.into_vec(), w)),
                                like_literal_bytewise(&pattern, e),
                                "{pattern:?} {e:?}"
                            );
                        }
                    }
                }
            }
        }
        // a literal longer than the inline room
        let long = [b'k'; 40];
        let mut p = long.to_vec();
        p.push(b'%');
        assert_eq!(
            like_literal(&p, None),
            Some((Prefix::from_slice(&long), true))
        );
    }

    #[test]
    fn why_a_prefix_is_not_pinned_is_said_in_bytes() {
        let like = |p: &'static [u8]| KeyPred::Like {
            pattern: p,
            escape: Some(b'\\'),
        };
        let why = why_unpinned(&[like(b"abc%")], 4);
        assert!(
            why.contains("'abc' is 3 bytes, the prefix column holds 4 bytes"),
            "{why}"
        );
        assert!(why.contains("1 byte short"), "{why}");
        assert!(why_unpinned(&[like(b"%abc")], 4).contains("begins with a wildcard"));
        let low = KeyPred::Lower {
            bound: b"ab",
            inclusive: true,
        };
        assert!(why_unpinned(&[low], 4).contains("lower bound 'ab' is 2 bytes"));
        let left = KeyPred::Left {
            len: 2,
            value: b"ab",
        };
        assert!(why_unpinned(&[left], 4).contains("LEFT(K, 2) gives 2 bytes"));
        assert!(why_unpinned(&[], 4).starts_with("no predicate on K"));
        // a binary literal is shown in hex
        assert!(why_unpinned(&[like(b"\x01\x02%")], 4).contains("X'0102'"));
    }

    #[test]
    fn scan_literals_are_what_every_key_read_begins_with() {
        let like = |p: &'static [u8]| KeyPred::Like {
            pattern: p,
            escape: Some(b'\\'),
        };
        assert_eq!(scan_literal(&[like(b"ab%")]), Some((b"ab".to_vec(), false)));
        assert_eq!(scan_literal(&[like(b"ab")]), Some((b"ab".to_vec(), true)));
        assert_eq!(
            scan_literal(&[like(b"a%"), KeyPred::Eq(b"abc")]),
            Some((b"abc".to_vec(), true))
        );
        let range = [
            KeyPred::Lower {
                bound: b"user1|000",
                inclusive: true,
            },
            KeyPred::Upper {
                bound: b"user1|999",
                inclusive: false,
            },
        ];
        assert_eq!(scan_literal(&range), Some((b"user1|".to_vec(), false)));
        assert_eq!(scan_literal(&[KeyPred::In(vec![&b"a"[..]])]), None);
    }

    fn like(p: &[u8]) -> KeyPred<'_> {
        KeyPred::Like {
            pattern: p,
            escape: Some(b'\\'),
        }
    }

    fn one(p: &[u8]) -> Option<Pinned> {
        Some(Pinned::One(Prefix::from_slice(p)))
    }

    #[test]
    fn upper_bounds_of_byte_prefixes() {
        assert_eq!(upper_bound(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(upper_bound(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(upper_bound(b"\xff\xff"), None);
        assert_eq!(upper_bound(b""), None);
    }

    #[test]
    fn like_patterns() {
        assert_eq!(pin(&[like(b"abcd%")], 4), one(b"abcd"));
        assert_eq!(pin(&[like(b"abcdef%")], 4), one(b"abcd"));
        assert_eq!(pin(&[like(b"abc%")], 4), None);
        assert_eq!(pin(&[like(b"ab_d%")], 4), None);
        // escaped wildcards are literal bytes
        assert_eq!(pin(&[like(b"a\\%c\\_%")], 4), one(b"a%c_"));
        // no wildcard: the key itself, shorter keys are their own prefix
        assert_eq!(pin(&[like(b"ab")], 4), one(b"ab"));
        // a lone escape at the end is not guessed at
        assert_eq!(pin(&[like(b"abcd\\")], 4), None);
        let custom = KeyPred::Like {
            pattern: b"ab!%d%",
            escape: Some(b'!'),
        };
        assert_eq!(pin(&[custom], 4), one(b"ab%d"));
        let none = KeyPred::Like {
            pattern: b"ab\\%",
            escape: None,
        };
        assert_eq!(pin(&[none], 3), one(b"ab\\"));
    }

    #[test]
    fn ranges_inside_and_across_a_prefix() {
        let lo = |b: &'static [u8], inclusive| KeyPred::Lower {
            bound: b,
            inclusive,
        };
        let hi = |b: &'static [u8], inclusive| KeyPred::Upper {
            bound: b,
            inclusive,
        };
        // the HBase scan shape: [startRow, stopRow)
        assert_eq!(
            pin(&[lo(b"abcd", true), hi(b"abce", false)], 4),
            one(b"abcd")
        );
        assert_eq!(pin(&[lo(b"abcd", true), hi(b"abce", true)], 4), None);
        assert_eq!(
            pin(&[lo(b"abcdx", false), hi(b"abcdz", true)], 4),
            one(b"abcd")
        );
        assert_eq!(pin(&[lo(b"abcd", true), hi(b"abcf", false)], 4), None);
        assert_eq!(pin(&[lo(b"abc", true), hi(b"abcd", false)], 4), None);
        assert_eq!(pin(&[lo(b"abcd", true)], 4), None);
        // nothing sorts above an all-0xFF prefix with another prefix
        assert_eq!(
            pin(&[lo(b"\xff\xff\xff\xff\x01", true)], 4),
            one(b"\xff\xff\xff\xff")
        );
        assert_eq!(
            pin(&[lo(b"ab\xff\xff", true), hi(b"ac", false)], 4),
            one(b"ab\xff\xff")
        );
    }

    #[test]
    fn equality_lists_and_left() {
        assert_eq!(pin(&[KeyPred::Eq(b"abcdef")], 4), one(b"abcd"));
        assert_eq!(pin(&[KeyPred::Eq(b"ab")], 4), one(b"ab"));
        let list = KeyPred::In(vec![&b"abcd1"[..], b"abcd2", b"xy"]);
        assert_eq!(
            pin(&[list], 4),
            Some(Pinned::Any(vec![
                Prefix::from_slice(b"abcd"),
                Prefix::from_slice(b"xy")
            ]))
        );
        let same = KeyPred::In(vec![&b"abcd1"[..], b"abcd2"]);
        assert_eq!(pin(&[same], 4), one(b"abcd"));
        let left = |len, v: &'static [u8]| KeyPred::Left { len, value: v };
        assert_eq!(pin(&[left(4, b"abcd")], 4), one(b"abcd"));
        assert_eq!(pin(&[left(6, b"abcdef")], 4), one(b"abcd"));
        assert_eq!(pin(&[left(3, b"abc")], 4), None);
    }
}
