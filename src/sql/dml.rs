//! Reading SELECT / UPDATE / DELETE on one table, for the prefix-scan rewriter: which table,
//! where its WHERE clause ends, and the predicates on the rowkey `K` that are ANDed at the top
//! level of that clause. Pure and allocation-light; it reads tokens of `sql::scan`, so it sees
//! the statement exactly as the backend does (executable comments, escapes, NO_BACKSLASH_ESCAPES).
//!
//! The reader is deliberately narrow. Anything it does not fully understand — joins, subqueries,
//! UNION, CTEs, explicit partition selection, index hints, OR/XOR at the top of the WHERE
//! clause — is reported as `Read::Unreadable` or yields no predicate, and the statement is then
//! forwarded unchanged. A predicate it reports is one whose meaning is certain: a rewrite built
//! on it can only narrow what the backend reads, never what it returns.

use super::ddl::TableName;
use super::insert::{literal, Value};
use super::scan::{
    hex_value, ident_value, string_value, unquote_ident, Dialect, Scanner, Tok, Token,
};

/// A value compared with K.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// A literal's bytes (quotes and escapes removed) and how the backend types them.
    Lit { bytes: Vec<u8>, charset: LitCharset },
    /// A `?` of a prepared statement, by its position among the statement's placeholders (its
    /// value is known only at COM_STMT_EXECUTE).
    Param(u32),
}

pub use super::insert::LitCharset;

/// The escape character of a LIKE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// None given: `\`, or none under NO_BACKSLASH_ESCAPES.
    Default,
    Byte(u8),
    /// `ESCAPE ''`.
    Nothing,
    /// Not a one-byte literal: the reader cannot tell.
    Unknown,
}

/// A predicate on K, ANDed at the top level of the WHERE clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pred {
    /// `K = v`, `K <=> v`.
    Eq(Operand),
    /// `K IN (v, …)`.
    In(Vec<Operand>),
    /// `K LIKE p [ESCAPE e]`.
    Like { pattern: Operand, escape: Escape },
    /// `K >= v` (inclusive) / `K > v`.
    Lower { bound: Operand, inclusive: bool },
    /// `K <= v` (inclusive) / `K < v`.
    Upper { bound: Operand, inclusive: bool },
    /// `K BETWEEN lo AND hi` (both inclusive).
    Between(Operand, Operand),
    /// `LEFT(K, m) = v`, `SUBSTRING(K, 1, m) = v`, `SUBSTR(K FROM 1 FOR m) = v`.
    Left { len: u64, value: Operand },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Select,
    Update,
    Delete,
}

/// A WHERE clause's K terms: inline for the one or two of nearly every statement.
pub type Preds = smallvec::SmallVec<[Pred; 2]>;

/// A single-table statement, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dml {
    pub verb: Verb,
    /// Under EXPLAIN / DESCRIBE / ANALYZE.
    pub explain: bool,
    pub table: TableName,
    /// Where the WHERE expression ends (offset in the statement, after its last token); None
    /// without a WHERE clause.
    pub where_end: Option<usize>,
    /// The WHERE clause is a conjunction (no OR/XOR at its top level): `preds` are its K terms.
    pub preds: Preds,
    /// Identifiers (unquoted, as written) that appear in the WHERE clause.
    pub where_idents: Idents,
    /// A string literal of the WHERE clause holds a backslash (its bytes depend on
    /// NO_BACKSLASH_ESCAPES, which not every backend reports).
    pub backslash_literal: bool,
    /// How many `?` placeholders come before `where_end` (the position of a placeholder
    /// spliced there).
    pub params_before_where_end: u32,
    /// UPDATE: the SET list, in order: each column as written (unquoted, without a table
    /// qualifier) and its value when that is one literal or placeholder (else `Unknown`).
    pub assignments: Vec<(Vec<u8>, Value<'static>)>,
    /// SELECT … FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE: a locking read.
    pub locking: bool,
    /// Where the table reference (`[db.]name`, without its alias) stands in the statement.
    pub table_span: (usize, usize),
    /// Where the table reference's alias stands (without its `AS`), if it has one.
    pub alias: Option<(usize, usize)>,
    /// Where each of `preds` stands (the AND term it was read from), in the same order.
    pub pred_spans: smallvec::SmallVec<[(usize, usize); 4]>,
    /// A name of three parts (`db.table.column`) appears somewhere in the statement.
    pub three_part_name: bool,
}

/// A list of identifiers kept in one buffer (each as a 4-byte length and its bytes): inline
/// for a WHERE clause's few short names (`K`, `Q`: no allocation), else one allocation for
/// the whole clause instead of one per identifier.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Idents(smallvec::SmallVec<[u8; 32]>);

/// (by hand: the bytes copied at once, not one by one as the small vector's own `clone` does)
impl Clone for Idents {
    fn clone(&self) -> Idents {
        Idents(smallvec::SmallVec::from_slice(&self.0))
    }

    /// (into the buffer it has: a reading refilled from a frame's)
    fn clone_from(&mut self, source: &Idents) {
        self.0.clear();
        self.0.extend_from_slice(&source.0);
    }
}

