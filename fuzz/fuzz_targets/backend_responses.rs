//! What the backend sends: greetings, status packets, and whole responses fed to the response
//! tracker packet by packet (the input is split into packets by one-byte lengths).
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::backend::decode_rows;
use obkv_proxy::protocol::constants::Caps;
use obkv_proxy::protocol::handshake::{parse_greeting, set_greeting_capabilities};
use obkv_proxy::protocol::packets::{parse_eof, parse_err_code, parse_ok};
use obkv_proxy::protocol::response::{ResponseKind, ResponseTracker, Step};

fuzz_target!(|data: &[u8]| {
    if let Some(g) = parse_greeting(data) {
        let mut copy = data.to_vec();
        set_greeting_capabilities(&mut copy, &g, g.capabilities, g.ext_capabilities & 0x1d);
        assert_eq!(copy.len(), data.len());
    }
    let _ = (parse_ok(data), parse_eof(data), parse_err_code(data));
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut packets = Vec::new();
    let mut r = rest;
    while let Some((&n, tail)) = r.split_first() {
        let n = usize::from(n).min(tail.len());
        packets.push(tail[..n].to_vec());
        r = &tail[n..];
    }
    let kinds = [
        ResponseKind::Query,
        ResponseKind::Execute,
        ResponseKind::Prepare,
        ResponseKind::FieldList,
        ResponseKind::Fetch,
        ResponseKind::Single,
    ];
    let kind = kinds[usize::from(flags & 7) % kinds.len()];
    // DEPRECATE_EOF, and MariaDB's PROGRESS / CACHE_METADATA (CLIENT_MYSQL clear)
    let base = if flags & 0x80 != 0 { 1 << 24 } else { 0 };
    let ext = u32::from(flags & 0x08 != 0) | (u32::from(flags & 0x10 != 0) << 4);
    let caps = Caps::new(base, ext);
    let mut t = ResponseTracker::with_caps(kind, caps);
    for p in &packets {
        let whole = t.needs_whole_packet(p.first().copied(), p.len());
        let shown = if whole { &p[..] } else { &p[..p.len().min(1)] };
        match t.feed(p.len(), shown) {
            Ok(Step::Done) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let _ = decode_rows(&packets, caps);
});
