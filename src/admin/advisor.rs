//! The rowkey advisor's store: each HBase table's traffic statistics (`hbase::advisor`), kept
//! for at most `advisor.max_tables` tables within `advisor.max_bytes`. A session hands what a
//! statement showed (`engine::decision::Observation`) to its thread's buffer; the buffer is
//! folded into the store under one lock when it holds 64 observations, when its first is a
//! second old, and when a reader asks (`sync`, answered by each worker's `tick`), so a
//! statement costs a push and the lock is taken once per batch, not per statement.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::engine::decision::{Observation, Observed};
use crate::hbase::advisor::detect::{self, Finding};
use crate::hbase::advisor::table::TableStats;
use crate::hbase::schema::TableSchema;

pub use crate::hbase::advisor::Settings;

struct Entry {
    schema: Arc<TableSchema>,
    stats: TableStats,
    last_seen: u64,
}

#[derive(Default)]
struct Tables {
    map: HashMap<(String, String), Entry>,
    bytes: usize,
    /// Rows (and reads) observed of tables past the budget, not kept (`Observed::weight`).
    refused: u64,
}

struct Store {
    settings: Settings,
    tables: Mutex<Tables>,
}

static STORE: OnceLock<Store> = OnceLock::new();

/// Sets the advisor up (only the first call counts; before it, nothing is kept).
pub fn init(settings: Settings) {
    let _ = STORE.set(Store {
        settings,
        tables: Mutex::new(Tables::default()),
    });
    ON.store(store().is_some(), std::sync::atomic::Ordering::Relaxed);
    EVERY.store(
        store().map_or(0, |s| s.settings.shape.sample_every.max(1)),
        std::sync::atomic::Ordering::Relaxed,
    );
}

fn store() -> Option<&'static Store> {
    STORE.get().filter(|s| s.settings.enabled)
}

/// Whether the advisor keeps anything.
pub fn on() -> bool {
    ON.load(std::sync::atomic::Ordering::Relaxed)
}

/// Which rows of a statement the write checks keep the rowkeys of for the advisor
/// (`WriteRules::observe`): none when it is off, else one in `sample_every` drawn from `seed`.
pub fn sampling(seed: u64) -> crate::hbase::advisor::Sampling {
    crate::hbase::advisor::Sampling {
        every: EVERY.load(std::sync::atomic::Ordering::Relaxed),
        seed,
    }
}

/// `advisor.sample_every` while the advisor is on, else 0 (one relaxed load a statement).
static EVERY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Whether the advisor keeps anything (one relaxed load on the statement path).
static ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The observations a thread has not folded in yet, all from the second `since` began in.
struct Pending {
    items: Vec<Observation>,
    /// The rows `items` shows (`Observed::weight`): a batch is folded in at `BATCH` rows.
    rows: usize,
    /// Unix seconds, and the latency clock's reading, when the first of `items` came.
    since: u64,
    since_tick: u64,
}

thread_local! {
    static PENDING: RefCell<Pending> = const {
        RefCell::new(Pending {
            items: Vec::new(),
            rows: 0,
            since: 0,
            since_tick: 0,
        })
    };
}

const BATCH: usize = 64;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A text's observations (taken from `observed`). A batch shows about `BATCH` rows
/// (`Observed::weight`; a text's observations are added whole: a batch holds fewer than `BATCH`
/// rows and one text's, at most `MAX_OBSERVED` keyed rows, or a committed transaction's, at
/// most `TXN_OBSERVED`, `session::observe`) and spans about a second
/// (its observations are counted in the second it began in), so no timer runs on the workers:
/// a timer on each worker's runtime cost every command about 400 instructions (counted with
/// scripts/cost.sh).
pub fn record(observed: &mut Vec<Observation>, tick: Option<u64>) {
    if !observed.is_empty() {
        add(observed, tick);
    }
}

