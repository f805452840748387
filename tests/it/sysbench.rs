//! Acceptance 3: sysbench oltp_read_write and oltp_point_select (default prepared-statement
//! mode) through the proxy with zero errors.

use std::process::Command;

use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{shared, BOTH};

pub(crate) fn sysbench(addr: &str, db: &str, args: &[&str]) -> String {
    let (host, port) = addr.rsplit_once(':').expect("addr");
    let out = Command::new("sysbench")
        .args(args)
        .args([
            "--db-driver=mysql",
            &format!("--mysql-host={host}"),
            &format!("--mysql-port={port}"),
            "--mysql-user=root",
            "--mysql-password=",
            &format!("--mysql-db={db}"),
            "--tables=2",
            "--table-size=2000",
        ])
        .output()
        .expect("sysbench is installed (scripts/install-deps.sh)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "sysbench {args:?} failed:\n{text}");
    text
}

fn counter(report: &str, name: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name:?} in sysbench report:\n{report}"))
}

#[test]
fn sysbench_oltp_through_proxy_has_no_errors() {
    for kind in BOTH {
        let backend = shared(kind);
        let db = "obkv_sbtest";
        let mut c = RawConn::connect(&backend.addr, "root", "", None).expect("direct");
        c.must(&format!("DROP DATABASE IF EXISTS {db}"));
        c.must(&format!("CREATE DATABASE {db}"));
        let p = proxy::start(proxy::config_for(&backend.addr));
        sysbench(&p.addr, db, &["oltp_read_write", "prepare"]);
        // read_write single-threaded: with several threads, its transactions can deadlock each
        // other in the backend (error 1213, which sysbench counts as "ignored"), proxy or not.
        for (workload, threads) in [
            ("oltp_read_write", "--threads=1"),
            ("oltp_point_select", "--threads=8"),
        ] {
            let report = sysbench(&p.addr, db, &[workload, threads, "--time=4", "run"]);
            let transactions = counter(&report, "transactions:");
            assert!(
                transactions > 50,
                "{} {workload}: only {transactions} transactions",
                kind.name()
            );
            assert_eq!(
                counter(&report, "ignored errors:"),
                0,
                "{} {workload}:\n{report}",
                kind.name()
            );
            assert_eq!(
                counter(&report, "reconnects:"),
                0,
                "{} {workload}:\n{report}",
                kind.name()
            );
        }
    }
}
