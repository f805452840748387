//! Helpers shared by the benchmark examples (`prefix_bench`, `write_bench`).

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
