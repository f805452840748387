//! The TTL task under load (issue 41; driven by `scripts/ttl-bench.sh`, or run alone): a family
//! with `MaxVersions` 1 and BENCH_CELLS cells of 4 versions on a KEY(K_PREFIX) table of 97
//! partitions; 4 connections run a prepared point get by (K, Q) through obkv-proxy for
//! BENCH_SECONDS with no TTL run, then again while a run (`ALTER SYSTEM TRIGGER TTL`) deletes
//! three versions of every cell. Prints operations/s, p50 and p99 of both phases and the
//! ratio, and how much of the run the second phase covered.
//!
//! BENCH_PROXY: host:port of an obkv-proxy with `ttl.enabled` and a catalog account;
//! BENCH_CATALOG: its `hbase.catalog_schema` (default obkv_meta); BENCH_SECONDS (default 10);
//! BENCH_CELLS (default 50000).

use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use mysql_async::Conn;

#[allow(dead_code)]
mod common;
use common::{env, opts};

const DB: &str = "obkv_ttlbench";
const TABLE: &str = "ttlbench$f";
const THREADS: usize = 4;

fn key(i: u64) -> Vec<u8> {
    // a spread of prefixes: the first 4 bytes vary with i
    format!("{:04x}{i:08}", (i.wrapping_mul(2654435761)) & 0xffff).into_bytes()
}

async fn setup(proxy: &str, cells: u64) {
    let mut c = Conn::new(opts(proxy, None)).await.expect("proxy");
    for sql in [
        format!("DROP DATABASE IF EXISTS {DB}"),
        format!("CREATE DATABASE {DB}"),
        format!("USE {DB}"),
        "CREATE TABLEGROUP IF NOT EXISTS ttlbench".into(),
        format!(
            "CREATE TABLE {TABLE} (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, \
             K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) \
             TABLEGROUP = ttlbench KV_ATTRIBUTES = '{{\"Hbase\": {{\"MaxVersions\": 1}}}}' \
             PARTITION BY KEY(K_PREFIX) PARTITIONS 97"
        ),
    ] {
        c.query_drop(sql.as_str()).await.expect("setup");
    }
    let now: i64 = c
        .query_first("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
        .await
        .expect("clock")
        .expect("row");
    let mut values = Vec::new();
    for i in 0..cells {
        let k = String::from_utf8_lossy(&key(i)).into_owned();
        for v in 0..4 {
            values.push(format!("('{k}', 'q', {}, 'value-{v}')", -(now - v * 1000)));
        }
        if values.len() >= 2000 || i + 1 == cells {
            c.query_drop(format!(
                "INSERT INTO {TABLE} (K, Q, T, V) VALUES {}",
                values.join(",")
            ))
            .await
            .expect("load");
            values.clear();
        }
    }
    c.disconnect().await.ok();
}

/// Point gets on THREADS connections until `until` says stop (checked every get) or
/// `max` passes: (operations/s, p50 ms, p99 ms).
async fn load(proxy: &str, cells: u64, max: Duration, until: Option<&str>) -> (f64, f64, f64, f64) {
    let start = Instant::now();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for t in 0..THREADS {
        let addr = proxy.to_string();
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::new(opts(&addr, Some(DB))).await.expect("proxy");
            let stmt = c
                .prep(format!(
                    "SELECT V FROM {TABLE} WHERE K = ? AND Q = 'q' ORDER BY T LIMIT 1"
                ))
                .await
                .expect("prepare");
            let mut lat = Vec::new();
            let mut x = 0x9e3779b97f4a7c15u64 ^ (t as u64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && start.elapsed() < max {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = key(x % cells);
                let t0 = Instant::now();
                let _: Option<Vec<u8>> = c.exec_first(&stmt, (k,)).await.expect("get");
                lat.push(t0.elapsed().as_secs_f64() * 1000.0);
            }
            c.disconnect().await.ok();
            lat
        }));
    }
    // the run's end, watched on a connection of its own
    if let Some(catalog) = until {
        let mut w = Conn::new(opts(proxy, None)).await.expect("proxy");
        let q = format!("SELECT COUNT(*) FROM {catalog}.kv_ttl_tasks");
        while start.elapsed() < max {
            let open: u64 = w.query_first(q.as_str()).await.expect("tasks").unwrap_or(0);
            if open == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        w.disconnect().await.ok();
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let secs = start.elapsed().as_secs_f64();
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    (all.len() as f64 / secs, pct(0.5), pct(0.99), secs)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let proxy = env("BENCH_PROXY", "127.0.0.1:2883");
    let catalog = env("BENCH_CATALOG", "obkv_meta");
    let secs: f64 = env("BENCH_SECONDS", "10").parse().expect("BENCH_SECONDS");
    let cells: u64 = env("BENCH_CELLS", "50000").parse().expect("BENCH_CELLS");
    let t0 = Instant::now();
    setup(&proxy, cells).await;
    println!(
        "{} rows ({cells} cells x 4 versions, MaxVersions 1) loaded in {:.1} s",
        cells * 4,
        t0.elapsed().as_secs_f64()
    );
    let max = Duration::from_secs_f64(secs);
    let (q0, p50_0, p99_0, _) = load(&proxy, cells, max, None).await;
    let mut c = Conn::new(opts(&proxy, None)).await.expect("proxy");
    c.query_drop("ALTER SYSTEM TRIGGER TTL")
        .await
        .expect("trigger");
    let (q1, p50_1, p99_1, during) = load(&proxy, cells, max, Some(&catalog)).await;
    let left: u64 = c
        .query_first(format!("SELECT COUNT(*) FROM {DB}.{TABLE}"))
        .await
        .expect("count")
        .unwrap_or(0);
    let open: u64 = c
        .query_first(format!("SELECT COUNT(*) FROM {catalog}.kv_ttl_tasks"))
        .await
        .expect("tasks")
        .unwrap_or(0);
    c.disconnect().await.ok();
    println!(
        "{:<22} {:>10} {:>8} {:>8}",
        "point get (prepared)", "ops/s", "p50_ms", "p99_ms"
    );
    println!("{:<22} {q0:>10.0} {p50_0:>8.3} {p99_0:>8.3}", "no TTL run");
    println!(
        "{:<22} {q1:>10.0} {p50_1:>8.3} {p99_1:>8.3}",
        "during a TTL run"
    );
    println!(
        "p99 during/without: {:.2} (target <= 2); ops/s during/without: {:.2}; the load covered {during:.1} s of the run; \
         {left} rows left of {} ({} tasks still open)",
        p99_1 / p99_0,
        q1 / q0,
        cells * 4,
        open
    );
}
