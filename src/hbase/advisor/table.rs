//! What the advisor keeps about one HBase table's traffic, in a size fixed when the table is
//! first seen (its partition count sets it; `TableStats::bytes` is the figure the budget in
//! docs/ADVISOR.md adds up).

use super::stats::{hash, prefix_hashes, Distinct, TopK};
use super::{Sampler, Sampling};
use crate::hbase::partition::Partitioning;

/// How the advisor's memory is shaped (`[advisor]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Seconds an epoch (one column of the heatmap) covers.
    pub epoch_seconds: u64,
    /// Epochs kept (the heatmap's width); older ones are summed into the totals only.
    pub epochs: usize,
    /// Rowkeys kept as a uniform sample for what-if replays.
    pub sample: usize,
    /// One write (and one get) in this many, at random, goes to the sketches: the top lists,
    /// the prefixes' distinct counts, the leading field, the order and the lengths of rowkeys,
    /// the sample (`super::Sampling`; the writes are sampled where they are read, so that a
    /// row not taken costs its statement no copy of its rowkey). The partition counts, the
    /// partitioning key's distinct count and the longest rowkey see every row. A uniform
    /// sample keeps every share the detectors read (a hot key's, a leading field's values,
    /// ascending pairs); their thresholds count sampled operations.
    pub sample_every: u32,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            epoch_seconds: 10,
            epochs: 8,
            sample: 128,
            sample_every: 16,
        }
    }
}

/// Candidate prefix lengths whose distinct counts are kept (and the table's own).
pub const PREFIX_LENGTHS: [usize; 8] = [1, 2, 4, 6, 8, 12, 16, 24];
/// Rowkeys longer than this are not sampled (a KEY(K) replay needs the whole key).
pub const SAMPLE_KEY_BYTES: usize = 128;
/// Bytes of a rowkey or prefix kept in the top lists.
pub const TOP_KEY_BYTES: usize = 48;
/// Entries in each top list.
pub const TOP_ENTRIES: usize = 16;
/// Whether a byte ends a leading field (`msgtype|msgid`, `user#ts`, `a:b`, `a,b`, `a/b`).
pub fn is_separator(b: u8) -> bool {
    matches!(b, b'|' | b'#' | b':' | b',' | b'/')
}
/// Upper bounds of the rowkey-length buckets (the last is open).
pub const KEY_LENGTHS: [usize; 5] = [8, 16, 64, 256, 1024];
/// Longest scan literal counted by its own length (longer ones share the last bucket).
pub const SCAN_LITERALS: usize = 64;

