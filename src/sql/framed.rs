//! Statements of a repeated shape read from the frames its first text left. A text that
//! `scan::Shape::apply` matched with the thread's shape has the shape's bytes outside its
//! literals (`'…'` strings whose body is their value, runs of digits), and its tokens are the
//! shape's, moved. The DML reader and the INSERT head reader decide everything from words,
//! names and punctuation (and the head's rows layout, `insert::RowsLaidOut`, from the tokens'
//! kinds, which a shape's literals keep), so what a statement's first reading found is kept
//! with the shape
//! (`dml::Frame`, `insert::HeadFrame`, in `scan::Frames`) and a later text of the shape reads
//! again only what its literals decide (`dml::read_framed`, `insert::read_head_framed`). The
//! `shape_reading` fuzz target holds the framed and the full readings equal.

use super::scan::{self, Dialect, Piece};
use super::{dml, insert};

/// An INSERT's head, read (`insert::read_head_resumable`).
pub type InsertHead = Result<Option<insert::Head>, &'static str>;

/// Statement `p` (its bytes `piece`) read by the DML reader from the kept tokens, if all
/// were kept. A statement of a text of the thread's shape whose reading the shape keeps
/// (`dml::Frame`: what the reading found that no literal changes) is read from that: only
/// what its literals decide is read again. A statement read in full leaves its frame with
/// the shape for the texts of the shape that follow.
pub(crate) fn read_dml(
    kept: &scan::Kept,
    piece: &[u8],
    p: &Piece,
    d: Dialect,
) -> Option<dml::Read> {
    read_dml_framed(kept, piece, p, d).map(|(read, _)| read)
}

/// `read_dml`, and whether it was read from a frame.
fn read_dml_framed(
    kept: &scan::Kept,
    piece: &[u8],
    p: &Piece,
    d: Dialect,
) -> Option<(dml::Read, bool)> {
    read_with_frames(
        kept,
        p,
        d,
        |t| dml::read_lexed(piece, d, Some(t)),
        |t| dml::read_framing(piece, d, t),
        |t, f| dml::read_framed(piece, d, t, f),
    )
}

/// Statement `p` read from the kept tokens, if all were kept: `full` without a shape,
/// `framed` from the shape's frame of type `F` of it, else `framing`, whose frame the shape
/// keeps; and whether it was read from a frame.
fn read_with_frames<R, F: std::any::Any + Send>(
    kept: &scan::Kept,
    p: &Piece,
    d: Dialect,
    full: impl FnOnce(&[scan::Token]) -> R,
    framing: impl FnOnce(&[scan::Token]) -> (R, Option<F>),
    framed: impl FnOnce(&[scan::Token], &F) -> R,
) -> Option<(R, bool)> {
    let (toks, at, frames) = kept.framing(p)?;
    let Some(frames) = frames else {
        return Some((full(&toks), false));
    };
    if let Some(read) = frames.find(d, at, |f: &F| framed(&toks, f)) {
        return Some((read, true));
    }
    let (read, frame) = framing(&toks);
    if let Some(frame) = frame {
        frames.keep(d, at, frame);
    }
    Some((read, false))
}

/// Statement `p`'s INSERT head (`insert::read_head_resumable`) read from the kept tokens, if
/// all were kept: from the shape's frame of it, as `read_dml` reads.
pub(crate) fn read_insert_head(
    kept: &scan::Kept,
    piece: &[u8],
    p: &Piece,
    d: Dialect,
) -> Option<InsertHead> {
    read_insert_head_framed(kept, piece, p, d).map(|(head, _)| head)
}

/// `read_insert_head`, and whether it was read from a frame.
fn read_insert_head_framed(
    kept: &scan::Kept,
    piece: &[u8],
    p: &Piece,
    d: Dialect,
) -> Option<(InsertHead, bool)> {
    read_with_frames(
        kept,
        p,
        d,
        |t| insert::read_head_resumable(piece, d, Some(t)),
        |t| insert::read_head_framing(piece, d, t),
        insert::read_head_framed,
    )
}

