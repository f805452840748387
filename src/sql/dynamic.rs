//! SQL-level dynamic SQL as the write rules need it: the name a `PREPARE` gives its statement,
//! the values an `EXECUTE … USING` or `EXECUTE IMMEDIATE … USING` binds, and the names a text
//! executes or deallocates. Pure readers over the scanner's tokens; the router decides and the
//! session reads the values (`SELECT CAST(item AS BINARY), …`: no side effects) and keeps the
//! plan of each prepared name.

use super::scan::{hex_value, string_value, Dialect, Flavor, Scanner, Tok, Token};

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

/// Where the expression a dynamic statement runs ends: the first USING outside parentheses
/// (`EXECUTE IMMEDIATE CONVERT(@q USING utf8mb4) USING @a`), or the end of the statement.
fn expression_end(toks: &[Token], from: usize, sql: &[u8]) -> usize {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(from) {
        match t.kind {
            Tok::Punct(b'(') => depth += 1,
            Tok::Punct(b')') => depth = depth.saturating_sub(1),
            Tok::Word if depth == 0 && t.is_word(sql, "USING") => return i,
            _ => {}
        }
    }
    toks.len()
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
        match expression_end(&toks, from, piece) {
            at if at < toks.len() => using_items(toks.get(at + 1..)?, piece),
            _ => Some(Vec::new()),
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

/// What a `PREPARE name FROM …` or `EXECUTE IMMEDIATE …` runs, in one reading of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A string or hex literal (strings side by side are one string, as the backend reads
    /// them): its value.
    Literal(Vec<u8>),
    /// A value the session reads with a SELECT of its own just before the statement runs: a
    /// user variable, or on MariaDB (which takes any expression since 10.2.3) an expression of
    /// literals, user variables and built-in functions that neither change anything nor
    /// depend on anything else (`CONCAT('SELECT ', @c)`). The expression as written, and the
    /// user variables it reads (as written).
    Computed {
        expr: Vec<u8>,
        variables: Vec<Vec<u8>>,
    },
    /// The backend refuses the statement itself in this reading, so nothing of it runs: a
    /// syntax error (no text, a placeholder, a statement where an expression belongs, an
    /// expression on a server that takes only a literal or a variable), a subquery (MariaDB's
    /// 1970), a column (1054: there is no table).
    Fails,
    /// Any other expression: its value is known only by running it.
    Expression,
}

/// The source of a dynamic statement (`Source`); None when `piece` is no `PREPARE …` or
/// `EXECUTE IMMEDIATE …` (an `EXECUTE name` runs a text checked at its PREPARE).
pub fn source(piece: &[u8], d: Dialect) -> Option<Source> {
    let head: Vec<Token> = Scanner::new(piece, d)
        .map_while(Result::ok)
        .take(3)
        .collect();
    let from = match head.as_slice() {
        [p, ..] if p.is_word(piece, "PREPARE") => match head.as_slice() {
            [_, name, from]
                if matches!(name.kind, Tok::Word | Tok::QuotedIdent)
                    && from.is_word(piece, "FROM") =>
            {
                3
            }
            // `PREPARE ? FROM …`, `PREPARE s 'text'`, `PREPARE s FROM_X …`: a syntax error
            _ => return Some(Source::Fails),
        },
        [e, i, ..] if e.is_word(piece, "EXECUTE") && i.is_word(piece, "IMMEDIATE") => 2,
        _ => return None,
    };
    let (toks, cut) = tokens(piece, d);
    let end = expression_end(&toks, from, piece);
    if cut && end == toks.len() {
        return Some(Source::Expression); // not read to its end
    }
    Some(read_source(
        piece,
        toks.get(from..end).unwrap_or_default(),
        d,
    ))
}

/// An introducer: `_utf8mb4'…'`, `_binary X'…'`.
fn introduces(sql: &[u8], t: &Token, next: Option<&Token>) -> bool {
    t.kind == Tok::Word
        && t.text(sql).starts_with(b"_")
        && next.is_some_and(|n| matches!(n.kind, Tok::Str | Tok::Hex))
}

fn read_source(sql: &[u8], e: &[Token], d: Dialect) -> Source {
    let body = match e {
        [intro, rest @ ..] if introduces(sql, intro, rest.first()) => rest,
        _ => e,
    };
    if !body.is_empty() && body.iter().all(|t| t.kind == Tok::Str) {
        return Source::Literal(body.iter().flat_map(|t| string_value(sql, t, d)).collect());
    }
    if let [t] = body {
        if let (Tok::Hex, Some(v)) = (t.kind, hex_value(sql, t)) {
            return Source::Literal(v);
        }
    }
    if let [t] = e {
        if t.kind == Tok::Var && !t.text(sql).starts_with(b"@@") {
            return Source::Computed {
                expr: t.text(sql).to_vec(),
                variables: vec![t.text(sql).to_vec()],
            };
        }
    }
    // MySQL and OceanBase take a literal or a user variable only (measured on seekdb: 1064)
    let expressions = d.flavor == Flavor::MariaDb && d.version >= 100203;
    let (Some(first), Some(last), true) = (e.first(), e.last(), expressions) else {
        return Source::Fails;
    };
    if fails_on_mariadb(sql, e) {
        return Source::Fails;
    }
    match computable(sql, e) {
        Some(variables) => Source::Computed {
            expr: sql.get(first.start..last.end).unwrap_or_default().to_vec(),
            variables,
        },
        None => Source::Expression,
    }
}

/// Words that begin a statement and never an expression (each measured on MariaDB 10.11:
/// `PREPARE s FROM <word> 1` is 1064).
const STATEMENT_WORDS: [&str; 25] = [
    "SELECT", "WITH", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "SHOW", "SET", "CALL",
    "GRANT", "REVOKE", "RENAME", "LOCK", "UNLOCK", "USE", "LOAD", "DESCRIBE", "EXPLAIN", "FROM",
    "WHERE", "TABLE", "KILL", "OPTIMIZE", "ANALYZE",
];

/// Words after which a name is a character set or collation (`USING utf8mb4`,
/// `CHARACTER SET latin1`, `COLLATE utf8mb4_bin`), not a column.
fn names_charset(sql: &[u8], t: &Token) -> bool {
    ["USING", "SET", "CHARSET", "COLLATE"]
        .iter()
        .any(|w| t.is_word(sql, w))
}

/// Whether MariaDB refuses `PREPARE s FROM <e>` / `EXECUTE IMMEDIATE <e>` by itself whatever
/// the values: a syntax error or a subquery (1970), or a column (1054).
fn fails_on_mariadb(sql: &[u8], e: &[Token]) -> bool {
    let mut depth = 0usize;
    for (i, t) in e.iter().enumerate() {
        let next = e.get(i + 1);
        let after_charset_word = i > 0 && names_charset(sql, &e[i - 1]);
        let fails = match t.kind {
            Tok::Punct(b'(') => {
                depth += 1;
                false
            }
            Tok::Punct(b')') => {
                depth = depth.saturating_sub(1);
                false
            }
            // a placeholder outside a prepared statement, a list where one value belongs
            Tok::Punct(b'?') => true,
            Tok::Punct(b',') => depth == 0,
            Tok::Word => {
                (i == 0 && STATEMENT_WORDS.iter().any(|w| t.is_word(sql, w)))
                    || t.is_word(sql, "SELECT")
            }
            // a quoted name (`"…"` under ANSI_QUOTES) that calls nothing is a column
            Tok::QuotedIdent => {
                !after_charset_word && !next.is_some_and(|n| n.is_punct(b'(') || n.is_punct(b'.'))
            }
            _ => false,
        };
        if fails {
            return true;
        }
    }
    false
}

/// Words an expression the proxy computes may hold besides function names: operators,
/// constants, types and the words of CAST, CONVERT, SUBSTRING, TRIM and CASE.
const PURE_WORDS: [&str; 40] = [
    "AND",
    "OR",
    "XOR",
    "NOT",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "UNKNOWN",
    "IN",
    "BETWEEN",
    "LIKE",
    "ESCAPE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "DIV",
    "MOD",
    "AS",
    "USING",
    "COLLATE",
    "CHARACTER",
    "CHARSET",
    "SET",
    "BINARY",
    "CHAR",
    "SIGNED",
    "UNSIGNED",
    "INTEGER",
    "INT",
    "DECIMAL",
    "DOUBLE",
    "FROM",
    "FOR",
    "BOTH",
    "LEADING",
    "TRAILING",
    "DATE",
];

/// Built-in functions whose value depends on their arguments only and that change nothing:
/// the proxy may compute them before the statement does, and gets what the statement gets.
const PURE_FUNCTIONS: [&str; 57] = [
    "CONCAT",
    "CONCAT_WS",
    "SFORMAT",
    "REPLACE",
    "IF",
    "IFNULL",
    "NULLIF",
    "COALESCE",
    "CHAR",
    "CHR",
    "REPEAT",
    "LOWER",
    "UPPER",
    "LCASE",
    "UCASE",
    "SUBSTRING",
    "SUBSTR",
    "MID",
    "LEFT",
    "RIGHT",
    "TRIM",
    "LTRIM",
    "RTRIM",
    "LPAD",
    "RPAD",
    "HEX",
    "UNHEX",
    "CAST",
    "CONVERT",
    "REVERSE",
    "SPACE",
    "ELT",
    "FIELD",
    "QUOTE",
    "LENGTH",
    "CHAR_LENGTH",
    "CHARACTER_LENGTH",
    "OCTET_LENGTH",
    "INSERT",
    "INSTR",
    "LOCATE",
    "SUBSTRING_INDEX",
    "ABS",
    "GREATEST",
    "LEAST",
    "TO_BASE64",
    "FROM_BASE64",
    "ASCII",
    "ORD",
    "BIN",
    "OCT",
    "CONV",
    "ROUND",
    "FLOOR",
    "CEIL",
    "CEILING",
    "STRCMP",
];

/// The user variables of an expression the proxy may compute with a SELECT of its own (no
/// side effect, the same value as the statement computes just after); None for any other.
fn computable(sql: &[u8], e: &[Token]) -> Option<Vec<Vec<u8>>> {
    let mut variables = Vec::new();
    let mut depth = 0usize;
    for (i, t) in e.iter().enumerate() {
        // nothing between tokens but white space: no comment, executable or not
        if i > 0 {
            let gap = sql.get(e[i - 1].end..t.start)?;
            if !gap.iter().all(u8::is_ascii_whitespace) {
                return None;
            }
        }
        let next = e.get(i + 1);
        let call = next.is_some_and(|n| n.is_punct(b'('));
        let after_charset_word = i > 0 && names_charset(sql, &e[i - 1]);
        let pure = match t.kind {
            Tok::Str | Tok::Hex | Tok::Number => true,
            Tok::Var if t.text(sql).starts_with(b"@@") => false,
            Tok::Var => {
                variables.push(t.text(sql).to_vec());
                true
            }
            Tok::Punct(b'(') => {
                depth += 1;
                true
            }
            Tok::Punct(b')') => match depth.checked_sub(1) {
                Some(d) => {
                    depth = d;
                    true
                }
                None => false,
            },
            Tok::Punct(b',') => depth > 0,
            Tok::Punct(c) => b"+-*/%<>=!|&^~".contains(&c),
            Tok::Word => {
                introduces(sql, t, next)
                    || (after_charset_word && !call)
                    || PURE_WORDS.iter().any(|w| t.is_word(sql, w))
                    || (call && PURE_FUNCTIONS.iter().any(|f| t.is_word(sql, f)))
            }
            Tok::QuotedIdent => after_charset_word && !call,
        };
        if !pure {
            return None;
        }
    }
    (depth == 0).then_some(variables)
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
    out.unsure = ambiguity.quotes
        || ambiguity.multibyte
        || (ambiguity.comment && primary.may_be_oceanbase());
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
    fn sources_as_each_server_reads_them() {
        let maria = Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB");
        let ansi = Dialect {
            ansi_quotes: true,
            ..maria
        };
        let s = |sql: &str, d: Dialect| source(sql.as_bytes(), d);
        let lit = |v: &str| Some(Source::Literal(v.as_bytes().to_vec()));
        for d in [maria, Dialect::default()] {
            assert_eq!(s("PREPARE s FROM 'a' \"b\" 'c'", d), lit("abc"));
            assert_eq!(s("PREPARE s FROM _utf8mb4 'a' 'b'", d), lit("ab"));
            assert_eq!(s("PREPARE s FROM X'6162'", d), lit("ab"));
            assert_eq!(s("PREPARE s FROM 0x6162", d), lit("ab"));
            assert_eq!(s("EXECUTE IMMEDIATE 'x' USING @a", d), lit("x"));
            assert_eq!(
                s("PREPARE s FROM @`q`", d),
                Some(Source::Computed {
                    expr: b"@`q`".to_vec(),
                    variables: vec![b"@`q`".to_vec()]
                })
            );
            for sql in [
                "PREPARE s FROM",
                "PREPARE s FROM SELECT 1",
                "PREPARE s FROM ?",
                "PREPARE ? FROM 'x'",
                "PREPARE s 'x'",
                "PREPARE s FROM 'a', 'b'",
                "PREPARE s FROM `c`",
            ] {
                assert_eq!(s(sql, d), Some(Source::Fails), "{sql}");
            }
            assert_eq!(s("EXECUTE s USING @a", d), None);
            assert_eq!(s("SELECT 1", d), None);
        }
        // a "…" is a name under ANSI_QUOTES: a column to MariaDB (1054)
        assert_eq!(s("PREPARE s FROM \"x\"", ansi), Some(Source::Fails));
        assert_eq!(
            s("EXECUTE IMMEDIATE CONCAT(\"x\", 'y')", ansi),
            Some(Source::Fails)
        );
        // an expression: a syntax error but on MariaDB, which computes it
        let concat = "EXECUTE IMMEDIATE CONCAT('SELECT ', @a, CHAR(36 USING latin1)) USING @b";
        assert_eq!(s(concat, Dialect::default()), Some(Source::Fails));
        assert_eq!(
            s(concat, maria),
            Some(Source::Computed {
                expr: b"CONCAT('SELECT ', @a, CHAR(36 USING latin1))".to_vec(),
                variables: vec![b"@a".to_vec()]
            })
        );
        assert_eq!(
            h(concat).unwrap().using,
            items(&["@b"]),
            "USING inside parentheses is the function's"
        );
        for sql in [
            "PREPARE s FROM CONCAT(@a := 'x')",
            "PREPARE s FROM CONCAT(NOW())",
            "PREPARE s FROM CONCAT('a' /* c */, 'b')",
            "PREPARE s FROM @@sql_mode",
            "PREPARE s FROM db.f()",
            "PREPARE s FROM `f`('x')",
            "PREPARE s FROM CONCAT('a',",
            "PREPARE s FROM x",
        ] {
            assert_eq!(s(sql, maria), Some(Source::Expression), "{sql}");
        }
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