/// One epoch's reads and writes per partition.
#[derive(Debug, Clone)]
pub struct Epoch {
    /// Its number: unix seconds / epoch_seconds.
    pub number: u64,
    pub reads: Vec<u32>,
    pub writes: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct TableStats {
    pub partitioning: Partitioning,
    pub shape: Shape,
    /// Newest last.
    pub epochs: Vec<Epoch>,
    /// Since the table was first seen, per partition.
    pub total_reads: Vec<u64>,
    pub total_writes: Vec<u64>,
    /// Writes whose rowkey no RANGE partition takes (the database refuses them).
    pub unplaced: u64,
    /// Writes whose rowkey was read (the sample: the sketches', the order's source).
    pub writes: u64,
    /// Rows written whose rowkeys were not read (the sample did not take them, or a statement
    /// had more than `Key::MAX_ROWS`): counted in their partitions and the distinct count of
    /// partitioning keys only. `writes` is a sample of `writes + counted`.
    pub counted: u64,
    pub gets: u64,
    /// Writes and gets that went to the sketches (the writes read; one get in `sample_every`).
    pub sketched: u64,
    pub sketched_gets: u64,
    pub scans: u64,
    pub top_keys: TopK,
    /// The partitioning key's values (the prefix column's, or the rowkey's for KEY(K)).
    pub top_prefixes: TopK,
    pub top_leads: TopK,
    /// Distinct leading fields (up to the first separator), over rowkeys that have one.
    pub leads: Distinct,
    pub with_separator: u64,
    /// Distinct prefixes at each of `PREFIX_LENGTHS`.
    pub prefixes: [Distinct; PREFIX_LENGTHS.len()],
    /// Distinct values of the partitioning key itself, over every row written
    /// (`Partitioning::key_hash`).
    pub partition_keys: Distinct,
    /// Scans by the length of their literal prefix (`SCAN_LITERALS` and over share the last).
    pub scan_literals: [u64; SCAN_LITERALS + 1],
    /// Writes whose rowkey is above / below the previous write's (equal ones are neither).
    pub ascending: u64,
    pub descending: u64,
    last_write: Vec<u8>,
    pub key_lengths: [u64; KEY_LENGTHS.len() + 1],
    pub longest_key: usize,
    /// A uniform sample of written rowkeys (reservoir), for what-if replays.
    pub sample: Vec<Vec<u8>>,
    sampled_from: u64,
    rng: u64,
    /// Which gets go to the sketches (the writes come sampled).
    gets_sampler: Sampler,
    /// The unix second the newest epoch was last made current for (a batch's observations
    /// share one: the epoch is worked out once for them).
    current: u64,
}

impl TableStats {
    pub fn new(partitioning: Partitioning, shape: Shape) -> TableStats {
        let n = partitioning.partition_count().max(1) as usize;
        TableStats {
            partitioning,
            shape,
            epochs: Vec::with_capacity(shape.epochs),
            total_reads: vec![0; n],
            total_writes: vec![0; n],
            unplaced: 0,
            counted: 0,
            writes: 0,
            gets: 0,
            sketched: 0,
            sketched_gets: 0,
            scans: 0,
            top_keys: TopK::new(TOP_ENTRIES, TOP_KEY_BYTES),
            top_prefixes: TopK::new(TOP_ENTRIES, TOP_KEY_BYTES),
            top_leads: TopK::new(TOP_ENTRIES, TOP_KEY_BYTES),
            leads: Distinct::default(),
            with_separator: 0,
            prefixes: Default::default(),
            partition_keys: Distinct::default(),
            scan_literals: [0; SCAN_LITERALS + 1],
            ascending: 0,
            descending: 0,
            last_write: Vec::new(),
            key_lengths: [0; KEY_LENGTHS.len() + 1],
            longest_key: 0,
            sample: Vec::with_capacity(shape.sample),
            sampled_from: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            gets_sampler: Sampler::new(Sampling {
                every: shape.sample_every,
                seed: 0x6a09_e667_f3bc_c908,
            }),
            current: u64::MAX,
        }
    }

    pub fn partitions(&self) -> usize {
        self.total_writes.len()
    }

    /// The most this table's statistics can hold, in bytes (what the budget adds up).
    pub fn bytes(&self) -> usize {
        let n = self.partitions();
        let epochs = self.shape.epochs * (std::mem::size_of::<Epoch>() + 2 * 4 * n);
        let totals = 2 * 8 * n;
        let tops = self.top_keys.bytes() + self.top_prefixes.bytes() + self.top_leads.bytes();
        let sample = self.shape.sample * (std::mem::size_of::<Vec<u8>>() + SAMPLE_KEY_BYTES);
        std::mem::size_of::<TableStats>() + epochs + totals + tops + sample + TOP_KEY_BYTES
    }

