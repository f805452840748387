//! What clients send: login packets (plain and SSLRequest), COM_CHANGE_USER, auth switch
//! answers, and the frame reader with its size cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::protocol::handshake::{
    is_ssl_request, parse_auth_switch, parse_handshake_response, set_response_capabilities,
};
use obkv_proxy::protocol::stream::PacketStream;
use obkv_proxy::session::handshake::parse_change_user;

fuzz_target!(|data: &[u8]| {
    // COM_STMT_EXECUTE as the prefix-scan rewriter reads and rebuilds it
    if let Some((&n, cmd)) = data.split_first() {
        use obkv_proxy::protocol::execute;
        let params = usize::from(n % 8) + 1;
        // the short reading agrees with the whole one
        assert_eq!(
            execute::sent_types(cmd, params),
            execute::parse(cmd, params).map(|e| e.types)
        );
        if let Some(e) = execute::parse(cmd, params) {
            let types = e
                .types
                .map(<[u8]>::to_vec)
                .unwrap_or_else(|| [0xfd, 0].repeat(params));
            let spans = execute::value_spans(e.nulls, &types, e.values);
            if let Some(spans) = &spans {
                for (i, s) in spans.iter().enumerate() {
                    if let Some(s) = s {
                        let s = execute::span_range(*s);
                        assert!(s.0 <= s.1 && s.1 <= e.values.len());
                        let _ = execute::string_value(types[2 * i], e.values, s);
                    }
                }
            }
            let at = usize::from(n / 8) % (params + 1);
            if let Some(out) = execute::rebuild(
                Vec::new(),
                &e,
                7,
                &types,
                spans.as_deref(),
                at,
                &[(execute::TYPE_BLOB, b"pq")],
            ) {
                // the rebuilt packet reads back with one more parameter
                assert!(execute::parse(&out, params + 1).is_some());
            }
        }
    }
    let _ = is_ssl_request(data);
    if let Some(h) = parse_handshake_response(data) {
        let mut copy = data.to_vec();
        set_response_capabilities(&mut copy, h.capabilities & !1, h.ext_capabilities & 0x1d);
        assert_eq!(copy.len(), data.len());
        let again = parse_handshake_response(&copy).expect("an edited login still parses");
        assert_eq!(again.user, h.user);
    }
    let _ = parse_change_user(data, u32::MAX);
    let _ = parse_change_user(data, 0);
    let _ = parse_auth_switch(data);
    // frames from a byte stream: never more than the cap, never a panic
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (mut a, b) = tokio::io::duplex(1 << 16);
        let input = data.to_vec();
        let writer = async move {
            use tokio::io::AsyncWriteExt;
            let _ = a.write_all(&input).await;
            drop(a);
        };
        let reader = async move {
            let mut s = PacketStream::new(b);
            let mut out = Vec::new();
            while let Ok(h) = s.read_frame_capped(&mut out, 4096).await {
                assert!(h.len <= 4096 && out.len() == h.len);
            }
        };
        tokio::join!(writer, reader);
    });
    // commands as the session takes them: a whole frame from the read buffer without
    // waiting, else header and payload read; each payload as the bytes say, in order
    rt.block_on(async {
        let (mut a, b) = tokio::io::duplex(1 << 16);
        let input = data.to_vec();
        let mut want = Vec::new();
        let mut at = 0usize;
        while let Some(h) = data.get(at..at + 4) {
            let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            let Some(p) = data.get(at + 4..at + 4 + len) else {
                break;
            };
            want.push(p.to_vec());
            at += 4 + len;
        }
        let writer = async move {
            use tokio::io::AsyncWriteExt;
            // (in two writes: a frame may be read in pieces)
            let half = input.len() / 2;
            let _ = a.write_all(&input[..half]).await;
            tokio::task::yield_now().await;
            let _ = a.write_all(&input[half..]).await;
            drop(a);
        };
        let reader = async move {
            let mut s = PacketStream::new(b);
            let mut got = Vec::new();
            let mut out = Vec::new();
            loop {
                if s.wait_readable().await.is_err() {
                    break;
                }
                if let Some(h) = s.take_whole_frame(&mut out, 1 << 20) {
                    assert_eq!(out.len(), h.len);
                    got.push(out.clone());
                    continue;
                }
                let Ok(h) = s.read_header().await else { break };
                out.clear();
                if s.read_payload_into(h.len, &mut out).await.is_err() {
                    break;
                }
                got.push(out.clone());
            }
            got
        };
        let ((), got) = tokio::join!(writer, reader);
        assert_eq!(got, want);
    });
});
