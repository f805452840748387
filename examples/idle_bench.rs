//! Idle clients (issue 42; driven by `scripts/idle-bench.sh`, or run alone): what IDLE_CLIENTS
//! authenticated clients that do nothing cost each hop in resident memory, and whether a busy
//! client on another connection notices them.
//!
//! For each target in turn: a busy client (its own thread and runtime) runs prepared point
//! selects on a 10,000-row table all along; the hop's RSS is read (VmRSS of its pid); the idle
//! clients connect, IDLE_CONCURRENCY at a time, each logging in and running one `SELECT 1`,
//! then stay connected doing nothing; after IDLE_SETTLE seconds the RSS is read again and the
//! busy client measured for BENCH_SECONDS with all of them open; then they disconnect. Prints,
//! per target, the RSS before and after, KiB per idle client, and the busy client's p50/p99
//! alone, while the clients connect and while they are idle.
//!
//! IDLE_TARGETS: space-separated `name=host:port` or `name=host:port@pid` (the pid whose RSS
//! is read; without it none), e.g. `proxy=127.0.0.1:2883@1234 direct=127.0.0.1:3306`, measured
//! in that order; IDLE_SETUP: host:port the table is made through (default: the first target's).
//! IDLE_CLIENTS (default 10000); IDLE_CONCURRENCY (default 64);
//! IDLE_SETTLE (default 3 s); BENCH_SECONDS (default 5 per phase).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use mysql_async::Conn;

#[allow(dead_code)]
mod common;
use common::{env, open_clients, opts, rss_kib};

const DB: &str = "obkv_idlebench";
const ROWS: u64 = 10_000;

/// What the busy client's latencies are filed under.
const QUIET: u8 = 0;
const OPENING: u8 = 1;
const IDLE: u8 = 2;
const STOP: u8 = 3;

struct Target {
    name: String,
    addr: String,
    pid: Option<u32>,
}

fn targets() -> Vec<Target> {
    let spec = env("IDLE_TARGETS", "proxy=127.0.0.1:2883");
    spec.split_whitespace()
        .map(|t| {
            let (name, rest) = t
                .split_once('=')
                .expect("IDLE_TARGETS: name=host:port[@pid]");
            let (addr, pid) = match rest.split_once('@') {
                Some((a, p)) => (a, Some(p.parse().expect("pid"))),
                None => (rest, None),
            };
            Target {
                name: name.to_string(),
                addr: addr.to_string(),
                pid,
            }
        })
        .collect()
}

async fn setup(addr: &str) {
    let mut c = Conn::new(opts(addr, None)).await.expect("setup connection");
    c.query_drop(format!("CREATE DATABASE IF NOT EXISTS {DB}"))
        .await
        .expect("db");
    c.query_drop(format!(
        "CREATE TABLE IF NOT EXISTS {DB}.t (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL)"
    ))
    .await
    .expect("table");
    let have: u64 = c
        .query_first(format!("SELECT COUNT(*) FROM {DB}.t"))
        .await
        .expect("count")
        .unwrap_or(0);
    if have != ROWS {
        c.query_drop(format!("TRUNCATE {DB}.t"))
            .await
            .expect("truncate");
        let mut values = Vec::new();
        for i in 0..ROWS {
            values.push(format!("({i}, 'value-{i}')"));
            if values.len() == 1000 {
                c.query_drop(format!("INSERT INTO {DB}.t VALUES {}", values.join(",")))
                    .await
                    .expect("load");
                values.clear();
            }
        }
    }
    c.disconnect().await.ok();
}

/// The busy client: point selects on its own thread and runtime until the phase is STOP; each
/// latency (ms) filed under the phase it started in.
fn busy(
    addr: String,
    phase: Arc<AtomicU8>,
    out: Arc<Mutex<Vec<(u8, f64)>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let mut c = Conn::new(opts(&addr, Some(DB)))
                .await
                .expect("busy connection");
            let stmt = c
                .prep("SELECT v FROM t WHERE id = ?")
                .await
                .expect("prepare");
            let mut x = 0x9e3779b97f4a7c15u64;
            let mut lat = Vec::with_capacity(1 << 20);
            loop {
                let p = phase.load(Ordering::Relaxed);
                if p == STOP {
                    break;
                }
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let t0 = Instant::now();
                let v: Option<String> = c
                    .exec_first(&stmt, (x % ROWS,))
                    .await
                    .expect("point select");
                lat.push((p, t0.elapsed().as_secs_f64() * 1000.0));
                assert!(v.is_some());
            }
            c.disconnect().await.ok();
            out.lock().unwrap().extend(lat);
        });
    })
}

