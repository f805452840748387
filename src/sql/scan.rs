//! Reading SQL text as the backend reads it: a lexer over bytes that allocates nothing, with
//! byte spans, and the statement splitter built on it.
//!
//! What makes two readers of the same bytes disagree, and how this one follows the backend:
//! - executable comments: `/*! … */` and `/*!NNNNN … */` are code when the backend's version is
//!   at least NNNNN; `/*M! … */` and `/*M!NNNNNN … */` likewise, on MariaDB only (elsewhere they
//!   are plain comments). The backend's flavour and version come from its greeting (`Dialect`).
//! - backslash escapes in strings, off under NO_BACKSLASH_ESCAPES (the backend reports it in
//!   every OK/EOF status, and the session keeps it current).
//! - `"…"`: a string, or an identifier under ANSI_QUOTES, where a backslash escapes nothing.
//!   The proxy does not track sql_mode, so a `"…"` holding a backslash is *ambiguous*.
//! - 0x5C (`\`) or 0x60 (`` ` ``) as the second byte of a multibyte character (gbk, big5, sjis,
//!   cp932): a byte of 0x80 or more before a backslash inside a literal, or before a backquote
//!   (or other ASCII punctuation) in or after a name, is *ambiguous* too.
//!
//! The scanner reports such ambiguity instead of guessing; callers read the text again under
//! the other readings (`Dialect::readings`) and act only where every reading agrees.

use std::borrow::Cow;

/// Which server family reads the text: they differ on executable comments (measured on
/// MariaDB 10.11 and OceanBase 4.3.5, see `Scanner::executable_comment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    MySql,
    MariaDb,
    OceanBase,
    /// MySQL or OceanBase: OceanBase's greeting says only "5.7.25". Read as MySQL, and
    /// `Dialect::readings` adds the OceanBase reading.
    MySqlOrOceanBase,
}

/// How the backend reads SQL text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    pub flavor: Flavor,
    /// The server version as MMmmpp (MariaDB 10.11.19 = 101119, OceanBase's 5.7.25 = 50725).
    pub version: u32,
    pub no_backslash_escapes: bool,
    /// `"…"` is an identifier (sql_mode ANSI_QUOTES).
    pub ansi_quotes: bool,
    /// A byte of 0x80 or more and the byte after it are one character (gbk, big5, sjis,
    /// cp932): a backslash in a literal, or a backquote in or after a name, is then no escape,
    /// quote or delimiter of its own.
    pub multibyte_backslash: bool,
    /// Executable comments are plain comments: OceanBase's reading of a text whose code
    /// reading does not parse (measured on seekdb 1.4: `SELECT 1 /*!999999 +1 */` is 1,
    /// `SELECT /*!999999 - */ -5` is 14).
    pub plain_comments: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect {
            flavor: Flavor::MySqlOrOceanBase,
            version: 50725,
            no_backslash_escapes: false,
            ansi_quotes: false,
            multibyte_backslash: false,
            plain_comments: false,
        }
    }
}

impl Dialect {
    /// From the backend's greeting version string (`5.5.5-10.11.19-MariaDB…`, `5.7.25`, `8.0.36`).
    pub fn from_server_version(v: &[u8]) -> Dialect {
        let text = String::from_utf8_lossy(v);
        let lower = text.to_ascii_lowercase();
        let flavor = if lower.contains("mariadb") {
            Flavor::MariaDb
        } else if lower.contains("oceanbase") {
            Flavor::OceanBase
        } else {
            Flavor::MySqlOrOceanBase
        };
        // MariaDB prefixes 5.5.5- for old clients; its real version follows
        let body = text.strip_prefix("5.5.5-").unwrap_or(&text);
        let mut parts = body
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let (a, b, c) = (
            parts.next().unwrap_or(5),
            parts.next().unwrap_or(7),
            parts.next().unwrap_or(0),
        );
        Dialect {
            flavor,
            version: a.min(99) * 10_000 + b.min(99) * 100 + c.min(99),
            ..Dialect::default()
        }
    }

    /// Whether a backslash escapes in string literals (and is LIKE's default escape), as far
    /// as the backend reports it: MySQL and MariaDB report NO_BACKSLASH_ESCAPES in every status;
    /// OceanBase does not (measured on seekdb 1.4), so there it is not known (None).
    pub fn reported_backslash_escape(self) -> Option<bool> {
        matches!(self.flavor, Flavor::MySql | Flavor::MariaDb).then_some(!self.no_backslash_escapes)
    }

    /// Every reading of a text to consider: this one first, then those that differ in what
    /// the proxy does not know (the server family, ANSI_QUOTES, a multibyte character set).
    pub fn readings(self, ambiguity: Ambiguity) -> Vec<Dialect> {
        let mut out = vec![self];
        if self.flavor == Flavor::MySqlOrOceanBase {
            out.push(Dialect {
                flavor: Flavor::OceanBase,
                ..self
            });
        }
        if ambiguity.state {
            for i in 0..out.len() {
                out.push(Dialect {
                    no_backslash_escapes: !out[i].no_backslash_escapes,
                    ..out[i]
                });
            }
        }
        if ambiguity.quotes || ambiguity.state {
            for i in 0..out.len() {
                out.push(Dialect {
                    ansi_quotes: !out[i].ansi_quotes,
                    ..out[i]
                });
            }
        }
        if ambiguity.multibyte || ambiguity.state {
            for i in 0..out.len() {
                out.push(Dialect {
                    multibyte_backslash: !out[i].multibyte_backslash,
                    ..out[i]
                });
            }
        }
        // OceanBase runs an executable comment's code, or reads it as a comment when the text
        // does not parse so: which one, only a parser as complete as the backend's could tell
        if ambiguity.comment {
            for i in 0..out.len() {
                if out[i].flavor == Flavor::OceanBase && !out[i].plain_comments {
                    out.push(Dialect {
                        plain_comments: true,
                        ..out[i]
                    });
                }
            }
        }
        out
    }

    /// Whether the backend may be OceanBase, whose executable comments read two ways.
    pub fn may_be_oceanbase(self) -> bool {
        matches!(self.flavor, Flavor::OceanBase | Flavor::MySqlOrOceanBase)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    /// Unquoted word: keyword or identifier (letters, digits, `_`, `$`, bytes >= 0x80).
    Word,
    /// Backquoted identifier, or `"…"` under ANSI_QUOTES.
    QuotedIdent,
    /// '…' or "…" string literal (quotes included in the span).
    Str,
    /// X'…', 0x… literal.
    Hex,
    Number,
    /// `@name`, `@'name'`, `@"name"`, `` @`name` ``, and `@@…` system variables.
    Var,
    Punct(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
    /// A string literal whose body is its value: ASCII, with neither a backslash nor its
    /// quote doubled (found as it was lexed; `string_value_cow` then looks no further).
    pub plain: bool,
}

/// Token `i` of `t` is the word `w` (ASCII case-insensitive); false past the end.
#[inline]
pub fn word_at(sql: &[u8], t: &[Token], i: usize, w: &str) -> bool {
    t.get(i).is_some_and(|t| t.is_word(sql, w))
}

/// Token `i` of `t` is the punctuation `c`; false past the end.
#[inline]
pub fn punct_at(t: &[Token], i: usize, c: u8) -> bool {
    t.get(i).is_some_and(|t| t.is_punct(c))
}

impl Token {
    /// This token with its offsets counted from `start` (a statement's, in its text).
    fn relative_to(&self, start: usize) -> Token {
        Token {
            start: self.start.saturating_sub(start),
            end: self.end.saturating_sub(start),
            ..*self
        }
    }

    #[inline]
    pub fn text<'a>(&self, sql: &'a [u8]) -> &'a [u8] {
        sql.get(self.start..self.end).unwrap_or_default()
    }

    #[inline]
    pub fn is_word(&self, sql: &[u8], w: &str) -> bool {
        // (length first: most words are not `w`)
        matches!(self.kind, Tok::Word)
            && self.end.wrapping_sub(self.start) == w.len()
            && self.text(sql).eq_ignore_ascii_case(w.as_bytes())
    }

    #[inline]
    pub fn is_punct(&self, c: u8) -> bool {
        matches!(self.kind, Tok::Punct(p) if p == c)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} at byte {1}")]
pub struct LexError(pub &'static str, pub usize);

/// Readings of the text that depend on what the proxy does not know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ambiguity {
    /// A `"…"` token: a string, or a name under ANSI_QUOTES (which the backend does not
    /// report); with a backslash inside, its extent differs too.
    pub quotes: bool,
    /// A backslash follows a byte >= 0x80 inside a literal, or ASCII punctuation (a backquote)
    /// follows one in or after a name: read otherwise under gbk, big5 or sjis.
    pub multibyte: bool,
    /// A statement of the text changes how the backend reads the statements after it
    /// (`SET sql_mode`, `SET NAMES`, a connection character set): they are read under every
    /// state (backslash escapes, ANSI_QUOTES, a multibyte character set).
    pub state: bool,
    /// An executable comment (`/*!…`): OceanBase reads it as code or, where the text does not
    /// parse so, as a comment (`Dialect::plain_comments`).
    pub comment: bool,
}

impl Ambiguity {
    /// What either found ambiguous.
    pub fn union(self, o: Ambiguity) -> Ambiguity {
        Ambiguity {
            quotes: self.quotes || o.quotes,
            multibyte: self.multibyte || o.multibyte,
            state: self.state || o.state,
            comment: self.comment || o.comment,
        }
    }
}

/// The bytes of an unquoted word: letters, digits, `_`, `$` and every byte of 0x80 or more
/// (one lookup per byte on the hot path of every flagged statement).
const WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        c += 1;
    }
    t
};

/// What a byte is to `Scanner::skip_noise`: 1 white space (vertical tab too: white space to
/// MariaDB, a syntax error to OceanBase), 2 a byte that may open a comment or end an executable
/// one (`#`, `-`, `/`, `*`), 0 anything else.
const NOISE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = if b.is_ascii_whitespace() || b == 0x0B {
            1
        } else if matches!(b, b'#' | b'-' | b'/' | b'*') {
            2
        } else {
            0
        };
        c += 1;
    }
    t
};

/// What a token's first byte says at once (`Scanner::next_token`): `LEAD_WORD` an unquoted
/// word (letters but X, `_`, `$`, bytes of 0x80 or more), `LEAD_PUNCT` punctuation that opens
/// nothing longer (not a quote, `@`, `.` or a digit), `LEAD_QUOTE` `'`, `LEAD_DIGIT` a digit,
/// `LEAD_OTHER` the rest, read in full.
const LEAD: [u8; 256] = {
    let mut t = [LEAD_OTHER; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = if b.is_ascii_digit() {
            LEAD_DIGIT
        } else if b == b'x' || b == b'X' {
            LEAD_OTHER
        } else if b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80 {
            LEAD_WORD
        } else if b == b'\'' {
            LEAD_QUOTE
        } else if matches!(b, b'"' | b'`' | b'@' | b'.') {
            LEAD_OTHER
        } else {
            LEAD_PUNCT
        };
        c += 1;
    }
    t
};
const LEAD_OTHER: u8 = 0;
const LEAD_WORD: u8 = 1;
const LEAD_PUNCT: u8 = 2;
/// `'`: a string literal, the usual value.
const LEAD_QUOTE: u8 = 3;
/// A digit: a plain integer (`Scanner::common_token`), else read in full.
const LEAD_DIGIT: u8 = 4;

/// Bytes of a quoted literal looked at a word at a time before a search (`Scanner::quoted`,
/// `string_value_cow`): most literals are short, and a search costs more to set up than they
/// take.
const SHORT_RUN: usize = 64;

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The bytes of `x` that are zero, marked by their high bit; the lowest mark is exact (the
/// borrow of `x - 0x01…01` can only mark bytes above the first zero byte). A byte of
/// `w ^ a…a` is zero where `w` has `a`.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// The offset of the first byte of `hay` that `mark` marks (on a little-endian word: the high
/// bit of each marked byte, the lowest mark exact) or, in a tail shorter than a word, that
/// `stop` takes: eight bytes a step, then byte by byte. What `find_stop`, `find_any3` and
/// `digit_run` share.
#[inline(always)]
fn first_marked(hay: &[u8], mark: impl Fn(u64) -> u64, stop: impl Fn(u8) -> bool) -> Option<usize> {
    let mut words = hay.chunks_exact(8);
    let mut k = 0;
    for chunk in words.by_ref() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let m = mark(u64::from_le_bytes(bytes));
        if m != 0 {
            return Some(k + (m.trailing_zeros() / 8) as usize);
        }
        k += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| stop(c))
        .map(|p| k + p)
}

/// The offset of the first byte of `hay` that is `a` or `b` or, when `high`, at least 0x80;
/// None when there is none (a word at a time: `first_marked`).
#[inline]
pub fn find_stop(hay: &[u8], a: u8, b: u8, high: bool) -> Option<usize> {
    let (fa, fb) = (LO * u64::from(a), LO * u64::from(b));
    first_marked(
        hay,
        |w| {
            let m = zero_bytes(w ^ fa) | zero_bytes(w ^ fb);
            if high {
                m | (w & HI)
            } else {
                m
            }
        },
        |c| c == a || c == b || (high && c >= 0x80),
    )
}

