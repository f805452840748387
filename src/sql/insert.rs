//! Reading INSERT and REPLACE on one table, for the cell rules (issue 10): the table, the column
//! list, and each row of a VALUES list as far as its values are literals or placeholders.
//!
//! The reader streams: rows are handed to a callback one at a time (a 60 MiB bulk INSERT is
//! never held as values), with no recursion and one pass over the tokens of `sql::scan`, so it
//! reads the statement exactly as the backend does. A value it cannot see (an expression, a
//! function, a subquery) is `Value::Unknown`: the caller forwards the statement with a note
//! rather than guess. Shapes it does not follow at all (INSERT … SELECT, `SET`, a table
//! function) say so in `Source`, and anything unreadable is `Read::Unreadable`.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::Arc;

use super::ddl::TableName;
use super::scan::{
    hex_value, ident_small, ident_value, string_value_cow, Dialect, Scanner, Tok, Token,
};

/// How the backend types a string literal: this decides whether its bytes are the bytes the
/// backend compares with the binary column K.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LitCharset {
    /// `X'…'`, `0x…`, `_binary'…'`: the bytes as written.
    Binary,
    /// `_utf8mb4'…'` / `_utf8'…'` / `_utf8mb3'…'`: the bytes, if they are valid UTF-8.
    Utf8,
    /// No introducer: the connection's character set (converted from the client's).
    Connection,
    /// Another introducer: certain only for ASCII.
    Other,
    /// An introducer of a character set that does not keep ASCII as it is (ucs2, utf16,
    /// utf16le, utf32: two or four bytes a character; filename): never certain.
    Wide,
}

/// Whether a character set (its name, any case) does not keep ASCII as it is: two or four
/// bytes a character (ucs2, utf16, utf16le, utf32), or `filename`'s encoding.
pub fn is_wide_charset(name: &[u8]) -> bool {
    [&b"ucs2"[..], b"utf16", b"utf16le", b"utf32", b"filename"]
        .iter()
        .any(|w| name.eq_ignore_ascii_case(w))
}

/// The character set an introducer (`_latin1`, lower-cased) gives the literal after it (a
/// `X'…'` one when `hex`: its bytes as written, but in a wide set padded to whole characters).
pub fn introduced(intro: &[u8], hex: bool) -> LitCharset {
    match intro {
        _ if is_wide_charset(intro.strip_prefix(b"_").unwrap_or(intro)) => LitCharset::Wide,
        b"_binary" => LitCharset::Binary,
        _ if hex => LitCharset::Binary,
        b"_utf8mb4" | b"_utf8" | b"_utf8mb3" => LitCharset::Utf8,
        _ => LitCharset::Other,
    }
}

/// One value of a VALUES row. `'a` is the statement's text: a string literal without escapes
/// is borrowed from it (a row of a text INSERT costs no allocation for its values); what is
/// kept past the statement is `Value<'static>` (`into_owned`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// A string or hex literal: its bytes (quotes and escapes removed) and how the backend
    /// types them.
    Bytes {
        bytes: Cow<'a, [u8]>,
        charset: LitCharset,
    },
    /// An integer literal, with its sign.
    Int(i128),
    Null,
    /// `DEFAULT`.
    Default,
    /// A `?` placeholder, by its position among the statement's placeholders.
    Param(u32),
    /// Anything else: the proxy cannot know its value without running it.
    Unknown,
}

impl Value<'_> {
    /// The value, holding its own bytes.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Bytes { bytes, charset } => Value::Bytes {
                bytes: Cow::Owned(bytes.into_owned()),
                charset,
            },
            Value::Int(i) => Value::Int(i),
            Value::Null => Value::Null,
            Value::Default => Value::Default,
            Value::Param(n) => Value::Param(n),
            Value::Unknown => Value::Unknown,
        }
    }
}

/// Where an INSERT's rows come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `VALUES (…), (…)` / `VALUE (…)`: rows are read.
    Values,
    /// `SET col = v, …`: one row, read as a VALUES row of the named columns.
    Set,
    /// `SELECT …` / `TABLE …` / a parenthesised query: rows the proxy cannot see.
    Query,
}

/// A column's name as written (unquoted): an INSERT's column list costs one allocation, not
/// one a column.
pub type Name = super::scan::Ident;

/// The statement's head: everything before the rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insert {
    pub replace: bool,
    pub ignore: bool,
    pub table: TableName,
    /// The column list as written (unquoted), None without one (all columns in table order).
    /// (shared: a head read from a shape's frame is a copy of the frame's, `HeadFrame`)
    pub columns: Option<Arc<[Name]>>,
    /// Offset of the column list's closing parenthesis (where a column is added).
    pub columns_close: Option<usize>,
    pub source: Source,
    /// `ON DUPLICATE KEY UPDATE` assigns these columns.
    pub on_duplicate: Vec<Name>,
    /// The value each of `on_duplicate` is given, when it is one literal or placeholder.
    pub on_duplicate_values: Vec<Value<'static>>,
    /// Explicit `PARTITION (…)` selection.
    pub partition_selection: bool,
}

/// One row: its values, and where a value is added: the offset of its closing parenthesis (a
/// VALUES row), or the offset just after the last value (a SET list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'v> {
    pub index: usize,
    pub values: &'v [Value<'v>],
    /// Where each value is in the text (its first token's start, its last token's end), for a
    /// VALUES row; empty for a SET list.
    pub spans: &'v [(usize, usize)],
    pub close: usize,
    /// The picked columns' values in their plain form, when the reading was asked for them
    /// (`read_lexed_picking`) and the row is laid out with only plain values: then `values`
    /// and `spans` are empty.
    pub plain: Option<&'v [Plain<'v>; 4]>,
}

