//! Where OceanBase puts a row: the partition function of the OBKV-HBase model.
//!
//! KEY partitioning (verified on OceanBase 4.3.5.3, see `shared/docs/obkv-model.md`):
//! `h = MurmurHash64A(key bytes, seed 0)`, `v = |h as i64|`, partition = `v % N`, partitions
//! numbered in definition order. For KEY(prefix column) the key is `K[..min(n, len(K))]`.
//! RANGE COLUMNS(K): the first partition whose bound is greater than the key (byte order).

use std::cmp::Ordering;

/// The partitioning of an HBase table, as the model understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partitioning {
    /// No PARTITION BY clause.
    None,
    /// `PARTITION BY KEY(K)` (prefix_len None) or `KEY(prefix column)` with
    /// `prefix = substring(K, 1, n)` (prefix_len Some(n)).
    Key {
        prefix_len: Option<usize>,
        partitions: u32,
    },
    /// `PARTITION BY RANGE COLUMNS(K)`: upper bounds in definition order.
    RangeK { bounds: Vec<RangeBound> },
}

use crate::sql::ddl::CreateTable;
pub use crate::sql::ddl::RangeBound;

/// The model's partitioning of a table definition.
pub trait ModelPartitioning {
    /// The model's view of the partitioning, when the clause is one the model supports.
    fn model_partitioning(&self) -> Option<Partitioning>;
}

impl ModelPartitioning for CreateTable {
    fn model_partitioning(&self) -> Option<Partitioning> {
        let Some(p) = &self.partition else {
            return Some(Partitioning::None);
        };
        match (p.kind.as_str(), p.columns.as_slice()) {
            ("KEY", [c]) if c.eq_ignore_ascii_case("K") => Some(Partitioning::Key {
                prefix_len: None,
                partitions: p.count.unwrap_or(1) as u32,
            }),
            ("KEY", [c]) => {
                let (name, n) = self.prefix_column()?;
                name.eq_ignore_ascii_case(c).then(|| Partitioning::Key {
                    prefix_len: Some(n as usize),
                    partitions: p.count.unwrap_or(1) as u32,
                })
            }
            ("RANGE COLUMNS", [c]) if c.eq_ignore_ascii_case("K") => Some(Partitioning::RangeK {
                bounds: p.bounds.clone(),
            }),
            _ => None,
        }
    }
}

impl Partitioning {
    pub fn partition_count(&self) -> u32 {
        match self {
            Partitioning::None => 1,
            Partitioning::Key { partitions, .. } => *partitions,
            Partitioning::RangeK { bounds } => bounds.len() as u32,
        }
    }

    /// The bytes of a rowkey a KEY partitioning hashes (its prefix, or all of it): two rowkeys
    /// with the same ones are in the same partition. None for the other partitionings.
    pub fn key_bytes<'k>(&self, rowkey: &'k [u8]) -> Option<&'k [u8]> {
        match self {
            Partitioning::Key {
                prefix_len: Some(n),
                ..
            } => Some(rowkey.get(..*n).unwrap_or(rowkey)),
            Partitioning::Key {
                prefix_len: None, ..
            } => Some(rowkey),
            _ => None,
        }
    }

    /// A 64-bit hash of a rowkey's partitioning key (`key_bytes`, or the whole rowkey for the
    /// other partitionings): what the advisor's distinct count of partitioning keys reads. For
    /// KEY it is the hash the partition is taken from (`place`).
    pub fn key_hash(&self, rowkey: &[u8]) -> u64 {
        murmur2::murmur64a(self.key_bytes(rowkey).unwrap_or(rowkey), 0)
    }

    /// `partition_of`, with `key_hash` when the partition was worked out from it (KEY).
    #[inline]
    pub fn place(&self, rowkey: &[u8]) -> (Option<u32>, Option<u64>) {
        match self {
            Partitioning::Key { partitions, .. } => {
                let h = self.key_hash(rowkey);
                (Some(key_partition_of_hash(h, *partitions)), Some(h))
            }
            _ => (self.partition_of(rowkey), None),
        }
    }

    /// The partition index of a rowkey; `None` when no RANGE partition takes it (a key at or
    /// above the last bound without MAXVALUE, which the database rejects).
    pub fn partition_of(&self, rowkey: &[u8]) -> Option<u32> {
        match self {
            Partitioning::None => Some(0),
            Partitioning::Key {
                prefix_len,
                partitions,
            } => Some(key_partition(rowkey, *prefix_len, *partitions)),
            Partitioning::RangeK { bounds } => range_partition(rowkey, bounds),
        }
    }

    /// Human-readable form, as it would appear in DDL.
    pub fn describe(&self) -> String {
        match self {
            Partitioning::None => "no partitioning".into(),
            Partitioning::Key {
                prefix_len: None,
                partitions,
            } => format!("KEY(K) PARTITIONS {partitions}"),
            Partitioning::Key {
                prefix_len: Some(n),
                partitions,
            } => {
                format!("KEY(prefix of K, {n} bytes) PARTITIONS {partitions}")
            }
            Partitioning::RangeK { bounds } => {
                format!("RANGE COLUMNS(K) with {} partitions", bounds.len())
            }
        }
    }
}

