//! LOAD DATA, read for the write rules: the statement (`read`), and the rows of a file in the
//! statement's format as the backend reads them (`FileRows`), pure.
//!
//! The file reader follows the server's own reader (MariaDB's and MySQL's `READ_INFO`, which
//! OceanBase's LOAD DATA follows for the same options): FIELDS TERMINATED / [OPTIONALLY]
//! ENCLOSED / ESCAPED BY, LINES STARTING / TERMINATED BY, IGNORE n LINES, `\N` and the
//! unenclosed word NULL, a doubled enclosure, escapes `\0 \b \n \r \t \Z`, a field or line
//! terminator of several bytes. Where its reading could differ from the server's, it says so
//! (`Unsure`) instead of guessing:
//! - fixed-width rows (FIELDS TERMINATED BY '' with ENCLOSED BY ''), LINES TERMINATED BY '';
//! - a byte of 0x80 or more right before a special byte of 0x40–0x7E when the file's
//!   character set is not known to be single-byte or UTF-8 (in gbk, big5, sjis or cp932 such a
//!   pair is one character, so that byte is not special there);
//! - special bytes of 0x80 or more under a multibyte character set.

use super::ddl::TableName;
use super::scan::{hex_value, ident_value, string_value, Dialect, Scanner, Tok, Token};

/// A LOAD DATA statement, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    /// LOAD DATA LOCAL: the client sends the file (the proxy sees it); else the server reads it.
    pub local: bool,
    /// The file's name as the server reads the literal (what it asks a LOCAL client for).
    pub file: Vec<u8>,
    pub table: TableName,
    pub format: Format,
    /// IGNORE n LINES / ROWS.
    pub ignore_lines: u64,
    /// The column list: a column's name, or None for a user variable (`@x`). None: every
    /// column of the table in definition order.
    pub columns: Option<Vec<Option<Vec<u8>>>>,
    /// The columns the SET clause assigns (their values are expressions).
    pub set: Vec<Vec<u8>>,
    /// Where a SET assignment may be appended (the end of the statement's last token).
    pub end: usize,
}

/// How a file's rows are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    pub field_term: Vec<u8>,
    pub enclosed: Option<u8>,
    pub escaped: Option<u8>,
    pub line_start: Vec<u8>,
    pub line_term: Vec<u8>,
    /// The file's character set as the statement names it (CHARACTER SET x), lowercased.
    pub charset: Option<String>,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            field_term: b"\t".to_vec(),
            enclosed: None,
            escaped: Some(b'\\'),
            line_start: Vec::new(),
            line_term: b"\n".to_vec(),
            charset: None,
        }
    }
}

/// How the file's character set bears on reading its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bytes {
    /// One byte, one character (binary, latin1, ascii): every byte stands for itself.
    Single,
    /// UTF-8: a multibyte character holds no byte below 0x80.
    Utf8,
    /// Not known (the database's default), or a multibyte set where 0x40–0x7E may end a
    /// character.
    Unknown,
}

impl Format {
    fn bytes(&self) -> Bytes {
        match self.charset.as_deref() {
            Some("binary" | "latin1" | "ascii") => Bytes::Single,
            Some("utf8" | "utf8mb3" | "utf8mb4") => Bytes::Utf8,
            _ => Bytes::Unknown,
        }
    }

    /// Why the proxy cannot read files in this format as the server does (None: it can).
    pub fn unreadable(&self) -> Option<&'static str> {
        if self.field_term.is_empty() && self.enclosed.is_none() {
            return Some("fixed-width rows (FIELDS TERMINATED BY '')");
        }
        if self.field_term.is_empty() || self.line_term.is_empty() {
            return Some("an empty FIELDS or LINES terminator");
        }
        if self.escaped.is_some() && self.escaped == self.enclosed {
            return Some("ESCAPED BY the enclosing character");
        }
        let specials = self.specials();
        if self.bytes() != Bytes::Single && specials.iter().any(|b| *b >= 0x80) {
            return Some("a terminator or enclosure of bytes of 0x80 or more");
        }
        None
    }

    fn specials(&self) -> Vec<u8> {
        let mut s: Vec<u8> = Vec::new();
        s.extend(&self.field_term);
        s.extend(&self.line_term);
        s.extend(&self.line_start);
        s.extend(self.enclosed);
        s.extend(self.escaped);
        s
    }
}