/// A value of a laid-out row in the form a check takes without a `Value` (`Row::plain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain<'a> {
    /// The column is not among the row's.
    Absent,
    /// A plain string's body (`Token::plain`: ASCII, no backslash, no doubled quote; no
    /// introducer: the connection's character set). As a `Value`, `Bytes` of `Connection`.
    Ascii(&'a [u8]),
    /// An integer, with its sign. As a `Value`, `Int`.
    Int(i128),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Not an INSERT / REPLACE.
    NotInsert,
    Unreadable(&'static str),
    /// Read; `rows` rows were handed to the callback (all of them unless it stopped early).
    Insert {
        head: Arc<Insert>,
        rows: usize,
    },
}

/// A row's values as they are read.
type RowValues<'a> = Vec<Value<'a>>;

/// Most values (and spans) of a row whose room a thread keeps for the next statement's rows.
const ROW_ROOM: usize = 16;

/// A row's value and span buffers, empty.
type RowBufs = (Vec<Value<'static>>, Vec<(usize, usize)>);

thread_local! {
    /// The row buffers of `read_lexed_after`, empty, kept between statements (a statement
    /// costs no allocation for them): at most `ROW_ROOM` values' room.
    static ROW_BUFS: std::cell::Cell<RowBufs> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// Most values a row may have before the reader gives up (a table has at most 4,096 columns).
const MAX_ROW_VALUES: usize = 4096;
/// Most tokens of one ON DUPLICATE KEY UPDATE value kept to read it as a literal (more: an
/// expression).
const MAX_LITERAL_TOKENS: usize = MAX_SIGNS + 4;

/// An ON DUPLICATE KEY UPDATE list: its columns, and their values (same length).
type Assigned = (Vec<Name>, Vec<Value<'static>>);

/// Most unary signs before a number (`- - -1`).
const MAX_SIGNS: usize = 64;

/// Reads an INSERT or REPLACE, calling `on_row` for each row of its VALUES list (or its SET
/// list) in order; `on_row` may stop the reading (`ControlFlow::Break`).
pub fn read(
    sql: &[u8],
    d: Dialect,
    on_row: impl FnMut(&Insert, Row<'_>) -> ControlFlow<()>,
) -> Read {
    read_lexed(sql, d, None, on_row)
}

/// `read`, over the statement's tokens when the text's split kept them (`scan::Kept::of`:
/// the same tokens lexing `sql` alone gives), else lexing `sql`.
pub fn read_lexed(
    sql: &[u8],
    d: Dialect,
    lexed: Option<&[Token]>,
    on_row: impl FnMut(&Insert, Row<'_>) -> ControlFlow<()>,
) -> Read {
    read_lexed_after(sql, d, lexed, None, on_row)
}

/// `read_lexed`, going on after `head` when it was read over the same tokens (`read_head`
/// with kept tokens): the head is not read twice. A head that does not match the tokens (or
/// was read by lexing) is read again.
pub fn read_lexed_after(
    sql: &[u8],
    d: Dialect,
    lexed: Option<&[Token]>,
    head: Option<Head>,
    on_row: impl FnMut(&Insert, Row<'_>) -> ControlFlow<()>,
) -> Read {
    read_lexed_picking(sql, d, lexed, head, None, on_row)
}

/// `read_lexed_after`, handing a row as `Row::plain` where it can (`pick`: the four columns
/// wanted, by their index among the values a row gives; None: a column not given): a row laid
/// out (`RowsLaidOut`) after the head given, whose values are all plain strings and integers.
/// Any other row is handed with its `values` and `spans` as `read_lexed_after` hands it.
pub fn read_lexed_picking(
    sql: &[u8],
    d: Dialect,
    lexed: Option<&[Token]>,
    head: Option<Head>,
    pick: Option<[Option<usize>; 4]>,
    on_row: impl FnMut(&Insert, Row<'_>) -> ControlFlow<()>,
) -> Read {
    let resumed = match (head, lexed) {
        (Some(h), Some(all)) => h.resume.and_then(|at| {
            at.matches(all).then(|| {
                let r = Reader {
                    sql,
                    d,
                    toks: Toks::Kept(all.get(at.taken..).unwrap_or_default().iter()),
                    peeked: None,
                    params: at.params,
                };
                (r, h.insert, at.laid_out)
            })
        }),
        _ => None,
    };
    let (mut r, head, laid_out) = match resumed {
        Some(rh) => rh,
        None => {
            let mut r = Reader::new(sql, d, lexed);
            match r.head() {
                Ok(Some(h)) => (r, h, None),
                Ok(None) => return Read::NotInsert,
                Err(why) => return Read::Unreadable(why),
            }
        }
    };
    // reused row to row, and kept for the thread's next statement; made for four values at
    // once (an HBase row's K, Q, T, V): a one-row INSERT goes through no growth
    // (`try_with`: none while the thread's locals are being torn down)
    let (mut values, mut spans): (RowValues, _) =
        ROW_BUFS.try_with(std::cell::Cell::take).unwrap_or_default();
    values.reserve(4);
    spans.reserve(4);
    // (rows are laid out only after a head given: the one `pick` was worked out on)
    let laid_out = laid_out.map(|l| (l, pick.map(|p| p.map(|c| c.unwrap_or(usize::MAX)))));
    let read = read_rows(&mut r, head, laid_out, &mut values, &mut spans, on_row);
    values.clear();
    spans.clear();
    if values.capacity() <= ROW_ROOM && spans.capacity() <= ROW_ROOM {
        // (emptied, it holds no borrowed bytes: collected in place, as `Value<'static>`)
        let values = values.into_iter().map(|_| Value::Unknown).collect();
        let _ = ROW_BUFS.try_with(|b| b.set((values, spans)));
    }
    read
}

/// `read_lexed_after`'s rows and tail, after the head, over the buffers `values` and `spans`
/// (`laid_out`: how the rows that follow are laid out, when they are, and the columns picked
/// for `Row::plain`, `usize::MAX` for one not given).
fn read_rows<'a>(
    r: &mut Reader<'a>,
    mut head: Arc<Insert>,
    laid_out: Option<(RowsLaidOut, Option<[usize; 4]>)>,
    values: &mut RowValues<'a>,
    spans: &mut Vec<(usize, usize)>,
    mut on_row: impl FnMut(&Insert, Row<'_>) -> ControlFlow<()>,
) -> Read {
    let mut rows = 0usize;
    let mut stopped = false;
    match head.source {
        Source::Query => {}
        Source::Set => {
            let mut columns = Vec::new();
            let close = match r.set_list(&mut columns, values) {
                Ok(c) => c,
                Err(why) => return Read::Unreadable(why),
            };
            Arc::make_mut(&mut head).columns = Some(columns.into());
            rows = 1;
            let row = Row {
                index: 0,
                values,
                spans: &[],
                close,
                plain: None,
            };
            stopped = on_row(&head, row).is_break();
        }
        Source::Values => {
            // the rows laid out (`RowsLaidOut`) as far as the tokens have the layout's form,
            // then token by token from a row not of the form
            let mut more = true;
            if let Some((l, pick)) = laid_out {
                match read_laid_out(r, &head, l, pick, values, spans, &mut on_row) {
                    LaidOut::Stopped(n) => (rows, stopped, more) = (n, true, false),
                    LaidOut::Ended(n) => (rows, more) = (n, false),
                    LaidOut::Unlike(n) => rows = n,
                }
            }
            if more {
                loop {
                    values.clear();
                    spans.clear();
                    let close = match r.row(values, spans) {
                        Ok(c) => c,
                        Err(why) => return Read::Unreadable(why),
                    };
                    let row = Row {
                        index: rows,
                        values,
                        spans,
                        close,
                        plain: None,
                    };
                    rows += 1;
                    if on_row(&head, row).is_break() {
                        stopped = true;
                        break;
                    }
                    match r.tok() {
                        Ok(Some(t)) if t.is_punct(b',') => continue,
                        Ok(t) => {
                            r.peeked = Some(t);
                            break;
                        }
                        Err(why) => return Read::Unreadable(why),
                    }
                }
            }
        }
    }
    // stopped by the callback: what follows the rows is not read
    if !stopped {
        let tail = match head.source {
            Source::Query => r.query_tail(),
            _ => r.tail(),
        };
        match tail {
            // (a head read from a frame is shared with it: copied only when there is
            // something to add)
            Ok((cols, values)) if cols.is_empty() && values.is_empty() => {}
            Ok((cols, values)) => {
                let h = Arc::make_mut(&mut head);
                h.on_duplicate = cols;
                h.on_duplicate_values = values;
            }
            Err(why) => return Read::Unreadable(why),
        }
    }
    Read::Insert { head, rows }
}

/// How a reading of laid-out rows (`read_laid_out`) ended, with how many rows it handed out.
enum LaidOut {
    /// `on_row` stopped the reading.
    Stopped(usize),
    /// After a row followed by no `,`: the reader stands at the token after it (the tail's).
    Ended(usize),
    /// At a row not of the layout's form: the reader stands at its first token.
    Unlike(usize),
}

/// The rows laid out as `l` says (`RowsLaidOut`) from the reader's place, handed to `on_row`
/// as `Reader::row` reads them, for as long as the tokens have the layout's form (every token
/// a row's value or punctuation is looked at: a head and tokens that are not the ones it was
/// read over are read token by token from where they differ, not misread).
fn read_laid_out<'a>(
    r: &mut Reader<'a>,
    head: &Insert,
    l: RowsLaidOut,
    pick: Option<[usize; 4]>,
    values: &mut RowValues<'a>,
    spans: &mut Vec<(usize, usize)>,
    on_row: &mut impl FnMut(&Insert, Row<'_>) -> ControlFlow<()>,
) -> LaidOut {
    let Reader {
        sql,
        d,
        toks: Toks::Kept(it),
        peeked: None,
        ..
    } = r
    else {
        return LaidOut::Unlike(0);
    };
    let (sql, d) = (*sql, *d);
    let toks = it.as_slice();
    let width = l.width();
    // a row's values, each replaced by the next row's
    values.clear();
    values.resize(l.values as usize, Value::Unknown);
    spans.clear();
    spans.resize(l.values as usize, (0, 0));
    // a row's picked values in their plain form (`Row::plain`), when it has only such values
    // (not when a column picked is past a row's values: that one is not absent but unknown,
    // as the backend refuses a row of fewer values than columns)
    let pick = pick.filter(|p| p.iter().all(|&c| c == usize::MAX || c < l.values as usize));
    // each column's place in `Row::plain` (4: none), worked out once for the rows (two
    // places picking one column: no plain rows)
    let places = pick.and_then(|p| {
        let mut places = [4u8; LAID_OUT_VALUES];
        for (j, &c) in p.iter().enumerate() {
            if let Some(at) = places.get_mut(c) {
                if *at != 4 {
                    return None;
                }
                *at = j as u8;
            }
        }
        Some(places)
    });
    let mut plain = [Plain::Absent; 4];
    // the row about to be read: its first token
    let (mut at, mut index) = (0usize, 0usize);
    // the rows known to be plain first (`RowsLaidOut::plain_rows`), read at their places;
    // when there are two or more (for one, working the places out costs about what
    // `plain_row` spends reading it); from a row that is not read so (a digit run too long
    // for an integer), as any row
    if let (Some(p), Some(_), true) = (pick, &places, l.plain_rows > 1) {
        let known = known_places(l, p);
        while index < l.plain_rows as usize {
            let row = toks.get(at..at + width);
            let Some(close) = row.and_then(|row| known_plain_row(sql, row, &known, &mut plain))
            else {
                break;
            };
            let row = Row {
                index,
                values: &[],
                spans: &[],
                close,
                plain: Some(&plain),
            };
            if on_row(head, row).is_break() {
                return LaidOut::Stopped(index + 1);
            }
            index += 1;
            match next_row(toks, at + width, it) {
                Some(next) => at = next,
                None => return LaidOut::Ended(index),
            }
        }
    }
    loop {
        let row = toks.get(at..at + width);
        let plain_close = match (&places, row) {
            (Some(places), Some(row)) => plain_row(sql, row, l, places, &mut plain),
            _ => None,
        };
        let row = match plain_close {
            Some(close) => Row {
                index,
                values: &[],
                spans: &[],
                close,
                plain: Some(&plain),
            },
            None => {
                let close = row.and_then(|row| laid_out_row(sql, d, row, l.signed, values, spans));
                let Some(close) = close else {
                    *it = toks.get(at..).unwrap_or_default().iter();
                    return LaidOut::Unlike(index);
                };
                Row {
                    index,
                    values,
                    spans,
                    close,
                    plain: None,
                }
            }
        };
        if on_row(head, row).is_break() {
            return LaidOut::Stopped(index + 1);
        }
        index += 1;
        match next_row(toks, at + width, it) {
            Some(next) => at = next,
            None => return LaidOut::Ended(index),
        }
    }
}

/// Where the next laid-out row's tokens begin, after a row whose tokens end before `at`: past
/// the `,` there. None: anything else ends the rows, as after any row (the reader `it` then
/// stands at that token).
#[inline(always)]
fn next_row<'t>(
    toks: &'t [Token],
    at: usize,
    it: &mut std::slice::Iter<'t, Token>,
) -> Option<usize> {
    if toks.get(at).is_some_and(|t| t.is_punct(b',')) {
        return Some(at + 1);
    }
    *it = toks.get(at..).unwrap_or_default().iter();
    None
}

/// One row's tokens (`(`, the values and the `,`s or `)` after them) read into the slots
/// `values` and `spans` (one for each of its values), when they have the layout's form (the
/// columns `signed` a sign and a number, the others one token but `?`): the offset of its
/// `)`. None: a token of another form (the slots then hold part of the row).
#[inline]
fn laid_out_row<'a>(
    sql: &'a [u8],
    d: Dialect,
    row: &[Token],
    signed: u64,
    values: &mut [Value<'a>],
    spans: &mut [(usize, usize)],
) -> Option<usize> {
    let (open, mut rest) = row.split_first()?;
    if !open.is_punct(b'(') {
        return None;
    }
    let last = values.len().checked_sub(1)?;
    let mut close = None;
    for (c, (value, span)) in values.iter_mut().zip(spans.iter_mut()).enumerate() {
        let (v, at, end, n) = match rest {
            [s, t, e, ..]
                if signed >> c & 1 == 1
                    && t.kind == Tok::Number
                    && matches!(s.kind, Tok::Punct(b'-' | b'+')) =>
            {
                (
                    int_value(sql, t, s.kind == Tok::Punct(b'-')),
                    (s.start, t.end),
                    e,
                    3,
                )
            }
            // (a plain string, most of a batch's values: its body, taken in line; this is
            // `string_value_cow`'s plain case, which called here cost 40 a batch row more)
            [t, e, ..] if signed >> c & 1 == 0 && t.kind == Tok::Str && t.plain => {
                let v = match sql.get(t.start + 1..t.end.wrapping_sub(1)) {
                    Some(body) => Value::Bytes {
                        bytes: Cow::Borrowed(body),
                        charset: LitCharset::Connection,
                    },
                    None => literal_one(sql, d, t, None),
                };
                (v, (t.start, t.end), e, 2)
            }
            // (a value of one token but `?`: `one_token_value`'s kinds but the placeholder)
            [t, e, ..]
                if signed >> c & 1 == 0
                    && matches!(t.kind, Tok::Str | Tok::Number | Tok::Hex | Tok::Word) =>
            {
                (literal_one(sql, d, t, None), (t.start, t.end), e, 2)
            }
            _ => return None,
        };
        if end.kind != Tok::Punct(if c == last { b')' } else { b',' }) {
            return None;
        }
        close = Some(end.start);
        (*value, *span) = (v, at);
        rest = rest.get(n..).unwrap_or_default();
    }
    close
}

/// `laid_out_row` for a row whose values are all plain strings (`Token::plain`, `'…'` or
/// `"…"` as the lexer found them) and integers (a number of digits only, signed or not as the
/// layout says): the value of column `c` put in `out[places[c]]` (none where that is 4 or
/// more), and the offset of the row's `)`. None:
/// a token of another form, or a value of another kind (a `NULL`, a hex string, a fraction):
/// the row is then to be read by `laid_out_row` (what `out` holds is not to be used). What it
/// puts in `out` is what `laid_out_row` reads for those columns (`Plain`'s `Value`s).
#[inline]
fn plain_row<'a>(
    sql: &'a [u8],
    row: &[Token],
    l: RowsLaidOut,
    places: &[u8; LAID_OUT_VALUES],
    out: &mut [Plain<'a>; 4],
) -> Option<usize> {
    let (open, mut rest) = row.split_first()?;
    if !open.is_punct(b'(') {
        return None;
    }
    let n = l.values as usize;
    let last = n.checked_sub(1)?;
    *out = [Plain::Absent; 4];
    let mut close = None;
    for c in 0..n {
        let signed = l.signed >> c & 1 == 1;
        let (v, end, k) = match rest {
            [s, t, e, ..]
                if signed && t.kind == Tok::Number && matches!(s.kind, Tok::Punct(b'-' | b'+')) =>
            {
                let text = t.text(sql);
                let n = integer(text).filter(|_| !text.is_empty())?;
                let n = if s.kind == Tok::Punct(b'-') { -n } else { n };
                (Plain::Int(n), e, 3)
            }
            [t, e, ..] if !signed && t.kind == Tok::Str && t.plain => (
                Plain::Ascii(sql.get(t.start + 1..t.end.wrapping_sub(1))?),
                e,
                2,
            ),
            [t, e, ..] if !signed && t.kind == Tok::Number => {
                let text = t.text(sql);
                (
                    Plain::Int(integer(text).filter(|_| !text.is_empty())?),
                    e,
                    2,
                )
            }
            _ => return None,
        };
        if end.kind != Tok::Punct(if c == last { b')' } else { b',' }) {
            return None;
        }
        close = Some(end.start);
        if let Some(slot) = places.get(c).and_then(|&j| out.get_mut(usize::from(j))) {
            *slot = v;
        }
        rest = rest.get(k..).unwrap_or_default();
    }
    close
}

/// Where each picked column's value (`pick`, `usize::MAX`: not given) is among the tokens of
/// a row laid out as `l` says, and whether a sign is before it (`known_plain_row`).
#[inline(never)]
fn known_places(l: RowsLaidOut, pick: [usize; 4]) -> [Option<(usize, bool)>; 4] {
    pick.map(|c| {
        let signed = c < LAID_OUT_VALUES && l.signed >> c & 1 == 1;
        // the signed columns before it, one step each (most layouts have one, T; without a
        // popcnt instruction, `count_ones` costs about twenty)
        let mut before = l.signed & 1u64.checked_shl(c as u32).map_or(u64::MAX, |b| b - 1);
        let mut signs = 0;
        while before != 0 {
            before &= before - 1;
            signs += 1;
        }
        (c != usize::MAX).then(|| (1 + 2 * c + signs + usize::from(signed), signed))
    })
}

/// `plain_row` for a row of the count a shape's frame holds (`RowsLaidOut::plain_rows`):
/// its tokens' kinds are known, so only the picked values are read, each at its place
/// (`known`: its token among the row's, and whether a sign is before it; None: a column not
/// given). None: a digit run too long for an integer, which `laid_out_row` reads then.
#[inline]
fn known_plain_row<'a>(
    sql: &'a [u8],
    row: &[Token],
    known: &[Option<(usize, bool)>; 4],
    out: &mut [Plain<'a>; 4],
) -> Option<usize> {
    let close = row.last()?.start;
    for (slot, col) in out.iter_mut().zip(known) {
        *slot = match *col {
            None => Plain::Absent,
            Some((i, signed)) => {
                let t = row.get(i)?;
                if t.kind == Tok::Str {
                    Plain::Ascii(sql.get(t.start + 1..t.end.wrapping_sub(1))?)
                } else {
                    let n = integer(t.text(sql))?;
                    let minus = signed && row.get(i.wrapping_sub(1))?.kind == Tok::Punct(b'-');
                    Plain::Int(if minus { -n } else { n })
                }
            }
        };
    }
    Some(close)
}

/// Reads `sql` (lexed, after its head read over the same tokens) with `pick` and without, and
/// panics unless the two hand out the same rows: a row handed in its plain form
/// (`Row::plain`) with, for each picked column, the `Value` the other reading has there as
/// `Plain` says (`Bytes` of the connection's character set for `Ascii`, the bytes ASCII;
/// `Int`); any other row alike. How many rows were handed in their plain form: what the
/// `sql_insert` fuzz target and the unit tests run. Read a third time after the head a
/// shape's frame of it keeps (`read_head_framing`: its rows' plain form counted), the rows
/// are the same too.
#[doc(hidden)]
pub fn picking_agrees(sql: &[u8], d: Dialect, pick: [Option<usize>; 4]) -> usize {
    let Ok(tokens) = crate::sql::scan::Scanner::new(sql, d).collect::<Result<Vec<Token>, _>>()
    else {
        return 0;
    };
    let framed = read_head_framing(sql, d, &tokens).0.ok().flatten();
    picking_agrees_after(sql, d, &tokens, framed, pick)
}

/// `picking_agrees` over `tokens` (`sql`'s, kept), its third reading after `framed` (the head
/// a frame gave, for a text of a shape: `framed::reads_after_shape`).
#[doc(hidden)]
pub fn picking_agrees_after(
    sql: &[u8],
    d: Dialect,
    tokens: &[Token],
    framed: Option<Head>,
    pick: [Option<usize>; 4],
) -> usize {
    type Seen = Vec<(
        usize,
        usize,
        Option<Vec<Value<'static>>>,
        Vec<(usize, usize)>,
    )>;
    let head = || read_head_resumable(sql, d, Some(tokens)).ok().flatten();
    let rows_of = |out: &mut Seen, row: Row<'_>, plain: bool| {
        let values = match row.plain {
            Some(p) => {
                assert!(plain, "a plain row handed without picking");
                assert!(row.values.is_empty() && row.spans.is_empty());
                p.iter()
                    .map(|v| match *v {
                        Plain::Absent => None,
                        Plain::Ascii(b) => {
                            assert!(b.is_ascii());
                            Some(Value::Bytes {
                                bytes: Cow::Owned(b.to_vec()),
                                charset: LitCharset::Connection,
                            })
                        }
                        Plain::Int(i) => Some(Value::Int(i)),
                    })
                    .collect::<Vec<_>>()
            }
            None => return out.push((row.index, row.close, None, row.spans.to_vec())),
        };
        // (the picked columns of a plain row, compared with the other reading's below)
        out.push((
            row.index,
            row.close,
            Some(
                values
                    .into_iter()
                    .map(|v| v.unwrap_or(Value::Default))
                    .collect(),
            ),
            Vec::new(),
        ));
    };
    let (mut picked, mut whole): (Seen, Seen) = (Vec::new(), Vec::new());
    let mut whole_values: Vec<Vec<Value<'static>>> = Vec::new();
    let a = read_lexed_picking(sql, d, Some(tokens), head(), Some(pick), |_, row| {
        rows_of(&mut picked, row, true);
        ControlFlow::Continue(())
    });
    let b = read_lexed_after(sql, d, Some(tokens), head(), |_, row| {
        whole_values.push(row.values.iter().cloned().map(Value::into_owned).collect());
        rows_of(&mut whole, row, false);
        ControlFlow::Continue(())
    });
    assert_eq!(a, b);
    // with the head a shape's frame keeps (its rows' plain form counted): the same rows
    let mut from_frame: Seen = Vec::new();
    let c = read_lexed_picking(sql, d, Some(tokens), framed, Some(pick), |_, row| {
        rows_of(&mut from_frame, row, true);
        ControlFlow::Continue(())
    });
    assert_eq!(a, c);
    assert_eq!(picked.len(), whole.len());
    // each row as the whole reading has it; how many were handed plain
    let agree = |seen: &Seen| -> usize {
        assert_eq!(seen.len(), whole.len());
        let mut plain = 0;
        for ((p, w), values) in seen.iter().zip(&whole).zip(&whole_values) {
            assert_eq!((p.0, p.1), (w.0, w.1));
            match &p.2 {
                None => assert_eq!(p.3, w.3),
                Some(got) => {
                    plain += 1;
                    for (g, c) in got.iter().zip(pick) {
                        let want = match c {
                            None => Value::Default,
                            Some(c) => values.get(c).cloned().unwrap_or(Value::Unknown),
                        };
                        assert_eq!(*g, want, "{:?}", String::from_utf8_lossy(sql));
                    }
                }
            }
        }
        plain
    };
    let plain = agree(&picked);
    agree(&from_frame);
    // (a row the frame's count holds is read without its columns not picked: it is handed
    // plain where those hold a digit run too long for an integer, as it is not otherwise)
    for (p, f) in picked.iter().zip(&from_frame) {
        assert!(
            p.2.is_none() || f.2.is_some(),
            "{:?}",
            String::from_utf8_lossy(sql)
        );
    }
    plain
}

/// The head of an INSERT / REPLACE (everything before its rows; None: not one), over kept
/// tokens as `read_lexed`.
pub fn read_head(
    sql: &[u8],
    d: Dialect,
    lexed: Option<&[Token]>,
) -> Result<Option<Arc<Insert>>, &'static str> {
    Reader::new(sql, d, lexed).head()
}

/// A head read over kept tokens, with where its rows begin among them (`read_lexed_after`
/// goes on from there).
#[derive(Debug, Clone)]
pub struct Head {
    /// (shared where it is read: the head goes on to the row reading and into `Read::Insert`
    /// without being copied again, and a head read from a frame is the frame's, `HeadFrame`,
    /// copied only when an offset in it moved)
    pub insert: Arc<Insert>,
    resume: Option<Resume>,
}

/// Heads are equal when they read the same: where the rows begin is a hint for reading on.
impl PartialEq for Head {
    fn eq(&self, o: &Head) -> bool {
        self.insert == o.insert
    }
}

impl Eq for Head {}

/// Where a reading stopped among kept tokens: how many it took, the placeholders among them,
/// and, to recognise the same tokens, how many there are and where the next one starts; and
/// how the rows after it are laid out, when they are of one form (`RowsLaidOut`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Resume {
    taken: usize,
    params: u32,
    total: usize,
    next_start: Option<usize>,
    /// How the rows after the head are laid out, when they are (`RowsLaidOut`).
    laid_out: Option<RowsLaidOut>,
}

/// How an INSERT's VALUES rows stand among its tokens when its first row is `(`, values
/// between `,`s, and `)`, each value one token but `?` (a literal, NULL, DEFAULT or a word) or
/// a sign and a number: how many values, and which are signed. The row reader then takes the
/// values of each row of that form (a program's batch: every row) from known places
/// (`read_laid_out`) instead of matching each token, and reads any other row token by token. It reads what `Reader::row_in_place`
/// reads, row by row (the `sql_insert` fuzz target compares the readings). A text of a shape
/// (`scan::Shape::apply`) has its first text's tokens, moved: its rows are laid out as the
/// first text's were, so a head read from a frame (`HeadFrame`) keeps the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RowsLaidOut {
    /// Values in each row (at most `LAID_OUT_VALUES`).
    values: u32,
    /// The columns whose value is a sign and a number, a bit each (the first the lowest).
    signed: u64,
    /// How many rows, from the first, have the plain form by their tokens alone
    /// (`plain_rows`), counted where a shape's frame is made (`read_head_framing`), so known
    /// for every text of the shape; 0 anywhere else (not counted).
    plain_rows: u32,
}

/// Most values of a row laid out (`RowsLaidOut::signed` has a bit for each).
const LAID_OUT_VALUES: usize = 64;

impl RowsLaidOut {
    /// A row's tokens: its `(`, each value's (two for a signed one) and the `,` or `)` after it.
    fn width(&self) -> usize {
        2 * self.values as usize + 1 + self.signed.count_ones() as usize
    }
}

/// How a value begins at `toks`: one token (1) or a sign and a number (2) that `RowsLaidOut`
/// takes, followed by `,` or `)` (which one, true: `)`).
fn laid_out_value(toks: &[Token]) -> Option<(usize, bool)> {
    let (n, end) = match toks {
        [t, e, ..] if one_token_value(t.kind) && !t.is_punct(b'?') => (1, e),
        [s, t, e, ..] if t.kind == Tok::Number && matches!(s.kind, Tok::Punct(b'-' | b'+')) => {
            (2, e)
        }
        _ => return None,
    };
    match end.kind {
        Tok::Punct(b')') => Some((n, true)),
        Tok::Punct(b',') => Some((n, false)),
        _ => None,
    }
}

/// How the rows at the start of `toks` are laid out (`RowsLaidOut`), from the first of them
/// (each later row is looked at as it is read). None: a first row of another form (or none),
/// which the reader reads token by token.
fn rows_laid_out(toks: &[Token]) -> Option<RowsLaidOut> {
    if !toks.first()?.is_punct(b'(') {
        return None;
    }
    // the first row: its values, each followed by `,` or the `)` that ends it
    let (mut values, mut signed, mut at) = (0usize, 0u64, 1usize);
    loop {
        if values >= LAID_OUT_VALUES {
            return None;
        }
        let (n, last) = laid_out_value(toks.get(at..)?)?;
        if n == 2 {
            signed |= 1 << values;
        }
        values += 1;
        at += n + 1;
        if last {
            break;
        }
    }
    Some(RowsLaidOut {
        values: values as u32,
        signed,
        plain_rows: 0,
    })
}

/// How many rows from the first of `toks` (rows laid out as `l` says) have the plain form by
/// their tokens alone: `(`, each value a plain string (`Token::plain`) or a run of digits (a
/// sign before it where the layout has one), each followed by `,` or, the last, `)`; rows
/// between `,`s. A text of a shape (`scan::Shape::apply`) has the shape's first text's
/// tokens with other plain `'…'` strings and digit runs as its literals, and every other
/// token's bytes: the count is the same for every text of the shape, and its rows are read
/// from known places without looking at their tokens' kinds again (`known_plain_row`).
fn plain_rows(sql: &[u8], toks: &[Token], l: RowsLaidOut) -> u32 {
    let digits = |t: &Token| {
        t.kind == Tok::Number && {
            let text = t.text(sql);
            !text.is_empty() && text.iter().all(u8::is_ascii_digit)
        }
    };
    let row_is_plain = |row: &[Token]| -> bool {
        let Some((open, mut rest)) = row.split_first() else {
            return false;
        };
        if !open.is_punct(b'(') {
            return false;
        }
        let last = (l.values as usize).saturating_sub(1);
        for c in 0..l.values as usize {
            let signed = l.signed >> c & 1 == 1;
            let (end, k) = match rest {
                [s, t, e, ..]
                    if signed && matches!(s.kind, Tok::Punct(b'-' | b'+')) && digits(t) =>
                {
                    (e, 3)
                }
                [t, e, ..] if !signed && ((t.kind == Tok::Str && t.plain) || digits(t)) => (e, 2),
                _ => return false,
            };
            if end.kind != Tok::Punct(if c == last { b')' } else { b',' }) {
                return false;
            }
            rest = rest.get(k..).unwrap_or_default();
        }
        true
    };
    let width = l.width();
    let (mut n, mut at) = (0u32, 0usize);
    while let Some(row) = toks.get(at..at + width) {
        if !row_is_plain(row) {
            break;
        }
        n = n.saturating_add(1);
        at += width;
        if !toks.get(at).is_some_and(|t| t.is_punct(b',')) {
            break;
        }
        at += 1;
    }
    n
}

impl Resume {
    fn matches(&self, all: &[Token]) -> bool {
        all.len() == self.total && all.get(self.taken).map(|t| t.start) == self.next_start
    }
}

/// `read_head`, keeping where the rows begin when `lexed` is given (and, for VALUES rows, how
/// they are laid out, from the first: `rows_laid_out`).
pub fn read_head_resumable(
    sql: &[u8],
    d: Dialect,
    lexed: Option<&[Token]>,
) -> Result<Option<Head>, &'static str> {
    let mut r = Reader::new(sql, d, lexed);
    let Some(insert) = r.head()? else {
        return Ok(None);
    };
    let resume = match (&r.toks, &r.peeked, lexed) {
        // nothing read ahead: the rows begin at the next kept token
        (Toks::Kept(rest), None, Some(all)) => {
            let taken = all.len().saturating_sub(rest.len());
            Some(Resume {
                taken,
                params: r.params,
                total: all.len(),
                next_start: all.get(taken).map(|t| t.start),
                laid_out: match insert.source {
                    Source::Values => rows_laid_out(all.get(taken..).unwrap_or_default()),
                    _ => None,
                },
            })
        }
        _ => None,
    };
    Ok(Some(Head { insert, resume }))
}

/// What reading an INSERT's head found that none of its literals changes, for another
/// statement of the same tokens with other literals (`dml::Frame` says when that is): the
/// head is read from words, names and punctuation only, so it is this one but for the
/// offsets, which are read again from the new tokens (`read_head_framed`). The
/// `shape_reading` fuzz target holds the two readings equal.
#[derive(Debug, Clone)]
pub struct HeadFrame {
    head: Result<Option<Head>, &'static str>,
    /// The token of the column list's closing parenthesis.
    close: Option<usize>,
}

/// `read_head_resumable` over kept tokens, and the reading's frame (None: an offset that
/// is no token's, which a head read over kept tokens does not have).
pub(crate) fn read_head_framing(
    sql: &[u8],
    d: Dialect,
    toks: &[Token],
) -> (Result<Option<Head>, &'static str>, Option<HeadFrame>) {
    let mut head = read_head_resumable(sql, d, Some(toks));
    // (the rows' plain form, counted once for the texts of the shape)
    if let Ok(Some(Head {
        resume: Some(r), ..
    })) = &mut head
    {
        if let Some(l) = r.laid_out.as_mut() {
            l.plain_rows = plain_rows(sql, toks.get(r.taken..).unwrap_or_default(), *l);
        }
    }
    let close = match &head {
        Ok(Some(h)) => match h.insert.columns_close {
            Some(c) => {
                let i = toks.partition_point(|t| t.start < c);
                if toks.get(i).map(|t| t.start) != Some(c) {
                    return (head, None);
                }
                Some(i)
            }
            None => None,
        },
        _ => None,
    };
    let frame = HeadFrame {
        head: head.clone(),
        close,
    };
    (head, Some(frame))
}

impl Head {
    /// How many rows from the first have the plain form by their tokens alone, where that was
    /// counted (`read_head_framing`; 0: not counted).
    pub fn plain_rows(&self) -> u32 {
        self.resume
            .and_then(|r| r.laid_out)
            .map_or(0, |l| l.plain_rows)
    }

    /// The head as read where the rows' plain form is not counted (`plain_rows` 0).
    pub fn forget_plain_rows(&mut self) {
        if let Some(l) = self.resume.as_mut().and_then(|r| r.laid_out.as_mut()) {
            l.plain_rows = 0;
        }
    }
}

/// The head of the statement whose tokens `toks` are those of the statement `frame` was made
/// from, with other literals in them: what `read_head_resumable` gives for it.
pub(crate) fn read_head_framed(
    toks: &[Token],
    frame: &HeadFrame,
) -> Result<Option<Head>, &'static str> {
    let mut head = frame.head.clone();
    // (the frame's tokens are these: the key it was found by holds their count)
    debug_assert!(frame.close.is_none_or(|i| i < toks.len()));
    if let Ok(Some(h)) = &mut head {
        let close = frame.close.and_then(|i| toks.get(i)).map(|t| t.start);
        if h.insert.columns_close != close {
            Arc::make_mut(&mut h.insert).columns_close = close;
        }
        if let Some(r) = &mut h.resume {
            r.next_start = toks.get(r.taken).map(|t| t.start);
        }
    }
    head
}

/// Where the reader's tokens come from: the scanner, or the tokens a split kept.
enum Toks<'a> {
    Lex(Scanner<'a>),
    Kept(std::slice::Iter<'a, Token>),
}

struct Reader<'a> {
    sql: &'a [u8],
    d: Dialect,
    toks: Toks<'a>,
    /// A token read ahead (Some(None): the end was read ahead).
    peeked: Option<Option<Token>>,
    /// Placeholders seen so far.
    params: u32,
}

type Step<T> = Result<T, &'static str>;

/// Why a text that does not lex is not read.
const UNFOLLOWED: &str = "a token the reader does not follow";

impl<'a> Reader<'a> {
    fn new(sql: &'a [u8], d: Dialect, lexed: Option<&'a [Token]>) -> Reader<'a> {
        Reader {
            sql,
            d,
            toks: match lexed {
                Some(t) => Toks::Kept(t.iter()),
                None => Toks::Lex(Scanner::new(sql, d)),
            },
            peeked: None,
            params: 0,
        }
    }

    /// The next token (or the one read ahead), counting placeholders.
    #[inline]
    fn tok(&mut self) -> Step<Option<Token>> {
        if let Some(p) = self.peeked.take() {
            return Ok(p);
        }
        let t = match &mut self.toks {
            Toks::Kept(k) => k.next().copied(),
            Toks::Lex(s) => match s.next() {
                Some(Ok(t)) => Some(t),
                Some(Err(_)) => return Err(UNFOLLOWED),
                None => None,
            },
        };
        if let Some(t) = &t {
            if t.is_punct(b'?') {
                self.params += 1;
            }
        }
        Ok(t)
    }

    fn peek(&mut self) -> Step<Option<Token>> {
        let t = self.tok()?;
        self.peeked = Some(t);
        Ok(t)
    }

    fn word_is(&self, t: &Option<Token>, w: &str) -> bool {
        t.is_some_and(|t| t.is_word(self.sql, w))
    }

    fn expect_punct(&mut self, c: u8, why: &'static str) -> Step<Token> {
        match self.tok()? {
            Some(t) if t.is_punct(c) => Ok(t),
            _ => Err(why),
        }
    }

    /// Everything up to the rows. None: not an INSERT / REPLACE.
    fn head(&mut self) -> Step<Option<Arc<Insert>>> {
        let first = self.tok()?;
        let replace = if self.word_is(&first, "INSERT") {
            false
        } else if self.word_is(&first, "REPLACE") {
            true
        } else {
            return Ok(None);
        };
        let mut ignore = false;
        let mut t = self.tok()?;
        while ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE"]
            .iter()
            .any(|w| self.word_is(&t, w))
        {
            ignore |= self.word_is(&t, "IGNORE");
            t = self.tok()?;
        }
        if self.word_is(&t, "INTO") {
            t = self.tok()?;
        }
        let table = self.table_name(t)?;
        let mut head = Insert {
            replace,
            ignore,
            table,
            columns: None,
            columns_close: None,
            source: Source::Values,
            on_duplicate: Vec::new(),
            on_duplicate_values: Vec::new(),
            partition_selection: false,
        };
        let mut t = self.tok()?;
        if self.word_is(&t, "PARTITION") {
            head.partition_selection = true;
            self.expect_punct(b'(', "a PARTITION clause")?;
            self.skip_to_close()?;
            t = self.tok()?;
        }
        if t.is_some_and(|t| t.is_punct(b'(')) {
            // a column list, or a parenthesised query
            let after = self.peek()?;
            if self.word_is(&after, "SELECT") || self.word_is(&after, "WITH") {
                head.source = Source::Query;
                return Ok(Some(Arc::new(head)));
            }
            let (cols, close) = self.column_list()?;
            head.columns = Some(cols.into());
            head.columns_close = Some(close);
            t = self.tok()?;
        }
        if self.word_is(&t, "VALUES") || self.word_is(&t, "VALUE") {
            head.source = Source::Values;
        } else if self.word_is(&t, "SET") {
            if head.columns.is_some() {
                return Err("a column list before SET");
            }
            head.source = Source::Set;
        } else if ["SELECT", "TABLE", "WITH"]
            .iter()
            .any(|w| self.word_is(&t, w))
            || t.is_some_and(|t| t.is_punct(b'('))
        {
            head.source = Source::Query;
        } else {
            return Err("an INSERT shape the reader does not follow");
        }
        Ok(Some(Arc::new(head)))
    }

    fn table_name(&mut self, first: Option<Token>) -> Step<TableName> {
        let ident =
            |t: &Option<Token>| t.filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent));
        let first = ident(&first).ok_or("a table name the reader does not follow")?;
        let dot = self.peek()?;
        let (schema, name) = if dot.is_some_and(|t| t.is_punct(b'.')) {
            self.tok()?;
            let second = self.tok()?;
            let name = ident(&second).ok_or("a table name the reader does not follow")?;
            (Some(first), name)
        } else {
            (None, first)
        };
        let raw_schema = schema.map(|s| ident_value(self.sql, &s));
        let raw_name = ident_small(self.sql, &name);
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(TableName {
            schema: raw_schema.as_deref().map(lossy),
            name: compact_str::CompactString::from_utf8_lossy(&raw_name),
            raw_schema,
            raw_name,
        })
    }

    /// `(a, b, …)` after its `(`: the names and the offset of `)`.
    fn column_list(&mut self) -> Step<(Vec<Name>, usize)> {
        // (an HBase table's four at once: no growth on the way)
        let mut cols = Vec::with_capacity(4);
        loop {
            let t = self.tok()?;
            match t {
                Some(t) if t.is_punct(b')') && cols.is_empty() => return Ok((cols, t.start)),
                Some(t) if matches!(t.kind, Tok::Word | Tok::QuotedIdent) => {
                    // `tbl.col` and `db.tbl.col` name the column last
                    let mut name = ident_small(self.sql, &t);
                    let mut sep = self.tok()?;
                    while sep.is_some_and(|s| s.is_punct(b'.')) {
                        let part = self.tok()?;
                        let part = part
                            .filter(|p| matches!(p.kind, Tok::Word | Tok::QuotedIdent))
                            .ok_or("a column list the reader does not follow")?;
                        name = ident_small(self.sql, &part);
                        sep = self.tok()?;
                    }
                    if cols.len() >= MAX_ROW_VALUES {
                        return Err("too many columns");
                    }
                    cols.push(name);
                    match sep {
                        Some(s) if s.is_punct(b',') => {}
                        Some(s) if s.is_punct(b')') => return Ok((cols, s.start)),
                        _ => return Err("a column list the reader does not follow"),
                    }
                }
                _ => return Err("a column list the reader does not follow"),
            }
        }
    }

    /// Skips to the `)` that closes an already-read `(` (flat: depth counted, no recursion).
    fn skip_to_close(&mut self) -> Step<usize> {
        let mut depth = 1usize;
        loop {
            match self.tok()? {
                Some(t) if t.is_punct(b'(') => depth += 1,
                Some(t) if t.is_punct(b')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(t.start);
                    }
                }
                Some(_) => {}
                None => return Err("unbalanced parentheses"),
            }
        }
    }

    /// One `( v, … )` row (or `ROW(…)`): the values into `out`, returns the offset of `)`.
    fn row(&mut self, out: &mut RowValues<'a>, spans: &mut Vec<(usize, usize)>) -> Step<usize> {
        if let Some(close) = self.row_in_place(out, spans) {
            return Ok(close);
        }
        let mut t = self.tok()?;
        if self.word_is(&t, "ROW") {
            t = self.tok()?;
        }
        if !t.is_some_and(|t| t.is_punct(b'(')) {
            return Err("a VALUES row the reader does not follow");
        }
        // `()`: a row of defaults (over kept tokens looked at in place, not read ahead: the
        // row's first value is then read by `short_value` too)
        let close = match (&self.peeked, &self.toks) {
            (None, Toks::Kept(it)) => it.as_slice().first().copied(),
            _ => self.peek()?,
        };
        if let Some(t) = close.filter(|t| t.is_punct(b')')) {
            self.tok()?;
            return Ok(t.start);
        }
        loop {
            if out.len() >= MAX_ROW_VALUES {
                return Err("too many values in a row");
            }
            let (v, end, span) = self.value()?;
            out.push(v);
            spans.push(span);
            match end {
                End::Comma => {}
                End::Close(at) => return Ok(at),
            }
        }
    }

    /// `row` for the common row over kept tokens, looked at in place: `(`, then values of one
    /// token or of a sign and a number, each ended by `,` or `)`. None: nothing is taken (`out`
    /// and `spans` as they were, the tokens not read), and `row` reads the row token by token.
    /// It reads what `row` and `short_value` read (the `sql_insert` fuzz target compares the
    /// reading over kept tokens with the lexed one, which never takes this path).
    #[inline]
    fn row_in_place(
        &mut self,
        out: &mut RowValues<'a>,
        spans: &mut Vec<(usize, usize)>,
    ) -> Option<usize> {
        if self.peeked.is_some() {
            return None;
        }
        let Toks::Kept(it) = &mut self.toks else {
            return None;
        };
        let (open, mut rest) = it.as_slice().split_first()?;
        if !open.is_punct(b'(') {
            return None;
        }
        let (had, had_spans, mut params) = (out.len(), spans.len(), self.params);
        let close = loop {
            if out.len() >= MAX_ROW_VALUES {
                break None;
            }
            let (v, span, end, taken) = match rest {
                [t, e, ..] if one_token_value(t.kind) => {
                    if t.is_punct(b'?') {
                        params += 1;
                    }
                    // (the value's own `?` is the last one counted, as in `short_value`)
                    let v = literal_one(self.sql, self.d, t, params.checked_sub(1));
                    (v, (t.start, t.end), e, 2)
                }
                [s, n, e, ..]
                    if n.kind == Tok::Number && matches!(s.kind, Tok::Punct(b'-' | b'+')) =>
                {
                    (
                        int_value(self.sql, n, s.is_punct(b'-')),
                        (s.start, n.end),
                        e,
                        3,
                    )
                }
                _ => break None,
            };
            let at = match end.kind {
                Tok::Punct(b',') => None,
                Tok::Punct(b')') => Some(end.start),
                _ => break None,
            };
            out.push(v);
            spans.push(span);
            rest = rest.get(taken..).unwrap_or_default();
            if at.is_some() {
                break at;
            }
        };
        match close {
            Some(at) => {
                *it = rest.iter();
                self.params = params;
                Some(at)
            }
            None => {
                out.truncate(had);
                spans.truncate(had_spans);
                None
            }
        }
    }

    /// `col =` / `tbl.col =` / `db.tbl.col =` starting at `first`: the column (named last) is
    /// pushed onto `cols`, and the `=` is read.
    fn assignment_target(
        &mut self,
        first: Option<Token>,
        cols: &mut Vec<Name>,
        why: &'static str,
    ) -> Step<()> {
        let ident = |t: Option<Token>| t.filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent));
        let mut name = ident_small(self.sql, &ident(first).ok_or(why)?);
        let mut eq = self.tok()?;
        while eq.is_some_and(|s| s.is_punct(b'.')) {
            let part = ident(self.tok()?).ok_or(why)?;
            name = ident_small(self.sql, &part);
            eq = self.tok()?;
        }
        // `=`, or `:=` (one operator when its two characters touch)
        match eq {
            Some(e) if e.is_punct(b'=') => {}
            Some(colon) if colon.is_punct(b':') => match self.tok()? {
                Some(e) if e.is_punct(b'=') && e.start == colon.end => {}
                _ => return Err(why),
            },
            _ => return Err(why),
        }
        if cols.len() >= MAX_ROW_VALUES {
            return Err("too many columns");
        }
        cols.push(name);
        Ok(())
    }

    /// `SET a = v, b = v` up to the end of the list: columns and values; returns the offset
    /// just after the last value (where an assignment is added).
    fn set_list(&mut self, cols: &mut Vec<Name>, out: &mut RowValues<'a>) -> Step<usize> {
        loop {
            let first = self.tok()?;
            self.assignment_target(first, cols, "a SET list the reader does not follow")?;
            let (v, more, end) = self.set_value()?;
            out.push(v);
            if !more {
                return Ok(end);
            }
        }
    }

    /// One value of a SET list, up to a `,` at depth 0 (more: true) or the list's end (the
    /// word that ends it, if any, is left to read); with the offset after its last token.
    fn set_value(&mut self) -> Step<(Value<'a>, bool, usize)> {
        let mut toks: smallvec::SmallVec<[Token; 4]> = smallvec::SmallVec::new();
        let mut too_long = false;
        let mut depth = 0usize;
        let mut end = 0usize;
        loop {
            let t = self.tok()?;
            let last = match t {
                None => None,
                Some(t) if depth == 0 && t.is_punct(b',') => Some(true),
                Some(t) if depth == 0 && (t.is_word(self.sql, "ON") || t.is_punct(b';')) => {
                    self.peeked = Some(Some(t));
                    None
                }
                Some(t) => {
                    if t.is_punct(b'(') {
                        depth += 1;
                    } else if t.is_punct(b')') {
                        depth = depth.checked_sub(1).ok_or("unbalanced parentheses")?;
                    }
                    end = t.end;
                    if toks.len() < MAX_SIGNS + 2 {
                        toks.push(t);
                    } else {
                        too_long = true;
                    }
                    continue;
                }
            };
            // `SET a = ,` or `SET a =` at the end: no value, and no place after it to add to
            if toks.is_empty() {
                return Err("a SET list with an empty value");
            }
            let v = if too_long {
                Value::Unknown
            } else {
                self.literal(&toks)
            };
            return Ok((v, last.is_some(), end));
        }
    }

    /// One value of a row: up to the `,` or `)` that ends it at depth 0.
    fn value(&mut self) -> Step<(Value<'a>, End, (usize, usize))> {
        if let Some(v) = self.short_value() {
            return Ok(v);
        }
        // a literal value is at most a few tokens; longer ones are expressions
        let mut toks: smallvec::SmallVec<[Token; 4]> = smallvec::SmallVec::new();
        let mut too_long = false;
        let mut depth = 0usize;
        let mut span: Option<(usize, usize)> = None;
        loop {
            let t = self.tok()?.ok_or("an unterminated VALUES row")?;
            if depth == 0 && (t.is_punct(b',') || t.is_punct(b')')) {
                let span = span.unwrap_or((t.start, t.start));
                let v = if too_long {
                    Value::Unknown
                } else {
                    self.literal(&toks)
                };
                let end = if t.is_punct(b',') {
                    End::Comma
                } else {
                    End::Close(t.start)
                };
                return Ok((v, end, span));
            }
            span = Some((span.map_or(t.start, |(a, _)| a), t.end));
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth -= 1; // depth > 0 here
            }
            if toks.len() < MAX_SIGNS + 2 {
                toks.push(t);
            } else {
                too_long = true;
            }
        }
    }

    /// `value` for the common value over kept tokens, looked at in place: one token, or a
    /// sign and a number, then the `,` or `)` that ends it. None: read it token by token.
    /// It reads what `value` reads (the `sql_insert` fuzz target compares the two readings:
    /// `value` alone reads the lexed text).
    #[inline]
    fn short_value(&mut self) -> Option<(Value<'a>, End, (usize, usize))> {
        if self.peeked.is_some() {
            return None;
        }
        let Toks::Kept(it) = &mut self.toks else {
            return None;
        };
        let ends = |e: &Token| match e.kind {
            Tok::Punct(b',') => Some(End::Comma),
            Tok::Punct(b')') => Some(End::Close(e.start)),
            _ => None,
        };
        let (v, end, span, taken) = match it.as_slice() {
            [t, e, ..] if one_token_value(t.kind) => {
                let end = ends(e)?;
                if t.is_punct(b'?') {
                    self.params += 1;
                }
                // (the value's own `?` is the last one counted, as in `literal`)
                let v = literal_one(self.sql, self.d, t, self.params.checked_sub(1));
                (v, end, (t.start, t.end), 2)
            }
            [s, n, e, ..] if n.kind == Tok::Number && matches!(s.kind, Tok::Punct(b'-' | b'+')) => {
                let end = ends(e)?;
                let v = int_value(self.sql, n, s.is_punct(b'-'));
                (v, end, (s.start, n.end), 3)
            }
            _ => return None,
        };
        // (the iterator's `nth` takes `taken` tokens)
        it.nth(taken - 1);
        Some((v, end, span))
    }

    /// What the tokens of one value are, if they are a literal.
    fn literal(&self, toks: &[Token]) -> Value<'a> {
        // the value's own `?` is the last one counted: the token that ended the value is a
        // `,`, `)`, ON or `;`
        literal(self.sql, self.d, toks, self.params.checked_sub(1))
    }

    /// After the rows: `[AS alias [(cols)]] [ON DUPLICATE KEY UPDATE a = …, …]`. Returns the
    /// assigned columns.
    fn tail(&mut self) -> Step<Assigned> {
        let mut out = (Vec::new(), Vec::new());
        let mut t = self.tok()?;
        if self.word_is(&t, "AS") {
            self.tok()?; // the alias
            t = self.tok()?;
            if t.is_some_and(|t| t.is_punct(b'(')) {
                self.skip_to_close()?;
                t = self.tok()?;
            }
        }
        if !self.word_is(&t, "ON") {
            return match t {
                None => Ok(out),
                Some(t) if t.is_punct(b';') => Ok(out),
                // RETURNING (MariaDB) and anything else: the assignments are not read
                Some(_) => Ok(out),
            };
        }
        for w in ["DUPLICATE", "KEY", "UPDATE"] {
            let t = self.tok()?;
            if !self.word_is(&t, w) {
                return Err("an ON clause the reader does not follow");
            }
        }
        self.on_duplicate_list(&mut out)?;
        Ok(out)
    }

    /// After an INSERT … SELECT's query: the columns its `ON DUPLICATE KEY UPDATE` assigns.
    /// The four words cannot begin anything else in the query (a join's ON is followed by an
    /// expression), so they are looked for at any depth.
    fn query_tail(&mut self) -> Step<Assigned> {
        let mut out = (Vec::new(), Vec::new());
        let mut last: [Option<Token>; 3] = [None; 3];
        while let Some(t) = self.tok()? {
            if t.is_word(self.sql, "UPDATE")
                && self.word_is(&last[2], "KEY")
                && self.word_is(&last[1], "DUPLICATE")
                && self.word_is(&last[0], "ON")
            {
                self.on_duplicate_list(&mut out)?;
                break;
            }
            last = [last[1], last[2], Some(t)];
        }
        Ok(out)
    }

    /// `col = expr, …` of an ON DUPLICATE KEY UPDATE, to the end of the statement: the
    /// columns, and each one's value when it is a literal or a placeholder.
    fn on_duplicate_list(&mut self, out: &mut Assigned) -> Step<()> {
        // `col = expr` at depth 0, separated by commas at depth 0
        let mut depth = 0usize;
        let mut expect_name = true;
        // the value's tokens, while few enough to be one literal
        let mut value: smallvec::SmallVec<[Token; 4]> = smallvec::SmallVec::new();
        let mut long = false;
        loop {
            let t = self.tok()?;
            if expect_name {
                let Some(t) = t else { break };
                let why = "an ON DUPLICATE KEY UPDATE list the reader does not follow";
                self.assignment_target(Some(t), &mut out.0, why)?;
                expect_name = false;
                value.clear();
                long = false;
                continue;
            }
            let end = match t {
                None => true,
                Some(t) if depth == 0 && (t.is_punct(b',') || t.is_punct(b';')) => true,
                Some(_) => false,
            };
            if end {
                out.1.push(if long {
                    Value::Unknown
                } else {
                    self.literal(&value).into_owned()
                });
                if t.is_some_and(|t| t.is_punct(b',')) {
                    expect_name = true;
                    continue;
                }
                break;
            }
            let Some(t) = t else { break };
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth = depth.checked_sub(1).ok_or("unbalanced parentheses")?;
            }
            if value.len() < MAX_LITERAL_TOKENS {
                value.push(t);
            } else {
                long = true;
            }
        }
        Ok(())
    }
}

