//! The live rowkey advisor (issue 33) against real backends: a workload generator writes the
//! guides' designs through the proxy — the bad ones each get their finding, with the guide's
//! fix, within a minute of traffic; the good ones get none — the page renders a skewed table's
//! heatmap in headless Chromium with the hot partition as its brightest column, and the
//! advisor's memory stays within its budget with 50 tables of 997 partitions.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::backends::{free_port, project_root, shared, Kind, BOTH};
use crate::common::proxy;
use crate::common::raw::RawConn;

/// A fixed-seed generator (splitmix64): the same traffic every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

const COLS: &str = "K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL";

/// One of the guides' rowkey designs: its table, how it writes and scans, and what the advisor
/// must say (the finding's rule, or nothing).
struct Design {
    name: &'static str,
    /// Partitioning clause (and the prefix column, when there is one).
    prefix: Option<usize>,
    partitioning: String,
    key: fn(u64, &mut Rng) -> String,
    /// The literal of a prefix scan to send after some writes.
    scan: Option<fn(&str) -> String>,
    expect: Option<&'static str>,
}

fn designs() -> Vec<Design> {
    let range_time = "PARTITION BY RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('1600000000000'), \
                      PARTITION p1 VALUES LESS THAN ('1700000000000'), PARTITION p2 VALUES LESS THAN (MAXVALUE))";
    let range_salt = "PARTITION BY RANGE COLUMNS(K) (PARTITION p0 VALUES LESS THAN ('25'), \
                      PARTITION p1 VALUES LESS THAN ('50'), PARTITION p2 VALUES LESS THAN ('75'), \
                      PARTITION p3 VALUES LESS THAN (MAXVALUE))";
    let key_prefix = |_: usize| "PARTITION BY KEY(K_PREFIX) PARTITIONS 97".to_string();
    vec![
        Design {
            name: "timestamp_msgid_on_range",
            prefix: None,
            partitioning: range_time.into(),
            key: |i, r| format!("{}|{:06}", 1_750_000_000_000 + i, r.next() % 1_000_000),
            scan: None,
            expect: Some("monotonic_key"),
        },
        Design {
            name: "msgtype_msgid",
            prefix: Some(4),
            partitioning: key_prefix(4),
            key: |_, r| {
                let ty = ["ord", "pay", "log", "msg"][(r.next() % 4) as usize];
                format!("{ty}|{:016x}", r.next())
            },
            scan: None,
            expect: Some("few_valued_lead"),
        },
        Design {
            name: "long_prefix_short_user_ids",
            prefix: Some(64),
            partitioning: key_prefix(64),
            key: |_, r| format!("{:08}{:020}", r.next() % 100_000, r.next()),
            scan: Some(|k| k[..8].to_string()),
            expect: Some("prefix_too_long"),
        },
        Design {
            name: "one_hot_user",
            prefix: Some(8),
            partitioning: key_prefix(8),
            key: |i, r| {
                let user = if i % 3 == 0 {
                    42
                } else {
                    r.next() % 100_000_000
                };
                format!("{user:08}{:020}", r.next())
            },
            scan: None,
            expect: Some("hot_key"),
        },
        Design {
            name: "salted",
            prefix: None,
            partitioning: range_salt.into(),
            key: |i, r| {
                let id = r.next();
                format!("{:02}|{}|{id}", id % 100, 1_750_000_000_000 + i)
            },
            scan: Some(|k| k[..3].to_string()),
            expect: None,
        },
        Design {
            name: "hashed",
            prefix: Some(8),
            partitioning: key_prefix(8),
            key: |i, r| format!("{:08x}|{}|{}", r.next() as u32, 1_750_000_000_000 + i, i),
            scan: Some(|k| k[..8].to_string()),
            expect: None,
        },
        Design {
            name: "reversed_timestamps",
            prefix: Some(8),
            partitioning: key_prefix(8),
            key: |i, r| {
                let user = r.next() % 100_000_000;
                format!("{user:08}{}", i64::MAX as u64 - 1_750_000_000_000 - i)
            },
            scan: Some(|k| k[..8].to_string()),
            expect: None,
        },
        Design {
            name: "uniform",
            prefix: None,
            partitioning: "PARTITION BY KEY(K) PARTITIONS 97".into(),
            key: |_, r| format!("{:016x}", r.next()),
            scan: None,
            expect: None,
        },
    ]
}

/// The design's table `{group}$f`, in a table group of its own (one family a group).
fn create(c: &mut RawConn, group: &str, d: &Design) -> String {
    let table = format!("{group}$f");
    c.exec(&format!("DROP TABLE IF EXISTS `{table}`"))
        .expect("drop");
    c.exec(&format!("DROP TABLEGROUP IF EXISTS {group}"))
        .expect("drop group");
    c.exec(&format!("CREATE TABLEGROUP {group}"))
        .expect("group");
    let prefix_col = match d.prefix {
        Some(n) => format!(", K_PREFIX varbinary({n}) GENERATED ALWAYS AS (substring(K, 1, {n}))"),
        None => String::new(),
    };
    c.exec(&format!(
        "CREATE TABLE `{table}` ({COLS}{prefix_col}, PRIMARY KEY (K, Q, T)) TABLEGROUP = {group} {}",
        d.partitioning
    ))
    .unwrap_or_else(|e| panic!("{}: {e:?}", d.name));
    table
}