type Step<T> = Result<T, &'static str>;

struct Cursor<'a> {
    sql: &'a [u8],
    d: Dialect,
    toks: Scanner<'a>,
    peeked: Option<Option<Token>>,
    last_end: usize,
}

impl Cursor<'_> {
    fn tok(&mut self) -> Step<Option<Token>> {
        if let Some(p) = self.peeked.take() {
            return Ok(p);
        }
        let t = self
            .toks
            .next()
            .transpose()
            .map_err(|_| "a token the reader does not follow")?;
        if let Some(t) = &t {
            self.last_end = t.end;
        }
        Ok(t)
    }

    fn peek(&mut self) -> Step<Option<Token>> {
        let t = self.tok()?;
        self.peeked = Some(t);
        Ok(t)
    }

    fn is(&self, t: &Option<Token>, w: &str) -> bool {
        t.is_some_and(|t| t.is_word(self.sql, w))
    }

    fn word(&mut self, w: &str) -> Step<()> {
        let t = self.tok()?;
        if self.is(&t, w) {
            Ok(())
        } else {
            Err("a LOAD DATA shape the reader does not follow")
        }
    }

    /// A string option's bytes ('…' or X'…').
    fn string(&mut self) -> Step<Vec<u8>> {
        match self.tok()? {
            Some(t) if t.kind == Tok::Str => Ok(string_value(self.sql, &t, self.d)),
            Some(t) if t.kind == Tok::Hex => hex_value(self.sql, &t).ok_or("a malformed literal"),
            _ => Err("a LOAD DATA option the reader does not follow"),
        }
    }

    /// A one-character option (ENCLOSED BY, ESCAPED BY): None when empty.
    fn char_option(&mut self) -> Step<Option<u8>> {
        let s = self.string()?;
        match s.as_slice() {
            [] => Ok(None),
            [c] => Ok(Some(*c)),
            _ => Err("an ENCLOSED BY or ESCAPED BY of more than one byte"),
        }
    }

    fn ident(&self, t: &Option<Token>) -> Option<Vec<u8>> {
        t.filter(|t| matches!(t.kind, Tok::Word | Tok::QuotedIdent))
            .map(|t| ident_value(self.sql, &t))
    }

    fn table_name(&mut self) -> Step<TableName> {
        let first = self.tok()?;
        let first = self
            .ident(&first)
            .ok_or("a table name the reader does not follow")?;
        let dot = self.peek()?;
        let (schema, name) = if dot.is_some_and(|t| t.is_punct(b'.')) {
            self.tok()?;
            let second = self.tok()?;
            let second = self
                .ident(&second)
                .ok_or("a table name the reader does not follow")?;
            (Some(first), second)
        } else {
            (None, first)
        };
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(TableName {
            schema: schema.as_deref().map(lossy),
            name: compact_str::CompactString::from_utf8_lossy(&name),
            raw_schema: schema,
            raw_name: name.into(),
        })
    }

    /// A column name starting at `first`: `col`, `tbl.col`, `db.tbl.col` name it last.
    fn column(&mut self, first: Option<Token>) -> Step<Vec<u8>> {
        const WHY: &str = "a column name the reader does not follow";
        let mut name = self.ident(&first).ok_or(WHY)?;
        while self.peek()?.is_some_and(|s| s.is_punct(b'.')) {
            self.tok()?;
            let part = self.tok()?;
            name = self.ident(&part).ok_or(WHY)?;
        }
        Ok(name)
    }

    /// Skips a parenthesised list after its `(`.
    fn skip_to_close(&mut self) -> Step<()> {
        let mut depth = 1usize;
        while depth > 0 {
            match self.tok()? {
                Some(t) if t.is_punct(b'(') => depth += 1,
                Some(t) if t.is_punct(b')') => depth -= 1,
                Some(_) => {}
                None => return Err("an unclosed parenthesis"),
            }
        }
        Ok(())
    }
}

