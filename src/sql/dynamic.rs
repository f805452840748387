//! SQL-level dynamic SQL as the write rules need it: the name a `PREPARE` gives its statement,
//! the values an `EXECUTE … USING` or `EXECUTE IMMEDIATE … USING` binds, and the names a text
//! executes or deallocates. Pure readers over the scanner's tokens; the router decides and the
//! session reads the values (`SELECT CAST(item AS BINARY), …`: no side effects) and keeps the
//! plan of each prepared name.

use super::scan::{Dialect, Scanner, Tok, Token};

/// Most tokens read of one dynamic statement's head and USING list.
const MAX_TOKENS: usize = 4096;
/// Most values a USING list may bind for the proxy to read them.
pub const MAX_USING: usize = 1024;

/// What a PREPARE / EXECUTE IMMEDIATE / EXECUTE statement names besides its text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    /// `PREPARE name …` / `EXECUTE name …`: the name as the backend compares it (no quotes,
    /// ASCII lower case). None for EXECUTE IMMEDIATE.
    pub name: Option<Vec<u8>>,
    /// `PREPARE name FROM …` (else an EXECUTE).
    pub prepare: bool,
    /// The USING list, each item as written (a user variable or a literal); None when an item
    /// is anything else (an expression the proxy would have to run to know).
    pub using: Option<Vec<Vec<u8>>>,
}

/// A statement's name as the backend compares prepared statement names (case-insensitive).
fn name_of(t: &Token, sql: &[u8]) -> Option<Vec<u8>> {
    let text = t.text(sql);
    let raw = match t.kind {
        Tok::Word => text.to_vec(),
        Tok::QuotedIdent if text.len() >= 2 => {
            let q = text[0];
            let inner = &text[1..text.len() - 1];
            let mut out = Vec::with_capacity(inner.len());
            let mut i = 0;
            while i < inner.len() {
                out.push(inner[i]);
                // a doubled quote stands for one
                i += if inner[i] == q && inner.get(i + 1) == Some(&q) {
                    2
                } else {
                    1
                };
            }
            out
        }
        _ => return None,
    };
    Some(raw.to_ascii_lowercase())
}

/// The items of a USING list (tokens after USING up to the end of the statement).
fn using_items(tokens: &[Token], sql: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut items = Vec::new();
    for item in tokens.split(|t| t.kind == Tok::Punct(b',')) {
        if items.len() >= MAX_USING {
            return None;
        }
        let readable = match item {
            [t] => match t.kind {
                Tok::Var => !t.text(sql).starts_with(b"@@"),
                Tok::Str | Tok::Hex | Tok::Number => true,
                Tok::Word => t.is_word(sql, "NULL"),
                _ => false,
            },
            [a, b] => {
                let signed = matches!(a.kind, Tok::Punct(b'-' | b'+')) && b.kind == Tok::Number;
                let introduced = a.kind == Tok::Word
                    && a.text(sql).starts_with(b"_")
                    && matches!(b.kind, Tok::Str | Tok::Hex);
                signed || introduced
            }
            _ => false,
        };
        let (Some(first), Some(last), true) = (item.first(), item.last(), readable) else {
            return None;
        };
        items.push(sql.get(first.start..last.end)?.to_vec());
    }
    Some(items)
}

/// The tokens of one statement (a trailing `;` dropped), at most MAX_TOKENS, and whether
/// there were more (or the text did not lex from there on).
fn tokens(piece: &[u8], d: Dialect) -> (Vec<Token>, bool) {
    let mut out = Vec::new();
    let mut cut = false;
    for t in Scanner::new(piece, d) {
        match t {
            Ok(t) if out.len() < MAX_TOKENS => out.push(t),
            _ => {
                cut = true;
                break;
            }
        }
    }
    while out.last().is_some_and(|t| t.kind == Tok::Punct(b';')) {
        out.pop();
    }
    (out, cut)
}

