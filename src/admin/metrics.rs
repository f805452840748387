//! The proxy's metrics, cheap on the hot path: each thread counts into its own block of
//! counters (written only by that thread, read by the scrape), and a scrape sums the blocks.
//! A statement pays a few plain additions to memory no other core writes — no shared atomic
//! read-modify-write, no lock. A thread that ends folds its counts into a retired block, so the
//! set of blocks stays as large as the set of live threads.
//!
//! What is counted (every label's values are a fixed set, or the bounded table set):
//! - commands by kind (the command byte, named);
//! - statements by class (plain, HBase read, HBase write, HBase DDL) and outcome (forwarded,
//!   rewritten, answered, refused);
//! - refusals by rule (`Refusal::label`: the rule's id, or the kind of refusal);
//! - latency as the client sees it, per class: from the command's last byte read to the
//!   response's last byte written, in buckets from 100 µs to 10 s;
//! - bytes from and to clients;
//! - per HBase table: reads, writes, rewrites and refusals, for at most `admin.max_tables`
//!   tables (the first seen); the others are summed under the table label `_other`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// A statement's class, for latency and outcome counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Plain = 0,
    HbaseRead = 1,
    HbaseWrite = 2,
    HbaseDdl = 3,
}

pub const CLASSES: [&str; 4] = ["plain", "hbase_read", "hbase_write", "hbase_ddl"];

impl Class {
    /// In the order of `CLASSES`.
    pub const ALL: [Class; 4] = [
        Class::Plain,
        Class::HbaseRead,
        Class::HbaseWrite,
        Class::HbaseDdl,
    ];
}

impl Outcome {
    /// In the order of `OUTCOMES`.
    pub const ALL: [Outcome; 4] = [
        Outcome::Forwarded,
        Outcome::Rewritten,
        Outcome::Answered,
        Outcome::Refused,
    ];
}

/// The upper bound, in milliseconds, of the bucket the q-quantile falls in (cumulative
/// counts, the last +Inf): "at most" this; "-" with no statement, ">10000" past the last bound.
pub fn quantile_bound_ms(cumulative: &[u64], q: f64) -> String {
    let Some(&total) = cumulative.last() else {
        return "-".into();
    };
    if total == 0 {
        return "-".into();
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    match cumulative.iter().position(|&c| c >= rank) {
        Some(i) if i < BUCKETS_US.len() => format!("{}", BUCKETS_US[i] as f64 / 1000.0),
        _ => ">10000".into(),
    }
}

/// What the proxy did with a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Forwarded = 0,
    Rewritten = 1,
    Answered = 2,
    Refused = 3,
}

pub const OUTCOMES: [&str; 4] = ["forwarded", "rewritten", "answered", "refused"];

/// What a statement did to an HBase table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableEvent {
    Read = 0,
    Write = 1,
    Rewrite = 2,
    Refusal = 3,
}

pub const TABLE_EVENTS: [&str; 4] = ["reads", "writes", "rewrites", "refusals"];

/// Upper bounds of the latency buckets, in microseconds (100 µs to 10 s).
pub const BUCKETS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// The same bounds in nanoseconds (what a latency is counted in).
const BUCKETS_NS: [u64; 16] = {
    let mut ns = [0; 16];
    let mut i = 0;
    while i < 16 {
        ns[i] = BUCKETS_US[i] * 1000;
        i += 1;
    }
    ns
};

/// Command bytes with a name (the rest are counted as `other`).
pub const COMMANDS: [(u8, &str); 20] = [
    (0x01, "quit"),
    (0x02, "init_db"),
    (0x03, "query"),
    (0x04, "field_list"),
    (0x07, "refresh"),
    (0x08, "shutdown"),
    (0x09, "statistics"),
    (0x0a, "process_info"),
    (0x0c, "process_kill"),
    (0x0d, "debug"),
    (0x0e, "ping"),
    (0x11, "change_user"),
    (0x16, "stmt_prepare"),
    (0x17, "stmt_execute"),
    (0x18, "stmt_send_long_data"),
    (0x19, "stmt_close"),
    (0x1a, "stmt_reset"),
    (0x1b, "set_option"),
    (0x1c, "stmt_fetch"),
    (0x1f, "reset_connection"),
];
/// Slot of commands without a name (MariaDB's bulk execute, 0xfa, has its own).
const OTHER_COMMAND: usize = 32;
const BULK_COMMAND: usize = 33;
const COMMAND_SLOTS: usize = 34;

