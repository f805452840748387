//! Many clients on few backend connections (issue 43; driven by `scripts/mux-bench.sh`, or run
//! alone): MUX_CLIENTS clients log in (with a database) and run `SELECT 1`; then MUX_ACTIVE_PCT
//! percent of them run text point selects and HBase gets (alternately, one every
//! MUX_INTERVAL_MS each, from a random start) for BENCH_SECONDS while the rest stay idle; then
//! every client, idle ones included, runs `SELECT 1` once more (all served); then all
//! disconnect.
//!
//! Per target it prints: the clients, how long they took to connect, the hop's RSS (VmRSS of
//! its pid) before, with every client idle and at most during the active phase, the active
//! clients' queries, rate, p50/p99 latency and errors, how many clients answered at the end,
//! and the backend connections the database counted (`Threads_connected`, read directly at
//! MUX_DIRECT: with every client idle and at most during the active phase) — the clients per
//! backend connection follow.
//!
//! MUX_TARGETS: space-separated `name=host:port[@pid][#clients][+active]` (clients: that
//! target's own count, default MUX_CLIENTS; active: how many of them run statements, default
//! MUX_ACTIVE_PCT percent), measured in that order; MUX_DIRECT: the database's host:port
//! (tables loaded there, connections counted there); MUX_CLIENTS (default 10000);
//! MUX_ACTIVE_PCT (default 10); MUX_INTERVAL_MS (default 200); MUX_CONCURRENCY (connecting at
//! once, default 64); BENCH_SECONDS (default 20).
// (a client on a runtime of its own, with a time driver: clippy.toml's rule is the proxy's)
#![allow(clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use mysql_async::Conn;

#[allow(dead_code)]
mod common;
use common::{env, open_clients, opts, rss_kib};

const DB: &str = "obkv_muxbench";
const ROWS: u64 = 10_000;
const PREFIXES: u64 = 2_000;
const TABLE: &str = "mb$cells";

struct Target {
    name: String,
    addr: String,
    pid: Option<u32>,
    clients: Option<usize>,
    active: Option<usize>,
}

fn targets() -> Vec<Target> {
    env("MUX_TARGETS", "mux=127.0.0.1:2883")
        .split_whitespace()
        .map(|t| {
            let (name, rest) = t
                .split_once('=')
                .expect("MUX_TARGETS: name=host:port[@pid][#clients][+active]");
            let (rest, active) = match rest.split_once('+') {
                Some((r, n)) => (r, Some(n.parse().expect("+active"))),
                None => (rest, None),
            };
            let (rest, clients) = match rest.split_once('#') {
                Some((r, n)) => (r, Some(n.parse().expect("#clients"))),
                None => (rest, None),
            };
            let (addr, pid) = match rest.split_once('@') {
                Some((a, p)) => (a, Some(p.parse().expect("pid"))),
                None => (rest, None),
            };
            Target {
                name: name.to_string(),
                addr: addr.to_string(),
                pid,
                clients,
                active,
            }
        })
        .collect()
}

/// The tables, made and loaded directly (the HBase table as OBKV-HBase makes it; the proxy
/// finds it as an existing table).
async fn setup(direct: &str) {
    let mut c = Conn::new(opts(direct, None))
        .await
        .expect("setup connection");
    c.query_drop(format!("CREATE DATABASE IF NOT EXISTS {DB}"))
        .await
        .expect("db");
    c.query_drop(format!("USE {DB}")).await.expect("use");
    c.query_drop("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL)")
        .await
        .expect("table");
    c.query_drop(format!(
        "CREATE TABLE IF NOT EXISTS `{TABLE}` (K varbinary(1024), Q varbinary(256), T bigint, \
         V varbinary(1024) NOT NULL, PRIMARY KEY (K, Q, T)) PARTITION BY KEY(K) PARTITIONS 16"
    ))
    .await
    .expect("hbase table");
    let have: u64 = c
        .query_first("SELECT COUNT(*) FROM t")
        .await
        .expect("count")
        .unwrap_or(0);
    if have != ROWS {
        c.query_drop("TRUNCATE t").await.expect("truncate");
        for chunk in (0..ROWS).collect::<Vec<_>>().chunks(1000) {
            let values: Vec<String> = chunk
                .iter()
                .map(|i| format!("({i}, 'value-{i}')"))
                .collect();
            c.query_drop(format!("INSERT INTO t VALUES {}", values.join(",")))
                .await
                .expect("load");
        }
    }
    let cells: u64 = c
        .query_first(format!("SELECT COUNT(*) FROM `{TABLE}`"))
        .await
        .expect("count")
        .unwrap_or(0);
    if cells != PREFIXES {
        c.query_drop(format!("TRUNCATE `{TABLE}`"))
            .await
            .expect("truncate");
        for chunk in (0..PREFIXES).collect::<Vec<_>>().chunks(500) {
            let values: Vec<String> = chunk
                .iter()
                .map(|i| format!("('row{i:07}', 'q', -1700000000000, 'cell-{i}')"))
                .collect();
            c.query_drop(format!(
                "INSERT INTO `{TABLE}` (K, Q, T, V) VALUES {}",
                values.join(",")
            ))
            .await
            .expect("load cells");
        }
    }
    c.disconnect().await.ok();
}