impl Idents {
    pub fn push(&mut self, ident: &[u8]) {
        let len = u32::try_from(ident.len()).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0
            .extend_from_slice(ident.get(..len as usize).unwrap_or(ident));
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let mut rest = self.0.as_slice();
        std::iter::from_fn(move || {
            let (len, after) = rest.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len) as usize;
            let (ident, tail) = after.split_at_checked(len)?;
            rest = tail;
            Some(ident)
        })
    }

    /// Whether one of them is `name`, ASCII case folded.
    pub fn contains_ci(&self, name: &[u8]) -> bool {
        self.iter().any(|i| i.eq_ignore_ascii_case(name))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Not a SELECT / UPDATE / DELETE naming an HBase-style (`$`) table.
    NotDml,
    /// A statement on an HBase-style table in a shape the reader does not follow.
    Unreadable(&'static str),
    Dml(Box<Dml>),
}

/// Words that end a table reference or a WHERE clause (`clause_word` matches them; this list
/// is what its test holds it to).
#[cfg(test)]
const CLAUSE_WORDS: [&str; 18] = [
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "FOR",
    "LOCK",
    "WINDOW",
    "INTO",
    "RETURNING",
    "PROCEDURE",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "SET",
    "PARTITION",
    "OFFSET",
    "FETCH",
];

/// Whether `w` is one of `CLAUSE_WORDS` (ASCII case-insensitive): its length and first letter
/// leave at most two to compare (most words leave none; the `dml` tests hold it to the list).
#[inline]
fn clause_word(w: &[u8]) -> bool {
    let Some(&first) = w.first() else {
        return false;
    };
    let candidates: &[&str] = match (w.len(), first.to_ascii_uppercase()) {
        (3, b'F') => &["FOR"],
        (3, b'S') => &["SET"],
        (4, b'L') => &["LOCK"],
        (4, b'I') => &["INTO"],
        (5, b'W') => &["WHERE"],
        (5, b'G') => &["GROUP"],
        (5, b'O') => &["ORDER"],
        (5, b'L') => &["LIMIT"],
        (5, b'U') => &["UNION"],
        (5, b'F') => &["FETCH"],
        (6, b'H') => &["HAVING"],
        (6, b'W') => &["WINDOW"],
        (6, b'E') => &["EXCEPT"],
        (6, b'O') => &["OFFSET"],
        (9, b'R') => &["RETURNING"],
        (9, b'P') => &["PROCEDURE", "PARTITION"],
        (9, b'I') => &["INTERSECT"],
        _ => return false,
    };
    candidates
        .iter()
        .any(|c| w.eq_ignore_ascii_case(c.as_bytes()))
}

/// Words that, after a table name, mean a shape the reader does not follow.
const TABLE_FOLLOWERS: [&str; 10] = [
    "JOIN",
    "INNER",
    "CROSS",
    "LEFT",
    "RIGHT",
    "NATURAL",
    "STRAIGHT_JOIN",
    "USE",
    "FORCE",
    "IGNORE",
];

/// The most tokens a statement may have to be read.
pub const MAX_TOKENS: usize = 4096;

pub use super::scan::has_executable_comment;

/// Reads one statement (a piece of a text, or a prepared statement's text).
pub fn read(sql: &[u8], d: Dialect) -> Read {
    read_lexed(sql, d, None)
}

/// `read`, with the statement's tokens when the text's split kept them (offsets relative to
/// `sql`; `statements_keeping` keeps at most `MAX_TOKENS + 1`). Tokens are kept only for a
/// text without an executable comment (the caller checked the whole text).
pub fn read_lexed(sql: &[u8], d: Dialect, lexed: Option<&[Token]>) -> Read {
    // executable comments are read as code by the scanner, but a splice inside one could
    // land in text a version gate hides: leave such statements alone
    if lexed.is_none() && has_executable_comment(sql) {
        return if has_dollar_ident(sql, d) {
            Read::Unreadable("executable comment")
        } else {
            Read::NotDml
        };
    }
    let too_long = || {
        if has_dollar_ident(sql, d) {
            Read::Unreadable("statement too long to analyse")
        } else {
            Read::NotDml
        }
    };
    let own: Vec<Token>;
    let toks: &[Token] = match lexed {
        Some(t) if t.len() > MAX_TOKENS => return too_long(),
        Some(t) => t,
        None => {
            // about one token per 4 bytes: one allocation for most statements
            let mut toks = Vec::with_capacity((sql.len() / 4).clamp(16, MAX_TOKENS + 1));
            for t in Scanner::new(sql, d) {
                match t {
                    Ok(t) => toks.push(t),
                    Err(_) => return Read::NotDml, // the backend reports its own syntax error
                }
                if toks.len() > MAX_TOKENS {
                    return too_long();
                }
            }
            own = toks;
            &own
        }
    };
    let ords = ordinals(toks);
    let r = Reader {
        sql,
        d,
        t: toks,
        ords: &ords,
    };
    r.statement(None)
}

/// Each token's placeholder ordinal (how many `?` come before it; one more for the end),
/// counted once; empty without a placeholder.
fn ordinals(toks: &[Token]) -> Vec<u32> {
    let mut ords = Vec::new();
    if toks.iter().any(|t| t.is_punct(b'?')) {
        let mut n = 0u32;
        ords.reserve(toks.len() + 1);
        for t in toks {
            ords.push(n);
            n += u32::from(t.is_punct(b'?'));
        }
        ords.push(n);
    }
    ords
}

/// What reading a statement found that none of its literals changes, for another statement
/// of the same tokens with other literals in them: one that `scan::Shape` matched (the same
/// bytes outside its literals, and each literal a `'…'` string whose body is its value or a
/// run of digits, as in this one). Which tokens are the table's, the alias, the WHERE clause
/// and its AND terms depends only on words, names and punctuation; what the K terms compare
/// with, the literals' bytes and the positions are read again from the new tokens
/// (`read_framed`). The `shape_reading` fuzz target holds the two readings equal.
#[derive(Debug, Clone)]
pub enum Frame {
    /// A reading no literal takes part in (not a DML statement on an HBase table, or one the
    /// reader does not follow): it is the reading.
    Whole(Read),
    /// A SELECT or DELETE, read: its reading without the K terms and positions, and the
    /// tokens they are read from.
    Dml(Box<DmlFrame>),
}

#[derive(Debug, Clone)]
pub struct DmlFrame {
    /// The reading: `preds`, `pred_spans`, `backslash_literal` empty, positions to be set.
    dml: Dml,
    /// The table reference's first and last tokens.
    table: Option<(usize, usize)>,
    alias: Option<usize>,
    /// The WHERE expression's tokens (`[start, end)`, not empty) and its AND terms, if it is
    /// a conjunction.
    body: Option<(usize, usize, Option<Conjuncts>)>,
}

/// `read_lexed` from kept tokens, and the reading's frame (None: a reading literals take part
/// in, an UPDATE's SET list or a statement too long to read).
pub(crate) fn read_framing(sql: &[u8], d: Dialect, toks: &[Token]) -> (Read, Option<Frame>) {
    if toks.len() > MAX_TOKENS {
        return (read_lexed(sql, d, Some(toks)), None);
    }
    let ords = ordinals(toks);
    let r = Reader {
        sql,
        d,
        t: toks,
        ords: &ords,
    };
    let mut frame = Framing::default();
    let read = r.statement(Some(&mut frame));
    let frame = match (&read, frame.update, frame.dml) {
        (_, true, _) => None,
        (Read::Dml(_), false, Some(f)) => Some(Frame::Dml(f)),
        (Read::Dml(_), false, None) => None,
        (read, false, _) => Some(Frame::Whole(read.clone())),
    };
    (read, frame)
}

/// The reading of the statement `sql` whose tokens `toks` are those of the statement `frame`
/// was made from, with other literals in them (`Frame`): what `read_lexed` gives for it.
pub(crate) fn read_framed(sql: &[u8], d: Dialect, toks: &[Token], frame: &Frame) -> Read {
    let f = match frame {
        Frame::Whole(read) => return read.clone(),
        Frame::Dml(f) => f,
    };
    // (the frame's tokens are these: the key it was found by holds their count)
    debug_assert!(f.body.as_ref().is_none_or(|(_, end, _)| *end <= toks.len()));
    let span = |(a, b): (usize, usize)| Some((toks.get(a)?.start, toks.get(b)?.end));
    // (into the reading the thread's last statement gave back, when it did: no allocation)
    let mut dml = refilled(&f.dml);
    dml.table_span = f.table.and_then(span).unwrap_or((0, 0));
    dml.alias = f.alias.and_then(|i| toks.get(i)).map(|t| (t.start, t.end));
    let Some((start, end, conjuncts)) = &f.body else {
        return Read::Dml(dml);
    };
    let body = toks.get(*start..*end).unwrap_or_default();
    dml.where_end = body.last().map(|t| t.end);
    dml.backslash_literal = body
        .iter()
        .any(|t| t.kind == Tok::Str && memchr::memchr(b'\\', t.text(sql)).is_some());
    if let Some(conjuncts) = conjuncts {
        // (a placeholder among the K terms comes before the WHERE clause's end)
        let ords = if dml.params_before_where_end > 0 {
            ordinals(toks)
        } else {
            Vec::new()
        };
        let r = Reader {
            sql,
            d,
            t: toks,
            ords: &ords,
        };
        r.predicates(conjuncts, &mut dml);
    }
    Read::Dml(dml)
}

/// A copy of `f`, made in the reading the thread's last statement gave back when it did (no
/// allocation).
pub(crate) fn refilled(f: &Dml) -> Box<Dml> {
    match SPARE.try_with(std::cell::Cell::take).ok().flatten() {
        Some(mut spare) => {
            spare.refill_from(f);
            spare
        }
        None => Box::new(f.clone()),
    }
}

thread_local! {
    /// One emptied reading a thread keeps for its next statement read from a frame
    /// (`read_framed`), given back once the statement is decided (`give_back`).
    static SPARE: std::cell::Cell<Option<Box<Dml>>> = const { std::cell::Cell::new(None) };
}

/// Most bytes a kept reading holds on to in each of its identifier list and its table's names,
/// and most K terms it has room for (a reading holding more is freed).
const SPARE_BYTES: usize = 256;
const SPARE_TERMS: usize = 16;

/// A reading the caller is done with, kept emptied for the thread's next statement read from
/// a frame (its literals are freed now). Only on a thread that keeps shapes (frames are
/// theirs; a blocking pool's threads keep none), and not a reading that holds more than a
/// statement usually does.
pub fn give_back(mut dml: Box<Dml>) {
    let t = &dml.table;
    let names = t.name.capacity()
        + t.raw_name.capacity()
        + t.schema.as_ref().map_or(0, String::capacity)
        + t.raw_schema.as_ref().map_or(0, Vec::capacity);
    if !super::scan::keeps_shapes()
        || dml.where_idents.0.capacity() > SPARE_BYTES
        || names > SPARE_BYTES
        || dml.preds.capacity() > SPARE_TERMS
        || dml.pred_spans.capacity() > SPARE_TERMS
    {
        return;
    }
    dml.preds.clear();
    dml.assignments.clear();
    dml.assignments.shrink_to(0);
    let _ = SPARE.try_with(|s| s.set(Some(dml)));
}

impl Dml {
    /// Becomes `f` (a frame's reading) in place, reusing what it holds.
    fn refill_from(&mut self, f: &Dml) {
        // (every field named: one added later is not forgotten here)
        let Dml {
            verb,
            explain,
            table,
            where_end,
            preds,
            where_idents,
            backslash_literal,
            params_before_where_end,
            assignments,
            locking,
            table_span,
            alias,
            pred_spans,
            three_part_name,
        } = f;
        self.verb = *verb;
        self.explain = *explain;
        self.table.clone_from(table);
        self.where_end = *where_end;
        self.preds.clone_from(preds);
        self.where_idents.clone_from(where_idents);
        self.backslash_literal = *backslash_literal;
        self.params_before_where_end = *params_before_where_end;
        self.assignments.clone_from(assignments);
        self.locking = *locking;
        self.table_span = *table_span;
        self.alias = *alias;
        self.pred_spans.clone_from(pred_spans);
        self.three_part_name = *three_part_name;
    }

    /// Its offsets after `at` moved by `by` bytes (its statement's text grew or shrank there,
    /// inside a literal: no offset lies in the bytes that changed); None where one would leave
    /// the `usize` range.
    pub(crate) fn moved(&mut self, at: usize, by: isize) -> Option<()> {
        let mv = |o: &mut usize| -> Option<()> {
            if *o > at {
                *o = o.checked_add_signed(by)?;
            }
            Some(())
        };
        // (every field named: an offset added later is not forgotten here)
        let Dml {
            verb: _,
            explain: _,
            table: _,
            where_end,
            preds: _,
            where_idents: _,
            backslash_literal: _,
            params_before_where_end: _,
            assignments: _,
            locking: _,
            table_span,
            alias,
            pred_spans,
            three_part_name: _,
        } = self;
        if let Some(e) = where_end {
            mv(e)?;
        }
        mv(&mut table_span.0)?;
        mv(&mut table_span.1)?;
        if let Some((a, b)) = alias {
            mv(a)?;
            mv(b)?;
        }
        for (a, b) in pred_spans.iter_mut() {
            mv(a)?;
            mv(b)?;
        }
        Some(())
    }
}

/// What `Reader::statement` leaves for a frame.
#[derive(Default)]
struct Framing {
    /// An UPDATE (its SET list's literals take part in the reading: no frame).
    update: bool,
    dml: Option<Box<DmlFrame>>,
}

/// After an assignment's target at `at`: `=`, or `:=` (one operator to the backend when its
/// two characters touch), and the index of the value's first token.
pub(crate) fn assignment_value(t: &[Token], at: usize) -> Option<usize> {
    let op = t.get(at)?;
    if op.is_punct(b'=') {
        return Some(at + 1);
    }
    let eq = t.get(at + 1)?;
    (op.is_punct(b':') && eq.is_punct(b'=') && op.end == eq.start).then_some(at + 2)
}

fn has_dollar_ident(sql: &[u8], d: Dialect) -> bool {
    Scanner::new(sql, d)
        .map_while(Result::ok)
        .take(MAX_TOKENS)
        .any(|t| is_dollar_ident(sql, &t))
}

/// A word or quoted name holding a `$` (names are short: a plain loop, not memchr's setup per
/// token; counted with scripts/cost.sh, `contains` costs 14 instructions more per token).
#[allow(clippy::manual_contains)]
fn is_dollar_ident(sql: &[u8], t: &Token) -> bool {
    matches!(t.kind, Tok::Word | Tok::QuotedIdent) && t.text(sql).iter().any(|&c| c == b'$')
}

/// Token ranges of AND terms (a WHERE clause of up to eight terms needs no allocation).
type Conjuncts = smallvec::SmallVec<[(usize, usize); 8]>;

/// `Reader::survey`'s findings.
#[derive(Default)]
struct Survey {
    dollar: bool,
    second_block: Option<&'static str>,
    locking: bool,
    three_part_name: bool,
}

struct Reader<'a> {
    sql: &'a [u8],
    d: Dialect,
    t: &'a [Token],
    /// Placeholder ordinals by token index (empty: no placeholder).
    ords: &'a [u32],
}

