//! The rowkey advisor on any traffic: rowkeys of any bytes and length written, read and
//! scanned on each partitioning, then the detectors, the what-if replay, the page and the
//! offline tool's reading of a key file. Nothing may panic, every count must add up, and the
//! page must not carry a table's bytes unescaped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::admin::advisor::TableReport;
use obkv_proxy::admin::page::advisor_page;
use obkv_proxy::hbase::advisor::detect::{findings, hot_partition, replay};
use obkv_proxy::hbase::advisor::table::{Shape, TableStats};
use obkv_proxy::hbase::partition::{Partitioning, RangeBound};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let keys: Vec<&[u8]> = rest.split(|&b| b == b'\n').take(5000).collect();
    let p = match flags % 4 {
        0 => Partitioning::Key {
            prefix_len: None,
            partitions: 97,
        },
        1 => Partitioning::Key {
            prefix_len: Some(usize::from(flags >> 2) % 24 + 1),
            partitions: 13,
        },
        2 => Partitioning::RangeK {
            bounds: keys
                .iter()
                .take(3)
                .map(|k| RangeBound::LessThan(k.to_vec()))
                .collect(),
        },
        _ => Partitioning::None,
    };
    let shape = Shape {
        epoch_seconds: 1 + u64::from(flags >> 5),
        epochs: 3,
        sample: 16,
        sample_every: 1 + u32::from(flags & 0x7),
    };
    let mut t = TableStats::new(p.clone(), shape);
    for (i, k) in keys.iter().enumerate() {
        let now = i as u64 / 7;
        match k.first().map(|b| b % 4) {
            Some(0) => t.get(k, now),
            Some(1) => t.scan(k, p.partition_of(k), now),
            // a row the sample did not take: its partition, partitioning key and length only
            Some(3) => {
                t.write_counted(p.partition_of(k), now);
                t.distinct_key(
                    obkv_proxy::hbase::advisor::stats::Distinct::update_of(p.key_hash(k)),
                );
                t.longest(k.len());
            }
            _ => t.write(k, now),
        }
    }
    assert!(t.epochs.len() <= 3);
    assert!(t.sample.len() <= 16);
    let placed: u64 = t.total_writes.iter().sum();
    assert_eq!(placed + t.unplaced, t.rows_written());
    let _ = hot_partition(&t.total_writes);
    let _ = replay(&t.sample, &p);
    let f = findings("db.g$f", &t, flags & 0x10 != 0);
    let report = TableReport {
        database: "db".into(),
        table: String::from_utf8_lossy(rest.get(..16).unwrap_or(rest)).into_owned(),
        partitioning: p.describe(),
        writes: t.writes,
        gets: t.gets,
        scans: t.scans,
        findings: f,
        recent: t.recent(),
        total: (t.total_reads.clone(), t.total_writes.clone()),
        epochs: t
            .epochs
            .iter()
            .map(|e| (e.number, e.reads.clone(), e.writes.clone()))
            .collect(),
        epoch_seconds: shape.epoch_seconds,
    };
    let page = advisor_page(&[report], "");
    assert!(!page.contains("<script"));
});
