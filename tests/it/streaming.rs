//! Acceptance 4: a result of more than 1 GiB streams through the proxy (the real binary) while
//! its resident memory stays under 64 MiB.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{shared, BOTH};

const GIB: u64 = 1 << 30;
const RSS_LIMIT_KIB: u64 = 64 * 1024;

#[test]
fn one_gib_result_streams_in_bounded_memory() {
    for kind in BOTH {
        let backend = shared(kind);
        let mut setup = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
        setup.must("CREATE DATABASE IF NOT EXISTS obkv_stream");
        setup.must("DROP TABLE IF EXISTS obkv_stream.d10");
        setup.must("CREATE TABLE obkv_stream.d10 (d INT PRIMARY KEY)");
        assert!(setup.query_ok(
            "INSERT INTO obkv_stream.d10 VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)"
        ));

        let p = proxy::spawn_binary(&backend.addr, &[]);
        let baseline = p.rss_kib();
        let peak = Arc::new(AtomicU64::new(baseline));
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak, done, pid) = (peak.clone(), done.clone(), p.pid);
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if let Some(kib) = rss_of(pid) {
                        peak.fetch_max(kib, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };

        // 2,000 rows of 600,000 bytes: 1.2 GB of row data, produced by the backend on the fly
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("through proxy");
        c.write_frame(
            0,
            b"\x03SELECT a.d, REPEAT('x', 600000) FROM obkv_stream.d10 a, obkv_stream.d10 b, obkv_stream.d10 c, obkv_stream.d10 e WHERE e.d < 2",
        )
        .expect("query sent");
        let mut bytes = 0u64;
        let mut frames = 0u64;
        // without DEPRECATE_EOF (seekdb) an EOF also closes the column definitions
        let mut terminators_left =
            if c.caps & obkv_proxy::protocol::constants::cap::DEPRECATE_EOF != 0 {
                1
            } else {
                2
            };
        loop {
            let (_, payload) = c.read_frame().expect("result frame");
            bytes += payload.len() as u64 + 4;
            frames += 1;
            assert_ne!(
                payload.first(),
                Some(&0xff),
                "{}: error mid-stream",
                kind.name()
            );
            // the final OK/EOF (0xFE) ends the result set; rows here are 600 KB, never 0xFE-led
            if payload.first() == Some(&0xfe) && payload.len() < 9 + 2 + 2 + 2 {
                terminators_left -= 1;
                if terminators_left == 0 {
                    break;
                }
            }
        }
        done.store(true, Ordering::Relaxed);
        sampler.join().expect("sampler");
        let peak_kib = peak.load(Ordering::Relaxed);
        eprintln!(
            "{}: streamed {} MiB in {frames} frames; proxy RSS baseline {baseline} KiB, peak {peak_kib} KiB",
            kind.name(),
            bytes >> 20
        );
        assert!(bytes > GIB, "{}: only {bytes} bytes streamed", kind.name());
        assert!(frames >= 2000, "{}: {frames} frames", kind.name());
        assert!(
            peak_kib < RSS_LIMIT_KIB,
            "{}: proxy RSS peaked at {peak_kib} KiB",
            kind.name()
        );
        // the session still works after the big result
        assert_eq!(c.scalar("SELECT 40 + 2"), "42");
        assert!(p.alive());
    }
}

fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}