/// A statement read after its text was taken from the thread's shape, from the shape's frame
/// of it where it keeps one (`from_frame`) and in full from the same tokens: by the DML reader
/// and as an INSERT's head.
#[doc(hidden)]
#[derive(Debug)]
pub enum AfterShape {
    Dml {
        framed: dml::Read,
        full: dml::Read,
        from_frame: bool,
    },
    Head {
        framed: InsertHead,
        full: InsertHead,
        from_frame: bool,
    },
}

impl AfterShape {
    /// The two readings are the same (a head's where its rows begin included).
    pub fn same(&self) -> bool {
        match self {
            AfterShape::Dml { framed, full, .. } => framed == full,
            AfterShape::Head { framed, full, .. } => format!("{framed:?}") == format!("{full:?}"),
        }
    }

    /// Whether a reading of this statement leaves a frame: an INSERT's head always, a DML
    /// reading of a SELECT or DELETE (an UPDATE's SET list holds literals).
    pub fn framed_kind(&self) -> bool {
        match self {
            AfterShape::Dml { full, .. } => {
                matches!(full, dml::Read::Dml(x) if x.verb != dml::Verb::Update)
            }
            AfterShape::Head { .. } => true,
        }
    }

    pub fn from_frame(&self) -> bool {
        match self {
            AfterShape::Dml { from_frame, .. } | AfterShape::Head { from_frame, .. } => *from_frame,
        }
    }
}

/// Each statement of `sql` (and the part of it a wrapper runs, `executed_part`) read after
/// the thread split and read each of `earlier` in turn (`AfterShape`), and whether the text
/// was taken from the shape. What the `shape_reading` fuzz target compares.
#[doc(hidden)]
pub fn reads_after_shape(
    earlier: &[&[u8]],
    sql: &[u8],
    d: Dialect,
    max: usize,
) -> (Vec<AfterShape>, bool) {
    scan::forget_shapes();
    // every statement, and the part of it a wrapper runs
    let parts = |sql: &[u8], pieces: &scan::Pieces| -> Vec<Piece> {
        let mut out = Vec::new();
        for p in pieces {
            out.push(*p);
            let ex = scan::executed_part(sql.get(p.start..p.end).unwrap_or_default(), d);
            if ex.offset > 0 {
                out.push(Piece {
                    start: p.start + ex.offset,
                    ..*p
                });
            }
        }
        out
    };
    // (as `engine::read::read_piece` reads a statement: by its first word, one reader; it
    // reads a wrapped statement's inner part only, this reads both, which the frames have
    // room for; and it shapes no text with an executable comment, this may)
    let is_insert = |piece: &[u8]| {
        scan::Scanner::new(piece, d)
            .next()
            .and_then(Result::ok)
            .is_some_and(|t| t.is_word(piece, "INSERT") || t.is_word(piece, "REPLACE"))
    };
    for text in earlier {
        let mut kept = scan::Kept::new(max);
        if let Ok((pieces, _)) = scan::statements_keeping(text, d, &mut kept) {
            for p in parts(text, &pieces) {
                let piece = text.get(p.start..p.end).unwrap_or_default();
                if is_insert(piece) {
                    let _ = read_insert_head(&kept, piece, &p, d);
                } else if let Some(dml::Read::Dml(x)) = read_dml(&kept, piece, &p, d) {
                    // (given back as the router does: a later reading from a frame reuses it)
                    dml::give_back(x);
                }
            }
        }
    }
    let mut kept = scan::Kept::new(max);
    let mut reads = Vec::new();
    let Ok((pieces, _)) = scan::statements_keeping(sql, d, &mut kept) else {
        return (reads, false);
    };
    let from_shape = kept.taken_from_shape();
    for p in parts(sql, &pieces) {
        let piece = sql.get(p.start..p.end).unwrap_or_default();
        let Some(toks) = kept.of(&p).map(std::borrow::Cow::into_owned) else {
            continue;
        };
        if is_insert(piece) {
            if let Some((framed, from_frame)) = read_insert_head_framed(&kept, piece, &p, d) {
                // its rows, read after the head the frame gave, are the rows read in full
                // (panics otherwise: `insert::picking_agrees_after`)
                if let Ok(head) = &framed {
                    let pick = [Some(0), Some(1), Some(2), Some(3)];
                    insert::picking_agrees_after(piece, d, &toks, head.clone(), pick);
                }
                // (with the rows' plain form counted over these tokens, as the frame's first
                // text had it counted over its own; not where a reading not from a frame did
                // not count it: a text with no frames, whose reading counts nothing)
                let mut full = insert::read_head_framing(piece, d, &toks).0;
                if let (Ok(Some(f)), Ok(Some(h))) = (&framed, &mut full) {
                    if !from_frame && f.plain_rows() == 0 {
                        h.forget_plain_rows();
                    }
                }
                reads.push(AfterShape::Head {
                    framed,
                    full,
                    from_frame,
                });
            }
        } else if let Some((framed, from_frame)) = read_dml_framed(&kept, piece, &p, d) {
            // (a copy given back, so the next statement's reading reuses a box that held
            // another)
            if let dml::Read::Dml(x) = &framed {
                dml::give_back(x.clone());
            }
            reads.push(AfterShape::Dml {
                framed,
                full: dml::read_lexed(piece, d, Some(&toks)),
                from_frame,
            });
        }
    }
    (reads, from_shape)
}

