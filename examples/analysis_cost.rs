//! The proxy's analysis of one HBase prefix-scan statement (classify, read, plan, splice), in a
//! loop: `cargo run --release --example analysis_cost [ITERATIONS]` prints µs per statement;
//! run it under `perf record` to see where the time goes. No database is involved: the table's
//! schema is put in the cache as the session would have read it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use obkv_proxy::hbase::partition::Partitioning;
use obkv_proxy::hbase::schema::{key, Placement, SchemaCache, TableSchema};
use obkv_proxy::sql::prefix_scan::{ConnCharset, TableView};
use obkv_proxy::sql::router::{decide, Context, Decision, Origin};
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
        limits: obkv_proxy::hbase::cells::CellLimits::default(),
    };
    cache.put(
        key(b"obkv_bench", b"bench$cells", false),
        Some(Arc::new(schema)),
    );
    let ctx = Context {
        tables: Some(TableView {
            cache: Arc::new(cache),
            current_db: Some(Some(b"obkv_bench".to_vec())),
            charset: Some(ConnCharset::Utf8),
            names_ci: false,
            settled: false,
            counters: Default::default(),
        }),
        // a session knows its backend's kind after its first flagged statement
        dialect: Dialect {
            flavor: Flavor::OceanBase,
            ..Dialect::default()
        },
        ..Context::default()
    };
    let sql = b"SELECT K, Q, T, V FROM bench$cells WHERE K LIKE 'p0012345%'";
    let start = Instant::now();
    for _ in 0..n {
        let d = decide(std::hint::black_box(sql), Origin::Text, &ctx).1;
        assert!(matches!(d, Decision::Rewrite(_)));
    }
    println!(
        "{:.3} µs per statement",
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
