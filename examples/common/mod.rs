//! Helpers shared by the benchmark examples (`prefix_bench`, `write_bench`, `idle_bench`,
//! `mux_bench`, `ttl_bench`).
// (clients on runtimes of their own, with a time driver: clippy.toml's rule is the proxy's)
#![allow(clippy::disallowed_methods)]

use mysql_async::OptsBuilder;

/// The environment variable `name`, or `default`.
pub fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Connection options for root at `addr` (host:port). `prefer_socket` is off: by default
/// mysql_async reconnects to a local server's Unix socket, which would bypass the hop measured.
pub fn opts(addr: &str, db: Option<&str>) -> OptsBuilder {
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    OptsBuilder::default()
        .ip_or_hostname(host.to_string())
        .tcp_port(port.parse().expect("port"))
        .user(Some("root"))
        .db_name(db.map(str::to_string))
        .prefer_socket(false)
}

/// The median of `v` (the mean of the two middle values of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n.is_multiple_of(2) {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    } else {
        v[n / 2]
    }
}

/// VmRSS of `pid` in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Opens `n` clients of `addr` (logged in to `db`), `concurrency` at a time: each logs in and
/// runs `SELECT 1`; a refused or reset connect (a full accept queue) is tried again, as a pool
/// does.
pub async fn open_clients(
    addr: &str,
    db: Option<&str>,
    n: usize,
    concurrency: usize,
) -> Vec<mysql_async::Conn> {
    use mysql_async::prelude::Queryable;
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let permit = sem.clone().acquire_owned().await.expect("semaphore");
        let o = opts(addr, db);
        tasks.spawn(async move {
            let mut last = None;
            for _ in 0..20 {
                match mysql_async::Conn::new(o.clone()).await {
                    Ok(mut c) => {
                        c.query_drop("SELECT 1").await.expect("SELECT 1");
                        drop(permit);
                        return c;
                    }
                    Err(e) => {
                        last = Some(e);
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
            panic!("cannot connect: {last:?}");
        });
    }
    let mut conns = Vec::with_capacity(n);
    while let Some(c) = tasks.join_next().await {
        conns.push(c.expect("client"));
    }
    conns
}