/// The offset of the first byte of `hay` that is `a`, `b` or `c` (`find_stop` for three
/// bytes: a LIKE pattern's wildcards and its escape character).
#[inline]
pub fn find_any3(hay: &[u8], a: u8, b: u8, c: u8) -> Option<usize> {
    let (fa, fb, fc) = (LO * u64::from(a), LO * u64::from(b), LO * u64::from(c));
    first_marked(
        hay,
        |w| zero_bytes(w ^ fa) | zero_bytes(w ^ fb) | zero_bytes(w ^ fc),
        |x| x == a || x == b || x == c,
    )
}

/// A byte that can begin a two-byte character in gbk, big5 or sjis/cp932 (their lead ranges
/// together: 0x81-0xFE).
#[inline]
fn mb_lead(c: u8) -> bool {
    (0x81..=0xFE).contains(&c)
}

/// A byte that can be the second of a two-byte character in gbk, big5 or sjis/cp932 (their
/// trail ranges together: 0x40-0x7E and 0x80-0xFE).
#[inline]
fn mb_trail(c: u8) -> bool {
    (0x40..=0x7E).contains(&c) || (0x80..=0xFE).contains(&c)
}

pub struct Scanner<'a> {
    sql: &'a [u8],
    pos: usize,
    d: Dialect,
    /// Inside an executable comment whose content is code: its `*/` is skipped.
    in_code_comment: bool,
    pub ambiguity: Ambiguity,
    failed: bool,
}

/// What a `/*` opens, to the backend.
enum Comment {
    /// An executable comment it runs: its code starts here.
    Code(usize),
    /// A version comment it does not run (one nested comment allowed inside).
    SkippedVersion,
    /// A comment.
    Plain,
}

/// Where a version comment the backend does not run ends, its body starting at `body`: as
/// MariaDB's and MySQL's `consume_comment(lip, 1)` reads it, a `/*` inside opens a comment
/// that ends at the first `*/` after it, and the version comment ends at the next `*/` (the
/// text's end when there is none). One pass, no recursion.
fn skipped_version_end(sql: &[u8], body: usize) -> usize {
    let mut j = body;
    while let Some(&c) = sql.get(j) {
        j += 1;
        if c == b'/' && sql.get(j) == Some(&b'*') {
            // the nested comment: to the first `*/` after its `/*`
            j += 1;
            j = memchr::memmem::find(sql.get(j..).unwrap_or_default(), b"*/")
                .map_or(sql.len(), |k| j + k + 2);
            continue;
        }
        if c == b'*' && sql.get(j) == Some(&b'/') {
            return j + 1;
        }
    }
    sql.len()
}

impl<'a> Scanner<'a> {
    pub fn new(sql: &'a [u8], d: Dialect) -> Self {
        Scanner {
            sql,
            pos: 0,
            d,
            in_code_comment: false,
            ambiguity: Ambiguity::default(),
            failed: false,
        }
    }

    fn at(&self, i: usize) -> Option<u8> {
        self.sql.get(i).copied()
    }

    /// Skips white space and comments; enters executable comments the backend runs.
    #[inline]
    fn skip_noise(&mut self) {
        // the common case: at most white space before a byte that opens nothing (one lookup a
        // byte)
        loop {
            match self.at(self.pos) {
                Some(c) if NOISE[usize::from(c)] == 1 => self.pos += 1,
                Some(c) if NOISE[usize::from(c)] == 2 => {
                    // a `-`, `/` or `*` that opens nothing (a minus sign, a division) is the
                    // token: no call to the comment reader
                    let next = self.at(self.pos + 1);
                    let opens = match c {
                        b'-' => next == Some(b'-'),
                        b'/' => next == Some(b'*'),
                        b'*' => self.in_code_comment && next == Some(b'/'),
                        _ => true,
                    };
                    if !opens {
                        return;
                    }
                    break;
                }
                _ => return,
            }
        }
        self.skip_comments();
    }

    /// `skip_noise` from a byte that may open a comment (or end an executable one).
    #[inline(never)]
    fn skip_comments(&mut self) {
        loop {
            let Some(c) = self.at(self.pos) else { return };
            // (vertical tab too: white space to MariaDB, a syntax error to OceanBase)
            if c.is_ascii_whitespace() || c == 0x0B {
                self.pos += 1;
                continue;
            }
            if c == b'#'
                || (c == b'-'
                    && self.at(self.pos + 1) == Some(b'-')
                    && self
                        .at(self.pos + 2)
                        .is_none_or(|c| self.opens_dash_comment(c)))
            {
                // the line ends at LF; on OceanBase at CR too (measured: `SELECT 1 # x\r+7`
                // is 8 on seekdb, 1 on MariaDB)
                let rest = &self.sql[self.pos..];
                let end = if self.d.flavor == Flavor::OceanBase {
                    memchr::memchr2(b'\n', b'\r', rest)
                } else {
                    memchr::memchr(b'\n', rest)
                };
                self.pos = end.map_or(self.sql.len(), |j| self.pos + j + 1);
                continue;
            }
            if c == b'*' && self.in_code_comment && self.at(self.pos + 1) == Some(b'/') {
                self.in_code_comment = false;
                self.pos += 2;
                continue;
            }
            if c == b'/' && self.at(self.pos + 1) == Some(b'*') {
                let body = self.pos + 2;
                let mut nested = false;
                // inside code, MariaDB reads a `/*!` as a version comment too (measured: in
                // `/*! -5 /*!100000 +10 */ …` the +10 runs, and that `*/` ends the code; one it
                // skips leaves the code going on); elsewhere it is a comment there
                if !self.in_code_comment || self.d.flavor == Flavor::MariaDb {
                    match self.executable_comment(body) {
                        Comment::Code(code_at) => {
                            self.in_code_comment = true;
                            self.pos = code_at;
                            continue;
                        }
                        Comment::SkippedVersion => nested = true,
                        Comment::Plain => {}
                    }
                }
                self.pos = if nested {
                    skipped_version_end(self.sql, body)
                } else {
                    memchr::memmem::find(self.sql.get(body..).unwrap_or_default(), b"*/")
                        .map_or(self.sql.len(), |j| body + j + 2)
                };
                continue;
            }
            return;
        }
    }

    /// Whether `--` followed by `c` opens a comment, measured byte by byte on the servers:
    /// MariaDB (and MySQL) take a space or any control character but NUL, DEL (0x7F) included
    /// (`SELECT 1 --\x7F '` … is a comment there, a string to a reader that takes only
    /// spaces); OceanBase takes only a space, tab, LF or CR (`--\x0B` is a syntax error).
    fn opens_dash_comment(&self, c: u8) -> bool {
        match self.d.flavor {
            Flavor::OceanBase => matches!(c, b' ' | b'\t' | b'\n' | b'\r'),
            _ => (1..=b' ').contains(&c) || c == 0x7F,
        }
    }