#[cfg(test)]
mod tests {
    /// A statement of the thread's shape is read from the frame its first text left (only
    /// what its literals decide read again), and the reading is the full one: the K terms,
    /// an ESCAPE, a LEFT's length, the positions after literals that grew or shrank, several
    /// statements, a wrapper's part; an UPDATE (its SET list's literals) is read in full.
    #[test]
    fn a_repeated_shape_is_read_from_its_frame() {
        use super::{reads_after_shape, AfterShape};
        use crate::sql::dml;
        use crate::sql::scan::Dialect;
        let d = Dialect::default();
        let cases: [(&str, &str, bool); 8] = [
            (
                "SELECT K, Q, T, V FROM t$f WHERE K LIKE 'p%'",
                "SELECT K, Q, T, V FROM t$f WHERE K LIKE 'a_much_longer_prefix%'",
                true,
            ),
            (
                "SELECT * FROM t$f AS x WHERE K LIKE 'ab%' ESCAPE '!' AND 1 = 1 ORDER BY K LIMIT 10",
                "SELECT * FROM t$f AS x WHERE K LIKE 'ab%' ESCAPE 'xy' AND 1 = 1 ORDER BY K LIMIT 2000",
                true,
            ),
            (
                "DELETE FROM db.t$f WHERE LEFT(K, 3) = 'abc' AND Q = 'q'",
                "DELETE FROM db.t$f WHERE LEFT(K, 99999999999999999999999) = '' AND Q = 'q1'",
                true,
            ),
            (
                "SELECT * FROM t$f WHERE K IN ('a', 'b') AND K >= '1'; SELECT 1 FROM t$f y WHERE '7' = K",
                "SELECT * FROM t$f WHERE K IN ('a', 'bbbbbbb') AND K >= ''; SELECT 1 FROM t$f y WHERE '' = K",
                true,
            ),
            (
                "SET STATEMENT max_statement_time = 5 FOR SELECT * FROM t$f WHERE K = 'k'",
                "SET STATEMENT max_statement_time = 50000 FOR SELECT * FROM t$f WHERE K = 'kkkk'",
                true,
            ),
            (
                "SELECT * FROM t$f WHERE K BETWEEN 'a' AND 'b' OR K = 'c'",
                "SELECT * FROM t$f WHERE K BETWEEN 'aa' AND 'bb' OR K = ''",
                true,
            ),
            (
                "SELECT * FROM plain WHERE K = 'a'",
                "SELECT * FROM plain WHERE K = 'abc'",
                true,
            ),
            (
                "UPDATE t$f SET V = 'v' WHERE K = 'a'",
                "UPDATE t$f SET V = 'longer' WHERE K = 'b'",
                false,
            ),
        ];
        for (first, then, framed) in cases {
            let (reads, from_shape) =
                reads_after_shape(&[first.as_bytes()], then.as_bytes(), d, 4097);
            assert!(from_shape, "{then}");
            let dml: Vec<_> = reads
                .iter()
                .filter_map(|r| match r {
                    AfterShape::Dml {
                        framed,
                        full,
                        from_frame,
                    } => Some((framed, full, *from_frame)),
                    AfterShape::Head { .. } => None,
                })
                .collect();
            assert!(!dml.is_empty(), "{then}");
            for (via_frame, full, from_frame) in &dml {
                assert_eq!(via_frame, full, "{then}");
                assert_eq!(*from_frame, framed, "{then}");
            }
            // the text itself read on its own gives the same (its literals differ from the
            // frame's first text's)
            let own = dml::read(then.split(';').next().unwrap_or_default().as_bytes(), d);
            assert_eq!(&own, dml[0].1, "{then}");
        }
        // the K terms were read again: the new prefix, not the first text's
        let (reads, _) = reads_after_shape(
            &[b"SELECT * FROM t$f WHERE K LIKE 'p%'"],
            b"SELECT * FROM t$f WHERE K LIKE 'qq%'",
            d,
            4097,
        );
        let Some(AfterShape::Dml {
            framed: dml::Read::Dml(x),
            from_frame: true,
            ..
        }) = reads.first()
        else {
            panic!("{reads:?}")
        };
        assert!(matches!(
            &x.preds[0],
            dml::Pred::Like { pattern: dml::Operand::Lit { bytes, .. }, .. } if bytes == b"qq%"
        ));
        assert_eq!(x.where_end, Some(36));
    }