enum End {
    Comma,
    Close(usize),
}

/// What the tokens of one value are, if they are a literal (`param`: the ordinal of a `?`
/// among them).
pub(crate) fn literal<'a>(
    sql: &'a [u8],
    d: Dialect,
    toks: &[Token],
    param: Option<u32>,
) -> Value<'a> {
    if let [t] = toks {
        return literal_one(sql, d, t, param);
    }
    // unary signs in front of a number
    let signs = toks
        .iter()
        .take_while(|t| t.is_punct(b'-') || t.is_punct(b'+'))
        .count();
    let negative = toks
        .get(..signs)
        .unwrap_or_default()
        .iter()
        .filter(|t| t.is_punct(b'-'))
        .count()
        % 2
        == 1;
    let rest = toks.get(signs..).unwrap_or_default();
    match rest {
        [t] if t.kind == Tok::Number => int_value(sql, t, negative),
        _ if signs > 0 => Value::Unknown,
        [intro, v] if intro.kind == Tok::Word && intro.text(sql).starts_with(b"_") => {
            let bytes = match v.kind {
                Tok::Str => string_value_cow(sql, v, d),
                Tok::Hex => match hex_value(sql, v) {
                    Some(b) => Cow::Owned(b),
                    None => return Value::Unknown,
                },
                _ => return Value::Unknown,
            };
            let charset = introduced(&intro.text(sql).to_ascii_lowercase(), v.kind == Tok::Hex);
            Value::Bytes { bytes, charset }
        }
        _ => Value::Unknown,
    }
}

