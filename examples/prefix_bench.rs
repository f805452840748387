//! The HBase workload benchmark (driven by `scripts/bench.sh`; run alone with the variables below).
//!
//! On a KEY(K_PREFIX) table with 97 partitions (K_PREFIX = substring(K, 1, 8)) it measures, in
//! one run and interleaved, at 1 and 8 connections:
//! - prefix scans of 10 cells, as text and as prepared statements: (a) the natural statement
//!   `K LIKE 'prefix%'` through obkv-proxy (rewritten), (b) the same statement directly on the
//!   backend (every partition), (c) the hand-written statement with `AND K_PREFIX = 'prefix'`
//!   through HAProxy (a hop that understands nothing) and (d) the hand-written statement
//!   directly (the limit a rewrite can reach);
//! - an HBase point get by K (prepared), a one-row text put and a 100-row text batch INSERT, each
//!   the same statement through obkv-proxy (every write checked), directly and through HAProxy.
//!
//! Prints, per cell, each target's median QPS and p95 and the ratios proxy/HAProxy (of the
//! medians, and the median of each round's ratio), proxy/direct and, for scans, proxy/(d).
//!
//! BENCH_DIRECT, BENCH_PROXY, BENCH_HAPROXY: host:port of each target (the proxy and HAProxy in
//! front of the direct one); BENCH_KIND (mariadb | seekdb, for the table); BENCH_SECONDS per
//! measurement (default 10); BENCH_CELLS (default 200000); BENCH_ROUNDS (default 1, medians).
//! BENCH_SETUP_ONLY: create and load the table, then exit (the script lets the backend settle).
//! BENCH_ONLY (optional, for measuring some cells in place): a comma-separated list of the cells
//! to run, from `text1`, `text8`, `prepared1`, `prepared8`, `get1`, `get8`, `put1`, `put8`,
//! `batch1`, `batch8` (or `get`, `put`, `batch` for both of a workload; default: all).
//! BENCH_PROXY_OP=hand (optional): send the hand-written statement through obkv-proxy too, which
//! separates the proxy's relay from its rewrite when compared with HAProxy.
//! BENCH_COUNT=N (counting mode, for `scripts/cost.sh`): no setup and no timing; exactly N
//! queries of BENCH_OP (natural | hand | get | put | batch), text or BENCH_PREPARED=1, on one
//! connection to BENCH_PROXY, answers checked.
//! BENCH_PROXY_PID, BENCH_HAPROXY_PID (optional): with them, each hop's CPU time per query
//! (user + system from /proc, summed over all rounds) is printed too: a measure of what the hop
//! costs that the machine's drift in throughput does not blur.

use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use mysql_async::Conn;

#[allow(dead_code)]
mod common;
use common::{env, median, opts};

const N: usize = 8;
const CELLS_PER_PREFIX: usize = 10;
const TABLE: &str = "bench$cells";

fn prefix(i: usize) -> String {
    format!("p{i:07}")
}