impl Reader<'_> {
    fn word(&self, i: usize, w: &str) -> bool {
        super::scan::word_at(self.sql, self.t, i, w)
    }

    fn punct(&self, i: usize, c: u8) -> bool {
        super::scan::punct_at(self.t, i, c)
    }

    fn names_dollar_table(&self) -> bool {
        self.t.iter().any(|t| is_dollar_ident(self.sql, t))
    }

    fn is_clause_word(&self, i: usize) -> bool {
        self.t
            .get(i)
            .is_some_and(|t| t.kind == Tok::Word && clause_word(t.text(self.sql)))
            && !self.sequence_value_for(i)
    }

    /// The FOR of `NEXT VALUE FOR seq` / `PREVIOUS VALUE FOR seq` (MariaDB's sequences): part
    /// of an expression, not a locking clause.
    fn sequence_value_for(&self, i: usize) -> bool {
        i >= 2
            && self.word(i, "FOR")
            && self.word(i - 1, "VALUE")
            && (self.word(i - 2, "NEXT") || self.word(i - 2, "PREVIOUS"))
    }

    /// The statement's reading; with `framing`, also what a frame of it needs.
    fn statement(&self, mut framing: Option<&mut Framing>) -> Read {
        let mut i = 0;
        let mut explain = false;
        if ["EXPLAIN", "DESCRIBE", "DESC", "ANALYZE"]
            .iter()
            .any(|w| self.word(0, w))
        {
            // MariaDB's ANALYZE runs the statement (the router reads through it first)
            explain = !self.word(0, "ANALYZE");
            i = 1;
            loop {
                if [
                    "EXTENDED",
                    "PARTITIONS",
                    "BASIC",
                    "OUTLINE",
                    "EXTENDED_NOADDR",
                    "ANALYZE",
                ]
                .iter()
                .any(|w| self.word(i, w))
                {
                    // EXPLAIN ANALYZE runs the statement (MySQL); the router reads through it
                    // first (`scan::executed_part`), this keeps a direct reading honest too
                    explain &= !self.word(i, "ANALYZE");
                    i += 1;
                } else if self.word(i, "FORMAT") && self.punct(i + 1, b'=') {
                    i += 3;
                } else {
                    break;
                }
            }
        }
        let verb = if self.word(i, "SELECT") {
            Verb::Select
        } else if self.word(i, "UPDATE") {
            Verb::Update
        } else if self.word(i, "DELETE") {
            Verb::Delete
        } else {
            return if self.names_dollar_table() && (self.word(i, "WITH") || self.punct(i, b'(')) {
                Read::Unreadable("a CTE or parenthesised query")
            } else {
                Read::NotDml
            };
        };
        if let Some(f) = framing.as_deref_mut() {
            f.update = verb == Verb::Update;
        }
        let survey = self.survey(i + 1);
        if !survey.dollar {
            return Read::NotDml;
        }
        // one query block only: no subquery, no set operation
        if let Some(why) = survey.second_block {
            return Read::Unreadable(why);
        }
        let at_table = match verb {
            Verb::Select => match self.depth0_word(i + 1, "FROM") {
                Some(f) => f + 1,
                None => return Read::NotDml,
            },
            Verb::Delete => {
                let mut j = i + 1;
                while ["LOW_PRIORITY", "QUICK", "IGNORE"]
                    .iter()
                    .any(|w| self.word(j, w))
                {
                    j += 1;
                }
                if !self.word(j, "FROM") {
                    return Read::Unreadable("a multiple-table DELETE");
                }
                j + 1
            }
            Verb::Update => {
                let mut j = i + 1;
                while ["LOW_PRIORITY", "IGNORE"].iter().any(|w| self.word(j, w)) {
                    j += 1;
                }
                j
            }
        };
        let Some((table, after)) = self.table_ref(at_table) else {
            return Read::Unreadable("a table reference the rewriter does not follow");
        };
        let table_span = match (self.t.get(at_table), self.t.get(after - 1)) {
            (Some(a), Some(b)) => (a.start, b.end),
            _ => (0, 0),
        };
        let mut j = after;
        let mut alias = None;
        // [AS] alias
        let mut alias_at = None;
        if self.word(j, "AS") {
            alias = self.t.get(j + 1).map(|t| (t.start, t.end));
            alias_at = Some(j + 1);
            if !self
                .t
                .get(j + 1)
                .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
            {
                return Read::Unreadable("an alias");
            }
            j += 2;
        } else if let Some(t) = self.t.get(j) {
            let plain_word = t.kind == Tok::Word
                && !self.is_clause_word(j)
                && !TABLE_FOLLOWERS.iter().any(|w| self.word(j, w));
            if plain_word || t.kind == Tok::QuotedIdent {
                alias = Some((t.start, t.end));
                alias_at = Some(j);
                j += 1;
            }
        }
        let mut assignments = Vec::new();
        let where_kw = match verb {
            Verb::Update => {
                if !self.word(j, "SET") {
                    return Read::Unreadable("a multiple-table UPDATE");
                }
                let w = self.depth0_word(j + 1, "WHERE");
                match self.assignments(j + 1, &mut assignments) {
                    Some(_) => w,
                    None => return Read::Unreadable("a SET list the reader does not follow"),
                }
            }
            _ => {
                if j < self.t.len() && !self.word(j, "WHERE") && !self.is_clause_word(j) {
                    return Read::Unreadable("a join or a table option");
                }
                if self.word(j, "PARTITION") {
                    return Read::Unreadable("explicit partition selection");
                }
                self.word(j, "WHERE").then_some(j)
            }
        };
        let mut dml = Dml {
            verb,
            explain,
            table,
            where_end: None,
            preds: Preds::new(),
            where_idents: Idents::default(),
            backslash_literal: false,
            params_before_where_end: 0,
            assignments,
            locking: verb == Verb::Select && survey.locking,
            table_span,
            alias,
            pred_spans: Default::default(),
            three_part_name: survey.three_part_name,
        };
        let frame = |dml: &Dml, body: Option<(usize, usize, Option<Conjuncts>)>| {
            Box::new(DmlFrame {
                dml: Dml {
                    preds: Preds::new(),
                    pred_spans: Default::default(),
                    backslash_literal: false,
                    ..dml.clone()
                },
                table: (after > at_table).then(|| (at_table, after - 1)),
                alias: alias.and(alias_at),
                body,
            })
        };
        let Some(w) = where_kw else {
            if let Some(f) = framing {
                f.dml = Some(frame(&dml, None));
            }
            return Read::Dml(Box::new(dml));
        };
        // the WHERE expression: up to the first clause word at depth 0
        let start = w + 1;
        let mut depth = 0i32;
        let mut end = self.t.len();
        for k in start..self.t.len() {
            let t = &self.t[k];
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth -= 1;
                if depth < 0 {
                    return Read::Unreadable("unbalanced parentheses");
                }
            } else if depth == 0 && self.is_clause_word(k) {
                end = k;
                break;
            }
        }
        if end == start {
            return Read::NotDml; // `WHERE` with nothing: the backend's syntax error
        }
        let body = &self.t[start..end];
        dml.where_end = body.last().map(|t| t.end);
        dml.params_before_where_end = self.ords.get(end).copied().unwrap_or(0);
        dml.backslash_literal = body
            .iter()
            .any(|t| t.kind == Tok::Str && memchr::memchr(b'\\', t.text(self.sql)).is_some());
        // one allocation: each identifier's bytes and its 4-byte length
        dml.where_idents.0.reserve(
            body.iter()
                .filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
                .map(|t| t.end - t.start + 4)
                .sum(),
        );
        for t in body {
            match t.kind {
                Tok::Word => dml.where_idents.push(t.text(self.sql)),
                Tok::QuotedIdent => dml.where_idents.push(&unquote_ident(t.text(self.sql))),
                _ => {}
            }
        }
        let conjuncts = self.conjuncts(start, end);
        if let Some(conjuncts) = &conjuncts {
            self.predicates(conjuncts, &mut dml);
        }
        if let Some(f) = framing {
            f.dml = Some(frame(&dml, Some((start, end, conjuncts))));
        }
        Read::Dml(Box::new(dml))
    }

    /// The K terms among the AND terms `conjuncts`, and where each stands.
    fn predicates(&self, conjuncts: &Conjuncts, dml: &mut Dml) {
        for &(a, b) in conjuncts {
            if let Some(p) = self.predicate(a, b) {
                dml.preds.push(p);
                let span = match (self.t.get(a), self.t.get(b.wrapping_sub(1))) {
                    (Some(x), Some(y)) => (x.start, y.end),
                    _ => (0, 0),
                };
                dml.pred_spans.push(span);
            }
        }
    }

    /// UPDATE's SET list from token `from`: `[t.]col = value, …` up to the first clause word at
    /// depth 0; returns the index after it.
    fn assignments(&self, from: usize, out: &mut Vec<(Vec<u8>, Value<'static>)>) -> Option<usize> {
        let mut k = from;
        loop {
            // the target: an identifier, possibly qualified, then `=`
            let mut target = k;
            while self.punct(target + 1, b'.') {
                target += 2;
            }
            let t = self.t.get(target)?;
            if !matches!(t.kind, Tok::Word | Tok::QuotedIdent) {
                return None;
            }
            let start = assignment_value(self.t, target + 1)?;
            let column = ident_value(self.sql, t);
            // the value: up to `,` or a clause word at depth 0
            let mut depth = 0i32;
            let mut end = start;
            while let Some(t) = self.t.get(end) {
                if t.is_punct(b'(') {
                    depth += 1;
                } else if t.is_punct(b')') {
                    depth -= 1;
                } else if depth == 0
                    && (t.is_punct(b',') || t.is_punct(b';') || self.is_clause_word(end))
                {
                    break;
                }
                end += 1;
            }
            let toks = self.t.get(start..end)?;
            if toks.is_empty() {
                return None;
            }
            let param = match toks {
                [t] if t.is_punct(b'?') => self.ords.get(start).copied(),
                _ => None,
            };
            out.push((column, literal(self.sql, self.d, toks, param).into_owned()));
            if out.len() > 4096 {
                return None;
            }
            if self.punct(end, b',') {
                k = end + 1;
            } else {
                return Some(end);
            }
        }
    }

    /// What one pass over the tokens tells (one pass, not one per question, and a word is
    /// compared only with the keywords of its length): whether a name has a `$`; the first
    /// sign of a second query block from token `from` on (a SELECT: a subquery; UNION, EXCEPT,
    /// INTERSECT: a set operation); a locking read (`FOR UPDATE`, `FOR SHARE`,
    /// `LOCK IN SHARE MODE`; one query block: anywhere).
    fn survey(&self, from: usize) -> Survey {
        let mut s = Survey::default();
        for (k, t) in self.t.iter().enumerate() {
            s.dollar = s.dollar || is_dollar_ident(self.sql, t);
            if t.kind == Tok::Punct(b'.') {
                // `a.b.c`: a '.' two tokens after another, names around both
                if !s.three_part_name && self.punct(k + 2, b'.') {
                    let name = |i: usize| {
                        self.t
                            .get(i)
                            .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
                    };
                    s.three_part_name = k > 0 && name(k - 1) && name(k + 1) && name(k + 3);
                }
            } else if t.kind == Tok::Word {
                let text = t.text(self.sql);
                let is = |w: &str| text.eq_ignore_ascii_case(w.as_bytes());
                match text.len() {
                    3 if is("FOR") => {
                        s.locking |= self.word(k + 1, "UPDATE") || self.word(k + 1, "SHARE");
                    }
                    4 if is("LOCK") => s.locking |= self.word(k + 1, "IN"),
                    5 | 6 | 9 if k >= from && s.second_block.is_none() => {
                        if is("SELECT") {
                            s.second_block = Some("a subquery");
                        } else if is("UNION") || is("EXCEPT") || is("INTERSECT") {
                            s.second_block = Some("a set operation");
                        }
                    }
                    _ => {}
                }
            }
        }
        s
    }

    /// The first `w` at parenthesis depth 0 from `from`.
    fn depth0_word(&self, from: usize, w: &str) -> Option<usize> {
        let mut depth = 0i32;
        for k in from..self.t.len() {
            let t = &self.t[k];
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth -= 1;
            } else if depth == 0 && t.is_word(self.sql, w) {
                return Some(k);
            }
        }
        None
    }

    /// `name` or `db.name`: the table and the index after it.
    fn table_ref(&self, i: usize) -> Option<(TableName, usize)> {
        let ident = |k: usize| {
            self.t
                .get(k)
                .filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
        };
        let first = ident(i)?;
        if first.kind == Tok::Word && self.is_clause_word(i) {
            return None;
        }
        let (schema, name, next) = if self.punct(i + 1, b'.') {
            (Some(first), ident(i + 2)?, i + 3)
        } else {
            (None, first, i + 1)
        };
        let raw_schema = schema.map(|s| ident_value(self.sql, s));
        let raw_name = super::scan::ident_small(self.sql, name);
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Some((
            TableName {
                schema: raw_schema.as_deref().map(lossy),
                name: compact_str::CompactString::from_utf8_lossy(&raw_name),
                raw_schema,
                raw_name,
            },
            next,
        ))
    }

    /// The top-level AND terms of tokens `[a, b)`, as token ranges; None when the expression is
    /// not a plain conjunction (OR, XOR, `||`, `&&`, `:=` at its top level).
    fn conjuncts(&self, a: usize, b: usize) -> Option<Conjuncts> {
        let mut out = Conjuncts::new();
        // a stack of ranges to split; a range's parts are pushed on it, then reversed in place
        let mut work = Conjuncts::new();
        work.push((a, b));
        while let Some((a, b)) = work.pop() {
            if out.len() + work.len() > 256 {
                return None;
            }
            // a term wrapped whole in parentheses is read inside them
            if self.punct(a, b'(') && b > a + 1 && self.matching_paren(a) == Some(b - 1) {
                work.push((a + 1, b - 1));
                continue;
            }
            let mut depth = 0i32;
            let mut between = false;
            let mut start = a;
            let base = work.len();
            let mut opaque = false;
            for k in a..b {
                let t = &self.t[k];
                if t.is_punct(b'(') {
                    depth += 1;
                    continue;
                }
                if t.is_punct(b')') {
                    depth -= 1;
                    continue;
                }
                if depth != 0 {
                    continue;
                }
                // an AND inside CASE … END is not one of this range's (and END may also name
                // a column): the range is read as one term the reader does not follow, so no
                // predicate comes from it (every term of a conjunction holds for its rows, so
                // leaving one out only reads less)
                if self.word(k, "CASE") {
                    opaque = true;
                    break;
                }
                if ["OR", "XOR"].iter().any(|w| self.word(k, w))
                    || (t.is_punct(b'|') && self.punct(k + 1, b'|'))
                    || (t.is_punct(b'&') && self.punct(k + 1, b'&'))
                    || (t.is_punct(b':') && self.punct(k + 1, b'='))
                {
                    return None;
                }
                if self.word(k, "BETWEEN") {
                    between = true;
                } else if self.word(k, "AND") {
                    if between {
                        between = false;
                    } else {
                        work.push((start, k));
                        start = k + 1;
                    }
                }
            }
            if opaque {
                work.truncate(base);
            } else if base == work.len() {
                out.push((a, b));
            } else {
                work.push((start, b));
                work[base..].reverse();
            }
        }
        Some(out)
    }

    fn matching_paren(&self, open: usize) -> Option<usize> {
        let mut depth = 0i32;
        for k in open..self.t.len() {
            if self.punct(k, b'(') {
                depth += 1;
            } else if self.punct(k, b')') {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
        }
        None
    }

    /// A reference to column K of the statement's table at `i`: the index after it.
    fn k_ref(&self, i: usize) -> Option<usize> {
        let ident = |k: usize| {
            self.t
                .get(k)
                .filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
        };
        // `K`, `k` or a quoted one (`` `K` ``, `"K"` under ANSI_QUOTES): no unquoting needed,
        // a one-letter identifier has no doubled quote inside
        let is_k = |k: usize| {
            ident(k).is_some_and(|t| match (t.kind, t.text(self.sql)) {
                (Tok::Word, [c]) => c.eq_ignore_ascii_case(&b'K'),
                (Tok::QuotedIdent, [q, c, e]) => q == e && c.eq_ignore_ascii_case(&b'K'),
                _ => false,
            })
        };
        if is_k(i) && !self.punct(i + 1, b'.') && !(i > 0 && self.punct(i - 1, b'.')) {
            return Some(i + 1);
        }
        // q.K or db.q.K: any qualifier is taken as the statement's one table (a wrong one is
        // the backend's error, which the added predicate does not change)
        if ident(i).is_some() && self.punct(i + 1, b'.') && is_k(i + 2) {
            if self.punct(i + 3, b'.') {
                return None;
            }
            return Some(i + 3);
        }
        if ident(i).is_some()
            && self.punct(i + 1, b'.')
            && ident(i + 2).is_some()
            && self.punct(i + 3, b'.')
            && is_k(i + 4)
        {
            return Some(i + 5);
        }
        None
    }

    /// A literal or `?` at `i`: the operand and the index after it.
    fn operand(&self, i: usize) -> Option<(Operand, usize)> {
        let t = self.t.get(i)?;
        match t.kind {
            Tok::Punct(b'?') => Some((Operand::Param(self.ords.get(i).copied()?), i + 1)),
            Tok::Str => Some((
                Operand::Lit {
                    bytes: string_value(self.sql, t, self.d),
                    charset: LitCharset::Connection,
                },
                i + 1,
            )),
            Tok::Hex => Some((
                Operand::Lit {
                    bytes: hex_value(self.sql, t)?,
                    charset: LitCharset::Binary,
                },
                i + 1,
            )),
            Tok::Word if t.text(self.sql).starts_with(b"_") => {
                let intro = t.text(self.sql).to_ascii_lowercase();
                let v = self.t.get(i + 1)?;
                let bytes = match v.kind {
                    Tok::Str => string_value(self.sql, v, self.d),
                    Tok::Hex => hex_value(self.sql, v)?,
                    _ => return None,
                };
                let charset = super::insert::introduced(&intro, v.kind == Tok::Hex);
                Some((Operand::Lit { bytes, charset }, i + 2))
            }
            _ => None,
        }
    }

    /// A comparison operator at `i`: (operator, index after it).
    fn comparison(&self, i: usize) -> Option<(&'static str, usize)> {
        let adj = |k: usize| matches!((self.t.get(k), self.t.get(k + 1)), (Some(a), Some(b)) if a.end == b.start);
        if self.punct(i, b'<') && self.punct(i + 1, b'=') && self.punct(i + 2, b'>') && adj(i) {
            return adj(i + 1).then_some(("=", i + 3));
        }
        if self.punct(i, b'>') && self.punct(i + 1, b'=') && adj(i) {
            return Some((">=", i + 2));
        }
        if self.punct(i, b'<') && self.punct(i + 1, b'=') && adj(i) {
            return Some(("<=", i + 2));
        }
        if (self.punct(i, b'<') && self.punct(i + 1, b'>'))
            || (self.punct(i, b'!') && self.punct(i + 1, b'='))
        {
            return None;
        }
        if self.punct(i, b'=') {
            return Some(("=", i + 1));
        }
        if self.punct(i, b'>') {
            return Some((">", i + 1));
        }
        if self.punct(i, b'<') {
            return Some(("<", i + 1));
        }
        None
    }

    /// `LEFT(K, m)` / `SUBSTRING(K, 1, m)` / `SUBSTR(K FROM 1 FOR m)` at `i`: (m, index after).
    fn k_prefix_fn(&self, i: usize) -> Option<(u64, usize)> {
        let number = |k: usize| -> Option<u64> {
            let t = self.t.get(k).filter(|t| t.kind == Tok::Number)?;
            std::str::from_utf8(t.text(self.sql)).ok()?.parse().ok()
        };
        if self.word(i, "LEFT") && self.punct(i + 1, b'(') {
            let k = self.k_ref(i + 2)?;
            if self.punct(k, b',') && self.punct(k + 2, b')') {
                return Some((number(k + 1)?, k + 3));
            }
            return None;
        }
        if (self.word(i, "SUBSTRING") || self.word(i, "SUBSTR") || self.word(i, "MID"))
            && self.punct(i + 1, b'(')
        {
            let k = self.k_ref(i + 2)?;
            // SUBSTRING(K, 1, m) or SUBSTRING(K FROM 1 FOR m)
            let separated = (self.punct(k, b',') && self.punct(k + 2, b','))
                || (self.word(k, "FROM") && self.word(k + 2, "FOR"));
            if separated && number(k + 1) == Some(1) && self.punct(k + 4, b')') {
                return Some((number(k + 3)?, k + 5));
            }
        }
        None
    }

    /// The K predicate that tokens `[a, b)` are, if they are exactly one.
    fn predicate(&self, a: usize, b: usize) -> Option<Pred> {
        let flip = |op: &str| {
            match op {
                ">" => "<",
                "<" => ">",
                ">=" => "<=",
                "<=" => ">=",
                o => o,
            }
            .to_string()
        };
        let build = |op: &str, v: Operand| -> Option<Pred> {
            Some(match op {
                "=" => Pred::Eq(v),
                ">=" => Pred::Lower {
                    bound: v,
                    inclusive: true,
                },
                ">" => Pred::Lower {
                    bound: v,
                    inclusive: false,
                },
                "<=" => Pred::Upper {
                    bound: v,
                    inclusive: true,
                },
                "<" => Pred::Upper {
                    bound: v,
                    inclusive: false,
                },
                _ => return None,
            })
        };
        // K op v
        if let Some(k) = self.k_ref(a) {
            if let Some((op, n)) = self.comparison(k) {
                let (v, e) = self.operand(n)?;
                return (e == b).then(|| build(op, v)).flatten();
            }
            if self.word(k, "BETWEEN") {
                let (lo, n) = self.operand(k + 1)?;
                if !self.word(n, "AND") {
                    return None;
                }
                let (hi, e) = self.operand(n + 1)?;
                if e != b {
                    return None;
                }
                return Some(Pred::Between(lo, hi));
            }
            if self.word(k, "IN") && self.punct(k + 1, b'(') {
                let mut vals = Vec::new();
                let mut n = k + 2;
                loop {
                    let (v, e) = self.operand(n)?;
                    vals.push(v);
                    if self.punct(e, b',') {
                        n = e + 1;
                    } else if self.punct(e, b')') && e + 1 == b {
                        return Some(Pred::In(vals));
                    } else {
                        return None;
                    }
                }
            }
            if self.word(k, "LIKE") {
                let (pattern, n) = self.operand(k + 1)?;
                if n == b {
                    return Some(Pred::Like {
                        pattern,
                        escape: Escape::Default,
                    });
                }
                if self.word(n, "ESCAPE") {
                    let escape = match self.operand(n + 1) {
                        Some((Operand::Lit { bytes, .. }, e)) if e == b => match bytes.as_slice() {
                            [] => Escape::Nothing,
                            [c] if c.is_ascii() => Escape::Byte(*c),
                            _ => Escape::Unknown,
                        },
                        _ => return None,
                    };
                    return Some(Pred::Like { pattern, escape });
                }
                return None;
            }
            return None;
        }
        // LEFT(K, m) = v
        if let Some((m, k)) = self.k_prefix_fn(a) {
            let (op, n) = self.comparison(k)?;
            let (v, e) = self.operand(n)?;
            return (op == "=" && e == b).then_some(Pred::Left { len: m, value: v });
        }
        // v op K, v = LEFT(K, m)
        let (v, n) = self.operand(a)?;
        let (op, k) = self.comparison(n)?;
        if let Some(e) = self.k_ref(k) {
            return (e == b).then(|| build(&flip(op), v)).flatten();
        }
        let (m, e) = self.k_prefix_fn(k)?;
        (op == "=" && e == b).then_some(Pred::Left { len: m, value: v })
    }
}