/// Writes `n` rows of the design (and a scan every fourth write, where it scans).
fn drive(c: &mut RawConn, table: &str, d: &Design, n: u64, seed: u64) {
    let mut r = Rng(seed);
    for i in 0..n {
        let k = (d.key)(i, &mut r);
        c.exec(&format!(
            "INSERT INTO `{table}` (K, Q, T, V) VALUES ('{k}', 'q', -1700000000000, 'v')"
        ))
        .unwrap_or_else(|e| panic!("{}: {e:?}", d.name));
        if let (Some(scan), 0) = (d.scan, i % 4) {
            let lit = scan(&k);
            c.rows(&format!(
                "SELECT K FROM `{table}` WHERE K LIKE '{lit}%' LIMIT 1"
            ));
        }
    }
}

/// SHOW OBKV ADVICE FOR the table: (rule, evidence, advice, ddl) rows.
fn advice(c: &mut RawConn, table: &str) -> Vec<(String, String, String, Option<String>)> {
    let text = |v: &Option<Vec<u8>>| {
        String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
    };
    c.rows(&format!("SHOW OBKV ADVICE FOR `{table}`"))
        .iter()
        .map(|r| {
            (
                text(&r[1]),
                text(&r[2]),
                text(&r[3]),
                r[4].as_ref()
                    .map(|v| String::from_utf8_lossy(v).into_owned()),
            )
        })
        .collect()
}

/// Columns of SHOW OBKV PARTITIONS (after `partition`).
const WRITES_RECENT: usize = 2;
const READS_TOTAL: usize = 3;
const WRITES_TOTAL: usize = 4;

/// One column of SHOW OBKV PARTITIONS FOR the table, a count per partition.
fn partition_counts(c: &mut RawConn, table: &str, column: usize) -> Vec<u64> {
    c.rows(&format!("SHOW OBKV PARTITIONS FOR `{table}`"))
        .iter()
        .map(|r| {
            String::from_utf8_lossy(r[column].as_deref().unwrap_or_default())
                .parse::<u64>()
                .unwrap_or(0)
        })
        .collect()
}

/// Writes a design gets. With the default sample (one row in 16) the sketches read about 150
/// of them (standard deviation 12): the findings read from them need 13 sampled writes of a
/// hot user (a third of them: about 50), 25 ordered pairs and 50 rowkeys with a leading field,
/// each more than five standard deviations within what 2,400 writes give.
const WRITES: u64 = 2400;

/// A configuration whose advisor reads every row's rowkey (`advisor.sample_every = 1`): for
/// the tests of what the advisor shows of a few hundred writes (its views, its grants, the
/// rows a prepared statement writes), where the default sample (one row in 16) would read too
/// few. The default sample is what the design test and the counting test run with.
fn every_row() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("every-row.toml");
    std::fs::write(&path, "[advisor]\nsample_every = 1\n").expect("config");
    let path = path.to_str().expect("path").to_string();
    (dir, path)
}

#[test]
fn each_bad_design_gets_its_finding_and_good_ones_none() {
    for kind in BOTH {
        let p = proxy::spawn_binary(&shared(kind).addr, &[]);
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        let db = format!("adv_{}", kind.name());
        c.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
            .expect("db");
        c.exec(&format!("USE {db}")).expect("use");
        for (n, d) in designs().iter().enumerate() {
            let table = create(&mut c, &format!("advg{n}"), d);
            let started = Instant::now();
            drive(&mut c, &table, d, WRITES, 1000 + n as u64);
            let seen = format!("{WRITES} writes");
            // (SHOW OBKV ADVICE reads after every worker has folded in what it saw)
            let a = advice(&mut c, &table);
            let took = started.elapsed();
            match d.expect {
                Some(rule) => {
                    let f = a.iter().find(|f| f.0 == rule).unwrap_or_else(|| {
                        panic!("{} on {}: no {rule} in {a:?}", d.name, kind.name())
                    });
                    // the guide's fix comes with it
                    assert!(!f.2.is_empty(), "{}: {f:?}", d.name);
                    println!(
                        "{} {}: {rule} after {took:?}: {} — {}",
                        kind.name(),
                        d.name,
                        f.1,
                        f.2
                    );
                }
                None => {
                    assert!(
                        a.len() == 1 && a[0].0 == "ok" && a[0].1.starts_with(&seen),
                        "{} on {}: {a:?}",
                        d.name,
                        kind.name()
                    );
                }
            }
            assert!(took < Duration::from_secs(90), "{}: {took:?}", d.name);
        }
        // the design with a time prefix on RANGE: its writes all went to the last partition
        let a = advice(&mut c, "advg0$f");
        assert!(a.iter().any(|f| f.0 == "range_last_partition"), "{a:?}");
        // the hot user's partition is hot, and the user's id is named
        let a = advice(&mut c, "advg3$f");
        assert!(a.iter().any(|f| f.0 == "hot_partition"), "{a:?}");
        assert!(a.iter().any(|f| f.1.contains("00000042")), "{a:?}");
        // SHOW OBKV PARTITIONS counts every write the advisor saw
        let writes = partition_counts(&mut c, "advg7$f", WRITES_TOTAL);
        assert_eq!(writes.len(), 97);
        assert_eq!(writes.iter().sum::<u64>(), WRITES);
    }
}

