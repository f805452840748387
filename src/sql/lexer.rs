//! A MySQL lexer over bytes, with byte offsets: what DDL checks read and what splicing
//! rewrites need (sqlparser's tokenizer takes `&str` and reports line/column positions, and its
//! parser rejects OceanBase's TABLEGROUP and PARTITION BY clauses).

/// A token and where it stands in the statement (`start..end`, bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Unquoted word: keyword or identifier (may contain `$`).
    Word(String),
    /// `backquoted` identifier, unescaped.
    Quoted(String),
    /// String literal ('…' or "…"), unescaped bytes; a charset introducer (`_binary`) is dropped.
    Str(Vec<u8>),
    /// X'hex' / 0xhex literal, decoded.
    Hex(Vec<u8>),
    Number(String),
    Punct(u8),
}

impl Token {
    /// Upper-cased word, or None for other tokens.
    pub fn keyword(&self) -> Option<String> {
        match &self.kind {
            Kind::Word(w) => Some(w.to_ascii_uppercase()),
            _ => None,
        }
    }

    pub fn is_keyword(&self, k: &str) -> bool {
        matches!(&self.kind, Kind::Word(w) if w.eq_ignore_ascii_case(k))
    }

    pub fn is_punct(&self, c: u8) -> bool {
        self.kind == Kind::Punct(c)
    }

    /// Identifier text (unquoted word or backquoted name).
    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Word(w) | Kind::Quoted(w) => Some(w),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} at byte {1}")]
pub struct LexError(pub &'static str, pub usize);

pub fn tokenize(sql: &[u8]) -> Result<Vec<Token>, LexError> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = sql.len();
    while i < n {
        let c = sql[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#'
            || (c == b'-'
                && sql.get(i + 1) == Some(&b'-')
                && sql.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()))
        {
            i = memchr::memchr(b'\n', &sql[i..]).map_or(n, |j| i + j + 1);
            continue;
        }
        if c == b'/' && sql.get(i + 1) == Some(&b'*') {
            i = memchr::memmem::find(&sql[i + 2..], b"*/").map_or(n, |j| i + 2 + j + 2);
            continue;
        }
        let start = i;
        // hex literals: X'…' and 0x…
        if (c == b'x' || c == b'X') && sql.get(i + 1) == Some(&b'\'') {
            let end = memchr::memchr(b'\'', &sql[i + 2..])
                .map(|j| i + 2 + j)
                .ok_or(LexError("unterminated hex literal", i))?;
            let bytes = decode_hex(&sql[i + 2..end]).ok_or(LexError("bad hex literal", i))?;
            out.push(Token {
                kind: Kind::Hex(bytes),
                start,
                end: end + 1,
            });
            i = end + 1;
            continue;
        }
        if c == b'0'
            && matches!(sql.get(i + 1), Some(b'x'))
            && sql.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            let mut j = i + 2;
            while j < n && sql[j].is_ascii_hexdigit() {
                j += 1;
            }
            let digits = &sql[i + 2..j];
            let padded: Vec<u8> = if !digits.len().is_multiple_of(2) {
                [b"0", digits].concat()
            } else {
                digits.to_vec()
            };
            let bytes = decode_hex(&padded).ok_or(LexError("bad hex literal", i))?;
            out.push(Token {
                kind: Kind::Hex(bytes),
                start,
                end: j,
            });
            i = j;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && sql.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut j = i;
            while j < n && (sql[j].is_ascii_alphanumeric() || sql[j] == b'.') {
                j += 1;
            }
            // 12abc is an identifier in MySQL
            if sql[i..j]
                .iter()
                .any(|b| b.is_ascii_alphabetic() && *b != b'e' && *b != b'E')
            {
                let w = String::from_utf8_lossy(&sql[i..j]).into_owned();
                out.push(Token {
                    kind: Kind::Word(w),
                    start,
                    end: j,
                });
            } else {
                out.push(Token {
                    kind: Kind::Number(String::from_utf8_lossy(&sql[i..j]).into_owned()),
                    start,
                    end: j,
                });
            }
            i = j;
            continue;
        }
        if c == b'\'' || c == b'"' {
            let (bytes, end) = read_string(sql, i)?;
            out.push(Token {
                kind: Kind::Str(bytes),
                start,
                end,
            });
            i = end;
            continue;
        }
        if c == b'`' {
            let mut j = i + 1;
            let mut name = Vec::new();
            loop {
                match sql.get(j) {
                    None => return Err(LexError("unterminated quoted identifier", i)),
                    Some(b'`') if sql.get(j + 1) == Some(&b'`') => {
                        name.push(b'`');
                        j += 2;
                    }
                    Some(b'`') => break,
                    Some(b) => {
                        name.push(*b);
                        j += 1;
                    }
                }
            }
            out.push(Token {
                kind: Kind::Quoted(String::from_utf8_lossy(&name).into_owned()),
                start,
                end: j + 1,
            });
            i = j + 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 {
            let mut j = i;
            while j < n
                && (sql[j].is_ascii_alphanumeric()
                    || sql[j] == b'_'
                    || sql[j] == b'$'
                    || sql[j] >= 0x80)
            {
                j += 1;
            }
            let word = String::from_utf8_lossy(&sql[i..j]).into_owned();
            // a charset introducer before a string: _binary'…', _utf8mb4'…'
            if word.starts_with('_') && matches!(sql.get(j), Some(b'\'') | Some(b'"')) {
                let (bytes, end) = read_string(sql, j)?;
                out.push(Token {
                    kind: Kind::Str(bytes),
                    start,
                    end,
                });
                i = end;
                continue;
            }
            out.push(Token {
                kind: Kind::Word(word),
                start,
                end: j,
            });
            i = j;
            continue;
        }
        out.push(Token {
            kind: Kind::Punct(c),
            start,
            end: i + 1,
        });
        i += 1;
    }
    Ok(out)
}

