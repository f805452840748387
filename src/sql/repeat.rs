//! A one-statement text that repeats one of the thread's last ones but for the body of its one
//! string literal, read without lexing it: an application's prefix scan or point read run
//! again and again with another key (`SELECT … FROM g$f WHERE K LIKE 'user42%'`).
//!
//! The DML reader decides from words, names and punctuation; of a literal it keeps the value
//! only. Two texts equal outside one `'…'` literal whose bodies are both plain (printable
//! ASCII without a quote, a backslash, `/` or `*`: bytes that end a string or escape in it, or
//! that a byte-level look for an executable comment could take for one) lex to the same
//! tokens, that literal's moved, and split into the same statement. So the new text's reading
//! is the kept one with that literal's value replaced and the offsets after it moved
//! (`Dml::moved`). What is kept is a function of the text and the dialect alone (no table, no
//! session state): the caller applies its scope and the rules to it as to any reading.
//!
//! Kept only where that reasoning holds: one statement, not a stored program nor under a
//! wrapper, read by the DML reader from all its tokens, with exactly one string literal among
//! them, which is the value of its one K term (`=`, `LIKE` without an `ESCAPE`, a bound,
//! `LEFT(K, n) =`) with no hex literal in that term, in a text nothing in which is ambiguous
//! (the caller's part). The `repeat_reading` fuzz target holds a
//! reading taken from here equal to the full one.

use super::dml::{self, Dml, Escape, Operand, Pred};
use super::scan::{self, Dialect, Piece, Tok, Token};

/// Most bytes of a text kept.
const MAX_TEXT: usize = 4096;

/// A one-statement text whose reading is kept.
struct Kept {
    d: Dialect,
    text: Vec<u8>,
    piece: Piece,
    /// Where the literal's body stands in `text` (between its quotes).
    body: (usize, usize),
    /// The reading; None while lent for the text that repeats this one (`read`, `put_back`).
    dml: Option<Box<Dml>>,
    /// Which keeping of a text this is (`Lent`).
    stamp: Stamp,
}

/// A reading lent by `read`, to be put back (`put_back`) into the kept text it was lent from
/// unless that was replaced meanwhile (a text decided inside this one's decision: dynamic SQL).
#[derive(Debug)]
pub(crate) struct Lent {
    pub dml: Box<Dml>,
    pub stamp: Stamp,
}

/// Which keeping of a text a lent reading came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp(u64);

/// Texts a thread keeps: one for each of the two readings a text most often has (a server
/// not yet told apart from OceanBase is read both ways), so one does not put out the other.
const KEPT: usize = 2;

type Last = [Option<Box<Kept>>; KEPT];

thread_local! {
    /// The thread's kept texts, the most recently kept first.
    static LAST: std::cell::Cell<Last> = const { std::cell::Cell::new([None, None]) };
    /// The stamp of the next text kept.
    static STAMP: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// How many readings this thread lent (`lent_count`).
    static LENDS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many readings this thread has lent: whether a text was read from a kept one (tests).
#[doc(hidden)]
pub fn lent_count() -> u64 {
    LENDS.try_with(std::cell::Cell::get).unwrap_or(0)
}

/// The bytes a plain body may hold (`plain`).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 0x7f {
        t[b] = !matches!(b as u8, b'\'' | b'"' | b'`' | b'\\' | b'/' | b'*');
        b += 1;
    }
    t
};

fn plain(body: &[u8]) -> bool {
    body.iter().all(|&b| PLAIN[usize::from(b)])
}

/// The reading of `sql` under `d` when it repeats a kept text but for its literal's body: its
/// one statement and that statement's reading (what `dml::read_lexed` gives for it), lent. The
/// kept text becomes `sql`, its reading lent until it is put back (`put_back`).
pub(crate) fn read(sql: &[u8], d: Dialect) -> Option<(Piece, Lent)> {
    if sql.len() > MAX_TEXT {
        return None;
    }
    let mut kept = LAST.try_with(std::cell::Cell::take).ok()?;
    let found = kept
        .iter_mut()
        .flatten()
        .find(|k| k.d == d)
        .and_then(|k| read_kept(k, sql));
    let _ = LAST.try_with(|l| l.set(kept));
    found
}

