//! The TTL task where the backend has none (issue 41), on both backends: after one run exactly
//! the rows OceanBase's rule keeps remain (computed here from the written T values and the
//! clock of the batch that judged them), the status tables and views show the run with its
//! counts; rows written while a run goes are deleted only where the rule says so; a proxy
//! killed with SIGKILL mid-run leaves the table to another proxy, which finishes it without
//! deleting more; the TTL statements answer as OceanBase's do.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use obkv_proxy::config::Config;

use crate::common::backends::{process_alive, project_root};
use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{shared, BOTH};

/// A cell version as written: K, Q, T.
type Version = (Vec<u8>, Vec<u8>, i64);

/// A proxy configuration with the task on, its own catalog schema (emptied: no task rows of
/// an earlier run) and database.
fn config(backend: &str, catalog: &str, db: &str) -> Config {
    fresh_catalog(backend, catalog);
    let mut c = proxy::config_for(backend);
    c.hbase.catalog_user = "root".into();
    c.hbase.catalog_schema = catalog.into();
    c.hbase.databases = vec![db.into()];
    c.ttl.enabled = true;
    c.ttl.poll_ms = 100;
    c.ttl.rows_per_second = 0;
    c.ttl.status_views = false;
    c
}

fn fresh_catalog(backend: &str, catalog: &str) {
    let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
    d.exec(&format!("DROP DATABASE IF EXISTS {catalog}"))
        .expect("drop catalog");
}

/// A fresh database with one family (`TimeToLive`/`MaxVersions` as given), made through `p`.
fn family(p: &str, db: &str, group: &str, attrs: &str, partitions: u32) -> String {
    let mut c = RawConn::connect(p, "root", "", None).expect("proxy");
    c.exec(&format!("DROP DATABASE IF EXISTS {db}"))
        .expect("drop");
    c.exec(&format!("CREATE DATABASE {db}")).expect("create db");
    c.exec(&format!("USE {db}")).expect("use");
    c.exec(&format!("CREATE TABLEGROUP IF NOT EXISTS {group}"))
        .expect("group");
    let table = format!("{group}$f");
    c.exec(&format!(
        "CREATE TABLE `{table}` (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024), \
         PRIMARY KEY (K, Q, T)) TABLEGROUP = {group} KV_ATTRIBUTES = '{attrs}' \
         PARTITION BY KEY(K) PARTITIONS {partitions}"
    ))
    .expect("family");
    format!("`{db}`.`{table}`")
}

