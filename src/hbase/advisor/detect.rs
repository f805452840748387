//! The detectors: each reads a table's statistics and reports what one rule of the rowkey
//! guides says about them, with the numbers that show it, the guide's fix and, where there is
//! one, the DDL to apply it. Pure: the same statistics give the same findings.

use std::fmt::Write;

use super::stats::ln_poisson_upper_tail;
use super::table::{TableStats, KEY_LENGTHS, PREFIX_LENGTHS};

/// Sampled operations a finding read from the sketches needs at least (a hot key's, the
/// consecutive pairs of a monotonic key, the rowkeys of a leading field): counts of the sample,
/// whatever its rate, so that a share is never read off a handful.
pub const HOT_KEY_SAMPLES: u64 = 13;
pub const ORDER_PAIRS: u64 = 25;
pub const LEAD_SAMPLES: u64 = 50;
use crate::hbase::partition::Partitioning;

/// Family-wise false-alarm rate of the hot-partition test: the chance that keys spread
/// uniformly over any number of partitions, in any amount, are called hot.
pub const HOT_ALPHA: f64 = 1e-4;

/// The guides' rules the advisor checks (a finding's `rule`; the label of its metric).
pub const RULES: [&str; 8] = [
    "hot_partition",
    "hot_key",
    "monotonic_key",
    "range_last_partition",
    "few_valued_lead",
    "prefix_too_short",
    "prefix_too_long",
    "long_rowkey",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// One of `RULES`.
    pub rule: &'static str,
    /// The numbers that show it.
    pub evidence: String,
    /// What the guides say to do.
    pub advice: String,
    /// The DDL that applies the advice, where there is one.
    pub ddl: Option<String>,
}

/// The hottest partition of `counts`, when it is hotter than chance allows: its count `m`
/// against the mean λ, by the Poisson tail P(X ≥ m | λ) times the number of partitions (a
/// Bonferroni bound, so the false-alarm rate stays below `HOT_ALPHA` whatever the number of
/// partitions and whatever the sample's size), and at least half again the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hot {
    pub partition: usize,
    pub count: u64,
    pub mean: f64,
    /// ln of the family-wise chance of a count this high by luck.
    pub ln_chance: f64,
}

pub fn hot_partition(counts: &[u64]) -> Option<Hot> {
    let n = counts.len();
    if n < 2 {
        return None;
    }
    let total: u64 = counts.iter().sum();
    let (partition, &count) = counts.iter().enumerate().max_by_key(|(_, c)| **c)?;
    let mean = total as f64 / n as f64;
    if count < 8 || (count as f64) < 1.5 * mean {
        return None;
    }
    let ln_chance = ln_poisson_upper_tail(count, mean) + (n as f64).ln();
    (ln_chance < HOT_ALPHA.ln()).then_some(Hot {
        partition,
        count,
        mean,
        ln_chance,
    })
}

/// How keys replayed against a partitioning spread: partitions used, the largest count over
/// the mean, and whether the hot-partition test fires.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub keys: usize,
    pub partitions: usize,
    pub used: usize,
    pub max_over_mean: f64,
    pub hot: bool,
}

pub fn replay(keys: &[Vec<u8>], p: &Partitioning) -> Replay {
    let n = p.partition_count().max(1) as usize;
    let mut counts = vec![0u64; n];
    let mut placed = 0usize;
    for k in keys {
        if let Some(c) = p.partition_of(k).and_then(|i| counts.get_mut(i as usize)) {
            *c += 1;
            placed += 1;
        }
    }
    let mean = placed as f64 / n as f64;
    let max = counts.iter().copied().max().unwrap_or(0);
    Replay {
        keys: placed,
        partitions: n,
        used: counts.iter().filter(|c| **c > 0).count(),
        max_over_mean: if mean > 0.0 { max as f64 / mean } else { 0.0 },
        hot: hot_partition(&counts).is_some(),
    }
}

impl Replay {
    fn describe(&self) -> String {
        format!(
            "{} sampled keys in {} of {} partitions, largest {:.1}× the mean{}",
            self.keys,
            self.used,
            self.partitions,
            self.max_over_mean,
            if self.hot { " (hot)" } else { "" }
        )
    }
}