fn read_kept(k: &mut Kept, sql: &[u8]) -> Option<(Piece, Lent)> {
    let (a, b) = k.body;
    let suffix = k.text.get(b..)?;
    let end = sql.len().checked_sub(suffix.len())?;
    let body = sql.get(a..end)?;
    if k.dml.is_none()
        || sql.get(..a)? != k.text.get(..a)?
        || sql.get(end..)? != suffix
        || !plain(body)
    {
        return None;
    }
    let by = isize::try_from(body.len()).ok()? - isize::try_from(b.checked_sub(a)?).ok()?;
    let piece = Piece {
        end: k.piece.end.checked_add_signed(by)?,
        ..k.piece
    };
    let at = a.checked_sub(k.piece.start)?;
    // (the reading made the new text's in place: its one K term's literal first, which
    // `keepable` found; one whose offsets would overflow is dropped)
    literal_in(k.dml.as_ref()?.preds.first()?)?;
    let mut dml = k.dml.take()?;
    dml.moved(at, by)?;
    let v = literal_of(dml.preds.first_mut()?)?;
    v.clear();
    v.extend_from_slice(body);
    k.text.clear();
    k.text.extend_from_slice(sql);
    k.piece = piece;
    k.body = (a, end);
    let _ = LENDS.try_with(|n| n.set(n.get().wrapping_add(1)));
    Some((
        piece,
        Lent {
            dml,
            stamp: k.stamp,
        },
    ))
}

/// Puts a lent reading back into the kept text it was lent from, if that is still kept (else
/// gives it back to `dml`).
pub(crate) fn put_back(d: Dialect, lent: Lent) {
    let Ok(mut kept) = LAST.try_with(std::cell::Cell::take) else {
        return dml::give_back(lent.dml);
    };
    match kept
        .iter_mut()
        .flatten()
        .find(|k| k.d == d && k.stamp == lent.stamp && k.dml.is_none())
    {
        Some(k) => k.dml = Some(lent.dml),
        None => dml::give_back(lent.dml),
    }
    let _ = LAST.try_with(|l| l.set(kept));
}

/// The value of a K term whose one operand is a literal, borrowed as the term is (one pattern
/// for `literal_of` and `literal_in`).
macro_rules! key_literal {
    ($p:expr) => {
        match $p {
            Pred::Eq(Operand::Lit { bytes, .. })
            | Pred::Like {
                pattern: Operand::Lit { bytes, .. },
                ..
            }
            | Pred::Lower {
                bound: Operand::Lit { bytes, .. },
                ..
            }
            | Pred::Upper {
                bound: Operand::Lit { bytes, .. },
                ..
            }
            | Pred::Left {
                value: Operand::Lit { bytes, .. },
                ..
            } => Some(bytes),
            _ => None,
        }
    };
}

/// The value of a K term whose one operand is a literal.
fn literal_of(p: &mut Pred) -> Option<&mut Vec<u8>> {
    key_literal!(p)
}

/// `literal_of`, read only.
fn literal_in(p: &Pred) -> Option<&[u8]> {
    key_literal!(p).map(Vec::as_slice)
}

/// Keeps the reading `x` of the one statement `piece` of `sql` under `d` (its tokens `toks`,
/// as lexing it alone gives them) for texts that repeat it, where the module's conditions
/// hold (the caller's: one statement, nothing ambiguous, read whole by the DML reader); else
/// gives it back.
pub(crate) fn keep(sql: &[u8], d: Dialect, piece: Piece, toks: &[Token], x: Box<Dml>) {
    let body = match keepable(sql, piece, toks, &x) {
        Some(body) if sql.len() <= MAX_TEXT && scan::keeps_shapes() => body,
        _ => return dml::give_back(x),
    };
    let Ok(last) = LAST.try_with(std::cell::Cell::take) else {
        return dml::give_back(x);
    };
    // (in place of the one of its dialect, else of the least recently kept)
    let [first, second] = last;
    let (mine, other) = match (first, second) {
        (Some(f), s) if f.d == d => (Some(f), s),
        (f, s) => (s, f),
    };
    let stamp = Stamp(
        STAMP
            .try_with(|s| s.replace(s.get().wrapping_add(1)))
            .unwrap_or(0),
    );
    let k = match mine {
        Some(mut k) => {
            k.d = d;
            k.text.clear();
            k.text.extend_from_slice(sql);
            k.piece = piece;
            k.body = body;
            k.stamp = stamp;
            if let Some(old) = k.dml.replace(x) {
                dml::give_back(old);
            }
            k
        }
        None => Box::new(Kept {
            d,
            text: sql.to_vec(),
            piece,
            body,
            dml: Some(x),
            stamp,
        }),
    };
    let _ = LAST.try_with(|l| l.set([Some(k), other]));
}

