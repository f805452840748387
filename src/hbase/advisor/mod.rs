//! The live rowkey-design advisor: what the proxy sees of each HBase table's traffic, kept in
//! a fixed budget (`table`), the statistics it needs (`stats`), and the guides' rules read
//! from them (`detect`). Pure; the session feeds it (`crate::advisor` keeps the tables).

pub mod detect;
pub mod stats;
pub mod table;

/// What one statement showed the advisor of one row, of its keyed rows (`Writes`) or of one
/// read. Small (a statement's observations are moved from the policy engine to the session and
/// into a thread's batch: scripts/cost.sh counts every byte of that); the bounds on them count
/// the rows they show (`weight`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// A row written with this rowkey (a one-row INSERT's, cut, see `Key`) the sample took
    /// (`Sampling`), in this partition (None: no partition takes it); `distinct`: what its
    /// partitioning key adds to the distinct count (`stats::Distinct::update_of`).
    Write {
        partition: Option<u32>,
        key: Key,
        distinct: u16,
    },
    /// A one-row INSERT's row the sample did not take: its partition, what its partitioning key
    /// adds to the distinct count, and its rowkey's length.
    Row {
        partition: Option<u32>,
        distinct: u16,
        len: u32,
    },
    /// Every row of a statement of several (the sampled and the rest): what their partitioning
    /// keys add to the distinct count (at most `2 × DISTINCT_UPDATES`; a few held inline: a
    /// batch's rows often share their partitioning key) and the longest rowkey.
    Keys {
        distinct: smallvec::SmallVec<[u16; 4]>,
        longest: u32,
    },
    /// Rows written with these rowkeys (a multi-row INSERT's the sample took, cut), in order,
    /// each in its partition: one observation for all the rows of a statement whose rowkeys
    /// are read (a 100-row INSERT's rows are moved as one list, not as 100 observations; a
    /// one-row INSERT's row is a `Write`, and its list freed at once, where the allocator
    /// gives the next statement's the same memory).
    Writes(Vec<(Option<u32>, Key)>),
    /// A row written in this partition whose rowkey only placed it (an UPDATE, a DELETE).
    Placed { partition: u32 },
    /// A read of one rowkey, in this partition (None: no partition takes it).
    Get { partition: Option<u32>, key: Key },
    /// A scan of the keys beginning with a literal `len` bytes long, pruned to `partition`
    /// (None: it reads every partition).
    Scan { len: u32, partition: Option<u32> },
    /// Rows written whose rowkeys were not read (those of one statement past the first
    /// `Key::MAX_ROWS`): how many in each partition (partition, rows), and in none.
    Counts {
        counts: Box<[(u32, u32)]>,
        unplaced: u32,
    },
}

impl Observed {
    /// How many rows this observation shows with their rowkeys or partitions: what the
    /// bounds on a text's, a transaction's and a thread's observations count (rows counted
    /// by partition only, `Counts`, count as one).
    pub fn weight(&self) -> usize {
        match self {
            // (the rows of `Keys` are counted in the observations beside it)
            Observed::Writes(rows) => rows.len(),
            _ => 1,
        }
    }
}

/// Updates of the distinct count one statement's rows show at most: past them, one a register
/// (`stats::Distinct` has 256), so a million-row LOAD shows 256.
pub const DISTINCT_UPDATES: usize = 256;

/// Which rows of a statement the advisor reads the rowkey of: each with chance 1 in `every`
/// (0: none; 1: every row), drawn from `seed` (one a statement). The rows it does not take
/// are counted in their partitions, their partitioning keys in the distinct count, and their
/// lengths in the longest: only the sketches read a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    pub every: u32,
    pub seed: u64,
}

impl Sampling {
    pub const OFF: Sampling = Sampling { every: 0, seed: 0 };
    pub const ALL: Sampling = Sampling { every: 1, seed: 0 };

    pub fn on(&self) -> bool {
        self.every > 0
    }

    /// The sampling of part `n` of what this one was drawn for (a text's statement by where it
    /// starts, a bulk execution's row set by its first row): the seed mixed with `n`, so each
    /// part draws its own sample (part 0 is this one).
    pub fn part(self, n: usize) -> Sampling {
        Sampling {
            seed: self.seed ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..self
        }
    }
}

/// A `Sampling` drawn: each row taken with chance 1 / every, independently of the others (a
/// Bernoulli sample: no period in the keys can line up with it, as a one-in-N count's can).
/// One step of a 64-bit linear congruential generator a row, its high 32 bits compared with
/// the threshold; no floating point, so a one-row statement pays a few multiplications.
#[derive(Debug, Clone)]
pub struct Sampler {
    state: u64,
    /// 2^32 / every: a row is taken when the generator's high half is below it.
    threshold: u64,
}

impl Sampler {
    pub fn new(s: Sampling) -> Sampler {
        // the seed mixed (splitmix64's finaliser): nearby seeds start far apart
        let mut z = s.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Sampler {
            state: z ^ (z >> 31),
            threshold: (1u64 << 32) / u64::from(s.every.max(1)),
        }
    }

    /// Whether every row is taken.
    pub fn takes_all(&self) -> bool {
        self.threshold >= 1 << 32
    }

