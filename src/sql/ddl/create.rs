//! Reading CREATE TABLE: its columns, indexes, checks, table options and PARTITION BY clause.

use super::cursor::Cursor;
use super::terms::{
    Column, CreateTable, DataType, Generated, Index, ParseError, PartitionClause, RangeBound,
    TableOption,
};
use crate::sql::lexer::{Kind, Token};

pub(super) fn create_table(c: &mut Cursor) -> Result<CreateTable, ParseError> {
    let if_not_exists = c.kws(&["IF", "NOT", "EXISTS"]);
    let name_start = c.peek().map_or(0, |t| t.start);
    let name = c.table_name()?;
    let name_span = (name_start, c.t.get(c.i - 1).map_or(name_start, |t| t.end));
    if c.peek()
        .is_some_and(|t| t.is_keyword("AS") || t.is_keyword("SELECT"))
    {
        return Err(ParseError(
            "CREATE TABLE ... AS SELECT cannot define an HBase table: create it with its columns, then INSERT ... SELECT".into(),
        ));
    }
    c.expect_punct(b'(')?;
    let mut t = CreateTable {
        name,
        name_span,
        if_not_exists,
        columns: Vec::new(),
        primary_key: None,
        primary_key_end: None,
        indexes: Vec::new(),
        checks: 0,
        prefix_checks: Vec::new(),
        value_length_check: None,
        options: Vec::new(),
        partition: None,
        elements_end: 0,
    };
    loop {
        element(c, &mut t)?;
        match c.next() {
            Some(tok) if tok.is_punct(b',') => continue,
            Some(tok) if tok.is_punct(b')') => {
                t.elements_end = tok.start;
                break;
            }
            _ => return Err(ParseError("expected ',' or ')' in the column list".into())),
        }
    }
    // table options, then PARTITION BY
    while !c.at_end() {
        if c.peek().is_some_and(|t| t.is_keyword("PARTITION")) {
            t.partition = Some(partition_clause(c)?);
            continue;
        }
        let comma_start = c.peek().filter(|t| t.is_punct(b',')).map(|t| t.start);
        c.punct(b',');
        let Some(tok) = c.next() else { break };
        let mut name = tok
            .keyword()
            .ok_or_else(|| ParseError("unexpected token in table options".into()))?;
        // two-word options: DEFAULT CHARSET, CHARACTER SET, ...
        if ["DEFAULT", "CHARACTER"].contains(&name.as_str()) {
            if let Some(k) = c.next().and_then(Token::keyword) {
                name = format!("{name} {k}");
            }
            if name == "DEFAULT CHARACTER" && c.kw("SET") {
                name.push_str(" SET");
            }
        }
        c.punct(b'=');
        let v = c
            .next()
            .ok_or_else(|| ParseError(format!("option {name} has no value")))?;
        let value = match &v.kind {
            Kind::Word(w) | Kind::Quoted(w) | Kind::Number(w) => w.clone(),
            Kind::Str(s) => String::from_utf8_lossy(s).into_owned(),
            _ => return Err(ParseError(format!("bad value for {name}"))),
        };
        t.options.push(TableOption {
            name,
            value,
            span: (comma_start.unwrap_or(tok.start), v.end),
            value_span: (v.start, v.end),
            value_is_string: matches!(v.kind, Kind::Str(_)),
        });
    }
    Ok(t)
}