/// Adds a text's observations (moved out of `list`) to this thread's buffer, with one borrow
/// of it, so that a batch holds only observations from within a second of its first. `tick`:
/// the latency clock's reading at the command's start, when the session took one for the
/// metrics (else the clock is read here).
fn add(list: &mut Vec<Observation>, tick: Option<u64>) {
    if !ON.load(std::sync::atomic::Ordering::Relaxed) {
        list.clear();
        return;
    }
    let (stale, full) = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        // a batch a second old is taken out (folded below) and this statement starts the next
        let now = tick.unwrap_or_else(crate::admin::metrics::now);
        let stale = (!p.items.is_empty()
            && now.wrapping_sub(p.since_tick) >= crate::admin::metrics::ticks_per_second())
        .then(|| (std::mem::take(&mut p.items), p.since));
        let was_empty = p.items.is_empty();
        if was_empty {
            p.rows = 0;
        }
        let rows: usize = list.iter().map(|o| o.what.weight()).sum();
        p.rows = p.rows.saturating_add(rows);
        // an empty batch without room for the text's list takes it whole (its observations
        // are not copied); the list goes back empty, and no larger than a session keeps one.
        // A batch with room (its buffer is kept from one batch to the next: `flush_local`)
        // takes the observations in, and keeps its buffer: handing it to the session, which
        // keeps no buffer that large, made every batch grow from a session's list again
        // (about 27 instructions a statement in reallocations, scripts/cost.sh)
        if p.items.is_empty() && p.items.capacity() < list.len() {
            std::mem::swap(&mut p.items, list);
            if list.capacity() > crate::engine::decision::OBSERVED_KEEP {
                *list = Vec::new();
            }
        } else {
            p.items.append(list);
        }
        if was_empty && !p.items.is_empty() {
            p.since = unix_now();
            p.since_tick = now;
        }
        (stale, p.rows >= BATCH)
    });
    if let Some((mut items, since)) = stale {
        if let Some(s) = store() {
            s.fold(&mut items, since, unix_now());
        }
    }
    if full {
        flush_local();
    }
}

/// Folds this thread's buffer into the store.
pub fn flush_local() {
    let (mut items, since) = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        (std::mem::take(&mut p.items), p.since)
    });
    if items.is_empty() {
        return;
    }
    if let Some(s) = store() {
        s.fold(&mut items, since, unix_now());
    }
    items.clear();
    // the buffer goes back with its capacity (a batch allocates nothing)
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.items.is_empty() && items.capacity() <= BATCH + crate::engine::decision::MAX_OBSERVED {
            p.items = items;
        }
    });
}

/// How readers and the workers' tickers meet: a reader raises `asked` and waits until every
/// ticker has folded its thread's buffer in since (`done`), so what it reads includes every
/// statement answered before it — with no sleep and no missed wake-up (watch channels keep the
/// latest value for a receiver that was busy).
struct Meeting {
    asked: tokio::sync::watch::Sender<u64>,
    done: tokio::sync::watch::Sender<Vec<u64>>,
}

fn meeting() -> &'static Meeting {
    static M: OnceLock<Meeting> = OnceLock::new();
    M.get_or_init(|| Meeting {
        asked: tokio::sync::watch::Sender::new(0),
        done: tokio::sync::watch::Sender::new(Vec::new()),
    })
}

/// Each worker's ticker: folds the thread's buffer in when a reader asks (`sync`), until
/// shutdown. It holds no timer (see `record`).
pub async fn tick(mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let m = meeting();
    let mut asked = m.asked.subscribe();
    let mut me = 0;
    m.done.send_modify(|d| {
        me = d.len();
        d.push(*asked.borrow());
    });
    // a ticker that is gone (shutdown, its runtime dropped) holds no reader up
    let _gone = Gone(me);
    loop {
        tokio::select! {
            changed = asked.changed() => {
                if changed.is_err() {
                    return;
                }
                let generation = *asked.borrow_and_update();
                flush_local();
                m.done.send_modify(|d| {
                    if let Some(slot) = d.get_mut(me) {
                        *slot = generation;
                    }
                });
            }
            _ = shutdown.changed() => {
                flush_local();
                return;
            }
        }
    }
}

struct Gone(usize);

impl Drop for Gone {
    fn drop(&mut self) {
        meeting().done.send_modify(|d| {
            if let Some(slot) = d.get_mut(self.0) {
                *slot = u64::MAX;
            }
        });
    }
}

/// Waits (at most `wait`) until every worker has folded in what it saw before this call.
pub async fn sync(wait: std::time::Duration) {
    flush_local();
    if store().is_none() {
        return;
    }
    let m = meeting();
    let mut generation = 0;
    m.asked.send_modify(|g| {
        *g += 1;
        generation = *g;
    });
    let mut done = m.done.subscribe();
    let _ =
        crate::timer::timeout(wait, done.wait_for(|d| d.iter().all(|g| *g >= generation))).await;
}