/// Reads a LOAD DATA statement; None when `sql` is not one (LOAD INDEX); LOAD XML is a shape
/// the reader does not follow.
pub fn read(sql: &[u8], d: Dialect) -> Option<Step<Load>> {
    let mut c = Cursor {
        sql,
        d,
        toks: Scanner::new(sql, d),
        peeked: None,
        last_end: 0,
    };
    let first = c.tok().ok()?;
    if !c.is(&first, "LOAD") {
        return None;
    }
    let second = c.tok().ok()?;
    if c.is(&second, "XML") {
        // MariaDB's LOAD XML writes rows too: they are not read
        return Some(Err(
            "LOAD XML, whose rows obkv-proxy does not read; use LOAD DATA",
        ));
    }
    if !c.is(&second, "DATA") {
        return None;
    }
    Some(read_rest(&mut c))
}

fn read_rest(c: &mut Cursor<'_>) -> Step<Load> {
    let mut t = c.tok()?;
    while c.is(&t, "LOW_PRIORITY") || c.is(&t, "CONCURRENT") {
        t = c.tok()?;
    }
    let local = c.is(&t, "LOCAL");
    if local {
        t = c.tok()?;
    }
    if !c.is(&t, "INFILE") {
        return Err("a LOAD DATA shape the reader does not follow");
    }
    let file = c.string()?;
    let mut t = c.tok()?;
    if c.is(&t, "REPLACE") || c.is(&t, "IGNORE") {
        t = c.tok()?;
    }
    if !c.is(&t, "INTO") {
        return Err("a LOAD DATA shape the reader does not follow");
    }
    c.word("TABLE")?;
    let table = c.table_name()?;
    let mut load = Load {
        local,
        file,
        table,
        format: Format::default(),
        ignore_lines: 0,
        columns: None,
        set: Vec::new(),
        end: 0,
    };
    let mut t = c.tok()?;
    if c.is(&t, "PARTITION") {
        match c.tok()? {
            Some(p) if p.is_punct(b'(') => c.skip_to_close()?,
            _ => return Err("a PARTITION clause the reader does not follow"),
        }
        t = c.tok()?;
    }
    if c.is(&t, "CHARACTER") || c.is(&t, "CHARSET") {
        if c.is(&t, "CHARACTER") {
            c.word("SET")?;
        }
        let name = c.tok()?;
        let name = match name {
            Some(n) if n.kind == Tok::Str => string_value(c.sql, &n, c.d),
            n => c
                .ident(&n)
                .ok_or("a CHARACTER SET the reader does not follow")?,
        };
        load.format.charset = Some(String::from_utf8_lossy(&name).to_ascii_lowercase());
        t = c.tok()?;
    }
    if c.is(&t, "FIELDS") || c.is(&t, "COLUMNS") {
        t = c.tok()?;
        loop {
            if c.is(&t, "TERMINATED") {
                c.word("BY")?;
                load.format.field_term = c.string()?;
            } else if c.is(&t, "OPTIONALLY") || c.is(&t, "ENCLOSED") {
                if c.is(&t, "OPTIONALLY") {
                    c.word("ENCLOSED")?;
                }
                c.word("BY")?;
                load.format.enclosed = c.char_option()?;
            } else if c.is(&t, "ESCAPED") {
                c.word("BY")?;
                load.format.escaped = c.char_option()?;
            } else {
                break;
            }
            t = c.tok()?;
        }
    }
    if c.is(&t, "LINES") {
        t = c.tok()?;
        loop {
            if c.is(&t, "STARTING") {
                c.word("BY")?;
                load.format.line_start = c.string()?;
            } else if c.is(&t, "TERMINATED") {
                c.word("BY")?;
                load.format.line_term = c.string()?;
            } else {
                break;
            }
            t = c.tok()?;
        }
    }
    if c.is(&t, "IGNORE") {
        let n = c.tok()?;
        let n = match n {
            Some(n) if n.kind == Tok::Number => std::str::from_utf8(n.text(c.sql))
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or("an IGNORE count the reader does not follow")?,
            _ => return Err("an IGNORE count the reader does not follow"),
        };
        load.ignore_lines = n;
        let unit = c.tok()?;
        if !(c.is(&unit, "LINES") || c.is(&unit, "ROWS")) {
            return Err("an IGNORE clause the reader does not follow");
        }
        t = c.tok()?;
    }
    if t.is_some_and(|t| t.is_punct(b'(')) {
        let mut cols = Vec::new();
        loop {
            let x = c.tok()?;
            match x {
                Some(x) if x.is_punct(b')') && cols.is_empty() => break,
                Some(x) if x.kind == Tok::Var => cols.push(None),
                Some(_) => cols.push(Some(c.column(x)?)),
                None => return Err("an unclosed column list"),
            }
            match c.tok()? {
                Some(s) if s.is_punct(b',') => continue,
                Some(s) if s.is_punct(b')') => break,
                _ => return Err("a column list the reader does not follow"),
            }
        }
        load.columns = Some(cols);
        t = c.tok()?;
    }
    if c.is(&t, "SET") {
        loop {
            let col = c.tok()?;
            let name = c.column(col)?;
            if !c.tok()?.is_some_and(|x| x.is_punct(b'=')) {
                return Err("a SET clause the reader does not follow");
            }
            load.set.push(name);
            // the expression, to the next comma outside parentheses
            let mut depth = 0usize;
            let mut seen = 0usize;
            loop {
                match c.peek()? {
                    None => break,
                    Some(s) if s.is_punct(b',') && depth == 0 => break,
                    Some(s) if s.is_punct(b'(') => depth += 1,
                    Some(s) if s.is_punct(b')') => {
                        depth = depth
                            .checked_sub(1)
                            .ok_or("a SET clause the reader does not follow")?
                    }
                    Some(_) => {}
                }
                c.tok()?;
                seen += 1;
            }
            if seen == 0 {
                return Err("a SET clause the reader does not follow");
            }
            match c.tok()? {
                Some(s) if s.is_punct(b',') => continue,
                None => break,
                Some(_) => return Err("a SET clause the reader does not follow"),
            }
        }
        t = None;
    }
    if t.is_some() {
        return Err("a LOAD DATA clause the reader does not follow");
    }
    load.end = c.last_end;
    Ok(load)
}