/// A token that is a value alone (before a `,` or `)`): a literal, a word (NULL, DEFAULT or
/// something the proxy cannot know) or a placeholder.
#[inline]
fn one_token_value(k: Tok) -> bool {
    matches!(
        k,
        Tok::Str | Tok::Number | Tok::Hex | Tok::Word | Tok::Punct(b'?')
    )
}

/// `literal` of one token (`param`: its ordinal if it is a `?`).
#[inline]
fn literal_one<'a>(sql: &'a [u8], d: Dialect, t: &Token, param: Option<u32>) -> Value<'a> {
    match t.kind {
        Tok::Punct(b'?') => param.map_or(Value::Unknown, Value::Param),
        Tok::Str => Value::Bytes {
            bytes: string_value_cow(sql, t, d),
            charset: LitCharset::Connection,
        },
        Tok::Number => int_value(sql, t, false),
        Tok::Hex => match hex_value(sql, t) {
            Some(bytes) => Value::Bytes {
                bytes: Cow::Owned(bytes),
                charset: LitCharset::Binary,
            },
            None => Value::Unknown,
        },
        Tok::Word if t.is_word(sql, "NULL") => Value::Null,
        Tok::Word if t.is_word(sql, "DEFAULT") => Value::Default,
        _ => Value::Unknown,
    }
}