impl Store {
    /// Folds a batch in: its observations counted at unix second `at`; `now` for idleness.
    /// A run of observations of one table (the usual batch) looks the table up once.
    fn fold(&self, items: &mut [Observation], at: u64, now: u64) {
        let mut t = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        for run in items.chunk_by(|a, b| Arc::ptr_eq(&a.table, &b.table)) {
            let Some(table) = run.first().map(|o| o.table.clone()) else {
                continue;
            };
            let key = (table.schema.clone(), table.name.clone());
            // the usual run: a table already kept, as it was (one lookup more, to write)
            let kept = t.map.get(&key).map(|e| {
                Arc::ptr_eq(&e.schema, &table) || e.schema.partitioning == table.partitioning
            });
            if kept == Some(false) {
                // the table was made again with another partitioning: start over
                if let Some(e) = t.map.remove(&key) {
                    t.bytes = t.bytes.saturating_sub(e.stats.bytes());
                }
            }
            if kept != Some(true) {
                let stats = TableStats::new(table.partitioning.clone(), self.settings.shape);
                let b = stats.bytes();
                if t.map.len() >= self.settings.max_tables || t.bytes + b > self.settings.max_bytes
                {
                    t.refused += run.iter().map(|o| o.what.weight() as u64).sum::<u64>();
                    continue;
                }
                t.bytes += b;
                t.map.insert(
                    key.clone(),
                    Entry {
                        schema: table.clone(),
                        stats,
                        last_seen: now,
                    },
                );
            }
            let Some(e) = t.map.get_mut(&key) else {
                continue;
            };
            e.last_seen = now;
            let s = &mut e.stats;
            for o in run {
                match &o.what {
                    Observed::Write {
                        partition,
                        key,
                        distinct,
                    } => {
                        s.write_keyed(*partition, &key.bytes, key.len(), at);
                        s.distinct_key(*distinct);
                        s.longest(key.len());
                    }
                    Observed::Row {
                        partition,
                        distinct,
                        len,
                    } => {
                        s.write_counted(*partition, at);
                        s.distinct_key(*distinct);
                        s.longest(*len as usize);
                    }
                    Observed::Writes(rows) => {
                        for (partition, key) in rows {
                            s.write_keyed(*partition, &key.bytes, key.len(), at);
                        }
                    }
                    Observed::Keys { distinct, longest } => {
                        for u in distinct.iter() {
                            s.distinct_key(*u);
                        }
                        s.longest(*longest as usize);
                    }
                    Observed::Placed { partition } => s.write_partition(*partition, 1, at),
                    Observed::Get { key, partition } => s.get_cut(&key.bytes, *partition, at),
                    Observed::Scan { len, partition } => s.scan_len(*len as usize, *partition, at),
                    Observed::Counts { counts, unplaced } => {
                        for (p, n) in counts.iter() {
                            s.write_partition(*p, u64::from(*n), at);
                        }
                        s.counted_rows(
                            counts.iter().map(|(_, n)| u64::from(*n)).sum::<u64>()
                                + u64::from(*unplaced),
                            u64::from(*unplaced),
                        );
                    }
                }
            }
        }
        // tables with no traffic for long are forgotten
        let idle = self.settings.idle_seconds;
        let mut freed = 0;
        t.map.retain(|_, e| {
            let keep = now.saturating_sub(e.last_seen) < idle;
            if !keep {
                freed += e.stats.bytes();
            }
            keep
        });
        t.bytes = t.bytes.saturating_sub(freed);
    }
}

/// One table as the advisor sees it now.
#[derive(Debug, Clone)]
pub struct TableReport {
    pub database: String,
    pub table: String,
    pub partitioning: String,
    pub writes: u64,
    pub gets: u64,
    pub scans: u64,
    pub findings: Vec<Finding>,
    /// Per partition: recent reads and writes, and since first seen.
    pub recent: (Vec<u64>, Vec<u64>),
    pub total: (Vec<u64>, Vec<u64>),
    /// Epochs oldest first: (epoch start, unix seconds; reads and writes per partition).
    pub epochs: Vec<(u64, Vec<u32>, Vec<u32>)>,
    pub epoch_seconds: u64,
}