fn decode_hex(h: &[u8]) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    h.chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
        })
        .collect()
}

/// A quoted string starting at `i`; returns its unescaped bytes and the end offset.
fn read_string(sql: &[u8], i: usize) -> Result<(Vec<u8>, usize), LexError> {
    let q = sql[i];
    let mut j = i + 1;
    let mut out = Vec::new();
    loop {
        match sql.get(j) {
            None => return Err(LexError("unterminated string", i)),
            Some(b'\\') => {
                let e = *sql.get(j + 1).ok_or(LexError("unterminated string", i))?;
                out.push(match e {
                    b'0' => 0,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 8,
                    b'Z' => 26,
                    other => other,
                });
                j += 2;
            }
            Some(c) if *c == q && sql.get(j + 1) == Some(&q) => {
                out.push(q);
                j += 2;
            }
            Some(c) if *c == q => return Ok((out, j + 1)),
            Some(c) => {
                out.push(*c);
                j += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &[u8]) -> Vec<Kind> {
        tokenize(s)
            .expect("lexes")
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn words_with_dollar_and_offsets() {
        let t = tokenize(b"CREATE TABLE htable1$family1 (K varbinary(1024))").expect("lexes");
        assert_eq!(t[2].kind, Kind::Word("htable1$family1".into()));
        assert_eq!((t[2].start, t[2].end), (13, 28));
        assert!(t[0].is_keyword("create"));
    }

    #[test]
    fn strings_hex_and_comments() {
        assert_eq!(
            kinds(b"/* c */ 'a''b\\n' _binary'\xff\x00' x'0aFF' 0x1 -- tail\n`q``x` # more"),
            vec![
                Kind::Str(b"a'b\n".to_vec()),
                Kind::Str(vec![0xff, 0]),
                Kind::Hex(vec![0x0a, 0xff]),
                Kind::Hex(vec![1]),
                Kind::Quoted("q`x".into()),
            ]
        );
        assert_eq!(
            kinds(b"a-1"),
            vec![
                Kind::Word("a".into()),
                Kind::Punct(b'-'),
                Kind::Number("1".into())
            ]
        );
    }

    #[test]
    fn broken_input_is_an_error() {
        assert!(tokenize(b"'open").is_err());
        assert!(tokenize(b"`open").is_err());
        assert!(tokenize(b"x'0g'").is_err());
        assert!(tokenize(b"'\\").is_err());
    }
}
