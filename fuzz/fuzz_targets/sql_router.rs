//! The statement classifier and reader: any bytes, under every reading the dialect allows.
//! First byte: dialect bits (server family in the low two, NO_BACKSLASH_ESCAPES, ANSI_QUOTES,
//! multibyte backslash, strict, prepared origin); the rest is the statement text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::sql::router::{decide, decide_dynamic, Context, Origin, Scope};
use obkv_proxy::sql::scan::{statements, Dialect, Flavor, Scanner};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, sql)) = data.split_first() else {
        return;
    };
    let flavor = [
        Flavor::MySql,
        Flavor::MariaDb,
        Flavor::OceanBase,
        Flavor::MySqlOrOceanBase,
    ][usize::from(flags & 3)];
    let dialect = Dialect {
        flavor,
        version: if flavor == Flavor::MariaDb { 101119 } else { 50725 },
        no_backslash_escapes: flags & 4 != 0,
        ansi_quotes: flags & 8 != 0,
        multibyte_backslash: flags & 16 != 0,
    };
    let scope = if flags & 128 != 0 {
        Scope {
            databases: vec!["hb".to_string()].into(),
            current: Some("hb".into()),
            names_ci: true,
        }
    } else {
        Scope::default()
    };
    let ctx = Context {
        dialect,
        strict: flags & 32 != 0,
        scope,
    };
    let origin = if flags & 64 != 0 { Origin::Prepare } else { Origin::Text };
    let _ = decide(sql, origin, &ctx);
    let _ = decide_dynamic(sql, &ctx);
    // tokens are in order, inside the text, and never empty
    let mut last = 0;
    for t in Scanner::new(sql, dialect) {
        let Ok(t) = t else { break };
        assert!(t.start >= last && t.start < t.end && t.end <= sql.len());
        last = t.end;
    }
    if let Ok((pieces, _)) = statements(sql, dialect) {
        for p in pieces {
            assert!(p.start <= p.end && p.end <= sql.len());
        }
    }
    let _ = obkv_proxy::sql::lexer::tokenize_with(sql, dialect);
});