    /// For a comment whose body starts at `body` (after `/*`): where its code starts, if the
    /// backend runs it. The rules, measured on the servers themselves:
    /// - MySQL: `/*!` runs; five (or six) digits after it are a version, run when not above the
    ///   server's.
    /// - MariaDB 10.11: six digits are a version compared with the server's (101119); five
    ///   digits run only below 50700 (MariaDB leaves MySQL 5.7+ comments alone); fewer digits
    ///   are code. `/*M!` likewise, with five digits compared with the server's version.
    /// - OceanBase 4.3 (seekdb 1.4): `/*!` always runs: five or more digits after it are a
    ///   version whatever it says and only the first five are (`/*!999999 - */ -5` runs
    ///   `9 - -5`); fewer than five are code (`/*!123 */` is 123). Where the text does not parse
    ///   so, it is read again with every executable comment a plain comment
    ///   (`Dialect::plain_comments`). `/*M!` is a comment.
    ///
    /// A version comment MariaDB or MySQL does not run is skipped with one level of `/* … */`
    /// allowed inside it (their `consume_comment(lip, 1)`): it ends at the `*/` after such a
    /// nested comment, not at the nested comment's own (`Comment::SkippedVersion`).
    fn executable_comment(&mut self, body: usize) -> Comment {
        let (start, maria_only) = match (self.at(body), self.at(body + 1)) {
            (Some(b'!'), _) => (body + 1, false),
            (Some(b'M'), Some(b'!')) => (body + 2, true),
            _ => return Comment::Plain,
        };
        if !maria_only {
            self.ambiguity.comment = true;
        }
        if self.d.plain_comments {
            return Comment::Plain;
        }
        let flavor = match self.d.flavor {
            Flavor::MySqlOrOceanBase => Flavor::MySql,
            f => f,
        };
        if maria_only && flavor != Flavor::MariaDb {
            return Comment::Plain;
        }
        let digits = self.sql[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let version = |n: usize| -> u32 {
            std::str::from_utf8(&self.sql[start..start + n])
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(u32::MAX)
        };
        let server = self.d.version;
        let run = |runs: bool, at: usize| {
            if runs {
                Comment::Code(at)
            } else {
                Comment::SkippedVersion
            }
        };
        match flavor {
            Flavor::OceanBase => match digits {
                0..=4 => Comment::Code(start),
                _ => Comment::Code(start + 5),
            },
            // MariaDB's own test, for five digits and six alike: MySQL 5.7 and later
            // (50700 to 99999, `/*!050700` included) are left alone
            Flavor::MariaDb => match digits {
                0..=4 => Comment::Code(start),
                5 | 6 => {
                    let v = version(digits);
                    run(
                        v <= server && (maria_only || !(50700..=99999).contains(&v)),
                        start + digits,
                    )
                }
                _ => {
                    let v = version(6);
                    run(
                        v <= server && (maria_only || !(50700..=99999).contains(&v)),
                        start + 6,
                    )
                }
            },
            _ => match digits {
                0..=4 => Comment::Code(start),
                5 => run(version(5) <= server, start + 5),
                _ => run(version(6) <= server, start + 6),
            },
        }
    }

    /// A quoted run from `i` (at the quote); returns the end offset (after the closing quote).
    fn quoted(&mut self, i: usize, q: u8, escapes: bool) -> Result<usize, LexError> {
        self.quoted_plain(i, q, escapes).map(|(end, _)| end)
    }

    /// `quoted`, and whether the body is plain: ASCII with neither a backslash nor the quote
    /// doubled (its first run reached the closing quote), so its value is its bytes.
    fn quoted_plain(&mut self, i: usize, q: u8, escapes: bool) -> Result<(usize, bool), LexError> {
        let mut j = i + 1;
        let mut prev_high = false;
        let mut first = true;
        loop {
            let plain = std::mem::replace(&mut first, false);
            if !prev_high {
                // a run of ASCII bytes that are neither the quote nor a backslash means nothing
                // to any reading below: skipped whole (most literals are one such run). The
                // first `SHORT_RUN` bytes are looked at a word at a time (most literals are
                // short, and a search costs more to set up than they take); a longer run is
                // searched for.
                let rest = self.sql.get(j..).unwrap_or_default();
                let head = rest.get(..SHORT_RUN).unwrap_or(rest);
                j += match find_stop(head, q, b'\\', true) {
                    Some(k) => k,
                    None if head.len() == rest.len() => rest.len(),
                    None => {
                        let run = memchr::memchr2(q, b'\\', rest).unwrap_or(rest.len());
                        let plain = rest.get(..run).unwrap_or_default();
                        if plain.is_ascii() {
                            run
                        } else {
                            plain.iter().position(|&b| b >= 0x80).unwrap_or(run)
                        }
                    }
                };
            }
            let c = self.at(j).ok_or(LexError("unterminated quoted text", i))?;
            if c == b'\\' && escapes {
                if prev_high {
                    self.ambiguity.multibyte = true;
                    if self.d.multibyte_backslash {
                        // the backslash is the second byte of a character
                        prev_high = false;
                        j += 1;
                        continue;
                    }
                }
                if q == b'"' {
                    self.ambiguity.quotes = true;
                }
                if self.at(j + 1).is_none() {
                    return Err(LexError("unterminated quoted text", i));
                }
                j += 2;
                prev_high = false;
                continue;
            }
            if c == b'\\' && q == b'"' {
                self.ambiguity.quotes = true;
            }
            if c == b'`' && q == b'`' && prev_high {
                // under gbk, big5 or sjis a byte >= 0x80 and a backquote may be one character
                // of the name: the name goes on in that reading
                self.ambiguity.multibyte = true;
                if self.d.multibyte_backslash {
                    prev_high = false;
                    j += 1;
                    continue;
                }
            }
            if c == q {
                if self.at(j + 1) == Some(q) {
                    j += 2;
                    prev_high = false;
                    continue;
                }
                return Ok((j + 1, plain));
            }
            prev_high = !(prev_high && mb_trail(c)) && mb_lead(c);
            j += 1;
        }
    }

    fn word_end(&mut self, j: usize) -> usize {
        self.run_end(j, |c| WORD_BYTE[usize::from(c)])
    }

    /// The end of a run of bytes from `j` that `part` accepts (a word, a variable's name).
    /// Under gbk, big5 or sjis a byte of 0x80 or more and the byte after it may be one
    /// character: when that byte is ASCII punctuation (`` ` ``, `@`, `[`, `\`, …) the run goes
    /// on in that reading and ends in the other (`SELECT \x81`` ; UPDATE …` hides a statement
    /// in one of them), so the text is *ambiguous* (`Ambiguity::multibyte`).
    fn run_end(&mut self, j: usize, part: impl Fn(u8) -> bool) -> usize {
        let sql = self.sql;
        let rest = sql.get(j..).unwrap_or_default();
        let end = j + rest.iter().position(|&c| !part(c)).unwrap_or(rest.len());
        // the common case: not ended by punctuation right after a byte >= 0x80
        let before_high = end > j && sql.get(end - 1).is_some_and(|&c| mb_lead(c));
        if !before_high || !sql.get(end).is_some_and(|&c| mb_trail(c) && !part(c)) {
            return end;
        }
        // walk it character by character, as those character sets do
        let mut k = j;
        loop {
            let Some(&c) = sql.get(k) else { return k };
            match sql.get(k + 1) {
                Some(&n) if mb_lead(c) && mb_trail(n) => {
                    if !part(n) {
                        self.ambiguity.multibyte = true;
                        if !self.d.multibyte_backslash {
                            return k + 1;
                        }
                    }
                    k += 2;
                }
                _ if part(c) => k += 1,
                _ => return k,
            }
        }
    }

    /// The common tokens, looked for before the full match: a word (not X'…', 0x…),
    /// punctuation that opens nothing, a `'…'` string and a plain integer (digits that neither
    /// a `.` nor a word byte follows: the full match reads those, `1.5`, `1e3`, `0x1F`, `12ab`),
    /// at `i` (its byte `c`, after the noise). None: another token. (`pos` is left for the
    /// caller to move.)
    #[inline(always)]
    fn common_token(&mut self, i: usize, c: u8) -> Option<Result<Token, LexError>> {
        let tok = |kind, end, plain| Token {
            kind,
            start: i,
            end,
            plain,
        };
        Some(match LEAD[usize::from(c)] {
            LEAD_WORD => Ok(tok(Tok::Word, self.word_end(i), false)),
            LEAD_PUNCT => Ok(tok(Tok::Punct(c), i + 1, false)),
            LEAD_QUOTE => self
                .quoted_plain(i, b'\'', !self.d.no_backslash_escapes)
                .map(|(end, plain)| tok(Tok::Str, end, plain)),
            LEAD_DIGIT => {
                let rest = self.sql.get(i..).unwrap_or_default();
                let digits = rest
                    .iter()
                    .position(|c| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                match rest.get(digits) {
                    Some(&b) if b == b'.' || WORD_BYTE[usize::from(b)] => return None,
                    _ => Ok(tok(Tok::Number, i + digits, false)),
                }
            }
            _ => return None,
        })
    }

    /// A token that begins with a digit at `i`, read in full: a number (`12`, `1.5`, `1e3`,
    /// `1.`), `0x1F` (hex), or a word (`12abc`, `0x1g`).
    fn number(&mut self, i: usize) -> Token {
        let tok = |kind, end| Token {
            kind,
            start: i,
            end,
            plain: false,
        };
        if self.at(i) == Some(b'0')
            && self.at(i + 1) == Some(b'x')
            && self.at(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
        {
            let mut j = i + 2;
            while self.at(j).is_some_and(|c| c.is_ascii_hexdigit()) {
                j += 1;
            }
            // 0x1g is an identifier in MySQL
            return if self.word_end(j) > j {
                tok(Tok::Word, self.word_end(j))
            } else {
                tok(Tok::Hex, j)
            };
        }
        let rest = self.sql.get(i..).unwrap_or_default();
        let mut j = i + rest
            .iter()
            .position(|&c| !(c.is_ascii_digit() || c == b'.'))
            .unwrap_or(rest.len());
        if matches!(self.at(j), Some(b'e' | b'E'))
            && self
                .at(j + 1)
                .is_some_and(|c| c.is_ascii_digit() || c == b'+' || c == b'-')
        {
            j += 2;
            while self.at(j).is_some_and(|c| c.is_ascii_digit()) {
                j += 1;
            }
        }
        // 12abc is an identifier in MySQL (looked for only when a word byte follows)
        if self.at(j).is_some_and(|c| WORD_BYTE[usize::from(c)]) {
            tok(Tok::Word, self.word_end(j))
        } else {
            tok(Tok::Number, j)
        }
    }

    fn next_token(&mut self) -> Result<Option<Token>, LexError> {
        self.skip_noise();
        let i = self.pos;
        let Some(c) = self.at(i) else {
            return Ok(None);
        };
        let tok = |kind, end| Token {
            kind,
            start: i,
            end,
            plain: false,
        };
        if let Some(t) = self.common_token(i, c) {
            let t = t?;
            self.pos = t.end;
            return Ok(Some(t));
        }
        let escapes = !self.d.no_backslash_escapes;
        let t = match c {
            b'x' | b'X' if self.at(i + 1) == Some(b'\'') => {
                let end = memchr::memchr(b'\'', &self.sql[i + 2..])
                    .map(|j| i + 2 + j + 1)
                    .ok_or(LexError("unterminated hex literal", i))?;
                tok(Tok::Hex, end)
            }
            b'0'..=b'9' => self.number(i),
            b'.' if self.at(i + 1).is_some_and(|c| c.is_ascii_digit()) => {
                let mut j = i + 1;
                while self.at(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                tok(Tok::Number, j)
            }
            // a string, or under ANSI_QUOTES (a session setting the backend does not report)
            // a name: `INSERT INTO "g$f"` names a table only then
            b'"' if self.d.ansi_quotes => {
                self.ambiguity.quotes = true;
                tok(Tok::QuotedIdent, self.quoted(i, b'"', false)?)
            }
            b'"' => {
                self.ambiguity.quotes = true;
                let (end, plain) = self.quoted_plain(i, b'"', escapes)?;
                Token {
                    plain,
                    ..tok(Tok::Str, end)
                }
            }
            b'`' => tok(Tok::QuotedIdent, self.quoted(i, b'`', false)?),
            b'@' => {
                let mut j = i + 1;
                if self.at(j) == Some(b'@') {
                    j += 1;
                }
                let end = match self.at(j) {
                    Some(q @ (b'\'' | b'"')) => self.quoted(j, q, escapes)?,
                    Some(b'`') => self.quoted(j, b'`', false)?,
                    _ => self.run_end(j, |c| {
                        c.is_ascii_alphanumeric() || b"_$.".contains(&c) || c >= 0x80
                    }),
                };
                tok(Tok::Var, end)
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 => {
                tok(Tok::Word, self.word_end(i))
            }
            _ => tok(Tok::Punct(c), i + 1),
        };
        self.pos = t.end;
        Ok(Some(t))
    }
}

impl Scanner<'_> {
    /// The rest of the text's tokens, into `kept`: what iterating gives, the common tokens
    /// taken in this loop without the iterator's wrapping of each (`split`'s settled loop: a
    /// VALUES list is most of an INSERT's tokens).
    fn keep_rest(&mut self, kept: &mut Kept) -> Result<(), LexError> {
        if self.failed {
            return Ok(());
        }
        loop {
            self.skip_noise();
            let i = self.pos;
            let Some(c) = self.at(i) else {
                return Ok(());
            };
            let t = match self.common_token(i, c) {
                Some(t) => t.map(Some),
                None => self.next_token(),
            };
            match t {
                Ok(Some(t)) => {
                    self.pos = t.end;
                    kept.push(t);
                }
                Ok(None) => return Ok(()),
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            }
        }
    }
}

impl Iterator for Scanner<'_> {
    type Item = Result<Token, LexError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_token() {
            Ok(t) => t.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// The bytes a string literal token stands for (quotes removed, escapes applied).
pub fn string_value(sql: &[u8], t: &Token, d: Dialect) -> Vec<u8> {
    string_value_cow(sql, t, d).into_owned()
}

/// `string_value`, borrowed from the text when the literal holds neither an escape nor a doubled
/// quote (most do: their bytes are as written).
/// A plain literal's (`Token::plain`: most of a batch's) is its body, taken in line.
#[inline]
pub fn string_value_cow<'a>(sql: &'a [u8], t: &Token, d: Dialect) -> Cow<'a, [u8]> {
    if t.plain {
        if let Some(body) = sql.get(t.start + 1..t.end.saturating_sub(1)) {
            return Cow::Borrowed(body);
        }
    }
    string_value_read(sql, t, d)
}

/// `string_value_cow` of a literal not known plain: its body looked through.
#[inline(never)]
fn string_value_read<'a>(sql: &'a [u8], t: &Token, d: Dialect) -> Cow<'a, [u8]> {
    let raw = t.text(sql);
    let Some((&q, rest)) = raw.split_first() else {
        return Cow::Borrowed(&[]);
    };
    let body = rest.strip_suffix(&[q]).unwrap_or(rest);
    if t.plain {
        return Cow::Borrowed(body);
    }
    let escapes = !d.no_backslash_escapes && q != b'`' && !(q == b'"' && d.ansi_quotes);
    let plain = if body.len() <= SHORT_RUN {
        find_stop(body, b'\\', q, false).is_none()
    } else {
        memchr::memchr2(b'\\', q, body).is_none()
    };
    if plain {
        return Cow::Borrowed(body);
    }
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    let mut prev_high = false;
    while let Some(&c) = body.get(i) {
        if c == b'\\' && escapes && !(prev_high && d.multibyte_backslash) {
            let e = body.get(i + 1).copied().unwrap_or(b'\\');
            // MySQL keeps the backslash before % and _ (LIKE patterns)
            if e == b'%' || e == b'_' {
                out.push(b'\\');
            }
            out.push(match e {
                b'0' => 0,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'b' => 8,
                b'Z' => 26,
                other => other,
            });
            i += 2;
            prev_high = false;
            continue;
        }
        if c == q && body.get(i + 1) == Some(&q) {
            out.push(q);
            i += 2;
            prev_high = false;
            continue;
        }
        out.push(c);
        prev_high = !(prev_high && mb_trail(c)) && mb_lead(c);
        i += 1;
    }
    Cow::Owned(out)
}

/// The bytes of a hex literal token (`X'…'` or `0x…`); None when malformed.
pub fn hex_value(sql: &[u8], t: &Token) -> Option<Vec<u8>> {
    let raw = t.text(sql);
    let digits = if raw.starts_with(b"0x") {
        &raw[2..]
    } else {
        raw.get(2..raw.len().checked_sub(1)?)?
    };
    let padded: Vec<u8> = if digits.len() % 2 == 1 {
        [b"0", digits].concat()
    } else {
        digits.to_vec()
    };
    padded
        .chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
        })
        .collect()
}

/// The name inside a backquoted (or ANSI) identifier token, unescaped.
/// A quoted identifier's bytes (`name` or "name" with its quotes): the quotes removed and
/// doubled quotes undone.
pub fn unquote_ident(raw: &[u8]) -> Vec<u8> {
    let q = raw.first().copied().unwrap_or(b'`');
    let body = raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default();
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while let Some(&c) = body.get(i) {
        out.push(c);
        i += if c == q && body.get(i + 1) == Some(&q) {
            2
        } else {
            1
        };
    }
    out
}

/// A name as written (unquoted), inline when short, as a statement's table and column names
/// mostly are: reading them costs no allocation.
pub type Ident = smallvec::SmallVec<[u8; 24]>;

/// `ident_value` as an `Ident`.
pub fn ident_small(sql: &[u8], t: &Token) -> Ident {
    match t.kind {
        Tok::QuotedIdent => unquote_ident(t.text(sql)).into(),
        // (copied whole: `From<&[u8]>` pushes byte by byte)
        _ => Ident::from_slice(t.text(sql)),
    }
}

pub fn ident_value(sql: &[u8], t: &Token) -> Vec<u8> {
    match t.kind {
        Tok::QuotedIdent => unquote_ident(t.text(sql)),
        _ => t.text(sql).to_vec(),
    }
}

/// One statement of a text, as byte offsets: from after the previous `;` (or the start) to its
/// own `;` (excluded) or the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    /// A stored program or compound statement (CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT,
    /// BEGIN … END, IF/CASE/LOOP/WHILE/REPEAT): its inner `;` do not end it, so it reaches to
    /// the end of the text.
    pub program: bool,
}

/// The statements of a text (most texts are one or two: no allocation).
pub type Pieces = smallvec::SmallVec<[Piece; 2]>;

/// Words that open a compound statement outside a stored program (MariaDB).
/// `DECLARE … BEGIN … END` is an anonymous block under MariaDB's sql_mode=ORACLE (and a syntax
/// error otherwise).
const COMPOUND_OPENERS: [&str; 7] = ["BEGIN", "IF", "CASE", "LOOP", "WHILE", "REPEAT", "DECLARE"];

/// Splits a text into its statements (empty ones dropped). Fails where the backend would fail
/// to read the text (an unterminated string or comment-free quote).
pub fn statements(sql: &[u8], d: Dialect) -> Result<(Pieces, Ambiguity), LexError> {
    statements_keeping(sql, d, &mut Kept::new(0))
}

/// The tokens of a text kept by the split, so a reader of its statements need not lex them
/// again; at most `max` of them (beyond that none are kept: the memory stays bounded).
#[derive(Debug, Default)]
pub struct Kept {
    /// Most tokens kept: 0 when none are (made so, or overflowed: then `tokens` is empty).
    max: usize,
    tokens: Vec<Token>,
    /// Made with `max` 0: keeps nothing from the start.
    off: bool,
    /// The text this split, to be the thread's shape once its tokens are read (`Drop`).
    shape: Option<Box<Shape>>,
}