fn command_slot(c: u8) -> usize {
    match c {
        0xfa => BULK_COMMAND,
        c if usize::from(c) < OTHER_COMMAND => usize::from(c),
        _ => OTHER_COMMAND,
    }
}

/// The refusal labels: the rules' ids and the kinds of refusal that are not a rule's.
pub use crate::engine::refusal::REFUSAL_LABELS;

const LAT: usize = BUCKETS_US.len() + 1;

/// One thread's counters. Only the owning thread writes them (a load and a store, no atomic
/// read-modify-write); a scrape reads them.
struct Block {
    commands: [AtomicU64; COMMAND_SLOTS],
    statements: [[AtomicU64; 4]; 4],
    refusals: Vec<AtomicU64>,
    latency: [[AtomicU64; LAT]; 4],
    latency_sum_ns: [AtomicU64; 4],
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    /// Per table slot (the last: `_other`), per event; allocated with the block.
    tables: Vec<[AtomicU64; 4]>,
}

fn zeros<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

impl Block {
    fn new(tables: usize) -> Block {
        Block {
            commands: zeros(),
            statements: std::array::from_fn(|_| zeros()),
            refusals: (0..REFUSAL_LABELS.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            latency: std::array::from_fn(|_| zeros()),
            latency_sum_ns: zeros(),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            tables: (0..=tables).map(|_| zeros()).collect(),
        }
    }

    /// Adds another block's counts (a retiring thread's, or a scrape's sum).
    fn absorb(&self, o: &Block) {
        let add = |a: &AtomicU64, b: &AtomicU64| {
            a.fetch_add(b.load(Relaxed), Relaxed);
        };
        for (a, b) in self.commands.iter().zip(&o.commands) {
            add(a, b);
        }
        for (ra, rb) in self.statements.iter().zip(&o.statements) {
            for (a, b) in ra.iter().zip(rb) {
                add(a, b);
            }
        }
        for (a, b) in self.refusals.iter().zip(&o.refusals) {
            add(a, b);
        }
        for (ra, rb) in self.latency.iter().zip(&o.latency) {
            for (a, b) in ra.iter().zip(rb) {
                add(a, b);
            }
        }
        for (a, b) in self.latency_sum_ns.iter().zip(&o.latency_sum_ns) {
            add(a, b);
        }
        add(&self.bytes_in, &o.bytes_in);
        add(&self.bytes_out, &o.bytes_out);
        for (ra, rb) in self.tables.iter().zip(&o.tables) {
            for (a, b) in ra.iter().zip(rb) {
                add(a, b);
            }
        }
    }
}

/// Adds to a counter only its own thread writes.
#[inline]
fn bump_by(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

/// The registry: every live thread's block, the retired threads' sum, and the table slots.
struct Registry {
    max_tables: usize,
    /// Every block ever made (at most as many as threads ever counted at once) and those no
    /// live thread holds: a thread that ends gives its block back with its counts, and the
    /// next thread to count goes on in it.
    blocks: Mutex<Blocks>,
    tables: Mutex<TableSlots>,
}

#[derive(Default)]
struct Blocks {
    all: Vec<&'static Block>,
    free: Vec<&'static Block>,
}

#[derive(Default)]
struct TableSlots {
    by_name: HashMap<Box<str>, usize>,
    names: Vec<Box<str>>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Whether sessions count (`admin.metrics`): off, a command costs one load of this flag.
static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

pub fn set_enabled(on: bool) {
    ENABLED.store(on, Relaxed);
}

#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

pub use crate::clock::{now, since_ns, ticks_per_second};

/// Most tables with a label of their own when `init` was not called (tests, tools).
pub const DEFAULT_MAX_TABLES: usize = 1000;

/// Sets the number of tables with a label of their own (`admin.max_tables`); only the first
/// call counts, and it must come before the first count to take effect.
pub fn init(max_tables: usize) {
    let _ = REGISTRY.set(Registry::new(max_tables));
    crate::clock::calibrate();
}

fn registry() -> &'static Registry {
    REGISTRY.get_or_init(|| Registry::new(DEFAULT_MAX_TABLES))
}

impl Registry {
    fn new(max_tables: usize) -> Registry {
        Registry {
            max_tables,
            blocks: Mutex::new(Blocks::default()),
            tables: Mutex::new(TableSlots::default()),
        }
    }
}

/// A thread's hold on its block: taken on first use, given back when the thread ends.
struct Local {
    block: &'static Block,
    /// A table's name hashed (foldhash) → its slot, as this thread has
    /// met them (bounded: past the limit, the registry's map is asked again). Looking a table
    /// up allocates nothing; two names with one hash would share a label, nothing worse.
    slots: RefCell<HashMap<u64, usize, foldhash::fast::FixedState>>,
}

impl Local {
    fn new() -> Local {
        let r = registry();
        let block = {
            let mut blocks = r.blocks.lock().unwrap_or_else(|e| e.into_inner());
            match blocks.free.pop() {
                Some(b) => b,
                None => {
                    // made once per thread counting at once, never freed: kept and reused
                    let b: &'static Block = Box::leak(Box::new(Block::new(r.max_tables)));
                    blocks.all.push(b);
                    b
                }
            }
        };
        Local {
            block,
            slots: RefCell::new(HashMap::with_hasher(foldhash::fast::FixedState::default())),
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = BLOCK.try_with(|b| b.set(None));
        let r = registry();
        r.blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .free
            .push(self.block);
    }
}

thread_local! {
    /// The thread's block once it has one: a constant-initialised cell with nothing to drop,
    /// read without the lazy-initialisation check `LOCAL` needs.
    static BLOCK: Cell<Option<&'static Block>> = const { Cell::new(None) };
    static LOCAL: Local = Local::new();
}

/// The thread's block (None while the thread ends).
#[inline]
fn block() -> Option<&'static Block> {
    match BLOCK.try_with(Cell::get) {
        Ok(Some(b)) => Some(b),
        _ => first_block(),
    }
}

#[cold]
#[inline(never)]
fn first_block() -> Option<&'static Block> {
    LOCAL
        .try_with(|l| {
            let _ = BLOCK.try_with(|b| b.set(Some(l.block)));
            l.block
        })
        .ok()
}

fn with<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    LOCAL.try_with(f).ok()
}

