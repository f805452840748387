//! What a scrape costs with 1,000 HBase tables' series (issue 32): counters spread over four
//! threads' blocks (two of them ended, folded into the retired block), then the whole Prometheus
//! exposition built and timed, best of 20. Prints the milliseconds and the exposition's size.
//!   cargo run --release --example scrape_bench

use std::time::{Duration, Instant};

use obkv_proxy::admin::metrics::{self, Class, Outcome, TableEvent};
use obkv_proxy::admin::{prometheus, Stats};

fn main() {
    metrics::init(1000);
    let workers: Vec<_> = (0..4)
        .map(|w| {
            std::thread::spawn(move || {
                for i in 0..1000 {
                    let t = format!("g{i}$f");
                    metrics::table("bench", &t, TableEvent::Read);
                    metrics::table("bench", &t, TableEvent::Write);
                    metrics::statement(
                        Class::HbaseWrite,
                        Outcome::Forwarded,
                        Duration::from_micros(100 + i * w),
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let stats = Stats::default();
    let mut best = Duration::MAX;
    let mut size = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let text = prometheus::render(&stats, &[]);
        best = best.min(t.elapsed());
        size = text.len();
    }
    let tables = prometheus::render(&stats, &[])
        .lines()
        .filter(|l| l.starts_with("obkv_proxy_table_events_total{"))
        .count();
    println!(
        "scrape with {tables} table series: {:.2} ms (best of 20), {size} bytes",
        best.as_secs_f64() * 1e3
    );
}