/// Most tokens a thread's reused token buffer keeps room for between texts (24 KiB); a
/// larger buffer is freed after its text.
const SCRATCH_TOKENS: usize = 1024;

thread_local! {
    /// The token buffer of the last `Kept` on this thread, empty, for the next one: the hot
    /// path of a flagged statement allocates no token list.
    static SCRATCH: std::cell::Cell<Vec<Token>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Kept {
    pub fn new(max: usize) -> Kept {
        // (given back empty by `drop`)
        let tokens = if max > 0 { SCRATCH.take() } else { Vec::new() };
        Kept {
            max,
            tokens,
            off: max == 0,
            shape: None,
        }
    }

    /// Whether this keeps no tokens at all (made with `max` 0: a text read per statement).
    pub fn is_off(&self) -> bool {
        self.off
    }

    #[inline]
    fn push(&mut self, t: Token) {
        // (an overflowed `Kept` has `max` 0: one comparison a token either way)
        if self.tokens.len() < self.max {
            self.tokens.push(t);
        } else if self.max > 0 {
            self.overflow();
        }
    }

    #[cold]
    fn overflow(&mut self) {
        self.max = 0;
        self.tokens = Vec::new();
    }

    /// The index of statement `p`'s first kept token (the first statement's: no search).
    fn start_of(&self, p: &Piece) -> usize {
        if p.start == 0 {
            0
        } else {
            self.tokens.partition_point(|t| t.start < p.start)
        }
    }

    /// The first token of statement `p` (as `of` gives it), if all were kept: nothing copied.
    pub fn first_of(&self, p: &Piece) -> Option<Option<Token>> {
        if self.max == 0 {
            return None;
        }
        let a = self.start_of(p);
        Some(
            self.tokens
                .get(a)
                .filter(|t| t.start < p.end)
                .map(|t| t.relative_to(p.start)),
        )
    }

    /// The tokens of statement `p` of the text, with offsets relative to the statement (as
    /// lexing it alone gives them), if all were kept. Borrowed for a statement at the start of
    /// the text, copied for a later one.
    pub fn of(&self, p: &Piece) -> Option<std::borrow::Cow<'_, [Token]>> {
        self.of_indexed(p).map(|(toks, _)| toks)
    }

    /// `of`, and where the statement's tokens stand among the text's (first, count).
    fn of_indexed(&self, p: &Piece) -> Option<(std::borrow::Cow<'_, [Token]>, TokenRange)> {
        if self.max == 0 {
            return None;
        }
        let a = self.start_of(p);
        // (the last statement, most often the only one, takes the rest: no search)
        let b = match self.tokens.last() {
            Some(last) if last.start >= p.end => self.tokens.partition_point(|t| t.start < p.end),
            _ => self.tokens.len(),
        };
        let toks = self.tokens.get(a..b)?;
        // (at most `max` tokens: the indexes fit)
        let at = (a as u32, (b - a) as u32);
        Some((
            if p.start == 0 {
                std::borrow::Cow::Borrowed(toks)
            } else {
                toks.iter().map(|t| t.relative_to(p.start)).collect()
            },
            at,
        ))
    }

    /// Statement `p`'s tokens (as `of` gives them), where they stand among the text's, and
    /// the frames of the shape this text is or becomes, if all tokens were kept (`framed`
    /// reads with them).
    pub(crate) fn framing(&self, p: &Piece) -> Option<Framing<'_>> {
        let (toks, at) = self.of_indexed(p)?;
        Some((toks, at, self.shape.as_deref().map(|s| &s.frames)))
    }

    /// Whether this text's tokens were taken from the thread's shape.
    pub(crate) fn taken_from_shape(&self) -> bool {
        self.shape.as_ref().is_some_and(|s| s.indexed)
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let mut tokens = std::mem::take(&mut self.tokens);
        // the text split becomes the thread's shape with its tokens (none copied: the shape's
        // old buffer goes to the scratch instead)
        if let Some(mut shape) = self.shape.take() {
            if self.max > 0 && tokens.capacity() <= SHAPE_TOKEN_ROOM {
                std::mem::swap(&mut shape.tokens, &mut tokens);
                if !shape.indexed {
                    shape.index();
                }
                keep_shape(shape);
            }
        }
        if tokens.capacity() > 0 && tokens.capacity() <= SCRATCH_TOKENS {
            tokens.clear();
            SCRATCH.set(tokens);
        }
    }
}

/// The last text a thread split with its tokens kept: the shape the next one is matched
/// with (`Shape::apply`), so a text that differs from it only inside its literals (a
/// driver's or an application's statement run again with other values) is not lexed again.
#[derive(Debug, Default)]
struct Shape {
    d: Dialect,
    max: usize,
    text: Vec<u8>,
    tokens: Vec<Token>,
    pieces: Pieces,
    ambiguity: Ambiguity,
    /// `slots`, `gaps` and `bounds` are the tokens' (they stay so while texts of the shape
    /// follow; `text` is then the first text's).
    indexed: bool,
    /// The tokens that are literals another text of the shape may differ in: a `'…'` string
    /// whose body is its value, a run of digits.
    slots: Vec<u32>,
    /// The bytes between the slots (before the first, between two, after the last: the same
    /// in every text of the shape), one after the other, and where each ends in them.
    gaps: Vec<u8>,
    gap_ends: Vec<u32>,
    /// Each statement's bounds as tokens: the `;` before it (its end is the start) and the
    /// `;` after it (its start is the end); `u32::MAX`: the text's start or end. None: a bound
    /// that is no token's (then the shape is not used).
    bounds: Option<smallvec::SmallVec<[(u32, u32); 2]>>,
    /// What the readers found in the shape's statements that no literal changes
    /// (`framed`): emptied whenever the shape is made again.
    frames: Frames,
}

/// Where a statement's tokens stand among its text's: the first one's index, and how many.
pub(crate) type TokenRange = (u32, u32);

/// A frame of one of the readers (`Frames`).
type AnyFrame = Box<dyn std::any::Any + Send>;

/// A statement's kept tokens, where they stand, and its shape's frames (`Kept::framing`).
pub(crate) type Framing<'a> = (
    std::borrow::Cow<'a, [Token]>,
    TokenRange,
    Option<&'a Frames>,
);

/// Most statement readings a shape keeps (a statement may be read in part as well as whole:
/// twice its statements).
const SHAPE_FRAMES: usize = 2 * SHAPE_PIECES;

/// The readings a shape keeps of its statements (`framed`), each by the reading's dialect,
/// where the statement's tokens stand, and its kind (the reader's frame type): kept here
/// without knowing the readers, which read with `scan`'s tokens (so `scan` imports none of
/// them).
#[derive(Debug, Default)]
pub(crate) struct Frames(std::cell::RefCell<Vec<(Dialect, TokenRange, AnyFrame)>>);

impl Frames {
    /// `f` of the frame of type `T` kept for a statement at `at` read under `d`, if one is.
    pub(crate) fn find<T: std::any::Any, R>(
        &self,
        d: Dialect,
        at: TokenRange,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        let frames = self.0.borrow();
        frames
            .iter()
            .filter(|(fd, fat, _)| *fat == at && *fd == d)
            .find_map(|(_, _, frame)| frame.downcast_ref::<T>())
            .map(f)
    }

    /// Keeps `frame` for a statement at `at` read under `d`, if there is room
    /// (`room_for_frame`).
    pub(crate) fn keep<T: std::any::Any + Send>(&self, d: Dialect, at: TokenRange, frame: T) {
        let mut frames = self.0.borrow_mut();
        if room_for_frame(&frames, at) {
            frames.push((d, at, Box::new(frame)));
        }
    }
}

/// Whether a shape with `frames` keeps one more, of the statement whose tokens stand at `at`:
/// at most `SHAPE_FRAMES` of them, over at most `SHAPE_TOKEN_ROOM` tokens in all. What a
/// frame holds beyond its fixed part grows with its statement's tokens (its column names,
/// AND terms and identifiers): so bounded, a shape's frames hold at most about 200 KiB.
fn room_for_frame<F>(frames: &[(Dialect, TokenRange, F)], at: TokenRange) -> bool {
    let framed: usize = frames.iter().map(|(_, (_, n), _)| *n as usize).sum();
    frames.len() < SHAPE_FRAMES && framed + at.1 as usize <= SHAPE_TOKEN_ROOM
}

/// Most bytes of a text kept as a shape: longer ones are lexed each time.
const SHAPE_BYTES: usize = 16 * 1024;

/// Most tokens a shape keeps room for (108 KiB, and 18 KiB of `slots`; with `SHAPE_BYTES`,
/// what a thread keeps).
const SHAPE_TOKEN_ROOM: usize = 4608;

/// Shapes a thread keeps: one for each of the readings a text most often has (OceanBase's
/// greeting leaves MySQL's and OceanBase's reading of every flagged text), so that one
/// reading's text does not put out the other's shape.
const SHAPES: usize = 2;

/// Most statements in a text kept as a shape.
const SHAPE_PIECES: usize = 16;

thread_local! {
    /// This thread's shapes (`Shape`), the most recently used first.
    static SHAPE: std::cell::Cell<[Option<Box<Shape>>; SHAPES]> =
        const { std::cell::Cell::new([None, None]) };
}

thread_local! {
    /// This thread keeps shapes (`keep_shapes_on_this_thread`).
    static SHAPES_ON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Lets this thread keep shapes: the proxy's worker threads, a fixed few. Other threads (a
/// blocking pool's, which may be hundreds) keep none, so what shapes hold stays bounded by
/// the workers' count.
pub fn keep_shapes_on_this_thread() {
    SHAPES_ON.set(true);
}

/// Whether this thread keeps shapes (`keep_shapes_on_this_thread`).
pub fn keeps_shapes() -> bool {
    SHAPES_ON.try_with(std::cell::Cell::get).unwrap_or(false)
}

/// Puts a shape back as the thread's most recently used: in place of one of its dialect, or
/// of the least recently used.
fn keep_shape(shape: Box<Shape>) {
    let shapes = SHAPE.take();
    // (the one it replaces: of its dialect, else none, else the last)
    let gone = shapes
        .iter()
        .position(|s| s.as_ref().is_some_and(|s| s.d == shape.d))
        .or_else(|| shapes.iter().position(Option::is_none))
        .unwrap_or(SHAPES - 1);
    let mut kept: [Option<Box<Shape>>; SHAPES] = Default::default();
    let mut rest = kept.iter_mut();
    if let Some(first) = rest.next() {
        *first = Some(shape);
    }
    for (i, s) in shapes.into_iter().enumerate() {
        if i != gone && s.is_some() {
            if let Some(slot) = rest.next() {
                *slot = s;
            }
        }
    }
    SHAPE.set(kept);
}

/// The thread's shape of dialect `d`, taken out (`keep_shape` puts it back).
fn take_shape(d: Dialect) -> Option<Box<Shape>> {
    let mut shapes = SHAPE.take();
    let found = shapes
        .iter_mut()
        .find(|s| s.as_ref().is_some_and(|s| s.d == d))
        .and_then(Option::take);
    SHAPE.set(shapes);
    found
}

/// The end of a `'…'` string at `s` whose body is its value (ASCII, neither a backslash nor the
/// quote doubled: the byte after it is not looked at), if it is one.
#[inline]
fn plain_string_end(sql: &[u8], s: usize) -> Option<usize> {
    if sql.get(s) != Some(&b'\'') {
        return None;
    }
    let body = sql.get(s + 1..)?;
    // most bodies are short: looked at a word at a time (as `Scanner::quoted_plain` does)
    let head = body.get(..SHORT_RUN).unwrap_or(body);
    let k = match find_stop(head, b'\'', b'\\', true) {
        Some(k) => k,
        None if head.len() == body.len() => return None,
        None => {
            let k = memchr::memchr2(b'\'', b'\\', body)?;
            if !body.get(..k)?.is_ascii() {
                return None;
            }
            k
        }
    };
    (body.get(k) == Some(&b'\'')).then_some(s + k + 2)
}

/// Whether a gap of a text is the shape's: most gaps are a few bytes, compared in place rather
/// than by a call, as two words that may overlap (the first and the last bytes of the gap).
/// (Any two short byte strings alike: the write checks compare a row's partitioning bytes
/// with the row before's by it.)
#[inline]
pub(crate) fn same_gap(gap: &[u8], new: &[u8]) -> bool {
    #[inline]
    fn word<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
        let mut w = [0u8; N];
        if let Some(s) = b.get(at..at + N) {
            w.copy_from_slice(s);
        }
        w
    }
    let n = gap.len();
    if n != new.len() {
        return false;
    }
    match n {
        0 => true,
        // (bytes 0, n / 2 and n - 1 are every byte of a gap of one to three)
        1..=3 => [0, n / 2, n - 1].iter().all(|&i| gap.get(i) == new.get(i)),
        4..=7 => {
            word::<4>(gap, 0) == word::<4>(new, 0) && word::<4>(gap, n - 4) == word::<4>(new, n - 4)
        }
        8..=16 => {
            word::<8>(gap, 0) == word::<8>(new, 0) && word::<8>(gap, n - 8) == word::<8>(new, n - 8)
        }
        _ => gap == new,
    }
}