/// OceanBase's KEY partition for one varbinary partition column.
pub fn key_partition(rowkey: &[u8], prefix_len: Option<usize>, partitions: u32) -> u32 {
    let data = match prefix_len {
        Some(n) => &rowkey[..n.min(rowkey.len())],
        None => rowkey,
    };
    key_partition_of_hash(murmur2::murmur64a(data, 0), partitions)
}

/// `key_partition` of the partitioning key whose MurmurHash64A (seed 0) is `h`.
#[inline]
fn key_partition_of_hash(h: u64, partitions: u32) -> u32 {
    let v = (h as i64).unsigned_abs();
    (v % u64::from(partitions.max(1))) as u32
}

/// MariaDB's (and MySQL's) KEY placement of one VARBINARY column, for tables the proxy keeps on
/// those servers: the binary collation's hash (`my_hash_sort_bin`, seeds 1 and 4) truncated to
/// 32 bits, modulo the partition count. Verified with EXPLAIN PARTITIONS on MariaDB 10.11.
pub fn mariadb_key_partition(rowkey: &[u8], prefix_len: Option<usize>, partitions: u32) -> u32 {
    let data = match prefix_len {
        Some(n) => &rowkey[..n.min(rowkey.len())],
        None => rowkey,
    };
    let (mut nr1, mut nr2) = (1u32, 4u32);
    for &b in data {
        nr1 ^= (((nr1 & 63).wrapping_add(nr2)).wrapping_mul(u32::from(b))).wrapping_add(nr1 << 8);
        nr2 = nr2.wrapping_add(3);
    }
    nr1 % partitions.max(1)
}

/// VARBINARY comparison: bytewise, a proper prefix sorts first.
fn range_partition(rowkey: &[u8], bounds: &[RangeBound]) -> Option<u32> {
    bounds
        .iter()
        .position(|b| match b {
            RangeBound::MaxValue => true,
            RangeBound::LessThan(v) => rowkey.cmp(v.as_slice()) == Ordering::Less,
        })
        .map(|i| i as u32)
}

/// How a set of keys spreads over the partitions: the numbers a user needs to judge a rowkey
/// design before loading data.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub keys: u64,
    pub counts: Vec<u64>,
    /// Keys no partition takes (RANGE without MAXVALUE).
    pub rejected: u64,
}

