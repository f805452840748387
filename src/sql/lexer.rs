//! Owned tokens with decoded values and byte offsets: what the DDL reader reads and what
//! splicing rewrites need (sqlparser's tokenizer takes `&str` and reports line/column positions,
//! and its parser rejects OceanBase's TABLEGROUP and PARTITION BY clauses). Where tokens start and
//! end is decided by `scan`, the one reader of SQL text.

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
    /// `@name` / `@@name`, as written.
    Var(String),
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

use super::scan::{hex_value, ident_value, string_value, Scanner, Tok};
pub use super::scan::{Dialect, LexError};

/// Owned tokens of a whole statement, read with the default dialect.
pub fn tokenize(sql: &[u8]) -> Result<Vec<Token>, LexError> {
    tokenize_with(sql, Dialect::default())
}

/// Owned tokens of a statement as `d` reads it (executable comments, escapes, quotes): for
/// statements the proxy must understand in detail. Built on `scan::Scanner`, which decides where
/// every token starts and ends; this adds the decoded values.
pub fn tokenize_with(sql: &[u8], d: Dialect) -> Result<Vec<Token>, LexError> {
    let mut out: Vec<Token> = Vec::new();
    for t in Scanner::new(sql, d) {
        let t = t?;
        let text = t.text(sql);
        let kind = match t.kind {
            Tok::Word => Kind::Word(String::from_utf8_lossy(text).into_owned()),
            Tok::QuotedIdent => {
                Kind::Quoted(String::from_utf8_lossy(&ident_value(sql, &t)).into_owned())
            }
            Tok::Str => {
                let value = string_value(sql, &t, d);
                // a charset introducer before a string: _binary'…', _utf8mb4'…'
                if let Some(prev) = out.last_mut() {
                    if matches!(&prev.kind, Kind::Word(w) if w.starts_with('_'))
                        && prev.end == t.start
                    {
                        prev.kind = Kind::Str(value);
                        prev.end = t.end;
                        continue;
                    }
                }
                Kind::Str(value)
            }
            Tok::Hex => Kind::Hex(hex_value(sql, &t).ok_or(LexError("bad hex literal", t.start))?),
            Tok::Number => Kind::Number(String::from_utf8_lossy(text).into_owned()),
            Tok::Var => Kind::Var(String::from_utf8_lossy(text).into_owned()),
            Tok::Punct(c) => Kind::Punct(c),
        };
        out.push(Token {
            kind,
            start: t.start,
            end: t.end,
        });
    }
    Ok(out)
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
