//! EXPLAIN OBKV of writes (issue 39): an INSERT's rows, each with the partition it lands in
//! (read back from the backend by partition after the INSERT runs), a LOAD DATA LOCAL file's
//! rows (read from the client, nothing written), the rules' verdict without running it, and
//! why a prefix scan is not rewritten, in the user's terms. Both backends.

use crate::common::proxy;
use crate::common::raw::RawConn;
use crate::common::{shared, BOTH};

type Row = Vec<Option<Vec<u8>>>;

fn text(r: &Row, i: usize) -> String {
    String::from_utf8_lossy(r[i].as_deref().unwrap_or(b"NULL")).into_owned()
}

const STATEMENT: usize = 2;
const PARTITIONS: usize = 3;
const NOTE: usize = 5;

#[test]
fn explain_obkv_shows_where_each_row_of_a_write_goes() {
    std::thread::scope(|s| {
        for kind in BOTH {
            s.spawn(move || {
                let backend = shared(kind).addr.clone();
                let p = proxy::start(proxy::config_for(&backend));
                let db = format!("explain_{}", kind.name());
                let mut c = RawConn::connect(&p.addr, "root", "", None).expect("proxy");
                for sql in [
                    format!("DROP DATABASE IF EXISTS {db}"),
                    format!("CREATE DATABASE {db}"),
                    format!("USE {db}"),
                    "DROP TABLEGROUP IF EXISTS exg".into(),
                    "CREATE TABLEGROUP exg".into(),
                    "CREATE TABLE exg$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1048576) NOT NULL, \
                     K_PREFIX varbinary(4) GENERATED ALWAYS AS (substring(K, 1, 4)), PRIMARY KEY (K, Q, T)) \
                     TABLEGROUP = exg PARTITION BY KEY(K_PREFIX) PARTITIONS 97".into(),
                ] {
                    c.exec(&sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
                }
                let keys = ["row1", "zzz9", "mmmm-00"];
                let values: Vec<String> = keys
                    .iter()
                    .map(|k| format!("('{k}', 'q', -1700000000000, 'v')"))
                    .collect();
                let insert = format!("INSERT INTO exg$f (K, Q, T, V) VALUES {}", values.join(", "));
                let rows = c.rows(&format!("EXPLAIN OBKV {insert}"));
                let ctx = kind.name();
                assert_eq!(rows.len(), 4, "{ctx}: the statement and its 3 rows: {rows:?}");
                assert!(text(&rows[0], NOTE).starts_with("runs"), "{ctx}: {}", text(&rows[0], NOTE));
                // nothing was written
                let mut direct = RawConn::connect(&backend, "root", "", Some(&db)).expect("direct");
                assert_eq!(direct.scalar("SELECT COUNT(*) FROM exg$f"), "0");
                let explained: Vec<String> = rows[1..].iter().map(|r| text(r, PARTITIONS)).collect();
                for (r, k) in rows[1..].iter().zip(keys) {
                    assert_eq!(text(r, STATEMENT), format!("row {}: K = '{k}'", 1 + keys.iter().position(|x| *x == k).unwrap()));
                }
                // run it: each row is read back from the partition EXPLAIN named
                c.exec(&insert).expect("insert");
                for (k, part) in keys.iter().zip(&explained) {
                    let found = direct.scalar(&format!("SELECT COUNT(*) FROM exg$f PARTITION ({part}) WHERE K = '{k}'"));
                    assert_eq!(found, "1", "{ctx}: {k} in {part}");
                }
                // the statement row names every row's partition
                let mut all: Vec<String> = explained.clone();
                all.sort_by_key(|p| p[1..].parse::<u32>().unwrap());
                all.dedup();
                assert_eq!(text(&rows[0], PARTITIONS), all.join(","), "{ctx}");

                // a refusal is said, and nothing runs
                let rows = c.rows("EXPLAIN OBKV INSERT INTO exg$f (K, Q, T, V) VALUES ('a', 'q', 5, 'v')");
                assert!(text(&rows[0], NOTE).starts_with("refused: OBKV-HBase rule C4"), "{ctx}: {rows:?}");
                assert!(text(&rows[1], NOTE).contains("C4"), "{ctx}");

                // 150 rows: 100 listed, then the rest counted
                let many: Vec<String> = (0..150).map(|i| format!("('k{i:04}', 'q', -1700000000000, 'v')")).collect();
                let rows = c.rows(&format!("EXPLAIN OBKV INSERT INTO exg$f (K, Q, T, V) VALUES {}", many.join(",")));
                assert_eq!(rows.len(), 1 + 100 + 1, "{ctx}");
                assert_eq!(text(&rows[101], STATEMENT), "rows 101 to 150 (50 more)", "{ctx}");

                // a LOAD DATA LOCAL file: its rows read from the client, nothing written
                let file = b"lf01\tq\t-1700000000000\tv\nlf02\tq\t-1700000000000\tv\n";
                let frames = explain_load(&mut c, "EXPLAIN OBKV LOAD DATA LOCAL INFILE 'x.tsv' INTO TABLE exg$f (K, Q, T, V)", file);
                assert_eq!(frames.len(), 3, "{ctx}: {frames:?}");
                assert!(text(&frames[0], NOTE).starts_with("runs"), "{ctx}: {frames:?}");
                assert_eq!(text(&frames[1], STATEMENT), "row 1: K = 'lf01'");
                assert_eq!(direct.scalar("SELECT COUNT(*) FROM exg$f WHERE K LIKE 'lf%'"), "0");

                // a prefix scan not rewritten: why, in bytes
                let rows = c.rows("EXPLAIN OBKV SELECT * FROM exg$f WHERE K LIKE 'abc%'");
                let note = text(&rows[0], NOTE);
                assert!(
                    note.contains("'abc' is 3 bytes, the prefix column holds 4 bytes") && note.contains("1 byte short"),
                    "{ctx}: {note}"
                );
            });
        }
    });
}

/// EXPLAIN OBKV of a LOAD DATA LOCAL over the wire: the statement, the client's file at the
/// proxy's request, then the answer's rows.
fn explain_load(c: &mut RawConn, sql: &str, file: &[u8]) -> Vec<Row> {
    use obkv_proxy::protocol::response::ResponseKind;
    let mut q = vec![0x03];
    q.extend_from_slice(sql.as_bytes());
    c.write_frame(0, &q).expect("sent");
    let (seq, p) = c.read_frame().expect("answered");
    assert_eq!(p.first(), Some(&0xfb), "a LOCAL INFILE request");
    c.write_frame(seq + 1, file).expect("file");
    c.write_frame(seq + 2, &[]).expect("end");
    let frames = c.read_response(ResponseKind::Query).expect("the answer");
    assert_eq!(frames[0].0, seq + 3, "the answer follows the file");
    let ncols = frames[0].1[0] as usize;
    let skip =
        1 + ncols + usize::from(c.caps & obkv_proxy::protocol::constants::cap::DEPRECATE_EOF == 0);
    frames[skip..frames.len() - 1]
        .iter()
        .map(|(_, p)| {
            let mut r = obkv_proxy::protocol::wire::Reader::new(p);
            (0..ncols)
                .map(|_| {
                    if r.remaining().first() == Some(&0xfb) {
                        r.u8();
                        None
                    } else {
                        r.lenenc_bytes().map(<[u8]>::to_vec)
                    }
                })
                .collect()
        })
        .collect()
}