fn now_ms(c: &mut RawConn) -> i64 {
    c.scalar("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
        .parse()
        .expect("clock")
}

/// A small deterministic generator (the test's data is the same from run to run).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Writes the versions through `c` (T = −ts), 100 rows a statement.
fn write(c: &mut RawConn, table: &str, versions: &[Version]) {
    for chunk in versions.chunks(100) {
        let values: Vec<String> = chunk
            .iter()
            .map(|(k, q, t)| format!("(X'{}', X'{}', {t}, 'v')", hex(k), hex(q)))
            .collect();
        c.exec(&format!("INSERT INTO {table} VALUES {}", values.join(",")))
            .expect("write");
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// 100 cells × 5 versions, their times spread over the last 60 s (distinct per cell).
fn hundred_cells(now: i64, seed: u64) -> Vec<Version> {
    let mut rng = Lcg(seed);
    let mut out = Vec::new();
    for i in 0..100 {
        let k = format!("row{i:03}").into_bytes();
        let mut seen = HashSet::new();
        while seen.len() < 5 {
            let ts = now - rng.below(60_000) as i64;
            if seen.insert(ts) {
                out.push((k.clone(), b"q".to_vec(), -ts));
            }
        }
    }
    out
}

/// The rows of one partition (or the table): K, Q, T.
fn rows_of(c: &mut RawConn, table: &str, partition: Option<&str>) -> HashSet<Version> {
    let from = match partition {
        Some(p) => format!("{table} PARTITION ({p})"),
        None => table.to_string(),
    };
    c.rows(&format!("SELECT K, Q, T FROM {from}"))
        .into_iter()
        .map(|r| {
            let t = String::from_utf8_lossy(r[2].as_deref().unwrap_or_default())
                .parse()
                .expect("T");
            (
                r[0].clone().unwrap_or_default(),
                r[1].clone().unwrap_or_default(),
                t,
            )
        })
        .collect()
}

/// What the rule keeps of `rows` (one partition's) judged at `now` (epoch ms): among the newest
/// `versions` of each (K, Q), those whose time plus `ttl_s` is not before `now`.
fn kept(rows: &HashSet<Version>, versions: usize, ttl_s: i64, now: i64) -> HashSet<Version> {
    let mut cells: BTreeMap<(Vec<u8>, Vec<u8>), Vec<i64>> = BTreeMap::new();
    for (k, q, t) in rows {
        cells.entry((k.clone(), q.clone())).or_default().push(*t);
    }
    let mut out = HashSet::new();
    for ((k, q), mut ts) in cells {
        // T = −ts: ascending T is newest first
        ts.sort_unstable();
        for (rank, t) in ts.into_iter().enumerate() {
            if rank < versions && -t + ttl_s * 1000 >= now {
                out.insert((k.clone(), q.clone(), t));
            }
        }
    }
    out
}

/// Waits until the catalog has no open task left (the run finished).
fn wait_finished(c: &mut RawConn, catalog: &str, within: Duration) {
    let deadline = Instant::now() + within;
    let q = format!("SELECT COUNT(*) FROM {catalog}.kv_ttl_tasks");
    while c.scalar(&q) != "0" {
        assert!(Instant::now() < deadline, "the TTL run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// History rows of the table's runs: partition, update_ms, scanned, ttl deleted, versions
/// deleted, status.
fn history(c: &mut RawConn, catalog: &str, db: &str) -> Vec<(String, i64, u64, u64, u64, String)> {
    let text = |v: &Option<Vec<u8>>| {
        String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
    };
    c.rows(&format!(
        "SELECT partition_name, update_ms, scan_cnt, ttl_del_cnt, max_version_del_cnt, status \
         FROM {catalog}.kv_ttl_task_history WHERE table_schema = '{db}' ORDER BY partition_name, task_id"
    ))
    .into_iter()
    .map(|r| {
        (
            text(&r[0]),
            text(&r[1]).parse().expect("ms"),
            text(&r[2]).parse().expect("n"),
            text(&r[3]).parse().expect("n"),
            text(&r[4]).parse().expect("n"),
            text(&r[5]),
        )
    })
    .collect()
}

#[test]
fn one_run_keeps_exactly_what_the_rule_keeps() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let catalog = format!("obkv_ttl_a_{}", kind.name());
        let db = format!("ttl_a_{}", kind.name());
        let mut cfg = config(backend, &catalog, &db);
        cfg.ttl.status_views = true;
        // one batch a partition: each partition judged at the one time its task recorded
        cfg.ttl.batch_rows = 1024;
        let p = proxy::start(cfg);
        let table = family(
            &p.addr,
            &db,
            &format!("ttla{}", kind.name()),
            r#"{"Hbase": {"TimeToLive": 10, "MaxVersions": 2}}"#,
            5,
        );
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        let now = now_ms(&mut c);
        let written = hundred_cells(now, 41);
        write(&mut c, &table, &written);
        let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
        let before: Vec<(String, HashSet<Version>)> = (0..5)
            .map(|i| {
                let p = format!("p{i}");
                let rows = rows_of(&mut d, &table, Some(&p));
                (p, rows)
            })
            .collect();
        assert_eq!(before.iter().map(|(_, r)| r.len()).sum::<usize>(), 500);
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        wait_finished(&mut d, &catalog, Duration::from_secs(60));
        let runs = history(&mut d, &catalog, &db);
        assert_eq!(runs.len(), 5, "one finished task per partition: {runs:?}");
        let mut deleted = 0;
        for (part, rows) in &before {
            let run = runs
                .iter()
                .find(|r| &r.0 == part)
                .unwrap_or_else(|| panic!("no task for {part}: {runs:?}"));
            assert_eq!(run.5, "FINISHED");
            // one batch judged the whole partition, at the time it recorded
            let want = kept(rows, 2, 10, run.1);
            let have = rows_of(&mut d, &table, Some(part));
            assert_eq!(
                have,
                want,
                "{} {part}: kept {} rows, the rule keeps {}",
                kind.name(),
                have.len(),
                want.len()
            );
            let by_versions = kept(rows, 2, i64::MAX / 4_000, run.1);
            assert_eq!(run.2, rows.len() as u64, "rows scanned");
            assert_eq!(
                run.4,
                (rows.len() - by_versions.len()) as u64,
                "versions deleted"
            );
            assert_eq!(
                run.3,
                (by_versions.len() - want.len()) as u64,
                "expired deleted"
            );
            deleted += rows.len() - want.len();
        }
        // five versions over 60 s with TTL 10 and two versions: most go
        assert!(deleted > 300, "{deleted} deleted");
        eprintln!("{}: {deleted} of 500 rows deleted by one run", kind.name());
        // as OceanBase shows it
        let shown = d.rows(&format!(
            "SELECT TABLE_NAME, STATUS, SCAN_CNT, TTL_DEL_CNT + MAX_VERSION_DEL_CNT, TRIGGER_TYPE, RET_CODE \
             FROM oceanbase.DBA_OB_KV_TTL_TASK_HISTORY WHERE DATABASE_NAME = '{db}'"
        ));
        assert_eq!(shown.len(), 5, "{shown:?}");
        let sum: u64 = shown
            .iter()
            .map(|r| {
                String::from_utf8_lossy(r[3].as_deref().unwrap_or_default())
                    .parse::<u64>()
                    .expect("n")
            })
            .sum();
        assert_eq!(sum as usize, deleted);
        for r in &shown {
            assert_eq!(r[1].as_deref(), Some(&b"FINISHED"[..]));
            assert_eq!(r[4].as_deref(), Some(&b"USER"[..]));
            assert_eq!(r[5].as_deref(), Some(&b"OB_SUCCESS"[..]));
        }
        // nothing runs now: the other statements say so, as OceanBase's do
        for s in ["SUSPEND", "RESUME", "CANCEL"] {
            let e = c.exec(&format!("ALTER SYSTEM {s} TTL")).expect_err(s);
            assert_eq!(e.0, 10505, "{s}: {e:?}");
        }
    }
}

#[test]
fn rows_written_during_a_run_are_deleted_only_where_the_rule_says() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let catalog = format!("obkv_ttl_w_{}", kind.name());
        let db = format!("ttl_w_{}", kind.name());
        let mut cfg = config(backend, &catalog, &db);
        // a run of several seconds: 20-row batches, 200 rows a second
        cfg.ttl.batch_rows = 20;
        cfg.ttl.rows_per_second = 200;
        let p = proxy::start(cfg);
        let table = family(
            &p.addr,
            &db,
            &format!("ttlw{}", kind.name()),
            r#"{"Hbase": {"TimeToLive": 10, "MaxVersions": 2}}"#,
            3,
        );
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        let start = now_ms(&mut c);
        let mut written = hundred_cells(start, 7);
        write(&mut c, &table, &written);
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
        let open = format!("SELECT COUNT(*) FROM {catalog}.kv_ttl_tasks");
        let mut rng = Lcg(99);
        let mut during = 0;
        let deadline = Instant::now() + Duration::from_secs(120);
        // while the run goes (up to 400 versions, so that it ends): a new version of a cell
        // now, and an old one (40 s ago)
        while d.scalar(&open) != "0" {
            assert!(Instant::now() < deadline, "the run did not finish");
            if during >= 400 {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            let i = rng.below(100);
            let k = format!("row{i:03}").into_bytes();
            let now = now_ms(&mut c);
            let fresh = (k.clone(), b"q".to_vec(), -now);
            let old = (k, b"q".to_vec(), -(now - 40_000 - rng.below(1000) as i64));
            let mut batch = Vec::new();
            for v in [fresh, old] {
                if !written.contains(&v) {
                    batch.push(v);
                }
            }
            write(&mut c, &table, &batch);
            during += batch.len();
            written.extend(batch);
        }
        assert!(during > 0, "nothing was written during the run");
        let runs = history(&mut d, &catalog, &db);
        let end = runs.iter().map(|r| r.1).max().expect("runs");
        let have = rows_of(&mut d, &table, None);
        let all: HashSet<Version> = written.iter().cloned().collect();
        // whatever went, the rule deleted: a version among the newest two of its cell (of all
        // ever written) that had not expired by the last batch was never deleted
        let safe = kept(&all, 2, 10, end);
        let lost: Vec<&Version> = safe.iter().filter(|v| !have.contains(v)).collect();
        assert!(
            lost.is_empty(),
            "{} kept by the rule but deleted: {:?}",
            kind.name(),
            lost
        );
        // and the counts say exactly what went (no batch counted or applied twice)
        let gone = all.len() - have.len();
        let counted: u64 = runs.iter().map(|r| r.3 + r.4).sum();
        assert_eq!(
            counted as usize,
            gone,
            "{}: counted {counted}, {gone} gone",
            kind.name()
        );
        assert!(gone >= 300, "{gone}");
        eprintln!(
            "{}: {during} versions written during the run, {gone} of {} deleted, none kept by the rule",
            kind.name(),
            all.len()
        );
    }
}

/// A config file for the binary with the task on.
fn config_file(catalog: &str, db: &str, tag: &str) -> std::path::PathBuf {
    let path = project_root()
        .join("target/obkv-test")
        .join(format!("ttl-{tag}-{}.toml", std::process::id()));
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    std::fs::write(
        &path,
        format!(
            "[proxy]\nsocket = \"\"\n[hbase]\ncatalog_user = \"root\"\ncatalog_schema = \"{catalog}\"\n\
             databases = [\"{db}\"]\n[ttl]\nenabled = true\npoll_ms = 100\nbatch_rows = 50\n\
             rows_per_second = 1000\nlease_ms = 2000\nstatus_views = false\n"
        ),
    )
    .expect("config");
    path
}

#[test]
fn a_proxy_killed_mid_run_leaves_the_table_to_another() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let catalog = format!("obkv_ttl_k_{}", kind.name());
        let db = format!("ttl_k_{}", kind.name());
        fresh_catalog(backend, &catalog);
        let file = config_file(&catalog, &db, kind.name());
        let f = file.to_string_lossy().into_owned();
        let a = proxy::spawn_binary(backend, &["--config", &f]);
        let b = proxy::spawn_binary(backend, &["--config", &f]);
        // versions only: what the rule keeps does not depend on the clock
        let table = family(
            &a.addr,
            &db,
            &format!("ttlk{}", kind.name()),
            r#"{"Hbase": {"MaxVersions": 1}}"#,
            3,
        );
        let mut c = RawConn::connect(&a.addr, "root", "", None).expect("proxy");
        let now = now_ms(&mut c);
        let mut written = Vec::new();
        for i in 0..1000 {
            for v in 0..3 {
                written.push((
                    format!("k{i:04}").into_bytes(),
                    b"q".to_vec(),
                    -(now - v * 1000),
                ));
            }
        }
        write(&mut c, &table, &written);
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
        // the holder, once it has committed a batch
        let deadline = Instant::now() + Duration::from_secs(60);
        let holder_pid = loop {
            assert!(Instant::now() < deadline, "no proxy took the table");
            let rows = d.rows(&format!(
                "SELECT l.holder FROM {catalog}.kv_ttl_leases l WHERE l.expires_ms > 0 AND \
                 (SELECT COALESCE(SUM(scan_cnt), 0) FROM {catalog}.kv_ttl_tasks) > 0"
            ));
            if let Some(h) = rows.first().and_then(|r| r[0].clone()) {
                let h = String::from_utf8_lossy(&h).into_owned();
                let pid: u32 = h
                    .rsplit(':')
                    .nth(1)
                    .and_then(|p| p.parse().ok())
                    .expect("pid in holder");
                break pid;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            holder_pid == a.pid || holder_pid == b.pid,
            "holder {holder_pid}"
        );
        unsafe {
            libc::kill(holder_pid as i32, libc::SIGKILL);
        }
        let killed_at = Instant::now();
        while process_alive(holder_pid) {
            assert!(killed_at.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        }
        let open = format!("SELECT COUNT(*) FROM {catalog}.kv_ttl_tasks");
        assert_ne!(d.scalar(&open), "0", "the run finished before the kill");
        wait_finished(&mut d, &catalog, Duration::from_secs(120));
        eprintln!(
            "{}: the other proxy finished the run {:.1} s after the kill",
            kind.name(),
            killed_at.elapsed().as_secs_f64()
        );
        // exactly the newest version of each cell remains
        let have = rows_of(&mut d, &table, None);
        let all: HashSet<Version> = written.iter().cloned().collect();
        let want = kept(&all, 1, i64::MAX / 4_000, now);
        assert_eq!(have.len(), 1000);
        assert_eq!(have, want, "{}", kind.name());
        // and the counts add up to what went: no batch applied twice
        let runs = history(&mut d, &catalog, &db);
        assert_eq!(runs.len(), 3, "{runs:?}");
        let deleted: u64 = runs.iter().map(|r| r.4).sum();
        let scanned: u64 = runs.iter().map(|r| r.2).sum();
        assert_eq!(deleted, 2000, "{runs:?}");
        assert_eq!(scanned, 3000, "{runs:?}");
    }
}

#[test]
fn ttl_statements_answer_as_oceanbase_does() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let catalog = format!("obkv_ttl_s_{}", kind.name());
        let db = format!("ttl_s_{}", kind.name());
        // off: OceanBase's "not enabled"
        let mut off = config(backend, &catalog, &db);
        off.ttl.enabled = false;
        let p = proxy::start(off);
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        let e = c.exec("ALTER SYSTEM TRIGGER TTL").expect_err("off");
        assert_eq!(e.0, 10501, "{e:?}");
        drop(c);
        drop(p);
        let mut cfg = config(backend, &catalog, &db);
        cfg.ttl.batch_rows = 10;
        cfg.ttl.rows_per_second = 20;
        let p = proxy::start(cfg);
        let table = family(
            &p.addr,
            &db,
            &format!("ttls{}", kind.name()),
            r#"{"Hbase": {"MaxVersions": 1}}"#,
            1,
        );
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        let now = now_ms(&mut c);
        let mut written = Vec::new();
        for i in 0..100 {
            for v in 0..2 {
                written.push((
                    format!("k{i:03}").into_bytes(),
                    b"q".to_vec(),
                    -(now - v * 1000),
                ));
            }
        }
        write(&mut c, &table, &written);
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        // a second trigger while it runs is not allowed
        let e = c.exec("ALTER SYSTEM TRIGGER TTL").expect_err("twice");
        assert_eq!(e.0, 10504, "{e:?}");
        c.exec("ALTER SYSTEM SUSPEND TTL").expect("suspend");
        let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
        let statuses = |d: &mut RawConn| {
            d.rows(&format!(
                "SELECT DISTINCT status FROM {catalog}.kv_ttl_tasks"
            ))
            .into_iter()
            .map(|r| String::from_utf8_lossy(r[0].as_deref().unwrap_or_default()).into_owned())
            .collect::<Vec<_>>()
        };
        assert_eq!(statuses(&mut d), vec!["PENDING".to_string()]);
        let e = c
            .exec("ALTER SYSTEM SUSPEND TTL")
            .expect_err("suspended twice");
        assert_eq!(e.0, 10504, "{e:?}");
        c.exec("ALTER SYSTEM RESUME TTL").expect("resume");
        assert_eq!(statuses(&mut d), vec!["RUNNING".to_string()]);
        c.exec("ALTER SYSTEM CANCEL TTL").expect("cancel");
        assert!(statuses(&mut d).is_empty());
        let runs = history(&mut d, &catalog, &db);
        assert!(runs.iter().all(|r| r.5 == "CANCELED"), "{runs:?}");
        // what a cancelled run did stays done, what it did not is still there
        let left = rows_of(&mut d, &table, None).len() as u64;
        let deleted: u64 = runs.iter().map(|r| r.4).sum();
        assert_eq!(left + deleted, 200);
        assert!(
            left > 100,
            "the run was cancelled before it finished: {left} rows left"
        );
        // "State": "disable" switches the task off for the table: a trigger creates nothing
        c.exec(&format!(
            "ALTER TABLE {table} KV_ATTRIBUTES = '{{\"Hbase\": {{\"MaxVersions\": 1, \"State\": \"disable\"}}}}'"
        ))
        .expect("disable");
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        assert!(statuses(&mut d).is_empty());
        assert_eq!(rows_of(&mut d, &table, None).len() as u64, left);
        // back on, then off while the run goes: the run stops at its next batch, saying why
        let enable =
            format!("ALTER TABLE {table} KV_ATTRIBUTES = '{{\"Hbase\": {{\"MaxVersions\": 1}}}}'");
        c.exec(&enable).expect("enable");
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        c.exec(&format!(
            "ALTER TABLE {table} KV_ATTRIBUTES = '{{\"Hbase\": {{\"MaxVersions\": 1, \"State\": \"disable\"}}}}'"
        ))
        .expect("disable while running");
        wait_finished(&mut d, &catalog, Duration::from_secs(60));
        let codes: Vec<String> = d
            .rows(&format!(
                "SELECT ret_code FROM {catalog}.kv_ttl_task_history WHERE status = 'CANCELED' \
                 AND ret_code <> 'OB_CANCELED'"
            ))
            .into_iter()
            .map(|r| String::from_utf8_lossy(r[0].as_deref().unwrap_or_default()).into_owned())
            .collect();
        assert_eq!(codes, ["OB_TTL_DISABLED"], "{}", kind.name());
        assert!(rows_of(&mut d, &table, None).len() > 100);
        // and back on: the next run applies the declaration as altered
        c.exec(&enable).expect("enable");
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        wait_finished(&mut d, &catalog, Duration::from_secs(60));
        assert_eq!(rows_of(&mut d, &table, None).len(), 100);
    }
}

#[test]
fn hbase_reads_return_what_hbase_would_on_one_partition() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let catalog = format!("obkv_ttl_r_{}", kind.name());
        let db = format!("ttl_r_{}", kind.name());
        // the task off: the reads alone hide what it would delete
        let mut cfg = config(backend, &catalog, &db);
        cfg.ttl.enabled = false;
        let p = proxy::start(cfg);
        let group = format!("ttlr{}", kind.name());
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        c.exec(&format!("DROP DATABASE IF EXISTS {db}"))
            .expect("drop");
        c.exec(&format!("CREATE DATABASE {db}")).expect("db");
        c.exec(&format!("USE {db}")).expect("use");
        c.exec(&format!("CREATE TABLEGROUP IF NOT EXISTS {group}"))
            .expect("group");
        c.exec(&format!(
            "CREATE TABLE `{group}$f` (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024), \
             K_PREFIX varbinary(1024) GENERATED ALWAYS AS (substring(K, 1, 4)) VIRTUAL, \
             PRIMARY KEY (K, Q, T)) TABLEGROUP = {group} \
             KV_ATTRIBUTES = '{{\"Hbase\": {{\"TimeToLive\": 10, \"MaxVersions\": 2}}}}' \
             PARTITION BY KEY(K_PREFIX) PARTITIONS 7"
        ))
        .expect("family");
        let table = format!("`{db}`.`{group}$f`");
        // 100 cells in five prefixes, five versions each over the last 60 s, none within 2 s
        // of the TTL's edge (the read runs within a second or two of the write)
        let now = now_ms(&mut c);
        let mut rng = Lcg(5);
        let mut written = Vec::new();
        for i in 0..100u64 {
            let k = format!("{:04}-{i:03}", i % 5).into_bytes();
            let mut seen = HashSet::new();
            while seen.len() < 5 {
                let age = rng.below(60_000) as i64;
                if (8_000..=12_000).contains(&age) || !seen.insert(age) {
                    continue;
                }
                written.push((k.clone(), b"q".to_vec(), -(now - age)));
            }
        }
        let values: Vec<String> = written
            .iter()
            .map(|(k, q, t)| format!("(X'{}', X'{}', {t}, 'v')", hex(k), hex(q)))
            .collect();
        for chunk in values.chunks(100) {
            c.exec(&format!(
                "INSERT INTO {table} (K, Q, T, V) VALUES {}",
                chunk.join(",")
            ))
            .expect("write");
        }
        let all: HashSet<Version> = written.iter().cloned().collect();
        let read = |c: &mut RawConn, sql: &str| -> HashSet<Version> {
            c.rows(sql)
                .into_iter()
                .map(|r| {
                    let t = String::from_utf8_lossy(r[2].as_deref().unwrap_or_default())
                        .parse()
                        .expect("T");
                    (
                        r[0].clone().unwrap_or_default(),
                        r[1].clone().unwrap_or_default(),
                        t,
                    )
                })
                .collect()
        };
        // off (the default): the rows as stored
        assert_eq!(
            read(&mut c, &format!("SELECT K, Q, T FROM {table}")).len(),
            500
        );
        c.exec("SET OBKV HBASE_READS = ON").expect("on");
        assert_eq!(
            c.rows("SHOW OBKV HBASE_READS")[0][1].as_deref(),
            Some(&b"ON"[..])
        );
        let before = now_ms(&mut c);
        let visible = read(&mut c, &format!("SELECT K, Q, T FROM {table}"));
        let scan = read(
            &mut c,
            &format!("SELECT K, Q, T FROM {table} t WHERE t.K LIKE '0003%' ORDER BY K, T"),
        );
        let count = c.scalar(&format!(
            "SELECT COUNT(*) FROM {table} WHERE K = '0002-007'"
        ));
        let after = now_ms(&mut c);
        let want = kept(&all, 2, 10, before);
        assert_eq!(
            want,
            kept(&all, 2, 10, after),
            "a cell crossed the TTL during the read"
        );
        assert_eq!(visible, want, "{}", kind.name());
        let want_scan: HashSet<Version> = want
            .iter()
            .filter(|v| v.0.starts_with(b"0003"))
            .cloned()
            .collect();
        assert_eq!(scan, want_scan);
        let want_count = want.iter().filter(|v| v.0 == b"0002-007").count();
        assert_eq!(count, want_count.to_string());
        assert!(
            want.len() < 200 && want.len() > 20,
            "{} visible",
            want.len()
        );
        eprintln!(
            "{}: {} of 500 cells visible as HBase reads them",
            kind.name(),
            want.len()
        );
        // the backend's plan reads one partition
        let plan = c.rows(&format!(
            "EXPLAIN {}SELECT K, Q, T FROM {table} WHERE K LIKE '0003%'",
            if kind.name() == "mariadb" {
                "PARTITIONS "
            } else {
                ""
            }
        ));
        let text: Vec<String> = plan
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| String::from_utf8_lossy(v.as_deref().unwrap_or(b"NULL")).into_owned())
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect();
        let one_partition = if kind.name() == "mariadb" {
            // the derived table's own row names the partitions it reads
            let derived: Vec<&String> = text
                .iter()
                .filter(|l| l.contains(&format!("{group}$f")))
                .collect();
            derived.len() == 1 && {
                let parts = derived[0].split(" | ").nth(3).unwrap_or("");
                parts.starts_with('p') && !parts.contains(',')
            }
        } else {
            let joined = text.join("\n");
            joined.matches("partitions(").count() == 1
                && joined
                    .split("partitions(")
                    .nth(1)
                    .and_then(|r| r.split(')').next())
                    .is_some_and(|p| p.starts_with('p') && !p.contains(',') && !p.contains('-'))
        };
        assert!(one_partition, "{}: {}", kind.name(), text.join("\n"));
        // EXPLAIN OBKV shows the rewrite
        let shown = c.rows(&format!(
            "EXPLAIN OBKV SELECT K, Q, T FROM {table} WHERE K LIKE '0003%'"
        ));
        let sent = String::from_utf8_lossy(shown[0][2].as_deref().unwrap_or_default()).into_owned();
        let note = String::from_utf8_lossy(shown[0][5].as_deref().unwrap_or_default()).into_owned();
        assert!(
            sent.contains("ROW_NUMBER() OVER (PARTITION BY `K`, `Q`"),
            "{sent}"
        );
        assert!(note.starts_with("HBase reads"), "{note}");
        // a shape it cannot filter is refused, not run unfiltered
        let e = c
            .exec(&format!(
                "SELECT a.K FROM {table} a JOIN {table} b ON a.K = b.K"
            ))
            .expect_err("join");
        assert_eq!(e.0, 1235, "{e:?}");
        c.exec("SET OBKV HBASE_READS = OFF").expect("off");
        assert_eq!(
            read(&mut c, &format!("SELECT K, Q, T FROM {table}")).len(),
            500
        );
        // the advisor sees the table keep far more than it declares (the task is off)
        let advice = c.rows(&format!("SHOW OBKV ADVICE FOR {table}"));
        let rules: Vec<String> = advice
            .iter()
            .map(|r| String::from_utf8_lossy(r[1].as_deref().unwrap_or_default()).into_owned())
            .collect();
        assert!(
            rules.contains(&"versions_kept".to_string())
                && rules.contains(&"expired_kept".to_string()),
            "{}: {advice:?}",
            kind.name()
        );
        let evidence = advice
            .iter()
            .find(|r| r[1].as_deref() == Some(&b"versions_kept"[..]))
            .and_then(|r| r[2].clone())
            .unwrap_or_default();
        assert!(
            String::from_utf8_lossy(&evidence).contains("5.0 versions a cell, MaxVersions is 2"),
            "{}",
            String::from_utf8_lossy(&evidence)
        );
    }
}

