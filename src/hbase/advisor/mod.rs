//! The live rowkey-design advisor: what the proxy sees of each HBase table's traffic, kept in
//! a fixed budget (`table`), the statistics it needs (`stats`), and the guides' rules read
//! from them (`detect`). Pure; the session feeds it (`crate::advisor` keeps the tables).

pub mod detect;
pub mod stats;
pub mod table;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// Rows written, one a partition: its partition and its rowkey (cut, see `Key`); `keys`:
    /// whether the rowkeys are the rows' own (an INSERT) or only placed them (UPDATE, DELETE).
    Rows {
        rows: smallvec::SmallVec<[(u32, Key); 1]>,
        keys: bool,
    },
    /// A read of one rowkey, in this partition (None: no partition takes it).
    Get { key: Key, partition: Option<u32> },
    /// A scan of the keys beginning with `literal`, pruned to `partition` (None: all).
    Scan {
        literal: Key,
        partition: Option<u32>,
    },
}

/// A rowkey as the advisor keeps it: its first `KEY_BYTES` bytes and its length (what is
/// buffered for a statement is bounded whatever its keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// Inline up to 32 bytes: most rowkeys and prefixes cost no allocation.
    pub bytes: smallvec::SmallVec<[u8; 32]>,
    pub len: usize,
}

impl Key {
    pub const KEY_BYTES: usize = table::SAMPLE_KEY_BYTES;
    /// Rows of one statement observed at most (one a partition).
    pub const MAX_ROWS: usize = 256;

    pub fn of(k: &[u8]) -> Key {
        Key {
            bytes: smallvec::SmallVec::from_slice(k.get(..Self::KEY_BYTES).unwrap_or(k)),
            len: k.len(),
        }
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
