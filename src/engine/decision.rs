//! What the engine decides: the `Decision` on a text or a prepare (an action for the session),
//! what it depends on (`Context`), and the refusals the engine composes itself.

use super::prefix_scan::{self, Need, TableView};
use super::read::Scope;
pub use super::refusal::{Alone, Command, Refusal, Unchecked, Unreadable};
use super::write::{self, Txn, WriteRules};
use crate::hbase::rules::Note;
use crate::sql::ddl::{Statement, TableName};
use crate::sql::scan::Dialect;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send a text to the backend: the client's bytes, or a rewritten text, and what the
    /// session carries out with it (`Outbound`). `Outbound::default()` is a plain forward.
    Send(Outbound),
    /// Do not involve the backend: a local result, or a refusal.
    Answer(Answer),
    /// HBase DDL: the session checks it against the rules and the catalog and carries it out.
    Ddl(Box<Statement>),
    /// The decision needs facts the session reads (a table's schema, the current database,
    /// the character set, the texts user variables hold): read them, then decide again.
    Need(Need),
    /// SQL-level `PREPARE name FROM …` / `EXECUTE IMMEDIATE …` as a statement of its own: the
    /// session gets its text, checks it with `check_dynamic`, checks an EXECUTE IMMEDIATE's
    /// values, and keeps a prepared name's plan for each `EXECUTE name USING …`.
    Dynamic(Box<DynamicSql>),
}

impl Decision {
    /// Forward the client's bytes unchanged.
    pub fn forward() -> Decision {
        Decision::Send(Outbound::default())
    }

    /// Send this text instead of the client's.
    pub fn rewrite(text: Vec<u8>) -> Decision {
        Decision::Send(Outbound {
            text: Some(text),
            ..Outbound::default()
        })
    }

    /// Whether this is a plain forward of the client's bytes (nothing else to carry out).
    pub fn is_forward(&self) -> bool {
        matches!(self, Decision::Send(s) if *s == Outbound::default())
    }

    /// The text that replaces the client's, if any.
    pub fn rewritten(&self) -> Option<&[u8]> {
        match self {
            Decision::Send(s) => s.text.as_deref(),
            _ => None,
        }
    }
}

/// A dynamic statement the session checks (`Decision::Dynamic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicSql {
    pub source: DynamicSource,
    pub head: crate::sql::dynamic::Head,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynamicSource {
    /// The text, from a string or hex literal.
    Literal(Vec<u8>),
    /// The expression giving it (a user variable, or a computation of literals and user
    /// variables, `dynamic::Source::Computed`), as written: the session reads its value.
    Computed(Vec<u8>),
}

/// The write rules' answer on the text of a SQL-level dynamic statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynamicCheck {
    /// Nothing to check at its executions.
    Runs,
    Refused(Refusal),
    /// Read these, then ask again.
    NeedFacts(Need),
    /// A write (or locking read) on an HBase table: each execution is checked with `plan`,
    /// binding `params` values.
    Checked {
        plan: std::sync::Arc<write::WritePlan>,
        params: usize,
    },
}