/// The database's count of client connections.
async fn threads_connected(c: &mut Conn) -> u64 {
    let row: Option<(String, u64)> = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
        .await
        .expect("Threads_connected");
    row.map_or(0, |(_, n)| n)
}

/// One active client: a point select and an HBase get in turn, one every `interval`, until
/// `until`; latencies (ms) and errors recorded.
async fn active(
    mut c: Conn,
    seed: u64,
    interval: Duration,
    until: Instant,
    lat: Arc<Mutex<Vec<f64>>>,
    errors: Arc<AtomicU64>,
) -> Conn {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut mine = Vec::new();
    // a random start spreads the clients over the interval
    let offset = Duration::from_micros(x % interval.as_micros().max(1) as u64);
    let mut next = tokio::time::Instant::now() + offset;
    let mut n = 0u64;
    while Instant::now() < until {
        tokio::time::sleep_until(next).await;
        next += interval;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t0 = Instant::now();
        let ok = if n.is_multiple_of(2) {
            let v: Result<Option<String>, _> = c
                .query_first(format!("SELECT v FROM t WHERE id = {}", x % ROWS))
                .await;
            matches!(v, Ok(Some(_)))
        } else {
            let v: Result<Option<Vec<u8>>, _> = c
                .query_first(format!(
                    "SELECT V FROM `{TABLE}` WHERE K = 'row{:07}' AND Q = 'q'",
                    x % PREFIXES
                ))
                .await;
            matches!(v, Ok(Some(_)))
        };
        mine.push(t0.elapsed().as_secs_f64() * 1000.0);
        if !ok {
            errors.fetch_add(1, Ordering::Relaxed);
        }
        n += 1;
    }
    lat.lock().expect("latencies").extend(mine);
    c
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or(f64::NAN)
}

struct Row {
    name: String,
    clients: usize,
    active: usize,
    open_s: f64,
    rss0: Option<u64>,
    rss_idle: Option<u64>,
    rss_busy: Option<u64>,
    queries: usize,
    qps: f64,
    p50: f64,
    p99: f64,
    errors: u64,
    served: usize,
    backend_idle: u64,
    backend_busy: u64,
}