/// Where the body of the statement's one literal stands in the text, if the reading may be
/// kept.
fn keepable(sql: &[u8], piece: Piece, toks: &[Token], x: &Dml) -> Option<(usize, usize)> {
    if piece.program || x.preds.len() != 1 || x.pred_spans.len() != 1 {
        return None;
    }
    let mut strings = toks.iter().filter(|t| t.kind == Tok::Str);
    let lit = strings.next()?;
    if strings.next().is_some() || !lit.plain {
        return None;
    }
    // (offsets in the statement; the body between the quotes)
    let text = lit.text(sql.get(piece.start..piece.end)?);
    let body = text.strip_prefix(b"'")?.strip_suffix(b"'")?;
    // The string is the K term's literal: inside its span, its value, and no other literal
    // there could be the term's instead (a LIKE with an ESCAPE, whose string is the escape
    // character while the pattern is `0x…`, is not kept; found by a review).
    let (sa, sb) = *x.pred_spans.first()?;
    let pred = x.preds.first()?;
    let in_term = |t: &&Token| sa <= t.start && t.end <= sb;
    if !in_term(&lit)
        || literal_in(pred)? != body
        || !plain(body)
        || matches!(pred, Pred::Like { escape, .. } if *escape != Escape::Default)
        || toks.iter().filter(in_term).any(|t| t.kind == Tok::Hex)
    {
        return None;
    }
    let a = piece.start + lit.start + 1;
    Some((a, a + body.len()))
}

/// Forgets the thread's kept texts (tests and fuzz targets: a reading made in full).
#[doc(hidden)]
pub fn forget() {
    let _ = LAST.try_with(|l| l.set([None, None]));
}