/// A field of a file's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Null,
    Bytes(Vec<u8>),
}

/// What reading the next row of a file gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A row's first `columns` fields (fewer when the row has fewer).
    Row(Vec<Field>),
    /// The bytes so far end inside a row: feed more (or the end).
    More,
    /// No rows after this.
    End,
    /// The rest cannot be read with certainty (see the module's notes).
    Unsure(&'static str),
    /// A row needs more than the reader's `max_row` bytes (the rest is not read).
    TooLong,
}

/// Rows of a file in `Format`, read from bytes fed as they arrive. A row is read once its
/// last byte is here; bytes already read are dropped (the buffer holds at most one partial row
/// and what came with its last piece). A row that needs more than `max_row` bytes is `Unsure`.
pub struct FileRows {
    format: Format,
    bytes: Bytes,
    columns: usize,
    buf: Vec<u8>,
    /// Where the unread bytes of `buf` begin (read bytes are dropped in bulk, not per row).
    start: usize,
    eof: bool,
    /// Lines still to skip (IGNORE n LINES).
    skip: u64,
    /// The row being read starts with LINES STARTING BY still to find.
    start_of_line: bool,
    /// The unread length when a row last needed more (it is read again once that doubled).
    tried_at: usize,
    max_row: usize,
    done: bool,
}

/// The reader's outcome on one field.
enum FieldEnd {
    /// A field, and whether the line ended after it.
    Field(Field, bool),
    /// No field: the line (or the file) ended before it.
    None,
}

