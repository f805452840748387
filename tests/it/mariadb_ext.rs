//! MariaDB's protocol extensions pass through (issue 7, part 1): a client that asks for
//! progress reports, bulk operations, extended metadata and metadata caching gets the same
//! bytes through the proxy as directly.

use obkv_proxy::protocol::constants::{com, ext};
use obkv_proxy::protocol::response::ResponseKind;

use crate::common::proxy;
use crate::common::raw::{Frame, RawConn, DEFAULT_CAPS};
use crate::common::{shared, Kind};

const ALL_EXT: u32 =
    ext::PROGRESS | ext::STMT_BULK_OPERATIONS | ext::EXTENDED_METADATA | ext::CACHE_METADATA;

fn connect(addr: &str, db: Option<&str>) -> RawConn {
    let c = RawConn::connect_ext(addr, "root", "", db, DEFAULT_CAPS, ALL_EXT).expect("login");
    assert_eq!(
        c.ext, ALL_EXT,
        "{addr} did not agree to MariaDB's extended capabilities"
    );
    c
}

/// One step of the scenario.
enum Step {
    Text(&'static str),
    Prepare(&'static str),
    /// COM_STMT_EXECUTE of the last prepared statement with one string parameter (or none).
    Execute(Option<&'static [u8]>),
    /// COM_STMT_BULK_EXECUTE of the last prepared statement: one string parameter per row,
    /// None = NULL.
    Bulk(&'static [Option<&'static [u8]>]),
}

fn lenenc_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(s.len() as u8); // the scenario's values are short
    out.extend_from_slice(s);
}

fn execute(id: u32, param: Option<&[u8]>) -> Vec<u8> {
    let mut p = vec![com::STMT_EXECUTE];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    if let Some(v) = param {
        p.push(0); // null bitmap
        p.push(1); // types follow
        p.extend_from_slice(&[0xfd, 0]);
        lenenc_str(&mut p, v);
    }
    p
}

fn bulk(id: u32, rows: &[Option<&[u8]>]) -> Vec<u8> {
    let mut p = vec![com::STMT_BULK_EXECUTE];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&128u16.to_le_bytes()); // SEND_TYPES_TO_SERVER
    p.extend_from_slice(&[0xfd, 0]);
    for r in rows {
        match r {
            Some(v) => {
                p.push(0); // indicator NONE: a value follows
                lenenc_str(&mut p, v);
            }
            None => p.push(1), // NULL
        }
    }
    p
}

fn run(addr: &str, steps: &[Step]) -> Vec<Vec<Frame>> {
    let mut admin = RawConn::connect(addr, "root", "", None).expect("login");
    admin.must("DROP DATABASE IF EXISTS obkv_ext");
    admin.must("CREATE DATABASE obkv_ext");
    let mut c = connect(addr, Some("obkv_ext"));
    let mut stmt = 0u32;
    let mut out = Vec::new();
    for s in steps {
        let mut frames = match s {
            Step::Text(sql) => c.query(sql.as_bytes()).expect("answered"),
            Step::Prepare(sql) => {
                let mut cmd = vec![com::STMT_PREPARE];
                cmd.extend_from_slice(sql.as_bytes());
                let f = c.command(&cmd, ResponseKind::Prepare).expect("prepared");
                assert_eq!(
                    f[0].1[0],
                    0,
                    "prepare {sql}: {:?}",
                    String::from_utf8_lossy(&f[0].1)
                );
                stmt = u32::from_le_bytes([f[0].1[1], f[0].1[2], f[0].1[3], f[0].1[4]]);
                f
            }
            Step::Execute(p) => c
                .command(&execute(stmt, *p), ResponseKind::Execute)
                .expect("executed"),
            Step::Bulk(rows) => c
                .command(&bulk(stmt, rows), ResponseKind::Execute)
                .expect("bulk executed"),
        };
        if matches!(s, Step::Prepare(_)) {
            // the id is the backend's counter, which other sessions move
            frames[0].1[1..5].fill(0);
        }
        out.push(frames);
    }
    out
}

