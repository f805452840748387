//! The write stage of the router (issue 10), pure: for one statement on an HBase table it
//! checks the cells an INSERT / REPLACE / UPDATE writes against the cell rules
//! (`hbase::cells`), fills in T where an INSERT leaves it out (one value per statement, in the
//! timestamp convention), and says where the statement's rows are (`Touch`) so that
//! `guard` can keep a transaction inside one partition of one table group.
//!
//! Placement is always OceanBase's (the model's `Partitioning::partition_of`), on every backend:
//! an application that passes here stays inside one partition when it moves to OceanBase.

mod checked;
mod execution;
mod guard;
mod load;
mod statement;

pub use checked::{
    Checked, NeedCharset, Place, RowTrace, RowsSeen, Touch, TracedRow, WriteRules, KEYED_ROWS,
};
pub use execution::{
    check_execution, leaves_t_out, plan_assigned, plan_insert, Bound, Gathered, Shape, WritePlan,
};
pub use guard::{guard, verdict, Guarded, Outcome, Txn};
pub use load::{load_fill_t, load_unchecked, LoadCheck, LoadPlan};
pub use statement::{
    check_assigned, check_dml, check_insert, check_insert_lexed, unreadable_write, FillT,
};

/// What a write that may run shows the rowkey advisor. With `keys` (the rows are an
/// INSERT's, an execution's, a LOAD file's: `rows`): every row, in its partition — the first
/// `room` with their rowkeys (one `Observed::Writes`, a `Write` when there is one), their list
/// no larger than they are, the rest counted per partition
/// (`Observed::Counts`), so that the counts per partition are the rows written whatever their
/// number. Without (an UPDATE or DELETE, whose rows the text does not give): one row in each
/// partition it writes (`touch`).
pub fn observed(
    touch: Option<Touch>,
    rows: RowsSeen,
    keys: bool,
    room: usize,
) -> impl Iterator<Item = crate::hbase::advisor::Observed> {
    // a write whose rows are not placed (Unknown) shows nothing
    let places = match touch {
        Some(Touch::At(places)) => places,
        _ => return observed_rows(Vec::new(), RowsSeen::default(), room),
    };
    if keys {
        observed_rows(Vec::new(), rows, room)
    } else {
        observed_rows(places, RowsSeen::default(), room)
    }
}

/// `observed`: one row in each of `places`, then `rows`.
fn observed_rows(
    places: Vec<Place>,
    rows: RowsSeen,
    room: usize,
) -> impl Iterator<Item = crate::hbase::advisor::Observed> {
    use crate::hbase::advisor::{Key, Observed};
    let placed = places
        .into_iter()
        .take(Key::MAX_ROWS)
        .map(|p| Observed::Placed {
            partition: p.partition,
        });
    let RowsSeen {
        mut keyed,
        mut counted,
        mut unplaced,
        alone,
        distinct,
        longest,
        ..
    } = rows;
    let over = keyed.split_off(keyed.len().min(room));
    // one row alone: one observation with no list (a one-row INSERT's, whether the sample
    // took its rowkey or not)
    if let ([update], true) = (&*distinct, counted.is_empty() && unplaced == 0) {
        let one = match (keyed.len(), over.len(), alone) {
            (1, 0, None) => keyed.pop().map(|(partition, key)| Observed::Write {
                partition,
                key,
                distinct: *update,
            }),
            (0, 0, Some(partition)) => Some(Observed::Row {
                partition,
                distinct: *update,
                len: longest,
            }),
            (0, 1, None) => over.first().map(|(partition, _)| Observed::Row {
                partition: *partition,
                distinct: *update,
                len: longest,
            }),
            _ => None,
        };
        if one.is_some() {
            return placed.chain(one).chain(None).chain(None);
        }
    }
    let rest = over.iter().map(|(p, _)| *p).chain(alone);
    for p in rest {
        match p {
            Some(p) => {
                let p = p as usize;
                if counted.len() <= p {
                    counted.resize(p + 1, 0);
                }
                if let Some(c) = counted.get_mut(p) {
                    *c = c.saturating_add(1);
                }
            }
            None => unplaced = unplaced.saturating_add(1),
        }
    }
    // the partitions counted, eight at a time past those with none (a batch's rows are in a
    // few of a table's partitions: looking at each of 97 one by one cost a 100-row batch
    // about 7 instructions a row)
    let mut list = smallvec::SmallVec::<[(u32, u32); 8]>::new();
    for (i, chunk) in counted.chunks(8).enumerate() {
        if chunk.iter().all(|n| *n == 0) {
            continue;
        }
        for (j, n) in chunk.iter().enumerate() {
            if *n > 0 {
                list.push((u32::try_from(i * 8 + j).unwrap_or(u32::MAX), *n));
            }
        }
    }
    // (one allocation of the size needed)
    let counts: Box<[(u32, u32)]> = Box::from(&list[..]);
    let counted =
        (!counts.is_empty() || unplaced > 0).then_some(Observed::Counts { counts, unplaced });
    // the keyed rows as one observation, their list moved whole
    let written = if keyed.is_empty() {
        None
    } else {
        // (what the bounds on observations count is the rows: the list holds little more
        // room than it has rows, a shrink that glibc does in place; the room a sample's list
        // was given, about twice what it takes, is kept)
        if keyed.capacity() > 2 * keyed.len() + 8 {
            keyed.shrink_to_fit();
        }
        Some(Observed::Writes(keyed))
    };
    let keys = (!distinct.is_empty()).then_some(Observed::Keys { distinct, longest });
    placed.chain(written).chain(counted).chain(keys)
}