/// The bytes of a little-endian word that are no ASCII digit, marked by their high bit; the
/// lowest mark is exact (a byte `c` is a digit when `c ^ 0x30` is below 10: adding 0x76 sets
/// its high bit otherwise, or it was set; a carry out of a byte with its high bit set only
/// reaches bytes above the first marked one). Zero: eight digits.
#[inline]
pub(crate) fn non_digits(w: u64) -> u64 {
    let x = w ^ (LO * 0x30);
    (x.wrapping_add(LO * 0x76) | x) & (LO * 0x80)
}

/// Moves `toks` by `delta` bytes (wrapping: a shrink is a wrap-around add).
#[inline]
fn move_tokens(toks: &mut [Token], delta: usize) {
    if delta != 0 {
        for x in toks {
            x.start = x.start.wrapping_add(delta);
            x.end = x.end.wrapping_add(delta);
        }
    }
}

/// How many ASCII digits `b` begins with: eight bytes a step (`non_digits`), then byte by
/// byte.
#[inline]
fn digit_run(b: &[u8]) -> usize {
    first_marked(b, non_digits, |c| !c.is_ascii_digit()).unwrap_or(b.len())
}

impl Shape {
    /// Finds the tokens' `slots` and `bounds`.
    fn index(&mut self) {
        let text = self.text.as_slice();
        self.slots.clear();
        for (i, t) in self.tokens.iter().enumerate() {
            let literal = match t.kind {
                Tok::Str => t.plain && text.get(t.start) == Some(&b'\''),
                Tok::Number => text
                    .get(t.start..t.end)
                    .is_some_and(|b| b.iter().all(u8::is_ascii_digit)),
                _ => false,
            };
            if literal {
                // (at most SHAPE_TOKEN_ROOM tokens)
                self.slots.push(i as u32);
            }
        }
        self.gaps.clear();
        self.gap_ends.clear();
        let mut from = 0;
        for &i in &self.slots {
            if let Some(t) = self.tokens.get(i as usize) {
                self.gaps
                    .extend_from_slice(text.get(from..t.start).unwrap_or_default());
                self.gap_ends.push(self.gaps.len() as u32);
                from = t.end;
            }
        }
        self.gaps
            .extend_from_slice(text.get(from..).unwrap_or_default());
        self.gap_ends.push(self.gaps.len() as u32);
        let toks = &self.tokens;
        let bound = |x: usize, by_end: bool| -> Option<u32> {
            if (!by_end && x == 0) || (by_end && x == text.len()) {
                return Some(u32::MAX);
            }
            let i = if by_end {
                toks.partition_point(|t| t.start < x)
            } else {
                toks.partition_point(|t| t.end < x)
            };
            let t = toks.get(i)?;
            ((if by_end { t.start } else { t.end }) == x).then_some(i as u32)
        };
        // An executable comment's extent depends on how many digits follow its `/*!`: a run
        // of digits there is no literal another text may differ in, so such a text is no
        // shape (found by a review). A text of a shape has the shape's bytes outside its
        // literals, so it has none either: looked at once, here, not for every text.
        self.bounds = if has_executable_comment(text) {
            None
        } else {
            self.pieces
                .iter()
                .map(|p| Some((bound(p.start, false)?, bound(p.end, true)?)))
                .collect()
        };
        self.indexed = true;
    }

    /// Makes this shape `sql`'s, if `sql` is its text with other literals: the same bytes
    /// outside the literals, and at each of its `slots` another literal of the kind. Lexing is
    /// a function of the bytes read so far and the dialect: with the same bytes before it, the
    /// lexer stands at a literal as it did at the shape's; such a literal moves it to the byte
    /// after it (a plain string changes no ambiguity, and both its first byte and the byte
    /// after it are as before); so every token is the shape's, moved by what the literals
    /// before it grew or shrank by (the `shape_apply` fuzz target compares the two). The
    /// tokens are moved in place, and `sql`'s split returned. None: not of the shape (the
    /// tokens may be half moved: the shape is to be made again).
    fn apply(&mut self, sql: &[u8]) -> Option<(Pieces, Ambiguity)> {
        let bounds = self.bounds.as_ref()?;
        let toks = self.tokens.as_mut_slice();
        let gaps = self.gaps.as_slice();
        // `sql`'s bytes matched so far (n); what the literals so far grew or shrank the text
        // by (delta, wrapping); the first token not yet moved (from); the next gap's start
        let (mut n, mut delta, mut from, mut gap_start) = (0usize, 0usize, 0usize, 0usize);
        for (&i, &gap_end) in self.slots.iter().zip(&self.gap_ends) {
            let (i, gap_end) = (i as usize, gap_end as usize);
            let gap = gaps.get(gap_start..gap_end)?;
            gap_start = gap_end;
            let s = n.checked_add(gap.len())?;
            if !same_gap(gap, sql.get(n..s)?) {
                return None;
            }
            // the tokens before the literal are moved by what the literals before them
            // changed (their bytes are the gap just compared), then the literal is read
            let (t, before) = toks.get_mut(from..=i)?.split_last_mut()?;
            move_tokens(before, delta);
            let e = if t.kind == Tok::Str {
                plain_string_end(sql, s)?
            } else {
                match digit_run(sql.get(s..)?) {
                    0 => return None,
                    k => s + k,
                }
            };
            delta = e.wrapping_sub(t.end);
            (t.start, t.end) = (s, e);
            (n, from) = (e, i + 1);
        }
        if sql.get(n..)? != gaps.get(gap_start..)? {
            return None;
        }
        move_tokens(toks.get_mut(from..)?, delta);
        let toks = &*toks;
        let mut pieces = Pieces::new();
        for (p, &(a, b)) in self.pieces.iter().zip(bounds) {
            let start = match a {
                u32::MAX => 0,
                a => toks.get(a as usize)?.end,
            };
            let end = match b {
                u32::MAX => sql.len(),
                b => toks.get(b as usize)?.start,
            };
            pieces.push(Piece {
                start,
                end,
                program: p.program,
            });
        }
        Some((pieces, self.ambiguity))
    }
}

/// `statements`, keeping the tokens in `kept`. A text of the thread's last shape
/// (`Shape::apply`) takes its tokens from it.
pub fn statements_keeping(
    sql: &[u8],
    d: Dialect,
    kept: &mut Kept,
) -> Result<(Pieces, Ambiguity), LexError> {
    if kept.max == 0 || sql.len() > SHAPE_BYTES || !kept.tokens.is_empty() || !SHAPES_ON.get() {
        // (a Kept read twice is no shape)
        kept.shape = None;
        return split::<true>(sql, d, kept);
    }
    let mut last = take_shape(d);
    if let Some(shape) = last.as_deref_mut() {
        if shape.max == kept.max && shape.indexed {
            if let Some(found) = shape.apply(sql) {
                // (its text is not needed again: the gaps are every text's of the shape)
                // the tokens are the Kept's until it is dropped, then the shape's again
                std::mem::swap(&mut kept.tokens, &mut shape.tokens);
                kept.shape = last;
                return Ok(found);
            }
        }
    }
    let split = split::<true>(sql, d, kept);
    match &split {
        Ok((pieces, ambiguity)) if kept.max > 0 && pieces.len() <= SHAPE_PIECES => {
            let mut shape = last.unwrap_or_default();
            shape.text.clear();
            shape.text.extend_from_slice(sql);
            shape.d = d;
            shape.max = kept.max;
            shape.pieces = pieces.clone();
            shape.ambiguity = *ambiguity;
            shape.indexed = false;
            shape.frames.0.get_mut().clear();
            kept.shape = Some(shape);
        }
        // (a shape that may be half moved is not kept)
        _ => {}
    }
    split
}

/// `statements_keeping` as it would find `sql` after the thread split each of `earlier` in
/// turn (the first makes a shape; a later one of that shape takes its tokens from it and
/// leaves them moved to its own text, which `sql` may take them from in turn), and whether
/// it was taken from the shape: what the `shape_apply` fuzz target compares with a split of
/// its own.
#[doc(hidden)]
pub fn statements_after_shape(
    earlier: &[&[u8]],
    sql: &[u8],
    d: Dialect,
    max: usize,
) -> (Result<(Pieces, Ambiguity), LexError>, Vec<Token>, bool) {
    keep_shapes_on_this_thread();
    SHAPE.take();
    for text in earlier {
        let mut kept = Kept::new(max);
        let _ = statements_keeping(text, d, &mut kept);
    }
    let mut kept = Kept::new(max);
    let split = statements_keeping(sql, d, &mut kept);
    let tokens = if kept.max > 0 {
        kept.tokens.clone()
    } else {
        Vec::new()
    };
    // (a text split in full leaves a shape to index)
    let from_shape = split.is_ok() && kept.shape.as_ref().is_some_and(|s| s.indexed);
    (split, tokens, from_shape)
}

/// Forgets this thread's shapes (and lets it keep them): the next text is lexed in full. For
/// the test hooks that start from no shape (`framed::reads_after_shape`).
#[doc(hidden)]
pub fn forget_shapes() {
    keep_shapes_on_this_thread();
    SHAPE.take();
}

/// `statements_keeping` without its tighter loop for the tokens after a statement is settled:
/// what the fuzz targets and tests compare it with.
#[doc(hidden)]
pub fn statements_keeping_unsettled(
    sql: &[u8],
    d: Dialect,
    kept: &mut Kept,
) -> Result<(Pieces, Ambiguity), LexError> {
    split::<false>(sql, d, kept)
}

/// The split; `SETTLE`: once nothing more can change a statement's kind and no `;` follows,
/// the rest is only lexed and kept.
fn split<const SETTLE: bool>(
    sql: &[u8],
    d: Dialect,
    kept: &mut Kept,
) -> Result<(Pieces, Ambiguity), LexError> {
    if kept.max > 0 {
        // about one token per 4 bytes
        kept.tokens
            .reserve((sql.len() / 4).max(16).min(kept.max).min(4096));
    }
    let mut sc = Scanner::new(sql, d);
    let mut out = Pieces::new();
    let mut start = 0;
    let mut first: Option<Token> = None;
    let mut words_seen = 0usize;
    let mut program = false;
    // the text began with BEGIN: a compound statement only as BEGIN NOT ATOMIC (a plain BEGIN
    // or BEGIN WORK starts a transaction)
    let mut after_begin = false;
    #[derive(Clone, Copy)]
    enum Opener {
        Create,
        Alter,
        Other,
    }
    let mut opener = Opener::Other;
    for t in sc.by_ref() {
        let t = t?;
        kept.push(t);
        if after_begin {
            after_begin = false;
            // BEGIN NOT ATOMIC, and under sql_mode=ORACLE an anonymous `BEGIN stmt; … END`
            // block (in other modes BEGIN is followed by `;`, WORK or the end, else the backend
            // refuses it): one statement, read as a program
            program = !(t.is_punct(b';') || t.is_word(sql, "WORK"));
        }
        if t.is_punct(b';') && !program {
            if first.is_some() {
                out.push(Piece {
                    start,
                    end: t.start,
                    program: false,
                });
            }
            start = t.end;
            first = None;
            words_seen = 0;
            continue;
        }
        if first.is_none() {
            first = Some(t);
            if t.kind == Tok::Word {
                let w = t.text(sql);
                after_begin = w.eq_ignore_ascii_case(b"BEGIN");
                program = (!after_begin
                    && COMPOUND_OPENERS
                        .iter()
                        .any(|o| w.eq_ignore_ascii_case(o.as_bytes())))
                    // a label: `name: BEGIN`
                    || sql.get(t.end) == Some(&b':');
            }
        }
        if t.kind == Tok::Word && words_seen < 8 && !program {
            words_seen += 1;
            // CREATE [OR REPLACE] [DEFINER = …] [AGGREGATE] PROCEDURE|FUNCTION|TRIGGER|EVENT,
            // and ALTER [DEFINER = …] EVENT (its DO body is a program too); the first word
            // is looked at once
            if words_seen == 1 {
                opener = match first {
                    Some(f) if f.is_word(sql, "CREATE") => Opener::Create,
                    Some(f) if f.is_word(sql, "ALTER") => Opener::Alter,
                    _ => Opener::Other,
                };
            }
            program = match opener {
                Opener::Create => ["PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"]
                    .iter()
                    .any(|k| t.is_word(sql, k)),
                Opener::Alter => t.is_word(sql, "EVENT"),
                Opener::Other => false,
            };
        }
        // Settled: what this statement is can no longer change (a program, or its first word
        // read and not BEGIN, CREATE or ALTER, or eight words read), and no `;` follows (or a
        // program's do not count): the rest is only lexed and kept, in a tighter loop.
        let settled = !after_begin
            && (program || words_seen >= 8 || (words_seen >= 1 && matches!(opener, Opener::Other)));
        if SETTLE
            && settled
            && (program || memchr::memchr(b';', sql.get(t.end..).unwrap_or_default()).is_none())
        {
            sc.keep_rest(kept)?;
            break;
        }
    }
    if first.is_some() {
        out.push(Piece {
            start,
            end: sql.len(),
            program,
        });
    }
    Ok((out, sc.ambiguity))
}

/// Where the statement a wrapper runs begins (`executed_part`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Executed {
    /// Offset of the statement that runs, in the piece (0: no wrapper).
    pub offset: usize,
    /// A wrapper holds a `?` placeholder, or the piece has an executable comment: the inner
    /// statement is not read on its own (its placeholders or its comment's extent would not
    /// be the backend's).
    pub unsure: bool,
}

/// Most tokens of wrappers read before giving up on finding the statement they run.
const MAX_WRAPPER_TOKENS: usize = 4096;