#[test]
fn the_positive_convention_and_empty_qualifiers_walk_right() {
    for kind in BOTH {
        let backend = &shared(kind).addr;
        let catalog = format!("obkv_ttl_m_{}", kind.name());
        let db = format!("ttl_m_{}", kind.name());
        let mut cfg = config(backend, &catalog, &db);
        // T = epoch_ms: the newest version has the largest T, the walk reads the key backwards
        cfg.hbase.timestamp = obkv_proxy::hbase::cells::Convention::Ms;
        cfg.ttl.batch_rows = 7;
        let p = proxy::start(cfg);
        let table = family(
            &p.addr,
            &db,
            &format!("ttlm{}", kind.name()),
            r#"{"Hbase": {"TimeToLive": 600, "MaxVersions": 2}}"#,
            3,
        );
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        let now = now_ms(&mut c);
        let mut written = Vec::new();
        for i in 0..30 {
            // half the cells with an empty qualifier
            let q = if i % 2 == 0 {
                Vec::new()
            } else {
                b"q".to_vec()
            };
            for age in [0, 1_000, 2_000, 3_600_000] {
                written.push((format!("m{i:02}").into_bytes(), q.clone(), now - age));
            }
        }
        write(&mut c, &table, &written);
        c.exec("ALTER SYSTEM TRIGGER TTL").expect("trigger");
        let mut d = RawConn::connect(backend, "root", "", None).expect("direct");
        wait_finished(&mut d, &catalog, Duration::from_secs(60));
        // the two newest of each cell stay; the third goes for versions, the hour-old one too
        // (it is the fourth version: versions are checked first)
        let want: HashSet<Version> = written
            .iter()
            .filter(|v| v.2 >= now - 1_000)
            .cloned()
            .collect();
        let have = rows_of(&mut d, &table, None);
        assert_eq!(have, want, "{}", kind.name());
        let runs = history(&mut d, &catalog, &db);
        assert_eq!(runs.iter().map(|r| r.4).sum::<u64>(), 60, "{runs:?}");
        assert_eq!(runs.iter().map(|r| r.3).sum::<u64>(), 0, "{runs:?}");
        assert_eq!(runs.iter().map(|r| r.2).sum::<u64>(), 120, "{runs:?}");
    }
}