#[cfg(test)]
mod tests {
    use super::checked::{place, MAX_FINDINGS};
    use super::*;
    use crate::config::Transactions;
    use crate::engine::prefix_scan::ConnCharset;
    use crate::hbase::advisor::Sampling;
    use crate::hbase::cells;
    use crate::hbase::partition::Partitioning;
    use crate::hbase::rules::{Enforcement, Finding, Rule};
    use crate::hbase::schema::{Placement, TableSchema};
    use crate::sql::dml::Dml;
    use crate::sql::scan::Dialect;
    use crate::sql::splice::Splice;

    const NOW: i64 = 1_763_700_000_000;

    fn schema(partitioning: Partitioning) -> TableSchema {
        let prefix_column = match &partitioning {
            Partitioning::Key {
                prefix_len: Some(n),
                ..
            } => Some(("K_PREFIX".to_string(), *n)),
            _ => None,
        };
        TableSchema {
            schema: "hb".into(),
            name: "g$f".into(),
            partitioning,
            prefix_column,
            placement: Placement::MySqlFamily,
            grouped: true,
            attrs: crate::hbase::ttl::Attributes::default(),
            limits: cells::CellLimits {
                k: Some(16),
                q: Some(8),
                v: Some(32),
                prefix_column: Some("K_PREFIX".into()),
                columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
            },
        }
    }

    fn prefixed() -> TableSchema {
        schema(Partitioning::Key {
            prefix_len: Some(4),
            partitions: 13,
        })
    }

    fn rules() -> WriteRules {
        WriteRules {
            now_ms: NOW,
            ..WriteRules::default()
        }
    }

    fn insert(sql: &str) -> (Checked, Vec<u8>) {
        insert_with(sql, &rules())
    }

    fn insert_with(sql: &str, rules: &WriteRules) -> (Checked, Vec<u8>) {
        let mut splice = Splice::new();
        let c = check_insert(
            sql.as_bytes(),
            Dialect::default(),
            &prefixed(),
            rules,
            Some(ConnCharset::Utf8),
            true,
            &mut splice,
            0,
            FillT::Literal,
            None,
        )
        .expect("no charset needed");
        (c, splice.apply(sql.as_bytes()))
    }