    /// At least how many of `n` rows are taken, nearly always: all of them when every row is,
    /// else the mean and four standard deviations.
    pub fn likely(&self, n: usize) -> usize {
        if self.takes_all() {
            return n;
        }
        let p = self.threshold as f64 / (1u64 << 32) as f64;
        let mean = n as f64 * p;
        (mean + 4.0 * (mean * (1.0 - p)).sqrt()).ceil() as usize + 1
    }

    /// Whether the next row is taken.
    #[inline]
    pub fn take(&mut self) -> bool {
        // Knuth's MMIX multiplier and increment
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.state >> 32) < self.threshold
    }
}

/// Bytes of a rowkey an observation holds without an allocation.
const INLINE_KEY: usize = 48;

/// A rowkey as the advisor keeps it: its first `KEY_BYTES` bytes and its length (what is
/// buffered for a statement is bounded whatever its keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// Inline up to 48 bytes: most rowkeys cost no allocation (a longer one is kept in its
    /// owner's buffer, `Key::owned`). Holding the checker's buffers in a batch instead, until it
    /// is folded, cost a text INSERT ~120 instructions in the allocator (scripts/cost.sh).
    pub bytes: smallvec::SmallVec<[u8; INLINE_KEY]>,
    pub len: u32,
}

impl Key {
    pub const KEY_BYTES: usize = table::SAMPLE_KEY_BYTES;
    /// Rows of one statement (or text) whose rowkeys are observed at most; the rest are
    /// counted by partition (`Observed::Counts`).
    pub const MAX_ROWS: usize = 256;

    pub fn of(k: &[u8]) -> Key {
        Key {
            bytes: smallvec::SmallVec::from_slice(k.get(..Self::KEY_BYTES).unwrap_or(k)),
            len: u32::try_from(k.len()).unwrap_or(u32::MAX),
        }
    }

    /// A key from its owner's buffer: copied inline (and the buffer freed) when it fits, else
    /// the buffer itself, cut to `KEY_BYTES` with its spare capacity given back (a batch never
    /// holds more than `KEY_BYTES` a key).
    pub fn owned(mut k: Vec<u8>) -> Key {
        if k.len() <= INLINE_KEY {
            return Key::of(&k);
        }
        let len = u32::try_from(k.len()).unwrap_or(u32::MAX);
        k.truncate(Self::KEY_BYTES);
        k.shrink_to_fit();
        Key {
            bytes: smallvec::SmallVec::from_vec(k),
            len,
        }
    }

    /// The whole key's length.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `[advisor]`: on or off, and its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub enabled: bool,
    pub max_tables: usize,
    pub max_bytes: usize,
    pub shape: table::Shape,
    /// A table with no traffic for this long is forgotten (its slot and bytes freed).
    pub idle_seconds: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            max_tables: 50,
            max_bytes: 8 << 20,
            shape: table::Shape::default(),
            idle_seconds: 3600,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample of one in `every` takes about one row in `every`, independently of where the
    /// row is: a million draws are within five standard deviations of the mean, every residue
    /// of a period of `every` gets its share (a one-in-N count would take one residue only),
    /// two seeds draw two different samples, and one in one takes every row.
    #[test]
    fn a_sample_takes_one_row_in_every_at_random() {
        for every in [2u32, 16, 100] {
            let mut s = Sampler::new(Sampling { every, seed: 42 });
            let n = 1_000_000u64;
            let mut taken = 0u64;
            let mut residues = vec![0u64; every as usize];
            for i in 0..n {
                if s.take() {
                    taken += 1;
                    residues[(i % u64::from(every)) as usize] += 1;
                }
            }
            let p = 1.0 / f64::from(every);
            let mean = n as f64 * p;
            let sd = (mean * (1.0 - p)).sqrt();
            assert!((taken as f64 - mean).abs() < 5.0 * sd, "{every}: {taken}");
            // each residue: n / every rows, of which p are taken
            let share = mean / f64::from(every);
            for (r, c) in residues.iter().enumerate() {
                assert!(
                    (*c as f64 - share).abs() < 6.0 * share.sqrt() + 1.0,
                    "{every}: residue {r} took {c} of about {share}"
                );
            }
        }
        let draw = |seed| {
            let mut s = Sampler::new(Sampling { every: 16, seed });
            (0..256).map(|_| s.take()).collect::<Vec<_>>()
        };
        assert_ne!(draw(1), draw(2));
        assert_eq!(draw(1), draw(1));
        let mut all = Sampler::new(Sampling::ALL);
        assert!(all.takes_all() && (0..1000).all(|_| all.take()));
        assert!(!Sampling::OFF.on());
    }

    /// `likely` is room enough for what the sample takes of a statement nearly always (more
    /// only grows the list): of 10,000 100-row statements at one in sixteen, at most one in a
    /// thousand takes more (the binomial's tail past 17 of 100 is about 1e-4).
    #[test]
    fn the_room_made_for_a_sample_nearly_always_holds_it() {
        let mut over = 0;
        for seed in 0..10_000u64 {
            let mut s = Sampler::new(Sampling { every: 16, seed });
            let room = s.likely(100);
            let taken = (0..100).filter(|_| s.take()).count();
            over += usize::from(taken > room);
        }
        assert!(over <= 10, "{over}");
        let s = Sampler::new(Sampling::ALL);
        assert_eq!(s.likely(100), 100);
    }
}