#[derive(Debug)]
enum Stop {
    More,
    Unsure(&'static str),
}

struct Pos<'a> {
    b: &'a [u8],
    i: usize,
    eof: bool,
}

impl Pos<'_> {
    /// The next byte; None at the end of the file; Err(More) at the end of the bytes so far.
    fn get(&mut self) -> Result<Option<u8>, Stop> {
        match self.b.get(self.i) {
            Some(c) => {
                self.i += 1;
                Ok(Some(*c))
            }
            None if self.eof => Ok(None),
            None => Err(Stop::More),
        }
    }

    /// Whether `term` (whose first byte was just read) follows; consumed when it does.
    fn terminator(&mut self, term: &[u8]) -> Result<bool, Stop> {
        let rest = term.get(1..).unwrap_or_default();
        let have = self.b.get(self.i..).unwrap_or_default();
        if have.len() < rest.len() && !self.eof && have.starts_with(&rest[..have.len()]) {
            return Err(Stop::More);
        }
        if have.starts_with(rest) {
            self.i += rest.len();
            return Ok(true);
        }
        Ok(false)
    }
}

impl FileRows {
    pub fn new(format: Format, columns: usize, ignore_lines: u64, max_row: usize) -> Self {
        let bytes = format.bytes();
        FileRows {
            start_of_line: !format.line_start.is_empty(),
            format,
            bytes,
            columns,
            buf: Vec::new(),
            start: 0,
            eof: false,
            skip: ignore_lines,
            tried_at: 0,
            max_row,
            done: false,
        }
    }

    /// More of the file.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        // drop what was read once it is most of the buffer (each byte moves at most once)
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
            if self.buf.capacity() > 4 * self.max_row.max(1 << 16) {
                self.buf.shrink_to(self.buf.len().max(1 << 16));
            }
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The file ended.
    pub fn finish(&mut self) {
        self.eof = true;
    }

    /// Reading ends here (the rest is not read).
    fn stop(&mut self) {
        self.done = true;
        self.buf = Vec::new();
        self.start = 0;
    }

    /// The next row, if its bytes are all here.
    pub fn next_row(&mut self) -> Next {
        loop {
            if self.done {
                return Next::End;
            }
            let unread = self.buf.len() - self.start;
            // a row that needed more is read again only once enough has come (linear in bytes)
            if !self.eof && self.tried_at > 0 && unread < 2 * self.tried_at {
                return Next::More;
            }
            let mut pos = Pos {
                b: self.buf.get(self.start..).unwrap_or_default(),
                i: 0,
                eof: self.eof,
            };
            let mut start_of_line = self.start_of_line;
            // IGNORE n LINES: one line at a time, each kept as read
            let read = if self.skip > 0 {
                next_line(&self.format, self.bytes, &mut pos).map(|eof| {
                    if eof {
                        self.skip = 0;
                        Some(None)
                    } else {
                        self.skip -= 1;
                        start_of_line = !self.format.line_start.is_empty();
                        None
                    }
                })
            } else {
                read_one(
                    &self.format,
                    self.bytes,
                    self.columns,
                    &mut pos,
                    &mut start_of_line,
                )
                .map(Some)
            };
            match read {
                Ok(row) => {
                    self.start += pos.i;
                    self.start_of_line = start_of_line;
                    self.tried_at = 0;
                    match row {
                        None => continue, // a line skipped
                        Some(Some(r)) => return Next::Row(r),
                        Some(None) => {
                            self.stop();
                            return Next::End;
                        }
                    }
                }
                Err(Stop::More) => {
                    if unread > self.max_row {
                        self.stop();
                        return Next::TooLong;
                    }
                    self.tried_at = unread.max(1);
                    return Next::More;
                }
                Err(Stop::Unsure(why)) => {
                    self.stop();
                    return Next::Unsure(why);
                }
            }
        }
    }
}

