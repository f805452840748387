//! The HBase write benchmark (issue 10; driven by `scripts/bench.sh`, or run alone): on a
//! KEY(K_PREFIX) table with 97 partitions, 8 connections each run, for BENCH_SECONDS,
//! (1) a prepared INSERT of one cell, (2) a prepared INSERT of 10 cells under one prefix,
//! (3) transactions of 10 prepared one-cell INSERTs under one prefix (BEGIN … COMMIT) —
//! through obkv-proxy (every write checked: cell rules, the transaction guard) and through
//! HAProxy (a hop that checks nothing), interleaved. Prints operations/s, p95 and the ratio.
//!
//! BENCH_PROXY, BENCH_HAPROXY: host:port of each (in front of the same backend); BENCH_KIND
//! (mariadb | seekdb); BENCH_SECONDS (default 10); BENCH_ROUNDS (default 1, medians).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mysql_async::prelude::*;
use mysql_async::{Conn, Params, Value};

#[allow(dead_code)]
mod common;
use common::{env, median, opts};

const TABLE: &str = "wbench$cells";
const THREADS: usize = 8;

fn now_t() -> i64 {
    -(SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64)
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    One,
    Ten,
    Txn,
}

async fn setup(proxy: &str) {
    let mut c = Conn::new(opts(proxy, None)).await.expect("proxy");
    for sql in [
        "CREATE DATABASE IF NOT EXISTS obkv_wbench".to_string(),
        "USE obkv_wbench".into(),
        format!("DROP TABLE IF EXISTS {TABLE}"),
        "DROP TABLEGROUP IF EXISTS wbench".into(),
        "CREATE TABLEGROUP wbench".into(),
        format!(
            "CREATE TABLE {TABLE} (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, \
             K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 8)), PRIMARY KEY (K, Q, T)) \
             TABLEGROUP = wbench PARTITION BY KEY(K_PREFIX) PARTITIONS 97"
        ),
    ] {
        c.query_drop(sql.as_str()).await.expect("setup");
    }
    c.disconnect().await.ok();
}

/// Runs `op` on THREADS connections to `addr` for `secs`: (operations/s, p95 ms). Every row
/// is new: keys carry the target, the connection and a counter.
async fn measure(addr: &str, tag: &'static str, round: usize, secs: f64, op: Op) -> (f64, f64) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for t in 0..THREADS {
        let addr = addr.to_string();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::new(opts(&addr, Some("obkv_wbench")))
                .await
                .expect("connect");
            let one = c
                .prep(format!("INSERT INTO {TABLE} (K, Q, T, V) VALUES (?, ?, ?, ?)").as_str())
                .await
                .expect("prepare");
            let rows = ["(?, ?, ?, ?)"; 10].join(", ");
            let ten = c
                .prep(format!("INSERT INTO {TABLE} (K, Q, T, V) VALUES {rows}").as_str())
                .await
                .expect("prepare");
            let mut lat = Vec::with_capacity(100_000);
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                // one 8-byte prefix per operation: the unit of work stays in one partition
                let prefix = format!("{tag}{round}{t}{:05}", i % 100_000);
                let key = |j: usize| format!("{prefix}:{i}:{j}").into_bytes();
                let cell = |j: usize| {
                    vec![
                        Value::Bytes(key(j)),
                        Value::Bytes(b"q".to_vec()),
                        Value::Int(now_t()),
                        Value::Bytes(b"value".to_vec()),
                    ]
                };
                let start = Instant::now();
                match op {
                    Op::One => c.exec_drop(&one, Params::Positional(cell(0))).await,
                    Op::Ten => {
                        let values = (0..10).flat_map(cell).collect();
                        c.exec_drop(&ten, Params::Positional(values)).await
                    }
                    Op::Txn => {
                        c.query_drop("BEGIN").await.expect("begin");
                        for j in 0..10 {
                            c.exec_drop(&one, Params::Positional(cell(j)))
                                .await
                                .expect("write");
                        }
                        c.query_drop("COMMIT").await
                    }
                }
                .expect("write");
                lat.push(start.elapsed().as_micros() as u32);
            }
            c.disconnect().await.ok();
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("worker"));
    }
    all.sort_unstable();
    let p95 = all.get(all.len() * 95 / 100).copied().unwrap_or(0) as f64 / 1000.0;
    (all.len() as f64 / secs, p95)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let proxy = env("BENCH_PROXY", "127.0.0.1:2883");
    let haproxy = env("BENCH_HAPROXY", "127.0.0.1:3307");
    let kind = env("BENCH_KIND", "mariadb");
    let secs: f64 = env("BENCH_SECONDS", "10").parse().expect("seconds");
    let rounds: usize = env("BENCH_ROUNDS", "1").parse().expect("rounds");
    setup(&proxy).await;
    println!(
        "{:<8} {:<22} {:>3} | {:>10} {:>7} | {:>10} {:>7} | {:>8}",
        "backend", "write", "thr", "proxy_ops", "p95_ms", "hap_ops", "p95_ms", "prx/hap"
    );
    for (op, name) in [
        (Op::One, "prepared 1-cell INSERT"),
        (Op::Ten, "prepared 10-cell INSERT"),
        (Op::Txn, "txn of 10 INSERTs"),
    ] {
        let (mut a, mut b) = (vec![], vec![]);
        for r in 0..rounds {
            // every other round HAProxy goes first
            if r % 2 == 0 {
                a.push(measure(&proxy, "P", r, secs, op).await);
                b.push(measure(&haproxy, "H", r, secs, op).await);
            } else {
                b.push(measure(&haproxy, "H", r, secs, op).await);
                a.push(measure(&proxy, "P", r, secs, op).await);
            }
        }
        let qa = median(a.iter().map(|x| x.0).collect());
        let la = median(a.iter().map(|x| x.1).collect());
        let qb = median(b.iter().map(|x| x.0).collect());
        let lb = median(b.iter().map(|x| x.1).collect());
        println!(
            "{kind:<8} {name:<22} {THREADS:>3} | {qa:>10.0} {la:>7.2} | {qb:>10.0} {lb:>7.2} | {:>8.3}",
            qa / qb
        );
    }
}