fn element(c: &mut Cursor, t: &mut CreateTable) -> Result<(), ParseError> {
    let Some(head) = c.peek() else {
        return Err(ParseError("unexpected end".into()));
    };
    let kw = head.keyword().unwrap_or_default();
    if matches!(head.kind, Kind::Word(_)) {
        match kw.as_str() {
            "CONSTRAINT" | "PRIMARY" | "KEY" | "INDEX" | "UNIQUE" | "FULLTEXT" | "SPATIAL"
            | "CHECK" | "FOREIGN" => {
                if c.kw("CONSTRAINT")
                    && !c.peek().is_some_and(|x| {
                        ["PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]
                            .iter()
                            .any(|k| x.is_keyword(k))
                    })
                {
                    c.ident()?;
                }
                if c.kws(&["PRIMARY", "KEY"]) {
                    t.primary_key = Some(c.name_list()?);
                    t.primary_key_end = c.t.get(c.i - 1).map(|t| t.start);
                    skip_to_element_end(c);
                    return Ok(());
                }
                if c.kw("CHECK") {
                    let open = c.i;
                    c.skip_group()?;
                    let group = c.t.get(open..c.i).unwrap_or_default();
                    if let Some(p) = prefix_check(group) {
                        t.prefix_checks.push(p);
                    } else if let Some(l) = value_length_check(group) {
                        t.value_length_check = Some(l);
                    }
                    t.checks += 1;
                    return Ok(());
                }
                if c.kw("FOREIGN") {
                    t.indexes.push(Index {
                        kind: "FOREIGN KEY".into(),
                        columns: Vec::new(),
                    });
                    skip_to_element_end(c);
                    return Ok(());
                }
                let mut kind = c.next().and_then(Token::keyword).unwrap_or_default();
                if kind != "KEY" && kind != "INDEX" && (c.kw("KEY") || c.kw("INDEX")) {
                    kind = format!("{kind} KEY");
                }
                if !c.peek().is_some_and(|x| x.is_punct(b'(')) {
                    c.ident()?;
                }
                let columns = c.name_list()?;
                skip_to_element_end(c);
                t.indexes.push(Index { kind, columns });
                return Ok(());
            }
            _ => {}
        }
    }
    let col = column(c)?;
    if col.inline_primary_key {
        t.primary_key = Some(vec![col.name.clone()]);
    }
    if col.inline_unique {
        t.indexes.push(Index {
            kind: "UNIQUE".into(),
            columns: vec![col.name.clone()],
        });
    }
    t.columns.push(col);
    Ok(())
}

/// Skips to the ',' or ')' that ends the current element (not consuming it).
fn skip_to_element_end(c: &mut Cursor) {
    skip_until(c, b")");
}

/// Skips tokens, over balanced parentheses, up to a ',', one of `stops` or a PARTITION BY clause
/// at depth 0 (not consuming it): an ALTER may give PARTITION BY after an option without a comma.
pub(super) fn skip_until(c: &mut Cursor, stops: &[u8]) {
    let mut depth = 0;
    while let Some(t) = c.peek() {
        let partition_by =
            t.is_keyword("PARTITION") && c.peek_at(1).is_some_and(|n| n.is_keyword("BY"));
        if depth == 0 && (t.is_punct(b',') || stops.iter().any(|s| t.is_punct(*s)) || partition_by)
        {
            return;
        }
        if t.is_punct(b'(') {
            depth += 1;
        } else if t.is_punct(b')') {
            depth -= 1;
        }
        c.i += 1;
    }
}

fn column(c: &mut Cursor) -> Result<Column, ParseError> {
    let name_tok = c
        .next()
        .ok_or_else(|| ParseError("expected a column".into()))?;
    let name = name_tok
        .ident()
        .ok_or_else(|| ParseError("expected a column name".into()))?
        .to_owned();
    let type_tok = c
        .next()
        .ok_or_else(|| ParseError(format!("column {name} has no type")))?;
    let type_name = type_tok
        .keyword()
        .ok_or_else(|| ParseError(format!("column {name} has no type")))?;
    let mut type_end = type_tok.end;
    let mut length = None;
    if c.peek().is_some_and(|t| t.is_punct(b'(')) {
        c.next();
        length = Some(c.number()?);
        while !c.peek().is_some_and(|t| t.is_punct(b')')) {
            c.next()
                .ok_or_else(|| ParseError("unterminated type".into()))?;
        }
        type_end = c.next().map_or(type_end, |t| t.end);
    }
    let mut col = Column {
        name,
        data_type: DataType {
            name: type_name,
            length,
            span: (type_tok.start, type_end),
        },
        not_null: false,
        generated: None,
        inline_primary_key: false,
        inline_unique: false,
        span: (name_tok.start, type_end),
    };
    while let Some(t) = c.peek() {
        if t.is_punct(b',') || t.is_punct(b')') {
            break;
        }
        let start = t.start;
        if c.kws(&["NOT", "NULL"]) {
            col.not_null = true;
        } else if c.kws(&["PRIMARY", "KEY"]) {
            col.inline_primary_key = true;
        } else if c.kw("UNIQUE") {
            c.kw("KEY");
            col.inline_unique = true;
        } else if c.kws(&["GENERATED", "ALWAYS", "AS"]) || c.kw("AS") {
            let expr_start = c.peek().map_or(0, |t| t.start);
            let open = c.i;
            let expr_end = c.skip_group()?;
            let prefix_of_k = substring_of_k(&c.t[open..c.i]);
            let mut stored = false;
            let mut clause_end = expr_end;
            if let Some(k) = c.peek().filter(|t| {
                t.is_keyword("STORED") || t.is_keyword("VIRTUAL") || t.is_keyword("PERSISTENT")
            }) {
                stored = !k.is_keyword("VIRTUAL");
                clause_end = k.end;
                c.next();
            }
            col.generated = Some(Generated {
                prefix_of_k,
                stored,
                expr_span: (expr_start, expr_end),
                clause_span: (start, clause_end),
            });
        } else if c.peek().is_some_and(|t| t.is_punct(b'(')) {
            c.skip_group()?;
        } else {
            c.next();
        }
        col.span.1 = c.t.get(c.i.saturating_sub(1)).map_or(col.span.1, |t| t.end);
    }
    Ok(col)
}

/// `(substring(K, 1, n))`, `(substr(K,1,n))`, `(SUBSTRING(K FROM 1 FOR n))` → n.
fn substring_of_k(group: &[Token]) -> Option<u64> {
    let inner = group.get(1..group.len().checked_sub(1)?)?;
    let (f, rest) = inner.split_first()?;
    if !(f.is_keyword("SUBSTRING") || f.is_keyword("SUBSTR")) {
        return None;
    }
    let args: Vec<&Kind> = rest.iter().map(|t| &t.kind).collect();
    let num = |k: &Kind| match k {
        Kind::Number(n) => n.parse::<u64>().ok(),
        _ => None,
    };
    let is_k =
        |k: &Kind| matches!(k, Kind::Word(w) | Kind::Quoted(w) if w.eq_ignore_ascii_case("K"));
    match args.as_slice() {
        [Kind::Punct(b'('), k, Kind::Punct(b','), one, Kind::Punct(b','), n, Kind::Punct(b')')]
            if is_k(k) && num(one) == Some(1) =>
        {
            num(n)
        }
        [Kind::Punct(b'('), k, Kind::Word(from), one, Kind::Word(for_), n, Kind::Punct(b')')]
            if is_k(k)
                && from.eq_ignore_ascii_case("FROM")
                && for_.eq_ignore_ascii_case("FOR")
                && num(one) == Some(1) =>
        {
            num(n)
        }
        _ => None,
    }
}

/// `(P = substring(K, 1, n))` or `(substring(K, 1, n) = P)` → (P, n).
fn prefix_check(group: &[Token]) -> Option<(String, u64)> {
    let inner = group.get(1..group.len().checked_sub(1)?)?;
    let eq = inner.iter().position(|t| t.is_punct(b'='))?;
    let (left, right) = (inner.get(..eq)?, inner.get(eq + 1..)?);
    let name = |side: &[Token]| match side {
        [t] => match &t.kind {
            Kind::Word(w) | Kind::Quoted(w) => Some(w.clone()),
            _ => None,
        },
        _ => None,
    };
    // substring_of_k reads a parenthesised group: the side with its own parentheses around it
    let substring = |side: &[Token]| {
        let mut toks = Vec::with_capacity(side.len() + 2);
        toks.push(group.first()?.clone());
        toks.extend_from_slice(side);
        toks.push(group.last()?.clone());
        substring_of_k(&toks)
    };
    match (name(left), name(right)) {
        (Some(p), None) => Some((p, substring(right)?)),
        (None, Some(p)) => Some((p, substring(left)?)),
        _ => None,
    }
}

/// `(length(V) <= L)` → L.
fn value_length_check(group: &[Token]) -> Option<u64> {
    let kinds: Vec<&Kind> = group.iter().map(|t| &t.kind).collect();
    match kinds.as_slice() {
        [Kind::Punct(b'('), Kind::Word(f), Kind::Punct(b'('), v, Kind::Punct(b')'), Kind::Punct(b'<'), Kind::Punct(b'='), Kind::Number(n), Kind::Punct(b')')]
            if (f.eq_ignore_ascii_case("LENGTH") || f.eq_ignore_ascii_case("OCTET_LENGTH"))
                && matches!(v, Kind::Word(w) | Kind::Quoted(w) if w.eq_ignore_ascii_case("V")) =>
        {
            n.parse().ok()
        }
        _ => None,
    }
}

pub(super) fn partition_clause(c: &mut Cursor) -> Result<PartitionClause, ParseError> {
    let start = c.peek().map_or(0, |t| t.start);
    if !c.kws(&["PARTITION", "BY"]) {
        return Err(ParseError("expected PARTITION BY".into()));
    }
    c.kw("LINEAR");
    let mut kind = c
        .next()
        .and_then(Token::keyword)
        .ok_or_else(|| ParseError("expected a partitioning kind".into()))?;
    if c.kw("COLUMNS") {
        kind.push_str(" COLUMNS");
    }
    if kind == "KEY" && c.kw("ALGORITHM") {
        c.punct(b'=');
        c.next();
    }
    let columns = if kind == "HASH" || (kind == "RANGE" || kind == "LIST") {
        let open = c.i;
        c.skip_group()?;
        c.t[open + 1..c.i - 1]
            .iter()
            .filter_map(|t| t.ident().map(str::to_owned))
            .collect()
    } else {
        c.name_list()?
    };
    let mut p = PartitionClause {
        kind,
        columns,
        count: None,
        bounds: Vec::new(),
        subpartitioned: false,
        span: (start, 0),
    };
    if c.kw("PARTITIONS") {
        p.count = Some(c.number()?);
    }
    if c.kws(&["SUBPARTITION", "BY"]) {
        p.subpartitioned = true;
        while !c.at_end() && !c.peek().is_some_and(|t| t.is_punct(b'(')) {
            if c.peek().is_some_and(|t| t.is_punct(b'(')) {
                break;
            }
            c.next();
            if c.peek().is_some_and(|t| t.is_punct(b'('))
                && c.peek_at(1).is_some_and(|t| !t.is_keyword("PARTITION"))
            {
                c.skip_group()?;
            }
        }
    }
    if c.peek().is_some_and(|t| t.is_punct(b'(')) {
        c.next();
        let mut defs = 0u64;
        loop {
            if !c.kw("PARTITION") {
                return Err(ParseError(
                    "expected PARTITION in the partition list".into(),
                ));
            }
            c.ident()?;
            defs += 1;
            if c.kws(&["VALUES", "LESS", "THAN"]) {
                if c.kw("MAXVALUE") {
                    p.bounds.push(RangeBound::MaxValue);
                } else {
                    c.expect_punct(b'(')?;
                    let v = c
                        .next()
                        .ok_or_else(|| ParseError("expected a bound".into()))?;
                    p.bounds.push(match &v.kind {
                        Kind::Word(w) if w.eq_ignore_ascii_case("MAXVALUE") => RangeBound::MaxValue,
                        Kind::Str(s) | Kind::Hex(s) => RangeBound::LessThan(s.clone()),
                        Kind::Number(n) => RangeBound::LessThan(n.as_bytes().to_vec()),
                        _ => return Err(ParseError("unsupported partition bound".into())),
                    });
                    c.expect_punct(b')')?;
                }
            } else if c.kws(&["VALUES", "IN"]) {
                c.skip_group()?;
            }
            // partition options and subpartition lists
            while let Some(t) = c.peek() {
                if t.is_punct(b',') || t.is_punct(b')') {
                    break;
                }
                if t.is_punct(b'(') {
                    p.subpartitioned = true;
                    c.skip_group()?;
                } else {
                    c.next();
                }
            }
            if c.punct(b')') {
                break;
            }
            c.expect_punct(b',')?;
        }
        if p.count.is_none() {
            p.count = Some(defs);
        }
    }
    p.span.1 = c.t.get(c.i.saturating_sub(1)).map_or(start, |t| t.end);
    Ok(p)
}