/// Uniform keys give no hot-partition finding through the proxy: 100 runs over 97 and over 997
/// partitions, on both backends (one thread each). A run reads uniformly random rowkeys, 10 a
/// partition at 97 and 4 a partition at 997 (point gets, 250 a text: each is counted in the
/// partition OceanBase puts its key in, and every one must be counted), then asks SHOW OBKV
/// ADVICE. The table is renamed between runs (within its group, `$f` to `$g` and back), so the
/// advisor forgets it and each run starts from nothing. The old cut-off (largest partition
/// above twice the mean) fires in nearly every run at 997 partitions, 4 a partition.
#[test]
fn uniform_keys_give_no_hot_partition_in_100_runs() {
    std::thread::scope(|s| {
        for kind in BOTH {
            s.spawn(move || uniform_runs(kind));
        }
    });
}

fn uniform_runs(kind: Kind) {
    const RUNS: usize = 100;
    let p = proxy::spawn_binary(&shared(kind).addr, &[]);
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
    let db = format!("adv_uniform_{}", kind.name());
    c.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
        .expect("db");
    c.exec(&format!("USE {db}")).expect("use");
    for (partitions, per_partition) in [(97u64, 10u64), (997, 4)] {
        let group = format!("advu{partitions}");
        let d = Design {
            name: "uniform",
            prefix: None,
            partitioning: format!("PARTITION BY KEY(K) PARTITIONS {partitions}"),
            key: |_, r| format!("{:016x}", r.next()),
            scan: None,
            expect: None,
        };
        c.exec(&format!("DROP TABLE IF EXISTS `{group}$g`"))
            .expect("drop");
        create(&mut c, &group, &d);
        let names = [format!("{group}$f"), format!("{group}$g")];
        let gets = per_partition * partitions;
        let mut r = Rng(partitions);
        let mut fired = Vec::new();
        let mut old_cutoff = 0;
        for run in 0..RUNS {
            let table = &names[run % 2];
            let mut sent = 0;
            while sent < gets {
                let n = (gets - sent).min(250);
                let text: String = (0..n)
                    .map(|i| {
                        let k = (d.key)(i, &mut r);
                        format!("SELECT 1 FROM `{table}` WHERE K = '{k}';")
                    })
                    .collect();
                c.exec(&text).expect("gets");
                sent += n;
            }
            let reads = partition_counts(&mut c, table, READS_TOTAL);
            assert_eq!(reads.len() as u64, partitions, "{}", kind.name());
            assert_eq!(reads.iter().sum::<u64>(), gets, "{} run {run}", kind.name());
            if reads.iter().copied().max().unwrap_or(0) > 2 * per_partition {
                old_cutoff += 1;
            }
            let rows = advice(&mut c, table);
            if let Some(hot) = rows.iter().find(|r| r.0 == "hot_partition") {
                fired.push((run, hot.1.clone()));
            }
            c.exec(&format!(
                "RENAME TABLE `{table}` TO `{}`",
                names[(run + 1) % 2]
            ))
            .expect("rename");
        }
        eprintln!(
            "{} {partitions} partitions: {RUNS} runs, hot_partition fired {} times, the old cut-off {old_cutoff}",
            kind.name(),
            fired.len()
        );
        assert!(fired.is_empty(), "{} {partitions}: {fired:?}", kind.name());
        // the old cut-off is what this replaces: at 997 partitions it cries wolf
        if partitions == 997 {
            assert!(old_cutoff > RUNS / 2, "{} {old_cutoff}", kind.name());
        }
    }
}

/// A user who cannot see a table is not told about it; one who can see it but not read it
/// sees no rowkey.
#[test]
fn advice_follows_the_backends_grants() {
    let kind = Kind::MariaDb;
    let (_dir, every_row) = every_row();
    let p = proxy::spawn_binary(&shared(kind).addr, &["--config", &every_row]);
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
    c.exec("CREATE DATABASE IF NOT EXISTS adv_grants")
        .expect("db");
    c.exec("USE adv_grants").expect("use");
    // the one-hot-user design, in a table group of its own
    let d = &designs()[3];
    create(&mut c, "advh", d);
    drive(&mut c, "advh$f", d, 600, 5);
    let a = advice(&mut c, "advh$f");
    assert!(a.iter().any(|f| f.1.contains("00000042")), "{a:?}");
    for user in ["adv_none", "adv_insert"] {
        c.exec(&format!("DROP USER IF EXISTS {user}@'%'")).ok();
        c.exec(&format!("CREATE USER {user}@'%' IDENTIFIED BY 'pw'"))
            .expect("user");
    }
    // adv_insert may write the table but not read it
    c.exec("GRANT INSERT ON adv_grants.advh$f TO adv_insert@'%'")
        .expect("grant");
    let mut none = RawConn::connect(&p.addr, "adv_none", "pw", None).expect("login");
    let rows = none.rows("SHOW OBKV ADVICE FOR adv_grants.advh$f");
    assert!(rows.is_empty(), "{rows:?}");
    assert!(none.rows("SHOW OBKV ADVICE").is_empty());
    assert!(none
        .rows("SHOW OBKV PARTITIONS FOR adv_grants.advh$f")
        .is_empty());
    let mut writer = RawConn::connect(&p.addr, "adv_insert", "pw", None).expect("login");
    let rows = writer.rows("SHOW OBKV ADVICE FOR adv_grants.advh$f");
    let text: Vec<String> = rows
        .iter()
        .map(|r| String::from_utf8_lossy(r[2].as_deref().unwrap_or_default()).into_owned())
        .collect();
    assert!(text.iter().any(|t| t.contains("(hidden)")), "{text:?}");
    assert!(!text.iter().any(|t| t.contains("00000042")), "{text:?}");
}

