//! The reader's position in a statement's tokens, and the reading of names, keywords and
//! values it is built on.

use super::terms::{ParseError, TableName};
use crate::sql::lexer::{Kind, Token};

pub(super) struct Cursor<'a> {
    pub(super) t: &'a [Token],
    pub(super) i: usize,
    /// The statement, for the exact bytes of names.
    pub(super) sql: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(super) fn peek(&self) -> Option<&'a Token> {
        self.t.get(self.i)
    }
    pub(super) fn peek_at(&self, k: usize) -> Option<&'a Token> {
        self.t.get(self.i + k)
    }
    pub(super) fn next(&mut self) -> Option<&'a Token> {
        let t = self.t.get(self.i);
        self.i += usize::from(t.is_some());
        t
    }
    pub(super) fn kw(&mut self, k: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_keyword(k)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn kws(&mut self, ks: &[&str]) -> bool {
        let ok = ks
            .iter()
            .enumerate()
            .all(|(j, k)| self.peek_at(j).is_some_and(|t| t.is_keyword(k)));
        if ok {
            self.i += ks.len();
        }
        ok
    }
    pub(super) fn punct(&mut self, c: u8) -> bool {
        if self.peek().is_some_and(|t| t.is_punct(c)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn expect_punct(&mut self, c: u8) -> Result<&'a Token, ParseError> {
        match self.next() {
            Some(t) if t.is_punct(c) => Ok(t),
            _ => Err(ParseError(format!("expected '{}'", c as char))),
        }
    }
    pub(super) fn ident(&mut self) -> Result<String, ParseError> {
        self.next()
            .and_then(|t| t.ident().map(str::to_owned))
            .ok_or_else(|| ParseError("expected a name".into()))
    }
    /// The exact bytes of the identifier token just read (quotes removed, doubled quotes
    /// undone), in the client's character set.
    pub(super) fn last_ident_bytes(&self) -> Vec<u8> {
        let Some(t) = self.i.checked_sub(1).and_then(|i| self.t.get(i)) else {
            return Vec::new();
        };
        let raw = self.sql.get(t.start..t.end).unwrap_or_default();
        match t.kind {
            Kind::Quoted(_) => crate::sql::scan::unquote_ident(raw),
            _ => raw.to_vec(),
        }
    }
    pub(super) fn table_name(&mut self) -> Result<TableName, ParseError> {
        let first = self.ident()?;
        let first_raw = self.last_ident_bytes();
        if self.punct(b'.') {
            let name = self.ident()?;
            Ok(TableName {
                schema: Some(first),
                name: name.into(),
                raw_schema: Some(first_raw),
                raw_name: self.last_ident_bytes().into(),
            })
        } else {
            Ok(TableName {
                schema: None,
                name: first.into(),
                raw_schema: None,
                raw_name: first_raw.into(),
            })
        }
    }
    pub(super) fn number(&mut self) -> Result<u64, ParseError> {
        match self.next().map(|t| &t.kind) {
            Some(Kind::Number(n)) => n.parse().map_err(|_| ParseError(format!("bad number {n}"))),
            _ => Err(ParseError("expected a number".into())),
        }
    }
    /// Skips a balanced parenthesised group starting at '('; returns the offset after ')'.
    pub(super) fn skip_group(&mut self) -> Result<usize, ParseError> {
        self.expect_punct(b'(')?;
        let mut depth = 1;
        while let Some(t) = self.next() {
            if t.is_punct(b'(') {
                depth += 1;
            } else if t.is_punct(b')') {
                depth -= 1;
                if depth == 0 {
                    return Ok(t.end);
                }
            }
        }
        Err(ParseError("unbalanced parentheses".into()))
    }
    pub(super) fn name_list(&mut self) -> Result<Vec<String>, ParseError> {
        self.expect_punct(b'(')?;
        let mut names = Vec::new();
        loop {
            names.push(self.ident()?);
            if self.punct(b'(') {
                // index prefix length: KEY (K(10))
                self.number()?;
                self.expect_punct(b')')?;
            }
            self.kw("ASC");
            self.kw("DESC");
            if self.punct(b')') {
                return Ok(names);
            }
            self.expect_punct(b',')?;
        }
    }
    pub(super) fn at_end(&self) -> bool {
        self.peek().is_none_or(|t| t.is_punct(b';'))
    }
}
