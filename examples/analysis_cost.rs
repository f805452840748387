//! The proxy's analysis of one HBase prefix-scan statement (classify, read, plan, splice), and
//! its write checks (cell rules, T filled in, the transaction guard) on a one-row and a ten-row
//! INSERT, in a loop: `cargo run --release --example analysis_cost [ITERATIONS]` prints µs per
//! statement;
//! run it under `perf record` to see where the time goes. No database is involved: the table's
//! schema is put in the cache as the session would have read it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use obkv_proxy::engine::prefix_scan::{ConnCharset, TableView};
use obkv_proxy::engine::router::{decide, Context, Decision, Origin};
use obkv_proxy::engine::write::{Txn, WriteRules};
use obkv_proxy::hbase::partition::Partitioning;
use obkv_proxy::hbase::schema::{key, Placement, SchemaCache, TableSchema};
use obkv_proxy::sql::scan::{Dialect, Flavor};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let cache = SchemaCache::new(Duration::from_secs(3600));
    let schema = TableSchema {
        schema: "obkv_bench".into(),
        name: "bench$cells".into(),
        partitioning: Partitioning::Key {
            prefix_len: Some(8),
            partitions: 97,
        },
        prefix_column: Some(("K_PREFIX".into(), 8)),
        placement: Placement::OceanBase,
        grouped: true,
        attrs: obkv_proxy::hbase::ttl::Attributes::default(),
        limits: obkv_proxy::hbase::cells::CellLimits {
            k: Some(1024),
            q: Some(256),
            v: Some(1024),
            prefix_column: Some("K_PREFIX".into()),
            columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
        },
    };
    cache.put(
        key(b"obkv_bench", b"bench$cells", false),
        Some(Arc::new(schema)),
    );
    let ctx = Context {
        tables: Some(TableView {
            cache: Arc::new(cache),
            current_db: Some(Some(std::sync::Arc::from(&b"obkv_bench"[..]))),
            charset: Some(ConnCharset::Utf8),
            names_ci: false,
            settled: false,
            counters: Default::default(),
            blind: Vec::new(),
        }),
        // a session knows its backend's kind after its first flagged statement
        dialect: Dialect {
            flavor: Flavor::OceanBase,
            ..Dialect::default()
        },
        // the write rules are on by default: every statement passes the write stage too
        writes: Some(WriteRules {
            now_ms: 1_763_700_000_000,
            ..WriteRules::default()
        }),
        txn: Txn {
            active: true,
            pinned: None,
        },
        ..Context::default()
    };
    // ANALYSIS_ONLY=scan|one|ten runs that statement alone (the others run once), for a
    // profile of one path
    let only = std::env::var("ANALYSIS_ONLY").unwrap_or_default();
    let per = |name: &str, sql: &[u8], want: fn(&Decision) -> bool| {
        let n = if only.is_empty() || only == name {
            n
        } else {
            1
        };
        let start = Instant::now();
        for _ in 0..n {
            let d = decide(std::hint::black_box(sql), Origin::Text, &ctx).1;
            assert!(want(&d), "{d:?}");
        }
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    };
    let scan = per(
        "scan",
        b"SELECT K, Q, T, V FROM bench$cells WHERE K LIKE 'p0012345%'",
        |d| d.rewritten().is_some(),
    );
    let row = |i: usize| format!("('p0012345:{i:03}', 'q', -1763700000000, 'value {i}')");
    let one = format!("INSERT INTO bench$cells (K, Q, T, V) VALUES {}", row(0));
    let ten = format!(
        "INSERT INTO bench$cells (K, Q, T, V) VALUES {}",
        (0..10).map(row).collect::<Vec<_>>().join(", ")
    );
    let write = |d: &Decision| matches!(d, Decision::Send(w) if w.checked && w.refused.is_none());
    let one = per("one", one.as_bytes(), write);
    let ten = per("ten", ten.as_bytes(), write);
    println!(
        "{scan:.3} µs per prefix scan; write checks: {one:.3} µs per one-row INSERT, {ten:.3} µs per ten-row INSERT"
    );
}