/// One row: Ok(None) at the end of the file.
fn read_one(
    f: &Format,
    cs: Bytes,
    columns: usize,
    p: &mut Pos<'_>,
    start_of_line: &mut bool,
) -> Result<Option<Vec<Field>>, Stop> {
    let mut fields = Vec::new();
    let mut line_ended = false;
    while fields.len() < columns.max(1) {
        match read_field(f, cs, p, start_of_line)? {
            FieldEnd::Field(v, ended) => {
                fields.push(v);
                if ended {
                    line_ended = true;
                    break;
                }
            }
            FieldEnd::None => {
                line_ended = true;
                break;
            }
        }
    }
    if fields.is_empty() {
        return Ok(None);
    }
    // the rest of the line (fields beyond the columns) is skipped as the server skips it
    if !line_ended {
        next_line(f, cs, p)?;
    }
    *start_of_line = !f.line_start.is_empty();
    fields.truncate(columns);
    Ok(Some(fields))
}

/// Skips to after the next line terminator (escapes followed, enclosures not: the server's
/// `next_line`). Ok(true) at the end of the file.
fn next_line(f: &Format, cs: Bytes, p: &mut Pos<'_>) -> Result<bool, Stop> {
    let mut prev: Option<u8> = None;
    loop {
        let Some(c) = p.get()? else {
            return Ok(true);
        };
        unsure_after(f, cs, prev, c)?;
        prev = Some(c);
        if Some(c) == f.escaped {
            if p.get()?.is_none() {
                return Ok(true);
            }
            prev = None;
            continue;
        }
        if f.line_term.first() == Some(&c) && p.terminator(&f.line_term)? {
            return Ok(false);
        }
    }
}

/// A byte of 0x80 or more before a special byte of 0x40–0x7E: in a multibyte character set
/// the pair may be one character.
fn unsure_after(f: &Format, cs: Bytes, prev: Option<u8>, c: u8) -> Result<(), Stop> {
    if cs == Bytes::Unknown
        && prev.is_some_and(|p| p >= 0x80)
        && (0x40..=0x7e).contains(&c)
        && f.specials().contains(&c)
    {
        return Err(Stop::Unsure(
            "a byte of 0x80 or more before a special character, in a character set the proxy \
             does not know (name it with CHARACTER SET)",
        ));
    }
    Ok(())
}

fn unescape(c: u8, null: &mut bool) -> u8 {
    match c {
        b'n' => b'\n',
        b't' => b'\t',
        b'r' => b'\r',
        b'b' => 8,
        b'0' => 0,
        b'Z' => 26,
        b'N' => {
            *null = true;
            b'N'
        }
        other => other,
    }
}