#[cfg(test)]
mod tests {
    /// A reading given back is kept emptied of its literals, only on a thread that keeps
    /// shapes and only while it holds no more than a statement usually does; a kept one is
    /// refilled into the frame's reading exactly.
    #[test]
    fn a_reading_given_back_is_kept_only_within_bounds() {
        use super::{give_back, read_lexed, Read, SPARE};
        let d = crate::sql::scan::Dialect::default();
        let read = move |sql: &str| match read_lexed(sql.as_bytes(), d, None) {
            Read::Dml(x) => x,
            other => panic!("{sql}: {other:?}"),
        };
        let kept = || SPARE.with(|s| s.take());
        std::thread::spawn(move || {
            // a thread that keeps no shapes (a blocking pool's) keeps none
            give_back(read("SELECT * FROM g$f WHERE K LIKE 'p%'"));
            assert!(kept().is_none());
            crate::sql::scan::keep_shapes_on_this_thread();
            give_back(read("SELECT * FROM g$f WHERE K LIKE 'p%'"));
            let spare = kept().expect("kept");
            assert!(spare.preds.is_empty());
            // refilled: the other reading, whole
            let mut spare = spare;
            let other = read("DELETE FROM db.h$g WHERE K = 'a' AND Q = 'b'");
            spare.refill_from(&other);
            assert_eq!(spare, other);
            // long names, many identifiers: not kept
            let long = format!("SELECT * FROM `{}$f` WHERE K = 1", "g".repeat(300));
            give_back(read(&long));
            assert!(kept().is_none());
            let idents: Vec<String> = (0..80).map(|i| format!("c{i} = 1")).collect();
            let many = format!("SELECT * FROM g$f WHERE {}", idents.join(" AND "));
            give_back(read(&many));
            assert!(kept().is_none());
        })
        .join()
        .expect("the test thread");
    }