    fn rules_of(c: &Checked) -> Vec<Rule> {
        c.findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn inserts_are_checked_row_by_row() {
        let (c, _) =
            insert("INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, 'v')");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1, 'v'), ('', 'q', -1763700000000, 'v')");
        assert_eq!(rules_of(&c), [Rule::C5, Rule::C1]);
        assert!(c.findings[1].message.contains("row 2"));
        let (c, _) = insert("INSERT INTO g$f VALUES ('row1', 'q', 1763700000000, NULL, DEFAULT), ('', 'q', -1763700000000, 'v')");
        assert_eq!(
            rules_of(&c),
            [Rule::C3, Rule::C4],
            "strict stops after the first row with an error"
        );
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('row1', 'q', -1763700000000, 'v', 'rowX')");
        assert_eq!(rules_of(&c), [Rule::C6]);
        let (c, _) = insert(
            "INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, CONCAT('a', 'b'))",
        );
        assert_eq!(rules_of(&c), [Rule::C8]);
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) SELECT K, Q, T, V FROM other");
        assert_eq!(rules_of(&c), [Rule::C8]);
        assert!(matches!(c.touch, Some(Touch::Unknown { .. })));
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, 'v') ON DUPLICATE KEY UPDATE T = -5");
        assert_eq!(rules_of(&c), [Rule::C7]);
        let (c, _) = insert("INSERT INTO g$f (K, Q, T, V) VALUES (X'00112233445566778899AABBCCDDEEFF00', 'q', -1763700000000, 'v')");
        assert_eq!(rules_of(&c), [Rule::C2]);
    }

    #[test]
    fn t_is_filled_in_where_an_insert_leaves_it_out() {
        let (c, sent) = insert("INSERT INTO g$f (K, Q, V) VALUES ('a', 'q', 'v'), ('b', 'q', 'w')");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            "INSERT INTO g$f (K, Q, V, T) VALUES ('a', 'q', 'v', -1763700000000), ('b', 'q', 'w', -1763700000000)"
        );
        let (_, sent) = insert("INSERT INTO g$f SET K = 'a', Q = 'q', V = 'v'");
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            "INSERT INTO g$f SET K = 'a', Q = 'q', V = 'v', T = -1763700000000"
        );
        // T given, or no column list: nothing added
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('a', 'q', -1763700000000, 'v')";
        assert_eq!(insert(sql).1, sql.as_bytes());
    }

    #[test]
    fn where_an_insert_lands() {
        let (c, _) =
            insert("INSERT INTO g$f (K, Q, V) VALUES ('abcd1', 'q', 'v'), ('abcd2', 'q', 'v')");
        let Some(Touch::At(places)) = c.touch else {
            panic!("{:?}", c.touch)
        };
        assert_eq!(places.len(), 1, "one prefix, one partition");
        assert_eq!(places[0].rowkey, b"abcd1");
        let p = prefixed().partitioning.partition_of(b"abcd").unwrap();
        assert_eq!(places[0].partition, p);
    }

    /// Rows over many partitions, each partition met again later: one place for each, in the
    /// order first met, past the few looked through without a set.
    #[test]
    fn each_partition_of_an_insert_is_one_place() {
        let keys: Vec<String> = (0..60).map(|i| format!("k{:03}x", i % 30)).collect();
        let values: Vec<String> = keys.iter().map(|k| format!("('{k}', 'q', 'v')")).collect();
        let (c, _) = insert(&format!(
            "INSERT INTO g$f (K, Q, V) VALUES {}",
            values.join(", ")
        ));
        let Some(Touch::At(places)) = c.touch else {
            panic!("{:?}", c.touch)
        };
        let mut want: Vec<u32> = Vec::new();
        for k in &keys {
            let p = prefixed().partitioning.partition_of(k.as_bytes()).unwrap();
            if !want.contains(&p) {
                want.push(p);
            }
        }
        assert!(
            want.len() > 8,
            "more partitions than looked through: {want:?}"
        );
        let got: Vec<u32> = places.iter().map(|p| p.partition).collect();
        assert_eq!(got, want);
    }

    /// With the advisor off (`WriteRules::observe` `Sampling::OFF`) the rows' keys are not
    /// kept for it, and nothing else changes: the same places, findings and text.
    #[test]
    fn an_advisor_that_is_off_is_kept_no_rows() {
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('row1', 'q', -1763700000000, 'v'), ('row2', 'q', -1, 'v'), (DEFAULT, 'q', -1763700000000, 'v')";
        let check = |observe: Sampling| insert_with(sql, &WriteRules { observe, ..rules() });
        let (on, on_text) = check(Sampling::ALL);
        let (off, off_text) = check(Sampling::OFF);
        assert_eq!(on.rows.rows(), 3, "{:?}", on.rows);
        assert_eq!(off.rows, RowsSeen::default());
        assert_eq!(
            (&on.touch, &on.findings, on_text),
            (&off.touch, &off.findings, off_text)
        );
        assert!(
            matches!(&off.touch, Some(Touch::At(places)) if !places.is_empty()),
            "{:?}",
            off.touch
        );
    }

    /// A row whose partitioning bytes are the last place's rowkey's is put in that place's
    /// partition without hashing: on every kind of KEY partitioning and on RANGE, each row's
    /// partition and the places (each partition once, with the first rowkey there, in order)
    /// are the model's.
    #[test]
    fn a_row_like_the_last_place_is_in_its_partition() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for partitioning in [
            Partitioning::Key {
                prefix_len: Some(4),
                partitions: 13,
            },
            Partitioning::Key {
                prefix_len: Some(20),
                partitions: 7,
            },
            Partitioning::Key {
                prefix_len: None,
                partitions: 5,
            },
            Partitioning::RangeK {
                bounds: vec![
                    crate::sql::ddl::RangeBound::LessThan(b"m".to_vec()),
                    crate::sql::ddl::RangeBound::MaxValue,
                ],
            },
        ] {
            let schema = schema(partitioning.clone());
            let mut rows = checked::Rows::new(&schema);
            let mut want: Vec<(u32, Vec<u8>)> = Vec::new();
            for _ in 0..2_000 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                // runs of one prefix, prefixes shorter and longer than the partitioning's,
                // keys that are a prefix of the last place's and the other way round
                let key = match rng % 5 {
                    0 => format!("ab{}", rng >> 60),
                    1 => format!("abcd{}", rng >> 61),
                    2 => format!("{:x}", rng >> 40),
                    3 => "abcdefghijklmnopqrstuvwxyz"
                        .get(..(rng >> 59) as usize)
                        .unwrap_or("")
                        .to_string(),
                    _ => format!("abcd-{}-{}", rng >> 62, rng >> 32),
                };
                let p = partitioning.partition_of(key.as_bytes());
                assert_eq!(rows.key(key.as_bytes()), p, "{key}");
                if let Some(p) = p {
                    if !want.iter().any(|(q, _)| *q == p) {
                        want.push((p, key.into_bytes()));
                    }
                }
            }
            let places = match rows.finish() {
                Touch::At(places) => places,
                other => panic!("{other:?}"),
            };
            let got: Vec<(u32, Vec<u8>)> = places
                .into_iter()
                .map(|l| (l.partition, l.rowkey))
                .collect();
            assert_eq!(got, want, "{partitioning:?}");
        }
    }

    /// Adds a statement's keyed rows (`Writes`: their keys, in order) and its counted rows
    /// (`Counts`, none unplaced) to the rows seen in each partition.
    fn tally(o: &crate::hbase::advisor::Observed, per: &mut [u64], keyed: &mut Vec<Vec<u8>>) {
        use crate::hbase::advisor::Observed;
        match o {
            Observed::Writes(rows) => {
                for (partition, key) in rows {
                    keyed.push(key.bytes.to_vec());
                    per[partition.expect("placed") as usize] += 1;
                }
            }
            Observed::Counts { counts, unplaced } => {
                assert_eq!(*unplaced, 0);
                for (p, k) in counts.iter() {
                    per[*p as usize] += u64::from(*k);
                }
            }
            other => panic!("not a list of rows: {other:?}"),
        }
    }

    /// Issue 42: a batch sampled one row in sixteen shows the advisor every row all the same:
    /// each in its partition (the counts sum to the rows, partition by partition), each
    /// partitioning key in the distinct count (the updates carried make the very registers
    /// that hashing every row's key makes), the longest rowkey; and the rowkeys of about one
    /// row in sixteen, in order.
    #[test]
    fn a_sampled_batch_shows_every_row_and_the_keys_of_a_sample() {
        use crate::hbase::advisor::stats::Distinct;
        use crate::hbase::advisor::Observed;
        let n = 3000;
        let values: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "('{:04}x{i:05}', 'q', -1763700000000, 'v')",
                    (i * 7919) % 1000
                )
            })
            .collect();
        let sql = format!("INSERT INTO g$f (K, Q, T, V) VALUES {}", values.join(", "));
        let key = |i: usize| format!("{:04}x{i:05}", (i * 7919) % 1000);
        let p = prefixed().partitioning;
        for seed in [1u64, 2, 3] {
            let sampled = WriteRules {
                observe: Sampling { every: 16, seed },
                ..rules()
            };
            let (c, _) = insert_with(&sql, &sampled);
            let seen = observed(c.touch, c.rows, true, usize::MAX).collect::<Vec<_>>();
            let mut per = vec![0u64; 13];
            let mut keyed = Vec::new();
            let mut got = Distinct::default();
            let mut longest = 0;
            for o in &seen {
                match o {
                    Observed::Writes(_) | Observed::Counts { .. } => tally(o, &mut per, &mut keyed),
                    Observed::Keys {
                        distinct,
                        longest: l,
                    } => {
                        assert!(distinct.len() <= 2 * crate::hbase::advisor::DISTINCT_UPDATES);
                        distinct.iter().for_each(|u| got.add_update(*u));
                        longest = *l;
                    }
                    other => panic!("{other:?}"),
                }
            }
            let mut expected = vec![0u64; 13];
            let mut want = Distinct::default();
            for i in 0..n {
                let k = key(i);
                expected[p.partition_of(k.as_bytes()).unwrap() as usize] += 1;
                want.add_hash(p.key_hash(k.as_bytes()));
            }
            assert_eq!(per, expected, "seed {seed}");
            assert_eq!(got.estimate(), want.estimate(), "seed {seed}");
            assert_eq!(longest, 10);
            // about 3000 / 16 = 187.5 (five standard deviations: 13.3 × 5)
            assert!(
                (120..=255).contains(&keyed.len()),
                "seed {seed}: {}",
                keyed.len()
            );
            // in the order written
            let order: Vec<usize> = keyed
                .iter()
                .map(|k| {
                    std::str::from_utf8(&k[5..])
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .expect("index")
                })
                .collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        }
    }

    /// The statements of one text share the text's seed, mixed with where each starts: a text
    /// of one-row INSERTs has about half of them taken at one in two, not all or none.
    #[test]
    fn each_statement_of_a_text_draws_its_own_sample() {
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('row42', 'q', -1763700000000, 'v')";
        let rules = WriteRules {
            observe: Sampling { every: 2, seed: 9 },
            ..rules()
        };
        let taken = (0..400usize)
            .filter(|i| {
                let mut splice = Splice::new();
                let c = check_insert(
                    sql.as_bytes(),
                    Dialect::default(),
                    &prefixed(),
                    &rules,
                    Some(ConnCharset::Utf8),
                    true,
                    &mut splice,
                    i * sql.len(),
                    FillT::Literal,
                    None,
                )
                .expect("no charset needed");
                assert_eq!(c.rows.rows(), 1);
                !c.rows.keyed.is_empty()
            })
            .count();
        // 200 expected, standard deviation 10
        assert!((150..=250).contains(&taken), "{taken}");
    }

    /// A one-row INSERT shows one observation with no list: its rowkey when the sample takes
    /// it, else its partition, partitioning key and length only.
    #[test]
    fn a_one_row_insert_is_one_observation_taken_or_not() {
        use crate::hbase::advisor::stats::Distinct;
        use crate::hbase::advisor::Observed;
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('row42', 'q', -1763700000000, 'v')";
        let p = prefixed().partitioning;
        let partition = p.partition_of(b"row42");
        let update = Distinct::update_of(p.key_hash(b"row42"));
        let seen = |observe: Sampling| {
            let (c, _) = insert_with(sql, &WriteRules { observe, ..rules() });
            observed(c.touch, c.rows, true, 100).collect::<Vec<_>>()
        };
        match &seen(Sampling::ALL)[..] {
            [Observed::Write {
                partition: p,
                key,
                distinct,
            }] => {
                assert_eq!(
                    (*p, &key.bytes[..], *distinct),
                    (partition, &b"row42"[..], update)
                );
            }
            other => panic!("{other:?}"),
        }
        // a sample of one in four billion takes it (nearly) never
        let never = Sampling {
            every: u32::MAX,
            seed: 5,
        };
        assert_eq!(
            seen(never),
            [Observed::Row {
                partition,
                distinct: update,
                len: 5
            }]
        );
        // nor when there is no room left for a keyed row
        let (c, _) = insert(sql);
        assert_eq!(
            observed(c.touch, c.rows, true, 0).collect::<Vec<_>>(),
            [Observed::Row {
                partition,
                distinct: update,
                len: 5
            }]
        );
        assert!(seen(Sampling::OFF).is_empty());
    }

    /// A count of rows to come makes room for their keyed rows at once, at most `KEYED_ROWS`
    /// of them whatever the count, and none for an advisor that is off or a single row.
    #[test]
    fn rows_to_come_make_room_for_at_most_the_keyed_rows() {
        let schema = prefixed();
        let room = |observe: Sampling, n: usize| {
            let mut rows = checked::Rows::new(&schema).observing(observe);
            rows.expect_rows(n);
            rows.finish_seen().1.keyed.capacity()
        };
        let all = Sampling::ALL;
        assert!(room(all, 100) >= 100);
        assert!((KEYED_ROWS..2 * KEYED_ROWS).contains(&room(all, 1_000_000)));
        assert_eq!(room(all, 1), 0);
        assert_eq!(room(Sampling::OFF, 100), 0);
        // a sample of one in sixteen: room for about what it takes (6.25 of 100 rows, and
        // four standard deviations), not for every row
        assert!((7..=20).contains(&room(Sampling { every: 16, seed: 1 }, 100)));
        // the rows themselves are kept as before
        let sql: String = (0..100)
            .map(|i| format!("('k{i:05}', 'q', -1763700000000, 'v')"))
            .collect::<Vec<_>>()
            .join(", ");
        let (c, _) = insert(&format!("INSERT INTO g$f (K, Q, T, V) VALUES {sql}"));
        assert_eq!(c.rows.keyed.len(), 100);
    }

    /// Issue 39: the advisor is shown every row of a multi-row INSERT, each in its own
    /// partition — the first rows with their rowkeys (in order), the rest counted per partition —
    /// so the counts per partition sum to the rows written.
    #[test]
    fn every_row_of_an_insert_is_one_write_in_its_partition() {
        use crate::hbase::advisor::Observed;
        let rows = |n: usize| -> String {
            let values: Vec<String> = (0..n)
                .map(|i| format!("('k{i:05}', 'q', -1763700000000, 'v')"))
                .collect();
            format!("INSERT INTO g$f (K, Q, T, V) VALUES {}", values.join(", "))
        };
        let p = prefixed().partitioning;
        for (n, room) in [
            (1, 256),
            (3, 256),
            (50, 256),
            (300, 256),
            (300, 10),
            (300, 1),
            (40, 0),
        ] {
            let (c, _) = insert(&rows(n));
            let seen = observed(c.touch, c.rows, true, room).collect::<Vec<_>>();
            let mut per = vec![0u64; 13];
            let mut keyed = Vec::new();
            for o in &seen {
                match o {
                    Observed::Writes(rows) => {
                        assert!(
                            keyed.is_empty() && !rows.is_empty(),
                            "one list of keyed rows"
                        );
                        tally(o, &mut per, &mut keyed);
                    }
                    Observed::Write { partition, key, .. } => {
                        assert!(keyed.is_empty(), "one keyed row alone");
                        keyed.push(key.bytes.to_vec());
                        per[partition.expect("placed") as usize] += 1;
                    }
                    Observed::Counts { .. } => tally(o, &mut per, &mut keyed),
                    // every row's partitioning key and length, beside the rows
                    Observed::Keys { distinct, longest } => {
                        assert!(n > 1 && !distinct.is_empty(), "{n}");
                        assert_eq!(*longest, 6);
                    }
                    other => panic!("{other:?}"),
                }
            }
            // as many as written, each where the model places it
            let mut expected = vec![0u64; 13];
            for i in 0..n {
                expected[p.partition_of(format!("k{i:05}").as_bytes()).unwrap() as usize] += 1;
            }
            assert_eq!(per, expected, "{n} rows, room {room}");
            // the first rows keep their keys, in order
            let want = n.min(room).min(KEYED_ROWS);
            assert_eq!(keyed.len(), want, "{n} rows, room {room}");
            for (i, k) in keyed.iter().enumerate() {
                assert_eq!(k, format!("k{i:05}").as_bytes());
            }
        }
        // an UPDATE shows the partitions it writes, one row each (its rows are not in the text)
        let c = check(
            "UPDATE g$f SET V = 'x' WHERE K IN ('abcd1', 'wxyz1')",
            &prefixed(),
        );
        let placed = observed(c.touch, c.rows, false, 256).count();
        assert_eq!(placed, 2);
    }

    fn dml(sql: &str) -> Dml {
        match crate::sql::dml::read(sql.as_bytes(), Dialect::default()) {
            crate::sql::dml::Read::Dml(d) => *d,
            other => panic!("{other:?}"),
        }
    }

    fn check(sql: &str, s: &TableSchema) -> Checked {
        check_dml(
            &dml(sql),
            s,
            &rules(),
            Some(ConnCharset::Utf8),
            Some(true),
            true,
        )
        .unwrap()
    }

    #[test]
    fn updates_do_not_move_cells() {
        let s = prefixed();
        assert_eq!(
            rules_of(&check("UPDATE g$f SET V = 'x' WHERE K = 'abcd1'", &s)),
            Vec::<Rule>::new()
        );
        assert_eq!(
            rules_of(&check("UPDATE g$f SET T = -1 WHERE K = 'abcd1'", &s)),
            [Rule::C7]
        );
        assert_eq!(
            rules_of(&check(
                "UPDATE g$f AS x SET x.K = 'b' WHERE K = 'abcd1'",
                &s
            )),
            [Rule::C7]
        );
        assert_eq!(
            rules_of(&check("UPDATE g$f SET V = NULL WHERE K = 'abcd1'", &s)),
            [Rule::C3]
        );
        assert_eq!(
            rules_of(&check(
                "UPDATE g$f SET V = 'much too long for thirty-two bytes' WHERE K = 'a'",
                &s
            )),
            [Rule::C2]
        );
        assert_eq!(
            rules_of(&check("UPDATE g$f SET K_PREFIX = 'x' WHERE K = 'a'", &s)),
            [Rule::C6]
        );
    }

    #[test]
    fn a_prefix_value_equal_to_the_rowkeys_prefix_is_left_to_the_backend() {
        // what mariadb-dump writes for a table with a generated prefix column: every column's
        // value, the generated one too (seekdb refuses it with 3105)
        let sql = "INSERT INTO `g$f` VALUES ('row1xyz','q',-1763700000000,'v','row1'),(X'00FF01','q',-1763700000000,'v',X'00FF01')";
        let (c, sent) = insert(sql);
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert_eq!(
            String::from_utf8_lossy(&sent),
            "INSERT INTO `g$f` VALUES ('row1xyz','q',-1763700000000,'v',DEFAULT),(X'00FF01','q',-1763700000000,'v',DEFAULT)"
        );
        // named, as --complete-insert writes it
        let (c, sent) = insert("INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('abcdef', 'q', -1763700000000, 'v', _binary 'abcd')");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert!(
            sent.ends_with(b"'v', DEFAULT)"),
            "{}",
            String::from_utf8_lossy(&sent)
        );
        // a value that is not the prefix is refused, named or not; DEFAULT is fine
        for sql in [
            "INSERT INTO g$f VALUES ('abcdef', 'q', -1763700000000, 'v', 'abce')",
            "INSERT INTO g$f VALUES ('abcdef', 'q', -1763700000000, 'v', 'abcdef')",
            "INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('abcdef', 'q', -1763700000000, 'v', NULL)",
            "INSERT INTO g$f (K, Q, T, V, K_PREFIX) VALUES ('abcdef', 'q', -1763700000000, 'v', CONCAT('ab', 'cd'))",
        ] {
            let (c, _) = insert(sql);
            assert_eq!(rules_of(&c), [Rule::C6], "{sql}");
        }
        let (c, sent) =
            insert("INSERT INTO g$f VALUES ('abcdef', 'q', -1763700000000, 'v', DEFAULT)");
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert!(sent.ends_with(b"'v', DEFAULT)"));
    }

    #[test]
    fn where_rows_are() {
        let s = prefixed();
        let at = |sql: &str| match check(sql, &s).touch {
            Some(Touch::At(p)) => p.iter().map(|p| p.partition).collect::<Vec<_>>(),
            other => panic!("{sql}: {other:?}"),
        };
        let p = |k: &[u8]| s.partitioning.partition_of(k).unwrap();
        assert_eq!(at("DELETE FROM g$f WHERE K = 'abcd1'"), [p(b"abcd")]);
        assert_eq!(at("DELETE FROM g$f WHERE K LIKE 'abcd%'"), [p(b"abcd")]);
        assert_eq!(
            at("DELETE FROM g$f WHERE K >= 'abcd1' AND K < 'abcd9'"),
            [p(b"abcd")]
        );
        assert!(matches!(
            check("DELETE FROM g$f WHERE V = 'x'", &s).touch,
            Some(Touch::Unknown { .. })
        ));
        assert!(check("SELECT * FROM g$f WHERE K = 'a'", &s).touch.is_none());
        assert!(check("SELECT * FROM g$f WHERE K = 'a' FOR UPDATE", &s)
            .touch
            .is_some());
        assert!(
            check("SELECT * FROM g$f WHERE K = 'a' LOCK IN SHARE MODE", &s)
                .touch
                .is_some()
        );
        // KEY(K): a LIKE pins nothing, an equality pins its key
        let whole = schema(Partitioning::Key {
            prefix_len: None,
            partitions: 7,
        });
        assert!(matches!(
            check("DELETE FROM g$f WHERE K LIKE 'abcd%'", &whole).touch,
            Some(Touch::Unknown { .. })
        ));
        match check("DELETE FROM g$f WHERE K = 'abcd1'", &whole).touch {
            Some(Touch::At(p)) => assert_eq!(
                p[0].partition,
                whole.partitioning.partition_of(b"abcd1").unwrap()
            ),
            other => panic!("{other:?}"),
        }
    }

    fn at(partition: u32, group: &str, key: &[u8]) -> Place {
        Place {
            schema: "hb".into(),
            group: group.into(),
            table: format!("{group}$f").into(),
            partition,
            rowkey: key.to_vec(),
        }
    }

    #[test]
    fn the_guard_keeps_a_transaction_in_one_partition() {
        let mode = Transactions::SinglePartition;
        let mut txn = Txn {
            active: true,
            pinned: None,
        };
        // the first write pins
        let g = guard(&Touch::At(vec![at(3, "g", b"a")]), &txn, mode);
        assert_eq!(
            g,
            Guarded::Fine {
                pin: Some(at(3, "g", b"a"))
            }
        );
        txn.pinned = Some(at(3, "g", b"a"));
        // the same partition of another family of the group: fine, nothing new pinned
        let mut other_family = at(3, "g", b"a");
        other_family.table = "g$other".into();
        assert_eq!(
            guard(&Touch::At(vec![other_family]), &txn, mode),
            Guarded::Fine { pin: None }
        );
        // another partition, another group, an unknown partition: refused
        for t in [
            Touch::At(vec![at(4, "g", b"b")]),
            Touch::At(vec![at(3, "h", b"a")]),
            Touch::Unknown {
                table: "g$f".into(),
                why: "no K",
            },
        ] {
            match guard(&t, &txn, mode) {
                Guarded::Refuse(f) => assert!(f.rule == Rule::X1 || f.rule == Rule::X2),
                other => panic!("{t:?}: {other:?}"),
            }
        }
        let Guarded::Refuse(f) = guard(&Touch::At(vec![at(4, "g", b"b")]), &txn, mode) else {
            panic!()
        };
        assert!(
            f.message.contains("p3") && f.message.contains("p4"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("'a'") && f.message.contains("'b'"),
            "{}",
            f.message
        );
        // warn mode forwards with a warning; off does nothing
        assert!(matches!(
            guard(&Touch::At(vec![at(4, "g", b"b")]), &txn, Transactions::Warn),
            Guarded::Warn(_)
        ));
        assert_eq!(
            guard(&Touch::At(vec![at(4, "g", b"b")]), &txn, Transactions::Off),
            Guarded::Fine { pin: None }
        );
        // one statement spanning two partitions, outside a transaction: a warning (strict: refused)
        let two = Touch::At(vec![at(1, "g", b"a"), at(2, "g", b"b")]);
        let idle = Txn::default();
        assert!(matches!(guard(&two, &idle, mode), Guarded::Warn(f) if f.rule == Rule::X3));
        assert!(
            matches!(guard(&two, &idle, Transactions::Strict), Guarded::Refuse(f) if f.rule == Rule::X3)
        );
        // inside a transaction with nothing pinned yet it is refused outright
        let fresh = Txn {
            active: true,
            pinned: None,
        };
        assert!(matches!(guard(&two, &fresh, mode), Guarded::Refuse(f) if f.rule == Rule::X1));
    }

    #[test]
    fn a_bulk_executes_rows_are_gathered() {
        let s = prefixed();
        let at = |k: &[u8]| Checked {
            rows: Default::default(),
            findings: Vec::new(),
            touch: Some(Touch::At(vec![place(
                &s,
                s.partitioning.partition_of(k).unwrap(),
                k,
            )])),
        };
        let mut g = Gathered::new();
        g.add(at(b"aaaa1"));
        g.add(at(b"aaaa2"));
        assert!(!g.refused(&rules()));
        let c = g.finish(&s.name, false);
        let Some(Touch::At(places)) = c.touch else {
            panic!("{c:?}")
        };
        assert_eq!(places.len(), 1, "one partition, once");
        assert_eq!(
            places[0].rowkey, b"aaaa1",
            "the first row that put it there"
        );
        // an unknown row makes the whole unknown; an unreadable row notes it
        let mut g = Gathered::new();
        g.add(at(b"aaaa1"));
        let c = g.finish(&s.name, true);
        assert!(matches!(c.touch, Some(Touch::Unknown { .. })));
        assert_eq!(c.findings[0].rule, Rule::C8);
        // findings are capped; an error refuses under strict rules only
        let mut g = Gathered::new();
        for _ in 0..100 {
            g.add(Checked {
                rows: Default::default(),
                findings: vec![Finding::error(Rule::C1, 1292, "22007", "x".into())],
                touch: None,
            });
        }
        assert!(g.refused(&rules()));
        let warn = WriteRules {
            cells: Enforcement::Warn,
            ..rules()
        };
        assert!(!g.refused(&warn));
        let c = g.finish(&s.name, false);
        assert_eq!(c.findings.len(), MAX_FINDINGS);
        assert_eq!(c.touch, None, "no row touched a partition");
    }

    #[test]
    fn load_data_files_are_checked_row_by_row() {
        let plan = |sql: &str| LoadPlan {
            load: crate::sql::load::read(sql.as_bytes(), Dialect::default())
                .unwrap()
                .unwrap(),
            schema: std::sync::Arc::new(prefixed()),
        };
        let t = -NOW;
        // rows spread over partitions; each row numbered
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, T, V)");
        let mut c = LoadCheck::new(&p, rules());
        c.feed(format!("aaaa1\tq\t{t}\tv\nbbbb1\tq\t").as_bytes());
        c.feed(format!("{t}\tv\n\tq\t{t}\tv\n").as_bytes());
        assert!(c.refused(), "row 3's empty K");
        let out = c.finish();
        assert_eq!(out.findings[0].rule, Rule::C1);
        assert!(out.findings[0].message.contains("row 3"));
        // a rowkey through a user variable is an expression: unknown, noted
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (@k, Q, T, V) SET K = UNHEX(@k)");
        let mut c = LoadCheck::new(&p, rules());
        c.feed(format!("6161\tq\t{t}\tv\n").as_bytes());
        let out = c.finish();
        assert!(matches!(out.touch, Some(Touch::Unknown { .. })), "{out:?}");
        // T left out: filled in where the statement ends
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, V)");
        let (at, text) = load_fill_t(&p.load, &rules()).unwrap();
        assert_eq!(
            at,
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, V)".len()
        );
        assert_eq!(text, format!(" SET T = {t}").into_bytes());
        let mut c = LoadCheck::new(&p, rules());
        c.feed(b"aaaa1\tq\tv\naaaa2\tq\tv");
        let out = c.finish();
        assert!(out.findings.is_empty(), "{:?}", out.findings);
        let Some(Touch::At(places)) = out.touch else {
            panic!()
        };
        assert_eq!(places.len(), 1, "one prefix, one partition");
        // the generated prefix column may not be loaded
        let p = plan("LOAD DATA LOCAL INFILE 'f' INTO TABLE `g$f` (K, Q, T, V, K_PREFIX)");
        assert!(LoadCheck::new(&p, rules()).refused());
    }

    #[test]
    fn a_prepared_join_checks_each_v_against_the_table_it_goes_to() {
        let small = std::sync::Arc::new(prefixed());
        let mut big = prefixed();
        big.name = "g$h".into();
        big.limits.v = Some(1 << 20);
        let big = std::sync::Arc::new(big);
        let plan_of = |sql: &str| {
            let crate::sql::assign::Read::Update(u) =
                crate::sql::assign::read(sql.as_bytes(), Dialect::default())
            else {
                panic!("not read: {sql}");
            };
            // the tables as the statement names them: g$f, g$h, then anything else
            let schemas: Vec<_> = u
                .tables
                .iter()
                .map(|t| match t.table.name.as_str() {
                    "g$f" => Some(small.clone()),
                    "g$h" => Some(big.clone()),
                    _ => None,
                })
                .collect();
            plan_assigned(&u, &schemas).expect("a plan")
        };
        let run = |plan: &WritePlan, values: &[Vec<u8>]| {
            let bound = |n: u32| match values.get(n as usize) {
                Some(v) => Bound::Bytes(v, true),
                None => Bound::Other,
            };
            let c = check_execution(plan, &bound, &rules(), None, Some(true), 0);
            assert!(
                matches!(c.touch, Some(Touch::Unknown { .. })),
                "{:?}",
                c.touch
            );
            c.findings.iter().map(|f| f.rule).collect::<Vec<_>>()
        };
        let forty = vec![b'x'; 40];
        let plan = plan_of("UPDATE g$f a JOIN g$h b ON a.K = b.K SET a.V = ?, b.V = ?");
        assert!(matches!(plan.shape, Shape::Assigned(ref e) if e.len() == 2));
        assert!(run(&plan, &[b"v".to_vec(), forty.clone()]).is_empty());
        assert_eq!(run(&plan, &[forty.clone(), b"v".to_vec()]), [Rule::C2]);
        let huge = vec![b'x'; (1 << 20) + 1];
        assert_eq!(run(&plan, &[b"v".to_vec(), huge]), [Rule::C2]);
        // an unqualified V may belong to either table: checked against both
        let plan = plan_of("UPDATE g$h, g$f SET V = ? WHERE g$f.K = g$h.K");
        assert_eq!(run(&plan, std::slice::from_ref(&forty)), [Rule::C2]);
        // one HBase table among others keeps the one-table plan
        let plan = plan_of("UPDATE g$f a JOIN o b ON a.K = b.k SET a.V = ?, b.v = ?");
        assert!(matches!(plan.shape, Shape::Dml(_)));
        assert_eq!(run(&plan, &[forty, b"v".to_vec()]), [Rule::C2]);
    }
}
