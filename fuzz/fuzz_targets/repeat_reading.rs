//! A text that repeats the thread's kept one but for its one literal's body is read from the
//! kept reading (`sql::repeat`): that reading is the one the text read in full gives, and the
//! router decides the text as it decides it read in full, with the same activity.
//!
//! Input: the first byte the dialect (as `shape_input`'s), the second the statement's form
//! (a head ending in a quote and a tail starting with one, from the lists below, or both made
//! of input bytes), the third the session (an origin, the connection's character set, whether
//! it is settled, whether bytes go inside the head), then parts cut at 0xFF bytes: bytes added
//! to the head, the kept text's body, the new text's body, bytes added to the tail.
#![no_main]

use libfuzzer_sys::fuzz_target;

use obkv_proxy::engine::prefix_scan::ConnCharset;
use obkv_proxy::engine::router::{decide_observed, Activity, Context, Origin};
use obkv_proxy::engine::write::{Txn, WriteRules};
use obkv_proxy::sql::classify::classify;
use obkv_proxy::sql::repeat;

mod dialects;
mod tables;

const HEADS: [&str; 16] = [
    "SELECT K, Q, T, V FROM g$f WHERE K LIKE '",
    "SELECT * FROM hb.g$f WHERE K = '",
    "select * from `g$f` t where t.K >= '",
    "DELETE FROM g$f WHERE K < '",
    "SELECT * FROM g$f WHERE LEFT(K, 4) = '",
    "UPDATE g$f SET T = 5 WHERE K LIKE '",
    "EXPLAIN SELECT * FROM g$f WHERE K LIKE _binary'",
    "SELECT * FROM g$h WHERE Q = 1 AND K LIKE '",
    // the one string not the K term's value: an escape character, a name, another column's
    "DELETE FROM g$f WHERE K LIKE 0x7573657225 ESCAPE '",
    "SELECT * FROM g$f WHERE K LIKE 0x21 ESCAPE _binary'",
    "SELECT * FROM g$f WHERE Q = '",
    "SELECT * FROM g$f WHERE K LIKE ? AND V = '",
    "SELECT * FROM g$f WHERE K BETWEEN 0x61 AND '",
    "SELECT * FROM g$f WHERE K IN (0x61, '",
    "SELECT K FROM g$f WHERE K > ? AND K <= '",
    "SET STATEMENT max_statement_time = 1 FOR SELECT * FROM g$f WHERE K LIKE '",
];
const TAILS: [&str; 8] = [
    "'",
    "' LIMIT 10",
    "' ORDER BY K DESC",
    "' FOR UPDATE",
    "' ESCAPE '!'",
    "';",
    "' -- c\n",
    "' AND T > 5 /* x */",
];

fuzz_target!(|data: &[u8]| {
    let [flags, form, session, rest @ ..] = data else {
        return;
    };
    let d = dialects::from_flags(*flags);
    let mut parts = rest.split(|&b| b == 0xFF);
    let mut next = || parts.next().unwrap_or_default();
    let (more_head, old_body, new_body, more_tail) = (next(), next(), next(), next());
    let (head, tail): (&[u8], &[u8]) = if form & 0x80 != 0 {
        (b"", b"")
    } else {
        (
            HEADS[usize::from(form & 15)].as_bytes(),
            TAILS[usize::from((form >> 4) & 7)].as_bytes(),
        )
    };
    let text = |body: &[u8]| {
        let mut t = head.to_vec();
        if session & 16 != 0 || head.is_empty() {
            // (added bytes inside the head, before its quote, or the whole head)
            let q = t.len().saturating_sub(1);
            t.splice(q..q, more_head.iter().copied());
        }
        t.extend_from_slice(body);
        t.extend_from_slice(tail);
        t.extend_from_slice(more_tail);
        t
    };
    let (old, new) = (text(old_body), text(new_body));

    // 1. the reading
    if let Err(e) = repeat::check(&old, &new, d) {
        panic!(
            "{e}: {:?} then {:?}",
            String::from_utf8_lossy(&old),
            String::from_utf8_lossy(&new)
        );
    }

    // 2. the decision, and what it shows the metrics and the advisor
    let ctx = Context {
        dialect: d,
        strict: flags & 16 == 0,
        scope: tables::scope(),
        tables: Some(tables::view(
            [
                Some(ConnCharset::Utf8),
                Some(ConnCharset::Latin1),
                Some(ConnCharset::Other),
                None,
            ][usize::from((session >> 1) & 3)],
            session & 8 == 0,
        )),
        rewrite: flags & 32 == 0,
        writes: Some(WriteRules {
            now_ms: 1_763_700_000_000,
            ..WriteRules::default()
        }),
        txn: Txn {
            active: flags & 128 != 0 && flags & 16 != 0,
            pinned: None,
        },
        ..Context::default()
    };
    let origin = if session & 1 != 0 {
        Origin::Prepare
    } else {
        Origin::Text
    };
    let run = |sql: &[u8]| {
        let mut activity = Activity::default();
        let decision = decide_observed(sql, classify(sql), origin, &ctx, &mut activity);
        (format!("{decision:?}"), format!("{activity:?}"))
    };
    repeat::forget();
    let full = run(&new);
    repeat::forget();
    let _ = run(&old);
    assert_eq!(
        run(&new),
        full,
        "{:?} then {:?}",
        String::from_utf8_lossy(&old),
        String::from_utf8_lossy(&new)
    );
});