    #[test]
    fn a_clause_word_is_one_of_the_list() {
        // every word of the list, in any case, and none else of the words read around them
        for w in super::CLAUSE_WORDS {
            assert!(super::clause_word(w.as_bytes()), "{w}");
            assert!(super::clause_word(w.to_ascii_lowercase().as_bytes()), "{w}");
        }
        for w in [
            "",
            "F",
            "FO",
            "FORM",
            "FROM",
            "SELECT",
            "LIKE",
            "AND",
            "K",
            "SETS",
            "LIMITS",
            "WHEREX",
            "PROCEDUR",
            "PARTITIONS",
            "INTERSEC",
            "OFFSETS",
            "UNIONS",
            "INTO_",
            "LOCKED",
            "G$F",
            "ORDER1",
            "FETCHED",
            "EXCEPTION",
            "RETURN",
            "WINDOWS",
            "HAVIN",
            "GROUPS",
        ] {
            let listed = super::CLAUSE_WORDS
                .iter()
                .any(|c| c.as_bytes().eq_ignore_ascii_case(w.as_bytes()));
            assert_eq!(super::clause_word(w.as_bytes()), listed, "{w}");
        }
        // every length and first letter the list has is matched
        for c in super::CLAUSE_WORDS {
            let mut other = c.as_bytes().to_vec();
            other[1] = b'#';
            assert!(!super::clause_word(&other), "{c}");
        }
    }

