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
    /// A row written with this rowkey (a one-row INSERT's, cut, see `Key`), in this partition
    /// (None: no partition takes it).
    Write { partition: Option<u32>, key: Key },
    /// Rows written with these rowkeys (a multi-row INSERT's, an execution's, cut), in order,
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
            Observed::Writes(rows) => rows.len(),
            _ => 1,
        }
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