#[test]
fn mariadb_extensions_are_byte_identical_through_the_proxy() {
    let backend = shared(Kind::MariaDb);
    let steps = [
        Step::Text("CREATE TABLE e (id INT PRIMARY KEY AUTO_INCREMENT, j JSON, ip INET6, u UUID, v VARCHAR(20))"),
        Step::Text("INSERT INTO e (j, ip, u, v) VALUES ('{\"a\": 1}', '::1', '123e4567-e89b-12d3-a456-426614174000', 'x')"),
        // extended metadata: JSON, inet6 and uuid are named in the column definitions
        Step::Text("SELECT * FROM e"),
        Step::Prepare("SELECT j, ip, u, v FROM e WHERE v = ?"),
        // metadata caching: the executes skip the column definitions the prepare gave
        Step::Execute(Some(b"x")),
        Step::Execute(Some(b"x")),
        Step::Execute(Some(b"none")),
        // array binding: three rows in one round trip
        Step::Prepare("INSERT INTO e (v) VALUES (?)"),
        Step::Bulk(&[Some(b"r1"), Some(b"r2"), None]),
        // bulk with RETURNING answers with a result set
        Step::Prepare("INSERT INTO e (v) VALUES (?) RETURNING id, v"),
        Step::Bulk(&[Some(b"s1"), Some(b"s2")]),
        Step::Text("SELECT id, v FROM e ORDER BY id"),
        Step::Execute(None),
    ];
    let direct = run(&backend.addr, &steps);
    let p = proxy::start(proxy::config_for(&backend.addr));
    let proxied = run(&p.addr, &steps);
    for (i, (d, q)) in direct.iter().zip(&proxied).enumerate() {
        assert!(d == q, "step {i} differs\ndirect: {d:?}\nproxy:  {q:?}");
    }
    // the scenario exercised what it claims
    let select = &direct[2];
    let defs: Vec<u8> = select.iter().flat_map(|(_, p)| p.clone()).collect();
    for word in [&b"json"[..], b"inet6", b"uuid"] {
        assert!(
            defs.windows(word.len()).any(|w| w == word),
            "no extended metadata for {}",
            String::from_utf8_lossy(word)
        );
    }
    let count_packet = |f: &Vec<Frame>| f.first().map(|(_, p)| p.clone()).unwrap_or_default();
    // the prepare delivered the column definitions: every execute skips them
    for (i, step) in direct.iter().enumerate().take(7).skip(4) {
        assert_eq!(count_packet(step), vec![4, 0], "execute {i} skips metadata");
    }
    assert_eq!(direct[8][0].1[0], 0x00, "bulk insert answered OK");
    assert_eq!(
        direct[10].len(),
        2 + 1 + 2 + 1,
        "RETURNING: count, 2 columns, 2 rows, end"
    );
    let rows = direct[11].len();
    assert_eq!(rows, 1 + 2 + 6 + 1, "six rows inserted in all");
}

#[test]
fn progress_reports_reach_the_client_before_the_answer() {
    let backend = shared(Kind::MariaDb);
    let mut admin = RawConn::connect(&backend.addr, "root", "", None).expect("login");
    admin.must("CREATE DATABASE IF NOT EXISTS obkv_progress");
    admin.must("DROP TABLE IF EXISTS obkv_progress.big");
    admin.must("CREATE TABLE obkv_progress.big (id INT PRIMARY KEY, pad CHAR(100))");
    assert!(admin.query_ok(
        "INSERT INTO obkv_progress.big SELECT seq, REPEAT('x', 100) FROM obkv_progress.seq_1_to_300000"
    ));
    // reports every second (the global value bounds the session's)
    admin.must("SET GLOBAL progress_report_time = 1");
    let p = proxy::start(proxy::config_for(&backend.addr));
    let mut through = Vec::new();
    let mut answers = Vec::new();
    for addr in [&backend.addr, &p.addr] {
        let mut c = connect(addr, Some("obkv_progress"));
        let mut reports = 0;
        // a copying ALTER long enough for reports; repeated until one came (a fast machine)
        for _ in 0..5 {
            let frames = c
                .query(b"ALTER TABLE big FORCE, ALGORITHM=COPY")
                .expect("answered");
            let (last, before) = frames.split_last().expect("frames");
            assert_eq!(last.1[0], 0x00, "ALTER answered OK at the end");
            // progress packets as MariaDB sends them: 0xFF, code 0xFFFF, a count of strings (1),
            // stage, max stage, progress (3 bytes), the stage name (length-prefixed)
            for (_, f) in before {
                assert_eq!(
                    &f[..4],
                    &[0xff, 0xff, 0xff, 1],
                    "only progress before the answer"
                );
                let (stage, max_stage) = (f[4], f[5]);
                assert!(stage >= 1 && stage <= max_stage, "{f:?}");
                assert_eq!(f.len(), 10 + usize::from(f[9]), "{f:?}");
            }
            reports += before.len();
            answers.push(last.1.clone());
            if reports > 0 {
                break;
            }
        }
        through.push(reports);
    }
    // the answer after the reports is the same bytes both ways (the reports themselves vary with
    // timing from run to run, directly as much as through the proxy)
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    admin.must("SET GLOBAL progress_report_time = 5");
    assert!(
        through[0] > 0,
        "the backend sent no progress report directly"
    );
    assert!(through[1] > 0, "no progress report came through the proxy");
    // and the session goes on
    let mut c = connect(&p.addr, Some("obkv_progress"));
    assert_eq!(c.scalar("SELECT COUNT(*) FROM big"), "300000");
}