    use super::*;

    fn dml(sql: &str) -> Dml {
        match read(sql.as_bytes(), Dialect::default()) {
            Read::Dml(d) => *d,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn the_table_reference_its_alias_and_the_k_terms_are_located() {
        let sql = "SELECT * FROM db.g$f AS a WHERE a.K = 'x' AND T > 1 ORDER BY T";
        let d = dml(sql);
        assert_eq!(&sql[d.table_span.0..d.table_span.1], "db.g$f");
        assert_eq!(d.alias.map(|(a, b)| &sql[a..b]), Some("a"));
        let spans: Vec<&str> = d.pred_spans.iter().map(|&(a, b)| &sql[a..b]).collect();
        assert_eq!(spans, ["a.K = 'x'"]);
        assert!(!d.three_part_name);
        let sql = "SELECT K FROM `g$f` x WHERE (K LIKE 'ab%')";
        let d = dml(sql);
        assert_eq!(&sql[d.table_span.0..d.table_span.1], "`g$f`");
        assert_eq!(d.alias.map(|(a, b)| &sql[a..b]), Some("x"));
        assert_eq!(d.pred_spans.len(), 1);
        assert_eq!(dml("SELECT K FROM g$f").alias, None);
        assert!(dml("SELECT db.g$f.K FROM db.g$f").three_part_name);
        assert!(dml("SELECT K FROM g$f WHERE db . g$f . K = 1").three_part_name);
    }

    fn lit(s: &[u8]) -> Operand {
        Operand::Lit {
            bytes: s.to_vec(),
            charset: LitCharset::Connection,
        }
    }

    #[test]
    fn predicates_anded_at_the_top() {
        let d = dml("EXPLAIN PARTITIONS SELECT * FROM h$f WHERE K LIKE 'abcd%'");
        assert!(d.explain);
        assert_eq!(
            d.preds.to_vec(),
            vec![Pred::Like {
                pattern: lit(b"abcd%"),
                escape: Escape::Default
            }]
        );
        let d = dml("SELECT V FROM db.g$f AS x WHERE x.K >= 'a' AND (T > 5 AND 'b' > K) AND K BETWEEN 'a' AND 'c' AND K IN (X'00', _binary'b') ORDER BY K");
        assert_eq!(d.table.raw_schema.as_deref(), Some(&b"db"[..]));
        assert_eq!(d.preds.len(), 4, "{:?}", d.preds);
        assert!(matches!(
            d.preds[1],
            Pred::Upper {
                inclusive: false,
                ..
            }
        ));
        let d = dml("UPDATE g$f SET V = 'x' WHERE LEFT(K, 4) = 'abcd' AND SUBSTRING(K FROM 1 FOR 5) = ? LIMIT 3");
        assert_eq!(d.preds.len(), 2);
        assert!(matches!(
            &d.preds[1],
            Pred::Left {
                len: 5,
                value: Operand::Param(0)
            }
        ));
        // placeholder ordinals count every `?`, those after the WHERE clause too
        let d = dml("SELECT ? FROM g$f WHERE T > ? AND K LIKE ? AND K < ? ORDER BY K LIMIT ?");
        assert_eq!(d.params_before_where_end, 4);
        assert_eq!(
            d.preds.to_vec(),
            vec![
                Pred::Like {
                    pattern: Operand::Param(2),
                    escape: Escape::Default
                },
                Pred::Upper {
                    bound: Operand::Param(3),
                    inclusive: false
                }
            ]
        );
        // OR at the top: no predicate
        assert!(dml("DELETE FROM g$f WHERE K = 'a' OR K = 'b'")
            .preds
            .is_empty());
        assert!(dml("SELECT * FROM g$f WHERE NOT K = 'a'").preds.is_empty());
        assert!(dml("SELECT * FROM g$f WHERE K = V").preds.is_empty());
        assert!(dml("SELECT * FROM g$f WHERE K = 'a' COLLATE binary")
            .preds
            .is_empty());
        // an AND inside CASE … END is the CASE's: no term of such a clause is read
        for sql in [
            "DELETE FROM g$f WHERE T = 1 AND CASE WHEN 0 AND K = 'a' AND 1 THEN 1 ELSE 1 END",
            "SELECT K FROM g$f WHERE CASE WHEN Q = 'z' AND K LIKE 'abc%' AND T < 0 THEN 0 ELSE 1 END",
            "SELECT K FROM g$f WHERE (CASE WHEN K = 'a' AND 1 THEN 1 END)",
        ] {
            assert!(dml(sql).preds.is_empty(), "{sql}");
        }
        // one inside parentheses is a term of its own: the others are read
        let d = dml("SELECT K FROM g$f WHERE K LIKE 'a%' AND (CASE WHEN x AND y THEN 1 END)");
        assert_eq!(d.preds.len(), 1);
        // the FOR of a sequence's NEXT VALUE FOR does not end the clause
        let sql = "SELECT K FROM g$f WHERE K LIKE 'abc%' AND T < NEXT VALUE FOR s1";
        let d = dml(sql);
        assert_eq!(d.where_end, Some(sql.len()));
        assert!(!d.locking);
        let sql = "SELECT K FROM g$f WHERE T < PREVIOUS VALUE FOR s1 FOR UPDATE";
        let d = dml(sql);
        assert_eq!(d.where_end, sql.find(" FOR UPDATE"));
        assert!(d.locking);
    }

    #[test]
    fn shapes_not_followed() {
        for sql in [
            "SELECT * FROM g$f JOIN t ON 1 WHERE K = 'a'",
            "SELECT * FROM g$f, t WHERE K = 'a'",
            "SELECT * FROM g$f WHERE K IN (SELECT K FROM t)",
            "SELECT * FROM g$f UNION SELECT * FROM g$f",
            "DELETE a FROM g$f a WHERE K = 'a'",
            "SELECT * FROM g$f PARTITION (p0) WHERE K = 'a'",
            "SELECT /*!99999 1, */ K FROM g$f WHERE K = 'a'",
        ] {
            assert!(
                matches!(
                    read(sql.as_bytes(), Dialect::default()),
                    Read::Unreadable(_)
                ),
                "{sql}"
            );
        }
        assert_eq!(read(b"SELECT 1", Dialect::default()), Read::NotDml);
        assert_eq!(
            read(b"INSERT INTO g$f VALUES (1)", Dialect::default()),
            Read::NotDml
        );
    }
}