/// A command done: its first byte, the statement's class, outcome and how long the client
/// waited for its answer (if it was a statement), and the bytes each way — one visit to the
/// thread's block.
#[inline]
pub fn command(c: u8, statement: Option<(Class, Outcome, u64)>, from_client: u64, to_client: u64) {
    if let Some(b) = block() {
        bump_by(&b.commands[command_slot(c)], 1);
        bump_by(&b.bytes_in, from_client);
        bump_by(&b.bytes_out, to_client);
        if let Some((class, outcome, ns)) = statement {
            let c = class as usize;
            bump_by(&b.statements[c][outcome as usize], 1);
            // most statements fall in the first buckets: a scan from the bottom ends soonest
            let bucket = BUCKETS_NS
                .iter()
                .position(|&b| ns <= b)
                .unwrap_or(BUCKETS_NS.len());
            bump_by(&b.latency[c][bucket], 1);
            bump_by(&b.latency_sum_ns[c], ns);
        }
    }
}

/// Bytes each way that no command was counted with (a session's last answer).
pub fn traffic(from_client: u64, to_client: u64) {
    if let Some(b) = block() {
        bump_by(&b.bytes_in, from_client);
        bump_by(&b.bytes_out, to_client);
    }
}

/// `command` for a statement alone (tests).
pub fn statement(class: Class, outcome: Outcome, took: Duration) {
    let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    command(0x03, Some((class, outcome, ns)), 0, 0);
}