/// After `old` is read in full under `d` (and kept, where it may be), `new` read from it and in
/// full: Ok(whether it was read from the kept text), Err(what differs). What the
/// `repeat_reading` fuzz target and the unit tests compare.
#[doc(hidden)]
pub fn check(old: &[u8], new: &[u8], d: Dialect) -> Result<bool, String> {
    scan::keep_shapes_on_this_thread();
    forget();
    // `old` read as the router reads it: one statement, nothing ambiguous, all tokens kept
    if let Ok((pieces, ambiguity)) = scan::statements(old, d) {
        if let ([p], true, false) = (
            pieces.as_slice(),
            ambiguity == scan::Ambiguity::default(),
            dml::has_executable_comment(old),
        ) {
            let piece = old.get(p.start..p.end).unwrap_or_default();
            let toks: Result<Vec<Token>, _> = scan::Scanner::new(piece, d).collect();
            if let (Ok(toks), false) = (toks, p.program) {
                if let dml::Read::Dml(x) = dml::read_lexed(piece, d, Some(&toks)) {
                    keep(old, d, *p, &toks, x);
                }
            }
        }
    }
    let Some((piece, lent)) = read(new, d) else {
        return Ok(false);
    };
    let x = &lent.dml;
    let (pieces, ambiguity) =
        scan::statements(new, d).map_err(|e| format!("the full split fails: {e:?}"))?;
    if pieces.as_slice() != [piece] {
        return Err(format!("pieces {pieces:?}, from the kept text {piece:?}"));
    }
    if ambiguity != scan::Ambiguity::default() || dml::has_executable_comment(new) {
        return Err(format!("ambiguous in full: {ambiguity:?}"));
    }
    let stmt = new.get(piece.start..piece.end).unwrap_or_default();
    let full = dml::read_lexed(stmt, d, None);
    if !matches!(&full, dml::Read::Dml(f) if f == x) {
        return Err(format!("read in full {full:?}, from the kept text {x:?}"));
    }
    put_back(d, lent);
    // (and a text like it again, from the reading put back: the same reading)
    match read(new, d) {
        Some((again, lent))
            if again == piece && matches!(&full, dml::Read::Dml(f) if *f == lent.dml) =>
        {
            put_back(d, lent);
            Ok(true)
        }
        other => Err(format!("read again: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialects() -> [Dialect; 3] {
        let maria = Dialect::default();
        [
            maria,
            Dialect {
                no_backslash_escapes: true,
                ..maria
            },
            Dialect {
                flavor: scan::Flavor::OceanBase,
                ansi_quotes: true,
                ..maria
            },
        ]
    }

    #[test]
    fn a_repeated_text_is_read_as_in_full() {
        let forms: [(&str, &str); 10] = [
            ("SELECT K, Q, T, V FROM g$f WHERE K LIKE '", "'"),
            ("SELECT * FROM hb.g$f WHERE K = '", "' LIMIT 10"),
            ("  select * from `g$f` t where t.K >= '", "' order by K"),
            ("DELETE FROM g$f WHERE LEFT(K, 4) = '", "'"),
            ("SELECT * FROM g$f WHERE K LIKE _binary'", "' AND Q = 1 ;"),
            ("EXPLAIN SELECT * FROM g$f WHERE K < '", "' -- note"),
            ("UPDATE g$f SET T = 5 WHERE K = '", "'"),
            ("SELECT * FROM g$f WHERE K LIKE '", "' FOR UPDATE /* c */"),
            ("SELECT K FROM g$f AS x WHERE x.K LIKE '", "' LIMIT 5, 10"),
            ("SELECT K, V FROM hb.`g$f` WHERE (K LIKE '", "')\n"),
        ];
        let bodies = ["p%", "", "user-42_%", "a b:c|d%", "x"];
        for d in dialects() {
            for (head, tail) in forms {
                for old in bodies {
                    for new in bodies {
                        let o = format!("{head}{old}{tail}");
                        let n = format!("{head}{new}{tail}");
                        let hit = check(o.as_bytes(), n.as_bytes(), d)
                            .unwrap_or_else(|e| panic!("{o:?} then {n:?} ({d:?}): {e}"));
                        assert!(hit, "{o:?} then {n:?} ({d:?}) not read from the kept text");
                    }
                }
            }
        }
    }

    #[test]
    fn only_a_plain_body_of_the_one_literal_repeats() {
        let d = Dialect::default();
        let cases: [(&str, &str); 13] = [
            // another body not plain: a quote, a backslash, a comment's bytes, non-ASCII
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'",
                "SELECT * FROM g$f WHERE K LIKE 'a''b%'",
            ),
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'",
                "SELECT * FROM g$f WHERE K LIKE 'a\\'%'",
            ),
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'",
                "SELECT * FROM g$f WHERE K LIKE '/*!'",
            ),
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'",
                "SELECT * FROM g$f WHERE K LIKE '\u{e9}%'",
            ),
            // other bytes outside the literal
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'",
                "SELECT * FROM g$g WHERE K LIKE 'b%'",
            ),
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'",
                "SELECT * FROM g$f WHERE K LIKE 'a%' ",
            ),
            // two literals, a literal outside the K term, two K terms
            (
                "SELECT * FROM g$f WHERE K LIKE 'a!%' ESCAPE '!'",
                "SELECT * FROM g$f WHERE K LIKE 'b!%' ESCAPE '!'",
            ),
            // the one string the escape character, the pattern hex whose bytes are its body
            (
                "DELETE FROM g$f WHERE K LIKE 0x21 ESCAPE '!'",
                "DELETE FROM g$f WHERE K LIKE 0x21 ESCAPE 'a'",
            ),
            (
                "SELECT * FROM g$f WHERE K LIKE X'7573657225' ESCAPE 'user%'",
                "SELECT * FROM g$f WHERE K LIKE X'7573657225' ESCAPE '!'",
            ),
            (
                "SELECT 'x' FROM g$f WHERE K = 1",
                "SELECT 'y' FROM g$f WHERE K = 1",
            ),
            (
                "SELECT * FROM g$f WHERE K >= 'a' AND K < 'b'",
                "SELECT * FROM g$f WHERE K >= 'c' AND K < 'b'",
            ),
            // a double-quoted literal, a program
            (
                "SELECT * FROM g$f WHERE K LIKE \"a%\"",
                "SELECT * FROM g$f WHERE K LIKE \"b%\"",
            ),
            (
                "SELECT * FROM g$f WHERE K LIKE 'a%'; SELECT 1",
                "SELECT * FROM g$f WHERE K LIKE 'b%'; SELECT 1",
            ),
        ];
        for (old, new) in cases {
            assert_eq!(
                check(old.as_bytes(), new.as_bytes(), d),
                Ok(false),
                "{old:?} then {new:?}"
            );
        }
    }
}
