pub mod backends;
pub mod proxy;
pub mod raw;

pub use backends::{shared, Kind, BOTH};

/// `SHOW PROXY STATUS` on `c`, as (name, value) rows.
pub fn proxy_status(c: &mut raw::RawConn) -> Vec<(String, String)> {
    c.rows("SHOW PROXY STATUS")
        .into_iter()
        .filter_map(|r| {
            let k = String::from_utf8_lossy(r.first()?.as_deref()?).into_owned();
            let v = String::from_utf8_lossy(r.get(1)?.as_deref()?).into_owned();
            Some((k, v))
        })
        .collect()
}

/// One counter of `SHOW PROXY STATUS` rows (name, value); panics when it is missing.
pub fn proxy_counter(rows: &[(String, String)], name: &str) -> u64 {
    rows.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.parse().expect("a count"))
        .unwrap_or_else(|| panic!("no {name} in SHOW PROXY STATUS"))
}

/// Runs the mariadb command-line client against `addr` (TCP) with `args`, feeding `stdin`;
/// returns success, stdout and stderr.
pub fn mariadb_cli(addr: &str, args: &[&str], stdin: &str) -> (bool, String, String) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let (host, port) = addr.rsplit_once(':').expect("HOST:PORT");
    let mut child = Command::new("mariadb")
        .args(["--protocol=tcp", "-h", host, "-P", port])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the mariadb client is installed (scripts/install-deps.sh)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("input written");
    let out = child.wait_with_output().expect("mariadb ran");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