/// A refusal, by its label's index in `REFUSAL_LABELS`.
#[inline]
pub fn refusal(label: usize) {
    if let Some(c) = block().and_then(|b| b.refusals.get(label)) {
        bump_by(c, 1);
    }
}

/// An event on an HBase table `database.table`.
pub fn table(database: &str, name: &str, event: TableEvent) {
    table_at(table_slot(database, name), event);
}

/// The counters' slot of the HBase table `database.table` (its own while there is room, else
/// the last, `_other`): a slot never changes, so a caller may keep it for the same table.
pub fn table_slot(database: &str, name: &str) -> usize {
    use std::hash::BuildHasher;
    let cached = with(|l| {
        let key = foldhash::fast::FixedState::default().hash_one((database, name));
        let cached = l.slots.borrow().get(&key).copied();
        match cached {
            Some(s) => s,
            None => {
                let s = slot_of(&format!("{database}.{name}"));
                let mut slots = l.slots.borrow_mut();
                if slots.len() < 4 * registry().max_tables.max(16) {
                    slots.insert(key, s);
                }
                s
            }
        }
    });
    // (a thread that is ending counts nothing: its slot is not worth a table's label)
    cached.unwrap_or(registry().max_tables)
}

/// An event on the table of counters' slot `slot` (`table_slot`).
#[inline]
pub fn table_at(slot: usize, event: TableEvent) {
    if let Some(row) = block().and_then(|b| b.tables.get(slot)) {
        bump_by(&row[event as usize], 1);
    }
}

/// The slot of a table: its own while there is room, else the last (`_other`).
fn slot_of(name: &str) -> usize {
    let r = registry();
    let mut t = r.tables.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&s) = t.by_name.get(name) {
        return s;
    }
    if t.names.len() >= r.max_tables {
        return r.max_tables;
    }
    let s = t.names.len();
    t.names.push(name.into());
    t.by_name.insert(name.into(), s);
    s
}

/// The sums of every thread's counters, at one moment.
pub struct Snapshot {
    sum: Block,
    tables: Vec<Box<str>>,
    max_tables: usize,
}

pub fn snapshot() -> Snapshot {
    let r = registry();
    let sum = Block::new(r.max_tables);
    {
        let blocks = r.blocks.lock().unwrap_or_else(|e| e.into_inner());
        for b in &blocks.all {
            sum.absorb(b);
        }
    }
    let tables = r
        .tables
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .names
        .clone();
    Snapshot {
        sum,
        tables,
        max_tables: r.max_tables,
    }
}

impl Snapshot {
    fn get(c: &AtomicU64) -> u64 {
        c.load(Relaxed)
    }