/// The head of `PREPARE name FROM …`, `EXECUTE IMMEDIATE … [USING …]` or
/// `EXECUTE name [USING …]`; None for any other statement. The name is always read; a USING
/// list the proxy cannot read whole is None.
pub fn head(piece: &[u8], d: Dialect) -> Option<Head> {
    let (toks, cut) = tokens(piece, d);
    let first = toks.first()?;
    let using_after = |from: usize| -> Option<Vec<Vec<u8>>> {
        if cut {
            return None;
        }
        match toks
            .iter()
            .skip(from)
            .position(|t| t.is_word(piece, "USING"))
        {
            Some(at) => using_items(toks.get(from + at + 1..)?, piece),
            None => Some(Vec::new()),
        }
    };
    if first.is_word(piece, "PREPARE") {
        return Some(Head {
            name: toks.get(1).and_then(|t| name_of(t, piece)),
            prepare: true,
            using: Some(Vec::new()),
        });
    }
    if !first.is_word(piece, "EXECUTE") {
        return None;
    }
    let second = toks.get(1)?;
    if second.is_word(piece, "IMMEDIATE") {
        return Some(Head {
            name: None,
            prepare: false,
            using: using_after(2),
        });
    }
    Some(Head {
        name: name_of(second, piece),
        prepare: false,
        using: using_after(2),
    })
}

/// The prepared name a statement deallocates: `DEALLOCATE PREPARE name`, `DROP PREPARE name`.
pub fn deallocated(piece: &[u8], d: Dialect) -> Option<Vec<u8>> {
    let toks: Vec<Token> = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(3)
        .collect();
    match toks.as_slice() {
        [verb, p, name]
            if (verb.is_word(piece, "DEALLOCATE") || verb.is_word(piece, "DROP"))
                && p.is_word(piece, "PREPARE") =>
        {
            name_of(name, piece)
        }
        _ => None,
    }
}

/// What a text does with SQL-level prepared statement names (`read_names`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Names {
    /// Names its DEALLOCATE / DROP PREPARE (and, in a multi-statement text, PREPARE) statements
    /// free, under the primary reading.
    pub forget: Vec<Vec<u8>>,
    /// An `EXECUTE name` of a name `planned` says the session checks, under any reading.
    pub planned: Option<Head>,
    /// Some reading splits the text into more than one statement.
    pub many: bool,
    /// The text can be read more than one way where it matters for a literal's extent (a
    /// `"…"` with a backslash, a backslash after a multibyte lead byte): its USING values are
    /// not re-sent in a query of the proxy's own.
    pub unsure: bool,
}

/// Reads a text for the prepared names it executes and frees, under every way the backend may
/// read it (`Dialect::readings`). Linear in the text; the session runs it off the event loop
/// for a large one.
pub fn read_names(sql: &[u8], primary: Dialect, planned: impl Fn(&[u8]) -> bool) -> Names {
    let mut out = Names::default();
    if !mentions_prepared(sql) {
        return out;
    }
    let Ok((_, ambiguity)) = super::scan::statements(sql, primary) else {
        return out; // the backend cannot read it either
    };
    out.unsure = ambiguity.quotes || ambiguity.multibyte;
    for (i, d) in primary.readings(ambiguity).into_iter().enumerate() {
        let Ok((pieces, _)) = super::scan::statements(sql, d) else {
            continue;
        };
        out.many |= pieces.len() > 1;
        for p in &pieces {
            let piece = sql.get(p.start..p.end).unwrap_or_default();
            // the statement a `SET STATEMENT … FOR` runs
            let ex = super::scan::executed_part(piece, d);
            out.unsure |= ex.unsure;
            let piece = piece.get(ex.offset..).unwrap_or_default();
            if let Some(name) = deallocated(piece, d) {
                if i == 0 {
                    out.forget.push(name);
                }
                continue;
            }
            let Some(h) = head(piece, d) else {
                continue;
            };
            match (&h.name, h.prepare) {
                (Some(name), true) if i == 0 && pieces.len() > 1 => out.forget.push(name.clone()),
                (Some(name), false) if planned(name) => out.planned = Some(h),
                _ => {}
            }
        }
    }
    out
}