async fn setup(proxy: &str, direct: &str, cells: usize) {
    let mut c = Conn::new(opts(proxy, None)).await.expect("proxy");
    c.query_drop("CREATE DATABASE IF NOT EXISTS obkv_bench")
        .await
        .expect("db");
    c.query_drop("USE obkv_bench").await.expect("use");
    let have: Option<u64> = c
        .query_first(format!("SELECT COUNT(*) FROM {TABLE}"))
        .await
        .unwrap_or(None);
    if have == Some(cells as u64) {
        return;
    }
    c.query_drop(format!("DROP TABLE IF EXISTS {TABLE}"))
        .await
        .expect("drop");
    c.query_drop("DROP TABLEGROUP IF EXISTS bench")
        .await
        .expect("drop group");
    c.query_drop("CREATE TABLEGROUP bench")
        .await
        .expect("group");
    c.query_drop(format!(
        "CREATE TABLE {TABLE} (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, \
         K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, {N})), PRIMARY KEY (K, Q, T)) \
         TABLEGROUP = bench PARTITION BY KEY(K_PREFIX) PARTITIONS 97"
    ))
    .await
    .expect("create");
    // loaded directly: the proxy has nothing to do with bulk loading
    let mut d = Conn::new(opts(direct, Some("obkv_bench")))
        .await
        .expect("direct");
    let prefixes = cells / CELLS_PER_PREFIX;
    for chunk in (0..prefixes).collect::<Vec<_>>().chunks(200) {
        let mut values = Vec::with_capacity(chunk.len() * CELLS_PER_PREFIX);
        for &p in chunk {
            for j in 0..CELLS_PER_PREFIX {
                values.push(format!(
                    "('{}:{j:03}', 'q', -1700000000000, 'value-{p}-{j}')",
                    prefix(p)
                ));
            }
        }
        d.query_drop(format!(
            "INSERT INTO {TABLE} (K, Q, T, V) VALUES {}",
            values.join(",")
        ))
        .await
        .expect("load");
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    /// `K LIKE 'p%'`.
    Natural,
    /// `K LIKE 'p%' AND K_PREFIX = 'p'`.
    HandWritten,
    /// `K = 'p:000'`.
    PointGet,
    /// `INSERT` of a new cell under the prefix (counting mode only: `scripts/cost.sh`'s write
    /// workload).
    Put,
    /// A 100-row text `INSERT` of new cells under one prefix (counting mode only:
    /// `scripts/cost.sh`'s batch workload).
    Batch,
}

/// Rows of one `Op::Batch` statement.
const BATCH_ROWS: usize = 100;

/// CPU time (user + system) a process has used, in clock ticks (1/100 s on Linux).
fn cpu_ticks(pid: Option<u32>) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// A hop's CPU use over several measurements: ticks and queries.
#[derive(Default, Clone, Copy)]
struct Cpu {
    ticks: u64,
    queries: f64,
    known: bool,
}

impl Cpu {
    fn us_per_query(&self) -> String {
        if self.known && self.queries > 0.0 {
            format!("{:.1}", self.ticks as f64 * 10_000.0 / self.queries)
        } else {
            "-".into()
        }
    }
}

/// `measure`, with the CPU time `pid` used meanwhile added to `cpu`.
#[allow(clippy::too_many_arguments)]
async fn measure_cpu(
    pid: Option<u32>,
    cpu: &mut Cpu,
    addr: &str,
    threads: usize,
    secs: f64,
    op: Op,
    prepared: bool,
    prefixes: usize,
) -> (f64, f64) {
    let before = cpu_ticks(pid);
    let r = measure(addr, threads, secs, op, prepared, prefixes).await;
    if let (Some(b), Some(a)) = (before, cpu_ticks(pid)) {
        cpu.known = true;
        cpu.ticks += a.saturating_sub(b);
        cpu.queries += r.0 * secs;
    }
    r
}

/// The statement of `op`, with `?` for its values.
fn statement(op: Op) -> String {
    match op {
        Op::Natural => format!("SELECT K, Q, T, V FROM {TABLE} WHERE K LIKE ?"),
        Op::HandWritten => {
            format!("SELECT K, Q, T, V FROM {TABLE} WHERE K LIKE ? AND K_PREFIX = ?")
        }
        Op::PointGet | Op::Put | Op::Batch => format!("SELECT V FROM {TABLE} WHERE K = ?"),
    }
}

/// One query of `op` on the next prefix of the sequence `i`, its answer checked.
async fn run_one(
    c: &mut Conn,
    stmt: &mysql_async::Statement,
    op: Op,
    prepared: bool,
    i: &mut usize,
    prefixes: usize,
    addr: &str,
) {
    *i = (*i * 1_103_515_245 + 12_345) % 2_147_483_648;
    let p = prefix(*i % prefixes);
    if op == Op::Put {
        // a new cell each time (the run's clock in the key: runs never collide), under a
        // prefix no scan of the other workloads reads (`w`)
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock");
        c.query_drop(format!(
            "INSERT INTO {TABLE} (K, Q, T, V) VALUES ('w{p}:{}{}', 'q', -{}, 'v')",
            now.as_nanos(),
            *i,
            now.as_millis()
        ))
        .await
        .expect("insert");
        assert_eq!(c.affected_rows(), 1, "{addr}: insert");
        return;
    }
    if op == Op::Batch {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock");
        let rows: Vec<String> = (0..BATCH_ROWS)
            .map(|r| {
                format!(
                    "('w{p}:{}{}-{r:03}', 'q{r}', -{}, 'value {r} of a batch')",
                    now.as_nanos(),
                    *i,
                    now.as_millis()
                )
            })
            .collect();
        c.query_drop(format!(
            "INSERT INTO {TABLE} (K, Q, T, V) VALUES {}",
            rows.join(", ")
        ))
        .await
        .expect("insert");
        assert_eq!(c.affected_rows(), BATCH_ROWS as u64, "{addr}: batch insert");
        return;
    }
    let rows: usize = match (op, prepared) {
        (Op::Natural, true) => c
            .exec::<(Vec<u8>, Vec<u8>, i64, Vec<u8>), _, _>(stmt, (format!("{p}%"),))
            .await
            .expect("run")
            .len(),
        (Op::HandWritten, true) => c
            .exec::<(Vec<u8>, Vec<u8>, i64, Vec<u8>), _, _>(stmt, (format!("{p}%"), p.clone()))
            .await
            .expect("run")
            .len(),
        (Op::PointGet, true) => c
            .exec::<Vec<u8>, _, _>(stmt, (format!("{p}:000"),))
            .await
            .expect("run")
            .len(),
        (Op::Natural, false) => c
            .query::<(Vec<u8>, Vec<u8>, i64, Vec<u8>), _>(format!(
                "SELECT K, Q, T, V FROM {TABLE} WHERE K LIKE '{p}%'"
            ))
            .await
            .expect("run")
            .len(),
        (Op::HandWritten, false) => c
            .query::<(Vec<u8>, Vec<u8>, i64, Vec<u8>), _>(format!(
                "SELECT K, Q, T, V FROM {TABLE} WHERE K LIKE '{p}%' AND K_PREFIX = '{p}'"
            ))
            .await
            .expect("run")
            .len(),
        (Op::PointGet, false) => c
            .query::<Vec<u8>, _>(format!("SELECT V FROM {TABLE} WHERE K = '{p}:000'"))
            .await
            .expect("run")
            .len(),
        (Op::Put | Op::Batch, _) => 0,
    };
    let want = if op == Op::PointGet {
        1
    } else {
        CELLS_PER_PREFIX
    };
    assert_eq!(rows, want, "{addr}: wrong answer for {p}");
}

/// Exactly `n` queries of `op` on one connection to `addr` (for counting what a hop spends per
/// query: `scripts/cost.sh`).
async fn count_run(addr: &str, op: Op, prepared: bool, n: usize, prefixes: usize) {
    let mut c = Conn::new(opts(addr, Some("obkv_bench")))
        .await
        .expect("connect");
    // a text workload's connection prepares nothing (a multiplexing proxy would pin it): the
    // statement run_one is handed comes from a connection of its own
    let mut other = None;
    let stmt = if prepared {
        c.prep(statement(op)).await.expect("prepare")
    } else {
        let mut o = Conn::new(opts(addr, Some("obkv_bench")))
            .await
            .expect("connect");
        let s = o.prep(statement(op)).await.expect("prepare");
        other = Some(o);
        s
    };
    let mut i = 0;
    for _ in 0..n {
        run_one(&mut c, &stmt, op, prepared, &mut i, prefixes, addr).await;
    }
    match other {
        Some(o) => {
            o.disconnect().await.ok();
        }
        None => {
            c.close(stmt).await.ok();
        }
    }
    c.disconnect().await.ok();
}

/// Runs `threads` connections against `addr` for `secs`: (QPS, p95 ms).
async fn measure(
    addr: &str,
    threads: usize,
    secs: f64,
    op: Op,
    prepared: bool,
    prefixes: usize,
) -> (f64, f64) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for t in 0..threads {
        let addr = addr.to_string();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::new(opts(&addr, Some("obkv_bench")))
                .await
                .expect("connect");
            let stmt = c.prep(statement(op)).await.expect("prepare");
            let mut lat = Vec::with_capacity(100_000);
            let mut i = t * 7919;
            while Instant::now() < deadline {
                let start = Instant::now();
                run_one(&mut c, &stmt, op, prepared, &mut i, prefixes, &addr).await;
                lat.push(start.elapsed().as_micros() as u32);
            }
            c.close(stmt).await.ok();
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

/// The medians of (QPS, p95) over rounds.
fn medians(v: &[(f64, f64)]) -> (f64, f64) {
    (
        median(v.iter().map(|x| x.0).collect()),
        median(v.iter().map(|x| x.1).collect()),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let direct = env("BENCH_DIRECT", "127.0.0.1:3306");
    let proxy = env("BENCH_PROXY", "127.0.0.1:2883");
    let haproxy = env("BENCH_HAPROXY", "127.0.0.1:3307");
    let kind = env("BENCH_KIND", "mariadb");
    let secs: f64 = env("BENCH_SECONDS", "10").parse().expect("seconds");
    let cells: usize = env("BENCH_CELLS", "200000").parse().expect("cells");
    let rounds: usize = env("BENCH_ROUNDS", "1").parse().expect("rounds");
    let proxy_pid: Option<u32> = std::env::var("BENCH_PROXY_PID")
        .ok()
        .and_then(|p| p.parse().ok());
    let haproxy_pid: Option<u32> = std::env::var("BENCH_HAPROXY_PID")
        .ok()
        .and_then(|p| p.parse().ok());
    if let Ok(n) = std::env::var("BENCH_COUNT") {
        // counting mode: the table is there; n queries on one connection to BENCH_PROXY
        let n: usize = n.parse().expect("count");
        let op = match env("BENCH_OP", "natural").as_str() {
            "hand" => Op::HandWritten,
            "get" => Op::PointGet,
            "put" => Op::Put,
            "batch" => Op::Batch,
            _ => Op::Natural,
        };
        let prepared = env("BENCH_PREPARED", "0") == "1";
        count_run(&proxy, op, prepared, n, cells / CELLS_PER_PREFIX).await;
        return;
    }
    let t0 = Instant::now();
    setup(&proxy, &direct, cells).await;
    eprintln!(
        "{kind}: {cells} cells ready in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    if std::env::var_os("BENCH_SETUP_ONLY").is_some() {
        return;
    }
    let prefixes = cells / CELLS_PER_PREFIX;
    println!(
        "{:<8} {:<14} {:>3} | {:>9} {:>6} | {:>9} {:>6} | {:>9} {:>6} | {:>9} {:>6} | {:>7} {:>7} {:>7} {:>8} | {:>7} {:>7}",
        "backend", "workload", "thr", "proxy_qps", "p95", "direct", "p95", "haproxy", "p95",
        "dir_hand", "p95", "prx/hap", "rnd/hap", "prx/dir", "prx/hand", "prx_cpu", "hap_cpu"
    );
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |cell: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|c| c.trim() == cell))
    };
    let proxy_op = if env("BENCH_PROXY_OP", "natural") == "hand" {
        Op::HandWritten
    } else {
        Op::Natural
    };
    let bench = Bench {
        kind: &kind,
        secs,
        rounds,
        prefixes,
    };
    // the prefix scans: the natural statement through the proxy and directly (every partition),
    // the hand-written K_PREFIX statement through HAProxy and directly (the limit)
    for prepared in [false, true] {
        for threads in [1, 8] {
            let mode = if prepared { "prepared" } else { "text" };
            if !wanted(&format!("{mode}{threads}")) {
                continue;
            }
            let targets = [
                Target::new(&proxy, proxy_op, proxy_pid),
                Target::new(&direct, Op::Natural, None),
                Target::new(&haproxy, Op::HandWritten, haproxy_pid),
                Target::new(&direct, Op::HandWritten, None),
            ];
            bench
                .cell(&format!("scan {mode}"), threads, prepared, &targets)
                .await;
        }
    }
    // the other HBase workloads: the same statement through the proxy, directly and through
    // HAProxy
    for (name, op, prepared) in [
        ("get", Op::PointGet, true),
        ("put", Op::Put, false),
        ("batch", Op::Batch, false),
    ] {
        for threads in [1, 8] {
            if !wanted(&format!("{name}{threads}")) && !wanted(name) {
                continue;
            }
            let targets = [
                Target::new(&proxy, op, proxy_pid),
                Target::new(&direct, op, None),
                Target::new(&haproxy, op, haproxy_pid),
            ];
            let label = match op {
                Op::PointGet => "get prepared",
                Op::Put => "put text",
                _ => "batch100 text",
            };
            bench.cell(label, threads, prepared, &targets).await;
        }
    }
}