fn main() {
    let n: usize = env("MUX_CLIENTS", "10000").parse().expect("MUX_CLIENTS");
    let active_pct: usize = env("MUX_ACTIVE_PCT", "10").parse().expect("MUX_ACTIVE_PCT");
    let interval = Duration::from_millis(
        env("MUX_INTERVAL_MS", "200")
            .parse()
            .expect("MUX_INTERVAL_MS"),
    );
    let concurrency: usize = env("MUX_CONCURRENCY", "64")
        .parse()
        .expect("MUX_CONCURRENCY");
    let secs: f64 = env("BENCH_SECONDS", "20").parse().expect("BENCH_SECONDS");
    let direct = env("MUX_DIRECT", "127.0.0.1:3306");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(setup(&direct));
    let mut rows = Vec::new();
    for t in targets() {
        let clients = t.clients.unwrap_or(n);
        let rss0 = t.pid.and_then(rss_kib);
        let mut watch = rt
            .block_on(Conn::new(opts(&direct, None)))
            .expect("direct connection");
        // what the database counts before this run's clients (this counting connection, and
        // what another hop keeps open) is not theirs
        let base = rt.block_on(threads_connected(&mut watch));
        let t0 = Instant::now();
        let mut conns = rt.block_on(open_clients(&t.addr, Some(DB), clients, concurrency));
        let open_s = t0.elapsed().as_secs_f64();
        // the hop settles (connections given back, buffers trimmed)
        std::thread::sleep(Duration::from_secs(3));
        let rss_idle = t.pid.and_then(rss_kib);
        let backend_idle = rt
            .block_on(threads_connected(&mut watch))
            .saturating_sub(base);
        let n_active = t.active.unwrap_or(clients * active_pct / 100).min(clients);
        let busy: Vec<Conn> = conns.drain(..n_active).collect();
        let lat = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        // the hop's RSS and the backend's connections, sampled during the phase
        let sampler = {
            let stop = stop.clone();
            let pid = t.pid;
            std::thread::spawn(move || {
                let mut most = 0;
                while !stop.load(Ordering::Relaxed) {
                    most = most.max(pid.and_then(rss_kib).unwrap_or(0));
                    std::thread::sleep(Duration::from_millis(200));
                }
                most
            })
        };
        let until = Instant::now() + Duration::from_secs_f64(secs);
        let phase_start = Instant::now();
        let (busy, backend_busy) = rt.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for (i, c) in busy.into_iter().enumerate() {
                tasks.spawn(active(
                    c,
                    i as u64 + 1,
                    interval,
                    until,
                    lat.clone(),
                    errors.clone(),
                ));
            }
            let mut most = 0;
            while Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(500)).await;
                most = most.max(threads_connected(&mut watch).await.saturating_sub(base));
            }
            let mut back = Vec::new();
            while let Some(c) = tasks.join_next().await {
                back.push(c.expect("active client"));
            }
            (back, most)
        });
        let phase_s = phase_start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let rss_busy = sampler.join().ok().filter(|m| *m > 0);
        conns.extend(busy);
        // every client, idle ones included, is still served
        let served = rt.block_on(async {
            let sem = Arc::new(tokio::sync::Semaphore::new(256));
            let mut tasks = tokio::task::JoinSet::new();
            for mut c in conns {
                let sem = sem.clone();
                tasks.spawn(async move {
                    let _p = sem.acquire().await.expect("semaphore");
                    let ok = c.query_drop("SELECT 1").await.is_ok();
                    c.disconnect().await.ok();
                    ok
                });
            }
            let mut served = 0;
            while let Some(r) = tasks.join_next().await {
                served += usize::from(matches!(r, Ok(true)));
            }
            served
        });
        rt.block_on(watch.disconnect()).ok();
        let mut all = std::mem::take(&mut *lat.lock().expect("latencies"));
        let row = Row {
            name: t.name.clone(),
            clients,
            active: n_active,
            open_s,
            rss0,
            rss_idle,
            rss_busy,
            queries: all.len(),
            qps: all.len() as f64 / phase_s,
            p50: pct(&mut all, 0.5),
            p99: pct(&mut all, 0.99),
            errors: errors.load(Ordering::Relaxed),
            served,
            backend_idle,
            backend_busy,
        };
        print_header();
        print_row(&row);
        rows.push(row);
        // the hop lets the closed connections go before the next target's clients come
        std::thread::sleep(Duration::from_secs(3));
    }
    println!();
    println!(
        "clients log in and run SELECT 1; {active_pct}% then run text point selects and HBase gets \
         (one every {} ms each, {secs} s); RSS in MiB; latencies in ms; backend connections \
         counted by the database",
        interval.as_millis()
    );
    print_header();
    for r in &rows {
        print_row(r);
    }
}

fn print_header() {
    println!(
        "{:<6} {:>7} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>7} | {:>7} {:>7} {:>7} {:>7} {:>6} | {:>7} | {:>7} {:>7} {:>8}",
        "target",
        "clients",
        "active",
        "open_s",
        "RSS0",
        "RSSidle",
        "RSSbusy",
        "KiB/cl",
        "queries",
        "qps",
        "p50",
        "p99",
        "errors",
        "served",
        "be_idle",
        "be_busy",
        "cl/be"
    );
}

fn print_row(r: &Row) {
    let mib = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.0}", v as f64 / 1024.0));
    let per = match (r.rss0, r.rss_idle) {
        (Some(b), Some(a)) => format!("{:.2}", (a as f64 - b as f64) / r.clients as f64),
        _ => "-".into(),
    };
    println!(
        "{:<6} {:>7} {:>6} {:>6.1} | {:>6} {:>6} {:>6} {:>7} | {:>7} {:>7.0} {:>7.3} {:>7.3} {:>6} | {:>7} | {:>7} {:>7} {:>8.1}",
        r.name,
        r.clients,
        r.active,
        r.open_s,
        mib(r.rss0),
        mib(r.rss_idle),
        mib(r.rss_busy),
        per,
        r.queries,
        r.qps,
        r.p50,
        r.p99,
        r.errors,
        r.served,
        r.backend_idle,
        r.backend_busy,
        r.clients as f64 / r.backend_busy.max(r.backend_idle).max(1) as f64
    );
}