impl Spread {
    pub fn of<'a>(p: &Partitioning, keys: impl IntoIterator<Item = &'a [u8]>) -> Spread {
        let mut s = Spread {
            keys: 0,
            counts: vec![0; p.partition_count() as usize],
            rejected: 0,
        };
        for k in keys {
            s.keys += 1;
            match p.partition_of(k).and_then(|i| s.counts.get_mut(i as usize)) {
                Some(c) => *c += 1,
                None => s.rejected += 1,
            }
        }
        s
    }

    pub fn mean(&self) -> f64 {
        (self.keys - self.rejected) as f64 / self.counts.len().max(1) as f64
    }

    pub fn max(&self) -> u64 {
        self.counts.iter().copied().max().unwrap_or(0)
    }

    pub fn min(&self) -> u64 {
        self.counts.iter().copied().min().unwrap_or(0)
    }

    pub fn empty_partitions(&self) -> usize {
        self.counts.iter().filter(|c| **c == 0).count()
    }

    /// Largest partition over the mean: 1.0 is a perfect spread; a hotspot shows as a big ratio.
    pub fn skew(&self) -> f64 {
        let mean = self.mean();
        if mean == 0.0 {
            0.0
        } else {
            self.max() as f64 / mean
        }
    }

    pub fn coefficient_of_variation(&self) -> f64 {
        let mean = self.mean();
        if mean == 0.0 {
            return 0.0;
        }
        let n = self.counts.len() as f64;
        let var = self
            .counts
            .iter()
            .map(|c| (*c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        var.sqrt() / mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mariadb_placement_matches_explain() {
        // read back with EXPLAIN PARTITIONS from MariaDB 10.11, KEY(K_PREFIX) PARTITIONS 7
        for (k, p) in [
            (&b"abcd"[..], 4),
            (b"abce", 5),
            (b"a", 5),
            (b"zzzz", 1),
            (b"\xff\xff\xff\xff", 5),
            (b"", 1),
        ] {
            assert_eq!(mariadb_key_partition(k, Some(4), 7), p, "{k:?}");
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
            .collect()
    }

    /// The 418 placements read back from a real OceanBase 4.3.5.3 kernel.
    #[test]
    fn matches_every_placement_read_from_oceanbase() {
        // a copy of shared/testdata/oceanbase_key_partitions.tsv, kept with the tests
        let text = include_str!("../../tests/data/oceanbase_key_partitions.tsv");
        let mut checked = 0;
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 4, "{line}");
            let partitions: u32 = f[0].parse().expect("partitions");
            let prefix: usize = f[1].parse().expect("prefix");
            let key = hex(f[2]);
            let expected: u32 = f[3].parse().expect("partition");
            let p = Partitioning::Key {
                prefix_len: (prefix > 0).then_some(prefix),
                partitions,
            };
            assert_eq!(
                p.partition_of(&key),
                Some(expected),
                "key {} in {line}",
                f[2]
            );
            checked += 1;
        }
        assert_eq!(checked, 418);
    }

    #[test]
    fn short_and_empty_keys_under_a_prefix() {
        let p = Partitioning::Key {
            prefix_len: Some(4),
            partitions: 193,
        };
        assert_eq!(p.partition_of(b""), Some(0));
        // a key shorter than the prefix hashes whole; longer keys hash only their prefix
        assert_eq!(p.partition_of(b"ab"), Some(key_partition(b"ab", None, 193)));
        assert_eq!(p.partition_of(b"abcdXYZ"), p.partition_of(b"abcd"));
    }

    #[test]
    fn range_columns_placement() {
        let p = Partitioning::RangeK {
            bounds: vec![
                RangeBound::LessThan(b"a".to_vec()),
                RangeBound::LessThan(b"w".to_vec()),
                RangeBound::MaxValue,
            ],
        };
        assert_eq!(p.partition_of(b""), Some(0));
        assert_eq!(p.partition_of(b"\x00zzz"), Some(0));
        assert_eq!(p.partition_of(b"a"), Some(1));
        assert_eq!(p.partition_of(b"vzzz"), Some(1));
        assert_eq!(p.partition_of(b"w"), Some(2));
        assert_eq!(p.partition_of(&[0xff, 0xff]), Some(2));
        let no_max = Partitioning::RangeK {
            bounds: vec![RangeBound::LessThan(b"m".to_vec())],
        };
        assert_eq!(no_max.partition_of(b"z"), None);
    }

    #[test]
    fn spread_reports_skew() {
        let p = Partitioning::Key {
            prefix_len: Some(1),
            partitions: 23,
        };
        let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("a{i}").into_bytes()).collect();
        let s = Spread::of(&p, keys.iter().map(Vec::as_slice));
        // a one-byte prefix shared by every key: all rows in one partition
        assert_eq!(s.max(), 1000);
        assert_eq!(s.empty_partitions(), 22);
        assert!(s.skew() > 20.0);
        let even = Partitioning::Key {
            prefix_len: None,
            partitions: 23,
        };
        let s = Spread::of(&even, keys.iter().map(Vec::as_slice));
        assert_eq!(s.empty_partitions(), 0);
        assert!(s.skew() < 2.0, "{}", s.skew());
    }
}