/// The page, in headless Chromium: a skewed table's heatmap, whose brightest column is the hot
/// partition (read from the screenshot's pixels). The screenshot is kept in
/// target/obkv-test/advisor-heatmap.png.
#[test]
fn the_page_shows_the_hot_partition_as_the_brightest_column() {
    let kind = Kind::MariaDb;
    let admin = format!("127.0.0.1:{}", free_port());
    let (_dir, every_row) = every_row();
    let p = proxy::spawn_binary(
        &shared(kind).addr,
        &["--admin-listen", &admin, "--config", &every_row],
    );
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
    c.exec("CREATE DATABASE IF NOT EXISTS adv_page")
        .expect("db");
    c.exec("USE adv_page").expect("use");
    // the one-hot-user design, in a table group of its own
    let d = &designs()[3];
    create(&mut c, "advp", d);
    drive(&mut c, "advp$f", d, 900, 9);
    let a = advice(&mut c, "advp$f");
    assert!(a.iter().any(|f| f.0 == "hot_partition"), "{a:?}");
    // the hot partition, by the proxy's own count
    let hot = partition_counts(&mut c, "advp$f", WRITES_RECENT)
        .iter()
        .enumerate()
        .max_by_key(|(_, n)| **n)
        .map(|(i, _)| i)
        .expect("partitions");
    let out_dir = project_root().join("target/obkv-test");
    std::fs::create_dir_all(&out_dir).expect("dir");
    let shot = out_dir.join("advisor-heatmap.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().expect("profile");
    let url = format!("http://{admin}/advisor?table=adv_page.advp%24f");
    let status = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            &format!("--user-data-dir={}", profile.path().display()),
            "--window-size=1400,900",
            &format!("--screenshot={}", shot.display()),
            &url,
        ])
        .output()
        .expect("chromium runs (scripts/install-deps.sh test installs it)");
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&shot).expect("png"),
    ));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    // the writes heatmap: top-left, one column per partition
    let w = obkv_proxy::admin::page::cell_width(97);
    let rows = obkv_proxy::admin::page::CELL_HEIGHT;
    let brightness = |x: usize, y: usize| -> u32 {
        let at = (y * info.width as usize + x) * channels;
        buf[at..at + 3].iter().map(|&b| u32::from(b)).sum()
    };
    let column = |p: usize| -> u32 {
        (0..rows)
            .map(|y| brightness(p * w + w / 2, y))
            .max()
            .unwrap_or(0)
    };
    let brightest = (0..97).max_by_key(|&p| column(p)).expect("columns");
    assert_eq!(brightest, hot, "screenshot {}", shot.display());
    let dim: u32 = (0..97).filter(|&p| p != hot).map(column).max().unwrap_or(0);
    assert!(column(hot) > dim, "{} vs {dim}", column(hot));
    println!("screenshot: {} (hot partition p{hot})", shot.display());
    // what-if: the captured sample replayed offline against this partitioning and others
    // (rowkeys: only to a database account that may read the table)
    let root = Some(("root", ""));
    let (status, _) =
        crate::operations::http_get(&admin, "/advisor/sample?table=adv_page.advp%24f");
    assert_eq!(status, 401);
    let (status, sample) =
        crate::operations::http_get_as(&admin, "/advisor/sample?table=adv_page.advp%24f", root);
    assert_eq!(status, 200);
    assert_eq!(
        sample.lines().count(),
        128,
        "the sample holds advisor.sample keys"
    );
    let keys = out_dir.join("advisor-sample.hex");
    std::fs::write(&keys, &sample).expect("sample");
    let replay = |partitioning: &str, prefix: Option<usize>| -> String {
        let prefix_col = prefix.map_or(String::new(), |n| {
            format!(", K_PREFIX varbinary({n}) GENERATED ALWAYS AS (substring(K, 1, {n}))")
        });
        let ddl = format!(
            "CREATE TABLE advp$f ({COLS}{prefix_col}, PRIMARY KEY (K, Q, T)) {partitioning}"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_obkv-proxy"))
            .args(["partition", "--ddl", &ddl, "--hex", "--keys-file"])
            .arg(&keys)
            .output()
            .expect("partition runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let now = replay("PARTITION BY KEY(K_PREFIX) PARTITIONS 97", Some(8));
    assert!(now.contains("verdict\tSKEWED"), "{now}");
    assert!(now.contains("finding\thot_partition"), "{now}");
    // the same keys hashed whole: the hot user's rows spread
    let whole = replay("PARTITION BY KEY(K) PARTITIONS 97", None);
    assert!(whole.contains("verdict\tok"), "{whole}");
    // a table dropped through the proxy is forgotten
    c.exec("DROP TABLE advp$f").expect("drop");
    let (_, page) = crate::operations::http_get(&admin, "/advisor?table=adv_page.advp%24f");
    assert!(page.contains("No HBase table traffic seen yet"), "{page}");
    let (status, _) =
        crate::operations::http_get_as(&admin, "/advisor/sample?table=adv_page.advp%24f", root);
    assert_eq!(status, 403);
}

/// 50 tables × 997 partitions under load: the advisor's memory, measured as the RSS of a proxy
/// with it on against one with it off under the same traffic, stays within the documented
/// budget (advisor.max_bytes, 8 MiB).
#[test]
fn memory_stays_within_the_budget_with_50_tables_of_997_partitions() {
    let kind = Kind::MariaDb;
    let backend = &shared(kind).addr;
    let dir = tempfile::tempdir().expect("dir");
    let off = dir.path().join("off.toml");
    std::fs::write(&off, "[advisor]\nenabled = false\n").expect("config");
    // one-second epochs: the eight epochs kept fill while the test runs
    let on = dir.path().join("on.toml");
    std::fs::write(&on, "[advisor]\nepoch_seconds = 1\n").expect("config");
    let with = proxy::spawn_binary(backend, &["--config", on.to_str().expect("path")]);
    let without = proxy::spawn_binary(backend, &["--config", off.to_str().expect("path")]);
    let mut c = RawConn::connect(&with.addr, "root", "", None).expect("proxy");
    c.exec("CREATE DATABASE IF NOT EXISTS adv_mem").expect("db");
    c.exec("USE adv_mem").expect("use");
    for i in 0..50 {
        c.exec(&format!("DROP TABLE IF EXISTS advm{i}$f")).ok();
        c.exec(&format!("DROP TABLEGROUP IF EXISTS advm{i}")).ok();
        c.exec(&format!("CREATE TABLEGROUP advm{i}"))
            .expect("group");
        c.exec(&format!(
            "CREATE TABLE advm{i}$f ({COLS}, PRIMARY KEY (K, Q, T)) TABLEGROUP = advm{i} PARTITION BY KEY(K) PARTITIONS 997"
        ))
        .expect("table");
    }
    let base = (with.rss_kib(), without.rss_kib());
    let mut r = Rng(77);
    for p in [&with, &without] {
        let mut c = RawConn::connect(&p.addr, "root", "", Some("adv_mem")).expect("proxy");
        for round in 0..40 {
            for i in 0..50 {
                let k = format!("{:016x}{round}", r.next());
                c.exec(&format!(
                    "INSERT INTO advm{i}$f (K, Q, T, V) VALUES ('{k}', 'q', -1700000000000, 'v')"
                ))
                .expect("insert");
                c.rows(&format!("SELECT K FROM advm{i}$f WHERE K = '{k}'"));
            }
        }
    }
    // every table is kept, and the budget the advisor reports covers them
    let mut c = RawConn::connect(&with.addr, "root", "", Some("adv_mem")).expect("proxy");
    assert_eq!(c.rows("SHOW OBKV PARTITIONS FOR advm49$f").len(), 997);
    let grown_with = with.rss_kib().saturating_sub(base.0);
    let grown_without = without.rss_kib().saturating_sub(base.1);
    let advisor_kib = grown_with.saturating_sub(grown_without);
    println!(
        "RSS growth: {grown_with} KiB with the advisor, {grown_without} KiB without: {advisor_kib} KiB for 50 tables × 997 partitions"
    );
    assert!(advisor_kib <= 8 * 1024, "{advisor_kib} KiB");
    assert!(c.rows("SHOW OBKV PARTITIONS FOR advm0$f").len() == 997);
}

/// SHOW OBKV ADVICE FOR advq$f through mysql_async: (table, rule, evidence, advice, ddl).
async fn advice_of(
    c: &mut mysql_async::Conn,
) -> Vec<(String, String, String, String, Option<String>)> {
    use mysql_async::prelude::*;
    c.query("SHOW OBKV ADVICE FOR advq$f")
        .await
        .expect("advice")
}

/// SHOW OBKV PARTITIONS FOR advq$f through mysql_async: (reads, writes) since first seen.
async fn totals(c: &mut mysql_async::Conn) -> (u64, u64) {
    use mysql_async::prelude::*;
    let parts: Vec<(String, u64, u64, u64, u64)> = c
        .query("SHOW OBKV PARTITIONS FOR advq$f")
        .await
        .expect("partitions");
    (
        parts.iter().map(|p| p.3).sum(),
        parts.iter().map(|p| p.4).sum(),
    )
}

/// A driver's prepared statements (mysql_async, the binary protocol): executions of a prepared
/// INSERT and of a prepared prefix scan are observed like texts — the hot user is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_executions_are_observed() {
    use mysql_async::prelude::*;
    for kind in BOTH {
        let (_dir, every_row) = every_row();
        let p = tokio::task::block_in_place(|| {
            proxy::spawn_binary(&shared(kind).addr, &["--config", &every_row])
        });
        let (host, port) = p.addr.rsplit_once(':').expect("addr");
        let db = format!("adv_prep_{}", kind.name());
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(host.to_string())
            .tcp_port(port.parse().expect("port"))
            .user(Some("root"))
            .prefer_socket(false);
        let mut c = mysql_async::Conn::new(opts).await.expect("proxy");
        c.query_drop(format!("CREATE DATABASE IF NOT EXISTS {db}"))
            .await
            .expect("db");
        c.query_drop(format!("USE {db}")).await.expect("use");
        c.query_drop("DROP TABLE IF EXISTS advq$f")
            .await
            .expect("drop");
        c.query_drop("DROP TABLEGROUP IF EXISTS advq")
            .await
            .expect("drop group");
        c.query_drop("CREATE TABLEGROUP advq").await.expect("group");
        c.query_drop(format!(
            "CREATE TABLE advq$f ({COLS}, K_PREFIX varbinary(8) GENERATED ALWAYS AS (substring(K, 1, 8)), \
             PRIMARY KEY (K, Q, T)) TABLEGROUP = advq PARTITION BY KEY(K_PREFIX) PARTITIONS 97"
        ))
        .await
        .expect("table");
        let insert = c
            .prep("INSERT INTO advq$f (K, Q, T, V) VALUES (?, 'q', -1700000000000, 'v')")
            .await
            .expect("prepare");
        let scan = c
            .prep("SELECT K FROM advq$f WHERE K LIKE ? LIMIT 1")
            .await
            .expect("prepare scan");
        let mut r = Rng(3);
        for i in 0..600u64 {
            let user = if i % 3 == 0 {
                42
            } else {
                r.next() % 100_000_000
            };
            let k = format!("{user:08}{:020}", r.next());
            c.exec_drop(&insert, (k.as_bytes(),)).await.expect("insert");
            if i % 10 == 0 {
                let _: Vec<Vec<u8>> = c
                    .exec(&scan, (format!("{user:08}%").as_bytes(),))
                    .await
                    .expect("scan");
            }
        }
        let rows = advice_of(&mut c).await;
        assert!(
            rows.iter()
                .any(|r| r.1 == "hot_key" && r.2.contains("00000042")),
            "{rows:?}"
        );
        assert_eq!(totals(&mut c).await, (60, 600), "{}", kind.name());
        // a prepared UPDATE's key only placed its row: its partition counts, the key is not
        // taken for a written rowkey (it would be the hot key: a seventh of the writes)
        let update = c
            .prep("UPDATE advq$f SET V = ? WHERE K = ?")
            .await
            .expect("prepare update");
        let placed = "7777777700000000000000000000";
        for _ in 0..100 {
            c.exec_drop(&update, (&b"w"[..], placed.as_bytes()))
                .await
                .expect("update");
        }
        assert_eq!(totals(&mut c).await.1, 700, "{}", kind.name());
        let rows = advice_of(&mut c).await;
        assert!(!rows.iter().any(|r| r.2.contains("77777777")), "{rows:?}");
        drop(c);
    }
}

/// Issue 39: the admin listener shows no rowkey to a caller the backend has not authorised.
/// With the default configuration and with the container's (`admin.rowkeys = "off"`), an
/// unauthenticated GET of every path answers no rowkey written (searched raw and in hex, both
/// cases); a database account that may read the table gets the page with them (and the
/// sample), one that may not gets neither, and a wrong password is refused.
#[test]
fn the_admin_listener_shows_rowkeys_only_to_accounts_the_backend_authorises() {
    let kind = Kind::MariaDb;
    let backend = &shared(kind).addr;
    // an account that may log in but not read the table
    let mut root = RawConn::connect(backend, "root", "", None).expect("direct");
    for sql in [
        "DROP USER IF EXISTS 'adv_noread'@'%'",
        "CREATE USER 'adv_noread'@'%' IDENTIFIED BY 'pw-noread'",
    ] {
        root.exec(sql).expect(sql);
    }
    let table = "advs$f";
    let path_table = "adv_secret.advs%24f";
    // phone-number rowkeys, one of them hot (a hot_key finding names it to a reader)
    let hot = "phone:+15550001234";
    let keys: Vec<String> = (0..300)
        .map(|i| {
            if i % 2 == 0 {
                hot.to_string()
            } else {
                format!("phone:+1555{:07}", 1_000_000 + i * 7919 % 8_999_999)
            }
        })
        .collect();
    let hex = |s: &str| -> [String; 2] {
        let h: String = s.bytes().map(|b| format!("{b:02x}")).collect();
        [h.clone(), h.to_uppercase()]
    };
    let leaks = |body: &str| -> Vec<String> {
        keys.iter()
            .filter(|k| {
                body.contains(k.as_str()) || hex(k).iter().any(|h| body.contains(h.as_str()))
            })
            .cloned()
            .collect()
    };
    let paths = [
        "/metrics".to_string(),
        "/livez".into(),
        "/readyz".into(),
        "/advisor".into(),
        format!("/advisor?table={path_table}"),
        format!("/advisor/sample?table={path_table}"),
        "/nothing".into(),
    ];
    for (config, rowkeys) in [("default", None), ("container", Some("off"))] {
        let admin = format!("127.0.0.1:{}", free_port());
        let (_dir, every_row) = every_row();
        let mut args = vec!["--admin-listen", admin.as_str(), "--config", &every_row];
        if let Some(r) = rowkeys {
            args.extend(["--admin-rowkeys", r]);
        }
        let p = proxy::spawn_binary(backend, &args);
        let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
        c.exec("CREATE DATABASE IF NOT EXISTS adv_secret")
            .expect("db");
        c.exec("USE adv_secret").expect("use");
        let d = Design {
            name: "phones",
            prefix: None,
            partitioning: "PARTITION BY KEY(K) PARTITIONS 97".into(),
            key: |_, _| String::new(),
            scan: None,
            expect: None,
        };
        create(&mut c, "advs", &d);
        for (i, k) in keys.iter().enumerate() {
            c.exec(&format!(
                "INSERT INTO `{table}` (K, Q, T, V) VALUES ('{k}', 'q{i}', -1700000000000, 'v')"
            ))
            .expect("insert");
        }
        // the advisor holds the hot key (through SQL, to the user who may read it)
        let a = advice(&mut c, table);
        assert!(
            a.iter().any(|f| f.0 == "hot_key" && f.1.contains(hot)),
            "{a:?}"
        );
        for path in &paths {
            let (status, body) = crate::operations::http_get(&admin, path);
            assert!(
                leaks(&body).is_empty(),
                "{config}: {path} ({status}) shows {:?}",
                leaks(&body)
            );
        }
        let (_, page) =
            crate::operations::http_get(&admin, &format!("/advisor?table={path_table}"));
        assert!(
            page.contains("advs$f") && page.contains("hot_key"),
            "{config}: the page without rowkeys: {page}"
        );
        let (status, _) =
            crate::operations::http_get(&admin, &format!("/advisor/sample?table={path_table}"));
        assert_eq!(
            status,
            if rowkeys.is_some() { 403 } else { 401 },
            "{config}"
        );
        // an account the backend authorises
        let as_root = Some(("root", ""));
        let (status, page) = crate::operations::http_get_as(
            &admin,
            &format!("/advisor?table={path_table}"),
            as_root,
        );
        let (sample_status, sample) = crate::operations::http_get_as(
            &admin,
            &format!("/advisor/sample?table={path_table}"),
            as_root,
        );
        if rowkeys.is_none() {
            assert_eq!(status, 200);
            assert!(
                page.contains(hot),
                "an authorised reader sees the hot key: {page}"
            );
            assert_eq!(sample_status, 200);
            assert!(!leaks(&sample).is_empty(), "{sample}");
            // an account that may not read the table: neither the table nor its rowkeys
            let no = Some(("adv_noread", "pw-noread"));
            let (status, page) = crate::operations::http_get_as(&admin, "/advisor", no);
            assert_eq!(status, 200);
            assert!(
                leaks(&page).is_empty() && !page.contains("advs$f"),
                "{page}"
            );
            let (status, body) = crate::operations::http_get_as(
                &admin,
                &format!("/advisor/sample?table={path_table}"),
                no,
            );
            assert_eq!(status, 403, "{body}");
            // a wrong password
            let (status, body) =
                crate::operations::http_get_as(&admin, "/advisor", Some(("root", "wrong")));
            assert_eq!(status, 401, "{body}");
            assert!(leaks(&body).is_empty());
        } else {
            // the container's: never, credentials or not
            assert_eq!(status, 200);
            assert!(leaks(&page).is_empty(), "{page}");
            assert_eq!(sample_status, 403);
            assert!(leaks(&sample).is_empty());
        }
        c.exec(&format!("DROP TABLE `{table}`")).expect("drop");
    }
    root.exec("DROP USER 'adv_noread'@'%'").expect("drop user");
}

/// Issue 39: the advisor counts rows, not statements. 40 INSERTs of 50 rows each on a RANGE
/// table led by an ascending timestamp: 2,000 writes, and `monotonic_key`; on KEY(K)
/// PARTITIONS 97 the per-partition counts sum to the rows written, by text batches, a
/// 1,000-row statement (past the rows whose rowkeys are read) and a LOAD DATA LOCAL file; a
/// batch the proxy refuses, one the backend refuses (a duplicate key) and a transaction
/// rolled back add nothing; a committed one adds its rows. Both backends.
#[test]
fn the_advisor_counts_every_row_written_and_only_rows_that_stay() {
    std::thread::scope(|s| {
        for kind in BOTH {
            s.spawn(move || counts_rows_on(kind));
        }
    });
}

fn counts_rows_on(kind: Kind) {
    let p = proxy::spawn_binary(&shared(kind).addr, &[]);
    let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
    let db = format!("adv_rows_{}", kind.name());
    c.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
        .expect("db");
    c.exec(&format!("USE {db}")).expect("use");
    let sum =
        |c: &mut RawConn, t: &str| -> u64 { partition_counts(c, t, WRITES_TOTAL).iter().sum() };
    let batch = |from: u64, n: u64, key: &dyn Fn(u64) -> String| -> String {
        let rows: Vec<String> = (from..from + n)
            .map(|i| format!("('{}', 'q', -1700000000000, 'v')", key(i)))
            .collect();
        rows.join(", ")
    };
    // a timestamp-led rowkey on RANGE, loaded in batches
    let range = &designs()[0];
    let t = create(&mut c, "advr0", range);
    let ts = |i: u64| format!("{}|{:06}", 1_750_000_000_000 + i, i % 1_000_000);
    for b in 0..40 {
        c.exec(&format!(
            "INSERT INTO `{t}` (K, Q, T, V) VALUES {}",
            batch(b * 50, 50, &ts)
        ))
        .expect("batch");
    }
    assert_eq!(
        sum(&mut c, &t),
        2000,
        "{}: RANGE, 40 × 50 rows",
        kind.name()
    );
    let a = advice(&mut c, &t);
    assert!(
        a.iter().any(|f| f.0 == "monotonic_key"),
        "{}: {a:?}",
        kind.name()
    );

    // KEY(K) PARTITIONS 97: every row in its partition
    let uniform = &designs()[7];
    let t = create(&mut c, "advr1", uniform);
    let hexkey = |i: u64| format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut written = 0u64;
    for b in 0..10 {
        c.exec(&format!(
            "INSERT INTO `{t}` (K, Q, T, V) VALUES {}",
            batch(b * 50, 50, &hexkey)
        ))
        .expect("batch");
        written += 50;
    }
    // one statement of 1,000 rows: its first rows' rowkeys read, the rest counted
    c.exec(&format!(
        "INSERT INTO `{t}` (K, Q, T, V) VALUES {}",
        batch(10_000, 1000, &hexkey)
    ))
    .expect("a large batch");
    written += 1000;
    // a LOAD DATA LOCAL file of 300 rows
    let file: String = (20_000..20_300u64)
        .map(|i| format!("{}\tq\t-1700000000000\tv\n", hexkey(i)))
        .collect();
    crate::writes::load_local(
        &mut c,
        &format!("LOAD DATA LOCAL INFILE '/tmp/rows.tsv' INTO TABLE `{t}` (K, Q, T, V)"),
        file.as_bytes(),
        4096,
    )
    .expect("load");
    written += 300;
    let counts = partition_counts(&mut c, &t, WRITES_TOTAL);
    assert_eq!(counts.iter().sum::<u64>(), written, "{}", kind.name());
    // each partition's count is the rows the model places there
    let model = obkv_proxy::hbase::partition::Partitioning::Key {
        prefix_len: None,
        partitions: 97,
    };
    let mut expected = vec![0u64; 97];
    for i in (0..500).chain(10_000..11_000).chain(20_000..20_300) {
        expected[model.partition_of(hexkey(i).as_bytes()).expect("placed") as usize] += 1;
    }
    assert_eq!(counts, expected, "{}: per partition", kind.name());
    // refused by the proxy (a positive T in one row): nothing counted
    let mut bad = batch(30_000, 49, &hexkey);
    bad.push_str(", ('k', 'q', 5, 'v')");
    assert!(c
        .exec(&format!("INSERT INTO `{t}` (K, Q, T, V) VALUES {bad}"))
        .is_err());
    // refused by the backend (a key written already): nothing counted
    let dup = batch(0, 50, &hexkey);
    let e = c.exec(&format!("INSERT INTO `{t}` (K, Q, T, V) VALUES {dup}"));
    assert_eq!(e.map_err(|e| e.0), Err(1062), "{}", kind.name());
    // a transaction rolled back (one rowkey: one partition), then one committed
    let one = |n: u64, tag: &str| -> String {
        (0..n)
            .map(|i| format!("('txkey', '{tag}{i}', -1700000000000, 'v')"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for sql in [
        "BEGIN".to_string(),
        format!("INSERT INTO `{t}` (K, Q, T, V) VALUES {}", one(5, "r")),
        "ROLLBACK".into(),
    ] {
        c.exec(&sql).expect("rolled back transaction");
    }
    assert_eq!(
        sum(&mut c, &t),
        written,
        "{}: refusals and a rollback add nothing",
        kind.name()
    );
    for sql in [
        "BEGIN".to_string(),
        format!("INSERT INTO `{t}` (K, Q, T, V) VALUES {}", one(7, "c")),
        "COMMIT".into(),
    ] {
        c.exec(&sql).expect("committed transaction");
    }
    assert_eq!(
        sum(&mut c, &t),
        written + 7,
        "{}: a commit adds its rows",
        kind.name()
    );
    for t in ["advr0$f", "advr1$f"] {
        c.exec(&format!("DROP TABLE `{t}`")).expect("drop");
    }
}
