//! The statement classifier and reader: any bytes, under every reading the dialect allows.
//! First byte: dialect bits (server family in the low two, NO_BACKSLASH_ESCAPES, ANSI_QUOTES,
//! multibyte backslash, strict, prepared origin); the rest is the statement text.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod tables;

use obkv_proxy::engine::prefix_scan::{ConnCharset, TableView};
use obkv_proxy::engine::read::Scope;
use obkv_proxy::engine::router::{decide, decide_dynamic, Context, Decision, Origin};
use obkv_proxy::engine::write::{check_execution, Bound, Txn, WriteRules};
use obkv_proxy::sql::dml;
use obkv_proxy::sql::scan::{
    statements, statements_keeping, statements_keeping_unsettled, Dialect, Flavor, Kept, Scanner,
};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, sql)) = data.split_first() else {
        return;
    };
    // the executable-comment search finds what a look at every position finds
    assert_eq!(
        dml::has_executable_comment(sql),
        (0..sql.len()).any(|i| sql[i..].starts_with(b"/*!") || sql[i..].starts_with(b"/*M!"))
    );
    let flavor = [
        Flavor::MySql,
        Flavor::MariaDb,
        Flavor::OceanBase,
        Flavor::MySqlOrOceanBase,
    ][usize::from(flags & 3)];
    let dialect = Dialect {
        flavor,
        version: if flavor == Flavor::MariaDb {
            101119
        } else {
            50725
        },
        no_backslash_escapes: flags & 4 != 0,
        ansi_quotes: flags & 8 != 0,
        multibyte_backslash: flags & 16 != 0,
        plain_comments: false,
    };
    let scope = if flags & 128 != 0 {
        tables::scope()
    } else {
        Scope::default()
    };
    // the rewriter sees `g$f` (and `hb.g$f`) as a KEY(K_PREFIX) table with n = 4
    let tables = TableView {
        // a table whose schema the session could not read: never taken for a plain one
        blind: if data.len().is_multiple_of(3) {
            vec![(b"hb".to_vec(), b"g$g".to_vec())]
        } else {
            Vec::new()
        },
        ..tables::view(Some(ConnCharset::Utf8), true)
    };
    // the write stage too: inside a transaction for texts of even length
    let ctx = Context {
        dialect,
        strict: flags & 32 != 0,
        scope,
        tables: Some(tables),
        rewrite: true,
        writes: Some(WriteRules {
            now_ms: 1_763_700_000_000,
            ..WriteRules::default()
        }),
        txn: Txn {
            active: sql.len() % 2 == 0,
            pinned: None,
        },
        socket: (sql.len() % 3 == 0).then(|| std::sync::Arc::from("/tmp/obkv-proxy-1.sock")),
        // reads as HBase sees them (`g$f` declares a TTL and versions)
        hbase_reads: (flags & 128 != 0).then_some(obkv_proxy::hbase::cells::Convention::NegatedMs),
    };
    let _ = dml::read(sql, dialect);
    let origin = if flags & 64 != 0 {
        Origin::Prepare
    } else {
        Origin::Text
    };
    // a rewrite only inserts: the original bytes are the rewritten text's, in order
    match decide(sql, origin, &ctx) {
        // a driver's @@socket probe: items replaced, the probe answered once and for all
        (obkv_proxy::sql::classify::Class::ServerProbe, Decision::Send(w)) => {
            if let Some(text) = w.text {
                assert!(origin == Origin::Text && sql.len() <= 1024);
                assert!(
                    obkv_proxy::sql::probe::hide_socket(&text, None).is_none(),
                    "probe left a socket"
                );
                assert!(text != sql && text.len() <= sql.len() * 16);
            }
        }
        // a rewrite or a write: the text sent is the user's (up to a refused statement) with
        // insertions
        (_, Decision::Send(w)) => {
            // a prepared write's plan, executed with values taken from the text's bytes
            if let (Some(plan), Some(rules)) = (&w.plan, &ctx.writes) {
                let bound = |n: u32| {
                    let at = (n as usize).min(sql.len());
                    let v = &sql[at..sql.len().min(at + 40)];
                    match n % 5 {
                        0 => Bound::Null,
                        1 => Bound::Int(i128::from(n) - 2),
                        2 => Bound::Length(u64::from(n) << 18),
                        3 => Bound::Text(v),
                        _ => Bound::Bytes(v, n.is_multiple_of(2)),
                    }
                };
                let c = check_execution(
                    plan,
                    &bound,
                    rules,
                    ctx.tables.as_ref().and_then(|t| t.charset),
                    Some(true),
                    0,
                );
                assert!(c.findings.len() <= 64, "findings past the cap");
            }
            if let Some(text) = &w.text {
                // the user's bytes in order, with insertions; up to a refused statement only
                let kept = |n: usize| {
                    let mut it = text.iter();
                    sql[..n].iter().all(|b| it.any(|x| x == b))
                };
                if w.refused.is_some() {
                    assert!(
                        !text.is_empty() && kept(1),
                        "a shortened text lost its start"
                    );
                } else {
                    assert!(kept(sql.len()), "a splice changed the user's bytes");
                }
            }
        }
        _ => {}
    }
    let _ = decide_dynamic(sql, &ctx);
    let _ = obkv_proxy::engine::router::check_dynamic(sql, &ctx);
    // the dynamic-SQL readers: a USING item is a span of the statement
    if let Some(h) = obkv_proxy::sql::dynamic::head(sql, dialect) {
        for item in h.using.iter().flatten() {
            assert!(!item.is_empty() && item.len() <= sql.len());
        }
    }
    // the wrapper reader lands on a token of the text
    let ex = obkv_proxy::sql::scan::executed_part(sql, dialect);
    assert!(ex.offset <= sql.len() && (ex.offset > 0 || !ex.unsure));
    // told by the first token where it is known (the split's kept one): the same
    let first = obkv_proxy::sql::scan::Scanner::new(sql, dialect)
        .next()
        .and_then(Result::ok);
    assert_eq!(
        obkv_proxy::sql::scan::executed_part_from(sql, dialect, Some(first)),
        ex
    );
    // the UPDATE reader: a target belongs only to references of the statement, and one
    // without a qualifier (or an unsure reading) to all of them
    if let obkv_proxy::sql::assign::Read::Update(u) = obkv_proxy::sql::assign::read(sql, dialect) {
        for a in &u.assignments {
            let of = u.targets_of(a);
            assert!(of
                .iter()
                .all(|r| u.tables.iter().any(|t| std::ptr::eq(t, *r))));
            if a.qualifier.is_none() {
                assert_eq!(of.len(), u.tables.len(), "an unqualified target narrowed");
            }
        }
    }
    let _ = obkv_proxy::sql::view::read(sql, dialect);
    // what the slow-statement log and the TLS status probe read of a client's text
    let digest = obkv_proxy::sql::digest::digest(sql, dialect);
    assert!(
        digest.len() <= obkv_proxy::sql::digest::MAX + 8,
        "digest past its bound"
    );
    let _ = obkv_proxy::sql::probe::ssl_status(sql, dialect);
    let _ = obkv_proxy::sql::dynamic::deallocated(sql, dialect);
    let _ = obkv_proxy::sql::dynamic::placeholders(sql, dialect);
    let _ = obkv_proxy::engine::explain::explain_obkv(sql, &ctx);
    // the lexer's word-at-a-time search finds what a byte-by-byte one finds
    for (a, b, high) in [
        (b'\'', b'\\', true),
        (b'\\', b'"', false),
        (0u8, 0x80u8, false),
    ] {
        assert_eq!(
            obkv_proxy::sql::scan::find_stop(sql, a, b, high),
            sql.iter()
                .position(|&c| c == a || c == b || (high && c >= 0x80)),
            "find_stop"
        );
    }
    // tokens are in order, inside the text, and never empty; a string's value is never longer
    // than its body, and is the body itself when it holds no backslash and no quote character
    let mut last = 0;
    for t in Scanner::new(sql, dialect) {
        let Ok(t) = t else { break };
        assert!(t.start >= last && t.start < t.end && t.end <= sql.len());
        last = t.end;
        if t.kind == obkv_proxy::sql::scan::Tok::Str {
            let raw = &sql[t.start..t.end];
            let body = &raw[1..raw.len() - 1];
            let v = obkv_proxy::sql::scan::string_value(sql, &t, dialect);
            assert!(v.len() <= body.len(), "a string's value grew");
            let unescaped = !body.iter().any(|&c| c == b'\\' || c == raw[0]);
            if unescaped {
                assert_eq!(v, body, "a plain string's value differs from its body");
            }
            // the lexer's mark of a plain body is right: only an ASCII body without escapes is
            // marked, and the value read without the mark is the same
            assert!(
                !t.plain || (unescaped && body.is_ascii()),
                "a string marked plain wrongly"
            );
            let unmarked = obkv_proxy::sql::scan::Token { plain: false, ..t };
            assert_eq!(
                v,
                obkv_proxy::sql::scan::string_value(sql, &unmarked, dialect),
                "a string marked plain reads otherwise"
            );
        }
    }
    // a text the lexer refuses is refused by the settled loop too
    {
        let (mut a, mut b) = (
            Kept::new(dml::MAX_TOKENS + 1),
            Kept::new(dml::MAX_TOKENS + 1),
        );
        assert_eq!(
            statements_keeping(sql, dialect, &mut a).err(),
            statements_keeping_unsettled(sql, dialect, &mut b).err(),
            "the settled loop lexes otherwise"
        );
    }
    if let Ok((pieces, _)) = statements(sql, dialect) {
        for p in &pieces {
            assert!(p.start <= p.end && p.end <= sql.len());
        }
        // the tokens the split keeps read each statement as lexing it alone does
        let mut kept = Kept::new(dml::MAX_TOKENS + 1);
        let again = statements_keeping(sql, dialect, &mut kept);
        assert_eq!(again.as_ref().ok().map(|(p, _)| p), Some(&pieces));
        // the tighter loop after a settled statement keeps, splits and finds the same
        // ambiguities as the full one does
        let mut full = Kept::new(dml::MAX_TOKENS + 1);
        let unsettled = statements_keeping_unsettled(sql, dialect, &mut full);
        assert_eq!(unsettled.as_ref().ok().map(|(p, _)| p), Some(&pieces));
        assert_eq!(
            again.as_ref().ok().map(|(_, a)| a),
            unsettled.as_ref().ok().map(|(_, a)| a),
            "the settled loop found other ambiguities"
        );
        for p in &pieces {
            assert_eq!(kept.of(p), full.of(p), "kept tokens differ");
        }
        if !dml::has_executable_comment(sql) {
            for p in &pieces {
                let piece = &sql[p.start..p.end];
                // `--` right before the `;` is two minus signs in the text (no space after it)
                // and a comment at the end of the piece lexed alone; the statement is a syntax
                // error either way, and the text's reading is the backend's
                if piece.ends_with(b"--") {
                    continue;
                }
                let Some(toks) = kept.of(p) else { continue };
                // (`engine::read` takes a statement's first token from them, without copying
                // them, also for the statement a wrapper runs)
                assert_eq!(
                    toks.first().copied(),
                    Scanner::new(piece, dialect).next().and_then(Result::ok),
                    "a kept first token differs"
                );
                assert_eq!(kept.first_of(p), Some(toks.first().copied()));
                let ex = obkv_proxy::sql::scan::executed_part(piece, dialect);
                if ex.offset > 0 {
                    let inner = obkv_proxy::sql::scan::Piece {
                        start: p.start + ex.offset,
                        ..*p
                    };
                    let alone = &sql[inner.start..inner.end];
                    assert_eq!(
                        kept.first_of(&inner),
                        Some(Scanner::new(alone, dialect).next().and_then(Result::ok)),
                        "a wrapped statement's kept first token differs"
                    );
                    if !alone.ends_with(b"--") {
                        let inner_toks = kept.of(&inner).expect("kept");
                        assert_eq!(
                            dml::read_lexed(alone, dialect, Some(&inner_toks)),
                            dml::read(alone, dialect),
                            "a wrapped statement's kept tokens read differently"
                        );
                    }
                }
                assert_eq!(
                    dml::read_lexed(piece, dialect, Some(&toks)),
                    dml::read(piece, dialect),
                    "kept tokens read differently"
                );
            }
        }
    }
    let _ = obkv_proxy::sql::lexer::tokenize_with(sql, dialect);
});