/// A number token as a bigint literal, negated when `negative`: digits only (a fraction or an
/// exponent is not one), within i128.
#[inline]
fn int_value<'a>(sql: &[u8], t: &Token, negative: bool) -> Value<'a> {
    let text = t.text(sql);
    match integer(text) {
        Some(n) if !text.is_empty() => Value::Int(if negative { -n } else { n }),
        _ => Value::Unknown,
    }
}

/// The value of a run of decimal digits, if it is one within i128. Up to 18 digits cannot
/// overflow a u64: summed without checks (a timestamp is 13), eight at a time, longer runs
/// with checks. Nine to sixteen digits are read in line (a batch's timestamps: the call, its
/// saved registers and its result through memory were about 11 of the 80 instructions a
/// batch row's T cost); other lengths by `integer_rest`.
#[inline(always)]
fn integer(text: &[u8]) -> Option<i128> {
    // nine to sixteen digits (a millisecond timestamp has 13): the first eight bytes and the
    // last eight, overlapping; the first word shifted so that only its digits before the
    // last eight stay, led by zeros
    if let (Some(first), Some(last)) = (text.first_chunk::<8>(), text.last_chunk::<8>()) {
        if let Some(r @ 1..=8) = text.len().checked_sub(8) {
            let (first, last) = (u64::from_le_bytes(*first), u64::from_le_bytes(*last));
            let high = match r {
                8 => first,
                _ => (first << (8 * (8 - r))) | (0x3030_3030_3030_3030 >> (8 * r)),
            };
            return Some(i128::from(
                eight_digits(high)? * 100_000_000 + eight_digits(last)?,
            ));
        }
    }
    integer_rest(text)
}