/// What the session sends, and carries out with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outbound {
    /// The text to send (T filled in, prefix predicates spliced), None: the client's bytes.
    pub text: Option<Vec<u8>>,
    /// The write stage checked the text: it writes (or locks) an HBase table, or the rules
    /// found something in it.
    pub checked: bool,
    /// A statement of a multi-statement text is refused: the text sent ends before it (the
    /// statements before it run), and this error follows their results.
    pub refused: Option<Box<Refusal>>,
    /// Warnings and notes for the client (SHOW WARNINGS).
    pub notes: Vec<Note>,
    /// The transaction's partition once the text has run, when the text changes it.
    pub txn_after: Option<Option<Box<write::Place>>>,
    /// COM_STMT_PREPARE: what each execution is checked with.
    pub plan: Option<Box<write::WritePlan>>,
    /// COM_STMT_PREPARE: the prefix-scan plan of each execution, if any.
    pub scan: Option<Box<prefix_scan::PreparedPlan>>,
    /// LOAD DATA LOCAL on an HBase table: the proxy reads the file from the client first,
    /// checks its rows, and runs the statement only if they pass.
    pub load: Option<Box<write::LoadPlan>>,
    /// LOCK TABLES naming HBase tables: read their catalog entries first (the catalog cannot
    /// be read on the connection while they are locked).
    pub read_catalog: Vec<TableName>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Refused: its ERR instead of the backend's answer.
    Refuse(Refusal),
    /// `SHOW PROXY STATUS`: the proxy's counters as a two-column result.
    ProxyStatus,
    /// `SHOW PROXY CREATE TABLEGROUPS`: a `CREATE TABLEGROUP IF NOT EXISTS` per table group,
    /// the step a backup made with mysqldump needs before it is restored.
    TablegroupDdl,
    /// OK without involving the backend (a statement that is already in effect).
    Ok,
    /// CREATE TRIGGER of one of the proxy's own triggers on this HBase table (a restored
    /// dump): the session makes sure the proxy's triggers of the table exist, in the proxy's
    /// own definition (not the text's), and answers OK.
    ProxyTrigger(TableName),
    /// `EXPLAIN OBKV <statement>`: what the proxy does with the statement (`explain_obkv`).
    ExplainObkv,
    /// `SHOW OBKV TABLES`: every HBase table this user can see, with its group, partitioning,
    /// prefix length and the rules' findings (also `$` tables that break them).
    ObkvTables,
    /// `SHOW OBKV ADVICE [FOR t]`: the rowkey advisor's findings (`crate::admin::advisor`) for
    /// the tables this user can see.
    ObkvAdvice(Option<crate::sql::ddl::TableName>),
    /// `SHOW OBKV PARTITIONS FOR t`: the table's reads and writes per partition.
    ObkvPartitions(crate::sql::ddl::TableName),
    /// `SET OBKV HBASE_READS = ON|OFF` (Some) and `SHOW OBKV HBASE_READS` (None).
    HbaseReads(Option<bool>),
    /// `ALTER SYSTEM {TRIGGER|SUSPEND|RESUME|CANCEL} TTL`: carried out by the proxy's TTL task
    /// where the backend has none, forwarded to an OceanBase cluster (`crate::ttl`).
    Ttl(crate::hbase::ttl::Command),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// COM_QUERY.
    Text,
    /// COM_STMT_PREPARE.
    Prepare,
}

/// What the decision depends on besides the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// How the backend reads this session's text.
    pub dialect: Dialect,
    /// `hbase.enforcement = "strict"`: refuse what the proxy cannot check.
    pub strict: bool,
    /// Where `$` names are HBase tables.
    pub scope: Scope,
    /// What the proxy knows of HBase tables' schemas (None: neither the rewriter nor the write
    /// rules need them).
    pub tables: Option<TableView>,
    /// `hbase.rewrite = "on"`: the prefix-scan rewriter splices prefix predicates.
    pub rewrite: bool,
    /// The write rules (None: cell rules and the transaction guard are both off).
    pub writes: Option<WriteRules>,
    /// The session's transaction, for the guard.
    pub txn: Txn,
    /// The proxy's own Unix socket, the answer to a driver's `@@socket` probe.
    pub socket: Option<std::sync::Arc<str>>,
    /// `SET OBKV HBASE_READS = ON`: SELECTs on HBase tables return the cells HBase would, T
    /// read in this convention (None: off, rows as stored).
    pub hbase_reads: Option<crate::hbase::cells::Convention>,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            dialect: Dialect::default(),
            strict: true,
            scope: Scope::default(),
            tables: None,
            rewrite: true,
            writes: None,
            txn: Txn::default(),
            socket: None,
            hbase_reads: None,
        }
    }
}

/// Refuse the statement: the client gets the refusal's ERR, nothing reaches the backend.
pub fn refuse(r: Refusal) -> Decision {
    Decision::Answer(Answer::Refuse(r))
}

/// What a text did to HBase tables, for the metrics: kept beside the decision, never part of it.
#[derive(Debug, Default, Clone)]
pub struct Activity {
    /// Each HBase table a statement read, wrote or had rewritten, in the text's order.
    pub tables: Vec<(Arc<crate::hbase::schema::TableSchema>, TableUse)>,
    /// What the rowkey advisor learns from the text (`crate::admin::advisor`).
    pub observed: Vec<Observation>,
    /// The rows `observed` shows (`Observed::weight`), while it is not empty: what bounds it
    /// (`observe`, `room`; a list emptied elsewhere counts from zero again).
    shown: u32,
}

/// What one statement showed of an HBase table's keys, for the rowkey advisor.
#[derive(Debug, Clone)]
pub struct Observation {
    pub table: Arc<crate::hbase::schema::TableSchema>,
    pub what: Observed,
}

pub use crate::hbase::advisor::{Key, Observed};

/// Rows one text's observations show at most (`Observed::weight`: a multi-statement text of
/// many writes is sampled by its first ones; a multi-row INSERT's first 256 rows with their
/// rowkeys, the rest counted per partition).
pub const MAX_OBSERVED: usize = Key::MAX_ROWS;