/// (count, p50 ms, p99 ms) of the latencies filed under `phase`.
fn pct(all: &[(u8, f64)], phase: u8) -> (usize, f64, f64) {
    let mut v: Vec<f64> = all
        .iter()
        .filter(|(p, _)| *p == phase)
        .map(|(_, l)| *l)
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| {
        v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    (v.len(), at(0.5), at(0.99))
}

struct Row {
    name: String,
    before: Option<u64>,
    after: Option<u64>,
    after_busy: Option<u64>,
    open_s: f64,
    quiet: (usize, f64, f64),
    opening: (usize, f64, f64),
    idle: (usize, f64, f64),
}

fn main() {
    let n: usize = env("IDLE_CLIENTS", "10000").parse().expect("IDLE_CLIENTS");
    let concurrency: usize = env("IDLE_CONCURRENCY", "64")
        .parse()
        .expect("IDLE_CONCURRENCY");
    let settle: f64 = env("IDLE_SETTLE", "3").parse().expect("IDLE_SETTLE");
    let secs: f64 = env("BENCH_SECONDS", "5").parse().expect("BENCH_SECONDS");
    let targets = targets();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let setup_addr = std::env::var("IDLE_SETUP").unwrap_or_else(|_| targets[0].addr.clone());
    rt.block_on(setup(&setup_addr));
    let phase_len = Duration::from_secs_f64(secs);
    let mut rows = Vec::new();
    for t in &targets {
        let phase = Arc::new(AtomicU8::new(QUIET));
        let lat = Arc::new(Mutex::new(Vec::new()));
        let b = busy(t.addr.clone(), phase.clone(), lat.clone());
        std::thread::sleep(phase_len);
        let before = t.pid.and_then(rss_kib);
        phase.store(OPENING, Ordering::Relaxed);
        let t0 = Instant::now();
        let conns = rt.block_on(open_clients(&t.addr, None, n, concurrency));
        let open_s = t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_secs_f64(settle));
        let after = t.pid.and_then(rss_kib);
        phase.store(IDLE, Ordering::Relaxed);
        std::thread::sleep(phase_len);
        phase.store(STOP, Ordering::Relaxed);
        b.join().expect("busy client");
        let after_busy = t.pid.and_then(rss_kib);
        rt.block_on(async {
            let mut closing = tokio::task::JoinSet::new();
            for c in conns {
                closing.spawn(async move { c.disconnect().await.ok() });
            }
            while closing.join_next().await.is_some() {}
        });
        let all = lat.lock().unwrap();
        let row = Row {
            name: t.name.clone(),
            before,
            after,
            after_busy,
            open_s,
            quiet: pct(&all, QUIET),
            opening: pct(&all, OPENING),
            idle: pct(&all, IDLE),
        };
        print_row(&row, n, true);
        rows.push(row);
        // the hop lets the closed connections go before the next target's clients come
        std::thread::sleep(Duration::from_secs(2));
    }
    println!();
    println!("{n} idle clients (login + SELECT 1 each, {concurrency} connecting at a time); busy client: prepared point selects");
    print_header();
    for r in &rows {
        print_row(r, n, false);
    }
}

fn print_header() {
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>7} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} {:>8}",
        "target",
        "RSS0_KiB",
        "RSS_KiB",
        "KiB/client",
        "open_s",
        "alone50",
        "alone99",
        "open50",
        "open99",
        "idle50",
        "idle99",
        "queries"
    );
}

fn print_row(r: &Row, n: usize, first: bool) {
    if first {
        print_header();
    }
    let kib = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let per = match (r.before, r.after) {
        (Some(b), Some(a)) => format!("{:.2}", (a as f64 - b as f64) / n as f64),
        _ => "-".into(),
    };
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>7.1} | {:>8.3} {:>8.3} | {:>8.3} {:>8.3} | {:>8.3} {:>8.3} {:>8}",
        r.name,
        kib(r.before),
        kib(r.after),
        per,
        r.open_s,
        r.quiet.1,
        r.quiet.2,
        r.opening.1,
        r.opening.2,
        r.idle.1,
        r.idle.2,
        r.idle.0
    );
    if first {
        println!(
            "         (RSS after the busy phase: {} KiB)",
            kib(r.after_busy)
        );
    }
}