    /// The partitioning key of a rowkey: the prefix the partition function reads.
    fn partition_key<'k>(&self, rowkey: &'k [u8]) -> &'k [u8] {
        self.partitioning.key_bytes(rowkey).unwrap_or(rowkey)
    }

    /// The epoch `now` (unix seconds) falls in, made (and the oldest dropped) as time passes.
    #[inline]
    fn epoch(&mut self, now: u64) -> Option<&mut Epoch> {
        if now != self.current {
            self.roll(now);
            self.current = now;
        }
        self.epochs.last_mut()
    }

    /// Makes the epoch `now` falls in the newest.
    #[inline(never)]
    fn roll(&mut self, now: u64) {
        let number = now / self.shape.epoch_seconds.max(1);
        let newest = self.epochs.last().map(|e| e.number);
        if newest.is_none_or(|m| number > m) {
            if self.shape.epochs == 0 {
                return;
            }
            let n = self.partitions();
            let reuse = if self.epochs.len() >= self.shape.epochs {
                Some(self.epochs.remove(0))
            } else {
                None
            };
            let e = match reuse {
                Some(mut e) => {
                    e.number = number;
                    e.reads.iter_mut().for_each(|c| *c = 0);
                    e.writes.iter_mut().for_each(|c| *c = 0);
                    e
                }
                None => Epoch {
                    number,
                    reads: vec![0; n],
                    writes: vec![0; n],
                },
            };
            self.epochs.push(e);
        }
        // a clock that stepped back counts into the newest epoch
    }

    /// A write of `rowkey` (an INSERT's row, a Put), at unix second `now`, its rowkey read.
    pub fn write(&mut self, rowkey: &[u8], now: u64) {
        let p = self.partitioning.partition_of(rowkey);
        self.write_keyed(p, rowkey, rowkey.len(), now);
        self.distinct_key(Distinct::update_of(self.partitioning.key_hash(rowkey)));
        self.longest(rowkey.len());
    }

    /// A write whose rowkey the sample did not take: its partition (None: no partition
    /// takes it). Its partitioning key and length come with the statement's (`distinct_key`,
    /// `longest`).
    pub fn write_counted(&mut self, partition: Option<u32>, now: u64) {
        match partition {
            Some(p) => {
                self.write_partition(p, 1, now);
                self.counted_rows(1, 0);
            }
            None => self.counted_rows(1, 1),
        }
    }

    /// What a written row's partitioning key adds to their distinct count
    /// (`Distinct::update_of` of `Partitioning::key_hash`).
    pub fn distinct_key(&mut self, update: u16) {
        self.partition_keys.add_update(update);
    }

    /// A written rowkey `len` bytes long.
    pub fn longest(&mut self, len: usize) {
        self.longest_key = self.longest_key.max(len);
    }

    /// A write the sample took, of a rowkey `len` bytes long known by its first bytes
    /// (`rowkey`) and its partition (None: no partition takes it): counted, and read by the
    /// sketches. (Its partitioning key and length come with the statement's.)
    pub fn write_keyed(&mut self, partition: Option<u32>, rowkey: &[u8], len: usize, now: u64) {
        self.writes += 1;
        match partition {
            Some(p) => {
                let p = p as usize;
                if let Some(c) = self.total_writes.get_mut(p) {
                    *c += 1;
                }
                if let Some(c) = self.epoch(now).and_then(|e| e.writes.get_mut(p)) {
                    *c = c.saturating_add(1);
                }
            }
            None => self.unplaced += 1,
        }
        let key_bytes = rowkey.get(..TOP_KEY_BYTES).unwrap_or(rowkey);
        let pk = self.partition_key(rowkey);
        let pk_bytes = pk.get(..TOP_KEY_BYTES).unwrap_or(pk);
        self.sketched += 1;
        // each hash once: the rowkey's, the partitioning key's, the prefixes' in one pass
        let hpk = hash(pk_bytes);
        let hk = if pk_bytes.len() == key_bytes.len() {
            hpk
        } else {
            hash(key_bytes)
        };
        self.top_keys.add_hashed(rowkey, hk);
        self.top_prefixes.add_hashed(pk, hpk);
        let prefixes = prefix_hashes(rowkey, &PREFIX_LENGTHS);
        for (d, h) in self.prefixes.iter_mut().zip(prefixes) {
            d.add_hash(h);
        }
        if let Some(end) = rowkey.iter().position(|&b| is_separator(b)) {
            let lead = &rowkey[..end];
            self.with_separator += 1;
            let hl = hash(lead.get(..TOP_KEY_BYTES).unwrap_or(lead));
            self.top_leads.add_hashed(lead, hl);
            self.leads.add_hash(hl);
        }
        // order against the previous write (its first 64 bytes: enough to tell a clock)
        let kept = &rowkey[..rowkey.len().min(64)];
        if self.sketched > 1 {
            match kept.cmp(self.last_write.as_slice()) {
                std::cmp::Ordering::Greater => self.ascending += 1,
                std::cmp::Ordering::Less => self.descending += 1,
                std::cmp::Ordering::Equal => {}
            }
        }
        self.last_write.clear();
        self.last_write.extend_from_slice(kept);
        let bucket = KEY_LENGTHS
            .iter()
            .position(|&b| len <= b)
            .unwrap_or(KEY_LENGTHS.len());
        if let Some(c) = self.key_lengths.get_mut(bucket) {
            *c += 1;
        }
        if len == rowkey.len() {
            self.sample_key(rowkey);
        }
    }

    /// `n` rows written (`unplaced` of them in no partition) whose rowkeys were not read: their
    /// partitions were counted with `write_partition`.
    pub fn counted_rows(&mut self, n: u64, unplaced: u64) {
        self.counted = self.counted.saturating_add(n);
        self.unplaced = self.unplaced.saturating_add(unplaced);
    }

    /// Every row written: those whose rowkeys were read and those counted only.
    pub fn rows_written(&self) -> u64 {
        self.writes.saturating_add(self.counted)
    }

    /// How the rowkey statistics saw the rows: "" when every row's rowkey was read, else the
    /// share (the sample rate a reader of the evidence needs).
    pub fn keys_read(&self) -> String {
        if self.counted == 0 {
            return String::new();
        }
        let all = self.rows_written().max(1);
        format!(
            " (rowkeys read of {} of {all} rows: 1 in {:.1})",
            self.writes,
            all as f64 / self.writes.max(1) as f64
        )
    }

    /// `n` rows written in partition `p` whose keys are not known (an UPDATE or DELETE).
    pub fn write_partition(&mut self, p: u32, n: u64, now: u64) {
        let p = p as usize;
        if let Some(c) = self.total_writes.get_mut(p) {
            *c += n;
        }
        let add = u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(c) = self.epoch(now).and_then(|e| e.writes.get_mut(p)) {
            *c = c.saturating_add(add);
        }
    }

    /// A point read of `rowkey`.
    pub fn get(&mut self, rowkey: &[u8], now: u64) {
        let p = self.partitioning.partition_of(rowkey);
        self.get_cut(rowkey, p, now);
    }

    /// `get` of a rowkey known by its first bytes and its partition.
    pub fn get_cut(&mut self, rowkey: &[u8], partition: Option<u32>, now: u64) {
        self.gets += 1;
        if let Some(p) = partition {
            let p = p as usize;
            if let Some(c) = self.total_reads.get_mut(p) {
                *c += 1;
            }
            if let Some(c) = self.epoch(now).and_then(|e| e.reads.get_mut(p)) {
                *c = c.saturating_add(1);
            }
        }
        if self.gets_sampler.take() {
            self.sketched_gets += 1;
            self.top_keys.add(rowkey);
        }
    }

    /// A prefix scan with literal `prefix`; `partition` is the one it was pruned to (None: it
    /// reads every partition, counted as a read of each).
    pub fn scan(&mut self, prefix: &[u8], partition: Option<u32>, now: u64) {
        self.scan_len(prefix.len(), partition, now);
    }

    /// `scan` of a literal `len` bytes long.
    pub fn scan_len(&mut self, len: usize, partition: Option<u32>, now: u64) {
        self.scans += 1;
        let len = len.min(SCAN_LITERALS);
        if let Some(c) = self.scan_literals.get_mut(len) {
            *c += 1;
        }
        match partition {
            Some(p) => {
                let p = p as usize;
                if let Some(c) = self.total_reads.get_mut(p) {
                    *c += 1;
                }
                if let Some(c) = self.epoch(now).and_then(|e| e.reads.get_mut(p)) {
                    *c = c.saturating_add(1);
                }
            }
            None => {
                self.total_reads.iter_mut().for_each(|c| *c += 1);
                if let Some(e) = self.epoch(now) {
                    e.reads.iter_mut().for_each(|c| *c = c.saturating_add(1));
                }
            }
        }
    }

    /// Reservoir sampling (Vitter's R) with a xorshift generator: every written key has the
    /// same chance to be in the sample.
    fn sample_key(&mut self, rowkey: &[u8]) {
        if rowkey.len() > SAMPLE_KEY_BYTES || self.shape.sample == 0 {
            return;
        }
        self.sampled_from += 1;
        if self.sample.len() < self.shape.sample {
            self.sample.push(rowkey.to_vec());
            return;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let j = self.rng % self.sampled_from;
        if let Some(slot) = self.sample.get_mut(j as usize) {
            slot.clear();
            slot.extend_from_slice(rowkey);
        }
    }

    /// Reads and writes per partition over the epochs kept (the recent window).
    pub fn recent(&self) -> (Vec<u64>, Vec<u64>) {
        let n = self.partitions();
        let (mut r, mut w) = (vec![0u64; n], vec![0u64; n]);
        for e in &self.epochs {
            for (a, b) in r.iter_mut().zip(&e.reads) {
                *a += u64::from(*b);
            }
            for (a, b) in w.iter_mut().zip(&e.writes) {
                *a += u64::from(*b);
            }
        }
        (r, w)
    }

    /// The median rowkey length's bucket bound (None before any write).
    pub fn median_key_bucket(&self) -> Option<usize> {
        let total: u64 = self.key_lengths.iter().sum();
        if total == 0 {
            return None;
        }
        let mut seen = 0;
        for (i, c) in self.key_lengths.iter().enumerate() {
            seen += c;
            if 2 * seen >= total {
                return Some(KEY_LENGTHS.get(i).copied().unwrap_or(usize::MAX));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key97() -> Partitioning {
        Partitioning::Key {
            prefix_len: Some(4),
            partitions: 97,
        }
    }

    #[test]
    fn epochs_roll_and_totals_keep_everything() {
        let shape = Shape {
            epoch_seconds: 10,
            epochs: 3,
            sample: 4,
            sample_every: 1,
        };
        let mut t = TableStats::new(key97(), shape);
        for s in 0..100u64 {
            t.write(format!("u{:03}|x", s % 50).as_bytes(), 1000 + s);
        }
        assert_eq!(t.epochs.len(), 3);
        assert_eq!(t.epochs.last().map(|e| e.number), Some(109));
        let (_, w) = t.recent();
        assert_eq!(w.iter().sum::<u64>(), 30);
        assert_eq!(t.total_writes.iter().sum::<u64>(), 100);
        assert_eq!(t.sample.len(), 4);
        // every write read goes to the sketches (the writes come sampled)
        assert_eq!(t.with_separator, 100);
        assert_eq!(t.sketched, 100);
        assert!(t.bytes() < 128 * 1024, "{}", t.bytes());
    }

    #[test]
    fn order_and_lengths_are_counted() {
        let mut t = TableStats::new(key97(), Shape::default());
        for i in 0..100u64 {
            t.write(format!("{:012}", 1_700_000_000 + i).as_bytes(), 5);
        }
        // the sketched writes in order
        assert_eq!((t.ascending, t.descending), (99, 0));
        assert_eq!(t.median_key_bucket(), Some(16));
        t.scan(b"17", None, 5);
        t.scan(b"1700", Some(3), 5);
        assert_eq!(t.scan_literals[2], 1);
        assert_eq!(t.scan_literals[4], 1);
        assert_eq!(t.total_reads[3], 2);
    }

    #[test]
    fn memory_is_fixed_by_the_partition_count() {
        let p = Partitioning::Key {
            prefix_len: None,
            partitions: 997,
        };
        let mut t = TableStats::new(p, Shape::default());
        let bound = t.bytes();
        for i in 0..20_000u64 {
            t.write(&i.to_be_bytes().repeat(20), i / 100);
        }
        // the sample skips keys over 128 bytes; the epochs are the shape's
        assert!(t.sample.is_empty());
        assert_eq!(t.epochs.len(), 8);
        assert!(bound < 140 * 1024, "{bound}");
    }
}