/// Shown bytes of a key: printable ASCII as is, the rest as \xNN, at most 32 bytes.
pub fn show_key(k: &[u8], truncated: bool) -> String {
    let mut s = String::new();
    for &b in k.iter().take(32) {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    if truncated || k.len() > 32 {
        s.push('…');
    }
    s
}

/// Where the statistics came from, for the evidence's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The proxy's traffic: writes and reads, over the recent window.
    Traffic,
    /// A file of rowkeys (`obkv-proxy partition --keys-file`), each read as one write.
    KeyFile,
}

impl Source {
    /// "writes in the last 80 s" / "keys in the file".
    fn span(self, what: &str, t: &TableStats) -> String {
        match self {
            Source::Traffic => format!(
                "{what} in the last {} s",
                t.epochs.len() as u64 * t.shape.epoch_seconds
            ),
            Source::KeyFile => "keys in the file".to_string(),
        }
    }
}

/// What the advisor says about one table; `table` names it in the suggested DDL and `keys`
/// says whether rowkeys may be shown (a user who cannot read the table sees none).
pub fn findings(table: &str, t: &TableStats, keys: bool) -> Vec<Finding> {
    findings_from(table, t, keys, Source::Traffic)
}

/// `findings`, worded for where the statistics came from.
pub fn findings_from(table: &str, t: &TableStats, keys: bool, source: Source) -> Vec<Finding> {
    let mut out = Vec::new();
    let n = t.partitions();
    let (reads, writes) = t.recent();
    let traffic = t.rows_written() + t.gets;
    let prefix_len = match t.partitioning {
        Partitioning::Key { prefix_len, .. } => prefix_len,
        _ => None,
    };
    let range = matches!(t.partitioning, Partitioning::RangeK { .. });
    let uses_scans = t.scans > 0;

    // hot partition, writes then reads, over the recent window
    for (what, counts) in [("writes", &writes), ("reads", &reads)] {
        if let Some(h) = hot_partition(counts) {
            let total: u64 = counts.iter().sum();
            out.push(Finding {
                rule: "hot_partition",
                evidence: format!(
                    "p{} took {} of {} {} ({:.1}× the mean {:.1}; chance by luck below 1e{:.0})",
                    h.partition,
                    h.count,
                    total,
                    source.span(what, t),
                    h.count as f64 / h.mean.max(f64::MIN_POSITIVE),
                    h.mean,
                    h.ln_chance / std::f64::consts::LN_10
                ),
                advice: "spread the partitioning key: hash or salt its leading bytes, or use a longer prefix; see hot_key for a single heavy key".into(),
                ddl: None,
            });
        }
    }

    // the partitioning key's distinct values, against the partitions they must fill
    let distinct_pk = t.partition_keys.estimate();
    // (a partition's share of the values is Poisson with mean values/partitions: under 4 a
    // partition, some get two or three times the mean and others none)
    // (both over every row written: the distinct count is not of the sample)
    let few_pk = n > 1 && t.rows_written() >= 8 * n as u64 && distinct_pk < 4.0 * n as f64;

    // hot key: one rowkey, or one partitioning-key value, with a large share of the traffic
    // (when the partitioning key has few values at all, that is the finding, not one of them)
    if traffic >= 50 {
        let fair = 2.0 / n.max(1) as f64;
        for (what, top) in [
            ("rowkey", &t.top_keys),
            ("partitioning key", &t.top_prefixes),
        ] {
            if few_pk && what != "rowkey" {
                continue;
            }
            // the top lists see the sampled writes (and gets): shares are of those
            let denominator = if what == "rowkey" {
                t.sketched + t.sketched_gets
            } else {
                t.sketched
            };
            let Some(e) = top.top().first().copied() else {
                continue;
            };
            let sure = e.count - e.error;
            let share = sure as f64 / denominator.max(1) as f64;
            if sure >= HOT_KEY_SAMPLES && share >= 0.05 && share >= fair {
                let shown = if keys {
                    show_key(&e.key, e.truncated)
                } else {
                    "(hidden)".into()
                };
                out.push(Finding {
                    rule: "hot_key",
                    evidence: format!(
                        "{what} {shown} has about {:.0}% of the operations (at least {sure} of {denominator} sampled)",
                        share * 100.0
                    ),
                    advice: "split the heavy key's traffic: salt it (append a small bucket number to the rowkey and read all buckets), or give its data a key of its own per time window".into(),
                    ddl: None,
                });
                break;
            }
        }
    }

    // monotonic rowkeys under RANGE: every new write goes to the end of the key space
    let pairs = t.ascending + t.descending;
    if range && pairs >= ORDER_PAIRS {
        let up = t.ascending as f64 / pairs as f64;
        if !(0.1..=0.9).contains(&up) {
            let dir = if up > 0.5 { "ascending" } else { "descending" };
            let fix = if uses_scans {
                "salt it: salt = hash(id) % N, rowkey = salt|timestamp|id (a time-range scan becomes N scans, one per salt, and still works); reversing the timestamp only moves the hot spot to the other end"
            } else {
                "hash it: rowkey = hash(timestamp)|timestamp|msgid, or partition by KEY(K) (point reads only; time-range scans are lost); reversing the timestamp only moves the hot spot to the other end"
            };
            out.push(Finding {
                rule: "monotonic_key",
                evidence: format!(
                    "{:.0}% of {pairs} consecutive sampled writes were {dir} in rowkey order{}",
                    100.0 * up.max(1.0 - up),
                    t.keys_read()
                ),
                advice: format!("a time or sequence prefix under RANGE partitioning sends every write to one partition; {fix}"),
                ddl: Some(format!(
                    "ALTER TABLE {table} PARTITION BY KEY(K) PARTITIONS 97"
                )),
            });
        }
    }
    if range && n > 1 {
        let total: u64 = writes.iter().sum();
        let last = writes.last().copied().unwrap_or(0);
        let (top_i, top) = writes
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .map_or((0, 0), |(i, c)| (i, *c));
        if total >= 100 && top as f64 >= 0.9 * total as f64 {
            let which = if top_i + 1 == n && top == last {
                "its last partition".to_string()
            } else {
                format!("partition p{top_i}")
            };
            out.push(Finding {
                rule: "range_last_partition",
                evidence: format!(
                    "{top} of {total} {} went to {which} of {n}",
                    source.span("writes", t)
                ),
                advice: "new keys all sort after the last bound: hash or salt the key's leading bytes, or add bounds ahead of the data (RANGE bounds that follow the keys, not the calendar)".into(),
                ddl: None,
            });
        }
    }

    let leads = t.leads.estimate();
    let mostly_separated =
        t.sketched >= LEAD_SAMPLES && t.with_separator as f64 >= 0.9 * t.sketched as f64;
    let lead_governs = range || few_pk;
    if mostly_separated && leads <= 16.0 && lead_governs {
        let shown: Vec<String> = t
            .top_leads
            .top()
            .iter()
            .take(4)
            .map(|e| {
                if keys {
                    show_key(&e.key, e.truncated)
                } else {
                    "(hidden)".into()
                }
            })
            .collect();
        out.push(Finding {
            rule: "few_valued_lead",
            evidence: format!(
                "the rowkey's leading field has about {:.0} values ({}) over {} writes{}",
                leads.round(),
                shown.join(", "),
                t.writes,
                t.keys_read()
            ),
            advice: "a few-valued leading field (msgtype|msgid) puts all traffic on a few partitions: lead with the high-cardinality field (msgid|msgtype), or hash it in front".into(),
            ddl: None,
        });
    } else if let (Some(len), true) = (prefix_len, few_pk) {
        let better = PREFIX_LENGTHS
            .iter()
            .zip(&t.prefixes)
            .find(|(l, d)| {
                // (the prefixes' counts see the sketched writes only)
                **l > len && d.estimate() >= (8.0 * n as f64).min(t.sketched as f64 / 2.0)
            })
            .map(|(l, _)| *l);
        let mut evidence = format!(
            "the {len}-byte prefix has about {distinct_pk:.0} distinct values for {n} partitions over {} writes",
            t.rows_written()
        );
        let mut ddl = None;
        if let Some(l) = better {
            let alt = Partitioning::Key {
                prefix_len: Some(l),
                partitions: n as u32,
            };
            let now = replay(&t.sample, &t.partitioning);
            let then = replay(&t.sample, &alt);
            let _ = write!(
                evidence,
                "; now {}; with {l} bytes: {}",
                now.describe(),
                then.describe()
            );
            ddl = Some(format!(
                "K_PREFIX varbinary({l}) GENERATED ALWAYS AS (substring(K, 1, {l})) -- in {table}'s CREATE TABLE (a new table: the prefix column cannot change in place)"
            ));
        }
        out.push(Finding {
            rule: "prefix_too_short",
            evidence,
            advice: "a prefix column shorter than the business key leaves partitions idle: make it as long as the part of the key every scan gives".into(),
            ddl,
        });
    }

    // scans whose literal is shorter than the prefix column are not pruned
    if let Some(len) = prefix_len {
        let scans: u64 = t.scan_literals.iter().sum();
        let short: u64 = t.scan_literals.iter().take(len).sum();
        if scans >= 20 && short as f64 >= 0.5 * scans as f64 {
            // the longest literal that at least half the scans give
            let mut seen = 0;
            let mut median = 0;
            for (l, c) in t.scan_literals.iter().enumerate() {
                seen += c;
                if 2 * seen >= scans {
                    median = l;
                    break;
                }
            }
            out.push(Finding {
                rule: "prefix_too_long",
                evidence: format!(
                    "{short} of {scans} prefix scans gave fewer than the prefix column's {len} bytes (median {median}): each read all {n} partitions"
                ),
                advice: "size the prefix column to what scans give: its length should be the shortest literal prefix the application scans with".into(),
                ddl: (median > 0).then(|| format!(
                    "K_PREFIX varbinary({median}) GENERATED ALWAYS AS (substring(K, 1, {median})) -- in {table}'s CREATE TABLE"
                )),
            });
        }
    }

    // rowkey length: at most 1 KB, best at most 16 bytes
    if let Some(median) = t.median_key_bucket() {
        if t.longest_key > 1024 || median > 64 {
            out.push(Finding {
                rule: "long_rowkey",
                evidence: format!(
                    "median rowkey length {}, longest {} bytes",
                    match KEY_LENGTHS.iter().position(|&b| b == median) {
                        Some(i) if i > 0 => format!("{}–{}", KEY_LENGTHS[i - 1] + 1, median),
                        Some(_) => format!("≤ {median}"),
                        None => "over 1024".into(),
                    },
                    t.longest_key
                ),
                advice: "keep rowkeys short (at most 1 KB, best 16 bytes or less): every cell repeats the rowkey; encode numbers in binary, shorten the fields".into(),
                ddl: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::table::Shape;
    use super::*;

    /// A fixed-seed generator for the tests (splitmix64).
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// Issue 42: rows whose rowkeys the sample did not take still count, in their partitions
    /// and in the distinct count of partitioning keys, so a prefix too short for its
    /// partitions is found from every row written while the sketches read one in sixteen; and
    /// the evidence counts every row.
    #[test]
    fn a_short_prefix_is_found_from_every_row_while_the_sketches_read_a_sample() {
        let mut next = rng(11);
        let p = Partitioning::Key {
            prefix_len: Some(2),
            partitions: 97,
        };
        let mut t = stats(p.clone());
        let mut sampler = crate::hbase::advisor::Sampler::new(crate::hbase::advisor::Sampling {
            every: 16,
            seed: 3,
        });
        for _ in 0..1600 {
            let k = format!("{:08}|{:08}", next() % 100_000_000, next());
            let k = k.as_bytes();
            if sampler.take() {
                t.write(k, 100);
            } else {
                t.write_counted(p.partition_of(k), 100);
                t.distinct_key(crate::hbase::advisor::stats::Distinct::update_of(
                    p.key_hash(k),
                ));
                t.longest(k.len());
            }
        }
        assert!(t.writes < 200 && t.rows_written() == 1600, "{}", t.writes);
        let f = findings("g$f", &t, true);
        let short = f
            .iter()
            .find(|f| f.rule == "prefix_too_short")
            .unwrap_or_else(|| panic!("{f:?}"));
        assert!(short.evidence.contains("over 1600 writes"), "{short:?}");
        // the same rows with only the sampled ones counted (the rows read alone) are too few
        // to tell: 8 a partition are needed
        let mut few = stats(p.clone());
        let mut next = rng(11);
        let mut sampler = crate::hbase::advisor::Sampler::new(crate::hbase::advisor::Sampling {
            every: 16,
            seed: 3,
        });
        for _ in 0..1600 {
            let k = format!("{:08}|{:08}", next() % 100_000_000, next());
            if sampler.take() {
                few.write(k.as_bytes(), 100);
            }
        }
        assert!(!rules(&findings("g$f", &few, true)).contains(&"prefix_too_short"));
    }

    /// Uniform random keys through the real partition function: the false-alarm rate of the
    /// hot-partition test at 97 and 997 partitions, at 10 and at 100 keys a partition (where a
    /// fixed "largest > 2 × mean" cut-off fires 11% and 80% of the time at 10).
    #[test]
    fn uniform_keys_are_never_called_hot() {
        let mut next = rng(7);
        for &parts in &[97u32, 997] {
            for &per in &[10usize, 100] {
                let p = Partitioning::Key {
                    prefix_len: None,
                    partitions: parts,
                };
                let mut old_verdict = 0;
                for _ in 0..100 {
                    let mut counts = vec![0u64; parts as usize];
                    for _ in 0..per * parts as usize {
                        let k = next().to_be_bytes();
                        if let Some(i) = p.partition_of(&k) {
                            counts[i as usize] += 1;
                        }
                    }
                    assert_eq!(hot_partition(&counts), None, "{parts} × {per}");
                    let max = *counts.iter().max().unwrap_or(&0) as f64;
                    if max > 2.0 * per as f64 {
                        old_verdict += 1;
                    }
                }
                if per == 10 {
                    // the cut-off this test replaces does cry wolf on the same keys
                    assert!(old_verdict > 0, "{parts}: {old_verdict}");
                }
            }
        }
    }

    #[test]
    fn a_hot_partition_is_found_at_any_size() {
        for &parts in &[7usize, 97, 997] {
            for &per in &[10u64, 1000] {
                // 3× the mean, or 4× at 10 a partition (30 against 10 is one in ~10^7,
                // about the chance of seeing it somewhere among 997 partitions by luck)
                let mut counts = vec![per; parts];
                counts[parts / 2] = per * if per < 100 { 4 } else { 3 };
                let h = hot_partition(&counts).expect("hot");
                assert_eq!(h.partition, parts / 2);
            }
        }
        // a little over the mean is not hot, however many
        let mut counts = vec![1_000_000u64; 97];
        counts[3] = 1_010_000;
        assert_eq!(hot_partition(&counts), None);
    }

    fn stats(p: Partitioning) -> TableStats {
        TableStats::new(p, Shape::default())
    }

    fn rules(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn the_guides_bad_designs_are_found_and_good_ones_pass() {
        let key = |prefix: Option<usize>, n: u32| Partitioning::Key {
            prefix_len: prefix,
            partitions: n,
        };
        let range = Partitioning::RangeK {
            bounds: vec![
                crate::hbase::partition::RangeBound::LessThan(b"1600000000000".to_vec()),
                crate::hbase::partition::RangeBound::LessThan(b"1700000000000".to_vec()),
                crate::hbase::partition::RangeBound::MaxValue,
            ],
        };
        let mut next = rng(11);
        // timestamp|msgid on RANGE
        let mut t = stats(range.clone());
        for i in 0..2000u64 {
            t.write(
                format!("{}|{}", 1_750_000_000_000 + i, next() % 1000).as_bytes(),
                100,
            );
        }
        let f = findings("g$f", &t, true);
        assert!(rules(&f).contains(&"monotonic_key"), "{f:?}");
        assert!(rules(&f).contains(&"range_last_partition"), "{f:?}");
        // msgtype|msgid, 4 types, prefix covering the type
        let mut t = stats(key(Some(4), 97));
        for _ in 0..4000 {
            let ty = ["ord", "pay", "log", "msg"][(next() % 4) as usize];
            t.write(format!("{ty}|{:016x}", next()).as_bytes(), 100);
        }
        assert_eq!(
            rules(&findings("g$f", &t, true)),
            ["hot_partition", "few_valued_lead"]
        );
        // a 64-byte prefix on 8-byte user ids, scanned by user id
        let mut t = stats(key(Some(64), 97));
        for _ in 0..4000 {
            let user = format!("{:08}", next() % 100_000);
            t.write(format!("{user}|{:020}", next()).as_bytes(), 100);
            t.scan(user.as_bytes(), None, 100);
        }
        assert!(rules(&findings("g$f", &t, true)).contains(&"prefix_too_long"));
        // one hot user
        let mut t = stats(key(Some(8), 97));
        for i in 0..4000u64 {
            let user = if i % 3 == 0 {
                "00000042".to_string()
            } else {
                format!("{:08}", next() % 100_000)
            };
            t.write(format!("{user}|{:020}", next()).as_bytes(), 100);
        }
        let f = findings("g$f", &t, true);
        assert!(rules(&f).contains(&"hot_key"), "{f:?}");
        assert!(rules(&f).contains(&"hot_partition"), "{f:?}");
        assert!(f.iter().any(|f| f.evidence.contains("00000042")));
        assert!(!findings("g$f", &t, false)
            .iter()
            .any(|f| f.evidence.contains("00000042")));
        // a prefix too short for the key space: 2 bytes of digits
        let mut t = stats(key(Some(2), 97));
        for _ in 0..4000 {
            t.write(
                format!("{:08}|{:08}", next() % 100_000_000, next()).as_bytes(),
                100,
            );
        }
        let f = findings("g$f", &t, true);
        assert_eq!(rules(&f), ["hot_partition", "prefix_too_short"], "{f:?}");
        assert!(
            f[1].ddl.as_deref().unwrap_or("").contains("varbinary("),
            "{f:?}"
        );
        // good designs: salted keys on RANGE bounds that follow the salt, hashed keys, reversed
        // timestamps behind a user id, uniform keys
        let salted = Partitioning::RangeK {
            bounds: ["25", "50", "75"]
                .iter()
                .map(|b| crate::hbase::partition::RangeBound::LessThan(b.as_bytes().to_vec()))
                .chain([crate::hbase::partition::RangeBound::MaxValue])
                .collect(),
        };
        let mut t = stats(salted);
        for i in 0..5000u64 {
            let id = next();
            t.write(
                format!("{:02}|{}|{id}", id % 100, 1_750_000_000_000 + i).as_bytes(),
                100,
            );
            t.scan(format!("{:02}|175", id % 100).as_bytes(), None, 100);
        }
        assert_eq!(findings("g$f", &t, true), [], "salted");
        let mut t = stats(key(Some(8), 97));
        for i in 0..5000u64 {
            let h = super::super::stats::hash(&i.to_be_bytes()) as u32;
            t.write(
                format!("{h:08x}|{}|{i}", 1_750_000_000_000 + i).as_bytes(),
                100,
            );
        }
        assert_eq!(findings("g$f", &t, true), [], "hashed");
        let mut t = stats(key(Some(8), 97));
        for i in 0..5000u64 {
            let user = next() % 100_000_000;
            t.write(
                format!("{user:08}{}", i64::MAX as u64 - 1_750_000_000_000 - i).as_bytes(),
                100,
            );
            let prefix = format!("{user:08}");
            let pruned = key(Some(8), 97).partition_of(prefix.as_bytes());
            t.scan(prefix.as_bytes(), pruned, 100);
        }
        assert_eq!(findings("g$f", &t, true), [], "reversed");
        let mut t = stats(key(None, 997));
        for _ in 0..20_000 {
            t.write(&next().to_be_bytes(), 100);
            t.get(&next().to_be_bytes(), 100);
        }
        assert_eq!(findings("g$f", &t, true), []);
    }

    #[test]
    fn keys_are_shown_escaped_and_cut() {
        assert_eq!(show_key(b"ab\x00\\", false), "ab\\x00\\x5c");
        assert_eq!(show_key(&[b'x'; 40], false), format!("{}…", "x".repeat(32)));
        assert_eq!(show_key(b"<script>", true), "<script>…");
    }
}
