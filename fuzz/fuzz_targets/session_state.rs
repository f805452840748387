//! What a text does to its session's state, for multiplexing (`sql::session_state`): any
//! bytes, under the dialect bits of the first byte. Never a panic; an assignment it carries
//! reads back, alone, as itself (the proxy replays it on another connection); a KILL's id lies
//! where it says; a KILL the proxy cannot map is found only where its letters (or a backslash
//! that may make them) are; the cheap look never says "nothing" where the reading finds
//! something; a ROW_COUNT() splice leaves no call to splice in the text it makes, and the text
//! before it as it was; a variable the backend reports, written back, reads as an assignment
//! of itself under any sql_mode.
#![no_main]

use libfuzzer_sys::fuzz_target;

use obkv_proxy::sql::scan::{Dialect, Flavor};
use obkv_proxy::sql::session_state::{
    effect, effect_read, kill_target, plainly_nothing, reported, row_count_spliced, unmapped_kill,
    Assignment, Effect, Pin,
};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, sql)) = data.split_first() else {
        return;
    };
    let d = Dialect {
        flavor: if flags & 8 != 0 {
            Flavor::OceanBase
        } else {
            Flavor::MariaDb
        },
        version: 101119,
        no_backslash_escapes: flags & 1 != 0,
        ansi_quotes: flags & 2 != 0,
        multibyte_backslash: flags & 4 != 0,
        plain_comments: false,
    };
    // the cheap look says nothing only where the whole reading finds nothing (or cannot read
    // the text at all: the look's bytes hold none of what matters under any reading)
    if plainly_nothing(sql) {
        let full = effect_read(sql, d);
        assert!(
            matches!(full, Effect::None | Effect::Pin(Pin::Unreadable)),
            "{full:?}"
        );
    }
    if let Effect::Carry(list) = effect(sql, d) {
        assert!(!list.is_empty());
        for a in &list {
            assert!(!a.key.is_empty());
            assert!(a
                .key
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_'));
            let back = read_back(a, d);
            assert_eq!(back.text, a.text);
            assert_eq!(back.to_default, a.to_default);
        }
    }
    // a KILL the reading finds is in the bytes: the letters, or a backslash escape that makes
    // them in a literal
    if unmapped_kill(sql, d, true) {
        let letters = sql.windows(4).any(|w| w.eq_ignore_ascii_case(b"KILL"));
        assert!(letters || sql.contains(&b'\\'));
    }
    if let Some(k) = kill_target(sql, d) {
        let digits = sql.get(k.at.clone()).expect("inside the text");
        let n: u64 = std::str::from_utf8(digits).unwrap().parse().unwrap();
        assert_eq!(n, u64::from(k.id));
    }
    if let Some(out) = row_count_spliced(sql, d, -1) {
        let first = out.iter().zip(sql).take_while(|(a, b)| a == b).count();
        assert!(first < sql.len());
        assert_eq!(
            row_count_spliced(&out, d, -1),
            None,
            "{:?}",
            String::from_utf8_lossy(&out)
        );
    }
    // the bytes as reported variables: name and value split at the first '=' of each line
    let vars: Vec<(Vec<u8>, Vec<u8>)> = sql
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let at = l.iter().position(|&b| b == b'=')?;
            Some((l[..at].to_vec(), l[at + 1..].to_vec()))
        })
        .collect();
    if let Ok(list) = reported(&vars, false, &[]) {
        for a in &list {
            assert!(!read_back(a, d).to_default);
        }
    }
});

/// `SET` + an assignment's text, read again: one assignment of the same name (returned).
fn read_back(a: &Assignment, d: Dialect) -> Assignment {
    let mut again = b"SET ".to_vec();
    again.extend_from_slice(&a.text);
    match effect(&again, d) {
        Effect::Carry(mut back) => {
            assert_eq!(back.len(), 1, "{:?}", String::from_utf8_lossy(&again));
            let back = back.remove(0);
            assert_eq!(back.key, a.key);
            back
        }
        other => panic!(
            "{:?} reads back as {other:?}",
            String::from_utf8_lossy(&again)
        ),
    }
}