/// Words that begin a statement MariaDB's `ANALYZE` runs (and reports on); `ANALYZE TABLE`
/// is the maintenance statement.
const ANALYZED: [&str; 6] = ["SELECT", "INSERT", "REPLACE", "UPDATE", "DELETE", "WITH"];

/// The statement a piece runs, read through the wrappers that run another statement as it
/// stands: MariaDB's `SET STATEMENT var = value, … FOR stmt`, `ANALYZE [FORMAT = …] stmt` and
/// MySQL's `EXPLAIN ANALYZE … stmt` (which run their statement, unlike EXPLAIN). Linear, at most `MAX_WRAPPER_TOKENS` tokens of
/// wrappers; anything else (or a wrapper that does not end) is no wrapper: offset 0.
pub fn executed_part(piece: &[u8], d: Dialect) -> Executed {
    executed_part_from(piece, d, None)
}

/// Whether a statement whose first token is `first` may be a wrapper `executed_part` reads
/// through (`SET STATEMENT`, `ANALYZE`, `EXPLAIN ANALYZE`): when not, it runs itself.
#[inline]
pub fn may_wrap(piece: &[u8], first: &Token) -> bool {
    ["SET", "ANALYZE", "EXPLAIN", "DESCRIBE", "DESC"]
        .iter()
        .any(|w| first.is_word(piece, w))
}

/// `executed_part`, given the piece's first token when it is known (`Some(None)`: the piece
/// has none): a first token that is no wrapper's is the whole answer, without lexing.
pub fn executed_part_from(piece: &[u8], d: Dialect, first: Option<Option<Token>>) -> Executed {
    match first {
        Some(None) => return Executed::default(),
        Some(Some(t)) if !may_wrap(piece, &t) => return Executed::default(),
        _ => {}
    }
    let mut toks = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(MAX_WRAPPER_TOKENS);
    let mut out = Executed::default();
    let mut question = false;
    let Some(mut first) = toks.next() else {
        return out;
    };
    loop {
        if first.is_word(piece, "SET") {
            let Some(second) = toks.next() else { break };
            if !second.is_word(piece, "STATEMENT") {
                break;
            }
            // the assignments, to the first FOR at depth 0
            let mut depth = 0i32;
            let mut found = false;
            for t in toks.by_ref() {
                question |= t.is_punct(b'?');
                if t.is_punct(b'(') {
                    depth += 1;
                } else if t.is_punct(b')') {
                    depth -= 1;
                } else if depth == 0 && t.is_word(piece, "FOR") {
                    found = true;
                    break;
                }
            }
            let (true, Some(next)) = (found, toks.next()) else {
                break;
            };
            out.offset = next.start;
            first = next;
        } else if ["ANALYZE", "EXPLAIN", "DESCRIBE", "DESC"]
            .iter()
            .any(|w| first.is_word(piece, w))
        {
            // `ANALYZE [FORMAT = …]` (MariaDB) and `EXPLAIN ANALYZE [FORMAT = …]` (MySQL) run
            // their statement; an EXPLAIN without ANALYZE runs nothing and is no wrapper
            let mut analyze = first.is_word(piece, "ANALYZE");
            let Some(mut next) = toks.next() else { break };
            loop {
                if next.is_word(piece, "ANALYZE") {
                    analyze = true;
                } else if next.is_word(piece, "FORMAT") {
                    let (Some(eq), Some(_)) = (toks.next(), toks.next()) else {
                        break;
                    };
                    if !eq.is_punct(b'=') {
                        break;
                    }
                } else {
                    break;
                }
                let Some(after) = toks.next() else { break };
                next = after;
            }
            let runs = next.is_punct(b'(') || ANALYZED.iter().any(|w| next.is_word(piece, w));
            if !analyze || !runs {
                break; // ANALYZE TABLE …, a plain EXPLAIN
            }
            out.offset = next.start;
            first = next;
        } else {
            break;
        }
    }
    if out.offset > 0 {
        out.unsure = question || has_executable_comment(piece);
    }
    out
}