/// One measurement target: where, which statement, and the hop's process (for its CPU time).
struct Target<'a> {
    addr: &'a str,
    op: Op,
    pid: Option<u32>,
}

impl<'a> Target<'a> {
    fn new(addr: &'a str, op: Op, pid: Option<u32>) -> Self {
        Target { addr, op, pid }
    }
}

/// The settings every cell shares.
struct Bench<'a> {
    kind: &'a str,
    secs: f64,
    rounds: usize,
    prefixes: usize,
}

impl Bench<'_> {
    /// Measures `targets` (0: the proxy, 1: direct, 2: HAProxy, 3 if there: the hand-written
    /// statement directly) interleaved for `rounds` rounds and prints one line: each target's
    /// median QPS and p95, the proxy's ratios, and the hops' CPU time per query.
    async fn cell(&self, label: &str, threads: usize, prepared: bool, targets: &[Target<'_>]) {
        let n = targets.len();
        let mut got: Vec<Vec<(f64, f64)>> = vec![vec![]; n];
        let mut cpu = vec![Cpu::default(); n];
        let mut per_round = vec![];
        for r in 0..self.rounds {
            // interleaved, so drift hits the targets alike: each round starts one target later
            // than the one before and every other round runs them in reverse, so over 2n rounds
            // no target is favoured by its place
            let mut order: Vec<usize> = (0..n).map(|k| (k + r / 2) % n).collect();
            if r % 2 == 1 {
                order.reverse();
            }
            for k in order {
                let t = &targets[k];
                let m = measure_cpu(
                    t.pid,
                    &mut cpu[k],
                    t.addr,
                    threads,
                    self.secs,
                    t.op,
                    prepared,
                    self.prefixes,
                )
                .await;
                got[k].push(m);
            }
            // this round's proxy/HAProxy: the two ran close together, so slow drift cancels
            per_round.push(got[0][r].0 / got[2][r].0);
        }
        let m: Vec<(f64, f64)> = got.iter().map(|v| medians(v)).collect();
        let hand = m.get(3).copied();
        let show = |x: Option<(f64, f64)>| match x {
            Some((q, p)) => format!("{q:>9.0} {p:>6.2}"),
            None => format!("{:>9} {:>6}", "-", "-"),
        };
        println!(
            "{:<8} {:<14} {threads:>3} | {} | {} | {} | {} | {:>7.3} {:>7.3} {:>7.3} {:>8} | {:>7} {:>7}",
            self.kind,
            label,
            show(Some(m[0])),
            show(Some(m[1])),
            show(Some(m[2])),
            show(hand),
            m[0].0 / m[2].0,
            median(per_round),
            m[0].0 / m[1].0,
            hand.map_or("-".into(), |h| format!("{:.3}", m[0].0 / h.0)),
            cpu[0].us_per_query(),
            cpu[2].us_per_query()
        );
    }
}
