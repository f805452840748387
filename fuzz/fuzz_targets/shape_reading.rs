//! A statement of a text taken from the thread's last shape is read by the DML reader, and
//! as an INSERT's head, from the frame the shape keeps of it (`dml::Frame`,
//! `insert::HeadFrame`: only what the literals decide is read again), and each reading is
//! the one reading its tokens in full gives.
//!
//! Input as `shape_apply`'s (`shape_input`): A is split and read (it becomes the shape and
//! leaves its frames); then the texts made of A and B are read and compared, statement by
//! statement (and the part a wrapper runs).
#![no_main]

use libfuzzer_sys::fuzz_target;

use obkv_proxy::sql::framed::reads_after_shape;
use obkv_proxy::sql::scan::Dialect;

mod dialects;
mod shape_input;
use shape_input::MAX;

fn check(earlier: &[&[u8]], sql: &[u8], d: Dialect) {
    let (reads, from_shape) = reads_after_shape(earlier, sql, d, MAX);
    for r in &reads {
        assert!(r.same(), "{r:?} {:?}", String::from_utf8_lossy(sql));
        // a text taken from the shape reads a SELECT, a DELETE and an INSERT's head from the
        // frame an earlier text of the shape left, when the frames' bounds leave room for all
        // of them: at most 16 statements of two parts each (a shape has no more), and 4,608
        // tokens in all (a text of at most 2,304 bytes has at most that many, parts counted
        // twice)
        if from_shape && r.framed_kind() && sql.len() <= 2304 {
            assert!(r.from_frame(), "{r:?} {:?}", String::from_utf8_lossy(sql));
        }
    }
}

fuzz_target!(|data: &[u8]| shape_input::run(data, check));