/// `integer` for runs of up to eight digits or more than sixteen.
#[inline(never)]
fn integer_rest(text: &[u8]) -> Option<i128> {
    if text.len() <= 18 {
        let mut n: u64 = 0;
        let mut eights = text.chunks_exact(8);
        for chunk in eights.by_ref() {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(chunk);
            n = n * 100_000_000 + eight_digits(u64::from_le_bytes(bytes))?;
        }
        // the rest as the low digits of a word led by zeros
        let rest = eights.remainder();
        let slot = 8usize.checked_sub(rest.len()).filter(|_| !rest.is_empty());
        if let (Some(slot), Some(&scale)) = (slot, POW10.get(rest.len())) {
            let mut bytes = [b'0'; 8];
            bytes.get_mut(slot..)?.copy_from_slice(rest);
            n = n * scale + eight_digits(u64::from_le_bytes(bytes))?;
        }
        return Some(i128::from(n));
    }
    let mut n: i128 = 0;
    for &c in text {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
    }
    Some(n)
}

/// Powers of ten below 10^8 (a run's last digits, fewer than eight).
const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The value of eight ASCII digits read as a little-endian word (the first digit in the low
/// byte), None when a byte is no digit (`scan::non_digits`): pairs, then fours, then the
/// eight combined, each step in every lane at once.
#[inline]
fn eight_digits(w: u64) -> Option<u64> {
    if super::scan::non_digits(w) != 0 {
        return None;
    }
    let x = w ^ 0x3030_3030_3030_3030;
    let v = (x.wrapping_mul(10) + (x >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    Some((v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement's row buffers are kept, emptied, for the thread's next one (the next
    /// statement allocates none), and not beyond `ROW_ROOM` values: a wide row's are dropped.
    #[test]
    fn row_buffers_are_kept_for_the_next_statement_within_their_room() {
        let each = |_: &Insert, _: Row<'_>| ControlFlow::Continue(());
        let sql = b"INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c')";
        assert!(matches!(
            read(sql, Dialect::default(), each),
            Read::Insert { .. }
        ));
        let (values, spans) = ROW_BUFS.take();
        assert!(values.is_empty() && spans.is_empty());
        assert!(values.capacity() >= 4 && spans.capacity() >= 4);
        ROW_BUFS.set((values, spans));
        let wide = format!(
            "INSERT INTO g$f VALUES ({})",
            vec!["'x'"; ROW_ROOM + 1].join(", ")
        );
        assert!(matches!(
            read(wide.as_bytes(), Dialect::default(), each),
            Read::Insert { .. }
        ));
        let (values, spans) = ROW_BUFS.take();
        assert!(values.capacity() <= ROW_ROOM && spans.capacity() <= ROW_ROOM);
    }

    /// A run of digits of every length up to 40, of every digit in every place, reads as the
    /// standard library parses it; anything but digits is no integer.
    #[test]
    fn integers_read_eight_digits_at_a_time_as_parsed() {
        for len in 1..=40usize {
            for d in 0..10u8 {
                for at in 0..len {
                    let t: Vec<u8> = (0..len)
                        .map(|i| {
                            if i == at {
                                b'0' + d
                            } else {
                                b'0' + (i * 7 % 10) as u8
                            }
                        })
                        .collect();
                    let parsed = std::str::from_utf8(&t).unwrap().parse::<i128>().ok();
                    assert_eq!(integer(&t), parsed, "{t:?}");
                    let mut bad = t.clone();
                    bad[at] = [b'/', b':', b'a', b'.', 0x80][usize::from(d) % 5];
                    assert_eq!(integer(&bad), None, "{bad:?}");
                }
            }
        }
        assert_eq!(
            integer(b"999999999999999999"),
            Some(999_999_999_999_999_999)
        );
        assert_eq!(integer(b""), Some(0));
    }

    #[test]
    fn rows_read_after_a_kept_head_are_the_rows_read_whole() {
        let texts = [
            "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', ?, ?, 'e')",
            "INSERT INTO g$f VALUES ('a', 'b', -1, 'c') ON DUPLICATE KEY UPDATE V = 'x'",
            "REPLACE LOW_PRIORITY INTO db.`g$f` PARTITION (p1) (K, V) VALUE (?, 'v')",
            "INSERT INTO g$f SET K = 'a', Q = ?, V = 'v'",
            "INSERT INTO g$f (SELECT * FROM t)",
            "INSERT INTO g$f (K, Q) SELECT a, b FROM t ON DUPLICATE KEY UPDATE V = 1",
            "INSERT g$f () VALUES ()",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1",
        ];
        type Rows = Vec<(Vec<Value<'static>>, Vec<(usize, usize)>, usize)>;
        fn rows_of(r: &mut Rows) -> impl FnMut(&Insert, Row<'_>) -> ControlFlow<()> + '_ {
            move |_, row| {
                r.push((
                    row.values.iter().cloned().map(Value::into_owned).collect(),
                    row.spans.to_vec(),
                    row.close,
                ));
                ControlFlow::Continue(())
            }
        }
        for text in texts {
            let sql = text.as_bytes();
            let d = Dialect::default();
            let tokens: Vec<Token> = Scanner::new(sql, d).collect::<Result<_, _>>().unwrap();
            let (mut whole, mut after) = (Rows::new(), Rows::new());
            let want = read(sql, d, rows_of(&mut whole));
            let head = read_head_resumable(sql, d, Some(&tokens)).unwrap().unwrap();
            // the rows are gone on from (a parenthesised query is looked into: read again)
            assert!(
                head.resume.is_some() || head.insert.source == Source::Query,
                "{text}"
            );
            if let Some(whole_head) = head_of(&want) {
                assert_eq!(head.insert.table, whole_head.table, "{text}");
                assert_eq!(head.insert.source, whole_head.source, "{text}");
            }
            let got = read_lexed_after(
                sql,
                d,
                Some(&tokens),
                Some(head.clone()),
                rows_of(&mut after),
            );
            assert_eq!(got, want, "{text}");
            assert_eq!(after, whole, "{text}");
            // a head read over other tokens is read again, not gone on from
            let other = b"INSERT INTO g$f (K) VALUES ('zzz')";
            let other_tokens: Vec<Token> =
                Scanner::new(other, d).collect::<Result<_, _>>().unwrap();
            let mut again = Rows::new();
            let got = read_lexed_after(
                other,
                d,
                Some(&other_tokens),
                Some(head),
                rows_of(&mut again),
            );
            let mut direct = Rows::new();
            assert_eq!(got, read(other, d, rows_of(&mut direct)), "{text}");
            assert_eq!(again, direct, "{text}");
        }
    }

    /// A laid-out row of plain strings and integers is handed with the columns picked in
    /// their plain form, holding what the reading without picking hands as their values; a
    /// row with any other value, or a picked column its rows do not reach, is handed as
    /// without picking.
    /// A row a shape's frame counts plain is read at its places (`known_places`,
    /// `known_plain_row`) as `plain_row` reads it, for every pick of columns, signed columns
    /// anywhere in the row; and the count stops at the first row of another form. (A wrong
    /// place is caught here: in a reading it only sends the row on to `plain_row`.)
    #[test]
    fn rows_known_plain_are_read_at_their_places_as_plain_row_reads_them() {
        let d = Dialect::default();
        for (text, count) in [
            ("INSERT INTO t VALUES (-1, 'a', +2, 3, 'b'), (-4, \"c\", -5, 66, ''), (-7, 'd', +8, 9, 'e')", 3),
            ("INSERT INTO t VALUES ('k', 'q', -1, 'v'), ('k2', 'q2', -22, 'v2'), ('k', 'q', -1, NULL)", 2),
            ("INSERT INTO t VALUES (1, 2, 3, 4), (5, 6, 7, 8)", 2),
            ("INSERT INTO t VALUES ('a', -1), ('b', -2.5), ('c', -3)", 1),
        ] {
            let toks: Vec<Token> = crate::sql::scan::Scanner::new(text.as_bytes(), d)
                .collect::<Result<_, _>>()
                .expect("lexed");
            let head = read_head_framing(text.as_bytes(), d, &toks)
                .0
                .expect("read")
                .expect("an INSERT");
            let r = head.resume.expect("resumable");
            let l = r.laid_out.expect("laid out");
            assert_eq!(l.plain_rows, count, "{text}");
            let rows = toks.get(r.taken..).unwrap_or_default();
            let n = l.values as usize;
            // every pick of up to three distinct columns (and columns not given)
            let columns: Vec<usize> = (0..n).chain([usize::MAX]).collect();
            for &a in &columns {
                for &b in &columns {
                    for &c in &columns {
                        let pick = [a, b, c, usize::MAX];
                        let given: Vec<usize> =
                            pick.iter().copied().filter(|&x| x != usize::MAX).collect();
                        let mut seen = given.clone();
                        seen.sort_unstable();
                        seen.dedup();
                        if seen.len() != given.len() {
                            continue;
                        }
                        let mut places = [4u8; LAID_OUT_VALUES];
                        for (j, &x) in pick.iter().enumerate() {
                            if let Some(p) = places.get_mut(x) {
                                *p = j as u8;
                            }
                        }
                        let known = known_places(l, pick);
                        for i in 0..count as usize {
                            let at = i * (l.width() + 1);
                            let row = &rows[at..at + l.width()];
                            let (mut x, mut y) = ([Plain::Absent; 4], [Plain::Absent; 4]);
                            let by_kinds = plain_row(text.as_bytes(), row, l, &places, &mut x);
                            let by_places = known_plain_row(text.as_bytes(), row, &known, &mut y);
                            assert!(by_kinds.is_some(), "{text} row {i}");
                            assert_eq!(by_places, by_kinds, "{text} row {i} {pick:?}");
                            assert_eq!(x, y, "{text} row {i} {pick:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn plain_rows_hold_what_the_values_say() {
        let all = [Some(0), Some(1), Some(2), Some(3)];
        let cases: [(&str, [Option<usize>; 4], usize); 17] = [
            // rows of another form than the row before them (each is read as it comes): a
            // string where a number was, a `+` where a `-` was, then the first form again
            (
                "INSERT INTO g$f VALUES ('a', 'b', 1, 'c'), ('d', 'e', '7', 'f'), ('g', 'h', 3, 'i')",
                all,
                3,
            ),
            (
                "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', 'e', +2, 'f'), ('g', 'h', -3, 'i'), ('j', 'k', -4, 'l')",
                all,
                4,
            ),
            // of the form but for a number not handed that is no integer, a string that is
            // not plain: read whole, and the rows after them of the form again
            (
                "INSERT INTO g$f VALUES ('a', 'b', 1, 'c', 5), ('d', 'e', 2, 'f', 999999999999999999999999999999999999999999), ('g', 'h', 3, 'i', 6)",
                all,
                2,
            ),
            (
                "INSERT INTO g$f VALUES ('a', 'b', 1, 'c'), ('d', 'e\\'x', 2, 'f'), ('g', 'h', 3, 'i'), ('j', 'k''', 4, 'l')",
                all,
                2,
            ),
            (
                "INSERT INTO g$f VALUES ('a', 'b', 1, 'c', 5), ('d', 'e', 2, 'f', 6)",
                [Some(4), Some(2), None, Some(1)],
                2,
            ),
            (
                "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', \"e\", - 2, 'f')",
                all,
                2,
            ),
            // an unsigned number where the first row had a sign: no longer laid out there
            (
                "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', 'e', 2, 'f')",
                all,
                1,
            ),
            (
                "INSERT INTO g$f VALUES ('a', 'b', 17, 'c'), ('d', 'e', 0, '')",
                [Some(3), None, Some(0), Some(2)],
                2,
            ),
            // a fraction, a NULL, a hex string, a word, an escape: the row is read whole
            ("INSERT INTO g$f VALUES ('a', 'b', 1.5, 'c')", all, 0),
            (
                "INSERT INTO g$f VALUES ('a', NULL, 1, 'c'), ('a', 'b', 1, 'c')",
                all,
                1,
            ),
            ("INSERT INTO g$f VALUES ('a', x'41', 1, 'c')", all, 0),
            ("INSERT INTO g$f VALUES ('a', 'b', 1, now)", all, 0),
            ("INSERT INTO g$f VALUES ('a\\'', 'b', 1, 'c')", all, 0),
            (
                "INSERT INTO g$f VALUES ('a''', 'b', 1, 'c'), ('a', 'b', 1, 'c')",
                all,
                1,
            ),
            // a column picked past the rows' values, one column picked twice
            ("INSERT INTO g$f VALUES ('a', 'b', 1)", all, 0),
            (
                "INSERT INTO g$f VALUES ('a', 'b', 1, 'c')",
                [Some(1), None, Some(1), Some(0)],
                0,
            ),
            (
                "INSERT INTO g$f VALUES ('a', 'b', 1, 'c', 99999999999999999999999)",
                [Some(4), None, None, Some(0)],
                1,
            ),
        ];
        for (text, pick, want) in cases {
            let plain = picking_agrees(text.as_bytes(), Dialect::default(), pick);
            assert_eq!(plain, want, "{text}");
        }
    }

    /// Rows whose first is of one form (each value one token but `?`, or a sign and a
    /// number) are laid out from it, and each row of that form is read from its places; a
    /// first row of another form is not laid out. Either way the rows handed out, where the reading stops included, are those the
    /// reader reads token by token.
    #[test]
    fn rows_of_one_form_are_read_from_their_places() {
        let wide = format!(
            "INSERT INTO g$f VALUES ({})",
            vec!["1"; LAID_OUT_VALUES + 1].join(", ")
        );
        let widest = format!(
            "INSERT INTO g$f VALUES ({}), ({0})",
            vec!["-1"; LAID_OUT_VALUES].join(", ")
        );
        // (values a row, the signed columns)
        type Layout = Option<(u32, u64)>;
        let cases: [(&str, Layout); 14] = [
            (
                "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', 'e', - 2, 'f')",
                Some((4, 0b100)),
            ),
            (
                "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'b', -1, 'c'), ('d', 'e', 2, 'f')",
                Some((4, 0b100)),
            ),
            (
                "INSERT INTO g$f VALUES ('a', NULL, DEFAULT, x'41', +7), ('b', 1.5, now, 'c', -0) \
                 ON DUPLICATE KEY UPDATE V = 'x'",
                Some((5, 0b10000)),
            ),
            ("INSERT INTO g$f VALUES ('a'), ('b', 'c')", Some((1, 0))),
            ("INSERT INTO g$f VALUES ('a', 'b'), ('c')", Some((2, 0))),
            ("INSERT INTO g$f VALUES ('a', ?)", None),
            ("INSERT INTO g$f VALUES ('a', NOW())", None),
            ("INSERT INTO g$f VALUES ('a'), ROW('b')", Some((1, 0))),
            ("INSERT INTO g$f VALUES ('a'), ('b'), ", Some((1, 0))),
            ("INSERT INTO g$f VALUES (-'a')", None),
            (
                "REPLACE g$f VALUE ('a', 'b') AS new ON DUPLICATE KEY UPDATE V = new.V",
                Some((2, 0)),
            ),
            ("INSERT INTO g$f VALUES ('a' 'b')", None),
            (&wide, None),
            (&widest, Some((64, u64::MAX))),
        ];
        type Rows = Vec<(usize, Vec<Value<'static>>, Vec<(usize, usize)>, usize)>;
        fn rows_of(
            r: &mut Rows,
            stop: usize,
        ) -> impl FnMut(&Insert, Row<'_>) -> ControlFlow<()> + '_ {
            move |_, row| {
                r.push((
                    row.index,
                    row.values.iter().cloned().map(Value::into_owned).collect(),
                    row.spans.to_vec(),
                    row.close,
                ));
                if r.len() == stop {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }
        }
        let d = Dialect::default();
        for (text, want) in cases {
            let sql = text.as_bytes();
            let tokens: Vec<Token> = Scanner::new(sql, d).collect::<Result<_, _>>().unwrap();
            let head = read_head_resumable(sql, d, Some(&tokens)).unwrap().unwrap();
            let laid_out = head.resume.and_then(|r| r.laid_out);
            assert_eq!(laid_out.map(|l| (l.values, l.signed)), want, "{text}");
            for stop in [0, 1, 2] {
                let (mut whole, mut after) = (Rows::new(), Rows::new());
                let want = read(sql, d, rows_of(&mut whole, stop));
                let got = read_lexed_after(
                    sql,
                    d,
                    Some(&tokens),
                    Some(head.clone()),
                    rows_of(&mut after, stop),
                );
                assert_eq!(got, want, "{text} {stop}");
                assert_eq!(after, whole, "{text} {stop}");
            }
        }
        // a head laid out over other tokens (as many, the rows starting at the same place)
        // reads them as they are from the first token unlike its layout (found by a review)
        let pairs = [
            (
                "INSERT INTO g$f VALUES (-1, 'a')",
                "INSERT INTO g$f VALUES (1, 2 3)",
            ),
            (
                "INSERT INTO g$f VALUES (1, 'a') ON DUPLICATE KEY UPDATE V = ?",
                "INSERT INTO g$f VALUES (?, 'a') ON DUPLICATE KEY UPDATE V = ?",
            ),
            (
                "INSERT INTO g$f VALUES ('a', 'b'), ('c', 'd')",
                "INSERT INTO g$f VALUES ('a', 'b'), ('c') 'd')",
            ),
            (
                "INSERT INTO g$f VALUES ('a', 'b'), ('c', 'd')",
                "INSERT INTO g$f VALUES ('a', 'b'); ('c', 'd')",
            ),
            (
                "INSERT INTO g$f VALUES ('a'), ('b') AS n",
                "INSERT INTO g$f VALUES ('a'), ('b'), n",
            ),
        ];
        for (first, other) in pairs {
            let (a, b) = (first.as_bytes(), other.as_bytes());
            let ta: Vec<Token> = Scanner::new(a, d).collect::<Result<_, _>>().unwrap();
            let tb: Vec<Token> = Scanner::new(b, d).collect::<Result<_, _>>().unwrap();
            let head = read_head_resumable(a, d, Some(&ta)).unwrap().unwrap();
            assert!(
                head.resume
                    .is_some_and(|r| r.laid_out.is_some() && r.matches(&tb)),
                "{first} {other}"
            );
            for stop in [0, 1, 2] {
                let (mut whole, mut after) = (Rows::new(), Rows::new());
                let want = read(b, d, rows_of(&mut whole, stop));
                let got = read_lexed_after(
                    b,
                    d,
                    Some(&tb),
                    Some(head.clone()),
                    rows_of(&mut after, stop),
                );
                assert_eq!(got, want, "{other} {stop}");
                assert_eq!(after, whole, "{other} {stop}");
            }
        }
    }

    fn head_of(r: &Read) -> Option<&Insert> {
        match r {
            Read::Insert { head, .. } => Some(head),
            _ => None,
        }
    }

    #[test]
    fn integers_are_read_exactly_at_every_length() {
        assert_eq!(integer(b"0"), Some(0));
        assert_eq!(integer(b"1763700000000"), Some(1_763_700_000_000));
        assert_eq!(
            integer(b"999999999999999999"),
            Some(999_999_999_999_999_999)
        );
        assert_eq!(
            integer(b"9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(integer(i128::MAX.to_string().as_bytes()), Some(i128::MAX));
        assert_eq!(integer(b"170141183460469231731687303715884105728"), None);
        assert_eq!(integer(b"12.5"), None);
        assert_eq!(integer(b"1e5"), None);
        assert_eq!(integer(b"12a"), None);
    }

    fn rows(sql: &str) -> (Read, Vec<Vec<Value<'static>>>) {
        let mut out = Vec::new();
        let r = read(sql.as_bytes(), Dialect::default(), |_, row| {
            out.push(
                row.values
                    .iter()
                    .cloned()
                    .map(Value::into_owned)
                    .collect::<Vec<_>>(),
            );
            ControlFlow::Continue(())
        });
        (r, out)
    }

    fn head(r: &Read) -> &Insert {
        match r {
            Read::Insert { head, .. } => head,
            other => panic!("{other:?}"),
        }
    }

    fn b(s: &[u8]) -> Value<'static> {
        Value::Bytes {
            bytes: s.to_vec().into(),
            charset: LitCharset::Connection,
        }
    }

    #[test]
    fn values_rows_are_read_one_by_one() {
        let sql = "INSERT INTO db.`g$f` (K, Q, `T`, V) VALUES ('r1', 'q', -1700000000000, X'00FF'), (_binary'r\\'2', '', 5, NULL)";
        let (r, got) = rows(sql);
        let h = head(&r);
        assert_eq!(&h.table.raw_name[..], b"g$f");
        assert_eq!(h.table.raw_schema.as_deref(), Some(&b"db"[..]));
        assert_eq!(
            h.columns.as_deref(),
            Some(
                &[
                    Name::from(&b"K"[..]),
                    b"Q"[..].into(),
                    b"T"[..].into(),
                    b"V"[..].into()
                ][..]
            )
        );
        assert_eq!(&sql[h.columns_close.unwrap()..][..1], ")");
        assert_eq!(
            got,
            vec![
                vec![
                    b(b"r1"),
                    b(b"q"),
                    Value::Int(-1_700_000_000_000),
                    Value::Bytes {
                        bytes: vec![0, 0xFF].into(),
                        charset: LitCharset::Binary
                    }
                ],
                vec![
                    Value::Bytes {
                        bytes: b"r'2".to_vec().into(),
                        charset: LitCharset::Binary
                    },
                    b(b""),
                    Value::Int(5),
                    Value::Null
                ],
            ]
        );
    }

    #[test]
    fn placeholders_expressions_and_signs() {
        let (_, got) = rows(
            "REPLACE g$f VALUES (?, CONCAT('a', ?), - -3, ?), (1.5, (SELECT 1), DEFAULT, 'x' 'y')",
        );
        assert_eq!(
            got,
            vec![
                vec![
                    Value::Param(0),
                    Value::Unknown,
                    Value::Int(3),
                    Value::Param(2)
                ],
                vec![
                    Value::Unknown,
                    Value::Unknown,
                    Value::Default,
                    Value::Unknown
                ],
            ]
        );
    }

    #[test]
    fn row_close_offsets_point_at_the_parenthesis() {
        let sql = "INSERT INTO g$f (K,Q,V) VALUES ('a','b','c'),('d','e',')')";
        let mut closes = Vec::new();
        read(sql.as_bytes(), Dialect::default(), |_, row| {
            closes.push(row.close);
            ControlFlow::Continue(())
        });
        assert_eq!(closes.len(), 2);
        for c in closes {
            assert_eq!(&sql[c..c + 1], ")");
        }
    }

    #[test]
    fn other_shapes() {
        let (r, got) = rows("INSERT INTO g$f SELECT * FROM other");
        assert_eq!(head(&r).source, Source::Query);
        assert!(got.is_empty());
        let (r, _) = rows("INSERT INTO g$f (SELECT * FROM other)");
        assert_eq!(head(&r).source, Source::Query);
        let (r, got) = rows("INSERT g$f SET K = 'a', Q = 'b', T = -1, V = LOWER('x') ON DUPLICATE KEY UPDATE V = 'y', g$f.T = 2");
        let h = head(&r);
        assert_eq!(h.source, Source::Set);
        assert_eq!(h.columns.as_deref().map(<[_]>::len), Some(4));
        assert_eq!(
            got,
            vec![vec![b(b"a"), b(b"b"), Value::Int(-1), Value::Unknown]]
        );
        assert_eq!(h.on_duplicate, vec![Name::from(&b"V"[..]), b"T"[..].into()]);
        let (r, _) =
            rows("INSERT INTO g$f VALUES ('a','b',1,'v') AS new ON DUPLICATE KEY UPDATE V = new.V");
        assert_eq!(head(&r).on_duplicate, vec![Name::from(&b"V"[..])]);
        assert_eq!(rows("SELECT 1").0, Read::NotInsert);
        assert!(matches!(
            rows("INSERT INTO g$f VALUES ('a'").0,
            Read::Unreadable(_)
        ));
        let (r, _) = rows("INSERT INTO g$f PARTITION (p0) VALUES ('a','b',1,'v')");
        assert!(head(&r).partition_selection);
    }

    #[test]
    fn the_callback_can_stop_the_reading() {
        let mut seen = 0;
        let r = read(
            b"INSERT INTO g$f VALUES (1),(2),(3)",
            Dialect::default(),
            |_, _| {
                seen += 1;
                ControlFlow::Break(())
            },
        );
        assert_eq!(seen, 1);
        assert!(matches!(r, Read::Insert { rows: 1, .. }));
    }

    #[test]
    fn long_bulk_inserts_are_read_in_one_pass() {
        let mut sql = b"INSERT INTO g$f (K,Q,T,V) VALUES ".to_vec();
        for i in 0..50_000 {
            if i > 0 {
                sql.push(b',');
            }
            sql.extend_from_slice(format!("('k{i}','q',-{i},'v')").as_bytes());
        }
        let mut n = 0;
        let r = read(&sql, Dialect::default(), |_, row| {
            assert_eq!(row.values.len(), 4);
            n += 1;
            ControlFlow::Continue(())
        });
        assert!(matches!(r, Read::Insert { rows: 50_000, .. }));
        assert_eq!(n, 50_000);
    }
}