/// `/*!` or `/*M!` anywhere.
pub fn has_executable_comment(sql: &[u8]) -> bool {
    // (a search for `/` then a look at what follows: a substring searcher's setup costs more
    // than a statement's few slashes, about 120 instructions a text, counted with cost.sh)
    memchr::memchr_iter(b'/', sql).any(|i| {
        matches!(
            sql.get(i + 1..),
            Some([b'*', b'!', ..] | [b'*', b'M', b'!', ..])
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shape keeps at most `SHAPE_FRAMES` frames, over at most `SHAPE_TOKEN_ROOM` tokens.
    #[test]
    fn a_shape_keeps_frames_within_its_bounds() {
        let d = Dialect::default();
        let frame = || 0u8;
        let mut frames = vec![(d, (0, 4600), frame())];
        assert!(room_for_frame(&frames, (4600, 8)));
        assert!(!room_for_frame(&frames, (4600, 9)));
        frames.clear();
        for i in 0..SHAPE_FRAMES as u32 - 1 {
            frames.push((d, (i, 1), frame()));
        }
        assert!(room_for_frame(&frames, (100, 1)));
        frames.push((d, (99, 1), frame()));
        assert!(!room_for_frame(&frames, (100, 1)));
    }

    /// An executable comment is `/*!` or `/*M!` anywhere in the bytes, as the naive search
    /// over every position finds it.
    #[test]
    fn executable_comments_are_found_wherever_they_open() {
        let naive = |s: &[u8]| {
            (0..s.len()).any(|i| s[i..].starts_with(b"/*!") || s[i..].starts_with(b"/*M!"))
        };
        for s in [
            &b""[..],
            b"/",
            b"/*",
            b"/*!",
            b"//*!",
            b"/*/*!",
            b"/*M",
            b"/*M!",
            b"SELECT 1 /* x */ /*M!100000 2*/",
            b"a/b/*c*/ /*!d",
            b"/*m!",
            b"*/!",
        ] {
            assert_eq!(
                has_executable_comment(s),
                naive(s),
                "{:?}",
                String::from_utf8_lossy(s)
            );
        }
    }

    /// A string is marked plain exactly when its body is its value as written: ASCII, no
    /// backslash, no doubled quote, at every length (the word-at-a-time head and the search
    /// beyond it); its value is the same read with the mark or without.
    #[test]
    fn strings_are_marked_plain_only_when_their_body_is_their_value() {
        let d = Dialect::default();
        for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 200] {
            let run = "a".repeat(len);
            for (body, plain) in [
                (run.clone(), true),
                (format!("{run}\\n"), false),
                (format!("\\'{run}"), false),
                (format!("{run}''x"), false),
                (format!("{run}\u{e9}"), false),
                (format!("{run}\"x"), true),
            ] {
                let sql = format!("SELECT '{body}', 1");
                let t = Scanner::new(sql.as_bytes(), d)
                    .map_while(Result::ok)
                    .find(|t| t.kind == Tok::Str)
                    .expect("a string");
                assert_eq!(t.plain, plain, "{sql}");
                let unmarked = Token { plain: false, ..t };
                assert_eq!(
                    string_value_cow(sql.as_bytes(), &t, d),
                    string_value_cow(sql.as_bytes(), &unmarked, d),
                    "{sql}"
                );
            }
        }
    }

    /// Gaps compared as overlapping words are equal exactly when their bytes are: every
    /// length up to 20, one byte changed at every place, and lengths that differ.
    #[test]
    fn gaps_compared_by_words_as_byte_by_byte() {
        for n in 0..20usize {
            let gap: Vec<u8> = (0..n).map(|i| b"(, -)'"[i % 6]).collect();
            assert!(same_gap(&gap, &gap.clone()));
            for at in 0..n {
                for flip in [1u8, 0x80, 0xff] {
                    let mut other = gap.clone();
                    other[at] ^= flip;
                    assert!(!same_gap(&gap, &other), "{gap:?} {other:?}");
                }
            }
            let mut longer = gap.clone();
            longer.push(b' ');
            assert!(!same_gap(&gap, &longer) && !same_gap(&longer, &gap));
        }
    }

    /// The word-at-a-time digit run is the byte-by-byte one, for every byte after runs of
    /// every length (bytes one off from a digit, 0x7F/0x80, 0xFF and zero bytes included).
    #[test]
    fn digit_run_agrees_with_a_byte_by_byte_count() {
        let naive = |h: &[u8]| h.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut checked = 0;
        for len in 0..20 {
            for stop in 0..=255u8 {
                for tail in [0u8, b'0', 0x80, 0xff] {
                    let mut h: Vec<u8> = (0..len).map(|i| b'0' + (i % 10) as u8).collect();
                    h.push(stop);
                    h.extend([tail; 9]);
                    assert_eq!(digit_run(&h), naive(&h), "{h:?}");
                    assert_eq!(digit_run(&h[..len]), len);
                    checked += 1;
                }
            }
        }
        assert!(checked > 20_000);
    }

    /// The word-at-a-time search finds what a byte-by-byte one finds, wherever the byte
    /// sits in a word, next to bytes one off from it, 0x7F/0x80 and zero bytes.
    #[test]
    fn find_stop_agrees_with_a_byte_by_byte_search() {
        let naive = |h: &[u8], a: u8, b: u8, high: bool| {
            h.iter()
                .position(|&c| c == a || c == b || (high && c >= 0x80))
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let palette = [
            0u8, 1, b'&', b'\'', b'(', b'\\', b'[', b']', 0x7f, 0x80, 0x81, 0xff, b'a',
        ];
        let mut checked = 0;
        for len in 0..40 {
            for _ in 0..400 {
                let h: Vec<u8> = (0..len)
                    .map(|_| {
                        let r = next();
                        if r % 4 == 0 {
                            palette[(r >> 8) as usize % palette.len()]
                        } else {
                            b'a' + (r >> 8) as u8 % 26
                        }
                    })
                    .collect();
                for (a, b) in [
                    (b'\'', b'\\'),
                    (b'\\', b'\''),
                    (b'"', b'\\'),
                    (0, 1),
                    (0x7f, 0x80),
                ] {
                    for high in [false, true] {
                        assert_eq!(
                            find_stop(&h, a, b, high),
                            naive(&h, a, b, high),
                            "{h:?} {a} {b} {high}"
                        );
                        checked += 1;
                    }
                    // and with a third byte
                    for c in [a, 0x81, b'[', 0] {
                        assert_eq!(
                            find_any3(&h, a, b, c),
                            h.iter().position(|&x| x == a || x == b || x == c),
                            "{h:?} {a} {b} {c}"
                        );
                    }
                }
            }
        }
        assert_eq!(checked, 40 * 400 * 10);
    }

    #[test]
    fn wrappers_are_read_through_to_the_statement_they_run() {
        let d = Dialect::default();
        let run = |sql: &str| {
            let e = executed_part(sql.as_bytes(), d);
            (
                sql.get(e.offset..).unwrap_or_default().to_string(),
                e.unsure,
            )
        };
        let s = |x: &str, u: bool| (x.to_string(), u);
        assert_eq!(
            run("SET STATEMENT max_statement_time = 1, sql_mode = (SELECT 'x') FOR INSERT INTO t VALUES (1)"),
            s("INSERT INTO t VALUES (1)", false)
        );
        assert_eq!(
            run("analyze format = json update t set a = 1"),
            s("update t set a = 1", false)
        );
        assert_eq!(
            run("SET STATEMENT a = 1 FOR ANALYZE DELETE FROM t"),
            s("DELETE FROM t", false)
        );
        assert_eq!(run("ANALYZE (SELECT 1)"), s("(SELECT 1)", false));
        assert_eq!(
            run("EXPLAIN ANALYZE FORMAT = TREE UPDATE t SET a = 1"),
            s("UPDATE t SET a = 1", false)
        );
        assert_eq!(
            run("DESCRIBE ANALYZE DELETE FROM t"),
            s("DELETE FROM t", false)
        );
        // a placeholder, an executable comment: found, but not sure
        assert_eq!(
            run("SET STATEMENT a = ? FOR UPDATE t SET b = 1"),
            s("UPDATE t SET b = 1", true)
        );
        assert_eq!(
            run("/*!SET STATEMENT a = 1 FOR */ UPDATE t SET b = 1"),
            s("UPDATE t SET b = 1", true)
        );
        // no wrapper
        for sql in [
            "ANALYZE TABLE t",
            "SET a = 1",
            "SET STATEMENT a = 1",
            "SET STATEMENT a = 1 FOR",
            "ANALYZE FORMAT = JSON",
            "UPDATE t SET a = 1",
            "EXPLAIN UPDATE t SET a = 1",
            "EXPLAIN FORMAT = JSON DELETE FROM t",
            "DESC t",
            "EXPLAIN ANALYZE",
        ] {
            assert_eq!(
                executed_part(sql.as_bytes(), d),
                Executed::default(),
                "{sql}"
            );
        }
    }

    /// Given the statement's first token, the wrapper reader answers as it does lexing it.
    #[test]
    fn a_known_first_token_tells_a_wrapper_as_lexing_does() {
        let d = Dialect::default();
        let mut told = 0;
        for sql in [
            "SET STATEMENT a = 1 FOR UPDATE t SET b = 1",
            "set statement a = ? for delete from t",
            "ANALYZE SELECT 1",
            "analyze format = json update t set a = 1",
            "EXPLAIN ANALYZE DELETE FROM t",
            "DESC ANALYZE DELETE FROM t",
            "DESCRIBE t",
            "SET a = 1",
            "SELECT * FROM t",
            "/* c */ SET STATEMENT a = 1 FOR DELETE FROM t",
            "`SET` STATEMENT a = 1 FOR DELETE FROM t",
            "(SELECT 1)",
            "",
            "  ",
        ] {
            let first = Scanner::new(sql.as_bytes(), d).next().and_then(Result::ok);
            let from = executed_part_from(sql.as_bytes(), d, Some(first));
            assert_eq!(from, executed_part(sql.as_bytes(), d), "{sql}");
            told += usize::from(from.offset > 0);
        }
        assert_eq!(told, 7);
    }

    fn words(sql: &str, d: Dialect) -> Vec<String> {
        Scanner::new(sql.as_bytes(), d)
            .map(|t| {
                let t = t.expect("lexes");
                String::from_utf8_lossy(t.text(sql.as_bytes())).into_owned()
            })
            .collect()
    }

    fn maria() -> Dialect {
        Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB-0+deb12u1")
    }

    #[test]
    fn versions_from_greetings() {
        let m = maria();
        assert_eq!(m.flavor, Flavor::MariaDb);
        assert_eq!(m.version, 101119);
        let o = Dialect::from_server_version(b"5.7.25");
        assert_eq!(o.flavor, Flavor::MySqlOrOceanBase);
        assert_eq!(o.version, 50725);
        assert_eq!(Dialect::from_server_version(b"8.0.36").version, 80036);
        assert_eq!(Dialect::from_server_version(b"garbage").version, 50700);
    }

    #[test]
    fn executable_comments_are_code_when_the_backend_runs_them() {
        // each case: the comment, and whether MariaDB 10.11.19 / OceanBase 4.3.5 / MySQL 5.7.25
        // runs the `+1` of `SELECT 1 <comment>` (measured on the first two)
        let mysql = Dialect {
            flavor: Flavor::MySql,
            ..Dialect::from_server_version(b"5.7.25")
        };
        let ob = Dialect {
            flavor: Flavor::OceanBase,
            ..mysql
        };
        let cases: &[(&str, bool, bool, bool)] = &[
            ("/*! +1 */", true, true, true),
            ("/*!50100 +1 */", true, true, true),
            ("/*!50700 +1 */", false, true, true),
            ("/*!50800 +1 */", false, true, false),
            ("/*!99999 +1 */", false, true, false),
            ("/*!101119 +1 */", true, true, false),
            // six digits that are a MySQL 5.7 version: left alone by MariaDB as five are
            ("/*!050700 +1 */", false, true, true),
            ("/*!099999 +1 */", false, true, false),
            ("/*!050699 +1 */", true, true, true),
            ("/*!101120 +1 */", false, true, false),
            ("/*!12345+1 */", true, true, true),
            ("/*M! +1 */", true, false, false),
            ("/*M!50100 +1 */", true, false, false),
            ("/*M!100000 +1 */", true, false, false),
            ("/*M!999999 +1 */", false, false, false),
            ("/* +1 */", false, false, false),
        ];
        for (c, on_maria, on_ob, on_mysql) in cases {
            let sql = format!("SELECT 1 {c}");
            for (d, want) in [(maria(), on_maria), (ob, on_ob), (mysql, on_mysql)] {
                let runs = words(&sql, d).contains(&"+".to_string());
                assert_eq!(runs, *want, "{c} on {:?}", d.flavor);
            }
        }
        // fewer than five digits: code on MariaDB and on OceanBase ("5 +1")
        assert_eq!(
            words("SELECT 1 /*!5 +1 */", maria()),
            ["SELECT", "1", "5", "+", "1"]
        );
        assert_eq!(
            words("SELECT 1 /*!5 +1 */", ob),
            ["SELECT", "1", "5", "+", "1"]
        );
        // more than five on OceanBase: the first five are the version, the rest is code
        assert_eq!(
            words("SELECT /*!999999 - */ -5", ob),
            ["SELECT", "9", "-", "-", "5"]
        );
        // and OceanBase's other reading, where the code does not parse: a comment
        let (_, a) = statements(b"SELECT 1 /*!999999 +1 */", ob).expect("lexes");
        assert!(a.comment);
        let readings = ob.readings(a);
        assert_eq!(readings.len(), 2);
        assert!(readings[1].plain_comments);
        assert_eq!(
            words("SELECT 1 /*!999999 +1 */", readings[1]),
            ["SELECT", "1"]
        );
        // MariaDB's and MySQL's rules are exact: no other reading
        assert_eq!(maria().readings(a).len(), 1);
        assert_eq!(mysql.readings(a).len(), 1);
        // a `*/` inside a string of the code does not end the comment
        assert_eq!(words("/*! 'x*/y' */ Z", maria()), ["'x*/y'", "Z"]);
        // a version comment the backend skips may hold one comment: it ends at the `*/`
        // after that one (MariaDB's and MySQL's `consume_comment(lip, 1)`); one it runs, or
        // a plain comment, ends at the first
        let nested = "SELECT 1 /*!99999 /* */ -- */ +1";
        assert_eq!(words(nested, maria()), ["SELECT", "1", "+", "1"]);
        assert_eq!(words(nested, mysql), ["SELECT", "1", "+", "1"]);
        assert_eq!(words(nested, ob), ["SELECT", "1"]);
        assert_eq!(
            words("SELECT 1 /*!99999 /* */ /*/ */ x */ +1", maria()),
            ["SELECT", "1", "+", "1"]
        );
        assert_eq!(
            words("SELECT 1 /*M!999999 /* */ -- */ +1", maria()),
            ["SELECT", "1", "+", "1"]
        );
        assert_eq!(
            words("SELECT 1 /* /* */ +1", maria()),
            ["SELECT", "1", "+", "1"]
        );
        assert_eq!(
            words("SELECT 1 /*!50100 /* */ +1 */ +2", maria()),
            ["SELECT", "1", "+", "1", "+", "2"]
        );
        assert_eq!(words("SELECT 1 /*!99999 /* */", maria()), ["SELECT", "1"]);
        // a version comment inside code, on MariaDB: run (its `*/` ends the code) or skipped
        // (the code goes on to the next `*/`) — found by a review, measured there
        assert_eq!(
            words("SELECT /*! -5 /*!100000 +10 */ , 1", maria()),
            ["SELECT", "-", "5", "+", "10", ",", "1"]
        );
        assert_eq!(
            words("SELECT /*! -5 /*!99999 /* */ */ +10 */ , 1", maria()),
            ["SELECT", "-", "5", "+", "10", ",", "1"]
        );
        assert_eq!(
            words("SELECT /*! -5 /* x */ +10 */ , 1", maria()),
            ["SELECT", "-", "5", "+", "10", ",", "1"]
        );
        assert_eq!(words("SELECT 1 /*!99999 /*", maria()), ["SELECT", "1"]);
        assert_eq!(words("/*!", maria()), Vec::<String>::new());
    }

    #[test]
    fn comments_strings_and_variables() {
        let d = Dialect::default();
        assert_eq!(
            words(
                "a -- c\nb --x #y\n 'it''s' `q``x` @v @'w' @@session.x 1e3 0x1F x'00' 12ab",
                d
            ),
            [
                "a",
                "b",
                "-",
                "-",
                "x",
                "'it''s'",
                "`q``x`",
                "@v",
                "@'w'",
                "@@session.x",
                "1e3",
                "0x1F",
                "x'00'",
                "12ab"
            ]
        );
        assert!(Scanner::new(b"'open", d).any(|t| t.is_err()));
        assert!(Scanner::new(b"`open", d).any(|t| t.is_err()));
    }

    #[test]
    fn no_backslash_escapes_changes_where_a_string_ends() {
        let sql = br"SELECT 'a\'; CREATE TABLE g$f (K int) -- '";
        let plain = statements(sql, Dialect::default()).expect("lexes").0;
        assert_eq!(plain.len(), 1);
        let nbe = Dialect {
            no_backslash_escapes: true,
            ..Dialect::default()
        };
        let split = statements(sql, nbe).expect("lexes").0;
        assert_eq!(split.len(), 2);
        assert!(sql[split[1].start..split[1].end].starts_with(b" CREATE TABLE g$f"));
    }

    #[test]
    fn ambiguous_readings_are_reported() {
        let (_, a) = statements(
            br#"SELECT "a\"; CREATE TABLE g$f (K int) -- ""#,
            Dialect::default(),
        )
        .expect("lexes");
        assert!(a.quotes && !a.multibyte);
        let readings = maria().readings(a);
        assert_eq!(readings.len(), 2);
        let split = statements(
            br#"SELECT "a\"; CREATE TABLE g$f (K int) -- ""#,
            readings[1],
        )
        .expect("lexes")
        .0;
        assert_eq!(split.len(), 2);
        let (_, a) = statements(
            b"SELECT '\xbf\\'; CREATE TABLE g$f (K int) -- '",
            Dialect::default(),
        )
        .expect("lexes");
        assert!(a.multibyte);
        let mb = Dialect {
            multibyte_backslash: true,
            ..Dialect::default()
        };
        let split = statements(b"SELECT '\xbf\\'; CREATE TABLE g$f (K int) -- '", mb)
            .expect("lexes")
            .0;
        assert_eq!(split.len(), 2);
    }

    #[test]
    fn dash_comments_open_as_each_server_opens_them() {
        let ob = Dialect {
            flavor: Flavor::OceanBase,
            ..Dialect::default()
        };
        // DEL after the dashes: a comment on MariaDB (measured), so the quote is no string
        let del: &[u8] = b"SELECT 1 --\x7F '\n; UPDATE g$f SET T = 5; -- '";
        assert_eq!(statements(del, maria()).expect("lexes").0.len(), 2);
        assert_eq!(words("SELECT 1 --\x0B 2", maria()), ["SELECT", "1"]);
        // OceanBase takes only a space, tab, LF or CR
        assert_eq!(words("SELECT 1 --\t2", ob), ["SELECT", "1"]);
        assert_eq!(
            words("SELECT 1 --\x0B2", ob),
            ["SELECT", "1", "-", "-", "2"]
        );
        // and ends a line comment at CR as well as LF: a statement after CR runs there
        let cr: &[u8] = b"SELECT 1 # x\r; UPDATE g$f SET T = 5";
        assert_eq!(statements(cr, ob).expect("lexes").0.len(), 2);
        assert_eq!(statements(cr, maria()).expect("lexes").0.len(), 1);
        assert_eq!(words("SELECT 1 -- x\r+7", ob), ["SELECT", "1", "+", "7"]);
    }

    #[test]
    fn a_backquote_after_a_multibyte_lead_byte_reads_two_ways() {
        let mb = Dialect {
            multibyte_backslash: true,
            ..Dialect::default()
        };
        let count = |sql: &[u8], d: Dialect| statements(sql, d).expect("lexes").0.len();
        // after a word: one statement in UTF-8 (a name from the backquote to the end), two
        // under gbk (the backquote is the second byte of a character of the word)
        let after_word: &[u8] = b"SELECT \x81`; UPDATE g$f SET T = 5; #`";
        let (_, a) = statements(after_word, Dialect::default()).expect("lexes");
        assert!(a.multibyte);
        assert_eq!(count(after_word, Dialect::default()), 1);
        assert_eq!(count(after_word, mb), 2);
        // inside a name: the name ends in UTF-8 and goes on under gbk
        let in_name: &[u8] = b"SELECT 1 AS `\x81`; UPDATE g$f SET T = 5; #`";
        let (_, a) = statements(in_name, Dialect::default()).expect("lexes");
        assert!(a.multibyte);
        assert_eq!(count(in_name, Dialect::default()), 2);
        assert_eq!(count(in_name, mb), 1);
        // after a variable's name
        let after_var: &[u8] = b"SELECT @a\x81`; UPDATE g$f SET T = 5; #`";
        assert!(
            statements(after_var, Dialect::default())
                .expect("lexes")
                .1
                .multibyte
        );
        assert_eq!(count(after_var, mb), 2);
        // a pair of high bytes is one character: the backquote after it is a quote in both
        let paired: &[u8] = b"SELECT \x81\x81`x`; SELECT 1";
        let (_, a) = statements(paired, Dialect::default()).expect("lexes");
        assert!(!a.multibyte);
        assert_eq!(count(paired, mb), 2);
        // a letter after the high byte is a character with it in every reading
        let (_, a) = statements(b"SELECT \x81A`x`", Dialect::default()).expect("lexes");
        assert!(!a.multibyte);
    }

    #[test]
    fn the_token_buffer_is_reused_and_a_large_one_freed() {
        const MAX: usize = super::super::dml::MAX_TOKENS + 1;
        let d = Dialect::default();
        // a small text's buffer goes back to the thread for the next text
        let small = b"SELECT K FROM g$f WHERE K LIKE 'ab%'";
        let mut kept = Kept::new(MAX);
        statements_keeping(small, d, &mut kept).expect("lexes");
        let n = kept.tokens.len();
        assert!(n > 5);
        drop(kept);
        // (it is the thread's shape now; the next text of another shape takes its place, and
        // its buffer goes to the scratch)
        SHAPE.take();
        let mut kept = Kept::new(MAX);
        statements_keeping(small, d, &mut kept).expect("lexes");
        drop(kept);
        let mut kept = Kept::new(MAX);
        statements_keeping(b"SELECT 1, 2, 3", d, &mut kept).expect("lexes");
        drop(kept);
        let again = Kept::new(MAX);
        assert!(again.tokens.is_empty() && again.tokens.capacity() >= n);
        drop(again);
        // a large one is freed, not kept for the thread
        let large = "SELECT 1 ".repeat(1500);
        let mut kept = Kept::new(MAX);
        statements_keeping(large.as_bytes(), d, &mut kept).expect("lexes");
        assert!(kept.tokens.capacity() > SCRATCH_TOKENS);
        drop(kept);
        assert!(Kept::new(MAX).tokens.capacity() <= SCRATCH_TOKENS);
        // the tokens of a reused buffer are the text's own
        let mut kept = Kept::new(MAX);
        let (pieces, _) = statements_keeping(b"SELECT 2", d, &mut kept).expect("lexes");
        let toks = kept.of(&pieces[0]).expect("kept");
        assert_eq!(toks.len(), 2);
        assert_eq!(toks[1].text(b"SELECT 2"), b"2");
    }

    /// `statements_keeping` after a shape agrees with a split of the text's own.
    /// (and whether it was taken from the shape).
    fn agrees_after(shape: &str, sql: &str, d: Dialect) -> (bool, bool) {
        agrees_after_all(&[shape], sql, d)
    }

    fn agrees_after_all(earlier: &[&str], sql: &str, d: Dialect) -> (bool, bool) {
        const MAX: usize = super::super::dml::MAX_TOKENS + 1;
        let earlier: Vec<&[u8]> = earlier.iter().map(|t| t.as_bytes()).collect();
        let (via, via_tokens, from_shape) =
            statements_after_shape(&earlier, sql.as_bytes(), d, MAX);
        let mut kept = Kept::new(MAX);
        let own = statements_keeping_unsettled(sql.as_bytes(), d, &mut kept);
        let own_tokens = kept.tokens.clone();
        (via == own && via_tokens == own_tokens, from_shape)
    }

    #[test]
    fn a_text_of_the_last_shape_is_split_from_it_as_it_would_be_lexed() {
        let d = Dialect::default();
        let shape = "INSERT INTO g$f (K, Q, T, V) VALUES ('k1', 'q', -1700000000000, 'v'); \
                     SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10";
        for (i, sql) in [
            // other literals, longer and shorter: taken from the shape
            "INSERT INTO g$f (K, Q, T, V) VALUES ('a much longer key', '', -5, 'value'); \
             SELECT K FROM g$f WHERE K LIKE 'abcdef%' LIMIT 1000",
            // not of the shape: lexed
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k1', 'q', -1700000000000, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10 -- more",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k''1', 'q', -1, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k\\'1', 'q', -1, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k1', 'q', -1.5, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k1', 'q', -, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('\u{e9}', 'q', -1, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab%' LIMIT 10",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k1', 'q', -1, 'v'); \
             SELECT K FROM g$f WHERE K LIKE 'ab;%' LIMIT 10",
            "INSERT INTO g$f (K, Q, T, V) VALUES ('k1",
            "",
        ]
        .iter()
        .enumerate()
        {
            // (the first and the `;` in a literal are of the shape)
            assert_eq!(
                agrees_after(shape, sql, d),
                (true, i == 0 || i == 7),
                "{sql}"
            );
        }
        // the ends of statements move with the literals before them
        const MAX: usize = super::super::dml::MAX_TOKENS + 1;
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('kkkkkkkk', 'q', -17, 'v'); \
                   SELECT K FROM g$f WHERE K LIKE 'a%' LIMIT 10";
        let (via, tokens, from_shape) =
            statements_after_shape(&[shape.as_bytes()], sql.as_bytes(), d, MAX);
        assert!(from_shape);
        let (pieces, _) = via.expect("splits");
        assert_eq!(pieces.len(), 2);
        assert_eq!(&sql[pieces[1].start..pieces[1].start + 8], " SELECT ");
        assert_eq!(
            tokens.last().map(|t| t.text(sql.as_bytes())),
            Some(&b"10"[..])
        );
        // a third text of the shape after a second: the tokens, moved to the second's text,
        // move on to the third's
        let third = "INSERT INTO g$f (K, Q, T, V) VALUES ('k', 'qqqqqqqqqqq', -1, ''); \
                     SELECT K FROM g$f WHERE K LIKE 'abcd%' LIMIT 7";
        assert_eq!(agrees_after_all(&[shape, sql], third, d), (true, true));
        assert_eq!(
            agrees_after_all(&[shape, sql, third], shape, d),
            (true, true)
        );
        // one not of the shape after a second: lexed, and the shape is made again from it
        let other = "SELECT 1, 'x'";
        assert_eq!(agrees_after_all(&[shape, sql], other, d), (true, false));
        assert_eq!(
            agrees_after_all(&[shape, sql, other], "SELECT 22, 'yy'", d),
            (true, true)
        );
        // an executable comment's extent depends on its digits: no shape (found by a review:
        // `/*!1 ; DROP TABLE t */` then `/*!99999 ; DROP TABLE t */` was split in two)
        for (a, b) in [
            (
                "SELECT 1 /*!1 ; DROP TABLE t */",
                "SELECT 1 /*!99999 ; DROP TABLE t */",
            ),
            ("SELECT /*!12 */", "SELECT /*!123456 */"),
            ("SELECT /*M!1 */", "SELECT /*M!999999 */"),
        ] {
            assert_eq!(agrees_after(a, b, d), (true, false), "{b}");
        }
        // a shape is of its dialect
        let nbe = Dialect {
            no_backslash_escapes: true,
            ..d
        };
        assert_eq!(agrees_after(shape, "SELECT 'a\\', 'b'", nbe), (true, false));
        // (a string with a backslash is no literal of a shape: its bytes must be the same)
        assert_eq!(
            agrees_after("SELECT 'a\\', 'b'", "SELECT 'a\\', 'bbb'", nbe),
            (true, true)
        );
        assert_eq!(
            agrees_after("SELECT 'a\\', 'b'", "SELECT 'b\\', 'b'", nbe),
            (true, false)
        );
        assert_eq!(
            agrees_after("SELECT 'x', 'b'", "SELECT 'a', 'bbb'", nbe),
            (true, true)
        );
    }

    #[test]
    fn a_thread_keeps_a_shape_for_each_of_two_readings() {
        const MAX: usize = super::super::dml::MAX_TOKENS + 1;
        let split_from_shape = |sql: &str, d: Dialect| {
            let mut kept = Kept::new(MAX);
            statements_keeping(sql.as_bytes(), d, &mut kept).expect("lexes");
            kept.shape.as_ref().is_some_and(|s| s.indexed)
        };
        let mysql = Dialect::default();
        let ob = Dialect {
            flavor: Flavor::OceanBase,
            ..mysql
        };
        let nbe = Dialect {
            no_backslash_escapes: true,
            ..mysql
        };
        keep_shapes_on_this_thread();
        SHAPE.take();
        assert!(!split_from_shape("SELECT 'a'", mysql));
        assert!(!split_from_shape("SELECT 'a'", ob));
        // (each reading finds its own: the other's text did not put it out)
        assert!(split_from_shape("SELECT 'bb'", mysql));
        assert!(split_from_shape("SELECT 'ccc'", ob));
        // a third puts out the least recently used
        assert!(!split_from_shape("SELECT 'a'", nbe));
        assert!(split_from_shape("SELECT 'x'", ob));
        assert!(!split_from_shape("SELECT 'x'", mysql));
        assert!(!split_from_shape("SELECT 'y'", nbe));
    }

    #[test]
    fn statements_split_but_programs_stay_whole() {
        let d = Dialect::default();
        let (p, _) = statements(b"SELECT 1; ; SELECT ';' ;SELECT 3;", d).expect("lexes");
        assert_eq!(p.len(), 3);
        let (p, _) = statements(
            b"CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN CREATE TABLE g$f (K int); END; SELECT 1",
            d,
        )
        .expect("lexes");
        assert_eq!(p.len(), 1);
        assert!(p[0].program);
        let (p, _) = statements(b"lbl: BEGIN NOT ATOMIC SELECT 1; END", d).expect("lexes");
        assert!(p.len() == 1 && p[0].program);
        let (p, _) = statements(b"BEGIN NOT ATOMIC SELECT 1; END", d).expect("lexes");
        assert!(p.len() == 1 && p[0].program);
        // BEGIN and BEGIN WORK start a transaction
        for sql in [&b"BEGIN; SELECT 1"[..], b"begin work; SELECT 1", b"BEGIN"] {
            let (p, _) = statements(sql, d).expect("lexes");
            assert!(p.iter().all(|p| !p.program), "{p:?}");
        }
        assert_eq!(statements(b"BEGIN; SELECT 1", d).unwrap().0.len(), 2);
    }

    /// The common-token path's plain integer is what the full read of a token that begins
    /// with a digit makes of it, for every text of up to five bytes over the bytes that can
    /// change that reading (digits, `.`, exponents and signs, `x`, word bytes, punctuation,
    /// the end); where it is not sure it hands the token to the full read.
    #[test]
    fn a_plain_integer_is_read_as_the_full_lexer_reads_it() {
        let alphabet: &[u8] = b"0197.eE+-xXa$;) \x80";
        let mut fast = 0usize;
        let mut text = Vec::with_capacity(5);
        for len in 1..=5u32 {
            for mut n in 0..alphabet.len().pow(len) {
                text.clear();
                // a token that begins with a digit: the first byte is one of the digits
                text.push(alphabet[n % 4]);
                n /= 4;
                for _ in 1..len {
                    text.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                let full = Scanner::new(&text, Dialect::default()).number(0);
                let mut s = Scanner::new(&text, Dialect::default());
                if let Some(t) = s.common_token(0, text[0]) {
                    fast += 1;
                    assert_eq!(t.ok(), Some(full), "{:?}", String::from_utf8_lossy(&text));
                }
            }
        }
        assert!(fast > 1000, "the plain path read {fast} texts");
    }

    #[test]
    fn a_settled_statement_splits_and_keeps_as_the_full_loop_does() {
        let texts: [&[u8]; 18] = [
            b"SELECT K, Q FROM t$f WHERE K LIKE 'a;%'",
            // the settled loop's own paths and what it hands back to the full lexer
            b"INSERT INTO t VALUES (X'0a', 0x1f, 12e3, -1, .5, \"a\\\"b\", `c`, @v, @@x)",
            b"SELECT 1 /*! , 2 */ /*M!100000 , 3 */ # c\n , 'x' -- y",
            b"SELECT 'unterminated",
            b"SELECT a\x81` , 'b\x81\\' , `c` FROM t",
            b"INSERT INTO t$f VALUES ('a', 'b', 1, 'c'); SELECT 1",
            b"BEGIN",
            b"BEGIN WORK",
            b"BEGIN NOT ATOMIC SELECT 1; END",
            b"begin; select 1",
            b"lbl: LOOP SELECT 1; END LOOP",
            b"CREATE OR REPLACE DEFINER = `a`@`b` PROCEDURE p() BEGIN SELECT 1; END",
            b"CREATE TABLE a (b int); CREATE PROCEDURE p() SELECT 1; SELECT 2",
            b"ALTER DEFINER = x EVENT e DO BEGIN SELECT 1; END",
            b"ALTER TABLE t ADD c int; SELECT ';'",
            b"(SELECT 1) UNION (SELECT 2); DO 1",
            b"SELECT 1 /* ; */ -- ;\n; SELECT 'x",
            b"a b c d e f g h i j k l; m; CREATE a b c d e f g h PROCEDURE; n",
        ];
        for (i, sql) in texts.iter().enumerate() {
            for d in [Dialect::default(), maria()] {
                let (mut a, mut b) = (Kept::new(1000), Kept::new(1000));
                let fast = statements_keeping(sql, d, &mut a);
                let full = statements_keeping_unsettled(sql, d, &mut b);
                assert_eq!(fast, full, "text {i}");
                assert_eq!(a.tokens, b.tokens, "text {i}");
                // a statement's first token, read without copying its tokens
                for p in fast.iter().flat_map(|(pieces, _)| pieces.iter()) {
                    let first = a.of(p).map(|t| t.first().copied());
                    assert_eq!(a.first_of(p), first, "text {i}");
                    assert!(matches!(first, Some(Some(_))), "text {i}");
                }
            }
        }
    }

    #[test]
    fn literal_values() {
        let d = Dialect::default();
        let sql = br"'a\nb''c\%' X'0aFF' 0x1";
        let t: Vec<Token> = Scanner::new(sql, d).map(|t| t.expect("lexes")).collect();
        assert_eq!(string_value(sql, &t[0], d), b"a\nb'c\\%");
        assert_eq!(hex_value(sql, &t[1]), Some(vec![0x0a, 0xff]));
        assert_eq!(hex_value(sql, &t[2]), Some(vec![1]));
        let nbe = Dialect {
            no_backslash_escapes: true,
            ..d
        };
        let sql = br"'a\n'";
        let t: Vec<Token> = Scanner::new(sql, nbe).map(|t| t.expect("lexes")).collect();
        assert_eq!(string_value(sql, &t[0], nbe), br"a\n");
        let sql = b"`a``b`";
        let t: Vec<Token> = Scanner::new(sql, d).map(|t| t.expect("lexes")).collect();
        assert_eq!(ident_value(sql, &t[0]), b"a`b");
    }
}