    pub fn commands(&self) -> Vec<(&'static str, u64)> {
        let mut out: Vec<(&'static str, u64)> = COMMANDS
            .iter()
            .map(|&(c, name)| (name, Self::get(&self.sum.commands[command_slot(c)])))
            .collect();
        out.push((
            "stmt_bulk_execute",
            Self::get(&self.sum.commands[BULK_COMMAND]),
        ));
        let named: u64 = COMMANDS
            .iter()
            .map(|&(c, _)| usize::from(c))
            .chain([BULK_COMMAND])
            .map(|i| Self::get(&self.sum.commands[i]))
            .sum();
        let all: u64 = self.sum.commands.iter().map(Self::get).sum();
        out.push(("other", all - named));
        out
    }

    pub fn commands_total(&self) -> u64 {
        self.sum.commands.iter().map(Self::get).sum()
    }

    /// Statements of a class with an outcome.
    pub fn statements(&self, class: Class, outcome: Outcome) -> u64 {
        Self::get(&self.sum.statements[class as usize][outcome as usize])
    }

    pub fn refusals(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        REFUSAL_LABELS
            .iter()
            .zip(&self.sum.refusals)
            .map(|(l, c)| (*l, Self::get(c)))
    }

    /// Cumulative bucket counts (the last: +Inf), the sum in seconds, the count.
    pub fn latency(&self, class: Class) -> (Vec<u64>, f64, u64) {
        let mut acc = 0;
        let buckets: Vec<u64> = self.sum.latency[class as usize]
            .iter()
            .map(|c| {
                acc += Self::get(c);
                acc
            })
            .collect();
        let sum = Self::get(&self.sum.latency_sum_ns[class as usize]) as f64 / 1e9;
        (buckets, sum, acc)
    }

    pub fn bytes(&self) -> (u64, u64) {
        (
            Self::get(&self.sum.bytes_in),
            Self::get(&self.sum.bytes_out),
        )
    }

    /// Per table (its own label, or `_other` for the rest): its counts per event.
    pub fn tables(&self) -> Vec<(&str, [u64; 4])> {
        let row = |i: usize| -> [u64; 4] {
            self.sum
                .tables
                .get(i)
                .map_or([0; 4], |r| std::array::from_fn(|e| Self::get(&r[e])))
        };
        let mut out: Vec<(&str, [u64; 4])> = self
            .tables
            .iter()
            .enumerate()
            .map(|(i, n)| (&**n, row(i)))
            .collect();
        let other = row(self.max_tables);
        if other.iter().any(|&n| n > 0) {
            out.push(("_other", other));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_counts_are_summed_and_kept_when_a_thread_ends() {
        let before = snapshot();
        let (q0, w0) = (
            before
                .commands()
                .iter()
                .find(|c| c.0 == "query")
                .map_or(0, |c| c.1),
            before.statements(Class::HbaseWrite, Outcome::Refused),
        );
        let workers: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..100 {
                        command(0x03, None, 0, 0);
                    }
                    statement(
                        Class::HbaseWrite,
                        Outcome::Refused,
                        Duration::from_micros(300),
                    );
                })
            })
            .collect();
        for w in workers {
            w.join().expect("joined");
        }
        // the threads have ended: their counts live on in the blocks they gave back, which the
        // next threads go on counting in
        for _ in 0..3 {
            std::thread::spawn(|| command(0x03, None, 0, 0))
                .join()
                .expect("joined");
        }
        let after = snapshot();
        let q1 = after
            .commands()
            .iter()
            .find(|c| c.0 == "query")
            .map_or(0, |c| c.1);
        assert!(q1 - q0 >= 303, "{q0} -> {q1}");
        assert!(after.statements(Class::HbaseWrite, Outcome::Refused) - w0 >= 3);
        // 300 µs is in the 500 µs bucket, not in the 250 µs one
        let (b, _, n) = after.latency(Class::HbaseWrite);
        let (b0, _, n0) = before.latency(Class::HbaseWrite);
        assert!(n - n0 >= 3);
        assert!(b[2] - b0[2] >= 3 && b[1] - b0[1] < n - n0);
    }

    #[test]
    fn a_second_of_clock_readings_is_about_a_second() {
        let tps = ticks_per_second();
        assert!((1_000_000..100_000_000_000).contains(&tps), "{tps}");
        let start = now();
        std::thread::sleep(Duration::from_millis(20));
        let ticks = now().wrapping_sub(start);
        // 20 ms of sleep is at least 20 ms of ticks, and not seconds of them
        assert!(ticks >= tps / 50 && ticks < tps, "{ticks} of {tps}");
    }

    #[test]
    fn tables_beyond_the_bound_share_one_label() {
        let r = registry();
        for i in 0..r.max_tables + 5 {
            table("db", &format!("t{i}$f"), TableEvent::Read);
        }
        let s = snapshot();
        let tables = s.tables();
        assert!(tables.len() <= r.max_tables + 1);
        assert!(tables.iter().any(|(n, c)| *n == "_other" && c[0] >= 5));
    }
}