    /// An INSERT's head is read from its frame too: the column list's end and where the rows
    /// begin moved with the literals before them.
    #[test]
    fn a_repeated_insert_head_is_read_from_its_frame() {
        use super::{reads_after_shape, AfterShape};
        use crate::sql::scan::Dialect;
        let d = Dialect::default();
        for (first, then) in [
            (
                "INSERT INTO t$f (K, Q, T, V) VALUES ('k', 'q', -1, 'v')",
                "INSERT INTO t$f (K, Q, T, V) VALUES ('kkkkk', '', -17, 'vvvvvvv')",
            ),
            (
                "SELECT 'a'; REPLACE LOW_PRIORITY db.t$f PARTITION (p0) (K, V) VALUE ('k', 'v')",
                "SELECT 'aaaa'; REPLACE LOW_PRIORITY db.t$f PARTITION (p0) (K, V) VALUE ('', 'v')",
            ),
            (
                "INSERT INTO t$f SET K = 'k', Q = 'q'",
                "INSERT INTO t$f SET K = 'kk', Q = ''",
            ),
            // rows whose plain form the frame counted (two: the third holds a NULL), with
            // other literals, one a digit run too long for an integer (read in full then)
            (
                "INSERT INTO t$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', \"e\", +2, 3), ('g', 'h', -3, NULL), ('i', 'j', -4, 'k')",
                "INSERT INTO t$f (K, Q, T, V) VALUES ('aaa', '', -99, 'c'), ('', \"e\", +999999999999999999999999999999999999999999, 12345), ('', 'hh', -3, NULL), ('x', 'y', -5, 'z')",
            ),
        ] {
            let (reads, from_shape) =
                reads_after_shape(&[first.as_bytes()], then.as_bytes(), d, 4097);
            assert!(from_shape, "{then}");
            let mut heads = 0;
            for r in &reads {
                assert!(r.same(), "{r:?}");
                if let AfterShape::Head {
                    framed: Ok(Some(h)),
                    from_frame,
                    ..
                } = r
                {
                    assert!(from_frame, "{then}");
                    // (the first statement's column list ends where the text says)
                    if let (Some(c), Some(e)) = (h.insert.columns_close, then.find(") VALUES")) {
                        assert_eq!(c, e, "{then}");
                    }
                    heads += 1;
                }
            }
            assert_eq!(heads, 1, "{then}");
        }
    }
}