/// One field, as the server's `read_field` reads it.
fn read_field(
    f: &Format,
    cs: Bytes,
    p: &mut Pos<'_>,
    start_of_line: &mut bool,
) -> Result<FieldEnd, Stop> {
    if *start_of_line {
        // skip to after LINES STARTING BY (lines without it are skipped)
        let start = &f.line_start;
        loop {
            let Some(c) = p.get()? else {
                return Ok(FieldEnd::None);
            };
            if start.first() == Some(&c) && p.terminator(start)? {
                break;
            }
        }
        *start_of_line = false;
    }
    let Some(first) = p.get()? else {
        return Ok(FieldEnd::None);
    };
    let enclosed = f.enclosed.filter(|e| *e == first);
    if enclosed.is_none() {
        p.i -= 1;
    }
    let mut out = Vec::new();
    let mut null = false;
    let mut prev: Option<u8> = None;
    // the end of the file inside a field: an enclosed one keeps its opening byte (the server
    // reads it from the start of its buffer then)
    let at_eof = |mut out: Vec<u8>| {
        if let Some(e) = enclosed {
            out.insert(0, e);
        }
        out
    };
    let field = |out: Vec<u8>, null: bool, was_enclosed: bool| {
        if (null && out.len() == 1) || (!was_enclosed && f.enclosed.is_some() && out == b"NULL") {
            Field::Null
        } else {
            Field::Bytes(out)
        }
    };
    loop {
        let Some(mut c) = p.get()? else {
            // the end of the file ends the field and the line
            return Ok(FieldEnd::Field(field(at_eof(out), null, false), true));
        };
        unsure_after(f, cs, prev, c)?;
        prev = Some(c);
        if Some(c) == f.escaped {
            match p.get()? {
                None => {
                    out.push(c);
                    return Ok(FieldEnd::Field(field(at_eof(out), null, false), true));
                }
                Some(e) => {
                    out.push(unescape(e, &mut null));
                    prev = None;
                    continue;
                }
            }
        }
        if enclosed.is_none() && f.line_term.first() == Some(&c) && p.terminator(&f.line_term)? {
            return Ok(FieldEnd::Field(field(out, null, false), true));
        }
        if enclosed == Some(c) {
            match p.get()? {
                Some(n) if Some(n) == enclosed => {
                    out.push(n);
                    continue;
                }
                None => return Ok(FieldEnd::Field(field(out, null, true), true)),
                Some(n) => {
                    if f.line_term.first() == Some(&n) && p.terminator(&f.line_term)? {
                        return Ok(FieldEnd::Field(field(out, null, true), true));
                    }
                    if f.field_term.first() == Some(&n) && p.terminator(&f.field_term)? {
                        return Ok(FieldEnd::Field(field(out, null, true), false));
                    }
                    // not the end: the enclosing byte is data, the next one is read again
                    p.i -= 1;
                    c = enclosed.unwrap_or(c);
                }
            }
        } else if enclosed.is_none()
            && f.field_term.first() == Some(&c)
            && p.terminator(&f.field_term)?
        {
            return Ok(FieldEnd::Field(field(out, null, false), false));
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(sql: &str) -> Load {
        read(sql.as_bytes(), Dialect::default())
            .expect("a LOAD DATA")
            .expect("read")
    }

    fn rows(format: Format, columns: usize, ignore: u64, file: &[u8], chunk: usize) -> Vec<Next> {
        let mut r = FileRows::new(format, columns, ignore, 1 << 20);
        let mut out = Vec::new();
        for piece in file.chunks(chunk.max(1)) {
            r.feed(piece);
            loop {
                match r.next_row() {
                    Next::More => break,
                    n => {
                        let end = !matches!(n, Next::Row(_));
                        out.push(n);
                        if end {
                            return out;
                        }
                    }
                }
            }
        }
        r.finish();
        loop {
            let n = r.next_row();
            let end = !matches!(n, Next::Row(_));
            out.push(n);
            if end {
                return out;
            }
        }
    }

    fn b(s: &[u8]) -> Field {
        Field::Bytes(s.to_vec())
    }

    #[test]
    fn statements_are_read() {
        let l = load(
            "LOAD DATA LOCAL INFILE '/tmp/x.csv' REPLACE INTO TABLE db.`t$f` CHARACTER SET binary \
             FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' \
             LINES STARTING BY 'x' TERMINATED BY '\\r\\n' IGNORE 1 LINES (K, @q, t.T, V) \
             SET Q = UNHEX(@q), T = -(1 + 2)",
        );
        assert!(l.local);
        assert_eq!(l.table.name, "t$f");
        assert_eq!(l.table.schema.as_deref(), Some("db"));
        assert_eq!(l.format.field_term, b",");
        assert_eq!(l.format.enclosed, Some(b'"'));
        assert_eq!(l.format.escaped, Some(b'\\'));
        assert_eq!(l.format.line_start, b"x");
        assert_eq!(l.format.line_term, b"\r\n");
        assert_eq!(l.format.charset.as_deref(), Some("binary"));
        assert_eq!(l.ignore_lines, 1);
        assert_eq!(
            l.columns,
            Some(vec![
                Some(b"K".to_vec()),
                None,
                Some(b"T".to_vec()),
                Some(b"V".to_vec())
            ])
        );
        assert_eq!(l.set, vec![b"Q".to_vec(), b"T".to_vec()]);
        let plain = load("LOAD DATA INFILE 'f' INTO TABLE t");
        assert!(!plain.local);
        assert_eq!(plain.format, Format::default());
        assert_eq!(plain.end, "LOAD DATA INFILE 'f' INTO TABLE t".len());
        assert!(matches!(
            read(b"LOAD XML INFILE 'f' INTO TABLE t", Dialect::default()),
            Some(Err(_))
        ));
        assert!(read(b"LOAD INDEX INTO CACHE t", Dialect::default()).is_none());
        assert!(read(b"SELECT 1", Dialect::default()).is_none());
        for bad in [
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'",
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE t (K",
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE t SET K =",
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE t garbage",
        ] {
            assert!(
                read(bad.as_bytes(), Dialect::default()).unwrap().is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn tab_separated_rows_with_escapes() {
        let file = b"k1\tq\\tx\t\\N\nk2\t\\\\\tv\n\nk3";
        for chunk in [1, 2, 3, 100] {
            let r = rows(Format::default(), 3, 0, file, chunk);
            assert_eq!(
                r,
                vec![
                    Next::Row(vec![b(b"k1"), b(b"q\tx"), Field::Null]),
                    Next::Row(vec![b(b"k2"), b(b"\\"), b(b"v")]),
                    Next::Row(vec![b(b"")]),
                    Next::Row(vec![b(b"k3")]),
                    Next::End,
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn csv_with_enclosures_and_a_header() {
        let f = Format {
            field_term: b",".to_vec(),
            enclosed: Some(b'"'),
            line_term: b"\r\n".to_vec(),
            ..Format::default()
        };
        let file =
            b"K,Q,V\r\n\"a,b\",\"say \"\"hi\"\"\",NULL\r\n\"x\ny\",\"NULL\",extra,fields\r\nz";
        for chunk in [1, 4, 1000] {
            let r = rows(f.clone(), 3, 1, file, chunk);
            assert_eq!(
                r,
                vec![
                    Next::Row(vec![b(b"a,b"), b(b"say \"hi\""), Field::Null]),
                    Next::Row(vec![b(b"x\ny"), b(b"NULL"), b(b"extra")]),
                    Next::Row(vec![b(b"z")]),
                    Next::End,
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn lines_starting_by_skip_what_precedes_it() {
        let f = Format {
            line_start: b"xx".to_vec(),
            field_term: b",".to_vec(),
            ..Format::default()
        };
        let r = rows(f, 2, 0, b"junk\nxxa,b\nno prefix\nyyxxc,d\n", 3);
        assert_eq!(
            r,
            vec![
                Next::Row(vec![b(b"a"), b(b"b")]),
                Next::Row(vec![b(b"c"), b(b"d")]),
                Next::End
            ]
        );
    }

    #[test]
    fn what_may_read_otherwise_is_unsure() {
        // 0x81 0x5C is one gbk character: not known without CHARACTER SET
        let r = rows(Format::default(), 2, 0, b"a\x81\\\tb\n", 100);
        assert!(matches!(r[0], Next::Unsure(_)), "{r:?}");
        let latin = Format {
            charset: Some("latin1".into()),
            ..Format::default()
        };
        let r = rows(latin, 2, 0, b"a\x81\\\tb\n", 100);
        // latin1: the backslash escapes the tab, which is then data
        assert_eq!(r[0], Next::Row(vec![b(b"a\x81\tb")]));
        // a row past the limit
        let mut fr = FileRows::new(Format::default(), 2, 0, 8);
        fr.feed(b"0123456789abcdef");
        assert_eq!(fr.next_row(), Next::TooLong);
        assert_eq!(fr.next_row(), Next::End);
        // lines skipped one by one: many of them are not one long row
        let mut fr = FileRows::new(Format::default(), 2, 100, 64);
        for _ in 0..100 {
            fr.feed(b"a header line longer than nothing\n");
            assert_eq!(fr.next_row(), Next::More);
        }
        fr.feed(b"k\tv\n");
        assert_eq!(fr.next_row(), Next::Row(vec![b(b"k"), b(b"v")]));
        let fixed = Format {
            field_term: Vec::new(),
            ..Format::default()
        };
        assert!(fixed.unreadable().is_some());
        assert!(Format::default().unreadable().is_none());
    }
}
