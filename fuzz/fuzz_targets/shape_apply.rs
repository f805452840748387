//! A text taken from the thread's last shape (`scan::statements_keeping`, `Shape::apply`)
//! splits and lexes as the text lexed on its own (`statements_keeping_unsettled`, the
//! reference the other targets hold the split to): the same statements, ambiguity and tokens,
//! or the same error.
//!
//! Input (`shape_input`): a dialect byte, a text A, 0xFF, bytes B. A is split (it becomes
//! the shape); then the texts made of A with B's bytes in its literals, A again and B are
//! split after it and compared with their own split.
#![no_main]

use libfuzzer_sys::fuzz_target;

use obkv_proxy::sql::scan::{statements_after_shape, statements_keeping_unsettled, Dialect, Kept};

mod dialects;
mod shape_input;
use shape_input::MAX;

fn check(earlier: &[&[u8]], sql: &[u8], d: Dialect) {
    let (via, via_tokens, _) = statements_after_shape(earlier, sql, d, MAX);
    let mut kept = Kept::new(MAX);
    let own = statements_keeping_unsettled(sql, d, &mut kept);
    assert_eq!(
        via.is_ok(),
        own.is_ok(),
        "{:?}",
        String::from_utf8_lossy(sql)
    );
    if let (Ok(a), Ok(b)) = (&via, &own) {
        assert_eq!(a, b, "{:?}", String::from_utf8_lossy(sql));
        let own_tokens = kept.of(&obkv_proxy::sql::scan::Piece {
            start: 0,
            end: sql.len(),
            program: false,
        });
        if let Some(own_tokens) = own_tokens {
            assert_eq!(
                via_tokens.as_slice(),
                &*own_tokens,
                "{:?}",
                String::from_utf8_lossy(sql)
            );
        }
    }
}

fuzz_target!(|data: &[u8]| shape_input::run(data, check));