/// The room a session's list of observations keeps between statements.
pub const OBSERVED_KEEP: usize = 16;

impl Activity {
    /// Emptied for the next text. Its buffers are kept (a session's activity allocates once,
    /// not with every statement) unless a text grew them past a few dozen entries.
    #[inline(always)]
    pub fn clear(&mut self) {
        // a plain statement's is empty: two loads
        if !self.tables.is_empty() || !self.observed.is_empty() {
            self.clear_some();
        }
    }

    #[inline(never)]
    fn clear_some(&mut self) {
        self.tables.clear();
        self.observed.clear();
        if self.tables.capacity() > 16 {
            self.tables.shrink_to(16);
        }
        if self.observed.capacity() > OBSERVED_KEEP {
            self.observed.shrink_to(OBSERVED_KEEP);
        }
    }

    /// An observation, kept while the rows the text's show stay within `MAX_OBSERVED`
    /// (`Observed::weight`); rows counted by partition (`Observed::Counts`, one a statement at
    /// most) while the text has fewer than twice `MAX_OBSERVED` observations, so that a text's
    /// rows are all counted even where its rowkeys are not all read.
    #[inline]
    pub fn observe(&mut self, o: Observation) {
        let shown = self.shown();
        let counts = matches!(o.what, Observed::Counts { .. });
        let weight = o.what.weight();
        if shown.saturating_add(weight) <= MAX_OBSERVED {
            self.observed.push(o);
            self.shown = u32::try_from(shown + weight).unwrap_or(u32::MAX);
        } else if counts && self.observed.len() < 2 * MAX_OBSERVED {
            self.observed.push(o);
        }
    }

    /// The rows the text's observations show so far.
    fn shown(&self) -> usize {
        if self.observed.is_empty() {
            0
        } else {
            self.shown as usize
        }
    }

    /// How many more rows' rowkeys this text may show the advisor.
    pub fn room(&self) -> usize {
        MAX_OBSERVED.saturating_sub(self.shown())
    }
}

/// Moves the observations of `from` onto `to` (whose list shows `shown` rows while it is not
/// empty; an emptied list counts from zero) while they fit in `max` rows (`Observed::weight`):
/// the first ones, a list of keyed rows that does not fit cut to the room left (its first
/// rows), and none after it; what is not moved is dropped. `from` is left empty. (An open
/// transaction's observations, kept until it ends.)
pub fn move_within(
    from: &mut Vec<Observation>,
    (to, shown): (&mut Vec<Observation>, &mut usize),
    max: usize,
) {
    if to.is_empty() {
        *shown = 0;
    }
    for mut o in from.drain(..) {
        let room = max.saturating_sub(*shown);
        if let Observed::Writes(rows) = &mut o.what {
            if rows.len() > room {
                rows.truncate(room);
                rows.shrink_to_fit();
            }
        }
        let w = o.what.weight();
        if w == 0 || w > room {
            break;
        }
        *shown += w;
        to.push(o);
    }
}

/// What a statement did to an HBase table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableUse {
    Read,
    Write,
    /// Its prefix scan was rewritten to one partition.
    Rewrite,
}

impl Activity {
    /// Whether a statement of the text writes (or locks for writing) an HBase table.
    pub fn writes(&self) -> bool {
        self.tables.iter().any(|(_, t)| *t == TableUse::Write)
    }
}

#[cfg(test)]
mod observe_tests {
    use super::*;

    /// A table the observations name (what it is does not matter to their bounds).
    fn table() -> Arc<crate::hbase::schema::TableSchema> {
        Arc::new(crate::hbase::schema::TableSchema {
            schema: "db".into(),
            name: "g$f".into(),
            partitioning: crate::hbase::partition::Partitioning::None,
            prefix_column: None,
            placement: crate::hbase::schema::Placement::MySqlFamily,
            limits: Default::default(),
            grouped: true,
            attrs: crate::hbase::ttl::Attributes::default(),
        })
    }