/// Whether a text may name a prepared statement at all (a byte search, before any reading).
pub fn mentions_prepared(sql: &[u8]) -> bool {
    // both words have a 'p' or 'x' at their second byte: memchr finds the few candidates
    memchr::memchr2_iter(b'X', b'x', sql)
        .chain(memchr::memchr2_iter(b'R', b'r', sql))
        .any(|at| {
            let word = |w: &[u8]| {
                at.checked_sub(1)
                    .and_then(|s| sql.get(s..s + w.len()))
                    .is_some_and(|x| x.eq_ignore_ascii_case(w))
            };
            word(b"EXECUTE") || word(b"PREPARE")
        })
}

/// The number of `?` placeholders of a statement (as the backend counts them: outside quotes
/// and comments).
pub fn placeholders(piece: &[u8], d: Dialect) -> usize {
    Scanner::new(piece, d)
        .map_while(Result::ok)
        .filter(|t| t.kind == Tok::Punct(b'?'))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(sql: &str) -> Option<Head> {
        head(sql.as_bytes(), Dialect::default())
    }

    fn items(v: &[&str]) -> Option<Vec<Vec<u8>>> {
        Some(v.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    #[test]
    fn heads_name_the_statement_and_its_values() {
        let x = h("EXECUTE `My``S` USING @a, @`b c`, 'lit', _binary X'00', -5, NULL;").unwrap();
        assert_eq!(x.name.as_deref(), Some(b"my`s".as_slice()));
        assert_eq!(
            x.using,
            items(&["@a", "@`b c`", "'lit'", "_binary X'00'", "-5", "NULL"])
        );
        let x = h("execute immediate 'INSERT …' using @k").unwrap();
        assert_eq!(x.name, None);
        assert_eq!(x.using, items(&["@k"]));
        assert_eq!(h("EXECUTE s").unwrap().using, items(&[]));
        assert_eq!(
            h("PREPARE Stmt FROM 'x'").unwrap().name.as_deref(),
            Some(b"stmt".as_slice())
        );
        // values the proxy would have to compute are not read
        assert_eq!(h("EXECUTE s USING CONCAT('a', 'b')").unwrap().using, None);
        assert_eq!(h("EXECUTE s USING @@sql_mode").unwrap().using, None);
        assert_eq!(h("EXECUTE s USING @a + 1").unwrap().using, None);
        assert_eq!(h("EXECUTE s USING @a,").unwrap().using, None);
        assert_eq!(h("SELECT 1"), None);
        // executable comments are code, as the backend reads them
        assert_eq!(
            h("/*!EXECUTE s USING @a */").unwrap().name.as_deref(),
            Some(b"s".as_slice())
        );
        // too long to read whole: the name still, the values not
        let long = format!("EXECUTE s USING @a, ({}1)", "1+".repeat(3000));
        let x = h(&long).unwrap();
        assert_eq!((x.name.as_deref(), x.using), (Some(b"s".as_slice()), None));
    }

    #[test]
    fn deallocations_and_placeholders() {
        let d = |s: &str| deallocated(s.as_bytes(), Dialect::default());
        assert_eq!(
            d("DEALLOCATE PREPARE S1").as_deref(),
            Some(b"s1".as_slice())
        );
        assert_eq!(d("drop prepare `s1`").as_deref(), Some(b"s1".as_slice()));
        assert_eq!(d("PREPARE s1 FROM @x"), None);
        assert_eq!(d("EXECUTE s1"), None);
        let p = |s: &str| placeholders(s.as_bytes(), Dialect::default());
        assert_eq!(p("INSERT INTO t VALUES (?, '?', ?) /* ? */ -- ?"), 2);
        assert!(mentions_prepared(b"select 1; execute s"));
        assert!(!mentions_prepared(b"SELECT 1"));
    }
}
