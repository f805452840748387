//! The TTL task under load (issue 41; driven by `scripts/ttl-bench.sh`, or run alone): a family
//! with `MaxVersions` 1 and BENCH_CELLS cells of 4 versions on a KEY(K_PREFIX) table of 97
//! partitions; 4 connections run a prepared point get by (K, Q) through obkv-proxy while one
//! TTL run (`ALTER SYSTEM TRIGGER TTL`, deleting three versions of every cell) is suspended and
//! resumed in turn: BENCH_ROUNDS rounds of BENCH_SECONDS, half with the task off (suspended),
//! half with it running, so the machine's drift falls on both alike. Prints operations/s, p50
//! and p99 of both and the ratios.
//!
//! BENCH_PROXY: host:port of an obkv-proxy with `ttl.enabled` and a catalog account;
//! BENCH_CATALOG: its `hbase.catalog_schema` (default obkv_meta); BENCH_SECONDS (default 10 a
//! round); BENCH_ROUNDS (default 4); BENCH_CELLS (default 50000).

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

/// Point gets on THREADS connections for `dur`: every latency (ms) and the seconds taken.
async fn load(proxy: &str, cells: u64, dur: Duration) -> (Vec<f64>, f64) {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..THREADS {
        let addr = proxy.to_string();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::new(opts(&addr, Some(DB))).await.expect("proxy");
            let stmt = c
                .prep(format!(
                    "SELECT V FROM {TABLE} WHERE K = ? AND Q = 'q' ORDER BY T LIMIT 1"
                ))
                .await
                .expect("prepare");
            let mut lat = Vec::new();
            let mut x = 0x9e3779b97f4a7c15u64 ^ (t as u64) ^ start.elapsed().as_nanos() as u64;
            while start.elapsed() < dur {
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
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    (all, start.elapsed().as_secs_f64())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let proxy = env("BENCH_PROXY", "127.0.0.1:2883");
    let catalog = env("BENCH_CATALOG", "obkv_meta");
    let secs: f64 = env("BENCH_SECONDS", "10").parse().expect("BENCH_SECONDS");
    let cells: u64 = env("BENCH_CELLS", "50000").parse().expect("BENCH_CELLS");
    let rounds: usize = env("BENCH_ROUNDS", "4").parse().expect("BENCH_ROUNDS");
    let t0 = Instant::now();
    setup(&proxy, cells).await;
    println!(
        "{} rows ({cells} cells x 4 versions, MaxVersions 1) loaded in {:.1} s",
        cells * 4,
        t0.elapsed().as_secs_f64()
    );
    // one run, suspended and resumed: the load alternates between the task off (suspended)
    // and on, so the machine's drift falls on both alike
    let mut c = Conn::new(opts(&proxy, None)).await.expect("proxy");
    c.query_drop("ALTER SYSTEM TRIGGER TTL")
        .await
        .expect("trigger");
    c.query_drop("ALTER SYSTEM SUSPEND TTL")
        .await
        .expect("suspend");
    let phase = Duration::from_secs_f64(secs / 2.0);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let (mut off_s, mut on_s) = (0.0, 0.0);
    let mut open = 1u64;
    for _ in 0..rounds {
        let (l, s) = load(&proxy, cells, phase).await;
        off.extend(l);
        off_s += s;
        c.query_drop("ALTER SYSTEM RESUME TTL")
            .await
            .expect("resume");
        let (l, s) = load(&proxy, cells, phase).await;
        on.extend(l);
        on_s += s;
        open = c
            .query_first(format!("SELECT COUNT(*) FROM {catalog}.kv_ttl_tasks"))
            .await
            .expect("tasks")
            .unwrap_or(0);
        if open == 0 {
            println!("(the run ended during a phase: the later phases have no run to measure)");
            break;
        }
        c.query_drop("ALTER SYSTEM SUSPEND TTL")
            .await
            .expect("suspend");
    }
    if open > 0 {
        c.query_drop("ALTER SYSTEM RESUME TTL")
            .await
            .expect("resume");
    }
    let left: u64 = c
        .query_first(format!("SELECT COUNT(*) FROM {DB}.{TABLE}"))
        .await
        .expect("count")
        .unwrap_or(0);
    c.disconnect().await.ok();
    let (q0, p50_0, p99_0) = stats(&mut off, off_s);
    let (q1, p50_1, p99_1) = stats(&mut on, on_s);
    println!(
        "{:<24} {:>10} {:>8} {:>8}",
        "point get (prepared)", "ops/s", "p50_ms", "p99_ms"
    );
    println!(
        "{:<24} {q0:>10.0} {p50_0:>8.3} {p99_0:>8.3}",
        "task off (suspended)"
    );
    println!(
        "{:<24} {q1:>10.0} {p50_1:>8.3} {p99_1:>8.3}",
        "during the TTL run"
    );
    println!(
        "p99 during/off: {:.2} (target <= 2); ops/s during/off: {:.2}; {rounds} rounds of {:.1} s each way; \
         {left} rows left of {} when measured",
        p99_1 / p99_0,
        q1 / q0,
        phase.as_secs_f64(),
        cells * 4
    );
}

/// (operations/s, p50 ms, p99 ms) of latencies gathered over `secs`.
fn stats(all: &mut [f64], secs: f64) -> (f64, f64, f64) {
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    (all.len() as f64 / secs, pct(0.5), pct(0.99))
}