    /// What a text leaves for the advisor is bounded whatever the text: keys are cut, and
    /// observations stop at `MAX_OBSERVED`.
    #[test]
    fn observations_are_bounded() {
        let long = vec![b'k'; 1 << 20];
        let k = Key::of(&long);
        assert_eq!((k.bytes.len(), k.len()), (Key::KEY_BYTES, 1 << 20));
        // a key moved from its owner is cut, and its buffer shrunk to the cut
        let k = Key::owned(long.clone());
        assert_eq!((k.bytes.len(), k.len()), (Key::KEY_BYTES, 1 << 20));
        assert!(k.bytes.capacity() <= 2 * Key::KEY_BYTES);
        let mut roomy = Vec::with_capacity(4096);
        roomy.extend_from_slice(b"row-1");
        assert!(Key::owned(roomy).bytes.capacity() <= 2 * Key::KEY_BYTES);
        let table = table();
        let mut a = Activity::default();
        for _ in 0..1000 {
            a.observe(Observation {
                table: table.clone(),
                what: Observed::Get {
                    key: Key::of(&long),
                    partition: Some(0),
                },
            });
        }
        assert_eq!(a.observed.len(), MAX_OBSERVED);
        // a list of keyed rows weighs its rows: the room is what is left of MAX_OBSERVED rows
        a.observed.clear();
        assert_eq!(a.room(), MAX_OBSERVED, "an emptied list counts from zero");
        let rows = |n: usize| Observation {
            table: table.clone(),
            what: Observed::Writes(vec![(Some(0), Key::of(b"k")); n]),
        };
        a.observe(rows(200));
        assert_eq!(a.room(), MAX_OBSERVED - 200);
        a.observe(rows(MAX_OBSERVED - 199));
        assert_eq!((a.observed.len(), a.room()), (1, MAX_OBSERVED - 200));
        a.observe(rows(MAX_OBSERVED - 200));
        assert_eq!((a.observed.len(), a.room()), (2, 0));
        // rows counted by partition still go in, up to twice MAX_OBSERVED observations
        let counts = || Observation {
            table: table.clone(),
            what: Observed::Counts {
                counts: Box::new([(0, 5)]),
                unplaced: 0,
            },
        };
        for _ in 0..1000 {
            a.observe(counts());
        }
        assert_eq!(a.observed.len(), 2 * MAX_OBSERVED);
        let rows_shown: usize = a.observed.iter().map(|o| o.what.weight()).sum();
        assert!(
            rows_shown <= 2 * MAX_OBSERVED + MAX_OBSERVED,
            "{rows_shown}"
        );
    }

    /// An open transaction keeps its first `max` rows' observations: a list of keyed rows
    /// that does not fit keeps its first rows, and nothing after it is kept.
    #[test]
    fn a_transaction_keeps_its_first_rows() {
        let table = table();
        let rows = |from: usize, n: usize| Observation {
            table: table.clone(),
            what: Observed::Writes(
                (from..from + n)
                    .map(|i| (Some(0), Key::of(format!("k{i}").as_bytes())))
                    .collect(),
            ),
        };
        let get = || Observation {
            table: table.clone(),
            what: Observed::Get {
                key: Key::of(b"g"),
                partition: None,
            },
        };
        let (mut to, mut shown) = (Vec::new(), 0usize);
        // fits whole
        let mut from = vec![rows(0, 40), get()];
        move_within(&mut from, (&mut to, &mut shown), 100);
        assert!(from.is_empty());
        assert_eq!((to.len(), shown), (2, 41));
        // cut to the room left; what follows is dropped
        let mut from = vec![rows(40, 200), get(), rows(240, 2)];
        move_within(&mut from, (&mut to, &mut shown), 100);
        assert!(from.is_empty());
        assert_eq!((to.len(), shown), (3, 100));
        match &to[2].what {
            Observed::Writes(r) => {
                assert_eq!(r.len(), 59);
                assert_eq!(r.capacity(), 59, "shrunk to its rows");
                assert_eq!(&r[0].1.bytes[..], b"k40");
                assert_eq!(&r[58].1.bytes[..], b"k98");
            }
            other => panic!("{other:?}"),
        }
        // full: nothing more
        let mut from = vec![get()];
        move_within(&mut from, (&mut to, &mut shown), 100);
        assert!(from.is_empty());
        assert_eq!((to.len(), shown), (3, 100));
        let total: usize = to.iter().map(|o| o.what.weight()).sum();
        assert_eq!(total, shown);
        // an emptied list counts from zero whatever its count said
        let (mut emptied, mut stale) = (Vec::new(), 100usize);
        let mut from = vec![get()];
        move_within(&mut from, (&mut emptied, &mut stale), 100);
        assert_eq!((emptied.len(), stale), (1, 1));
    }

    /// An `Activity` is moved with every text, and an observation is copied twice (into the
    /// text's list, then with the list into the thread's batch): both stay small. (An activity
    /// of inline lists moved five times a statement cost ~290 instructions of copying and
    /// ~110 of dropping, counted with scripts/cost.sh; the count of rows shown adds a word.)
    #[test]
    fn observations_are_small() {
        assert!(std::mem::size_of::<Observation>() <= 96);
        assert!(std::mem::size_of::<Activity>() <= 56);
    }
}
