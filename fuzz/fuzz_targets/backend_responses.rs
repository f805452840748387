//! What the backend sends: greetings, status packets, and whole responses fed to the response
//! tracker packet by packet (the input is split into packets by one-byte lengths); the same
//! response relayed in bulk (`PacketStream::move_whole_packets`, whole payloads shown to the
//! tracker) must stop where the packet-by-packet relay stops, with the same summary, and move
//! the same bytes, renumbered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::backend::decode_rows;
use obkv_proxy::protocol::constants::Caps;
use obkv_proxy::protocol::handshake::{parse_greeting, set_greeting_capabilities};
use obkv_proxy::protocol::packets::{
    parse_eof, parse_err_code, parse_ok, read_reports, Reports, MAX_REPORTED_NAME,
    MAX_REPORTED_VALUE, MAX_REPORTED_VARS,
};
use obkv_proxy::protocol::response::{ResponseKind, ResponseTracker, Step};
use obkv_proxy::protocol::stream::{Flow, PacketStream};

fuzz_target!(|data: &[u8]| {
    if let Some(g) = parse_greeting(data) {
        let mut copy = data.to_vec();
        set_greeting_capabilities(&mut copy, &g, g.capabilities, g.ext_capabilities & 0x1d);
        assert_eq!(copy.len(), data.len());
    }
    let _ = (parse_ok(data), parse_eof(data), parse_err_code(data));
    // session-state reports: bounded whatever the bytes say
    let mut reports = Reports::default();
    read_reports(data, &mut reports);
    read_reports(data, &mut reports);
    assert!(reports.vars.len() <= MAX_REPORTED_VARS);
    for (name, value) in &reports.vars {
        assert!(name.len() <= MAX_REPORTED_NAME && value.len() <= MAX_REPORTED_VALUE);
    }
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
    // (and CLIENT_SESSION_TRACK: OK packets' reports are read)
    let base =
        if flags & 0x80 != 0 { 1 << 24 } else { 0 } | if flags & 0x20 != 0 { 1 << 23 } else { 0 };
    let ext = u32::from(flags & 0x08 != 0) | (u32::from(flags & 0x10 != 0) << 4);
    let caps = Caps::new(base, ext);
    let mut t = ResponseTracker::with_caps(kind, caps);
    // packet by packet, as the relay reads a packet it cannot take whole
    let mut taken = 0;
    let mut failed = false;
    for p in &packets {
        let whole = t.needs_whole_packet(p.first().copied(), p.len());
        let shown = if whole { &p[..] } else { &p[..p.len().min(1)] };
        match t.feed(p.len(), shown) {
            Err(_) => {
                failed = true;
                break;
            }
            Ok(Step::Done) => {
                taken += 1;
                break;
            }
            Ok(_) => taken += 1,
        }
    }
    bulk_agrees(&packets, kind, caps, flags, taken, failed, t.summary);
    let _ = decode_rows(&packets, caps);
});

/// The same packets, framed and read into a stream, moved in bulk to another stream.
fn bulk_agrees(
    packets: &[Vec<u8>],
    kind: ResponseKind,
    caps: Caps,
    flags: u8,
    taken: usize,
    failed: bool,
    summary: obkv_proxy::protocol::response::Summary,
) {
    let mut frames = Vec::new();
    for (i, p) in packets.iter().enumerate() {
        let l = p.len() as u32;
        frames.extend_from_slice(&[l as u8, (l >> 8) as u8, (l >> 16) as u8, i as u8]);
        frames.extend_from_slice(p);
    }
    let delta = flags.wrapping_mul(7);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        use tokio::io::AsyncWriteExt;
        let (mut w, r) = tokio::io::duplex(frames.len() + 1);
        w.write_all(&frames).await.expect("write");
        drop(w);
        let mut src = PacketStream::new(r);
        let mut dst = PacketStream::new(tokio::io::duplex(16).0);
        if flags & 0x40 != 0 {
            // something already queued on the other side: the bytes are copied, not traded
            dst.queue_bytes(b"x");
        }
        let queued = usize::from(flags & 0x40 != 0);
        while src.read_some().await.is_ok() {}
        let mut t = ResponseTracker::with_caps(kind, caps);
        let (mut moved, mut bulk_failed) = (0usize, false);
        let mut last_seq = None;
        src.move_whole_packets(&mut dst, delta, |h, payload, after| {
            match t.feed(payload.len(), payload) {
                Err(_) => {
                    bulk_failed = true;
                    Flow::Leave
                }
                Ok(Step::Done) => {
                    moved += 1;
                    last_seq = Some(h.seq);
                    Flow::TakeAndStop
                }
                Ok(_) => {
                    moved += 1;
                    last_seq = Some(h.seq);
                    // the column definitions and rows after it, taken in one loop as the
                    // relay takes them: whole frames, the last one's id returned
                    let (n, seq) = t.take_bulk(after);
                    let (mut at, mut more, mut last) = (0, 0, None);
                    while at < n {
                        let h = &after[at..at + 4];
                        last = Some(h[3]);
                        at += 4
                            + (usize::from(h[0])
                                | usize::from(h[1]) << 8
                                | usize::from(h[2]) << 16);
                        more += 1;
                    }
                    assert_eq!((at, last), (n, seq));
                    if more > 0 {
                        moved += more;
                        last_seq = seq;
                    }
                    Flow::NextWith(n)
                }
            }
        });
        // the sequence id of the last packet moved is the one its frame carries
        if moved > 0 && moved <= packets.len() {
            assert_eq!(last_seq, Some((moved - 1) as u8));
        }
        assert_eq!((moved, bulk_failed), (taken, failed));
        assert_eq!(t.summary, summary);
        // the bytes moved are the frames of the packets taken, renumbered
        let mut expected = Vec::new();
        for (i, p) in packets.iter().take(taken).enumerate() {
            let l = p.len() as u32;
            let seq = (i as u8).wrapping_add(delta);
            expected.extend_from_slice(&[l as u8, (l >> 8) as u8, (l >> 16) as u8, seq]);
            expected.extend_from_slice(p);
        }
        let out = dst.pending_output();
        assert_eq!(&out[queued..], &expected[..]);
        // what was not moved is still there to read
        assert_eq!(src.buffered(), frames.len() - (out.len() - queued));
    });
}
