//! The compressed protocol's codec: frames from a peer in any shape (split anywhere, lying
//! lengths, broken zlib) are decoded without a panic and without giving out more than they
//! declare (the server leg also refuses frames out of order, the client leg never); what the codec encodes decodes back to the same bytes; renumbering keeps lengths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::protocol::compress::{Codec, OutOfOrder, Step, HEADER};

fuzz_target!(|data: &[u8]| {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let limit = usize::from(knob & 0x3f) * 97 + 1;
    let split = if rest.is_empty() {
        0
    } else {
        usize::from(knob) % rest.len()
    };
    // as frames read from a peer, arriving in two parts
    let mut c = if knob & 0x80 != 0 {
        Codec::for_server(rest[..split].to_vec())
    } else {
        Codec::new(rest[..split].to_vec())
    };
    let mut out = Vec::new();
    let mut fed_rest = false;
    let mut steps = 0usize;
    loop {
        steps += 1;
        assert!(steps < 1 << 20, "decode makes progress");
        match c.decode(&mut out, limit) {
            Ok(Step::Produced(n)) => assert!(n > 0 && n <= limit),
            Ok(Step::NeedInput) if !fed_rest => {
                if knob & 0x40 != 0 {
                    // the second part begins a command (its frame must be numbered 0)
                    c.expect_command();
                }
                c.input_buffer(rest.len() - split)
                    .extend_from_slice(&rest[split..]);
                fed_rest = true;
            }
            Ok(Step::NeedInput) => break,
            Err(e) => {
                // only the server leg checks frame ids
                assert!(knob & 0x80 != 0 || OutOfOrder::of(&e).is_none());
                break;
            }
        }
        // a frame declares at most 16 MiB - 1 bytes; the input holds at most this many frames
        assert!(out.len() <= (rest.len() / HEADER + 1) * 0xFF_FFFF);
    }
    // what the codec writes reads back as it was, and numbering keeps the bytes' length
    let mut w = Codec::for_server(Vec::new());
    let mut plain = rest.to_vec();
    w.renumber(&mut plain);
    assert_eq!(plain.len(), rest.len());
    w.encode(&plain[..split]);
    w.restart_sequence();
    w.encode(&plain[split..]);
    let mut r = Codec::new(w.output().to_vec());
    let mut back = Vec::new();
    while let Ok(Step::Produced(_)) = r.decode(&mut back, limit) {}
    assert_eq!(back, plain);
});