/// The tables the advisor keeps (filtered by `want`), with their findings; rowkeys appear in
/// findings only when `keys` says the reader may see them.
pub fn report(
    want: impl Fn(&str, &str) -> bool,
    keys: impl Fn(&str, &str) -> bool,
    heat: bool,
) -> Vec<TableReport> {
    let Some(s) = store() else {
        return Vec::new();
    };
    // one table at a time, the lock taken for each: a reader of many tables never holds the
    // workers' folds up for more than one table's detectors
    let mut out = Vec::new();
    for (db, name) in tables() {
        if !want(&db, &name) {
            continue;
        }
        let t = s.tables.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = t.map.get(&(db.clone(), name.clone())) else {
            continue;
        };
        let st = &e.stats;
        let findings = detect::findings(&format!("{db}.{name}"), st, keys(&db, &name));
        out.push(TableReport {
            partitioning: st.partitioning.describe(),
            writes: st.rows_written(),
            gets: st.gets,
            scans: st.scans,
            findings,
            recent: st.recent(),
            total: (st.total_reads.clone(), st.total_writes.clone()),
            epochs: if heat {
                st.epochs
                    .iter()
                    .map(|e| {
                        (
                            e.number * st.shape.epoch_seconds,
                            e.reads.clone(),
                            e.writes.clone(),
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            },
            epoch_seconds: st.shape.epoch_seconds,
            database: db,
            table: name,
        });
    }
    out
}

/// A table's sampled rowkeys (for `obkv-proxy partition --keys-file` replays), hex, one a line.
pub fn sample(database: &str, table: &str) -> Option<String> {
    flush_local();
    let s = store()?;
    let t = s.tables.lock().unwrap_or_else(|e| e.into_inner());
    let e = t.map.get(&(database.to_string(), table.to_string()))?;
    let mut out = String::new();
    for k in &e.stats.sample {
        for b in k {
            out.push_str(&format!("{b:02x}"));
        }
        out.push('\n');
    }
    Some(out)
}

/// Tables kept, bytes they may hold, rows and reads refused for the budget.
pub fn usage() -> (usize, usize, u64) {
    match store() {
        Some(s) => {
            let t = s.tables.lock().unwrap_or_else(|e| e.into_inner());
            (t.map.len(), t.bytes, t.refused)
        }
        None => (0, 0, 0),
    }
}

/// Current findings per rule, over every table (the metrics' gauges).
/// Kept for a second: a client asking SHOW PROXY STATUS (or scraping) in a loop runs the
/// detectors over every table at most once a second.
pub fn findings_by_rule() -> [u64; detect::RULES.len()] {
    type Kept = Option<(std::time::Instant, [u64; detect::RULES.len()])>;
    static KEPT: Mutex<Kept> = Mutex::new(None);
    if let Some((at, v)) = *KEPT.lock().unwrap_or_else(|e| e.into_inner()) {
        if at.elapsed() < std::time::Duration::from_secs(1) {
            return v;
        }
    }
    let mut out = [0u64; detect::RULES.len()];
    for r in report(|_, _| true, |_, _| false, false) {
        for f in &r.findings {
            if let Some(i) = detect::RULES.iter().position(|x| *x == f.rule) {
                out[i] += 1;
            }
        }
    }
    *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = Some((std::time::Instant::now(), out));
    out
}

/// The tables kept: (database, table).
pub fn tables() -> Vec<(String, String)> {
    flush_local();
    match store() {
        Some(s) => {
            let t = s.tables.lock().unwrap_or_else(|e| e.into_inner());
            let mut v: Vec<(String, String)> = t.map.keys().cloned().collect();
            v.sort();
            v
        }
        None => Vec::new(),
    }
}

/// Forgets a table (dropped, truncated or renamed through the proxy): in `db`, or in every
/// database when the statement named none.
pub fn forget(db: Option<&str>, name: &str) {
    flush_local();
    let Some(s) = store() else {
        return;
    };
    let mut t = s.tables.lock().unwrap_or_else(|e| e.into_inner());
    let mut freed = 0;
    t.map.retain(|(d, n), e| {
        let gone = n == name && db.is_none_or(|db| db == d);
        if gone {
            freed += e.stats.bytes();
        }
        !gone
    });
    t.bytes = t.bytes.saturating_sub(freed);
}
